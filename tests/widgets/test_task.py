"""The task view: states and colours, cancel, failure, throttling, the shared ticker,
and display_job's display_id output."""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from widgets.conftest_taskview import IMAGE_OUT, FakeClient, FakeJob, on_thread, wait_for

from genwidgets.widgets import task
from genwidgets.widgets._style import COLOURS
from genwidgets.widgets.task import TICKER, TaskView, Throttle, Ticker, display_job, plain_status

GREY, BLUE, GREEN, RED = (COLOURS[c] for c in ("queued", "running", "done", "failed"))


@pytest.fixture(autouse=True)
def _fast_ticker(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(TICKER, "period", 0.05)
    yield
    # Views a test left running must not keep ticking into the next test.
    for view in list(TICKER._live):
        TICKER.remove(view)


def settled(view: TaskView, text: str, widget: str = "line_html") -> bool:
    return wait_for(lambda: text in getattr(view, widget).value)


def test_queued_running_done_with_colours_and_final_state() -> None:
    job = FakeJob(queue_position=7)
    view = TaskView(job)
    assert "submitted" in view.line_html.value and GREY in view.line_html.value
    assert "7" in view.line_html.value  # the handle's position before the first poll

    on_thread(lambda: job.queue(3))
    assert settled(view, "queued")
    assert GREY in view.line_html.value
    assert settled(view, "queue position 3", "line_html")

    on_thread(job.run)
    assert settled(view, "running")
    assert BLUE in view.line_html.value
    assert wait_for(lambda: "queue position" not in view.line_html.value)
    assert "animation" in view.detail_html.value  # indeterminate while not terminal
    assert not view.cancel_button.disabled

    on_thread(lambda: job.finish([IMAGE_OUT]))
    # The terminal update is written at once, never deferred.
    assert "done" in view.line_html.value and GREEN in view.line_html.value
    assert "animation" not in view.detail_html.value
    assert "gw-error" not in view.detail_html.value
    assert view.cancel_button.disabled and view.cancel_button.layout.display == "none"
    assert job.update_callback_count == 0  # the view let go of the job
    assert view not in TICKER._live


def test_failure_shows_error_and_error_type_in_red() -> None:
    job = FakeJob()
    view = TaskView(job)
    job.run()
    job.finish(error="Runtime execution failed", error_type="runtime_error")
    assert "failed" in view.line_html.value and RED in view.line_html.value
    assert "Runtime execution failed" in view.detail_html.value
    assert "runtime_error" in view.detail_html.value
    assert f"color:{RED}" in view.detail_html.value


def test_failure_with_structured_error_and_hostile_text_is_escaped() -> None:
    job = FakeJob(request_id="<b>rid</b>")
    view = TaskView(job)
    job.finish(error={"detail": "<script>alert(1)</script>"}, error_type="<i>x</i>")
    html = view.detail_html.value
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "<i>x</i>" not in html and "&lt;i&gt;x&lt;/i&gt;" in html
    assert "<b>rid</b>" not in view.detail_html.value
    assert "&lt;b&gt;rid&lt;/b&gt;" in view.detail_html.value


def test_unknown_status_is_shown_verbatim_in_blue_and_escaped() -> None:
    job = FakeJob()
    view = TaskView(job)
    job.set_status("WARMING_UP")
    assert settled(view, "WARMING_UP")
    assert BLUE in view.line_html.value
    job.set_status('<img src=x onerror="alert(1)">')
    assert settled(view, "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;")
    assert "<img" not in view.line_html.value
    assert not view.cancel_button.disabled  # unknown names are not terminal


def test_cancel_click_calls_request_cancel_once_and_disables_the_button() -> None:
    job = FakeJob()
    view = TaskView(job)
    job.run()
    view.cancel_button.click()
    view.cancel_button.click()  # a second click (queued behind the first) does nothing
    assert job.cancel_calls == 1
    assert view.cancel_button.disabled
    assert view.cancel_button.description == "cancel requested"
    job.run()  # still running: the label stays until the status says so
    assert settled(view, "running")
    assert view.cancel_button.description == "cancel requested"
    job.finish(error="cancelled by user", error_type="cancelled")
    assert "cancelled" in view.line_html.value and RED in view.line_html.value
    assert view.cancel_button.description == "cancelled"


def test_cancel_requested_elsewhere_shows_on_the_button() -> None:
    job = FakeJob()
    view = TaskView(job)
    job.request_cancel()  # e.g. job.cancel() from another cell
    job.run()
    assert wait_for(lambda: view.cancel_button.description == "cancel requested")
    assert view.cancel_button.disabled


def test_a_failing_request_cancel_is_shown_not_raised() -> None:
    job = FakeJob()

    def boom() -> None:
        raise RuntimeError("engine stopped")

    job.request_cancel = boom
    view = TaskView(job)
    view.cancel_button.click()
    assert "cancel failed: engine stopped" in view.detail_html.value


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
    assert settled(view, "queue position 1", "line_html")
    assert view.writes - before <= 4
    on_thread(lambda: job.finish([IMAGE_OUT]))
    assert "done" in view.line_html.value  # forced, no wait


def test_throttle_writes_at_most_about_ten_times_a_second() -> None:
    writes: list[float] = []
    ticker = Ticker(period=10.0)
    throttle = Throttle(lambda: writes.append(time.monotonic()), interval=0.1, ticker=ticker)
    end = time.monotonic() + 0.55
    while time.monotonic() < end:
        throttle.request()
        time.sleep(0.002)
    assert wait_for(lambda: not throttle.dirty)
    assert 2 <= len(writes) <= 8
    gaps = [b - a for a, b in itertools.pairwise(writes)]
    assert min(gaps) >= 0.09


def test_elapsed_time_moves_on_the_shared_tick_and_the_ticker_stops_when_idle() -> None:
    job = FakeJob(submitted_at=time.time() - 3)
    view = TaskView(job)
    job.run()
    first = view.line_html.value
    assert "3." in first
    assert wait_for(lambda: view.line_html.value != first)
    assert TICKER.running
    job.finish()
    assert wait_for(lambda: not TICKER.running)


def test_two_hundred_views_share_one_ticker_thread() -> None:
    jobs = [FakeJob() for _ in range(200)]
    views = [TaskView(j) for j in jobs]
    for j in jobs:
        j.run()
    tickers = [t for t in threading.enumerate() if t.name == "genwidgets-ticker"]
    assert len(tickers) == 1
    assert TICKER.live_count == 200
    for j in jobs:
        j.finish()
    assert TICKER.live_count == 0
    assert all("done" in v.line_html.value for v in views)
    assert wait_for(lambda: not any(t.name == "genwidgets-ticker" for t in threading.enumerate()))


def test_view_of_a_finished_job_registers_nothing() -> None:
    job = FakeJob()
    job.finish([IMAGE_OUT])
    view = TaskView(job)
    assert "done" in view.line_html.value
    assert job.update_callback_count == 0 and view not in TICKER._live


def test_job_that_ended_with_an_exception_shows_it() -> None:
    job = FakeJob()
    view = TaskView(job)
    job.crash(ConnectionError("gateway unreachable"))
    assert "failed" in view.line_html.value
    assert "gateway unreachable" in view.detail_html.value
    assert "ConnectionError" in view.detail_html.value


def test_simulated_badge_only_for_the_embedded_simulator() -> None:
    assert "simulated" in TaskView(FakeJob(client=FakeClient(embedded=True))).line_html.value
    assert "simulated" not in TaskView(FakeJob(client=FakeClient(embedded=False))).line_html.value


def test_request_id_is_selectable_text() -> None:
    job = FakeJob(request_id="abc-123")
    view = TaskView(job)
    assert "user-select:all" in view.detail_html.value
    assert ">abc-123</code>" in view.detail_html.value


# --- display_job ----------------------------------------------------------------


class RecordingHandle:
    def __init__(self) -> None:
        self.updates: list[tuple[Any, dict[str, Any]]] = []
        self.threads: list[str] = []

    def update(self, obj: Any, **kwargs: Any) -> None:
        self.updates.append((obj, kwargs))
        self.threads.append(threading.current_thread().name)


class DisplayRecorder:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, dict[str, Any]]] = []
        self.handle = RecordingHandle()

    def __call__(self, obj: Any, **kwargs: Any) -> RecordingHandle | None:
        self.calls.append((obj, kwargs))
        return self.handle if kwargs.get("display_id") else None


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> DisplayRecorder:
    import IPython.display

    rec = DisplayRecorder()
    monkeypatch.setattr(IPython.display, "display", rec)
    monkeypatch.setattr(task, "in_kernel", lambda: True)
    return rec


def test_display_job_shows_the_view_and_fills_a_display_id_on_completion(
    recorder: DisplayRecorder,
) -> None:
    job = FakeJob("imgM-v8.1-t2i", request_id="rid-42")
    view = display_job(job)
    assert isinstance(view, TaskView)
    assert recorder.calls[0][0] is view
    placeholder, kwargs = recorder.calls[1]
    assert kwargs == {"raw": True, "display_id": True}
    assert "appear here" in placeholder["text/plain"]
    assert recorder.handle.updates == []

    on_thread(lambda: job.finish([IMAGE_OUT, {**IMAGE_OUT, "url": "https://cdn.example/1.png"}]))
    assert len(recorder.handle.updates) == 1
    bundle, kwargs = recorder.handle.updates[0]
    assert kwargs == {"raw": True}
    assert recorder.handle.threads[0] != threading.main_thread().name
    html = bundle["text/html"]
    assert '<img src="https://cdn.example/files/tok/out-0.png"' in html
    assert '<img src="https://cdn.example/1.png"' in html
    assert "done" in html and "rid-42" in html
    assert "simulated" in html
    assert "https://cdn.example/files/tok/out-0.png" in bundle["text/plain"]
    assert "ipywidgets" not in repr(bundle)  # plain display data, not widget views


def test_final_output_is_published_before_the_job_completes(recorder: DisplayRecorder) -> None:
    # A later cell's job.result() returns when the job completes; the final output
    # must already be out by then, or nbclient drops it from the saved notebook.
    job = FakeJob()
    seen_at_completion: list[int] = []
    job.add_done_callback(lambda _j: seen_at_completion.append(len(recorder.handle.updates)))
    display_job(job)
    job.finish([IMAGE_OUT])
    assert seen_at_completion == [1]
    assert len(recorder.handle.updates) == 1  # and only once
    assert job.update_callback_count == 0


def test_a_job_that_crashed_still_gets_its_final_output(recorder: DisplayRecorder) -> None:
    job = FakeJob()
    display_job(job)
    job.crash(ConnectionError("gateway unreachable"))
    [(bundle, _)] = recorder.handle.updates
    assert "gateway unreachable" in bundle["text/html"] and "failed" in bundle["text/plain"]


def test_view_writes_run_outside_the_engine_task_context() -> None:
    import contextvars

    marker: contextvars.ContextVar[str] = contextvars.ContextVar("marker")
    marker.set("cell 1")  # what the engine's polling task would carry
    seen: list[str] = []
    task.as_current_request(lambda: seen.append(marker.get("unset")))
    assert seen == ["unset"]


def test_display_job_final_output_of_a_failed_job(recorder: DisplayRecorder) -> None:
    job = FakeJob()
    display_job(job)
    job.finish(error="Runtime execution failed", error_type="runtime_error")
    bundle, _ = recorder.handle.updates[0]
    assert "failed" in bundle["text/html"] and RED in bundle["text/html"]
    assert "Runtime execution failed" in bundle["text/plain"]
    assert "runtime_error" in bundle["text/plain"]


def test_display_job_of_an_already_finished_job_updates_at_once(
    recorder: DisplayRecorder,
) -> None:
    job = FakeJob()
    job.finish([{"content_type": "application/json", "content": '{"GroupId": "g-1"}'}])
    display_job(job)
    assert len(recorder.handle.updates) == 1
    assert "GroupId" in recorder.handle.updates[0][0]["text/html"]


def test_video_output_in_the_final_display_has_controls_and_no_autoplay(
    recorder: DisplayRecorder,
) -> None:
    job = FakeJob()
    display_job(job)
    job.finish([{"url": "https://cdn.example/v.mp4", "content_type": "video/mp4"}])
    html = recorder.handle.updates[0][0]["text/html"]
    assert "<video controls" in html
    assert "autoplay" not in html and "loop" not in html


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


@pytest.mark.timeout(60)
def test_real_job_view_reaches_done_and_holds_no_key(
    real_client: Any, recorder: DisplayRecorder
) -> None:
    job = real_client.submit("imgM-v8.1-t2i", {"prompt": "a red kite"})
    view = display_job(job)
    assert isinstance(view, TaskView)
    job.result(timeout=30)
    assert wait_for(lambda: "done" in view.line_html.value)
    assert wait_for(lambda: len(recorder.handle.updates) == 1)
    html = recorder.handle.updates[0][0]["text/html"]
    # The ledger kept local copies before completion: the saved notebook holds the
    # images themselves, so they still show once the simulator's URLs are gone.
    assert job.last_result is not None
    assert all(o.path is not None for o in job.last_result.outputs)
    assert html.count('<img src="data:image/png;base64,iVBOR') == 4
    assert view.cancel_button.layout.display == "none"
    assert SECRET not in all_widget_state(view) and SECRET not in json.dumps(
        recorder.calls, default=repr
    )
    assert SECRET not in json.dumps(recorder.handle.updates)
    assert wait_for(lambda: view not in TICKER._live)


@pytest.mark.timeout(60)
def test_real_job_without_local_copies_shows_outputs_by_url(
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
        assert wait_for(lambda: len(recorder.handle.updates) == 1)
        html = recorder.handle.updates[0][0]["text/html"]
        assert f'<video controls preload="metadata" src="{sim.base_url}/files/' in html
        assert "autoplay" not in html
    finally:
        client.close()


@pytest.mark.timeout(60)
def test_real_cancel_from_the_button(real_client: Any) -> None:
    job = real_client.submit(
        "vidVq2-text2video", {"prompt": "a slow kite"}, headers={"X-Sim-Duration": "400"}
    )
    view = TaskView(job)
    view.cancel_button.click()
    assert view.cancel_button.disabled and view.cancel_button.description == "cancel requested"
    result = job.result(timeout=30)
    assert result.error_type == "cancelled"
    assert wait_for(lambda: "cancelled" in view.line_html.value)
    assert RED in view.line_html.value and "cancelled by user" in view.detail_html.value


@pytest.mark.timeout(60)
def test_real_runtime_failure_is_red_with_error_and_type(real_client: Any) -> None:
    job = real_client.submit("imgM-v8.1-t2i", {"prompt": "a kite"}, headers={"X-Sim-Fault": "fail"})
    view = TaskView(job)
    job.result(timeout=30)
    assert wait_for(lambda: "failed" in view.line_html.value)
    assert "Runtime execution failed" in view.detail_html.value
    assert "runtime_error" in view.detail_html.value


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
    first = saved.cells[0].outputs
    views = [o for o in first if env_helper.WIDGET_VIEW_MIME in o.get("data", {})]
    displays = [o for o in first if "text/html" in o.get("data", {})]
    assert len(views) == 1 and len(displays) == 1
    final = displays[0]["data"]["text/html"]  # the display_id output, updated in place
    assert 'class="gw-status gw-status-done"' in final and ">done</span>" in final
    assert final.count('<img src="data:image/png;base64,') == 4
    assert "done" in displays[0]["data"]["text/plain"]
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

    from genwidgets.widgets import task as task_module

    shell = InteractiveShell.instance()
    republisher = task_module._Republisher()
    writes: list[str] = []
    republisher.add(lambda: writes.append("final"))
    assert writes == [] and republisher._installed
    shell.run_cell("1 + 1")  # the next cell: post_run_cell fires on the main thread
    assert writes == ["final"]
    shell.run_cell("2 + 2")
    assert writes == ["final"]  # once, not on every later cell
    shell.events.unregister("post_run_cell", republisher.flush)
