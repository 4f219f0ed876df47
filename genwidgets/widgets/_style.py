"""The widgets' look: text styles, shared layouts, the status look and formatters.

Colours come from the base layer's palette (``genwidgets/_palette.py``) and the URL
and content-type rules from ``genwidgets/_html.py``, which the lab's exports use too.
The HTML itself is written in :mod:`.markup` alone. Status words and their colours:
docs/decisions.md#status-look.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._palette import COLOURS, PALETTE, Category
from ..protocol.records import FAILURE_STATUSES, Result, Status, is_terminal, says_cancelled

if TYPE_CHECKING:
    import ipywidgets

__all__ = [
    "ERROR_LINES",
    "ERROR_STYLE",
    "HELP_STYLE",
    "MUTED_STYLE",
    "OK_STYLE",
    "WARN_STYLE",
    "StatusLook",
    "format_elapsed",
    "layout",
    "look_of",
]

#: An error keeps its lines (a gateway's error may have several) and wraps a long one
#: anywhere; the live views' style sheets say the same (``.gw-error``, ``.gw-grid-error``,
#: ``.gw-batch-error`` in ``static/*.css``).
ERROR_LINES = "white-space:pre-wrap;overflow-wrap:anywhere"

#: Inline styles of the text kinds forms and fields write.
HELP_STYLE = f"color:{PALETTE['muted']};font-size:0.85em"
ERROR_STYLE = f"color:{PALETTE['error']};{ERROR_LINES}"
WARN_STYLE = f"color:{PALETTE['warn']}"
OK_STYLE = f"color:{PALETTE['ok']}"
MUTED_STYLE = f"color:{PALETTE['muted']}"

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
        kind = status.raw.get("error_type")
        error_type = None if kind is None else str(kind)
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
    if says_cancelled(raw, error_type):
        return StatusLook("cancelled", "cancelled", raw, True)
    return StatusLook("failed", "failed", raw, True, error or raw.lower(), error_type)


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
    "plain": {},  # every task view of the kernel
}
_MADE: dict[str, ipywidgets.Layout] = {}


def layout(name: str) -> ipywidgets.Layout:
    """A shared ``Layout`` by name (see ``_LAYOUTS``): one object serves every widget
    that uses it (never mutated), so each costs less to build and to save; made again
    if something closed it."""
    import ipywidgets  # noqa: PLC0415 - only widgets ask for layouts; the safety rules above need none

    made = _MADE.get(name)
    if made is None or made.comm is None:
        made = _MADE[name] = ipywidgets.Layout(**_LAYOUTS[name])
    return made


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
