"""The sweep: tasks nobody polls still end upstream, and must settle (a failed one gives
its reservation back, a finished one frees its key's place among ``max_running``).

Every ``sweep_every`` seconds each server process claims the unfinished tasks not
looked at lately (``checked_at``), a batch at a time while more are due, and asks
upstream for their status. Several processes may sweep one database: the claim is an
update, and settling is idempotent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from functools import partial
from typing import Any

from starlette.concurrency import run_in_threadpool

from ..errors import ServeError
from ..protocol.gate import GATE_CEILING
from ..protocol.records import queue_url, says_rate_limited
from .budgets import (
    STALE_SENDING,
    end_stale_cancels,
    forgotten,
    heard,
    hold_creates,
    holding_creates,
    settle,
    unanswered,
    update_followers,
)
from .config import ServeState
from .db import Database, Tx

__all__ = ["BATCH", "MOST_PER_SWEEP", "claim", "give_up_sending", "sweep_once", "sweeping"]

log = logging.getLogger("genwidgets.serve")
#: tasks one pass of a sweep claims, at most
BATCH = 20
#: tasks one sweep asks about, at most (passes of :data:`BATCH` while a pass was full)
MOST_PER_SWEEP = 10 * BATCH
#: seconds a sweep lasts at most: its requests still running then are cancelled, and
#: the tasks it claimed and did not hear about are asked about by the next sweeps
SWEEP_SECONDS = 30.0
#: status requests a sweep has upstream at once
ASKS_AT_ONCE = 4
#: seconds between asks about a task upstream answered 404 for: known again, or ended
UNKNOWN_EVERY = 60.0


def claim(
    db: Database, older_than: float, now: float | None = None, *, not_since: float | None = None
) -> list[tuple[Any, ...]]:
    """Unfinished tasks not looked at since ``older_than`` seconds (nor since
    ``not_since``: a sweep asks about a task once), taken for this sweep:
    (id, endpoint, upstream id, state, since when upstream answered only 404s for it).
    A task taken is stamped :data:`SWEEP_SECONDS` ahead, past the end of the sweep that
    took it, and stamped again when its ask is sent (:func:`_ask`): a task still queued
    behind :data:`ASKS_AT_ONCE` is not another process's to ask meanwhile.
    Half a batch goes to tasks never looked at, oldest first, half to those looked at,
    longest unseen first, and one kind's unused places to the other: neither waits
    forever behind a steady stream of the other, on both databases alike (a single
    order by ``checked_at`` put NULLs last on PostgreSQL and first on SQLite)."""
    now = time.time() if now is None else now

    def work(tx: Tx) -> list[tuple[Any, ...]]:
        give_up_sending(tx, now)
        due = (
            "SELECT id, endpoint, upstream_id, state, missing_since FROM tasks "
            "WHERE upstream_id IS NOT NULL AND {} ORDER BY {}, id LIMIT ? {{skip}}"
        )  # on PostgreSQL, rows another process is claiming are passed over
        fresh = tx.rows(
            due.format(
                "checked_at IS NULL AND state IN ('open', 'cancelling', 'unknown')", "created_at"
            ),
            (BATCH,),
        )
        seen = tx.rows(  # and, less often, those upstream answered 404 for (a restart?)
            due.format(
                "(state IN ('open', 'cancelling') AND checked_at < ? "
                "OR state = 'unknown' AND checked_at < ?)",
                "checked_at",
            ),
            (
                min(now - older_than, not_since or now),
                min(now - max(older_than, UNKNOWN_EVERY), not_since or now),
                BATCH,
            ),
        )
        take_seen = min(len(seen), max(BATCH // 2, BATCH - len(fresh)))
        rows = fresh[: BATCH - take_seen] + seen[:take_seen]
        for row in rows:
            tx.run("UPDATE tasks SET checked_at = ? WHERE id = ?", (now + SWEEP_SECONDS, row[0]))
        return rows

    return db.run(work)


def give_up_sending(tx: Tx, now: float) -> None:
    """Creates still ``sending`` after :data:`STALE_SENDING` (their process stopped
    between reserving and upstream's answer) become ``unknown``: no upstream needed, so
    a sweep does it even while upstream's rate limit holds its status requests back, and
    so does the teacher's ``serve tasks --settle`` with no server running (the class is
    over); the listing only shows them (``budgets.tasks_of``: ``stale``). Cancels left in
    flight by a stopped server are ended too (``budgets.end_stale_cancels``)."""
    stale = tx.rows(
        "SELECT id FROM tasks WHERE state = 'sending' AND created_at < ?",
        (now - STALE_SENDING,),
    )
    for (task_id,) in stale:
        tx.run(
            "UPDATE tasks SET state = 'unknown', error = ? WHERE id = ?",
            ("the server stopped while sending this create", task_id),
        )
        update_followers(tx, task_id)
    end_stale_cancels(tx, now)


def _asked(db: Database, task_id: str) -> None:
    """Stamp a task as asked about now (its ask is being sent)."""
    db.run(
        lambda tx: tx.run("UPDATE tasks SET checked_at = ? WHERE id = ?", (time.time(), task_id))
    )


async def sweep_once(state: ServeState) -> int:
    """Ask upstream about the due tasks and settle those that ended; how many did. A
    sweep claims :data:`BATCH` tasks a pass, and passes again while a pass found a full
    batch due, up to :data:`MOST_PER_SWEEP` tasks, so its work grows with the backlog: a
    class's steady creates never push an old task's re-check back without bound
    (docs/decisions.md#serve-reservations). It lasts :data:`SWEEP_SECONDS` at most, and
    ends only when all its requests have. Upstream down ends it, and so does upstream's
    rate limit, which holds every process's status requests back for its
    ``Retry-After`` (a stale ``sending`` create is still given up meanwhile)."""
    db = state.config.database
    if await run_in_threadpool(partial(holding_creates, db, what="sweeps")):
        await run_in_threadpool(db.run, partial(give_up_sending, now=time.time()))
        return 0
    started, ended = time.time(), [0]
    asking, stopped = asyncio.Semaphore(ASKS_AT_ONCE), asyncio.Event()

    async def passes() -> None:
        asked = 0
        while asked < MOST_PER_SWEEP and not stopped.is_set():
            # one taken earlier in this sweep (stamped ahead, or when asked) is not due again
            rows = await run_in_threadpool(
                partial(claim, db, state.config.sweep_every, not_since=started)
            )
            asks = (_ask(state, row, asking, stopped) for row in rows)
            outcomes = await asyncio.gather(*asks, return_exceptions=True)
            for row, outcome in zip(rows, outcomes, strict=True):
                if isinstance(outcome, BaseException):  # left for the next sweep
                    log.warning("the sweep could not settle task %s: %r", row[0], outcome)
                else:
                    ended[0] += outcome
            asked += len(rows)
            if len(rows) < BATCH:  # nothing more due
                break

    with contextlib.suppress(asyncio.TimeoutError):  # waits for its cancelled requests
        await asyncio.wait_for(passes(), SWEEP_SECONDS)
    return ended[0]


async def _ask(
    state: ServeState, row: tuple[Any, ...], asking: asyncio.Semaphore, stopped: asyncio.Event
) -> int:
    """Ask upstream about one claimed task and settle it if it ended: 1 if it did, else
    0. Upstream unreachable or rate limiting sets ``stopped``: the sweep's other asks
    are not sent. Only a status answer settles: an error answer (a 404 or 410 that is
    not upstream's word, a 5xx) leaves the task as it is, asked again next time, as a
    poll does; a stretch of nothing but error answers is bounded
    (:func:`~.budgets.unanswered`)."""
    task_id, endpoint, upstream_id, task_state, missing_since = row
    db = state.config.database
    async with asking:
        if stopped.is_set():
            return 0
        await run_in_threadpool(_asked, db, task_id)
        try:
            answer = await state.config.upstream.send(
                "GET", queue_url("", endpoint, upstream_id) + "/status"
            )
        except ServeError:
            stopped.set()
            return 0
    if says_rate_limited(answer.status, answer.body):
        stopped.set()
        wait = min(GATE_CEILING, max(1.0, answer.retry_after or 1.0))
        await run_in_threadpool(partial(hold_creates, db, wait, what="sweeps"))
        return 0
    if answer.task_unknown:  # upstream no longer knows it: it holds no place now
        await run_in_threadpool(forgotten, db, task_id)
        return 0
    if answer.status >= 400:  # an error body is no status (a JSend 404 said "error"), and
        # not upstream's word (a proxy's page, a 400 "expired", a 403 after the teacher's
        # key changed, a lasting 500): kept, but only for a bounded stretch of them
        await run_in_threadpool(unanswered, db, task_id)
        return 0
    if missing_since is not None:
        await run_in_threadpool(heard, db, task_id)
    return int(await run_in_threadpool(partial(settle, db, task_id, answer.body, seen=task_state)))


def sweeping(state: ServeState) -> Callable[[Any], contextlib.AbstractAsyncContextManager[None]]:
    """The app's lifespan: sweep in the background while it serves."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        every = state.config.sweep_every
        task = asyncio.get_running_loop().create_task(_loop(state)) if every > 0 else None
        try:
            yield
        finally:
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    return lifespan


async def _loop(state: ServeState) -> None:
    while True:
        await asyncio.sleep(state.config.sweep_every)
        try:
            await sweep_once(state)
        except ServeError as exc:
            log.warning("the sweep could not read the database: %s", exc)
        except Exception:  # the sweep goes on: it alone settles the tasks nobody polls
            log.exception("the sweep failed; it goes on")
