// The live view of one genwidgets task (anywidget front-end; no build step, no CDN).
//
// Everything it shows comes from the model's traits, written by the kernel only
// when the task's state changes (genwidgets/widgets/task.py). The elapsed clock
// and "about N s left" move here, in the browser: no kernel message per second.
// Media load straight from their URLs. Text from the kernel goes in with
// textContent; the one HTML trait (`html` of a non-media output) was escaped by
// the kernel's renderer (genwidgets/widgets/render.py). It is a live face
// (faces.js, joined before this file): when its kernel stops it says so, its
// clock stops and Cancel is disabled. Cancel asks the kernel by an anywidget
// command (faces.js `ask`, _ask_cancel).

const SAFE_URL = /^(https?:\/\/|data:(image|video|audio)\/[a-z0-9.+-]+[;,]|blob:|[^:]*$)/i;
const REDRAWN = [
  "status", "category", "status_raw", "palette", "terminal", "queue_position",
  "elapsed", "start_time", "expected_finish_at", "error", "error_type",
  "simulated", "cancel_requested", "cancel_error", "outputs", "endpoint", "request_id",
];

function formatElapsed(seconds) {
  if (seconds == null || !(seconds >= 0)) return "";
  if (seconds < 60) return `${seconds.toFixed(1)}s`;
  const whole = Math.floor(seconds);
  const minutes = Math.floor(whole / 60);
  if (minutes < 60) return `${minutes}m ${String(whole % 60).padStart(2, "0")}s`;
  return `${Math.floor(minutes / 60)}h ${String(minutes % 60).padStart(2, "0")}m`;
}

function withFallback(media, output) {
  // A saved notebook's URL may be dead (expired, or the simulator stopped):
  // switch once to the local copy the kernel kept, if there is one.
  const fallback = output.fallback;
  if (!fallback || !SAFE_URL.test(fallback)) return media;
  media.addEventListener("error", () => {
    if (media.src !== fallback) media.src = fallback;
  });
  return media;
}

function mediaElement(output) {
  const url = output.url || "";
  if (!SAFE_URL.test(url)) return null;
  if (output.kind === "image") {
    const img = make("img", "gw-media");
    img.alt = output.name || "";
    withFallback(img, output);
    img.src = url;
    return img;
  }
  const media = make(output.kind === "video" ? "video" : "audio", "gw-media");
  media.controls = true; // controls only: the user starts it, it never starts or repeats by itself
  media.preload = "metadata";
  if (output.poster && SAFE_URL.test(output.poster)) media.poster = output.poster;
  withFallback(media, output);
  media.src = url;
  return media;
}

function outputElement(output) {
  const cell = make("div", "gw-output");
  const media = ["image", "video", "audio"].includes(output.kind) ? mediaElement(output) : null;
  if (media) {
    cell.append(media);
  } else {
    const body = make("div", "gw-output-body");
    body.innerHTML = output.html || ""; // escaped by render.py
    cell.append(body);
  }
  if (output.caption) cell.append(make("div", "gw-caption", output.caption));
  return cell;
}

function render({ model, el }) {
  el.classList.add("gw-task-view"); // Jupyter has it from _dom_classes already; marimo does not
  const root = make("div", "gw-task");
  const top = make("div", "gw-top");
  const line = make("div", "gw-line");
  const status = make("span", "gw-status");
  const queue = make("span", "gw-queue");
  const elapsed = make("span", "gw-elapsed");
  const eta = make("span", "gw-eta");
  const badge = make("span", "gw-simulated", "simulated");
  badge.title = "answers come from the local simulator, not a real gateway";
  line.append(status, queue, elapsed, eta, badge);
  const cancel = make("button", "gw-cancel", "Cancel");
  cancel.type = "button";
  cancel.title = "ask the gateway to cancel this task";
  top.append(line, cancel);
  const bar = make("div", "gw-bar");
  bar.append(make("div", "gw-bar-fill"));
  const ident = make("div", "gw-ident");
  const endpoint = make("span", "gw-endpoint");
  const requestId = make("code", "gw-request-id");
  ident.append(endpoint, make("span", "gw-dim", " request_id "), requestId);
  const errors = make("div", "gw-errors");
  const outputs = make("div", "gw-outputs");
  root.append(top, bar, ident, errors, outputs);
  el.append(root);
  // The gateway's logs: the latest line while running, the last few once finished.
  const logs = make("pre", "gw-logs");
  root.insertBefore(logs, outputs);
  const drawLogs = () => {
    const lines = model.get("logs") || [];
    logs.textContent = lines.join("\n");
    logs.hidden = lines.length === 0;
  };
  model.on("change:logs", drawLogs);
  drawLogs();

  let clicked = false;
  let refused = ""; // the kernel's answer when it could not take the Cancel
  const ask = asker(model);
  let stopped = false;
  let shownOutputs = null;
  const stoppedLine = make("div", "gw-stopped");
  stoppedLine.hidden = true;
  root.insertBefore(stoppedLine, bar);

  function clock() {
    if (stopped) return; // the kernel is gone: the clock stays where it was
    const terminal = model.get("terminal");
    const start = model.get("start_time");
    const seconds = terminal ? model.get("elapsed") : Date.now() / 1000 - start;
    elapsed.textContent = formatElapsed(Math.max(0, seconds));
    const finishAt = model.get("expected_finish_at");
    if (terminal || finishAt == null) {
      eta.hidden = true;
    } else {
      const left = Math.round(finishAt - Date.now() / 1000);
      eta.hidden = false;
      eta.textContent = left > 0 ? `about ${left} s left` : "finishing";
    }
  }

  function draw() {
    const category = model.get("category");
    const terminal = model.get("terminal");
    status.className = `gw-status gw-status-${category}`;
    status.textContent = model.get("status");
    for (const [name, colour] of Object.entries(model.get("palette") || {})) {
      root.style.setProperty(`--gw-${name}`, colour);
    }
    const raw = model.get("status_raw");
    status.title = raw && raw !== model.get("status") ? raw : "";
    const position = model.get("queue_position");
    queue.hidden = !(category === "queued" && !terminal && position != null);
    queue.textContent = queue.hidden ? "" : `queue position ${position}`;
    badge.hidden = !model.get("simulated");
    bar.className = terminal
      ? `gw-bar gw-bar-done gw-${category}`
      : stopped ? "gw-bar gw-bar-stopped" : `gw-bar gw-bar-indeterminate gw-bar-${category}`;
    endpoint.textContent = model.get("endpoint");
    requestId.textContent = model.get("request_id");

    if (terminal) {
      cancel.hidden = true;
      cancel.disabled = true;
    } else if (stopped) {
      cancel.disabled = true;
      cancel.title = "the kernel that ran this task has stopped";
    } else if (clicked || model.get("cancel_requested")) {
      cancel.disabled = true;
      cancel.textContent = "cancel requested";
    } else {
      cancel.disabled = false;
      cancel.textContent = "Cancel";
    }

    errors.replaceChildren();
    const error = model.get("error");
    const errorType = model.get("error_type");
    if (error || errorType) {
      const line = make("div", "gw-error", error || "");
      if (errorType) line.append(" ", make("code", "", `(${errorType})`));
      errors.append(line);
    }
    const cancelError = model.get("cancel_error") || refused;
    if (cancelError) errors.append(make("div", "gw-error", cancelError));

    const list = model.get("outputs") || [];
    const key = JSON.stringify(list);
    if (key !== shownOutputs) {
      // Redrawn only when they change: a playing video is not reset by a status write.
      shownOutputs = key;
      outputs.replaceChildren(...list.map(outputElement));
    }
    clock();
  }

  cancel.addEventListener("click", () => {
    if (clicked || stopped || model.get("terminal")) return;
    clicked = true;
    cancel.disabled = true;
    cancel.textContent = "cancel requested";
    // answered: the kernel's state says from now on whether the button is spent (a
    // cancel refused, or not sent and kept, lets it be pressed again)
    ask("_ask_cancel").then((reply) => { refused = reply.error || ""; clicked = false; draw(); });
  });

  const timer = setInterval(() => {
    if (model.get("terminal")) return;
    clock();
  }, 200);
  for (const name of REDRAWN) model.on(`change:${name}`, draw);
  draw();
  const endFace = liveFace(model, el, () => {
    stopped = true;
    clearInterval(timer);
    stoppedLine.textContent = STOPPED_TEXT;
    stoppedLine.hidden = false;
    draw();
  });
  return () => {
    endFace();
    clearInterval(timer);
    model.off("change:logs", drawLogs);
    for (const name of REDRAWN) model.off(`change:${name}`, draw);
  };
}

export default { render };
