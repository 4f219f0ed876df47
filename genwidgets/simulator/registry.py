"""Which endpoints the simulator serves, how long each kind runs, payload checks, and
the one lookup of per-endpoint behaviour (:func:`rule_for`).

Exactly the catalog's endpoints, looked up when a request arrives (one registered after
the simulator started is served at once), checked by :func:`genwidgets.catalog.validate`
with its soft findings collected, so the server thread never warns into a notebook.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, TypeVar

from ..catalog import (
    EndpointSpec,
    collect_warnings,
    endpoint,
    endpoints,
    sent_from_elsewhere,
    validate,
)
from ..errors import EndpointNotFound, PayloadError

#: Run time of one task at speed 1 ("demo speed"), per kind, in seconds.
BASE_SECONDS = {
    "image": 2.0,
    "video": 6.0,
    "speech": 2.0,
    "asset": 1.0,
    "subject": 1.0,
    "face": 1.0,
    "audio": 1.0,
}


class CatalogEndpoints(Mapping[str, EndpointSpec]):
    """The endpoints served: the catalog's, read at each lookup (never a copy)."""

    def __getitem__(self, endpoint_id: str) -> EndpointSpec:
        try:
            return endpoint(endpoint_id)
        except EndpointNotFound:
            raise KeyError(endpoint_id) from None

    def __iter__(self) -> Iterator[str]:
        return iter([spec.id for spec in endpoints(documented_only=False)])

    def __len__(self) -> int:
        return len(endpoints(documented_only=False))


ENDPOINTS: Mapping[str, EndpointSpec] = CatalogEndpoints()
T = TypeVar("T")


def family_of(endpoint: str) -> str:
    """The endpoint's family in the catalog (``""`` for an endpoint it does not know)."""
    spec = ENDPOINTS.get(endpoint)
    return spec.family if spec is not None else ""


def rule_for(
    endpoint: str, by_endpoint: Mapping[str, T], by_family: Mapping[str, T], default: T
) -> T:
    """The endpoint's row, else its family's row (as the catalog names it), else
    ``default``: so an endpoint that behaves differently is one table row, and a plain
    endpoint needs none."""
    if endpoint in by_endpoint:
        return by_endpoint[endpoint]
    return by_family.get(family_of(endpoint), default)


def payload_errors(endpoint_id: str, payload: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every problem of ``payload`` as ``{"loc", "msg"}`` items (empty when valid).

    Unknown fields pass, as on the real service (the spec hides some names).
    """
    try:
        # soft findings stay out of the user's notebook; the disk is not the sender's
        with collect_warnings(), sent_from_elsewhere():
            validate(endpoint_id, payload)
    except PayloadError as exc:
        return exc.errors
    except Exception as exc:  # a broken model must not turn bad input into a 500
        return [{"loc": (), "msg": f"the payload could not be checked: {exc}"}]
    return []


def describe_errors(errors: list[dict[str, Any]]) -> str:
    """The 422 ``detail`` text: ``Invalid payload: loc: msg; loc: msg``."""
    located = ((".".join(str(p) for p in err["loc"]) or "(body)", err["msg"]) for err in errors)
    return "Invalid payload: " + "; ".join(f"{loc}: {msg}" for loc, msg in located)
