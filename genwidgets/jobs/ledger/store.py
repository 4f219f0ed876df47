"""The ledger's store: one SQLite file, written in order, read by any kernel.

See :mod:`genwidgets.jobs.ledger` for the order of writes and the states, and
:mod:`.schema`, :mod:`.rows` and :mod:`.scrub` for the file, the row and what
is kept of a payload.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sqlite3
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..._config import home, redact
from ...errors import LedgerError, LedgerWarning
from ...protocol.records import Handle, Result, Status
from .rows import (
    COLUMN_NAMES,
    COLUMNS,
    FAILED,
    FINISHED,
    NOT_CREATED,
    OK,
    OUTCOME_UNKNOWN,
    STATES,
    SUBMITTED,
    SUBMITTING,
    UNFINISHED,
    LedgerRow,
)
from .schema import ensure_schema
from .scrub import error_text, output_record, scrub_payload

__all__ = ["LEDGER_FILE_NAME", "Ledger"]

LEDGER_FILE_NAME = "ledger.sqlite3"
log = logging.getLogger("genwidgets")


def _latest_outputs(
    conn: sqlite3.Connection, gateway: str, request_id: str
) -> tuple[int, list[dict[str, Any]]] | None:
    """The id and outputs of the newest row recorded for a task, or None."""
    found = conn.execute(
        "SELECT id, outputs FROM tasks WHERE id = "
        "(SELECT max(id) FROM tasks WHERE gateway = ? AND request_id = ?)",
        (gateway, request_id),
    ).fetchone()
    if found is None:
        return None
    row_id, outputs = found
    return row_id, json.loads(outputs)


# row ids this process is sending right now, per ledger file (shared by Ledger instances)
_in_flight: dict[str, set[int]] = {}
_in_flight_lock = threading.Lock()
_HOST = socket.gethostname()


def _pid_alive(pid: int) -> bool:
    """Whether a process of this host still runs; unknown counts as alive."""
    if pid <= 0:
        return False
    if os.name == "nt":  # os.kill(pid, 0) would terminate it there
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: alive but someone else's
        return True
    return True


class Ledger:
    """The on-disk record of every task of every kernel on this machine.

    Thread-safe (one connection guarded by a lock, reopened after ``fork``) and
    safe across processes (WAL, busy timeout, ``BEGIN IMMEDIATE`` for writes).
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        stale_after: float = 60.0,
        busy_timeout: float = 30.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = Path(path) if path is not None else home() / LEDGER_FILE_NAME
        if stale_after <= 0 or busy_timeout <= 0:
            raise ValueError("stale_after and busy_timeout must be positive numbers of seconds")
        self.stale_after = float(stale_after)
        self.busy_timeout = float(busy_timeout)
        self._clock = clock
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._conn_pid = 0
        self._abandoned: list[sqlite3.Connection] = []
        #: where an unusable file found at ``path`` was moved (None if none was)
        self.set_aside: Path | None = None
        self._last_status: dict[tuple[str, str], tuple[str, int | None]] = {}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._key = str(self.path.resolve())
        self.journal_mode = ""
        with self._lock:
            self._connection()

    def __repr__(self) -> str:
        return f"Ledger({str(self.path)!r})"

    # ------------------------------------------------------------------ connection

    def _connection(self) -> sqlite3.Connection:
        if self._conn is not None and self._conn_pid == os.getpid():
            return self._conn
        if self._conn is not None:  # inherited across fork: never touch it again
            self._abandoned.append(self._conn)
        self._conn = None
        try:
            conn = self._open()
        except LedgerError as exc:
            if not exc.replaceable:
                raise
            self._set_aside(exc)
            conn = self._open()
        self._conn, self._conn_pid = conn, os.getpid()
        return conn

    def _open(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(
                self.path,
                timeout=self.busy_timeout,
                isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error as exc:
            raise LedgerError(f"cannot open the ledger {self.path}: {exc}") from exc
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
            ensure_schema(conn, self.path)  # first: a file that is not ours stays untouched
            self.journal_mode = str(conn.execute("PRAGMA journal_mode = WAL").fetchone()[0])
            conn.execute("PRAGMA synchronous = NORMAL")
        except sqlite3.OperationalError as exc:  # locked, I/O: the file may be fine
            conn.close()
            raise LedgerError(f"cannot open the ledger {self.path}: {exc}") from exc
        except sqlite3.DatabaseError as exc:  # not a database, malformed
            conn.close()
            raise LedgerError(
                f"{self.path} is not a usable genwidgets ledger ({exc})", replaceable=True
            ) from exc
        except BaseException:
            conn.close()
            raise
        return conn

    def _set_aside(self, why: LedgerError) -> None:
        """Move an unusable file (and its WAL companions) aside, keeping it, and say where."""
        stamp = time.strftime("%Y%m%d-%H%M%S")
        aside = self.path.with_name(f"{self.path.name}.unusable-{stamp}-{os.getpid()}")
        for suffix in ("", "-wal", "-shm"):
            source = self.path.with_name(self.path.name + suffix)
            if source.exists():
                os.replace(source, aside.with_name(aside.name + suffix))
        self.set_aside = aside
        warnings.warn(
            f"genwidgets: {redact(str(why))}. It was moved to {aside} (kept as it was) and a "
            f"new task ledger was started at {self.path}; recording goes on.",
            LedgerWarning,
            stacklevel=4,
        )

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
                raise LedgerError(f"cannot write the ledger {self.path}: {exc}") from exc

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (``BEGIN IMMEDIATE``) on this ledger's file, for tables
        of other parts of genwidgets kept beside ``tasks`` (the prompt lab's grids).

        Thread-safe and safe across kernels like the ledger's own writes; commits
        when the block ends, rolls back on an exception. sqlite3 errors become
        :class:`LedgerError`.
        """
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

    def close(self) -> None:
        """Close this process's connection (it reopens on the next call)."""
        with self._lock:
            if self._conn is not None and self._conn_pid == os.getpid():
                self._conn.close()
            self._conn = None

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ in flight

    def _in_flight(self) -> set[int]:
        return _in_flight.setdefault(self._key, set())

    def _settle(self, row_id: int) -> None:
        with _in_flight_lock:
            self._in_flight().discard(row_id)

    # ------------------------------------------------------------------ writes

    def record_intent(self, *, gateway: str, endpoint: str, payload: Mapping[str, Any]) -> int:
        """Write the intent before the create request leaves; returns the row id."""
        for name, value in (("gateway", gateway), ("endpoint", endpoint)):
            if not isinstance(value, str) or not value:
                raise ValueError(f"{name} must be a non-empty string, not {value!r}")
        stored = json.dumps(scrub_payload(payload))
        now = self._clock()
        with self._write() as conn:
            cursor = conn.execute(
                "INSERT INTO tasks (gateway, endpoint, state, payload, pid, host, "
                "submitted_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (gateway, endpoint, SUBMITTING, stored, os.getpid(), _HOST, now, now),
            )
            row_id = cursor.lastrowid
        assert row_id is not None
        with _in_flight_lock:
            self._in_flight().add(row_id)
        return row_id

    def record_handle(self, row_id: int, handle: Handle) -> None:
        """The create request answered with a task handle: the task exists."""
        now = self._clock()
        try:
            with self._write() as conn:
                changed = conn.execute(
                    "UPDATE tasks SET request_id = ?, state = ?, status_url = ?, "
                    "response_url = ?, cancel_url = ?, queue_position = ?, handle_at = ?, "
                    "updated_at = ? WHERE id = ?",
                    (
                        handle.request_id,
                        SUBMITTED,
                        redact(handle.status_url),
                        redact(handle.response_url),
                        redact(handle.cancel_url),
                        handle.queue_position,
                        now,
                        now,
                        row_id,
                    ),
                ).rowcount
                if not changed:
                    raise LedgerError(f"no ledger row {row_id} in {self.path}")
        finally:
            self._settle(row_id)

    def record_create_failed(self, row_id: int, error: str, *, created_nothing: bool) -> None:
        """The create request failed: ``not_created`` if certain, else ``outcome_unknown``."""
        now = self._clock()
        state = NOT_CREATED if created_nothing else OUTCOME_UNKNOWN
        try:
            with self._write() as conn:
                changed = conn.execute(
                    "UPDATE tasks SET state = ?, error = ?, updated_at = ?, finished_at = ? "
                    "WHERE id = ? AND request_id IS NULL",
                    (state, error_text(error), now, now if created_nothing else None, row_id),
                ).rowcount
                if not changed:
                    exists = conn.execute("SELECT 1 FROM tasks WHERE id = ?", (row_id,))
                    if exists.fetchone() is None:
                        raise LedgerError(f"no ledger row {row_id} in {self.path}")
        finally:
            self._settle(row_id)

    def record_attach(
        self,
        gateway: str,
        handle: Handle,
        *,
        payload: Mapping[str, Any] | None = None,
    ) -> int:
        """Make sure a task re-attached by request id has a row; returns its id."""
        found = self._row_id(gateway, handle.request_id)
        if found is not None:
            return found
        now = self._clock()
        with self._write() as conn:
            cursor = conn.execute(
                "INSERT INTO tasks (gateway, endpoint, request_id, state, queue_position, "
                "payload, status_url, response_url, cancel_url, pid, host, submitted_at, "
                "handle_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    gateway,
                    handle.endpoint,
                    handle.request_id,
                    SUBMITTED,
                    handle.queue_position,
                    json.dumps(scrub_payload(payload or {})),
                    redact(handle.status_url),
                    redact(handle.response_url),
                    redact(handle.cancel_url),
                    os.getpid(),
                    _HOST,
                    now,
                    now,
                    now,
                ),
            )
            assert cursor.lastrowid is not None
            return cursor.lastrowid

    def record_status(self, gateway: str, request_id: str, status: Status) -> bool:
        """Note a status change; repeated equal statuses write nothing.

        Returns whether a row changed (False for an unknown task, a repeat, or a
        task whose final result is already recorded).
        """
        key = (gateway, request_id)
        seen = (status.status, status.queue_position)
        if self._last_status.get(key) == seen:
            return False
        now = self._clock()
        name = status.status.upper()
        running = now if name != "IN_QUEUE" and not status.done else None
        done = now if status.done else None
        with self._write() as conn:
            changed = conn.execute(
                "UPDATE tasks SET status = ?, queue_position = ?, updated_at = ?, "
                "running_at = coalesce(running_at, ?), done_at = coalesce(done_at, ?) "
                "WHERE id = (SELECT max(id) FROM tasks WHERE gateway = ? AND request_id = ?) "
                "AND finished_at IS NULL AND (status IS NOT ? OR queue_position IS NOT ?)",
                (
                    redact(status.status),
                    status.queue_position,
                    now,
                    running,
                    done,
                    gateway,
                    request_id,
                    redact(status.status),
                    status.queue_position,
                ),
            ).rowcount
        if changed:
            self._last_status[key] = seen
        return bool(changed)

    def record_result(self, gateway: str, request_id: str, result: Result) -> bool:
        """Store the final answer; local paths already recorded are kept."""
        outputs = [output_record(o) for o in result.outputs]
        now = self._clock()
        with self._write() as conn:
            found = _latest_outputs(conn, gateway, request_id)
            if found is None:
                return False
            row_id, old_outputs = found
            known_paths = {o.get("index"): o.get("path") for o in old_outputs}
            for record in outputs:
                if record["path"] is None:
                    record["path"] = known_paths.get(record["index"])
            conn.execute(
                "UPDATE tasks SET state = ?, status = ?, queue_position = NULL, ok = ?, "
                "error = ?, error_type = ?, outputs = ?, finished_at = ?, updated_at = ?, "
                "done_at = coalesce(done_at, finished_at, ?) WHERE id = ?",
                (
                    FINISHED,
                    redact(result.status),
                    int(result.ok),
                    error_text(result.error),
                    error_text(result.error_type),
                    json.dumps(outputs),
                    now,
                    now,
                    now,
                    row_id,
                ),
            )
        self._last_status.pop((gateway, request_id), None)
        return True

    def record_output_path(
        self, gateway: str, request_id: str, index: int, path: str | os.PathLike[str]
    ) -> bool:
        """Remember where output ``index`` was saved locally."""
        local = str(Path(path).absolute())
        with self._write() as conn:
            found = _latest_outputs(conn, gateway, request_id)
            if found is None:
                return False
            row_id, outputs = found
            for record in outputs:
                if record.get("index") == index:
                    record["path"] = local
                    break
            else:
                outputs.append({"index": index, "path": local})
                outputs.sort(key=lambda o: o.get("index", 0))
            conn.execute(
                "UPDATE tasks SET outputs = ?, updated_at = ? WHERE id = ?",
                (json.dumps(outputs), self._clock(), row_id),
            )
        return True

    # ------------------------------------------------------------------ reads

    def _row_id(self, gateway: str, request_id: str) -> int | None:
        found = self._read(
            "SELECT max(id) FROM tasks WHERE gateway = ? AND request_id = ?",
            (gateway, request_id),
        )
        return found[0][0] if found else None

    def _derived_state(self, state: str, row_id: int, pid: int, host: str, at: float) -> str:
        if state != SUBMITTING:
            return state
        with _in_flight_lock:
            if row_id in self._in_flight():
                return SUBMITTING
        if host == _HOST and (pid == os.getpid() or not _pid_alive(pid)):
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
        found = self._read(
            f"SELECT {COLUMNS} FROM tasks WHERE gateway = ? AND request_id = ? "
            "ORDER BY id DESC LIMIT 1",
            (gateway, request_id),
        )
        readable = self._readable(found)
        return readable[0] if readable else None

    def row(self, row_id: int) -> LedgerRow | None:
        """A row by its id (as returned by :meth:`record_intent`)."""
        found = self._read(f"SELECT {COLUMNS} FROM tasks WHERE id = ?", (row_id,))
        readable = self._readable(found)
        return readable[0] if readable else None
