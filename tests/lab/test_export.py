"""Exports: the contact sheet's PNG text chunk parses back (never the key), its
tiles are the grid's thumbnails and its stars and dashes are drawn; the page is
self-contained: images and small audio embedded, video as a preview that plays (a
poster or the whole file on request), SVG never inlined, nothing that reaches for
the network, no absolute local path."""

from __future__ import annotations

import base64
import io
import json
import os
import re
import shutil
import subprocess
import tracemalloc
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from loopback import FileHost, files_gateway
from PIL import Image, ImageChops
from widgets.taskfakes import wait_for

import genwidgets as gw
from genwidgets.jobs.previews import PREVIEW_BUDGET
from genwidgets.lab import export
from genwidgets.lab.export import (
    FONT_SIZE,
    HEADER,
    LABEL_ROW,
    MARGIN_H,
    PNG_KEY,
    TILE,
    draw_text,
    read_png_description,
)
from genwidgets.media import thumbnails
from genwidgets.simulator import SimulatorServer

KEY = "sim-demo-key"

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def client(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, simulator: SimulatorServer
) -> Iterator[gw.Client]:
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path / "home"))
    made = gw.Client(base_url=simulator.base_url, api_key=KEY)
    yield made
    made.close()


class Links(HTMLParser):
    """Every URL-carrying attribute of a page, its tags, its text and its scripts' bodies."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[tuple[str, str, str]] = []
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []
        self.text: list[str] = []
        self.scripts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs.extend(attrs)
        for name, value in attrs:
            if name in ("src", "href", "poster", "data", "action") and value is not None:
                self.urls.append((tag, name, value))

    def handle_data(self, data: str) -> None:
        (self.scripts if self.tags and self.tags[-1] == "script" else self.text).append(data)


def three_by_two(client: gw.Client) -> gw.Grid:
    """A finished 3 × 2 image grid: seeds 1-3 by two prompts."""
    grid = gw.grid(
        "genW2.5-t2i-preview",
        {"prompt": "a fox", "n": 1},
        x=("seed", [1, 2, 3]),
        y=("prompt_sr", ["fox", "cat"]),
        client=client,
    )
    grid.wait(timeout=60)
    return grid


@pytest.mark.slow
def test_the_contact_sheet_carries_the_grid_as_json(client: gw.Client, tmp_path: Path) -> None:
    grid = three_by_two(client)
    grid.rate(grid.cells[2], 4, "sharp")
    path = grid.save_png(tmp_path / "sheet.png")
    with Image.open(path) as image:
        assert image.format == "PNG" and image.width > 3 * 150 and image.height > 2 * 150
    description = read_png_description(path)
    assert description["id"] == grid.id and description["endpoint"] == "genW2.5-t2i-preview"
    assert description["axes"]["x"]["values"] == [1, 2, 3]
    assert description["axes"]["y"]["kind"] == "prompt_sr"
    assert description["seed"] == grid.plan.seed
    cells = description["cells"]
    assert [c["request_id"] for c in cells] == [c.request_id for c in grid.cells]
    assert cells[2]["stars"] == 4 and cells[2]["note"] == "sharp"
    assert cells[4]["payload"] == {"prompt": "a cat", "n": 1, "seed": 2}
    raw = path.read_bytes()
    assert KEY.encode() not in raw and PNG_KEY.encode() in raw


@pytest.mark.slow
def test_the_page_opens_offline(client: gw.Client, tmp_path: Path) -> None:
    images = gw.grid(
        "genW2.5-t2i-preview", {"prompt": "a fox", "n": 1}, x=("seed", [1, 2]), client=client
    )
    video = gw.grid(
        "vidVq2-text2video", {"prompt": "a kite", "duration": 4}, x=("seed", [1]), client=client
    )
    speech = gw.grid(
        "speechM-02-turbo", {"text": "hello there"}, x=("voice_setting.speed", [1.0]), client=client
    )
    for grid in (images, video, speech):
        grid.wait(timeout=90)
    images.rate(images.cells[0], 5)
    pages = {
        name: grid.save_html(tmp_path / f"{name}.html")
        for name, grid in (("images", images), ("video", video), ("speech", speech))
    }
    for name, path in pages.items():
        text = path.read_text(encoding="utf-8")
        parser = Links()
        parser.feed(text)
        assert KEY not in text
        for tag, attr, url in parser.urls:  # nothing points at the network
            assert url.startswith("data:"), (name, tag, attr, url[:60])
        assert "<script src" not in text and "<link" not in text
        assert 'id="genwidgets-grid"' in text
        assert str(tmp_path) not in text  # paths as shown_path writes them
    image_page = pages["images"].read_text(encoding="utf-8")
    assert image_page.count('src="data:image/png;base64,') == 2
    assert image_page.count('fill="#f59e0b"') == 5  # five lit stars on the rated cell
    assert 'src="data:audio/' in pages["speech"].read_text(encoding="utf-8")
    # the video plays with nothing but the page: a preview, embedded, within its budget
    video_page = pages["video"].read_text(encoding="utf-8")
    (preview,) = re.findall(r'<video [^>]*src="data:video/mp4;base64,([^"]+)"', video_page)
    clip = base64.b64decode(preview)
    assert len(clip) <= PREVIEW_BUDGET and decoded_frames(clip) >= 2
    assert re.search(r'<video [^>]*poster="data:image/jpeg;base64,', video_page)
    local = video.cells[0].outputs[0].path
    assert local is not None and local.exists() and local.stat().st_size > len(clip)
    kept = f"{local.parent.parent.name}/{local.parent.name}"  # outputs/<gateway>/<request_id>
    assert f"full video: <code>$GENWIDGETS_HOME/outputs/{kept}/" in video_page


def decoded_frames(clip: bytes) -> int:
    import av

    with av.open(io.BytesIO(clip)) as container:
        return sum(1 for _ in container.decode(video=0))


def test_a_page_holds_each_video_as_asked(client: gw.Client, tmp_path: Path) -> None:
    video = gw.grid(
        "vidVq2-text2video", {"prompt": "a kite", "duration": 4}, x=("seed", [1]), client=client
    )
    video.wait(timeout=90)
    (output,) = video.cells[0].outputs
    whole = output.read()
    poster = video.save_html(tmp_path / "poster.html", video="poster").read_text("utf-8")
    assert "<video" not in poster and 'alt="poster frame" src="data:image/jpeg;base64,' in poster
    full = video.save_html(tmp_path / "full.html", video="full").read_text("utf-8")
    (embedded,) = re.findall(r'<video [^>]*src="data:video/mp4;base64,([^"]+)"', full)
    assert base64.b64decode(embedded) == whole
    with pytest.raises(ValueError, match="video must be one of poster, preview, full"):
        video.save_html(tmp_path / "x.html", video="all")  # type: ignore[arg-type]


def test_svg_and_html_outputs_are_never_embedded(client: gw.Client, tmp_path: Path) -> None:
    """An SVG (it can carry script) is named, never inlined as a data URL or as markup;
    an HTML output is shown as escaped text; both decided by the one rule in _html.py."""
    grid = gw.grid(
        "genW2.5-t2i-preview", {"prompt": "a fox", "n": 1}, x=("seed", [1, 2]), client=client
    )
    grid.wait(timeout=60)
    svg, page_out = grid.cells[0].outputs[0], grid.cells[1].outputs[0]
    svg.content_type, svg.path = "image/svg+xml", None
    svg._cache = (
        b'<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><script>x</script></svg>'
    )
    page_out.content_type, page_out.path = "text/html", None
    page_out._cache = b"<script>alert(2)</script>"
    page = grid.save_html(tmp_path / "grid.html").read_text("utf-8")
    assert "data:image/svg" not in page and "<svg xmlns" not in page and "onload" not in page
    assert "image image/svg+xml not embedded (not a media type a page embeds)" in page
    assert "<code>grid_media/cell0-0.svg</code>" in page and "<a " not in page  # named, no link
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in page and "alert(2)</script>" not in page


@pytest.mark.slow
def test_both_exports_carry_the_score_margins(client: gw.Client, tmp_path: Path) -> None:
    grid = gw.grid(
        "genW2.5-t2i-preview",
        {"prompt": "a fox", "n": 1},
        x=("seed", [1, 2]),
        y=("prompt_sr", ["fox", "cat"]),
        client=client,
    )
    grid.wait(timeout=60)
    grid.rate(grid.cell(x=1, y="fox"), 5)
    grid.rate(grid.cell(x=1, y="cat"), 3)
    bare = grid.save_png(tmp_path / "before.png")
    described = read_png_description(bare)
    assert described["scores"]["x"][0] == {
        "value": 1,
        "mean": 4.0,
        "rated": 2,
        "failed": 0,
        "cells": 2,
    }
    assert [r["value"] for r in described["scores"]["y"]] == ["fox", "cat"]
    page = grid.save_html(tmp_path / "grid.html").read_text(encoding="utf-8")
    assert "★ 4.0 · 2 rated" in page and "★ – · 0 rated" in page  # the x margin
    assert "★ 5.0 · 1 rated" in page and "★ 3.0 · 1 rated" in page  # the y margin
    # request ids stay whole: on one line, never broken inside
    assert "break-all" not in page and grid.cells[0].request_id is not None
    assert f'<code class="rid">{grid.cells[0].request_id}</code>' in page
    # the sheet grew a margin column and row, drawn in ink
    with Image.open(bare) as image:
        width, height = image.size
        margin = image.convert("L").crop((width - 110, 0, width, height))
        assert margin.getextrema()[0] < 128


#: The colours of an exported page, as they were before the palette moved to the base layer.
PAGE_COLOURS = {"#111827", "#e5e7eb", "#fee2e2", "#b91c1c", "#6b7280", "#f9fafb"}
STAR_COLOURS = {"#f59e0b", "#d1d5db"}
HOSTILE = "</td><script>alert(\"x\" & 'y')</script><!--"


@pytest.mark.slow
def test_the_page_shows_hostile_text_as_text_in_its_old_colours(
    client: gw.Client, tmp_path: Path
) -> None:
    """A label, a note and a request id holding markup, quotes and ``&`` read back as
    themselves; the only script is the description, which parses back whole."""
    grid = gw.grid(
        "genW2.5-t2i-preview",
        {"prompt": "a fox", "n": 1},
        x=("seed", [1]),
        y=("prompt_sr", ["fox", HOSTILE]),
        client=client,
    )
    grid.wait(timeout=60)
    grid.rate(grid.cells[0], 3, HOSTILE)
    grid.cells[1].row.request_id = HOSTILE  # as a hostile gateway could name a task
    path = grid.save_html(tmp_path / "hostile.html")
    page = path.read_text(encoding="utf-8")
    assert HOSTILE not in page
    parser = Links()
    parser.feed(page)
    parser.close()
    assert parser.tags.count("script") == 1 and "td" in parser.tags
    assert not [name for name, _ in parser.attrs if name.startswith("on")]
    shown = [text for text in parser.text if HOSTILE in text]
    assert len(shown) == 3, shown  # the row label, the note, the request id, each whole
    described = json.loads("".join(parser.scripts))
    assert described["cells"][0]["note"] == HOSTILE
    assert described["cells"][1]["request_id"] == HOSTILE
    assert described["axes"]["y"]["values"] == ["fox", HOSTILE]
    style = page[page.index("<style>") : page.index("</style>")]
    assert set(re.findall(r"#[0-9a-f]{6}", style)) == PAGE_COLOURS
    assert set(re.findall(r'fill="(#[0-9a-f]{6})"', page)) == STAR_COLOURS


def test_the_sheet_draws_stars_and_dashes_every_machine_shows() -> None:
    """★ and – are shapes, not glyphs: Pillow's default font draws both as the same
    empty box it draws for a character it lacks."""
    from PIL import ImageDraw, ImageFont

    font = ImageFont.load_default(size=FONT_SIZE)

    def drawn(text: str, *, shapes: bool) -> Image.Image:
        image = Image.new("RGB", (60, 30), "#ffffff")
        draw = ImageDraw.Draw(image)
        if shapes:
            draw_text(draw, (4, 4), text, font, "#000000")
        else:
            draw.text((4, 4), text, fill="#000000", font=font)
        return image

    def ink(image: Image.Image) -> tuple[int, int, int, int]:
        box = Image.eval(image.convert("L"), lambda v: 255 - v).getbbox()
        assert box is not None
        return box

    missing = drawn("\uffff", shapes=False)  # the font's box for a glyph it lacks
    assert ImageChops.difference(drawn("★", shapes=False), missing).getbbox() is None
    star = drawn("★", shapes=True)
    assert ImageChops.difference(star, missing).getbbox() is not None
    assert STAR_RGB in {colour for _, colour in star.getcolors(4096) or []}  # lit amber
    left, top, right, bottom = ink(drawn("–", shapes=True))
    assert bottom - top <= 3 and right - left >= 6  # a bar, not a box
    _, top, _, bottom = ink(missing)
    assert bottom - top >= 6


STAR_RGB = (0xF5, 0x9E, 0x0B)


@pytest.mark.slow
def test_a_sheet_cell_is_its_256_px_thumbnail_and_margins_carry_drawn_stars(
    client: gw.Client, tmp_path: Path
) -> None:
    from genwidgets.media.thumbnails import thumbnail

    grid = three_by_two(client)
    grid.rate(grid.cells[0], 4)
    assert TILE >= 256
    with Image.open(grid.save_png(tmp_path / "sheet.png")) as opened:
        sheet = opened.convert("RGB")
    assert sheet.width >= 3 * 256 and sheet.height >= 2 * 256
    legend_h = 20 * 3 + 12  # the endpoint and grid id, the columns, the rows
    x0, y0 = HEADER, legend_h + LABEL_ROW
    local = grid.cells[0].outputs[0].path
    assert local is not None
    made = thumbnail(local, 256)
    assert made is not None
    with Image.open(made) as small:
        expected = small.convert("RGB")
    assert expected.size == (256, 256)
    tile = sheet.crop((x0, y0, x0 + 256, y0 + 256))
    difference = list(ImageChops.difference(tile, expected).convert("L").get_flattened_data())
    assert sum(difference) / len(difference) < 6  # the same picture, 1:1 (JPEG noise aside)
    shifted = list(
        ImageChops.difference(tile, expected.transpose(0)).convert("L").get_flattened_data()
    )
    assert sum(shifted) / len(shifted) > 6  # (and the check can tell a different one)
    margin = sheet.crop((0, sheet.height - MARGIN_H, sheet.width, sheet.height))
    assert STAR_RGB in {colour for _, colour in margin.getcolors(1 << 16) or []}


def test_nothing_in_an_export_names_an_absolute_local_path(
    client: gw.Client, tmp_path: Path
) -> None:
    """A local file in the payload reads as its shown path, in a re-opened grid's too (it
    is stored so); a path typed as text under the user's home reads as ``~/...`` (local
    copies of videos: see the page test)."""
    reference = tmp_path / "ref.png"
    Image.new("RGB", (600, 600), (40, 90, 160)).save(reference)
    typed = f"{Path.home()}/refs/fox.png"
    grid = gw.grid(
        "imgQ-edit-plus",
        {"prompt": f"a fox like {typed}", "images": [reference]},
        x=("seed", [1]),
        client=client,
    )
    grid.wait(timeout=60)
    sheet = grid.save_png(tmp_path / "sheet.png")
    described = json.dumps(read_png_description(sheet))
    page = grid.save_html(tmp_path / "grid.html").read_text("utf-8")
    again = gw.load_grid(grid.id, client=client)
    reopened = json.dumps(read_png_description(again.save_png(tmp_path / "again.png")))
    for text in (described, page, reopened):
        assert str(tmp_path) not in text
        assert str(Path.home()) + "/" not in text
        assert "a fox like ~/refs/fox.png" in text
    assert json.loads(described)["cells"][0]["payload"]["images"] == ["ref.png"]
    assert json.loads(described)["base_payload"]["images"] == ["ref.png"]


@pytest.mark.browser
def test_the_pages_videos_play_offline_in_chromium(client: gw.Client, tmp_path: Path) -> None:
    """The page opened from disk with every other request refused: each preview loads
    (``readyState`` >= 2), with no media error, and nothing was asked of the network."""
    from browser.frontend import launch_chromium

    grid = gw.grid(
        "vidVq2-text2video", {"prompt": "a kite", "duration": 4}, x=("seed", [1, 2]), client=client
    )
    grid.wait(timeout=120)
    page_path = grid.save_html(tmp_path / "videos.html")
    asked: list[str] = []
    with launch_chromium() as chromium:
        page = chromium.new_page()
        page.route(
            "**/*",
            lambda route: (
                route.continue_()
                if route.request.url.startswith(("file:", "data:"))
                else (asked.append(route.request.url), route.abort())
            ),
        )
        page.goto(page_path.as_uri())
        ready = "[...document.querySelectorAll('video')].every(v => v.readyState >= 2)"
        page.wait_for_function(ready, timeout=60_000)
        states = page.evaluate(
            "[...document.querySelectorAll('video')].map(v => [v.readyState, v.error])"
        )
        page.close()
    assert len(states) == 2 and all(error is None for _, error in states), states
    assert asked == []


def test_gw_read_export_reads_back_a_sheet_and_a_page(client: gw.Client, tmp_path: Path) -> None:
    """The public way to read what an export says ran (notebook 07 uses it)."""
    grid = gw.grid(
        "genW2.5-t2i-preview", {"prompt": "a fox", "n": 1}, x=("seed", [1, 2]), client=client
    )
    grid.wait(timeout=60)
    grid.rate(grid.cells[1], 5, "</script> & more")
    sheet = gw.read_export(grid.save_png(tmp_path / "sheet.png"))
    page = gw.read_export(grid.save_html(tmp_path / "page.html"))
    assert sheet == page and sheet["id"] == grid.id
    assert sheet["cells"][1]["note"] == "</script> & more" and sheet["cells"][1]["stars"] == 5
    (tmp_path / "other.html").write_text("<html><body>hello</body></html>")
    Image.new("RGB", (8, 8)).save(tmp_path / "plain.png")
    for name in ("other.html", "plain.png"):
        with pytest.raises(ValueError, match=f"{name} carries no genwidgets grid description"):
            gw.read_export(tmp_path / name)


def test_an_export_says_which_cells_the_gateway_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make_simulator: Any
) -> None:
    """A task the gateway failed has a request id and no create error: the JSON of both
    exports said "error": None for it, as for a cell done well. Each cell carries its
    status and its trouble, as the sheet's tile and the page say them."""
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path / "home"))
    sim = make_simulator(fail_rate=0.5, seed=3)
    with gw.Client(base_url=sim.base_url, api_key=KEY) as client:
        grid = gw.grid(
            "genW2.5-t2i-preview", {"prompt": "a fox", "n": 1}, x=("seed", "1-6"), client=client
        )
        grid.wait(timeout=60)
        failed = [c.index for c in grid.cells if c.failed]
        assert failed and len(failed) < 6  # the simulator failed some cells, not all
        for saved in (grid.save_png(tmp_path / "s.png"), grid.save_html(tmp_path / "p.html")):
            cells = gw.read_export(saved)["cells"]
            assert [c["index"] for c in cells if c["status"] == "failed"] == failed
            for cell in cells:
                if cell["index"] in failed:
                    assert cell["request_id"] and cell["error"].startswith("failed: ")
                else:
                    assert (cell["status"], cell["error"]) == ("done", None)


def test_an_export_says_cancelled_and_timed_out_cells_apart_from_failed_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make_simulator: Any
) -> None:
    """A cell the person cancelled, and one past its deadline, were exported as status
    "failed" with "failed: cancelled: ...": as if the gateway had failed them. Each says
    the batch's own word and its own error."""
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path / "home"))
    sim = make_simulator(speed=0.05)  # tasks take long enough to be stopped
    with gw.Client(base_url=sim.base_url, api_key=KEY) as client:
        cancelled = gw.grid(
            "genW2.5-t2i-preview", {"prompt": "a fox", "n": 1}, x=("seed", [1]), client=client
        )
        assert wait_for(lambda: cancelled.cells[0].request_id is not None, timeout=30)
        assert cancelled.run.cancel() == 1
        timed_out = gw.grid(
            "genW2.5-t2i-preview",
            {"prompt": "a hen", "n": 1},
            x=("seed", [1]),
            client=client,
            confirm_above=0,
        )
        timed_out.run.timeout = 0.5  # a deadline: cancelled at the gateway once past it
        timed_out.submit(wait=False)
        for grid, word in ((cancelled, "cancelled"), (timed_out, "timed out")):
            grid.run.wait(timeout=60)
            assert grid.run.rows[0].state == word
            (cell,) = gw.read_export(grid.save_png(tmp_path / f"{word}.png"))["cells"]
            assert cell["status"] == word and cell["request_id"]
            assert cell["error"].startswith(word) and "failed" not in cell["error"]
            assert grid.describe()["cells"][0]["status"] == word


def test_an_export_never_decodes_or_reads_more_than_its_caps(
    client: gw.Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cell's picture past the thumbnails' pixel cap is not decoded for its tile (the
    tile says its kind), and reading back a page looks at its tail, not at all its bytes."""
    grid = gw.grid(
        "genW2.5-t2i-preview", {"prompt": "a fox", "n": 1}, x=("seed", [1]), client=client
    )
    grid.wait(timeout=60)

    def colours(sheet: Path) -> int:
        with Image.open(sheet) as opened:
            return len(opened.convert("RGB").getcolors(1 << 24) or [])

    drawn = colours(grid.save_png(tmp_path / "drawn.png"))
    monkeypatch.setattr(thumbnails, "MAX_PIXELS", 100)  # the cell's picture is now past it
    capped = colours(grid.save_png(tmp_path / "capped.png"))
    assert capped * 4 < drawn, (capped, drawn)  # its tile: a word on a plain ground
    assert gw.read_export(tmp_path / "capped.png")["id"] == grid.id
    page = grid.save_html(tmp_path / "page.html").read_bytes()
    big = tmp_path / "big.html"
    with big.open("wb") as file:  # 256 MiB of (sparse) bytes before the page
        file.seek(256 * 2**20)
        file.write(page)
    tracemalloc.start()
    try:
        said = gw.read_export(big)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert said["id"] == grid.id and peak < 128 * 2**20, peak


@pytest.mark.slow
def test_a_page_saved_again_onto_a_full_disk_keeps_the_page_saved_before(
    client: gw.Client, tmp_path: Path
) -> None:
    """The page is written whole or not at all: a full disk cut the page saved before."""
    if os.geteuid() != 0:
        pytest.skip("a small disk needs root (mount)")
    grid = three_by_two(client)
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)], check=True)
    try:
        page = grid.save_html(disk / "grid.html")
        saved = page.read_bytes()
        assert gw.read_export(page)["cells"]  # a page that reads back
        room = shutil.disk_usage(disk).free
        (disk / "other-work.bin").write_bytes(b"\0" * max(0, room - len(saved) // 2))
        with pytest.raises(OSError, match="No space left"):
            grid.save_html(page)
        assert page.read_bytes() == saved and gw.read_export(page)["cells"]
        assert sorted(p.name for p in disk.iterdir() if p.is_file()) == [
            "grid.html",
            "other-work.bin",
        ]  # no piece of the failed save left
    finally:
        subprocess.run(["umount", str(disk)], check=False, timeout=30)


def test_a_sheet_reads_at_most_its_budget_of_pictures_from_the_gateway(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cells whose videos were not downloaded: the sheet reads at most SHEET_READS of
    them from a loopback gateway for their tiles, within one deadline and none after one
    failed; each other tile says why it has no picture. (It read every cell's, one
    after another, each within its own timeout: a gateway away, minutes.)"""
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path / "home"))
    host = FileHost()
    host.outputs, host.content_type = 1, "video/mp4"  # a live grid fetches no video's
    server = files_gateway(host)
    client = gw.Client(base_url=server.base, api_key=KEY, download=False)
    tiles: list[str] = []

    def drawn(draw: Any, xy: tuple[float, float], text: str, font: Any, fill: str) -> None:
        tiles.append(text.replace("\n", " "))
        draw_text(draw, xy, text, font, fill)

    def sheet(name: str) -> list[str]:
        tiles.clear()
        grid = gw.grid(
            "genW2.5-t2i-preview", {"prompt": "a fox", "n": 1}, x=("seed", "1-5"), client=client
        )
        grid.wait(timeout=60).save_png(tmp_path / name)
        grid.close()
        return [text for text in tiles if text.startswith("video not read:")]

    monkeypatch.setattr(export, "draw_text", drawn)
    monkeypatch.setattr(export, "SHEET_READS", 3)
    try:
        said = sheet("counted.png")
        assert host.asked == 3
        assert said == ["video not read: at most 3 outputs are read from the gateway"] * 2

        host.answer = 404  # expired: the first read fails, no other is tried
        said = sheet("expired.png")
        assert host.asked == 3 + 1
        failed = "video not read: a read from the gateway failed before it: no more are made"
        assert said == [failed] * 4

        host.answer = 200
        monkeypatch.setattr(export, "SHEET_READ_SECONDS", 0.0)  # its deadline already past
        said = sheet("late.png")
        assert host.asked == 3 + 1
        assert said == ["video not read: outputs are read from the gateway for at most 0 s"] * 5
    finally:
        client.close()
        server.close()


def test_an_export_is_written_only_under_a_name_that_says_what_it_is(tmp_path: Path) -> None:
    """Review-25 fault 7: ``save_png`` wrote PNG bytes into ``sheet.html`` and
    ``save_html`` a page into ``grid.png`` (an easy slip: a lesson makes both). A name
    whose suffix says another type is refused, naming what is allowed, and nothing is
    written; a name with no suffix gets its type's."""
    from widgets.taskfakes import ForecastClient

    from genwidgets.lab import GridStore
    from genwidgets.lab.export import save_png
    from genwidgets.lab.plan import plan_grid
    from genwidgets.lab.run import GridRun
    from genwidgets.widgets.grid_sheet import save_html

    fake = ForecastClient()
    store = GridStore(tmp_path / "grids.sqlite3")
    plan = plan_grid(
        "genW2.5-t2i-preview", {"prompt": "a fox", "n": 1}, ("seed", [1, 2]), prepare=fake.prepare
    )
    run = GridRun(plan, fake, store=store)
    for name in ("sheet.html", "sheet.jpg", "sheet.PNG.txt"):
        with pytest.raises(ValueError, match=r"save_png writes a PNG: name it \.png"):
            save_png(run, tmp_path / name)
    for name in ("grid.png", "grid.txt"):
        with pytest.raises(ValueError, match=r"save_html writes a page: name it \.html"):
            save_html(run, tmp_path / name)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["grids.sqlite3"]  # nothing written
    assert save_png(run, tmp_path / "Sheet.PNG").name == "Sheet.PNG"
    assert save_png(run, tmp_path / "sheet") == tmp_path / "sheet.png"
    assert save_html(run, tmp_path / "page.htm").name == "page.htm"
    page = save_html(run, tmp_path / "page")
    assert page == tmp_path / "page.html" and page.read_bytes().startswith(b"<!doctype")
    assert (tmp_path / "sheet.png").read_bytes().startswith(b"\x89PNG")
    store.close()
