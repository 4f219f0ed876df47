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

from ..jobs.ledger import scrub_payload
from .batch_plan import BatchPlan
from .batch_row import ENDED_STATUSES, STATUSES, BatchRow
from .batch_send import Sending
from .batch_store import (
    CREATED,
    ENDED,
    FAILED,
    PENDING,
    SENDING,
    UNKNOWN,
    WAITING,
    BatchStore,
    RowUpdate,
    id_taken,
)
from .finish import check_deadlines, finish_row, write_files
from .manifest import Manifest
from .progress import Mode, Progress, Snapshot, interrupted, summed
from .resume import reconcile

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
#: how long an interrupted wait lets the sender end its chunk (seconds)
STOP_WAIT = 15.0


class Batch(Sending):
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
        #: why sending paused (creates failing in a row, the sender's error); set, the
        #: batch sends nothing more until :meth:`submit`
        self.paused: str | None = None
        #: the last trouble of a background thread (recorded, shown, never fatal)
        self.problem: str | None = None
        self._doubtful = 0  # creates in a row that failed and may have billed
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
        """Send what waits (the plan's confirmation, or going on after a pause); a
        second call does nothing more."""
        with self._lock:
            if self._started and self.paused is None:
                return self
            if self.paused is not None:  # asked to go on: the pause ends here
                self.paused = self.stopped = None
                self._doubtful = 0
                self._stop.clear()
                self._settled.clear()
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
        self._final_write()  # the store and both manifests say what wait() saw
        if self.error is not None:
            raise self.error
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
            if failed:  # an ask to send: a pause or a stop ends with it, never without
                self.stopped = self.paused = None
                self._doubtful = 0
        self._flush()
        if failed:
            self._stop.clear()
            self._cancelled = False
            self._started = True
            self._settled.clear()
            self._run()
        return len(failed)

    def write_files(self) -> int:
        """Write the files of rows done at the gateway whose files could not be written
        (``files pending``: a read-only folder, a full disk), from their kept outputs,
        with no new create; returns how many are done now."""
        with self._lock:
            pending = [r for r in self.rows if r.state == PENDING]
        written = write_files(self, pending)
        self._ensure_finisher()  # a row polled again is finished by it
        self._final_write()
        return written

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
        ended = sum(counts[s] for s in ENDED_STATUSES)
        left = len(self.rows) - ended
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
            problem=self.problem or self.manifest.problem,
            paused=self.paused is not None,
        )

    def dataframe(self) -> Any:
        """The rows as a pandas DataFrame indexed by row (pandas is optional). ``files``
        names each file relative to ``batch.out`` (as ``manifest.csv`` does), so a printed
        frame names no folder of this machine: ``batch.out / name`` opens one, and
        ``frame.attrs["out"]`` is that folder (docs/decisions.md#shown-paths)."""
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
                "files": r.file_names(self.out),
                "error": r.error,
                "payload": r.payload,
            }
            for r in self.rows
        ]
        frame = pd.DataFrame.from_records(records, index="row")
        frame.attrs["out"] = self.out  # files are named relative to it
        return frame

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

    def _trouble(self, what: str, exc: BaseException) -> None:
        """A background thread's error: recorded, logged once, shown; the run goes on."""
        text = f"{what}: {type(exc).__name__}: {exc}"
        if text != self.problem:
            log.warning("genwidgets: batch %s: %s", self.id, text)
        self.problem = text
        self._dirty = True

    def _pause(self, why: str) -> None:
        """Stop sending (under the lock): creates in flight answer, nothing more leaves
        until :meth:`submit`."""
        if self.paused is not None:
            return
        self.paused = why
        self._say_paused()
        self._stop.set()

    def _say_paused(self) -> None:
        """``stopped`` for a pause, with the rows in doubt counted now (under the lock)."""
        doubt = sum(1 for r in self.rows if r.state == UNKNOWN and not r.request_id)
        self.stopped = (
            f"paused: {self.paused}; {doubt} row(s) in doubt (their create's outcome is "
            "unknown, never sent again). Nothing more is sent until batch.submit() (the "
            "view's Submit, or the same command again)"
        )

    def _final_write(self) -> None:
        """The store and both manifests, written once every row's last change is in:
        after the finisher's last pass (bounded), then here, whatever it managed."""
        finisher = self._finisher
        if finisher is not None and finisher is not threading.current_thread():
            finisher.join(STOP_WAIT)
        with self._lock:
            records = [r.record(self.out) for r in self.rows]
        self._flush()
        self.manifest.table(records, force=True)

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
        """Record the batch before anything is confirmed or sent: its id is its own, in
        every process sharing the ledger (another plan under it is refused)."""
        if self._stored:
            return
        taken = self.store.save_batch(
            self.id,
            gateway=self.client.gateway_name,
            endpoint=self.endpoint,
            out=str(self.out),
            digest=self.plan.digest,
            description=self.plan.describe(),
            rows=[(r.index, r.endpoint, json.dumps(scrub_payload(r.payload))) for r in self.rows],
        )
        if taken is not None:
            raise id_taken(self.id, taken, self.plan.describe())
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
                    target=self._guarded_sender,
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
                    target=self._finish_all,
                    name=f"genwidgets-batch-{self.id}-files",
                    daemon=True,
                )
                self._finisher.start()

    def _guarded_sender(self) -> None:
        """The sender: an error pauses the batch with its words (rows reserved and not
        answered are settled as a resume would), never a silent end."""
        try:
            self._send_all()
        except Exception as exc:
            self._trouble("sending", exc)
            with self._lock:
                self._pause(f"sending stopped on {type(exc).__name__}: {exc}")
                stuck = [r for r in self.rows if r.state == SENDING]
            with contextlib.suppress(Exception):
                if stuck:
                    self._reconcile(stuck)
            self._ensure_finisher()

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

    def _attach(self, row: BatchRow, job: JobLike, created_at: float | None = None) -> None:
        """Follow a row's task: its end queues the row for the finisher (engine thread:
        a queue put, nothing more), its changes mark the batch changed."""
        row.job, row.request_id = job, str(job.request_id)
        row.created_at = created_at if created_at is not None else time.time()
        row.rate_limited = 0
        index = row.index

        def ended(_job: Any) -> None:
            self._ended.put(index)

        def moved(_job: Any) -> None:  # word of the task: contact is back
            row.lost, row.lost_since = 0, None
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
            try:
                if index is not None:
                    self._finish_one(self.rows[index])
                if index is not None and time.monotonic() < due:
                    continue  # more rows may have ended: their files first
                due = time.monotonic() + TICK
                check_deadlines(self)
                self._flush()
                if self.manifest.due():
                    self.manifest.table([r.record(self.out) for r in self.rows])
                if self._dirty:
                    self._changed()
            except Exception as exc:  # recorded and shown; the rows go on
                self._trouble("finishing rows", exc)
            sender = self._sender
            if self._ended.empty() and not (sender and sender.is_alive()) and self.finished:
                break
        try:
            self._flush()
            self.manifest.table([r.record(self.out) for r in self.rows], force=True)
        except Exception as exc:
            self._trouble("writing the batch's record", exc)
        self._settled.set()
        self._changed()

    def _finish_one(self, row: BatchRow) -> None:
        """One ended row; an error of ours leaves it ``unknown`` with its request id (a
        resume re-attaches it), never followed forever nor failed."""
        try:
            finish_row(self, row)
        except Exception as exc:
            with self._lock:
                if row.state == CREATED:
                    row.error = (
                        f"not finished here ({type(exc).__name__}: {exc}); running the "
                        "batch again re-attaches its task"
                    )
                    self._update(row, UNKNOWN)
            raise

    # ------------------------------------------------------------------ resuming

    def _reconcile(self, rows: Sequence[BatchRow]) -> None:
        """Rows reserved whose create's answer this process did not see: what the
        ledger says of each (see :mod:`.resume`)."""
        reconcile(self, rows)
