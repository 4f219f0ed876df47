"""The engine's thread rules: what may wait on it, and what knows it is on it."""

from __future__ import annotations

import asyncio
import concurrent.futures

import pytest

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
