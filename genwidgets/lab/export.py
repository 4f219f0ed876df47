"""A grid's exports: a PNG contact sheet and a self-contained HTML page.

Both carry the grid's description as JSON (scrubbed as the ledger scrubs; the key is
never part of a grid), open offline and name no absolute local path. The sheet draws
its own stars and dashes (no font has to have them): docs/decisions.md#grid-export.
"""

from __future__ import annotations

import base64
import io
import json
import math
import re
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from .._config import home, redact, shown_path
from .._html import SAFE_DATA_MIME, Html, join, json_script, safe_mime, tag
from .._palette import PALETTE
from ..jobs.previews import preview_bytes
from ..media.thumbnails import DEFAULT_SIDE, data_url, thumbnail
from ..protocol.records import Output
from .plan import short
from .run import status_of

if TYPE_CHECKING:
    from PIL import Image as PILImage

    from .run import GridCell, GridRun

__all__ = [
    "AUDIO_EMBED_BYTES",
    "PNG_KEY",
    "TILE",
    "VIDEO_EMBEDS",
    "VideoEmbed",
    "draw_text",
    "local_paths_shown",
    "read_export",
    "read_png_description",
    "save_html",
    "save_png",
]

PNG_KEY = "genwidgets:grid"
#: a sheet's tile: the grid's own thumbnail size, so a cell is never smaller there
TILE = DEFAULT_SIDE
HEADER = 170  # room for row labels, left
LABEL_ROW = 28  # column label height
FONT_SIZE = 14
AUDIO_EMBED_BYTES = 2 * 1024 * 1024


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


def _description_json(run: GridRun) -> str:
    described = json.dumps(run.describe(), default=str, ensure_ascii=False)
    return local_paths_shown(redact(described))


def _first_visual(cell: GridCell) -> Output | None:
    for output in cell.outputs:
        if output.kind in ("image", "video"):
            return output
    return cell.outputs[0] if cell.outputs else None


def _poster(output: Output) -> PILImage.Image | None:
    """The picture of an output: the image itself, or a video's first frame."""
    from PIL import Image  # noqa: PLC0415 - Pillow loads only when an export draws

    try:
        data = output.read()
    except Exception:  # an expired URL, a missing file: the tile says so
        return None
    if output.kind == "image":
        try:
            image = Image.open(io.BytesIO(data))
            image.load()
            return image.convert("RGB")
        except Exception:
            return None
    if output.kind == "video":
        try:
            import av  # noqa: PLC0415 - PyAV loads only when an export reads a video

            with av.open(io.BytesIO(data)) as container:
                for frame in container.decode(video=0):
                    return frame.to_image().convert("RGB")
        except Exception:
            return None
    return None


def _star_points(cx: float, cy: float, r: float) -> list[tuple[float, float]]:

    points = []
    for i in range(10):
        radius = r if i % 2 == 0 else r * 0.45
        angle = -math.pi / 2 + i * math.pi / 5
        points.append((cx + radius * math.cos(angle), cy + radius * math.sin(angle)))
    return points


#: characters the sheet draws as shapes: fonts lack them (Pillow's default font draws
#: ★, – and × as empty boxes), and a sheet must read the same on every machine
DRAWN = frozenset("★–—×")


def draw_text(draw: Any, xy: tuple[float, float], text: str, font: Any, fill: str) -> None:
    """``text`` (lines split at ``\n``) at ``xy``: runs of ordinary characters with
    ``font``, each of :data:`DRAWN` as a shape of the text's size (a star in the
    star colour, a dash, a cross in ``fill``)."""
    ascent, descent = font.getmetrics()
    x0, y = xy
    for line in text.split("\n"):
        x, run = float(x0), ""
        for char in line + "\0":
            if char not in DRAWN and char != "\0":
                run += char
                continue
            if run:
                draw.text((x, y), run, fill=fill, font=font)
                x += font.getlength(run)
                run = ""
            if char != "\0":
                x += _draw_shape(draw, char, x, y + ascent * 0.62, ascent, fill)
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


def _axis_values(run: GridRun, direction: str) -> list[Any]:
    axis = run.axis(direction)
    return list(axis.values) if axis is not None else [None]


def _legend(run: GridRun) -> list[str]:
    lines = [f"{run.endpoint} · grid {run.id}"]
    for direction, name in (("x", "columns"), ("y", "rows"), ("z", "tables")):
        axis = run.axis(direction)
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
        axis = run.axis(direction)
        if axis is None:
            continue
        rows = {json.dumps(r["value"], default=str): r for r in run.scores(direction)}
        found[direction] = [rows[json.dumps(v, default=str)] for v in axis.values]
    return found


def _tables(run: GridRun) -> list[tuple[Any, list[list[GridCell | None]]]]:
    """For each z value: the rows (y) of columns (x) of cells."""
    nz, ny, nx = run.plan.shape
    tables: list[list[list[GridCell | None]]] = [
        [[None] * nx for _ in range(ny)] for _ in range(nz)
    ]
    for cell in run.cells:
        t, r, c = cell.place
        tables[t][r][c] = cell
    return list(zip(_axis_values(run, "z"), tables, strict=True))


def save_png(run: GridRun, path: str | Path) -> Path:
    """Write the contact sheet (see the module docstring); returns the path."""
    from PIL import Image, ImageDraw, ImageFont  # noqa: PLC0415 - Pillow loads only when an export draws
    from PIL.PngImagePlugin import PngInfo  # noqa: PLC0415 - Pillow loads only when an export draws

    font = ImageFont.load_default(size=FONT_SIZE)
    xs = _axis_values(run, "x")
    ys = _axis_values(run, "y")
    legend = _legend(run)
    legend_h = 20 * len(legend) + 12
    row_h = TILE + 26  # a tile and its stars
    table_h = LABEL_ROW + len(ys) * row_h + 8
    tables = _tables(run)
    z_axis = run.axis("z")
    scores = margins(run)
    table_h += MARGIN_H if "x" in scores else 0
    width = HEADER + len(xs) * (TILE + 8) + 8 + (MARGIN_W if "y" in scores else 0)
    height = legend_h + len(tables) * (table_h + (24 if z_axis else 0))
    sheet = Image.new("RGB", (width, height), PALETTE["paper"])
    draw = ImageDraw.Draw(sheet)
    for i, line in enumerate(legend):
        colour = PALETTE["ink"] if i == 0 else PALETTE["muted"]
        draw_text(draw, (8, 6 + 20 * i), line, font, colour)
    top = legend_h
    for z_value, rows in tables:
        if z_axis is not None:
            label = f"{z_axis.label} = {short(z_value, 60)}"
            draw_text(draw, (8, top + 2), label, font, PALETTE["ink"])
            top += 24
        for c, x_value in enumerate(xs):
            text = short(x_value, 34) if run.axis("x") else ""
            draw_text(draw, (HEADER + c * (TILE + 8), top + 6), text, font, PALETTE["ink"])
        for r, (y_value, row) in enumerate(zip(ys, rows, strict=True)):
            y0 = top + LABEL_ROW + r * row_h
            if run.axis("y"):
                label = _wrap(short(y_value, 80), 20)
                draw_text(draw, (8, y0 + TILE // 2 - 10), label, font, PALETTE["ink"])
            for c, cell in enumerate(row):
                if cell is not None:
                    _draw_tile(sheet, draw, font, cell, HEADER + c * (TILE + 8), y0)
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
    info.add_itxt(PNG_KEY, _description_json(run), zip=True)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    sheet.save(target, format="PNG", pnginfo=info)
    return target


def _wrap(text: str, width: int) -> str:

    return "\n".join(textwrap.wrap(text, width)[:4]) or text


def _draw_tile(sheet: Any, draw: Any, font: Any, cell: GridCell, x0: int, y0: int) -> None:

    trouble = cell.trouble
    draw.rectangle(
        (x0, y0, x0 + TILE - 1, y0 + TILE - 1), fill=PALETTE["failed_bg" if trouble else "tile"]
    )
    output = _first_visual(cell)
    picture = _poster(output) if output is not None else None
    if picture is not None:
        picture.thumbnail((TILE, TILE))
        sheet.paste(picture, (x0 + (TILE - picture.width) // 2, y0 + (TILE - picture.height) // 2))
    else:
        if trouble:
            text, colour = _wrap(short(trouble, 128), 32), PALETTE["failed_ink"]
        else:
            text = output.kind if output is not None else status_of(cell)
            colour = PALETTE["muted"]
        draw_text(draw, (x0 + 8, y0 + 8), text, font, colour)
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


PAGE_SCRIPT_ID = "genwidgets-grid"
_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def read_export(path: str | Path) -> dict[str, Any]:
    """What ran, as a grid's export says it: the description a contact sheet
    (``grid.save_png``) or a page (``grid.save_html``) carries, as a dict:
    ``endpoint``, ``axes``, ``base_payload``, ``cells`` (each one's payload, request
    id, stars and note) and ``scores``. A file that carries none is a ValueError."""
    source = Path(path)
    with source.open("rb") as file:
        png = file.read(len(_PNG_MAGIC)) == _PNG_MAGIC
    text = _png_text(source) if png else _page_text(source)
    if text is None:
        raise ValueError(f"{shown_path(source)} carries no genwidgets grid description")
    return dict(json.loads(text))


#: the name notebooks used before :func:`read_export` was public (``gw.read_export``)
read_png_description = read_export


def _png_text(source: Path) -> str | None:
    from PIL import Image  # noqa: PLC0415 - Pillow loads only when an export draws

    with Image.open(source) as image:
        image.load()
        found = image.text.get(PNG_KEY)
    return found if isinstance(found, str) else None


def _page_text(source: Path) -> str | None:
    page = source.read_text(encoding="utf-8", errors="replace")
    head = f'<script type="application/json" id="{PAGE_SCRIPT_ID}">'
    start = page.rfind(head)
    end = page.find("</script>", start)
    return page[start + len(head) : end] if start >= 0 and end >= 0 else None


# --- the page ---------------------------------------------------------------------------

_STAR_PATH = "M12 2l2.9 6.9 7.1.6-5.4 4.7 1.7 7-6.3-3.9-6.3 3.9 1.7-7L2 9.5l7.1-.6z"
#: The page's style sheet, rule by rule, in the palette's colours.
_PAGE_RULES: dict[str, str] = {
    "body": f"font-family:system-ui,sans-serif;margin:16px;color:{PALETTE['ink']}",
    "table": "border-collapse:collapse;margin-bottom:16px",
    "th": "font-weight:600;padding:4px 8px;text-align:left;vertical-align:middle;max-width:220px",
    "td": f"border:1px solid {PALETTE['border']};padding:4px;vertical-align:top;width:220px",
    "td img": "max-width:210px;max-height:210px;display:block",
    "td video": "max-width:210px;max-height:210px;display:block",
    ".failed": f"background:{PALETTE['failed_bg']};color:{PALETTE['failed_ink']}",
    ".muted": f"color:{PALETTE['muted']};font-size:0.85em",
    ".stars": "display:flex;gap:1px;margin-top:4px",
    "code": "font-size:0.8em",
    ".rid": "display:block;white-space:nowrap;overflow-x:auto;max-width:220px",
    ".score": f"background:{PALETTE['surface']};white-space:nowrap;font-size:0.85em;width:auto",
}
_PAGE_STYLE = "\n" + "".join(f"{rule}{{{body}}}\n" for rule, body in _PAGE_RULES.items())


#: What a page holds of each video: its poster frame, a short small preview that
#: plays offline (the default), or the whole file.
VideoEmbed = Literal["poster", "preview", "full"]
VIDEO_EMBEDS: tuple[str, ...] = get_args(VideoEmbed)


def _data_url(content_type: str, data: bytes) -> str | None:
    """``data`` as a ``data:`` URL when its type is one a page may embed (the one
    list, :data:`~genwidgets._html.SAFE_DATA_MIME`: no SVG, no HTML); else ``None``."""
    mime = safe_mime(content_type)
    if mime is None or mime not in SAFE_DATA_MIME:
        return None
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def _local_copy(output: Output, cell: GridCell, media_dir: Path) -> Path:
    """The output's file: the ledger's download, else a copy written beside the page."""
    if output.path is not None and output.path.exists():
        return output.path
    return output.save(media_dir / f"cell{cell.index}-{output.index}")  # its type's extension


def _where(local: Path, media_dir: Path, *, link: bool = True) -> Html:
    """Where the full file is, as the page says it: a copy beside the page by its
    relative path (a link, so it opens offline, unless ``link`` is False: a file of
    an unsafe type is never one click from being opened as a document), else the
    ledger's copy as a shown path."""
    if local.parent != media_dir:
        return tag("code", None, shown_path(local))
    relative = f"{media_dir.name}/{local.name}"
    return tag("a", {"href": relative}, relative) if link else tag("code", None, relative)


def _poster_url(local: Path) -> str | None:

    made = thumbnail(local, TILE)
    return data_url(made) if made is not None else None


def _video_html(output: Output, data: bytes, local: Path, media_dir: Path, video: str) -> Html:
    """A video as the page shows it (see :data:`VideoEmbed`), then where the file is."""

    poster = _poster_url(local)
    source, said = None, "video"
    if video == "full":
        source, said = _data_url(output.content_type, data), "video"
    elif video == "preview":
        made = preview_bytes(local)
        source = _data_url("video/mp4", made) if made is not None else None
        said = "preview (first seconds, small, silent); full video"
    shown: Html | None = None
    if source is not None:
        shown = tag(
            "video",
            {
                "controls": True,
                "muted": True,
                "loop": True,
                "playsinline": True,
                "preload": "metadata",
                "poster": poster,
                "src": source,
            },
        )
    elif poster is not None:
        shown = tag("img", {"alt": "poster frame", "src": poster})
        said = "video" if video == "poster" else "video (not embedded)"
    else:
        said = "video (not embedded)"
    return join([shown, _muted(f"{said}: ", _where(local, media_dir))])


def _muted(*children: Any) -> Html:
    return tag("div", {"class": "muted"}, *children)


def _unembedded(output: Output, local: Path, media_dir: Path, why: str, *, safe: bool) -> Html:
    kind = f"{output.kind} {safe_mime(output.content_type) or ''} not embedded ({why}): "
    return _muted(kind, _where(local, media_dir, link=safe))


def _output_html(output: Output, cell: GridCell, media_dir: Path, video: str) -> Html:
    try:
        data = output.read()
    except Exception as exc:  # an expired URL: say so, link nothing
        return _muted(f"{output.kind} unavailable ({type(exc).__name__})")
    if output.kind not in ("image", "video", "audio"):
        return tag("pre", {"class": "muted"}, short(data.decode("utf-8", "replace"), 400))
    url = _data_url(output.content_type, data)
    if output.kind == "image" and url is not None:
        return tag("img", {"alt": "", "src": url})
    small = len(data) <= AUDIO_EMBED_BYTES or video == "full"
    if output.kind == "audio" and url is not None and small:
        return tag("audio", {"controls": True, "preload": "none", "src": url})
    local = _local_copy(output, cell, media_dir)
    if output.kind == "video" and url is not None:
        return _video_html(output, data, local, media_dir, video)
    if url is None:  # SVG, a malformed type: never inlined, never linked
        why = "not a media type a page embeds"
        return _unembedded(output, local, media_dir, why, safe=False)
    why = f"over {AUDIO_EMBED_BYTES // 2**20} MB"
    return _unembedded(output, local, media_dir, why, safe=True)


def _star(lit: bool) -> Html:
    path = tag("path", {"fill": PALETTE["star" if lit else "star_off"], "d": _STAR_PATH})
    attrs = {"width": "14", "height": "14", "viewBox": "0 0 24 24", "aria-hidden": "true"}
    return tag("svg", attrs, path)


def _cell_html(cell: GridCell | None, media_dir: Path, video: str) -> Html:

    if cell is None:
        return tag("td")
    trouble = cell.trouble
    body = join(_output_html(o, cell, media_dir, video) for o in cell.outputs)
    if trouble:
        body = join([body, tag("div", None, trouble)])
    elif not body:
        body = _muted(status_of(cell))
    stars = tag(
        "div",
        {"class": "stars", "title": f"{cell.rating} of 5"},
        *(_star(s < cell.rating) for s in range(5)),
    )
    return tag(
        "td",
        {"class": "failed" if trouble else "", "data-index": cell.index},
        body,
        stars,
        tag("div", None, cell.note) if cell.note else None,
        tag("code", {"class": "rid"}, cell.request_id) if cell.request_id else None,
    )


def save_html(run: GridRun, path: str | Path, *, video: VideoEmbed = "preview") -> Path:
    """Write one page that opens offline (see the module docstring); returns the path.

    Images and audio are embedded; each video as ``video``: ``"preview"`` (a short,
    small, silent clip that plays, at most 300 KB), ``"poster"`` (its first frame) or
    ``"full"`` (the whole file: a heavy page). SVG and other types a page must not
    inline are named, never embedded."""
    if video not in VIDEO_EMBEDS:
        raise ValueError(f"video must be one of {', '.join(VIDEO_EMBEDS)}, not {video!r}")
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    media_dir = target.with_name(target.stem + "_media")
    xs, ys = _axis_values(run, "x"), _axis_values(run, "y")
    z_axis = run.axis("z")
    scores = margins(run)
    score_head = tag("th", {"class": "muted"}, "score") if "y" in scores else None
    score_row = (
        tag(
            "tr",
            None,
            tag("th", {"class": "muted"}, "score"),
            *(tag("td", {"class": "score"}, score_text(s)) for s in scores["x"]),
            tag("td") if "y" in scores else None,
        )
        if "x" in scores
        else None
    )
    sections: list[Html] = []
    for z_value, rows in _tables(run):
        head = tag("h3", None, f"{z_axis.label} = {short(z_value, 80)}") if z_axis else None
        columns = [tag("th", None, short(v, 60) if run.axis("x") else "") for v in xs]
        body = [
            tag(
                "tr",
                None,
                tag("th", None, short(y, 80) if run.axis("y") else ""),
                *(_cell_html(cell, media_dir, video) for cell in row),
                tag("td", {"class": "score"}, score_text(scores["y"][r])) if score_head else None,
            )
            for r, (y, row) in enumerate(zip(ys, rows, strict=True))
        ]
        table = tag(
            "table", None, tag("tr", None, tag("th"), *columns, score_head), *body, score_row
        )
        sections.append(join([head, table]))
    legend = tag("header", {"class": "legend"}, *(tag("div", None, line) for line in _legend(run)))
    description = json_script(_description_json(run))
    page = (  # the description's <script> is data, written as read_export finds it
        '<!doctype html><html><head><meta charset="utf-8">'
        f"{tag('title', None, f'{run.endpoint} grid {run.id}')}"
        f"<style>{_PAGE_STYLE}</style></head><body>"
        f"{legend}{join(sections)}"
        f'<script type="application/json" id="{PAGE_SCRIPT_ID}">{description}</script>'
        "</body></html>"
    )
    target.write_text(local_paths_shown(page), encoding="utf-8")
    return target
