"""PromptBuilder: a two-way widget over an imgM prompt string.

A text area holds the prompt; grouped controls hold its ``--`` parameters. Editing a
control rewrites the string (through :meth:`Prompt.with_params`, so nothing else in it
moves); editing the string moves the controls. A ``_syncing`` flag stops each side from
echoing the other's change back. Unset controls, values a control cannot show and
errors: docs/decisions.md#prompt-builder.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets
import traitlets

from .._palette import PALETTE
from ..errors import PayloadError
from ..imgm import CONFIRM_ABOVE, MAX_PROMPTS, PARAMETERS, Prompt, format_value, say_count
from ..imgm.params import SPEEDS
from . import markup
from ._style import ERROR_STYLE, MUTED_STYLE, WARN_STYLE

__all__ = ["PromptBuilder"]

_ERROR_COLOR = PALETTE["error"]
_WARNING_COLOR = PALETTE["warn"]
_RATIOS = ("1:1", "16:9", "9:16", "4:3", "3:4", "3:2", "2:3", "21:9")

# The value a number control starts from when it is switched on (spec defaults
# where the table gives one, otherwise the low end of the range).
_DEFAULTS: dict[str, int | float] = {"stylize": 100, "sw": 100, "iw": 1, "stop": 100, "ow": 100}

_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("composition", ("ar", "tile")),
    ("style", ("stylize", "chaos", "weird", "style", "exp")),
    ("references", ("sref", "sw", "sv", "cref", "cw", "oref", "ow", "iw")),
    ("quality and speed", ("quality", "speed", "draft", "v")),
    ("seed, stop, repeat, no", ("seed", "stop", "repeat", "no")),
)

_WIDE = widgets.Layout(width="100%")
_LABEL = {"description_width": "7em"}


def _tooltip(key: str) -> str:
    param = PARAMETERS[key]
    return f"--{key}: {param.meaning}; {param.describe()}"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class _Control:
    """One parameter's input, its unset state and its inline note; ``inputs`` are the
    widgets it watches and enables (``box`` itself when none is named)."""

    def __init__(self, key: str, box: widgets.Widget, *inputs: widgets.ValueWidget) -> None:
        self.key = key
        self.keys: tuple[str, ...] = (key,)
        self.inputs = inputs or (box,)
        self.hint = ""
        self.note = widgets.HTML()
        self.box = widgets.VBox([box, self.note])

    def show(self, params: dict[str, Any]) -> None:
        """Display the prompt's value (or the unset state)."""
        raise NotImplementedError

    def changes(self) -> dict[str, Any]:
        """What the prompt should hold for this control (None removes)."""
        raise NotImplementedError

    def watch(self, callback: Callable[[], None]) -> None:
        for widget in self.inputs:
            widget.observe(lambda _change: callback(), "value")

    def enable(self, enabled: bool) -> None:
        for widget in self.inputs:
            widget.disabled = not enabled

    def _unshown(self, value: Any) -> None:
        self.hint = f"in the text: {format_value(self.key, value) or '(no value)'}"


class _Flag(_Control):
    def __init__(self, key: str) -> None:
        self.check = widgets.Checkbox(description=f"--{key}", indent=False, tooltip=_tooltip(key))
        super().__init__(key, self.check)

    def show(self, params: dict[str, Any]) -> None:
        self.hint = ""
        self.check.value = self.key in params

    def changes(self) -> dict[str, Any]:
        return {self.key: True if self.check.value else None}


class _Number(_Control):
    """A checkbox ("set") beside a slider or number box."""

    def __init__(self, key: str) -> None:
        param = PARAMETERS[key]
        self.toggle = widgets.Checkbox(
            description=f"--{key}", indent=False, tooltip=_tooltip(key), layout={"width": "7em"}
        )
        start = _DEFAULTS.get(key, param.low or 0)
        low, high = param.low, param.high
        self.input: widgets.ValueWidget
        if param.kind == "number":
            self.input = widgets.BoundedFloatText(value=start, min=low or 0, max=1e6, step=0.1)
        elif low is None or high is None:
            self.input = widgets.IntText(value=int(start))
        elif high - low > 10000:
            self.input = widgets.BoundedIntText(value=int(start), min=int(low), max=int(high))
        else:
            self.input = widgets.IntSlider(
                value=int(start), min=int(low), max=int(high), continuous_update=False
            )
        self.input.disabled = True
        super().__init__(key, widgets.HBox([self.toggle, self.input]), self.toggle, self.input)

    def show(self, params: dict[str, Any]) -> None:
        value = params.get(self.key)
        self.toggle.value = value is not None
        self.input.disabled = value is None
        self.hint = ""
        if value is None:
            return
        inside = _is_number(value) and getattr(self.input, "min", value) <= value
        inside = inside and value <= getattr(self.input, "max", value)
        if inside and (isinstance(value, int) or PARAMETERS[self.key].kind == "number"):
            self.input.value = value
        else:
            self._unshown(value)

    def changes(self) -> dict[str, Any]:
        return {self.key: self.input.value if self.toggle.value else None}

    def enable(self, enabled: bool) -> None:
        self.toggle.disabled = not enabled
        self.input.disabled = not (enabled and self.toggle.value)


class _Choice(_Control):
    def __init__(self, key: str, choices: tuple[Any, ...], label: str | None = None) -> None:
        self.dropdown = widgets.Dropdown(
            options=[("unset", None), *((str(c), c) for c in choices)],
            value=None,
            description=label or f"--{key}",
            style=_LABEL,
            tooltip=_tooltip(key) if key in PARAMETERS else "",
        )
        super().__init__(key, self.dropdown)

    def show(self, params: dict[str, Any]) -> None:
        value = params.get(self.key)
        self.hint = ""
        chosen = next((v for _, v in self.dropdown.options if v is not None and v == value), None)
        self.dropdown.value = chosen
        if value is not None and chosen is None:
            self._unshown(value)

    def changes(self) -> dict[str, Any]:
        return {self.key: self.dropdown.value}


class _Speed(_Choice):
    """relax / fast / turbo: three flags, at most one set, shown as one choice."""

    def __init__(self) -> None:
        super().__init__("speed", SPEEDS, label="speed")
        self.keys = ("speed", *SPEEDS)
        self.dropdown.tooltip = "--relax, --fast or --turbo: one at most"

    def show(self, params: dict[str, Any]) -> None:
        present = [s for s in SPEEDS if s in params]
        self.dropdown.value = present[0] if len(present) == 1 else None
        self.hint = (
            f"in the text: {' '.join('--' + s for s in present)}" if len(present) > 1 else ""
        )

    def changes(self) -> dict[str, Any]:
        return {s: True if s == self.dropdown.value else None for s in SPEEDS}


class _Text(_Control):
    def __init__(self, key: str, placeholder: str, options: tuple[str, ...] = ()) -> None:
        # a text box offering ``options`` (none: a plain text box)
        self.text = widgets.Combobox(
            options=options,
            ensure_option=False,
            description=f"--{key}",
            placeholder=placeholder,
            continuous_update=False,
            style=_LABEL,
            layout=_WIDE,
            tooltip=_tooltip(key),
        )
        super().__init__(key, self.text)

    def show(self, params: dict[str, Any]) -> None:
        self.hint = ""
        value = params.get(self.key)
        self.text.value = "" if value is None else format_value(self.key, value)

    def changes(self) -> dict[str, Any]:
        return {self.key: self.text.value.strip() or None}


def _make_control(key: str) -> _Control:
    if key == "speed":
        return _Speed()
    param = PARAMETERS[key]
    if param.kind == "flag":
        return _Flag(key)
    if param.choices:
        return _Choice(key, param.choices)
    if param.kind in ("int", "number"):
        return _Number(key)
    placeholders = {
        "ar": "unset (e.g. 16:9)",
        "v": "unset (8.1)",
        "no": "unset (e.g. cars, trees)",
        "sref": "unset (URLs, style codes or random; url::2 for a weight)",
        "cref": "unset (image URL)",
        "oref": "unset (one image URL)",
    }
    return _Text(key, placeholders[key], _RATIOS if key == "ar" else ())


class PromptBuilder(widgets.VBox):
    """Edit an imgM prompt as text or with controls; ``.value`` is the prompt string."""

    value = traitlets.Unicode("", help="the prompt string (observe it to bind a form)")

    def __init__(self, value: str = "", **kwargs: Any) -> None:
        self._syncing = False
        self._prompt: Prompt | None = None
        self._parse_error: PayloadError | None = None
        self.text = widgets.Textarea(
            value=value,
            placeholder="[image URLs] text with ::weights --parameters",
            layout=widgets.Layout(width="100%", height="5em"),
            continuous_update=True,
        )
        self.billing = widgets.HTML()
        self.messages = widgets.HTML()
        self.controls: dict[str, _Control] = {
            key: _make_control(key) for _, keys in _GROUPS for key in keys
        }
        self.groups = widgets.Accordion(
            children=[widgets.VBox([self.controls[k].box for k in keys]) for _, keys in _GROUPS],
            titles=tuple(title for title, _ in _GROUPS),
        )
        super().__init__(children=[self.text, self.billing, self.messages, self.groups], **kwargs)
        self.text.observe(self._on_text, "value")
        for control in self.controls.values():
            control.watch(functools.partial(self._on_control, control))
        self.observe(self._on_value, "value")
        self._apply_text(value)

    @property
    def prompt(self) -> Prompt | None:
        """The parsed prompt, or None while the text does not parse."""
        return self._prompt

    # ------------------------------------------------------------- the two directions

    def _on_value(self, change: dict[str, Any]) -> None:
        if change["new"] != self.text.value:
            self.text.value = change["new"]  # goes on through _on_text

    def _on_text(self, change: dict[str, Any]) -> None:
        if not self._syncing:
            self._apply_text(change["new"])

    def _apply_text(self, text: str) -> None:
        try:
            self._prompt, self._parse_error = Prompt.parse(text), None
        except PayloadError as error:
            self._prompt, self._parse_error = None, error
        self._show_controls()
        self.value = text
        self._refresh()

    def _on_control(self, control: _Control) -> None:
        if self._syncing or self._prompt is None:
            return
        try:
            updated = self._prompt.with_params(**control.changes())
        except PayloadError as error:
            self._refresh(extra_errors=error.errors)
            return
        self._prompt = updated
        self._syncing = True
        try:
            self.text.value = str(updated)
        finally:
            self._syncing = False
        self._show_controls()
        self.value = self.text.value
        self._refresh()

    def _show_controls(self) -> None:
        self._syncing = True
        try:
            params = self._prompt.params if self._prompt is not None else None
            for control in self.controls.values():
                if params is not None:
                    control.show(params)
                control.enable(params is not None)
        finally:
            self._syncing = False

    # ------------------------------------------------------------- messages and cost

    def _refresh(self, extra_errors: list[dict[str, Any]] | None = None) -> None:
        prompt = self._prompt
        errors = list(extra_errors or [])
        warnings: list[Any] = []
        if prompt is None:
            errors += self._parse_error.errors if self._parse_error else []
            self.billing.value = markup.join(
                [markup.bold("? billed jobs"), " (fix the errors below to count them)"]
            )
        else:
            errors += prompt.errors()
            warnings = prompt.warnings()
            self.billing.value = _billing_html(prompt)
        self.messages.value = markup.join(
            [
                markup.lines([e["msg"] for e in errors], ERROR_STYLE, "✖"),
                markup.lines([str(w) for w in warnings], WARN_STYLE, "⚠"),
            ]
        )
        for control in self.controls.values():
            mine = [e["msg"] for e in errors if _belongs(e["loc"], control)]
            soft = [str(w) for w in warnings if _belongs(w.loc, control)]
            control.note.value = markup.join(
                [
                    markup.lines([control.hint], MUTED_STYLE, "·") if control.hint else None,
                    markup.lines(mine, ERROR_STYLE, "✖"),
                    markup.lines(soft, WARN_STYLE, "⚠"),
                ]
            )


def _belongs(loc: tuple[Any, ...], control: _Control) -> bool:
    return len(loc) >= 2 and loc[0] == "params" and loc[1] in control.keys


def _billing_html(prompt: Prompt) -> markup.Html:
    """The billed-jobs line; above CONFIRM_ABOVE prompts, a large banner with the count."""
    line = markup.bold(_billing(prompt))
    count = prompt.count()
    if count <= CONFIRM_ABOVE:
        return line
    color = _ERROR_COLOR if count > MAX_PROMPTS else _WARNING_COLOR
    limit = (
        f"more than the {MAX_PROMPTS} one permutation prompt may make"
        if count > MAX_PROMPTS
        else "each one is billed"
    )
    return markup.prompt_count(f"{say_count(count)} prompts: {limit}", color, line)


def _billing(prompt: Prompt) -> str:
    count, jobs, repeats = prompt.count(), prompt.jobs(), prompt.repeats()
    repeat = str(repeats[0]) if len(set(repeats)) == 1 else "(varies)"
    return (
        f"{say_count(count)} prompt{'s' if count != 1 else ''} × repeat {repeat} = "
        f"{say_count(jobs)} billed job{'s' if jobs != 1 else ''}"
    )
