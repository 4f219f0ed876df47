"""``gw.scores()``: every rated grid cell of the ledger's file, across grids, kernels
and days, as one list of dicts (:class:`ScoreTable`): docs/decisions.md#scores."""

from __future__ import annotations

import contextlib
import datetime as dt
import itertools
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._client import default_client
from ..catalog import endpoint as catalog_endpoint
from ..errors import EndpointNotFound, PayloadError
from .axes import Axis, field_of
from .batch_store import GridStore, store_for
from .mapping import prompt_of
from .plan import grid_axes, laid_out

if TYPE_CHECKING:
    from .._protocols import ClientLike

__all__ = ["ScoreTable", "scores"]


class ScoreTable(list[dict[str, Any]]):
    """Rated cells, one dict each (see the module docstring)."""

    def dataframe(self) -> Any:
        """The rows as a pandas DataFrame (ImportError saying so without pandas)."""
        try:
            import pandas  # noqa: PLC0415 - pandas is optional: only dataframe() needs it
        except ImportError:
            raise ImportError("scores().dataframe() needs pandas: pip install pandas") from None
        return pandas.DataFrame(list(self))


def _since(value: Any) -> float | None:
    """A time bound: a datetime, a date, a POSIX time, or an ISO date string."""
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value)
        except ValueError:
            raise ValueError(
                f"since={value!r} is not an ISO date or time (e.g. '2026-11-25')"
            ) from None
    if isinstance(value, dt.datetime):
        return value.timestamp()
    if isinstance(value, dt.date):
        return dt.datetime.combine(value, dt.time()).timestamp()
    raise ValueError(f"since is a datetime, date, ISO string or timestamp, not {value!r}")


def _cell(
    description: Mapping[str, Any], index: int, endpoint: str, payload: Mapping[str, Any]
) -> tuple[str, dict[str, Any]]:
    """Where cell ``index`` of a stored grid was sent, and its other axis values by field:
    a sweep's each varied field with its value as sent (its axis names them all, and its
    values are labels, ``seed=1 · n=2``)."""
    stored = description.get("axes") or {}
    axes = grid_axes({n: Axis.from_description(a) for n, a in stored.items() if a})
    for _, values, target in itertools.islice(laid_out(axes, endpoint), index, index + 1):
        found: dict[str, Any] = {}
        for n, a in axes:
            if a.kind == "combination":
                found.update((name, field_of(payload, name)) for name in a.field.split(" · "))
            elif a.kind != "endpoint":
                found[a.field] = values[n]
        return target, found
    return endpoint, {}


def _prompt(endpoint: str, payload: Mapping[str, Any]) -> str | None:
    with contextlib.suppress(PayloadError, EndpointNotFound):  # an endpoint since removed
        return prompt_of(catalog_endpoint(endpoint), payload)
    return None


def scores(
    endpoint: str | None = None, since: Any = None, client: ClientLike | None = None
) -> ScoreTable:
    """Every rated grid cell of the client's ledger file (default: the latest
    client), oldest rating first; ``endpoint`` keeps the cells sent there,
    ``since`` those rated at or after it."""
    chosen = client if client is not None else default_client()
    table = ScoreTable()
    for row in store_for(chosen, GridStore).rated(_since(since)):
        grid_id, gateway, grid_endpoint, description, index, payload, rid, stars, note, at = row
        sent = json.loads(payload) if payload else {}
        target, values = _cell(json.loads(description), int(index), grid_endpoint, sent)
        if endpoint is not None and target != endpoint:
            continue
        table.append(
            {
                "grid": grid_id,
                "gateway": gateway,
                "cell": int(index),
                "endpoint": target,
                "prompt": _prompt(target, sent),
                "stars": int(stars),
                "note": note,
                "rated_at": dt.datetime.fromtimestamp(at, dt.timezone.utc).isoformat(),
                "request_id": rid,
                **values,
            }
        )
    return table
