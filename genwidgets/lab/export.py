"""A grid's exports: a PNG contact sheet and a self-contained HTML page.

Both carry the grid's description as JSON (scrubbed as the ledger scrubs; the key is
never part of a grid) and open offline: docs/decisions.md#grid-export.
"""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._config import redact
from .._html import esc, json_script
from .._palette import PALETTE
from ..protocol.records import Output
from .plan import short

if TYPE_CHECKING:
    from PIL import Image as PILImage

    from .run import GridCell, GridRun

__all__ = ["AUDIO_EMBED_BYTES", "PNG_KEY", "TILE", "read_png_description", "save_html", "save_png"]

PNG_KEY = "genwidgets:grid"
TILE = 192
HEADER = 150  # room for row labels, left
LABEL_ROW = 28  # column label height
AUDIO_EMBED_BYTES = 2 * 1024 * 1024


def _description_json(run: GridRun) -> str:
    return redact(json.dumps(run.describe(), default=str, ensure_ascii=False))


def _first_visual(cell: GridCell) -> Output | None:
    for output in cell.outputs:
        if output.kind in ("image", "video"):
            return output
    return cell.outputs[0] if cell.outputs else None


def _poster(output: Output) -> PILImage.Image | None:
    """The picture of an output: the image itself, or a video's first frame."""
    from PIL import Image

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
            import av

            with av.open(io.BytesIO(data)) as container:
                for frame in container.decode(video=0):
                    return frame.to_image().convert("RGB")
        except Exception:
            return None
    return None


def _star_points(cx: float, cy: float, r: float) -> list[tuple[float, float]]:
    import math

    points = []
    for i in range(10):
        radius = r if i % 2 == 0 else r * 0.45
        angle = -math.pi / 2 + i * math.pi / 5
        points.append((cx + radius * math.cos(angle), cy + radius * math.sin(angle)))
    return points


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


MARGIN_W = 120  # the score column, right
MARGIN_H = 22  # the score row, below


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
    from PIL import Image, ImageDraw, ImageFont
    from PIL.PngImagePlugin import PngInfo

    font = ImageFont.load_default(size=13)
    xs = _axis_values(run, "x")
    ys = _axis_values(run, "y")
    legend = _legend(run)
    legend_h = 18 * len(legend) + 12
    table_h = LABEL_ROW + len(ys) * (TILE + 24) + 8
    tables = _tables(run)
    z_axis = run.axis("z")
    scores = margins(run)
    table_h += MARGIN_H if "x" in scores else 0
    width = HEADER + len(xs) * (TILE + 8) + 8 + (MARGIN_W if "y" in scores else 0)
    height = legend_h + len(tables) * (table_h + (22 if z_axis else 0))
    sheet = Image.new("RGB", (width, height), PALETTE["paper"])
    draw = ImageDraw.Draw(sheet)
    for i, line in enumerate(legend):
        draw.text(
            (8, 6 + 18 * i), line, fill=PALETTE["ink"] if i == 0 else PALETTE["muted"], font=font
        )
    top = legend_h
    for z_value, rows in tables:
        if z_axis is not None:
            draw.text(
                (8, top + 2),
                f"{z_axis.label} = {short(z_value, 60)}",
                fill=PALETTE["ink"],
                font=font,
            )
            top += 22
        for c, x_value in enumerate(xs):
            text = short(x_value, 26) if run.axis("x") else ""
            draw.text((HEADER + c * (TILE + 8), top + 6), text, fill=PALETTE["ink"], font=font)
        for r, (y_value, row) in enumerate(zip(ys, rows, strict=True)):
            y0 = top + LABEL_ROW + r * (TILE + 24)
            if run.axis("y"):
                draw.multiline_text(
                    (8, y0 + TILE // 2 - 8),
                    _wrap(short(y_value, 60), 18),
                    fill=PALETTE["ink"],
                    font=font,
                )
            for c, cell in enumerate(row):
                x0 = HEADER + c * (TILE + 8)
                if cell is not None:
                    _draw_tile(sheet, draw, font, cell, x0, y0)
            if "y" in scores:
                draw.multiline_text(
                    (HEADER + len(xs) * (TILE + 8) + 4, y0 + TILE // 2 - 8),
                    score_text(scores["y"][r]).replace(" · ", "\n", 1),
                    fill=PALETTE["ink"],
                    font=font,
                )
        if "x" in scores:
            y0 = top + LABEL_ROW + len(ys) * (TILE + 24)
            for c, score in enumerate(scores["x"]):
                draw.text(
                    (HEADER + c * (TILE + 8), y0 + 2),
                    score_text(score),
                    fill=PALETTE["ink"],
                    font=font,
                )
        top += table_h
    info = PngInfo()
    info.add_itxt(PNG_KEY, _description_json(run), zip=True)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    sheet.save(target, format="PNG", pnginfo=info)
    return target


def _wrap(text: str, width: int) -> str:
    import textwrap

    return "\n".join(textwrap.wrap(text, width)[:4]) or text


def _draw_tile(sheet: Any, draw: Any, font: Any, cell: GridCell, x0: int, y0: int) -> None:
    from .run import status_of

    result = cell.job.last_result if cell.job is not None else None
    failed = cell.error is not None or (result is not None and not result.ok)
    draw.rectangle(
        (x0, y0, x0 + TILE - 1, y0 + TILE - 1), fill=PALETTE["failed_bg" if failed else "tile"]
    )
    output = _first_visual(cell)
    picture = _poster(output) if output is not None else None
    if picture is not None:
        picture.thumbnail((TILE, TILE))
        sheet.paste(picture, (x0 + (TILE - picture.width) // 2, y0 + (TILE - picture.height) // 2))
    else:
        if failed:
            message = cell.error or (str(result.error) if result is not None else "failed")
            text, colour = _wrap("failed: " + short(message, 90), 26), PALETTE["failed_ink"]
        else:
            text = output.kind if output is not None else status_of(cell)
            colour = PALETTE["muted"]
        draw.multiline_text((x0 + 8, y0 + 8), text, fill=colour, font=font)
    if len(cell.outputs) > 1:
        badge = str(len(cell.outputs))
        draw.rounded_rectangle(
            (x0 + TILE - 26, y0 + 4, x0 + TILE - 4, y0 + 20), 7, fill=PALETTE["ink"]
        )
        draw.text((x0 + TILE - 19, y0 + 5), badge, fill=PALETTE["paper"], font=font)
    for s in range(5):
        colour = PALETTE["star" if s < cell.rating else "star_off"]
        draw.polygon(_star_points(x0 + 9 + s * 18, y0 + TILE + 11, 8), fill=colour)
    if cell.note:
        draw.text((x0 + 100, y0 + TILE + 4), short(cell.note, 14), fill=PALETTE["muted"], font=font)


def read_png_description(path: str | Path) -> dict[str, Any]:
    """The grid description a contact sheet carries (for checks and recall)."""
    from PIL import Image

    with Image.open(path) as image:
        image.load()
        text = image.text.get(PNG_KEY)
    if text is None:
        raise ValueError(f"{path} carries no {PNG_KEY} description")
    return dict(json.loads(text))


# --- the page ---------------------------------------------------------------------------

_STAR = (
    '<svg width="14" height="14" viewBox="0 0 24 24" aria-hidden="true"><path fill="{fill}" '
    'd="M12 2l2.9 6.9 7.1.6-5.4 4.7 1.7 7-6.3-3.9-6.3 3.9 1.7-7L2 9.5l7.1-.6z"/></svg>'
)
#: The page's style sheet, rule by rule, in the palette's colours.
_PAGE_RULES: dict[str, str] = {
    "body": f"font-family:system-ui,sans-serif;margin:16px;color:{PALETTE['ink']}",
    "table": "border-collapse:collapse;margin-bottom:16px",
    "th": "font-weight:600;padding:4px 8px;text-align:left;vertical-align:middle;max-width:220px",
    "td": f"border:1px solid {PALETTE['border']};padding:4px;vertical-align:top;width:220px",
    "td img": "max-width:210px;max-height:210px;display:block",
    ".failed": f"background:{PALETTE['failed_bg']};color:{PALETTE['failed_ink']}",
    ".muted": f"color:{PALETTE['muted']};font-size:0.85em",
    ".stars": "display:flex;gap:1px;margin-top:4px",
    "code": "font-size:0.8em",
    ".rid": "display:block;white-space:nowrap;overflow-x:auto;max-width:220px",
    ".score": f"background:{PALETTE['surface']};white-space:nowrap;font-size:0.85em;width:auto",
}
_PAGE_STYLE = "\n" + "".join(f"{rule}{{{body}}}\n" for rule, body in _PAGE_RULES.items())


def _data_url(mime: str, data: bytes) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def _media_html(cell: GridCell, media_dir: Path) -> str:
    parts: list[str] = []
    for output in cell.outputs:
        mime = output.content_type.split(";")[0].strip().lower()
        try:
            data = output.read()
        except Exception as exc:  # an expired URL: say so, link nothing
            parts.append(
                f'<div class="muted">{esc(output.kind)} unavailable '
                f"({esc(type(exc).__name__)})</div>"
            )
            continue
        if output.kind == "image":
            parts.append(f'<img alt="" src="{esc(_data_url(mime, data))}">')
        elif output.kind == "audio" and len(data) <= AUDIO_EMBED_BYTES:
            parts.append(
                f'<audio controls preload="none" src="{esc(_data_url(mime, data))}"></audio>'
            )
        elif output.kind in ("video", "audio"):
            local = output.path
            if local is None or not Path(local).exists():
                suffix = "." + (mime.split("/")[-1] or "bin")
                local = output.save(media_dir / f"cell{cell.index}-{output.index}{suffix}")
            poster = _poster(output) if output.kind == "video" else None
            if poster is not None:
                poster.thumbnail((TILE, TILE))
                buffer = io.BytesIO()
                poster.save(buffer, format="PNG")
                parts.append(
                    '<img alt="poster frame" '
                    f'src="{esc(_data_url("image/png", buffer.getvalue()))}">'
                )
            parts.append(f'<div class="muted">{esc(output.kind)}: <code>{esc(local)}</code></div>')
        else:
            parts.append(
                f'<pre class="muted">{esc(short(data.decode("utf-8", "replace"), 400))}</pre>'
            )
    return "".join(parts)


def _cell_html(cell: GridCell | None, media_dir: Path) -> str:
    from .run import status_of

    if cell is None:
        return "<td></td>"
    result = cell.job.last_result if cell.job is not None else None
    failed = cell.error is not None or (result is not None and not result.ok)
    body = _media_html(cell, media_dir)
    if failed:
        body += f"<div>failed: {esc(cell.error or (result.error if result else ''))}</div>"
    elif not body:
        body = f'<div class="muted">{esc(status_of(cell))}</div>'
    stars = "".join(
        _STAR.format(fill=PALETTE["star" if s < cell.rating else "star_off"]) for s in range(5)
    )
    note = f"<div>{esc(cell.note)}</div>" if cell.note else ""
    rid = f'<code class="rid">{esc(cell.request_id)}</code>' if cell.request_id else ""
    return (
        f'<td class="{"failed" if failed else ""}" data-index="{cell.index}">{body}'
        f'<div class="stars" title="{cell.rating} of 5">{stars}</div>{note}{rid}</td>'
    )


def save_html(run: GridRun, path: str | Path) -> Path:
    """Write one page that opens offline (see the module docstring); returns the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    media_dir = target.with_name(target.stem + "_media")
    xs, ys = _axis_values(run, "x"), _axis_values(run, "y")
    z_axis = run.axis("z")
    scores = margins(run)
    score_head = '<th class="muted">score</th>' if "y" in scores else ""
    score_row = (
        '<tr><th class="muted">score</th>'
        + "".join(f'<td class="score">{esc(score_text(s))}</td>' for s in scores["x"])
        + ("<td></td>" if "y" in scores else "")
        + "</tr>"
        if "x" in scores
        else ""
    )
    sections: list[str] = []
    for z_value, rows in _tables(run):
        head = f"<h3>{esc(z_axis.label)} = {esc(short(z_value, 80))}</h3>" if z_axis else ""
        columns = "".join(f"<th>{esc(short(v, 60)) if run.axis('x') else ''}</th>" for v in xs)
        body = "".join(
            f"<tr><th>{esc(short(y, 80)) if run.axis('y') else ''}</th>"
            + "".join(_cell_html(cell, media_dir) for cell in row)
            + (f'<td class="score">{esc(score_text(scores["y"][r]))}</td>' if score_head else "")
            + "</tr>"
            for r, (y, row) in enumerate(zip(ys, rows, strict=True))
        )
        sections.append(f"<table><tr><th></th>{columns}{score_head}</tr>{body}{score_row}</table>")
        sections[-1] = head + sections[-1]
    legend = "".join(f"<div>{esc(line)}</div>" for line in _legend(run))
    description = json_script(_description_json(run))
    page = (
        '<!doctype html><html><head><meta charset="utf-8">'
        f"<title>{esc(run.endpoint)} grid {esc(run.id)}</title>"
        f"<style>{_PAGE_STYLE}</style></head><body>"
        f'<header class="legend">{legend}</header>{"".join(sections)}'
        f'<script type="application/json" id="genwidgets-grid">{description}</script>'
        "</body></html>"
    )
    target.write_text(page, encoding="utf-8")
    return target
