"""Field elements: one small object per payload field, a getter/setter pair around the
widget that shows it (in the manner of ipywidgets-jsonschema).

``element.widget`` is what is displayed, ``get()`` the value (:data:`UNSET` when nothing
is to be sent), ``set(value)`` shows one, ``observe(callback)`` and ``show_errors``
report. This module holds :class:`Element` and the scalar elements; :mod:`.dispatch`
picks one per field. How numbers and choices take bad input: docs/decisions.md#form-fields.
"""

from __future__ import annotations

import contextlib
import json
import os
import typing
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import ipywidgets as W
from pydantic import BaseModel

from ..catalog import endpoint as catalog_endpoint
from ..catalog import unsendable
from ..catalog.validation import expected_at
from ..errors import PayloadError
from . import markup
from ._style import ERROR_STYLE, HELP_STYLE, layout
from .field_spec import UNSET, FieldSpec, plain

__all__ = [
    "BuildContext",
    "Builder",
    "ChoiceElement",
    "Element",
    "FixedElement",
    "NumberElement",
    "TextElement",
    "at_position",
    "checked",
    "field_loc",
    "format_json",
    "is_sequence",
    "is_unset",
    "parse_float",
    "parse_int",
    "parse_json",
    "refuse_non_json",
    "shape_error",
    "union_parser",
]

Loc = tuple[str | int, ...]
T = TypeVar("T")
Callback = Callable[[], None]


@dataclass
class BuildContext:
    """What building an element may need beyond its own spec."""

    endpoint: str
    model: type[BaseModel] | None = None

    @property
    def payload_model(self) -> type[BaseModel]:
        """The model of the payload (the endpoint's when none was given)."""
        return self.model or catalog_endpoint(self.endpoint).model


class Element:
    """A field's getter/setter pair and the widget that shows it."""

    control: W.Widget

    def __init__(self, spec: FieldSpec, ctx: BuildContext) -> None:
        self.spec = spec
        self.ctx = ctx
        self.errors: list[str] = []
        self._callbacks: list[Callback] = []
        self._quiet = 0
        self.extra_note = ""  # e.g. a character count, written by subclasses
        self.note = W.HTML(layout=layout("note"))
        self._widget: W.Widget | None = None

    # the getter/setter pair ------------------------------------------------
    def get(self) -> Any:
        raise NotImplementedError

    def set(self, value: Any) -> None:
        raise NotImplementedError

    def reset(self) -> None:
        self.set(UNSET)

    # change notification ----------------------------------------------------
    def observe(self, callback: Callback) -> None:
        self._callbacks.append(callback)

    @contextlib.contextmanager
    def quiet(self) -> Iterator[None]:
        """Suppress change notifications while a setter works (one notice at the end)."""
        self._quiet += 1
        try:
            yield
        finally:
            self._quiet -= 1

    def _changed(self, _change: Any = None) -> None:
        if self._quiet:
            return
        self.refresh_note()
        for callback in list(self._callbacks):
            callback()

    # errors ------------------------------------------------------------------
    def locate(self, loc: Loc) -> tuple[Element, Loc]:
        """The element that should show an error at ``loc`` (relative to this one)."""
        return self, loc

    def walk(self) -> Iterator[Element]:
        yield self

    def show_errors(self, messages: Sequence[str]) -> None:
        self.errors = list(dict.fromkeys(messages))
        self.refresh_note()

    def refresh_note(self) -> None:
        text = markup.join(
            [
                markup.div(self.spec.description, HELP_STYLE) if self.spec.description else None,
                markup.div(self.extra_note, HELP_STYLE) if self.extra_note else None,
                markup.lines(self.errors, ERROR_STYLE, "⚠"),
            ]
        )
        if self.note.value != text:
            self.note.value = text

    # display -------------------------------------------------------------------
    @property
    def widget(self) -> W.Widget:
        if self._widget is None:
            self.refresh_note()
            if self.spec.wire:  # a named field: label beside the control
                spec = self.spec
                label = markup.field_label(spec.label, required=spec.required, billed=spec.billed)
                head = W.HBox(
                    [W.HTML(label, layout=layout("label")), self.control], layout=layout("row")
                )
                self._widget = W.VBox([head, self.note], layout=layout("row"))
            else:  # a list item: the control alone, with its note under it
                self.note.layout = layout("item_note")
                self._widget = W.VBox([self.control, self.note], layout=layout("row"))
        return self._widget

    def characters(self, text: str) -> str:
        """The note's count of ``text``'s characters, against the field's limit."""
        limit = f" / {self.spec.max_len}" if self.spec.max_len else ""
        return f"{len(text)}{limit} characters"

    def placeholder(self) -> str:
        spec = self.spec
        parts = []
        if spec.default_text:
            parts.append(f"default: {spec.default_text}")
        limits = spec.limits_text()
        if limits:
            parts.append(limits)
        if not parts and not spec.required:
            parts.append("not sent when empty")
        return " · ".join(parts)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.spec.path or '(item)'}>"


def is_unset(value: Any) -> bool:
    """``UNSET`` and ``None`` both mean "not sent"."""
    return value is UNSET or value is None


def is_sequence(value: Any) -> bool:
    """A list-like value (text and bytes are not lists of characters here)."""
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))


def field_loc(spec: FieldSpec) -> Loc:
    """Where a field's error is said: a list item at position 0 (``media.0``) until its
    list puts the item's own (:meth:`~.containers.RowsElement.set`)."""
    loc: list[str | int] = []
    for part in spec.path.split(".") if spec.path else ():
        name = part.replace("[]", "")
        loc += [name] if name else []
        loc += [0] * part.count("[]")
    return tuple(loc)


def at_position(error: PayloadError, depth: int, position: int | None) -> PayloadError:
    """``error`` of a list item with the item's ``position`` at ``depth`` of its
    locations, where :func:`field_loc` put 0 (an item does not know its place in its
    list); ``None`` takes the 0 away (a single value given for the whole list)."""
    at = () if position is None else (position,)
    return PayloadError(
        [{"loc": (*e["loc"][:depth], *at, *e["loc"][depth + 1 :]), "msg": e["msg"]}
         for e in error.errors],
        endpoint=error.endpoint,
    )  # fmt: skip


def shape_error(element: Element, value: Any, *inside: str | int) -> PayloadError:
    """The error for a value given to ``set`` that no widget of the field can hold (text
    for a number box, a text for a sub-form): the catalog's own message, what the place
    allows and what came (``expected an object (dict) with the fields ...; got 'calm'``).
    ``inside``: the place within the field (a content item's ``type``)."""
    ctx = element.ctx
    loc = (*field_loc(element.spec), *inside)
    message = expected_at(ctx.payload_model, loc, value)
    return PayloadError([{"loc": loc, "msg": message}], endpoint=ctx.endpoint)


def refuse_non_json(spec: FieldSpec, value: Any) -> None:
    """The catalog's :class:`PayloadError` for a value given to ``set`` that the JSON
    body cannot carry (bytes, an image, an object): a box would show its repr and send
    that text, or keep a value no view can print. Texts are left to validation (it says
    a lone surrogate beside the field), and so are inf and nan (it says the field's
    range there, Submit disabled); local files to the media layer."""
    if is_unset(value) or isinstance(value, (str, os.PathLike)):
        return
    problems = unsendable({"": value}, inf_and_nan=False)
    if problems:
        loc = field_loc(spec)
        raise PayloadError([{"loc": (*loc, *p["loc"][1:]), "msg": p["msg"]} for p in problems])


def checked(call: Callable[[], T]) -> tuple[T | None, list[dict[str, Any]], list[str]]:
    """``call()``'s value, else the errors of the :class:`PayloadError` it raised, and
    the warnings it gave on the way (a form shows both beside its fields)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value, errors = call(), []
        except PayloadError as exc:
            value, errors = None, list(exc.errors)
    return value, errors, [str(w.message) for w in caught]


# --- text-like -----------------------------------------------------------------

Parser = Callable[[str], Any]


def _parsed_or_text(convert: Callable[[str], Any]) -> Parser:
    """A parser: ``convert(text)``, or the text itself when it does not convert
    (validation then says what is wrong)."""

    def parse(text: str) -> Any:
        try:
            return convert(text)
        except ValueError:
            return text

    return parse


parse_int = _parsed_or_text(int)
parse_float = _parsed_or_text(float)
#: JSON data, or the text itself when it is not JSON.
parse_json = _parsed_or_text(json.loads)


def format_json(value: Any) -> str:
    """Text as is, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value)


class TextElement(Element):
    """A Text (or Textarea with a character count) whose text is parsed on read."""

    def __init__(
        self,
        spec: FieldSpec,
        ctx: BuildContext,
        *,
        parse: Parser = str,
        format: Callable[[Any], str] = str,
        long: bool = False,
    ) -> None:
        super().__init__(spec, ctx)
        self._parse = parse
        self._format = format
        self._given: tuple[str, Any] | None = None  # (text shown, value given to set)
        self._count = long or (spec.max_len is not None and spec.max_len >= 300)
        cls = W.Textarea if long or self._count else W.Text
        shape = layout("area") if cls is W.Textarea else layout("wide")
        self.control = cls(placeholder=self.placeholder(), layout=shape)
        self.control.observe(self._changed, "value")

    def refresh_note(self) -> None:
        if self._count:
            self.extra_note = self.characters(self.control.value)
        super().refresh_note()

    def get(self) -> Any:
        text = self.control.value
        if text == "":
            return UNSET
        if self._given is not None and self._given[0] == text:
            return self._given[1]  # untouched since set(): keep its type ("7" stays "7")
        return self._parse(text)

    def set(self, value: Any) -> None:
        refuse_non_json(self.spec, value)
        text = "" if is_unset(value) else self._format(value)
        self._given = None if is_unset(value) else (text, value)
        self.control.value = text


def union_parser(options: tuple[Any, ...]) -> Parser:
    """Parse text into the first member of a union it fits (int, float, bool, str)."""
    literals = [v for a in options if typing.get_origin(a) is Literal for v in typing.get_args(a)]

    def parse(text: str) -> Any:
        for lit in literals:
            if plain(lit) == text:
                return lit
        for number in (n for n in (int, float) if n in options):
            with contextlib.suppress(ValueError):
                return number(text)
        if bool in options and text.lower() in ("true", "false"):
            return text.lower() == "true"
        if any(a in (dict, list) or typing.get_origin(a) in (dict, list) for a in options):
            parsed = parse_json(text)
            if not isinstance(parsed, str):
                return parsed
        return text

    return parse


class NumberElement(Element):
    """A bounded number: a 'send' checkbox and an IntText/FloatText, limits in the help."""

    def __init__(self, spec: FieldSpec, ctx: BuildContext, *, integer: bool) -> None:
        super().__init__(spec, ctx)
        self._integer = integer
        start = spec.default if isinstance(spec.default, (int, float)) else None
        if start is None:
            start = spec.ge if spec.ge is not None else (spec.le if spec.le is not None else 0)
        number_cls = W.IntText if integer else W.FloatText
        self.number = number_cls(value=int(start) if integer else float(start))
        self.number.layout = layout("number")
        self.send = W.Checkbox(value=False, indent=False, layout=layout("tick"))
        self.send.tooltip = "send this field (unticked: the service default applies)"
        hint = W.HTML(markup.span(self.placeholder(), HELP_STYLE))
        self.control = W.HBox([self.send, self.number, hint])
        self.number.observe(self._typed, "value")
        self.send.observe(self._changed, "value")

    def _typed(self, change: Any) -> None:
        if not self.send.value and not self._quiet:
            with self.quiet():
                self.send.value = True
        self._changed()

    def get(self) -> Any:
        return self.number.value if self.send.value else UNSET

    def set(self, value: Any) -> None:
        with self.quiet():
            if is_unset(value):
                self.send.value = False
            else:
                self.number.value = _coerce_number(value, self, integer=self._integer)
                self.send.value = True
        self._changed()


def _coerce_number(value: Any, element: Element, *, integer: bool) -> int | float:
    """A number for the box, or the catalog's error: a box cannot show text or drop
    decimals."""
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):  # 10**400 is past a float's range
        number = float("nan")
    if isinstance(value, bool) or number != number or (integer and not number.is_integer()):
        raise shape_error(element, value)
    return int(number) if integer else number


# --- choices ---------------------------------------------------------------------------


class ChoiceElement(Element):
    """Literal choices and tri-state booleans: an unset "(default)" entry first."""

    def __init__(self, spec: FieldSpec, ctx: BuildContext, choices: Sequence[Any]) -> None:
        super().__init__(spec, ctx)
        self.choices = list(choices)
        default = f"(default: {spec.default_text})" if spec.default_text else "(default)"
        unset_label = "(choose)" if spec.required else default
        self._options: list[tuple[str, Any]] = [(unset_label, UNSET)] + [
            (plain(c), c) for c in self.choices
        ]
        short = len(self.choices) <= 4 and all(len(plain(c)) <= 10 for c in self.choices)
        if short:
            self.control = W.ToggleButtons(options=self._options, value=UNSET)
            self.control.style.button_width = "auto"
        else:
            self.control = W.Dropdown(options=self._options, value=UNSET, layout=layout("small"))
        self.control.observe(self._changed, "value")

    def get(self) -> Any:
        return self.control.value

    def set(self, value: Any) -> None:
        refuse_non_json(self.spec, value)
        if is_unset(value):
            value = UNSET
        elif not any(_same(value, v) for _, v in self._options):
            self._options.append((f"{plain(value)} (not allowed)", value))
            with self.quiet():
                self.control.options = list(self._options)
        else:
            value = next(v for _, v in self._options if _same(value, v))
        self.control.value = value


def _same(a: Any, b: Any) -> bool:
    """Equal and of the same type (True is not 1 here)."""
    return type(a) is type(b) and a == b


class FixedElement(Element):
    """A required single-valued Literal: shown, always sent."""

    def __init__(self, spec: FieldSpec, ctx: BuildContext, value: Any) -> None:
        super().__init__(spec, ctx)
        self.value = value
        self.control = W.HTML(markup.code(plain(value)))

    def get(self) -> Any:
        return self.value

    def set(self, value: Any) -> None:
        refuse_non_json(self.spec, value)
        if not is_unset(value) and value != self.value:
            # Keep what the caller gave, so validation can say it is wrong.
            self.value = value
            self.control.value = markup.code(plain(value))
            self._changed()


Builder = Callable[[FieldSpec, BuildContext], Element]
"""How a container builds the element of a child field (the dispatch, given to it)."""
