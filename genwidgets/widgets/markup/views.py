"""Views in HTML: a job's card, the board's table, a batch, a grid's sheet, a task, a form.

Each view's module gathers what it shows (thumbnails, counts, words) and writes it
with one function here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..._html import Html, join, tag
from .._style import COLOURS, HELP_STYLE, MUTED_STYLE, PALETTE, StatusLook
from .pieces import (
    bold,
    code,
    code_view,
    cut_html,
    div,
    error_html,
    help_line,
    simulated_badge,
    span,
    status_badge,
)

__all__ = [
    "batch_face",
    "board_face",
    "board_row",
    "card_outputs",
    "card_param",
    "card_picture",
    "card_thumb",
    "empty_cell",
    "form_face",
    "form_title",
    "grid_card",
    "icon",
    "job_card",
    "row_picture",
    "selectable",
    "sheet_cell",
    "sheet_face",
    "sheet_flow",
    "sheet_table",
    "stars",
    "sweep_label",
    "sweep_summary",
    "task_face",
]

# --- cards (cards.py) and the board's table (board.py) ---------------------------------

_CARD = (
    f"border:1px solid {PALETTE['border']};border-left:4px solid {{colour}};border-radius:6px;"
    "padding:6px;font-size:0.9em;overflow:hidden;min-width:0;box-sizing:border-box;"
    "contain:inline-size"
)
_MONO = f"user-select:all;font-size:0.8em;{MUTED_STYLE};font-family:monospace"


def icon(name: str, path: str, size: int) -> Html:
    """An inline SVG icon (stroked, grey) of one path."""
    return tag(
        "svg",
        {"class": f"gw-icon gw-icon-{name}", "width": size, "height": size,
         "viewBox": "0 0 24 24", "fill": "none", "stroke": PALETTE["muted"],
         "stroke-width": "1.5", "stroke-linecap": "round", "stroke-linejoin": "round",
         "aria-hidden": "true"},
        tag("path", {"d": path}),
    )  # fmt: skip


def card_picture(src: str) -> Html:
    return tag(
        "img",
        {"src": src, "alt": "", "loading": "lazy",
         "style": "max-width:100%;max-height:120px;object-fit:contain"},
    )  # fmt: skip


def card_thumb(picture: Html) -> Html:
    """A card's picture box (120 px high, centred)."""
    return tag(
        "div",
        {"class": "gw-thumb", "style": "height:120px;display:flex;align-items:center;"
         f"justify-content:center;background:{PALETTE['surface']}"},
        picture,
    )  # fmt: skip


def card_outputs(cells: Iterable[Html]) -> Html:
    style = "display:grid;grid-template-columns:repeat(auto-fill,minmax(110px,1fr));gap:4px"
    return tag("div", {"style": style}, *cells)


def card_param(key: str, value: str | None, tooltip: str) -> Html:
    """A parameter's line on a card: ``key = value`` (``unset`` in italics)."""
    shown = tag("i", None, "unset") if value is None else value
    return cut_html(join([span(key, MUTED_STYLE), " = ", shown]), tooltip, cls="gw-param")


def job_card(
    look: StatusLook,
    *,
    label: str,
    media: Html,
    endpoint: str,
    simulated: bool,
    elapsed: str,
    params: Iterable[Html],
    request_id: str,
) -> Html:
    """A job's card: its label, picture, endpoint, status and elapsed time, the listed
    parameters, its error and its request id."""
    head = cut_html(label, label, cls="gw-label", style="font-weight:600") if label else None
    return tag(
        "div",
        {"class": "gw-card", "style": _CARD.format(colour=look.colour)},
        head,
        media,
        cut_html(join([bold(endpoint), simulated_badge(simulated)]), endpoint, cls="gw-endpoint"),
        tag("div", None, status_badge(look), f" · {elapsed}"),
        *params,
        error_html(look),
        cut_html(request_id, request_id, cls="gw-request-id", style=_MONO),
    )


def grid_card(
    picture: Html, *, endpoint: str, noun: str, shape: str, counts: str, load: str
) -> Html:
    """A grid's entry on the board: its best picture, endpoint, axes and counts, and
    the line that loads it."""
    return tag(
        "div",
        {"class": "gw-card gw-grid-entry", "style": _CARD.format(colour=PALETTE["accent"])},
        card_thumb(picture),
        cut_html(join([bold(endpoint), f" · {noun}"]), endpoint, cls="gw-endpoint"),
        cut_html(shape, shape),
        tag("div", None, counts),
        cut_html(load, load, style=_MONO),
    )


_TD = f"border-bottom:1px solid {PALETTE['border']};padding:4px 6px;vertical-align:middle"


def row_picture(src: str) -> Html:
    return tag(
        "img",
        {"class": "gw-thumb", "src": src, "alt": "",
         "style": "max-width:96px;max-height:72px;object-fit:contain"},
    )  # fmt: skip


def selectable(text: str) -> Html:
    """An id in code, selected whole by one click."""
    return tag("code", {"style": "user-select:all"}, text)


def board_row(*cells: Any) -> Html:
    """A row of the board's table: one cell a value (text, or markup)."""
    return tag("tr", None, *(tag("td", {"style": _TD}, c) for c in cells))


def board_face(words: str, simulated: bool, rows: Iterable[Html]) -> Html:
    """The board's lasting face: a line of counts, then one row a grid or job."""
    head = tag(
        "div",
        {"class": "gw-board-head"},
        bold("board"),
        f" · {words} when last seen",
        simulated_badge(simulated),
    )
    table = tag("table", {"class": "gw-board-table", "style": "border-collapse:collapse"}, *rows)
    return tag("div", {"class": "gw-board-lasting"}, head, table)


# --- a batch (batch_view.py) ------------------------------------------------------------


def batch_face(
    *,
    batch_id: str,
    endpoint: str,
    simulated: bool,
    counts: Sequence[tuple[str, int, str]],
    total: int,
    line: str,
    out: str,
    pictures: Iterable[tuple[str, str]],
    side: int,
) -> Html:
    """A batch's lasting face: its counts (word, number, colour), its progress line,
    where its files are and its latest pictures (data URL or ``""``, label)."""
    muted = f"color:{PALETTE['muted']}"
    figures = (
        tag(
            "figure",
            {"style": f"margin:0;width:{side}px;font-size:11px;{muted}"},
            tag("img", {"src": src, "alt": "", "style": f"max-width:{side}px"}) if src else None,
            tag("figcaption", {"style": "overflow-wrap:anywhere"}, label),
        )
        for src, label in pictures
    )
    spans = join((span(f"{n} {k}", f"color:{colour}") for k, n, colour in counts), " · ")
    return tag(
        "div",
        {"class": "gw-batch-static",
         "style": f"font-family:system-ui,sans-serif;font-size:13px;color:{PALETTE['ink']}"},
        tag("div", None, bold(f"batch {batch_id}"), f" → {endpoint}",
            simulated_badge(simulated)),
        tag("div", None, spans, f" of {total}"),
        div(line, muted),
        div(join(["files and manifest.csv in ", code(out)]), muted),
        tag("div", {"style": "display:flex;flex-wrap:wrap;gap:6px;margin-top:4px"}, *figures),
    )  # fmt: skip


# --- a grid's contact sheet (grid_sheet.py) ----------------------------------------------

_TABLE = "border-collapse:collapse;margin:4px 0"
_CELL = (
    f"border:1px solid {PALETTE['border']};padding:6px;vertical-align:top;max-width:280px;"
    "text-align:left"
)
_HEAD = f"padding:4px 6px;color:{PALETTE['heading']};font-weight:600;text-align:left"
_MARGIN = (
    f"padding:4px 6px;color:{PALETTE['heading']};background:{PALETTE['surface']};"
    f"border:1px solid {PALETTE['border']};font-size:0.85em;white-space:nowrap;text-align:left"
)
#: the live grid's badge (``.gw-grid-count`` in grid.css), over the first output
_COUNT = (
    "position:absolute;top:4px;right:4px;background:#111827;color:#fff;border-radius:9px;"
    "padding:0 6px;font-size:11px"
)


def stars(rating: int) -> Html:
    return tag(
        "span",
        {"class": "gw-stars", "title": f"{rating} of 5"},
        span("★" * rating, f"color:{PALETTE['star']}"),
        span("★" * (5 - rating), f"color:{PALETTE['star_off']}"),
    )


def sheet_cell(
    shown: Html,
    *,
    count: int,
    index: int,
    status: str,
    colour: str,
    rating: int,
    error: str | None,
    note: str | None,
    request_id: str | None,
    label: str = "",
    element: str = "td",
) -> Html:
    """One cell of a sheet: its first output (and how many it has), its error, status,
    stars, note and request id; ``element``: ``td`` in a table, ``div`` in a flow."""
    if count > 1:  # as the live grid: the first output, and how many there are
        badge = tag(
            "span",
            {"class": "gw-sheet-count", "title": f"{count} outputs: the first is shown",
             "style": _COUNT},
            count,
        )  # fmt: skip
        shown = tag("div", {"style": "position:relative"}, shown, badge)
    rid = tag("code", {"style": "font-size:0.8em;word-break:break-all"}, request_id)
    return tag(
        element,
        {"class": "gw-sheet-cell", "data-index": index, "style": _CELL},
        div(label, "font-weight:600") if label else None,
        shown,
        div(error, f"color:{COLOURS['failed']}") if error else None,
        tag("div", None, span(status, f"color:{colour}"), " ", stars(rating)),
        tag("div", {"class": "gw-note"}, note) if note else None,
        tag("div", None, rid) if request_id else None,
    )


def empty_cell(element: str = "td") -> Html:
    return tag(element, {"style": _CELL})


def sheet_flow(boxes: Iterable[Html]) -> Html:
    """A sweep's combinations, wrapping like cards."""
    style = "display:grid;grid-template-columns:repeat(auto-fill,minmax(240px,1fr));gap:6px;"
    return tag("div", {"style": style + "margin:4px 0"}, *boxes)


def sheet_table(
    title: str,
    columns: Sequence[str],
    rows: Iterable[tuple[str, Sequence[Html], str | None]],
    column_scores: Sequence[str] | None,
    row_scores: bool,
) -> Html:
    """One z value's table: the x values as columns, one row a y value (its label,
    cells and score), then the columns' scores."""
    head = [tag("th"), *(tag("th", {"style": _HEAD}, c) for c in columns)]
    if row_scores:
        head.append(tag("th", {"style": _HEAD}, "score"))
    body = [tag("tr", None, *head)]
    for label, cells, score in rows:
        margin = (
            tag("td", {"class": "gw-margin-y", "style": _MARGIN}, score) if row_scores else None
        )
        body.append(tag("tr", None, tag("th", {"style": _HEAD}, label), *cells, margin))
    if column_scores is not None:
        scores = (tag("td", {"class": "gw-margin-x", "style": _MARGIN}, s) for s in column_scores)
        corner = tag("td") if row_scores else None
        body.append(tag("tr", None, tag("th", {"style": _HEAD}, "score"), *scores, corner))
    return join([div(title, _HEAD) if title else None, tag("table", {"style": _TABLE}, *body)])


def sheet_face(
    *,
    endpoint: str,
    grid_id: str,
    summary: str,
    state: str,
    simulated: bool,
    unsent: str | None,
    tables: Iterable[Html],
) -> Html:
    """A grid's lasting face: a head line, what is not sent yet, then its tables."""
    head = tag(
        "div",
        {"class": "gw-sheet-head"},
        bold(endpoint),
        " grid ",
        code(grid_id),
        f" · {summary} · {state}",
        simulated_badge(simulated),
    )
    waiting = (
        tag("div", {"class": "gw-sheet-unsent", "style": MUTED_STYLE}, unsent) if unsent else None
    )
    return tag("div", {"class": "gw-grid-sheet"}, head, waiting, *tables)


# --- a task (task.py), a form (form.py), a sweep (sweep.py) -------------------------------


def task_face(
    look: StatusLook, *, endpoint: str, request_id: str, elapsed: str, simulated: bool
) -> Html:
    """A task's status line: status, endpoint, request id and elapsed time."""
    return tag(
        "div",
        {"class": "gw-final",
         "style": "display:flex;gap:12px;align-items:baseline;flex-wrap:wrap"},
        status_badge(look), " ", tag("span", None, endpoint), " ",
        selectable(request_id), " ",
        tag("span", None, elapsed),
        simulated_badge(simulated),
    )  # fmt: skip


def form_title(title: str, endpoint: str, kind: str, simulated: bool, first: str) -> Html:
    """A form's head: its title, endpoint id, kind and the first line of its description."""
    return join(
        [bold(title), " · ", code(endpoint), " · ", span(kind, HELP_STYLE),
         simulated_badge(simulated),
         help_line(first) if first else None]
    )  # fmt: skip


def form_face(title: Html, note: str, payload: str) -> Html:
    """A form's lasting face: its head, that it needs its kernel, and what it was set to."""
    return tag(
        "div", {"class": "gw-form-lasting"}, title, help_line(f"{note}; it was set to:"),
        code_view(payload),
    )  # fmt: skip


def sweep_label(label: str, below: Html) -> Html:
    """A sweep cell before its card: its label and a line about it."""
    return join([tag("div", {"class": "gw-label", "style": "font-weight:600"}, label), below])


def sweep_summary(summary: str, simulated: bool) -> Html:
    return tag(
        "div",
        {"class": "gw-sweep-summary"},
        summary,
        simulated_badge(simulated),
    )
