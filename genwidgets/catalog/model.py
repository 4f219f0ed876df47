"""The base models: :class:`Endpoint` for an endpoint's payload, :class:`Part` for a
nested object in one (a content item, a setting, a region).

Both apply the normalisations that fix an unambiguous slip rather than send it as
is: ``None`` means "not set" (never sent as ``null``), enumerated strings match
case-insensitively (``"720P"`` becomes ``"720p"`` where the spec spells it so), a
number written as a string matches a numeric choice (``"128000"`` and ``"128000.0"``
become ``128000``) and a number matches a string choice (``5`` becomes ``"5"``); a boolean
given for a number is an error, not ``1``. Unknown fields pass, at the top and
nested (the spec hides some names); :func:`genwidgets.catalog.validate` warns
about the top-level ones.

:class:`EndpointModel` is the plain base under :class:`Endpoint` (no
normalisations): what the registry, the forms and :mod:`genwidgets.media` accept.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import (
    BaseModel,
    ConfigDict,
    ValidationInfo,
    field_validator,
    model_validator,
)

from .fields import known_names
from .introspect import leaves, limits_of, literal_values
from .markers import reject_bool


class EndpointModel(BaseModel):
    """Base of every endpoint payload model.

    Unknown fields are allowed (the spec hides some names) and reported as a
    warning by :func:`validate`; unset optional fields are never sent.
    """

    model_config = ConfigDict(
        extra="allow",
        populate_by_name=True,
        validate_default=False,
        str_strip_whitespace=False,
    )

    endpoint_id: ClassVar[str] = ""

    def to_wire(self) -> dict[str, Any]:
        """The JSON body to send: set fields only, by their wire names. (Named so that
        no wire field, such as vidV's ``payload``, collides with it.)"""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


#: a whole number as a CSV cell, a spreadsheet or a form box writes it: "5", " 05 ", "+5",
#: "5.0", "5.00"; at most 39 digits (no field takes more; Python reads none past 4300)
_WHOLE_TEXT = re.compile(r"\s*([+-]?[0-9]{1,39})(?:\.0+)?\s*")


def whole_text(text: str) -> str | None:
    """The whole number ``text`` writes, in plain digits (``"5.0"`` → ``"5"``), as
    pydantic reads a whole-number field's text; None for anything else (``"5.5"``,
    ``"five"``, ``"5e0"``, 40 digits or more): the field's check then says what is
    allowed (docs/decisions.md: a float with no fraction is the whole number it is)."""
    match = _WHOLE_TEXT.fullmatch(text)
    return None if match is None else str(int(match.group(1)))


@dataclass(frozen=True)
class _Shape:
    """What the normalisers need to know about one field's annotation."""

    numeric: bool  # int/float (and no bool): a boolean here is an error
    str_choices: frozenset[str]
    lower_choices: dict[str, str]  # lowercase -> spelling of the spec, when unambiguous
    int_choices: frozenset[int]
    #: nothing to normalise (no choices, not a number): the value passes as given
    inert: bool = False


def _shape(annotation: Any) -> _Shape:
    members = list(leaves(annotation))
    literals = literal_values(annotation)
    plain = {leaf for leaf in members if isinstance(leaf, type)}
    has_bool = bool in plain or any(isinstance(v, bool) for v in literals)
    ints = frozenset(v for v in literals if isinstance(v, int) and not isinstance(v, bool))
    strs = [v for v in literals if isinstance(v, str)]
    by_lower: dict[str, list[str]] = {}
    for s in strs:
        by_lower.setdefault(s.lower(), []).append(s)
    numeric = not has_bool and bool(plain & {int, float} or ints)
    return _Shape(
        numeric=numeric,
        str_choices=frozenset(strs),
        lower_choices={k: v[0] for k, v in by_lower.items() if len(v) == 1},
        int_choices=ints,
        inert=not (numeric or strs or ints),
    )


@functools.cache
def _shapes(cls: type[BaseModel]) -> dict[str, _Shape]:
    return {name: _shape(info.annotation) for name, info in cls.model_fields.items()}


class _Normalised(BaseModel):
    """The normalisations of the module docstring, shared by :class:`Part` and
    :class:`Endpoint`."""

    @model_validator(mode="before")
    @classmethod
    def _unset_nones(cls, data: Any) -> Any:
        """A known field given as ``None`` is treated as not set, so it is never sent."""
        if isinstance(data, dict):
            names = known_names(cls)
            return {k: v for k, v in data.items() if not (v is None and k in names)}
        return data

    @field_validator("*", mode="before")
    @classmethod
    def _normalise(cls, value: Any, info: ValidationInfo) -> Any:
        shape = _shapes(cls).get(info.field_name or "")
        if shape is None or shape.inert:  # a free text, an object: every payload asks
            return value
        if isinstance(value, bool):
            return reject_bool(value) if shape.numeric else value
        if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
            # 5.0 from a pandas or CSV row is 5: it matches the choice "5" as 5 does
            number = int(value)
            value = number if str(number) in shape.str_choices else value
        if isinstance(value, str) and value not in shape.str_choices:
            text = value.strip()
            if text.lower() in shape.lower_choices:
                return shape.lower_choices[text.lower()]
            # "5.0" from a CSV cell is 5 too: it matches the choice "5" or 5 as 5 does
            whole = whole_text(value)
            if whole is not None and whole in shape.str_choices:
                return whole
            if whole is not None and int(whole) in shape.int_choices:
                return int(whole)
        if (
            isinstance(value, int)
            and value.bit_length() < 128
            and value not in shape.int_choices
            and str(value) in shape.str_choices
        ):
            return str(value)
        return value

    @field_validator("*", mode="after")
    @classmethod
    def _not_blank(cls, value: Any, info: ValidationInfo) -> Any:
        """A text that may not be empty may not be blank either: spaces alone, or the
        invisible characters a bad copy-paste leaves, would be paid for like a prompt
        and make nothing anyone asked for."""
        if not (isinstance(value, str) and value and info.field_name in _texts(cls)):
            return value
        if value.isspace():
            raise ValueError("holds only spaces or line breaks: it needs some text")
        if _invisible(value):
            hidden = [_char_name(c) for c in dict.fromkeys(value) if not c.isspace()]
            shown = ", ".join(hidden[:4]) + (", ..." if len(hidden) > 4 else "")
            spaces = " and spaces" if any(c.isspace() for c in value) else ""
            raise ValueError(
                f"holds no visible character, only invisible ones ({shown}){spaces}: "
                "it needs some text"
            )
        return value


#: the categories of characters that show nothing: controls, formats (zero-width space
#: and joiners, the BOM, bidi marks) and the separators (spaces, line and paragraph)
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Zs", "Zl", "Zp"})
#: letters and symbols that show nothing: the Hangul fillers, the braille blank, the
#: combining grapheme joiner and the variation selectors
_FILLERS = frozenset(
    "\u115f\u1160\u3164\uffa0\u2800\u034f"
    + "".join(map(chr, range(0xFE00, 0xFE10)))
    + "".join(map(chr, range(0xE0100, 0xE01F0)))
)


def _invisible(text: str) -> bool:
    """Whether no character of ``text`` shows (each is a space, a control, a format
    character or a known filler); the empty text is not said here."""
    return all(c in _FILLERS or unicodedata.category(c) in _INVISIBLE_CATEGORIES for c in text)


def _char_name(char: str) -> str:
    """``U+200B ZERO WIDTH SPACE``: an invisible character named, as no screen shows it."""
    name = unicodedata.name(char, "")
    return f"U+{ord(char):04X}" + (f" {name}" if name else "")


@functools.cache
def _texts(cls: type[BaseModel]) -> frozenset[str]:
    """The string fields of ``cls`` with a minimum length: a text is required in them."""
    return frozenset(
        name
        for name, info in cls.model_fields.items()
        if str in set(leaves(info.annotation)) and (limits_of(info.metadata).min_len or 0) > 0
    )


class Part(_Normalised):
    """Base of a nested object in a payload. Unknown nested fields pass (the spec
    hides some names); the normalisations of the module docstring apply."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)


class Endpoint(EndpointModel, _Normalised):
    """Base of an endpoint's payload model: subclass it, declare the fields with
    ``Field(description=...)``, and put the class in the catalog with
    :func:`genwidgets.catalog.register`. The first sentence of its docstring is the
    help text forms show."""
