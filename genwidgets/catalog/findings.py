"""Soft findings: a payload the service accepts but that will not do what its author
expects (an unknown field, an ignored or truncated value, a field soon deprecated).

Validators report them with :func:`warn`; they become Python warnings, unless
:func:`collect_warnings` gathers them (the simulator and the forms do, so nothing
prints into a user's notebook from a server thread).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

# the warning classes live in the one exception tree; re-exported for the catalog
from ..errors import DeprecatedFieldWarning as DeprecatedFieldWarning
from ..errors import IneffectiveFieldWarning as IneffectiveFieldWarning
from ..errors import UnknownFieldWarning as UnknownFieldWarning

_collector: ContextVar[list[tuple[str, type[Warning]]] | None] = ContextVar(
    "genwidgets_catalog_warnings", default=None
)


@contextmanager
def collect_warnings() -> Iterator[list[tuple[str, type[Warning]]]]:
    """Gather soft findings instead of warning (per thread and task, unlike catch_warnings).

    The simulator validates with it, so its thread never prints into a user's notebook.
    """
    found: list[tuple[str, type[Warning]]] = []
    token = _collector.set(found)
    try:
        yield found
    finally:
        _collector.reset(token)


def warn(message: str, category: type[Warning] = IneffectiveFieldWarning) -> None:
    """A validator's soft finding, by default an :class:`IneffectiveFieldWarning`: a
    warning, unless :func:`collect_warnings` is active."""
    sink = _collector.get()
    if sink is not None:
        sink.append((message, category))
    else:
        warnings.warn(message, category, stacklevel=4)


def warn_truncated(name: str, value: str | None, limit: int) -> None:
    """Where the spec says excess text is truncated, a longer text is a warning, not an
    error: the service accepts it."""
    if value is not None and len(value) > limit:
        warn(f"{name} has {len(value)} characters; the service truncates it to {limit}")
