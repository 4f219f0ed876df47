"""The prompt-lab grid in a real JupyterLab and chromium: a 3 × 2 grid runs on
the embedded simulator, every cell shows its image (really loaded), a click on
a star goes to the kernel and lands in the ledger's file. The screenshot goes
to ``docs/img/grid.png`` for the README."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from browser.frontend import (
    SCREENSHOTS,
    Frontend,
    check_page,
    notebook_text,
    open_page,
    run_all,
    serve,
    wait_for_kernel_idle,
    wait_until_all_cells_ran,
)

from genwidgets.lab.store import GridStore

pytestmark = pytest.mark.browser

NOTEBOOK = "grid_lab.ipynb"
GRID_CELL = """\
import genwidgets as gw

grid = gw.grid(
    "genW2.5-t2i-preview",
    {"prompt": "a fox in the snow", "n": 1},
    x=("seed", [1, 2, 3]),
    y=("prompt_sr", ["fox", "cat"]),
)
grid"""
IMAGES_LOADED_JS = """
() => {
  const imgs = [...document.querySelectorAll('.gw-grid .gw-grid-cell .gw-grid-thumb img')];
  return imgs.length === 6 && imgs.every(i => i.complete && i.naturalWidth > 0);
}
"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory: Any) -> Iterator[Frontend]:
    root = tmp_path_factory.mktemp("grid-lab")
    with serve("lab", root, extra={NOTEBOOK: notebook_text(GRID_CELL)}) as server:
        yield server


@pytest.mark.timeout(300)
def test_a_grid_shows_every_image_and_keeps_a_star(lab: Any, browser: Any) -> None:
    ledger_file = lab.root.parent / "env" / "genwidgets-home" / "ledger.sqlite3"
    lab.delete_sessions()
    with open_page(browser, lab, failure_name="failure-grid.png") as watched:
        page = watched.page
        page.set_viewport_size({"width": 1280, "height": 1000})
        page.goto(lab.page_url(NOTEBOOK), wait_until="domcontentloaded", timeout=60_000)
        wait_for_kernel_idle(page, "lab")
        run_all(page)
        wait_until_all_cells_ran(page, 1)
        grid = page.locator(".jp-Notebook .gw-grid")
        grid.wait_for(timeout=60_000)
        page.wait_for_function(IMAGES_LOADED_JS, timeout=60_000)
        assert grid.locator(".gw-grid-progress", has_text="6 of 6 done").count() == 1
        headers = grid.locator("th.gw-grid-col").all_inner_texts()
        assert headers == ["1", "2", "3"]
        assert grid.locator("th.gw-grid-row").all_inner_texts() == ["fox", "cat"]

        first = grid.locator('.gw-grid-cell[data-index="0"]')
        first.locator('.gw-grid-star[data-stars="4"]').click()
        first.locator(".gw-grid-star-on").nth(3).wait_for(timeout=30_000)
        assert first.locator(".gw-grid-star-on").count() == 4

        store = GridStore(ledger_file)
        try:
            (record,) = store.grids()
            assert store.ratings(record.id) == {0: (4, None)}
            assert all(c.request_id for c in record.cells)
        finally:
            store.close()

        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        grid.scroll_into_view_if_needed()
        page.wait_for_timeout(300)
        grid.screenshot(path=str(SCREENSHOTS / "grid.png"))

        # enlarge: the lightbox shows the image, the payload and the request id
        first.locator(".gw-grid-thumb").click()
        box = grid.locator(".gw-grid-lightbox")
        box.locator(".gw-grid-meta", has_text=record.cells[0].request_id or "").wait_for()
        assert '"seed": 1' in box.locator(".gw-grid-payload").inner_text()

        box.locator(".gw-grid-close").click()

        # recall: the cell's pencil opens the endpoint's form, pre-filled, under the grid
        grid.locator('.gw-grid-cell[data-index="4"] .gw-grid-recall').click()
        output = page.locator(".jp-Notebook .jp-OutputArea-output").first
        prompt = output.locator("textarea").first
        prompt.wait_for(timeout=30_000)
        assert prompt.input_value() == "a cat in the snow"

        check_page(watched, page.locator(".jp-Notebook").inner_text())
