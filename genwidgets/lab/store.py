"""The grid store: grids, their cells' request ids, ratings and notes, kept in
tables beside the ledger's ``tasks`` so a grid outlives the kernel.

Every read and write goes through the client's :class:`~genwidgets.jobs.ledger.Ledger`
(``transaction()``, ``query()``), so its busy timeout, locking and errors are the
ledger's; a client without a ledger keeps its grids in memory for the session.
See docs/decisions.md#grid-store.
"""

from __future__ import annotations

import difflib
import itertools
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, overload

from .._config import redact
from ..catalog import endpoint as catalog_endpoint
from ..errors import EndpointNotFound, LedgerError, PayloadError
from ..jobs.ledger import Ledger, scrub_payload
from .axes import Axis
from .cost import billed_count
from .plan import AXES, GridPlan, PlannedCell

if TYPE_CHECKING:
    from .._protocols import ClientLike

__all__ = [
    "CellRecord",
    "GridRecord",
    "GridStore",
    "SessionTables",
    "TableStore",
    "Tables",
    "restore_plan",
    "store_for",
]

#: grids (the JSON description: base payload scrubbed as the ledger scrubs, axes,
#: layout, seed), their cells (payload, request id, create error), their ratings
_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS grids (
    id TEXT PRIMARY KEY,
    gateway TEXT NOT NULL,
    endpoint TEXT NOT NULL,
    created_at REAL NOT NULL,
    description TEXT NOT NULL
)""",
    """CREATE TABLE IF NOT EXISTS grid_cells (
    grid_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    payload TEXT NOT NULL,
    request_id TEXT,
    error TEXT,
    PRIMARY KEY (grid_id, idx)
)""",
    """CREATE TABLE IF NOT EXISTS grid_ratings (
    grid_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    stars INTEGER NOT NULL,
    note TEXT,
    updated_at REAL NOT NULL,
    PRIMARY KEY (grid_id, idx)
)""",
)
#: One field of a rating at a time: ``COALESCE`` keeps the field not given (NULL), so
#: a star and a note sent apart, in any order, both stay (docs/decisions.md#grid-view).
_RATE = (
    "INSERT INTO grid_ratings (grid_id, idx, stars, note, updated_at) "
    "VALUES (?, ?, COALESCE(?, 0), ?, ?) ON CONFLICT (grid_id, idx) DO UPDATE SET "
    "stars = COALESCE(?, stars), note = CASE WHEN ? THEN ? ELSE note END, "
    "updated_at = excluded.updated_at"
)
#: a rating with neither stars nor a note is no rating
_UNRATE = (
    "DELETE FROM grid_ratings WHERE grid_id = ? AND idx = ? AND stars = 0 "
    "AND (note IS NULL OR note = '')"
)
_RATING = "SELECT stars, note FROM grid_ratings WHERE grid_id = ? AND idx = ?"
Write = Callable[[sqlite3.Connection], object]


class Tables(Protocol):
    """Where the grid tables live: a :class:`~genwidgets.jobs.ledger.Ledger` (its file),
    or :class:`SessionTables` for a client without one."""

    @property
    def path(self) -> Path | None: ...

    @property
    def owner(self) -> str | None: ...

    def transaction(self) -> AbstractContextManager[sqlite3.Connection]: ...

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]: ...

    def hold(self, conn: sqlite3.Connection) -> str | None:
        """Take leases in the write transaction ``conn``: the holder's name (None: no
        other process can see these tables)."""

    def alive_owners(self) -> set[str]: ...


class SessionTables:
    """The grid tables of a client without a ledger: an in-memory SQLite database
    that lives as long as this process (nothing is written to disk)."""

    path = None
    owner = None

    def __init__(self) -> None:
        self._conn = sqlite3.connect(":memory:", check_same_thread=False)
        self._lock = threading.RLock()

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


def _no_table(exc: Exception) -> bool:
    """Whether an error says the tables are not in the file (yet)."""
    return "no such table" in str(exc)


def _no_column(exc: Exception) -> bool:
    """Whether an error says a column is not in the file's table (an older file)."""
    return "no such column" in str(exc) or "has no column named" in str(exc)


@dataclass(frozen=True)
class CellRecord:
    index: int
    payload: dict[str, Any]
    request_id: str | None
    error: str | None
    stars: int = 0
    note: str | None = None


@dataclass(frozen=True)
class GridRecord:
    """A stored grid as :func:`genwidgets.grids` lists it."""

    id: str
    gateway: str
    endpoint: str
    created_at: float
    description: dict[str, Any] = field(repr=False)
    cells: list[CellRecord] = field(repr=False, default_factory=list)

    @property
    def rated(self) -> int:
        return sum(1 for c in self.cells if c.stars)

    @property
    def sent(self) -> int:
        return sum(1 for c in self.cells if c.request_id)


class TableStore:
    """Tables of one ledger file (or of the session) with their ``SCHEMA``, made by the
    first write that finds them missing; a read of a file without them returns nothing.

    ``tables`` is the ledger to go through, a path (a :class:`Ledger` of that file is
    opened, and closed by :meth:`close`), or None (memory). Thread-safe: the ledger is.
    The grids (:class:`GridStore`) and the batches (``lab/batch_store.py``) keep theirs so.
    """

    SCHEMA: tuple[str, ...] = ()
    #: columns ``SCHEMA`` has that a file written by an older genwidgets lacks:
    #: (table, column, declaration), added by the first statement that misses one
    COLUMNS: tuple[tuple[str, str, str], ...] = ()

    def __init__(self, tables: Tables | str | os.PathLike[str] | None = None) -> None:
        self._owned: Ledger | None = None
        if tables is None:
            tables = SessionTables()
        elif isinstance(tables, (str, os.PathLike)):
            tables = self._owned = Ledger(tables)
        self.tables: Tables = tables
        self.path = tables.path

    def _write(self, write: Write) -> Any:
        """Run ``write`` in one transaction of the tables and return what it returned. A
        file without this store's tables (new, or started afresh after damage) gets them
        in the same transaction."""
        try:
            with self.tables.transaction() as conn:
                return write(conn)
        except (LedgerError, sqlite3.OperationalError) as exc:
            if not (_no_table(exc) or _no_column(exc)):
                raise
            with self.tables.transaction() as conn:
                self._bring_up_to_date(conn)
                return write(conn)

    def _bring_up_to_date(self, conn: sqlite3.Connection) -> None:
        """Make the tables missing, and add the :attr:`COLUMNS` an older file lacks."""
        for statement in self.SCHEMA:
            conn.execute(statement)
        for table, column, declaration in self.COLUMNS:
            have = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
            if column not in have:
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")

    def _read(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Rows of one query; none from a file that holds no such table yet (an older
        file's tables are brought up to date first)."""
        try:
            return self.tables.query(sql, params)
        except (LedgerError, sqlite3.OperationalError) as exc:
            if _no_table(exc):
                return []
            if not _no_column(exc):
                raise
        with self.tables.transaction() as conn:
            self._bring_up_to_date(conn)
        return self.tables.query(sql, params)

    def _newest(self, sql: str, gateway: str | None) -> list[tuple[Any, ...]]:
        """Rows of ``sql`` over a table of ``gateway`` and ``created_at`` columns, newest
        first (of ``gateway`` only, when given)."""
        where, params = (" WHERE gateway = ?", (gateway,)) if gateway is not None else ("", ())
        return self._read(f"{sql}{where} ORDER BY created_at DESC, rowid DESC", params)

    def close(self) -> None:
        """Close the ledger this store opened (a client's ledger is the client's to close)."""
        if self._owned is not None:
            self._owned.close()


class GridStore(TableStore):
    """Read and write grids in the tables of one ledger file (or of the session)."""

    SCHEMA = _SCHEMA

    def __init__(self, tables: Tables | str | os.PathLike[str] | None = None) -> None:
        super().__init__(tables)
        self._lock = threading.Lock()
        self._watchers: dict[str, list[Callable[[], object]]] = {}

    def watch(self, grid_id: str, callback: Callable[[], object]) -> None:
        """Call ``callback`` after each rating of ``grid_id`` made in this process
        (every open view of one grid shows what another one rated)."""
        with self._lock:
            self._watchers.setdefault(grid_id, []).append(callback)

    # ------------------------------------------------------------------ writing

    def save_grid(
        self,
        grid_id: str,
        *,
        gateway: str,
        endpoint: str,
        description: Mapping[str, Any],
        payloads: list[Mapping[str, Any]],
    ) -> None:
        """Record a grid and its cells' payloads (once; later calls change nothing)."""
        text = redact(json.dumps(description, default=str))
        cells = [
            (grid_id, i, redact(json.dumps(scrub_payload(p), default=str)))
            for i, p in enumerate(payloads)
        ]

        def write(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT OR IGNORE INTO grids (id, gateway, endpoint, created_at, description) "
                "VALUES (?, ?, ?, ?, ?)",
                (grid_id, gateway, endpoint, time.time(), text),
            )
            conn.executemany(
                "INSERT OR IGNORE INTO grid_cells (grid_id, idx, payload) VALUES (?, ?, ?)", cells
            )

        self._write(write)

    def set_request(
        self, grid_id: str, index: int, request_id: str | None, error: str | None = None
    ) -> None:
        self._write(
            lambda conn: conn.execute(
                "UPDATE grid_cells SET request_id = ?, error = ? WHERE grid_id = ? AND idx = ?",
                (request_id, redact(error) if error else None, grid_id, index),
            )
        )

    def rate(
        self, grid_id: str, index: int, stars: int | None = None, note: str | None = None
    ) -> tuple[int, str | None]:
        """Set (1-5) or clear (0) a cell's stars and set or clear ("") its note; a field
        given as None is left as stored, in the same transaction, so a star and a note
        sent apart never undo each other. Returns the cell's rating as stored (stars,
        note); tells the watchers."""

        def write(conn: sqlite3.Connection) -> tuple[int, str | None]:
            text = note or None
            conn.execute(
                _RATE, (grid_id, index, stars, text, time.time(), stars, note is not None, text)
            )
            conn.execute(_UNRATE, (grid_id, index))
            row = conn.execute(_RATING, (grid_id, index)).fetchone()
            return (int(row[0]), row[1]) if row else (0, None)

        stored: tuple[int, str | None] = self._write(write)
        with self._lock:
            watchers = list(self._watchers.get(grid_id, ()))
        for callback in watchers:
            callback()
        return stored

    # ------------------------------------------------------------------ reading

    def ratings(self, grid_id: str) -> dict[int, tuple[int, str | None]]:
        rows = self._read("SELECT idx, stars, note FROM grid_ratings WHERE grid_id = ?", (grid_id,))
        return {int(i): (int(s), n) for i, s, n in rows}

    def rated(self, since: float | None = None) -> list[tuple[Any, ...]]:
        """Every rated cell (stars > 0), oldest rating first: (grid id, gateway,
        grid endpoint, description JSON, cell index, payload JSON, request id,
        stars, note, rated at)."""
        return self._read(
            "SELECT g.id, g.gateway, g.endpoint, g.description, r.idx, c.payload, "
            "c.request_id, r.stars, r.note, r.updated_at FROM grid_ratings r "
            "JOIN grids g ON g.id = r.grid_id "
            "LEFT JOIN grid_cells c ON c.grid_id = r.grid_id AND c.idx = r.idx "
            "WHERE r.stars > 0 AND r.updated_at >= ? ORDER BY r.updated_at, g.id, r.idx",
            (since if since is not None else 0.0,),
        )

    def ids(self, gateway: str | None = None) -> list[str]:
        return [r[0] for r in self._newest("SELECT id FROM grids", gateway)]

    def get(self, grid_id: str) -> GridRecord | None:
        found = self._read(
            "SELECT id, gateway, endpoint, created_at, description FROM grids WHERE id = ?",
            (grid_id,),
        )
        if not found:
            return None
        gid, gateway, endpoint, created_at, description = found[0]
        ratings = self.ratings(gid)
        cells = [
            CellRecord(int(i), json.loads(p), rid, err, *ratings.get(int(i), (0, None)))
            for i, p, rid, err in self._read(
                "SELECT idx, payload, request_id, error FROM grid_cells WHERE grid_id = ? "
                "ORDER BY idx",
                (gid,),
            )
        ]
        return GridRecord(gid, gateway, endpoint, created_at, json.loads(description), cells)

    def require(self, grid_id: str) -> GridRecord:
        """The grid, or a KeyError naming ``grid_id`` and the nearest stored ids."""
        record = self.get(grid_id)
        if record is not None:
            return record
        known = self.ids()
        near = difflib.get_close_matches(str(grid_id), known, n=3, cutoff=0.3) or known[:3]
        hint = f"; nearest: {', '.join(near)}" if near else "; no grid is stored yet"
        raise KeyError(f"no grid {grid_id!r}{hint}")

    def grids(self, gateway: str | None = None) -> list[GridRecord]:
        """Every stored grid, newest first."""
        return [r for r in (self.get(i) for i in self.ids(gateway)) if r is not None]


#: One store per kind (grids, batches) per ledger file (or per file-less client) in
#: this process. Owner: :func:`store_for`, the only writer and the one way in (grids,
#: sweeps, the board, batches, scores and exports ask it):
#: docs/decisions.md#who-owns-the-process-wide-state.
_stores: dict[tuple[type[TableStore], str], TableStore] = {}
_stores_lock = threading.Lock()
S = TypeVar("S", bound=TableStore)


@overload
def store_for(client: ClientLike) -> GridStore: ...


@overload
def store_for(client: ClientLike, kind: type[S]) -> S: ...


def store_for(client: ClientLike, kind: type[TableStore] = GridStore) -> TableStore:
    """The store of ``kind`` (grids by default) of a client's ledger file, one per
    file per process, made here."""
    ledger = client.ledger
    key = str(Path(ledger.path).resolve()) if ledger is not None else f"memory:{id(client)}"
    with _stores_lock:
        store = _stores.get((kind, key))
        if store is None:
            store = _stores[(kind, key)] = kind(client.ledger)
        return store


def restore_plan(description: Mapping[str, Any], payloads: Sequence[Mapping[str, Any]]) -> GridPlan:
    """A stored grid's plan, from its description and its cells' stored payloads
    (nothing is validated again: these were sent)."""
    axes: dict[str, Axis | None] = {
        name: Axis.from_description(a) if a else None
        for name, a in (description.get("axes") or {}).items()
    }
    for name in AXES:
        axes.setdefault(name, None)
    order = [(n, a) for n in ("z", "y", "x") if (a := axes[n]) is not None]
    combos = list(itertools.product(*(range(len(a)) for _, a in order)))
    if len(combos) != len(payloads):
        raise ValueError(
            f"the stored grid has {len(payloads)} cells but its axes make {len(combos)}"
        )

    grid_endpoint = str(description["endpoint"])
    cells = []
    for index, (combo, payload) in enumerate(zip(combos, payloads, strict=True)):
        position = dict(zip((n for n, _ in order), combo, strict=True))
        values = {n: a.values[i] for (n, a), i in zip(order, combo, strict=True)}
        target = next((str(values[n]) for n, a in order if a.kind == "endpoint"), grid_endpoint)
        kind, billed = "", 1
        try:
            spec = catalog_endpoint(target)
            kind = str(spec.kind)
            billed = billed_count(spec, payload)  # what it billed when sent (4 images, ...)
        except (PayloadError, EndpointNotFound):  # an endpoint since removed from the catalog
            pass
        cells.append(
            PlannedCell(
                index=index,
                position=(position.get("z", 0), position.get("y", 0), position.get("x", 0)),
                values=values,
                payload=dict(payload),
                billed=billed,
                endpoint=target,
                kind=kind,
            )
        )
    layout = dict(description.get("layout") or {a: a for a in AXES})
    return GridPlan(
        endpoint=str(description["endpoint"]),
        base_payload=dict(description.get("base_payload") or {}),
        axes=axes,
        cells=tuple(cells),
        seed=description.get("seed"),
        seed_field=description.get("seed_field"),
        billing=dict(description.get("billing") or {}),
        layout=layout,
        per_endpoint=dict(description.get("per_endpoint") or {}),
    )
