"""Comparing models in a real JupyterLab and chromium: a 3-endpoint × 2-seed
grid renders its image cells and its video cells (kernel-made thumbnails, the
full video only in the lightbox), and a star click shows in the margin score."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from browser.frontend import (
    Frontend,
    check_page,
    notebook_text,
    open_page,
    run_all,
    serve,
    wait_for_kernel_idle,
    wait_until_all_cells_ran,
)

pytestmark = pytest.mark.browser

NOTEBOOK = "compare_lab.ipynb"
GRID_CELL = """\
import genwidgets as gw
from genwidgets.simulator import SimConfig, SimulatorServer

sim = SimulatorServer(SimConfig(speed=20), host="127.0.0.1", port=0).start()
client = gw.Client(base_url=sim.base_url, api_key="sim-demo-key")
grid = gw.grid(
    "genW2.5-t2i-preview",
    {"prompt": "a red fox in the snow", "n": 1},
    x=("endpoint", ["genW2.5-t2i-preview", "vidVq2-text2video", "vidK-v3-turbo-t2v"]),
    y=("seed", [1, 2]),
    client=client,
)
grid"""
THUMBS_LOADED_JS = """
() => {
  const cells = [...document.querySelectorAll('.gw-grid .gw-grid-cell')];
  const loaded = (c) => {
    const img = c.querySelector('.gw-grid-thumb img');
    return img && img.complete && img.naturalWidth > 0;
  };
  return cells.length === 6 && cells.every(loaded);
}
"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory: Any) -> Iterator[Frontend]:
    root = tmp_path_factory.mktemp("compare-lab")
    with serve("lab", root, extra={NOTEBOOK: notebook_text(GRID_CELL)}) as server:
        yield server


@pytest.mark.timeout(420)
def test_three_models_two_seeds_image_and_video_cells_and_a_margin_score(
    lab: Any, browser: Any
) -> None:
    lab.delete_sessions()
    with open_page(browser, lab, failure_name="failure-compare.png") as watched:
        page = watched.page
        page.set_viewport_size({"width": 1400, "height": 1000})
        page.goto(lab.page_url(NOTEBOOK), wait_until="domcontentloaded", timeout=60_000)
        wait_for_kernel_idle(page, "lab")
        run_all(page)
        wait_until_all_cells_ran(page, 1)
        grid = page.locator(".jp-Notebook .gw-grid")
        grid.wait_for(timeout=60_000)
        grid.locator(".gw-grid-progress", has_text="6 of 6 done").wait_for(timeout=180_000)
        page.wait_for_function(THUMBS_LOADED_JS, timeout=120_000)
        assert grid.locator("th.gw-grid-col").all_inner_texts() == [
            "genW2.5-t2i-preview",
            "vidVq2-text2video",
            "vidK-v3-turbo-t2v",
        ]
        kinds = grid.locator(".gw-grid-cell").evaluate_all("cs => cs.map(c => c.dataset.kind)")
        assert kinds.count("image") == 2 and kinds.count("video") == 4
        # cells hold thumbnails only: no <video> element until the lightbox opens
        assert grid.locator(".gw-grid-cell video").count() == 0
        thumbs = grid.locator(".gw-grid-cell .gw-grid-thumb img").evaluate_all(
            "imgs => imgs.map(i => [i.src.slice(0, 11), i.naturalWidth, i.naturalHeight])"
        )
        assert all(src == "data:image/" and max(w, h) <= 256 for src, w, h in thumbs)

        # a star click reaches the kernel and comes back as the margin score
        first = grid.locator('.gw-grid-cell[data-index="0"]')
        first.locator('.gw-grid-star[data-stars="4"]').click()
        column = grid.locator('.gw-grid-margin-x[data-col="0"]')
        column.filter(has_text="★ 4.0 · 1 rated").wait_for(timeout=30_000)
        row = grid.locator('.gw-grid-margin-y[data-row="0"]')
        assert "★ 4.0 · 1 rated" in row.inner_text()
        assert "★ –" in grid.locator('.gw-grid-margin-x[data-col="1"]').inner_text()

        # the lightbox of a video cell loads the full video on demand, with cURL
        grid.locator('.gw-grid-cell[data-index="1"] .gw-grid-thumb').click()
        box = grid.locator(".gw-grid-lightbox")
        box.locator("video").wait_for(timeout=30_000)
        code = box.locator(".gw-grid-code").all_inner_texts()
        assert any("$GENWIDGETS_API_KEY" in text for text in code)
        assert all("sim-demo-key" not in text for text in code)
        box.locator(".gw-grid-close").click()
        check_page(watched, page.locator(".jp-Notebook").inner_text())
