"""The public surface of ``import genwidgets as gw``, pinned, and the one exception tree."""

from __future__ import annotations

import inspect
import re
import sys
import warnings

import pytest

import genwidgets as gw
from genwidgets import errors

#: every public name of the facade; a change here is a change of the public API (DESIGN.md)
PUBLIC = {
    "AsyncClient", "Batch", "BatchRecord", "Board", "Client", "EndpointForm", "EndpointSpec",
    "Grid", "GridRecord", "Handle", "AsyncJob", "Job", "Ledger", "Output", "PollPolicy",
    "PreparedRequest", "Result",
    "ScoreTable", "Status", "Sweep", "TaskView", "openapi",
    "batch", "batches", "board", "endpoint", "endpoints", "form", "grid", "grids", "load_grid",
    "login", "read_export", "render", "scores",
    "sweep", "validate",
    *errors.__all__,
}  # fmt: skip


def test_all_is_the_public_surface() -> None:
    assert set(gw.__all__) == PUBLIC
    assert len(gw.__all__) == len(set(gw.__all__))
    lazy_or_eager = set(gw._LAZY) | {n for n in vars(gw) if not n.startswith("_")}
    public_here = lazy_or_eager - {"annotations", "TYPE_CHECKING", "Any", "ModuleType"}
    public_here -= {n for n, v in vars(gw).items() if inspect.ismodule(v)}
    assert public_here == PUBLIC


def test_every_public_name_resolves() -> None:
    for name in gw.__all__:
        assert getattr(gw, name) is not None, name


def test_every_exception_and_warning_lives_in_errors_and_in_its_tree() -> None:
    tree = errors.__doc__ or ""
    for name in errors.__all__:
        cls = getattr(errors, name)
        assert cls.__module__ == "genwidgets.errors", name
        assert issubclass(cls, gw.GenwidgetsError | gw.GenwidgetsWarning), name
        assert f" {name}" in tree, f"{name} is not drawn in the errors docstring"
    assert not issubclass(gw.OutcomeUnknown, gw.GatewayError)  # no answer came
    assert issubclass(gw.GenwidgetsWarning, UserWarning)


#: exceptions that never reach a user, each with where it ends
NEVER_RAISED_TO_USERS = {
    # raised inside httpx's connection trace; users meet it as Unreachable, ServerError,
    # OutcomeUnknown (a poll, a create) or a DownloadError (an output)
    "genwidgets.protocol.fetch.InternalAddress",
    # the ledger writer's mark on a write it never applied (a LedgerError): logged, and
    # the LedgerWarning of the writer's stop names its tasks
    "genwidgets.jobs.ledger.writer.LeftBehind",
    # a picture past the decoder's cap: a thumbnail is left out (logged), an export's
    # tile is blank, and the simulator turns it into InputTooLarge
    "genwidgets.media.thumbnails.TooManyPixels",
    # the simulator's own: its task fails naming the field and the limit (a gateway's
    # task error, never a raise in the user's process)
    "genwidgets.simulator.inputs.InputTooLarge",
}


def test_no_other_module_defines_a_user_facing_exception() -> None:
    import pkgutil

    import genwidgets

    strays = []
    for info in pkgutil.walk_packages(genwidgets.__path__, "genwidgets."):
        if (
            info.name == "genwidgets.errors"
            or info.name.startswith("genwidgets.widgets")
            or info.name.endswith("__main__")
        ):
            continue  # widgets need ipywidgets; a __main__ runs its command
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            module = __import__(info.name, fromlist=["_"])
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException | Warning)
                and value.__module__ == info.name
                and not name.startswith("_")
            ):
                strays.append(f"{info.name}.{name}")
    assert not set(strays) - NEVER_RAISED_TO_USERS, strays


def test_the_display_hook_is_one_registration_with_ipython_and_nothing_else() -> None:
    """One route: importing the facade where IPython runs registers the task view with
    IPython's display formatter by type name (Job and AsyncJob), one function for both;
    loading a name changes no other module. In a fresh process, so the import is the
    first and the names are loaded then."""
    import json
    import subprocess

    code = """if True:
        import json, sys, types
        registered = []
        class Formatter:
            def for_type_by_name(self, module, name, fn):
                registered.append((module, name, fn))
        formatter = types.SimpleNamespace(ipython_display_formatter=Formatter())
        shell = types.SimpleNamespace(display_formatter=formatter)
        sys.modules["IPython"] = types.SimpleNamespace(get_ipython=lambda: shell)
        import genwidgets as gw
        from genwidgets.jobs import job as job_module
        before = dict(vars(job_module))
        loaded = gw.Job is job_module.Job and gw.AsyncJob is job_module.AsyncJob
        print(json.dumps({
            "registered": [(module, name) for module, name, _ in registered],
            "one_function": len({id(fn) for _, _, fn in registered}) == 1,
            "from_the_facade": [fn.__module__ for _, _, fn in registered],
            "loaded": loaded,
            "jobs_untouched": dict(vars(job_module)) == before,
            "display_hook": hasattr(job_module, "display_hook"),
            "second_route": hasattr(job_module.Job, "_ipython_display_"),
        }))
    """
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert json.loads(done.stdout) == {
        "registered": [["genwidgets.jobs.job", "Job"], ["genwidgets.jobs.job", "AsyncJob"]],
        "one_function": True,
        "from_the_facade": ["genwidgets", "genwidgets"],
        "loaded": True,
        "jobs_untouched": True,  # the facade sets nothing in the jobs layer
        "display_hook": False,
        "second_route": False,  # so no second route
    }, done.stderr


@pytest.mark.slow
def test_submodules_import_through_the_facade_in_a_fresh_process() -> None:
    import subprocess
    import sys

    code = (
        "from genwidgets import media, imgm, catalog, errors, simulator; "
        "import genwidgets as gw; print(gw.media is media, gw.Client.__name__)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["True", "Client"], done.stderr


def _our_classes() -> dict[str, type]:
    """Every class genwidgets defines, by name (to resolve type-only annotations)."""
    import importlib
    import pkgutil

    found: dict[str, type] = {}
    for info in pkgutil.walk_packages(gw.__path__, "genwidgets."):
        if ".static" in info.name or info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if inspect.isclass(value) and value.__module__.startswith("genwidgets"):
                found.setdefault(value.__name__, value)
    return found


def _returned_classes(annotation: object) -> set[type]:
    import typing

    args = typing.get_args(annotation)
    if args:
        return set().union(*(_returned_classes(a) for a in args))
    if inspect.isclass(annotation) and annotation.__module__.startswith("genwidgets"):
        return {annotation}
    return set()


def test_every_type_a_public_function_or_client_method_returns_is_exported() -> None:
    """``gw.grids()`` gives GridRecords, ``gw.scores()`` a ScoreTable, ``client.ledger``
    a Ledger: each can be named as ``gw.X`` (contracts stay private: they are Protocols)."""
    import pathlib
    import typing

    import httpx
    import ipywidgets

    names = {
        **_our_classes(),
        **vars(typing),
        "ipywidgets": ipywidgets,
        "httpx": httpx,
        "Path": pathlib.Path,
    }
    callables: list[tuple[str, object]] = [
        (n, getattr(gw, n)) for n in gw.__all__ if inspect.isfunction(getattr(gw, n))
    ]
    for cls in (gw.Client, gw.AsyncClient, gw.Job, gw.AsyncJob):
        for name, member in vars(cls).items():
            if name.startswith("_"):
                continue
            target = member.fget if isinstance(member, property) else member
            if inspect.isfunction(target):
                callables.append((f"{cls.__name__}.{name}", target))
    missing = {}
    for where, fn in callables:
        hints = typing.get_type_hints(fn, localns=names)
        for cls in _returned_classes(hints.get("return")):
            if typing.Protocol in cls.__mro__ or getattr(gw, cls.__name__, None) is cls:
                continue
            missing[where] = cls.__name__
    assert not missing, f"returned but not exported as gw.<name>: {missing}"


def test_help_opens_with_how_to_use_it_and_hides_the_machinery() -> None:
    """``help(gw)``: a quickstart first, then every public name by purpose; nothing
    of the lazy loading (its table, ``__getattr__``, ``__dir__``) in it or in ``dir()``."""
    import pydoc

    with warnings.catch_warnings():  # pydoc reads ipywidgets' deprecated class attributes
        warnings.simplefilter("ignore", DeprecationWarning)
        shown = pydoc.render_doc(gw, renderer=pydoc.plaintext)
    description = shown[shown.index("DESCRIPTION") : shown.index("PACKAGE CONTENTS")]
    assert description.index("gw.Client()") < description.index("client.submit(")
    assert description.index("client.submit(") < description.index("by purpose")
    listed = set(re.findall(r"\b\w+\b", description[description.index("by purpose") :]))
    assert {n for n in PUBLIC if n not in errors.__all__} <= listed  # every name, by purpose
    own = description + shown[shown.index("\nFUNCTIONS") :]  # the module's, not its classes'
    machinery = ("_LAZY", "__getattr__", "__dir__", "PEP 562", "__annotations__", "_importing")
    assert not [word for word in machinery if word in own]
    assert not [name for name in dir(gw) if name.startswith("_") and not name.endswith("__")]
    assert set(dir(gw)) >= PUBLIC | {"media", "imgm", "catalog"}
