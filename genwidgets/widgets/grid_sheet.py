"""A grid's lasting face: its contact sheet, what a saved notebook keeps of it.

Plain HTML in the notebook's outputs (no widget state, no script): one table per z
value, the x values as columns and the y values as rows, each cell with its first
output (as :mod:`.lasting` keeps it: an image thumbnail, a video poster or preview,
audio, embedded) and, as the live grid shows it, a badge with how many it has; its
status, stars, note and request id; and the score margins (a row under the columns, a
column beside the rows) as of the last change. A grid not yet
sent says so and how to send it. The grid's exports (:mod:`genwidgets.lab.export`)
write whole pages for files; this is a fragment that lives inside a notebook cell.
"""

from __future__ import annotations

from typing import Any

from ..lab.export import margins
from ..lab.plan import short
from ..lab.run import GridCell, GridRun, status_of
from ._style import COLOURS, MUTED_STYLE, PALETTE, SIMULATED_BADGE, esc
from .lasting import media_choice, output_html

__all__ = ["contact_sheet", "score_text", "sheet_side"]

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
_STATUS = {"done": COLOURS["done"], "failed": COLOURS["failed"]}
#: A sheet's thumbnails by its number of cells (at most, side): a sheet is written to
#: the page and kept in the notebook whole, and a 10 × 10 one of 256 px thumbnails
#: weighs about 1.4 MB (of 96 px ones, about 0.6 MB).
SHEET_SIDES = ((16, 256), (36, 160))
BIG_SHEET_SIDE = 96


def sheet_side(cells: int) -> int:
    """The thumbnail side of a sheet of ``cells`` cells (:data:`SHEET_SIDES`)."""
    return next((side for most, side in SHEET_SIDES if cells <= most), BIG_SHEET_SIDE)


def _stars(cell: GridCell) -> str:
    lit = "★" * cell.rating
    return (
        f'<span class="gw-stars" title="{cell.rating} of 5">'
        f'<span style="color:{PALETTE["star"]}">{lit}</span>'
        f'<span style="color:{PALETTE["star_off"]}">{"★" * (5 - cell.rating)}</span></span>'
    )


def score_text(score: dict[str, Any] | None) -> str:
    """A margin's words, as the live grid draws them: ``★ 4.0 · 1 rated · 1 failed``."""
    if not score:
        return ""
    mean = score.get("mean")
    parts = ["★ –" if mean is None else f"★ {mean:.1f}", f"{score.get('rated', 0)} rated"]
    if score.get("failed"):
        parts.append(f"{score['failed']} failed")
    return " · ".join(parts)


def _cell_html(
    cell: GridCell | None, media: str, *, tag: str = "td", label: str = "", side: int = 256
) -> str:
    if cell is None:
        return f'<{tag} style="{_CELL}"></{tag}>'
    status = status_of(cell)
    colour = _STATUS.get(status, COLOURS["queued"])
    shown = "".join(output_html(o, media=media, caption=False, side=side) for o in cell.outputs[:1])
    if len(cell.outputs) > 1:  # as the live grid: the first output, and how many there are
        count = len(cell.outputs)
        shown = (
            f'<div style="position:relative">{shown}<span class="gw-sheet-count" '
            f'title="{count} outputs: the first is shown" style="{_COUNT}">{count}</span></div>'
        )
    error = f'<div style="color:{COLOURS["failed"]}">{esc(cell.error)}</div>' if cell.error else ""
    note = f'<div class="gw-note">{esc(cell.note)}</div>' if cell.note else ""
    code = '<code style="font-size:0.8em;word-break:break-all">'
    rid = f"<div>{code}{esc(cell.request_id)}</code></div>" if cell.request_id else ""
    head = f'<div style="font-weight:600">{esc(label)}</div>' if label else ""
    return (
        f'<{tag} class="gw-sheet-cell" data-index="{cell.index}" style="{_CELL}">{head}{shown}'
        f'{error}<div><span style="color:{colour}">{esc(status)}</span> {_stars(cell)}</div>'
        f"{note}{rid}</{tag}>"
    )


def _flow(run: GridRun, media: str, side: int) -> str:
    """A sweep's combinations, each labelled, wrapping like cards (one axis of many
    combinations would make one very wide row)."""
    boxes = "".join(
        _cell_html(cell, media, tag="div", label=short(cell.x, 120), side=side)
        for cell in run.cells
    )
    return (
        '<div style="display:grid;grid-template-columns:repeat(auto-fill,minmax(240px,1fr));'
        f'gap:6px;margin:4px 0">{boxes}</div>'
    )


def _axis(run: GridRun, direction: str) -> tuple[str, list[Any]]:
    axis = run.plan.shown(direction)
    return (axis.label, list(axis.values)) if axis is not None else ("", [None])


def _margins(run: GridRun) -> dict[str, list[dict[str, Any]]]:

    return margins(run)


def contact_sheet(
    run: GridRun, media: str | None = None, *, waiting: bool = False
) -> dict[str, str]:
    """The grid's lasting face: ``text/html`` (the sheet) and ``text/plain``.
    ``waiting``: the grid waits for a confirmation before it sends anything."""
    media = media_choice(media)
    x_label, xs = _axis(run, "x")
    y_label, ys = _axis(run, "y")
    z_label, zs = _axis(run, "z")
    scores = _margins(run) if run.started else {}
    by_place = {cell.place: cell for cell in run.cells}
    tables = []
    side = sheet_side(len(run.cells))
    x_axis = run.plan.shown("x")
    if x_axis is not None and x_axis.kind == "combination":
        tables.append(_flow(run, media, side))
        zs = []
    for t, z in enumerate(zs):
        title = (
            f"<div style='{_HEAD}'>{esc(z_label)} = {esc(short(z, 80))}</div>" if z_label else ""
        )
        columns = "".join(
            f'<th style="{_HEAD}">{esc(f"{x_label} = {short(x, 60)}") if x_label else ""}</th>'
            for x in xs
        )
        if "y" in scores:
            columns += f'<th style="{_HEAD}">score</th>'
        rows = ""
        for r, y in enumerate(ys):
            label = esc(f"{y_label} = {short(y, 60)}") if y_label else ""
            cells = "".join(
                _cell_html(by_place.get((t, r, c)), media, side=side) for c in range(len(xs))
            )
            margin = ""
            if "y" in scores:
                margin = f'<td class="gw-margin-y" style="{_MARGIN}">'
                margin += f"{esc(score_text(scores['y'][r]))}</td>"
            rows += f'<tr><th style="{_HEAD}">{label}</th>{cells}{margin}</tr>'
        if "x" in scores:
            rows += f'<tr><th style="{_HEAD}">score</th>' + "".join(
                f'<td class="gw-margin-x" style="{_MARGIN}">{esc(score_text(s))}</td>'
                for s in scores["x"]
            )
            rows += "<td></td></tr>" if "y" in scores else "</tr>"
        tables.append(f'{title}<table style="{_TABLE}"><tr><th></th>{columns}</tr>{rows}</table>')
    plan = run.plan
    simulated = f" {SIMULATED_BADGE}" if run.client.embedded else ""
    done, failed, total = run.counts()
    state = f"{done} of {total} done" if run.started else "not sent"
    if failed:
        state += f", {failed} failed"
    head = (
        f'<div class="gw-sheet-head"><b>{esc(run.endpoint)}</b> grid <code>{esc(run.id)}</code>'
        f" · {esc(plan.summary())} · {esc(state)}{simulated}</div>"
    )
    unsent = ""
    if not run.started:
        how = (
            "it waits for a confirmation: its Submit button or grid.submit() sends it"
            if waiting
            else "grid.submit() sends it"
        )
        unsent = (
            f'<div class="gw-sheet-unsent" style="{MUTED_STYLE}">not sent when last seen: '
            f"{plan.tasks} task{'s' if plan.tasks != 1 else ''} planned, nothing billed; "
            f"{esc(how)}</div>"
        )
    lines = [f"grid {run.id} {run.endpoint}: {state}"]
    lines += [
        f"  {c.index}: {status_of(c)} {'*' * c.rating} {c.request_id or ''}".rstrip()
        for c in run.cells
    ]
    return {
        "text/html": f'<div class="gw-grid-sheet">{head}{unsent}{"".join(tables)}</div>',
        "text/plain": "\n".join(lines),
    }
