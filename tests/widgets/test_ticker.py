"""The write throttle's lock rules: no engine callback waits on a view, and no
view's write waits on the engine (docs/decisions.md#no-waits-under-locks)."""

from __future__ import annotations

import asyncio
import threading

import pytest
from widgets.taskfakes import wait_for

from genwidgets.jobs.engine import get_engine
from genwidgets.widgets.ticker import Throttle, Ticker


def test_an_engine_callback_never_waits_on_a_view_lock() -> None:
    written: list[str] = []
    throttle = Throttle(lambda: written.append(threading.current_thread().name), ticker=Ticker())
    engine = get_engine()

    async def callback() -> str:
        throttle.request(force=True)  # as a job's finish does, from the engine thread
        return "returned"

    with throttle.lock:  # a view is writing (or stuck) on another thread
        assert engine.run(callback(), timeout=30) == "returned"
        assert written == []
    assert wait_for(lambda: written, timeout=30), "the ticker never wrote the view"
    assert written == ["genwidgets-ticker"]


def test_an_engine_callback_hands_its_write_to_the_ticker_even_when_the_lock_is_free() -> None:
    written: list[str] = []
    throttle = Throttle(lambda: written.append(threading.current_thread().name), ticker=Ticker())

    async def callback() -> None:
        throttle.request()

    get_engine().run(callback(), timeout=30)
    assert wait_for(lambda: written, timeout=30)
    assert "genwidgets-engine" not in written


def test_a_views_write_that_waits_on_the_engine_fails_at_once() -> None:
    throttle = Throttle(lambda: get_engine().run(asyncio.sleep(0)), ticker=Ticker())
    with pytest.raises(RuntimeError, match="no-waits-under-locks"):
        throttle.request(force=True)
    # the lock is free again and a plain write goes through
    assert throttle.lock.acquire(timeout=30)
    throttle.lock.release()
