"""The quickstart served as an app by Voilà, in a real chromium.

Voilà renders a cell's outputs once: a display update sent from the engine
thread after the cell ended never reaches the page (jupyter-testing.md). The
task views carry their own outputs as widget state, so every task's outputs
must render here: images load, videos and audios reach a ready state. The
form's Submit works in the app, a long task is cancelled with its button, and
no widget error shows. A prompt-lab grid served the same way shows every
cell's image.
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
    notebook_text,
    open_page,
    screenshot,
    serve,
    wait_for_media,
)

from genwidgets.simulator import DEMO_KEY

pytestmark = pytest.mark.browser

NOTEBOOK = "00_quickstart.ipynb"
#: Written next to the quickstart: one task that runs ten minutes, for Cancel.
CANCEL_NOTEBOOK = "cancel_probe.ipynb"
CANCEL_SOURCE = (
    "import genwidgets as gw\n"
    "client = gw.Client()\n"
    'job = client.submit("vidVq2-text2video", {"prompt": "a very long take", "duration": 5},'
    ' headers={"X-Sim-Duration": "600"})\n'
    "job"
)
GRID_NOTEBOOK = "grid_app.ipynb"
GRID_SOURCE = (
    "import genwidgets as gw\n"
    'grid = gw.grid("genW2.5-t2i-preview", {"prompt": "a fox in the snow", "n": 1},'
    ' x=("seed", [1, 2]), y=("prompt_sr", ["fox", "cat"]))\n'
    "grid"
)
GRID_IMAGES_LOADED_JS = """
() => {
  const imgs = [...document.querySelectorAll('.gw-grid .gw-grid-cell .gw-grid-thumb img')];
  return imgs.length === 4 && imgs.every(i => i.complete && i.naturalWidth > 0);
}
"""
RENDER_TIMEOUT_MS = 180_000
TASK_TIMEOUT_MS = 60_000


@pytest.fixture(scope="module")
def voila(tmp_path_factory: Any) -> Iterator[Frontend]:
    extra = {
        CANCEL_NOTEBOOK: notebook_text(CANCEL_SOURCE),
        GRID_NOTEBOOK: notebook_text(GRID_SOURCE),
    }
    with serve("voila", tmp_path_factory.mktemp("voila"), extra=extra) as server:
        yield server


@pytest.mark.timeout(420)
def test_quickstart_app_shows_every_task_output_and_the_form_submits(
    voila: Frontend, browser: Any
) -> None:
    with open_page(browser, voila, failure_name="failure-voila.png") as watched:
        page = watched.page
        page.goto(voila.page_url(NOTEBOOK), wait_until="domcontentloaded", timeout=60_000)
        views = page.locator(".gw-task-view")
        # Voilà runs the notebook before it shows it: the three tasks of the code cells.
        views.nth(2).wait_for(timeout=RENDER_TIMEOUT_MS)
        count = views.count()
        assert count >= 3
        for i in range(count):
            views.nth(i).locator(".gw-status-done").wait_for(timeout=TASK_TIMEOUT_MS)
            # The outputs come with the view: Voilà never receives the later display update.
            views.nth(i).locator(".gw-output").first.wait_for(timeout=TASK_TIMEOUT_MS)
        state = wait_for_media(page, ".gw-task-view")
        assert state["counts"]["img"] >= 1, state
        assert state["counts"]["video"] >= 1, state
        assert state["counts"]["audio"] >= 1, state
        assert page.locator(".gw-placeholder:visible").count() == 0
        widths = page.evaluate(VIDEO_WIDTHS_JS)
        assert widths and set(widths) == {VIDEO_WIDTH}, widths
        screenshot(page, views.nth(count - 1), "voila.png")

        # The app's form: Submit, then a task view that ends "done" with its image, in
        # the form cell's output under the form (the live faces only: the lasting ones
        # stay hidden while the kernel lives).
        form = page.locator(".jp-OutputArea-output").filter(
            has=page.locator("button", has_text="Submit")
        )
        assert form.count() == 1 and form.locator(".gw-task-view").count() == 0
        form.locator("button", has_text="Submit").click()
        sent = form.locator(".gw-form-reason", has_text="submitted: ")
        sent.wait_for(timeout=TASK_TIMEOUT_MS)
        request_id = sent.inner_text().split("submitted: ", 1)[1].strip()
        new_view = views.filter(has=page.locator(".gw-request-id", has_text=request_id))
        new_view.locator(".gw-status-done").wait_for(timeout=TASK_TIMEOUT_MS)
        new_view.locator("img").first.wait_for(timeout=TASK_TIMEOUT_MS)
        wait_for_media(page, ".gw-task-view")
        assert page.locator(".gw-lasting:visible").count() == 0
        screenshot(page, form, "voila-form.png")

        check_page(watched, page.inner_text("body"))
        assert DEMO_KEY not in page.content()


@pytest.mark.timeout(300)
def test_cancel_button_works_in_an_app(voila: Frontend, browser: Any) -> None:
    with open_page(browser, voila, failure_name="failure-voila-cancel.png") as watched:
        page = watched.page
        page.goto(voila.page_url(CANCEL_NOTEBOOK), wait_until="domcontentloaded", timeout=60_000)
        view = page.locator(".gw-task-view")
        view.locator(".gw-status-running").wait_for(timeout=RENDER_TIMEOUT_MS)
        view.locator("button", has_text="Cancel").click()
        view.locator(".gw-status-cancelled", has_text="cancelled").wait_for(timeout=TASK_TIMEOUT_MS)
        assert (
            view.locator("button", has_text="Cancel").count() == 0
            or not view.locator("button", has_text="Cancel").is_visible()
        )
        check_page(watched, page.inner_text("body"))


@pytest.mark.timeout(300)
def test_a_prompt_lab_grid_app_shows_every_image(voila: Frontend, browser: Any) -> None:
    with open_page(browser, voila, failure_name="failure-voila-grid.png") as watched:
        page = watched.page
        page.goto(voila.page_url(GRID_NOTEBOOK), wait_until="domcontentloaded", timeout=60_000)
        grid = page.locator(".gw-grid")
        grid.wait_for(timeout=RENDER_TIMEOUT_MS)
        page.wait_for_function(GRID_IMAGES_LOADED_JS, timeout=TASK_TIMEOUT_MS, polling=250)
        grid.locator(".gw-grid-progress", has_text="4 of 4 done").wait_for(timeout=TASK_TIMEOUT_MS)
        screenshot(page, grid, "voila-grid.png")
        check_page(watched, page.inner_text("body"))
