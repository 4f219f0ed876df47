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
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qs, quote, unquote

from .._config import hide_userinfo
from ..errors import GenwidgetsError, ServeError

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
#: where a URL's host part ends (RFC 3986): an '@' after it is no userinfo's end
_HOST_PART_END = re.compile(r"[/?#]")
#: how to write a password that holds what a URL cannot
_ENCODE = "percent-encode them: / as %2F, ? as %3F, # as %23, @ as %40, % as %25"
#: a PostgreSQL URL libpq and a URL parser read apart (:func:`_split`)
_MISREAD = (
    "--database: this postgresql:// URL has an '@' that libpq would not read as its "
    "parts say (a '/', '?', '#' or '@' in the user name or password, an '@' in the "
    "database name, or one in the query before the '/' of the database or outside a "
    f"key=value pair of libpq's): {_ENCODE} (the URL is not shown: it may hold a password)"
)
#: libpq's connection keywords (PostgreSQL 18), and ``ssl`` it takes in a URL's query
_LIBPQ_WORDS = {
    *("host", "hostaddr", "port", "dbname", "user", "password", "passfile", "service"),
    *("channel_binding", "client_encoding", "connect_timeout", "options", "replication"),
    *("application_name", "fallback_application_name", "target_session_attrs"),
    *("keepalives", "keepalives_idle", "keepalives_interval", "keepalives_count"),
    *("tcp_user_timeout", "load_balance_hosts", "require_auth", "requirepeer"),
    *("min_protocol_version", "max_protocol_version", "scram_client_key"),
    *("scram_server_key", "gssencmode", "gsslib", "gssdelegation", "krbsrvname"),
    *("oauth_client_id", "oauth_client_secret", "oauth_issuer", "oauth_scope"),
    *("ssl", "sslmode", "sslnegotiation", "sslcompression", "sslcert", "sslkey"),
    *("sslkeylogfile", "sslpassword", "sslcertmode", "sslrootcert", "sslcrl", "sslcrldir"),
    *("sslsni", "ssl_min_protocol_version", "ssl_max_protocol_version"),
}
#: what ``--database`` takes, as the refusals say it
_FORMS = (
    "--database takes a SQLite file (its path, or sqlite:///PATH) or a PostgreSQL URL "
    "(postgresql://USER:PASSWORD@HOST:PORT/DBNAME)"
)
#: a ``sqlite:///PATH?...`` whose query is not ``mode=ro`` (review-31 fault 6)
_SQLITE_QUERY = (
    f"{_FORMS}; a sqlite:/// URL takes nothing after its path but ?mode=ro (read-only), "
    "and this one has another query (it is not shown: it may hold a password). A SQLite "
    "file whose name holds a '?' is given as its path alone, without sqlite:///"
)
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
#: a scheme --database knows, written with any slashes (``postgresql:/``, ``sqlite:``)
_KNOWN_SCHEME = re.compile(r"(?i)(postgres|postgresql|sqlite):")
#: a ``--database`` text with a space (or any blank) at an end, as the refusal says it
_SPACED = (
    "this text begins or ends with a space (it is not shown: it may hold a password): "
    "give it without; a SQLite file whose name does: give it as sqlite:///PATH"
)
#: one ``keyword = value`` of a libpq conninfo, as libpq reads it (a value quoted, or
#: up to the next space, with backslash escapes)
_CONNINFO_PAIR = re.compile(r"\s*(\w+)\s*=\s*('(?:[^'\\]|\\.)*'|(?!')(?:[^\s\\]|\\.)+)\s*")

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
    # when the latest of a task's cancels in flight was forwarded: a count older than a
    # create may be sending is no cancel in flight (its server stopped before the answer,
    # budgets.cancels_in_flight). A task an older version left cancelling (none counted,
    # no state to go back to) had its cancel accepted, answered 5xx or unanswered (a
    # refusal put it back): taken (budgets.TAKEN), settled by upstream's end as that
    # version settled it. Taken as a stale cancel not taken, it was made unknown, and
    # upstream's "cancelled" given back as a failure (review-31 fault 2)
    (
        6,
        (
            "ALTER TABLE tasks ADD COLUMN cancel_sent_at DOUBLE PRECISION",
            "UPDATE tasks SET cancel_from = 'unknown', cancel_taken = 1 "
            "WHERE state = 'cancelling' AND cancel_from IS NULL",
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
        if isinstance(url, str) and text != text.strip():  # before the scheme is read
            raise GenwidgetsError(f"{_FORMS}; {_SPACED}")
        self.postgres = text.startswith(("postgresql://", "postgres://"))
        if not self.postgres and isinstance(url, str):
            _refuse_no_sqlite_path(text)
        self.url = text
        #: ``sqlite:///PATH?mode=ro``: the file opened read-only (any other text after
        #: ``sqlite:///`` is the path as written)
        self.read_only = (
            not self.postgres and text.startswith("sqlite:///") and text.endswith("?mode=ro")
        )
        path = text.removeprefix("sqlite:///").removesuffix("?mode=ro" * self.read_only)
        self.path = None if self.postgres else Path(path)
        #: what the repr shows of a PostgreSQL URL: user@host:port/database, never more
        self._place = _place(text) if self.postgres else ""
        self._local = threading.local()
        self._all: list[Any] = []
        self._lock = threading.Lock()
        #: connections inside a transaction now, and those close() left to their thread
        self._busy: set[int] = set()
        self._closing: set[int] = set()

    def __repr__(self) -> str:
        # a PostgreSQL URL may carry a password (its userinfo, its ?password=): the kind
        # and the place only, built from the URL's parts when it was read (_place)
        if not self.postgres:
            return f"<Database sqlite {self.path}{' (read-only)' * self.read_only}>"
        return f"<Database postgresql {self._place}>"

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
        userinfo, _, _, query = _split(self.url)
        user, _, password = userinfo.partition(":")
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
            said = f"{self._hidden(exc)}{self._why_unopened()}"
            raise storage_error(f"cannot open the database {self!r}: {said}") from exc

    def _why_unopened(self) -> str:
        """Why SQLite may not open the file, past its own words ("unable to open database
        file"): it is a folder, or its folder cannot be written (a read-only mount), where
        SQLite cannot make the ``-shm`` file it needs to read a file in WAL mode, as the
        class gateway writes it, even read-only. '' when neither (or on PostgreSQL)."""
        if self.path is None:
            return ""
        if self.path.is_dir():
            return " (it is a folder: give the class's file)"
        folder = self.path.parent
        if self.path.exists() and not os.access(folder, os.W_OK):
            return (
                f" (its folder {folder} cannot be written: SQLite reads a file in WAL mode, as "
                "the class gateway writes it, only where it can make its -shm file beside "
                "it, even read-only; copy the file, with its -wal file if there is one, to "
                "a folder you can write and give the copy)"
            )
        return ""

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
        except ServeError as exc:  # no schema yet (a new file), or unreadable: written below
            if self.read_only and "no such table" not in str(exc.__cause__):
                # unreadable is not "no schema": it cannot be written either (review-31)
                raise storage_error(
                    f"the database {self!r} cannot be opened read-only: SQLite says "
                    f"{exc.__cause__ or exc}{self._why_unopened()}"
                ) from exc
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


def _refuse_no_sqlite_path(text: str) -> None:
    """Refuse a ``--database`` text that is not a SQLite path anyone means, in words that
    never repeat it (it may hold a password): another ``scheme://`` (``POSTGRESQL://``
    made the folders ``POSTGRESQL:/user:pw@host``), a libpq conninfo (``host=...
    password=... dbname=...`` served the class on a local file named with the password,
    review-28 fault 4), or a text wholly of ``word=value`` pairs, or holding a
    ``password=``, that names no file here; ``postgres:``, ``postgresql:`` or ``sqlite:``
    with the wrong slashes in any case, or a text with an '@' after a ':' that names no
    file here (``postgresql:/alice:pw@host/db`` made the folders named with the
    password, review-30 fault 2). Any other text is a file's name (``runs
    lr=0.1.db``, review-29 fault 5); ``sqlite:///PATH`` is always a path (``?mode=ro``
    at its end: read-only; any other query is refused: ``?password=...`` made a file
    named with it, review-31 fault 6). docs/decisions.md#serve-storage."""
    if text.startswith("sqlite:///"):  # a path, said so: taken as it is written
        if "?" in text and text.partition("?")[2] != "mode=ro":
            raise GenwidgetsError(_SQLITE_QUERY)
        return
    if _SCHEME.match(text):
        scheme, _, rest = text.partition("://")
        raise GenwidgetsError(f"{_FORMS}, not {_wrong_scheme(scheme, rest)}")
    known = _KNOWN_SCHEME.match(text)
    if known:  # postgresql:/USER:PW@HOST made the folders postgresql:/USER:PW@HOST
        sqlite = known[1].lower() == "sqlite"
        raise GenwidgetsError(
            f"{_FORMS}, not a {'SQLite' if sqlite else 'PostgreSQL'} URL with the slashes "
            "after its scheme missing (it is not shown: it may hold a password): "
            + ("sqlite:///PATH has three" if sqlite else "postgresql://USER:... has two")
        )
    if "@" in text and ":" in text[: text.rfind("@")] and not Path(text).exists():
        raise GenwidgetsError(
            f"{_FORMS}; this text holds an '@' after a ':', as a URL's USER:PASSWORD@HOST "
            "does, and names no file here (it is not shown: it may hold a password). A "
            "PostgreSQL URL is written postgresql://USER:PASSWORD@HOST/DBNAME; a SQLite "
            "file by this name: give it as sqlite:///PATH"
        )
    pairs = _conninfo(text)
    if pairs and _LIBPQ_WORDS & {key for key, _ in pairs}:
        there = Path(text).exists()
        raise GenwidgetsError(
            f"{_FORMS}; this is a libpq key=value connection string: give it as "
            f"{_conninfo_url(dict(pairs))}, a '/', '?', '#', '@' or '%' in the password "
            "percent-encoded (%2F, %3F, %23, %40, %25)"
            + (
                "; a file named by this text is here (an older genwidgets took the text "
                "as a SQLite file: its budgets are not the class's): delete it"
                if there
                else ""
            )
        )
    looks_paired = (pairs and len(pairs) > 1) or _PASSWORD_PAIR.search(text)
    if looks_paired and not Path(text).exists():
        raise GenwidgetsError(
            f"{_FORMS}; this text is key=value pairs and names no file here (it is not "
            "shown: it may hold a password). A libpq key=value string is given as "
            "postgresql://USER:PASSWORD@HOST:PORT/DBNAME; a SQLite file by this name: "
            "give it as sqlite:///PATH"
        )


def _wrong_scheme(scheme: str, rest: str) -> str:
    """What is wrong with a ``scheme://`` URL ``--database`` does not take, its text
    not repeated (it may hold a password) but for a SQLite path with no '@' in it:
    ``sqlite://class.db`` lacks the third slash, ``POSTGRESQL://`` is the taken one in
    upper case."""
    if scheme.lower() == "sqlite":
        fix = "sqlite:///" + (rest.removeprefix("/") if "@" not in rest else "PATH")
        if rest.startswith("/"):
            return f"a {scheme}:// URL: a SQLite URL is written in lower case: {fix}"
        return f"a {scheme}://PATH URL: a SQLite URL has three slashes: {fix}"
    if scheme.lower() in ("postgresql", "postgres"):
        return (
            f"a {scheme}:// URL: a PostgreSQL URL has its scheme written in lower case "
            "(postgresql://)"
        )
    return f"a {scheme}:// URL"


def _conninfo(text: str) -> list[tuple[str, str]] | None:
    """``text`` as libpq's ``keyword=value`` pairs, in order, values unquoted, or None
    when it is not wholly such pairs."""
    pairs: list[tuple[str, str]] = []
    at = 0
    while at < len(text):
        found = _CONNINFO_PAIR.match(text, at)
        if found is None:
            return None
        value = found.group(2)
        if value.startswith("'"):
            value = value[1:-1]
        pairs.append((found.group(1).lower(), re.sub(r"\\(.)", r"\1", value)))
        at = found.end()
    return pairs or None


def _conninfo_url(pairs: dict[str, str]) -> str:
    """The URL to give for a conninfo: its user, host, port and database, the password
    a placeholder (never its value)."""
    user = quote(pairs.get("user", ""), safe="")
    if "password" in pairs:
        user += ":PASSWORD"
    host = pairs.get("host") or pairs.get("hostaddr", "")
    host = f"[{host}]" if ":" in host else quote(host, safe=",")
    port = f":{pairs['port']}" if pairs.get("port", "").isdigit() else ""
    dbname = quote(pairs.get("dbname", ""), safe="")
    return f"postgresql://{user + '@' if user else ''}{host}{port}/{dbname}"


def _split(url: str) -> tuple[str, str, str, str]:
    """A PostgreSQL URL's userinfo, host part, path and query, split as libpq reads them,
    or refused (:data:`_MISREAD`) where a URL parser and libpq read it apart. The host
    part ends at the first '/', '?' or '#', and its last '@' ends the userinfo; libpq
    ends the userinfo at the first '@' before any '/', so the two must be the same '@'
    (``postgresql://HOST?application_name=a@b`` is user ``HOST?application_name=a`` to
    libpq). An '@' in the path is refused too: a password with a '/' (``2024/Spring``)
    puts it there, and the parts would show the password. In the query an '@' stands
    in a libpq keyword's value (``application_name=ms.lee@lab``): libpq refuses any
    other key, and a password is unlikely to hold a keyword (review-29, fault 4)."""
    rest = url.partition("://")[2]
    end = _HOST_PART_END.search(rest)
    authority = rest[: end.start()] if end else rest
    path, _, query = rest[len(authority) :].partition("?")  # libpq: no fragment
    userinfo, _, host = authority.rpartition("@")
    misread = rest.partition("/")[0].find("@") != authority.rfind("@") or "@" in path
    for pair in query.split("&") if "@" in query else ():
        misread |= "@" in pair and pair.partition("=")[0] not in _LIBPQ_WORDS
    if misread:
        raise GenwidgetsError(_MISREAD)
    return userinfo, host, path, query


def _place(url: str) -> str:
    """A PostgreSQL URL's place as ``user@host:port/database``, from its parts (the query's
    ``host``, ``port``, ``user``, ``dbname`` where the URL leaves them out), never its
    password. A URL whose parts and libpq's reading disagree is refused, whole
    (:func:`_split`): a password pasted with a '/' unencoded (``2024/Spring``) is read
    by libpq and urlsplit as a host, a port and a path, and showing those parts showed
    the password (review-28, fault 3)."""
    userinfo, host, path, query = _split(url)
    user = userinfo.partition(":")[0]
    given = {name: values[0] for name, values in parse_qs(query).items() if values}
    user = user or given.get("user", "")
    if not host and "host" in given:
        host = given["host"] + (f":{given['port']}" if "port" in given else "")
    if path in ("", "/") and "dbname" in given:
        path = "/" + given["dbname"]
    return f"{user}@{host}{path}" if user else f"{host}{path}"


def _retryable(exc: BaseException | None) -> bool:
    """A deadlock or a serialization failure: the transaction may simply be run again
    (SQLite says "database is locked" at once, without waiting, where waiting could
    deadlock: two connections of a file still switching to WAL)."""
    if isinstance(exc, sqlite3.OperationalError):
        return "locked" in str(exc) or "busy" in str(exc)
    return getattr(exc, "sqlstate", None) in {"40001", "40P01"}
