"""The vidA content builder: the ``content`` list of ``vidA-2-0`` and ``vidA-2-0-fast``.

Add text, image, video and audio items, give each media item a role, and read the
scenario they form. The roles each item type may carry and the rule that decides
whether the images form an accepted scenario are the catalog's own
(:data:`genwidgets.catalog.vida.ROLES_BY_TYPE`,
:func:`genwidgets.catalog.vida.image_scenario_problem`); this module only names the
scenario for people. Rule violations found by validation show beside the builder.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import ipywidgets as W

from ..catalog import MediaSpec, media_spec_at
from ..catalog.vida import ROLES_BY_TYPE, VIDA_AUDIO, image_scenario_problem
from . import markup
from ._style import layout
from .containers import RowsElement
from .elements import (
    BuildContext,
    Element,
    Loc,
    TextElement,
    is_unset,
    shape_error,
)
from .field_spec import UNSET, FieldSpec
from .media_input import MediaElement

__all__ = ["VidAContentElement", "content_scenario"]

#: What each item type is called on its row and its "+" button.
_KIND_LABEL = {"text": "text", "image_url": "image", "video_url": "video", "audio_url": "audio"}
_IMAGE_ROLES = ROLES_BY_TYPE["image_url"]


def content_scenario(items: Sequence[Mapping[str, Any]]) -> str:
    """Name the scenario a vidA content list forms ("first frame", "reference images (3)")."""
    kinds = [str(i.get("type", "")) for i in items]
    images = [i for i in items if i.get("type") == "image_url"]
    roles = [i.get("role") for i in images]
    videos, audios = kinds.count("video_url"), kinds.count("audio_url")
    if not items:
        return "empty: add a text prompt or media"
    unknown = [r for r in roles if r is not None and r not in _IMAGE_ROLES]
    if not images:
        scenario = "text only" if not (videos or audios) else "text"
        if "text" not in kinds:
            scenario = "no text"
    elif unknown or image_scenario_problem(roles) is not None:
        shown = ", ".join(str(r or "no role") for r in roles)
        what = "mixed roles" if len(set(roles)) > 1 else "roles"
        scenario = f"images with {what} ({shown}): not a scenario the service accepts"
    elif "reference_image" in roles:
        scenario = f"reference images ({len(images)})"
    elif len(images) == 1:
        scenario = "first frame"
    else:
        scenario = "first and last frame"
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
        self.input.observe(owner._changed)  # noqa: SLF001 - a row of the element, in its module, tells it of a change
        roles = ROLES_BY_TYPE[kind]
        self.role: W.Dropdown | None = None
        #: what the row shows, before its trash button
        self.parts: list[W.Widget] = [
            W.HTML(
                markup.bold(_KIND_LABEL.get(kind, kind)),
                layout=W.Layout(width="56px", flex="0 0 auto"),
            ),
            W.Box([self.input.widget], layout=layout("grow")),
        ]
        if roles:
            self.role = W.Dropdown(
                options=[("role: (none)", None)] + [(r, r) for r in roles],
                value=None,
                layout=W.Layout(width="170px", flex="0 0 auto"),
            )
            self.role.observe(owner._changed, "value")  # noqa: SLF001 - a row of the element, in its module, tells it of a change
            self.parts.append(self.role)

    def get(self) -> Any:
        """The item, or :data:`UNSET` for an empty text row (not sent)."""
        value = self.input.get()
        if self.kind == "text":
            return UNSET if value is UNSET else {"type": "text", "text": value}
        item: dict[str, Any] = {
            "type": self.kind,
            self.kind: {} if value is UNSET else {"url": value},
        }
        if self.role is not None and self.role.value is not None:
            item["role"] = self.role.value
        return item

    def locate(self, loc: Loc) -> tuple[Element, Loc]:
        # the tag, the object name and "url"/"text" are what the row shows
        implied = {self.kind, "url", "text", "role"}
        return self.input, tuple(p for p in loc if p not in implied)

    def walk(self) -> Iterator[Element]:
        yield self.input

    def set(self, item: Mapping[str, Any]) -> None:
        if self.kind == "text":
            self.input.set(item.get("text", UNSET))
            return
        inner = item.get(self.kind)
        if not (is_unset(inner) or isinstance(inner, Mapping)):
            # said at the item's place, the row's before it is put (RowsElement.set)
            raise shape_error(self.owner, inner, len(self.owner.rows), self.kind)
        self.input.set(inner.get("url", UNSET) if isinstance(inner, Mapping) else UNSET)
        if self.role is not None:
            role = item.get("role")
            if role is not None and all(role != v for _, v in self.role.options):
                self.role.options = [*self.role.options, (f"{role} (not allowed)", role)]
            self.role.value = role


class VidAContentElement(RowsElement):
    """The vidA ``content`` list: add text/image/video/audio items, a role per media item,
    the scenario they form, and the rule violations validation reports."""

    rows: list[_ContentRow]

    def __init__(self, spec: FieldSpec, ctx: BuildContext) -> None:
        super().__init__(spec, ctx)
        self.rows_box = W.VBox(layout=layout("wide"))
        self.scenario = W.HTML()
        buttons = []
        for kind in ROLES_BY_TYPE:
            label = _KIND_LABEL.get(kind, kind)
            button = W.Button(description=f"+ {label}", layout=layout("small"))
            button.on_click(lambda _b, k=kind: self.add(k))
            buttons.append(button)
        self.control = W.VBox(
            [self.scenario, self.rows_box, W.HBox(buttons)], layout=layout("wide")
        )
        with self.quiet():
            self.add("text")
        self._update_scenario()

    def media_for(self, kind: str) -> MediaSpec:
        """The catalog's MediaSpec of an item kind's url. The spec shows no fields inside
        ``audio_url``, so the catalog marks none there and audio takes ``VIDA_AUDIO``."""
        if kind == "audio_url":
            return VIDA_AUDIO
        path = (*self.spec.path.replace("[]", "").split("."), kind, "url")
        found = media_spec_at(self.ctx.payload_model, path)
        if found is None:
            raise LookupError(f"the catalog marks no MediaSpec on {self.ctx.endpoint} {path}")
        return found

    def add(self, kind: str, item: Mapping[str, Any] | None = None) -> _ContentRow:
        if kind not in ROLES_BY_TYPE:
            raise shape_error(self, kind, len(self.rows), "type")
        row = _ContentRow(self, kind)
        if item is not None:
            with self.quiet():
                row.set(item)
        self._put(row, row.parts)
        return row

    def _add_item(self, item: Any = UNSET) -> _ContentRow:
        if not isinstance(item, Mapping):
            raise shape_error(self, item, len(self.rows))
        return self.add(str(item.get("type", "")), item)

    def _changed(self, _change: Any = None) -> None:
        if not self._quiet:
            self._update_scenario()
        super()._changed()

    def _update_scenario(self) -> None:
        items = [i for _, i in self._set_rows()]
        scenario = markup.bold(content_scenario(items))
        self.scenario.value = markup.span(markup.join(["Scenario: ", scenario]))
