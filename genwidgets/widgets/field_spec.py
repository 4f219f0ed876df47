"""What a form knows about one payload field, read once from the catalog's model.

:func:`field_specs` turns a model's fields into :class:`FieldSpec` records through
the catalog's one annotation walker (:mod:`genwidgets.catalog.introspect`) and its
markers (billed, the service's default, media, imgM prompt). Specs are cached per
model: building a form must stay cheap. Field paths are wire names joined by ``.``,
with ``[]`` for list items: ``"content"``, ``"media[].url"``.

:data:`UNSET` is the value of a field that is not to be sent: an empty text box is
unset, never ``""``, and unset optional fields are left out of the payload.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from enum import Enum
from functools import cache
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from ..catalog import (
    NO_DEFAULT,
    MediaSpec,
    fields_of,
    is_billed,
    is_prompt_string,
    media_spec,
    service_default,
)
from ..catalog.introspect import (
    Limits,
    is_container,
    item_annotation,
    limits_of,
    number_text,
    strip_optional,
)

__all__ = [
    "UNSET",
    "FieldSpec",
    "field_specs",
    "item_spec",
    "plain",
    "spec_from_info",
]


class _Unset(Enum):
    """The value of a field that is not to be sent (one member: copies stay it)."""

    UNSET = "UNSET"

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET: Any = _Unset.UNSET


@dataclass(frozen=True, kw_only=True)
class FieldSpec(Limits):
    """What a form needs to know about one field, read once from the model (its
    :class:`~genwidgets.catalog.introspect.Limits` included)."""

    name: str  # python attribute name ("" for list items)
    wire: str  # the name sent on the wire
    path: str  # "media[].url"
    annotation: Any  # with ``None`` and ``Annotated`` stripped
    required: bool
    description: str = ""
    default: Any = UNSET  # a real default from the model, else UNSET
    default_text: str = ""  # what the placeholder says when unset: the ServiceDefault
    billed: bool = False
    media: MediaSpec | None = None
    prompt: bool = False
    item_info: FieldInfo | None = field(default=None, compare=False)

    @property
    def label(self) -> str:
        return self.wire or self.name

    def limits_text(self) -> str:
        low, high = self.low, self.high
        if low is None:
            return (
                "" if high is None else ("< " if self.lt is not None else "≤ ") + number_text(high)
            )
        if high is None:
            return ("> " if self.gt is not None else "≥ ") + number_text(low)
        lo = number_text(low) + (" <" if self.gt is not None else "")
        return f"{lo} – {'< ' if self.lt is not None else ''}{number_text(high)}"


def plain(value: Any) -> str:
    """A value as the text a form shows for it (``true``, an enum's value, JSON)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Enum):
        return str(value.value)
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


def spec_from_info(name: str, info: FieldInfo, path: str, wire: str = "") -> FieldSpec:
    """Read a pydantic FieldInfo into a :class:`FieldSpec` (``wire``: the catalog's wire
    name of the field, ``name`` when not given)."""
    annotation, _ = strip_optional(info.annotation)
    description = info.description or ""
    default: Any = UNSET
    if info.default is not PydanticUndefined and info.default is not None:
        default = info.default
    service = service_default(info)
    default_text = plain(default) if default is not UNSET else ""
    if not default_text and service is not NO_DEFAULT:
        default_text = plain(service)
    item_info = None
    if is_container(annotation):
        item_info = FieldInfo.from_annotation(item_annotation(annotation))
    return FieldSpec(
        name=name,
        wire=wire or name,
        path=path,
        annotation=annotation,
        required=info.is_required(),
        description=description,
        default=default,
        default_text=default_text,
        billed=is_billed(info),
        media=media_spec(info),
        prompt=is_prompt_string(info),
        item_info=item_info,
        **asdict(limits_of(info.metadata)),
    )


@cache
def field_specs(model: type[BaseModel], prefix: str = "") -> tuple[FieldSpec, ...]:
    """Every field of ``model``, in declaration order (cached per model)."""
    return tuple(spec_from_info(e.name, e.info, prefix + e.wire, e.wire) for e in fields_of(model))


def item_spec(parent: FieldSpec) -> FieldSpec:
    """The spec of one item of a list field (markers may sit on the list or the item)."""
    info = parent.item_info or FieldInfo.from_annotation(Any)
    spec = spec_from_info("", info, parent.path + "[]")
    return replace(
        spec,
        wire="",
        required=True,
        description="",
        media=spec.media or parent.media,
        billed=False,
    )
