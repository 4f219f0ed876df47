"""A batch at work: a :class:`~.row_book.RowBook` that runs its sender
(``send_all``) and its finisher (``finish_row``, ``check_deadlines``) on the package's
worker threads; who does what, and why no lock is held while waiting on the engine:
docs/decisions.md#batches.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._workers import RUNS, Work
from .batch_plan import BatchPlan
from .batch_row import ENDED_STATUSES, STATUSES, BatchRow
from .batch_store import CREATED, DONE, FAILED, PENDING, SENDING, UNKNOWN, WAITING
from .budget import summed
from .cost import CONFIRM_ABOVE
from .progress import Mode, Progress, Snapshot
from .row_book import RowBook

__all__ = ["Batch", "display_hook"]

log = logging.getLogger("genwidgets")

#: set by ``genwidgets.widgets.batch_view`` so a displayed batch draws its live view
display_hook: Callable[[Batch], None] | None = None
#: how often the finisher wakes to check deadlines and tell listeners (seconds)
TICK = 0.25
#: rows ended within this window make the rate (seconds)
RATE_WINDOW = 60.0
#: how long an interrupted wait lets the sender end its chunk (seconds)
STOP_WAIT = 15.0


class Batch(RowBook):
    """Rows of data sent as tasks, each followed to its files; see the module docstring
    and ``gw.batch``."""

    plan: BatchPlan
    out: Path
    #: whether it waits for :meth:`submit` (billed above ``confirm_above``)
    needs_confirmation = False
    #: billed generations above which it waits for :meth:`submit` (``gw.batch``'s)
    confirm_above = CONFIRM_ABOVE
    _started = False
    _sending_since: float | None = None
    _sender: Work | None = None
    _finisher: Work | None = None

    # ------------------------------------------------------------------ the API

    @property
    def endpoint(self) -> str:
        return self.plan.endpoint

    @property
    def started(self) -> bool:
        """Whether its plan was confirmed (sent, or sending)."""
        return self._started

    @property
    def sending(self) -> bool:
        """Whether its sender runs: rows are being reserved and created."""
        sender = self._sender
        return sender is not None and sender.alive()

    def submit(self) -> Batch:
        """Send what waits: the plan's confirmation, or going on once sending stopped
        (a pause, a cancel, an interrupt, a run re-opened) with rows never sent. Rows
        contact was lost with are followed again (no create). Else it does nothing."""
        lost = self.follow_lost()
        with self.lock:  # a started run sends again when paused, or stopped with rows
            # waiting and nothing sending them (a pause, a stop or a cancel ends here)
            stalled = self.stopped is not None and not self.sending and bool(self.waiting())
            begin = not self._started or self.paused is not None or stalled
            if begin:
                if self._started:
                    self.go_on()
                self._started = True
                self.settled.clear()
        if begin:
            try:
                self.store_batch()
            except BaseException:  # nothing was sent: a later submit() tries again
                with self.lock:
                    self._started = False
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
        self.attach_all([(row, str(row.request_id)) for row in lost])
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
            self._started = any(r.state != WAITING for r in self.rows)
            if self._started and self.waiting():
                self.stopped = f"re-opened: {self.unit}s never sent wait for submit()"
        while not self.ended.empty():  # no finisher yet: this is the one taker
            self._finish_one(self.rows[self.ended.get_nowait()])
        self.flush()
        self._ensure_finisher()

    def wait(self, timeout: float | None = None, *, progress: Mode = "auto") -> Batch:
        """Block until every row has ended (or, stopped at the budget's cap or by a
        cancel, every sent row). ``TimeoutError`` after ``timeout`` seconds; failed rows
        do not raise. ``progress``: a tqdm bar on a terminal, quiet lines otherwise,
        nothing in a notebook (``"bar"``, ``"lines"``, ``"none"`` choose)."""
        if not self._started:
            raise RuntimeError(
                f"{self.noun} {self.id} was not sent (it needs confirmation): call "
                f"{self.noun}.submit()"
            )
        deadline = None if timeout is None else time.monotonic() + timeout
        face: Progress | None = None
        try:
            face = Progress(len(self.rows), mode=progress)
            while not self.finished:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise TimeoutError(
                        f"{self.noun} {self.id}: {len(self.rows) - self.snapshot().ended} of its "
                        f"tasks had not ended after {timeout:g} s; they go on (wait again)"
                    )
                self.settled.wait(TICK if remaining is None else min(TICK, remaining))
                face.show(self.snapshot())
        except KeyboardInterrupt:
            self.interrupt()
            raise
        finally:
            if face is not None:
                face.close(self.snapshot())
        self._final_write()  # the store and both manifests say what wait() saw
        return self

    def cancel(self) -> int:
        """Stop sending and ask the gateway to cancel every row still running; returns
        how many were asked. Rows never sent stay waiting (a resume sends them)."""
        self.stop.set()
        self.cancelled = True
        with self.lock:
            if self._started and self.stopped is None and self.waiting():
                self.stopped = f"cancelled: {self.unit}s not sent wait"
        asked = self.cancel_created(self.rows)
        self.changed()
        return asked

    def retry_failed(self) -> int:
        """Send the failed rows again (a new attempt each, counted by the budget);
        returns how many."""
        with self.lock:
            failed = [r for r in self.rows if r.state == FAILED]
            for row in failed:
                row.error, row.request_id, row.job = None, None, None
                row.files, row.timed_out, row.rate_limited = [], False, 0
                self.update(row, WAITING)  # the manifest's last line of it says so too
            if failed:  # an ask to send: a pause or a stop ends with it, never without
                self.go_on()
        self.flush()
        if failed:
            self._started = True
            self.settled.clear()
            self._run()
        return len(failed)

    def write_files(self) -> int:
        """Write the files of rows done at the gateway whose files could not be written
        (``files pending``: a read-only folder, a full disk), from their kept outputs,
        with no new create; returns how many are done now."""
        with self.lock:
            pending = [r for r in self.rows if r.state == PENDING and r.request_id is not None]
        written = 0
        for row in pending:  # their tasks are read back (the ledger keeps their outputs)
            if row.job is None:
                self.follow_again(row)
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
            started=self._started,
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
        return f"<{type(self).__name__} {self.id} {self.endpoint}: {state}>"

    def _ipython_display_(self) -> None:
        if display_hook is None or self.out is None:  # a grid's view is its Grid's
            print(repr(self))
        else:
            display_hook(self)

    # ------------------------------------------------------------------ bookkeeping

    def _trouble(self, what: str, exc: BaseException) -> None:
        """A background thread's error: recorded, logged once, shown; the run goes on."""
        text = f"{what}: {type(exc).__name__}: {exc}"
        if text != self.problem:
            log.warning("genwidgets: %s %s: %s", self.noun, self.id, text)
        self.problem = text
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
            if self.waiting() and not self.stop.is_set() and not self.sending:
                self._sender = RUNS.submit(self._guarded_sender)
            self._ensure_finisher()

    def _ensure_finisher(self) -> None:
        with self.lock:
            if self._finisher is None or not self._finisher.alive():
                self.settled.clear()
                self._finisher = RUNS.submit(self._finish_all)

    def _guarded_sender(self) -> None:
        """The sender: an error pauses the batch with its words (rows reserved and not
        answered are settled as a resume would), never a silent end."""
        try:
            self.send_all()
        except Exception as exc:
            self._trouble("sending", exc)
            with self.lock:
                self.pause(f"sending stopped on {type(exc).__name__}: {exc}")
                stuck = [r for r in self.rows if r.state == SENDING]
            with contextlib.suppress(Exception):
                if stuck:
                    self.reconcile(stuck)
        self._ensure_finisher()

    def interrupt(self) -> None:
        """Ctrl-C in :meth:`wait`: stop creating, let the chunk in flight answer, keep
        the record; the tasks created go on (a resume re-attaches them)."""
        self.stop.set()
        with self.lock:
            if self.stopped is None:  # a grid's rows are its cells
                self.stopped = "interrupted: " + (
                    f"{self.unit}s not sent wait"
                    if self.waiting()
                    else f"every {self.unit} was sent, their tasks go on"
                )
        sender = self._sender
        if sender is not None:
            with contextlib.suppress(BaseException):
                sender.join(STOP_WAIT)
        with contextlib.suppress(BaseException):
            self.write_all()

    # ------------------------------------------------------------------ finishing

    def _finish_all(self) -> None:
        """The finisher thread: ended rows' files, then at most every :data:`TICK` the
        work that reads every row (deadlines, store, manifest table, listeners, the end)."""
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
            if self.ended.empty() and not self.sending and self.finished:
                break
        try:
            self._final_write()
        except Exception as exc:
            self._trouble("writing the batch's record", exc)
        self.settled.set()
        self.changed()

    def _finish_one(self, row: BatchRow) -> None:
        """One ended row; an error of ours leaves it ``unknown`` with its request id (a
        resume re-attaches it), never followed forever nor failed."""
        try:
            self.finish_row(row)
        except Exception as exc:
            with self.lock:
                if row.state == CREATED:
                    row.error = (
                        f"not finished here ({type(exc).__name__}: {exc}); running the "
                        "batch again re-attaches its task"
                    )
                    self.update(row, UNKNOWN)
            raise
