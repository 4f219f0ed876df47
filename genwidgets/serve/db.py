"""The class gateway's storage: one small layer over SQLite (a file, the default) and
PostgreSQL (``postgresql://...``, for several server processes on one database).

SQL is written once with ``?`` placeholders and ``{lock}`` after a row read that a
write transaction will change: PostgreSQL gets ``%s`` and ``FOR UPDATE``, SQLite holds
the whole database from ``BEGIN IMMEDIATE`` on, so a read there is already locked.
``{skip}`` takes rows another transaction has not locked (``FOR UPDATE SKIP LOCKED``):
a claim of work, which passes over what another process is claiming.
Each thread keeps its own connection. The schema is versioned (:data:`MIGRATIONS`,
applied in order under a lock by :meth:`Database.migrate`):
docs/decisions.md#serve-storage.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qs, quote, unquote, urlsplit

from .._config import hide_userinfo
from ..errors import ServeError

__all__ = [
    "CAPS",
    "CAPS_HELD",
    "KINDS",
    "MARKS",
    "MIGRATIONS",
    "SCALE",
    "Database",
    "Tx",
    "caps_and_held",
    "storage_error",
]

T = TypeVar("T")

#: what a budget caps, in the order columns are named: money and the billed kinds
#: of :data:`genwidgets.lab.cost.UNITS`
KINDS = ("money", "tasks", "images", "prompts", "video_seconds", "speech_characters")
#: every amount is stored as a whole number of millionths: sums and caps compare exactly
SCALE = 1_000_000
#: times a PostgreSQL transaction is tried again after a deadlock or a serialization failure
RETRIES = 8
_BUSY_MS = 60_000
#: seconds a transaction may wait for SQLite's write lock
LOCK_WAIT = _BUSY_MS / 1000
#: a ``password=...`` pair in a conninfo or a URL's query, as a driver's message quotes it
_PASSWORD_PAIR = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&'\"]+)", re.IGNORECASE)

#: a key's or a group's cap columns, then those and its held amounts (what
#: :func:`caps_and_held` reads)
CAPS = ", ".join(f"cap_{k}" for k in KINDS)
CAPS_HELD = CAPS + ", " + ", ".join(f"held_{k}" for k in KINDS)
#: a placeholder per kind
MARKS = ", ".join("?" for _ in KINDS)

_CAPS = ", ".join(f"cap_{k} BIGINT" for k in KINDS)
_HELD = ", ".join(f"held_{k} BIGINT NOT NULL DEFAULT 0" for k in KINDS)
_AMOUNTS = ", ".join(f"amt_{k} BIGINT NOT NULL DEFAULT 0" for k in KINDS)

#: (version, statements): each version applied once, in one transaction, in order
MIGRATIONS: tuple[tuple[int, tuple[str, ...]], ...] = (
    (
        1,
        (
            f"""CREATE TABLE groups (
                name TEXT PRIMARY KEY, created_at DOUBLE PRECISION NOT NULL,
                cache_seconds BIGINT NOT NULL DEFAULT 0, {_CAPS}, {_HELD})""",
            f"""CREATE TABLE keys (
                name TEXT PRIMARY KEY, token_hash TEXT NOT NULL UNIQUE,
                group_name TEXT REFERENCES groups(name), endpoints TEXT,
                expires_at DOUBLE PRECISION, revoked_at DOUBLE PRECISION,
                admin INTEGER NOT NULL DEFAULT 0, max_running BIGINT,
                created_at DOUBLE PRECISION NOT NULL, {_CAPS}, {_HELD})""",
            f"""CREATE TABLE tasks (
                id TEXT PRIMARY KEY, key_name TEXT NOT NULL REFERENCES keys(name),
                group_name TEXT, endpoint TEXT NOT NULL, upstream_id TEXT,
                state TEXT NOT NULL, charged INTEGER NOT NULL, cache_key TEXT,
                cached_from TEXT, error TEXT, created_at DOUBLE PRECISION NOT NULL,
                settled_at DOUBLE PRECISION, checked_at DOUBLE PRECISION, {_AMOUNTS})""",
            "CREATE INDEX tasks_by_key ON tasks (key_name, state)",
            "CREATE INDEX tasks_by_cache ON tasks (cache_key, created_at)",
            "CREATE INDEX tasks_by_state ON tasks (state, checked_at)",
        ),
    ),
    # since when upstream has answered the sweep nothing but 404s and 410s for a task
    (2, ("ALTER TABLE tasks ADD COLUMN missing_since DOUBLE PRECISION",)),
    # until when upstream's rate limit holds every process's creates back (a row per hold)
    (3, ("CREATE TABLE holds (name TEXT PRIMARY KEY, until DOUBLE PRECISION NOT NULL)",)),
    # a task settled ``cancelled`` on upstream's failure (not its cancel word) while its
    # cancel was on the way: failed, given back, if that cancel never left or was refused
    (4, ("ALTER TABLE tasks ADD COLUMN failed_upstream INTEGER NOT NULL DEFAULT 0",)),
    # a task's cancels forwarded and not yet answered, whether one of them may have been
    # applied upstream, and the state the first moved it from: only the last cancel in
    # flight, none taken, puts the task back (budgets.cancel_answered)
    (
        5,
        (
            "ALTER TABLE tasks ADD COLUMN cancels_out INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE tasks ADD COLUMN cancel_taken INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE tasks ADD COLUMN cancel_from TEXT",
        ),
    ),
)


def caps_and_held(values: Sequence[Any]) -> tuple[dict[str, int | None], dict[str, int]]:
    """The columns of :data:`CAPS_HELD` as caps (None: no cap) and held amounts."""
    n = len(KINDS)
    caps = dict(zip(KINDS, values[:n], strict=True))
    return caps, {k: int(v) for k, v in zip(KINDS, values[n : 2 * n], strict=True)}


def storage_error(message: str) -> ServeError:
    """The database cannot be reached or refused a statement; nothing was changed."""
    return ServeError(message, status=503, code="STORAGE_UNAVAILABLE", retry_after=1.0)


class Tx:
    """One transaction's statements: ``?`` placeholders, rows as tuples."""

    def __init__(self, cursor: Any, postgres: bool) -> None:
        self._cursor, self._postgres = cursor, postgres

    def sql(self, text: str) -> str:
        lock = " FOR UPDATE" if self._postgres else ""
        text = text.replace("{lock}", lock).replace("{skip}", lock and lock + " SKIP LOCKED")
        return text.replace("?", "%s") if self._postgres else text

    def run(self, text: str, params: Sequence[Any] = ()) -> int:
        """Run a statement; the rows it changed."""
        self._cursor.execute(self.sql(text), tuple(params))
        return int(self._cursor.rowcount)

    def rows(self, text: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        self._cursor.execute(self.sql(text), tuple(params))
        return [tuple(row) for row in self._cursor.fetchall()]

    def one(self, text: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        found = self.rows(text, params)
        return found[0] if found else None


class Database:
    """A SQLite file (a path or ``sqlite:///path``; ``sqlite:///path?mode=ro`` opens it
    read-only: a copy, a file the teacher may not change) or a PostgreSQL URL."""

    def __init__(self, url: str | Path) -> None:
        text = str(url)
        self.postgres = text.startswith(("postgresql://", "postgres://"))
        self.url = text
        self.read_only = False
        if not self.postgres and text.startswith("sqlite:///"):
            text, _, query = text.removeprefix("sqlite:///").partition("?")
            self.read_only = parse_qs(query).get("mode") == ["ro"]
        self.path = None if self.postgres else Path(text)
        self._local = threading.local()
        self._all: list[Any] = []
        self._lock = threading.Lock()
        #: connections inside a transaction now, and those close() left to their thread
        self._busy: set[int] = set()
        self._closing: set[int] = set()

    def __repr__(self) -> str:
        # a PostgreSQL URL may carry a password (its userinfo, its ?password=): name the
        # kind and the place only (host, port, database), built from the URL's parts
        if not self.postgres:
            return f"<Database sqlite {self.path}{' (read-only)' * self.read_only}>"
        try:
            parts = urlsplit(self.url)
            port = parts.port
        except ValueError:  # unreadable (an IPv6 typo): the place as written, no query
            where = self.url.rpartition("@")[2].partition("?")[0]
        else:
            where = f"{parts.hostname or ''}{f':{port}' if port else ''}{parts.path}"
        return f"<Database postgresql {where}>"

    def _hidden(self, exc: BaseException) -> str:
        """``exc``'s text without the URL's password: psycopg's messages quote the whole
        URL ("invalid ... in URI: "postgresql://user:pw@..."), a conninfo's
        ``password=...``, or the password itself. The URLs and the pairs are masked
        (``_config.hide_userinfo``); the bare password only when it is quoted alone or
        long enough (8 characters) not to match the driver's own words, and never when it
        is the user name: replacing every match said user "***" and host "***27.0.0.***"."""
        text = str(exc)
        if not self.postgres:
            return text
        text = hide_userinfo(text.replace(self.url, repr(self)))
        text = _PASSWORD_PAIR.sub(r"\1***", text)
        userinfo = self.url.partition("://")[2].rpartition("@")[0]
        user, _, password = userinfo.partition(":")
        query = self.url.partition("?")[2]
        secrets = {password, unquote(password), *parse_qs(query).get("password", [])}
        secrets |= {raw for raw in re.findall(r"(?:^|&)password=([^&]*)", query)}
        for secret in secrets - {"", user, unquote(user)}:
            text = text.replace(f'"{secret}"', '"***"')
            if len(secret) >= 8:
                text = text.replace(secret, "***")
        return text

    def _connect(self) -> Any:
        try:
            if self.postgres:
                import psycopg  # noqa: PLC0415 - PostgreSQL is an extra (genwidgets[serve])

                return psycopg.connect(self.url, autocommit=True, connect_timeout=10)
            assert self.path is not None
            where = f"file:{quote(str(self.path))}?mode=ro" if self.read_only else self.path
            conn = sqlite3.connect(
                where,
                timeout=_BUSY_MS / 1000,
                isolation_level=None,
                check_same_thread=False,
                uri=self.read_only,
            )
            conn.execute(f"PRAGMA busy_timeout = {_BUSY_MS}")
            for attempt in range(0 if self.read_only else RETRIES * 10):
                try:  # switching a new file to WAL can meet another connection's lock
                    conn.execute("PRAGMA journal_mode = WAL")
                    break
                except sqlite3.OperationalError as exc:
                    if not _retryable(exc) or attempt + 1 == RETRIES * 10:
                        raise
                    time.sleep(0.02)
            conn.execute("PRAGMA foreign_keys = ON")
            return conn
        except ImportError as exc:
            raise storage_error(
                "PostgreSQL needs the psycopg driver: pip install 'genwidgets[serve]'"
            ) from exc
        except Exception as exc:
            raise storage_error(f"cannot open the database {self!r}: {self._hidden(exc)}") from exc

    def _connection(self) -> Any:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self._connect()
            with self._lock:
                self._all.append(conn)
        return conn

    def _drop(self) -> None:
        conn = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()

    @contextlib.contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[Tx]:
        """One transaction; ``write`` takes SQLite's write lock at once (BEGIN
        IMMEDIATE), so a read inside it sees no other writer until the commit."""
        if write and self.read_only:
            raise storage_error(
                f"the database {self!r} is opened read-only (?mode=ro): this command changes "
                "it; give the class's file as the server has it"
            )
        begin = "BEGIN IMMEDIATE" if write else "BEGIN"
        if self.postgres:  # a read: one snapshot for all its reads, as SQLite's BEGIN gives
            begin = "BEGIN" if write else "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"
        conn = self._connection()
        with self._lock:
            self._busy.add(id(conn))
        try:
            with contextlib.closing(conn.cursor()) as cursor:
                cursor.execute(begin)
                try:
                    yield Tx(cursor, self.postgres)
                except BaseException:
                    cursor.execute("ROLLBACK")
                    raise
                cursor.execute("COMMIT")
        except (sqlite3.Error, OSError) as exc:
            self._drop()
            raise storage_error(f"the database {self!r} failed: {self._hidden(exc)}") from exc
        except Exception as exc:
            if self.postgres and type(exc).__module__.startswith("psycopg"):
                if not _retryable(exc):
                    self._drop()
                raise storage_error(f"the database {self!r} failed: {self._hidden(exc)}") from exc
            raise
        finally:
            with self._lock:
                self._busy.discard(id(conn))
                closing = id(conn) in self._closing
                self._closing.discard(id(conn))
            if closing:  # close() came while this ran: its thread closes it now
                self._local.conn = None
                with contextlib.suppress(Exception):
                    conn.close()

    def run(self, work: Callable[[Tx], T], *, write: bool = True) -> T:
        """``work(tx)`` in one transaction, tried again on PostgreSQL after a deadlock
        or a serialization failure (the work must only touch the database)."""
        for attempt in range(RETRIES):
            try:
                with self.transaction(write=write) as tx:
                    return work(tx)
            except ServeError as exc:
                if attempt + 1 < RETRIES and _retryable(exc.__cause__):
                    time.sleep(0.01 * (attempt + 1))
                    continue
                raise
        raise AssertionError("unreachable")

    def migrate(self) -> int:
        """Bring the schema to the newest version; the version now. A schema already
        the newest is only read: a listing writes nothing, and a read-only file or a
        replica (which takes no write transaction) lists."""
        newest = MIGRATIONS[-1][0]
        try:
            found = self.run(
                lambda tx: tx.one("SELECT MAX(version) FROM schema_version"), write=False
            )
        except ServeError:  # no schema yet (a new file), or unreadable: written below
            found = None
        if found and found[0] is not None and int(found[0]) >= newest:
            return int(found[0])
        if self.read_only:
            raise storage_error(
                f"the database {self!r} is opened read-only and holds no class schema of "
                f"version {newest} (another file, or one an older genwidgets wrote: a command "
                "that changes it brings it up to date)"
            )

        def work(tx: Tx) -> int:
            if self.postgres:
                tx.run("SELECT pg_advisory_xact_lock(4141)")
            tx.run("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            row = tx.one("SELECT MAX(version) FROM schema_version")
            version = int(row[0]) if row and row[0] is not None else 0
            for number, statements in MIGRATIONS:
                if number > version:
                    for statement in statements:
                        tx.run(statement)
                    tx.run("INSERT INTO schema_version (version) VALUES (?)", (number,))
                    version = number
            return version

        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        return self.run(work)

    def close(self) -> None:
        """Close every connection; one inside a transaction on another thread (a sweep
        a stopping server left running) is closed by that thread when it ends: closed
        under it, SQLite's library crashed the process."""
        with self._lock:
            conns, self._all = self._all, []
            busy = {id(conn) for conn in conns} & self._busy
            self._closing |= busy
        for conn in conns:
            if id(conn) not in busy:
                with contextlib.suppress(Exception):
                    conn.close()
        self._local = threading.local()


def _retryable(exc: BaseException | None) -> bool:
    """A deadlock or a serialization failure: the transaction may simply be run again
    (SQLite says "database is locked" at once, without waiting, where waiting could
    deadlock: two connections of a file still switching to WAL)."""
    if isinstance(exc, sqlite3.OperationalError):
        return "locked" in str(exc) or "busy" in str(exc)
    return getattr(exc, "sqlstate", None) in {"40001", "40P01"}
