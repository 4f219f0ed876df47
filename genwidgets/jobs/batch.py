"""Many creates at once: one batch sender on the engine, a semaphore for the bound.

Grids, sweeps and anything that sends many go through :func:`run_each` (behind
``Client.send_many``): every create waits for a slot of one ``asyncio.Semaphore`` on
the engine loop (no thread per create), and each outcome reaches the caller's thread
as it arrives: docs/decisions.md#one-batch-sender.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from .engine import Engine

__all__ = ["run_each", "valid_concurrency"]

T = TypeVar("T")


def valid_concurrency(concurrency: object) -> int:
    """``concurrency`` as a positive whole number, else a ValueError saying so."""
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be a whole number 1 or more, not {concurrency!r}")
    return concurrency


async def _in_turn(
    gate: asyncio.Semaphore,
    work: Callable[[], Awaitable[T]],
    never_started: Callable[[], object] | None,
) -> T:
    """``work()`` once a slot is free; ``never_started()`` when cancelled before that."""
    try:
        await gate.acquire()
    except BaseException:
        if never_started is not None:
            never_started()
        raise
    try:
        return await work()
    finally:
        gate.release()


def run_each(
    engine: Engine,
    works: Sequence[Callable[[], Awaitable[T]]],
    *,
    concurrency: int,
    on_each: Callable[[int, T | Exception], object] | None = None,
    never_started: Callable[[int], object] | None = None,
) -> list[T | Exception]:
    """Run every ``works[i]()`` on the engine, at most ``concurrency`` at a time, and
    return their values (or the exceptions they raised) in order.

    One failure never stops the others. ``on_each(i, outcome)`` runs on the calling
    thread as each one ends (answer order). An interrupt (Ctrl-C) or an exception from
    ``on_each`` cancels what has not ended; ``never_started(i)`` is called (on the
    engine) for each item cancelled before its slot came, so its caller can record
    that nothing was sent.
    """
    valid_concurrency(concurrency)
    if engine.in_engine_thread:
        raise RuntimeError(
            "a batch was sent from a job callback, which runs on the engine thread; "
            "send it from the notebook's thread or a thread of your own"
        )
    if not works:
        return []
    holder: list[asyncio.Semaphore] = []

    async def slot(index: int) -> T:
        if not holder:  # made on the engine loop, once, for this batch alone
            holder.append(asyncio.Semaphore(concurrency))
        skipped = None if never_started is None else (lambda: never_started(index))
        return await _in_turn(holder[0], works[index], skipped)

    futures = {engine.submit(slot(i)): i for i in range(len(works))}
    outcomes: dict[int, T | Exception] = {}
    pending = set(futures)
    try:
        while pending:
            finished, pending = concurrent.futures.wait(
                pending, timeout=0.25, return_when=concurrent.futures.FIRST_COMPLETED
            )  # short slices: a kernel interrupt is seen at once
            for future in finished:
                index = futures[future]
                error = future.exception()
                if error is not None and not isinstance(error, Exception):
                    raise error  # CancelledError, KeyboardInterrupt: not an outcome
                outcomes[index] = error if error is not None else future.result()
                if on_each is not None:
                    on_each(index, outcomes[index])
    except BaseException:
        for future in pending:
            future.cancel()
        raise
    return [outcomes[i] for i in range(len(works))]
