// A batch's live view (anywidget front-end; no build step, no CDN).
//
// State comes from two traits written by the kernel (genwidgets/widgets/batch_view.py):
// `head` (counts, spend, rate, time left, summary, which buttons to show) and
// `thumbs` (the latest ended rows, each with a kernel-made thumbnail as a data URL).
// The buttons ask by anywidget commands (faces.js `ask`): _ask_submit, _ask_cancel,
// _ask_retry; a refused ask's error is shown. Text goes in with textContent;
// pictures must be image data URLs. It is a view's live face (faces.js, joined before
// this file): when its kernel stops it says so and its buttons go.

const SAFE_THUMB = /^data:image\/(png|jpeg|webp|gif);base64,/i;

function duration(seconds) {
  if (seconds == null || !isFinite(seconds)) return "";
  if (seconds < 90) return `${Math.round(seconds)} s`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} min`;
  return `${(seconds / 3600).toFixed(1)} h`;
}

function render({ model, el }) {
  const root = make("div", "gw-batch-root");
  el.appendChild(root);
  const ask = asker(model);
  let stopped = false;
  let problem = ""; // the kernel's answer to a refused ask
  const act = (name) => ask(name).then((reply) => { problem = reply.error || ""; draw(); });

  function draw() {
    const head = model.get("head") || {};
    const counts = head.counts || {};
    const total = head.total || 0;
    root.replaceChildren();

    const top = make("div", "gw-batch-top");
    top.appendChild(make("span", "gw-batch-title", `batch ${head.id || ""} → ${head.endpoint || ""}`));
    if (head.simulated) top.appendChild(make("span", "gw-batch-simulated", "simulated"));
    root.appendChild(top);
    root.appendChild(make("div", "gw-batch-summary", head.summary || ""));

    const bar = make("div", "gw-batch-bar");
    for (const key of ["done", "failed", "running"]) {
      const part = make("span", `gw-batch-${key}`);
      part.style.width = total ? `${(100 * (counts[key] || 0)) / total}%` : "0";
      bar.appendChild(part);
    }
    root.appendChild(bar);

    const row = make("div", "gw-batch-counts");
    for (const key of ["done", "running", "queued", "failed"]) {
      const item = make("span", `gw-batch-count gw-batch-count-${key}`);
      item.appendChild(make("b", null, String(counts[key] || 0)));
      item.appendChild(document.createTextNode(` ${key}`));
      row.appendChild(item);
    }
    for (const [key, n] of Object.entries(head.others || {})) {
      row.appendChild(make("span", "gw-batch-count", `${n} ${key}`));
    }
    row.appendChild(make("span", "gw-batch-count", `of ${total}`));
    root.appendChild(row);

    const meta = [];
    if (head.spent) meta.push(head.spent);
    if (head.rate && !head.finished) meta.push(`${Number(head.rate).toPrecision(2)} rows/s`);
    if (head.eta != null && !head.finished) meta.push(`about ${duration(head.eta)} left`);
    if (meta.length) root.appendChild(make("div", "gw-batch-meta", meta.join(" · ")));
    if (head.stopped) root.appendChild(make("div", "gw-batch-stopped", head.stopped));
    if (head.error) root.appendChild(make("div", "gw-batch-error", head.error));
    if (problem) root.appendChild(make("div", "gw-batch-error gw-batch-problem", problem));

    if (stopped) root.appendChild(make("div", "gw-batch-stopped", STOPPED_TEXT));
    const controls = make("div", "gw-batch-controls");
    if (stopped) {
      // no kernel: no button can be answered
    } else if (head.needs_confirmation) {
      const submit = make("button", "gw-batch-button gw-batch-submit", "Submit");
      submit.onclick = () => act("_ask_submit");
      controls.appendChild(submit);
    }
    if (!stopped && head.started && !head.finished) {
      const cancel = make("button", "gw-batch-button gw-batch-cancel", "Cancel all");
      cancel.onclick = () => act("_ask_cancel");
      controls.appendChild(cancel);
    }
    if (!stopped && head.can_retry) {
      const retry = make("button", "gw-batch-button gw-batch-retry", "Retry failed");
      retry.onclick = () => act("_ask_retry");
      controls.appendChild(retry);
    }
    if (controls.childNodes.length) root.appendChild(controls);

    const thumbs = make("div", "gw-batch-thumbs");
    for (const item of model.get("thumbs") || []) {
      const figure = make("figure", `gw-batch-thumb gw-batch-thumb-${item.status}`);
      const box = make("div", "gw-batch-thumb-box");
      if (SAFE_THUMB.test(item.src || "")) {
        const img = make("img");
        img.alt = "";
        img.src = item.src;
        box.appendChild(img);
      } else {
        box.textContent = item.status;
      }
      figure.appendChild(box);
      figure.appendChild(make("figcaption", null, `${item.row}: ${item.label}`));
      thumbs.appendChild(figure);
    }
    root.appendChild(thumbs);
    root.appendChild(make("div", "gw-batch-out", `files and manifest.csv in ${head.out || ""}`));
  }

  draw();
  model.on("change:head", draw);
  model.on("change:thumbs", draw);
  const endFace = liveFace(model, el, () => {
    stopped = true;
    draw();
  });
  return () => {
    endFace();
    model.off("change:head", draw);
    model.off("change:thumbs", draw);
  };
}

export default { render };
