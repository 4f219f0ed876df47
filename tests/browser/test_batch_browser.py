"""A batch's live view in a real JupyterLab and chromium: eight product photos sent on the
embedded simulator two at a time; the view counts them while they run (the screenshot for
the README, ``docs/img/batch.png``), then shows every one done with its picture loaded,
its lasting face present but hidden while the kernel lives."""

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
    screenshot,
    serve,
    wait_for_kernel_idle,
    wait_until_all_cells_ran,
)

pytestmark = pytest.mark.browser

NOTEBOOK = "batch_lab.ipynb"
BATCH_CELL = """\
import tempfile

import genwidgets as gw

items = ["a blue ceramic mug", "a brass desk lamp", "a canvas tote bag", "a leather satchel",
         "a paper floor lamp", "a speckled stoneware mug", "a wool scarf", "a walnut tray"]
rows = [{"sku": f"SKU-{i}", "item": item, "seed": i + 1} for i, item in enumerate(items)]
batch = gw.batch(
    "genW2.5-t2i-preview",
    rows,
    {"prompt": "{item}, product photo", "seed": "{seed}", "n": 1},
    out=tempfile.mkdtemp(),
    filenames="{sku}-{slug}.{ext}",
    concurrency=2,
)
batch"""
DONE_JS = """
(n) => {
  const b = document.querySelector('.jp-Notebook .gw-batch .gw-batch-count-done b');
  const shown = document.querySelectorAll('.jp-Notebook .gw-batch .gw-batch-thumb img');
  return b !== null && Number(b.textContent) >= n && shown.length >= Number(b.textContent);
}
"""
THUMBS_LOADED_JS = """
() => {
  const imgs = [...document.querySelectorAll('.jp-Notebook .gw-batch .gw-batch-thumb img')];
  return imgs.length === 8 && imgs.every(i => i.complete && i.naturalWidth > 0);
}
"""

LASTING_DONE_JS = """
() => [...document.querySelectorAll('.jp-Notebook [data-gw-lasting]')]
  .some(face => face.textContent.includes('8 done'))
"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory: Any) -> Iterator[Frontend]:
    root = tmp_path_factory.mktemp("batch-lab")
    with serve("lab", root, extra={NOTEBOOK: notebook_text(BATCH_CELL)}) as server:
        yield server


@pytest.mark.timeout(300)
def test_the_live_view_counts_while_it_runs_and_shows_every_picture(lab: Any, browser: Any) -> None:
    lab.delete_sessions()
    with open_page(browser, lab, failure_name="failure-batch.png") as watched:
        page = watched.page
        page.set_viewport_size({"width": 1100, "height": 760})
        page.goto(lab.page_url(NOTEBOOK), wait_until="domcontentloaded", timeout=60_000)
        wait_for_kernel_idle(page, "lab")
        run_all(page)
        wait_until_all_cells_ran(page, 1)
        view = page.locator(".jp-Notebook .gw-batch")
        view.wait_for(timeout=60_000)
        page.wait_for_function(DONE_JS, arg=2, timeout=120_000)
        if int(view.locator(".gw-batch-count-done b").inner_text()) < 8:  # still running
            assert view.locator(".gw-batch-cancel").count() == 1  # Cancel all while it runs
        screenshot(page, view, "batch.png")
        page.wait_for_function(DONE_JS, arg=8, timeout=180_000)
        page.wait_for_function(THUMBS_LOADED_JS, timeout=60_000)
        assert "of 8" in view.locator(".gw-batch-counts").inner_text()
        assert view.locator(".gw-batch-simulated").count() == 1
        assert "spent 8 images" in view.locator(".gw-batch-meta").inner_text()
        # its lasting face is there, under it, and out of sight while the kernel lives
        lasting = page.locator(".jp-Notebook [data-gw-lasting]")
        page.wait_for_function(LASTING_DONE_JS, timeout=60_000)  # rewritten as it ended
        assert lasting.count() == 1 and not lasting.is_visible()
        captions = view.locator(".gw-batch-thumb figcaption").all_inner_texts()
        assert sorted(c.split(": ", 1)[1] for c in captions)[0].startswith("SKU-0-a-blue")
        check_page(watched, "batch")
