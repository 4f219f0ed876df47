"""The ledger's writer: one daemon thread applies every write, in order, on its own connection.

A lock held by another process then delays only the ledger, never the engine's loop; a
write that meets a busy file is retried, never dropped (docs/decisions.md#ledger-writer),
until the queue stops or the process exits: what is left then goes to ``left_behind``.
A write held so (its note) goes to ``keep_held`` at once, from a thread of its own, so a
process killed meanwhile (``kill -9``) loses none (docs/decisions.md#ledger-left-behind).
A file that cannot be written (disk full, read-only) is the same: the write is kept, in
order, and tried again, its caller told at once. Other faults go to ``on_fault``
(docs/decisions.md#ledger-faults). A :class:`WriteQueue` is
one ledger's queue of writes and its thread: it starts one per process, again after ``fork``.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import contextlib
import logging
import os
import queue
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from typing import Any, Literal

from ..._workers import Work, Workers
from ...errors import LedgerError

__all__ = [
    "Ended",
    "FaultAction",
    "LeftBehind",
    "Note",
    "Op",
    "WriteQueue",
    "immediate",
    "is_busy",
    "is_disk_fault",
]

log = logging.getLogger("genwidgets")

#: one write: runs inside ``BEGIN IMMEDIATE`` ... ``COMMIT`` on the writer's connection
Op = Callable[[sqlite3.Connection], Any]
#: what a queued write records, in plain JSON values without the key (a task's intent,
#: its handle): kept when the write cannot reach the file before the process ends
Note = dict[str, Any]
#: what to do after a fault that is not a busy file: try again at once (a fresh file),
#: give the write up, or keep it (and those behind it) and try again later
FaultAction = Literal["retry", "give_up", "keep"]

_BUSY_CODES = {5, 6}  # SQLITE_BUSY, SQLITE_LOCKED
#: SQLITE_PERM, SQLITE_READONLY, SQLITE_IOERR, SQLITE_FULL (a file that cannot be opened
#: at all is no passing fault: the ledger is then refused, docs/decisions.md#ledger-faults)
_DISK_CODES = {3, 8, 10, 13}
_DISK_WORDS = ("readonly", "read-only", "disk is full", "disk i/o error")
#: seconds between two tries of a write kept while the file cannot be written (a new
#: write, a flush and the process's exit try it at once)
FAULT_PAUSE = 1.0
#: pause between two attempts at a busy file (SQLite's own busy timeout waits first)
RETRY_PAUSE = 0.05
#: fresh files one write may start after damage before it is given up
MAX_SET_ASIDE = 1
#: a write taking longer than this means the file is busy (a free one takes milliseconds)
STALL = 0.1
#: the keepers of held writes, one per ledger file with a writer in this process, each
#: for its writer's life: worker threads (one kind of thread), bounded as the writers
#: are not (a keeper queued behind others would keep nothing)
KEEPERS = Workers(1024, failed="keeping held ledger writes")


class LeftBehind(LedgerError):
    """A write handed to ``left_behind`` (see :meth:`WriteQueue.hand_over`): never applied."""


def is_busy(exc: BaseException) -> bool:
    """Whether an sqlite3 error means "locked by someone else, try again later"."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None and code & 0xFF in _BUSY_CODES:
        return True
    text = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


def is_disk_fault(exc: BaseException) -> bool:
    """Whether an sqlite3 error means "the file cannot be written now" (disk full,
    read-only, an I/O error): writable again later, unlike a write's own error."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None and code & 0xFF in _DISK_CODES:
        return True
    text = str(exc).lower()
    return isinstance(exc, sqlite3.Error) and any(word in text for word in _DISK_WORDS)


@contextlib.contextmanager
def immediate(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction: ``BEGIN IMMEDIATE``, ``COMMIT`` when the block ends, and
    ``ROLLBACK`` when it (or the commit) raises."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _applied(written: concurrent.futures.Future[Any]) -> bool:
    """Whether the write of future ``written`` (that left the queue) reached the file."""
    return written.done() and not written.cancelled() and written.exception() is None


def _settled(value: bool) -> concurrent.futures.Future[bool]:
    future: concurrent.futures.Future[bool] = concurrent.futures.Future()
    future.set_result(value)
    return future


_live: weakref.WeakSet[WriteQueue] = weakref.WeakSet()
_NOTHING: Any = object()  # the queue had nothing before the idle work was due
#: told, on the writer's thread, whether a write reached the file once it ended for good
#: (committed, given up or left behind), never after a try the writer makes again
Ended = Callable[[bool], None]
#: a write, the future its caller holds (None: nobody waits any more), its note and
#: what is told when it ends
_Item = tuple[Op | None, concurrent.futures.Future[Any] | None, Note | None, Ended | None] | None


@atexit.register
def _flush_all() -> None:
    """At interpreter exit, give queued rows a bounded chance to reach the disk; what
    is still queued then goes to the queue's ``left_behind`` (said, kept elsewhere). The
    wait counts from when the writes began to be held: a lock met earlier is not waited
    for a second time."""
    for writes in list(_live):
        thread = writes.thread
        if thread is not None:
            writes.hand_over(thread, max(writes.exit_wait - writes.held_for, STALL))


class WriteQueue:
    """One ledger's queue of writes and the daemon thread that applies them, in order:
    thread-safe. The thread is this process's: started on the first write and again
    after ``fork`` (a child inherits no thread) or when it has died; the lock is never
    held while a write waits."""

    def __init__(
        self,
        connect: Callable[[], sqlite3.Connection],
        on_fault: Callable[[sqlite3.Error], FaultAction],
        *,
        name: str,
        idle: Callable[[], Op | None] | None = None,  # every idle_every s (the heartbeat)
        idle_every: float = 30.0,
        exit_wait: float = 5.0,
        left_behind: Callable[[list[Note], int], None] | None = None,
        moved: Callable[[sqlite3.Connection], bool] | None = None,
        recovered: Callable[[], None] | None = None,
        keep_held: Callable[[list[Note]], bool] | None = None,
    ) -> None:
        self.connect = connect
        self.on_fault = on_fault
        self.name = name
        self.idle = idle
        self.idle_every = idle_every
        self.exit_wait = exit_wait
        #: told the notes of the writes still queued when the queue stops or the process
        #: exits (a lock held elsewhere outlasted the wait), and how many there are
        self.left_behind = left_behind
        #: whether the path no longer leads to the file the writer's connection has
        #: open (deleted, replaced): the writer then opens the path anew
        self.moved = moved
        #: told when a write kept while the file could not be written is on disk
        self.recovered = recovered
        #: told the notes of writes held (a lock held elsewhere, a file that cannot be
        #: written) as soon as they are, to keep them beside the file; True once on disk
        self.keep_held = keep_held
        #: the file was opened once: opening it again failing (too many open files) is
        #: a passing fault, its writes kept, where a first open failing refuses the ledger
        self.opened = False
        self._lock = threading.Lock()
        self._thread: _Thread | None = None

    def put(
        self, op: Op | None, note: Note | None = None, *, ended: Ended | None = None
    ) -> concurrent.futures.Future[Any]:
        """Queue ``op`` (None: only open the file); its future holds what it returned
        or the error that ended it. ``note`` says what it records, for ``left_behind``;
        ``ended`` is told whether it reached the file once it ends for good: a try that
        fails and is made again (a fresh file, a disk fault) does not end it, so what
        the write needs to be made again is kept until then (review-29).

        While the file cannot be written (a write is kept), the future holds that error
        at once and ``op`` is kept behind the others, tried when they are written."""
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        with self._lock:
            thread = self._thread
            if thread is None or thread.pid != os.getpid() or not thread.is_alive():
                thread = self._thread = _Thread(self)
                _live.add(self)
            fault = thread.fault
            thread.jobs.put((op, None if fault is not None else future, note, ended))
            if note is not None and self.keep_held is not None:
                thread.watch_notes()
        if fault is not None:
            future.set_exception(fault)
            thread.wake.set()  # tried again on the next write
        return future

    def flush(self, timeout: float | None) -> bool:
        """Wait until every write queued so far is applied (or given up); False on
        timeout, or at once when a try made meanwhile found the file still unwritable."""
        thread = self._thread
        return thread is None or thread.drained(timeout)

    @property
    def stalled(self) -> bool:
        """Whether the write being applied has waited longer than :data:`STALL` (a lock
        held elsewhere): callers that would wait for their write then don't."""
        thread = self._thread
        return thread is not None and thread.holding()

    @property
    def held_for(self) -> float:
        """Seconds the write being applied has been held (0 when none is): a caller's
        wait for the lock counts from there, so a second wait adds none."""
        thread = self._thread
        since = None if thread is None or not thread.holding() else thread.writing_since
        return 0.0 if since is None else time.monotonic() - since

    def safe(
        self, note: Note, written: concurrent.futures.Future[Any]
    ) -> concurrent.futures.Future[bool]:
        """The future of ``note``'s write (``written``: the future :meth:`put` gave) being
        safe from a kill: True once it is applied or its note kept beside the file by
        ``keep_held``; False once a try to keep it fails (the disk is full too), its write
        is given up, or the writer stops. A tagged create leaves only then
        (docs/decisions.md#ledger-intent). A write applied before this is asked is safe:
        ``written`` says so once the note has left the queue."""
        thread = self._thread
        if thread is None:
            return _settled(_applied(written))
        return thread.when_safe(note, written)

    def kept(self, note: Note) -> bool:
        """Whether ``note`` (of a write not applied yet) was kept beside the file by
        ``keep_held``: another process may have recorded it already."""
        thread = self._thread
        return thread is not None and thread.was_kept(note)

    def notes(self) -> list[Note]:
        """The notes of the writes not applied yet, in order (this process's)."""
        thread = self.thread
        return [] if thread is None else thread.notes()

    @property
    def pending(self) -> int:
        """Writes queued or being applied (not yet on disk)."""
        thread = self._thread
        return 0 if thread is None else thread.jobs.unfinished_tasks

    @property
    def thread(self) -> _Thread | None:
        """This process's writer thread, if it runs (one inherited across ``fork`` does not)."""
        thread = self._thread
        return thread if thread is not None and thread.pid == os.getpid() else None

    def hand_over(self, thread: _Thread, timeout: float) -> bool:
        """Wait at most ``timeout`` for ``thread``'s writes; those still queued then go
        to ``left_behind`` (they may yet be applied: whoever keeps them must not mind
        seeing one twice). False when some were left behind."""
        if thread.drained(timeout):
            return True
        if self.left_behind is not None:
            thread.left = True  # it applies nothing more: what it holds is kept elsewhere
            thread.wake.set()
            thread.noted.set()  # its keeper ends
            self.left_behind(thread.notes(), thread.jobs.unfinished_tasks)
        return False

    def stop(self, timeout: float) -> None:
        """Apply what is queued (at most ``timeout``, the rest to ``left_behind``) and
        end this process's thread; the next :meth:`put` starts another."""
        with self._lock:
            thread, self._thread = self._thread, None
        _live.discard(self)
        if thread is None or thread.pid != os.getpid():
            return
        self.hand_over(thread, timeout)
        thread.jobs.put(None)
        if threading.current_thread() is not thread:
            thread.join(timeout=max(timeout, 0.1))


class _Thread(threading.Thread):
    """One process's writer thread of a :class:`WriteQueue`, and what it alone owns:
    its jobs (counted by ``queue.Queue`` until applied), its connection, and since when
    the head write has met a busy file."""

    def __init__(self, writes: WriteQueue) -> None:
        super().__init__(name=writes.name, daemon=True)
        self.writes = writes
        self.pid = os.getpid()
        self.jobs = _Jobs(self)
        self.conn: sqlite3.Connection | None = None
        #: monotonic time since which the head write has met a busy file (None: not busy)
        self.busy_since: float | None = None
        self.writing_since: float | None = None
        self.writing_note: Note | None = None
        #: why the head write is kept (the file cannot be written), None while it can be
        self.fault: sqlite3.Error | None = None
        #: tries of a kept write that failed, and what wakes the writer to try again
        self.fault_tries = 0
        self.wake = threading.Event()
        #: its writes were handed to ``left_behind``: it gives up every one it still has
        self.left = False
        #: the notes ``keep_held`` has on disk, by ``id`` until their writes are applied
        #: (held here, so no other note takes the id meanwhile); the thread keeping them
        #: (started with the first note) and what wakes it
        self.kept: dict[int, Note] = {}
        self.kept_lock = threading.Lock()
        self.noted = threading.Event()
        self.keeper: Work | None = None
        #: callers of :meth:`WriteQueue.safe` waiting for a note, and the notes among
        #: ``kept`` whose append is not done yet; both under ``kept_lock``
        self.safe_waiters: list[tuple[Note, concurrent.futures.Future[bool]]] = []
        self.appending: list[Note] = []
        self.ended = False  # its last job done: the keeper ends too
        self.start()

    def holding(self) -> bool:
        """Whether the write being applied (or the idle work: the writes behind it wait
        as long) has waited longer than :data:`STALL` (a lock held elsewhere) or is kept
        (the file cannot be written)."""
        since = self.writing_since
        return (
            self.busy_since is not None
            or self.fault is not None
            or (since is not None and time.monotonic() - since > STALL)
        )

    def was_kept(self, note: Note) -> bool:
        """Whether ``note`` itself (not an equal one) is among those kept."""
        with self.kept_lock:
            return self.kept.get(id(note)) is note

    def when_safe(
        self, note: Note, written: concurrent.futures.Future[Any]
    ) -> concurrent.futures.Future[bool]:
        """See :meth:`WriteQueue.safe`. Under ``kept_lock``, which the writer takes to
        drop a note once its write ended: a note seen queued here is told by
        :meth:`tell_safe` later; one not seen has ended, and ``written`` holds how."""
        with self.kept_lock:
            appending = any(kept is note for kept in self.appending)
            if not appending and self.kept.get(id(note)) is note:
                return _settled(True)
            if all(n is not note for n in self.notes()):
                return _settled(_applied(written))  # applied, or given up
            if self.ended or self.left:
                return _settled(False)
            future: concurrent.futures.Future[bool] = concurrent.futures.Future()
            self.safe_waiters.append((note, future))
        self.noted.set()  # the keeper looks now, not after its pause
        return future

    def tell_safe(self, notes: list[Note] | None, safe: bool) -> None:
        """Settle the :meth:`when_safe` futures of ``notes`` (None: of every note)."""
        told: list[tuple[Note, concurrent.futures.Future[bool]]] = []
        waiting: list[tuple[Note, concurrent.futures.Future[bool]]] = []
        with self.kept_lock:
            for waiter in self.safe_waiters:
                mine = notes is None or any(waiter[0] is note for note in notes)
                (told if mine else waiting).append(waiter)
            self.safe_waiters = waiting
        for _note, future in told:
            future.set_result(safe)

    def watch_notes(self) -> None:
        """A write with a note was queued: the keeper looks at it (started if need be)."""
        self.noted.set()
        if self.keeper is None:
            self.keeper = KEEPERS.submit(self._keep_held)

    def _keep_held(self) -> None:
        """The keeper (a worker, :data:`KEEPERS`): while writes with notes wait, those held (see
        :meth:`holding`) go to ``keep_held`` at once, each once; the writer thread
        cannot do it, as it waits inside SQLite's busy handler."""
        keep_held = self.writes.keep_held
        assert keep_held is not None
        try:
            self._keep_while_held(keep_held)
        finally:
            self.tell_safe(None, False)  # the writer stopped: nothing keeps them now

    def _keep_while_held(self, keep_held: Callable[[list[Note]], bool]) -> None:
        while not self.ended and not self.left:
            self.noted.clear()
            # one look, under the lock the writer takes to drop an applied note: a note
            # applied meanwhile is not seen, so never left in kept
            with self.kept_lock:
                waiting = [note for note in self.notes() if id(note) not in self.kept]
                held = bool(waiting) and self.holding()
                if held:  # first: its write may look for a copy recorded meanwhile
                    self.kept.update((id(note), note) for note in waiting)
                    self.appending = waiting  # not safe until the append ends
            if not waiting:
                self.noted.wait()
                continue
            if not held:
                self.noted.wait(STALL / 2)  # applied in a few ms, as a rule
                continue
            kept = keep_held(waiting)
            with self.kept_lock:
                self.appending = []
                if not kept:  # the disk is full too: tried again, and at exit
                    for note in waiting:
                        self.kept.pop(id(note), None)
            if not kept:
                self.tell_safe(waiting, False)
                self.noted.wait(FAULT_PAUSE)
            else:
                self.tell_safe(waiting, True)

    def notes(self) -> list[Note]:
        """The notes of the writes not applied yet, in order (the one being applied first)."""
        with self.jobs.mutex:  # a write taken names itself under it (see _Jobs)
            queued = [item[2] for item in self.jobs.queue if item is not None]
            head = self.writing_note
        return [n for n in (head, *queued) if n is not None and (n is not head or n not in queued)]

    def drained(self, timeout: float | None) -> bool:
        """Wait until every job queued so far is applied (or given up); False on timeout,
        or once a try made meanwhile of a kept write failed (the file is still unwritable:
        waiting longer would not help the caller)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        tries = self.fault_tries
        self.wake.set()  # a kept write is tried now
        with self.jobs.all_tasks_done:
            while self.jobs.unfinished_tasks:
                remaining = None if deadline is None else deadline - time.monotonic()
                if (remaining is not None and remaining <= 0) or self.fault_tries > tries:
                    return False
                # a failed try does not notify: look again every few ms while one is kept
                step = 0.02 if self.fault is not None else 0.5
                self.jobs.all_tasks_done.wait(step if remaining is None else min(remaining, step))
        return True

    def reset_connection(self) -> None:
        """Forget the connection: the next write opens a new one."""
        if self.conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self.conn.close()
        self.conn = None

    def run(self) -> None:
        writes = self.writes
        next_idle = time.monotonic() + writes.idle_every
        while True:
            try:
                item = self.jobs.get(timeout=max(0.0, next_idle - time.monotonic()))
            except queue.Empty:
                item = _NOTHING
            if time.monotonic() >= next_idle:  # on time however busy the queue is
                next_idle = time.monotonic() + writes.idle_every
                idle = writes.idle() if writes.idle is not None else None
                if idle is not None:  # a lock it meets holds the writes behind it too
                    self.writing_since = time.monotonic()
                    self._apply(idle, None, keep=False)
            if item is _NOTHING or item is None:
                self.writing_since = None
            if item is _NOTHING:
                continue
            if item is None:
                self.reset_connection()
                self.jobs.task_done()
                self.ended = True
                self.noted.set()
                return
            op, future, self.writing_note, ended = item
            if self.writing_since is None:  # else held since the idle work met the lock
                self.writing_since = time.monotonic()
            applied = False
            try:
                applied = self._apply(op, future)
            finally:
                with self.kept_lock:  # with the keeper's look (see _keep_held)
                    note, self.writing_note = self.writing_note, None
                    if note is not None:
                        self.kept.pop(id(note), None)
                self.writing_since = None
                if note is not None:
                    self.tell_safe([note], applied)
                if ended is not None:
                    try:
                        ended(applied)
                    except Exception:  # never the writer's end: logged
                        log.exception("genwidgets: settling a ledger write failed")
                self.jobs.task_done()

    def _open(self) -> sqlite3.Connection:
        """The writer's connection, opened anew. The file opened once, failing to open
        it again (too many open files, a folder made unreadable) raises SQLite's error:
        a passing fault, the writes kept, never the given-up write a first open's is."""
        try:
            conn = self.writes.connect()
        except LedgerError as exc:
            if self.writes.opened and isinstance(exc.__cause__, sqlite3.Error):
                raise exc.__cause__ from exc
            raise
        self.writes.opened = True
        return conn

    def _apply(
        self, op: Op | None, future: concurrent.futures.Future[Any] | None, *, keep: bool = True
    ) -> bool:
        """Run one write until it commits, ends in its own error, or is given up (True:
        it committed). A write the file cannot take now is kept (unless not ``keep``: the
        idle work) and tried again every :data:`FAULT_PAUSE` or when woken; its caller
        gets the error at once."""
        set_aside = 0
        result: Any = None
        error: BaseException | None = None
        while True:
            if self.left:
                error = LeftBehind("left behind when the writer stopped (a LedgerWarning said it)")
                break
            try:
                if self.conn is not None and self.writes.moved and self.writes.moved(self.conn):
                    self.reset_connection()
                if self.conn is None:
                    self.conn = self._open()
                if op is not None:
                    with immediate(self.conn) as conn:
                        result = op(conn)
            except sqlite3.Error as exc:
                if is_busy(exc):
                    if self.busy_since is None:
                        self.busy_since = time.monotonic()
                    time.sleep(RETRY_PAUSE)
                    continue
                self.busy_since = None
                self.reset_connection()
                action = self.writes.on_fault(exc) if set_aside < MAX_SET_ASIDE else "give_up"
                if action == "retry":
                    set_aside += 1  # a fresh file failing the same way is not damage
                    continue
                if action == "keep" and keep:
                    self.fault, self.fault_tries = exc, self.fault_tries + 1
                    if future is not None:  # its caller goes on; the write stays first
                        future.set_exception(exc)
                        future = None
                    self.wake.wait(FAULT_PAUSE)
                    self.wake.clear()
                    continue
                error = exc
            except BaseException as exc:  # the write's own error (no such row): report it
                error = exc
            break
        self.busy_since = None
        if self.fault is not None and not self.left:  # the file took the write: go on
            self.fault = None
            if self.writes.recovered is not None and not isinstance(error, sqlite3.Error):
                self.writes.recovered()
        if future is None:  # the idle work (the heartbeat): no one waits for it
            if error is not None:
                log.info("genwidgets: a background ledger write failed: %s", error)
        elif error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)
        return error is None


class _Jobs(queue.Queue[_Item]):
    """A writer thread's jobs. The job taken becomes the thread's ``writing_note`` under
    the queue's own lock, in the step that takes it out, so :meth:`_Thread.notes` sees
    each write in the queue or being applied until it ends, never in neither (the
    keeper sees it while the idle work runs; a tagged create's intent is never read as
    ended before it is, docs/decisions.md#ledger-intent)."""

    def __init__(self, thread: _Thread) -> None:
        super().__init__()
        self.thread = thread

    def _get(self) -> _Item:
        item: _Item = super()._get()
        if item is not None:
            self.thread.writing_note = item[2]
        return item
