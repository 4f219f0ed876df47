"""genwidgets: a careful client, forms and live task views for a generation gateway.

The facade is small and cheap: ``import genwidgets`` imports neither ipywidgets
nor the simulator and starts nothing. Everything but the exception tree loads
on first use (PEP 562 ``__getattr__``), each name through a plain ``from .x
import y`` in :func:`_load`, so readers and mypy see every dependency.

The facade is also where a :class:`Job` learns to draw its task view: the jobs
layer sits below the widgets and cannot import them, so loading ``Client``,
``AsyncClient`` or ``Job`` from here installs a display hook that imports the
view on first display (see :func:`_install_display_hook`).
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

from .errors import (
    DeprecatedFieldWarning,
    DownloadError,
    EndpointNotFound,
    GatewayError,
    GenwidgetsError,
    GenwidgetsWarning,
    IneffectiveFieldWarning,
    LedgerError,
    LedgerWarning,
    MediaWarning,
    ModelNotAllowed,
    NotSupported,
    OutcomeUnknown,
    PayloadError,
    RateLimited,
    RequestNotFound,
    RuntimeFailed,
    ServerError,
    SimulatorStartError,
    TaskFailed,
    TaskTimeout,
    Unauthorized,
    UnknownFieldWarning,
    WebhookNotSupported,
)

if TYPE_CHECKING:
    from ._client import AsyncClient, Client, login
    from .catalog import EndpointSpec, endpoint, endpoints, validate
    from .jobs.job import Job
    from .lab.run import grids
    from .protocol.prepared import PreparedRequest
    from .protocol.records import Output, Result, Status
    from .widgets.board import board
    from .widgets.form import EndpointForm, form
    from .widgets.grid import grid, load_grid
    from .widgets.render import render
    from .widgets.sweep import sweep

__version__ = "0.1.0"

# name -> (module, attribute); resolved on first access by _load.
_LAZY = {
    "Client": ("._client", "Client"),
    "AsyncClient": ("._client", "AsyncClient"),
    "login": ("._client", "login"),
    "Job": (".jobs.job", "Job"),
    "PreparedRequest": (".protocol.prepared", "PreparedRequest"),
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
    "scores": (".lab", "scores"),
}
_SUBMODULES = {"media", "imgm", "catalog", "simulator", "widgets", "errors", "lab"}
_importing: set[str] = set()


def _module(path: str) -> ModuleType:
    """Import one of our modules by its relative name, spelled out (no importlib)."""
    if path == "._client":
        from . import _client

        return _client
    if path == ".jobs.job":
        from .jobs import job

        return job
    if path == ".protocol.prepared":
        from .protocol import prepared

        return prepared
    if path == ".protocol.records":
        from .protocol import records

        return records
    if path == ".catalog":
        from . import catalog

        return catalog
    if path == ".widgets.form":
        from .widgets import form

        return form
    if path == ".widgets.render":
        from .widgets import render

        return render
    if path == ".widgets.board":
        from .widgets import board

        return board
    if path == ".widgets.sweep":
        from .widgets import sweep

        return sweep
    if path == ".widgets.grid":
        from .widgets import grid

        return grid
    if path == ".lab.run":
        from .lab import run

        return run
    if path == ".lab":
        from . import lab

        return lab
    if path == ".media":
        from . import media

        return media
    if path == ".imgm":
        from . import imgm

        return imgm
    if path == ".simulator":
        from . import simulator

        return simulator
    if path == ".widgets":
        from . import widgets

        return widgets
    if path == ".errors":
        from . import errors

        return errors
    raise AttributeError(f"module 'genwidgets' does not load {path!r}")


def _display_job(job: Job) -> None:
    """Draw a job's live task view (imported on the first display only)."""
    from .widgets.task import display_job

    display_job(job)


def _install_display_hook() -> None:
    from .jobs import job as job_module

    job_module.display_hook = _display_job


def _load(name: str) -> Any:
    path, attr = _LAZY[name]
    value = getattr(_module(path), attr)
    if path in ("._client", ".jobs.job"):
        _install_display_hook()
    return value


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = _load(name)
        globals()[name] = value
        return value
    if name in _SUBMODULES and name not in _importing:
        # ``from . import x`` asks this hook first (hasattr): answer "not yet" meanwhile
        _importing.add(name)
        try:
            return _module(f".{name}")
        finally:
            _importing.discard(name)
    raise AttributeError(f"module 'genwidgets' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | _SUBMODULES)


__all__ = [
    "AsyncClient",
    "Client",
    "DeprecatedFieldWarning",
    "DownloadError",
    "EndpointForm",
    "EndpointNotFound",
    "EndpointSpec",
    "GatewayError",
    "GenwidgetsError",
    "GenwidgetsWarning",
    "IneffectiveFieldWarning",
    "Job",
    "LedgerError",
    "LedgerWarning",
    "MediaWarning",
    "ModelNotAllowed",
    "NotSupported",
    "OutcomeUnknown",
    "Output",
    "PayloadError",
    "PreparedRequest",
    "RateLimited",
    "RequestNotFound",
    "Result",
    "RuntimeFailed",
    "ServerError",
    "SimulatorStartError",
    "Status",
    "TaskFailed",
    "TaskTimeout",
    "Unauthorized",
    "UnknownFieldWarning",
    "WebhookNotSupported",
    "board",
    "endpoint",
    "endpoints",
    "form",
    "grid",
    "grids",
    "load_grid",
    "login",
    "render",
    "sweep",
    "validate",
]
