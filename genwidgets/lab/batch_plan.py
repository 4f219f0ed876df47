"""Planning a batch: every row read, turned into a payload, mapped, validated, counted
and named before anything is sent.

:func:`plan_batch` reads the rows (:mod:`.rows`), applies the template
(:mod:`.template`), sends a row with an ``endpoint`` column to its own endpoint through
the grid's mapping table (:mod:`.mapping`), counts what each task bills with the
service's defaults (:func:`~.cost.billed_units`), names its files (:mod:`.naming`),
and checks the budget (:mod:`.budget`). Every problem of every row is raised at once,
as one :class:`~genwidgets.errors.PayloadError` whose locations start with the row:
docs/decisions.md#batch-plan.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._formats import short
from ..catalog import collect_warnings, validate
from ..catalog import endpoint as catalog_endpoint
from ..catalog.validation import misspelled
from ..errors import EndpointNotFound, PayloadError
from .budget import MONEY, Budget, make_budget, plain_amount, summed
from .cost import BilledUnit, billed_count, billed_unit, billed_units, billing_values, plural
from .mapping import ENDPOINT_AXIS, map_payload, read_roles
from .naming import DEFAULT_NAMES_TEXT, EXT_MARK, NameTemplate, name_key, slug
from .rows import SourceRows, read_rows
from .template import Template, build_template

if TYPE_CHECKING:
    from ..catalog import EndpointSpec

__all__ = ["MAX_LISTED", "BatchPlan", "PlannedRow", "TaskPlan", "plan_batch"]

#: problems listed one by one in a refused plan; the rest are counted
MAX_LISTED = 200
#: validates one payload for an endpoint and returns what to send (or raises)
Prepare = Callable[[str, Mapping[str, Any]], Any]
#: pydantic's message for a required field left out
REQUIRED = "Field required"
#: ``json.dumps(..., sort_keys=True, default=str)``, built once: the digest encodes every row
_DIGEST_ENCODER = json.JSONEncoder(sort_keys=True, default=str)


@dataclass
class PlannedRow:
    """One row before sending: where it goes, its payload, what it bills, its name.
    Mutable only in ``prepared``, which a batch lets go once the row is sent."""

    index: int
    endpoint: str
    kind: str
    payload: dict[str, Any]
    #: billed units per kind (None: the payload cannot say, e.g. automatic duration)
    units: dict[str, float | None]
    #: billed generations (what ``confirm_above`` compares, as for grids)
    billed: int
    #: the file name with marks for the extension and output number (see naming)
    stem: str
    #: payload fields the row's endpoint has no field for (left out)
    dropped: tuple[str, ...] = ()
    #: the row's own name: a DataFrame's index label, else its position (``index``)
    name: int | str = -1
    #: the line of the rows file it came from (None for in-memory rows)
    line: int | None = None
    #: what ``prepare`` returned (the client's PreparedRequest), if given; dropped once
    #: sent (a thousand prepared requests hold a megabyte)
    prepared: Any = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.name == -1:
            self.name = self.index

    @property
    def plan_note(self) -> str | None:
        if not self.dropped:
            return None
        return f"not sent to {self.endpoint} (no such field): {', '.join(self.dropped)}"


class TaskPlan:
    """What a grid's plan and a batch's plan share: many tasks planned from one endpoint."""

    endpoint: str
    if TYPE_CHECKING:  # a batch's field, a grid's cells

        @property
        def rows(self) -> tuple[PlannedRow, ...]: ...

    @property
    def tasks(self) -> int:
        return len(self.rows)

    @property
    def billed_total(self) -> int:
        return sum(r.billed for r in self.rows)

    @property
    def endpoints(self) -> list[str]:
        """The endpoints the rows go to, in order (one unless an endpoint column or axis)."""
        return list(dict.fromkeys(r.endpoint for r in self.rows))

    def billed_line(self, head: str, multi_head: str, billing: Mapping[str, list[Any]]) -> str:
        """The tasks and what they bill: per endpoint when several (after ``multi_head``),
        else in the endpoint's unit with its billing fields' values (after ``head``)."""
        tasks = f"{self.tasks} {plural('task', self.tasks)}"
        if len(self.endpoints) > 1:
            return f"{multi_head}: {tasks}, {self._billed_per_endpoint()}"
        text = f"{head}: {tasks}"
        unit, billed = billed_unit(self.endpoint), self.billed_total
        if billed != self.tasks or unit.outputs > 1:
            text += ", " + unit.amount(billed, "billed ")
        if billed != self.tasks:
            text += (
                ": imgM bills each permutation of a prompt and each --repeat"
                if unit.outputs > 1
                else ": outputs per task, n sent or the service's default"
            )
        if billing:
            parts = [f"{k} = {', '.join(short(v, 30) for v in vs)}" for k, vs in billing.items()]
            text += "; billing fields: " + "; ".join(parts)
        return text

    def _billed_per_endpoint(self) -> str:
        """``8 billed images, 2 billed prompts (8 images) (genW2.5-t2i-preview 4 each by
        default → set n)``: billed generations per unit, then each endpoint that bills
        more than one per task or leaves a billing field to the service's default."""
        by_unit: Counter[BilledUnit] = Counter()
        for row in self.rows:
            by_unit[billed_unit(row.endpoint)] += row.billed
        notes = []
        for name in self.endpoints:
            group = [r for r in self.rows if r.endpoint == name]
            fields = catalog_endpoint(name).billing_fields
            unset = [f for f in fields if all(f not in r.payload for r in group)]
            each = sorted({r.billed for r in group})
            if each == [1] and not unset:
                continue
            text = name + (f" {'/'.join(map(str, each))} each" if each != [1] else "")
            notes.append(text + (f" by default → set {', '.join(unset)}" if unset else ""))
        billed = ", ".join(unit.amount(n, "billed ") for unit, n in by_unit.items())
        return billed + (f" ({'; '.join(notes)})" if notes else "")


@dataclass(frozen=True)
class BatchPlan(TaskPlan):
    """What a batch sends, worked out before anything is sent."""

    endpoint: str
    rows: tuple[PlannedRow, ...]
    source: str
    columns: tuple[str, ...]
    template: Template
    names: NameTemplate
    budget: Budget
    #: a digest of the endpoint, the template, the rows and the name template
    digest: str
    #: a short name for a derived id (the rows file's stem)
    stem: str = "batch"

    def units_total(self) -> dict[str, float]:
        """Billed units per kind over every row (rows that cannot count one add 0)."""
        return summed(r.units for r in self.rows)

    def units_line(self) -> str:
        """``billed units: 12 tasks, 48 images, 60 video_seconds``, unknowns named, and
        the cost through ``prices=`` when every row's can be counted."""
        charges = [self.budget.charges(r.endpoint, r.units) for r in self.rows]
        totals = summed(charges)
        money = totals.pop(MONEY, None)
        unknown = Counter(kind for c in charges for kind, amount in c.items() if amount is None)
        parts = [f"{plain_amount(n)} {kind}" for kind, n in totals.items()]
        parts += [
            f"{kind} unknown for {rows} row(s) (the endpoint chooses)"
            for kind, rows in unknown.items()
            if kind != MONEY
        ]
        text = "billed units: " + ", ".join(parts)
        if money is not None and not unknown[MONEY]:
            text += f"; cost {plain_amount(round(money, 4))} at the prices given"
        return text

    def summary(self) -> str:
        """Plain text: the rows counted and billed (per endpoint when several, each
        with its defaults), the billed units, the columns not sent, the budget."""
        head = f"{self.source} → {self.endpoint}"
        billing = billing_values(catalog_endpoint(self.endpoint), [r.payload for r in self.rows])
        text = self.billed_line(head, head, billing) + "; " + self.units_line()
        if self.template.filled:
            text += f"; columns sent as their fields: {', '.join(self.template.filled)}"
        if self.template.unused:
            text += f"; columns not sent: {', '.join(self.template.unused)}"
        if self.budget:
            caps = ", ".join(
                f"{plain_amount(cap)} {kind}" for kind, cap in self.budget.caps.items()
            )
            text += f"; budget: {caps}"
        return text

    def describe(self) -> dict[str, Any]:
        """JSON-ready: what the batch store keeps of the plan (never a secret)."""
        return {
            "endpoint": self.endpoint,
            "source": self.source,
            "columns": list(self.columns),
            "template": self.template.describe(),
            "filenames": self.names.text,
            "budget": self.budget.describe(),
            "digest": self.digest,
            "tasks": self.tasks,
            "units": self.units_total(),
        }


def _digest(endpoint: str, template: Template, names: NameTemplate, source: SourceRows) -> str:
    hasher = hashlib.sha256()
    head = {"endpoint": endpoint, "template": template.describe(), "filenames": names.text}
    hasher.update(_DIGEST_ENCODER.encode(head).encode())
    for row in source.rows:  # the same bytes as ever: a derived batch id must not change
        hasher.update(_DIGEST_ENCODER.encode(row).encode())
        hasher.update(b"\n")
    if source.labels is not None:  # rows named by a DataFrame's index: their files too
        hasher.update(_DIGEST_ENCODER.encode({"labels": source.labels}).encode())
    return hasher.hexdigest()


def _row_specs(
    source: SourceRows, default: EndpointSpec, problems: list[dict[str, Any]]
) -> list[EndpointSpec | None]:
    """Each row's endpoint: its ``endpoint`` column, else the batch's (None: unknown)."""
    known: dict[str, EndpointSpec | str] = {default.id: default}  # a spec, or why none
    specs: list[EndpointSpec | None] = []
    for index, row in enumerate(source.rows):
        name = str(row.get(ENDPOINT_AXIS, default.id)).strip()
        if name not in known:
            try:
                known[name] = catalog_endpoint(name)
            except (EndpointNotFound, PayloadError) as exc:
                known[name] = str(exc)
        if isinstance(found := known[name], str):
            problems.append({"loc": (source.where(index), ENDPOINT_AXIS), "msg": found})
        specs.append(None if isinstance(found, str) else found)
    return specs


def _explained(problem: Mapping[str, Any], row: Mapping[str, Any], template: Template) -> str:
    """A required field's ``Field required`` said in the row's terms: the column that
    fills it is empty in this row, or a column not sent is named like it (misspelled)."""
    msg = str(problem["msg"])
    loc = tuple(problem["loc"])
    if not msg.startswith(REQUIRED) or len(loc) != 1:
        return msg
    column = next((s.whole for s in template.slots if s.field == loc[0] and s.whole), None)
    if column is not None and row.get(column) is None:
        return f"empty: the column {column!r} has no value in this row, and {loc[0]} is required"
    typo = misspelled(str(loc[0]), template.unused, ())
    if typo is not None and "probably" not in msg:
        msg += f"; the column {typo!r} is not sent: probably {loc[0]!r}, misspelled"
    return msg


def _listed(problems: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """At most :data:`MAX_LISTED` problems, then one line counting the others."""
    if len(problems) <= MAX_LISTED:
        return problems
    rest = problems[MAX_LISTED:]
    rows = {p["loc"][0] for p in rest if p["loc"]}
    msg = f"and {len(rest)} more problems in {len(rows)} more row(s): fix the ones above"
    return [*problems[:MAX_LISTED], {"loc": ("rows",), "msg": msg + " and plan again"}]


#: the most soft findings a plan says one by one (a warning each): the rest in one line
SAID_FINDINGS = 5


def _findings(
    soft: dict[tuple[str, type[Warning]], list[str]],
) -> list[tuple[str, type[Warning]]]:
    """Each soft finding once, naming its rows (``row 0 (line 2), row 1 (line 3) and 198
    more: ...``), at most :data:`SAID_FINDINGS` of them and then how many more: a long
    file's findings never bury the plan (a warning a row printed 10,000 lines)."""
    said = []
    for (message, category), places in list(soft.items())[:SAID_FINDINGS]:
        rows = ", ".join(places[:3]) + (f" and {len(places) - 3} more" if len(places) > 3 else "")
        said.append((f"{rows}: {message}", category))
    rest = list(soft.items())[SAID_FINDINGS:]
    if rest:
        count = sum(len(places) for _, places in rest)
        said.append((f"and {count} more finding(s) like these in other rows", rest[0][0][1]))
    return said


def plan_batch(
    endpoint: str,
    rows: Any,
    template: Mapping[str, Any] | None = None,
    *,
    filenames: str | None = None,
    budget: Any = None,
    prices: Any = None,
    prepare: Prepare | None = None,
) -> BatchPlan:
    """Plan a batch (see the module docstring); raises before anything is sent:
    :class:`PayloadError` listing every problem by row, or
    :class:`~genwidgets.errors.EndpointNotFound` for an unknown ``endpoint``."""
    spec = catalog_endpoint(endpoint)
    source = read_rows(rows)
    problems: list[dict[str, Any]] = []
    specs = _row_specs(source, spec, problems)
    others = [s for s in dict.fromkeys(s for s in specs if s is not None) if s.id != spec.id]
    tmpl = build_template(template, [spec, *others], source.columns)
    if filenames is None and any(isinstance(v, str) for v in source.labels or ()):
        filenames = DEFAULT_NAMES_TEXT  # rows named by text: {row:05d} would not format
    names = NameTemplate.parse(filenames, source.columns)
    check: Prepare = prepare if prepare is not None else validate
    planned: list[PlannedRow] = []
    taken: dict[str, int] = {}
    soft: dict[tuple[str, type[Warning]], list[str]] = {}  # a finding -> the rows it is in
    for index, (row, target) in enumerate(zip(source.rows, specs, strict=True)):
        name, where = source.name(index), source.where(index)
        payload, found = tmpl.payload(row, name, where)
        problems += found
        if target is None or found:
            continue
        dropped: tuple[str, ...] = ()
        if target.id != spec.id:
            mapped = map_payload(spec, target, payload)
            payload, dropped = mapped.payload, mapped.dropped
            if mapped.missing:
                hint = "give it a column or a template field"
                problems += [
                    {"loc": (where, lack), "msg": f"{target.id} requires {lack!r}: {hint}"}
                    for lack in mapped.missing
                ]
                continue
        try:
            units = billed_units(target, payload)
            with collect_warnings() as findings:  # a soft finding says its row
                prepared = check(target.id, payload)
        except PayloadError as exc:
            problems += [
                {"loc": (where, *e["loc"]), "msg": _explained(e, row, tmpl)} for e in exc.errors
            ]
            continue
        for message, category in findings:
            soft.setdefault((message, category), []).append(where)
        prompt, seed, _used = read_roles(target, payload)  # the prompt without --seed
        built_in = {"slug": slug(prompt) or target.id.lower(), "seed": seed}
        built_in.update(endpoint=target.id, kind=target.kind)
        try:
            stem = names.stem(name, row, built_in, where)
        except PayloadError as exc:
            problems += exc.errors
            continue
        first = taken.setdefault(name_key(stem), index)  # as macOS and Windows compare
        if first != index:
            msg = f"{source.where(first)} has its file name too ({stem.split(EXT_MARK)[0]}…)"
            msg += f"; add {{row}} to filenames={names.text!r}"
            problems.append({"loc": (where, "filenames"), "msg": msg})
            continue
        # as sent: a client's prepared request normalises it ("720P" → "720p", unset
        # fields dropped), and the ledger records that one
        sent = getattr(prepared, "payload", None)
        planned.append(
            PlannedRow(
                index=index,
                endpoint=target.id,
                kind=str(target.kind),
                payload=sent if isinstance(sent, dict) else payload,
                units=units,
                billed=billed_count(target, payload),
                stem=stem,
                dropped=dropped,
                name=name,
                line=source.lines[index] if source.lines is not None else None,
                prepared=prepared if prepare is not None else None,
            )
        )
    for said in _findings(soft):
        warnings.warn(*said, stacklevel=3)
    if problems:
        raise PayloadError(_listed(problems), endpoint=endpoint)
    kinds = list(dict.fromkeys(k for r in planned for k in r.units))
    checked = make_budget(budget, prices, kinds, list(dict.fromkeys(r.endpoint for r in planned)))
    return BatchPlan(
        endpoint=endpoint,
        rows=tuple(planned),
        source=source.source,
        columns=tuple(source.columns),
        template=tmpl,
        names=names,
        budget=checked,
        digest=_digest(endpoint, tmpl, names, source),
        stem=source.stem,
    )
