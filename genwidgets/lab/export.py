"""A grid's exports: a PNG contact sheet, and what its HTML page shares with it.

Both carry the grid's description as JSON (scrubbed as the ledger scrubs; the key is
never part of a grid), open offline and name no absolute local path. The sheet draws
its own stars and dashes (no font has to have them); the page is written with the
widgets' HTML (``widgets/grid_sheet.save_html``) from the legend, tables and margins
here: docs/decisions.md#grid-export.
"""

from __future__ import annotations

import io
import json
import math
import re
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._config import home, redact, shown_path
from .._files import write_atomically
from .._formats import short
from .._palette import PALETTE
from ..media.thumbnails import DEFAULT_SIDE, decoded, first_frame
from ..protocol.fetch import MAX_READ_BYTES
from ..protocol.output import ReadBudget
from ..protocol.records import Output
from .provenance import MAX_TEXT_BYTES, PNG_SIGNATURE, png_text
from .run import status_of

if TYPE_CHECKING:
    from PIL import Image as PILImage

    from .run import GridCell, GridRun

__all__ = [
    "PAGE_SCRIPT_HEAD",
    "PNG_KEY",
    "SHEET_READS",
    "SHEET_READ_SECONDS",
    "TILE",
    "axis_values",
    "description_json",
    "draw_text",
    "legend",
    "local_paths_shown",
    "margins",
    "named_for",
    "read_export",
    "read_png_description",
    "save_png",
    "score_text",
    "tables",
]

PNG_KEY = "genwidgets:grid"
#: a sheet's tile: the grid's own thumbnail size, so a cell is never smaller there
TILE = DEFAULT_SIDE
HEADER = 170  # room for row labels, left
LABEL_ROW = 28  # column label height
FONT_SIZE = 14
#: The tiles' pictures one sheet reads from a gateway (outputs not downloaded), each
#: begun before one deadline, none after one failed; the other tiles say why they have
#: none (docs/decisions.md#grid-page-reads).
SHEET_READS = 40
SHEET_READ_SECONDS = 30.0


def local_paths_shown(text: str) -> str:
    """``text`` with the genwidgets home and the user's home written as
    :func:`~genwidgets._config.shown_path` writes them (``~/.genwidgets/...``,
    ``~/...``): an export is shared, the machine's paths are not."""
    for root in (str(home()), str(Path.home())):
        if root.strip("/"):  # where a path starts (not inside a URL or another path)
            start = re.compile(r"(?<![\w.~/:%+=,-])" + re.escape(root.rstrip("/")) + "/")
            shown = shown_path(Path(root, "_"))[:-1]  # "~/.genwidgets/", "~/", ...
            text = start.sub(shown.replace("\\", "\\\\"), text)  # a literal replacement
    return text


def description_json(run: GridRun) -> str:
    described = json.dumps(run.describe(), default=str, ensure_ascii=False)
    return local_paths_shown(redact(described))


def _poster(output: Output, reads: ReadBudget) -> PILImage.Image | str | None:
    """The picture of an output: the image itself, or a video's first frame; ``None``
    for another kind, or when it cannot be read (an expired URL, a missing file,
    bytes no decoder reads, a picture past the thumbnails' pixel cap): the tile says so.
    One not downloaded is read within the sheet's ``reads``; past them, why not."""
    if output.kind not in ("image", "video"):
        return None
    remote = ReadBudget.asks_gateway(output)
    if remote and (why := reads.refused()) is not None:
        return f"{output.kind} not read: {why}"
    try:
        data = io.BytesIO(reads.read(output, MAX_READ_BYTES) if remote else output.read())
        # an image capped like a thumbnail, a video's first frame
        picture = decoded(data, TILE) if output.kind == "image" else first_frame(data)
    except Exception:
        return None
    return picture.convert("RGB") if picture is not None else None


def _star_points(cx: float, cy: float, r: float) -> list[tuple[float, float]]:
    """A five-pointed star's ten corners around (``cx``, ``cy``), the first at the top:
    outer and inner by turns, each ``d`` from the centre at the angle ``a``."""
    corners = [(r if i % 2 == 0 else r * 0.45, -math.pi / 2 + i * math.pi / 5) for i in range(10)]
    return [(cx + d * math.cos(a), cy + d * math.sin(a)) for d, a in corners]


#: characters the sheet draws as shapes: fonts lack them (Pillow's default font draws
#: ★, – and × as empty boxes), and a sheet must read the same on every machine
DRAWN = frozenset("★–—×")
_DRAWN_APART = re.compile(f"([{''.join(DRAWN)}])")  # a DRAWN character, kept by split


def draw_text(draw: Any, xy: tuple[float, float], text: str, font: Any, fill: str) -> None:
    """``text`` (lines split at ``\n``) at ``xy``: runs of ordinary characters with
    ``font``, each of :data:`DRAWN` as a shape of the text's size (a star in the
    star colour, a dash, a cross in ``fill``)."""
    ascent, descent = font.getmetrics()
    x0, y = xy
    for line in text.split("\n"):
        x = float(x0)
        for part in _DRAWN_APART.split(line):  # runs of ordinary text, each DRAWN alone
            if part in DRAWN:
                x += _draw_shape(draw, part, x, y + ascent * 0.62, ascent, fill)
            elif part:
                draw.text((x, y), part, fill=fill, font=font)
                x += font.getlength(part)
        y += ascent + descent + 3


def _draw_shape(draw: Any, char: str, x: float, mid: float, size: int, fill: str) -> float:
    """One of :data:`DRAWN` from ``x`` on a line whose middle is ``mid``; its width."""
    if char == "★":
        r = size * 0.5
        draw.polygon(_star_points(x + r + 1, mid, r), fill=PALETTE["star"])
        return 2 * r + 2
    if char == "×":
        r = size * 0.28
        cx = x + r + 2
        for dx in (-r, r):
            draw.line((cx - dx, mid - r, cx + dx, mid + r), fill=fill, width=2)
        return 2 * r + 4
    width = size * (0.9 if char == "—" else 0.6)  # an en or em dash
    draw.rectangle((x + 1, mid - 1, x + 1 + width, mid), fill=fill)
    return width + 2


def axis_values(run: GridRun, direction: str) -> list[Any]:
    """The values shown along ``direction``; ``[None]`` (one of each) when it has no axis."""
    axis = run.plan.shown(direction)
    return list(axis.values) if axis is not None else [None]


def legend(run: GridRun) -> list[str]:
    """The legend's lines: endpoint and grid id, each axis's label, a locked seed."""
    lines = [f"{run.endpoint} · grid {run.id}"]
    for direction, name in (("x", "columns"), ("y", "rows"), ("z", "tables")):
        axis = run.plan.shown(direction)
        if axis is not None:
            lines.append(f"{name} ({direction}): {axis.label}")
    if run.plan.seed is not None:
        lines.append(f"seed locked at {run.plan.seed}")
    return lines


MARGIN_W = 130  # the score column, right
MARGIN_H = 24  # the score row, below


def score_text(score: dict[str, Any] | None) -> str:
    """``★ 4.5 · 2 rated · 1 failed`` (the margins; ``★ –`` when nothing is rated)."""
    if not score:
        return ""
    mean = "★ –" if score["mean"] is None else f"★ {score['mean']:.1f}"
    text = f"{mean} · {score['rated']} rated"
    return text + (f" · {score['failed']} failed" if score["failed"] else "")


def margins(run: GridRun) -> dict[str, list[dict[str, Any]]]:
    """Scores per displayed x and y axis, in the axis's own order."""
    found: dict[str, list[dict[str, Any]]] = {}
    for direction in ("x", "y"):
        axis = run.plan.shown(direction)
        if axis is None:
            continue
        rows = {json.dumps(r["value"], default=str): r for r in run.scores(direction)}
        found[direction] = [rows[json.dumps(v, default=str)] for v in axis.values]
    return found


def tables(run: GridRun) -> list[tuple[Any, list[list[GridCell | None]]]]:
    """For each z value: the rows (y) of columns (x) of cells."""
    nz, ny, nx = run.plan.shape
    found: list[list[list[GridCell | None]]] = [[[None] * nx for _ in range(ny)] for _ in range(nz)]
    for cell in run.cells:
        t, r, c = cell.place
        found[t][r][c] = cell
    return list(zip(axis_values(run, "z"), found, strict=True))


def named_for(path: str | Path, what: str, suffixes: tuple[str, ...]) -> Path:
    """``path`` as an export is written under it: its suffix one of ``suffixes`` (any
    case), the first added when it has none; another type's is a ValueError saying
    ``what`` it writes (PNG bytes in ``sheet.html`` opened as garbage)."""
    target = Path(path)
    suffix = target.suffix.lower()
    if not suffix:
        return target.with_name(target.name + suffixes[0])
    if suffix not in suffixes:
        raise ValueError(f"{what}: name it {' or '.join(suffixes)}, not {suffix}")
    return target


def save_png(run: GridRun, path: str | Path) -> Path:
    """Write the contact sheet (see the module docstring); returns the path (``.png``
    added to a name without a suffix; another suffix is a ValueError)."""
    path = named_for(path, "save_png writes a PNG", (".png",))
    from PIL import Image, ImageDraw, ImageFont  # noqa: PLC0415 - Pillow loads only when an export draws
    from PIL.PngImagePlugin import PngInfo  # noqa: PLC0415 - Pillow loads only when an export draws

    font = ImageFont.load_default(size=FONT_SIZE)
    xs = axis_values(run, "x")
    ys = axis_values(run, "y")
    heads = legend(run)
    legend_h = 20 * len(heads) + 12
    row_h = TILE + 26  # a tile and its stars
    z_tables = tables(run)
    reads = ReadBudget(SHEET_READS, SHEET_READ_SECONDS)  # one for all its tiles
    z_axis = run.plan.shown("z")
    scores = margins(run)
    table_h = LABEL_ROW + len(ys) * row_h + 8 + (MARGIN_H if "x" in scores else 0)
    width = HEADER + len(xs) * (TILE + 8) + 8 + (MARGIN_W if "y" in scores else 0)
    height = legend_h + len(z_tables) * (table_h + (24 if z_axis else 0))
    sheet = Image.new("RGB", (width, height), PALETTE["paper"])
    draw = ImageDraw.Draw(sheet)
    for i, line in enumerate(heads):  # the first line in ink, the axes and seed grey
        draw_text(draw, (8, 6 + 20 * i), line, font, PALETTE["ink" if i == 0 else "muted"])
    top = legend_h
    for z_value, rows in z_tables:
        if z_axis is not None:
            label = f"{z_axis.label} = {short(z_value, 60)}"
            draw_text(draw, (8, top + 2), label, font, PALETTE["ink"])
            top += 24
        for c, x_value in enumerate(xs):
            text = short(x_value, 34) if run.plan.shown("x") else ""
            draw_text(draw, (HEADER + c * (TILE + 8), top + 6), text, font, PALETTE["ink"])
        for r, (y_value, row) in enumerate(zip(ys, rows, strict=True)):
            y0 = top + LABEL_ROW + r * row_h
            if run.plan.shown("y"):
                label = _wrap(short(y_value, 80), 20)
                draw_text(draw, (8, y0 + TILE // 2 - 10), label, font, PALETTE["ink"])
            for c, cell in enumerate(row):
                if cell is not None:
                    _draw_tile(sheet, draw, font, cell, (HEADER + c * (TILE + 8), y0), reads)
            if "y" in scores:
                where = (HEADER + len(xs) * (TILE + 8) + 4, y0 + TILE // 2 - 10)
                text = score_text(scores["y"][r]).replace(" · ", "\n", 1)
                draw_text(draw, where, text, font, PALETTE["ink"])
        if "x" in scores:
            y0 = top + LABEL_ROW + len(ys) * row_h
            for c, score in enumerate(scores["x"]):
                where = (HEADER + c * (TILE + 8), y0 + 2)
                draw_text(draw, where, score_text(score), font, PALETTE["ink"])
        top += table_h
    info = PngInfo()
    info.add_itxt(PNG_KEY, description_json(run), zip=True)
    written = io.BytesIO()
    sheet.save(written, format="PNG", pnginfo=info)
    return write_atomically(Path(path), written.getvalue(), parents=True)  # whole or not at all


def _wrap(text: str, width: int) -> str:
    """``text`` in lines of ``width`` characters, four at most."""
    return "\n".join(textwrap.wrap(text, width)[:4]) or text


def _draw_tile(
    sheet: Any, draw: Any, font: Any, cell: GridCell, at: tuple[int, int], reads: ReadBudget
) -> None:
    """A cell's tile at ``at``: its first picture (else its trouble, why the picture was
    not read, or its status), count and stars."""
    x0, y0 = at
    trouble = cell.trouble
    draw.rectangle(
        (x0, y0, x0 + TILE - 1, y0 + TILE - 1), fill=PALETTE["failed_bg" if trouble else "tile"]
    )
    pictured = (output for output in cell.outputs if output.kind in ("image", "video"))
    output = next(pictured, cell.outputs[0] if cell.outputs else None)
    picture = _poster(output, reads) if output is not None else None
    if picture is not None and not isinstance(picture, str):
        picture.thumbnail((TILE, TILE))
        sheet.paste(picture, (x0 + (TILE - picture.width) // 2, y0 + (TILE - picture.height) // 2))
    elif trouble:
        text = _wrap(short(trouble, 128), 32)
        draw_text(draw, (x0 + 8, y0 + 8), text, font, PALETTE["failed_ink"])
    elif picture is not None:  # why it was not read
        draw_text(draw, (x0 + 8, y0 + 8), _wrap(picture, 32), font, PALETTE["muted"])
    else:
        text = output.kind if output is not None else status_of(cell)
        draw_text(draw, (x0 + 8, y0 + 8), text, font, PALETTE["muted"])
    if len(cell.outputs) > 1:
        badge = str(len(cell.outputs))
        draw.rounded_rectangle(
            (x0 + TILE - 28, y0 + 4, x0 + TILE - 4, y0 + 22), 8, fill=PALETTE["ink"]
        )
        draw_text(draw, (x0 + TILE - 20, y0 + 5), badge, font, PALETTE["paper"])
    for s in range(5):
        colour = PALETTE["star" if s < cell.rating else "star_off"]
        draw.polygon(_star_points(x0 + 10 + s * 20, y0 + TILE + 12, 9), fill=colour)
    if cell.note:
        where = (x0 + 108, y0 + TILE + 4)
        draw_text(draw, where, short(cell.note, 18), font, PALETTE["muted"])


#: where a page carries its description (data, not a script: read_export finds it here)
PAGE_SCRIPT_HEAD = '<script type="application/json" id="genwidgets-grid">'


def read_export(path: str | Path) -> dict[str, Any]:
    """What ran, as a grid's export says it: the description a contact sheet
    (``grid.save_png``) or a page (``grid.save_html``) carries, as a dict:
    ``endpoint``, ``axes``, ``base_payload``, ``cells`` (each one's payload, request
    id, stars and note) and ``scores``. A file that carries none is a ValueError."""
    source = Path(path)
    with source.open("rb") as file:
        if file.read(len(PNG_SIGNATURE)) == PNG_SIGNATURE:
            text = png_text(file, PNG_KEY)
        else:  # a page says it last: its tail is read, never a whole page of media
            file.seek(max(0, file.seek(0, io.SEEK_END) - MAX_TEXT_BYTES))
            text = _page_text(file.read(MAX_TEXT_BYTES))
    if text is None:
        raise ValueError(f"{shown_path(source)} carries no genwidgets grid description")
    return dict(json.loads(text))


#: the name notebooks used before :func:`read_export` was public (``gw.read_export``)
read_png_description = read_export


def _page_text(data: bytes) -> str | None:
    page = data.decode("utf-8", errors="replace")
    start = page.rfind(PAGE_SCRIPT_HEAD)
    end = page.find("</script>", start)
    return page[start + len(PAGE_SCRIPT_HEAD) : end] if start >= 0 and end >= 0 else None
