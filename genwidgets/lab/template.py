"""A batch's template: how each row of data becomes a payload.

``template`` maps a field (a name or a dotted path, in the terms of the batch's
endpoint) to a constant or to a format string over the row's columns
(``{"prompt": "{text}, watercolor", "seed": "{seed}", "n": 1}``), typed by its field as
grid values are; with none, the columns named like fields are the payload. How values
are typed, and why a field no endpoint has is refused: docs/decisions.md#batch-template.
"""

from __future__ import annotations

import contextlib
import copy
import difflib
import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..catalog.fields import field_named
from ..errors import PayloadError
from .axes import field_type, set_field, typed_value
from .mapping import ENDPOINT_AXIS
from .naming import format_parts
from .problems import problem

if TYPE_CHECKING:
    from ..catalog import EndpointSpec

__all__ = ["ROW_NUMBER", "Slot", "Template", "build_template"]

#: the pseudo-column holding the row's number (unless the rows have a column of that name)
ROW_NUMBER = "row"
_IMMUTABLE = frozenset({str, int, float, bool, type(None)})


class _Values(dict[str, Any]):
    """A row for ``str.format_map``: a missing or empty column formats as ``""``."""

    def __missing__(self, key: str) -> str:
        return ""


@dataclass(frozen=True)
class Slot:
    """One field of the template and where its value comes from."""

    field: str
    #: a value set as given (a non-string, or a string with no ``{column}``)
    constant: Any = None
    #: a format string over the row's columns
    text: str | None = None
    #: the one column a ``"{column}"`` template takes whole
    whole: str | None = None
    #: the field's scalar type (None: a list, an object, or free-form)
    kind: type | None = None

    def describe(self) -> Any:
        """How the template wrote it (the value as given)."""
        if self.whole is not None:
            return "{" + self.whole + "}"
        return self.text if self.text is not None else self.constant


def _typed(slot: Slot, value: Any, endpoint: str) -> Any:
    """A value read from the row, as the field takes it (JSON text for a list or an
    object is parsed; a scalar's text is converted; anything else is kept)."""
    if not isinstance(value, str):
        return value
    if slot.kind is not None:
        return typed_value(value, slot.kind, slot.field, endpoint, hint="")
    if value.strip()[:1] in ("[", "{"):
        with contextlib.suppress(ValueError, RecursionError):  # not JSON: the text as it is
            return json.loads(value)
    return value


@dataclass(frozen=True)
class Template:
    """Every slot of a batch's template, checked against the endpoint and the columns."""

    endpoint: str
    slots: tuple[Slot, ...]
    #: columns the template does not read (the plan lists them: not sent)
    unused: tuple[str, ...] = ()
    #: columns named like fields that fill what a given template leaves out
    filled: tuple[str, ...] = ()

    def payload(
        self, row: Mapping[str, Any], index: int | str, where: str | None = None
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The payload of one row and the problems met (each at ``(row N, field)``):
        ``index`` is the row's name (``{row}``), ``where`` how messages name it."""
        at = where if where is not None else f"row {index}"
        payload: dict[str, Any] = {}
        problems: list[dict[str, Any]] = []
        values = _Values({ROW_NUMBER: index, **row})  # a column named "row" wins
        for slot in self.slots:
            try:
                if slot.whole is not None:
                    value = values.get(slot.whole)
                    if value is None:
                        continue  # an empty cell: the field is not sent
                    value = _typed(slot, value, self.endpoint)
                elif slot.text is not None:
                    value = _typed(slot, slot.text.format_map(values), self.endpoint)
                elif type(slot.constant) in _IMMUTABLE:
                    value = slot.constant  # nothing a row could change: no copy
                else:
                    value = copy.deepcopy(slot.constant)
            except PayloadError as exc:
                source = f"column {slot.whole!r}" if slot.whole is not None else repr(slot.text)
                problems += [
                    {"loc": (at, slot.field), "msg": f"from {source}: {e['msg']}"}
                    for e in exc.errors
                ]
                continue
            except (ValueError, TypeError, KeyError, IndexError) as exc:
                problems.append(
                    {
                        "loc": (at, slot.field),
                        "msg": f"{slot.text!r} does not format with this row: {exc}",
                    }
                )
                continue
            set_field(payload, slot.field, value)
        return payload, problems

    def describe(self) -> dict[str, Any]:
        """field -> the value as given (JSON-ready; the batch's id hashes it)."""
        return {slot.field: slot.describe() for slot in self.slots}


def _bad(field: str, msg: str) -> PayloadError:
    return problem(("template", field), msg)


def build_template(
    given: Mapping[str, Any] | None,
    specs: Sequence[EndpointSpec],
    columns: Sequence[str],
) -> Template:
    """Check ``given`` (or derive one from the columns) against ``specs`` (the batch's
    endpoint first, then those of an endpoint column) and the rows' ``columns``. Every
    problem raises one PayloadError naming the field, and what is accepted."""
    endpoint = specs[0].id
    models = [s.model for s in specs]  # a field is typed by the first that has it
    known = set(columns) | {ROW_NUMBER}
    if given is None:
        names = set().union(*(s.known_names for s in specs))
        chosen = [c for c in columns if c in names and c != ENDPOINT_AXIS]
        if not chosen:
            fields = ", ".join(sorted(specs[0].known_names))
            typos = [
                f"{c!r} is probably {close[0]!r}"
                for c in columns
                if (close := difflib.get_close_matches(c, sorted(specs[0].known_names), n=1))
            ]
            hint = f" ({'; '.join(typos)}, misspelled)" if typos else ""
            raise problem(
                "template",
                f"no column is named like a field of {endpoint} ({fields}){hint}; "
                "name the columns so, or give template={'prompt': '{text}'}",
                endpoint=endpoint,
            )
        given = {c: "{" + c + "}" for c in chosen}
        filled: tuple[str, ...] = ()
    else:
        if not isinstance(given, Mapping):
            raise problem(
                "template", "a template is a dict: field -> value or format", endpoint=endpoint
            )
        filled = _filling_columns(given, specs[0], columns)
        given = {**given, **{c: "{" + c + "}" for c in filled}}
    problems: list[dict[str, Any]] = []
    slots: list[Slot] = []
    used: set[str] = {ENDPOINT_AXIS}
    for field, value in given.items():
        try:
            if not isinstance(field, str) or not field or any(not p for p in field.split(".")):
                raise _bad(str(field), f"{field!r} is not a field name or a dotted path")
            if field == ENDPOINT_AXIS:
                raise _bad(field, "the endpoint comes from the endpoint argument or column")
            kind = field_type(models, field.split("."), endpoint, where="template")
            if not isinstance(value, str) or "{" not in value:
                if isinstance(value, str):  # a string for a number or a boolean: typed
                    value = typed_value(value, kind, field, endpoint, hint="", where="template")
                slots.append(Slot(field, constant=value, kind=kind))
                continue
            named = [n for _, n in format_parts(value, functools.partial(_bad, field)) if n]
            missing = [n for n in named if n not in known]
            if missing:
                raise _bad(
                    field,
                    f"{value!r} names no column {', '.join(repr(m) for m in missing)}; the "
                    f"columns are {', '.join(columns)} (and {{row}}, the row's number)",
                )
            used.update(named)
            if len(named) == 1 and value == "{" + named[0] + "}":
                slots.append(Slot(field, whole=named[0], kind=kind))
            else:
                slots.append(Slot(field, text=value, kind=kind))
        except PayloadError as exc:
            problems += exc.errors
    if problems:
        raise PayloadError(problems, endpoint=endpoint)
    unused = tuple(c for c in columns if c not in used)
    return Template(endpoint, tuple(slots), unused, filled)


def _filling_columns(
    given: Mapping[str, Any], spec: EndpointSpec, columns: Sequence[str]
) -> tuple[str, ...]:
    """The columns named like a top-level field of the batch's endpoint that the
    template does not set (under any of the field's names, nor below it)."""
    taken = set()
    for name in given:
        if isinstance(name, str):
            top = name.split(".")[0]
            found = field_named(spec.model, top)
            taken.add(found.wire if found is not None else top)
    filling = []
    for column in columns:
        found = field_named(spec.model, column) if column != ENDPOINT_AXIS else None
        if found is not None and found.wire not in taken:
            filling.append(column)
            taken.add(found.wire)
    return tuple(filling)
