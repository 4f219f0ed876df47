// The prompt-lab grid (anywidget front-end; no build step, no CDN).
//
// State comes from two traits written by the kernel (genwidgets/widgets/grid.py):
// `head` (endpoint, axes as displayed, summary, progress, buttons to show) and
// `cell_states` (one record per cell: place, status, outputs, stars, note, payload).
// Once this view has said hello ("thumbs"), the kernel answers with every cell record
// and then sends only those that changed, as `cells` messages merged into this page's
// model (never saved back; the kernel sends the trait whole when the run ends).
// What the page asks goes as anywidget commands (faces.js `ask`): _ask_rate,
// _ask_submit, _ask_cancel, _ask_swap, _ask_recall, _ask_full; a refused ask's error is
// shown over the table. Cells show kernel-made thumbnails (the answer to this view's
// hello, _ask_thumbs, then `thumbs` messages as each is made); the lightbox asks for the
// full outputs and the request's code (_ask_full) and draws the answer. Scores per axis value are drawn
// as margins: a row under the columns (x) and a column beside the rows (y).
// Text goes in with textContent; media URLs are checked against SAFE_URL. It is a
// live face (faces.js, joined before this file): when its kernel stops it says so
// and every control is disabled.

const SAFE_URL = /^(https?:\/\/|data:(image|video|audio)\/[a-z0-9.+-]+[;,]|blob:)/i;
const SVG_NS = "http://www.w3.org/2000/svg";
const ICONS = {
  star: "M12 2l2.9 6.9 7.1.6-5.4 4.7 1.7 7-6.3-3.9-6.3 3.9 1.7-7L2 9.5l7.1-.6z",
  audio: "M4 9v6h4l5 4V5L8 9H4zm12.5 3a4.5 4.5 0 0 0-2.5-4v8a4.5 4.5 0 0 0 2.5-4z",
  video: "M4 6h11v12H4zM15 10l5-3v10l-5-3z",
  file: "M6 2h8l4 4v16H6zM14 2v4h4",
  recall: "M4 20h4l10-10-4-4L4 16v4zM14 6l4 4",
};

function icon(name, size = 16, fill = "currentColor") {
  const svg = document.createElementNS(SVG_NS, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("width", String(size));
  svg.setAttribute("height", String(size));
  svg.setAttribute("aria-hidden", "true");
  const path = document.createElementNS(SVG_NS, "path");
  path.setAttribute("d", ICONS[name] || ICONS.file);
  path.setAttribute("fill", fill);
  svg.appendChild(path);
  return svg;
}

function media(output, { controls }) {
  const url = output.src || "";
  if (!SAFE_URL.test(url)) return null;
  if (output.kind === "image") return thumbnail(url);
  if (output.kind === "video" || output.kind === "audio") {
    const node = make(output.kind, "gw-grid-media");
    node.controls = controls; // no autoplay, no loop: media start only when a person asks
    node.preload = "metadata";
    node.src = url;
    return node;
  }
  return null;
}

function thumbnail(url) {
  // a kernel-made picture of an image or a video's first frame, or an image itself
  if (!SAFE_URL.test(url)) return null;
  const img = make("img", "gw-grid-media");
  img.alt = "";
  img.src = url;
  return img;
}

function scoreText(score) {
  if (!score) return "";
  const parts = [score.mean == null ? "★ –" : `★ ${score.mean.toFixed(1)}`];
  parts.push(`${score.rated} rated`);
  if (score.failed) parts.push(`${score.failed} failed`);
  return parts.join(" · ");
}

function button(label, title, onClick, className = "gw-grid-button") {
  const node = make("button", className, label);
  node.type = "button";
  node.title = title;
  node.addEventListener("click", onClick);
  return node;
}

function disableControls(root) {
  // the kernel is gone: nothing a control asks could be answered
  for (const control of root.querySelectorAll("button:not(.gw-grid-close):not(.gw-grid-tab), input")) {
    control.disabled = true;
  }
}

function remaining(at) {
  if (at == null) return "";
  const left = Math.max(0, Math.round(at - Date.now() / 1000));
  return left > 0 ? `about ${left} s left` : "finishing";
}

function render({ model, el }) {
  el.classList.add("gw-grid");
  const top = make("div", "gw-grid-top");
  const summary = make("div", "gw-grid-summary");
  const controls = make("div", "gw-grid-controls");
  const tabs = make("div", "gw-grid-tabs");
  const tableHost = make("div", "gw-grid-table-host");
  const lightbox = make("div", "gw-grid-lightbox");
  lightbox.hidden = true;
  const problem = make("div", "gw-grid-error gw-grid-problem"); // a refused ask, said
  top.append(summary, controls, problem);
  el.append(top, tabs, tableHost, lightbox);

  let tab = 0;
  let stopped = false;
  let layoutKey = "";
  let cellNodes = new Map(); // index -> {root, last}
  let openIndex = null;
  const full = new Map(); // index -> {outputs, code}, as the kernel sent them
  const fullErrors = new Map(); // index -> why the kernel did not send them
  // index -> thumbnail data URLs, as the kernel sent them (messages only: never a
  // trait, so no saved widget state holds them; a live face restored without its
  // kernel hides itself and its contact sheet shows the pictures)
  const thumbs = new Map();
  const takeThumbs = (found) => {
    for (const [index, urls] of Object.entries(found || {})) thumbs.set(Number(index), urls);
  };

  const ask = asker(model);
  const act = (name, msg) => ask(name, msg).then((reply) => { problem.textContent = reply.error || ""; });

  function drawHead() {
    const head = model.get("head") || {};
    summary.replaceChildren(make("span", "", head.summary || ""));
    if (head.simulated) summary.append(make("span", "gw-simulated", "simulated"));
    if (stopped) summary.append(make("div", "gw-grid-stopped", STOPPED_TEXT));
    controls.replaceChildren();
    if (head.needs_confirmation && !head.started) {
      controls.append(
        button(`Submit ${head.tasks} tasks`, "nothing is sent until you click", () =>
          act("_ask_submit"), "gw-grid-button gw-grid-submit"),
      );
    } else if (head.paused || head.resumable) {
      const why = head.paused ? " (creates failed in a row: see why)" : "";
      controls.append(
        button("Go on", `follow again the cells contact was lost with and send the cells that wait${why}`,
          () => act("_ask_submit"), "gw-grid-button gw-grid-submit"),
      );
    }
    const progress = make("span", "gw-grid-progress", head.progress || "");
    progress.dataset.expected = head.expected_finish_at == null ? "" : String(head.expected_finish_at);
    controls.append(progress);
    const eta = make("span", "gw-grid-eta", remaining(head.expected_finish_at));
    controls.append(eta);
    if (head.started && !head.finished) {
      controls.append(button("Cancel all", "cancel every unfinished task of this grid", () =>
        act("_ask_cancel"), "gw-grid-button gw-grid-cancel"));
    }
    for (const [a, b] of head.swaps || []) {
      controls.append(button(`swap ${a}/${b}`, `swap the ${a} and ${b} axes (nothing is sent)`, () =>
        act("_ask_swap", { a, b })));
    }
  }

  function drawTabs(head) {
    const z = head.z;
    tabs.replaceChildren();
    if (!z) { tab = 0; return; }
    if (tab >= z.values.length) tab = 0;
    z.values.forEach((value, i) => {
      const node = button(`${z.label} = ${value}`, "", () => { tab = i; layoutKey = ""; drawAll(); },
        "gw-grid-tab" + (i === tab ? " gw-grid-tab-active" : ""));
      tabs.append(node);
    });
  }

  function drawTable() {
    const head = model.get("head") || {};
    drawTabs(head);
    const table = make("table", "gw-grid-table");
    const headerRow = make("tr");
    const corner = make("th", "gw-grid-corner");
    if (head.y) corner.append(make("div", "gw-grid-axis", `↓ ${head.y.label}`));
    if (head.x) corner.append(make("div", "gw-grid-axis", `${head.x.label} →`));
    headerRow.append(corner);
    const xs = head.x ? head.x.values : [""];
    const ys = head.y ? head.y.values : [""];
    const scores = head.scores || {};
    xs.forEach((value) => headerRow.append(make("th", "gw-grid-col", value)));
    if (scores.y) headerRow.append(make("th", "gw-grid-margin-head", "score"));
    table.append(headerRow);
    const slots = new Map();
    ys.forEach((value, r) => {
      const row = make("tr");
      row.append(make("th", "gw-grid-row", value));
      xs.forEach((_, c) => {
        const td = make("td", "gw-grid-cell");
        slots.set(`${r},${c}`, td);
        row.append(td);
      });
      if (scores.y) {
        const margin = make("td", "gw-grid-margin gw-grid-margin-y");
        margin.dataset.row = String(r);
        row.append(margin);
      }
      table.append(row);
    });
    if (scores.x) {
      const row = make("tr", "gw-grid-margin-row");
      row.append(make("th", "gw-grid-margin-head", "score"));
      xs.forEach((_, c) => {
        const margin = make("td", "gw-grid-margin gw-grid-margin-x");
        margin.dataset.col = String(c);
        row.append(margin);
      });
      if (scores.y) row.append(make("td"));
      table.append(row);
    }
    cellNodes = new Map();
    for (const cell of model.get("cell_states") || []) {
      if (cell.t !== tab) continue;
      const td = slots.get(`${cell.r},${cell.c}`);
      if (!td) continue;
      td.dataset.index = String(cell.index);
      cellNodes.set(cell.index, { root: td, last: "" });
    }
    tableHost.replaceChildren(table);
  }

  // A rating is two fields sent apart: a star's click sends the stars, the note's
  // `change` (on blur or Enter) the note, each alone; the kernel merges them per field.
  // What this page sent waits in `pending` until a record from the kernel carries it,
  // so a record written before it arrived does not undo it on the page.
  const pending = new Map(); // index -> {stars?, note?, at}
  const PENDING_MS = 10000; // a value the kernel never echoed is dropped after this

  function sendField(index, field, value) {
    const wait = pending.get(index) || {};
    wait[field] = value;
    wait.at = Date.now();
    pending.set(index, wait);
    ask("_ask_rate", { index, [field]: value }).then((reply) => {
      problem.textContent = reply.error || "";
      if (!reply.error || reply.late) return;
      const refused = pending.get(index); // the kernel kept what it had: draw that again
      if (refused && refused[field] === value) delete refused[field];
      drawAll();
    });
  }

  function buildCell(node, index) {
    // made once per cell: the stars and the note are updated in place, never remade,
    // so a click that began on a star ends on it (a redraw between a button's
    // mousedown and mouseup would lose the click) and typing is never disturbed
    const media = make("div", "gw-grid-cell-body");
    const stars = make("div", "gw-grid-stars");
    const starButtons = [];
    for (let s = 1; s <= 5; s++) {
      const star = make("button", "gw-grid-star");
      star.type = "button";
      star.dataset.stars = String(s);
      star.append(icon("star", 16));
      star.addEventListener("click", () => {
        const value = s === node.stars ? 0 : s;
        node.stars = value;
        paintStars(node);
        sendField(index, "stars", value);
      });
      starButtons.push(star);
      stars.append(star);
    }
    const tools = make("div", "gw-grid-tools");
    const recall = button("", "open the endpoint's form with this cell's payload", () =>
      act("_ask_recall", { index }), "gw-grid-icon-button gw-grid-recall");
    recall.append(icon("recall", 14));
    tools.append(stars, recall);
    const input = make("input", "gw-grid-note");
    input.placeholder = "note";
    input.addEventListener("change", () => sendField(index, "note", input.value || null));
    node.root.replaceChildren(media, tools, input);
    Object.assign(node, { media, starButtons, input, stars: 0 });
  }

  function paintStars(node) {
    node.starButtons.forEach((star, i) => {
      const s = i + 1;
      star.className = "gw-grid-star" + (s <= node.stars ? " gw-grid-star-on" : "");
      star.title = s === node.stars ? "clear the rating" : `${s} of 5`;
    });
  }

  function drawRating(cell, node) {
    const wait = pending.get(cell.index);
    if (wait) {
      if ("stars" in wait && wait.stars === cell.stars) delete wait.stars;
      if ("note" in wait && (wait.note || null) === (cell.note || null)) delete wait.note;
      if (!("stars" in wait) && !("note" in wait)) pending.delete(cell.index);
      else if (Date.now() - wait.at > PENDING_MS) pending.delete(cell.index);
    }
    const waiting = pending.get(cell.index) || {};
    node.stars = "stars" in waiting ? waiting.stars : cell.stars || 0;
    paintStars(node);
    const note = "note" in waiting ? waiting.note || "" : cell.note || "";
    if (document.activeElement !== node.input && node.input.value !== note) node.input.value = note;
  }

  function drawCell(cell, node) {
    if (!node.media) buildCell(node, cell.index);
    drawRating(cell, node);
    const { stars: _stars, note: _note, ...rest } = cell;
    const key = JSON.stringify(rest) + (thumbs.has(cell.index) ? "+" : "");
    if (node.last === key) return;
    node.last = key;
    const td = node.root;
    td.className = `gw-grid-cell gw-grid-${cell.category}`;
    const thumb = make("div", "gw-grid-thumb");
    const first = cell.outputs[0];
    const pictures = thumbs.get(cell.index) || [];
    const pictured = first && (first.kind === "image" || first.kind === "video");
    const shown = !first ? null
      : pictured && pictures[0] ? thumbnail(pictures[0]) : media(first, { controls: false });
    if (shown) {
      thumb.append(shown);
      if (first.kind === "video") thumb.append(icon("video", 20, "#ffffff"));
    } else if (first) {
      thumb.append(icon(first.kind === "audio" ? "audio" : first.kind === "video" ? "video" : "file", 40, "#6b7280"));
    } else {
      thumb.append(make("span", "gw-grid-status", cell.status));
    }
    const total = cell.outputs_total ?? cell.outputs.length; // the records stop at the cap
    if (total > 1) thumb.append(make("span", "gw-grid-count", String(total)));
    if (cell.outputs.length || cell.request_id) {
      thumb.classList.add("gw-grid-clickable");
      thumb.title = "enlarge";
      thumb.addEventListener("click", () => openBox(cell.index));
    }
    td.dataset.kind = cell.kind || "";
    const parts = [thumb];
    if (cell.error) parts.push(make("div", "gw-grid-error", cell.error));
    if (cell.plan_note) parts.push(make("div", "gw-grid-plan-note", cell.plan_note));
    node.media.replaceChildren(...parts);
  }

  function openBox(index) {
    openIndex = index;
    if (!full.has(index) && !stopped) {
      fullErrors.delete(index);
      ask("_ask_full", { index }).then((reply) => {
        if (reply.error) fullErrors.set(index, reply.error);
        else full.set(index, { outputs: reply.outputs || [], more: reply.more, code: reply.code || {} });
        if (openIndex === index) drawBox();
      });
    }
    drawBox();
  }

  function drawBox() {
    if (openIndex == null) { lightbox.hidden = true; return; }
    const cell = (model.get("cell_states") || []).find((c) => c.index === openIndex);
    if (!cell) { lightbox.hidden = true; return; }
    const panel = make("div", "gw-grid-panel");
    const close = button("close", "close", () => { openIndex = null; drawBox(); }, "gw-grid-button gw-grid-close");
    panel.append(close, make("div", "gw-grid-label", cell.label));
    const outputs = make("div", "gw-grid-outputs");
    const fetched = full.get(cell.index);
    const shownOutputs = fetched && fetched.outputs;
    if (!shownOutputs && cell.outputs.length) {
      const why = stopped ? STOPPED_TEXT : fullErrors.get(cell.index) || "loading…";
      outputs.append(make("span", "gw-grid-status", why));
    }
    for (const output of shownOutputs || []) {
      const node = media(output, { controls: true });
      outputs.append(node || make("pre", "gw-grid-text", output.text || output.kind));
    }
    if (fetched && fetched.more) outputs.append(make("span", "gw-grid-status", fetched.more));
    panel.append(outputs);
    if (cell.error) panel.append(make("div", "gw-grid-error", cell.error));
    panel.append(make("div", "gw-grid-meta", "request id: " + (cell.request_id || "not sent")));
    panel.append(make("div", "gw-grid-meta", `${cell.endpoint || ""} · ${cell.kind || ""} · billed ${cell.billed}`));
    if (cell.plan_note) panel.append(make("div", "gw-grid-plan-note", cell.plan_note));
    panel.append(make("pre", "gw-grid-payload", JSON.stringify(cell.payload, null, 2)));
    const code = (fetched && fetched.code) || {};
    for (const [name, text] of [["Python", code.python], ["cURL", code.curl]]) {
      if (!text) continue;
      panel.append(make("div", "gw-grid-code-title", name));
      panel.append(make("pre", "gw-grid-code", text));
    }
    lightbox.replaceChildren(panel);
    lightbox.hidden = false;
  }
  lightbox.addEventListener("click", (event) => {
    if (event.target === lightbox) { openIndex = null; drawBox(); }
  });

  function drawAll() {
    const head = model.get("head") || {};
    drawHead();
    const key = JSON.stringify([head.x, head.y, head.z, tab, Object.keys(head.scores || {})]);
    if (key !== layoutKey) {
      layoutKey = key;
      drawTable();
    }
    for (const cell of model.get("cell_states") || []) {
      const node = cellNodes.get(cell.index);
      if (node) drawCell(cell, node);
    }
    drawMargins(head.scores || {});
    if (openIndex != null) drawBox();
    if (stopped) disableControls(el);
  }

  function drawMargins(scores) {
    for (const node of tableHost.querySelectorAll(".gw-grid-margin-x")) {
      node.textContent = scoreText((scores.x || [])[Number(node.dataset.col)]);
    }
    for (const node of tableHost.querySelectorAll(".gw-grid-margin-y")) {
      node.textContent = scoreText((scores.y || [])[Number(node.dataset.row)]);
    }
  }

  const onMessage = (content) => {
    if (content && Array.isArray(content.cells)) {
      const cells = new Map((model.get("cell_states") || []).map((cell) => [cell.index, cell]));
      for (const cell of content.cells) cells.set(cell.index, cell);
      const merged = [...cells.values()].sort((a, b) => a.index - b.index);
      model.set("cell_states", merged); // this page's copy: "change:cell_states" draws it
    }
    if (content && content.thumbs) {
      takeThumbs(content.thumbs);
      drawAll();
    }
  };
  model.on("msg:custom", onMessage);
  // the hello: the thumbnails made before this view existed (answered whenever the
  // kernel is free, so no deadline: a later one would lose them)
  ask("_ask_thumbs", {}, null).then((reply) => { if (!reply.error) onMessage(reply); });

  const onHead = () => drawAll();
  const onCells = () => drawAll();
  model.on("change:head", onHead);
  model.on("change:cell_states", onCells);
  const timer = setInterval(() => {
    const eta = el.querySelector(".gw-grid-eta");
    if (eta) eta.textContent = remaining((model.get("head") || {}).expected_finish_at);
  }, 1000);
  drawAll();
  const endFace = liveFace(model, el, () => {
    stopped = true;
    clearInterval(timer);
    const eta = el.querySelector(".gw-grid-eta");
    if (eta) eta.textContent = "";
    layoutKey = "";
    for (const node of cellNodes.values()) node.last = "";
    drawAll();
  });
  return () => {
    endFace();
    clearInterval(timer);
    model.off("change:head", onHead);
    model.off("change:cell_states", onCells);
    model.off("msg:custom", onMessage);
  };
}

export default { render };
