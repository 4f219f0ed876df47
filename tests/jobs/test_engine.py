"""The engine's thread rules: what may wait on it, and what knows it is on it."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import threading

import pytest
from widgets.taskfakes import wait_for

from genwidgets.jobs.engine import (
    engine_waits_forbidden,
    get_engine,
    on_engine_thread,
    wait_future,
)


def test_a_wait_on_the_engine_under_a_views_lock_is_refused_at_once() -> None:
    engine = get_engine()
    ran: list[bool] = []

    async def work() -> None:
        ran.append(True)

    coro = work()
    with (
        engine_waits_forbidden("the grid's write"),
        pytest.raises(RuntimeError, match=r"the grid.s write .*no-waits-under-locks"),
    ):
        engine.run(coro)
    assert coro.cr_frame is None  # closed, never scheduled
    assert engine.run(asyncio.sleep(0, result="free"), timeout=30) == "free"
    assert ran == []


def test_waiting_on_a_pending_future_under_a_views_lock_is_refused() -> None:
    pending: concurrent.futures.Future[int] = concurrent.futures.Future()
    with engine_waits_forbidden("a view's write"), pytest.raises(RuntimeError):
        wait_future(pending, timeout=30)
    with engine_waits_forbidden("a view's write"), pytest.raises(concurrent.futures.TimeoutError):
        wait_future(pending, timeout=0)  # asking without waiting is allowed


def test_the_rule_ends_with_its_block_and_nests() -> None:
    pending: concurrent.futures.Future[int] = concurrent.futures.Future()
    pending.set_result(1)
    with engine_waits_forbidden("outer"):
        with engine_waits_forbidden("inner"):
            pass
        with pytest.raises(RuntimeError, match="outer"):
            get_engine().run(asyncio.sleep(0))
    assert get_engine().run(asyncio.sleep(0, result=2), timeout=30) == 2


def test_a_settled_future_answers_even_with_no_time_to_wait() -> None:
    done: concurrent.futures.Future[int] = concurrent.futures.Future()
    done.set_result(7)
    assert wait_future(done, 0) == 7
    failed: concurrent.futures.Future[int] = concurrent.futures.Future()
    failed.set_exception(KeyError("gone"))
    with pytest.raises(KeyError, match="gone"):
        wait_future(failed, 0)


def test_on_engine_thread_is_true_only_on_the_loop_thread() -> None:
    engine = get_engine()

    async def where() -> bool:
        return on_engine_thread()

    assert engine.run(where(), timeout=30) is True
    assert on_engine_thread() is False


def test_a_submitted_task_starts_in_a_fresh_context_and_a_cancel_reaches_it() -> None:
    """The caller's context (ipykernel's cell label) never follows a task; cancelling
    the caller's future cancels the task on the loop."""
    marker: contextvars.ContextVar[str] = contextvars.ContextVar("marker")
    marker.set("cell 1")
    engine = get_engine()

    async def read() -> str:
        return marker.get("unset")

    assert engine.run(read(), timeout=30) == "unset"
    started = threading.Event()
    ended: list[str] = []

    async def hang() -> None:
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            ended.append("cancelled")
            raise

    future = engine.submit(hang())
    assert started.wait(30)
    future.cancel()
    assert wait_for(lambda: ended == ["cancelled"], timeout=30.0)


@pytest.mark.parametrize("timeout", ["5", float("nan"), True])
def test_a_wait_given_no_number_of_seconds_is_refused_saying_so(timeout: object) -> None:
    """``result(timeout="5")`` was a raw TypeError from deep inside; NaN waited with no
    deadline at all."""
    pending: concurrent.futures.Future[int] = concurrent.futures.Future()
    with pytest.raises(TypeError, match="timeout must be a number of seconds or None"):
        wait_future(pending, timeout)
