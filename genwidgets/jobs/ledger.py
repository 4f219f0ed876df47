"""The task ledger: every paid task on disk, so a kernel restart loses none of them.

One SQLite file (``GENWIDGETS_HOME/ledger.sqlite3``, standard library ``sqlite3``)
in WAL mode with a busy timeout, shared safely by several kernels at once. The
engine writes, in order:

1. :meth:`Ledger.record_intent` *before* the create request leaves (state
   ``submitting``);
2. :meth:`Ledger.record_handle` the moment the handle arrives (``submitted``),
   or :meth:`Ledger.record_create_failed` (``not_created`` when the request
   certainly created nothing, ``outcome_unknown`` when it may have);
3. :meth:`Ledger.record_status` on every status change;
4. :meth:`Ledger.record_result` with the final answer (``finished``), then
   :meth:`Ledger.record_output_path` for each local copy.

States of a row (``LedgerRow.state``)::

    submitting ──handle──▶ submitted ──result──▶ finished
        │
        ├──create failed, nothing created──▶ not_created
        └──create failed, maybe created / process died──▶ outcome_unknown

*Outcome unknown, never a silent gap.* A process that dies between sending
the create request and receiving the handle leaves its row ``submitting`` on
disk. Reads report such a row as ``outcome_unknown`` when

- it was written by a process on this host that is no longer alive (we store
  ``pid`` and host name; a row of our own pid that this process is not
  sending right now counts as dead, which covers pid reuse after a restart), or
- it is older than ``stale_after`` seconds (60 by default) — the only test
  possible for rows of another host, and a bound on pid reuse by others.

Rows this process is sending right now stay ``submitting`` however long the
request takes. The stored state is not rewritten by reads.

Other choices where the spec is silent:

- ``gateway`` is the client's base URL (the embedded simulator passes
  ``"simulator"``); rows are matched by ``(gateway, request_id)``, the newest
  row winning should a gateway ever reuse a request id.
- "Unfinished" means: has a request id and no final result recorded yet — so a
  task whose last status said ``COMPLETED`` but whose result was never fetched
  is still resumed.
- Payloads are stored scrubbed (:func:`scrub_payload`): data URLs and base64
  strings of 1024 characters or more become ``<data:image/png;base64
  sha256=… bytes=…>`` / ``<base64 sha256=… bytes=…>`` (digest and size of the
  *decoded* bytes), any other string over 64 KiB becomes ``<text sha256=…
  bytes=…>``, credential-like keys (``Authorization``, ``X-API-Key``, ``api_key``)
  are dropped, and every stored text goes through :func:`genwidgets._config.redact`.
  There is no key parameter anywhere in this module.
- Inline output content (JSON records, hex audio) is kept when under 64 KiB.
- ``synchronous=NORMAL``: in WAL mode a crash of the process (SIGKILL, kernel
  restart) loses nothing committed; only a power cut may lose the last writes.
- WAL needs a local filesystem; where SQLite refuses it the ledger keeps the
  rollback journal (still safe, slower under contention).
- Schema versions live in a ``meta`` table; older files are migrated in place,
  newer or foreign files are refused with an error saying what to do.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import re
import socket
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote_to_bytes

from .._config import home, redact
from ..errors import LedgerError
from ..protocol.records import Fetcher, Handle, Output, Result, Status

__all__ = [
    "FINISHED",
    "NOT_CREATED",
    "OUTCOME_UNKNOWN",
    "SCHEMA_VERSION",
    "STATES",
    "SUBMITTED",
    "SUBMITTING",
    "Ledger",
    "LedgerRow",
    "scrub_payload",
]

SUBMITTING = "submitting"
SUBMITTED = "submitted"
NOT_CREATED = "not_created"
OUTCOME_UNKNOWN = "outcome_unknown"
FINISHED = "finished"
STATES = frozenset({SUBMITTING, SUBMITTED, NOT_CREATED, OUTCOME_UNKNOWN, FINISHED})
#: status filters that are not states nor gateway status names
UNFINISHED = "unfinished"
OK = "ok"
FAILED = "failed"

SCHEMA_VERSION = 1
APPLICATION = "genwidgets-ledger"
LEDGER_FILE_NAME = "ledger.sqlite3"

#: strings this long (characters) are checked for being data URLs / base64
LARGE_STRING = 1024
#: any string longer than this is replaced by its digest
MAX_TEXT = 64 * 1024
#: inline output content longer than this (characters) is replaced by its digest
MAX_INLINE_CONTENT = 64 * 1024
#: error texts are cut to this many characters
MAX_ERROR = 16 * 1024
#: key names (lower case, without "-", "_" and spaces) dropped from stored payloads
CREDENTIAL_KEYS = frozenset({"authorization", "proxyauthorization", "xapikey", "apikey"})


# --------------------------------------------------------------------------- scrubbing


def _digest(data: bytes) -> str:
    return f"sha256={hashlib.sha256(data).hexdigest()} bytes={len(data)}"


_DATA_URL = re.compile(r"data:(?P<head>[^,]*),", re.IGNORECASE | re.DOTALL)
_BASE64_TEXT = re.compile(r"[A-Za-z0-9+/\-_\r\n]+={0,2}")


def _decode_base64(text: str) -> bytes | None:
    compact = re.sub(r"[\r\n]", "", text)
    compact += "=" * (-len(compact) % 4)
    try:
        if "-" in compact or "_" in compact:
            return base64.urlsafe_b64decode(compact)
        return base64.b64decode(compact, validate=True)
    except (ValueError, binascii.Error):
        return None


def _scrub_text(text: str) -> str:
    if len(text) >= LARGE_STRING:
        match = _DATA_URL.match(text)
        if match:
            head = match.group("head")
            body = text[match.end() :]
            if head.lower().endswith(";base64"):
                decoded = _decode_base64(body)
            else:
                decoded = unquote_to_bytes(body)
            label = redact(head[:200])
            if decoded is None:
                return f"<data:{label} undecodable {_digest(body.encode())}>"
            return f"<data:{label} {_digest(decoded)}>"
        if _BASE64_TEXT.fullmatch(text):
            decoded = _decode_base64(text)
            if decoded is not None:
                return f"<base64 {_digest(decoded)}>"
        if len(text) > MAX_TEXT:
            return f"<text {_digest(text.encode('utf-8', errors='surrogatepass'))}>"
    return redact(text)


def _is_credential_key(key: Any) -> bool:
    normal = re.sub(r"[-_\s]", "", str(key)).lower()
    return normal in CREDENTIAL_KEYS


def _scrub(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        return _scrub_text(value)
    if isinstance(value, Mapping):
        return {redact(str(k)): _scrub(v) for k, v in value.items() if not _is_credential_key(k)}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_scrub(v) for v in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"<bytes {_digest(bytes(value))}>"
    return _scrub_text(str(value))


def scrub_payload(payload: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON-ready copy of ``payload`` safe to keep on disk (see the module docstring)."""
    if not isinstance(payload, Mapping):
        raise TypeError(f"a payload must be a mapping (a dict), not {type(payload).__name__}")
    scrubbed: dict[str, Any] = _scrub(payload)
    return scrubbed


def _error_text(error: Any) -> str | None:
    if error is None:
        return None
    text = _scrub_text(error) if isinstance(error, str) else json.dumps(_scrub(error))
    text = redact(text)
    if len(text) > MAX_ERROR:
        text = text[:MAX_ERROR] + f"… (cut, {len(text)} characters)"
    return text


def _int_or_none(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _output_record(output: Output) -> dict[str, Any]:
    """What we keep of one output: enough to find, check and re-read it later."""
    record: dict[str, Any] = {
        "index": output.index,
        "content_type": redact(output.content_type),
        "url": _scrub_text(output.url) if output.url else None,
        "path": str(output.path) if output.path is not None else None,
        "file_name": _scrub(output.raw.get("file_name")),
        "file_size": _int_or_none(output.raw.get("file_size")),
    }
    content = output.raw.get("content")
    if content is not None:
        encoding = output.raw.get("encoding")
        text = content if isinstance(content, str) else json.dumps(_scrub(content))
        if len(text) <= MAX_INLINE_CONTENT:
            record["content"] = redact(text)
            record["encoding"] = _scrub(encoding)
        else:
            inline = output.inline() or b""
            record["content"] = f"<{encoding or 'inline'} {_digest(inline)}>"
            record["encoding"] = None
    return record


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


# --------------------------------------------------------------------------- rows


@dataclass(frozen=True)
class LedgerRow:
    """One task as the ledger knows it. ``state`` is derived (see the module docstring)."""

    id: int
    gateway: str
    endpoint: str
    request_id: str | None
    state: str
    status: str | None
    queue_position: int | None
    payload: dict[str, Any] = field(repr=False)
    submitted_at: float
    updated_at: float
    finished_at: float | None
    ok: bool | None
    error: str | None
    error_type: str | None
    outputs: list[dict[str, Any]] = field(repr=False)
    status_url: str | None = None
    response_url: str | None = None
    cancel_url: str | None = None
    pid: int | None = None
    host: str | None = None
    handle_at: float | None = None

    @property
    def unfinished(self) -> bool:
        """Created on the gateway, final result not recorded yet: worth resuming."""
        return self.request_id is not None and self.state == SUBMITTED

    def handle(self, base_url: str | None = None) -> Handle | None:
        """The task handle to re-attach with: the URLs the gateway gave, as stored.

        A URL the row lacks (a task re-attached by id) takes the documented shape
        on ``base_url`` (default: the row's gateway). None when no task id was
        ever received.
        """
        if self.request_id is None:
            return None
        return Handle.documented(
            base_url or self.gateway,
            self.endpoint,
            self.request_id,
            status_url=self.status_url,
            response_url=self.response_url,
            cancel_url=self.cancel_url,
            queue_position=self.queue_position,
        )

    def result(self, fetch: Fetcher | None = None) -> Result | None:
        """The recorded final result (None while unfinished), through
        :meth:`Result.from_ledger`; ``fetch`` reads output URLs."""
        if self.request_id is None or self.state != FINISHED:
            return None
        return Result.from_ledger(
            endpoint=self.endpoint,
            request_id=self.request_id,
            status=self.status or ("COMPLETED" if self.ok is not None else self.state),
            error=self.error if self.ok is False else None,
            error_type=self.error_type,
            outputs=self.outputs,
            fetch=fetch,
        )


_COLUMNS = (
    "id, gateway, endpoint, request_id, state, status, queue_position, payload, "
    "submitted_at, updated_at, finished_at, ok, error, error_type, outputs, "
    "status_url, response_url, cancel_url, pid, host, handle_at"
)

_SCHEMA_V1 = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE tasks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    gateway TEXT NOT NULL,
    endpoint TEXT NOT NULL,
    request_id TEXT,
    state TEXT NOT NULL,
    status TEXT,
    queue_position INTEGER,
    payload TEXT NOT NULL,
    status_url TEXT,
    response_url TEXT,
    cancel_url TEXT,
    pid INTEGER NOT NULL,
    host TEXT NOT NULL,
    submitted_at REAL NOT NULL,
    handle_at REAL,
    updated_at REAL NOT NULL,
    finished_at REAL,
    ok INTEGER,
    error TEXT,
    error_type TEXT,
    outputs TEXT NOT NULL DEFAULT '[]'
)""",
    "CREATE INDEX tasks_by_request ON tasks (gateway, request_id)",
    "CREATE INDEX tasks_by_state ON tasks (state)",
)

#: MIGRATIONS[n] upgrades a version-n file to version n+1 (inside one transaction)
MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {}

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
            self.journal_mode = str(conn.execute("PRAGMA journal_mode = WAL").fetchone()[0])
            conn.execute("PRAGMA synchronous = NORMAL")
            self._check_schema(conn)
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise LedgerError(
                f"{self.path} is not a usable genwidgets ledger ({exc}); move it away or "
                "set GENWIDGETS_HOME to another directory"
            ) from exc
        except BaseException:
            conn.close()
            raise
        self._conn, self._conn_pid = conn, os.getpid()
        return conn

    def _check_schema(self, conn: sqlite3.Connection) -> None:
        """Create, migrate or refuse; in one write transaction so kernels don't race."""
        conn.execute("BEGIN IMMEDIATE")
        try:
            tables = {
                r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
            if not tables:
                for statement in _SCHEMA_V1:  # not executescript: it would COMMIT first
                    conn.execute(statement)
                conn.executemany(
                    "INSERT INTO meta (key, value) VALUES (?, ?)",
                    [("application", APPLICATION), ("schema_version", str(SCHEMA_VERSION))],
                )
            else:
                self._migrate_or_refuse(conn, tables)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def _migrate_or_refuse(self, conn: sqlite3.Connection, tables: set[str]) -> None:
        meta = (
            dict(conn.execute("SELECT key, value FROM meta").fetchall()) if "meta" in tables else {}
        )
        if meta.get("application") != APPLICATION:
            raise LedgerError(
                f"{self.path} is an SQLite file of something else (tables {sorted(tables)}), "
                "not a genwidgets ledger; move it away or set GENWIDGETS_HOME to another "
                "directory"
            )
        raw_version = meta.get("schema_version", "")
        if not raw_version.isdigit():
            raise LedgerError(f"{self.path} has no readable schema version ({raw_version!r})")
        version = int(raw_version)
        if version > SCHEMA_VERSION:
            raise LedgerError(
                f"the ledger {self.path} has schema version {version}, newer than this "
                f"genwidgets understands ({SCHEMA_VERSION}); upgrade genwidgets, or set "
                "GENWIDGETS_HOME to another directory to keep a separate ledger"
            )
        while version < SCHEMA_VERSION:
            if version not in MIGRATIONS:
                raise LedgerError(
                    f"the ledger {self.path} has schema version {version}, which this "
                    "genwidgets cannot migrate; move the file away to start a new ledger"
                )
            MIGRATIONS[version](conn)
            version += 1
            conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(version),))

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
                    (state, _error_text(error), now, now if created_nothing else None, row_id),
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
        with self._write() as conn:
            changed = conn.execute(
                "UPDATE tasks SET status = ?, queue_position = ?, updated_at = ? "
                "WHERE id = (SELECT max(id) FROM tasks WHERE gateway = ? AND request_id = ?) "
                "AND finished_at IS NULL AND (status IS NOT ? OR queue_position IS NOT ?)",
                (
                    redact(status.status),
                    status.queue_position,
                    now,
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
        outputs = [_output_record(o) for o in result.outputs]
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
                "error = ?, error_type = ?, outputs = ?, finished_at = ?, updated_at = ? "
                "WHERE id = ?",
                (
                    FINISHED,
                    redact(result.status),
                    int(result.ok),
                    _error_text(result.error),
                    _error_text(result.error_type),
                    json.dumps(outputs),
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

    def _row(self, values: tuple[Any, ...]) -> LedgerRow:
        (
            row_id,
            gateway,
            endpoint,
            request_id,
            state,
            status,
            queue_position,
            payload,
            submitted_at,
            updated_at,
            finished_at,
            ok,
            error,
            error_type,
            outputs,
            status_url,
            response_url,
            cancel_url,
            pid,
            host,
            handle_at,
        ) = values
        return LedgerRow(
            id=row_id,
            gateway=gateway,
            endpoint=endpoint,
            request_id=request_id,
            state=self._derived_state(state, row_id, pid, host, submitted_at),
            status=status,
            queue_position=queue_position,
            payload=json.loads(payload),
            submitted_at=submitted_at,
            updated_at=updated_at,
            finished_at=finished_at,
            ok=None if ok is None else bool(ok),
            error=error,
            error_type=error_type,
            outputs=json.loads(outputs),
            status_url=status_url,
            response_url=response_url,
            cancel_url=cancel_url,
            pid=pid,
            host=host,
            handle_at=handle_at,
        )

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
        sql = f"SELECT {_COLUMNS} FROM tasks"
        if clauses:
            sql += " WHERE " + " AND ".join(f"({c})" for c in clauses)
        sql += " ORDER BY id DESC"
        if limit is not None and wanted_state is None:
            sql += f" LIMIT {limit}"
        found = [self._row(values) for values in self._read(sql, tuple(params))]
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
            f"SELECT {_COLUMNS} FROM tasks WHERE gateway = ? AND request_id = ? "
            "ORDER BY id DESC LIMIT 1",
            (gateway, request_id),
        )
        return self._row(found[0]) if found else None

    def row(self, row_id: int) -> LedgerRow | None:
        """A row by its id (as returned by :meth:`record_intent`)."""
        found = self._read(f"SELECT {_COLUMNS} FROM tasks WHERE id = ?", (row_id,))
        return self._row(found[0]) if found else None
