"""A grid's lasting face: its contact sheet, what a saved notebook keeps of it.

Plain HTML (no widget state, no script): one table per z value, each cell with its
first output as :mod:`.lasting` keeps it, its status, stars, note and request id, then
the score margins; a sweep's combinations wrap like cards. The exports
(:mod:`genwidgets.lab.export`) write whole pages; this is a fragment of a cell
(docs/decisions.md#sheet-count).
"""

from __future__ import annotations

from typing import Any

from ..lab.export import margins
from ..lab.plan import short
from ..lab.run import GridCell, GridRun, status_of
from . import markup
from ._style import COLOURS
from .lasting import media_choice, output_html

__all__ = ["contact_sheet", "score_text", "sheet_side", "state_words"]

_STATUS = {"done": COLOURS["done"], "failed": COLOURS["failed"]}
#: A sheet's thumbnails by its number of cells (at most, side): a sheet is written to
#: the page and kept in the notebook whole, and a 10 × 10 one of 256 px thumbnails
#: weighs about 1.4 MB (of 96 px ones, about 0.6 MB).
SHEET_SIDES = ((16, 256), (36, 160))
BIG_SHEET_SIDE = 96


def sheet_side(cells: int) -> int:
    """The thumbnail side of a sheet of ``cells`` cells (:data:`SHEET_SIDES`)."""
    return next((side for most, side in SHEET_SIDES if cells <= most), BIG_SHEET_SIDE)


def score_text(score: dict[str, Any] | None) -> str:
    """A margin's words, as the live grid draws them: ``★ 4.0 · 1 rated · 1 failed``."""
    if not score:
        return ""
    mean = score.get("mean")
    parts = ["★ –" if mean is None else f"★ {mean:.1f}", f"{score.get('rated', 0)} rated"]
    if score.get("failed"):
        parts.append(f"{score['failed']} failed")
    return " · ".join(parts)


def state_words(run: GridRun) -> str:
    """``3 of 4 done, 1 failed`` or ``not sent``: a grid's state in its repr and sheet."""
    done, failed, total = run.counts()
    state = f"{done} of {total} done" if run.started else "not sent"
    return state + (f", {failed} failed" if failed else "")


def _cell_html(
    cell: GridCell | None, media: str, *, element: str = "td", label: str = "", side: int = 256
) -> markup.Html:
    if cell is None:
        return markup.empty_cell(element)
    status = status_of(cell)
    return markup.sheet_cell(
        markup.join(
            output_html(o, media=media, caption=False, side=side) for o in cell.outputs[:1]
        ),
        count=len(cell.outputs),
        index=cell.index,
        status=status,
        colour=_STATUS.get(status, COLOURS["queued"]),
        rating=cell.rating,
        error=cell.error,
        note=cell.note,
        request_id=cell.request_id,
        label=label,
        element=element,
    )


def _flow(run: GridRun, media: str, side: int) -> markup.Html:
    """A sweep's combinations, each labelled, wrapping like cards (one axis of many
    combinations would make one very wide row)."""
    return markup.sheet_flow(
        _cell_html(cell, media, element="div", label=short(cell.x, 120), side=side)
        for cell in run.cells
    )


def _axis(run: GridRun, direction: str) -> tuple[str, list[Any]]:
    axis = run.plan.shown(direction)
    return (axis.label, list(axis.values)) if axis is not None else ("", [None])


def contact_sheet(
    run: GridRun, media: str | None = None, *, waiting: bool = False
) -> dict[str, str]:
    """The grid's lasting face: ``text/html`` (the sheet) and ``text/plain``.
    ``waiting``: the grid waits for a confirmation before it sends anything."""
    media = media_choice(media)
    x_label, xs = _axis(run, "x")
    y_label, ys = _axis(run, "y")
    z_label, zs = _axis(run, "z")
    scores = margins(run) if run.started else {}
    by_place = {cell.place: cell for cell in run.cells}
    tables = []
    side = sheet_side(len(run.cells))
    x_axis = run.plan.shown("x")
    if x_axis is not None and x_axis.kind == "combination":
        tables.append(_flow(run, media, side))
        zs = []
    for t, z in enumerate(zs):
        rows = [
            (
                f"{y_label} = {short(y, 60)}" if y_label else "",
                [_cell_html(by_place.get((t, r, c)), media, side=side) for c in range(len(xs))],
                score_text(scores["y"][r]) if "y" in scores else None,
            )
            for r, y in enumerate(ys)
        ]
        tables.append(
            markup.sheet_table(
                f"{z_label} = {short(z, 80)}" if z_label else "",
                [f"{x_label} = {short(x, 60)}" if x_label else "" for x in xs],
                rows,
                [score_text(s) for s in scores["x"]] if "x" in scores else None,
                row_scores="y" in scores,
            )
        )
    plan = run.plan
    state = state_words(run)
    unsent = None
    if not run.started:
        how = (
            "it waits for a confirmation: its Submit button or grid.submit() sends it"
            if waiting
            else "grid.submit() sends it"
        )
        unsent = (
            f"not sent when last seen: {plan.tasks} task{'s' if plan.tasks != 1 else ''} "
            f"planned, nothing billed; {how}"
        )
    html = markup.sheet_face(
        endpoint=run.endpoint,
        grid_id=run.id,
        summary=plan.summary(),
        state=state,
        simulated=run.client.embedded,
        unsent=unsent,
        tables=tables,
    )
    lines = [f"grid {run.id} {run.endpoint}: {state}"]
    lines += [
        f"  {c.index}: {status_of(c)} {'*' * c.rating} {c.request_id or ''}".rstrip()
        for c in run.cells
    ]
    return {
        "text/html": html,
        "text/plain": "\n".join(lines),
    }
