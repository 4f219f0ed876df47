"""The lab's tables beside the ledger's ``tasks``: one store of each kind per ledger
file, so runs (batches and grids, :mod:`.batch_store`) outlive the kernel.

Every read and write goes through the client's :class:`~genwidgets.jobs.ledger.Ledger`
(``transaction()``, ``query()``), so its busy timeout, locking and errors are the
ledger's; a client without a ledger keeps its runs in memory for the session.
See docs/decisions.md#grid-store.
"""

from __future__ import annotations

import itertools
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..catalog import endpoint as catalog_endpoint
from ..errors import EndpointNotFound, LedgerError, PayloadError
from ..jobs.ledger import Ledger
from .axes import Axis
from .cost import billed_count
from .plan import AXES, GridPlan, PlannedCell

if TYPE_CHECKING:
    from .._protocols import ClientLike

__all__ = [
    "SessionTables",
    "TableStore",
    "Tables",
    "restore_plan",
    "store_for",
]

Write = Callable[[sqlite3.Connection], object]


class SessionTables:
    """The lab's tables of a client without a ledger: an in-memory SQLite database
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


#: where the lab's tables live: a ledger (its file), or the session's memory
Tables = Ledger | SessionTables


def _no_table(exc: Exception) -> bool:
    """Whether an error says the tables are not in the file (yet)."""
    return "no such table" in str(exc)


def _no_column(exc: Exception) -> bool:
    """Whether an error says a column is not in the file's table (an older file)."""
    return "no such column" in str(exc) or "has no column named" in str(exc)


class TableStore:
    """Tables of one ledger file (or of the session) with their ``SCHEMA``, made by the
    first write that finds them missing; a read of a file without them returns nothing.

    ``tables`` is the ledger to go through, a path (a :class:`Ledger` of that file is
    opened, and closed by :meth:`close`), or None (memory). Thread-safe: the ledger is.
    The runs (``lab/batch_store.py``) keep theirs so.
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

    def close(self) -> None:
        """Close the ledger this store opened (a client's ledger is the client's to close)."""
        if self._owned is not None:
            self._owned.close()


#: One store per kind (runs, grids) per ledger file (or per file-less client) in
#: this process. Owner: :func:`store_for`, the only writer and the one way in (grids,
#: sweeps, the board, batches, scores and exports ask it):
#: docs/decisions.md#who-owns-the-process-wide-state.
_stores: dict[tuple[type[TableStore], str], TableStore] = {}
_stores_lock = threading.Lock()
S = TypeVar("S", bound=TableStore)


def store_for(client: ClientLike, kind: type[S]) -> S:
    """The store of ``kind`` of a client's ledger file, one per file per process, made
    here."""
    ledger = client.ledger
    key = str(Path(ledger.path).resolve()) if ledger is not None else f"memory:{id(client)}"
    with _stores_lock:
        store = _stores.get((kind, key))
        if store is None:
            store = _stores[(kind, key)] = kind(client.ledger)
        assert isinstance(store, kind)
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
