"""A sweep planned: every combination of some varied fields, as a one-axis grid.

:func:`plan_sweep` expands, counts, bills and validates (the grid's own cells,
:func:`~.plan.expand_cells`); :meth:`SweepPlan.as_grid` lays the combinations along
one axis so a sweep is sent, kept and re-opened as a grid: docs/decisions.md#sweep.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from .._formats import short
from ..catalog import endpoint as catalog_endpoint
from ..errors import PayloadError
from .axes import Axis, field_type, given_twice
from .batch_plan import TaskPlan
from .cost import billing_values, refuse_above
from .plan import GridPlan, PlannedCell, Prepare, expand_cells

__all__ = ["MAX_JOBS", "SweepPlan", "combination_label", "plan_sweep"]

#: The most combinations a sweep sends unless told otherwise (``max_jobs``).
MAX_JOBS = 50


def combination_label(values: Mapping[str, Any]) -> str:
    """``seed=1 · prompt=kite``: one combination as its cell's label."""
    return " · ".join(f"{k}={short(v, 40)}" for k, v in values.items())


@dataclass(frozen=True)
class SweepPlan(TaskPlan):
    """What a sweep will send, worked out before anything is sent."""

    endpoint: str
    base_payload: dict[str, Any]
    varied: tuple[str, ...]  # the fields of ``vary``, outermost first
    cells: tuple[PlannedCell, ...]
    billing: dict[str, list[Any]]

    @property
    def rows(self) -> tuple[PlannedCell, ...]:
        return self.cells

    @property
    def payloads(self) -> list[dict[str, Any]]:
        return [c.payload for c in self.cells]

    @property
    def labels(self) -> list[dict[str, Any]]:
        """Each combination's values, by field."""
        return [dict(c.values) for c in self.cells]

    @property
    def billed(self) -> list[int]:
        return [c.billed for c in self.cells]

    def summary(self) -> str:
        """One plain-text line: tasks, billed generations, billing-field values."""
        return self.billed_line(self.endpoint, self.endpoint, self.billing)

    def as_grid(self) -> GridPlan:
        """The combinations along one ``x`` axis (labelled ``seed=1 · prompt=kite``),
        each cell keeping its payload: sent, stored and re-opened as a grid."""
        names = tuple(combination_label(c.values) for c in self.cells)
        axis = Axis(" · ".join(self.varied), names, kind="combination")
        cells = tuple(
            replace(c, position=(0, 0, i), values={"x": names[i]}) for i, c in enumerate(self.cells)
        )
        return GridPlan(
            endpoint=self.endpoint,
            base_payload=dict(self.base_payload),
            axes={"x": axis, "y": None, "z": None},
            cells=cells,
            billing=self.billing,
        )


def plan_sweep(
    endpoint: str,
    base_payload: Mapping[str, Any],
    vary: Mapping[str, Sequence[Any]],
    *,
    max_jobs: int = MAX_JOBS,
    prepare: Prepare | None = None,
) -> SweepPlan:
    """Expand, count and validate a sweep (the product of ``vary``, first key
    outermost); raise :class:`PayloadError` (nothing sent) listing every problem.
    ``prepare`` (a client's) validates each cell once and keeps it for sending."""
    spec = catalog_endpoint(endpoint)
    if not isinstance(base_payload, Mapping):
        raise PayloadError("base_payload must be a dict of fields", endpoint=endpoint)
    if not isinstance(vary, Mapping) or not vary:
        raise PayloadError(
            "vary must be a non-empty dict: field name -> list of values", endpoint=endpoint
        )
    # each value list read once: a generator given in ``vary`` is used up by its first read
    tried = {
        key: tuple(values)
        for key, values in vary.items()
        if isinstance(values, Iterable) and not isinstance(values, (str, bytes, Mapping))
    }
    problems = [
        {"loc": ("vary", key), "msg": "give a non-empty list of values to try"}
        for key in vary
        if not tried.get(key)
    ]
    if problems:
        raise PayloadError(problems, endpoint=endpoint)
    for key, values in tried.items():  # as a grid's axis: a misspelt field or a value
        # given twice would pay for tasks that differ in nothing the endpoint reads
        kind = field_type([spec.model], str(key).split("."), endpoint, where="vary")
        given_twice(str(key), values, endpoint, where="vary", kind=kind)
    axes = [(key, Axis(key, values)) for key, values in tried.items()]
    tasks = refuse_above(
        endpoint,
        axes,
        max_jobs,
        "this sweep makes {n} tasks",
        "vary fewer values or raise max_jobs",
        limit_name="max_jobs=",
    )
    cells = expand_cells(endpoint, spec, base_payload, axes, prepare=prepare)
    billed = sum(c.billed for c in cells)
    if billed > max_jobs:
        raise PayloadError(
            f"this sweep makes {tasks} tasks billed as {billed} generations (outputs "
            "per task, n sent or the service's default, times imgM prompt permutations and "
            f"--repeat); the limit is max_jobs={max_jobs}: vary fewer values, send n=1 or "
            "raise max_jobs",
            endpoint=endpoint,
        )
    billing = billing_values(spec, [c.payload for c in cells])
    return SweepPlan(endpoint, dict(base_payload), tuple(vary), tuple(cells), billing)
