// What a view asks its kernel (a button, a star, the lightbox), joined after faces.js
// in the views that ask (the kernel joins the files into one module). It goes by
// anywidget's command protocol: the kernel answers with anywidget's own `command` dispatch
// (genwidgets/widgets/faces.py, `answers`): {ok: true, ...} or {error}. The page speaks
// the protocol over model.send itself rather than with experimental.invoke, which
// marimo does not carry (docs/decisions.md#view-commands). An answer is awaited at most
// `seconds` (null: as long as the view lives): a kernel busy with a cell answers when
// the cell ends, so a late answer is said to be late, not failed.
const ASK_SECONDS = 30;
let asks = 0;

function asker(model) {
  return (name, msg = {}, seconds = ASK_SECONDS) => new Promise((resolve) => {
    const id = `gw-${++asks}-${Math.random().toString(36).slice(2)}`;
    let timer = null;
    const heard = (content) => {
      if (!content || content.kind !== "anywidget-command-response" || content.id !== id) return;
      const reply = content.response;
      done(reply && typeof reply === "object" ? reply : { error: "the kernel's answer was empty" });
    };
    const done = (reply) => {
      if (timer) clearTimeout(timer);
      model.off("msg:custom", heard);
      resolve(reply);
    };
    if (seconds != null) {
      timer = setTimeout(() => done({
        late: true,
        error: `no answer in ${seconds} s: the kernel may be busy with a cell (it acts on this when the cell ends)`,
      }), seconds * 1000);
    }
    model.on("msg:custom", heard);
    model.send({ id, kind: "anywidget-command", name, msg });
  });
}
