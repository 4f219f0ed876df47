"""Many creates at once: one batch sender on the engine, a semaphore for the bound.

Grids, sweeps and anything that sends many go through :func:`run_each` (behind
``Client.send_many``): every create waits for a slot of one ``asyncio.Semaphore`` on
the engine loop (no thread per create), and each outcome reaches the caller's thread
as it arrives: docs/decisions.md#one-batch-sender.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import logging
import queue
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from ..errors import Unreachable
from .engine import Engine, wait_future, wait_through_interrupts

__all__ = ["MAX_CONCURRENCY", "Leaving", "run_each", "valid_concurrency"]

T = TypeVar("T")
log = logging.getLogger("genwidgets")

#: what a create held back by ``hold()`` says (nothing was sent)
HELD_BACK = "held back by its batch before it was sent: nothing was sent"
#: what a create says that its caller's ``halt`` stopped (an AsyncClient's cancelled call)
HALTED = "stopped before it was sent (its caller was cancelled): nothing was sent"
#: seconds a stopped batch may take to end what it cancelled (it takes milliseconds)
STOP_WAIT = 30.0


#: the most creates a batch may hold in flight at once: far past any use (the client's
#: ``max_in_flight``, 16 by default, caps its requests anyway) and short of a count that
#: breaks the chunking (docs/decisions.md#one-batch-sender)
MAX_CONCURRENCY = 1000


class Leaving:
    """A work's word to its batch as it goes on the wire (a create: each try): only the
    works on the wire when the batch stops are let end; the others, waiting (their turn,
    the rate gate, a retry's backoff), are cancelled, or refused as they would leave.
    ``halt``, set from any thread, refuses them too, with no wait for the engine's loop."""

    def __init__(
        self,
        index: int,
        stop: asyncio.Event,
        in_flight: set[int],
        halt: threading.Event | None = None,
    ) -> None:
        self._index = index
        self._stop = stop
        self._in_flight = in_flight
        self._halt = halt

    def leave(self) -> None:
        """It goes on the wire now; ``Unreachable`` (nothing sent) once the batch stopped."""
        if self._stop.is_set():
            raise Unreachable(HELD_BACK)
        if self._halt is not None and self._halt.is_set():
            raise Unreachable(HALTED)
        self._in_flight.add(self._index)

    def back(self) -> None:
        """It is off the wire, nothing made (refused for the rate limit, never sent)."""
        self._in_flight.discard(self._index)

    @property
    def on_wire(self) -> bool:
        return self._index in self._in_flight


def valid_concurrency(concurrency: object) -> int:
    """``concurrency`` as a whole number from 1 to ``MAX_CONCURRENCY``, else a
    ValueError saying so."""
    if (
        isinstance(concurrency, bool)
        or not isinstance(concurrency, int)
        or not 1 <= concurrency <= MAX_CONCURRENCY
    ):
        raise ValueError(
            f"concurrency must be a whole number 1 or more, at most {MAX_CONCURRENCY}, "
            f"not {concurrency!r}"
        )
    return concurrency


async def _run_all(
    works: Sequence[Callable[[Leaving], Awaitable[T]]],
    concurrency: int,
    stop: asyncio.Event,
    deliver: Callable[[int, T | BaseException], object],
    hold: Callable[[], bool] | None = None,
    *,
    in_flight: set[int],
    grace: float = 0.0,
    halt: threading.Event | None = None,
    on_answer: Callable[[int, T | Exception], object] | None = None,
) -> None:
    """Every work under one semaphore; on a stop, what waits (its turn, or in the work:
    it has not said :meth:`Leaving.leave`) never leaves, what is on the wire
    (``in_flight``) is let end for at most ``grace`` seconds (a create's answer names a
    paid task; ``halt`` set: to its end) and then cancelled (the batch itself is never
    cancelled, so this always runs: a task cancelled before its first step runs no code)."""
    gate = asyncio.Semaphore(concurrency)

    async def one(index: int) -> T:
        async with gate:
            if hold is not None and hold():  # asked before each create leaves, not after
                raise Unreachable(HELD_BACK)
            try:
                outcome: T | Exception = await works[index](Leaving(index, stop, in_flight, halt))
            except Exception as exc:
                outcome = exc
            finally:
                in_flight.discard(index)
            if on_answer is not None:  # before its slot goes to the next: hold() sees it
                try:
                    on_answer(index, outcome)
                except Exception:  # never the create's outcome (a task made is kept)
                    log.exception("genwidgets: a batch's on_answer failed")
            if isinstance(outcome, Exception):
                raise outcome
            return outcome

    def settled(index: int, task: asyncio.Task[T]) -> None:
        if not task.cancelled():
            error = task.exception()
            deliver(index, error if error is not None else task.result())

    stopped = asyncio.ensure_future(stop.wait())
    tasks = [asyncio.ensure_future(one(i)) for i in range(len(works))]
    for index, task in enumerate(tasks):
        task.add_done_callback(functools.partial(settled, index))
    remaining: set[asyncio.Future[Any]] = set(tasks)
    while remaining and not stopped.done():
        done, _ = await asyncio.wait(remaining | {stopped}, return_when=asyncio.FIRST_COMPLETED)
        remaining -= done
    stopped.cancel()
    running = {tasks[index] for index in in_flight} & remaining
    for left in remaining - running:
        left.cancel()  # still waiting for its turn: it never leaves
    halted = halt is not None and halt.is_set()  # nobody waits: they answer, never cut
    if running and halted:
        await _until_answered(tasks, running, in_flight)
    elif running and grace > 0:
        await asyncio.wait(running, timeout=grace)
    for left in running:
        left.cancel()
    await asyncio.gather(*remaining, return_exceptions=True)


async def _until_answered(
    tasks: Sequence[asyncio.Task[Any]], running: set[asyncio.Task[Any]], in_flight: set[int]
) -> None:
    """A halted batch: the works on the wire at the stop answer, never cut; one back off
    the wire with nothing made (a 429) is cancelled as it waits for its next try, seen
    within a quarter second, not left to hold its worker for the Retry-After."""
    while pending := {task for task in running if not task.done()}:
        for index, task in enumerate(tasks):
            if task in pending and index not in in_flight:
                task.cancel()
        await asyncio.wait(pending, timeout=0.25)


def run_each(
    engine: Engine,
    works: Sequence[Callable[[Leaving], Awaitable[T]]],
    *,
    concurrency: int,
    on_each: Callable[[int, T | Exception], object] | None = None,
    hold: Callable[[], bool] | None = None,
    answer_grace: float = 0.0,
    halt: threading.Event | None = None,
    on_answer: Callable[[int, T | Exception], object] | None = None,
) -> list[T | Exception]:
    """Run every ``works[i](leaving)`` on the engine, at most ``concurrency`` at a time,
    and return their values (or the exceptions they raised) in order; each says
    ``leaving.leave()`` as it goes on the wire.

    One failure never stops the others. ``on_each(i, outcome)`` runs on the calling
    thread as each one ends (answer order). An interrupt (Ctrl-C) or an exception from
    ``on_each`` stops the batch: what has not left never leaves, what is on the wire is
    let end for at most ``answer_grace`` seconds (through more interrupts, said on stderr:
    a create's answer names a paid task) and then cancelled; one that never began sent
    nothing (a create writes its intent as it leaves). ``hold()``, asked on the
    engine as each work takes its slot, holds back the rest (each ``Unreachable``: nothing sent)
    while works in flight answer: a paused batch stops before its next create.
    ``on_answer(i, outcome)`` runs on the engine as each work ends, before its slot goes
    to the next, so a ``hold()`` reading what it counted holds that very next one (a
    batch's breaker: docs/decisions.md#circuit-breaker).
    ``halt``, set from another thread (an AsyncClient's caller cancelled), stops the batch
    as an interrupt does: from the moment it is set no work leaves (:meth:`Leaving.leave`
    reads it) and ``on_each`` is not called, but what is on the wire answers, never cut
    (nobody waits on this thread); ``concurrent.futures.CancelledError`` is raised once
    the batch ended.
    """
    valid_concurrency(concurrency)
    if engine.in_engine_thread:
        raise RuntimeError(
            "a batch was sent from a job callback, which runs on the engine thread; "
            "send it from the notebook's thread or a thread of your own"
        )
    if not works:
        return []
    arrived: queue.SimpleQueue[tuple[int, T | BaseException]] = queue.SimpleQueue()
    stop = asyncio.Event()  # the caller's "stop", set on the engine loop (its only user)
    in_flight: set[int] = set()  # written on the engine; its len() read here (atomic)
    batch = engine.submit(
        _run_all(
            works,
            concurrency,
            stop,
            lambda i, o: arrived.put((i, o)),
            hold,
            in_flight=in_flight,
            grace=answer_grace,
            halt=halt,
            on_answer=on_answer,
        )
    )
    outcomes: dict[int, T | Exception] = {}
    try:
        while True:
            if halt is not None and halt.is_set():  # seen within a slice: no on_each after
                raise concurrent.futures.CancelledError(HALTED)
            if len(outcomes) == len(works):
                break
            try:  # short slices: a kernel interrupt is seen at once
                index, outcome = arrived.get(timeout=0.25)
            except queue.Empty:
                # every answer is queued before the batch's future is done, so a done
                # batch with answers still queued is drained, not a batch that failed
                if batch.done() and arrived.empty():
                    batch.result()  # the batch itself failed: say how
                    raise RuntimeError("the batch ended before every item answered") from None
                continue
            if isinstance(outcome, BaseException) and not isinstance(outcome, Exception):
                raise outcome  # not an outcome (KeyboardInterrupt, CancelledError)
            outcomes[index] = outcome
            if halt is not None and halt.is_set():  # set during the get: no on_each after
                raise concurrent.futures.CancelledError(HALTED)
            if on_each is not None:
                on_each(index, outcome)
    except BaseException as stopping:
        engine.call_soon(stop.set)
        # halted, nobody waits on this thread (the caller's cancel was raised at once):
        # the works on the wire answer, bounded by their own timeout, never cut
        halted = halt is not None and halt.is_set()
        running = len(in_flight)
        if running and answer_grace > 0 and not halted:  # their answers, through interrupts
            why = "interrupted" if isinstance(stopping, KeyboardInterrupt) else "stopped"
            waited = f"{running} request{'s' if running > 1 else ''} in flight"
            wait_through_interrupts([batch], answer_grace, why=why, waited=waited)
        # What was cancelled ends at once, and the ledger says so, before we return;
        # a second interrupt, or a batch slow to end, does not hold the caller.
        with contextlib.suppress(BaseException):
            wait_future(batch, None if halted else STOP_WAIT)
        raise
    return [outcomes[i] for i in range(len(works))]
