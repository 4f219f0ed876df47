"""Displays that outlive the kernel: live while something runs, static once it ended.

A widget output reopened without widget state (JupyterLab's and Notebook 7's
default save) shows "model not found", and front-ends prefer the widget
mimetype over any HTML beside it. So each view genwidgets displays is one
output under a ``display_id`` holding the widget *and* an HTML copy, and once
nothing in it can change any more (a finished task, a finished grid, a
``gw.render`` of outputs) that output is replaced by the static copy alone,
written from the kernel's main thread at the end of the cell
(:class:`Republisher`), where every front-end and headless runner keeps it.
Voilà keeps the live widgets (:func:`keeps_live_views`): it saves nothing.
See docs/decisions.md, "Display and saved notebooks".
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from .ticker import guarded

__all__ = [
    "LIVE_FRONTEND_VARIABLES",
    "REPUBLISH",
    "WIDGET_VIEW_MIME",
    "Republisher",
    "display_durable",
    "in_kernel",
    "keeps_live_views",
    "make_durable",
    "widget_bundle",
]

WIDGET_VIEW_MIME = "application/vnd.jupyter.widget-view+json"

#: Kernel environment variables set by front-ends that render live views and save
#: nothing (Voilà sets these in the kernels it starts): there a finished view
#: stays a widget instead of turning into its static copy.
LIVE_FRONTEND_VARIABLES = ("VOILA_BASE_URL", "VOILA_SERVER_URL", "VOILA_KERNEL_ID", "VOILA_PREHEAT")


def keeps_live_views() -> bool:
    """True where a finished view should stay a live widget (Voilà)."""
    return any(name in os.environ for name in LIVE_FRONTEND_VARIABLES)


def in_kernel() -> bool:
    """True inside a Jupyter kernel (where widgets can be shown)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


class Republisher:
    """Runs each pending write once more at the end of the next cell, on the main thread.

    A thread's display update sent between two cells carries the label of a
    cell that has already finished, and a headless runner (nbclient) drops it
    from the saved notebook. IPython's ``post_run_cell`` runs on the main thread
    with the label of the cell that just ran, so writing the same bundle again
    there always lands. Writing twice is harmless: the update is idempotent.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: list[Callable[[], Any]] = []
        self._installed = False

    def add(self, write: Callable[[], Any]) -> None:
        with self._lock:
            if not self._installed:
                self._installed = self._install()
            if self._installed:  # with no shell there is no next cell to write in
                self._pending.append(write)

    def _install(self) -> bool:
        try:
            from IPython import get_ipython
        except ImportError:
            return False
        shell = get_ipython()
        if shell is None:
            return False
        shell.events.register("post_run_cell", self.flush)
        return True

    def flush(self, *_args: Any) -> None:
        with self._lock:
            pending, self._pending = self._pending, []
        for write in pending:
            guarded(write)


REPUBLISH = Republisher()


def widget_bundle(widget: Any, copy: dict[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """One display output: the widget's view and, beside it, ``copy`` (HTML and
    text of the same content) for whatever cannot show the widget. Returns the
    data and metadata (anywidget adds Colab's widget-manager metadata there)."""
    bundle = widget._repr_mimebundle_()
    assert bundle is not None  # a displayable widget always has a front-end view
    data, metadata = bundle if isinstance(bundle, tuple) else (bundle, {})
    return {**copy, WIDGET_VIEW_MIME: data[WIDGET_VIEW_MIME]}, metadata


def display_durable(widget: Any, static: Callable[[], dict[str, str]]) -> None:
    """Display a view whose content is final (rendered outputs, a finished grid):
    the widget and its static copy now, the static copy alone at the end of the
    cell (the widget stays in Voilà; outside a kernel, the plain text)."""
    from IPython import display as ipd

    copy = static()
    if not in_kernel():
        print(copy.get("text/plain", ""))
        return
    data, metadata = widget_bundle(widget, copy)
    handle = ipd.display(data, raw=True, metadata=metadata, display_id=True)
    if handle is not None and not keeps_live_views():
        REPUBLISH.add(lambda: handle.update(copy, raw=True))


W = TypeVar("W")


def make_durable(widget: W, static: Callable[[], dict[str, str]]) -> W:
    """Give one widget the durable display of :func:`display_durable` when it is a
    cell's result or passed to ``display()``: an instance attribute IPython's
    display formatter finds, so no subclass per widget class is needed and the
    widget still nests in containers as itself."""
    vars(widget)["_ipython_display_"] = lambda: display_durable(widget, static)
    return widget
