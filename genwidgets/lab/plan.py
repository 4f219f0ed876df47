"""Planning a grid or a sweep: every cell's payload, counted, billed and validated
before anything is sent.

A plan is the product of its axes over a base payload (:func:`expand_cells`), each cell
validated and counted with the generations it bills (:func:`billed_count`); ``gw.grid``
lays it out on x/y/z, ``gw.sweep`` keeps it flat. Order, imgM groups, the locked seed
and the limits: docs/decisions.md#grid-plan.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import itertools
import json
import random
import re
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from .._formats import short
from ..catalog import endpoint as catalog_endpoint
from ..catalog import validate
from ..errors import EndpointNotFound, PayloadError
from ..imgm import Prompt, permutation_spans
from ..jobs.ledger import scrub_payload
from .axes import MISSING, Axis, canonical, make_axis
from .batch_plan import PlannedRow, Prepare, TaskPlan
from .budget import Budget
from .cost import axis_count, billed_count, billing_values, refuse_above
from .mapping import ENDPOINT_AXIS, SEED_NAME, map_payload, read_roles
from .problems import problem

if TYPE_CHECKING:
    from ..catalog import EndpointSpec

__all__ = [
    "AXES",
    "MAX_CELLS",
    "GridPlan",
    "PlannedCell",
    "differing_params",
    "expand_cells",
    "grid_axes",
    "laid_out",
    "permutation_axes",
    "plan_grid",
]

AXES = ("x", "y", "z")
MAX_CELLS = 400
SEED_RANGE = (1, 2**31 - 1)
#: a cell's place: its (z, y, x) position, its values by axis name, where it is sent
Place = tuple[tuple[int, int, int], dict[str, Any], str]


def differing_params(payloads: Iterable[Mapping[str, Any] | None]) -> list[str]:
    """Top-level payload keys whose values are not the same in every payload
    (a key missing from some payloads differs), in first-seen order."""
    items = [p or {} for p in payloads]
    keys = dict.fromkeys(key for p in items for key in p)
    return [key for key in keys if len({canonical(p.get(key, MISSING)) for p in items}) > 1]


# --- cells ------------------------------------------------------------------------------


@dataclass(eq=False, kw_only=True)
class PlannedCell(PlannedRow):
    """One cell before sending: a row of the run core (:mod:`.batch`) with its place
    on the grid's axes. A grid names no files and has no budget: each cell is one
    task (``units``), its ``stem`` is empty."""

    position: tuple[int, int, int]  # (z, y, x) indexes on the plan's own axes
    values: dict[str, Any]  # axis name ("x"/"y"/"z") -> value
    units: dict[str, float | None] = field(default_factory=lambda: {"tasks": 1.0})
    stem: str = ""
    #: where this cell is sent (its endpoint-axis value, else the grid's endpoint)
    endpoint: str = ""
    #: that endpoint's kind (image, video, speech, ...)
    kind: str = ""

    @classmethod
    def placed(cls, index: int, place: Place, **fields: Any) -> PlannedCell:
        """The cell at ``place`` (one of :func:`laid_out`'s) with its other ``fields``:
        the one builder of planned and re-opened cells, so both lay out the same."""
        position, values, target = place
        return cls(index=index, position=position, values=values, endpoint=target, **fields)


def grid_axes(axes: Mapping[str, Axis | None]) -> list[tuple[str, Axis]]:
    """A grid's axes in the order its cells run: z outermost, then y, then x."""
    return [(name, axis) for name in ("z", "y", "x") if (axis := axes.get(name)) is not None]


def laid_out(axes: Sequence[tuple[str, Axis]], endpoint: str) -> Iterator[Place]:
    """The cells of the product of ``axes`` (outermost first), in the order they run:
    each one's (z, y, x) position, its values by axis name, and where it is sent (its
    endpoint-axis value, else ``endpoint``). The one layout of planned, re-opened and
    scored grids."""
    for combo in itertools.product(*(range(len(axis)) for _, axis in axes)):
        at = {name: i for (name, _), i in zip(axes, combo, strict=True)}
        values = {name: axis.values[at[name]] for name, axis in axes}
        target = next((str(values[n]) for n, a in axes if a.kind == "endpoint"), endpoint)
        yield (at.get("z", 0), at.get("y", 0), at.get("x", 0)), values, target


def expand_cells(
    endpoint: str,
    spec: EndpointSpec,
    base_payload: Mapping[str, Any],
    axes: Sequence[tuple[str, Axis]],
    prepare: Prepare | None = None,
    per_endpoint: Mapping[str, Mapping[str, Any]] | None = None,
    filled: Collection[str] = (),
    *,
    seed_locked: bool = False,
) -> list[PlannedCell]:
    """The cells of :func:`laid_out` over ``base_payload``, each mapped to its endpoint
    (an endpoint axis: :func:`~.mapping.map_payload`), validated once and counted; every
    problem of every cell raises one PayloadError whose messages start with the cell's
    axis values. ``prepare`` (a client's ``prepare``) validates and keeps what it returns
    for sending; without it the catalog validates. ``filled``: fields the grid itself put
    in the payload (a drawn seed), never noted as dropped: the user did not set them.
    ``seed_locked``: the payload's seed is the grid's lock, which a cell whose endpoint
    reads the user's own seed (an imgM prompt's ``--seed``) leaves alone."""
    check: Prepare = prepare if prepare is not None else validate
    errors: list[dict[str, Any]] = []
    cells: list[PlannedCell] = []
    mapped_axes = any(axis.kind == "endpoint" for _, axis in axes)
    for index, place in enumerate(laid_out(axes, endpoint)):
        _, values, target = place
        payload = copy.deepcopy(dict(base_payload))
        for name, axis in axes:
            axis.apply(payload, values[name])
        where = " · ".join(f"{axis.field}={short(values[name], 40)}" for name, axis in axes)
        target_spec = catalog_endpoint(target) if target != endpoint else spec
        dropped: tuple[str, ...] = ()
        if mapped_axes:
            extra = (per_endpoint or {}).get(target)
            mapped = map_payload(spec, target_spec, payload, extra, seed_locked=seed_locked)
            payload = mapped.payload
            dropped = tuple(name for name in mapped.dropped if name not in filled)
            if mapped.missing:
                errors += [
                    {
                        "loc": (where, name),
                        "msg": f"{target} requires {name!r}, which the payload lacks: give "
                        f"it in per_endpoint={{{target!r}: {{{name!r}: ...}}}}",
                    }
                    for name in mapped.missing
                ]
                continue  # refused already; validating would say it twice
        try:
            count = billed_count(target_spec, payload)
            prepared = check(target, payload)
        except PayloadError as exc:
            # the field's own location, the cell in the message: "duration: in the
            # cell duration=99: must be 1-10" (not "duration=99.duration")
            errors += [
                {"loc": e["loc"], "msg": f"in the cell {where}: {e['msg']}"} for e in exc.errors
            ]
            continue
        cells.append(
            PlannedCell.placed(
                index,
                place,
                payload=payload,
                billed=count,
                kind=str(target_spec.kind),
                prepared=prepared if prepare is not None else None,
                dropped=dropped,
            )
        )
    if errors:
        raise PayloadError(errors, endpoint=endpoint)
    return cells


# --- imgM permutation groups ----------------------------------------------------------


_ESCAPABLE = re.compile(r"[\\{},]")
_URL_WORD = re.compile(r"https?://\S", re.IGNORECASE)


def _as_written(sent: str) -> str:
    """An expansion as sent, written back into a prompt so that it sends the same:
    backslashes, braces and commas escaped (``a\\, b`` stays one value and makes no
    group), URL words left whole (the parser reads them opaquely)."""
    return " ".join(
        word if _URL_WORD.match(word) else _ESCAPABLE.sub(r"\\\g<0>", word)
        for word in sent.split(" ")
    )


def permutation_axes(spec: EndpointSpec, payload: Mapping[str, Any]) -> list[Axis]:
    """The top-level permutation groups of the endpoint's imgM prompt as axes,
    in the order they appear (empty when there is no imgM prompt or no group)."""
    for name in spec.prompt_fields:
        text = payload.get(name)
        if not isinstance(text, str):
            continue
        Prompt.parse(text)  # structural problems first, with the prompt module's words
        axes = []
        for n, (start, end) in enumerate(permutation_spans(text), 1):
            group = text[start:end]
            values = tuple(_as_written(sent) for sent in Prompt.parse(group).expand("plain"))
            axes.append(Axis(f"{name}{{{n}}}", values, "group", group, (name,)))
        if axes:
            return axes
    return []


# --- grids ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class GridPlan(TaskPlan):
    """What a grid sends, worked out before anything is sent.

    ``axes`` maps "x"/"y"/"z" to an :class:`Axis` or None; ``layout`` maps each
    displayed direction to the plan axis shown there (a swap changes only it).
    """

    endpoint: str
    base_payload: dict[str, Any]
    axes: dict[str, Axis | None]
    cells: tuple[PlannedCell, ...]
    seed: int | None = None
    seed_field: str | None = None
    billing: dict[str, list[Any]] = field(default_factory=dict)
    layout: dict[str, str] = field(default_factory=lambda: {a: a for a in AXES})
    #: fields laid over each endpoint's mapped payload (``per_endpoint=``)
    per_endpoint: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def rows(self) -> tuple[PlannedCell, ...]:
        """The cells, as the run core sends a plan's rows."""
        return self.cells

    #: a grid has no cap: the run core reserves its cells against none
    budget = Budget()

    @property
    def digest(self) -> str:
        """What the grid is: its description and every cell's payload (the run core
        refuses another plan under its id)."""
        text = json.dumps([self.describe(), [c.payload for c in self.cells]], default=str)
        return hashlib.sha256(text.encode()).hexdigest()

    def shown(self, direction: str) -> Axis | None:
        """The axis displayed along ``direction`` ("x" columns, "y" rows, "z" tabs)."""
        return self.axes[self.layout[direction]]

    @property
    def shape(self) -> tuple[int, int, int]:
        """(len(z) or 1, len(y) or 1, len(x)) as displayed."""
        z, y, x = (self.shown(d) for d in ("z", "y", "x"))
        return (len(z) if z else 1, len(y) if y else 1, len(x) if x else 1)

    def place(self, cell: PlannedCell) -> tuple[int, int, int]:
        """Where ``cell`` is displayed: (tab, row, column)."""
        own = dict(zip(("z", "y", "x"), cell.position, strict=True))
        return (own[self.layout["z"]], own[self.layout["y"]], own[self.layout["x"]])

    def swapped(self, a: str, b: str) -> GridPlan:
        if a not in AXES or b not in AXES or a == b:
            raise ValueError(f"swap two of {AXES}, e.g. swap('x', 'y'); not {a!r}, {b!r}")
        layout = dict(self.layout)
        layout[a], layout[b] = layout[b], layout[a]
        return replace(self, layout=layout)

    def summary(self) -> str:
        """One plain-text line: the axes counted, tasks, billed generations (per
        endpoint when several, with each one's defaults), the locked seed."""
        dims = " × ".join(
            axis_count(a) for d in ("x", "y", "z") if (a := self.shown(d)) is not None
        )
        text = self.billed_line(f"{self.endpoint}, {dims or '1 cell'}", dims, self.billing)
        if self.seed is not None:
            text += f"; seed locked at {self.seed}"
        return text

    @classmethod
    def restore(
        cls, description: Mapping[str, Any], payloads: Sequence[Mapping[str, Any]]
    ) -> GridPlan:
        """A stored grid's plan, from its :meth:`describe` and its cells' stored payloads
        (nothing is validated again: these were sent)."""
        stored = description.get("axes") or {}
        axes = {n: Axis.from_description(a) if (a := stored.get(n)) else None for n in AXES}
        endpoint = str(description["endpoint"])
        places = list(laid_out(grid_axes(axes), endpoint))
        if len(places) != len(payloads):
            raise ValueError(
                f"the stored grid has {len(payloads)} cells but its axes make {len(places)}"
            )
        cells = []
        for index, (place, payload) in enumerate(zip(places, payloads, strict=True)):
            kind, billed = "", 1
            with contextlib.suppress(PayloadError, EndpointNotFound):  # a removed endpoint
                spec = catalog_endpoint(place[2])
                kind = str(spec.kind)
                billed = billed_count(spec, payload)  # what it billed when sent (4 images, ...)
            cells.append(
                PlannedCell.placed(index, place, payload=dict(payload), billed=billed, kind=kind)
            )
        return cls(
            endpoint=endpoint,
            base_payload=dict(description.get("base_payload") or {}),
            axes=axes,
            cells=tuple(cells),
            seed=description.get("seed"),
            seed_field=description.get("seed_field"),
            billing=dict(description.get("billing") or {}),
            layout=dict(description.get("layout") or {a: a for a in AXES}),
            per_endpoint=dict(description.get("per_endpoint") or {}),
        )

    def describe(self) -> dict[str, Any]:
        """The JSON-ready description (store and exports; no secret is ever in it)."""
        return {
            "endpoint": self.endpoint,
            "base_payload": scrub_payload(self.base_payload),
            "axes": {k: (a.describe() if a else None) for k, a in self.axes.items()},
            "layout": dict(self.layout),
            "seed": self.seed,
            "seed_field": self.seed_field,
            "billing": self.billing,
            "per_endpoint": scrub_payload(self.per_endpoint),
        }


def _lock_seed(
    spec: EndpointSpec, payload: dict[str, Any], axes: Sequence[Axis], seed: int | None
) -> tuple[int | None, str | None]:
    """Set one seed in ``payload`` when nothing sets or varies it; returns (seed, where
    it went). Beside an endpoint axis it goes in ``seed`` for every endpoint (each cell's
    mapping puts it where its endpoint wants it); else where the endpoint takes one."""
    varied = {a.field.split(".")[0] for a in axes if a.kind == "field"}
    if read_roles(spec, payload)[1] is not None or SEED_NAME in varied:
        return None, None  # the payload's (or its prompt's --seed), or an axis's
    value = seed if seed is not None else random.SystemRandom().randint(*SEED_RANGE)
    if any(a.kind == "endpoint" for a in axes):
        payload[SEED_NAME] = value
        return value, "each endpoint's seed"
    if SEED_NAME in spec.fields:
        payload[SEED_NAME] = value
        return value, SEED_NAME
    for name in spec.prompt_fields:
        if isinstance(text := payload.get(name), str) and name not in varied:
            payload[name] = str(Prompt.parse(text).with_params(seed=value))
            return value, f"{name} --seed"
    return None, None


def plan_grid(
    endpoint: str,
    payload: Mapping[str, Any],
    x: Any = None,
    y: Any = None,
    z: Any = None,
    *,
    seed: int | None = None,
    prepare: Prepare | None = None,
    per_endpoint: Mapping[str, Mapping[str, Any]] | None = None,
) -> GridPlan:
    """Plan a grid (see the module docstring); raises :class:`PayloadError` before
    anything is sent. ``seed`` replays a recorded locked seed; ``prepare`` (the
    client's) validates each cell once and keeps the prepared request to send;
    ``per_endpoint`` gives fields per endpoint of an endpoint axis."""
    spec = catalog_endpoint(endpoint)
    if not isinstance(payload, Mapping):
        raise PayloadError("the base payload must be a dict of fields", endpoint=endpoint)
    base = copy.deepcopy(dict(payload))
    given = {"x": x, "y": y, "z": z}
    if x is None and (y is not None or z is not None):
        raise problem(
            "x", "give x first: x alone is a row, x and y a table, z adds tabs", endpoint=endpoint
        )
    axes: dict[str, Axis | None] = dict.fromkeys(AXES)
    if x is None:
        groups = permutation_axes(spec, base)
        if not groups:
            raise problem(
                "x",
                "give at least x=(field, values); only an imgM prompt "
                "with {permutation, groups} lays itself out",
                endpoint=endpoint,
            )
        if len(groups) > len(AXES):
            raise problem(
                "x",
                f"the prompt has {len(groups)} permutation groups; a grid "
                "lays out at most 3: give x, y and z explicitly",
                endpoint=endpoint,
            )
        axes.update(zip(AXES[: len(groups)][::-1], groups, strict=True))
    else:
        models = _models(spec, given.values())
        axes.update(
            (name, make_axis(axis, endpoint, models, base))
            for name, axis in given.items()
            if axis is not None
        )
    present = [(name, a) for name, a in axes.items() if a is not None]
    keys = [a.search if a.kind == "prompt_sr" else a.field for _, a in present]
    for key in set(keys):
        if keys.count(key) > 1:
            raise problem(
                ("axis", str(key)),
                "the same field is on two axes; vary each field on one axis only",
                endpoint=endpoint,
            )
    refuse_above(endpoint, present, MAX_CELLS, "this grid has {n} cells", "use fewer values")
    extra = _per_endpoint(endpoint, per_endpoint, present)
    locked, where = _lock_seed(spec, base, [a for _, a in present], seed)
    drawn = (SEED_NAME,) if locked is not None and seed is None else ()
    cells = expand_cells(
        endpoint, spec, base, grid_axes(axes), prepare, extra, drawn, seed_locked=locked is not None
    )
    return GridPlan(
        endpoint=endpoint,
        base_payload=base,
        axes=axes,
        cells=tuple(cells),
        seed=locked,
        seed_field=where,
        billing=billing_values(spec, [c.payload for c in cells]),
        per_endpoint=extra,
    )


def _models(spec: EndpointSpec, given: Iterable[Any]) -> list[Any]:
    """The grid's model, then those of the endpoints an endpoint axis compares: a field
    only some of them have is read against the first that has it."""
    models = [spec.model]
    for axis in given:
        if isinstance(axis, (tuple, list)) and len(axis) == 2 and axis[0] == ENDPOINT_AXIS:
            for other in axis[1] if isinstance(axis[1], (list, tuple)) else ():
                with contextlib.suppress(PayloadError, EndpointNotFound):  # the axis says why
                    models.append(catalog_endpoint(str(other)).model)
    return models


def _per_endpoint(
    endpoint: str,
    given: Mapping[str, Mapping[str, Any]] | None,
    present: Sequence[tuple[str, Axis]],
) -> dict[str, dict[str, Any]]:
    """``per_endpoint`` checked: a dict of dicts keyed by endpoints of the endpoint axis."""
    if not given:
        return {}
    compared = {v for _, a in present if a.kind == "endpoint" for v in a.values}
    if not isinstance(given, Mapping) or not all(isinstance(v, Mapping) for v in given.values()):
        raise problem(
            "per_endpoint", "give a dict: endpoint id -> dict of fields", endpoint=endpoint
        )
    listed = ", ".join(sorted(compared)) or "the grid has none"
    msg = f"not an endpoint of this grid's endpoint axis ({listed})"
    stray = [{"loc": ("per_endpoint", name), "msg": msg} for name in sorted(set(given) - compared)]
    if stray:
        raise PayloadError(stray, endpoint=endpoint)
    return {k: copy.deepcopy(dict(v)) for k, v in given.items()}
