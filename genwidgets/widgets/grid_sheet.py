"""A finished grid as a static contact sheet: what a saved notebook keeps of it.

Plain HTML in the notebook's outputs (no widget state, no script): one table
per z value, the x values as columns and the y values as rows, each cell with
its outputs (image thumbnails embedded, video and audio elements, by the
durable rule of :mod:`genwidgets.widgets.render`), its status, stars, note and
request id. The grid's exports (:mod:`genwidgets.lab.export`) write whole pages
for files; this is a fragment that lives inside a notebook cell.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..lab.plan import short
from ..lab.run import GridCell, status_of
from ._style import COLOURS, PALETTE, SIMULATED_BADGE, esc
from .render import to_html

if TYPE_CHECKING:
    from .grid import Grid

__all__ = ["contact_sheet"]

_TABLE = "border-collapse:collapse;margin:4px 0"
_CELL = f"border:1px solid {PALETTE['border']};padding:6px;vertical-align:top;max-width:280px"
_HEAD = f"padding:4px 6px;color:{PALETTE['heading']};font-weight:600;text-align:left"
_STATUS = {"done": COLOURS["done"], "failed": COLOURS["failed"]}


def _stars(cell: GridCell) -> str:
    lit = "★" * cell.rating
    return (
        f'<span class="gw-stars" title="{cell.rating} of 5">'
        f'<span style="color:{PALETTE["star"]}">{lit}</span>'
        f'<span style="color:{PALETTE["star_off"]}">{"★" * (5 - cell.rating)}</span></span>'
    )


def _cell_html(cell: GridCell | None) -> str:
    if cell is None:
        return f'<td style="{_CELL}"></td>'
    status = status_of(cell)
    colour = _STATUS.get(status, COLOURS["queued"])
    media = "".join(to_html(output, caption=False) for output in cell.outputs)
    error = f'<div style="color:{COLOURS["failed"]}">{esc(cell.error)}</div>' if cell.error else ""
    note = f"<div>{esc(cell.note)}</div>" if cell.note else ""
    code = '<code style="font-size:0.8em;word-break:break-all">'
    rid = f"<div>{code}{esc(cell.request_id)}</code></div>" if cell.request_id else ""
    return (
        f'<td class="gw-sheet-cell" data-index="{cell.index}" style="{_CELL}">{media}{error}'
        f'<div><span style="color:{colour}">{esc(status)}</span> {_stars(cell)}</div>'
        f"{note}{rid}</td>"
    )


def _axis(grid: Grid, direction: str) -> tuple[str, list[Any]]:
    axis = grid.run.plan.shown(direction)
    return (axis.label, list(axis.values)) if axis is not None else ("", [None])


def contact_sheet(grid: Grid) -> dict[str, str]:
    """The grid's static copy: ``text/html`` (the sheet) and ``text/plain``."""
    x_label, xs = _axis(grid, "x")
    y_label, ys = _axis(grid, "y")
    z_label, zs = _axis(grid, "z")
    by_place = {cell.place: cell for cell in grid.cells}
    tables = []
    for t, z in enumerate(zs):
        title = (
            f"<div style='{_HEAD}'>{esc(z_label)} = {esc(short(z, 80))}</div>" if z_label else ""
        )
        columns = "".join(
            f'<th style="{_HEAD}">{esc(f"{x_label} = {short(x, 60)}") if x_label else ""}</th>'
            for x in xs
        )
        rows = "".join(
            f'<tr><th style="{_HEAD}">{esc(f"{y_label} = {short(y, 60)}") if y_label else ""}</th>'
            + "".join(_cell_html(by_place.get((t, r, c))) for c in range(len(xs)))
            + "</tr>"
            for r, y in enumerate(ys)
        )
        tables.append(f'{title}<table style="{_TABLE}"><tr><th></th>{columns}</tr>{rows}</table>')
    plan = grid.run.plan
    simulated = f" {SIMULATED_BADGE}" if grid.run.client.embedded else ""
    head = (
        f'<div class="gw-sheet-head"><b>{esc(grid.endpoint)}</b> grid <code>{esc(grid.id)}</code>'
        f" · {esc(plan.summary())}{simulated}</div>"
    )
    lines = [repr(grid)] + [
        f"  {c.index}: {status_of(c)} {'*' * c.rating} {c.request_id or ''}".rstrip()
        for c in grid.cells
    ]
    return {
        "text/html": f'<div class="gw-grid-sheet">{head}{"".join(tables)}</div>',
        "text/plain": "\n".join(lines),
    }
