"""The dispatch: which element a field gets, from one ordered table.

:data:`FIELD_KINDS` lists every kind of field a form knows, in the order they are
tried; the first whose ``matches(spec)`` holds builds the element. A new field kind
is one :class:`FieldKind` entry, placed before any broader kind it narrows (the
catalog's markers come before the plain types they sit on: a media field is a
string to pydantic, a media input to a person).

Explicit overrides win over the table: a factory registered with
:func:`register_field` for ``(endpoint id, field path)``, then ``("*", field path)``
(:func:`unregister_field` takes one back, as ``catalog.unregister`` an endpoint).
Field paths are wire names joined by ``.``, with ``[]`` for list items.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, get_args

from ..catalog.introspect import (
    is_container,
    is_model,
    is_union,
    item_annotation,
    literal_choices,
    unannotate,
)
from ..catalog.vida import ContentItem
from .containers import ListElement, ModelElement, ModelUnionElement
from .elements import (
    BuildContext,
    Builder,
    ChoiceElement,
    Element,
    FixedElement,
    NumberElement,
    TextElement,
    format_json,
    parse_float,
    parse_int,
    parse_json,
    union_parser,
)
from .field_spec import FieldSpec, plain
from .media_input import MediaElement
from .prompt_field import PromptElement
from .vida_content import VidAContentElement

__all__ = [
    "FIELD_KINDS",
    "BuildContext",
    "FieldKind",
    "build_element",
    "kind_of",
    "register_field",
    "unregister_field",
]


@dataclass(frozen=True)
class FieldKind:
    """One row of the dispatch: a name, when it applies, and what it builds."""

    name: str
    matches: Callable[[FieldSpec], bool]
    build: Builder


def build_element(spec: FieldSpec, ctx: BuildContext) -> Element:
    """The element for ``spec``: an explicit override, else the first kind that matches."""
    factory = _OVERRIDES.get((ctx.endpoint, spec.path)) or _OVERRIDES.get(("*", spec.path))
    if factory is not None:
        return factory(spec, ctx)
    return _kind(spec).build(spec, ctx)


def kind_of(spec: FieldSpec) -> str:
    """The name of the table entry that builds ``spec``'s element."""
    return _kind(spec).name


def _kind(spec: FieldSpec) -> FieldKind:
    return next(kind for kind in FIELD_KINDS if kind.matches(spec))


_OVERRIDES: dict[tuple[str, str], Builder] = {}


def register_field(endpoint: str, path: str, factory: Builder) -> None:
    """Use ``factory(spec, ctx)`` for the field at ``path`` of ``endpoint`` (or ``"*"``).
    Explicit registrations win over markers and type inference."""
    _OVERRIDES[(endpoint, path)] = factory


def unregister_field(endpoint: str, path: str) -> None:
    """Forget the factory :func:`register_field` set for ``path`` of ``endpoint``; the
    field goes back to the table (a pair never registered is a ``KeyError``)."""
    del _OVERRIDES[(endpoint, path)]


# --- what the table's entries test --------------------------------------------------------


def _typed_as_text(spec: FieldSpec) -> bool:
    """A value a person would type (a string, a free union, ``Any``): not a bool, number,
    choice, list or nested model. A media marker on a list is for its items, which
    the list builds through this table again."""
    ann = spec.annotation
    return not (
        ann in (bool, int, float)
        or _choice(spec)
        or is_container(ann)
        or is_model(ann)
        or _model_union(spec)
    )


def _choice(spec: FieldSpec) -> bool:
    return literal_choices(spec.annotation) is not None


def _model_union(spec: FieldSpec) -> bool:
    ann = spec.annotation
    return is_union(ann) and all(is_model(unannotate(a)) for a in _members(ann))


def _members(annotation: Any) -> tuple[Any, ...]:
    return tuple(unannotate(a) for a in get_args(annotation))


def _looks_like_prompt(spec: FieldSpec) -> bool:
    return "prompt" in spec.wire.lower() or spec.wire in ("text",)


# --- what the table's entries build -------------------------------------------------------


def _number(spec: FieldSpec, ctx: BuildContext) -> Element:
    integer = spec.annotation is int
    if spec.bounded:
        return NumberElement(spec, ctx, integer=integer)
    return TextElement(spec, ctx, parse=parse_int if integer else parse_float)


def _media_input(spec: FieldSpec, ctx: BuildContext) -> Element:
    assert spec.media is not None  # the "media" entry matches only then
    return MediaElement(spec, ctx, spec.media)


def _choice_element(spec: FieldSpec, ctx: BuildContext) -> Element:
    choices = literal_choices(spec.annotation) or []
    if spec.required and len(choices) == 1:
        return FixedElement(spec, ctx, choices[0])
    return ChoiceElement(spec, ctx, choices)


def _union_text(spec: FieldSpec, ctx: BuildContext) -> Element:
    return TextElement(spec, ctx, parse=union_parser(_members(spec.annotation)), format=plain)


#: Every field kind, in the order it is tried; the first that matches builds the element.
FIELD_KINDS: tuple[FieldKind, ...] = (
    FieldKind(
        "vida_content",
        lambda s: is_container(s.annotation) and item_annotation(s.annotation) is ContentItem,
        VidAContentElement,
    ),
    FieldKind("media", lambda s: s.media is not None and _typed_as_text(s), _media_input),
    FieldKind("prompt", lambda s: s.prompt and s.annotation is str, PromptElement),
    FieldKind(
        "str",
        lambda s: s.annotation is str,
        lambda s, c: TextElement(s, c, long=_looks_like_prompt(s)),
    ),
    FieldKind(
        "bool", lambda s: s.annotation is bool, lambda s, c: ChoiceElement(s, c, [True, False])
    ),
    FieldKind("int", lambda s: s.annotation is int, _number),
    FieldKind("float", lambda s: s.annotation is float, _number),
    FieldKind("literal", _choice, _choice_element),
    FieldKind(
        "list",
        lambda s: is_container(s.annotation),
        lambda s, c: ListElement(s, c, build=build_element),
    ),
    FieldKind(
        "model",
        lambda s: is_model(s.annotation),
        lambda s, c: ModelElement(s, c, s.annotation, build=build_element),
    ),
    FieldKind(
        "model_union",
        _model_union,
        lambda s, c: ModelUnionElement(s, c, _members(s.annotation), build=build_element),
    ),
    FieldKind("union", lambda s: is_union(s.annotation), _union_text),
    # anything else (``Any``, dicts): text, parsed as JSON when it is JSON
    FieldKind(
        "json",
        lambda s: True,
        lambda s, c: TextElement(s, c, parse=parse_json, format=format_json),
    ),
)
