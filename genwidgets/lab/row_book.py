"""A batch's book of rows: the one place a row's state changes, and what it is written
to; the sender, the finisher and a resume change rows only through it.
docs/decisions.md#batch-row-book.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..jobs.ledger import scrub_payload
from .batch_row import BatchRow
from .batch_store import ENDED, SENDING, UNKNOWN, WAITING, BatchStore, RowUpdate, id_taken
from .breaker import Breaker
from .manifest import Manifest

if TYPE_CHECKING:
    from .._protocols import ClientLike, JobLike
    from .batch_plan import BatchPlan
    from .plan import GridPlan

__all__ = ["RowBook"]

log = logging.getLogger("genwidgets")


class RowBook:
    """A run's rows and the one way to change them (see the module docstring)."""

    #: what a person calls this run, in its messages
    noun = "batch"
    #: what a person calls one of its rows
    unit = "row"

    def __init__(
        self,
        plan: BatchPlan | GridPlan,
        client: ClientLike,
        *,
        batch_id: str,
        out: Path | None,
        store: BatchStore,
        concurrency: int,
        timeout: float | None = None,
        on_timeout: str = "cancel",
    ) -> None:
        #: held while the run changes; never while waiting on the engine
        self.lock = threading.RLock()
        #: told of each change (views); one that raises is logged, never stops the run
        self.listeners: list[Callable[[], None]] = []
        #: why sending paused; set, nothing more is sent until it is asked to go on
        self.paused: str | None = None
        #: set: no create leaves (a pause, a cancel, an interrupt)
        self.stop = threading.Event()
        #: counts creates failing in a row that may have billed
        self.breaker = Breaker()
        self.plan = plan
        self.client = client
        self.id = batch_id
        self.out = out
        self.store = store
        self.timeout = timeout
        self.on_timeout = on_timeout
        #: creates in flight at once
        self.concurrency = concurrency
        self.rows = [BatchRow(p) for p in plan.rows]
        self.manifest = Manifest(out, batch_id)
        #: billed units the rows sent hold, per kind (and money with prices)
        self.spent: dict[str, float] = {}
        #: rows whose task ended (or whose following did), for the finisher
        self.ended: queue.SimpleQueue[int] = queue.SimpleQueue()
        #: when rows ended (monotonic), for the rate
        self.ends: deque[float] = deque()
        #: rows before it wait no more
        self.cursor = 0
        #: something changed that the views (``listeners``) have not been told
        self.dirty = False
        #: set once the finisher's last pass is written (cleared while rows go on)
        self.settled = threading.Event()
        #: the batch is recorded in the store under its id
        self.stored = False
        #: why sending stopped before every row was sent (the budget's cap, a cancel)
        self.stopped: str | None = None
        #: the last trouble of a background thread (recorded, shown, never fatal)
        self.problem: str | None = None
        self.cancelled = False
        self._pending: list[RowUpdate] = []
        #: held across taking the queued row changes and writing them, so a flush
        #: returns once every change queued before it is in the store
        self._flush_lock = threading.Lock()

    def tag(self, row: BatchRow) -> str:
        """What a row's create is for, written with its intent in the ledger: the row
        finds its task by it (docs/decisions.md#batch-resume)."""
        return f"batch {self.id} row {row.index} attempt {row.attempt}"

    def waiting(self) -> list[BatchRow]:
        return [r for r in self.rows if r.state == WAITING]

    def update(self, row: BatchRow, state: str, *, release: bool = False) -> None:
        """Change a row (under the lock): queue its store write and its manifest line;
        ``release`` gives back what its reservation held of the budget. A row ended is
        followed again no more."""
        row.state = state
        if state == WAITING:
            self.cursor = min(self.cursor, row.index)
        if state in ENDED:
            row.follow_at = None
            row.ended_at = time.time()
            self.ends.append(time.monotonic())
        self._pending.append(
            RowUpdate(
                row.index,
                state,
                row.request_id,
                row.error,
                [p.name for p in row.files],
                row.attempt if release else None,
            )
        )
        if release:
            for kind, amount in self.charges(row).items():
                self.spent[kind] = self.spent.get(kind, 0.0) - (amount or 0.0)
        if state != SENDING:
            self.manifest.event(row.record(self.out))
        self.dirty = True

    def attach(self, row: BatchRow, job: JobLike, created_at: float | None = None) -> None:
        """Follow a row's task: its end queues the row for the finisher (engine thread:
        a queue put, nothing more), word of it marks the book changed."""
        row.job, row.request_id = job, str(job.request_id)
        row.created_at = created_at if created_at is not None else time.time()
        row.rate_limited = 0
        index = row.index

        def ended(_job: Any) -> None:
            self.ended.put(index)

        def moved(_job: Any) -> None:  # word of the task: contact is back
            row.lost, row.lost_since = 0, None
            self.dirty = True

        job.add_update_callback(moved)
        job.add_done_callback(ended)

    def flush(self) -> None:
        """Write the queued row changes in one transaction (off the engine's thread)."""
        with self._flush_lock:
            with self.lock:
                pending, self._pending = self._pending, []
            if not pending:
                return
            try:
                self.store.settle(self.id, pending)
            except BaseException:  # a locked file: written by the next flush, never lost
                with self.lock:
                    self._pending[:0] = pending
                raise

    def write_all(self, *, force: bool = True) -> None:
        """The store, then the manifest's table, as every row stands now."""
        self.flush()
        with self.lock:
            records = [r.record(self.out) for r in self.rows]
        self.manifest.table(records, force=force)

    def charges(self, row: BatchRow) -> dict[str, float | None]:
        """What a row takes from the budget: every billed kind, and money with prices."""
        units: dict[str, float | None] = dict(row.units)
        if self.plan.budget.prices:
            units["money"] = self.plan.budget.cost(row.endpoint, row.units)
        return units

    def store_batch(self) -> None:
        """Record the batch before anything is confirmed or sent: its id is its own, in
        every process sharing the ledger (another plan under it is refused)."""
        if self.stored:
            return
        description = self.plan.describe()
        taken = self.store.save_batch(
            self.id,
            gateway=self.client.gateway_name,
            endpoint=self.plan.endpoint,
            out=str(self.out or ""),
            digest=self.plan.digest,
            description=description,
            rows=[(r.index, r.endpoint, json.dumps(scrub_payload(r.payload))) for r in self.rows],
        )
        if taken is not None:
            raise id_taken(self.id, taken, description)
        self.stored = True

    def changed(self) -> None:
        """Tell the listeners of every change since the last time, each guarded: a
        broken view never stops a run."""
        self.dirty = False
        for listener in list(self.listeners):
            try:
                listener()
            except Exception:
                log.exception("genwidgets: a listener of %s failed", self.id)

    def pause(self, why: str) -> None:
        """Stop sending (under the lock): creates in flight answer, nothing more leaves
        until the run is asked to go on; ``stopped`` says the rows in doubt. A second
        pause keeps the first one's words."""
        if self.paused is None:
            self.paused = why
            self.stop.set()
            self.say_paused()

    def say_paused(self) -> None:
        """``stopped`` for a pause, with the rows in doubt counted now (under the lock)."""
        doubt = sum(1 for r in self.rows if r.state == UNKNOWN and not r.request_id)
        self.stopped = (
            f"paused: {self.paused}; {doubt} row(s) in doubt (their create's outcome is "
            f"unknown, never sent again). Nothing more is sent until {self.noun}.submit() "
            "(the view's Submit or Go on, or the same command again)"
        )

    def go_on(self) -> None:
        """Asked to send again (under the lock): a pause, a stop or a cancel ends here."""
        self.stopped = None
        self.cancelled = False
        self.paused = None
        self.breaker.count = 0
        self.stop.clear()
