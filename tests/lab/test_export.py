"""Exports: the contact sheet's PNG text chunk parses back (never the key), and
the page is self-contained: images and small audio embedded, video as a poster
frame with its local path, nothing that reaches for the network."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest
from PIL import Image

import genwidgets as gw
from genwidgets.lab.export import PNG_KEY, read_png_description
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


def test_the_contact_sheet_carries_the_grid_as_json(client: gw.Client, tmp_path: Path) -> None:
    grid = gw.grid(
        "genW2.5-t2i-preview",
        {"prompt": "a fox", "n": 1},
        x=("seed", [1, 2, 3]),
        y=("prompt_sr", ["fox", "cat"]),
        client=client,
    )
    grid.wait(timeout=60)
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
    image_page = pages["images"].read_text(encoding="utf-8")
    assert image_page.count('src="data:image/png;base64,') == 2
    assert image_page.count('fill="#f59e0b"') == 5  # five lit stars on the rated cell
    assert 'src="data:audio/' in pages["speech"].read_text(encoding="utf-8")
    video_page = pages["video"].read_text(encoding="utf-8")
    assert 'alt="poster frame" src="data:image/png;base64,' in video_page
    local = video.cells[0].outputs[0].path
    assert local is not None and local.exists() and str(local) in video_page


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
    grid.cells[1].request_id = HOSTILE  # as a hostile gateway could name a task
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
