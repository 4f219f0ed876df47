"""The imgM prompt field: a prompt string with ``--`` parameters, edited with the
:class:`~genwidgets.widgets.prompt_builder.PromptBuilder` bound both ways.

The builder is a large widget: it is made when the field is first shown, and until
then the value is kept as a string (folded optional prompts cost nothing).
"""

from __future__ import annotations

from typing import Any

import ipywidgets as W

from .elements import BuildContext, Element, is_unset, refuse_non_json
from .field_spec import UNSET, FieldSpec
from .prompt_builder import PromptBuilder

__all__ = ["PromptElement"]


class PromptElement(Element):
    """An imgM prompt field: the PromptBuilder, made on first show, bound both ways."""

    def __init__(self, spec: FieldSpec, ctx: BuildContext) -> None:
        super().__init__(spec, ctx)
        self._text = ""
        self._control: PromptBuilder | None = None

    @property
    def control(self) -> W.Widget:
        if self._control is None:
            control = PromptBuilder()
            control.value = self._text
            control.observe(self._typed, "value")
            self._control = control
        return self._control

    @property
    def builder(self) -> PromptBuilder | None:
        """The PromptBuilder, once the field has been shown (None before)."""
        return self._control

    def _typed(self, change: Any) -> None:
        self._text = change["new"] or ""
        self._changed()

    def refresh_note(self) -> None:
        self.extra_note = self.characters(self._text)
        super().refresh_note()

    def get(self) -> Any:
        return self._text or UNSET

    def set(self, value: Any) -> None:
        refuse_non_json(self.spec, value)  # str(b"kite") would send the text "b'kite'"
        text = "" if is_unset(value) else str(value)
        if self._control is not None:
            self._control.value = text  # notifies through _typed
        elif text != self._text:
            self._text = text
            self._changed()
