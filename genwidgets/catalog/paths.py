"""Walking a model along a payload path: the catalog, :mod:`genwidgets.media` and the
forms share these rather than walking models themselves (through annotations, by the
catalog's one walker, :mod:`.introspect`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from .checks import MediaSpec, media_spec, media_specs
from .fields import field_named, fields_of
from .introspect import models_in


def fields_along(model: type[BaseModel], path: Sequence[str | int]) -> list[list[FieldInfo]]:
    """The fields each name of ``path`` reaches, one list per name (list indexes are
    skipped); every member of a union of nested models is searched, in order. Stops
    at the first name that no model on the way has, so a short answer says where."""
    reached: list[list[FieldInfo]] = []
    candidates = [model]
    for name in (p for p in path if isinstance(p, str)):
        named = (field_named(m, name) for m in candidates)
        infos = [f.info for f in named if f is not None]
        if not infos:
            break
        reached.append(infos)
        candidates = [m for i in infos for m in models_in(i.annotation)]
    return reached


def field_info_at(model: type[BaseModel], path: Sequence[str | int]) -> FieldInfo | None:
    """The field a payload path ends in, e.g. ``("content", 0, "image_url", "url")``
    (list indexes optional; wire names or aliases); ``None`` when it leads nowhere.
    In a union of nested models the first member that has the whole path wins."""
    return next(iter(_fields_at(model, path)), None)


def media_spec_at(model: type[BaseModel], path: Sequence[str | int]) -> MediaSpec | None:
    """The :class:`MediaSpec` of the field at ``path`` (list items share their list's)."""
    return next(filter(None, map(media_spec, _fields_at(model, path))), None)


def _fields_at(model: type[BaseModel], path: Sequence[str | int]) -> list[FieldInfo]:
    """The fields the whole of ``path`` leads to (none when it stops short)."""
    names = [p for p in path if isinstance(p, str)]
    reached = fields_along(model, names)
    return reached[-1] if names and len(reached) == len(names) else []


def media_fields_of(model: type[BaseModel]) -> dict[str, MediaSpec]:
    """Every media field of ``model``: dotted wire path (list indexes left out) → spec."""

    def walk(
        current: type[BaseModel], prefix: tuple[str, ...], seen: frozenset[type]
    ) -> Iterator[tuple[str, MediaSpec]]:
        for field in fields_of(current):
            path = (*prefix, field.wire)
            for spec in media_specs(field.info):
                yield ".".join(path), spec
            for sub in models_in(field.info.annotation):
                if sub not in seen:
                    yield from walk(sub, path, seen | {sub})

    return dict(walk(model, (), frozenset({model})))
