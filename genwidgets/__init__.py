"""A careful client, forms and live task views for a generation gateway.

With no gateway configured, ``gw.Client()`` starts a local simulator (no key needed)::

    import genwidgets as gw

    client = gw.Client()   # or gw.Client(base_url, api_key), or GENWIDGETS_BASE_URL/_API_KEY
    job = client.submit("genW2.5-t2i-preview", {"prompt": "a red kite", "n": 1})
    job                    # in a notebook: the live task view, with Cancel
    result = job.result(timeout=600)
    result.outputs[0].save("kite.png")

The public names, by purpose:

- send and wait: Client, AsyncClient, login, Job, AsyncJob, Status, Result, Output,
  Handle, PreparedRequest, PollPolicy, Ledger (``client.history()``, ``client.resume()``)
- the endpoints: endpoints, endpoint, EndpointSpec, validate, openapi
- in a notebook: form, EndpointForm, render, board, Board, TaskView
- the prompt lab: grid, Grid, grids, load_grid, GridRecord, sweep, Sweep, scores,
  ScoreTable, read_export (what a saved contact sheet or page says ran)
- batches from data (a CSV, JSONL or DataFrame of rows to named, tagged files): batch,
  Batch, batches, BatchRecord (``genwidgets batch`` on the command line)
- errors: GenwidgetsError and its tree, GenwidgetsWarning (``help(gw.errors)``)
- further: ``genwidgets.imgm`` (the imgM prompt language), ``genwidgets.catalog``
  (add an endpoint), ``genwidgets.simulator`` (run the simulator yourself)

The README and ``notebooks/`` teach the rest.
"""

from __future__ import annotations

import importlib  # noqa: TID251 - the lazy table below, each entry spelled out under TYPE_CHECKING
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any

from . import errors
from .errors import *  # noqa: F403 - the exception tree, public as errors.__all__ lists it

if TYPE_CHECKING:
    from ._async_client import AsyncClient
    from ._client import Client, login
    from .catalog import EndpointSpec, endpoint, endpoints, openapi
    from .jobs.job import AsyncJob, Job
    from .jobs.ledger import Ledger
    from .jobs.polling import PollPolicy
    from .lab.batch import Batch
    from .lab.batch_store import BatchRecord, GridRecord
    from .lab.export import read_export
    from .lab.scores import ScoreTable, scores
    from .media import validate
    from .protocol.prepared import PreparedRequest
    from .protocol.records import Handle, Output, Result, Status
    from .widgets.batch_view import batch, batches
    from .widgets.board import Board, board
    from .widgets.form import EndpointForm, form
    from .widgets.grid import Grid, grid, grids, load_grid
    from .widgets.render import render
    from .widgets.sweep import Sweep, sweep
    from .widgets.task import TaskView

__version__ = "0.1.0"

# How the facade works (kept out of the docstring, which is for users): it is small
# and cheap. ``import genwidgets`` imports neither ipywidgets nor the simulator and
# starts nothing; everything but the exception tree loads on first use (PEP 562
# ``__getattr__``) from one table, ``_LAZY``, and the ``TYPE_CHECKING`` block above
# spells the same imports out for readers and mypy (pydantic's ``_dynamic_imports``
# is the model). ``__dir__`` lists the public names only, so ``dir(gw)``, tab
# completion and ``help(gw)`` show what to use, not this machinery.
#
# The facade is also where a Job learns to draw its task view: the jobs layer sits
# below the widgets and cannot import them, so ``import genwidgets`` registers the
# view with IPython's display formatter by type name (when IPython runs) and imports
# it on first display (see ``_install_display_hook``). That registration, once, is the
# facade's only side effect (docs/decisions.md#who-owns-the-process-wide-state).

#: public name -> the module that defines it (imported on first access), one line a name
_LAZY = {
    "Client": "._client",
    "AsyncClient": "._async_client",
    "login": "._client",
    "Job": ".jobs.job",
    "AsyncJob": ".jobs.job",
    "PollPolicy": ".jobs.polling",
    "Ledger": ".jobs.ledger",
    "PreparedRequest": ".protocol.prepared",
    "Status": ".protocol.records",
    "Handle": ".protocol.records",
    "Result": ".protocol.records",
    "Output": ".protocol.records",
    "EndpointSpec": ".catalog",
    "endpoints": ".catalog",
    "endpoint": ".catalog",
    "validate": ".media",  # pathlib.Path values are local files
    "openapi": ".catalog",
    "form": ".widgets.form",
    "EndpointForm": ".widgets.form",
    "render": ".widgets.render",
    "board": ".widgets.board",
    "Board": ".widgets.board",
    "sweep": ".widgets.sweep",
    "Sweep": ".widgets.sweep",
    "grid": ".widgets.grid",
    "Grid": ".widgets.grid",
    "load_grid": ".widgets.grid",
    "grids": ".widgets.grid",
    "GridRecord": ".lab.batch_store",
    "TaskView": ".widgets.task",
    "batch": ".widgets.batch_view",  # importing it installs the batch's live view
    "batches": ".widgets.batch_view",
    "Batch": ".lab.batch",
    "BatchRecord": ".lab.batch_store",
    "scores": ".lab.scores",
    "read_export": ".lab.export",
    "ScoreTable": ".lab.scores",
}
#: Subpackages reachable as attributes (``gw.media``) without importing them eagerly.
_SUBMODULES = {"media", "imgm", "catalog", "simulator", "widgets", "errors", "lab", "serve"}
_importing = set[str]()  # no module-level annotation: help(gw) would list them as data


def _module(path: str) -> ModuleType:
    """One of our modules by its relative name: the facade's one dynamic import."""
    return importlib.import_module(path, __name__)


def _display_job(job: Job | AsyncJob) -> None:
    """Draw a job's live task view (imported on the first display only)."""
    from .jobs.job import AsyncJob  # noqa: PLC0415 - loaded by then; the facade imports it on demand
    from .widgets.task import display_job  # noqa: PLC0415 - ipywidgets load on first display only

    display_job(job.sync if isinstance(job, AsyncJob) else job)


def _install_display_hook() -> None:
    """Let a displayed :class:`Job` (or :class:`AsyncJob`) draw its task view, however
    it was made: one route, IPython's display formatter registered by type *name*
    (without importing the jobs or ipywidgets now), so a job made before anything
    touched ``gw.Job`` (a form's, a grid's, ``resume``'s) still shows its view.
    Without IPython there is nothing to draw on: a job shows its repr.
    """
    if "IPython" not in sys.modules:
        return
    try:
        shell = sys.modules["IPython"].get_ipython()
    except AttributeError:
        return
    if shell is None:
        return
    formatter = shell.display_formatter.ipython_display_formatter
    for name in ("Job", "AsyncJob"):
        formatter.for_type_by_name(f"{__name__}.jobs.job", name, _display_job)


def _load(name: str) -> Any:
    return getattr(_module(_LAZY[name]), name)


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


#: what ``dir(gw)`` adds to the public names and subpackages
_MODULE_DUNDERS = {"__all__", "__doc__", "__file__", "__name__", "__path__", "__version__"}


def __dir__() -> list[str]:
    return sorted(set(__all__) | _SUBMODULES | _MODULE_DUNDERS)


_install_display_hook()

__all__ = [
    "AsyncClient",
    "AsyncJob",
    "Batch",
    "BatchRecord",
    "Board",
    "Client",
    "EndpointForm",
    "EndpointSpec",
    "Grid",
    "GridRecord",
    "Handle",
    "Job",
    "Ledger",
    "Output",
    "PollPolicy",
    "PreparedRequest",
    "Result",
    "ScoreTable",
    "Status",
    "Sweep",
    "TaskView",
    "batch",
    "batches",
    "board",
    "endpoint",
    "endpoints",
    "form",
    "grid",
    "grids",
    "load_grid",
    "login",
    "openapi",
    "read_export",
    "render",
    "scores",
    "sweep",
    "validate",
]
__all__ += errors.__all__
