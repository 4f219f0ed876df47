"""Field elements: one small object per payload field, built by a dispatch on its type.

In the manner of ipywidgets-jsonschema, :func:`build_element` looks at a field's
annotation, picks ``_construct_<kind>`` from a table, and returns an
:class:`Element` — a getter/setter pair around the widget it shows:

- ``element.widget``: what is displayed (label, control, help and errors);
- ``element.get()``: the field's value, or :data:`UNSET` when nothing is to be sent;
- ``element.set(value)``: show a value (``UNSET``/``None`` clears it);
- ``element.observe(callback)``: ``callback()`` after every user or programmatic change;
- ``element.show_errors(messages)``: validation messages, shown beside the field.

Explicit overrides win over inference, in this order: a registered factory for
``(endpoint id, field path)`` (then ``("*", field path)``), see :func:`register_field`;
then the catalog's markers (:class:`~genwidgets.catalog.MediaSpec` → a media input,
``PROMPT_STRING`` → the imgM PromptBuilder); then the type. Field paths are wire
names joined by ``.``, with ``[]`` for list items: ``"content"``, ``"media[].url"``.

Choices made where the brief is silent (and why):

- An empty text box is "unset", never ``""``: unset optional fields are not sent.
- Numbers that fail to parse are passed on as text, so the catalog's validation,
  not this module, writes the message ("Input should be a valid integer").
- Bounded numbers are a "send" checkbox plus IntText/FloatText (not Bounded*, which
  would clamp out-of-range input silently); typing a number ticks the checkbox.
- A required ``Literal`` with a single value is fixed (shown, always sent); an
  optional one is a normal choice with a "(default)" entry.
- A value given to ``set`` that a choice does not offer is added as an extra entry
  marked "(not allowed)", so validation can say what is wrong instead of it being lost.
- List rows left unset are left out of the list; error locations are mapped back
  to the row they came from.
- Uploaded media is encoded by :mod:`genwidgets.media` and the FileUpload is cleared
  at once: the encoded string lives in Python only, and the preview is a thumbnail.
"""

from __future__ import annotations

import contextlib
import html
import importlib
import io
import json
import re
import types
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from functools import cache
from typing import Any, Literal, Union

import annotated_types as at
import ipywidgets as W
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from ..catalog import MediaSpec, is_billed, is_prompt_string, media_spec, media_spec_at
from ..catalog import endpoint as catalog_endpoint
from ..catalog.vida import VIDA_AUDIO

__all__ = [
    "UNSET",
    "Element",
    "FieldSpec",
    "build_element",
    "field_specs",
    "register_field",
]


class _Unset:
    """The value of a field that is not to be sent."""

    _instance: _Unset | None = None

    def __new__(cls) -> _Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET: Any = _Unset()

Loc = tuple[str | int, ...]
Callback = Callable[[], None]

# ---------------------------------------------------------------------------
# Introspection (cached per model: building a form must stay cheap)
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class FieldSpec:
    """What a form needs to know about one field, read once from the model."""

    name: str  # python attribute name ("" for list items)
    wire: str  # the name sent on the wire
    path: str  # "media[].url"
    annotation: Any  # with ``None`` and ``Annotated`` stripped
    required: bool
    description: str = ""
    default: Any = UNSET  # a real default from the model, else UNSET
    default_text: str = ""  # what the placeholder says when unset
    billed: bool = False
    media: MediaSpec | None = None
    prompt: bool = False
    ge: float | None = None
    le: float | None = None
    gt: float | None = None
    lt: float | None = None
    min_len: int | None = None
    max_len: int | None = None
    item_info: FieldInfo | None = field(default=None, compare=False)

    @property
    def label(self) -> str:
        return self.wire or self.name

    def limits_text(self) -> str:
        low = self.ge if self.ge is not None else self.gt
        high = self.le if self.le is not None else self.lt
        if low is None and high is None:
            return ""
        lo = "" if low is None else _num(low) + (" <" if self.gt is not None else "")
        hi = "" if high is None else ("< " if self.lt is not None else "") + _num(high)
        if low is None:
            return f"≤ {hi}" if self.lt is None else hi
        if high is None:
            return f"≥ {lo}" if self.gt is None else f"> {_num(low)}"
        return f"{lo} – {hi}"


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


_DEFAULT_RE = re.compile(r"\b[Dd]efault(?:s to|:| is)?\s+`?([^`;,\s]+)`?")
_NOT_A_DEFAULT = {"usually", "not", "null", "none", "is", "the", "when", "in", "mark", "value"}


def default_from_description(description: str) -> str:
    """The documented default ("Default `720p`", "default 5") or ``""``."""
    for match in _DEFAULT_RE.finditer(description):
        word = match.group(1).rstrip(".)")
        if word and word.lower() not in _NOT_A_DEFAULT:
            return word
    return ""


def strip_optional(annotation: Any) -> tuple[Any, bool]:
    """``X | None`` → ``(X, True)``; ``Annotated`` wrappers are removed."""
    annotation = _unannotate(annotation)
    if _is_union(annotation):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        nullable = len(args) != len(typing.get_args(annotation))
        if len(args) == 1:
            return _unannotate(args[0]), nullable
        if nullable:
            return Union[tuple(args)], True  # noqa: UP007 - rebuilt from parts
    return annotation, False


def _unannotate(annotation: Any) -> Any:
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    return annotation


def _is_union(annotation: Any) -> bool:
    return typing.get_origin(annotation) in (Union, types.UnionType)


def spec_from_info(name: str, info: FieldInfo, path: str) -> FieldSpec:
    """Read a pydantic FieldInfo into a :class:`FieldSpec`."""
    annotation, _ = strip_optional(info.annotation)
    limits: dict[str, Any] = {}
    for meta in info.metadata:
        if isinstance(meta, at.Ge):
            limits["ge"] = meta.ge
        elif isinstance(meta, at.Le):
            limits["le"] = meta.le
        elif isinstance(meta, at.Gt):
            limits["gt"] = meta.gt
        elif isinstance(meta, at.Lt):
            limits["lt"] = meta.lt
        elif isinstance(meta, at.MinLen):
            limits["min_len"] = meta.min_length
        elif isinstance(meta, at.MaxLen):
            limits["max_len"] = meta.max_length
    description = info.description or ""
    default: Any = UNSET
    if info.default is not PydanticUndefined and info.default is not None:
        default = info.default
    default_text = (
        _plain(default) if default is not UNSET else default_from_description(description)
    )
    item_info = None
    if typing.get_origin(annotation) in (list, tuple, set, frozenset, Sequence):
        args = typing.get_args(annotation)
        item_info = FieldInfo.from_annotation(args[0] if args else Any)
    return FieldSpec(
        name=name,
        wire=info.alias or name,
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
        **limits,
    )


def _plain(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Enum):
        return str(value.value)
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


@cache
def field_specs(model: type[BaseModel], prefix: str = "") -> tuple[FieldSpec, ...]:
    """Every field of ``model``, in declaration order (cached per model)."""
    specs = []
    for name, info in model.model_fields.items():
        wire = info.alias or name
        specs.append(spec_from_info(name, info, f"{prefix}{wire}"))
    return tuple(specs)


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
        prompt=spec.prompt,
        billed=False,
    )


# ---------------------------------------------------------------------------
# Shared look (shared Layout objects: each widget costs less to build)
# ---------------------------------------------------------------------------


@cache
def _layout(name: str) -> W.Layout:
    presets: dict[str, dict[str, str]] = {
        "label": {"width": "190px", "min_width": "190px"},
        "wide": {"width": "auto", "flex": "1 1 auto"},
        "area": {"width": "auto", "flex": "1 1 auto", "height": "90px"},
        "row": {"width": "100%", "margin": "2px 0"},
        "item": {"width": "100%", "margin": "0 0 0 12px"},
        "box": {"width": "100%", "border": "1px solid #ddd", "padding": "4px"},
        "small": {"width": "auto"},
        "tick": {"width": "28px"},
        "number": {"width": "160px"},
        "note": {"width": "auto", "margin": "0 0 0 194px"},
    }
    return W.Layout(**presets[name])


HELP_STYLE = "color:#666;font-size:0.85em"
ERROR_STYLE = "color:#c62828"
WARN_STYLE = "color:#b26a00"


def billed_badge() -> str:
    return (
        '<span title="This field affects what the task bills" '
        'style="background:#fff3cd;color:#7a5b00;border-radius:3px;padding:0 3px;'
        'font-size:0.8em">$</span>'
    )


def label_html(spec: FieldSpec) -> str:
    name = html.escape(spec.label)
    star = ' <span style="color:#c62828" title="required">*</span>' if spec.required else ""
    badge = f" {billed_badge()}" if spec.billed else ""
    weight = "bold" if spec.required else "normal"
    return f'<span style="font-weight:{weight}">{name}</span>{star}{badge}'


# ---------------------------------------------------------------------------
# Elements
# ---------------------------------------------------------------------------


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
        self.note = W.HTML(layout=_layout("note"))
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
        parts = []
        if self.spec.description:
            parts.append(f'<div style="{HELP_STYLE}">{html.escape(self.spec.description)}</div>')
        if self.extra_note:
            parts.append(f'<div style="{HELP_STYLE}">{self.extra_note}</div>')
        for msg in self.errors:
            parts.append(f'<div style="{ERROR_STYLE}">⚠ {html.escape(msg)}</div>')
        text = "".join(parts)
        if self.note.value != text:
            self.note.value = text

    # display -------------------------------------------------------------------
    @property
    def widget(self) -> W.Widget:
        if self._widget is None:
            self.refresh_note()
            if self.spec.wire:  # a named field: label beside the control
                head = W.HBox(
                    [W.HTML(label_html(self.spec), layout=_layout("label")), self.control],
                    layout=_layout("row"),
                )
                self._widget = W.VBox([head, self.note], layout=_layout("row"))
            else:  # a list item: the control alone, with its note
                self._widget = W.VBox([self.control, self.note], layout=_layout("row"))
        return self._widget

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


class _Quiet:
    """Suppress change notifications while a setter works (one notice at the end)."""

    def __init__(self, element: Element) -> None:
        self.element = element

    def __enter__(self) -> None:
        self.element._quiet += 1

    def __exit__(self, *exc: object) -> None:
        self.element._quiet -= 1


def _is_unset(value: Any) -> bool:
    return value is UNSET or value is None


# --- text-like -----------------------------------------------------------------

Parser = Callable[[str], Any]


def _parse_int(text: str) -> Any:
    try:
        return int(text)
    except ValueError:
        return text


def _parse_float(text: str) -> Any:
    try:
        return float(text)
    except ValueError:
        return text


def _parse_json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _format_json(value: Any) -> str:
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
        layout = _layout("area") if cls is W.Textarea else _layout("wide")
        self.control = cls(placeholder=self.placeholder(), layout=layout)
        self.control.observe(self._changed, "value")
        self._update_count()

    def _update_count(self) -> None:
        if self._count:
            limit = f" / {self.spec.max_len}" if self.spec.max_len else ""
            self.extra_note = f"{len(self.control.value)}{limit} characters"

    def refresh_note(self) -> None:
        self._update_count()
        super().refresh_note()

    def get(self) -> Any:
        text = self.control.value
        if text == "":
            return UNSET
        if self._given is not None and self._given[0] == text:
            return self._given[1]  # untouched since set(): keep its type ("7" stays "7")
        return self._parse(text)

    def set(self, value: Any) -> None:
        text = "" if _is_unset(value) else self._format(value)
        self._given = None if _is_unset(value) else (text, value)
        self.control.value = text


def _union_parser(options: tuple[Any, ...]) -> Parser:
    """Parse text into the first member of a union it fits (int, float, bool, str)."""
    literals = [v for a in options if typing.get_origin(a) is Literal for v in typing.get_args(a)]

    def parse(text: str) -> Any:
        for lit in literals:
            if _plain(lit) == text:
                return lit
        if int in options:
            try:
                return int(text)
            except ValueError:
                pass
        if float in options:
            try:
                return float(text)
            except ValueError:
                pass
        if bool in options and text.lower() in ("true", "false"):
            return text.lower() == "true"
        if any(a in (dict, list) or typing.get_origin(a) in (dict, list) for a in options):
            parsed = _parse_json(text)
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
        self.number.layout = _layout("number")
        self.send = W.Checkbox(value=False, indent=False, layout=_layout("tick"))
        self.send.tooltip = "send this field (unticked: the service default applies)"
        self.control = W.HBox([self.send, self.number, W.HTML(self._hint())])
        self.number.observe(self._typed, "value")
        self.send.observe(self._changed, "value")

    def _hint(self) -> str:
        hint = self.placeholder()
        return f'<span style="{HELP_STYLE}">{html.escape(hint)}</span>'

    def _typed(self, change: Any) -> None:
        if not self.send.value and not self._quiet:
            with _Quiet(self):
                self.send.value = True
        self._changed()

    def get(self) -> Any:
        return self.number.value if self.send.value else UNSET

    def set(self, value: Any) -> None:
        with _Quiet(self):
            if _is_unset(value):
                self.send.value = False
            else:
                self.number.value = _coerce_number(value, self.spec, integer=self._integer)
                self.send.value = True
        self._changed()


def _coerce_number(value: Any, spec: FieldSpec, *, integer: bool) -> int | float:
    """A number for the box, or a clear error: a box cannot show text or drop decimals."""
    kind = "a whole number" if integer else "a number"
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = float("nan")
    if isinstance(value, bool) or number != number or (integer and not number.is_integer()):
        from ..errors import PayloadError

        limits = spec.limits_text()
        allowed = f" ({limits})" if limits else ""
        raise PayloadError(
            [
                {
                    "loc": tuple(spec.path.split(".")),
                    "msg": f"expected {kind}{allowed}, got {value!r}",
                }
            ]
        )
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
            (_plain(c), c) for c in self.choices
        ]
        short = len(self.choices) <= 4 and all(len(_plain(c)) <= 10 for c in self.choices)
        if short:
            self.control = W.ToggleButtons(options=self._options, value=UNSET)
            self.control.style.button_width = "auto"
        else:
            self.control = W.Dropdown(options=self._options, value=UNSET, layout=_layout("small"))
        self.control.observe(self._changed, "value")

    def get(self) -> Any:
        return self.control.value

    def set(self, value: Any) -> None:
        if _is_unset(value):
            value = UNSET
        elif not any(_same(value, v) for _, v in self._options):
            self._options.append((f"{_plain(value)} (not allowed)", value))
            with _Quiet(self):
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
        self.control = W.HTML(f"<code>{html.escape(_plain(value))}</code>")

    def get(self) -> Any:
        return self.value

    def set(self, value: Any) -> None:
        if not _is_unset(value) and value != self.value:
            # Keep what the caller gave, so validation can say it is wrong.
            self.value = value
            self.control.value = f"<code>{html.escape(_plain(value))}</code>"
            self._changed()


# --- lists ------------------------------------------------------------------------------


class ListElement(Element):
    """Rows with add/remove buttons; min/max item counts enforced on the buttons."""

    def __init__(self, spec: FieldSpec, ctx: BuildContext) -> None:
        super().__init__(spec, ctx)
        self.item = item_spec(spec)
        self.rows: list[Element] = []
        self._row_boxes: list[W.Widget] = []
        self.rows_box = W.VBox(layout=_layout("item"))
        self.add_button = W.Button(description="+ add", layout=_layout("small"))
        self.add_button.on_click(lambda _b: self.add_row())
        bounds = []
        if spec.min_len:
            bounds.append(f"at least {spec.min_len}")
        if spec.max_len is not None:
            bounds.append(f"at most {spec.max_len}")
        count = f"items: {', '.join(bounds)}" if bounds else ""
        self.count_label = W.HTML(f'<span style="{HELP_STYLE}">{count}</span>')
        self.control = W.VBox([self.rows_box, W.HBox([self.add_button, self.count_label])])
        self.control.layout = _layout("wide")
        with _Quiet(self):
            for _ in range(self.min_rows):
                self.add_row()
        self._update_buttons()

    @property
    def min_rows(self) -> int:
        return (self.spec.min_len or 0) if self.spec.required else 0

    def add_row(self, value: Any = UNSET) -> Element:
        row = build_element(self.item, self.ctx)
        if not _is_unset(value):
            row.set(value)
        row.observe(self._changed)
        remove = W.Button(icon="trash", tooltip="remove this item", layout=_layout("tick"))
        box = W.HBox([row.widget, remove], layout=_layout("row"))
        remove.on_click(lambda _b, r=row: self.remove_row(r))
        self.rows.append(row)
        self._row_boxes.append(box)
        self.rows_box.children = tuple(self._row_boxes)
        self._update_buttons()
        self._changed()
        return row

    def remove_row(self, row: Element) -> None:
        index = self.rows.index(row)
        if len(self.rows) <= self.min_rows:
            return
        del self.rows[index]
        del self._row_boxes[index]
        self.rows_box.children = tuple(self._row_boxes)
        self._update_buttons()
        self._changed()

    def _update_buttons(self) -> None:
        full = self.spec.max_len is not None and len(self.rows) >= self.spec.max_len
        self.add_button.disabled = full
        self.add_button.tooltip = "the list is full" if full else "add an item"
        at_min = len(self.rows) <= self.min_rows
        for box in self._row_boxes:
            box.children[1].disabled = at_min

    def _set_rows(self) -> list[tuple[int, Any]]:
        return [(i, v) for i, r in enumerate(self.rows) if (v := r.get()) is not UNSET]

    def get(self) -> Any:
        values = [v for _, v in self._set_rows()]
        return values or UNSET  # nothing in it: not sent ("Field required" when it must be)

    def set(self, value: Any) -> None:
        with _Quiet(self):
            self.rows.clear()
            self._row_boxes.clear()
            items = [] if _is_unset(value) else list(value) if _is_sequence(value) else [value]
            for item in items:
                self.add_row(item)
            while len(self.rows) < self.min_rows:
                self.add_row()
            self.rows_box.children = tuple(self._row_boxes)
            self._update_buttons()
        self._changed()

    def locate(self, loc: Loc) -> tuple[Element, Loc]:
        if loc and isinstance(loc[0], int):
            mapping = [i for i, _ in self._set_rows()]
            if 0 <= loc[0] < len(mapping):
                return self.rows[mapping[loc[0]]].locate(loc[1:])
        return self, loc

    def walk(self) -> Iterator[Element]:
        yield self
        for row in self.rows:
            yield from row.walk()


def _is_sequence(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))


# --- nested models -------------------------------------------------------------------------


class ModelElement(Element):
    """A nested model as a sub-form; an optional one is folded and built on first open."""

    def __init__(self, spec: FieldSpec, ctx: BuildContext, model: type[BaseModel]) -> None:
        super().__init__(spec, ctx)
        self.model = model
        self.children: dict[str, Element] = {}
        self.extra: dict[str, Any] = {}
        self.body = W.VBox(layout=_layout("box"))
        if spec.required or not spec.wire:
            self._build()
            self.control = self.body
        else:
            self.control = W.Accordion(children=[self.body], selected_index=None)
            self.control.set_title(0, f"{spec.wire} ({len(model.model_fields)} settings)")
            self.control.observe(self._opened, "selected_index")
            self.control.layout = _layout("wide")

    def _opened(self, change: Any) -> None:
        if change["new"] is not None:
            self._build()

    def _build(self) -> None:
        if self.children or not self.model.model_fields:
            return
        prefix = f"{self.spec.path}." if self.spec.path else ""
        specs = field_specs(self.model, prefix)
        ordered = [s for s in specs if s.required] + [s for s in specs if not s.required]
        for child_spec in ordered:
            child = build_element(child_spec, self.ctx)
            child.observe(self._changed)
            self.children[child_spec.wire] = child
        self.body.children = tuple(c.widget for c in self.children.values())

    def child(self, name: str) -> Element | None:
        self._build()
        if name in self.children:
            return self.children[name]
        return next((c for c in self.children.values() if c.spec.name == name), None)

    def get(self) -> Any:
        values = {
            k: v for k, child in self.children.items() if (v := child.get()) is not UNSET
        } | self.extra
        return values or UNSET  # an untouched sub-form is not sent

    def set(self, value: Any) -> None:
        with _Quiet(self):
            if _is_unset(value):
                for child in self.children.values():
                    child.reset()
                self.extra = {}
            elif isinstance(value, BaseModel):
                self.set(value.model_dump(mode="json", by_alias=True, exclude_unset=True))
                return
            elif isinstance(value, Mapping):
                self._build()
                self.extra = {}
                for child in self.children.values():
                    child.reset()
                for key, item in value.items():
                    target = self.child(str(key))
                    if target is None:
                        self.extra[str(key)] = item
                    else:
                        target.set(item)
                if value and isinstance(self.control, W.Accordion):
                    self.control.selected_index = 0
            else:
                raise _shape_error(self.spec, value, "a dict of settings")
        self._changed()

    def locate(self, loc: Loc) -> tuple[Element, Loc]:
        if not loc:
            return self, loc
        head = str(loc[0])
        child = self.child(head)
        if child is not None:
            return child.locate(loc[1:])
        if len(loc) > 1 and self.child(str(loc[1])) is not None:
            # pydantic puts a union member's tag in the location: skip it.
            return self.locate(loc[1:])
        return self, loc

    def walk(self) -> Iterator[Element]:
        yield self
        for child in self.children.values():
            yield from child.walk()


def _shape_error(spec: FieldSpec, value: Any, expected: str) -> Exception:
    from ..errors import PayloadError

    loc = tuple(p for p in spec.path.replace("[]", "").split(".") if p)
    return PayloadError(
        [{"loc": loc, "msg": f"expected {expected}, got {type(value).__name__}: {value!r:.60}"}]
    )


class ModelUnionElement(Element):
    """A union of models (e.g. tagged content items): a variant choice and its sub-form."""

    def __init__(self, spec: FieldSpec, ctx: BuildContext, models: Sequence[type[BaseModel]]):
        super().__init__(spec, ctx)
        self.models = list(models)
        self.forms: dict[type[BaseModel], ModelElement] = {}
        self.choice = W.Dropdown(
            options=[(_variant_name(m), m) for m in self.models], layout=_layout("small")
        )
        self.body = W.VBox()
        self.control = W.VBox([self.choice, self.body], layout=_layout("wide"))
        self.choice.observe(self._switch, "value")
        self._switch()

    @property
    def current(self) -> ModelElement:
        model = self.choice.value
        if model not in self.forms:
            form = ModelElement(replace(self.spec, wire="", required=True), self.ctx, model)
            form.observe(self._changed)
            self.forms[model] = form
        return self.forms[model]

    def _switch(self, _change: Any = None) -> None:
        self.body.children = (self.current.widget,)
        self._changed()

    def get(self) -> Any:
        return self.current.get()

    def set(self, value: Any) -> None:
        if _is_unset(value):
            self.current.reset()
            return
        if isinstance(value, BaseModel) and type(value) in self.models:
            model: type[BaseModel] = type(value)
        elif isinstance(value, Mapping):
            model = _pick_variant(self.models, value)
        else:
            raise _shape_error(self.spec, value, "a dict")
        with _Quiet(self):
            self.choice.value = model
            self.body.children = (self.current.widget,)
            self.current.set(value)
        self._changed()

    def locate(self, loc: Loc) -> tuple[Element, Loc]:
        return self.current.locate(loc)

    def walk(self) -> Iterator[Element]:
        yield self
        yield from self.current.walk()


def _variant_name(model: type[BaseModel]) -> str:
    for name, info in model.model_fields.items():
        ann = strip_optional(info.annotation)[0]
        if typing.get_origin(ann) is Literal and len(typing.get_args(ann)) == 1:
            return f"{name} = {_plain(typing.get_args(ann)[0])}"
    return model.__name__


def _pick_variant(models: Sequence[type[BaseModel]], value: Mapping[str, Any]) -> type[BaseModel]:
    """The model whose single-valued Literal fields match ``value`` (a tag), else the
    first that validates, else the first."""
    for model in models:
        tags = {
            (info.alias or name): typing.get_args(ann)[0]
            for name, info in model.model_fields.items()
            if typing.get_origin(ann := strip_optional(info.annotation)[0]) is Literal
            and len(typing.get_args(ann)) == 1
        }
        if tags and all(value.get(k) == v for k, v in tags.items()):
            return model
    for model in models:
        try:
            model.model_validate(dict(value))
            return model
        except ValueError:
            continue
    return models[0]


# --- overrides: media, prompt builder -------------------------------------------------------


def prompt_builder_class() -> Any:
    """``genwidgets.imgm.builder.PromptBuilder``, or None while it is not available."""
    try:
        module = importlib.import_module("genwidgets.imgm.builder")
    except ImportError:
        return None
    return getattr(module, "PromptBuilder", None)


class PromptElement(Element):
    """An imgM prompt with ``--`` parameters: the PromptBuilder bound both ways
    (a Textarea with a character count when the builder is not available).

    The builder is a large widget: it is made when the field is first shown, and
    until then the value is kept as a string (folded optional prompts cost nothing).
    """

    def __init__(self, spec: FieldSpec, ctx: BuildContext) -> None:
        super().__init__(spec, ctx)
        self._text = ""
        self._control: W.Widget | None = None

    @property
    def control(self) -> W.Widget:
        if self._control is None:
            builder_class = prompt_builder_class()
            if builder_class is not None:
                control = builder_class()
            else:
                control = TextElement(self.spec, self.ctx, long=True).control
            control.value = self._text
            control.observe(self._typed, "value")
            self._control = control
        return self._control

    @property
    def builder(self) -> W.Widget | None:
        """The PromptBuilder, once the field has been shown (None before, or without it)."""
        control = self._control
        builder_class = prompt_builder_class()
        return control if builder_class and isinstance(control, builder_class) else None

    def _typed(self, change: Any) -> None:
        self._text = change["new"] or ""
        self._changed()

    def refresh_note(self) -> None:
        limit = f" / {self.spec.max_len}" if self.spec.max_len else ""
        self.extra_note = f"{len(self._text)}{limit} characters"
        super().refresh_note()

    def get(self) -> Any:
        return self._text or UNSET

    def set(self, value: Any) -> None:
        text = "" if _is_unset(value) else str(value)
        if self._control is not None:
            self._control.value = text  # notifies through _typed
        elif text != self._text:
            self._text = text
            self._changed()


_URL_RE = re.compile(r"^(https?://|asset://)", re.I)

ENCODING_HELP = {
    "data_url_lower": "public URL, asset://<id>, or a local file (sent as a data URL)",
    "data_url_mime": "public URL or a local file (sent as a data:<MIME>;base64 URL)",
    "raw_base64": "public URL or a local file (sent as raw base64, no data: prefix)",
    "url_only": "public http(s) URL only (the service fetches it)",
    "url_or_data": "URL or a local file (sent as a data URL)",
}


class MediaElement(Element):
    """A media input: a URL box and, unless the field takes URLs only, a FileUpload.

    An upload is encoded at once through :func:`genwidgets.media.encode_with` for this
    field's :class:`MediaSpec`, checked, previewed as a thumbnail, and the FileUpload
    is cleared: the encoded string stays in Python (``self.encoded``), never in a trait.
    """

    def __init__(self, spec: FieldSpec, ctx: BuildContext, media: MediaSpec) -> None:
        super().__init__(spec, ctx)
        self.media = media
        self.encoded: str | None = None
        self.file_info = ""
        self.check_problems: list[str] = []
        self.url = W.Text(
            placeholder=ENCODING_HELP.get(media.encoding, "URL"), layout=_layout("wide")
        )
        self.url.observe(self._typed, "value")
        parts: list[W.Widget] = [self.url]
        self.upload: W.FileUpload | None = None
        self.preview = W.Image(format="png", layout=W.Layout(width="64px", display="none"))
        self.status = W.HTML()
        if media.encoding != "url_only":
            accept = ",".join(f".{f}" for f in media.formats) or f"{media.media}/*"
            self.upload = W.FileUpload(accept=accept, multiple=False, description="file…")
            self.upload.layout = _layout("small")
            self.upload.observe(self._uploaded, "value")
            parts.append(self.upload)
        self.control = W.VBox(
            [W.HBox(parts, layout=_layout("wide")), W.HBox([self.preview, self.status])]
        )
        self.control.layout = _layout("wide")

    def _typed(self, _change: Any) -> None:
        if self.url.value:
            self._forget_file()
        self._changed()

    def _forget_file(self) -> None:
        self.encoded = None
        self.file_info = ""
        self.check_problems = []
        self.preview.layout.display = "none"
        self.preview.value = b""
        self.status.value = ""

    def _uploaded(self, change: Any) -> None:
        files = change["new"]
        if not files:
            return
        entry = files[0]
        data = bytes(entry["content"])
        name = str(entry.get("name", "upload"))
        # Drop the bytes from widget state at once; only the encoding is kept.
        self.upload.value = ()  # type: ignore[union-attr]
        self.load(data, name)

    def load(self, data: bytes, name: str = "upload") -> None:
        """Encode local bytes for this field (also what an upload does)."""
        with _Quiet(self):
            self.url.value = ""
        self._forget_file()
        encoded, problems, info = encode_media(data, name, self.media, self.ctx.endpoint)
        self.encoded = encoded
        self.check_problems = problems
        self.file_info = info
        self._show_preview(data)
        self._render_status()
        self._changed()

    def _show_preview(self, data: bytes) -> None:
        if self.media.media != "image":
            return
        thumb = _thumbnail(data)
        if thumb:
            self.preview.value = thumb
            self.preview.layout.display = None

    def _render_status(self) -> None:
        lines = []
        if self.file_info:
            lines.append(f'<span style="{HELP_STYLE}">{html.escape(self.file_info)}</span>')
        if self.check_problems:
            lines += [
                f'<div style="{ERROR_STYLE}">✗ {html.escape(p)}</div>' for p in self.check_problems
            ]
        elif self.encoded is not None:
            lines.append('<div style="color:#2e7d32">✓ passes the checks for this field</div>')
        self.status.value = "".join(lines)

    def get(self) -> Any:
        if self.url.value:
            return self.url.value
        return self.encoded if self.encoded is not None else UNSET

    def set(self, value: Any) -> None:
        with _Quiet(self):
            self._forget_file()
            if _is_unset(value):
                self.url.value = ""
            elif isinstance(value, (bytes, bytearray, memoryview)):
                self.url.value = ""
                self.load(bytes(value))
            elif isinstance(value, str) and (_URL_RE.match(value) or len(value) < 200):
                self.url.value = value
            else:  # inline data given by code: kept in Python only
                self.url.value = ""
                self.encoded = str(value)
                self.file_info = f"inline data ({len(self.encoded):,} characters)"
                self._render_status()
        self._changed()


def _thumbnail(data: bytes, size: int = 96) -> bytes:
    try:
        from PIL import Image

        with Image.open(io.BytesIO(data)) as img:
            img.thumbnail((size, size))
            out = io.BytesIO()
            img.convert("RGBA").save(out, format="PNG")
            return out.getvalue()
    except Exception:  # not an image Pillow can read: no preview
        return b""


def encode_media(
    data: bytes, name: str, spec: MediaSpec, endpoint: str | None = None
) -> tuple[str | None, list[str], str]:
    """Encode and check local bytes for ``spec``: (encoding or None, problems, description).

    :func:`genwidgets.media.encode_with` checks every limit of the spec before it
    encodes; a file that fails is not encoded, and its problems are listed.
    """
    import warnings

    from .. import media as gw_media
    from ..errors import PayloadError

    info = f"{name} ({_size(len(data))})"
    with contextlib.suppress(PayloadError, ValueError, OSError):  # encode_with says why
        info = f"{name}: {gw_media.inspect(data)}"
    encoded: str | None = None
    problems: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            encoded = gw_media.encode_with(data, spec, endpoint=endpoint)
        except PayloadError as exc:
            problems = [e["msg"] for e in exc.errors]
    notes = [str(w.message) for w in caught]
    if notes:
        info += " — " + "; ".join(notes)
    return encoded, list(dict.fromkeys(problems)), info


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n / 1e3:.0f} KB" if n >= 1e3 else f"{n} B"


# ---------------------------------------------------------------------------
# The dispatch
# ---------------------------------------------------------------------------

Factory = Callable[[FieldSpec, "BuildContext"], Element]

_OVERRIDES: dict[tuple[str, str], Factory] = {}


def register_field(endpoint: str, path: str, factory: Factory) -> None:
    """Use ``factory(spec, ctx)`` for the field at ``path`` of ``endpoint`` (or ``"*"``).
    Explicit registrations win over markers and type inference."""
    _OVERRIDES[(endpoint, path)] = factory


@dataclass
class BuildContext:
    """What building an element may need beyond its own spec."""

    endpoint: str
    model: type[BaseModel] | None = None


def kind_of(spec: FieldSpec) -> str:
    """The dispatch key of an annotation."""
    ann = spec.annotation
    origin = typing.get_origin(ann)
    if ann is bool:
        return "bool"
    if ann is int:
        return "int"
    if ann is float:
        return "float"
    if ann is str:
        return "str"
    if origin is Literal or (isinstance(ann, type) and issubclass(ann, Enum)):
        return "literal"
    if origin in (list, tuple, set, frozenset, Sequence) or ann in (list, tuple):
        return "list"
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return "model"
    if _is_union(ann):
        members = [_unannotate(a) for a in typing.get_args(ann)]
        if all(typing.get_origin(a) is Literal for a in members):
            return "literal"
        if all(isinstance(a, type) and issubclass(a, BaseModel) for a in members):
            return "model_union"
        return "union"
    return "json"


def _construct_str(spec: FieldSpec, ctx: BuildContext) -> Element:
    return TextElement(spec, ctx)


def _construct_int(spec: FieldSpec, ctx: BuildContext) -> Element:
    if _bounded(spec):
        return NumberElement(spec, ctx, integer=True)
    return TextElement(spec, ctx, parse=_parse_int)


def _construct_float(spec: FieldSpec, ctx: BuildContext) -> Element:
    if _bounded(spec):
        return NumberElement(spec, ctx, integer=False)
    return TextElement(spec, ctx, parse=_parse_float)


def _bounded(spec: FieldSpec) -> bool:
    return (spec.ge is not None or spec.gt is not None) and (
        spec.le is not None or spec.lt is not None
    )


def _construct_bool(spec: FieldSpec, ctx: BuildContext) -> Element:
    return ChoiceElement(spec, ctx, [True, False])


def _construct_literal(spec: FieldSpec, ctx: BuildContext) -> Element:
    ann = spec.annotation
    if isinstance(ann, type) and issubclass(ann, Enum):
        choices: list[Any] = [m.value for m in ann]
    elif _is_union(ann):
        choices = [v for a in typing.get_args(ann) for v in typing.get_args(_unannotate(a))]
    else:
        choices = list(typing.get_args(ann))
    if spec.required and len(choices) == 1:
        return FixedElement(spec, ctx, choices[0])
    return ChoiceElement(spec, ctx, choices)


def _construct_list(spec: FieldSpec, ctx: BuildContext) -> Element:
    return ListElement(spec, ctx)


def _construct_model(spec: FieldSpec, ctx: BuildContext) -> Element:
    return ModelElement(spec, ctx, spec.annotation)


def _construct_model_union(spec: FieldSpec, ctx: BuildContext) -> Element:
    return ModelUnionElement(spec, ctx, [_unannotate(a) for a in typing.get_args(spec.annotation)])


def _construct_union(spec: FieldSpec, ctx: BuildContext) -> Element:
    members = tuple(_unannotate(a) for a in typing.get_args(spec.annotation))
    return TextElement(spec, ctx, parse=_union_parser(members), format=_plain)


def _construct_json(spec: FieldSpec, ctx: BuildContext) -> Element:
    """Anything else (``Any``, dicts): text, parsed as JSON when it is JSON."""
    return TextElement(spec, ctx, parse=_parse_json, format=_format_json)


_CONSTRUCTORS: dict[str, Factory] = {
    "str": _construct_str,
    "int": _construct_int,
    "float": _construct_float,
    "bool": _construct_bool,
    "literal": _construct_literal,
    "list": _construct_list,
    "model": _construct_model,
    "model_union": _construct_model_union,
    "union": _construct_union,
    "json": _construct_json,
}


def build_element(spec: FieldSpec, ctx: BuildContext) -> Element:
    """The element for ``spec``: explicit override, then marker, then type."""
    factory = _OVERRIDES.get((ctx.endpoint, spec.path)) or _OVERRIDES.get(("*", spec.path))
    if factory is not None:
        return factory(spec, ctx)
    kind = kind_of(spec)
    if spec.media is not None and kind in ("str", "union", "json"):
        return MediaElement(spec, ctx, spec.media)
    if spec.prompt and kind == "str":
        return PromptElement(spec, ctx)
    if kind == "str" and _looks_like_prompt(spec):
        return TextElement(spec, ctx, long=True)
    return _CONSTRUCTORS[kind](spec, ctx)


def _looks_like_prompt(spec: FieldSpec) -> bool:
    return "prompt" in spec.wire.lower() or spec.wire in ("text",)


# ---------------------------------------------------------------------------
# The vidA content builder
# ---------------------------------------------------------------------------

#: The items of a vidA content list, with the roles the spec lists for each.
CONTENT_KINDS: dict[str, tuple[str, ...]] = {
    "text": (),
    "image_url": ("first_frame", "last_frame", "reference_image"),
    "video_url": ("reference_video",),
    "audio_url": ("reference_audio",),
}
_KIND_LABEL = {"text": "text", "image_url": "image", "video_url": "video", "audio_url": "audio"}


def content_scenario(items: Sequence[Mapping[str, Any]]) -> str:
    """Name the scenario a vidA content list forms ("first frame", "reference images (3)")."""
    kinds = [str(i.get("type", "")) for i in items]
    images = [i for i in items if i.get("type") == "image_url"]
    roles = [i.get("role") for i in images]
    videos, audios = kinds.count("video_url"), kinds.count("audio_url")
    if not items:
        return "empty: add a text prompt or media"
    if not images:
        scenario = "text only" if not (videos or audios) else "text"
        if "text" not in kinds:
            scenario = "no text"
    elif len(images) == 1 and roles[0] in (None, "first_frame"):
        scenario = "first frame"
    elif len(images) == 2 and sorted(map(str, roles)) == ["first_frame", "last_frame"]:
        scenario = "first and last frame"
    elif all(r == "reference_image" for r in roles):
        scenario = f"reference images ({len(images)})"
    else:
        shown = ", ".join(str(r or "no role") for r in roles)
        scenario = f"images with mixed roles ({shown}): not a scenario the service accepts"
    extras = []
    if videos:
        extras.append(f"video ({videos})" if videos > 1 else "video")
    if audios:
        extras.append(f"audio ({audios})" if audios > 1 else "audio")
    return " + ".join([scenario, *extras])


class _ContentRow:
    """One vidA content item: its kind, its input, a role choice, errors."""

    def __init__(self, owner: VidAContentElement, kind: str) -> None:
        self.kind = kind
        self.owner = owner
        base = FieldSpec(
            name="", wire="", path=f"{owner.spec.path}[]", annotation=str, required=True
        )
        if kind == "text":
            self.input: Element = TextElement(
                replace(base, path=base.path + ".text"), owner.ctx, long=True
            )
        else:
            media = owner.media_for(kind)
            self.input = MediaElement(
                replace(base, path=f"{base.path}.{kind}.url"), owner.ctx, media
            )
        self.input.observe(owner._changed)
        roles = CONTENT_KINDS[kind]
        self.role: W.Dropdown | None = None
        parts: list[W.Widget] = [
            W.HTML(f"<b>{_KIND_LABEL[kind]}</b>", layout=W.Layout(width="56px"))
        ]
        parts.append(self.input.widget)
        if roles:
            self.role = W.Dropdown(
                options=[("role: (none)", None)] + [(r, r) for r in roles],
                value=None,
                layout=W.Layout(width="170px"),
            )
            self.role.observe(owner._changed, "value")
            parts.append(self.role)
        self.remove = W.Button(icon="trash", tooltip="remove this item", layout=_layout("tick"))
        self.remove.on_click(lambda _b: owner.remove(self))
        parts.append(self.remove)
        self.box = W.HBox(parts, layout=_layout("row"))

    def get(self) -> dict[str, Any] | None:
        value = self.input.get()
        if self.kind == "text":
            return None if value is UNSET else {"type": "text", "text": value}
        item: dict[str, Any] = {
            "type": self.kind,
            self.kind: {} if value is UNSET else {"url": value},
        }
        if self.role is not None and self.role.value is not None:
            item["role"] = self.role.value
        return item

    def set(self, item: Mapping[str, Any]) -> None:
        if self.kind == "text":
            self.input.set(item.get("text", UNSET))
            return
        inner = item.get(self.kind)
        self.input.set(inner.get("url", UNSET) if isinstance(inner, Mapping) else UNSET)
        if self.role is not None:
            role = item.get("role")
            if (
                role is not None
                and role not in self.role.options
                and all(role != v for _, v in self.role.options)
            ):
                self.role.options = [*self.role.options, (f"{role} (not allowed)", role)]
            self.role.value = role


class VidAContentElement(Element):
    """The vidA ``content`` list: add text/image/video/audio items, a role per media item,
    the scenario they form, and the rule violations validation reports."""

    def __init__(self, spec: FieldSpec, ctx: BuildContext) -> None:
        super().__init__(spec, ctx)
        self.rows: list[_ContentRow] = []
        self.rows_box = W.VBox(layout=_layout("wide"))
        self.scenario = W.HTML()
        buttons = []
        for kind, label in _KIND_LABEL.items():
            button = W.Button(description=f"+ {label}", layout=_layout("small"))
            button.on_click(lambda _b, k=kind: self.add(k))
            buttons.append(button)
        self.control = W.VBox(
            [self.scenario, self.rows_box, W.HBox(buttons)], layout=_layout("wide")
        )
        with _Quiet(self):
            self.add("text")
        self._update_scenario()

    def media_for(self, kind: str) -> MediaSpec:
        """The catalog's MediaSpec of an item kind's url. The spec shows no fields inside
        ``audio_url``, so the catalog marks none there and audio takes ``VIDA_AUDIO``."""
        if kind == "audio_url":
            return VIDA_AUDIO
        model = self.ctx.model or catalog_endpoint(self.ctx.endpoint).model
        path = (*self.spec.path.replace("[]", "").split("."), kind, "url")
        found = media_spec_at(model, path)
        if found is None:
            raise LookupError(f"the catalog marks no MediaSpec on {self.ctx.endpoint} {path}")
        return found

    def add(self, kind: str, item: Mapping[str, Any] | None = None) -> _ContentRow:
        if kind not in CONTENT_KINDS:
            allowed = ", ".join(CONTENT_KINDS)
            raise _shape_error(self.spec, kind, f"a content item type ({allowed})")
        row = _ContentRow(self, kind)
        if item is not None:
            with _Quiet(self):
                row.set(item)
        self.rows.append(row)
        self.rows_box.children = tuple(r.box for r in self.rows)
        self._changed()
        return row

    def remove(self, row: _ContentRow) -> None:
        self.rows.remove(row)
        self.rows_box.children = tuple(r.box for r in self.rows)
        self._changed()

    def _changed(self, _change: Any = None) -> None:
        if not self._quiet:
            self._update_scenario()
        super()._changed()

    def _update_scenario(self) -> None:
        items = [i for i in (r.get() for r in self.rows) if i is not None]
        text = html.escape(content_scenario(items))
        self.scenario.value = f"<span>Scenario: <b>{text}</b></span>"

    def _set_rows(self) -> list[tuple[int, dict[str, Any]]]:
        return [(i, v) for i, r in enumerate(self.rows) if (v := r.get()) is not None]

    def get(self) -> Any:
        values = [v for _, v in self._set_rows()]
        return values or UNSET

    def set(self, value: Any) -> None:
        with _Quiet(self):
            self.rows.clear()
            items = [] if _is_unset(value) else list(value) if _is_sequence(value) else [value]
            for item in items:
                if not isinstance(item, Mapping):
                    raise _shape_error(self.spec, item, "a content item dict with a 'type'")
                self.add(str(item.get("type", "")), item)
            self.rows_box.children = tuple(r.box for r in self.rows)
        self._changed()

    def locate(self, loc: Loc) -> tuple[Element, Loc]:
        if loc and isinstance(loc[0], int):
            mapping = [i for i, _ in self._set_rows()]
            if 0 <= loc[0] < len(mapping):
                row = self.rows[mapping[loc[0]]]
                # the tag, the object name and "url"/"text" are what the row shows
                implied = {row.kind, "url", "text", "role"}
                return row.input, tuple(p for p in loc[1:] if p not in implied)
        return self, loc

    def walk(self) -> Iterator[Element]:
        yield self
        for row in self.rows:
            yield row.input


for _endpoint in ("vidA-2-0", "vidA-2-0-fast"):
    register_field(_endpoint, "content", VidAContentElement)
