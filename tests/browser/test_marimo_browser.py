"""``notebooks/marimo_quickstart.py`` served by ``marimo run`` in a real chromium.

marimo renders anywidget front-ends (not core ipywidgets), each inside a shadow
root. The page must show a task view while its task runs (with its Cancel button),
then three finished task views whose image, video and audio
really load, and a prompt-lab grid whose two images load (its cells fill in from
the engine's thread); the test fails if any of them is missing or does not load.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from browser.frontend import (
    VIDEO_WIDTH,
    VIDEO_WIDTHS_JS,
    Frontend,
    check_page,
    open_page,
    screenshot,
    serve,
    wait_for_media,
)

from genwidgets.simulator import DEMO_KEY

pytestmark = pytest.mark.browser

NOTEBOOK = "marimo_quickstart.py"
RUN_TIMEOUT_MS = 180_000

#: The task views inside marimo's shadow roots: their status words and media counts.
VIEWS_JS = """
() => {
  const roots = [document];
  const views = [];
  while (roots.length) {
    const root = roots.pop();
    for (const el of root.querySelectorAll('*')) {
      if (el.shadowRoot) roots.push(el.shadowRoot);
    }
    views.push(...root.querySelectorAll('.gw-task, .gw-grid'));
  }
  return views.map(v => ({
    grid: v.classList.contains('gw-grid'),
    status: (v.querySelector('.gw-status') || {}).textContent,
    cancel: Boolean(v.querySelector('.gw-cancel:not([hidden]):not(:disabled)')),
    simulated: Boolean(v.querySelector('.gw-simulated:not([hidden])')),
    loaded: [...v.querySelectorAll('img')].every(i => i.complete && i.naturalWidth > 0),
    img: v.querySelectorAll('img').length,
    video: v.querySelectorAll('video').length,
    audio: v.querySelectorAll('audio').length,
  }));
}
"""


@pytest.fixture(scope="module")
def marimo(tmp_path_factory: Any) -> Iterator[Frontend]:
    with serve("marimo", tmp_path_factory.mktemp("marimo"), target=NOTEBOOK) as server:
        yield server


@pytest.mark.timeout(300)
def test_marimo_quickstart_shows_finished_views_with_image_video_and_audio(
    marimo: Frontend, browser: Any
) -> None:
    with open_page(browser, marimo, failure_name="failure-marimo.png") as watched:
        page = watched.page
        page.goto(marimo.page_url(), wait_until="domcontentloaded", timeout=60_000)
        # A live task first: the page shows a view while its task runs, with Cancel.
        page.wait_for_function(
            f"""() => ({VIEWS_JS})().some(v => !v.grid && v.status && v.status !== 'done'
                                          && v.cancel)""",
            timeout=RUN_TIMEOUT_MS,
            polling=100,
        )
        page.wait_for_function(
            f"""() => {{
              const all = ({VIEWS_JS})();
              const views = all.filter(v => !v.grid);
              const grids = all.filter(v => v.grid);
              return views.length >= 3 && views.every(v => v.status === 'done')
                && views.some(v => v.img > 0) && views.some(v => v.video > 0)
                && views.some(v => v.audio > 0)
                && grids.length === 1 && grids[0].img === 2 && grids[0].loaded;
            }}""",
            timeout=RUN_TIMEOUT_MS,
            polling=500,
        )
        views = page.evaluate(VIEWS_JS)
        assert all(v["simulated"] for v in views), views
        state = wait_for_media(page, ".gw-task, .gw-grid")
        assert state["counts"]["img"] >= 1, state
        assert state["counts"]["video"] >= 1, state
        assert state["counts"]["audio"] >= 1, state
        widths = page.evaluate(VIDEO_WIDTHS_JS)
        assert widths and set(widths) == {VIDEO_WIDTH}, widths
        screenshot(page, None, "marimo.png")
        check_page(watched, page.inner_text("body"))
        assert DEMO_KEY not in page.content()
        # an ask reaches the kernel and its answer the page here too (ask.js speaks
        # anywidget's command protocol over model.send: marimo's experimental.invoke
        # throws, docs/decisions.md#view-commands): the lightbox draws the full outputs
        grid = page.locator(".gw-grid").first
        grid.locator(".gw-grid-thumb").first.click()
        grid.locator(".gw-grid-lightbox .gw-grid-outputs img").first.wait_for(timeout=60_000)
