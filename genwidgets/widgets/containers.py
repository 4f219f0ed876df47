"""Container elements: lists with add/remove rows, nested models as sub-forms, and
unions of models (a variant choice and its sub-form).

A container builds its children with the ``build`` function it is given (the dispatch
passes :func:`~genwidgets.widgets.dispatch.build_element`), so this module needs nothing
above it. Unset rows and untouched sub-forms: docs/decisions.md#form-fields.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import ipywidgets as W
from pydantic import BaseModel

from ..catalog import fields_of
from ..catalog.introspect import single_literal
from ..errors import PayloadError
from . import markup
from ._style import HELP_STYLE, layout
from .elements import (
    BuildContext,
    Builder,
    Element,
    Loc,
    at_position,
    field_loc,
    is_sequence,
    is_unset,
    shape_error,
)
from .field_spec import UNSET, FieldSpec, field_specs, item_spec, plain

__all__ = ["ListElement", "ModelElement", "ModelUnionElement", "RowsElement"]


class RowsElement(Element):
    """Rows of items, an unset one not sent (a list, the vidA content builder): an
    error's index counts the rows sent. A row answers ``get``, ``locate`` and ``walk``;
    on screen it is a line of ``rows_box`` ending in its trash button."""

    rows: list[Any]
    rows_box: W.VBox

    def __init__(self, spec: FieldSpec, ctx: BuildContext) -> None:
        super().__init__(spec, ctx)
        self.rows = []
        self._row_boxes: list[W.HBox] = []

    @property
    def min_rows(self) -> int:
        """Rows the trash buttons leave (a required list keeps its minimum)."""
        return 0

    def _add_item(self, item: Any = UNSET) -> Any:
        """Add a row holding ``item`` (what :meth:`set` does for each item)."""
        raise NotImplementedError

    def _put(self, row: Any, parts: Sequence[W.Widget]) -> None:
        """Add ``row``, drawn as ``parts`` and a trash button that removes it."""
        remove = W.Button(icon="trash", tooltip="remove this item", layout=layout("remove"))
        remove.add_class("gw-remove")
        remove.on_click(lambda _b: self.remove_row(row))
        box = W.HBox([*parts, remove], layout=layout("row"))
        box.add_class("gw-list-row")
        self.rows.append(row)
        self._row_boxes.append(box)
        self._redraw()
        self._changed()

    def remove_row(self, row: Any) -> None:
        if len(self.rows) <= self.min_rows:
            return
        index = self.rows.index(row)
        del self.rows[index]
        del self._row_boxes[index]
        self._redraw()
        self._changed()

    def _redraw(self) -> None:
        self.rows_box.children = tuple(self._row_boxes)

    def set(self, value: Any) -> None:
        with self.quiet():
            self.rows.clear()
            self._row_boxes.clear()
            listed = is_sequence(value)
            items = [] if is_unset(value) else list(value) if listed else [value]
            for position, item in enumerate(items):
                try:
                    self._add_item(item)
                except PayloadError as error:  # said at the item's place (media.0)
                    at = position if listed else None  # or the field's, for one value
                    raise at_position(error, len(field_loc(self.spec)), at) from None
            while len(self.rows) < self.min_rows:
                self._add_item(UNSET)
            self._redraw()
        self._changed()

    def _set_rows(self) -> list[tuple[int, Any]]:
        return [(i, v) for i, r in enumerate(self.rows) if (v := r.get()) is not UNSET]

    def get(self) -> Any:
        values = [v for _, v in self._set_rows()]
        return values or UNSET  # nothing in it: not sent ("Field required" when it must be)

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


class ListElement(RowsElement):
    """Rows with add/remove buttons; min/max item counts enforced on the buttons."""

    rows: list[Element]

    def __init__(self, spec: FieldSpec, ctx: BuildContext, *, build: Builder) -> None:
        super().__init__(spec, ctx)
        self._build_element = build
        self.item = item_spec(spec)
        self.rows_box = W.VBox(layout=layout("item"))
        self.add_button = W.Button(description="+ add", layout=layout("small"))
        self.add_button.on_click(lambda _b: self.add_row())
        bounds = []
        if spec.min_len:
            bounds.append(f"at least {spec.min_len}")
        if spec.max_len is not None:
            bounds.append(f"at most {spec.max_len}")
        count = f"items: {', '.join(bounds)}" if bounds else ""
        self.count_label = W.HTML(markup.span(count, HELP_STYLE))
        self.control = W.VBox([self.rows_box, W.HBox([self.add_button, self.count_label])])
        self.control.layout = layout("wide")
        with self.quiet():
            for _ in range(self.min_rows):
                self.add_row()
        self._redraw()

    @property
    def min_rows(self) -> int:
        return (self.spec.min_len or 0) if self.spec.required else 0

    def add_row(self, item: Any = UNSET) -> Element:
        row = self._build_element(self.item, self.ctx)
        if not is_unset(item):
            row.set(item)
        row.observe(self._changed)
        # the row takes what the button leaves: the button is never pushed out of view
        self._put(row, [W.Box([row.widget], layout=layout("grow"))])
        return row

    _add_item = add_row

    def _redraw(self) -> None:
        super()._redraw()
        full = self.spec.max_len is not None and len(self.rows) >= self.spec.max_len
        self.add_button.disabled = full
        self.add_button.tooltip = "the list is full" if full else "add an item"
        at_min = len(self.rows) <= self.min_rows
        for box in self._row_boxes:
            box.children[-1].disabled = at_min


# --- nested models -------------------------------------------------------------------------


class ModelElement(Element):
    """A nested model as a sub-form; an optional one is folded and built on first open."""

    def __init__(
        self,
        spec: FieldSpec,
        ctx: BuildContext,
        model: type[BaseModel],
        *,
        build: Builder,
        lay_out: bool = True,
    ) -> None:
        super().__init__(spec, ctx)
        self._build_element = build
        self.model = model
        #: False for a form's root: the form lays its fields out itself
        self._lay_out = lay_out
        self.children: dict[str, Element] = {}
        self.extra: dict[str, Any] = {}
        self.body = W.VBox(layout=layout("box"))
        if spec.required or not spec.wire:
            self._build()
            self.control = self.body
        else:
            self.control = W.Accordion(children=[self.body], selected_index=None)
            self.control.set_title(0, f"{spec.wire} ({len(fields_of(model))} settings)")
            self.control.observe(self._opened, "selected_index")
            self.control.layout = layout("wide")

    def _opened(self, change: Any) -> None:
        if change["new"] is not None:
            self._build()

    def _build(self) -> None:
        if self.children or not fields_of(self.model):
            return
        prefix = f"{self.spec.path}." if self.spec.path else ""
        specs = field_specs(self.model, prefix)
        ordered = [s for s in specs if s.required] + [s for s in specs if not s.required]
        for child_spec in ordered:
            child = self._build_element(child_spec, self.ctx)
            child.observe(self._changed)
            self.children[child_spec.wire] = child
        if self._lay_out:
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
        if isinstance(value, BaseModel):
            value = value.model_dump(mode="json", by_alias=True, exclude_unset=True)
        if not (is_unset(value) or isinstance(value, Mapping)):
            raise shape_error(self, value)
        with self.quiet():
            for child in self.children.values():
                child.reset()
            self.extra = {}
            if not is_unset(value):
                self.update(value)
        self._changed()

    def update(self, value: Mapping[str, Any]) -> None:
        """Set the fields ``value`` names (by wire or attribute name) and leave the
        others; a name no field has is kept and sent as is (``None`` drops it)."""
        with self.quiet():
            self._build()
            for key, item in value.items():
                target = self.child(str(key))
                if target is not None:
                    target.set(item)
                elif is_unset(item):
                    self.extra.pop(str(key), None)
                else:
                    self.extra[str(key)] = item
            if value and isinstance(self.control, W.Accordion):
                self.control.selected_index = 0
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


class ModelUnionElement(Element):
    """A union of models (e.g. tagged content items): a variant choice and its sub-form."""

    def __init__(
        self,
        spec: FieldSpec,
        ctx: BuildContext,
        models: Sequence[type[BaseModel]],
        *,
        build: Builder,
    ) -> None:
        super().__init__(spec, ctx)
        self._build_element = build
        self.models = list(models)
        self.forms: dict[type[BaseModel], ModelElement] = {}
        self.choice = W.Dropdown(
            options=[(_variant_name(m), m) for m in self.models], layout=layout("small")
        )
        self.body = W.VBox()
        self.control = W.VBox([self.choice, self.body], layout=layout("wide"))
        self.choice.observe(self._switch, "value")
        self._switch()

    @property
    def current(self) -> ModelElement:
        model = self.choice.value
        if model not in self.forms:
            form = ModelElement(
                replace(self.spec, wire="", required=True),
                self.ctx,
                model,
                build=self._build_element,
            )
            form.observe(self._changed)
            self.forms[model] = form
        return self.forms[model]

    def _switch(self, _change: Any = None) -> None:
        self.body.children = (self.current.widget,)
        self._changed()

    def get(self) -> Any:
        return self.current.get()

    def set(self, value: Any) -> None:
        if is_unset(value):
            self.current.reset()
            return
        if isinstance(value, BaseModel) and type(value) in self.models:
            model: type[BaseModel] = type(value)
        elif isinstance(value, Mapping):
            model = _pick_variant(self.models, value)
        else:
            raise shape_error(self, value)
        with self.quiet():
            self.choice.value = model  # _switch shows its sub-form
            self.current.set(value)
        self._changed()

    def locate(self, loc: Loc) -> tuple[Element, Loc]:
        return self.current.locate(loc)

    def walk(self) -> Iterator[Element]:
        yield self
        yield from self.current.walk()


def _variant_name(model: type[BaseModel]) -> str:
    """A variant's name in the choice: its tag (``type = url``), else the class name."""
    for field in fields_of(model):
        tagged, value = single_literal(field.info.annotation)
        if tagged:
            return f"{field.name} = {plain(value)}"
    return model.__name__


def _pick_variant(models: Sequence[type[BaseModel]], value: Mapping[str, Any]) -> type[BaseModel]:
    """The model whose single-valued Literal fields match ``value`` (a tag), else the
    first that validates, else the first."""
    for model in models:
        tags = {
            field.wire: tag[1]
            for field in fields_of(model)
            if (tag := single_literal(field.info.annotation))[0]
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
