"""genwidgets: a careful client, forms and live task views for a generation gateway.

The facade is small and cheap: ``import genwidgets`` imports neither ipywidgets
nor the simulator and starts nothing. Widgets load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import (
    EndpointNotFound,
    GatewayError,
    GenwidgetsError,
    ModelNotAllowed,
    NotSupported,
    PayloadError,
    RateLimited,
    RequestNotFound,
    RuntimeFailed,
    ServerError,
    TaskFailed,
    TaskTimeout,
    Unauthorized,
    WebhookNotSupported,
)

if TYPE_CHECKING:
    from ._client import AsyncClient, Client
    from .catalog import EndpointSpec, endpoint, endpoints, validate
    from .jobs.job import Job
    from .protocol.records import Output, Result, Status

__version__ = "0.1.0"

# name -> (module, attribute); resolved on first access (PEP 562).
_LAZY = {
    "Client": ("._client", "Client"),
    "AsyncClient": ("._client", "AsyncClient"),
    "login": ("._client", "login"),
    "Job": (".jobs.job", "Job"),
    "Status": (".protocol.records", "Status"),
    "Result": (".protocol.records", "Result"),
    "Output": (".protocol.records", "Output"),
    "EndpointSpec": (".catalog", "EndpointSpec"),
    "endpoints": (".catalog", "endpoints"),
    "endpoint": (".catalog", "endpoint"),
    "validate": (".catalog", "validate"),
    "form": (".widgets.form", "form"),
    "EndpointForm": (".widgets.form", "EndpointForm"),
    "render": (".widgets.render", "render"),
    "board": (".widgets.board", "board"),
    "sweep": (".widgets.sweep", "sweep"),
    "grid": (".widgets.grid", "grid"),
    "grids": (".lab.run", "grids"),
    "load_grid": (".widgets.grid", "load_grid"),
}
_SUBMODULES = {"media", "imgm", "catalog", "simulator", "widgets", "errors", "lab"}


def __getattr__(name: str) -> Any:
    import importlib

    if name in _LAZY:
        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(module, __name__), attr)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'genwidgets' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | _SUBMODULES)


__all__ = [
    "AsyncClient",
    "Client",
    "EndpointNotFound",
    "EndpointSpec",
    "GatewayError",
    "GenwidgetsError",
    "Job",
    "ModelNotAllowed",
    "NotSupported",
    "Output",
    "PayloadError",
    "RateLimited",
    "RequestNotFound",
    "Result",
    "RuntimeFailed",
    "ServerError",
    "Status",
    "TaskFailed",
    "TaskTimeout",
    "Unauthorized",
    "WebhookNotSupported",
    "board",
    "endpoint",
    "endpoints",
    "form",
    "grid",
    "grids",
    "load_grid",
    "render",
    "sweep",
    "validate",
]
