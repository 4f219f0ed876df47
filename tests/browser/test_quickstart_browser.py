"""The quickstart in a real JupyterLab and a real chromium, as a student would use it.

Run All, then: fill the form's prompt and press Submit, watch the task view reach
"done"; the image, video and audio elements really load (natural size, ready
state); a long task is cancelled with its Cancel button and ends "cancelled";
no widget fails to display and the page raises no error. Screenshots go to
``docs/img/`` for the README.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from genwidgets._config import DEMO_KEY

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
SCREENSHOTS = REPO / "docs" / "img"
NOTEBOOK = "00_quickstart.ipynb"
KERNEL_DISPLAY_NAME = "Python 3 (ipykernel)"
RUN_ALL_TIMEOUT_MS = 150_000
TASK_TIMEOUT_MS = 60_000
MEDIA_TIMEOUT_MS = 30_000
BROKEN_WIDGET_TEXTS = ("Error displaying widget", "model not found", "Could not create model")

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

#: Every <img> in the outputs loaded (natural size); every <video>/<audio> has at
#: least its metadata (ready state >= 1). Returns the elements still loading.
MEDIA_STATE_JS = """
() => {
  const out = document.querySelectorAll('.jp-Notebook .jp-OutputArea-output');
  const pending = [];
  let counts = {img: 0, video: 0, audio: 0};
  for (const area of out) {
    for (const img of area.querySelectorAll('img')) {
      counts.img += 1;
      if (!(img.complete && img.naturalWidth > 0)) pending.push('img ' + img.src.slice(0, 80));
    }
    for (const tag of ['video', 'audio']) {
      for (const el of area.querySelectorAll(tag)) {
        counts[tag] += 1;
        if (el.readyState < 1) {
          const err = el.error ? ' error ' + el.error.code : '';
          pending.push(tag + ' ' + (el.currentSrc || el.src).slice(0, 80) + err);
        }
      }
    }
  }
  return {counts, pending};
}
"""


def wait_for_kernel_idle(page: Any) -> None:
    """The status bar's "<kernel> | Idle" (the toolbar says idle too early)."""
    page.locator(
        ".jp-StatusBar-TextItem", has_text=re.compile(rf"{re.escape(KERNEL_DISPLAY_NAME)} \| Idle")
    ).first.wait_for(timeout=60_000)


def run_all(page: Any) -> None:
    page.locator("li.lm-MenuBar-item", has_text="Run").first.click()
    page.locator("li.lm-Menu-item", has_text="Run All Cells").first.click()


def wait_until_all_cells_ran(page: Any, code_cells: int) -> None:
    """Every code cell shows an execution number and none is queued or running."""
    page.wait_for_function(
        """(n) => {
          const cells = document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt');
          const prompts = [...cells].map(p => p.textContent.trim());
          return prompts.length === n && prompts.every(t => /^\\[\\d+\\]:$/.test(t));
        }""",
        arg=code_cells,
        timeout=RUN_ALL_TIMEOUT_MS,
    )


def media_state(page: Any) -> dict[str, Any]:
    result: dict[str, Any] = page.evaluate(MEDIA_STATE_JS)
    return result


def screenshot(page: Any, locator: Any, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    locator.scroll_into_view_if_needed()
    page.wait_for_timeout(300)
    path = SCREENSHOTS / name
    page.screenshot(path=str(path))
    return path


@pytest.mark.timeout(300)
def test_quickstart_run_all_submit_render_and_cancel(lab: Any, browser: Any) -> None:
    import nbformat

    code_cells = sum(
        c.cell_type == "code" for c in nbformat.read(lab.root / NOTEBOOK, as_version=4).cells
    )
    lab.delete_sessions()
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(30_000)
    page_errors: list[str] = []
    console_errors: list[str] = []
    page.on("pageerror", lambda exc: page_errors.append(str(exc)))
    page.on(
        "console",
        lambda msg: console_errors.append(msg.text) if msg.type == "error" else None,
    )
    try:
        page.goto(lab.notebook_url(NOTEBOOK), wait_until="domcontentloaded", timeout=60_000)
        wait_for_kernel_idle(page)
        run_all(page)
        wait_until_all_cells_ran(page, code_cells)

        notebook = page.locator(".jp-Notebook")
        views = notebook.locator(".gw-task-view")
        assert views.count() >= 3
        # Run All ends after the blocking waits; each view shows "done" by then.
        for i in range(views.count()):
            views.nth(i).locator(".gw-status-done").wait_for(timeout=TASK_TIMEOUT_MS)
        assert notebook.locator(".gw-simulated").count() >= 1

        # The form: a new prompt, one click on Submit, a task view that ends "done"
        # and an image in the form's output.
        form = notebook.locator(".jp-OutputArea-output").filter(
            has=page.locator("button", has_text="Submit")
        )
        assert form.count() == 1
        form.locator("textarea").first.fill(NEW_PROMPT)
        submit = form.locator("button", has_text="Submit")
        submit.click()
        form.locator(".gw-task-view .gw-status-done").wait_for(timeout=TASK_TIMEOUT_MS)
        # The final outputs of a task submitted by the button land under the form.
        form.locator("img").first.wait_for(timeout=TASK_TIMEOUT_MS)
        screenshot(page, form, "quickstart.png")

        # Every image, video and audio element of the outputs really loads.
        page.wait_for_function(
            f"() => ({MEDIA_STATE_JS})().pending.length === 0", timeout=MEDIA_TIMEOUT_MS
        )
        state = media_state(page)
        assert state["counts"]["img"] >= 2, state  # the form's and the code cell's
        assert state["counts"]["video"] >= 1, state
        assert state["counts"]["audio"] >= 1, state
        video = notebook.locator(".jp-OutputArea-output video").last
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
        cancel = new_cell.locator(".gw-task-view button", has_text="Cancel")
        new_cell.locator(".gw-task-view .gw-status-running").wait_for(timeout=TASK_TIMEOUT_MS)
        cancel.click()
        new_cell.locator(".gw-task-view .gw-status-failed", has_text="cancelled").wait_for(
            timeout=TASK_TIMEOUT_MS
        )
        new_cell.locator(".gw-final", has_text="cancelled").wait_for(timeout=TASK_TIMEOUT_MS)
        screenshot(page, new_cell, "quickstart-cancel.png")

        text = notebook.inner_text()
        assert [t for t in BROKEN_WIDGET_TEXTS if t.lower() in text.lower()] == []
        assert DEMO_KEY not in page.content()
        assert page_errors == []
        assert [e for e in console_errors if "widget" in e.lower() or "model" in e.lower()] == []
    except Exception:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(lab.root) / "failure.png"))
        print(f"failure screenshot: {lab.root / 'failure.png'}; server log: {lab.log}")
        raise
    finally:
        page.close()
