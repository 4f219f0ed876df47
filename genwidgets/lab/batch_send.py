"""A batch's sending: waiting rows a chunk at a time, reserved, created, answered.

Run on the batch's sender thread. Each chunk's rows are reserved in the store (the
budget's cap holds across processes), then sent through ``client.send_many``; each
answer settles its row. Creates that fail in a row in a way that may have billed (a 5xx,
no answer, no contact) pause the batch after :data:`BREAKER_AFTER`: creates in flight
answer, none more leave until it is asked to go on. docs/decisions.md#circuit-breaker.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from .._client import created_nothing
from ..errors import OutcomeUnknown, RateLimited, ServerError, Unreachable
from .batch_store import CREATED, FAILED, SENDING, UNKNOWN, WAITING
from .resume import show_as_stored

if TYPE_CHECKING:
    import threading
    from collections.abc import Sequence
    from pathlib import Path

    from .._protocols import ClientLike, JobLike
    from .batch_plan import BatchPlan
    from .batch_row import BatchRow
    from .batch_store import BatchStore

__all__ = ["BREAKER_AFTER", "CHUNK_ROUNDS", "MAX_RATE_LIMITED", "Sending"]

#: a row refused for the rate limit this many times in a row is failed
MAX_RATE_LIMITED = 50
#: a chunk is this many rounds of ``concurrency`` creates
CHUNK_ROUNDS = 2
#: creates failing in a row in a way that may have billed (a 5xx, no answer, no
#: contact) before the batch pauses (docs/decisions.md#circuit-breaker)
BREAKER_AFTER = 5


class Sending:
    """The sending half of :class:`~genwidgets.lab.batch.Batch` (its sender thread's
    work), kept apart as one noun; the batch provides what is declared below."""

    if TYPE_CHECKING:
        rows: list[BatchRow]
        plan: BatchPlan
        store: BatchStore
        client: ClientLike
        id: str
        out: Path
        timeout: float | None
        on_timeout: str
        _stored: bool
        concurrency: int
        spent: dict[str, float]
        stopped: str | None
        paused: str | None
        _lock: threading.RLock
        _stop: threading.Event
        _cursor: int
        _dirty: bool
        _cancelled: bool
        _doubtful: int

        def _flush(self) -> None: ...
        def _ensure_finisher(self) -> None: ...
        def _reconcile(self, rows: Sequence[BatchRow]) -> None: ...
        def _charges(self, row: BatchRow) -> dict[str, float | None]: ...
        def _update(self, row: BatchRow, state: str, *, release: bool = False) -> None: ...
        def _attach(self, row: BatchRow, job: JobLike, created_at: float | None = None) -> None: ...
        def _pause(self, why: str) -> None: ...
        def _say_paused(self) -> None: ...

    def _next_chunk(self) -> list[BatchRow]:
        """The next rows to send: two rounds of ``concurrency``, so the sender's own
        work between chunks is paid half as often (docs/decisions.md#batches). Rows
        before ``_cursor`` wait no more (a row given back moves it back)."""
        size = CHUNK_ROUNDS * self.concurrency
        with self._lock:
            while self._cursor < len(self.rows) and self.rows[self._cursor].state != WAITING:
                self._cursor += 1
            chunk = []
            for row in self.rows[self._cursor :]:
                if row.state == WAITING:
                    chunk.append(row)
                    if len(chunk) == size:
                        break
            return chunk

    def _send_all(self) -> None:
        """The sender thread: chunks of waiting rows, each reserved, then sent."""
        caps = self.plan.budget.caps
        while not self._stop.is_set():
            chunk = self._next_chunk()
            if not chunk:
                break
            self._flush()  # rows given back (a rate limit) are waiting in the store too
            reserved = self.store.reserve(
                self.id, [(r.index, self._charges(r)) for r in chunk], caps
            )
            by_index = {r.index: r for r in chunk}
            with self._lock:
                self.spent = reserved.spent
                for index, attempt in reserved.taken:
                    row = by_index[index]
                    row.state, row.attempt, row.reserved_at = SENDING, attempt, time.time()
                if reserved.capped:
                    self.stopped = self._cap_text()
            if reserved.elsewhere:  # another process sending this batch took them first
                stored = {r.index: r for r in self.store.rows(self.id, reserved.elsewhere)}
                with self._lock:
                    for index in reserved.elsewhere:
                        show_as_stored(self, by_index[index], stored.get(index))
            if reserved.taken:
                self._send([by_index[i] for i, _ in reserved.taken])
            if self.paused is not None:  # the chunk's late answers are counted in it
                with self._lock:
                    self._say_paused()
            self._dirty = True  # the finisher writes the store and tells the views
            if reserved.capped:
                break
        self._flush()
        self._ensure_finisher()

    def _cap_text(self) -> str:
        caps = self.plan.budget.caps
        shown = ", ".join(f"{self.spent.get(k, 0):g} of {v:g} {k}" for k, v in caps.items())
        return f"stopped at the budget's cap ({shown}); rows not sent wait"

    def _send(self, rows: list[BatchRow]) -> None:
        """One chunk through ``client.send_many``; each answer settles its row."""
        prepared = []
        for row in rows:
            ready = row.planned.prepared
            if ready is None:
                ready = self.client.prepare(row.endpoint, row.payload)
            prepared.append(ready)
        answered: set[int] = set()

        def on_sent(i: int, outcome: Any) -> None:
            answered.add(i)
            self._sent(rows[i], outcome)

        try:
            self.client.send_many(
                prepared,
                concurrency=self.concurrency,
                on_sent=on_sent,
                hold=self._stop.is_set,
            )
        finally:
            for row in rows:  # sent: a retry prepares again (the payload is kept)
                row.planned.prepared = None
            missing = [row for i, row in enumerate(rows) if i not in answered]
            if missing:  # stopped mid-chunk: what the ledger says of each
                self._reconcile(missing)
        if self._cancelled:  # cancelled while this chunk was in flight
            with self._lock:
                late = [r for r in rows if r.state == CREATED and not r.user_cancelled]
                for row in late:
                    row.user_cancelled = True
            for row in late:
                if row.job is not None:
                    row.job.request_cancel()

    def _sent(self, row: BatchRow, outcome: Any) -> None:
        with self._lock:
            if isinstance(outcome, Exception):
                text = f"not created: {type(outcome).__name__}: {outcome}"
                # held back (nothing sent) while the batch stops or pauses: it waits again
                held = isinstance(outcome, Unreachable) and self._stop.is_set()
                if held or (
                    isinstance(outcome, RateLimited) and row.rate_limited < MAX_RATE_LIMITED
                ):
                    row.rate_limited += not held
                    self._update(row, WAITING, release=True)  # nothing made: it goes again
                    return
                if isinstance(outcome, (OutcomeUnknown, ServerError, Unreachable)) or (
                    not created_nothing(outcome)
                ):
                    self._doubtful += 1
                    if self._doubtful >= BREAKER_AFTER:
                        self._pause(
                            f"{self._doubtful} creates in a row failed in a way that may "
                            f"have billed (the last: {type(outcome).__name__}: {outcome})"
                        )
                if created_nothing(outcome):
                    row.error = text
                    self._update(row, FAILED, release=True)
                else:
                    row.error = f"outcome unknown: {type(outcome).__name__}: {outcome}"
                    self._update(row, UNKNOWN)
                return
            self._doubtful = 0
            self._attach(row, outcome)
            self._update(row, CREATED)
