"""Views' background workers: off the caller's thread, errors contained, no pile-up."""

from __future__ import annotations

import threading

from widgets.taskfakes import wait_for

from genwidgets.widgets.background import Background


def test_work_runs_on_a_daemon_worker_and_a_failure_is_logged_not_raised(caplog) -> None:  # type: ignore[no-untyped-def]
    background = Background(workers=2, idle=0.2)
    seen: list[tuple[str, bool]] = []

    def fail() -> None:
        raise ValueError("broken thumbnail")

    background.submit(fail)
    background.submit(
        lambda: seen.append((threading.current_thread().name, threading.current_thread().daemon))
    )
    assert wait_for(lambda: background.pending == 0, timeout=30)
    assert seen == [("genwidgets-background", True)]
    assert "a view update failed" in caplog.text


def test_a_stuck_job_does_not_stop_the_others_and_workers_are_capped() -> None:
    background = Background(workers=2, idle=0.2)
    release = threading.Event()
    done: list[int] = []
    workers: set[int] = set()

    def hang() -> None:
        workers.add(threading.get_ident())
        release.wait(60)  # a download that hangs

    def work(i: int) -> None:
        workers.add(threading.get_ident())
        done.append(i)

    background.submit(hang)
    for i in range(5):
        background.submit(lambda i=i: work(i))
    assert wait_for(lambda: len(done) == 5, timeout=30)
    assert done == [0, 1, 2, 3, 4]
    assert len(workers) == 2
    release.set()
    assert wait_for(lambda: background.pending == 0, timeout=30)
