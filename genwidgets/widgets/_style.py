"""The widgets' look: text styles, badges, shared layouts, the status look and formatters.

Colours come from the base layer's palette (``genwidgets/_palette.py``) and HTML
safety from ``genwidgets/_html.py``; both are re-exported here, so widgets import
their look from one module and the lab's exports use the same rules. Status words
and their colours: docs/decisions.md#status-look.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._html import SAFE_DATA_MIME, UrlKind, esc, safe_mime, safe_url, url_kind
from .._palette import COLOURS, PALETTE, Category
from ..protocol.records import FAILURE_STATUSES, Result, Status, is_terminal

if TYPE_CHECKING:
    import ipywidgets

__all__ = [  # the look, and what it re-exports from the base layer
    "BILLED_BADGE",
    "COLOURS",
    "CUT_STYLE",
    "ERROR_STYLE",
    "HELP_STYLE",
    "KIND_ICONS",
    "MUTED_STYLE",
    "OK_STYLE",
    "PALETTE",
    "SAFE_DATA_MIME",
    "SIMULATED_BADGE",
    "WARN_STYLE",
    "Category",
    "StatusLook",
    "UrlKind",
    "cut_html",
    "error_html",
    "esc",
    "format_elapsed",
    "layout",
    "look_of",
    "progress_bar_html",
    "safe_mime",
    "safe_url",
    "short",
    "status_badge",
    "table_html",
    "url_kind",
]

#: Inline styles of the text kinds forms and fields write.
HELP_STYLE = f"color:{PALETTE['muted']};font-size:0.85em"
ERROR_STYLE = f"color:{PALETTE['error']}"
WARN_STYLE = f"color:{PALETTE['warn']}"
OK_STYLE = f"color:{PALETTE['ok']}"
MUTED_STYLE = f"color:{PALETTE['muted']}"
_BADGE_STYLE = (
    f"background:{PALETTE['badge_bg']};color:{PALETTE['badge_fg']};border-radius:4px;"
    "padding:0 6px;font-size:0.85em"
)

#: Icons for outputs (and cards) with no thumbnail, by Output.kind / catalog kind.
KIND_ICONS: dict[str, str] = {
    "image": "🖼️",
    "video": "🎬",
    "audio": "🔊",
    "speech": "🔊",
    "json": "🧾",
    "asset": "🧾",
    "face": "🙂",
    "subject": "👤",
    "text": "📄",
    "binary": "📦",
}


# --- status -------------------------------------------------------------------


@dataclass(frozen=True)
class StatusLook:
    """What a status looks like: the word shown, its category and colour."""

    word: str
    category: Category
    raw: str
    terminal: bool
    error: str | None = None
    error_type: str | None = None

    @property
    def colour(self) -> str:
        return COLOURS[self.category]

    @property
    def cancelled(self) -> bool:
        return self.category == "cancelled"


def _error_text(error: Any) -> str | None:
    if error is None or error == "" or error is False:
        return None
    if isinstance(error, str):
        return error
    try:
        return json.dumps(error, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(error)


def look_of(status: Status | None, result: Result | None = None) -> StatusLook:
    """The look of a task from its latest status and (once terminal) its result."""
    if result is not None and result.done:
        error = _error_text(result.error)
        error_type = result.error_type
        if result.ok:
            return StatusLook("done", "done", result.status, True)
        return _ended_badly(result.status, error, error_type)
    if status is None:
        return StatusLook("submitted", "queued", "", False)
    raw = status.status
    upper = raw.upper()
    if is_terminal(raw):
        # Terminal by status but no result yet: the result is being fetched.
        error = _error_text(status.raw.get("error"))
        error_type = _str(status.raw.get("error_type"))
        if upper in FAILURE_STATUSES or error:
            return _ended_badly(raw, error, error_type)
        return StatusLook("done", "done", raw, True)
    if upper == "IN_QUEUE":
        return StatusLook("queued", "queued", raw, False)
    if upper == "IN_PROGRESS":
        return StatusLook("running", "running", raw, False)
    return StatusLook(raw, "running", raw, False)  # unknown names shown verbatim


def _ended_badly(raw: str, error: str | None, error_type: str | None) -> StatusLook:
    """A terminal task that did not succeed: cancelled (grey, no error line) or failed."""
    upper = raw.upper()
    if (error_type or "").lower() == "cancelled" or upper in {"CANCELLED", "CANCELED"}:
        return StatusLook("cancelled", "cancelled", raw, True)
    return StatusLook("failed", "failed", raw, True, error or upper.lower(), error_type)


def _str(value: Any) -> str | None:
    return None if value is None else str(value)


def status_badge(look: StatusLook) -> str:
    """The coloured status word as HTML (escaped), with the wire name as a tooltip."""
    title = f' title="{esc(look.raw)}"' if look.raw and look.raw != look.word else ""
    return (
        f'<span class="gw-status gw-status-{look.category}"{title} '
        f'style="color:{look.colour};font-weight:600">{esc(look.word)}</span>'
    )


#: One line cut with an ellipsis where its box ends (the full text goes in a tooltip).
CUT_STYLE = "white-space:nowrap;overflow:hidden;text-overflow:ellipsis;min-width:0"


def cut_html(inner: str, title: str, *, cls: str = "", style: str = "") -> str:
    """A one-line ``<div>`` that never widens its box: ``inner`` (HTML, already escaped)
    ends in "…" where the box ends, and ``title`` (plain text, escaped here) is its
    tooltip. Cards in a grid use it so a long URL cannot push into the next card."""
    klass = f' class="{esc(cls)}"' if cls else ""
    return f'<div{klass} title="{esc(title)}" style="{CUT_STYLE};{style}">{inner}</div>'


def error_html(look: StatusLook) -> str:
    """``error`` and ``error_type`` in red, escaped; empty when there is no error."""
    if not look.error and not look.error_type:
        return ""
    kind = (
        f' <code style="color:{COLOURS["failed"]}">({esc(look.error_type)})</code>'
        if look.error_type
        else ""
    )
    return (
        f'<div class="gw-error" style="color:{COLOURS["failed"]};overflow-wrap:anywhere">'
        f"{esc(look.error or '')}{kind}</div>"
    )


#: The one "simulated" badge: every widget drawn for the embedded simulator shows it.
SIMULATED_BADGE = (
    '<span class="gw-simulated" title="answers come from the local simulator, not a real '
    f'gateway" style="{_BADGE_STYLE}">simulated</span>'
)

#: The billed badge beside a field that changes what a task costs.
BILLED_BADGE = (
    '<span class="gw-billed" title="This field affects what the task bills" '
    f'style="{_BADGE_STYLE}">$</span>'
)

_LAYOUTS: dict[str, dict[str, str]] = {
    "label": {"width": "190px", "min_width": "190px"},
    "wide": {"width": "auto", "flex": "1 1 auto"},
    "area": {"width": "auto", "flex": "1 1 auto", "height": "90px"},
    "row": {"width": "100%", "margin": "2px 0"},
    # indented by its margin, so "auto" (100% plus the margin would clip the right edge)
    "item": {"width": "auto", "margin": "0 0 0 12px"},
    # takes the room left in a row and may shrink below its content (never pushes siblings)
    "grow": {"width": "auto", "flex": "1 1 auto", "min_width": "0"},
    # keeps its width in a row that is too narrow (a list row's delete button, Submit)
    "fixed": {"flex": "0 0 auto"},
    "remove": {"width": "36px", "min_width": "36px", "flex": "0 0 auto"},
    # buttons, then a reason that goes on beside them, or below them when it is long
    "actions": {"width": "100%", "flex_flow": "row wrap", "align_items": "center"},
    "reason": {"width": "auto", "flex": "1 1 auto", "min_width": "0"},
    "box": {"width": "100%", "border": f"1px solid {PALETTE['border']}", "padding": "4px"},
    "small": {"width": "auto"},
    "tick": {"width": "28px"},
    "number": {"width": "160px"},
    "note": {"width": "auto", "margin": "0 0 0 194px"},
    "item_note": {"width": "auto", "margin": "0"},  # a list item has no label to clear
}


@functools.cache
def layout(name: str) -> ipywidgets.Layout:
    """A shared ``Layout`` by name (see ``_LAYOUTS``): one object serves every widget
    that uses it, so each field costs less to build and to save."""
    import ipywidgets  # noqa: PLC0415 - only widgets ask for layouts; the safety rules above need none

    return ipywidgets.Layout(**_LAYOUTS[name])


def format_elapsed(seconds: float | None) -> str:
    """``4.2s``, ``1m 05s``, ``2h 03m``."""
    if seconds is None or seconds != seconds or seconds < 0:
        return ""
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def short(value: Any, limit: int = 80) -> str:
    """A one-line, length-capped text of a parameter value (not yet escaped).
    Data URLs and long strings are cut so a card never carries megabytes."""
    if isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
        except (TypeError, ValueError):
            text = str(value)
    text = " ".join(text.split())
    if text.startswith("data:") and "," in text:
        text = text.split(",", 1)[0] + ",…"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def progress_bar_html(look: StatusLook) -> str:
    """An indeterminate progress bar, drawn with a CSS animation.

    ipywidgets has no indeterminate progress mode, and animating an
    ``IntProgress`` would mean a widget message every few hundred milliseconds
    per view. A CSS animation moves in the browser alone: the kernel writes the
    bar only when the state changes (queued → running → done). Where styles
    are stripped (an untrusted saved notebook) it degrades to a static bar.
    """
    colour = look.colour
    if look.terminal:
        return (
            '<div class="gw-bar" style="height:6px;border-radius:3px;'
            f'background:{colour};width:100%"></div>'
        )
    speed = "1.6s" if look.category == "running" else "3s"
    return (
        "<style>@keyframes gw-slide{0%{margin-left:-30%}100%{margin-left:100%}}</style>"
        '<div class="gw-bar gw-bar-indeterminate" style="height:6px;border-radius:3px;'
        f'background:{PALETTE["track"]};overflow:hidden;width:100%">'
        f'<div style="height:100%;width:30%;background:{colour};border-radius:3px;'
        f'animation:gw-slide {speed} ease-in-out infinite"></div></div>'
    )


def table_html(data: Any, *, depth: int = 0, max_depth: int = 6, max_items: int = 200) -> str:
    """A readable, escaped HTML table of JSON-like data; nested values nest tables,
    and anything deeper than ``max_depth`` is pretty-printed in a ``<pre>``."""
    cell = (
        f"border:1px solid {PALETTE['border']};padding:2px 6px;vertical-align:top;text-align:left"
    )
    if isinstance(data, Mapping) and data and depth < max_depth:
        rows = []
        for i, (key, value) in enumerate(data.items()):
            if i >= max_items:
                rows.append(f'<tr><td style="{cell}" colspan="2">… {len(data) - i} more</td></tr>')
                break
            rows.append(
                f'<tr><th style="{cell};font-weight:600">{esc(key)}</th>'
                f'<td style="{cell}">{table_html(value, depth=depth + 1)}</td></tr>'
            )
        return f'<table class="gw-table" style="border-collapse:collapse">{"".join(rows)}</table>'
    if isinstance(data, list) and data and depth < max_depth:
        if all(not isinstance(v, (Mapping, list)) for v in data):
            return esc(", ".join(short(v, 200) for v in data[:max_items])) + (
                f" … ({len(data)} items)" if len(data) > max_items else ""
            )
        rows = [
            f'<tr><th style="{cell}">{i}</th><td style="{cell}">'
            f"{table_html(v, depth=depth + 1)}</td></tr>"
            for i, v in enumerate(data[:max_items])
        ]
        return f'<table class="gw-table" style="border-collapse:collapse">{"".join(rows)}</table>'
    if isinstance(data, (Mapping, list)):
        text = json.dumps(data, indent=2, ensure_ascii=False, default=str)
        return f'<pre style="margin:0">{esc(text)}</pre>'
    if data is None:
        return f'<span style="color:{PALETTE["muted"]}">null</span>'
    if isinstance(data, str) and ("\n" in data or len(data) > 120):
        return f'<pre style="margin:0;white-space:pre-wrap">{esc(data)}</pre>'
    return esc(data if isinstance(data, str) else json.dumps(data, default=str))
