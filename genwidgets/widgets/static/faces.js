// The live face of a genwidgets view (genwidgets/widgets/faces.py), shared by every
// view's module (the kernel joins this file and the view's into one module).
//
// Each view is two display outputs: this live face, then its lasting face (plain
// HTML marked data-gw-lasting="<id>"), which hides the output before it. While the
// live face is mounted and its kernel lives, a <style> inside it shows the live face
// again and hides the lasting face; the style goes when the view goes. A live face with no kernel behind it (restored from saved widget state, or a
// static page) hides itself (hide(), by default the view's element) and leaves the
// lasting face in sight. When the kernel stops (restarted, killed, shut down), onStop()
// runs once.

// An element of a view's page: its class and its text (as text, never as markup).
function make(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text != null) node.textContent = text;
  return node;
}

const STOPPED_TEXT = "kernel stopped: re-run, or client.resume() re-attaches";
const DEAD_STATES = ["dead", "restarting", "autorestarting", "terminating"];

function liveFace(model, el, onStop, hide = () => {
  el.hidden = true;
  el.style.display = "none";
}) {
  const face = model.get("face") || {};
  const id = String(face.id || "").replace(/[^0-9a-z]/gi, "");
  const style = document.createElement("style");
  if (id) {
    // The lasting face hides the output before it (its live twin, drawn or not);
    // while this live face is mounted and its kernel lives, it shows itself again
    // and hides the lasting face instead.
    el.classList.add(`gw-face-${id}`);
    style.textContent =
      `[data-gw-lasting="${id}"]{display:none!important}` +
      `.jp-OutputArea-child:has([data-gw-lasting="${id}"]){display:none!important}` +
      `.jp-OutputArea-child:has(.gw-face-${id}){display:flex!important}`;
  }
  const manager = model.widget_manager;
  let stopped = false;
  let timer = null;
  let closed = false;
  const stop = () => {
    if (stopped || closed) return;
    stopped = true;
    if (timer) clearInterval(timer);
    onStop();
  };
  // The widget manager marks every model disconnected when its kernel restarts
  // (a killed kernel is restarted by the server): that is this event.
  const onLive = () => stop();
  const kernelOf = () => {
    try {
      return manager && "kernel" in manager ? manager.kernel : undefined;
    } catch (error) {
      return undefined;
    }
  };
  const watch = () => {
    el.append(style);
    model.on("comm_live_update", onLive);
    let seen = null;
    timer = setInterval(() => {
      const kernel = kernelOf();
      if (kernel === undefined) return; // not Jupyter's manager (marimo, a static page)
      if (kernel && !seen) seen = kernel;
      if (!seen) return;
      if (kernel !== seen || seen.isDisposed || DEAD_STATES.includes(seen.status)
          || seen.connectionStatus === "disconnected") stop();
    }, 1000);
  };
  const lookup = manager && typeof manager.get_model === "function" && face.model
    ? manager.get_model(face.model).catch(() => null)
    : Promise.resolve(null);
  lookup.then((found) => {
    if (closed) return;
    if (found && found.comm_live === false) {
      hide(); // no kernel behind this model: the lasting face stays in sight
      return;
    }
    watch();
  });
  return () => {
    closed = true;
    if (timer) clearInterval(timer);
    model.off("comm_live_update", onLive);
    style.remove();
  };
}
