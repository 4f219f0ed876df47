"""The look's pieces in HTML: badges, status, lines of help and errors, cut lines, tables.

Everything else in :mod:`genwidgets.widgets.markup` is made of these; a live widget's
small HTML line (a form's reason, a field's note) is one of them too.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ..._html import Html, esc, join, tag
from .._style import (
    COLOURS,
    ERROR_STYLE,
    HELP_STYLE,
    MUTED_STYLE,
    OK_STYLE,
    PALETTE,
    WARN_STYLE,
    StatusLook,
    short,
)

__all__ = [
    "BILLED_BADGE",
    "CUT_STYLE",
    "LASTING_STYLE",
    "SIMULATED_BADGE",
    "billed",
    "bold",
    "code",
    "code_view",
    "coloured_lines",
    "cut_html",
    "div",
    "error_banner",
    "error_html",
    "error_lines",
    "failure",
    "field_label",
    "help_line",
    "lasting_box",
    "lines",
    "muted_line",
    "muted_span",
    "ok_line",
    "placeholder",
    "progress_bar_html",
    "prompt_count",
    "simulated_badge",
    "spaced",
    "span",
    "status_badge",
    "table_html",
    "warn_lines",
]

# --- the look's pieces ----------------------------------------------------------------

_BADGE_STYLE = (
    f"background:{PALETTE['badge_bg']};color:{PALETTE['badge_fg']};border-radius:4px;"
    "padding:0 6px;font-size:0.85em"
)
#: The one "simulated" badge: every widget drawn for the embedded simulator shows it.
SIMULATED_BADGE = tag(
    "span",
    {
        "class": "gw-simulated",
        "title": "answers come from the local simulator, not a real gateway",
        "style": _BADGE_STYLE,
    },
    "simulated",
)


def simulated_badge(on: bool) -> Html:
    """A space and the simulated badge, after the head of a view drawn for the simulator."""
    return join([" ", SIMULATED_BADGE]) if on else Html()


#: The billed badge beside a field that changes what a task costs.
BILLED_BADGE = tag(
    "span",
    {
        "class": "gw-billed",
        "title": "This field affects what the task bills",
        "style": _BADGE_STYLE,
    },
    "$",
)
#: Inside every lasting face: hide the output right before it when that output is
#: JupyterLab's widget renderer (a Lumino panel), whatever it shows: "Loading
#: widget...", "Error displaying widget: model not found" (reopened without widget
#: state), or a live face. A live face whose kernel lives shows itself again, with
#: ``!important``, and hides this face (``static/faces.js``). Nested ``:has()`` is not
#: allowed in CSS, so the rule cannot ask whether the panel has drawn anything.
LASTING_STYLE = Html(
    "<style>.jp-OutputArea-child:has(+ .jp-OutputArea-child .gw-lasting)"
    ":has(> .jp-OutputArea-output.lm-Panel){display:none}</style>"
)
#: One line cut with an ellipsis where its box ends (the full text goes in a tooltip).
CUT_STYLE = "white-space:nowrap;overflow:hidden;text-overflow:ellipsis;min-width:0"


def span(text: Any, style: str | None = None) -> Html:
    """``text`` in a ``<span>`` of ``style`` (one of ``_style``'s text kinds)."""
    return tag("span", {"style": style}, text)


def div(text: Any, style: str | None = None) -> Html:
    """``text`` as a line of its own, in ``style``."""
    return tag("div", {"style": style}, text)


def bold(text: Any) -> Html:
    return tag("b", None, text)


def code(text: Any) -> Html:
    return tag("code", None, text)


def lines(texts: Iterable[Any], style: str, mark: str = "") -> Html:
    """Each text a line in ``style``, after ``mark`` (``⚠``, ``✗``) when given."""
    return join(div(f"{mark} {t}" if mark else t, style) for t in texts)


def help_line(text: Any) -> Html:
    return div(text, HELP_STYLE)


def error_lines(texts: Iterable[Any], mark: str = "⚠") -> Html:
    return lines(texts, ERROR_STYLE, mark)


def warn_lines(texts: Iterable[Any], mark: str = "⚑") -> Html:
    return lines(texts, WARN_STYLE, mark)


def ok_line(text: Any) -> Html:
    return div(f"✓ {text}", OK_STYLE)


def coloured_lines(texts: Iterable[Any], colour: str, mark: str) -> Html:
    """The prompt builder's lines: each message after its mark, in its colour."""
    return lines(texts, f"color:{colour}", mark)


def status_badge(look: StatusLook) -> Html:
    """The coloured status word, with the wire name as a tooltip."""
    return tag(
        "span",
        {
            "class": f"gw-status gw-status-{look.category}",
            "title": look.raw if look.raw and look.raw != look.word else None,
            "style": f"color:{look.colour};font-weight:600",
        },
        look.word,
    )


def cut_html(inner: Any, title: str, *, cls: str = "", style: str = "") -> Html:
    """A one-line ``<div>`` that never widens its box: ``inner`` ends in "…" where the
    box ends, and ``title`` is its tooltip. Cards in a grid use it so a long URL
    cannot push into the next card."""
    return tag(
        "div", {"class": cls or None, "title": title, "style": f"{CUT_STYLE};{style}"}, inner
    )


def error_html(look: StatusLook) -> Html:
    """``error`` and ``error_type`` in red; empty when there is no error."""
    if not look.error and not look.error_type:
        return Html()
    kind = (
        tag("code", {"style": f"color:{COLOURS['failed']}"}, f"({look.error_type})")
        if look.error_type
        else None
    )
    return tag(
        "div",
        {"class": "gw-error", "style": f"color:{COLOURS['failed']};overflow-wrap:anywhere"},
        look.error or "",
        " " if kind else None,
        kind,
    )


def error_banner(error: str, kind: str) -> Html:
    """A result's failure line (``kind``: `` (type)`` or nothing)."""
    return tag(
        "div", {"class": "gw-error", "style": f"color:{COLOURS['failed']}"}, "failed: ", error, kind
    )


_SLIDE = Html("<style>@keyframes gw-slide{0%{margin-left:-30%}100%{margin-left:100%}}</style>")


def progress_bar_html(look: StatusLook) -> Html:
    """An indeterminate progress bar, drawn with a CSS animation.

    ipywidgets has no indeterminate progress mode, and animating an
    ``IntProgress`` would mean a widget message every few hundred milliseconds
    per view. A CSS animation moves in the browser alone: the kernel writes the
    bar only when the state changes (queued → running → done). Where styles
    are stripped (an untrusted saved notebook) it degrades to a static bar.
    """
    colour = look.colour
    bar = "height:6px;border-radius:3px;"
    if look.terminal:
        return tag("div", {"class": "gw-bar", "style": f"{bar}background:{colour};width:100%"})
    speed = "1.6s" if look.category == "running" else "3s"
    moving = tag(
        "div",
        {
            "style": f"height:100%;width:30%;background:{colour};border-radius:3px;"
            f"animation:gw-slide {speed} ease-in-out infinite"
        },
    )
    track = f"{bar}background:{PALETTE['track']};overflow:hidden;width:100%"
    return join(
        [_SLIDE, tag("div", {"class": "gw-bar gw-bar-indeterminate", "style": track}, moving)]
    )


def table_html(data: Any, *, depth: int = 0, max_depth: int = 6, max_items: int = 200) -> Html:
    """A readable table of JSON-like data; nested values nest tables, and anything
    deeper than ``max_depth`` is pretty-printed in a ``<pre>``."""
    cell = (
        f"border:1px solid {PALETTE['border']};padding:2px 6px;vertical-align:top;text-align:left"
    )
    table = {"class": "gw-table", "style": "border-collapse:collapse"}
    if isinstance(data, Mapping) and data and depth < max_depth:
        rows = []
        for i, (key, value) in enumerate(data.items()):
            if i >= max_items:
                more = tag("td", {"style": cell, "colspan": "2"}, f"… {len(data) - i} more")
                rows.append(tag("tr", None, more))
                break
            rows.append(
                tag(
                    "tr",
                    None,
                    tag("th", {"style": f"{cell};font-weight:600"}, key),
                    tag("td", {"style": cell}, table_html(value, depth=depth + 1)),
                )
            )
        return tag("table", table, *rows)
    if isinstance(data, list) and data and depth < max_depth:
        if all(not isinstance(v, (Mapping, list)) for v in data):
            count = f" … ({len(data)} items)" if len(data) > max_items else ""
            return join([", ".join(short(v, 200) for v in data[:max_items]), count])
        rows = [
            tag(
                "tr",
                None,
                tag("th", {"style": cell}, i),
                tag("td", {"style": cell}, table_html(v, depth=depth + 1)),
            )
            for i, v in enumerate(data[:max_items])
        ]
        return tag("table", table, *rows)
    if isinstance(data, (Mapping, list)):
        text = json.dumps(data, indent=2, ensure_ascii=False, default=str)
        return tag("pre", {"style": "margin:0"}, text)
    if data is None:
        return tag("span", {"style": f"color:{PALETTE['muted']}"}, "null")
    if isinstance(data, str) and ("\n" in data or len(data) > 120):
        return tag("pre", {"style": "margin:0;white-space:pre-wrap"}, data)
    return esc(data if isinstance(data, str) else json.dumps(data, default=str))


def placeholder(note: str) -> Html:
    """What a task was doing when last seen, in place of its outputs."""
    return tag("div", {"class": "gw-placeholder", "style": MUTED_STYLE}, note)


def muted_line(text: str) -> Html:
    return div(text, MUTED_STYLE)


def muted_span(text: str) -> Html:
    return span(text, MUTED_STYLE)


def spaced(faces: Iterable[str]) -> Html:
    """Lasting faces (as their builders wrote them) one under another."""
    return join(tag("div", {"style": "margin:4px 0"}, Html(face)) for face in faces)


def lasting_box(face_id: str, inner: str) -> Html:
    """A lasting face as display data: ``inner`` (as its builder wrote it here) and the
    rule that hides the live face's renderer before it."""
    return tag(
        "div", {"class": "gw-lasting", "data-gw-lasting": face_id}, LASTING_STYLE, Html(inner)
    )


def code_view(text: str) -> Html:
    """A payload's JSON or code, selectable."""
    style = "white-space:pre-wrap;user-select:text;margin:0;font-size:0.85em"
    return tag("pre", {"style": style}, text)


def billed(text: str) -> Html:
    return join([BILLED_BADGE, " ", text])


def failure(text: str, *, cls: str | None = "gw-error", element: str = "div") -> Html:
    """A red line (not created, nothing sent)."""
    return tag(element, {"class": cls, "style": f"color:{COLOURS['failed']}"}, text)


# --- fields (elements.py, media_input.py, vida_content.py, the prompt builder) -----------


def field_label(label: str, *, required: bool, billed: bool) -> Html:
    """A field's name (bold when required), a red star when required, the billed badge."""
    star = (
        tag("span", {"style": f"color:{PALETTE['error']}", "title": "required"}, "*")
        if required
        else None
    )
    return join(
        [span(label, f"font-weight:{'bold' if required else 'normal'}"),
         " " if star else None, star, " " if billed else None,
         BILLED_BADGE if billed else None]
    )  # fmt: skip


def prompt_count(count: str, colour: str, line: Html) -> Html:
    """The prompt builder's banner above its confirmation limit, then its billed line."""
    style = (
        f"font-size:1.4em;font-weight:bold;color:{colour};border:2px solid {colour};"
        "padding:4px 8px;margin:4px 0"
    )
    return join([tag("div", {"class": "gw-prompt-count", "style": style}, count), line])
