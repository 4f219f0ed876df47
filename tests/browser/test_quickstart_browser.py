"""The quickstart in JupyterLab and in Notebook 7, with a real chromium, as a student
would use it (one server of each for the module, through :mod:`frontend`).

Run All, then: fill the form's prompt and press Submit, watch the task view reach
"done" with its image, as its own output under the form; every image, video and
audio element really loads (natural size, ready state); a long task is cancelled
with its Cancel button and ends "cancelled"; each task is shown once (its live face;
its lasting face stays hidden while the kernel lives); no widget fails to display and
the page raises no error. Screenshots go to ``docs/img/`` for the README.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from browser.frontend import (
    NOTEBOOK7_STARTUP_ERROR,
    Frontend,
    check_page,
    open_page,
    run_all,
    screenshot,
    serve,
    wait_for_kernel_idle,
    wait_for_media,
    wait_until_all_cells_ran,
)

from genwidgets.simulator import DEMO_KEY

pytestmark = pytest.mark.browser

NOTEBOOK = "00_quickstart.ipynb"
TASK_TIMEOUT_MS = 60_000

#: Typed into a new cell by the test: the prompt the form really sent, then a task
#: that runs for ten minutes (the simulator's X-Sim-Duration) for the Cancel button.
PROBE_CELL = (
    'print("sent prompt:", form.last_job.payload["prompt"]); '
    "long_job = client.submit("
    '"vidVq2-text2video", {"prompt": "a very long take", "duration": 5}, '
    'headers={"X-Sim-Duration": "600"}); '
    "long_job"
)
NEW_PROMPT = "a lighthouse at dusk, oil painting"


@pytest.fixture(scope="module", params=["lab", "notebook"])
def jupyter(request: pytest.FixtureRequest, tmp_path_factory: Any) -> Iterator[Frontend]:
    with serve(request.param, tmp_path_factory.mktemp(request.param)) as server:
        yield server


@pytest.mark.timeout(300)
def test_quickstart_run_all_submit_render_and_cancel(jupyter: Frontend, browser: Any) -> None:
    import nbformat

    kind = jupyter.kind
    code_cells = sum(
        c.cell_type == "code" for c in nbformat.read(jupyter.root / NOTEBOOK, as_version=4).cells
    )
    jupyter.delete_sessions()
    with open_page(browser, jupyter, failure_name=f"failure-{kind}.png") as watched:
        page = watched.page
        page.goto(jupyter.page_url(NOTEBOOK), wait_until="domcontentloaded", timeout=60_000)
        wait_for_kernel_idle(page, kind)
        if kind == "notebook":
            # Notebook 7 (7.6.5) itself throws this while loading its settings, before
            # any cell runs or any widget exists; any other startup error still fails.
            startup, watched.page_errors[:] = list(watched.page_errors), []
            assert [e for e in startup if NOTEBOOK7_STARTUP_ERROR not in e] == []
        run_all(page)
        wait_until_all_cells_ran(page, code_cells)

        notebook = page.locator(".jp-Notebook")
        # Run All ends after the blocking waits: each code cell's task has ended, and its
        # live view stays (live for as long as the kernel), its lasting face hidden.
        views = notebook.locator(".jp-OutputArea-output .gw-task-view")
        views.nth(2).wait_for(timeout=TASK_TIMEOUT_MS)
        assert views.count() >= 3
        for i in range(views.count()):
            views.nth(i).locator(".gw-status-done").wait_for(timeout=TASK_TIMEOUT_MS)
            views.nth(i).locator(".gw-output").first.wait_for(timeout=TASK_TIMEOUT_MS)
        page.wait_for_function(
            "() => document.querySelectorAll('.jp-Notebook .gw-lasting').length >= 6",
            timeout=TASK_TIMEOUT_MS,
        )
        assert notebook.locator(".gw-lasting:visible").count() == 0  # shown once
        assert notebook.locator(".gw-simulated:visible").count() >= 1

        # The form: a new prompt, one click on Submit, a task view that ends "done"
        # with its image, as the form cell's own output (not inside the form).
        cell = notebook.locator(".jp-CodeCell").filter(
            has=page.locator("button", has_text="Submit")
        )
        form = cell.locator(".jp-OutputArea-output").filter(
            has=page.locator("button", has_text="Submit")
        )
        assert form.count() == 1
        form.locator("textarea").first.fill(NEW_PROMPT)
        form.locator("button", has_text="Submit").click()
        submitted = cell.locator(".gw-task-view")
        submitted.locator(".gw-status-done").wait_for(timeout=TASK_TIMEOUT_MS)
        submitted.locator("img").first.wait_for(timeout=TASK_TIMEOUT_MS)
        assert form.locator(".gw-task-view").count() == 0
        screenshot(page, cell, f"quickstart-{kind}.png")

        # Every image, video and audio element of the outputs really loads.
        state = wait_for_media(page, ".jp-Notebook .jp-OutputArea-output")
        assert state["counts"]["img"] >= 2, state  # the form's and the code cell's
        assert state["counts"]["video"] >= 1, state
        assert state["counts"]["audio"] >= 1, state
        if kind == "lab":
            video = notebook.locator(".jp-OutputArea-output video:visible").last
            screenshot(page, video, "quickstart-media.png")

        # A long task in a new cell, cancelled with its button.
        last_cell = notebook.locator(".jp-Cell").last
        last_cell.locator(".jp-InputPrompt").click()
        page.keyboard.press("Escape")
        page.keyboard.press("b")
        new_cell = notebook.locator(".jp-Cell").last
        new_cell.locator(".cm-content").click()
        page.keyboard.insert_text(PROBE_CELL)
        page.keyboard.press("Control+Enter")  # run in place: no new cell below
        new_cell.locator(".jp-OutputArea-output", has_text=f"sent prompt: {NEW_PROMPT}").wait_for()
        view = new_cell.locator(".gw-task-view")
        view.locator(".gw-status-running").wait_for(timeout=TASK_TIMEOUT_MS)
        view.locator("button", has_text="Cancel").click()
        # ended: the live view says so in grey, with no error line
        status = new_cell.locator(".gw-status-cancelled", has_text="cancelled").first
        status.wait_for(timeout=TASK_TIMEOUT_MS)
        assert new_cell.locator(".gw-error").count() == 0
        if kind == "lab":
            screenshot(page, new_cell, "quickstart-cancel.png")

        check_page(watched, notebook.inner_text())
        assert DEMO_KEY not in page.content()
