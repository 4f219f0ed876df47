"""One run store of each kind per ledger file (:func:`store_for`), and a stored grid's
plan read back (:func:`restore_plan`); the stores and their tables are
:mod:`.batch_store`'s. docs/decisions.md#grid-store.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..catalog import endpoint as catalog_endpoint
from ..errors import EndpointNotFound, PayloadError
from .axes import Axis
from .batch_store import BatchStore
from .cost import billed_count
from .plan import AXES, GridPlan, PlannedCell, grid_axes, laid_out

if TYPE_CHECKING:
    from .._protocols import ClientLike

__all__ = ["restore_plan", "store_for"]


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
    stored = description.get("axes") or {}
    axes = {n: Axis.from_description(a) if (a := stored.get(n)) else None for n in AXES}
    endpoint = str(description["endpoint"])
    places = list(laid_out(grid_axes(axes), endpoint))
    if len(places) != len(payloads):
        raise ValueError(
            f"the stored grid has {len(payloads)} cells but its axes make {len(places)}"
        )
    cells = []
    for index, ((position, values, target), payload) in enumerate(
        zip(places, payloads, strict=True)
    ):
        kind, billed = "", 1
        with contextlib.suppress(PayloadError, EndpointNotFound):  # a removed endpoint
            spec = catalog_endpoint(target)
            kind = str(spec.kind)
            billed = billed_count(spec, payload)  # what it billed when sent (4 images, ...)
        cells.append(
            PlannedCell(
                index=index,
                position=position,
                values=values,
                payload=dict(payload),
                billed=billed,
                endpoint=target,
                kind=kind,
            )
        )
    return GridPlan(
        endpoint=endpoint,
        base_payload=dict(description.get("base_payload") or {}),
        axes=axes,
        cells=tuple(cells),
        seed=description.get("seed"),
        seed_field=description.get("seed_field"),
        billing=dict(description.get("billing") or {}),
        layout=dict(description.get("layout") or {a: a for a in AXES}),
        per_endpoint=dict(description.get("per_endpoint") or {}),
    )
