"""A batch's sending, on its sender thread: waiting rows a chunk at a time, reserved in
the store, created through ``client.send_many``, each answer settling its row; the
breaker pauses it. docs/decisions.md#batches, docs/decisions.md#circuit-breaker.
"""

from __future__ import annotations

import itertools
import time
from typing import TYPE_CHECKING, Any

from .._client import create_failure, created_nothing
from ..errors import PayloadError, RateLimited, Unreachable
from .batch_store import CREATED, FAILED, SENDING, UNKNOWN, WAITING
from .resume import reconcile, show_as_stored

if TYPE_CHECKING:
    from .batch_row import BatchRow
    from .row_book import RowBook

__all__ = ["CHUNK_ROUNDS", "MAX_RATE_LIMITED", "send_all"]

#: a row refused for the rate limit this many times in a row is failed
MAX_RATE_LIMITED = 50
#: a chunk is this many rounds of ``concurrency`` creates
CHUNK_ROUNDS = 2


def _next_chunk(book: RowBook) -> list[BatchRow]:
    """The next rows to send: two rounds of ``concurrency``, so the sender's own work
    between chunks is paid half as often (docs/decisions.md#batches). Rows before the
    book's ``cursor`` wait no more (a row given back moves it back)."""
    size = CHUNK_ROUNDS * book.concurrency
    with book.lock:
        while book.cursor < len(book.rows) and book.rows[book.cursor].state != WAITING:
            book.cursor += 1
        waiting = (row for row in book.rows[book.cursor :] if row.state == WAITING)
        return list(itertools.islice(waiting, size))


def send_all(book: RowBook) -> None:
    """The sender: chunks of waiting rows, each reserved, then sent, until none waits,
    the budget's cap is reached, or the book's ``stop`` is set."""
    caps = book.plan.budget.caps
    while not book.stop.is_set():
        chunk = _next_chunk(book)
        if not chunk:
            break
        book.flush()  # rows given back (a rate limit) are waiting in the store too
        reserved = book.store.reserve(book.id, [(r.index, book.charges(r)) for r in chunk], caps)
        by_index = {r.index: r for r in chunk}
        with book.lock:
            book.spent = reserved.spent
            for index, attempt in reserved.taken:
                row = by_index[index]
                row.state, row.attempt, row.reserved_at = SENDING, attempt, time.time()
            if reserved.capped:
                book.stopped = _cap_text(book)
        if reserved.elsewhere:  # another process sending this batch took them first
            stored = {r.index: r for r in book.store.rows(book.id, reserved.elsewhere)}
            with book.lock:
                for index in reserved.elsewhere:
                    show_as_stored(book, by_index[index], stored.get(index))
        if reserved.taken:
            _send(book, [by_index[i] for i, _ in reserved.taken])
        if book.paused is not None:  # the chunk's late answers are counted in it
            with book.lock:
                book.say_paused()
        book.dirty = True  # the finisher writes the store and tells the views
        if reserved.capped:
            break
    book.flush()


def _cap_text(book: RowBook) -> str:
    caps = book.plan.budget.caps
    shown = ", ".join(f"{book.spent.get(k, 0):g} of {v:g} {k}" for k, v in caps.items())
    return f"stopped at the budget's cap ({shown}); rows not sent wait"


def _send(book: RowBook, rows: list[BatchRow]) -> None:
    """One chunk of rows through ``client.send_many``: each prepared once (at planning
    when the plan had the client; one that cannot be is settled with why, and not
    sent), each answer settling its row as it arrives; rows whose answer an interrupt
    kept from being seen are reconciled with the ledger by their tags."""
    ready: list[tuple[BatchRow, Any]] = []
    for row in rows:
        prepared = row.planned.prepared
        try:
            if prepared is None:
                prepared = book.client.prepare(row.endpoint, row.payload)
        except Exception as exc:  # one bad row must not stop the others; nothing left
            if not isinstance(exc, PayloadError):
                exc = PayloadError(f"it could not be prepared: {exc}", endpoint=row.endpoint)
            _sent(book, row, exc)
        else:
            ready.append((row, prepared))
    answered: set[int] = set()

    def on_sent(i: int, outcome: Any) -> None:
        answered.add(i)
        _sent(book, ready[i][0], outcome)

    try:
        book.client.send_many(
            [prepared for _, prepared in ready],
            concurrency=book.concurrency,
            on_sent=on_sent,
            hold=book.stop.is_set,
            tags=[book.tag(row) for row, _ in ready],
        )
    finally:
        missing = [row for i, (row, _) in enumerate(ready) if i not in answered]
        if missing:
            reconcile(book, missing)
        for row in rows:  # sent: a retry prepares again (the payload is kept)
            row.planned.prepared = None
    if book.cancelled:  # cancelled while this chunk was in flight
        with book.lock:
            late = [r for r in rows if r.state == CREATED and not r.user_cancelled]
            for row in late:
                row.user_cancelled = True
        for row in late:
            if row.job is not None:
                row.job.request_cancel()


def _sent(book: RowBook, row: BatchRow, outcome: Any) -> None:
    with book.lock:
        if isinstance(outcome, Exception):
            # held back (nothing sent) while the batch stops or pauses: it waits again
            held = isinstance(outcome, Unreachable) and book.stop.is_set()
            if held or (isinstance(outcome, RateLimited) and row.rate_limited < MAX_RATE_LIMITED):
                row.rate_limited += not held
                book.update(row, WAITING, release=True)  # nothing made: it goes again
                return
            why = book.breaker.saw(outcome)
            if why is not None:
                book.pause(why)
            # kept for a sweep's card; its traceback let go (it holds the sender's frames)
            row.error, row.exception = create_failure(outcome), outcome.with_traceback(None)
            nothing = created_nothing(outcome)  # its units go back; else it may have billed
            book.update(row, FAILED if nothing else UNKNOWN, release=nothing)
            return
        book.breaker.saw(outcome)
        book.attach(row, outcome)
        book.update(row, CREATED)
