"""Grid axes: what varies along x, y or z, and how each value changes a payload.

An axis is ``(field, values)``: a field, a dotted path or ``"prompt_sr"``, and a list
or a range string (``1-5``, ``1-10 (+3)``, ``0.5-2 [4]``) typed by the endpoint's
model: docs/decisions.md#grid-axes.
"""

from __future__ import annotations

import contextlib
import csv
import difflib
import json
import math
import numbers
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Literal

from ..catalog import endpoint as catalog_endpoint
from ..catalog import fields_along, fields_of
from ..catalog.checks import shown
from ..catalog.introspect import leaves, literal_choices, models_in
from ..catalog.model import whole_text
from ..errors import EndpointNotFound, PayloadError
from ..imgm import plain_text
from .mapping import ENDPOINT_AXIS, PROMPT_SEED, SEED_NAME, route_for
from .problems import problem

if TYPE_CHECKING:
    from ..catalog import EndpointSpec

__all__ = [
    "ACCEPTED_FORMS",
    "MAX_VALUES",
    "PROMPT_SR",
    "Axis",
    "field_of",
    "field_type",
    "given_twice",
    "make_axis",
    "parse_values",
    "prompt_fields",
    "set_field",
    "typed_value",
]

PROMPT_SR = "prompt_sr"
#: more values than this on one axis is refused before expanding a range
MAX_VALUES = 400
ACCEPTED_FORMS = (
    "accepted forms: a list of values, or a string of comma-separated values where a "
    'number range may be "1-5" (every whole number), "1-10 (+3)" (a step) or '
    '"0.5-2 [4]" (4 evenly spaced values); double quotes group a value holding a comma'
)

_NUMBER = r"-?\d+(?:\.\d+)?"
_RANGE = re.compile(
    rf"^\s*(?P<start>{_NUMBER})\s*-\s*(?P<end>{_NUMBER})\s*"
    rf"(?:\(\s*(?P<step>[+-]?\s*\d+(?:\.\d+)?)\s*\)|\[\s*(?P<count>\d+)\s*\])?\s*$"
)

AxisKind = Literal["field", "prompt_sr", "group", "endpoint", "combination"]


@dataclass(frozen=True)
class Axis:
    """One axis of a grid. ``field`` names what varies (``prompt{2}`` for the
    second permutation group of an imgM prompt); ``values`` are the typed values."""

    field: str
    values: tuple[Any, ...]
    kind: AxisKind = "field"
    #: prompt_sr: the searched text; group: the group as written (``{red, blue}``)
    search: str | None = None
    #: the prompt fields a prompt_sr or group axis edits
    targets: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.values)

    @property
    def label(self) -> str:
        """How headers name the axis."""
        if self.kind == "prompt_sr":
            return "prompt_sr"
        if self.kind == "group":
            return f"prompt {self.search}"
        return self.field

    @property
    def shown_values(self) -> tuple[Any, ...]:
        """The values as headers show them: a permutation group's options are written
        escaped (``pastel\\, yellow``) so that each sends one prompt, and read plain."""
        if self.kind != "group":
            return self.values
        return tuple(plain_text(str(v)) for v in self.values)

    def apply(self, payload: dict[str, Any], value: Any) -> None:
        """Set this axis's ``value`` in ``payload`` (in place; nested dicts are copied).
        An endpoint axis changes no field: the plan maps the payload per endpoint."""
        if self.kind in ("endpoint", "combination"):  # a sweep's cells hold their payloads
            return
        if self.kind in ("prompt_sr", "group"):
            assert self.search is not None
            for name in self.targets:
                text = payload.get(name)
                if isinstance(text, str):
                    payload[name] = text.replace(
                        self.search, str(value), 1 if self.kind == "group" else -1
                    )
            return
        set_field(payload, self.field, value)

    def describe(self) -> dict[str, Any]:
        """A JSON-ready description (exports and the grid store)."""
        return {
            "field": self.field,
            "kind": self.kind,
            "values": list(self.values),
            "search": self.search,
            "targets": list(self.targets),
        }

    @classmethod
    def from_description(cls, data: Mapping[str, Any]) -> Axis:
        return cls(
            field=str(data["field"]),
            values=tuple(data["values"]),
            kind=data.get("kind", "field"),
            search=data.get("search"),
            targets=tuple(data.get("targets") or ()),
        )


def set_field(payload: dict[str, Any], field: str, value: Any) -> None:
    """Set ``field`` (a name or a dotted path) in ``payload`` in place; nested dicts
    on the way are copied, so a shared base payload is never changed."""
    if "." not in field:  # most fields: a batch sets them on every row
        payload[field] = value
        return
    path = field.split(".")
    node = payload
    for name in path[:-1]:
        child = node.get(name)
        child = dict(child) if isinstance(child, Mapping) else {}
        node[name] = child
        node = child
    node[path[-1]] = value


def field_of(payload: Mapping[str, Any], field: str) -> Any:
    """The value of ``field`` (a name or a dotted path) in ``payload``, as
    :func:`set_field` sets it; None when it is not there."""
    value: Any = payload
    for name in field.split("."):
        value = value.get(name) if isinstance(value, Mapping) else None
    return value


def prompt_fields(payload: Mapping[str, Any]) -> list[str]:
    """The string fields of ``payload`` that a prompt search and replace edits."""
    names = [k for k, v in payload.items() if isinstance(v, str) and "prompt" in k.lower()]
    return names or [k for k in ("text",) if isinstance(payload.get(k), str)]


def _scalar_type(annotation: Any) -> type | None:
    """int, float, bool or str when the annotation (under Annotated/Optional) is one
    of those (float wins when both numbers are allowed), else None."""
    found: set[type] = set()
    for leaf in leaves(annotation):
        choices = literal_choices(leaf)
        if choices is not None:
            found.update(type(c) for c in choices)
        elif leaf in (int, float, bool, str):
            found.add(leaf)
    for kind in (bool, float, int, str):
        if kind in found:
            return kind
    return None


def field_type(
    models: Sequence[Any], path: Sequence[str], endpoint: str, *, where: str = "axis"
) -> type | None:
    """The scalar type of the field at ``path`` (None: not a scalar, or free-form), read
    from the first of ``models`` that has it; a name none has is a PayloadError at
    ``(where, path)`` naming the closest name the first model knows."""
    first: PayloadError | None = None
    for model in models:
        reached = fields_along(model, list(path))
        if len(reached) == len(path):
            return _scalar_type(reached[-1][0].annotation)
        parents = [m for i in reached[-1] for m in models_in(i.annotation)] if reached else [model]
        if not parents:  # a free-form dict (e.g. an untyped settings object): any key goes
            return None
        missing = path[len(reached)]
        close = difflib.get_close_matches(
            missing, sorted({f.wire for m in parents for f in fields_of(m)}), n=1
        )
        hint = f"; did you mean {close[0]!r}?" if close else ""
        if list(path) == [SEED_NAME]:
            hint = _seed_in_prompt(endpoint, where) or hint
        msg = f"unknown field {shown(missing)}{hint}"
        first = first or problem((where, _place(".".join(path))), msg, endpoint=endpoint)
    assert first is not None
    raise first


def _seed_in_prompt(endpoint: str, where: str) -> str:
    """How to vary the seed of an endpoint that reads it in its prompt (imgM's ``--seed
    N``), where a seed axis is an unknown field; "" for any other endpoint."""
    try:
        seeded = route_for(catalog_endpoint(endpoint)).seed == PROMPT_SEED
    except EndpointNotFound:
        return ""
    how = {
        "axis": 'a group "--seed {1, 2}" in the prompt (a cell each), or x=("prompt_sr", ...)',
        "vary": 'vary the prompt: vary={"prompt": ["a fox --seed 1", "a fox --seed 2"]}',
    }.get(where, 'write it in the prompt: "a fox --seed {seed}"')
    return f'; this endpoint reads its seed in the prompt ("--seed 5"): {how}' if seeded else ""


def _place(field: str) -> str:
    """A field as its error's location names it: a name, or a given text too long (or
    unprintable) to be one cut short as :func:`shown` cuts a value."""
    return field if len(field) <= 40 and field.isprintable() else shown(field)


def _bad(field: str, msg: str, endpoint: str | None, where: str = "axis") -> PayloadError:
    return problem((where, _place(field)), msg, endpoint=endpoint)


def _exact(number: str, field: str, endpoint: str | None) -> Fraction:
    """A range's bound or step read exactly: a float keeps 15 digits (a 17-digit range
    repeated its numbers) and reads 309 digits as infinity. One no float holds, or too
    long for Python to read, no field takes: refused with a short excerpt."""
    try:
        exact = Fraction(number.replace(" ", ""))
    except ValueError:  # more digits than Python reads (4300)
        limit = sys.get_int_max_str_digits()
        raise _bad(
            field, f"{shown(number)} has too many digits; at most {limit}", endpoint
        ) from None
    if abs(exact) > sys.float_info.max:
        raise _bad(
            field,
            f"{shown(number)} is too large: no field takes a number above about 1.8e308",
            endpoint,
        )
    return exact


def _range(match: re.Match[str], kind: type | None, field: str, endpoint: str | None) -> list[Any]:
    start, end = (_exact(match[bound], field, endpoint) for bound in ("start", "end"))
    integral = kind is int or (
        kind is None and "." not in match["start"] + match["end"] and not match["count"]
    )
    if match["count"] is not None:
        asked = match["count"].lstrip("0") or "0"
        count = int(asked) if len(asked) <= 3 else MAX_VALUES + 1  # never read 5000 digits
        if count < 1 or count > MAX_VALUES:
            raise _bad(
                field, f"[{_place(match['count'])}] must ask for 1 to {MAX_VALUES} values", endpoint
            )
        values = [start + (end - start) * i / max(count - 1, 1) for i in range(count)]
    else:
        step = Fraction(1 if end >= start else -1)
        if match["step"]:
            step = _exact(match["step"], field, endpoint)
        if step == 0 or (end - start) * step < 0:
            raise _bad(
                field,
                f"the step {float(step):g} never goes from {float(start):g} to {float(end):g}",
                endpoint,
            )
        count = math.floor((end - start) / step) + 1
        if count > MAX_VALUES:
            said = str(count) if count < 10**9 else "over a billion"  # never 300 digits
            raise _bad(
                field,
                f"the range {_place(match.group(0).strip())} makes {said} values; at most "
                f"{MAX_VALUES} per axis",
                endpoint,
            )
        values = [start + step * i for i in range(count)]
    if integral:
        whole = [round(v) for v in values]
        if len(set(whole)) != len(whole):
            raise _bad(
                field,
                f"the range {shown(match.group(0).strip())} repeats whole numbers for an "
                "integer field",
                endpoint,
            )
        return whole
    return [float(round(v, 10)) for v in values]


def typed_value(
    item: str,
    kind: type | None,
    field: str,
    endpoint: str | None,
    hint: str = ACCEPTED_FORMS,
    where: str = "axis",
) -> Any:
    """One text value as the field's scalar ``kind`` takes it (``"5"`` → 5 for an
    integer field, ``"yes"`` → True for a boolean); a text that is not one is a
    PayloadError at ``(where, field)``, followed by ``hint`` (what is accepted)."""
    if kind is None or kind is str:
        return item
    tail = f"; {hint}" if hint else ""
    if kind is bool:
        lowered = item.strip().lower()
        if lowered in ("true", "yes", "1", "on"):
            return True
        if lowered in ("false", "no", "0", "off"):
            return False
        raise _bad(field, f"{shown(item)} is not true or false{tail}", endpoint, where)
    if kind is int and re.fullmatch(r"\s*[+-]?\d+(\.0+)?\s*", item, re.ASCII):
        whole = whole_text(item)  # exactly (a float keeps 15 digits); too long for any
        return item if whole is None else int(whole)  # field: the catalog says the range
    try:
        number = float(item)
    except ValueError:
        raise _bad(field, f"{shown(item)} is not a number{tail}", endpoint, where) from None
    if not math.isfinite(number):
        raise _bad(field, f"{shown(item)} is not a finite number", endpoint, where)
    if kind is int:
        if number != int(number):
            raise _bad(field, f"{shown(item)} is not a whole number", endpoint, where)
        return int(number)
    return number


def parse_values(
    text: str, kind: type | None = None, *, field: str = "", endpoint: str | None = None
) -> list[Any]:
    """Values from a string (see the module docstring); ``kind`` is the field's type."""
    try:
        items = next(csv.reader([text], skipinitialspace=True), [])
    except csv.Error as exc:
        raise _bad(
            field, f"{shown(text)} does not parse ({exc}); {ACCEPTED_FORMS}", endpoint
        ) from None
    values: list[Any] = []
    for raw in items:
        item = raw.strip()
        if not item:
            continue
        match = _RANGE.match(item) if kind in (int, float, None) else None
        if match is not None and (kind is not None or not re.fullmatch(_NUMBER, item)):
            values.extend(_range(match, kind, field, endpoint))
        elif kind in (int, float) and not re.fullmatch(_NUMBER, item) and "-" in item[1:]:
            raise _bad(field, f"the range {shown(item)} does not parse; {ACCEPTED_FORMS}", endpoint)
        else:
            values.append(typed_value(item, kind, field, endpoint))
    return values


def make_axis(
    spec: EndpointSpec, endpoint: str, models: Sequence[Any], base_payload: Mapping[str, Any]
) -> Axis:
    """An :class:`Axis` from ``(field, values)``, its field typed by the first of
    ``models`` that has it (:func:`field_type`); every problem is a PayloadError that
    says what is wrong and what is accepted."""
    if isinstance(spec, Axis):
        return spec
    if not isinstance(spec, (tuple, list)) or len(spec) != 2 or not isinstance(spec[0], str):
        raise problem(
            "axis",
            f"an axis is (field, values), not {shown(spec)}; {ACCEPTED_FORMS}",
            endpoint=endpoint,
        )
    field, raw = spec[0].strip(), spec[1]
    if field in (PROMPT_SR, ENDPOINT_AXIS):
        kind: type | None = str
    else:
        if not field or any(not part for part in field.split(".")):
            raise _bad(field, f"{shown(field)} is not a field name or a dotted path", endpoint)
        kind = field_type(models, field.split("."), endpoint)
    if isinstance(raw, str):
        values = parse_values(raw, kind, field=field, endpoint=endpoint)
    elif isinstance(raw, (bytes, Mapping)) or not isinstance(raw, (Sequence, range)):
        raise _bad(
            field,
            f"values must be a list or a string, not {type(raw).__name__}; {ACCEPTED_FORMS}",
            endpoint,
        )
    else:
        values = list(raw)
    if not values:
        raise _bad(field, f"the axis has no values; {ACCEPTED_FORMS}", endpoint)
    if len(values) > MAX_VALUES:
        raise _bad(field, f"{len(values)} values; at most {MAX_VALUES} per axis", endpoint)
    given_twice(field, values, endpoint, kind=kind)
    if field == ENDPOINT_AXIS:
        return _endpoint_axis([str(v) for v in values], endpoint)
    if field != PROMPT_SR:
        return Axis(field, tuple(values))
    search = str(values[0])
    targets = tuple(name for name in prompt_fields(base_payload) if search in base_payload[name])
    if not search or not targets:
        raise _bad(
            PROMPT_SR,
            f"the searched text {shown(search)} (the first value) is not in the prompt "
            f"({', '.join(prompt_fields(base_payload)) or 'no prompt field is set'})",
            endpoint,
        )
    return Axis(PROMPT_SR, tuple(str(v) for v in values), "prompt_sr", search, targets)


def given_twice(
    field: str,
    values: Iterable[Any],
    endpoint: str,
    where: str = "axis",
    kind: type | None = None,
) -> None:
    """A PayloadError when a value comes twice: each would pay for the same task again.
    Numbers are compared as numbers (``7``, ``7.0`` and, for a number field, ``"7"`` make
    one payload)."""
    seen: set[Any] = set()
    for value in values:
        same: Any = canonical(value)
        number = value
        if kind in (int, float) and isinstance(value, str):
            with contextlib.suppress(ValueError):  # not a number: the payload check says so
                number = float(value.strip())
        if isinstance(number, numbers.Real) and not isinstance(number, bool):
            with contextlib.suppress(ValueError, OverflowError, TypeError):  # nan, inf
                same = Fraction(number if isinstance(number, int) else float(number))
        if same in seen:
            twice = f"the value {shown(value)} is given twice; each value once"
            raise _bad(field, twice, endpoint, where)
        seen.add(same)


def _endpoint_axis(ids: list[str], endpoint: str) -> Axis:
    """``("endpoint", [ids])``: each cell goes to its own endpoint; every id must
    be in the catalog (an unknown one names the closest)."""
    problems = []
    for value in ids:
        try:
            catalog_endpoint(value)
        except PayloadError as exc:
            problems += [
                {"loc": ("axis", ENDPOINT_AXIS, value), "msg": e["msg"]} for e in exc.errors
            ]
        except EndpointNotFound as exc:  # a local mistake in the grid's layout: a PayloadError
            problems.append({"loc": ("axis", ENDPOINT_AXIS, value), "msg": str(exc)})
    if problems:
        raise PayloadError(problems, endpoint=endpoint)
    return Axis(ENDPOINT_AXIS, tuple(ids), "endpoint")


#: a key a payload does not have (differs from null in :func:`canonical`)
MISSING = object()


def canonical(value: Any) -> str:
    """A stable text form of a JSON-like value (missing differs from null)."""
    if value is MISSING:
        return "\x00missing"
    try:
        return json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return repr(value)
