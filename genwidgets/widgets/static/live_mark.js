// The mark that makes an ipywidgets container (the board, a sweep, a gw.render) a
// live face (genwidgets/widgets/faces.py, LiveMark): liveFace() of faces.js does the
// work; here, what "stopped" and "hidden" mean for a container marked
// gw-live-<face id>: a line saying the kernel stopped, its controls disabled.

function render({ model, el }) {
  const face = model.get("face") || {};
  const id = String(face.id || "").replace(/[^0-9a-z]/gi, "");
  const selector = `.gw-live-${id}`;
  const line = make("div", "gw-stopped");
  line.style.cssText = "color:#92400e;font-size:0.9em;margin:2px 0";
  line.hidden = true;
  el.append(line);
  const onStop = () => {
    line.textContent = STOPPED_TEXT;
    line.hidden = false;
    for (const control of document.querySelectorAll(
      `${selector} button, ${selector} input, ${selector} select, ${selector} textarea`,
    )) {
      control.disabled = true;
    }
  };
  const hide = () => {
    const style = document.createElement("style");
    style.textContent = `${selector}{display:none!important}`;
    el.append(style);
  };
  return liveFace(model, el, onStop, hide);
}

export default { render };
