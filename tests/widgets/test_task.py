"""The task view: its traits through a task's life, cancel, failure, throttling,
the clock left to the browser, the outputs it carries, and display_job's two faces
(the live view, which stays live, then its lasting face, rewritten when the task
ends); a form's tasks shown the same way under it."""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from loopback import CancelRefused, LoopbackServer
from widgets.taskfakes import (
    IMAGE_OUT,
    DisplayRecorder,
    FakeClient,
    FakeJob,
    ask,
    on_thread,
    wait_for,
)

import genwidgets as gw
from genwidgets._palette import COLOURS
from genwidgets.protocol.records import Result, Status
from genwidgets.widgets import faces, task
from genwidgets.widgets.faces import STATIC, WIDGET_VIEW_MIME
from genwidgets.widgets.lasting import TEXT_BUDGET
from genwidgets.widgets.task import (
    TaskList,
    TaskView,
    display_job,
    lasting_face,
    plain_status,
)
from genwidgets.widgets.ticker import TICKER, Throttle, as_current_request

RED = COLOURS["failed"]


@pytest.fixture(autouse=True)
def _fast_ticker(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(TICKER, "period", 0.05)
    yield
    # Anything a test left registered must not keep ticking into the next test.
    for view in TICKER.live:
        TICKER.remove(view)


def test_queued_running_done_as_traits_and_the_final_state() -> None:
    job = FakeJob(queue_position=7)
    view = TaskView(job)
    assert (view.status, view.category, view.terminal) == ("submitted", "queued", False)
    assert view.queue_position == 7  # the handle's position before the first poll
    assert view.start_time == job.submitted_at
    assert view.palette == COLOURS  # the one palette, as CSS variables in the browser

    on_thread(lambda: job.queue(3))
    assert wait_for(lambda: view.status == "queued" and view.queue_position == 3)

    on_thread(job.run)
    assert wait_for(lambda: view.category == "running" and view.queue_position is None)
    assert view.outputs == [] and not view.cancel_requested

    on_thread(lambda: job.finish([IMAGE_OUT]))
    # The terminal update is written at once, never deferred.
    assert (view.status, view.category, view.terminal) == ("done", "done", True)
    assert view.error == "" and view.error_type == ""
    assert [o["url"] for o in view.outputs] == [IMAGE_OUT["url"]]
    assert view.elapsed == pytest.approx(job.elapsed)
    assert job.update_callback_count == 0  # the view let go of the job
    assert view not in TICKER.live


def test_failure_shows_error_and_error_type() -> None:
    job = FakeJob()
    view = TaskView(job)
    job.run()
    job.finish(error="Runtime execution failed", error_type="runtime_error")
    assert (view.status, view.category) == ("failed", "failed")
    assert view.error == "Runtime execution failed" and view.error_type == "runtime_error"


def test_structured_error_is_text_and_hostile_text_is_escaped_in_the_fallback() -> None:
    job = FakeJob(request_id="<b>rid</b>")
    view = TaskView(job)
    job.finish(error={"detail": "<script>alert(1)</script>"}, error_type="<i>x</i>")
    # Traits hold text: the ES module puts it in with textContent, never as markup.
    assert view.error == "<script>alert(1)</script>"  # an object error reads as its detail
    assert view.request_id == "<b>rid</b>"
    html = lasting_face(job)["text/html"]
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "<i>x</i>" not in html and "<b>rid</b>" not in html


def test_the_es_module_writes_markup_only_from_the_escaped_output_html() -> None:
    source = (STATIC / "task_view.js").read_text()
    assert "export default" in source
    assert source.count("innerHTML") == 1 and "innerHTML = output.html" in source
    assert not re.search(r"""import\s*(\(|[^;]*from)\s*['"]https?:""", source)  # no CDN
    assert "autoplay" not in source and ".loop" not in source


def test_unknown_status_is_shown_verbatim_and_is_not_terminal() -> None:
    job = FakeJob()
    view = TaskView(job)
    job.set_status("WARMING_UP")
    assert wait_for(lambda: view.status == "WARMING_UP")
    assert view.category == "running" and not view.terminal


def test_cancel_message_calls_request_cancel_once() -> None:
    job = FakeJob()
    view = TaskView(job)
    job.run()
    # What the browser's click asks, twice (a second click queued behind the first).
    assert ask(view, "_ask_cancel") == {"ok": True}
    assert ask(view, "_ask_cancel") == {"ok": True}
    unknown = {"error": "unknown ask '_ask_retry'; this view answers _ask_cancel"}
    assert ask(view, "_ask_retry") == unknown
    assert job.cancel_calls == 1
    assert view.cancel_requested
    job.run()  # still running: the button stays "cancel requested" until the status says so
    assert wait_for(lambda: view.category == "running") and view.cancel_requested
    job.finish(error="cancelled by user", error_type="cancelled")
    assert view.status == "cancelled" and view.category == "cancelled" and view.terminal
    assert view.error == "" and view.error_type == ""  # grey "cancelled", no error line


def test_cancel_requested_elsewhere_shows_in_the_view() -> None:
    job = FakeJob()
    view = TaskView(job)
    job.request_cancel()  # e.g. job.cancel() from another cell
    job.run()
    assert wait_for(lambda: view.cancel_requested)


def test_a_failing_request_cancel_is_shown_not_raised() -> None:
    job = FakeJob()

    def boom() -> None:
        raise RuntimeError("engine stopped")

    job.request_cancel = boom  # type: ignore[method-assign]
    view = TaskView(job)
    view.click_cancel()
    assert view.cancel_error == "cancel failed: engine stopped"


@contextlib.contextmanager
def cancel_pressed(monkeypatch: pytest.MonkeyPatch, answer: int) -> Iterator[TaskView]:
    """The view of a task on a :class:`CancelRefused` gateway answering ``answer`` to a
    cancel (the client retries nothing), its Cancel pressed once."""
    monkeypatch.setattr(CancelRefused, "answer", answer)
    monkeypatch.setattr(CancelRefused, "cancels", 0)
    gateway = LoopbackServer(CancelRefused)
    try:
        with gw.Client(
            gateway.base, "key-of-a-loopback-gateway", ledger=False, max_retries=0
        ) as client:
            view = TaskView(client.submit("genW2.5-t2i-preview", {"prompt": "a kite"}))
            view.click_cancel()
            yield view
    finally:
        gateway.close()


def test_a_cancel_the_gateway_refused_is_said_and_may_be_asked_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The view said "cancel requested" for ever, showed no error and could not be
    clicked again, while the task ran (and billed) on."""
    with cancel_pressed(monkeypatch, 403) as view:
        assert wait_for(lambda: view.cancel_error.startswith("cancel failed"), timeout=60)
        assert "cancel backend down" in view.cancel_error and not view.cancel_requested
        assert CancelRefused.cancels == 1
        view.click_cancel()  # pressed again: asked again
        assert wait_for(lambda: CancelRefused.cancels == 2, timeout=60)


def test_a_cancel_the_gateway_failed_is_said_and_sent_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A 500 to a cancel is a fault of the gateway, not its word on the task: the cancel
    is kept, said, sent again by itself, and the button sends it at once."""
    with cancel_pressed(monkeypatch, 500) as view:
        assert wait_for(lambda: view.cancel_error.startswith("cancel not taken"), timeout=60)
        assert "cancel backend down" in view.cancel_error and "sent again" in view.cancel_error
        assert not view.cancel_requested  # the button may be pressed: it sends it now
        assert wait_for(lambda: CancelRefused.cancels >= 2, timeout=60)  # by itself
        sent = CancelRefused.cancels
        view.click_cancel()
        assert wait_for(lambda: CancelRefused.cancels > sent, timeout=60)


def cancel_kept(error: Exception) -> tuple[FakeJob, TaskView]:
    """A running task's view whose Cancel was pressed and kept by its job, ``error``
    its last word (the job sends it again by itself)."""
    job = FakeJob()
    view = TaskView(job)
    view.click_cancel()
    job.cancel_error = error
    job.run()
    return job, view


def test_a_kept_cancel_is_said_until_it_is_taken_and_moot_once_the_task_ends() -> None:
    """A cancel the gateway did not take (here: no contact) showed "cancel requested"
    with no error and a spent button, while the task ran on."""
    job, view = cancel_kept(gw.Unreachable("cancel request failed: ConnectError"))
    assert wait_for(lambda: view.cancel_error.startswith("cancel not sent: cannot reach"))
    assert "sent again" in view.cancel_error and not view.cancel_requested
    job.cancel_error = None  # sent again and taken
    job.queue(1)
    assert wait_for(lambda: view.cancel_error == "") and view.cancel_requested
    job.cancel_error = gw.Unreachable("cancel request failed: ConnectError")
    job.finish([IMAGE_OUT])
    assert wait_for(lambda: view.cancel_error.endswith("the task ended first"))  # moot


def test_a_kept_cancel_the_gateway_then_refuses_is_said_refused_never_taken() -> None:
    """A kept cancel sent again and refused (a 400: the task runs and cannot be
    cancelled) leaves the job's cancel refused: the view cleared its words as if the
    cancel had been taken, and showed nothing while the task billed on (review-27)."""
    job, view = cancel_kept(gw.ServerError("HTTP 502: Bad Gateway"))
    assert wait_for(lambda: view.cancel_error.startswith("cancel not taken"))
    job.cancel_error = gw.GatewayError("Task cannot be cancelled", status_code=400)
    job.cancel_requested = False  # the job's refusal
    job.queue(1)
    assert wait_for(lambda: view.cancel_error.startswith("cancel failed"))
    assert "cannot be cancelled" in view.cancel_error and not view.cancel_requested


def test_a_kept_cancel_is_taken_once_the_task_ends_cancelled() -> None:
    """A task that ended cancelled while its job kept the cancel (its answers lost) was
    said to have "ended first": the cancel was "not taken", though it ended the task."""
    job, view = cancel_kept(gw.ServerError("HTTP 502: Bad Gateway"))
    assert wait_for(lambda: view.cancel_error.startswith("cancel not taken"))
    job.finish(status="CANCELLED")
    assert wait_for(lambda: view.status == "cancelled") and view.cancel_error == ""
    assert task.kept_cancel_words(job) == ""


def test_a_job_whose_client_closed_is_not_followed_never_failed(
    recorder: DisplayRecorder,
) -> None:
    """A client closed while its task ran made the view and the saved face say "failed"
    in red; the task was not failed, and may still run."""
    job = FakeJob()
    view = display_job(job)
    job.crash(gw.ClientClosed(endpoint=job.endpoint, request_id=job.request_id))
    assert isinstance(view, TaskView)
    assert wait_for(lambda: view.status == "not followed") and view.category != "failed"
    assert f".job({job.endpoint!r}, {job.request_id!r})" in view.error
    assert wait_for(lambda: "not followed" in recorder.handle.updates[-1][0]["text/plain"])
    assert "failed" not in recorder.handle.updates[-1][0]["text/plain"]


def test_throttle_coalesces_a_burst_and_always_shows_the_last_state() -> None:
    job = FakeJob()
    view = TaskView(job)
    before = view.writes

    def burst() -> None:
        for position in range(100, 0, -1):
            job.queue(position)

    started = time.monotonic()
    on_thread(burst)
    took = time.monotonic() - started
    during = view.writes - before
    # One write per 0.1 s window at most (a loaded machine may stretch the burst).
    assert during <= 2 + int(took / 0.1), (during, took)
    assert wait_for(lambda: view.queue_position == 1)
    assert view.writes - before <= 4
    on_thread(lambda: job.finish([IMAGE_OUT]))
    assert view.status == "done"  # forced, no wait


def test_throttle_writes_at_most_once_an_interval_even_when_its_ticker_is_late() -> None:
    """Requests between writes are coalesced into one write an interval after the last;
    a ticker that fires late (a busy machine), after a request already wrote, does not
    write again at once: it is asked again for when the interval allows."""
    now = [100.0]
    asked: list[float] = []

    class LateTicker:
        def flush_at(self, _throttle: Throttle, when: float) -> None:
            asked.append(when)

    writes: list[float] = []
    throttle = Throttle(
        lambda: writes.append(now[0]),
        interval=0.1,
        ticker=LateTicker(),  # type: ignore[arg-type]
        clock=lambda: now[0],
    )

    def at(t: float, act: Callable[[], None]) -> None:
        now[0] = 100.0 + t
        act()

    at(0.0, throttle.request)  # the first request writes
    at(0.01, throttle.request)  # coalesced: a flush asked for at 0.1
    at(0.02, throttle.request)  # already asked: nothing more
    assert writes == [100.0] and asked == [pytest.approx(100.1)] and throttle.dirty
    at(0.105, throttle.request)  # the ticker is late: this request writes
    at(0.107, throttle.request)  # dirty again: a flush asked for at 0.205
    at(0.1075, throttle.flush)  # the late ticker's flush for 0.1 arrives now
    assert writes == [100.0, pytest.approx(100.105)]  # not written 2.5 ms after the last
    assert asked[-1] == pytest.approx(100.205)
    at(0.205, throttle.flush)
    assert writes[-1] == pytest.approx(100.205) and not throttle.dirty
    at(0.21, lambda: throttle.request(force=True))  # a forced write (the end) goes at once
    assert writes[-1] == pytest.approx(100.21)
    gaps = [b - a for a, b in itertools.pairwise(writes[:-1])]
    assert min(gaps) >= 0.1 - 1e-9


def test_the_clock_runs_in_the_browser_not_in_the_kernel() -> None:
    job = FakeJob(submitted_at=time.time() - 3)
    view = TaskView(job)
    job.run()
    # The browser counts from start_time; the kernel sends nothing per second.
    assert view.start_time == job.submitted_at
    assert view not in TICKER.live
    assert wait_for(lambda: not TICKER.running)  # once the throttled write is out
    assert view.category == "running"
    job.finish()
    # the final elapsed time is the job's own, fixed at its end (no clock read here)
    assert wait_for(lambda: view.elapsed == job.elapsed and job.finished_at is not None)


def test_two_hundred_tickables_share_one_ticker_thread() -> None:
    class Counter:
        def __init__(self) -> None:
            self.ticks = 0

        def tick(self) -> None:
            self.ticks += 1

    counters = [Counter() for _ in range(200)]
    for counter in counters:
        TICKER.add(counter)
    assert len([t for t in threading.enumerate() if t.name == "genwidgets-ticker"]) == 1
    assert len(TICKER.live) == 200
    assert wait_for(lambda: all(c.ticks >= 1 for c in counters))
    for counter in counters:
        TICKER.remove(counter)
    assert wait_for(lambda: not any(t.name == "genwidgets-ticker" for t in threading.enumerate()))


def test_expected_finish_becomes_an_end_time_the_browser_counts_down_to() -> None:
    job = FakeJob()
    view = TaskView(job)
    assert view.expected_finish_at is None  # unknown: no "about N s left"
    job.expected_finish = 40.0
    before = time.time()
    on_thread(job.run)
    assert wait_for(lambda: view.expected_finish_at is not None)
    assert before + 40 <= view.expected_finish_at <= time.time() + 40
    job.finish([IMAGE_OUT])
    assert view.expected_finish_at is None  # nothing left once it ended


def test_view_of_a_finished_job_registers_nothing() -> None:
    job = FakeJob()
    job.finish([IMAGE_OUT])
    view = TaskView(job)
    assert view.status == "done" and len(view.outputs) == 1
    assert job.update_callback_count == 0 and view not in TICKER.live


def test_job_that_ended_with_an_exception_shows_it() -> None:
    job = FakeJob()
    view = TaskView(job)
    job.crash(ConnectionError("gateway unreachable"))
    # an end that says nothing of the task is never "failed" (whose retry pays again)
    assert view.status == "contact lost"
    assert view.error.startswith("gateway unreachable. The task may still run or be done")
    assert view.error_type == "ConnectionError"


def test_views_share_one_layout_model() -> None:
    # Each model is saved with the notebook's widget state: one Layout for all views.
    assert TaskView(FakeJob()).layout is TaskView(FakeJob()).layout


def test_simulated_flag_only_for_the_embedded_simulator() -> None:
    assert TaskView(FakeJob(client=FakeClient(embedded=True))).simulated
    assert not TaskView(FakeJob(client=FakeClient(embedded=False))).simulated


def test_outputs_carry_url_content_type_and_a_local_data_fallback() -> None:
    job = FakeJob()
    view = TaskView(job)
    job.finish(
        [
            {**IMAGE_OUT, "url": "https://cdn.example/v.mp4", "content_type": "video/mp4"},
            {"content_type": "audio/mpeg", "content": "SUQz", "encoding": "base64"},
            {"content_type": "application/json", "content": '{"face_id": "<f-1>"}'},
            {"url": "javascript:alert(1)", "content_type": "image/png"},
        ]
    )
    video, audio, record, hostile = view.outputs
    assert (video["kind"], video["url"], video["content_type"]) == (
        "video",
        "https://cdn.example/v.mp4",
        "video/mp4",
    )
    assert audio["kind"] == "audio" and audio["url"] == "data:audio/mpeg;base64,SUQz"
    assert video["fallback"] is None and audio["fallback"] is None  # no local bytes / no URL
    assert record["url"] is None and "face_id" in record["html"] and "&lt;f-1&gt;" in record["html"]
    assert hostile["url"] is None and "javascript" not in json.dumps(hostile).replace(
        "javascript:alert", ""
    )
    assert hostile["kind"] == "unavailable"


# --- display_job: two faces -----------------------------------------------------------


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> DisplayRecorder:
    import IPython.display

    rec = DisplayRecorder()
    monkeypatch.setattr(IPython.display, "display", rec)
    monkeypatch.setattr(task, "in_kernel", lambda: True)
    monkeypatch.setattr(faces, "in_kernel", lambda: True)
    faces.REPUBLISH.flush()  # nothing of other tests pending
    return rec


def test_display_job_is_the_live_view_then_its_lasting_face(recorder: DisplayRecorder) -> None:
    job = FakeJob("imgM-v8.1-t2i", request_id="rid-42")
    view = display_job(job)
    assert isinstance(view, TaskView)
    [(live, live_kwargs), (lasting, lasting_kwargs)] = recorder.calls
    assert live[WIDGET_VIEW_MIME]["model_id"] == view.model_id and live["text/plain"] == ""
    assert "display_id" not in live_kwargs and lasting_kwargs["display_id"] is True
    assert "gw-placeholder" in lasting["text/html"] and "rid-42" in lasting["text/html"]
    assert view.face == {"id": view.face["id"], "model": view.model_id}
    assert f'data-gw-lasting="{view.face["id"]}"' in lasting["text/html"]

    on_thread(lambda: job.finish([IMAGE_OUT, {**IMAGE_OUT, "url": "https://cdn.example/1.png"}]))
    assert wait_for(recorder.handle.ended)
    final, kwargs = recorder.handle.updates[-1]
    assert kwargs == {"raw": True}
    assert recorder.handle.threads[-1] != threading.main_thread().name
    assert set(final) == {"text/html", "text/plain"}
    html = final["text/html"]
    assert '<img class="gw-thumb" src="https://cdn.example/files/tok/out-0.png"' in html
    assert '<img class="gw-thumb" src="https://cdn.example/1.png"' in html
    assert "done" in html and "rid-42" in html and "simulated" in html
    assert "https://cdn.example/files/tok/out-0.png" in final["text/plain"]
    # the live view is never replaced: it carries the same outputs and stays live
    assert len(recorder.calls) == 2
    assert [o["url"] for o in view.outputs] == [IMAGE_OUT["url"], "https://cdn.example/1.png"]
    assert view.terminal and view.comm is not None


def test_the_lasting_face_is_written_again_from_the_main_thread_after_the_next_cell(
    recorder: DisplayRecorder,
) -> None:
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    job = FakeJob()
    display_job(job)
    on_thread(lambda: job.finish([IMAGE_OUT]))
    assert wait_for(recorder.handle.ended)
    written = len(recorder.handle.updates)
    shell.run_cell("1 + 1")  # the next cell: post_run_cell fires on the main thread
    assert len(recorder.handle.updates) == written + 1
    assert recorder.handle.threads[-1] == threading.main_thread().name
    assert recorder.handle.updates[-1] == recorder.handle.updates[-2]
    assert WIDGET_VIEW_MIME not in recorder.handle.updates[-1][0]


def test_the_end_of_a_cell_waiting_on_the_job_waits_for_its_lasting_face(
    recorder: DisplayRecorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A later cell's job.result() returns when the job completes; the face's rewrite
    # must be known by then, so the end of that cell waits for it (nbclient keeps
    # only what is written while a cell runs).
    gate = threading.Event()
    real = task.lasting_face

    def slow(job: Any, media: str | None = None) -> dict[str, str]:
        if job.done():
            gate.wait(20)  # a slow rewrite: a video's first preview
        return real(job, media)

    monkeypatch.setattr(task, "lasting_face", slow)
    job = FakeJob()
    settled_at_completion: list[bool] = []
    display_job(job)
    job.add_done_callback(lambda _j: settled_at_completion.append(faces.settle(0)))
    on_thread(lambda: job.finish([IMAGE_OUT]))
    assert settled_at_completion == [False]  # known before result() could return
    threading.Timer(0.5, gate.set).start()
    assert faces.settle(30) and recorder.handle.ended()
    assert job.update_callback_count == 0


def test_a_job_that_crashed_still_gets_its_lasting_face(recorder: DisplayRecorder) -> None:
    job = FakeJob()
    display_job(job)
    job.crash(ConnectionError("gateway unreachable"))
    assert wait_for(lambda: "gateway unreachable" in recorder.handle.last_html())
    assert "contact lost" in recorder.handle.updates[-1][0]["text/plain"]


def test_view_writes_run_outside_the_engine_task_context() -> None:
    import contextvars

    marker: contextvars.ContextVar[str] = contextvars.ContextVar("marker")
    marker.set("cell 1")  # what the engine's polling task would carry
    seen: list[str] = []
    as_current_request(lambda: seen.append(marker.get("unset")))
    assert seen == ["unset"]


def test_the_lasting_face_of_a_failed_job(recorder: DisplayRecorder) -> None:
    job = FakeJob()
    display_job(job)
    job.finish(error="Runtime execution failed", error_type="runtime_error")
    assert wait_for(lambda: "Runtime execution failed" in recorder.handle.last_html())
    bundle, _ = recorder.handle.updates[-1]
    assert "failed" in bundle["text/html"] and RED in bundle["text/html"]
    assert bundle["text/plain"].count("Runtime execution failed") == 1  # said once
    assert "runtime_error" in bundle["text/plain"]


def test_display_job_of_an_already_finished_job_shows_it_at_once(
    recorder: DisplayRecorder,
) -> None:
    job = FakeJob()
    job.finish([{"content_type": "application/json", "content": '{"GroupId": "g-1"}'}])
    display_job(job)
    [_, (lasting, _)] = recorder.calls
    assert "GroupId" in lasting["text/html"] and "gw-placeholder" not in lasting["text/html"]


def test_a_job_shown_after_its_status_ended_but_before_its_result_still_gets_it(
    recorder: DisplayRecorder,
) -> None:
    # A fast task: its status said COMPLETED before the cell showed it, its result
    # was still being fetched. Both faces follow it to its outputs (CI saw a saved
    # notebook keep "done when last seen" and no image).
    job = FakeJob()
    job.set_status("COMPLETED")
    view = display_job(job)
    assert isinstance(view, TaskView) and view.status == "done" and view.outputs == []
    on_thread(lambda: job.finish([IMAGE_OUT]))
    assert wait_for(lambda: '<img class="gw-thumb"' in recorder.handle.last_html())
    assert "gw-placeholder" not in recorder.handle.last_html()
    assert wait_for(lambda: len(view.outputs) == 1)
    assert job.update_callback_count == 0  # it let go once the job was done


@pytest.mark.parametrize("shown_in", ["its own faces", "a form's task list"])
def test_a_view_says_done_only_once_its_lasting_face_does(
    recorder: DisplayRecorder, monkeypatch: pytest.MonkeyPatch, shown_in: str
) -> None:
    """A notebook saved the moment a view says done keeps the end in both faces: the
    live face shows the end only once the lasting face's rewrite is written (here held
    back, as a video's first preview holds it for about a second)."""
    import ipywidgets

    building, hold = threading.Event(), threading.Event()
    build = task.lasting_face

    def slow(job: Any, media: str | None = None) -> dict[str, str]:
        if job.last_result is not None:  # the first build that can show the end
            building.set()
            assert hold.wait(30)
        return build(job, media)

    monkeypatch.setattr(task, "lasting_face", slow)
    job = FakeJob()
    if shown_in == "its own faces":
        view = display_job(job)
    else:
        tasks = TaskList(ipywidgets.Output())
        tasks.show()
        view = tasks.add(job)
    assert isinstance(view, TaskView)
    order: list[str] = []
    view.observe(lambda change: order.append(f"live {change['new']}"), names=["status"])
    handle = recorder.handle
    record = handle.update

    def update(obj: Any, **kwargs: Any) -> None:
        order.append("lasting " + ("done" if "gw-final" in obj["text/html"] else "not done"))
        record(obj, **kwargs)

    monkeypatch.setattr(handle, "update", update)
    on_thread(lambda: job.finish([IMAGE_OUT]))
    assert building.wait(30)
    view._throttle.request(force=True)  # any write while the lasting face is being made
    assert view.status != "done" and "live done" not in order
    hold.set()
    assert wait_for(lambda: view.status == "done" and handle.ended(), timeout=30)
    assert order.index("lasting done") < order.index("live done"), order
    assert wait_for(lambda: len(view.outputs) == 1, timeout=30)


def test_a_job_ending_while_its_view_is_made_still_shows_its_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The engine may end a job between the view's first look at it and its callbacks
    being registered: the view still follows it to its end (it once stayed "submitted")."""
    job = FakeJob()
    made = TaskView.add_class

    def add_class_then_end(view: TaskView, name: str) -> Any:
        added = made(view, name)
        job.finish([IMAGE_OUT])  # in the middle of the constructor, as the engine may
        return added

    monkeypatch.setattr(TaskView, "add_class", add_class_then_end)
    view = TaskView(job)
    assert wait_for(lambda: view.status == "done" and len(view.outputs) == 1, timeout=30)
    assert job.update_callback_count == 0


def test_the_end_of_a_cell_waits_for_the_live_face_that_shows_the_result(
    recorder: DisplayRecorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job has its result before its future completes, and a cell waiting on
    ``job.result()`` may end before the job's done callbacks run: the face the result
    asked for, once settled, has its live face written with the outputs too (written
    after the cell's end, nbclient would drop it)."""
    building, hold = threading.Event(), threading.Event()
    build = task.lasting_face

    def slow(job: Any, media: str | None = None) -> dict[str, str]:
        if job.last_result is not None:
            building.set()
            assert hold.wait(30)
        return build(job, media)

    monkeypatch.setattr(task, "lasting_face", slow)
    job = FakeJob()
    view = display_job(job)
    assert isinstance(view, TaskView)
    body = {"request_id": job.request_id, "status": "COMPLETED", "outputs": [IMAGE_OUT]}
    job.last_status = Status.from_body(body)
    job.last_result = Result.from_body(body, endpoint=job.endpoint)
    on_thread(job._notify)  # the update that brings the result asks for the face
    assert building.wait(30)
    job._done.set()  # the future completes; its done callbacks have not run yet
    hold.set()
    assert faces.settle(30)  # what the end of the cell waits for
    assert len(view.outputs) == 1 and view.status == "done"


def test_a_video_in_the_lasting_face_has_controls_and_never_starts_itself(
    recorder: DisplayRecorder,
) -> None:
    job = FakeJob()
    display_job(job)
    job.finish([{"url": "https://cdn.example/v.mp4", "content_type": "video/mp4"}])
    assert wait_for(lambda: "<video" in recorder.handle.last_html())
    html = recorder.handle.last_html()
    assert '<video controls preload="metadata" src="https://cdn.example/v.mp4"' in html
    assert "autoplay" not in html and "loop" not in html


def test_a_forms_tasks_are_their_own_output_with_both_faces(recorder: DisplayRecorder) -> None:
    import ipywidgets

    fallback = ipywidgets.Output()
    tasks = TaskList(fallback)
    tasks.show()
    [(live, _), (lasting, _)] = recorder.calls
    assert live[WIDGET_VIEW_MIME]["model_id"] == tasks.live.model_id and lasting["text/html"]
    first, second = FakeJob(request_id="r-1"), FakeJob(request_id="r-2")
    alone = FakeJob(request_id="r-0")
    TaskView(alone, posters=False)
    view = tasks.add(first)
    tasks.add(second)
    assert tasks.box.children[0] is view and len(tasks.box.children) == 2
    assert first.update_callback_count == alone.update_callback_count  # the view's alone
    assert fallback.outputs == ()  # never inside the form's own widget tree
    on_thread(lambda: first.finish([IMAGE_OUT]))
    assert wait_for(
        lambda: "r-1" in recorder.handle.last_html() and "r-2" in recorder.handle.last_html()
        and IMAGE_OUT["url"] in recorder.handle.last_html()
    )  # fmt: skip
    on_thread(lambda: alone.finish([IMAGE_OUT]))
    # an ended task no longer holds the list (nor, through it, the box and every view)
    assert wait_for(lambda: first.update_callback_count == alone.update_callback_count)
    # a list never displayed on its own (the form inside a container): the form's area
    inside = TaskList(fallback)
    inside.add(FakeJob())
    [entry] = fallback.outputs
    assert WIDGET_VIEW_MIME in entry["data"]


def test_outside_jupyter_display_job_prints_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    job = FakeJob("vidK-v3-turbo-t2v", request_id="r-9", queue_position=4)
    job.queue(4)
    line = display_job(job)
    assert isinstance(line, str) and "\n" not in line
    assert line == plain_status(job)
    assert "vidK-v3-turbo-t2v" in line and "r-9" in line and "queued" in line
    assert "queue position 4" in line
    assert capsys.readouterr().out.strip() == line


# --- the real client and simulator ------------------------------------------------------

SECRET = "sk-taskview-SECRET-7"


def all_widget_state(widget: Any) -> str:
    """The serialised state of a widget and every widget under it."""
    import ipywidgets

    states, todo = [], [widget]
    while todo:
        current = todo.pop()
        states.append(json.dumps(current.get_state(), default=repr))
        for value in current.keys:
            attr = getattr(current, value, None)
            items = attr if isinstance(attr, tuple) else (attr,)
            todo.extend(w for w in items if isinstance(w, ipywidgets.Widget) and w is not current)
    return "\n".join(states)


@pytest.fixture
def real_client(
    make_simulator: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Any]:
    import genwidgets as gw

    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path / "home"))
    sim = make_simulator(keys=(SECRET,))
    client = gw.Client(base_url=sim.base_url, api_key=SECRET)
    yield client
    client.close()


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_real_job_view_reaches_done_and_holds_no_key(
    real_client: Any, recorder: DisplayRecorder
) -> None:
    job = real_client.submit("imgM-v8.1-t2i", {"prompt": "a red kite"})
    view = display_job(job)
    assert isinstance(view, TaskView)
    job.result(timeout=30)
    assert wait_for(lambda: view.status == "done")
    assert faces.settle(30)
    html = recorder.handle.last_html()
    # The ledger kept local copies before completion: the saved notebook holds their
    # thumbnails, so they still show once the URLs are gone; the simulator's URLs
    # (on loopback, dead with the kernel) are never in it.
    assert job.last_result is not None
    assert all(o.path is not None for o in job.last_result.outputs)
    assert html.count('<img class="gw-thumb" src="data:image/') == 4
    assert real_client.base_url not in html and "saved at $GENWIDGETS_HOME/outputs/" in html
    # The live view loads the same images from the simulator's URLs.
    assert len(view.outputs) == 4
    assert all(o["url"].startswith(real_client.base_url) for o in view.outputs)
    # ... and keeps the local copies as a fallback for when those URLs are gone.
    assert all(o["fallback"].startswith("data:image/png;base64,iVBOR") for o in view.outputs)
    assert SECRET not in all_widget_state(view) and SECRET not in json.dumps(
        recorder.calls, default=repr
    )
    assert SECRET not in json.dumps(recorder.handle.updates)
    assert wait_for(lambda: view not in TICKER.live)


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_real_job_without_local_copies_names_what_it_could_not_keep(
    make_simulator: Any, recorder: DisplayRecorder, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import genwidgets as gw

    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path / "home"))
    sim = make_simulator()
    client = gw.Client(base_url=sim.base_url, api_key="sim-demo-key", download=False)
    try:
        job = client.submit("vidVq2-text2video", {"prompt": "a red kite"})
        display_job(job)
        job.result(timeout=30)
        assert faces.settle(30)
        html = recorder.handle.last_html()
        assert "<video" not in html and sim.base_url not in html  # dead with its kernel
        assert "not shown, it was not kept locally; its URL is on the machine" in html
    finally:
        client.close()


@pytest.mark.timeout(60)
def test_real_cancel_from_the_button(real_client: Any) -> None:
    job = real_client.submit(
        "vidVq2-text2video", {"prompt": "a slow kite"}, headers={"X-Sim-Duration": "400"}
    )
    view = TaskView(job)
    assert ask(view, "_ask_cancel") == {"ok": True}  # the browser's click
    assert view.cancel_requested
    result = job.result(timeout=30)
    assert result.error_type == "cancelled"
    assert wait_for(lambda: view.status == "cancelled")
    assert view.category == "cancelled" and view.error == ""


@pytest.mark.timeout(60)
def test_real_runtime_failure_is_red_with_error_and_type(real_client: Any) -> None:
    job = real_client.submit("imgM-v8.1-t2i", {"prompt": "a kite"}, headers={"X-Sim-Fault": "fail"})
    view = TaskView(job)
    job.result(timeout=30)
    assert wait_for(lambda: view.status == "failed")
    assert view.error == "Runtime execution failed" and view.error_type == "runtime_error"


# --- a real kernel: what a saved notebook keeps ------------------------------------------


@pytest.mark.notebook
@pytest.mark.timeout(180)
def test_saved_notebook_keeps_final_status_and_outputs_as_display_data(
    make_simulator: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import jupyter_env as env_helper  # tests/jupyter_env.py (on pytest's pythonpath)
    import nbformat

    sim = make_simulator(keys=(SECRET,))
    root = tmp_path / "jupyter"
    env = env_helper.isolated_environ(root)
    for name in env_helper.GATEWAY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    kernel = env_helper.register_kernel(root, env)
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "import genwidgets as gw\n"
            f"client = gw.Client(base_url={sim.base_url!r}, api_key={SECRET!r})\n"
            'job = client.submit("imgM-v8.1-t2i", {"prompt": "a red kite"})\n'
            "job"
        ),
        nbformat.v4.new_code_cell("job.result(timeout=60).ok"),
    ]
    source = tmp_path / "display_job.ipynb"
    nbformat.write(nb, source)
    workdir = tmp_path / "run"
    workdir.mkdir()
    saved, _ = env_helper.execute(source, workdir, kernel_name=kernel)

    assert env_helper.error_outputs(saved) == []
    # Two outputs: the live view (needs widget state), then its lasting face.
    live, display = saved.cells[0].outputs
    assert set(live["data"]) == {env_helper.WIDGET_VIEW_MIME, "text/plain"}
    assert env_helper.WIDGET_VIEW_MIME not in display["data"]
    final = display["data"]["text/html"]
    assert 'class="gw-status gw-status-done"' in final and ">done</span>" in final
    assert final.count('<img class="gw-thumb" src="data:image/') == 4
    assert "done" in display["data"]["text/plain"]
    state = env_helper.widget_state(saved)
    [view] = env_helper.task_views(state)
    assert (view.category, view.word) == ("done", "done")
    saved_outputs = json.dumps([c.get("outputs", []) for c in saved.cells]) + json.dumps(
        dict(saved.metadata)
    )
    assert SECRET not in saved_outputs


def test_final_output_is_written_again_at_the_end_of_the_next_cell() -> None:
    # A task that ends between two cells sends its update with a finished cell's
    # label; the post_run_cell hook writes it again with the next cell's label.
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    republisher = faces.Republisher()
    writes: list[str] = []
    republisher.add(lambda: writes.append("final"))
    assert writes == [] and republisher.install()  # hooked by add, once
    shell.run_cell("1 + 1")  # the next cell: post_run_cell fires on the main thread
    assert writes == ["final"]
    shell.run_cell("2 + 2")
    assert writes == ["final"]  # once, not on every later cell
    shell.events.unregister("post_run_cell", republisher.flush)


@pytest.mark.slow
def test_import_genwidgets_loads_no_widget_library() -> None:
    import subprocess
    import sys

    code = (
        "import sys, genwidgets\n"
        "loaded = sorted({'ipywidgets', 'anywidget'} & set(sys.modules))\n"
        "assert loaded == [], loaded\n"
        "from genwidgets.widgets.task import TaskView\n"
        "assert 'anywidget' in sys.modules\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]


def test_a_finished_view_sends_its_whole_state_again_at_the_end_of_the_next_cell(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Its terminal write may come from the engine thread between two cells, with a
    # finished cell's label: nbclient would drop it from the saved widget state.
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    job = FakeJob()
    view = TaskView(job)
    sent: list[str] = []
    full_state = view.send_state

    def record(key: Any = None) -> None:
        if key is None:  # the whole state (trait syncs name their keys)
            sent.append(view.status)
        full_state(key)

    monkeypatch.setattr(view, "send_state", record)
    faces.REPUBLISH.flush()  # nothing of other tests pending
    on_thread(lambda: job.finish([IMAGE_OUT]))
    assert sent == []
    shell.run_cell("1 + 1")  # the next cell: post_run_cell fires on the main thread
    assert sent == ["done"]
    shell.run_cell("2 + 2")
    assert sent == ["done"]  # once


def many_small_logs(n: int = 1300) -> list[dict[str, Any]]:
    """A result of many small inline texts (7 MB in all, under the answer's cap)."""
    return [
        {"content_type": "text/plain", "content": f"line {j} " * 600, "file_name": f"t{j}.txt"}
        for j in range(n)
    ]


def test_a_result_of_many_texts_keeps_a_budget_in_both_faces_and_lists_the_rest() -> None:
    """1300 small texts made a 15 MB notebook: each face (the lasting one, the live
    view's state) lays out at most TEXT_BUDGET characters of text, then lists the rest
    with how to read them."""
    job = FakeJob()
    job.finish(many_small_logs())
    view = TaskView(job)
    live = json.dumps(view.outputs)
    lasting = lasting_face(job)["text/html"]
    for face in (live, lasting):
        assert len(face) < TEXT_BUDGET + 60_000
        assert "result.outputs[i].text()" in face and "t1299.txt" not in face
    assert "line 0 line 0" in lasting and re.search(r"\[\d+\] t\d+\.txt · text/plain", lasting)
    assert view.outputs[0]["html"] and view.outputs[-1]["kind"] == "listed"
    listed = [entry["html"] for entry in view.outputs if entry["kind"] == "listed"]
    assert "more text outputs are not shown" in listed[0]
    assert "1,140 more outputs not shown" in listed[1]  # past FACE_OUTPUTS: counted


def test_the_lasting_face_says_what_a_running_task_is_doing(recorder: DisplayRecorder) -> None:
    """A notebook saved while a task runs (or whose kernel then died) said "submitted
    when last seen" though the task had been running for seconds: a change of its status
    word rewrites the lasting face (throttled), not only its end."""
    job = FakeJob()
    display_job(job)
    on_thread(job.run)
    assert wait_for(lambda: "running when last seen" in recorder.handle.last_html(), timeout=10)
    assert faces.settle(10)
    written = len(recorder.handle.updates)
    on_thread(job.run)  # the same word again (a new poll): nothing to rewrite
    assert faces.settle(10) and len(recorder.handle.updates) == written


def test_a_tasks_lasting_face_keeps_its_media_when_no_copy_could_be_kept(
    recorder: DisplayRecorder, simulator: Any
) -> None:
    """Review-25 fault 2: with no local copy (a client that keeps none, as one whose
    GENWIDGETS_HOME cannot be written), a lasting face showed no picture and no sound and
    said the server "has stopped" while it served them. The bytes are read once, off the
    write path, while the URL answers: the face embeds the thumbnail and the audio."""
    with gw.Client(simulator.base_url, "sim-demo-key", ledger=False) as client:
        for endpoint, payload, kept in [
            ("genW2.5-t2i-preview", {"prompt": "a kite", "n": 1}, 'src="data:image/'),
            ("speechM-02-turbo", {"text": "Hello there."}, 'src="data:audio/'),
        ]:
            recorder.calls.clear()
            recorder.handles.clear()
            job = client.submit(endpoint, payload)
            display_job(job)
            job.result(timeout=60)
            [output] = job.result(timeout=1).outputs
            assert output.path is None or not output.path.exists()  # no copy was kept
            assert wait_for(lambda k=kept: k in recorder.handle.last_html(), timeout=60), (
                recorder.handle.last_html()[-600:]
            )
            assert "has stopped" not in recorder.handle.last_html()
    assert faces.settle(30)
