"""One walk over field annotations, shared by the catalog and the forms.

An annotation wraps what matters in layers (``Annotated`` markers and limits, unions,
containers, ``Literal`` choices, nested models); every reader unwraps them here, so the
catalog and the forms never disagree about what a field holds. Pure functions of types
that import nothing else of the catalog, so any catalog module may use them.
"""

from __future__ import annotations

import types
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types as at
from pydantic import BaseModel

__all__ = [
    "CONTAINER_ORIGINS",
    "UNION_ORIGINS",
    "Limits",
    "is_container",
    "is_model",
    "is_union",
    "item_annotation",
    "item_types",
    "leaves",
    "limits_of",
    "literal_choices",
    "literal_values",
    "models_in",
    "number_text",
    "single_literal",
    "strip_optional",
    "unannotate",
]

UNION_ORIGINS: tuple[Any, ...] = (Union, types.UnionType)
CONTAINER_ORIGINS: tuple[Any, ...] = (list, tuple, set, frozenset, Sequence)


def unannotate(annotation: Any) -> Any:
    """``Annotated[X, ...]`` → ``X`` (nested wrappers too)."""
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    return annotation


def is_union(annotation: Any) -> bool:
    """``X | Y`` or ``Union[X, Y]`` (both spellings have different origins)."""
    return get_origin(annotation) in UNION_ORIGINS


def strip_optional(annotation: Any) -> tuple[Any, bool]:
    """``X | None`` → ``(X, True)``; ``Annotated`` wrappers are removed. A union of
    several types keeps them, without ``None``."""
    annotation = unannotate(annotation)
    if is_union(annotation):
        args = [a for a in get_args(annotation) if a is not type(None)]
        nullable = len(args) != len(get_args(annotation))
        if len(args) == 1:
            return unannotate(args[0]), nullable
        if nullable:
            return Union[tuple(args)], True  # noqa: UP007 - rebuilt from parts
    return annotation, False


def leaves(annotation: Any) -> Iterator[Any]:
    """The members of an annotation under ``Annotated`` and unions (containers kept)."""
    origin = get_origin(annotation)
    if origin is Annotated:
        yield from leaves(get_args(annotation)[0])
    elif origin in UNION_ORIGINS:
        for arg in get_args(annotation):
            yield from leaves(arg)
    else:
        yield annotation


def item_types(annotation: Any) -> Iterator[tuple[Any, tuple[Any, ...]]]:
    """The types under ``Annotated``, unions and containers, each with the ``Annotated``
    metadata met on the way: a list item's MediaSpec rides inside the list."""
    origin = get_origin(annotation)
    if origin is Annotated:
        inner, *meta = get_args(annotation)
        for leaf, more in item_types(inner):
            yield leaf, (*meta, *more)
    elif origin in UNION_ORIGINS or origin in CONTAINER_ORIGINS:
        for arg in get_args(annotation):
            if arg is not Ellipsis and arg is not type(None):
                yield from item_types(arg)
    else:
        yield annotation, ()


def is_model(annotation: Any) -> bool:
    """A pydantic model class (a nested object of a payload)."""
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def models_in(annotation: Any) -> list[type[BaseModel]]:
    """The nested models a value of ``annotation`` may hold (list items included)."""
    return [leaf for leaf, _ in item_types(annotation) if is_model(leaf)]


def is_container(annotation: Any) -> bool:
    """A list-like annotation (``list[X]``, ``tuple[X, ...]``, a bare ``list``)."""
    return get_origin(annotation) in CONTAINER_ORIGINS or annotation in (list, tuple)


def item_annotation(annotation: Any) -> Any:
    """The item type of a list-like annotation (``Any`` when it does not say)."""
    args = get_args(annotation)
    return args[0] if args else Any


def literal_values(annotation: Any) -> list[Any]:
    """Every ``Literal`` value among the members of ``annotation``, other members left
    aside: ``bool | Literal["on", "off"]`` gives ``["on", "off"]``."""
    return [v for leaf in leaves(annotation) if get_origin(leaf) is Literal for v in get_args(leaf)]


def literal_choices(annotation: Any) -> list[Any] | None:
    """The values a choice field offers: an ``Enum``'s values, a ``Literal``'s, or a
    union of ``Literal``s joined; ``None`` when the annotation is not a choice."""
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return [member.value for member in annotation]
    if get_origin(annotation) is Literal:
        return list(get_args(annotation))
    if is_union(annotation) and all(get_origin(m) is Literal for m in leaves(annotation)):
        return literal_values(annotation)
    return None


def single_literal(annotation: Any) -> tuple[bool, Any]:
    """``(True, value)`` for a one-valued ``Literal`` (optional or not): the tag of a
    union member; ``(False, None)`` otherwise."""
    bare = strip_optional(annotation)[0]
    if get_origin(bare) is Literal and len(get_args(bare)) == 1:
        return True, get_args(bare)[0]
    return False, None


@dataclass(frozen=True)
class Limits:
    """The numeric and length constraints of a field (``None``: not stated)."""

    ge: float | None = None
    le: float | None = None
    gt: float | None = None
    lt: float | None = None
    min_len: int | None = None
    max_len: int | None = None

    @property
    def low(self) -> float | None:
        """The lower bound, inclusive (``ge``) or not (``gt``); ``None``: none stated."""
        return self.ge if self.ge is not None else self.gt

    @property
    def high(self) -> float | None:
        """The upper bound, inclusive (``le``) or not (``lt``); ``None``: none stated."""
        return self.le if self.le is not None else self.lt

    @property
    def bounded(self) -> bool:
        """Limited on both sides (a number box then shows the range)."""
        return self.low is not None and self.high is not None

    def number_range(self) -> str | None:
        """The numbers allowed as messages write them (``1-10``, ``from -12 to 12``,
        ``0 or more``, ``more than 0``); ``None`` when no bound is stated."""
        low, high = self.low, self.high
        if low is None and high is None:
            return None
        if low is not None and high is not None:
            if self.gt is None and self.lt is None:
                joined = f"{number_text(low)}-{number_text(high)}"
                return joined if low >= 0 else f"from {number_text(low)} to {number_text(high)}"
            ends = (self.gt is not None, self.lt is not None)
            excluded = {(True, True): "both", (True, False): "the first", (False, True): "the last"}
            return f"between {number_text(low)} and {number_text(high)} ({excluded[ends]} excluded)"
        if low is not None:
            return (
                f"more than {number_text(low)}"
                if self.gt is not None
                else f"{number_text(low)} or more"
            )
        assert high is not None
        return (
            f"less than {number_text(high)}"
            if self.lt is not None
            else f"at most {number_text(high)}"
        )

    def length_range(self, unit: str) -> str | None:
        """How many ``unit`` (characters, items) are allowed: ``1-2000 characters``,
        ``at most 2500 characters``, ``at least 1 item``; ``None`` when unstated."""
        low, high = self.min_len, self.max_len
        if low is None and high is None:
            return None
        if low is not None and high is not None:
            return f"{low}-{high} {unit}"
        count = low if low is not None else high
        units = unit.removesuffix("s") if count == 1 else unit
        return f"at least {low} {units}" if low is not None else f"at most {high} {units}"


def number_text(x: float) -> str:
    """A bound as messages and forms write it: ``10``, not ``10.0``."""
    return str(int(x)) if float(x).is_integer() else str(x)


#: The ``annotated_types`` constraints a field may carry: (type, Limits name, attribute).
_CONSTRAINTS: tuple[tuple[type, str, str], ...] = (
    (at.Ge, "ge", "ge"),
    (at.Le, "le", "le"),
    (at.Gt, "gt", "gt"),
    (at.Lt, "lt", "lt"),
    (at.MinLen, "min_len", "min_length"),
    (at.MaxLen, "max_len", "max_length"),
)


def limits_of(metadata: Iterable[Any]) -> Limits:
    """Read the ``annotated_types`` constraints pydantic keeps in ``FieldInfo.metadata``."""
    found: dict[str, Any] = {}
    for meta in metadata:
        for kind, name, attribute in _CONSTRAINTS:
            if isinstance(meta, kind):
                found[name] = getattr(meta, attribute)
    return Limits(**found)
