"""Two faces of a view: a live output, then a lasting output kept current off the
caller's thread, written again at the end of the next cell (for headless runners),
and the end of a cell waiting (bounded) for a lasting face being rewritten."""

from __future__ import annotations

import threading
from typing import Any

import ipywidgets
import pytest
from widgets.taskfakes import DisplayRecorder, wait_for

from genwidgets.jobs.engine import wait_future
from genwidgets.widgets import faces
from genwidgets.widgets.faces import (
    WIDGET_VIEW_MIME,
    Faces,
    LiveMark,
    Republisher,
    make_two_faced,
    static_module,
)
from genwidgets.widgets.markup import LASTING_STYLE


@pytest.fixture
def shown(monkeypatch: pytest.MonkeyPatch) -> DisplayRecorder:
    import IPython.display

    recorder = DisplayRecorder()
    monkeypatch.setattr(IPython.display, "display", recorder)
    monkeypatch.setattr(faces, "in_kernel", lambda: True)
    faces.REPUBLISH.flush()  # nothing of other tests pending
    return recorder


def test_a_view_is_its_live_output_then_its_lasting_output(shown: DisplayRecorder) -> None:
    state = {"word": "running"}
    face = Faces(lambda media: {"text/html": f"<b>{state['word']}</b>", "text/plain": media})
    live = ipywidgets.Label("live")
    face.show(live)
    [(live_data, live_kwargs), (lasting, lasting_kwargs)] = shown.calls
    # the live face: the widget's view, and nothing a front-end without widgets would
    # show twice (its lasting twin comes next)
    assert live_data == {WIDGET_VIEW_MIME: live_data[WIDGET_VIEW_MIME], "text/plain": ""}
    assert live_data[WIDGET_VIEW_MIME]["model_id"] == live.model_id
    assert "display_id" not in live_kwargs
    assert lasting_kwargs == {"raw": True, "display_id": True}
    html = lasting["text/html"]
    assert html.startswith(f'<div class="gw-lasting" data-gw-lasting="{face.id}">')
    assert LASTING_STYLE in html and "<b>running</b>" in html
    assert lasting["text/plain"] == "previews"  # GENWIDGETS_SAVED_MEDIA's default
    assert face.live(live) == {"id": face.id, "model": live.model_id}


def test_a_refresh_rewrites_the_lasting_face_off_the_callers_thread(shown: DisplayRecorder) -> None:
    state = {"word": "running"}
    face = Faces(lambda media: {"text/html": state["word"], "text/plain": ""})
    face.show(ipywidgets.Label())
    state["word"] = "done"
    asked_from = threading.Thread(target=lambda: face.refresh(force=True), name="engine-like")
    asked_from.start()
    asked_from.join()
    [handle] = shown.handles
    assert wait_for(lambda: "done" in handle.last_html())
    worker = faces.LASTING_WORK.submit(lambda: threading.current_thread().name).result(30)
    assert all(name == worker != "engine-like" for name in handle.threads)


def test_refreshes_coalesce_and_the_last_state_is_written(shown: DisplayRecorder) -> None:
    state = {"n": 0}
    started = threading.Event()
    release = threading.Event()

    def build(media: str) -> dict[str, str]:
        started.set()
        release.wait(10)
        return {"text/html": f"n={state['n']}", "text/plain": ""}

    face = Faces(build)
    release.set()
    face.show(ipywidgets.Label())  # built at once, in the cell
    release.clear()
    started.clear()
    face.refresh(force=True)
    assert started.wait(10)  # a rewrite is under way and blocked
    for n in range(1, 50):
        state["n"] = n
        face.refresh(force=True)
    release.set()
    [handle] = shown.handles
    assert wait_for(lambda: handle.last_html().endswith("n=49</div>"))
    assert faces.settle(10)
    assert len(handle.updates) <= 3  # the one under way, at most one more, not 49


def test_the_end_of_a_cell_waits_for_a_refresh_asked_while_a_rewrite_was_under_way(
    shown: DisplayRecorder,
) -> None:
    """A rewrite under way when the task ends (its bundle begun before the result) must
    not settle the face: the refresh the result asked is still on its way (a throttle's
    timer, a late ticker on a busy machine). A lesson run beside two busy cores saved
    a speech task "done when last seen", its outputs never written: the end of its last
    cell had stopped waiting when the older rewrite ended."""
    state = {"word": "running"}
    started, release = threading.Event(), threading.Event()

    def build(media: str) -> dict[str, str]:
        word = state["word"]  # the bundle is begun with what the task shows now
        started.set()
        release.wait(10)
        return {"text/html": word, "text/plain": ""}

    face = Faces(build, interval=3600.0)  # a refresh after a write waits for its timer
    release.set()
    face.show(ipywidgets.Label())  # built at once, in the cell
    release.clear()
    started.clear()
    state["word"] = "submitted"
    face.refresh(force=True)
    try:
        assert started.wait(10)  # a rewrite is under way, its bundle begun: "submitted"
        state["word"] = "done"
        face.refresh()  # the task ended: asked, and held by the throttle's interval
        release.set()
        faces.LASTING_WORK.submit(lambda: None).result(30)  # that rewrite has ended
        assert "submitted" in shown.handle.last_html()
        assert not faces.settle(0), "settled with the task's end not yet written"
    finally:
        release.set()
        face.refresh(force=True)  # the throttle's write (its timer, sooner)
    assert faces.settle(30) and "done" in shown.handle.last_html()


def test_a_refresh_asked_after_the_end_of_a_cell_began_does_not_hold_it(
    shown: DisplayRecorder,
) -> None:
    """The end of a cell waits for the faces as they were when it began, not for a
    stream of refreshes (a running batch's view) that keeps asking after it."""
    face = Faces(lambda media: {"text/html": "same", "text/plain": ""}, interval=3600.0)
    face.show(ipywidgets.Label())
    assert faces.settle(30)
    waiting = threading.Event()
    result: list[bool] = []

    def end_of_cell() -> None:
        waiting.set()
        result.append(faces.settle(30))

    cell = threading.Thread(target=end_of_cell)
    with faces._SETTLING:  # the end of the cell takes its snapshot first, then waits
        cell.start()
        assert waiting.wait(10)
    face.refresh()  # asked after: held by the throttle's interval, not written yet
    cell.join(40)
    assert result == [True]
    face.refresh(force=True)
    assert faces.settle(30)


def test_a_lasting_face_that_waits_on_the_engine_fails_at_once(shown: DisplayRecorder) -> None:
    import concurrent.futures

    never: concurrent.futures.Future[int] = concurrent.futures.Future()
    face = Faces(lambda media: {"text/html": str(wait_future(never, 30)), "text/plain": ""})
    # refused, not waited: a wait would end in a TimeoutError after 30 s, not this
    with pytest.raises(RuntimeError, match="lasting face"):
        face.bundle()
    assert not never.done()


def test_a_bad_saved_media_setting_is_an_error_in_the_cell(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GENWIDGETS_SAVED_MEDIA", "all of it")
    with pytest.raises(ValueError, match="posters, previews, full"):
        Faces(lambda media: {"text/html": "", "text/plain": ""})
    with pytest.raises(ValueError, match="media='huge'"):
        Faces(lambda media: {"text/html": "", "text/plain": ""}, media="huge")


def slow_rewrite() -> tuple[Faces, threading.Event]:
    """A face shown "running" whose rewrite to "done" (asked now) waits for the event: a
    video's first preview."""
    release = threading.Event()
    state = {"word": "running"}

    def build(media: str) -> dict[str, str]:
        if state["word"] == "done":
            release.wait(20)
        return {"text/html": state["word"], "text/plain": ""}

    face = Faces(build)
    face.show(ipywidgets.Label())
    state["word"] = "done"
    return face, release


def test_the_end_of_a_cell_writes_each_face_once_more_and_waits_for_rewrites(
    shown: DisplayRecorder,
) -> None:
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    face, release = slow_rewrite()
    [handle] = shown.handles
    face.refresh(force=True)
    threading.Timer(1.0, release.set).start()
    shell.run_cell("1 + 1")  # the end of the cell waits for the rewrite, then writes again
    done = [u for u, t in zip(handle.htmls(), handle.threads, strict=True) if "done" in u]
    names = [t for u, t in zip(handle.htmls(), handle.threads, strict=True) if "done" in u]
    assert len(done) == 2 and names[-1] == threading.main_thread().name
    shell.run_cell("2 + 2")
    assert len(handle.updates) == 2  # once, not on every later cell


def test_a_keyed_write_replaces_the_pending_one() -> None:
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    republisher = Republisher()
    writes: list[str] = []
    key = object()
    republisher.add(lambda: writes.append("first"), key=key)
    republisher.add(lambda: writes.append("latest"), key=key)
    republisher.add(lambda: writes.append("other"))
    shell.run_cell("1 + 1")
    assert writes == ["latest", "other"]
    shell.events.unregister("pre_run_cell", republisher._cell_starts)
    shell.events.unregister("post_run_cell", republisher.flush)


def test_an_ipywidgets_view_gets_a_live_mark_and_its_lasting_face(shown: DisplayRecorder) -> None:
    label = ipywidgets.Label("a rendered output")
    made = make_two_faced(label, lambda media: {"text/html": "<i>kept</i>", "text/plain": "kept"})
    assert made is label  # nests in containers as itself
    label._ipython_display_()  # type: ignore[attr-defined]
    [(live, _), (lasting, _)] = shown.calls
    from ipywidgets.widgets.widget import _instances

    box = _instances[live[WIDGET_VIEW_MIME]["model_id"]]
    assert isinstance(box, ipywidgets.VBox) and box.children[0] is label
    mark = box.children[1]
    assert isinstance(mark, LiveMark)
    face_id = mark.face["id"]
    assert {"gw-live", f"gw-live-{face_id}"} <= set(box._dom_classes)
    assert (
        f'data-gw-lasting="{face_id}"' in lasting["text/html"]
        and "<i>kept</i>" in lasting["text/html"]
    )


def test_outside_a_kernel_a_two_faced_widget_prints_its_text(
    capsys: pytest.CaptureFixture[str],
) -> None:
    label = make_two_faced(
        ipywidgets.Label(), lambda media: {"text/html": "", "text/plain": "kept"}
    )
    label._ipython_display_()  # type: ignore[attr-defined]
    assert capsys.readouterr().out.strip() == "kept"


def test_the_live_face_module_is_joined_before_each_views_module() -> None:
    from genwidgets.widgets.grid import Grid
    from genwidgets.widgets.task import TaskView

    shared = static_module("faces.js")
    for module in (TaskView._esm, Grid._esm, LiveMark._esm):
        assert isinstance(module, str) and module.startswith(shared)
        assert module.count("export default") == 1
        # the views that ask their kernel carry the asker, once; the mark asks nothing
        assert module.count("function asker(") == (module is not LiveMark._esm)
    assert "//" not in "\n".join(
        line for line in shared.splitlines() if line.lstrip().startswith("//")
    )
    assert "kernel stopped: re-run, or client.resume() re-attaches" in shared


def test_a_write_made_while_a_cell_runs_is_not_written_again(shown: DisplayRecorder) -> None:
    # The runner keeps a thread's write made while a cell runs (it carries the cell's
    # label): writing a megabyte-sized sheet twice would only cost the page.
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    state = {"word": "running"}
    face = Faces(lambda media: {"text/html": state["word"], "text/plain": ""})
    face.show(ipywidgets.Label())
    [handle] = shown.handles
    state["word"] = "done"
    shell.user_ns.update(face=face, settle=faces.settle)
    shell.run_cell("face.refresh(force=True)\nassert settle(10)")
    assert handle.htmls() == [handle.htmls()[0]] and "done" in handle.last_html()
    shell.run_cell("1 + 1")
    assert len(handle.updates) == 1


def test_a_rewrite_that_changes_nothing_is_not_sent(shown: DisplayRecorder) -> None:
    state = {"word": "running"}
    face = Faces(lambda media: {"text/html": state["word"], "text/plain": ""})
    face.show(ipywidgets.Label())
    [handle] = shown.handles
    face.refresh(force=True)  # a late callback: the face shows what it showed
    assert faces.settle(10) and handle.updates == []
    state["word"] = "done"
    face.refresh(force=True)
    assert faces.settle(10) and len(handle.updates) == 1 and "done" in handle.last_html()


def test_a_rewrite_that_lands_in_a_cell_is_not_overwritten_by_an_older_pending_one(
    shown: DisplayRecorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A face rewritten between cells waits to be written again at the end of the next
    cell; rewritten once more during that cell (its task ended there), the older bundle
    must not be written over it at the cell's end (a form's task list was saved
    "submitted" while its task was done)."""
    from IPython.core.interactiveshell import InteractiveShell

    InteractiveShell.instance()  # a shell, so pending writes are kept
    state = {"word": "queued"}
    face = Faces(lambda media: {"text/html": state["word"], "text/plain": ""})
    face.show(ipywidgets.Label())
    state["word"] = "submitted"
    monkeypatch.setattr(faces.REPUBLISH, "in_cell", False)
    face.refresh()
    assert wait_for(lambda: "submitted" in shown.handle.last_html(), timeout=10)
    monkeypatch.setattr(faces.REPUBLISH, "in_cell", True)
    state["word"] = "done"
    face.refresh()
    assert wait_for(lambda: "done" in shown.handle.last_html(), timeout=10)
    faces.REPUBLISH.flush()  # the end of that cell
    assert "done" in shown.handle.updates[-1][0]["text/html"]


def test_a_write_again_taken_before_a_newer_rewrite_writes_the_newer(
    shown: DisplayRecorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The end of a cell takes the writes waiting to be written again, then writes them;
    a task that ends in between has its face rewritten on another thread. The write
    taken must write the newest bundle, or the older one lands last and is saved
    (a task "submitted when last seen" that had ended)."""
    from IPython.core.interactiveshell import InteractiveShell

    InteractiveShell.instance()  # a shell, so pending writes are kept
    state = {"word": "queued"}
    face = Faces(lambda media: {"text/html": state["word"], "text/plain": ""})
    face.show(ipywidgets.Label())
    state["word"] = "submitted"
    monkeypatch.setattr(faces.REPUBLISH, "in_cell", False)
    face.refresh()
    assert wait_for(lambda: "submitted" in shown.handle.last_html(), timeout=10)
    assert faces.settle(10)
    [taken] = faces.REPUBLISH._pending.values()  # what the end of a cell takes first
    state["word"] = "done"
    face.refresh()  # between cells too: it waits to be written again in its turn
    assert wait_for(lambda: "done" in shown.handle.last_html(), timeout=10)
    taken()  # then the end of the cell writes what it took
    assert "done" in shown.handle.updates[-1][0]["text/html"]


def test_a_write_that_straddles_the_start_of_a_cell_is_written_again(
    shown: DisplayRecorder,
) -> None:
    """A write begun between cells carries the label of a cell that has ended, even
    when the next cell has started by the time it is sent: it waits for the end of
    that cell to be written again."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    faces.REPUBLISH.install()
    faces.REPUBLISH.flush()  # between cells
    state = {"word": "running"}
    face = Faces(lambda media: {"text/html": state["word"], "text/plain": ""})
    face.show(ipywidgets.Label())
    handle = shown.handle
    written = handle.update

    def slow_update(*args: Any, **kwargs: Any) -> None:
        shell.events.trigger("pre_run_cell", None)  # the next cell starts while it is sent
        written(*args, **kwargs)

    handle.update = slow_update
    state["word"] = "done"
    face.refresh()
    assert wait_for(lambda: "done" in handle.last_html(), timeout=10) and faces.settle(10)
    handle.update = written
    try:
        assert list(faces.REPUBLISH._pending) == [face]
    finally:
        faces.REPUBLISH.flush()  # the end of that cell: written again, and between cells
    assert "done" in handle.updates[-1][0]["text/html"] and len(handle.updates) == 2


def test_a_display_made_while_a_rewrite_is_built_leaves_no_display_stale(
    shown: DisplayRecorder,
) -> None:
    """A view displayed again (``g.wait(); g``) while its rewrite is being built: the
    new display shows what the rewrite shows, and the rewrite must still reach the first
    display (it was saved "0 of 3 done" beside "3 of 3 done")."""
    state = {"word": "running"}
    building = threading.Event()
    release = threading.Event()

    def build(media: str) -> dict[str, str]:
        if threading.current_thread() is not threading.main_thread():
            building.set()
            release.wait(20)  # a slow rewrite: a big grid's sheet
        return {"text/html": state["word"], "text/plain": ""}

    face = Faces(build)
    face.show(ipywidgets.Label())
    state["word"] = "done"
    face.refresh(force=True)
    assert building.wait(20)
    face.show(ipywidgets.Label())  # displayed again, built at once: "done"
    release.set()
    assert faces.settle(20)
    first, second = shown.handles
    assert "done" in first.last_html()
    assert second.updates == []  # it shows "done" already: not sent twice


def test_a_stop_while_the_end_of_a_cell_waits_says_one_line_and_holds_no_later_cell(
    shown: DisplayRecorder, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The stop button while the end of a cell waits for a slow rewrite: no "Error in
    callback" traceback (the user's code had ended), one line, and the next cell's end
    does not wait for that rewrite again (it waited 13 s)."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    face, release = slow_rewrite()
    face.refresh(force=True)
    waits: list[float] = []

    def stopped(timeout: float | None = None) -> bool:
        waits.append(timeout or 0.0)
        raise KeyboardInterrupt

    monkeypatch.setattr(faces._SETTLING, "wait", stopped)
    try:
        shell.run_cell("1 + 1")  # stopped while its end waits
        assert len(waits) == 1
        said = capsys.readouterr()
        assert "Error in callback" not in said.out + said.err
        assert said.err.strip() == faces.STOPPED_WAITING
        shell.run_cell("2 + 2")  # the next cell's end does not wait for it again
        assert len(waits) == 1
    finally:
        release.set()
        monkeypatch.undo()
    assert wait_for(lambda: "done" in shown.handle.last_html(), timeout=20)


def test_a_cell_run_again_closes_the_views_its_last_run_displayed(
    shown: DisplayRecorder, capsys: pytest.CaptureFixture[str]
) -> None:
    """Run All twice must save what one run saves: a cell run again (JupyterLab sends
    its id) closes the views its last run displayed, so their widget state is no
    longer saved; not a view displayed again since, nor one a user's box still holds."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    face = Faces(lambda media: {"text/html": "kept", "text/plain": ""})
    held, again, shared = ipywidgets.Label("held"), ipywidgets.Label(), ipywidgets.Label()
    first = ipywidgets.VBox([ipywidgets.Label("first"), held])
    shell.user_ns.update(face=face, first=first, again=again, shared=shared)
    shell.run_cell("face.show(first); face.show(again); face.show(shared)", cell_id="a")
    shell.run_cell("face.show(shared)", cell_id="b")  # displayed again by another cell
    users_box = ipywidgets.HBox([held])  # a user's own box, displayed elsewhere
    second = ipywidgets.VBox([ipywidgets.Label("second")])
    shell.user_ns.update(second=second)
    shell.run_cell("face.show(second); face.show(again)", cell_id="a")  # run again
    assert first.comm is None and first.children[0].comm is None and first.layout.comm is None
    assert held.comm is not None and users_box.comm is not None
    assert again.comm is not None and shared.comm is not None and second.comm is not None
    shell.run_cell("1 + 1", cell_meta={"deletedCells": ["b"]})  # cell b deleted
    assert shared.comm is None  # its last display was b's
    assert again.comm is not None and second.comm is not None
    capsys.readouterr()
    shell.run_cell("face.show(shared)", cell_id="c")  # a closed view cannot come back
    assert faces.CLOSED_VIEW in capsys.readouterr().out


def test_a_view_closed_by_a_run_again_of_its_cell_says_so_when_displayed(
    shown: DisplayRecorder, capsys: pytest.CaptureFixture[str]
) -> None:
    from IPython.core.interactiveshell import InteractiveShell
    from widgets.taskfakes import FakeJob

    from genwidgets.widgets.task import TaskView

    shell = InteractiveShell.instance()
    view = TaskView(FakeJob())
    shell.user_ns.update(view=view)
    shell.run_cell("view._ipython_display_()", cell_id="task-cell")
    shell.run_cell("1 + 1", cell_id="task-cell")  # run again, showing something else
    assert view.comm is None
    capsys.readouterr()
    shell.run_cell("view._ipython_display_()", cell_id="later")
    assert faces.CLOSED_VIEW in capsys.readouterr().out


def test_the_cell_that_hooks_the_cells_is_known_by_its_id(
    shown: DisplayRecorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first view of a session hooks the cells from inside its cell, whose start
    was missed: that cell's views are closed all the same when it runs again (found
    with a real kernel: the first task view of a lesson outlived its cell's rerun)."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    faces.REPUBLISH.install()
    shell.events.unregister("pre_run_cell", faces.REPUBLISH._cell_starts)
    shell.events.unregister("post_run_cell", faces.REPUBLISH.flush)
    monkeypatch.setattr(faces.REPUBLISH, "_installed", False)  # a fresh kernel's
    first = ipywidgets.Label()
    face = Faces(lambda media: {"text/html": "kept", "text/plain": ""})
    shell.user_ns.update(face=face, first=first)
    try:
        shell.run_cell("face.show(first)", cell_id="first-view")  # hooks the cells
        shell.run_cell("1 + 1", cell_id="first-view")  # run again
    finally:
        if faces.REPUBLISH.flush not in shell.events.callbacks["post_run_cell"]:
            shell.events.register("pre_run_cell", faces.REPUBLISH._cell_starts)
            shell.events.register("post_run_cell", faces.REPUBLISH.flush)
    assert first.comm is None


def test_with_no_cell_id_a_cell_run_again_closes_nothing(shown: DisplayRecorder) -> None:
    """nbclient, nbconvert and older front-ends send no cell id: nothing is known to be
    the same cell, so nothing is closed."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    face = Faces(lambda media: {"text/html": "kept", "text/plain": ""})
    first, second = ipywidgets.Label("first"), ipywidgets.Label("second")
    shell.user_ns.update(face=face, first=first, second=second)
    shell.run_cell("face.show(first)")
    shell.run_cell("face.show(second)")
    assert first.comm is not None and second.comm is not None


def test_a_cell_run_again_closes_what_its_views_made_beside_their_tree(
    shown: DisplayRecorder,
) -> None:
    """A form holds its "Send ..." button aside and replaced its buttons' first layouts:
    widgets made with a view are closed with it, not only its displayed tree (in a real
    kernel a form run again left 10 live models a run; tests/widgets/test_faces_rerun.py).
    The same kind of form displayed by another cell keeps what it made and shares."""
    from IPython.core.interactiveshell import InteractiveShell
    from ipywidgets.widgets.widget import _instances
    from widgets.taskfakes import FakeClient

    import genwidgets as gw

    shell = InteractiveShell.instance()
    kept = gw.form("imgM-v8.1-t2i", client=FakeClient())
    shell.user_ns.update(kept=kept)
    shell.run_cell("kept._ipython_display_()", cell_id="kept-form")
    before = len(_instances)
    first = gw.form("imgM-v8.1-t2i", client=FakeClient())
    assert first.confirm_button not in first.children  # held aside
    shell.user_ns.update(first=first)
    shell.run_cell("first._ipython_display_()", cell_id="form")
    shell.run_cell("1 + 1", cell_id="form")  # run again, showing something else
    assert first.comm is None and first.confirm_button.comm is None
    assert len(_instances) == before, "every widget made with the form was closed"
    assert kept.comm is not None and kept.confirm_button.comm is not None
    assert all(w.comm is not None for w in faces._tree([kept], made=True).values())


def test_a_closed_views_job_goes_on_and_its_late_writes_are_dropped(
    shown: DisplayRecorder, caplog: pytest.LogCaptureFixture
) -> None:
    """Closing a view stops its writes, never its work: the job ends, and a throttled
    write or a done callback that reaches the closed view raises and logs nothing
    (ipywidgets drops what is set on a closed widget)."""
    from IPython.core.interactiveshell import InteractiveShell
    from widgets.taskfakes import FakeJob, on_thread

    from genwidgets.widgets.task import TaskView

    shell = InteractiveShell.instance()
    job = FakeJob()
    view = TaskView(job)
    shell.user_ns.update(view=view)
    shell.run_cell("view._ipython_display_()", cell_id="task-cell")
    shell.run_cell("1 + 1", cell_id="task-cell")
    assert view.comm is None
    on_thread(job.run)  # the engine's thread, as a real job's updates come
    on_thread(job.finish)
    view._throttle.request(force=True)  # a write that was on its way
    assert job.done() and job.result().ok
    assert wait_for(lambda: not view._throttle.dirty, timeout=20)
    assert [r for r in caplog.records if r.levelname in ("ERROR", "WARNING")] == []
