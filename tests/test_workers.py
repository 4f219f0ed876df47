"""The package's worker threads: off the caller's thread, errors contained and said,
no pile-up, one kind of thread."""

from __future__ import annotations

import threading

from widgets.taskfakes import wait_for

from genwidgets._workers import THREAD_NAME, Workers


def test_work_runs_on_a_daemon_worker_and_a_failure_is_logged_not_raised(caplog) -> None:  # type: ignore[no-untyped-def]
    background = Workers(2, idle=0.2, failed="a view update")
    seen: list[tuple[str, bool]] = []

    def fail() -> None:
        raise ValueError("broken thumbnail")

    background.submit(fail)
    background.submit(
        lambda: seen.append((threading.current_thread().name, threading.current_thread().daemon))
    )
    assert wait_for(lambda: background.pending == 0, timeout=30)
    assert seen == [(THREAD_NAME, True)]
    assert "a view update failed" in caplog.text


def test_a_stuck_job_does_not_stop_the_others_and_workers_are_capped() -> None:
    background = Workers(2, idle=0.2, failed="a view update")
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


def test_work_is_a_future_that_knows_its_thread_and_can_be_joined() -> None:
    workers = Workers(4, idle=0.2)
    named, release = threading.Event(), threading.Event()
    inside: list[bool] = []

    def body() -> bool:
        named.wait(30)  # ``work`` is assigned
        inside.append(work.on_this_thread)
        return release.wait(60)

    work = workers.submit(body)
    named.set()
    assert work.alive() and not work.join(0.05)  # still running: the join times out
    release.set()
    assert work.join(30) and not work.alive() and work.result() is True
    assert inside == [True] and not work.on_this_thread
    failing = workers.submit(lambda: 1 / 0)
    assert failing.join(30) and isinstance(failing.exception(), ZeroDivisionError)
