"""A batch's live view: counts, spend, the latest thumbnails made from its files, its
buttons, and its lasting face (static HTML that holds no key)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from widgets.taskfakes import DisplayRecorder, ask, wait_for

import genwidgets as gw
from genwidgets.lab import batch as lab_batch
from genwidgets.simulator import SimulatorServer
from genwidgets.widgets import batch_view as view_module
from genwidgets.widgets import faces
from genwidgets.widgets.batch_view import BatchView, static_copy
from genwidgets.widgets.faces import WIDGET_VIEW_MIME

T2I = "genW2.5-t2i-preview"
KEY = "sim-demo-key"
TEMPLATE = {"prompt": "{text}", "n": 1}
ROWS = [{"text": f"a harbour at dusk {i}"} for i in range(3)]
pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def sim(make_simulator: Callable[..., SimulatorServer]) -> SimulatorServer:
    return make_simulator()


@pytest.fixture
def client(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sim: SimulatorServer
) -> Iterator[gw.Client]:
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path / "home"))
    made = gw.Client(sim.base_url, KEY)
    yield made
    made.close()


@pytest.mark.slow
def test_a_finished_batch_shows_its_counts_spend_and_latest_thumbnails(
    client: gw.Client, tmp_path: Path
) -> None:
    batch = gw.batch(T2I, ROWS, TEMPLATE, out=tmp_path / "o", client=client).wait(timeout=120)
    view = BatchView(batch)  # written as it is made
    head = view.head
    assert head["counts"] == {"done": 3, "running": 0, "queued": 0, "failed": 0}
    assert head["finished"] and head["total"] == 3 and head["spent"] == "spent 3 images"
    assert head["id"] == batch.id and head["out"] == "o"  # shown by name, not absolute
    assert not head["can_retry"] and not head["needs_confirmation"]
    assert len(view.thumbs) == 3
    assert all(t["src"].startswith("data:image/") for t in view.thumbs)
    assert {t["row"] for t in view.thumbs} == {0, 1, 2}


@pytest.mark.slow
def test_the_buttons_submit_cancel_and_retry(
    client: gw.Client, sim: SimulatorServer, tmp_path: Path
) -> None:
    waiting = gw.batch(T2I, ROWS, TEMPLATE, out=tmp_path / "w", client=client, confirm_above=0)
    view = BatchView(waiting)
    assert view.head["needs_confirmation"] and not view.head["started"]
    assert ask(view, "_ask_submit") == {"ok": True}
    waiting.wait(timeout=120)
    httpx.put(f"{sim.base_url}/_sim/config", json={"fail_rate": 1.0}, timeout=10)
    failing = gw.batch(T2I, ROWS[:1], TEMPLATE, out=tmp_path / "f", client=client).wait(120)
    view = BatchView(failing)
    assert view.head["can_retry"] and view.head["counts"]["failed"] == 1
    httpx.put(f"{sim.base_url}/_sim/config", json={"fail_rate": 0.0}, timeout=10)
    assert ask(view, "_ask_retry") == {"ok": True}
    failing.wait(timeout=120)
    assert failing.rows[0].status == "done"
    assert ask(view, "_ask_cancel") == {"ok": True, "asked": 0}  # nothing runs: says so
    assert ask(view, "_ask_pause")["error"] == (
        "unknown ask '_ask_pause'; this view answers _ask_cancel, _ask_retry, _ask_submit"
    )
    assert failing.rows[0].status == "done"


@pytest.mark.slow
def test_the_lasting_face_is_plain_html_with_the_counts_and_no_key(
    client: gw.Client, tmp_path: Path
) -> None:
    batch = gw.batch(T2I, ROWS[:2], TEMPLATE, out=tmp_path / "o", client=client).wait(120)
    view = BatchView(batch)
    copy = static_copy(batch, view.thumbs)
    html = copy["text/html"]
    assert "2 done" in html and batch.id in html and "<code>o</code>" in html
    assert str(tmp_path) not in html
    assert html.count("<img") == 2 and "<script" not in html
    assert KEY not in html and copy["text/plain"].startswith(f"batch {batch.id}: 2 of 2 done")


@pytest.mark.slow
def test_the_out_folder_shows_as_the_one_rule_shows_paths_never_absolute(
    client: gw.Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 39 point 7: a teacher's ``out="shots"`` publishes ``shots``, and a folder in
    the user's home ``~/...``, in the widget state and in the lasting face alike."""
    user = tmp_path / "user"
    (user / "course").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(user))
    monkeypatch.chdir(user / "course")
    outs = [("shots", "shots"), (user / "elsewhere" / "takes", "~/elsewhere/takes")]
    for row, (out, shown) in enumerate(outs):
        batch = gw.batch(T2I, ROWS[row : row + 1], TEMPLATE, out=out, client=client).wait(120)
        view = BatchView(batch)
        html = static_copy(batch, view.thumbs)["text/html"]
        assert view.head["out"] == shown and f"<code>{shown}</code>" in html
        assert str(user) not in html and str(user) not in repr(view.head)


def test_importing_the_view_makes_a_displayed_batch_draw_it() -> None:
    assert lab_batch.display_hook is view_module.show
    assert gw.batch is view_module.batch


@pytest.mark.slow
def test_displayed_it_is_a_live_face_then_a_lasting_face_kept_current(
    client: gw.Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import IPython.display

    shown = DisplayRecorder()
    monkeypatch.setattr(IPython.display, "display", shown)
    monkeypatch.setattr(faces, "in_kernel", lambda: True)
    faces.REPUBLISH.flush()  # nothing of other tests pending
    waiting = gw.batch(T2I, ROWS, TEMPLATE, out=tmp_path / "o", client=client, confirm_above=0)
    view = BatchView(waiting)
    view.display()
    [(live, _), (lasting, lasting_kwargs)] = shown.calls
    assert live[WIDGET_VIEW_MIME]["model_id"] == view.model_id == view.face["model"]
    assert lasting_kwargs == {"raw": True, "display_id": True}
    face_id = view.face["id"]
    assert f'data-gw-lasting="{face_id}"' in lasting["text/html"]
    assert "0 done" in lasting["text/html"] and "<script" not in lasting["text/html"]
    [handle] = shown.handles
    waiting.submit()
    waiting.wait(timeout=120)
    # the lasting face follows the batch to its end, written off the finisher's thread
    assert wait_for(lambda: "3 done" in handle.last_html(), timeout=60)
    assert face_id in handle.last_html() and KEY not in handle.last_html()
    worker = faces.LASTING_WORK.submit(lambda: threading.current_thread().name).result(30)
    assert all(name == worker for name in handle.threads)


@pytest.mark.slow
def test_a_paused_batch_shows_why_and_its_submit_button_goes_on(
    client: gw.Client, sim: SimulatorServer, tmp_path: Path
) -> None:
    httpx.put(f"{sim.base_url}/_sim/config", json={"create_error_rate": 1.0}, timeout=10)
    rows = [{"text": f"a pier in fog {i}"} for i in range(12)]
    batch = gw.batch(T2I, rows, TEMPLATE, out=tmp_path / "o", client=client, confirm_above=50)
    batch.wait(timeout=120, progress="none")
    view = BatchView(batch)
    assert view.head["needs_confirmation"]  # the Submit button: the ask to go on
    assert "paused: 5 creates in a row" in (view.head["stopped"] or "")
    assert "paused: 5 creates in a row" in static_copy(batch, view.thumbs)["text/html"]
    httpx.put(f"{sim.base_url}/_sim/config", json={"create_error_rate": 0.0}, timeout=10)
    assert ask(view, "_ask_submit") == {"ok": True}
    batch.wait(timeout=120, progress="none")
    assert wait_for(lambda: not view.head["needs_confirmation"], timeout=60)  # it follows
    assert batch.paused is None
    assert batch.counts()["done"] == sum(r.status == "done" for r in batch.rows) > 0
