"""Live while the kernel lives, lasting after it: the first hour in a real JupyterLab.

One JupyterLab, as a learner uses it: ``07_prompt_tuning`` Run All, then another
cell, then a star clicked and a note typed on a finished grid cell (the kernel's
``grid.cell(...)`` has them, the score margin moves, the lightbox opens) and the grid
displayed again (a live grid); ``00_quickstart`` Run All and its form's Submit. Both
saved with the default settings (no widget state), then a killed kernel's views say
so. Then the server is stopped (its kernels with it) and started again, and both
notebooks are reopened in JupyterLab (and the quickstart in Notebook 7): every task
(the form's included), grid and rendered output shows its lasting face, every image
and audio loads, every video plays (``readyState`` >= 2, no media error), each full-file
link resolves, no request goes to a port of the stopped servers, and nothing reads
"model not found". Last, nbconvert's HTML of the saved quickstart opens offline with
the same lasting faces. Screenshots go to ``docs/img/`` (README "Where it runs").
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jupyter_env  # tests/jupyter_env.py (tests/ is on pytest's pythonpath)
import nbformat
import pytest
from browser.frontend import (
    BROKEN_WIDGET_TEXTS,
    NOTEBOOK7_STARTUP_ERROR,
    Frontend,
    open_page,
    run_all,
    screenshot,
    serve,
    wait_for_kernel_idle,
    wait_until_all_cells_ran,
)

from genwidgets.simulator import DEMO_KEY

pytestmark = [pytest.mark.browser, pytest.mark.notebook]

LAB_NOTEBOOK = "07_prompt_tuning.ipynb"
QUICKSTART = "00_quickstart.ipynb"
TASK_TIMEOUT_MS = 120_000
RENDER_TIMEOUT_MS = 60_000
NOTE = "seen in the browser"

#: Every lasting face on the page: whether it shows, its media and their state.
LASTING_JS = """
() => [...document.querySelectorAll('.gw-lasting')].map(face => ({
  shown: face.offsetParent !== null,
  text: face.textContent.slice(0, 200),
  final: face.querySelectorAll('.gw-final').length,
  placeholder: face.querySelectorAll('.gw-placeholder').length,
  sheet: face.querySelectorAll('.gw-grid-sheet').length,
  images: [...face.querySelectorAll('img')].map(i => i.complete && i.naturalWidth > 0),
  media: [...face.querySelectorAll('video, audio')].map(m => ({
    tag: m.tagName, ready: m.readyState, error: m.error ? m.error.code : null,
    data: (m.currentSrc || m.src).startsWith('data:')})),
  links: [...face.querySelectorAll('a[href*="/genwidgets/outputs/"]')].map(a => a.href),
}))
"""


@dataclass
class Played:
    """What the first server's session left and saw."""

    root: Path
    ports: set[int] = field(default_factory=set)
    kernel_had: str = ""
    margin_before: str = ""
    margin_after: str = ""
    lightbox_request_id: str = ""
    again_live_stars: int = 0
    stopped: list[dict[str, Any]] = field(default_factory=list)
    clock: tuple[str, str] = ("", "")


def run_new_cell(page: Any, code: str) -> Any:
    """Add a code cell at the end of the notebook, run it in place, return it."""
    notebook = page.locator(".jp-Notebook")
    notebook.locator(".jp-Cell").last.locator(".jp-InputPrompt").click()
    page.keyboard.press("Escape")
    page.keyboard.press("b")
    cell = notebook.locator(".jp-Cell").last
    cell.locator(".cm-content").click()
    page.keyboard.insert_text(code)
    page.keyboard.press("Control+Enter")
    return cell


def save(page: Any) -> None:
    """Save with the default settings (no widget state) and wait until it is saved."""
    page.locator(".jp-Notebook").first.click(position={"x": 5, "y": 5})
    page.keyboard.press("Escape")
    page.keyboard.press("Control+s")
    page.wait_for_function(
        "() => !document.querySelector('.lm-TabBar-tab.jp-mod-current.jp-mod-dirty')",
        timeout=RENDER_TIMEOUT_MS,
    )


def code_cells(name: str) -> int:
    notebook = nbformat.read(jupyter_env.NOTEBOOKS / name, as_version=4)
    return sum(c.cell_type == "code" for c in notebook.cells)


def open_and_run_all(page: Any, server: Frontend, name: str) -> None:
    page.goto(server.page_url(name), wait_until="domcontentloaded", timeout=60_000)
    wait_for_kernel_idle(page, "lab")
    run_all(page)
    wait_until_all_cells_ran(page, code_cells(name))


def play_the_prompt_lab(page: Any, server: Frontend, played: Played) -> None:
    """07: Run All, another cell, then rate and annotate a finished grid cell."""
    open_and_run_all(page, server, LAB_NOTEBOOK)
    grid = page.locator(".jp-Notebook .gw-grid").first
    grid.locator(".gw-grid-progress", has_text="9 of 9 done").wait_for(timeout=TASK_TIMEOUT_MS)
    run_new_cell(page, 'print("another cell ran")').locator(
        ".jp-OutputArea-output", has_text="another cell ran"
    ).wait_for(timeout=RENDER_TIMEOUT_MS)
    margin = grid.locator('.gw-grid-margin-x[data-col="0"]')
    margin.filter(has_text="1 rated").wait_for(timeout=RENDER_TIMEOUT_MS)
    played.margin_before = margin.inner_text()
    cell = grid.locator('.gw-grid-cell[data-index="0"]')  # seed 1, "at dusk": not rated
    cell.scroll_into_view_if_needed()
    cell.locator('.gw-grid-star[data-stars="3"]').click()
    cell.locator(".gw-grid-star-on").nth(2).wait_for(timeout=RENDER_TIMEOUT_MS)
    note = cell.locator(".gw-grid-note")
    note.fill(NOTE)
    note.press("Enter")
    margin.filter(has_text="2 rated").wait_for(timeout=RENDER_TIMEOUT_MS)
    played.margin_after = margin.inner_text()
    screenshot(page, grid, "grid-rating.png")
    cell.locator(".gw-grid-thumb").click()
    box = grid.locator(".gw-grid-lightbox")
    box.locator(".gw-grid-outputs img").first.wait_for(timeout=RENDER_TIMEOUT_MS)
    played.lightbox_request_id = box.locator(".gw-grid-meta").first.inner_text()
    box.locator(".gw-grid-close").click()
    probe = run_new_cell(
        page,
        'best = grid.cell(x=1, y="at dusk"); print("kernel has:", best.rating, best.note)',
    )
    out = probe.locator(".jp-OutputArea-output", has_text="kernel has:")
    out.wait_for(timeout=RENDER_TIMEOUT_MS)
    played.kernel_had = out.inner_text()
    again = run_new_cell(page, "grid").locator(".gw-grid")
    again.locator('.gw-grid-cell[data-index="0"] .gw-grid-star-on').nth(2).wait_for(
        timeout=RENDER_TIMEOUT_MS
    )
    played.again_live_stars = again.locator(".gw-grid-star:not([disabled])").count()
    save(page)


def play_the_quickstart(page: Any, server: Frontend, played: Played) -> None:
    """00: Run All and the form's Submit, saved; then its kernel is killed."""
    open_and_run_all(page, server, QUICKSTART)
    notebook = page.locator(".jp-Notebook")
    form_cell = notebook.locator(".jp-CodeCell").filter(
        has=page.locator("button", has_text="Submit")
    )
    form_cell.locator("button", has_text="Submit").click()
    # The form's list holds the task form.submit() sent in code (done by now) and then
    # the click's: wait for the second, or the page is saved with it just submitted.
    form_cell.locator(".gw-task-view .gw-status-done").nth(1).wait_for(timeout=TASK_TIMEOUT_MS)
    done = "() => document.querySelectorAll('.jp-Notebook .gw-task-view .gw-status-done')"
    # the form's two tasks, the job of form.submit() where it was sent, the video, the voice
    page.wait_for_function(f"{done}.length >= 5", timeout=TASK_TIMEOUT_MS)
    # A lasting face is rewritten a moment after its live view says done (on the
    # kernel's lasting-face worker, thumbnails made): saved before, it keeps the task
    # as last seen. The page holds the faces (hidden while the kernel lives): wait.
    page.wait_for_function(
        "() => !document.querySelector('.jp-Notebook .gw-lasting .gw-placeholder')",
        timeout=TASK_TIMEOUT_MS,
    )
    save(page)
    # A killed kernel: its views say so within a few seconds, their clocks stop, and
    # the Cancel of a task still running is disabled (this cell is never saved).
    killer = run_new_cell(
        page,
        "import os, signal, time\n"
        'long_job = client.submit("vidVq2-text2video", {"prompt": "a long take", '
        '"duration": 5}, headers={"X-Sim-Duration": "600"})\n'
        "display(long_job)\ntime.sleep(3)\nos.kill(os.getpid(), signal.SIGKILL)",
    )
    running = killer.locator(".gw-task-view")
    running.locator(".gw-status-running").wait_for(timeout=TASK_TIMEOUT_MS)
    page.wait_for_function(
        "() => [...document.querySelectorAll('.jp-Notebook .gw-task-view')]"
        ".every(v => { const s = v.querySelector('.gw-stopped'); return s && !s.hidden; })",
        timeout=TASK_TIMEOUT_MS,
    )
    first = running.locator(".gw-elapsed").inner_text()
    page.wait_for_timeout(1500)  # a clock still ticking shows a new tenth of a second
    played.clock = (first, running.locator(".gw-elapsed").inner_text())
    played.stopped = page.evaluate(
        """() => [...document.querySelectorAll('.jp-Notebook .gw-task-view')].map(v => ({
          stopped: v.querySelector('.gw-stopped').textContent,
          status: v.querySelector('.gw-status').textContent,
          cancel: v.querySelector('.gw-cancel').disabled,
        }))"""
    )


@pytest.fixture(scope="module")
def played(browser: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Played]:
    """The first server's session (see the module docstring); its server stopped."""
    root = tmp_path_factory.mktemp("lasting")
    result = Played(root)
    # its kernels at the lessons' speed (as tests/notebooks runs both notebooks): what is
    # checked is what the views show and save, and the killed kernel's task asks 600 s
    with serve("lab", root, sim_speed=jupyter_env.LESSON_SIM_SPEED) as server:
        result.ports.add(urlsplit(server.url).port or 0)
        with open_page(browser, server, failure_name="failure-live-lab.png") as watched:
            page = watched.page
            page.set_viewport_size({"width": 1280, "height": 1000})
            play_the_prompt_lab(page, server, result)
            play_the_quickstart(page, server, result)
            result.ports.update(
                int(p) for p in re.findall(r"127\.0\.0\.1:(\d+)", page.content()) if p
            )
    yield result


def test_a_finished_grid_stays_live_in_jupyterlab(played: Played) -> None:
    assert played.kernel_had.strip() == f"kernel has: 3 {NOTE}"
    assert played.margin_before != played.margin_after
    assert "★ 2.5 · 2 rated" in played.margin_after  # 2 (in the notebook) and 3 (clicked)
    assert played.lightbox_request_id.startswith("request id: ")
    assert played.again_live_stars == 45  # displayed again: 9 cells of 5 live stars


def test_a_killed_kernels_views_say_so_and_stop(played: Played) -> None:
    assert played.stopped and all(
        v["stopped"] == "kernel stopped: re-run, or client.resume() re-attaches"
        for v in played.stopped
    ), played.stopped
    running = [v for v in played.stopped if v["status"] == "running"]
    assert running and all(v["cancel"] for v in running)  # Cancel disabled
    assert played.clock[0] == played.clock[1]  # the clock stopped


def check_reopened(page: Any, server: Frontend, name: str, *, grid: bool) -> list[Any]:
    """Reopen ``name`` on a new server: the lasting faces, all in sight and whole."""
    page.goto(server.page_url(name), wait_until="domcontentloaded", timeout=60_000)
    page.locator(".jp-Notebook .gw-lasting").first.wait_for(timeout=RENDER_TIMEOUT_MS)
    wait_for_kernel_idle(page, server.kind)  # the widget manager has restored what it can
    page.wait_for_function(
        "() => ![...document.querySelectorAll('.jp-Notebook .jp-OutputArea-output')]"
        ".some(o => o.offsetParent && o.textContent.includes('Loading widget'))",
        timeout=RENDER_TIMEOUT_MS,
    )
    for face in page.locator(".jp-Notebook .gw-lasting").all():
        face.scroll_into_view_if_needed()  # media of cells out of view load too
    page.wait_for_function(
        f"""() => ({LASTING_JS})().every(f => f.images.every(Boolean)
              && f.media.every(m => m.error === null && m.ready >= (m.tag === 'VIDEO' ? 2 : 1)))""",
        timeout=RENDER_TIMEOUT_MS,
    )
    faces = page.evaluate(LASTING_JS)
    assert faces and all(f["shown"] for f in faces), [f["text"] for f in faces if not f["shown"]]
    assert all(f["placeholder"] == 0 for f in faces)  # every task had ended when saved
    assert all(m["data"] for f in faces for m in f["media"])  # played from the notebook
    # every output in sight (cells out of view have no innerText: read their text)
    shown = page.evaluate(
        "() => [...document.querySelectorAll('.jp-Notebook .jp-OutputArea-child')]"
        ".filter(c => c.offsetParent !== null).map(c => c.textContent)"
    )
    broken = [t for t in shown if any(b.lower() in t.lower() for b in BROKEN_WIDGET_TEXTS)]
    assert broken == [], broken[:3]
    for link in {link for f in faces for link in f["links"]}:
        # as a click on it would: from the page (same origin, with its referrer)
        status, kind = page.evaluate(
            "async (u) => { const r = await fetch(u);"
            " return [r.status, r.headers.get('content-type')]; }",
            link,
        )
        assert status == 200 and kind.split("/")[0] in {"image", "video", "audio"}, link
    if grid:
        sheets = [f for f in faces if f["sheet"]]
        assert len(sheets) >= 4  # the lighthouse, the kites, the unsent one, the comparison
        assert NOTE in (page.locator(".jp-Notebook .gw-grid-sheet").first.text_content() or "")
        unsent = page.locator(".jp-Notebook .gw-sheet-unsent")  # the grid above confirm_above
        assert "not sent when last seen: 12 tasks planned" in (unsent.first.text_content() or "")
        board = page.locator(".jp-Notebook .gw-board-lasting")  # the board: a table
        assert board.count() == 1 and board.locator("tr").count() >= 3  # one row a grid
        assert board.locator("img.gw-thumb").count() >= 3
    return faces


@pytest.mark.timeout(900)
def test_saved_notebooks_reopen_with_every_lasting_face_the_kernel_gone(
    played: Played, browser: Any
) -> None:
    with serve("lab", played.root) as server:
        with open_page(browser, server, failure_name="failure-reopened-lab.png") as watched:
            page = watched.page
            page.set_viewport_size({"width": 1280, "height": 1000})
            requests: list[str] = []
            page.on("request", lambda r: requests.append(r.url))
            faces = check_reopened(page, server, LAB_NOTEBOOK, grid=True)
            sheet = page.locator(".jp-Notebook .gw-grid-sheet").first
            assert 'title="3 of 5"' in sheet.inner_html()
            assert "2.5 · 2 rated" in (sheet.text_content() or "")
            screenshot(page, sheet, "reopened-grid.png")
            faces = check_reopened(page, server, QUICKSTART, grid=False)
            finals = [f for f in faces if f["final"]]
            assert len(finals) >= 4  # the form's tasks, the job, the video, the voice
            assert max(f["final"] for f in finals) == 2  # the form's: sent in code, clicked
            media = [m["tag"] for f in faces for m in f["media"]]
            assert media.count("VIDEO") >= 2 and media.count("AUDIO") >= 2
            assert sum(len(f["images"]) for f in faces) >= 2  # the two pictures
            form = page.locator(".jp-Notebook .gw-form-lasting")
            assert form.count() == 1 and form.is_visible()
            screenshot(page, page.locator(".jp-Notebook .gw-lasting").nth(1), "reopened-lab.png")
            assert [e for e in watched.page_errors if NOTEBOOK7_STARTUP_ERROR not in e] == []
            assert DEMO_KEY not in page.content()
        here = urlsplit(server.url).port
        dead = {p for p in played.ports if p != here}
        to_dead = [u for u in requests if urlsplit(u).port in dead]
        assert to_dead == [], to_dead[:5]
    with (
        serve("notebook", played.root) as server,
        open_page(browser, server, failure_name="failure-reopened-nb.png") as watched,
    ):
        page = watched.page
        faces = check_reopened(page, server, QUICKSTART, grid=False)
        assert len([f for f in faces if f["final"]]) >= 4
        screenshot(page, page.locator(".jp-Notebook .gw-lasting").nth(1), "reopened-notebook.png")


@pytest.mark.timeout(300)
def test_nbconvert_of_the_saved_notebook_opens_offline_with_its_lasting_faces(
    played: Played, browser: Any, tmp_path: Path
) -> None:
    saved = played.root / "work" / QUICKSTART
    assert "widgets" not in nbformat.read(saved, as_version=4).metadata  # the default save
    subprocess.run(
        [sys.executable, "-m", "nbconvert", "--to", "html", "--output-dir", str(tmp_path),
         str(saved)],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    refused: list[str] = []

    def offline(route: Any) -> None:
        refused.append(route.request.url)
        route.abort()

    page.route(re.compile(r"^https?://"), offline)
    try:
        page.goto((tmp_path / QUICKSTART.replace(".ipynb", ".html")).as_uri(), timeout=60_000)
        page.wait_for_function(
            f"""() => {{
              const faces = ({LASTING_JS})();
              return faces.length >= 6 && faces.every(f => f.shown && f.images.every(Boolean)
                && f.media.every(m => m.error === null && m.ready >= 2));
            }}""",
            timeout=RENDER_TIMEOUT_MS,
        )
        faces = page.evaluate(LASTING_JS)
        assert len([f for f in faces if f["final"]]) >= 4
        text = page.inner_text("body")
        assert [t for t in BROKEN_WIDGET_TEXTS if t.lower() in text.lower()] == []
        # only nbconvert's own template asks the network (MathJax, require.js)
        template = ("mathjax", "require.js/", "require.min.js")
        assert [u for u in refused if not any(t in u.lower() for t in template)] == []
    finally:
        page.close()
