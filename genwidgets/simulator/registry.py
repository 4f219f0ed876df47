"""Which endpoints the simulator serves, how long each kind runs, and payload checks.

Exactly the catalog's endpoints, looked up when a request arrives (one registered after
the simulator started is served at once), checked by :func:`genwidgets.catalog.validate`
with its soft findings collected, so the server thread never warns into a notebook.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ..catalog import EndpointSpec, collect_warnings, endpoint, endpoints, validate
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


def payload_errors(endpoint_id: str, payload: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every problem of ``payload`` as ``{"loc", "msg"}`` items (empty when valid).

    Unknown fields pass, as on the real service (the spec hides some names).
    """
    try:
        with collect_warnings():  # soft findings stay out of the user's notebook
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
