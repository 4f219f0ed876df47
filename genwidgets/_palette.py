"""The colour palette: every colour genwidgets draws with, by role, and the status colours.

Widgets, the task view's CSS variables and the lab's exported pages and contact sheets
read their colours here, so a colour changes in one place. It is in the base layer so
the lab, below the widgets, draws with the same colours (docs/decisions.md#html-safety).
Status words and their colours: docs/decisions.md#status-look.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["COLOURS", "PALETTE", "Category"]

#: Every colour, by role (CSS hex strings; Pillow reads them too).
PALETTE: dict[str, str] = {
    "ink": "#111827",  # body text of pages and sheets
    "heading": "#374151",  # table headings
    "paper": "#ffffff",  # page and sheet background
    "muted": "#6b7280",  # grey: help text, captions, queued
    "info": "#2563eb",  # blue: running
    "ok": "#15803d",  # green: done, checks passed
    "error": "#dc2626",  # red: failed, errors, the required star
    "warn": "#b45309",  # amber: warnings
    "badge_fg": "#92400e",  # amber badges ("simulated", billed "$")
    "badge_bg": "#fef3c7",
    "border": "#e5e7eb",
    "surface": "#f9fafb",  # thumbnail boxes, score margins
    "tile": "#f3f4f6",  # an empty tile of a contact sheet
    "failed_bg": "#fee2e2",  # a failed cell of an exported grid
    "failed_ink": "#b91c1c",  # its text
    "star": "#f59e0b",  # a lit rating star
    "star_off": "#d1d5db",  # an unlit one
    "accent": "#6366f1",  # indigo edge of a grid's entry on the board
}

#: What a status is shown as (see ``widgets/_style.look_of``).
Category = Literal["queued", "running", "done", "failed", "cancelled"]

#: The colour of each status category.
COLOURS: dict[str, str] = {
    "queued": PALETTE["muted"],
    "running": PALETTE["info"],
    "done": PALETTE["ok"],
    "failed": PALETTE["error"],
    "cancelled": PALETTE["muted"],
}
