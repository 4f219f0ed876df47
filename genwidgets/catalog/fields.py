"""A model's fields as the wire names them: the one place a field's wire name (its
alias, else its Python name) is worked out (docs/decisions.md#wire-names).

Payloads are keyed by wire names; the forms, the lab, the simulator and the engine
ask here (or :class:`~genwidgets.catalog.EndpointSpec`, which asks here) rather than
reading pydantic's ``model_fields`` themselves, so no consumer compares a Python name
with a wire key.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

from pydantic import BaseModel
from pydantic.fields import FieldInfo


class WireField(NamedTuple):
    """One field of a model: its Python ``name``, its ``wire`` name (the JSON key) and
    pydantic's ``info`` (annotation, constraints, markers)."""

    name: str
    wire: str
    info: FieldInfo


@functools.cache
def fields_of(model: type[BaseModel]) -> tuple[WireField, ...]:
    """Every field of ``model`` in declaration order (cached per model)."""
    return tuple(
        WireField(name, info.alias or name, info) for name, info in model.model_fields.items()
    )


@functools.cache
def _by_any_name(model: type[BaseModel]) -> dict[str, WireField]:
    # Python names first, as pydantic reads them (populate_by_name), then aliases.
    found = {field.name: field for field in fields_of(model)}
    for field in fields_of(model):
        for alias in (field.wire, field.info.validation_alias):
            if isinstance(alias, str):
                found.setdefault(alias, field)
    return found


def field_named(model: type[BaseModel], name: str) -> WireField | None:
    """The field ``name`` means: its Python name, wire name or validation alias
    (``None`` when the model has no such field)."""
    return _by_any_name(model).get(name)


@functools.cache
def known_names(model: type[BaseModel]) -> frozenset[str]:
    """Every top-level key the model reads as one of its fields (Python and wire
    names): what is not among them is sent as is, with a warning. Cached per model,
    as :func:`fields_of` is: every validation of every payload asks it."""
    return frozenset(_by_any_name(model))
