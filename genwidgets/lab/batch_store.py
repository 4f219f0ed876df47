"""The run store: runs (batches, and grids: a grid's cells are its rows), their rows'
states and request ids, what each row spent, and a grid's ratings, kept in tables
beside the ledger's ``tasks`` so a run outlives its process.

A row is reserved (``sending``, its billed units written to ``batch_spend``) in one
write transaction that first sums what the batch has spent, so a cap holds however many
kernels or processes send the same batch; a create that certainly made nothing gives its
units back. The reserving ledger's owner is kept with the row: while that process lives,
its rows are its own (another resuming the batch leaves them). States and what resuming
does with each: docs/decisions.md#batch-resume. Every read and write goes through the
client's ledger (``transaction()``, ``query()``: its busy timeout, locking and errors);
a client without one keeps its runs in memory (docs/decisions.md#grid-store). One store
of each kind per ledger file: :func:`store_for`.
"""

from __future__ import annotations

import difflib
import json
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .._config import home, normal_base_url, redact, shown_path
from ..catalog.checks import shown
from ..errors import LedgerError, NotRecorded, PayloadError
from ..jobs.ledger import LEDGER_FILE_NAME, Ledger, scrub_payload
from ..jobs.ledger.writer import is_busy
from .budget import over_cap
from .problems import problem

if TYPE_CHECKING:
    from .._protocols import ClientLike
    from .batch_plan import PlannedRow

__all__ = [
    "CANCELLED",
    "CREATED",
    "DONE",
    "ENDED",
    "FAILED",
    "LEFT",
    "PENDING",
    "SENDING",
    "TIMED_OUT",
    "UNKNOWN",
    "WAITING",
    "BatchRecord",
    "BatchStore",
    "GridRecord",
    "GridStore",
    "Reserved",
    "RowRecord",
    "RowUpdate",
    "SessionTables",
    "Tables",
    "id_taken",
    "store_for",
    "unrecorded",
    "what_differs",
]

WAITING = "waiting"  # never sent (or given back: nothing was created)
SENDING = "sending"  # reserved; its create may be in flight
CREATED = "created"  # the task exists (request id known) and has not ended
DONE = "done"  # ended well, files written
PENDING = "pending"  # ended well, outputs kept in the ledger, its files not yet written
FAILED = "failed"  # the gateway failed the task, or refused its create (nothing made)
CANCELLED = "cancelled"  # cancelled by the user
TIMED_OUT = "timed out"  # past its deadline, cancelled at the gateway (on_timeout="cancel")
#: its create's answer was lost (no request id), or contact with its task was lost
#: past its deadline (request id kept): listed, never resent; a resume re-attaches a task
UNKNOWN = "unknown"
LEFT = "left"  # past its deadline, left running (on_timeout="leave")
#: states in which the batch does nothing more with a row, in the order a view counts them
ENDED = (DONE, PENDING, FAILED, CANCELLED, TIMED_OUT, UNKNOWN, LEFT)

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS batches (
    id TEXT PRIMARY KEY,
    gateway TEXT NOT NULL,
    endpoint TEXT NOT NULL,
    created_at REAL NOT NULL,
    out TEXT NOT NULL,
    digest TEXT NOT NULL,
    description TEXT NOT NULL,
    kind TEXT NOT NULL DEFAULT 'batch'
)""",
    """CREATE TABLE IF NOT EXISTS batch_rows (
    batch_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    endpoint TEXT NOT NULL,
    payload TEXT NOT NULL,
    state TEXT NOT NULL,
    attempt INTEGER NOT NULL DEFAULT 0,
    request_id TEXT,
    error TEXT,
    files TEXT NOT NULL DEFAULT '[]',
    reserved_at REAL,
    updated_at REAL NOT NULL,
    owner TEXT,
    PRIMARY KEY (batch_id, idx)
)""",
    """CREATE TABLE IF NOT EXISTS batch_spend (
    batch_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    kind TEXT NOT NULL,
    amount REAL,
    PRIMARY KEY (batch_id, idx, attempt, kind)
)""",
)
#: a grid's ratings: one field at a time, ``COALESCE`` keeping the field not given
#: (NULL), so a star and a note sent apart, in any order, both stay
#: (docs/decisions.md#grid-view); a rating with neither is deleted
_RATINGS = """CREATE TABLE IF NOT EXISTS grid_ratings (
    grid_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    stars INTEGER NOT NULL,
    note TEXT,
    updated_at REAL NOT NULL,
    PRIMARY KEY (grid_id, idx)
)"""
_RATE = (
    "INSERT INTO grid_ratings (grid_id, idx, stars, note, updated_at) "
    "VALUES (?, ?, COALESCE(?, 0), ?, ?) ON CONFLICT (grid_id, idx) DO UPDATE SET "
    "stars = COALESCE(?, stars), note = CASE WHEN ? THEN ? ELSE note END, "
    "updated_at = excluded.updated_at"
)
_UNRATE = (
    "DELETE FROM grid_ratings WHERE grid_id = ? AND idx = ? AND stars = 0 "
    "AND (note IS NULL OR note = '')"
)
_RATING = "SELECT stars, note FROM grid_ratings WHERE grid_id = ? AND idx = ?"
#: grids an older genwidgets kept in tables of their own (``grids``, ``grid_cells``),
#: copied once into the run tables: a cell with a request id is ``created`` (re-opening
#: re-attaches it), a create's failure ``unknown`` or ``failed`` by its words
_ADOPT = (
    "INSERT OR IGNORE INTO batches (id, gateway, endpoint, created_at, out, digest, "
    "description, kind) SELECT id, gateway, endpoint, created_at, '', '', description, "
    "'grid' FROM grids",
    "INSERT OR IGNORE INTO batch_rows (batch_id, idx, endpoint, payload, state, attempt, "
    "request_id, error, updated_at) SELECT c.grid_id, c.idx, g.endpoint, c.payload, "
    "CASE WHEN c.request_id IS NOT NULL THEN 'created' WHEN c.error IS NULL THEN 'waiting' "
    "WHEN c.error LIKE 'outcome unknown%' THEN 'unknown' ELSE 'failed' END, "
    "CASE WHEN c.request_id IS NULL AND c.error IS NULL THEN 0 ELSE 1 END, "
    "c.request_id, c.error, g.created_at FROM grid_cells c JOIN grids g ON g.id = c.grid_id",
)
_BATCHES = "SELECT id, gateway, endpoint, created_at, out, digest, description FROM batches"
_COUNTS = "SELECT state, COUNT(*) FROM batch_rows WHERE batch_id = ? GROUP BY state"
_SPENT = "SELECT kind, SUM(amount) FROM batch_spend WHERE batch_id = ? GROUP BY kind"


class SessionTables:
    """The lab's tables of a client without a ledger: an in-memory SQLite database
    that lives as long as this process (nothing is written to disk). ``unopened``: the
    client asked for a ledger and could not open it, so no run may be recorded here as
    if it lasted (:meth:`BatchStore.save_batch` refuses)."""

    path = None
    owner = None

    def __init__(self, *, unopened: bool = False) -> None:
        self._conn = sqlite3.connect(":memory:", check_same_thread=False)
        self._lock = threading.RLock()
        self.unopened = unopened

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock, self._conn:  # commits at the end, rolls back on an exception
            yield self._conn

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    def hold(self, conn: sqlite3.Connection) -> None:
        return None  # one process sees these tables: nothing to hold against

    def alive_owners(self) -> set[str]:
        return set()


T = TypeVar("T")
#: where the lab's tables live: a ledger (its file), or the session's memory
Tables = Ledger | SessionTables


#: what an error says when the file lacks a table (new, or started afresh after damage) or
#: a column (written by an older genwidgets)
_MISSING = ("no such table", "no such column", "has no column named")


#: what a grid not found in a ledger-less client's store adds
MEMORY_ONLY = (
    "the ledger is off for this client, so its grids are kept in its memory only, "
    "never past a kernel restart"
)


def unrecorded(
    kind: str, run_id: str, fault: str | None = None, path: str | os.PathLike[str] | None = None
) -> NotRecorded:
    """The refusal of a run (``kind``: grid or batch) its home cannot record before its
    creates leave: the ``fault`` of its ledger at ``path`` (a read-only file, a full
    disk), or, with none, a client whose ledger could not be opened at all (a first run
    in a home that cannot be written: docs/decisions.md#grid-store). Nothing was sent;
    it says what to do, the ledger's path shown by docs/decisions.md#shown-paths."""
    folder = home()
    ledger = shown_path(path if path is not None else folder / LEDGER_FILE_NAME)
    what = "GENWIDGETS_HOME cannot be written"
    if fault is not None:
        why = f"its ledger {ledger}: {fault}"
        again = f"send it again (run the cell again, or {kind}.submit() on a {kind} you hold)"
    else:
        above = next((p for p in (folder, *folder.parents) if p.exists()), folder)
        if above.is_dir() and os.access(above, os.W_OK):  # the file, not the home: its warning
            what = "the task ledger is off"
        why = f"its ledger {ledger} could not be opened when this client was made"
        again = "restart the kernel (a client opens its ledger when it is made), then run it again"
    return NotRecorded(
        f"{kind} {run_id} not sent: {what} ({why}), so the {kind} "
        "cannot be recorded before its creates leave; nothing was sent or billed. Make it "
        f"writable, or set GENWIDGETS_HOME to a folder you can write, and {again}"
    )


def what_differs(
    stored: Mapping[str, Any], planned: Mapping[str, Any], row: str | None = None
) -> str:
    """In words, how a plan differs from the one stored under its id (two
    ``BatchPlan.describe()``): the endpoint, template, file names, columns, the rows'
    source (its file) or the rows; ``row``, the first row whose contents differ
    (:meth:`BatchStore.row_differing`), named when nothing else says why."""
    said = []
    for key, name in (
        ("endpoint", "the endpoint"),
        ("template", "the template"),
        ("filenames", "the file names"),
        ("columns", "the columns"),
        ("source", "the rows' source"),
    ):
        if stored.get(key) != planned.get(key):
            said.append(f"{name} ({stored.get(key)!r} then, {planned.get(key)!r} now)")
    if stored.get("tasks") != planned.get("tasks"):
        said.append(f"the rows ({stored.get('tasks')} then, {planned.get('tasks')} now)")
    elif row is not None and not any(s.startswith(("the template", "the endpoint")) for s in said):
        said.append(f"the rows' contents ({row})")
    elif not said:
        said.append(f"the rows' contents ({planned.get('tasks')} rows, not the same values)")
    return ", ".join(said)


def id_taken(
    batch_id: str, stored: dict[str, Any], planned: dict[str, Any], row: str | None = None
) -> PayloadError:
    """The refusal of a plan whose id names another batch's contents (``row``: the first
    row that differs, :meth:`BatchStore.row_differing`)."""
    return problem(
        "id",
        f"batch {batch_id!r} was planned with other contents: "
        f"{what_differs(stored, planned, row)}. Give another id= (or none: one is "
        "derived from the rows), or the same rows and template to resume it",
    )


@dataclass(frozen=True)
class RowRecord:
    """One row as stored (a grid's cell: with its rating)."""

    index: int
    endpoint: str
    payload: dict[str, Any] = field(repr=False)
    state: str
    attempt: int
    request_id: str | None
    error: str | None
    files: list[str]
    reserved_at: float | None
    #: the ledger owner that reserved it (``Ledger.owner``; None without a ledger)
    owner: str | None = None
    #: a grid's cell: its stars (0: none) and note (:meth:`GridStore.rate`)
    stars: int = 0
    note: str | None = None


@dataclass(frozen=True)
class RowUpdate:
    """A change of one row: its new state (and request id, error, files), whether the
    units of its current attempt go back to the budget (nothing was created), and the
    attempt it was learnt of (None: any)."""

    index: int
    state: str
    request_id: str | None = None
    error: str | None = None
    files: Sequence[str] | None = None
    release: int | None = None  # the attempt whose spend is given back
    #: written only while the row is still at this attempt: a reservation since (made
    #: by another process) is a newer row than this change was learnt of
    attempt: int | None = None


@dataclass(frozen=True)
class Reserved:
    """What :meth:`BatchStore.reserve` took: (index, attempt) of each row taken, the
    batch's spend after, whether a cap stopped it, and rows another process holds."""

    taken: list[tuple[int, int]]
    spent: dict[str, float]
    capped: bool = False
    elsewhere: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class BatchRecord:
    """A stored batch (or grid: :class:`GridRecord`) as ``gw.batches()`` lists it."""

    id: str
    gateway: str
    endpoint: str
    created_at: float
    out: str
    digest: str
    description: dict[str, Any] = field(repr=False)
    #: rows per state
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def rows(self) -> int:
        return sum(self.counts.values())

    def __repr__(self) -> str:
        """What ``print`` shows: the folder by the one rule of shown paths (relative, or
        ``~/...``), never its absolute path; ``out`` keeps it whole for code."""
        counts = ", ".join(f"{n} {state}" for state, n in self.counts.items())
        out = f"; out {shown_path(self.out)}" if self.out else ""  # a grid has no folder
        return f"<{type(self).__name__} {self.id} {self.endpoint}: {counts or 'no rows'}{out}>"


class BatchStore:
    """Read and write batches in the tables of one ledger file (or of the session),
    made by the first write that finds them missing; a read of a file without them
    returns nothing. ``tables`` is the ledger to go through, a path (a :class:`Ledger`
    of that file is opened, and closed by :meth:`close`), or None (memory).
    Thread-safe: the ledger is."""

    SCHEMA: tuple[str, ...] = _SCHEMA
    #: columns ``SCHEMA`` has that a file written by an older genwidgets lacks:
    #: (table, column, declaration), added by the first statement that misses one
    COLUMNS: tuple[tuple[str, str, str], ...] = (
        ("batch_rows", "owner", "TEXT"),
        ("batches", "kind", "TEXT NOT NULL DEFAULT 'batch'"),
    )
    #: the kind of run this store lists and saves
    KIND = "batch"

    def __init__(self, tables: Tables | str | os.PathLike[str] | None = None) -> None:
        self._owned: Ledger | None = None
        if tables is None:
            tables = SessionTables()
        elif isinstance(tables, (str, os.PathLike)):
            tables = self._owned = Ledger(tables)
        self.tables: Tables = tables
        self.path = tables.path

    def _write(self, write: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``write`` in one transaction of the tables and return what it returned. A
        file without this store's tables (new, or started afresh after damage), or
        without a column an older genwidgets did not write, gets them in the same
        transaction."""
        try:
            with self.tables.transaction() as conn:
                return write(conn)
        except (LedgerError, sqlite3.OperationalError) as exc:
            if not any(words in str(exc) for words in _MISSING):
                raise
        with self.tables.transaction() as conn:
            for statement in self.SCHEMA:
                conn.execute(statement)
            for table, column, declaration in self.COLUMNS:
                have = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
                if column not in have:
                    conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
            return write(conn)

    def _read(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Rows of one query; none from a file that holds no such table yet (an older
        file's tables are brought up to date first)."""
        try:
            return self.tables.query(sql, params)
        except (LedgerError, sqlite3.OperationalError) as exc:
            if _MISSING[0] in str(exc):
                return []
            if not any(words in str(exc) for words in _MISSING):
                raise
        return self._write(lambda conn: conn.execute(sql, params).fetchall())

    def close(self) -> None:
        """Close the ledger this store opened (a client's ledger is the client's to close)."""
        if self._owned is not None:
            self._owned.close()

    def save_batch(
        self,
        batch_id: str,
        *,
        gateway: str,
        endpoint: str,
        out: str,
        digest: str,
        description: Mapping[str, Any],
        rows: Sequence[tuple[int, str, str]],
    ) -> dict[str, Any] | None:
        """Record a batch and its rows (index, endpoint, payload as JSON), once. An id
        names its contents: when the id is stored with another digest, nothing is
        written and the stored description is returned (checked in the writing
        transaction, so two processes racing for one id cannot both have it)."""
        if isinstance(self.tables, SessionTables) and self.tables.unopened:
            raise unrecorded(self.KIND, batch_id)
        text = redact(json.dumps(description, default=str))
        now = time.time()
        values = [(batch_id, i, e, redact(p), WAITING, now) for i, e, p in rows]
        kind = self.KIND

        def write(conn: sqlite3.Connection) -> dict[str, Any] | None:
            held = conn.execute(
                "SELECT digest, description FROM batches WHERE id = ?", (batch_id,)
            ).fetchone()
            if held is not None and held[0] != digest:
                found: dict[str, Any] = json.loads(held[1])
                return found
            conn.execute(
                "INSERT OR IGNORE INTO batches (id, gateway, endpoint, created_at, out, digest, "
                "description, kind) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (batch_id, gateway, endpoint, now, out, digest, text, kind),
            )
            conn.executemany(
                "INSERT OR IGNORE INTO batch_rows (batch_id, idx, endpoint, payload, state, "
                "updated_at) VALUES (?, ?, ?, ?, ?, ?)",
                values,
            )
            return None

        try:
            return self._write(write)
        except LedgerError as exc:  # a backup, an sqlite3 shell: the same call works later
            if exc.__cause__ is None or not is_busy(exc.__cause__):
                raise
            raise LedgerError(
                f"another process (a backup, an sqlite3 shell, another genwidgets) holds "
                f"the ledger {shown_path(str(self.path))} past the wait for it; nothing was "
                "sent: run it again once it frees",
                refusal=True,
            ) from exc

    def summary(self, batch_id: str) -> BatchRecord | None:
        found = self._records(self._read(_BATCHES + " WHERE id = ?", (batch_id,)))
        return found[0] if found else None

    def _records(self, found: list[tuple[Any, ...]]) -> list[BatchRecord]:
        """Each run of ``found`` (rows of ``_BATCHES``) as a record, its rows counted per
        state."""
        return [
            BatchRecord(bid, gateway, endpoint, at, out, digest, json.loads(text), counts)
            for bid, gateway, endpoint, at, out, digest, text in found
            for counts in [dict(self._read(_COUNTS, (bid,)))]
        ]

    def batches(self, gateway: str | None = None) -> list[BatchRecord]:
        """Every stored batch (of ``gateway``), newest first, with its rows per state."""
        return self._records(self._newest(_BATCHES, gateway))

    def _newest(self, sql: str, gateway: str | None) -> list[tuple[Any, ...]]:
        """Rows of ``sql`` (over ``batches``) of this store's kind (of ``gateway`` only,
        when given, under any spelling of its address: a run saved before addresses were
        made normal names it ``https://GW.test:443``), newest first."""
        where, params = " WHERE kind = ?", [self.KIND]
        if gateway is not None:
            normal = normal_base_url(gateway)
            stored = self._read("SELECT DISTINCT gateway FROM batches WHERE kind = ?", (self.KIND,))
            names = [name for (name,) in stored if normal_base_url(name) == normal] or [gateway]
            where += f" AND gateway IN ({', '.join('?' * len(names))})"
            params += names
        return self._read(f"{sql}{where} ORDER BY created_at DESC, rowid DESC", tuple(params))

    def row_differing(self, batch_id: str, planned: Sequence[PlannedRow]) -> str | None:
        """The first planned row whose payload differs from the one stored under the
        batch's row of its index, in words: "row 2 (line 4): prompt 'a heron 2' then,
        'a crane 2' now"; None when none does (a refused id's words)."""
        then = {r.index: r.payload for r in self.rows(batch_id)}
        for row in planned:
            old, now = then.get(row.index), json.loads(json.dumps(scrub_payload(row.payload)))
            if old is None or old == now:
                continue
            where = f"row {row.index}" + (f" (line {row.line})" if row.line is not None else "")
            for key in [*now, *(k for k in old if k not in now)]:
                if old.get(key) != now.get(key):
                    return f"{where}: {key} {shown(old.get(key))} then, {shown(now.get(key))} now"
        return None

    def rows(self, batch_id: str, only: Collection[int] | None = None) -> list[RowRecord]:
        """The stored rows of a batch (``only`` those indices), in order."""
        some = "" if only is None else f" AND idx IN ({','.join('?' * len(only))})"
        found = self._read(
            "SELECT idx, endpoint, payload, state, attempt, request_id, error, files, "
            f"reserved_at, owner FROM batch_rows WHERE batch_id = ?{some} ORDER BY idx",
            (batch_id, *(only or ())),
        )
        return [
            RowRecord(int(i), e, json.loads(p), s, int(a), rid, err, json.loads(f), at, who)
            for i, e, p, s, a, rid, err, f, at, who in found
        ]

    def spent(self, batch_id: str) -> dict[str, float]:
        """What the batch's rows have taken, per billed kind (every attempt but those
        given back)."""
        return {kind: float(total or 0.0) for kind, total in self._read(_SPENT, (batch_id,))}

    def reserve(
        self,
        batch_id: str,
        wanted: Sequence[tuple[int, Mapping[str, float | None]]],
        caps: Mapping[str, float],
    ) -> Reserved:
        """Take rows (index, what each spends) in order while every cap holds, in one
        write transaction: each taken row is still ``waiting`` (no other process took it),
        becomes ``sending`` with a new attempt, and its spend is written. Stops at the
        first row over a cap (``capped``); rows another process took are ``elsewhere``."""
        now = time.time()

        def write(conn: sqlite3.Connection) -> Reserved:
            owner = self.tables.hold(conn)  # alive while it lives: its rows are its own
            spent = {kind: float(total or 0.0) for kind, total in conn.execute(_SPENT, (batch_id,))}
            waiting = dict(  # index: attempts so far, of the rows no one has taken
                conn.execute(
                    "SELECT idx, attempt FROM batch_rows WHERE batch_id = ? AND state = ? "
                    f"AND idx IN ({','.join('?' * len(wanted))})",
                    (batch_id, WAITING, *(i for i, _ in wanted)),
                )
            )
            taken: list[tuple[int, int]] = []
            elsewhere: list[int] = []
            capped = False
            for index, charges in wanted:
                if index not in waiting:
                    elsewhere.append(index)
                    continue
                capped = any(
                    over_cap(spent.get(kind, 0.0) + (charges.get(kind) or 0.0), cap)
                    for kind, cap in caps.items()
                )
                if capped:
                    break
                number = int(waiting[index]) + 1
                conn.execute(
                    "UPDATE batch_rows SET state = ?, attempt = ?, reserved_at = ?, error = NULL, "
                    "request_id = NULL, updated_at = ?, owner = ? WHERE batch_id = ? AND idx = ?",
                    (SENDING, number, now, now, owner, batch_id, index),
                )
                conn.executemany(
                    "INSERT OR REPLACE INTO batch_spend (batch_id, idx, attempt, kind, amount) "
                    "VALUES (?, ?, ?, ?, ?)",
                    [(batch_id, index, number, k, v) for k, v in charges.items()],
                )
                for kind, amount in charges.items():
                    spent[kind] = spent.get(kind, 0.0) + (amount or 0.0)
                taken.append((index, number))
            return Reserved(taken, spent, capped, elsewhere)

        if not wanted:
            return Reserved([], self.spent(batch_id))
        return self._write(write)

    def settle(self, batch_id: str, updates: Sequence[RowUpdate]) -> list[RowUpdate]:
        """Write many rows' changes in one transaction (and give back released spend);
        returns the changes not written. Each is written only while its row is at the
        attempt it was learnt of (``RowUpdate.attempt``, a compare-and-set): a view's
        change queued while the file could not be written, or a dead kernel's row settled
        as another kernel reserved it, wrote an older row over a newer one (a paid, done
        cell read failed and was created again); the caller reads those again. A row
        another live process reserved is written only as that process's rows may be (the
        guard): ``waiting`` (a retry) over ``failed`` only, so a copy's older view never
        undoes its ``done`` to send it again; any other change over an ended row (resumed
        here, as :meth:`Batch.restore` takes them); the same task's end over a row it is
        sending or following (a grid follows the tasks of another kernel's cells). Rows of
        this process, of none, or of one that has ended, are written as they come."""
        if not updates:
            return []
        now = time.time()
        others = json.dumps(sorted(self.tables.alive_owners() - {self.tables.owner}))
        ended = ", ".join(f"'{state}'" for state in ENDED)  # constants of this module

        def write(conn: sqlite3.Connection) -> list[RowUpdate]:
            stale: list[RowUpdate] = []
            for u in updates:
                written = conn.execute(
                    "UPDATE batch_rows SET state = :state, "
                    "request_id = COALESCE(:rid, request_id), error = :error, "
                    "files = COALESCE(:files, files), updated_at = :now "
                    "WHERE batch_id = :batch AND idx = :idx "
                    "AND (:attempt IS NULL OR attempt = :attempt) AND (owner IS NULL "
                    "OR owner NOT IN (SELECT value FROM json_each(:others)) "
                    f"OR (:state = '{WAITING}' AND state = '{FAILED}') "
                    f"OR (:state != '{WAITING}' AND state IN ({ended})) "
                    f"OR (state NOT IN ({ended}) AND :state IN ({ended}) AND request_id IS :rid))",
                    {
                        "state": u.state,
                        "rid": u.request_id,
                        "error": redact(u.error) if u.error else None,
                        "files": None if u.files is None else json.dumps(list(u.files)),
                        "now": now,
                        "batch": batch_id,
                        "idx": u.index,
                        "attempt": u.attempt,
                        "others": others,
                    },
                ).rowcount
                if not written:
                    stale.append(u)
            conn.executemany(
                "DELETE FROM batch_spend WHERE batch_id = ? AND idx = ? AND attempt = ?",
                [(batch_id, u.index, u.release) for u in updates if u.release is not None],
            )
            return stale

        return self._write(write)


@dataclass(frozen=True, repr=False)
class GridRecord(BatchRecord):
    """A stored grid as :func:`genwidgets.grids` lists it: a run whose rows are its
    cells, each with its rating."""

    cells: list[RowRecord] = field(repr=False, default_factory=list)

    @property
    def rated(self) -> int:
        return sum(1 for c in self.cells if c.stars)

    @property
    def sent(self) -> int:
        return sum(1 for c in self.cells if c.request_id)


class GridStore(BatchStore):
    """The runs that are grids (their cells are rows), and their ratings and notes."""

    SCHEMA = (*_SCHEMA, _RATINGS)
    KIND = "grid"

    def __init__(self, tables: Any = None) -> None:
        super().__init__(tables)
        self._lock = threading.Lock()
        self._watchers: dict[str, list[Callable[[], object]]] = {}
        self._adopted = False

    def watch(self, grid_id: str, callback: Callable[[], object]) -> None:
        """Call ``callback`` after each rating of ``grid_id`` made in this process
        (every open view of one grid shows what another one rated)."""
        with self._lock:
            self._watchers.setdefault(grid_id, []).append(callback)

    def adopt(self) -> None:
        """Copy the grids an older genwidgets kept in tables of their own into the run
        tables, once per store (the old tables stay, for that older genwidgets)."""
        if self._adopted:
            return
        self._adopted = True
        if not self._read("SELECT name FROM sqlite_master WHERE name = 'grid_cells'"):
            return

        def write(conn: sqlite3.Connection) -> None:
            for statement in _ADOPT:
                conn.execute(statement)

        self._write(write)

    def rate(
        self, grid_id: str, index: int, stars: int | None = None, note: str | None = None
    ) -> tuple[int, str | None]:
        """Set (1-5) or clear (0) a cell's stars and set or clear ("") its note; a field
        given as None is left as stored, in the same transaction, so a star and a note
        sent apart never undo each other. Returns the cell's rating as stored (stars,
        note); tells the watchers. A lone surrogate in the note (half an emoji a page's
        JSON cut) is kept as its escape ``\\ud83e``: SQLite takes UTF-8 only, and the
        stars sent with it were lost with it (docs/decisions.md#grid-ratings)."""
        text = note.encode("utf-8", "backslashreplace").decode() if note else None

        def write(conn: sqlite3.Connection) -> tuple[int, str | None]:
            conn.execute(
                _RATE, (grid_id, index, stars, text, time.time(), stars, note is not None, text)
            )
            conn.execute(_UNRATE, (grid_id, index))
            row = conn.execute(_RATING, (grid_id, index)).fetchone()
            return (int(row[0]), row[1]) if row else (0, None)

        stored = self._write(write)
        with self._lock:
            watchers = list(self._watchers.get(grid_id, ()))
        for callback in watchers:
            callback()
        return stored

    def ratings(self, grid_id: str) -> dict[int, tuple[int, str | None]]:
        rows = self._read("SELECT idx, stars, note FROM grid_ratings WHERE grid_id = ?", (grid_id,))
        return {int(i): (int(s), n) for i, s, n in rows}

    def rated(self, since: float | None = None) -> list[tuple[Any, ...]]:
        """Every rated cell (stars > 0), oldest rating first: (grid id, gateway,
        grid endpoint, description JSON, cell index, payload JSON, request id,
        stars, note, rated at)."""
        self.adopt()
        return self._read(
            "SELECT g.id, g.gateway, g.endpoint, g.description, r.idx, c.payload, "
            "c.request_id, r.stars, r.note, r.updated_at FROM grid_ratings r "
            "JOIN batches g ON g.id = r.grid_id "
            "LEFT JOIN batch_rows c ON c.batch_id = r.grid_id AND c.idx = r.idx "
            "WHERE r.stars > 0 AND r.updated_at >= ? ORDER BY r.updated_at, g.id, r.idx",
            (since if since is not None else 0.0,),
        )

    def _records(self, found: list[tuple[Any, ...]]) -> list[BatchRecord]:
        """Each grid of ``found`` as a record, with its cells and their ratings."""
        records: list[BatchRecord] = []
        for run in super()._records(found):
            ratings = self.ratings(run.id)
            cells = [
                replace(r, stars=s, note=n)
                for r in self.rows(run.id)
                for s, n in [ratings.get(r.index, (0, None))]
            ]
            records.append(GridRecord(**vars(run), cells=cells))
        return records

    def ids(self, gateway: str | None = None) -> list[str]:
        self.adopt()
        return [r[0] for r in self._newest("SELECT id FROM batches", gateway)]

    def get(self, grid_id: str) -> GridRecord | None:
        self.adopt()
        found = self._records(self._read(_BATCHES + " WHERE id = ? AND kind = 'grid'", (grid_id,)))
        return next((r for r in found if isinstance(r, GridRecord)), None)

    def require(self, grid_id: str) -> GridRecord:
        """The grid, or a KeyError naming ``grid_id`` and the nearest stored ids."""
        record = self.get(grid_id)
        if record is not None:
            return record
        known = self.ids()
        near = difflib.get_close_matches(str(grid_id), known, n=3, cutoff=0.3) or known[:3]
        hint = f"; nearest: {', '.join(near)}" if near else "; no grid is stored yet"
        if isinstance(self.tables, SessionTables):  # only this client's, in memory
            hint = f"{hint if near else ''}; {MEMORY_ONLY}"
        raise KeyError(f"no grid {shown(grid_id)}{hint}")  # a pasted 100 KB text is cut

    def grids(self, gateway: str | None = None) -> list[GridRecord]:
        """Every stored grid, newest first."""
        self.adopt()
        return [r for r in self.batches(gateway) if isinstance(r, GridRecord)]

    def left_unfinished(self, gateway: str, endpoint: str) -> list[GridRecord]:
        """The grids of ``gateway`` and ``endpoint`` a process that ended left unfinished,
        newest first: a cell not ended, and a cell reserved by an owner no longer alive
        (a kernel killed mid-grid, whether or not another kernel re-opened it since: a
        second kernel run after the kill paid for every cell again). A grid only live
        kernels reserved is theirs, and a grid never sent has no owner to have ended:
        docs/decisions.md#grid-left-unfinished."""
        found: list[GridRecord] = []
        alive = self.tables.alive_owners() | {self.tables.owner}  # this process lives
        for grid_id, stored_endpoint in self._newest("SELECT id, endpoint FROM batches", gateway):
            if stored_endpoint != endpoint:
                continue
            if set(dict(self._read(_COUNTS, (grid_id,)))) <= set(ENDED):
                continue  # finished
            owners = {
                owner
                for (owner,) in self._read(
                    "SELECT DISTINCT owner FROM batch_rows WHERE batch_id = ? "
                    "AND owner IS NOT NULL",
                    (grid_id,),
                )
            }
            if owners - alive and (record := self.get(grid_id)) is not None:
                found.append(record)
        return found


#: One store per kind (runs, grids) per ledger file (or per file-less client) in
#: this process. Owner: :func:`store_for`, the only writer and the one way in (grids,
#: sweeps, the board, batches, scores and exports ask it):
#: docs/decisions.md#who-owns-the-process-wide-state.
_stores: dict[tuple[type[BatchStore], str], BatchStore] = {}
#: the stores of clients with no ledger, which live and die with their client: keyed by
#: ``id(client)`` they outlived it, and a later client given its id found a batch of
#: another gateway there ("sent through the gateway ...")
_memory_stores: weakref.WeakKeyDictionary[Any, dict[type[BatchStore], BatchStore]] = (
    weakref.WeakKeyDictionary()
)
_stores_lock = threading.Lock()
S = TypeVar("S", bound=BatchStore)


def store_for(client: ClientLike, kind: type[S]) -> S:
    """The store of ``kind`` of a client's ledger file, one per file per process, made
    here; a client with no ledger has its own, in memory, for as long as it lives, which
    records no run when its ledger was asked for and could not be opened
    (docs/decisions.md#grid-store)."""
    ledger = client.ledger
    with _stores_lock:
        if ledger is None:
            stores = _memory_stores.setdefault(client, {})
            store = stores.get(kind)
            if store is None:
                unopened = bool(getattr(client, "ledger_unopened", False))
                store = stores[kind] = kind(SessionTables(unopened=unopened))
        else:
            key = (kind, str(Path(ledger.path).resolve()))
            store = _stores.get(key)
            if store is None:
                store = _stores[key] = kind(ledger)
        assert isinstance(store, kind)
        return store
