"""Every piece of HTML the widgets write, as small functions: what a saved notebook shows.

The other modules choose what to show and call these; each is written with
:func:`~genwidgets._html.tag`, the one escaping rule (a ``str`` is text, an ``Html``
markup), with inline styles, so a face needs no stylesheet. In order: the look's
pieces, outputs, views. docs/decisions.md#lasting-html.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from .._formats import short
from .._html import Html, esc, join, json_script, tag
from .._palette import COLOURS, PALETTE
from ._style import ERROR_LINES, HELP_STYLE, MUTED_STYLE, StatusLook

__all__ = [
    "BILLED_BADGE",
    "LASTING_STYLE",
    "PAGE_LOOK",
    "SHEET_LOOK",
    "SIMULATED_BADGE",
    "VIDEO_STYLE",
    "Html",
    "TableLook",
    "batch_face",
    "board_face",
    "board_row",
    "bold",
    "box",
    "caption",
    "card_param",
    "card_thumb",
    "code",
    "code_view",
    "columns",
    "cut_html",
    "div",
    "download",
    "empty_cell",
    "error_html",
    "failure",
    "field_label",
    "form_face",
    "form_title",
    "grid_card",
    "grid_page",
    "image",
    "job_card",
    "join",
    "kind_icon",
    "lasting_box",
    "lines",
    "media",
    "page_cell",
    "page_file",
    "page_media",
    "page_note",
    "picture",
    "prompt_count",
    "selectable",
    "sheet_cell",
    "sheet_face",
    "sheet_table",
    "simulated_badge",
    "spaced",
    "span",
    "status_badge",
    "sweep_label",
    "table_html",
    "tag",
    "task_face",
    "text_block",
    "unavailable",
]

# --- the look's pieces ----------------------------------------------------------------

_BADGE_STYLE = (
    f"background:{PALETTE['badge_bg']};color:{PALETTE['badge_fg']};border-radius:4px;"
    "padding:0 6px;font-size:0.85em"
)


def _badge(cls: str, title: str, text: str) -> Html:
    return tag("span", {"class": cls, "title": title, "style": _BADGE_STYLE}, text)


#: The one "simulated" badge: every widget drawn for the embedded simulator shows it.
SIMULATED_BADGE = _badge(
    "gw-simulated", "answers come from the local simulator, not a real gateway", "simulated"
)
#: The billed badge beside a field that changes what a task costs.
BILLED_BADGE = _badge("gw-billed", "This field affects what the task bills", "$")


def simulated_badge(on: bool) -> Html:
    """A space and the simulated badge, after the head of a view drawn for the simulator."""
    return join([" ", SIMULATED_BADGE]) if on else Html()


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
        {"class": "gw-error", "style": f"color:{COLOURS['failed']};{ERROR_LINES}"},
        look.error or "",
        " " if kind else None,
        kind,
    )


def table_html(data: Any, *, depth: int = 0, max_depth: int = 6, max_items: int = 200) -> Html:
    """A readable table of JSON-like data; nested values nest tables, and anything
    deeper than ``max_depth`` is pretty-printed in a ``<pre>``."""
    cell = (
        f"border:1px solid {PALETTE['border']};padding:2px 6px;vertical-align:top;text-align:left"
    )
    table = {"class": "gw-table", "style": "border-collapse:collapse"}
    if isinstance(data, (Mapping, list)) and data and depth < max_depth:
        if isinstance(data, list) and all(not isinstance(v, (Mapping, list)) for v in data):
            count = f" … ({len(data)} items)" if len(data) > max_items else ""
            return join([", ".join(short(v, 200) for v in data[:max_items]), count])
        keyed = isinstance(data, Mapping)  # a mapping's keys in bold; a list's indexes
        items = list(data.items()) if isinstance(data, Mapping) else list(enumerate(data))
        head = f"{cell};font-weight:600" if keyed else cell
        rows = [
            tag(
                "tr",
                None,
                tag("th", {"style": head}, key),
                tag("td", {"style": cell}, table_html(value, depth=depth + 1)),
            )
            for key, value in items[:max_items]
        ]
        if keyed and len(items) > max_items:
            more = tag("td", {"style": cell, "colspan": "2"}, f"… {len(items) - max_items} more")
            rows.append(tag("tr", None, more))
        return tag("table", table, *rows)
    if isinstance(data, (Mapping, list)):
        text = json.dumps(data, indent=2, ensure_ascii=False, default=str)
        return tag("pre", {"style": "margin:0"}, text)
    if data is None:
        return span("null", MUTED_STYLE)
    if isinstance(data, str) and ("\n" in data or len(data) > 120):
        return tag("pre", {"style": "margin:0;white-space:pre-wrap"}, data)
    return esc(data if isinstance(data, str) else json.dumps(data, default=str))


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


def failure(text: str, *, cls: str | None = "gw-error", element: str = "div") -> Html:
    """A red line (not created, nothing sent)."""
    return tag(element, {"class": cls, "style": f"color:{COLOURS['failed']};{ERROR_LINES}"}, text)


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


# --- outputs: lasting (lasting.py) and live (render.py) --------------------------------

#: One width for every video, live or lasting (a poster or the page would size it).
VIDEO_STYLE = "width:320px;max-width:100%;height:auto"
_NEW_TAB = {"target": "_blank", "rel": "noopener"}


def caption(
    text: str, *, saved: str | None = None, extra: str = "", link: str | None = None
) -> Html:
    """The caption under an output: its text, where the ledger kept it (``saved``),
    ``extra`` words and a link to the full file (``link``, a checked URL)."""
    full = tag("a", {"class": "gw-full", "href": link, **_NEW_TAB}, "full file") if link else None
    return tag(
        "div",
        {"class": "gw-caption", "style": HELP_STYLE},
        text,
        f" · saved at {saved}" if saved is not None else None,
        extra,
        " · " if full else None,
        full,
    )


def unavailable(kind: str, name: str, content_type: str, note: str) -> Html:
    return tag(
        "div",
        {"class": "gw-unavailable"},
        kind_icon(kind, 16),
        f" {name} ",
        code(content_type),
        f": not shown, {note}",
    )


def image(
    src: str,
    alt: str,
    *,
    cls: str | None = None,
    link: str | None = None,
    style: str = "max-width:100%;height:auto",
) -> Html:
    """An image (a thumbnail, a data URL or a gateway's URL), linked to ``link``; a
    video's poster frame in its place is ``gw-poster`` of :data:`VIDEO_STYLE`."""
    element = tag("img", {"class": cls, "src": src, "alt": alt, "style": style})
    return tag("a", {"href": link, **_NEW_TAB}, element) if link is not None else element


def media(kind: str, src: str, name: str, poster_src: str | None = None) -> Html:
    """An image, video or audio by its address, live or lasting: controls, no autoplay,
    no loop (docs/decisions.md#render-bytes); bytes in the page (a ``data:`` URL) load
    at once, a URL's only as far as their metadata."""
    if kind == "image":
        return image(src, name)
    preload = "auto" if src.startswith("data:") else "metadata"
    style = VIDEO_STYLE if kind == "video" else "width:100%;min-width:240px"
    attrs = {"controls": True, "preload": preload, "src": src, "poster": poster_src}
    return tag(kind, {**attrs, "style": style})


def text_block(text: str) -> Html:
    """Text content, kept as it is (wrapped)."""
    return tag("pre", {"style": "white-space:pre-wrap;margin:0"}, text)


def download(href: str, name: str, *, rel: str = "noopener") -> Html:
    """A link to a file of another type."""
    return tag(
        "a",
        {"class": "gw-download", "href": href, "download": name, "target": "_blank", "rel": rel},
        f"⬇ {name}",
    )


def box(cls: str | None, *parts: Any, style: str | None = None) -> Html:
    """A ``<div>`` of class ``cls`` (``gw-output``, ``gw-result``, ``gw-placeholder``...)."""
    return tag("div", {"class": cls, "style": style}, *parts)


def columns(cells: Iterable[Any], width: int, gap: int, more: str = "") -> Html:
    """Cells side by side in columns at least ``width`` px wide, wrapping like cards
    (outputs 260 px, a card's outputs 110 px, a sweep's combinations 240 px)."""
    grid = f"display:grid;grid-template-columns:repeat(auto-fill,minmax({width}px,1fr))"
    return tag("div", {"style": f"{grid};gap:{gap}px{more}"}, *cells)


# --- cards (cards.py) and the board's table (board.py) ---------------------------------

_CARD = (
    f"border:1px solid {PALETTE['border']};border-left:4px solid {{colour}};border-radius:6px;"
    "padding:6px;font-size:0.9em;overflow:hidden;min-width:0;box-sizing:border-box;"
    "contain:inline-size"
)
_MONO = f"user-select:all;font-size:0.8em;{MUTED_STYLE};font-family:monospace"


#: Icons of outputs and cards with no picture (inline SVG: no emoji font needed).
_ICON_PATHS = {
    "image": "M3 5h18v14H3zM6 16l4-5 3 4 2-2 3 3M8 9a1.5 1.5 0 1 0 0 .1",
    "video": "M3 6h12v12H3zM15 10l6-3v10l-6-3z",
    "audio": "M4 9v6h4l5 4V5L8 9zM16 8.5a5 5 0 0 1 0 7M18.5 6a8.5 8.5 0 0 1 0 12",
    "json": "M8 4c-2 0-2 2-2 4s-2 4-2 4 2 0 2 4 0 4 2 4M16 4c2 0 2 2 2 4s2 4 2 4-2 0-2 4 0 4-2 4",
    "text": "M6 3h9l4 4v14H6zM9 10h7M9 14h7M9 18h5",
    "person": "M12 12a4 4 0 1 0 0-8 4 4 0 0 0 0 8zM4 21c0-4 4-6 8-6s8 2 8 6",
    "binary": "M6 3h9l4 4v14H6zM15 3v4h4",
    "grid": "M3 3h8v8H3zM13 3h8v8h-8zM3 13h8v8H3zM13 13h8v8h-8z",
}
_ICON_OF_KIND = {
    "speech": "audio",
    "asset": "json",
    "face": "person",
    "subject": "person",
}


def kind_icon(kind: str | None, size: int = 40) -> Html:
    """An inline SVG icon (stroked, grey) of an output or endpoint kind."""
    name = _ICON_OF_KIND.get(kind or "", kind or "binary")
    path = _ICON_PATHS.get(name, _ICON_PATHS["binary"])
    return tag(
        "svg",
        {"class": f"gw-icon gw-icon-{name}", "width": size, "height": size,
         "viewBox": "0 0 24 24", "fill": "none", "stroke": PALETTE["muted"],
         "stroke-width": "1.5", "stroke-linecap": "round", "stroke-linejoin": "round",
         "aria-hidden": "true"},
        tag("path", {"d": path}),
    )  # fmt: skip


def picture(src: str, size: str, cls: str | None = None) -> Html:
    """A small picture that loads when it comes into sight: a card's (``size``
    ``max-width:100%;max-height:120px``), a board row's."""
    style = f"{size};object-fit:contain"
    return tag("img", {"class": cls, "src": src, "alt": "", "loading": "lazy", "style": style})


def card_thumb(picture: Html) -> Html:
    """A card's picture box (120 px high, centred)."""
    return tag(
        "div",
        {"class": "gw-thumb", "style": "height:120px;display:flex;align-items:center;"
         f"justify-content:center;background:{PALETTE['surface']}"},
        picture,
    )  # fmt: skip


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


def selectable(text: str) -> Html:
    """An id in code, selected whole by one click."""
    return tag("code", {"style": "user-select:all"}, text)


def board_row(*cells: Any) -> Html:
    """A row of the board's table: one cell a value (text, or markup)."""
    return tag("tr", None, *(tag("td", {"style": _TD}, c) for c in cells))


def board_face(words: str, simulated: bool, rows: Iterable[Html]) -> Html:
    """The board's lasting face: a line of counts, then one row a grid or job."""
    head = box(
        "gw-board-head", bold("board"), f" · {words} when last seen", simulated_badge(simulated)
    )
    table = tag("table", {"class": "gw-board-table", "style": "border-collapse:collapse"}, *rows)
    return box("gw-board-lasting", head, table)


# --- a batch (batch_view.py) ------------------------------------------------------------


def batch_face(
    *,
    batch_id: str,
    endpoint: str,
    simulated: bool,
    counts: Mapping[str, int],
    total: int,
    line: str,
    out: str,
    pictures: Iterable[tuple[str, str]],
    side: int,
) -> Html:
    """A batch's lasting face: its counts (in their status colours), its progress line,
    where its files are and its latest pictures (data URL or ``""``, label)."""
    muted = f"color:{PALETTE['muted']}"
    figures = (
        tag(
            "figure",
            {"style": f"margin:0;width:{side}px;font-size:11px;{muted}"},
            tag("img", {"src": src, "alt": "", "style": f"max-width:{side}px"}) if src else None,
            tag("figcaption", {"style": ERROR_LINES}, label),  # a failed row's: its error
        )
        for src, label in pictures
    )
    spans = join((span(f"{n} {k}", f"color:{COLOURS[k]}") for k, n in counts.items()), " · ")
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
        div(error, f"color:{COLOURS['failed']};{ERROR_LINES}") if error else None,
        tag("div", None, span(status, f"color:{colour}"), " ", stars(rating)),
        tag("div", {"class": "gw-note"}, note) if note else None,
        tag("div", None, rid) if request_id else None,
    )


def empty_cell(element: str = "td", style: str | None = _CELL) -> Html:
    return tag(element, {"style": style})


class TableLook(NamedTuple):
    """The attributes of a grid table's parts: the sheet's inline styles, or the
    exported page's classes (its style sheet)."""

    title: str  # the z title's element
    title_attrs: Mapping[str, str] | None
    table: Mapping[str, str] | None
    head: Mapping[str, str] | None  # the values' labels
    score_head: Mapping[str, str] | None  # the margins' "score"
    y_score: Mapping[str, str] | None
    x_score: Mapping[str, str] | None


SHEET_LOOK = TableLook(
    "div", {"style": _HEAD}, {"style": _TABLE}, {"style": _HEAD}, {"style": _HEAD},
    {"class": "gw-margin-y", "style": _MARGIN}, {"class": "gw-margin-x", "style": _MARGIN},
)  # fmt: skip


def sheet_table(
    title: str,
    columns: Sequence[str],
    rows: Iterable[tuple[str, Sequence[Html], str | None]],
    column_scores: Sequence[str] | None,
    row_scores: bool,
    look: TableLook = SHEET_LOOK,
) -> Html:
    """One z value's table: the x values as columns, one row a y value (its label,
    cells and score), then the columns' scores."""
    head = [tag("th"), *(tag("th", look.head, c) for c in columns)]
    if row_scores:
        head.append(tag("th", look.score_head, "score"))
    body = [tag("tr", None, *head)]
    for label, cells, score in rows:
        margin = tag("td", look.y_score, score) if row_scores else None
        body.append(tag("tr", None, tag("th", look.head, label), *cells, margin))
    if column_scores is not None:
        scores = (tag("td", look.x_score, s) for s in column_scores)
        corner = tag("td") if row_scores else None
        body.append(tag("tr", None, tag("th", look.score_head, "score"), *scores, corner))
    heading = tag(look.title, look.title_attrs, title) if title else None
    return join([heading, tag("table", look.table, *body)])


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
    said = f" · {summary} · {state}"
    head = box(
        "gw-sheet-head", bold(endpoint), " grid ", code(grid_id), said, simulated_badge(simulated)
    )
    waiting = box("gw-sheet-unsent", unsent, style=MUTED_STYLE) if unsent else None
    return box("gw-grid-sheet", head, waiting, *tables)


# --- a grid's exported page (grid_sheet.save_html) ---------------------------------------

#: The page's style sheet, rule by rule, in the palette's colours.
_PAGE_RULES: dict[str, str] = {
    "body": f"font-family:system-ui,sans-serif;margin:16px;color:{PALETTE['ink']}",
    "table": "border-collapse:collapse;margin-bottom:16px",
    "th": "font-weight:600;padding:4px 8px;text-align:left;vertical-align:middle;max-width:220px",
    "td": f"border:1px solid {PALETTE['border']};padding:4px;vertical-align:top;width:220px",
    "td img": "max-width:210px;max-height:210px;display:block",
    "td video": "max-width:210px;max-height:210px;display:block",
    ".failed": f"background:{PALETTE['failed_bg']};color:{PALETTE['failed_ink']}",
    ".trouble": ERROR_LINES,
    ".muted": f"color:{PALETTE['muted']};font-size:0.85em",
    ".stars": "display:flex;gap:1px;margin-top:4px",
    "code": "font-size:0.8em",
    ".rid": "display:block;white-space:nowrap;overflow-x:auto;max-width:220px",
    ".score": f"background:{PALETTE['surface']};white-space:nowrap;font-size:0.85em;width:auto",
}
_PAGE_STYLE = "\n" + "".join(f"{rule}{{{body}}}\n" for rule, body in _PAGE_RULES.items())
_STAR_PATH = "M12 2l2.9 6.9 7.1.6-5.4 4.7 1.7 7-6.3-3.9-6.3 3.9 1.7-7L2 9.5l7.1-.6z"
PAGE_LOOK = TableLook(
    "h3", None, None, None, {"class": "muted"}, {"class": "score"}, {"class": "score"}
)


def page_note(*children: Any, element: str = "div") -> Html:
    """A grey line of the page (its ``muted`` class); ``pre``: a text output."""
    return tag(element, {"class": "muted"}, *children)


def page_file(path: str, *, link: bool) -> Html:
    """A file beside the page by its relative path: a link, or (``link`` False) code."""
    return tag("a", {"href": path}, path) if link else code(path)


#: How the page embeds each kind of output: its element and the attributes before ``src``.
_PAGE_MEDIA: dict[str, tuple[str, dict[str, Any]]] = {
    "image": ("img", {"alt": ""}),
    "poster": ("img", {"alt": "poster frame"}),
    "audio": ("audio", {"controls": True, "preload": "none"}),
    "video": ("video", {"controls": True, "muted": True, "loop": True, "playsinline": True,
                        "preload": "metadata"}),
}  # fmt: skip


def page_media(kind: str, src: str, poster_src: str | None = None) -> Html:
    """An output embedded in the page by its data URL (:data:`_PAGE_MEDIA`): a video
    plays muted and looping, over ``poster_src``."""
    element, attrs = _PAGE_MEDIA[kind]
    return tag(element, {**attrs, "poster": poster_src, "src": src})


def _page_star(lit: bool) -> Html:
    path = tag("path", {"fill": PALETTE["star" if lit else "star_off"], "d": _STAR_PATH})
    attrs = {"width": "14", "height": "14", "viewBox": "0 0 24 24", "aria-hidden": "true"}
    return tag("svg", attrs, path)


def page_cell(
    outputs: Html,
    *,
    index: int,
    status: str,
    rating: int,
    trouble: str | None,
    note: str | None,
    request_id: str | None,
) -> Html:
    """One cell of the page: its outputs, its trouble (or its status when it has no
    output), its stars (drawn), note and request id (on one line)."""
    if trouble:
        outputs = join([outputs, tag("div", {"class": "trouble"}, trouble)])
    elif not outputs:
        outputs = page_note(status)
    stars = tag(
        "div",
        {"class": "stars", "title": f"{rating} of 5"},
        *(_page_star(s < rating) for s in range(5)),
    )
    return tag(
        "td",
        {"class": "failed" if trouble else "", "data-index": index},
        outputs,
        stars,
        tag("div", None, note) if note else None,
        tag("code", {"class": "rid"}, request_id) if request_id else None,
    )


def grid_page(
    title: str, legend: Iterable[str], tables: Iterable[Html], description: str, script_head: str
) -> str:
    """The whole page: its legend and tables, then the description (JSON) after
    ``script_head``: data, which ``tag`` refuses to write, written as read_export finds it."""
    heads = tag("header", {"class": "legend"}, *(tag("div", None, line) for line in legend))
    return (
        '<!doctype html><html><head><meta charset="utf-8">'
        f"{tag('title', None, title)}"
        f"<style>{_PAGE_STYLE}</style></head><body>"
        f"{heads}{join(tables)}"
        f"{script_head}{json_script(description)}</script>"
        "</body></html>"
    )


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
         div(first, HELP_STYLE) if first else None]
    )  # fmt: skip


def form_face(title: Html, note: str, payload: str) -> Html:
    """A form's lasting face: its head, that it needs its kernel, and what it was set to."""
    return box(
        "gw-form-lasting", title, div(f"{note}; it was set to:", HELP_STYLE), code_view(payload)
    )


def sweep_label(label: str, below: Html) -> Html:
    """A sweep cell before its card: its label and a line about it."""
    return join([tag("div", {"class": "gw-label", "style": "font-weight:600"}, label), below])
