"""The form's and the board's layout in JupyterLab, measured in a real chromium.

A form whose image list holds a local file, inline data and a missing file (so a
long "Cannot submit" reason), and a board of jobs whose values are long unbroken
words, at a wide and a narrow window: every list row's delete button lies inside
its row, Submit and Reset keep their width and full caption, the long reason sits
below them, the inline item shows a thumbnail, and no two cards overlap or leave
the board. Screenshots go to ``docs/img/`` (``form-layout.png``, ``board.png``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import jupyter_env  # tests/jupyter_env.py (tests/ is on pytest's pythonpath)
import pytest
from browser.frontend import (
    Frontend,
    check_page,
    notebook_text,
    open_page,
    run_all,
    screenshot,
    serve,
    wait_for_kernel_idle,
    wait_until_all_cells_ran,
)

pytestmark = pytest.mark.browser

NOTEBOOK = "layout.ipynb"
CELLS = (
    """\
import base64, io, tempfile
from pathlib import Path
from PIL import Image
import genwidgets as gw

client = gw.Client()
folder = Path(tempfile.mkdtemp(prefix="gw-layout-"))
meadow = folder / "meadow.png"
Image.new("RGB", (640, 480), "skyblue").save(meadow)
buffer = io.BytesIO()
Image.new("RGB", (320, 240), "orange").save(buffer, "PNG")
inline = "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()
missing = "/nowhere/" + "a-very-long-folder-name-" * 6 + "meadow.png"
""",
    """\
form = gw.form("imgQ-edit-plus", client=client, prompt="a kite", n=1,
               images=[meadow, inline, missing])
form
""",
    """\
jobs = [
    client.submit("genW2.5-t2i-preview", {"prompt": f"{i}-" + "an-unbroken-kite-prompt-" * 12,
                                           "n": 1, "seed": i})
    for i in range(5)
]
for job in jobs:
    job.result(timeout=120)
board = gw.board(client)
board
""",
)

#: The boxes of the form's parts, measured in the page.
FORM_BOXES_JS = """(output) => {
  const box = (el) => { const r = el.getBoundingClientRect();
    return {left: r.left, right: r.right, top: r.top, bottom: r.bottom, width: r.width}; };
  const rows = [...output.querySelectorAll('.gw-list-row')].map((row) => ({
    row: box(row), remove: box(row.querySelector('.gw-remove')) }));
  const buttons = [...output.querySelectorAll('.gw-form-actions button')].map((b) => ({
    text: b.textContent.trim(), box: box(b), clipped: b.scrollWidth > b.clientWidth + 1 }));
  const reason = output.querySelector('.gw-form-reason');
  const thumbs = [...output.querySelectorAll('.gw-list-row img')]
    .filter((img) => img.getBoundingClientRect().width > 0 && img.naturalWidth > 0).length;
  return {area: box(output), rows, buttons, reason: box(reason),
          reasonText: reason.textContent, thumbs};
}"""

CARD_BOXES_JS = """(board) => {
  const box = (el) => { const r = el.getBoundingClientRect();
    return {left: r.left, right: r.right, top: r.top, bottom: r.bottom}; };
  return {board: box(board),
          cards: [...board.querySelectorAll('.gw-card')].map((c) => box(c.parentElement))};
}"""


def _overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    return (
        min(a["right"], b["right"]) - max(a["left"], b["left"]) > 0.5
        and min(a["bottom"], b["bottom"]) - max(a["top"], b["top"]) > 0.5
    )


@pytest.fixture(scope="module")
def lab(tmp_path_factory: Any) -> Iterator[Frontend]:
    root = tmp_path_factory.mktemp("layout")
    # at the lessons' speed: the layout of finished tasks is measured, not their pace
    layout = {NOTEBOOK: notebook_text(*CELLS)}
    with serve("lab", root, extra=layout, sim_speed=jupyter_env.LESSON_SIM_SPEED) as server:
        yield server


@pytest.mark.timeout(400)
def test_form_rows_buttons_and_board_cards_fit_at_every_width(lab: Frontend, browser: Any) -> None:
    with open_page(browser, lab, failure_name="failure-layout.png") as watched:
        page = watched.page
        page.goto(lab.page_url(NOTEBOOK), wait_until="domcontentloaded", timeout=60_000)
        wait_for_kernel_idle(page, "lab")
        run_all(page)
        wait_until_all_cells_ran(page, len(CELLS))
        notebook = page.locator(".jp-Notebook")
        form = notebook.locator(".jp-OutputArea-output").filter(
            has=page.locator(".gw-form-actions")
        )
        board = notebook.locator(".gw-board")
        board.locator(".gw-card").nth(4).wait_for(timeout=60_000)
        form.locator(".gw-list-row img").first.wait_for(timeout=30_000)
        for width in (1280, 640):
            page.set_viewport_size({"width": width, "height": 900})
            page.wait_for_timeout(300)  # let the layout settle (a picture, not an assertion)
            boxes = form.evaluate(FORM_BOXES_JS)
            assert len(boxes["rows"]) == 3
            for row in boxes["rows"]:
                assert row["remove"]["width"] >= 30
                inside = min(row["row"]["right"], boxes["area"]["right"])
                assert row["remove"]["right"] <= inside + 1
            submit, reset = boxes["buttons"][:2]
            assert (submit["text"], reset["text"]) == ("Submit", "Reset")
            assert not submit["clipped"] and not reset["clipped"]
            assert submit["box"]["width"] >= 100 and reset["box"]["width"] >= 100
            assert "no such file" in boxes["reasonText"]
            assert boxes["reason"]["top"] >= submit["box"]["bottom"] - 1  # below the buttons
            assert boxes["thumbs"] >= 2  # the local file's and the inline data's
            if width == 1280:
                screenshot(page, form, "form-layout.png")

            cards = board.evaluate(CARD_BOXES_JS)
            assert len(cards["cards"]) == 5
            for i, card in enumerate(cards["cards"]):
                assert card["right"] <= cards["board"]["right"] + 1, (width, i)
                for other in cards["cards"][i + 1 :]:
                    assert not _overlap(card, other), (width, card, other)
            if width == 1280:
                screenshot(page, board, "board.png")
        title = board.locator(".gw-param").first.get_attribute("title") or ""
        assert "an-unbroken-kite-prompt-" * 12 in title  # the whole value, as a tooltip
        check_page(watched, notebook.inner_text())
