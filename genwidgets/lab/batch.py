"""A batch at work: a run's rows and the one place a row's state changes, and what it
is written to; its sender (chunks reserved, created through ``client.send_many``, the
breaker) runs on one of the package's worker threads, its finisher (files written,
failures said by meaning, lost contact followed again, deadlines kept) on another, and
a resume changes rows only through it. A grid (``lab/run.GridRun``) is one too. Who
does what, and why no lock is held while waiting on the engine: docs/decisions.md#batches,
docs/decisions.md#batch-row-book, docs/decisions.md#batch-row-states.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import queue
import sqlite3
import threading
import time
import warnings
from collections import Counter, deque
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._client import create_failure, created_nothing, lost_contact
from .._workers import RUNS, Work
from ..errors import (
    ClientClosed,
    GatewayError,
    GenwidgetsError,
    LedgerError,
    LedgerWarning,
    ModelNotAllowed,
    NoAnswer,
    NotRecorded,
    OutcomeUnknown,
    PayloadError,
    RateLimited,
    RequestNotFound,
    ResultMissing,
    ServerError,
    Unauthorized,
    Unreachable,
    words_of,
)
from ..jobs.job import kept_cancel, poll_failed_since
from ..jobs.ledger import NOT_CREATED, scrub_payload
from ..jobs.ledger.file import read_only
from ..jobs.ledger.writer import is_disk_fault
from ..protocol.records import says_cancelled
from .batch_plan import BatchPlan
from .batch_row import ENDED_STATUSES, STATUSES, BatchRow
from .batch_store import (
    CANCELLED,
    CREATED,
    DONE,
    ENDED,
    FAILED,
    LEFT,
    PENDING,
    SENDING,
    TIMED_OUT,
    UNKNOWN,
    WAITING,
    BatchStore,
    RowRecord,
    RowUpdate,
    id_taken,
    unrecorded,
)
from .budget import summed
from .cost import CONFIRM_ABOVE
from .manifest import Manifest, read_manifest
from .outfiles import write_outputs
from .progress import Mode, Progress, Snapshot

if TYPE_CHECKING:
    from typing_extensions import Self

    from .._protocols import ClientLike, JobLike
    from ..jobs.ledger import LedgerRow
    from ..protocol.records import Result
    from .plan import GridPlan

__all__ = [
    "BREAKER_AFTER",
    "CHUNK_ROUNDS",
    "CONTACT_PATIENCE",
    "MAX_RATE_LIMITED",
    "Batch",
    "display_hook",
]

log = logging.getLogger("genwidgets")

#: creates failing in a row in a way that may have billed (a 5xx, no answer, no
#: contact) before the run pauses (docs/decisions.md#circuit-breaker)
BREAKER_AFTER = 5
#: a row refused for the rate limit this many times in a row is failed
MAX_RATE_LIMITED = 50
#: a chunk is this many rounds of ``concurrency`` creates
CHUNK_ROUNDS = 2
#: with no ``timeout``, how long a row keeps following a task it lost contact with
CONTACT_PATIENCE = 900.0
#: how long a row's cancel (past its ``timeout``, or a person's) has to end its task before
#: the row is left running (the spec does not say what a cancel does: a gateway may
#: accept it and go on)
CANCEL_GRACE = 30.0
#: the first wait before following a lost task again, doubled each time (seconds)
FOLLOW_BACKOFF = 2.0
FOLLOW_BACKOFF_MAX = 60.0
#: how a lost row's ``error`` ends while it is followed again
FOLLOWING_AGAIN = "; following it again (no new create)"
#: how the ``error`` of a row given up ``unknown`` with its request id ends
RERUN = "Running the batch again re-attaches it (no new create)"
#: how a row's words begin when the gateway answered 404 for its task (restarted, or past
#: its retention): ``unknown``, never ``failed`` (docs/decisions.md#batch-row-states)
FORGOTTEN = "the gateway no longer knows its task"
#: set by ``genwidgets.widgets.batch_view`` so a displayed batch draws its live view
display_hook: Callable[[Batch], None] | None = None
#: failures of a cancel or a poll that say contact is lost (a 5xx, no answer)
NO_CONTACT = (ServerError, NoAnswer)
#: how often the finisher wakes to check deadlines and tell listeners (seconds)
TICK = 0.25
#: rows ended within this window make the rate (seconds)
RATE_WINDOW = 60.0
#: how long an interrupted wait lets the sender end its chunk (seconds)
STOP_WAIT = 15.0


def not_sent_for(refused: Exception) -> str | None:
    """Why a create that certainly made nothing was not the row's fault, in words: no
    contact, the key refused, a rate limit past patience; running again can send it, so
    the row waits (docs/decisions.md#batch-row-states). None: refused as invalid (a 4xx
    about the request), which running again would not change: ``failed``."""
    if isinstance(refused, Unreachable):
        return "the gateway could not be reached"
    if isinstance(refused, ClientClosed):
        return "its client was closed before it left"
    if isinstance(refused, NotRecorded):
        return "the home could not record its intent first"
    if isinstance(refused, (Unauthorized, ModelNotAllowed)) or (
        isinstance(refused, GatewayError) and refused.status_code == 403
    ):
        return "the gateway refused this API key"
    if isinstance(refused, RateLimited):
        return f"refused for the gateway's rate limit {MAX_RATE_LIMITED} times in a row"
    return None


def _cancel_refused(job: object) -> str | None:
    """The gateway's refusal of a job's cancel ("too late" to a task running: it bills to
    its end), in its words; None when none was refused (taken, kept, or none asked)."""
    error = getattr(job, "cancel_error", None)
    if error is None or getattr(job, "cancel_requested", True) or kept_cancel(job) is not None:
        return None
    return str(error)


def _said_ended(job: object) -> bool:
    """Whether a job's last status said its task ended (its result alone is left to
    read): such a task neither runs nor bills on, whatever became of its result."""
    status = getattr(job, "last_status", None)
    return status is not None and bool(status.done)


class Batch:
    """Rows of data sent as tasks, each followed to its files; see the module docstring
    and ``gw.batch``."""

    #: what a person calls this run, in its messages
    noun = "batch"
    #: what a person calls one of its rows
    unit = "row"
    #: a grid's (``GridRun``) is its own, and it has no folder
    plan: BatchPlan
    out: Path
    #: whether it waits for :meth:`submit` (billed above ``confirm_above``)
    needs_confirmation = False
    #: billed generations above which it waits for :meth:`submit` (``gw.batch``'s)
    confirm_above = CONFIRM_ABOVE
    #: whether its plan was confirmed (sent, or sending)
    started = False
    #: how :meth:`wait` shows its progress unless told (a grid's view shows its own)
    wait_progress: Mode = "auto"
    _sending_since: float | None = None
    _sender: Work | None = None
    _finisher: Work | None = None
    #: a sender runs and has not yet decided to end (set and cleared under the lock)
    _sender_on = False
    #: rows were asked to be sent while it ran: it looks for them again before it ends
    _send_again = False

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
        #: creates failing in a row (in the order they left) in a way that may have
        #: billed: the breaker's count, kept on the engine as each create answers
        #: (:meth:`_count_answer`)
        self.failing = 0
        #: the failure that brought ``failing`` to :data:`BREAKER_AFTER` (its pause's words)
        self.tripped_by: Exception | None = None
        #: creates given to ``send_many`` so far: each one's place in the order they left
        self._places = 0
        #: the places of the failures counted (each: whether it may have billed), and of
        #: the last create that made its task
        self._failed_at: dict[int, bool] = {}
        self._made_at = -1
        self.plan = plan  # type: ignore[assignment]  # a grid's in a GridRun
        self.client = client
        self.id = batch_id
        self.out = out  # type: ignore[assignment]  # None in a GridRun
        self.store = store
        self.timeout = timeout
        self.on_timeout = on_timeout
        #: creates in flight at once
        self.concurrency = concurrency
        # the embedded simulator bills nothing: its rows' next steps say "free"
        free = bool(getattr(client, "embedded", False))
        self.rows = [BatchRow(p, free=free) for p in plan.rows]
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
        #: the problem is the store's (a write refused): a flush that writes clears it
        self._store_problem = False
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
        row.state, row.elsewhere = state, False  # changed here: this process's own
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
                row.attempt,  # learnt of this attempt: never written over a later one
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
        a queue put, nothing more), word of it marks the book changed. A new task starts
        the row's deadline (``created_at``); its task followed again by a new job keeps
        it, and a cancel asked of the task (a deadline's or a person's) is asked of the
        new job at once, its grace counting anew; one the gateway took is not asked again,
        and keeps its grace while the row is out of contact (docs/decisions.md#batch-progress)."""
        same_task = row.request_id == str(job.request_id) and row.created_at is not None
        old = row.job
        asked_before = row.cancel_asked_at
        row.job, row.request_id = job, str(job.request_id)
        row.rate_limited = 0
        row.cancel_asked_at, row.word_at_cancel = None, None
        if not same_task:
            row.created_at = created_at if created_at is not None else time.time()
            row.timed_out = row.cancel_taken = False
        deadline = row.timed_out and self.on_timeout == "cancel"
        if (row.user_cancelled or deadline) and not job.done():  # it holds for the task
            taken = getattr(old, "cancel_taken", False)  # answered: not one on its way
            row.cancel_taken = same_task and (row.cancel_taken or taken)
            row.cancel_asked_at = time.time()
            row.word_at_cancel = job.last_status if deadline else None
            if not row.cancel_taken:
                job.request_cancel()
            elif asked_before is not None and row.lost:  # followed while out of contact:
                row.cancel_asked_at = asked_before  # its grace counts from when it was asked
        index = row.index

        def ended(_job: Any) -> None:
            self.ended.put(index)
            if self.settled.is_set():  # a row left running ended after the finisher did
                RUNS.submit(self._finish_late)

        heard = [job.last_status]

        def moved(changed: Any) -> None:
            # a new status answer is word of the task: contact is back. A job's end for
            # lost contact (or its cancel) tells its callbacks too, and is no word: the
            # row's loss counts on and its follow-ups back off
            if changed.last_status is not heard[0]:
                heard[0] = changed.last_status
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
                stale = self.store.settle(self.id, pending)
            except BaseException:  # a locked file: written by the next flush, never lost
                with self.lock:
                    self._pending[:0] = pending
                raise
            refused = {id(u) for u in stale}
            with self.lock:  # as the store holds them now: another's later change shows
                for change in pending:
                    if id(change) not in refused:
                        self.rows[change.index].synced = change.state
            if stale:
                self.reread_stale(stale)
            with self.lock:
                if self._store_problem:  # written now: the store's trouble is over
                    self.problem, self._store_problem, self.dirty = None, False, True

    def flush_when_it_can(self) -> None:
        """Flush while a stored run is re-opened: a store that cannot be written now (a
        full or read-only home, a lock held past its wait) keeps the changes queued for a
        later flush and is said once, as a :class:`LedgerWarning`, so the run is still
        shown, its ratings read and exported from what is stored
        (decisions#ledger-locked-resume)."""
        try:
            self.flush()
        except LedgerError as exc:
            if self.problem is None:
                warnings.warn(
                    f"genwidgets: {self.noun} {self.id} is shown from its store, which "
                    f"cannot be written now ({exc}); its changes are written once it can be",
                    LedgerWarning,
                    stacklevel=4,
                )
            self.problem, self.dirty = f"store not written: {exc}", True
            self._store_problem = True

    def write_all(self, *, force: bool = True) -> None:
        """The store, then the manifest's table, as every row stands now (a row another
        process holds, as the store has it now: never from this process's older view;
        ``force``, a last write: every row another process changed since, too)."""
        self.flush()
        self.reread_elsewhere()
        if force:
            self.reread_touched()
        with self.lock:
            records = [r.record(self.out) for r in self.rows]
        self.manifest.table(records, force=force)

    def charges(self, row: BatchRow) -> dict[str, float | None]:
        """What a row takes from the budget: every billed kind, and money with prices."""
        return self.plan.budget.charges(row.endpoint, row.units)

    def store_batch(self) -> None:
        """Record the batch before anything is confirmed or sent: its id is its own, in
        every process sharing the ledger (another plan under it is refused). A home that
        cannot be written (read-only, a full disk) refuses it in words that say so, that
        nothing was sent, and what to do (the store's error came out of sqlite's
        internals: docs/decisions.md#grid-run)."""
        if self.stored:
            return
        description = self.plan.describe()
        try:
            taken = self.store.save_batch(
                self.id,
                gateway=self.client.gateway_name,
                endpoint=self.plan.endpoint,
                out=str(self.out or ""),
                digest=self.plan.digest,
                description=description,
                rows=[
                    (r.index, r.endpoint, json.dumps(scrub_payload(r.payload))) for r in self.rows
                ],
            )
        except LedgerError as exc:
            fault = exc.__cause__ or exc.__context__
            if not isinstance(fault, sqlite3.Error) or not (
                is_disk_fault(fault) or read_only(fault)
            ):
                raise
            raise unrecorded(self.noun, self.id, str(fault), self.store.path) from None
        if taken is not None:
            differing = self.store.row_differing(self.id, [r.planned for r in self.rows])
            raise id_taken(self.id, taken, description, differing)
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
        doubt = sum(r.state == UNKNOWN and not (r.request_id or r.elsewhere) for r in self.rows)
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
        self.failing, self.tripped_by = 0, None
        self._failed_at = {}
        self.stop.clear()

    def cancel_created(self, rows: Iterable[BatchRow]) -> int:
        """Ask the gateway to cancel the tasks of those ``rows`` that are running, each
        marked cancelled by the user (its end is not the gateway's failure); returns how
        many were asked."""
        with self.lock:
            running = [r for r in rows if r.state == CREATED and r.job is not None]
            for row in running:
                row.user_cancelled = True
                row.cancel_asked_at = row.cancel_asked_at or time.time()
        for row in running:
            assert row.job is not None
            row.job.request_cancel()
        return len(running)

    # ------------------------------------------------------------------ sending

    def _next_chunk(self) -> list[BatchRow]:
        """The next rows to send: two rounds of ``concurrency``, so the sender's own work
        between chunks is paid half as often (docs/decisions.md#batches). Rows before the
        book's ``cursor`` wait no more (a row given back moves it back)."""
        size = CHUNK_ROUNDS * self.concurrency
        with self.lock:
            while self.cursor < len(self.rows) and self.rows[self.cursor].state != WAITING:
                self.cursor += 1
            waiting = (row for row in self.rows[self.cursor :] if row.state == WAITING)
            return list(itertools.islice(waiting, size))

    def send_all(self) -> None:
        """The sender: chunks of waiting rows, each reserved, then sent, until none waits,
        the budget's cap is reached, or its ``stop`` is set."""
        caps = self.plan.budget.caps
        while not self.stop.is_set():
            chunk = self._next_chunk()
            if not chunk:
                break
            self.flush()  # rows given back (a rate limit) are waiting in the store too
            reserved = self.store.reserve(
                self.id, [(r.index, self.charges(r)) for r in chunk], caps
            )
            by_index = {r.index: r for r in chunk}
            with self.lock:
                self.spent = reserved.spent
                for index, attempt in reserved.taken:
                    row = by_index[index]
                    row.state, row.attempt, row.reserved_at = SENDING, attempt, time.time()
                    row.synced = SENDING
                if reserved.capped:
                    shown = ", ".join(
                        f"{self.spent.get(k, 0):g} of {v:g} {k}" for k, v in caps.items()
                    )
                    self.stopped = f"stopped at the budget's cap ({shown}); rows not sent wait"
            if reserved.elsewhere:  # another process sending this batch took them first
                stored = {r.index: r for r in self.store.rows(self.id, reserved.elsewhere)}
                with self.lock:
                    for index in reserved.elsewhere:
                        self.show_as_stored(by_index[index], stored.get(index))
            if reserved.taken:
                self._send([by_index[i] for i, _ in reserved.taken])
            with self.lock:
                self._heed_breaker()  # counted on the engine, whatever this thread heard
                if self.paused is not None:  # the chunk's late answers are counted in it
                    self.say_paused()
            self.dirty = True  # the finisher writes the store and tells the views
            if reserved.capped:
                break
        self.flush()

    def _send(self, rows: list[BatchRow]) -> None:
        """One chunk of rows through ``client.send_many``: each prepared once (at planning
        when the plan had the client; one that cannot be is settled with why, and not
        sent), each answer settling its row as it arrives; rows whose answer an interrupt
        kept from being seen are reconciled with the ledger by their tags."""
        ready: list[tuple[BatchRow, Any]] = []
        for row in rows:
            prepared = row.planned.prepared
            try:
                if prepared is None:
                    prepared = self.client.prepare(row.endpoint, row.payload)
            except Exception as exc:  # one bad row must not stop the others; nothing left
                if not isinstance(exc, PayloadError):
                    exc = PayloadError(f"it could not be prepared: {exc}", endpoint=row.endpoint)
                self._sent(row, exc)
            else:
                ready.append((row, prepared))
        answered: set[int] = set()

        def on_sent(i: int, outcome: Any) -> None:
            answered.add(i)
            self._sent(ready[i][0], outcome)

        first, self._places = self._places, self._places + len(ready)

        def on_answer(i: int, outcome: Any) -> None:  # on the engine
            self._count_answer(first + i, outcome)

        try:
            self.client.send_many(
                [prepared for _, prepared in ready],
                concurrency=self.concurrency,
                on_sent=on_sent,
                hold=self._held,
                tags=[self.tag(row) for row, _ in ready],
                on_answer=on_answer,
            )
        finally:
            missing = [row for i, (row, _) in enumerate(ready) if i not in answered]
            if missing:
                self.reconcile(missing)
            for row in rows:  # sent: a retry prepares again (the payload is kept)
                row.planned.prepared = None
        if self.cancelled:  # cancelled while this chunk was in flight
            self.cancel_created(r for r in rows if not r.user_cancelled)

    def _held(self) -> bool:
        """``send_many``'s ``hold``, asked on the engine as each create takes its slot: a
        stop, or the breaker's count at its threshold (counted there, so the create after
        the fifth failure is held, however late this thread hears the answers)."""
        return self.stop.is_set() or self.failing >= BREAKER_AFTER

    def _count_answer(self, place: int, outcome: Any) -> None:
        """The breaker's count, on the engine as each create answers and before its slot
        goes to the next (docs/decisions.md#circuit-breaker), in the order the creates
        left (``place``): a task made ends the run of the failures that left before it (a
        create sent earlier that made its task says nothing of those sent since); a 5xx, a
        lost answer or no contact adds to it (the gateway is in trouble, so the next
        create may bill for nothing too); a refusal (the row's own) or a create held back
        neither. At the threshold it holds until asked to go on (``go_on``)."""
        if self.failing >= BREAKER_AFTER:
            return
        if not isinstance(outcome, Exception):
            self._made_at = max(self._made_at, place)
            self._failed_at = {p: b for p, b in self._failed_at.items() if p > place}
        elif (
            place > self._made_at
            and not (isinstance(outcome, Unreachable) and self.stop.is_set())
            and (
                not created_nothing(outcome)
                or isinstance(outcome, (OutcomeUnknown, ServerError, Unreachable))
            )
        ):
            self._failed_at[place] = not created_nothing(outcome)
            if len(self._failed_at) >= BREAKER_AFTER:
                self.tripped_by = outcome.with_traceback(None)
        self.failing = len(self._failed_at)

    def _heed_breaker(self) -> None:
        """Pause once the engine's count reached the threshold (under the lock), in words
        saying what the rows say: creates that could not reach the gateway made nothing,
        those that may have billed are said so, and the failure that reached it."""
        last = self.tripped_by
        if self.failing < BREAKER_AFTER or last is None:
            return
        billed = sum(self._failed_at.values())
        shown = words_of(last)
        if not billed:
            how = f"could not reach the gateway (nothing was made; the last: {shown})"
        elif billed == self.failing:
            how = f"failed in a way that may have billed (the last: {shown})"
        else:
            how = (
                f"failed: {billed} in a way that may have billed, the others could not "
                f"reach the gateway (nothing made; the last: {shown})"
            )
        self.pause(f"{self.failing} creates in a row {how}")

    def _sent(self, row: BatchRow, outcome: Any) -> None:
        with self.lock:
            self._heed_breaker()  # first: the creates it held back are seen as held
            if isinstance(outcome, Exception):
                # held back (nothing sent) while the batch stops or pauses: it waits again
                held = isinstance(outcome, Unreachable) and self.stop.is_set()
                if held or (
                    isinstance(outcome, RateLimited) and row.rate_limited < MAX_RATE_LIMITED
                ):
                    row.rate_limited += not held
                    self.update(row, WAITING, release=True)  # nothing made: it goes again
                    return
                nothing = created_nothing(outcome)  # its units go back; else it may have billed
                # kept for a sweep's card; its traceback let go (it holds the sender's frames)
                row.exception = outcome.with_traceback(None)
                why = not_sent_for(outcome) if nothing else None
                if why is None:  # the row's own refusal, or a create that may have billed
                    row.error = create_failure(outcome)
                    self.update(row, FAILED if nothing else UNKNOWN, release=nothing)
                    return
                # not the row's fault: it waits for a run that can send it
                row.error = (
                    f"not sent: {why} ({words_of(outcome)}); nothing was "
                    "made, so it waits to be sent again"
                )
                row.rate_limited = 0
                self.update(row, WAITING, release=True)
                if not isinstance(outcome, Unreachable):  # the breaker counts lost contact
                    self.pause(f"a create was not sent: {why} ({outcome})")
                return
            row.error = row.exception = None  # a reason it waited is past
            self.attach(row, outcome)
            self.update(row, CREATED)

    # ------------------------------------------------------------------ finishing

    def finish_row(self, row: BatchRow) -> None:
        """A row's task ended (or its following did): sort it by what ended it."""
        job = row.job
        if job is None or row.state not in (CREATED, LEFT, PENDING):
            return
        result = job.last_result
        error = ""
        if result is None and lost_contact(job):
            lost = job.exception()
            assert lost is not None
            if _said_ended(job):  # only its result was not read: nothing to follow
                with self.lock:
                    self._result_unread(row, lost)
                return
            self._lost_contact(row, words_of(lost))
            return
        if result is None:
            try:
                result = job.result(timeout=0)
            except ClientClosed as exc:
                with self.lock:
                    self._unknown(row, f"contact lost: its client was closed ({words_of(exc)})")
                return
            except RequestNotFound as exc:  # made (a request id): it may have run and billed
                if not getattr(self.client, "embedded", False):
                    with self.lock:
                        row.error = (
                            f"{FORGOTTEN} (restarted, or past its retention: {exc}): it may "
                            "have run and billed, so it is not sent again (retry_failed() "
                            "leaves it); look for it with client.history()"
                        )
                        self.update(row, UNKNOWN)
                    return
                error = (
                    "made by the embedded simulator of a process that has ended: it cannot "
                    "be resumed; retry_failed() (genwidgets batch --retry-failed) makes it "
                    "again, free on the simulator"
                )
            except Exception as exc:  # an odd end
                error = words_of(exc)
        if result is not None and result.ok:
            self._write(row, result)
            return
        if result is not None:
            kind = f"{result.error_type}: " if result.error_type else ""
            error = f"{kind}{result.error or result.status}"
        with self.lock:
            if row.timed_out:
                row.error = (
                    f"timed out after {self.timeout:g} s; cancelled at the gateway ({error})"
                )
                self.update(row, TIMED_OUT)
            else:  # cancelled (by a deadline or a person) is not the gateway's failure
                cancelled = row.user_cancelled or (
                    result is not None and says_cancelled(result.status, result.error_type)
                )
                row.error = error
                self.update(row, CANCELLED if cancelled else FAILED)

    def _write(self, row: BatchRow, result: Result) -> None:
        """A task done: its files into the batch's folder, or ``files pending`` (the task is
        paid and its outputs are kept: never created again for want of a folder). A grid
        has no folder: its outputs are the ledger's."""
        files: list[Path] = []
        if self.out is not None:
            try:
                files = write_outputs(
                    self.out,
                    row.planned.stem,
                    list(result.outputs),
                    own={p.name for p in row.files},
                    batch=self.id,
                    row=row.index,
                    endpoint=row.endpoint,
                    request_id=row.request_id,
                    payload=row.payload,
                )
            except (OSError, GenwidgetsError, ValueError) as exc:
                with self.lock:
                    row.error = (
                        f"done at the gateway; its files were not written: {words_of(exc)}"
                    )
                    self.update(row, PENDING)
                return
        with self.lock:
            row.files, row.error = files, None
            self.update(row, DONE)

    def _lost_contact(self, row: BatchRow, why: str) -> None:
        """Polling gave up without word of the task: follow it again after a backoff, until
        the row's deadline; then ``unknown``, its request id kept for a resume. A row whose
        ``timeout`` passed before its cancel was asked is followed again at once instead:
        :meth:`check_deadlines` asks its cancel first; one whose deadline's cancel is on its
        way or was taken (not failed) is followed again within the cancel's grace: the task
        may be cancelled, and the gateway answered."""
        now = time.time()
        with self.lock:
            row.lost += 1
            row.lost_since = row.lost_since or now
            deadline = self._deadline(row)
            cancel_due = deadline is not None and self.on_timeout == "cancel" and not row.timed_out
            if deadline is None:
                deadline = row.lost_since + CONTACT_PATIENCE
            asked = row.cancel_asked_at
            on_its_way = getattr(row.job, "cancel_requested", False) and (
                getattr(row.job, "cancel_error", None) is None
            )
            if row.timed_out and asked is not None and (on_its_way or row.cancel_taken):
                # its cancel is on its way or was taken: followed again within its grace
                deadline = max(deadline, asked + CANCEL_GRACE)
            if now >= deadline and not cancel_due:
                past = f", past its timeout of {self.timeout:g} s" if row.timed_out else ""
                taken = "; the gateway had taken its cancel" if row.cancel_taken else ""
                self._unknown(row, f"contact lost ({why}){past}", taken)
                return
            wait = min(FOLLOW_BACKOFF * 2 ** (row.lost - 1), FOLLOW_BACKOFF_MAX)
            row.follow_at = min(now + wait, deadline)
            row.error = f"contact lost ({why}){FOLLOWING_AGAIN}"
        self.dirty = True  # the finisher tells the views

    def _result_unread(self, row: BatchRow, error: BaseException) -> None:
        """End a row whose task's status said it ended, its result asked and not given (a
        5xx, no answer; a 404 after it: ``ResultMissing``), ``unknown`` with its request
        id: never "left running" nor "may still run" (the task ended); running the batch
        again asks for its result, with no create (under the lock)."""
        assert row.job is not None and row.job.last_status is not None
        word = row.job.last_status.status
        if isinstance(error, ResultMissing):
            row.error = (
                f"its task completed ({word}) and is paid, but its result is gone at the "
                f"gateway ({words_of(error)}): its outputs cannot be read here; ask the "
                "gateway's operator for them. Running the batch again asks once more "
                "(no new create)"
            )
        else:
            row.error = (
                f"its task ended ({word}), but its result could not be read "
                f"({words_of(error)}). Running the batch again asks for it (no new create)"
            )
        self.update(row, UNKNOWN)

    def _deadline(self, row: BatchRow) -> float | None:
        """When the row's ``timeout`` passes (None: it has none, or no task yet)."""
        if self.timeout is None or row.created_at is None:
            return None
        return row.created_at + self.timeout

    def _unknown(self, row: BatchRow, lost: str, more: str = "") -> None:
        """End a row out of contact with its task ``unknown``, its request id kept for a
        rerun: ``lost`` says how, ``more`` what became of its cancel (under the lock)."""
        row.error = f"{lost}: the task may still run or be done{more}. {RERUN}"
        self.update(row, UNKNOWN)

    def check_deadlines(self) -> None:
        """Rows past ``timeout``: cancelled at the gateway (a lost row is followed again to
        ask it), or left running and listed; rows whose lost task is due to be followed
        again are."""
        now = time.time()
        late = []
        due = []
        with self.lock:
            for row in self.rows:
                failed = self._cancel_failed(row) if row.state == CREATED else None
                asked = row.cancel_asked_at
                deadline = self._deadline(row)
                job = row.job if row.state == CREATED else None
                task_ended = job is not None and _said_ended(job)
                if failed is not None:
                    self._lost_past_deadline(row, failed)
                elif task_ended and deadline is not None and now > deadline:
                    # its task ended in time or since: its result alone is left, fetched
                    # by its job (an end is the finisher's); a fetch that failed while the
                    # job asks on is said so at once, never "left running"
                    unread = getattr(job, "poll_error", None)
                    if unread is not None and job is not None and not job.done() and not row.lost:
                        self._result_unread(row, unread)
                elif (
                    row.state == CREATED
                    and asked is not None
                    and now - asked > CANCEL_GRACE
                    and not row.lost  # out of contact: its follow-up's loss says unknown
                    and not task_ended  # its result is on its way
                ):
                    late_words = f"timed out after {self.timeout:g} s; " if row.timed_out else ""
                    lost = poll_failed_since(row.job, asked)
                    if (row.cancel_taken or getattr(row.job, "cancel_taken", False)) and (
                        isinstance(lost, NO_CONTACT)
                    ):  # the gateway took it, then went silent: not known, never "left"
                        self._unknown(
                            row,
                            f"{late_words}no word of its task since its cancel was asked "
                            f"(contact lost: {words_of(lost)})",
                            "; the gateway had taken its cancel",
                        )
                        continue
                    kept = kept_cancel(row.job)  # not taken by the gateway: the job sends it again
                    refused = _cancel_refused(row.job)  # "too late": nothing will stop it
                    ended = (  # a gateway may accept a cancel and go on
                        f"its cancel was refused by the gateway ({refused}), so it bills to its end"
                        if refused is not None
                        else f"its cancel did not end it within {CANCEL_GRACE:g} s"
                        if kept is None
                        else f"its cancel was {kept[0]} within {CANCEL_GRACE:g} s ({kept[1]}; "
                        "sent again while this process runs)"
                    )
                    row.error = (
                        f"{late_words}{ended}: left running (running the batch again "
                        "re-attaches it)"
                    )
                    self.update(row, LEFT)
                elif (
                    row.state == CREATED
                    and not row.timed_out
                    and deadline is not None
                    and now > deadline
                    and row.job is not None
                    and (row.lost or not row.job.done())
                ):
                    # its last poll failed (no answer since): contact lost, not "running"
                    unheard = getattr(row.job, "poll_error", None)
                    if self.on_timeout == "leave":
                        row.timed_out = True
                        if row.lost:  # nothing to ask of it
                            self._lost_past_deadline(row, None)
                        elif unheard is not None:  # nothing known now: never "still running"
                            self._unknown(
                                row,
                                f"contact lost ({words_of(unheard)}), past its timeout of "
                                f"{self.timeout:g} s",
                            )
                        else:
                            row.error = f"still running after {self.timeout:g} s: left running"
                            self.update(row, LEFT)
                    else:  # marked once its job is the one asked (a follow-up's is new)
                        if row.job.done():  # out of contact, between follow-ups: one more now
                            due.append(row)
                        late.append(row)
                elif (
                    row.follow_at is not None
                    and row.follow_at <= now
                    and row.state in (CREATED, LEFT)
                ):
                    due.append(row)
        self.attach_all(due)
        for row in late:
            assert row.job is not None
            with self.lock:
                row.timed_out, row.cancel_asked_at = True, now
                row.word_at_cancel = row.job.last_status
            row.job.request_cancel()

    def _cancel_failed(self, row: BatchRow) -> str | None:
        """Why a row is out of contact at its deadline, in words: its cancel failed for
        want of contact (a 5xx, no answer) and so did a poll of its job since the cancel
        was asked, with no word of its task since; None while contact holds or is not known
        lost (under the lock). Silence alone is no loss (a poll held by the client's status
        budget, or slow to answer): only a poll's own failure ends the row (the job says
        it: ``poll_failed_since``); a row out of contact since before its deadline
        (``row.lost``: its polls gave up) needs none."""
        job = row.job
        asked = row.cancel_asked_at
        if job is None or not row.timed_out or asked is None:  # no deadline's cancel
            return None
        error, status = job.cancel_error, job.last_status
        if not isinstance(error, NO_CONTACT) or status is not row.word_at_cancel:
            return None
        if status is not None and status.done:  # its result is on its way
            return None
        cancel = f"its cancel failed ({words_of(error)})"
        if row.lost:
            return cancel
        failed = poll_failed_since(job, asked)
        if not isinstance(failed, NO_CONTACT):  # answered (or not asked yet): contact holds
            return None
        return f"{cancel}, and so did a poll of it ({words_of(failed)})"

    def _lost_past_deadline(self, row: BatchRow, cancel: str | None) -> None:
        """End a row out of contact at its deadline ``unknown``, its request id kept for a
        rerun (under the lock): out of contact since before it (``row.lost``: its polls
        gave up), or its deadline cancel and a poll failed for want of contact; ``cancel``
        says how its cancel failed (None: none was asked)."""
        if not row.lost:
            self._unknown(
                row,
                f"timed out after {self.timeout:g} s; no word of its task since its cancel "
                f"was asked, and {cancel} (contact lost)",
            )
            return
        lost = (row.error or "contact lost").removesuffix(FOLLOWING_AGAIN)
        more = f"; {cancel}" if cancel else ""
        self._unknown(row, f"{lost}, past its timeout of {self.timeout:g} s", more)

    # ------------------------------------------------------------------ resuming

    def reconcile(self, rows: Sequence[BatchRow]) -> None:
        """Settle rows reserved whose create's answer was not seen, by what the ledger
        kept under their tags, the one reading of an unanswered create (grids' too): a
        task made is followed; a create that certainly made nothing (or has no intent: it
        never left, as a tagged create leaves only once its intent is kept,
        docs/decisions.md#ledger-intent) waits again; any other is ``unknown``, never sent
        again. A row reserved before the ledger took tags (``meta.tags_since``) cannot be
        told apart."""
        ledger = self.client.ledger
        found: dict[str, list[LedgerRow]] = {}
        since = 0.0
        if ledger is not None:
            for record in ledger.tagged([self.tag(r) for r in rows]):
                found.setdefault(str(record.tag), []).append(record)
            if len(found) < len(rows):
                said = ledger.query("SELECT value FROM meta WHERE key = 'tags_since'")
                since = float(said[0][0]) if said else 0.0
        unknown = (
            "outcome unknown: {}; not sent again. Look for it with client.history() before "
            "retrying it by hand"
        )
        attach: list[BatchRow] = []
        for row in rows:
            records = found.get(self.tag(row), [])
            made = next((r.request_id for r in records if r.request_id is not None), None)
            left = [r.state for r in records if r.state != NOT_CREATED]
            with self.lock:
                if made is not None:
                    row.request_id = made
                    attach.append(row)
                    continue
                if ledger is None:  # nothing on disk to ask: a task may exist
                    row.error = "outcome unknown: no ledger to say whether its create left"
                elif not records and (row.reserved_at or 0.0) < since:
                    row.error = unknown.format(
                        "written by an older genwidgets, whose ledger did not tag which "
                        "create was this one"
                    )
                elif left:
                    row.error = unknown.format(
                        f"its create may have left and no answer was kept ({left[0]})"
                    )
                else:  # no intent (so its create never left), or it surely made nothing
                    self.update(row, WAITING, release=True)
                    continue
                self.update(row, UNKNOWN)
        self.attach_all(attach)

    def attach_all(self, rows: Sequence[BatchRow]) -> None:
        """Follow rows' existing tasks by their request ids, never created: a task this
        process does not follow yet from the ledger when it finished (its local files),
        any other polled anew; a row whose task cannot be asked for (its client closed)
        is ``unknown``, its task may still run. A row left running stays so, any other
        is followed as created."""
        finished: dict[str, JobLike] = {}
        for endpoint in dict.fromkeys(row.endpoint for row in rows if row.job is None):
            for job in self.client.history(endpoint, status="finished"):
                finished[str(job.request_id)] = job
        for row in rows:
            request_id = str(row.request_id)
            try:
                job = finished.get(request_id) or self.client.job(row.endpoint, request_id)
            except GenwidgetsError as exc:
                with self.lock:
                    self._unknown(row, f"contact lost ({words_of(exc)})")
                continue
            # a task followed again keeps its deadline (attach); one restored from the
            # store counts it from its reservation: a job asked for by its id says "now"
            made = row.reserved_at if row.reserved_at is not None else job.submitted_at
            with self.lock:
                self.attach(row, job, created_at=made)
                row.follow_at = None
                if row.state not in (LEFT, CREATED):
                    self.update(row, CREATED)

    def show_as_stored(self, row: BatchRow, record: RowRecord | None) -> None:
        """A row another live process holds, shown here as the store has it (ended there:
        as it ended; still going there: ``unknown`` here) and never written nor sent by this
        one, ended or not: the store and the manifest are that process's to write, and it
        may retry the row (each re-read shows it anew). Under the batch's lock."""
        row.planned.prepared = None
        row.ended_at = time.time()
        row.elsewhere = True
        if record is not None and record.state in ENDED:
            self.as_stored(row, record)
            return
        row.state = UNKNOWN
        row.request_id = record.request_id if record is not None else None
        there = record.state if record is not None else "gone"
        row.error = f"another process is sending this {self.noun} and holds it ({there} there)"

    def reread_elsewhere(self) -> None:
        """Rows another process holds, shown again as the store has them now: that process
        may have ended them since, and a manifest written from the view this one had at its
        start said them ``unknown`` after they were done there. A row that process failed,
        the process having ended too, is this one's again (as a resume takes it):
        ``retry_failed()`` may send it."""
        with self.lock:
            held = [r for r in self.rows if r.elsewhere]
        if not held:
            return
        stored = {r.index: r for r in self.store.rows(self.id, [r.index for r in held])}
        tables = self.store.tables
        others = tables.alive_owners() - {tables.owner}
        with self.lock:
            for row in held:
                if not row.elsewhere:  # taken back here meanwhile
                    continue
                record = stored.get(row.index)
                # failed there, that process ended: this one's to retry (a row done there
                # stays shown as stored: a grid follows its task for its outputs)
                if record is not None and record.state == FAILED and record.owner not in others:
                    row.elsewhere = False
                    self.as_stored(row, record)
                    row.attempt, row.reserved_at = record.attempt, record.reserved_at
                else:
                    self.show_as_stored(row, record)

    def reread_touched(self) -> None:
        """Rows another process changed in the store since this one last wrote or read
        them (retried there: a later attempt; resumed there: its files written, its task
        re-attached and ended), taken as the store has them now, so the process ending
        last writes its manifest and says its rows as the store holds them, never from
        its older view ("failed" for a row done there). One whose writer lives is held as
        that process's (:meth:`show_as_stored`); a row with a change of this process
        still queued is this process's."""
        stored = self.store.rows(self.id)
        tables = self.store.tables
        others = tables.alive_owners() - {tables.owner} if stored else set()
        with self.lock:
            queued = {u.index for u in self._pending}
            for record in stored:
                row = self.rows[record.index]
                if row.elsewhere or row.index in queued or record.attempt < row.attempt:
                    continue
                newer = record.attempt > row.attempt
                if not newer and record.state in (row.synced, row.state):
                    continue
                if newer:  # the older attempt's task is not this row's
                    row.job, row.follow_at = None, None
                row.attempt, row.reserved_at = record.attempt, record.reserved_at
                if record.owner in others:
                    self.show_as_stored(row, record)
                else:
                    self.as_stored(row, record)
                self.dirty = True

    def reread_stale(self, refused: Sequence[RowUpdate]) -> None:
        """Rows whose changes the store refused for a later attempt (another process
        reserved them since the attempt each change was learnt of), read again: held as
        that process's, as rows another process holds are (:meth:`show_as_stored`; a grid
        follows them up, ``GridRun.follow_elsewhere``). A row this process reserved again
        meanwhile is its own and left as it is."""
        stored = {r.index: r for r in self.store.rows(self.id, [u.index for u in refused])}
        own = self.store.tables.owner
        with self.lock:
            for change in refused:
                row, record = self.rows[change.index], stored.get(change.index)
                if record is None or record.attempt == change.attempt:
                    continue  # refused by the guard: that live process's row, as it was
                if row.attempt != change.attempt or record.owner == own:
                    continue  # reserved here again meanwhile: this process's own
                row.job, row.follow_at = None, None  # the older attempt's task: not this row's
                row.attempt, row.reserved_at = record.attempt, record.reserved_at
                self.show_as_stored(row, record)
                row.elsewhere = True  # read again until that process is done with it
            self.dirty = True

    def as_stored(self, row: BatchRow, record: RowRecord) -> None:
        """A row as its record says: state, request id, error, files (in its run's folder;
        a grid has none)."""
        row.state, row.request_id, row.error = record.state, record.request_id, record.error
        row.synced = record.state
        row.files = [self.out / name for name in record.files] if self.out is not None else []

    def restore(self) -> None:
        """Load what the store, the manifest and the ledger say of each stored row, before
        anything is sent; the table of stored states and what a re-run does with each:
        docs/decisions.md#batch-resume."""
        records = {r.index: r for r in self.store.rows(self.id)}
        if not records:
            return
        self.stored = True
        reserved: list[BatchRow] = []
        attach: list[BatchRow] = []
        # a row another live process holds is its own: sending it, or (a batch) writing its
        # files; a grid writes none, so a task another process follows is followed here too
        held = {SENDING, CREATED} if self.out is not None else {SENDING}
        going = {r.state for r in records.values()} & held
        tables = self.store.tables  # a reservation's owner is a ledger's (``RowRecord.owner``)
        others = tables.alive_owners() - {tables.owner} if going else set()
        with self.lock:
            self.spent = self.store.spent(self.id)
            for row in self.rows:
                record = records.get(row.index)
                if record is None:
                    continue
                if record.state in held and record.owner in others:
                    self.show_as_stored(row, record)  # a live process is sending it
                    continue
                self.as_stored(row, record)
                row.attempt, row.reserved_at = record.attempt, record.reserved_at
                if row.state == DONE and not all(p.exists() for p in row.files):
                    row.state = CREATED  # a file went missing: written again from the task
                if row.state != WAITING:
                    row.planned.prepared = None  # sent before: never sent from this plan again
                # unknown: contact was lost with it; a grid shows every task's outputs
                if row.request_id and (
                    row.state in (CREATED, LEFT, PENDING, UNKNOWN) or self.out is None
                ):
                    attach.append(row)
                elif row.state == SENDING:
                    reserved.append(row)
        said = read_manifest(self.out) if reserved else {}
        unanswered: list[BatchRow] = []
        for row in reserved:  # its create's answer for the attempt reserved may be only
            # the manifest's last line of it: a killed process flushed that line at once,
            # its store and ledger writes may still have been queued
            line = said.get(row.index, {})
            request_id = line.get("request_id")
            if line.get("batch") == self.id and line.get("attempt") == row.attempt and request_id:
                row.request_id = str(request_id)
                attach.append(row)
            else:
                unanswered.append(row)
        if unanswered:
            self.reconcile(unanswered)
        self.attach_all(attach)
        self.flush_when_it_can()

    # ------------------------------------------------------------------ the API

    @property
    def endpoint(self) -> str:
        return self.plan.endpoint

    @property
    def sending(self) -> bool:
        """Whether its sender runs: rows are being reserved and created (until it has
        decided, under the lock, that nothing more is asked of it)."""
        return self._sender_on

    def submit(self) -> Self:
        """Send what waits: the plan's confirmation, or going on once sending stopped
        (a pause, a cancel, an interrupt, a run re-opened) with rows never sent. Rows
        contact was lost with are followed again (no create). Else it does nothing."""
        lost = self.follow_lost()
        with self.lock:  # a started run sends again when paused, or stopped with rows
            # waiting and nothing sending them (a pause, a stop or a cancel ends here)
            stalled = self.stopped is not None and not self.sending and bool(self.waiting())
            begin = not self.started or self.paused is not None or stalled
            if begin:
                if self.started:
                    self.go_on()
                self.started = True
                self.settled.clear()
        if begin:
            try:
                self.store_batch()
            except BaseException:  # nothing was sent: a later submit() tries again
                with self.lock:
                    self.started = False
                raise
            self._run()
        elif lost:
            self._ensure_finisher()
        return self

    def follow_lost(self) -> int:
        """Follow again now, with no create, every row whose task this process lost
        contact with (being followed with backoff, or given up as ``unknown``); returns
        how many. A row another process holds is left to it."""
        with self.lock:
            lost = [
                r
                for r in self.rows
                if r.request_id is not None
                and r.job is not None
                and (r.follow_at is not None or (r.state == UNKNOWN and r.job.done()))
            ]
            for row in lost:
                row.follow_at, row.lost, row.lost_since = None, 0, None
        self.attach_all(lost)
        return len(lost)

    def join_sender(self, timeout: float | None = None) -> None:
        """Wait until every create of this sending has answered (or it paused)."""
        sender = self._sender
        if sender is not None:
            sender.join(timeout)

    def reopened(self) -> None:
        """A stored run shown again, nothing sent: rows whose tasks ended are finished
        here, others by the finisher; rows never sent wait for :meth:`submit`."""
        with self.lock:
            self.started = any(r.state != WAITING for r in self.rows)
            if self.started and self.waiting():
                self.stopped = f"re-opened: {self.unit}s never sent wait for submit()"
        while not self.ended.empty():  # no finisher yet: this is the one taker
            self._finish_one(self.rows[self.ended.get_nowait()])
        self.flush_when_it_can()
        self._ensure_finisher()

    def wait(
        self,
        timeout: float | None = None,
        *,
        progress: Mode | None = None,
        words: Callable[[str], str] | None = None,
    ) -> Self:
        """Block until every row has ended (or, stopped at the budget's cap or by a
        cancel, every sent row). ``TimeoutError`` after ``timeout`` seconds; failed rows
        do not raise. ``progress``: a tqdm bar on a terminal, quiet lines otherwise,
        nothing in a notebook (``"bar"``, ``"lines"``, ``"none"`` choose; a grid's
        default is ``"none"``); ``words`` rewrites each line's advice (the command's
        flags for ``batch.submit()``)."""
        if not self.started:
            raise RuntimeError(
                f"{self.noun} {self.id} was not sent (it needs confirmation): call "
                f"{self.noun}.submit()"
            )
        deadline = None if timeout is None else time.monotonic() + timeout
        face: Progress | None = None
        try:
            face = Progress(len(self.rows), mode=progress or self.wait_progress, words=words)
            while not self.finished:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise TimeoutError(
                        f"{self.noun} {self.id}: {len(self.rows) - self.snapshot().ended} of its "
                        f"tasks had not ended after {timeout:g} s; they go on (wait again)"
                    )
                self.settled.wait(TICK if remaining is None else min(TICK, remaining))
                face.show(self.snapshot())
            self._final_write()  # the store and both manifests say what wait() saw
        except KeyboardInterrupt:
            self.interrupt()
            raise
        finally:
            if face is not None:  # its last line after the last write: as the store says
                face.close(self.snapshot())
        return self

    def cancel(self) -> int:
        """Stop sending and ask the gateway to cancel every row still running; returns
        how many were asked. Rows never sent stay waiting (a resume sends them)."""
        self.stop.set()
        self.cancelled = True
        with self.lock:
            if self.started and self.stopped is None and self.waiting():
                self.stopped = f"cancelled: {self.unit}s not sent wait"
        asked = self.cancel_created(self.rows)
        self.changed()
        return asked

    def retry_failed(self) -> int:
        """Send the failed rows again (a new attempt each, counted by the budget);
        returns how many. Only rows this process holds (none another live process held
        at its start) whose stored state is still ``failed``: one another live process
        took and retried since is shown as the store has it, never sent from here (two
        copies of one batch pay once; the store's ``settle`` guards it too), and those it
        held and failed once it has ended."""
        self.reread_elsewhere()  # a process that has ended holds nothing
        with self.lock:
            mine = [r for r in self.rows if r.state == FAILED and not r.elsewhere]
        stored = {r.index: r for r in self.store.rows(self.id, [r.index for r in mine])}
        tables = self.store.tables
        others = tables.alive_owners() - {tables.owner} if mine else set()
        with self.lock:
            failed = []
            for row in mine:
                record = stored.get(row.index)
                if record is None or record.state == FAILED:
                    if row.state == FAILED and not row.elsewhere:  # not changed meanwhile
                        if record is not None:  # its retry is learnt at the stored
                            # attempt: a process since ended may have retried it (and it
                            # failed again), and settle refuses a change of an older one
                            row.attempt, row.reserved_at = record.attempt, record.reserved_at
                        failed.append(row)
                elif record.owner in others:
                    self.show_as_stored(row, record)
            for row in failed:
                row.error, row.request_id, row.job = None, None, None
                row.files, row.timed_out, row.rate_limited = [], False, 0
                self.update(row, WAITING)  # the manifest's last line of it says so too
            if failed:  # an ask to send: a pause or a stop ends with it, never without
                self.go_on()
        self.flush()
        if failed:
            self.started = True
            self.settled.clear()
            self._run()
        return len(failed)

    def write_files(self) -> int:
        """Write the files of rows done at the gateway whose files could not be written
        (``files pending``: a read-only folder, a full disk), from their kept outputs,
        with no new create; returns how many are done now."""
        with self.lock:
            pending = [
                r
                for r in self.rows
                if r.state == PENDING and r.request_id is not None and not r.elsewhere
            ]
        written = 0
        self.attach_all([r for r in pending if r.job is None])  # read back from the ledger
        for row in pending:
            if row.job is not None and row.job.done():  # else the finisher writes it
                self.finish_row(row)
                written += row.state == DONE
        self._ensure_finisher()  # a row polled again is finished by it
        self._final_write()
        return written

    @property
    def finished(self) -> bool:
        """Every row has ended, or sending stopped and every sent row has ended."""
        with self.lock:
            if self.sending or not self.ended.empty():
                return False
            for row in self.rows:
                if row.state in (SENDING, CREATED):
                    return False
                if row.state == WAITING and self.stopped is None and self.started:
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
        return dict.fromkeys(STATUSES, 0) | Counter(row.status for row in self.rows)

    def snapshot(self) -> Snapshot:
        """The batch's progress now (counts, spend, rate, time left)."""
        counts = self.counts()
        now = time.monotonic()
        with self.lock:
            while self.ends and now - self.ends[0] > RATE_WINDOW:
                self.ends.popleft()
            ends = list(self.ends)
            spent = dict(self.spent)
        # rows ended over the last minute, or since sending began when that is shorter
        # (four rows ending together early on are not "16 rows/s")
        since = max(now - RATE_WINDOW, self._sending_since or now)
        rate = len(ends) / (now - since) if len(ends) >= 2 and now - since >= 1.0 else None
        left = len(self.rows) - sum(counts[s] for s in ENDED_STATUSES)
        return Snapshot(
            id=self.id,
            total=len(self.rows),
            counts=counts,
            spent=spent,
            billed=summed(self.charges(r) for r in self.rows if r.status == "done"),
            rate=rate,
            eta=left / rate if rate else None,
            stopped=self.stopped,
            finished=self.finished,
            started=self.started,
            problem=self.problem or self.manifest.problem,
            paused=self.paused is not None,
        )

    def dataframe(self) -> Any:
        """The rows as a pandas DataFrame (pandas is optional) indexed by each row's name,
        so ``df.join(batch.dataframe())`` lines up; ``files`` are named relative to
        ``batch.out`` (``frame.attrs["out"]``): docs/decisions.md#shown-paths."""
        try:
            import pandas as pd  # noqa: PLC0415 - optional, and a second or so to import
        except ImportError:
            raise ImportError(
                "batch.dataframe() needs pandas (pip install pandas); batch.rows holds the "
                "same: .index .payload .status .request_id .files .error"
            ) from None
        records = [
            {
                "row": r.name,
                "line": r.line,
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

    def __repr__(self) -> str:
        snap = self.snapshot()
        state = snap.line().split(": ", 1)[1] if self.started else "not sent (call .submit())"
        return f"<{type(self).__name__} {self.id} {self.endpoint}: {state}>"

    def _ipython_display_(self) -> None:
        if display_hook is None or self.out is None:  # a grid's view is its Grid's
            print(repr(self))
        else:
            display_hook(self)

    # ------------------------------------------------------------------ bookkeeping

    def _trouble(self, what: str, exc: BaseException) -> None:
        """A background thread's error: recorded, logged once, shown; the run goes on."""
        text = f"{what}: {words_of(exc)}"
        if text != self.problem:
            log.warning("genwidgets: %s %s: %s", self.noun, self.id, text)
        self.problem = text
        self._store_problem = isinstance(exc, LedgerError)  # cleared by the next flush
        self.dirty = True

    def _final_write(self) -> None:
        """The store and both manifests, written once every row's last change is in:
        after the finisher's last pass (bounded), then here, whatever it managed."""
        finisher = self._finisher
        if finisher is not None:
            finisher.join(STOP_WAIT)  # at once on the finisher itself
        self.write_all()
        self.manifest.close()  # no file of the folder held open; a later event opens it

    # ------------------------------------------------------------------ threads

    def _run(self) -> None:
        """Start the sender (when rows wait) and the finisher, if not running."""
        with self.lock:
            if self._sending_since is None:
                self._sending_since = time.monotonic()
            if self.waiting() and not self.stop.is_set():
                if self._sender_on:  # it may be past its last look: it looks again
                    self._send_again = True
                else:
                    self._sender_on, self._send_again = True, False
                    self._sender = RUNS.submit(self._guarded_sender)
            self._ensure_finisher()

    def _ensure_finisher(self) -> None:
        with self.lock:
            if self._finisher is None or not self._finisher.alive():
                self.settled.clear()
                self._finisher = RUNS.submit(self._finish_all)

    def _finish_late(self) -> None:
        """A row ended after the finisher settled (on a worker): the finisher that settled
        may still be ending, having looked at the queue before the row came, so it is let
        end before another is started."""
        finisher = self._finisher
        if finisher is not None:
            with contextlib.suppress(BaseException):
                finisher.join(STOP_WAIT)
        self._ensure_finisher()

    def _guarded_sender(self) -> None:
        """The sender: an error pauses the batch with its words (rows reserved and not
        answered are settled as a resume would), never a silent end. It ends only once,
        under the lock, nothing was asked of it since its last look (``_send_again``,
        set by :meth:`_run`): rows retried as it ended were left waiting with no sender,
        and ``wait()`` never ended (review-20)."""
        done = False
        try:
            while not done:
                self._send_guarded()
                with self.lock:
                    done = not self._send_again
                    self._send_again = False
                    if done:
                        self._sender_on = False
        finally:
            if not done:  # left by a BaseException: no sender runs
                with self.lock:
                    self._sender_on = False
        self._ensure_finisher()

    def _send_guarded(self) -> None:
        try:
            self.send_all()
        except Exception as exc:
            self._trouble("sending", exc)
            with self.lock:
                self.pause(f"sending stopped: {words_of(exc)}")
                stuck = [r for r in self.rows if r.state == SENDING]
            with contextlib.suppress(Exception):
                if stuck:
                    self.reconcile(stuck)

    def interrupt(self) -> None:
        """Ctrl-C in :meth:`wait`: stop creating, let the chunk in flight answer, keep
        the record; the tasks created go on (a resume re-attaches them)."""
        self.stop.set()
        sender = self._sender
        if sender is not None:
            with contextlib.suppress(BaseException):
                sender.join(STOP_WAIT)
        with self.lock:
            if self.stopped is None:  # said once the chunk in flight answered (or not)
                self.stopped = self.said_interrupted()
        with contextlib.suppress(BaseException):
            self.write_all()

    def said_interrupted(self) -> str:
        """Where the rows stand after an interrupt, in words: those never sent wait, those
        whose create had not answered are settled when the batch runs again, the rest
        were sent (under the lock; a grid's rows are its cells)."""
        waiting = len(self.waiting())
        unanswered = sum(1 for r in self.rows if r.state == SENDING)
        said = []
        if waiting:
            said.append(f"{waiting} {self.unit}(s) not sent wait")
        if unanswered:
            said.append(
                f"{unanswered} {self.unit}(s) reserved with no answer yet (running the "
                f"{self.noun} again finds the tasks of those that left and sends the others)"
            )
        if not said:
            return f"interrupted: every {self.unit} was sent, their tasks go on"
        return "interrupted: " + "; ".join(said)

    # ------------------------------------------------------------------ finishing

    def _finish_all(self) -> None:
        """The finisher thread: ended rows' files, then at most every :data:`TICK` the
        work that reads every row (deadlines, store, manifest table, listeners, the end);
        again if a row ended as it settled (a task left running may end at any time: its
        row's callback starts a finisher again once this one is gone)."""
        while True:
            self._finish_until_settled()
            self.settled.set()
            self.changed()
            if self.ended.empty():
                return
            self.settled.clear()

    def _finish_until_settled(self) -> None:
        due = 0.0
        while True:
            try:
                index = self.ended.get(timeout=TICK)
            except queue.Empty:
                index = None
            try:
                if index is not None:
                    self._finish_one(self.rows[index])
                if index is not None and time.monotonic() < due:
                    continue  # more rows may have ended: their files first
                due = time.monotonic() + TICK
                self.check_deadlines()
                self.flush()
                if self.manifest.due():
                    self.write_all(force=False)
                if self.dirty:
                    self.changed()
            except Exception as exc:  # recorded and shown; the rows go on
                self._trouble("finishing rows", exc)
            if self.finished:  # nothing sending, no ended row queued, every row at rest
                break
        try:
            self._final_write()
        except Exception as exc:
            self._trouble("writing the batch's record", exc)

    def _finish_one(self, row: BatchRow) -> None:
        """One ended row; an error of ours leaves it ``unknown`` with its request id (a
        resume re-attaches it), never followed forever nor failed."""
        try:
            self.finish_row(row)
        except Exception as exc:
            with self.lock:
                if row.state == CREATED:
                    row.error = (
                        f"not finished here ({words_of(exc)}); running the "
                        "batch again re-attaches its task"
                    )
                    self.update(row, UNKNOWN)
            raise
