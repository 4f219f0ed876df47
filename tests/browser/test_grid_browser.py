"""The prompt-lab grid in a real JupyterLab and chromium: a 3 × 2 grid runs on
the embedded simulator, every cell shows its image (really loaded), a click on
a star goes to the kernel and lands in the ledger's file; on a finished grid, every
order of typing a note, clicking a star and clicking away, at a person's pace and
fast, keeps both in the kernel, the ledger's file and the saved contact sheet
(issue 40). The page's asker (``static/ask.js``) alone: answered, empty, late. The
screenshot goes to ``docs/img/grid.png`` for the README."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
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
from widgets.taskfakes import wait_for

from genwidgets.lab import GridStore

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


JUDGED = "grid_judged.ipynb"
TWO_FRAMES_JS = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: Any) -> Iterator[Frontend]:
    root = tmp_path_factory.mktemp("grid-lab")
    extra = {NOTEBOOK: notebook_text(GRID_CELL), JUDGED: notebook_text(GRID_CELL)}
    with serve("lab", root, extra=extra) as server:
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
        # the progress line is drawn from the kernel's last write, which may land after
        # the pictures: waited for (one such line: a second would fail the strict locator)
        grid.locator(".gw-grid-progress", has_text="6 of 6 done").wait_for(timeout=60_000)
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
            # the page shows the star at the click; the kernel stores it a moment later
            stored = lambda: store.ratings(record.id) == {0: (4, None)}  # noqa: E731
            assert wait_for(stored, timeout=30), store.ratings(record.id)
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
        box.wait_for(state="hidden", timeout=30_000)  # gone before the cells are clicked

        # recall: the cell's pencil opens the endpoint's form, pre-filled, under the grid
        grid.locator('.gw-grid-cell[data-index="4"] .gw-grid-recall').click()
        output = page.locator(".jp-Notebook .jp-OutputArea-output").first
        prompt = output.locator("textarea").first
        prompt.wait_for(timeout=30_000)
        assert prompt.input_value() == "a cat in the snow"

        check_page(watched, page.locator(".jp-Notebook").inner_text())


def _saved_sheet_cells(path: Path) -> dict[int, tuple[int, str | None]]:
    """(stars, note) of each cell of the grid's contact sheet as saved in the file."""
    notebook = json.loads(path.read_text())
    sheets = [
        "".join(html) if isinstance(html, list) else html
        for cell in notebook["cells"]
        for output in cell.get("outputs", [])
        if "gw-grid-sheet" in str(html := output.get("data", {}).get("text/html", ""))
    ]
    assert len(sheets) == 1, f"{len(sheets)} contact sheets saved"
    found = {}
    for index, body in re.findall(r'data-index="(\d+)"(.*?)</td>', sheets[0], re.S):
        stars = re.search(r'title="(\d) of 5"', body)
        note = re.search(r'class="gw-note">(.*?)</div>', body)
        found[int(index)] = (int(stars.group(1)) if stars else 0, note.group(1) if note else None)
    return found


@pytest.mark.timeout(400)
def test_a_note_and_a_star_in_any_order_and_pace_both_stay(lab: Any, browser: Any) -> None:
    """Each of the six cells gets a note and stars in another order, at a person's pace
    (the star held down until the kernel's answer to the note has reached the page, as
    a person's click outlasts that round trip) or fast (no wait between the note and
    the click). Issue 40: a whole ``rate`` message from each field lost one of them."""
    ledger_file = lab.root.parent / "env" / "genwidgets-home" / "ledger.sqlite3"
    lab.delete_sessions()
    frames: list[str] = []

    def keep_frames(socket: Any) -> None:
        socket.on("framereceived", lambda payload: frames.append(
            payload.decode("utf-8", "replace") if isinstance(payload, bytes) else payload
        ))  # fmt: skip

    with open_page(browser, lab, failure_name="failure-grid-judged.png") as watched:
        page = watched.page
        page.on("websocket", keep_frames)
        page.set_viewport_size({"width": 1280, "height": 1000})
        page.goto(lab.page_url(JUDGED), wait_until="domcontentloaded", timeout=60_000)
        wait_for_kernel_idle(page, "lab")
        run_all(page)
        wait_until_all_cells_ran(page, 1)
        grid = page.locator(".jp-Notebook .gw-grid")
        page.wait_for_function(IMAGES_LOADED_JS, timeout=60_000)
        # the progress line is drawn from the kernel's last write, which may land after
        # the pictures: waited for (one such line: a second would fail the strict locator)
        grid.locator(".gw-grid-progress", has_text="6 of 6 done").wait_for(timeout=60_000)

        def cell(index: int) -> Any:
            return grid.locator(f'.gw-grid-cell[data-index="{index}"]')

        def heard(pattern: str) -> Callable[[], None]:
            """Wait until a kernel message matching ``pattern`` has reached the page,
            and the page has drawn it (two animation frames)."""

            def wait() -> None:
                for _ in range(600):  # polls the frames received (a condition, 60 s)
                    if any(re.search(pattern, f) for f in list(frames)):
                        break
                    page.wait_for_timeout(100)
                else:
                    raise AssertionError(f"no kernel message matches {pattern!r}")
                page.evaluate(TWO_FRAMES_JS)

            return wait

        def type_note(index: int, note: str, *, slow: bool) -> None:
            box = cell(index).locator(".gw-grid-note")
            box.click()
            if slow:
                box.press_sequentially(note, delay=60)
            else:
                box.fill(note)

        def star(index: int, stars: int, *, held: Callable[[], None] | None = None) -> None:
            button = cell(index).locator(f'.gw-grid-star[data-stars="{stars}"]')
            if held is None:
                button.click()
                return
            button.hover()
            page.mouse.down()  # the note's field loses the focus: its change is sent
            held()
            page.mouse.up()

        def click_away() -> None:
            grid.locator(".gw-grid-summary").click()

        # 0, a person: a note, then a star held while the note goes to the kernel and back
        type_note(0, "at dawn", slow=True)
        star(0, 4, held=heard("at dawn"))
        # 1, fast: a note, then a star at once
        type_note(1, "at dusk", slow=False)
        star(1, 3)
        # 2, a person: a star, then a note and a click away
        star(2, 2)
        heard(r'"stars":\s*2')()
        type_note(2, "calm sea", slow=True)
        click_away()
        # 3, fast: a star, then a note and a click away at once
        star(3, 5)
        type_note(3, "warm light", slow=False)
        click_away()
        # 4, a person: a note and a click away, then (the answer drawn) a star
        type_note(4, "soft", slow=True)
        click_away()
        heard("soft")()
        star(4, 1)
        # 5, fast: a star, a note, another star
        star(5, 3)
        type_note(5, "grain", slow=False)
        star(5, 4)
        click_away()

        wanted = {
            0: (4, "at dawn"),
            1: (3, "at dusk"),
            2: (2, "calm sea"),
            3: (5, "warm light"),
            4: (1, "soft"),
            5: (4, "grain"),
        }
        store = GridStore(ledger_file)
        try:
            record = store.grids()[0]  # the newest: this notebook's

            def stored() -> dict[int, tuple[int, str | None]]:
                return store.ratings(record.id)

            for _ in range(300):  # the last messages may still be on their way
                if stored() == wanted:
                    break
                page.wait_for_timeout(100)
            assert stored() == wanted
        finally:
            store.close()
        # the page shows them too, and the contact sheet (the saved face) follows
        for index, (stars, note) in wanted.items():
            assert cell(index).locator(".gw-grid-star-on").count() == stars
            assert cell(index).locator(".gw-grid-note").input_value() == note
        page.wait_for_function(
            """(notes) => {
              const sheet = document.querySelector('.jp-Notebook .gw-grid-sheet');
              return sheet && notes.every((n) => sheet.textContent.includes(n));
            }""",
            arg=[note for _, note in wanted.values()],
            timeout=60_000,
        )
        page.keyboard.press("Control+s")
        saved = lab.root / JUDGED
        for _ in range(300):
            if "gw-grid-sheet" in saved.read_text() and _saved_sheet_cells(saved) == wanted:
                break
            page.wait_for_timeout(100)
        assert _saved_sheet_cells(saved) == wanted
        check_page(watched, page.locator(".jp-Notebook").inner_text())


#: Three asks of static/ask.js against stand-in models: one answers as anywidget's
#: command dispatch does (after a stranger's answer with another id), one answers
#: nothing that is an object, one never answers (its deadline cut to 0.2 s).
ASKS_JS = """
async (script) => {
  const listening = new Set();
  const model = (answer) => ({
    on: (name, fn) => listening.add(fn),
    off: (name, fn) => listening.delete(fn),
    send: (content) => setTimeout(() => {
      const heard = (response, id) => [...listening].forEach((fn) => fn({
        id, kind: "anywidget-command-response", response,
      }));
      if (answer === "echo") {
        heard({ ok: true, stranger: true }, "another page's ask");
        heard({ ok: true, name: content.name, msg: content.msg }, content.id);
      }
      if (answer === "empty") heard(null, content.id);
    }, 20),
  });
  const asker = new Function(script + "\\nreturn asker;")();
  const echoed = await asker(model("echo"))("_ask_rate", { index: 2, stars: 4 });
  const empty = await asker(model("empty"))("_ask_submit");
  const late = await asker(model("never"))("_ask_cancel", {}, 0.2);
  return { echoed, empty, late, listening: listening.size };
}
"""


@pytest.mark.timeout(120)
def test_an_ask_is_answered_or_said_late_and_leaves_no_listener(browser: Any) -> None:
    """``static/ask.js`` alone in chromium: an ask takes the answer of its own id; an
    answer that is no object is an error; no answer by the deadline is said to be late
    (the kernel may be busy with a cell), not failed; each ask's listener goes."""
    from genwidgets.widgets.faces import static_module

    page = browser.new_page()
    try:
        got = page.evaluate(ASKS_JS, static_module("ask.js"))
    finally:
        page.close()
    assert got["echoed"] == {"ok": True, "name": "_ask_rate", "msg": {"index": 2, "stars": 4}}
    assert got["empty"] == {"error": "the kernel's answer was empty"}
    assert got["late"]["late"] is True
    assert got["late"]["error"].startswith("no answer in 0.2 s: the kernel may be busy")
    assert got["listening"] == 0
