"""The ledger's store: one SQLite file, written in order, read by any kernel.

See :mod:`genwidgets.jobs.ledger` for the order of writes and the states,
:mod:`.writes` for the writes, :mod:`.file` for the file's health, :mod:`.lease`
for task owners, and :mod:`.schema`, :mod:`.rows` and :mod:`.scrub` for the
file, the row and what is kept of a payload.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..._config import home
from ...errors import LedgerError
from .file import FileKeeping, _damage, _quick_check
from .lease import HOST, Owner, heartbeat, pid_alive, release
from .rows import (
    COLUMN_NAMES,
    COLUMNS,
    FAILED,
    FINISHED,
    OK,
    OUTCOME_UNKNOWN,
    STATES,
    SUBMITTED,
    SUBMITTING,
    UNFINISHED,
    LedgerRow,
)
from .writer import Op, Writer
from .writes import Recording, in_flight_lock

__all__ = ["LEDGER_FILE_NAME", "Ledger"]

LEDGER_FILE_NAME = "ledger.sqlite3"
#: how long a read made on the engine's loop waits for queued writes (a free file
#: writes them in milliseconds; a busy one is not waited for at all)
QUICK_FLUSH = 0.1
#: how long ``Ledger()`` waits for the file to open (a free file opens in milliseconds;
#: one that needs a lock to be created or migrated opens later, in the writer)
OPEN_WAIT = 1.0
log = logging.getLogger("genwidgets")


class Ledger(FileKeeping, Recording):
    """The on-disk record of every task of every kernel on this machine.

    Writes go to one writer thread (:mod:`.writer`) and reach the file in the
    order they were made; a file locked by another process delays them, never
    the caller. Reads use their own connection (WAL readers do not wait for a
    writer) after waiting, at most ``busy_timeout`` seconds, for the writes
    queued before them. Thread-safe, safe across processes, and reopened after
    ``fork``. See docs/decisions.md#the-ledger-and-the-engine.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        stale_after: float = 60.0,
        busy_timeout: float = 5.0,
        intent_wait: float = 0.25,
        lease_ttl: float = 120.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = Path(path) if path is not None else home() / LEDGER_FILE_NAME
        for name, value in (
            ("stale_after", stale_after),
            ("busy_timeout", busy_timeout),
            ("lease_ttl", lease_ttl),
        ):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ValueError(f"{name} must be a positive number of seconds, not {value!r}")
        if isinstance(intent_wait, bool) or not isinstance(intent_wait, (int, float)):
            raise ValueError(f"intent_wait must be a number of seconds, not {intent_wait!r}")
        self.stale_after = float(stale_after)
        self.busy_timeout = float(busy_timeout)
        #: how long ``record_intent`` waits for its row to be on disk before the
        #: create may leave anyway (the row follows when the ledger frees)
        self.intent_wait = max(0.0, float(intent_wait))
        self.lease_ttl = float(lease_ttl)
        self._clock = clock
        self._lock = threading.RLock()  # the readers' connection
        self._writer_lock = threading.Lock()  # never held while waiting for the file
        self._conn: sqlite3.Connection | None = None
        self._conn_pid = 0
        self._reopen_reads = False
        self._abandoned: list[sqlite3.Connection] = []
        #: where an unusable file found at ``path`` was moved (None if none was)
        self.set_aside: Path | None = None
        #: why the file cannot be written (None while it can): writes are given up
        self.unwritable: str | None = None
        #: writes given up because the file could not be written
        self.dropped = 0
        self._notices: list[str] = []
        self._notices_lock = threading.Lock()
        self._last_status: dict[tuple[str, str], tuple[str, int | None]] = {}
        self._ids: dict[int, int] = {}  # intent ticket -> row id
        self._owner = Owner()
        self._leasing = False
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._key = str(self.path.resolve())
        self.journal_mode = ""
        self._writer: Writer | None = None
        opened = self._put(None)  # the writer opens (and checks) the file: no lock needed
        try:
            opened.result(timeout=min(OPEN_WAIT, self.busy_timeout))
        except concurrent.futures.TimeoutError:
            log.warning(
                "genwidgets: the ledger %s is busy (locked by another process); "
                "rows are kept in order and written when it frees",
                self.path,
            )
        except LedgerError:
            self._stop_writer(0.0)
            raise
        except sqlite3.Error:
            pass  # said by a LedgerWarning (delivered below)
        self._deliver()

    def __repr__(self) -> str:
        return f"Ledger({str(self.path)!r})"

    # ------------------------------------------------------------------ the writer

    def _put(self, op: Op | None) -> concurrent.futures.Future[Any]:
        with self._writer_lock:
            writer = self._writer
            if writer is None or writer.pid != os.getpid() or not writer.thread.is_alive():
                writer = self._writer = Writer(
                    self._open_for_writes,
                    self._on_fault,
                    name=f"genwidgets-ledger-{self.path.name}",
                    idle=self._idle,
                    idle_every=self.lease_ttl / 4,
                    exit_wait=self.busy_timeout,
                )
            return writer.put(op)

    def _idle(self) -> Op | None:
        """The writer's idle work: the heartbeat of this ledger's leases."""
        if not self._leasing:
            return None
        owner, now = self._owner.name, self._clock()
        return lambda conn: heartbeat(conn, owner, now)

    def _quietly(self, what: str, future: concurrent.futures.Future[Any]) -> None:
        """Log (once it ends) a background write that failed; the warning says the rest."""

        def done(f: concurrent.futures.Future[Any]) -> None:
            exc = f.exception()
            if exc is not None:  # once the file is known unwritable, the warning said it all
                level = logging.DEBUG if self.unwritable is not None else logging.WARNING
                log.log(level, "genwidgets: could not record %s in the ledger: %s", what, exc)

        future.add_done_callback(done)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every write made so far is on disk (or given up); False on timeout.

        ``timeout`` defaults to ``busy_timeout``.
        """
        writer = self._writer
        done = writer is None or writer.flush(self.busy_timeout if timeout is None else timeout)
        self._deliver()
        return done

    def _stalled(self) -> bool:
        writer = self._writer
        return writer is not None and writer.stalled

    @property
    def pending(self) -> int:
        """Writes queued and not yet on disk (more than 0 while another process holds a lock)."""
        writer = self._writer
        return 0 if writer is None else writer.pending

    def _stop_writer(self, timeout: float) -> None:
        with self._writer_lock:
            writer, self._writer = self._writer, None
        if writer is not None and writer.pid == os.getpid():
            writer.stop(timeout)

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            conn = self._connection()
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield conn
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                if _damage(exc):
                    self._check_on_writer()
                raise LedgerError(f"cannot write the ledger {self.path}: {exc}") from exc

    def _check_on_writer(self) -> None:
        """A transaction met a damaged file: the writer checks it and, damaged, moves it
        aside and starts a fresh one, as after a failed write of its own (the warning
        follows at once). On the writer's thread, so its connection never writes the old file."""

        def check(conn: sqlite3.Connection) -> None:
            problem = _quick_check(conn)
            if problem:
                raise sqlite3.DatabaseError(f"database disk image is malformed ({problem})")

        with contextlib.suppress(Exception):  # what the check found is said by the warning
            self._put(check).result(timeout=self.busy_timeout)
        self._deliver()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (``BEGIN IMMEDIATE``) on this ledger's file, for tables
        of other parts of genwidgets kept beside ``tasks`` (the prompt lab's grids).

        Runs on the caller's thread (it waits for a lock held elsewhere, up to
        ``busy_timeout``), after the ledger's own queued writes. Commits when the
        block ends, rolls back on an exception; sqlite3 errors become
        :class:`LedgerError` (a damaged file is then moved aside, as on a failed write
        of the ledger's own).
        """
        self.flush()
        with self._write() as conn:
            yield conn

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Rows of one read-only statement on this ledger's file (see :meth:`transaction`)."""
        return self._read(sql, params)

    def _read(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            try:
                return self._connection().execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise LedgerError(f"cannot read the ledger {self.path}: {exc}") from exc

    def release(self) -> None:
        """Give up the leases of this ledger's tasks (queued): another kernel's
        ``resume()`` takes them at once. The next task created takes a lease again."""
        if self._leasing:
            self._leasing = False
            owner = self._owner.name
            self._quietly("the end of leases", self._put(lambda conn: release(conn, owner)))

    def close(self) -> None:
        """Write what is queued (at most ``busy_timeout``), give up this ledger's leases,
        and close its connections (they reopen on the next call)."""
        self.release()
        self._stop_writer(self.busy_timeout)
        with self._lock:
            if self._conn is not None and self._conn_pid == os.getpid():
                self._conn.close()
            self._conn = None
        self._deliver()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ reads

    def _derived_state(self, state: str, row_id: int, pid: int, host: str, at: float) -> str:
        if state != SUBMITTING:
            return state
        with in_flight_lock:
            if row_id in self._in_flight():
                return SUBMITTING
        if host == HOST and (pid == os.getpid() or not pid_alive(pid)):
            return OUTCOME_UNKNOWN
        if self._clock() - at > self.stale_after:
            return OUTCOME_UNKNOWN
        return SUBMITTING

    def _readable(self, found: list[tuple[Any, ...]]) -> list[LedgerRow]:
        """The rows that can be read; a damaged one (written by hand, by a foreign tool)
        is skipped with a log line, so one bad row never stops a history or a poller."""
        rows = []
        for values in found:
            try:
                rows.append(self._row(values))
            except (ValueError, TypeError, KeyError) as exc:
                log.warning(
                    "genwidgets: skipped ledger row %s of %s: %s", values[0], self.path, exc
                )
        return rows

    def _row(self, values: tuple[Any, ...]) -> LedgerRow:
        fields = dict(zip(COLUMN_NAMES, values, strict=True))
        fields["state"] = self._derived_state(
            fields["state"], fields["id"], fields["pid"], fields["host"], fields["submitted_at"]
        )
        fields["payload"] = json.loads(fields["payload"])
        fields["outputs"] = json.loads(fields["outputs"])
        fields["ok"] = None if fields["ok"] is None else bool(fields["ok"])
        return LedgerRow(**fields)

    def rows(
        self,
        gateway: str | None = None,
        *,
        endpoint: str | None = None,
        status: str | None = None,
        limit: int | None = None,
    ) -> list[LedgerRow]:
        """Rows, newest first.

        ``status`` matches a state (``submitting``, ``submitted``, ``not_created``,
        ``outcome_unknown``, ``finished``), ``unfinished`` (see the module
        docstring), ``ok`` / ``failed`` (finished tasks by outcome), or else the
        last gateway status name, case-insensitively (``COMPLETED``, ``IN_QUEUE``...).
        """
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
            raise TypeError(f"limit must be an int or None, not {limit!r}")
        if limit is not None and limit < 0:
            raise ValueError(f"limit must be 0 or more, not {limit}")
        if status is not None and not isinstance(status, str):
            raise TypeError(f"status must be a string or None, not {status!r}")
        clauses: list[str] = []
        params: list[Any] = []
        for column, value in (("gateway", gateway), ("endpoint", endpoint)):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        wanted_state: str | None = None
        if status is not None:
            name = status.strip().lower()
            if name == UNFINISHED:
                clauses.append("state = ? AND request_id IS NOT NULL")
                params.append(SUBMITTED)
            elif name in (SUBMITTING, OUTCOME_UNKNOWN):
                clauses.append("state IN (?, ?)")
                params += [SUBMITTING, OUTCOME_UNKNOWN]
                wanted_state = name
            elif name in STATES:
                clauses.append("state = ?")
                params.append(name)
            elif name in (OK, FAILED):
                clauses.append("state = ? AND ok = ?")
                params += [FINISHED, int(name == OK)]
            else:
                clauses.append("upper(status) = upper(?)")
                params.append(status.strip())
        self.flush()
        sql = f"SELECT {COLUMNS} FROM tasks"
        if clauses:
            sql += " WHERE " + " AND ".join(f"({c})" for c in clauses)
        sql += " ORDER BY id DESC"
        if limit is not None and wanted_state is None:
            sql += f" LIMIT {limit}"
        found = self._readable(self._read(sql, tuple(params)))
        if wanted_state is not None:
            found = [row for row in found if row.state == wanted_state]
            if limit is not None:
                found = found[:limit]
        return found

    def unfinished(self, gateway: str) -> list[LedgerRow]:
        """Tasks of ``gateway`` created but without a recorded result, newest first."""
        return self.rows(gateway, status=UNFINISHED)

    def get(self, gateway: str, request_id: str) -> LedgerRow | None:
        """The (newest) row of one task, or None."""
        self.flush()
        found = self._read(
            f"SELECT {COLUMNS} FROM tasks WHERE gateway = ? AND request_id = ? "
            "ORDER BY id DESC LIMIT 1",
            (gateway, request_id),
        )
        readable = self._readable(found)
        return readable[0] if readable else None

    def row(self, row_id: int) -> LedgerRow | None:
        """A row by its id (or the ticket :meth:`record_intent` returned)."""
        self.flush()
        found = self._read(f"SELECT {COLUMNS} FROM tasks WHERE id = ?", (self._row_of(row_id),))
        readable = self._readable(found)
        return readable[0] if readable else None

    def run_times(self, gateway: str, endpoint: str, *, limit: int = 500) -> list[tuple[Any, ...]]:
        """``(request_id, endpoint, payload, handle_at, running_at, done_at, finished_at,
        ok)`` of finished tasks, newest first, unparsed: the run-time model checks (and
        skips) each row itself, so one bad row never hides the others.

        Called on the engine's loop: it waits for queued writes only while the
        file is not busy (a lock held elsewhere makes it read what is on disk)."""
        writer = self._writer
        if writer is not None and not writer.stalled:
            writer.flush(QUICK_FLUSH)
        return self._read(
            "SELECT request_id, endpoint, payload, handle_at, running_at, done_at, "
            "finished_at, ok FROM tasks "
            "WHERE gateway = ? AND endpoint = ? AND state = ? AND finished_at IS NOT NULL "
            "ORDER BY id DESC LIMIT ?",
            (gateway, endpoint, FINISHED, int(limit)),
        )
