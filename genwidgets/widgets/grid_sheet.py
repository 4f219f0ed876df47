"""A grid on a page: its contact sheet, what a saved notebook keeps of it, and the
page ``grid.save_html`` exports.

Plain HTML (no widget state, no script) written by :mod:`.markup`: one table per z
value, each cell with its outputs, status, stars, note and request id, then the score
margins. The sheet shows each cell's first output as :mod:`.lasting` keeps it (a
sweep's combinations wrap like cards; docs/decisions.md#sheet-count); the page, a
file that opens offline, embeds each cell's outputs up to the client's own cap, reads
from the gateway only within one bounded budget
(:class:`~genwidgets.protocol.output.ReadBudget`) and carries the grid's description
(docs/decisions.md#grid-export).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, get_args

from .._config import shown_path
from .._files import write_atomically
from .._formats import short
from .._html import safe_mime
from .._palette import COLOURS
from ..jobs.previews import preview_bytes
from ..lab import export
from ..lab.run import GridCell, GridRun, status_of
from ..media.thumbnails import data_url, thumbnail
from ..protocol.fetch import MAX_READ_BYTES
from ..protocol.output import ReadBudget
from ..protocol.records import Output
from . import markup
from .lasting import (
    FACE_OUTPUTS,
    MEDIA_KINDS,
    left_out_words,
    local_file,
    media_choice,
    output_html,
    safe_data_url,
)

__all__ = [
    "AUDIO_EMBED_BYTES",
    "CELL_OUTPUTS",
    "PAGE_READS",
    "PAGE_READ_SECONDS",
    "VIDEO_EMBEDS",
    "VideoEmbed",
    "contact_sheet",
    "left_out",
    "save_html",
    "sheet_side",
    "state_words",
]

_STATUS = {"done": COLOURS["done"], "failed": COLOURS["failed"]} | dict.fromkeys(
    ("cancelled", "timed out"), COLOURS["cancelled"]
)
#: A sheet's thumbnails by its number of cells (at most, side): a sheet is written to
#: the page and kept in the notebook whole, and a 10 × 10 one of 256 px thumbnails
#: weighs about 1.4 MB (of 96 px ones, about 0.6 MB).
SHEET_SIDES = ((16, 256), (36, 160))
BIG_SHEET_SIDE = 96
#: What a page holds of each video: its poster frame, a short small preview that
#: plays offline (the default), or the whole file.
VideoEmbed = Literal["poster", "preview", "full"]
VIDEO_EMBEDS: tuple[str, ...] = get_args(VideoEmbed)
AUDIO_EMBED_BYTES = 2 * 1024 * 1024
#: The outputs of one cell a page embeds (and the lightbox shows): as many as the client
#: downloads of one result (``lasting.FACE_OUTPUTS``, every face's); the others are counted.
CELL_OUTPUTS = FACE_OUTPUTS
#: The outputs one page reads from the gateway (those with no local copy and no bytes
#: in hand), all cells together, each begun before one deadline of
#: ``PAGE_READ_SECONDS``: a page is saved in seconds, never one file after another for
#: minutes (docs/decisions.md#grid-export).
PAGE_READS = 40
PAGE_READ_SECONDS = 30.0


def sheet_side(cells: int) -> int:
    """The thumbnail side of a sheet of ``cells`` cells (:data:`SHEET_SIDES`)."""
    return next((side for most, side in SHEET_SIDES if cells <= most), BIG_SHEET_SIDE)


def state_words(run: GridRun) -> str:
    """``3 of 4 done, 1 failed`` or ``not sent``: a grid's state in its repr and sheet."""
    done, failed, total = run.tally()
    state = f"{done} of {total} done" if run.started else "not sent"
    again = len(run.failed)  # the gateway failed them, or their create made nothing
    hint = f" (grid.retry_failed() sends {again} again)" if again else ""
    return state + (f", {failed} failed{hint}" if failed else "") + in_doubt_words(run)


def in_doubt_words(run: GridRun) -> str:
    """``, 2 outcome unknown (...)``: cells whose tasks may exist, said apart from failed
    ones since nothing sends them again; empty when there are none."""
    doubt = run.in_doubt()
    if not doubt:
        return ""
    return f", {doubt} outcome unknown (a task may exist and bill: see client.history())"


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
    return markup.columns(
        (
            _cell_html(cell, media, element="div", label=short(cell.x, 120), side=side)
            for cell in run.cells
        ),
        240,
        6,
        ";margin:4px 0",
    )


def _tables_html(
    run: GridRun,
    scores: dict[str, list[dict[str, Any]]],
    cell_html: Callable[[GridCell | None], markup.Html],
    *,
    named: bool,
    y_width: int,
    look: markup.TableLook = markup.SHEET_LOOK,
) -> list[markup.Html]:
    """One table per z value, titled ``axis = value``; the x and y values label its
    columns and rows (as ``axis = value`` when ``named``), ``scores`` its margins."""

    def label(direction: str, value: Any) -> str:
        axis = run.plan.shown(direction)
        if axis is None:
            return ""
        text = short(value, {"x": 60, "y": y_width, "z": 80}[direction])
        return f"{axis.label} = {text}" if named or direction == "z" else text

    ys = export.axis_values(run, "y")
    return [
        markup.sheet_table(
            label("z", z),
            [label("x", x) for x in export.axis_values(run, "x")],
            [
                (
                    label("y", y),
                    [cell_html(cell) for cell in row],
                    export.score_text(scores["y"][r]) if "y" in scores else None,
                )
                for r, (y, row) in enumerate(zip(ys, rows, strict=True))
            ],
            [export.score_text(s) for s in scores["x"]] if "x" in scores else None,
            row_scores="y" in scores,
            look=look,
        )
        for z, rows in export.tables(run)
    ]


def contact_sheet(
    run: GridRun, media: str | None = None, *, waiting: bool = False
) -> dict[str, str]:
    """The grid's lasting face: ``text/html`` (the sheet) and ``text/plain``.
    ``waiting``: the grid waits for a confirmation before it sends anything."""
    media = media_choice(media)
    side = sheet_side(len(run.cells))
    x_axis = run.plan.shown("x")
    if x_axis is not None and x_axis.kind == "combination":
        sheet_tables = [_flow(run, media, side)]
    else:
        sheet_tables = _tables_html(
            run,
            export.margins(run) if run.started else {},
            lambda cell: _cell_html(cell, media, side=side),
            named=True,
            y_width=60,
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
        tables=sheet_tables,
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


# --- the exported page ------------------------------------------------------------------


def _where(local: Path, media_dir: Path, *, link: bool = True) -> markup.Html:
    """Where the full file is, as the page says it: a copy beside the page by its
    relative path (a link, so it opens offline, unless ``link`` is False: a file of
    an unsafe type is never one click from being opened as a document), else the
    ledger's copy as a shown path."""
    if local.parent != media_dir:
        return markup.code(shown_path(local))
    return markup.page_file(f"{media_dir.name}/{local.name}", link=link)


def _video_html(whole: str, local: Path, media_dir: Path, video: str) -> markup.Html:
    """A video as the page shows it (see :data:`VideoEmbed`; ``whole``: the file as a
    data URL), then where the file is."""
    made = thumbnail(local, export.TILE)
    poster = data_url(made) if made is not None else None
    source = whole if video == "full" else None
    said = "video"
    if video == "preview":
        source = safe_data_url("video/mp4", preview_bytes(local))
        said = "preview (first seconds, small, silent); full video"
    if source is not None:
        shown: markup.Html | None = markup.page_media("video", source, poster)
    else:
        shown = markup.page_media("poster", poster) if poster is not None else None
        said = "video" if video == "poster" and poster is not None else "video (not embedded)"
    return markup.join([shown, markup.page_note(f"{said}: ", _where(local, media_dir))])


def left_out(cell: GridCell) -> str | None:
    """What a page or the lightbox says of a cell's outputs past :data:`CELL_OUTPUTS`
    (None when there are none), and where they all are."""
    return left_out_words(len(cell.outputs), f"grid.cells[{cell.index}].outputs", "a cell")


def _output_bytes(output: Output, reads: ReadBudget) -> bytes | str:
    """The bytes at hand (the local copy, as :meth:`Output.read` checks it, inline, a
    data URL), else read within ``reads``; the words saying why not when they cannot be
    had."""
    at_hand = output.in_hand() is not None or (output.url or "").startswith("data:")
    network = not at_hand and local_file(output) is None
    if network and (why := reads.refused()) is not None:
        return f"{output.kind} not embedded: not downloaded, and {why}"
    try:
        return reads.read(output, MAX_READ_BYTES) if network else output.read(MAX_READ_BYTES)
    except Exception as exc:  # an expired URL: say so, link nothing
        return f"{output.kind} unavailable ({type(exc).__name__})"


def _output_html(
    output: Output, cell: GridCell, media_dir: Path, video: str, reads: ReadBudget
) -> markup.Html:
    data = _output_bytes(output, reads)
    if isinstance(data, str):
        return markup.page_note(data)
    if output.kind not in MEDIA_KINDS:
        return markup.page_note(short(data.decode("utf-8", "replace"), 400), element="pre")
    mime = safe_mime(output.content_type)
    url = safe_data_url(mime, data)  # the one list of types a page may embed
    if output.kind == "image" and url is not None:
        return markup.page_media("image", url)
    small = len(data) <= AUDIO_EMBED_BYTES or video == "full"
    if output.kind == "audio" and url is not None and small:
        return markup.page_media("audio", url)
    # the ledger's download, else a copy written beside the page (its type's extension)
    local = local_file(output) or output.save(media_dir / f"cell{cell.index}-{output.index}")
    if output.kind == "video" and url is not None:
        return _video_html(url, local, media_dir, video)
    if url is None:  # SVG, a malformed type: never inlined, never linked
        why = "not a media type a page embeds"
    else:
        why = f"over {AUDIO_EMBED_BYTES // 2**20} MB"
    said = f"{output.kind} {mime or ''} not embedded ({why}): "
    return markup.page_note(said, _where(local, media_dir, link=url is not None))


def _page_cell(
    cell: GridCell | None, media_dir: Path, video: str, reads: ReadBudget
) -> markup.Html:
    if cell is None:
        return markup.empty_cell(style=None)
    shown = [_output_html(o, cell, media_dir, video, reads) for o in cell.outputs[:CELL_OUTPUTS]]
    more = left_out(cell)
    return markup.page_cell(
        markup.join([*shown, markup.page_note(more) if more is not None else None]),
        index=cell.index,
        status=status_of(cell),
        rating=cell.rating,
        trouble=cell.trouble,
        note=cell.note,
        request_id=cell.request_id,
    )


def save_html(run: GridRun, path: str | Path, *, video: VideoEmbed = "preview") -> Path:
    """Write one page that opens offline (see the module docstring); returns the path.

    Images and audio are embedded; each video as ``video``: ``"preview"`` (a short,
    small, silent clip that plays, at most 300 KB), ``"poster"`` (its first frame) or
    ``"full"`` (the whole file: a heavy page). SVG and other types a page must not
    inline are named, never embedded. A cell's outputs past :data:`CELL_OUTPUTS` are
    counted, not embedded; those not downloaded are read from the gateway within one
    :class:`~genwidgets.protocol.output.ReadBudget` budget, the rest said not embedded.
    ``.html`` is added to a name without a suffix; another suffix is a ValueError."""
    if video not in VIDEO_EMBEDS:
        raise ValueError(f"video must be one of {', '.join(VIDEO_EMBEDS)}, not {video!r}")
    target = export.named_for(path, "save_html writes a page", (".html", ".htm"))
    target.parent.mkdir(parents=True, exist_ok=True)
    media_dir = target.with_name(target.stem + "_media")
    reads = ReadBudget(PAGE_READS, PAGE_READ_SECONDS)
    tables = _tables_html(
        run,
        export.margins(run),
        lambda cell: _page_cell(cell, media_dir, video, reads),
        named=False,
        y_width=80,
        look=markup.PAGE_LOOK,
    )
    title = f"{run.endpoint} grid {run.id}"
    description = export.description_json(run)
    page = markup.grid_page(title, export.legend(run), tables, description, export.PAGE_SCRIPT_HEAD)
    # whole or not at all: a full disk keeps the page saved before, readable
    return write_atomically(target, export.local_paths_shown(page).encode())
