"""One run store of each kind per ledger file (:func:`store_for`), and a stored grid's
plan read back (:func:`restore_plan`); the stores and their tables are
:mod:`.batch_store`'s. docs/decisions.md#grid-store.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..catalog import endpoint as catalog_endpoint
from ..errors import EndpointNotFound, PayloadError
from .axes import Axis
from .batch_store import BatchStore, SessionTables, Tables
from .cost import billed_count
from .plan import AXES, GridPlan, PlannedCell

if TYPE_CHECKING:
    from .._protocols import ClientLike

__all__ = [
    "SessionTables",
    "Tables",
    "restore_plan",
    "store_for",
]


#: One store per kind (runs, grids) per ledger file (or per file-less client) in
#: this process. Owner: :func:`store_for`, the only writer and the one way in (grids,
#: sweeps, the board, batches, scores and exports ask it):
#: docs/decisions.md#who-owns-the-process-wide-state.
_stores: dict[tuple[type[BatchStore], str], BatchStore] = {}
_stores_lock = threading.Lock()
S = TypeVar("S", bound=BatchStore)


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
