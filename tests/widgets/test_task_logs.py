"""The task view's log line (issue 21, point 5): the latest while running, the last
few once finished; text only."""

from __future__ import annotations

from widgets.taskfakes import FakeJob, on_thread, wait_for

from genwidgets.widgets.task import LOG_LINES_KEPT, TaskView, log_tail


def test_the_view_shows_the_latest_log_line_then_keeps_the_last_few() -> None:
    job = FakeJob()
    view = TaskView(job)
    assert view.logs == []
    lines = [{"message": f"step {i}", "level": "INFO"} for i in range(8)]
    on_thread(lambda: job.set_status("IN_PROGRESS", logs=lines[:3]))
    assert wait_for(lambda: view.logs == ["step 2"])
    on_thread(lambda: job.set_status("IN_PROGRESS", logs=lines))
    assert wait_for(lambda: view.logs == ["step 7"])
    on_thread(lambda: job.set_status("COMPLETED", logs=lines))
    assert wait_for(lambda: view.terminal)
    assert view.logs == [f"step {i}" for i in range(8 - LOG_LINES_KEPT, 8)]


def test_log_tail_reads_strings_and_objects_and_no_logs() -> None:
    job = FakeJob()
    assert log_tail(job, terminal=False) == []
    job.set_status("processing", logs="one\ntwo\n<b>three</b>\n")
    assert log_tail(job, terminal=False) == ["<b>three</b>"]  # text, shown by textContent
    assert log_tail(job, terminal=True) == ["one", "two", "<b>three</b>"]
