"""A batch at work: rows sent through the one batch sender, followed, written out, kept.

:class:`Batch` is the plain-Python ``gw.batch``: a sender thread takes waiting rows a
chunk at a time, reserves their billed units in the ledger's file (the budget's cap
holds across processes), sends them with ``client.send_many``; a finisher thread
writes each ended row's files into ``out`` with their provenance, the manifest, the
store, and checks each row's deadline. Engine callbacks only queue a row or mark the
batch changed: nothing here waits on the engine while it holds a lock, and no engine
callback waits on a view. Resuming, budgets, files: docs/decisions.md#batches.
"""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._client import created_nothing
from ..errors import RateLimited
from ..jobs.ledger import scrub_payload
from .batch_plan import BatchPlan
from .batch_row import STATUSES, BatchRow
from .batch_store import (
    CREATED,
    ENDED,
    FAILED,
    SENDING,
    UNKNOWN,
    WAITING,
    BatchStore,
    RowUpdate,
)
from .finish import check_deadlines, finish_row
from .manifest import Manifest
from .progress import ENDED_STATUSES, Mode, Progress, Snapshot, interrupted, summed
from .resume import reconcile, show_as_stored

if TYPE_CHECKING:
    from .._protocols import ClientLike, JobLike

__all__ = ["Batch", "display_hook"]

log = logging.getLogger("genwidgets")

#: set by ``genwidgets.widgets.batch`` so a displayed batch draws its live view
display_hook: Callable[[Batch], None] | None = None
#: how often the finisher wakes to check deadlines and tell listeners (seconds)
TICK = 0.25
#: rows ended within this window make the rate (seconds)
RATE_WINDOW = 60.0
#: a row refused for the rate limit this many times in a row is failed
MAX_RATE_LIMITED = 50
#: how long an interrupted wait lets the sender end its chunk (seconds)
STOP_WAIT = 15.0
#: a chunk is this many rounds of ``concurrency`` creates
CHUNK_ROUNDS = 2


class Batch:
    """Rows of data sent as tasks, each followed to its files; see the module docstring
    and ``gw.batch``."""

    def __init__(
        self,
        plan: BatchPlan,
        client: ClientLike,
        *,
        batch_id: str,
        out: Path,
        store: BatchStore,
        concurrency: int,
        timeout: float | None = None,
        on_timeout: str = "cancel",
        needs_confirmation: bool = False,
    ) -> None:
        self.plan = plan
        self.client = client
        self.id = batch_id
        self.out = out
        self.store = store
        self.concurrency = concurrency
        self.timeout = timeout
        self.on_timeout = on_timeout
        self.needs_confirmation = needs_confirmation
        self.rows = [BatchRow(p) for p in plan.rows]
        self.listeners: list[Callable[[], None]] = []
        #: why sending stopped before every row was sent (the budget's cap, a cancel)
        self.stopped: str | None = None
        #: an error that ended the sender or the finisher (raised by :meth:`wait`)
        self.error: BaseException | None = None
        self.manifest = Manifest(out, batch_id)
        self.spent: dict[str, float] = {}
        self._lock = threading.RLock()
        self._ended: queue.SimpleQueue[int] = queue.SimpleQueue()
        self._pending: list[RowUpdate] = []
        self._ends: deque[float] = deque()
        self._sending_since: float | None = None
        self._cursor = 0  # rows before it wait no more
        self._dirty = False
        self._stop = threading.Event()
        self._cancelled = False
        self._settled = threading.Event()
        #: held across taking the queued row changes and writing them, so a flush
        #: returns once every change queued before it is in the store
        self._flush_lock = threading.Lock()
        self._started = False
        self._stored = False
        self._sender: threading.Thread | None = None
        self._finisher: threading.Thread | None = None

    # ------------------------------------------------------------------ the API

    @property
    def endpoint(self) -> str:
        return self.plan.endpoint

    @property
    def started(self) -> bool:
        return self._started

    @property
    def sending(self) -> bool:
        """Whether its sender runs: rows are being reserved and created."""
        sender = self._sender
        return sender is not None and sender.is_alive()

    def submit(self) -> Batch:
        """Send what waits (the plan's confirmation); a second call does nothing more."""
        with self._lock:
            if self._started:
                return self
            self._started = True
        try:
            self._store_batch()
        except BaseException:
            with self._lock:
                self._started = False
            raise
        self._run()
        return self

    def wait(self, timeout: float | None = None, *, progress: Mode = "auto") -> Batch:
        """Block until every row has ended (or, stopped at the budget's cap or by a
        cancel, every sent row). ``TimeoutError`` after ``timeout`` seconds; failed rows
        do not raise. ``progress``: a tqdm bar on a terminal, quiet lines otherwise,
        nothing in a notebook (``"bar"``, ``"lines"``, ``"none"`` choose)."""
        if not self._started:
            raise RuntimeError(
                f"batch {self.id} was not sent (it needs confirmation): call batch.submit()"
            )
        deadline = None if timeout is None else time.monotonic() + timeout
        face = Progress(len(self.rows), mode=progress)
        try:
            while not self.finished:
                if self.error is not None:
                    raise self.error
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise TimeoutError(
                        f"batch {self.id}: {len(self.rows) - self.snapshot().ended} rows had "
                        f"not ended after {timeout:g} s; they go on (wait again)"
                    )
                self._settled.wait(TICK if remaining is None else min(TICK, remaining))
                face.show(self.snapshot())
        except KeyboardInterrupt:
            self._interrupt()
            raise
        finally:
            face.close(self.snapshot())
        if self.error is not None:
            raise self.error
        self._flush()  # the store (gw.batches(), a resume) says what wait() saw
        return self

    def cancel(self) -> int:
        """Stop sending and ask the gateway to cancel every row still running; returns
        how many were asked. Rows never sent stay waiting (a resume sends them)."""
        self._stop.set()
        self._cancelled = True
        with self._lock:
            if self._started and self.stopped is None and self._waiting():
                self.stopped = "cancelled: rows not sent wait"
            running = [r for r in self.rows if r.state == CREATED and r.job is not None]
            for row in running:
                row.user_cancelled = True
        for row in running:
            assert row.job is not None
            row.job.request_cancel()
        self._changed()
        return len(running)

    def retry_failed(self) -> int:
        """Send the failed rows again (a new attempt each, counted by the budget);
        returns how many."""
        with self._lock:
            failed = [r for r in self.rows if r.state == FAILED]
            for row in failed:
                row.error, row.request_id, row.job = None, None, None
                row.files, row.timed_out, row.rate_limited = [], False, 0
                self._update(row, WAITING)  # the manifest's last line of it says so too
            self.stopped = None
        self._flush()
        if failed:
            self._stop.clear()
            self._cancelled = False
            self._started = True
            self._settled.clear()
            self._run()
        return len(failed)

    @property
    def finished(self) -> bool:
        """Every row has ended, or sending stopped and every sent row has ended."""
        with self._lock:
            sending = self._sender is not None and self._sender.is_alive()
            if sending or not self._ended.empty():
                return False
            for row in self.rows:
                if row.state in (SENDING, CREATED):
                    return False
                if row.state == WAITING and self.stopped is None and self._started:
                    return False
            return True

    @property
    def unknown(self) -> list[BatchRow]:
        """Rows whose create went out and whose answer was lost: a task may exist, so
        they are listed, never sent twice."""
        return [r for r in self.rows if r.state == UNKNOWN]

    @property
    def failed(self) -> list[BatchRow]:
        return [r for r in self.rows if r.state == FAILED]

    def counts(self) -> dict[str, int]:
        """Rows per ``row.status``."""
        found = dict.fromkeys(STATUSES, 0)
        for row in self.rows:
            found[row.status] = found.get(row.status, 0) + 1
        return found

    def snapshot(self) -> Snapshot:
        """The batch's progress now (counts, spend, rate, time left)."""
        counts = self.counts()
        now = time.monotonic()
        with self._lock:
            while self._ends and now - self._ends[0] > RATE_WINDOW:
                self._ends.popleft()
            ends = list(self._ends)
            spent = dict(self.spent)
        # rows ended over the last minute, or since sending began when that is shorter
        # (four rows ending together early on are not "16 rows/s")
        since = max(now - RATE_WINDOW, self._sending_since or now)
        rate = len(ends) / (now - since) if len(ends) >= 2 and now - since >= 1.0 else None
        left = len(self.rows) - sum(counts.get(s, 0) for s in ENDED_STATUSES)
        return Snapshot(
            id=self.id,
            total=len(self.rows),
            counts=counts,
            spent=spent,
            billed=summed(self._charges(r) for r in self.rows if r.status == "done"),
            rate=rate,
            eta=left / rate if rate else None,
            stopped=self.stopped,
            finished=self.finished,
            started=self._started,
        )

    def dataframe(self) -> Any:
        """The rows as a pandas DataFrame indexed by row (pandas is optional)."""
        try:
            import pandas as pd  # lazy: optional, and a second or so to import
        except ImportError:
            raise ImportError(
                "batch.dataframe() needs pandas (pip install pandas); batch.rows holds the "
                "same: .index .payload .status .request_id .files .error"
            ) from None
        records = [
            {
                "row": r.index,
                "status": r.status,
                "endpoint": r.endpoint,
                "request_id": r.request_id,
                "files": [str(p) for p in r.files],
                "error": r.error,
                "payload": r.payload,
            }
            for r in self.rows
        ]
        return pd.DataFrame.from_records(records, index="row")

    def describe(self) -> dict[str, Any]:
        """What the batch is: its plan's description, id, folder and counts (no secret)."""
        return {
            "id": self.id,
            "out": str(self.out),
            **self.plan.describe(),
            "counts": self.counts(),
        }

    def __repr__(self) -> str:
        snap = self.snapshot()
        state = snap.line().split(": ", 1)[1] if self._started else "not sent (call .submit())"
        return f"<Batch {self.id} {self.endpoint}: {state}>"

    def _ipython_display_(self) -> None:
        if display_hook is None:
            print(repr(self))
        else:
            display_hook(self)

    # ------------------------------------------------------------------ bookkeeping

    def _changed(self) -> None:
        """Tell the listeners (views), each guarded: a broken view never stops a batch."""
        self._dirty = False
        for listener in list(self.listeners):
            try:
                listener()
            except Exception:
                log.exception("genwidgets: a listener of batch %s failed", self.id)

    def _waiting(self) -> list[BatchRow]:
        return [r for r in self.rows if r.state == WAITING]

    def _update(self, row: BatchRow, state: str, *, release: bool = False) -> None:
        """Change a row (under the lock): queue its store write and its manifest line."""
        row.state = state
        if state == WAITING:
            self._cursor = min(self._cursor, row.index)
        if state in ENDED:
            row.ended_at = time.time()
            self._ends.append(time.monotonic())
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
            for kind, amount in self._charges(row).items():
                self.spent[kind] = self.spent.get(kind, 0.0) - (amount or 0.0)
        if state != SENDING:
            self.manifest.event(row.record(self.out))
        self._dirty = True

    def _flush(self) -> None:
        """Write the queued row changes in one transaction (off the engine's thread)."""
        with self._flush_lock:
            with self._lock:
                pending, self._pending = self._pending, []
            if pending:
                self.store.settle(self.id, pending)

    def _charges(self, row: BatchRow) -> dict[str, float | None]:
        """What a row takes from the budget: every billed kind, and money with prices."""
        units: dict[str, float | None] = dict(row.units)
        cost = self.plan.budget.cost(row.endpoint, row.units)
        if self.plan.budget.prices:
            units["money"] = cost
        return units

    def _store_batch(self) -> None:
        if self._stored:
            return
        self.store.save_batch(
            self.id,
            gateway=self.client.gateway_name,
            endpoint=self.endpoint,
            out=str(self.out),
            digest=self.plan.digest,
            description=self.plan.describe(),
            rows=[(r.index, r.endpoint, json.dumps(scrub_payload(r.payload))) for r in self.rows],
        )
        self._stored = True

    # ------------------------------------------------------------------ threads

    def _run(self) -> None:
        """Start the sender (when rows wait) and the finisher, if not running."""
        with self._lock:
            if self._sending_since is None:
                self._sending_since = time.monotonic()
            if (
                self._waiting()
                and not self._stop.is_set()
                and not (self._sender is not None and self._sender.is_alive())
            ):
                self._sender = threading.Thread(
                    target=self._guarded(self._send_all),
                    name=f"genwidgets-batch-{self.id}",
                    daemon=True,
                )
                self._sender.start()
            self._ensure_finisher()

    def _ensure_finisher(self) -> None:
        with self._lock:
            if self._finisher is None or not self._finisher.is_alive():
                self._settled.clear()
                self._finisher = threading.Thread(
                    target=self._guarded(self._finish_all),
                    name=f"genwidgets-batch-{self.id}-files",
                    daemon=True,
                )
                self._finisher.start()

    def _guarded(self, work: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                work()
            except BaseException as exc:  # said by wait(); the batch's record stays true
                log.exception("genwidgets: batch %s stopped", self.id)
                self.error = exc
                self._settled.set()

        return run

    def _interrupt(self) -> None:
        """Ctrl-C in :meth:`wait`: stop creating, let the chunk in flight answer, keep
        the record; the tasks created go on (a resume re-attaches them)."""
        self._stop.set()
        with self._lock:
            if self.stopped is None:
                self.stopped = interrupted(waiting=bool(self._waiting()))
        sender = self._sender
        if sender is not None and sender is not threading.current_thread():
            with contextlib.suppress(BaseException):
                sender.join(STOP_WAIT)
        with contextlib.suppress(BaseException):
            self._flush()
            self.manifest.table([r.record(self.out) for r in self.rows], force=True)

    # ------------------------------------------------------------------ sending

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
            self.client.send_many(prepared, concurrency=self.concurrency, on_sent=on_sent)
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
                if isinstance(outcome, RateLimited) and row.rate_limited < MAX_RATE_LIMITED:
                    row.rate_limited += 1
                    self._update(row, WAITING, release=True)  # nothing made: it goes again
                elif created_nothing(outcome):
                    row.error = text
                    self._update(row, FAILED, release=True)
                else:
                    row.error = f"outcome unknown: {type(outcome).__name__}: {outcome}"
                    self._update(row, UNKNOWN)
                return
            self._attach(row, outcome)
            self._update(row, CREATED)

    def _attach(self, row: BatchRow, job: JobLike, created_at: float | None = None) -> None:
        """Follow a row's task: its end queues the row for the finisher (engine thread:
        a queue put, nothing more), its changes mark the batch changed."""
        row.job, row.request_id = job, str(job.request_id)
        row.created_at = created_at if created_at is not None else time.time()
        row.rate_limited = 0
        index = row.index

        def ended(_job: Any) -> None:
            self._ended.put(index)

        def moved(_job: Any) -> None:
            self._dirty = True

        job.add_update_callback(moved)
        job.add_done_callback(ended)

    # ------------------------------------------------------------------ finishing

    def _finish_all(self) -> None:
        """The finisher thread: ended rows' files, then at most every :data:`TICK` the
        work that reads every row (deadlines, store, manifest table, listeners, the end)."""
        due = 0.0
        while True:
            try:
                index = self._ended.get(timeout=TICK)
            except queue.Empty:
                index = None
            if index is not None:
                finish_row(self, self.rows[index])
            if index is not None and time.monotonic() < due:
                continue  # more rows may have ended: their files first
            due = time.monotonic() + TICK
            check_deadlines(self)
            self._flush()
            if self.manifest.due():
                self.manifest.table([r.record(self.out) for r in self.rows])
            if self._dirty:
                self._changed()
            sender = self._sender
            if self._ended.empty() and not (sender and sender.is_alive()) and self.finished:
                break
        self._flush()
        self.manifest.table([r.record(self.out) for r in self.rows], force=True)
        self._settled.set()
        self._changed()

    # ------------------------------------------------------------------ resuming

    def _reconcile(self, rows: Sequence[BatchRow]) -> None:
        """Rows reserved whose create's answer this process did not see: what the
        ledger says of each (see :mod:`.resume`)."""
        reconcile(self, rows)
