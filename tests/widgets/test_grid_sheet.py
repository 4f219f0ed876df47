"""A grid's two faces: the live grid stays live after it finishes and when displayed
again; its contact sheet (labels, stars, notes, score margins, request ids, image
thumbnails) follows it and is rewritten as the grid changes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from loopback import FileHost, files_gateway
from widgets.taskfakes import DisplayRecorder, ask, wait_for

import genwidgets as gw
from genwidgets.lab.export import score_text
from genwidgets.simulator import SimulatorServer
from genwidgets.widgets import faces, grid_sheet
from genwidgets.widgets.grid_sheet import CELL_OUTPUTS, contact_sheet

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def client(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, simulator: SimulatorServer
) -> Iterator[gw.Client]:
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path))
    made = gw.Client(base_url=simulator.base_url, api_key="sim-demo-key")
    yield made
    made.close()


@pytest.mark.slow
def test_a_finished_grid_stays_live_with_its_sheet_rewritten_as_it_is_rated(
    client: gw.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    import IPython.display
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    faces.REPUBLISH.flush()  # nothing of other tests pending
    display = DisplayRecorder()
    monkeypatch.setattr(IPython.display, "display", display)
    monkeypatch.setattr("genwidgets.widgets.grid.in_kernel", lambda: True)
    monkeypatch.setattr(faces, "in_kernel", lambda: True)
    grid = gw.grid(
        "genW2.5-t2i-preview",
        {"prompt": "a fox in the snow", "n": 1},
        x=("seed", [1, 2]),
        y=("prompt_sr", ["fox", "cat"]),
        client=client,
    )
    grid.wait(timeout=60)
    assert shell.display_formatter.ipython_display_formatter(grid) is True
    (live, _), (sheet, _) = display.calls
    assert faces.WIDGET_VIEW_MIME in live and "text/html" not in live
    html = sheet["text/html"]
    assert html.count('class="gw-sheet-cell"') == 4
    assert html.count('class="gw-thumb" src="data:image/') == 4  # kept after the gateway
    assert "seed = 2</th>" in html and "= cat</th>" in html  # the axes as labelled
    assert all(c.request_id and c.request_id in html for c in grid.cells)
    assert 'class="gw-margin-x"' in html and "★ – · 0 rated" in html
    shell.run_cell("1 + 1")  # the end of the cell: nothing turns static
    [handle] = display.handles
    assert all(faces.WIDGET_VIEW_MIME not in u for u, _ in handle.updates)
    # still live: a star from the page reaches the kernel and the sheet shown
    assert ask(grid, "_ask_rate", {"index": grid.cell(x=2, y="cat").index, "stars": 4,
                                   "note": "warm light"})["ok"]  # fmt: skip
    assert wait_for(lambda: 'title="4 of 5"' in handle.last_html())
    rated = handle.last_html()
    assert "warm light" in rated and "★ 4.0 · 1 rated" in rated  # the margins moved
    assert grid.cell(x=2, y="cat").rating == 4 and grid.cell(x=2, y="cat").note == "warm light"
    # displayed again: another live grid and sheet, both rewritten from then on
    display.calls.clear()
    assert shell.display_formatter.ipython_display_formatter(grid) is True
    assert faces.WIDGET_VIEW_MIME in display.calls[0][0] and len(display.handles) == 2
    grid.rate(0, 2)
    assert wait_for(lambda: all('title="2 of 5"' in h.last_html() for h in display.handles))
    grid.close()  # a shown grid reads its ratings on the ticker until closed
    assert faces.settle(30)


def test_a_grid_not_sent_says_what_it_is(client: gw.Client) -> None:
    grid = gw.grid(
        "genW2.5-t2i-preview",
        {"prompt": "a fox in the snow", "n": 1},
        x=("seed", [1, 2, 3]),
        client=client,
        confirm_above=0,
    )
    sheet = contact_sheet(grid.run, waiting=grid.needs_confirmation)
    html = sheet["text/html"]
    assert "not sent when last seen: 3 tasks planned, nothing billed" in html
    assert "Submit button or grid.submit()" in html
    assert "gw-thumb" not in html and html.count('class="gw-sheet-cell"') == 3
    assert "not sent" in sheet["text/plain"]


@pytest.mark.slow
def test_a_sweeps_sheet_flows_its_combinations(client: gw.Client) -> None:
    sweep = gw.sweep(
        "genW2.5-t2i-preview",
        {"prompt": "a kite", "n": 1},
        vary={"seed": [1, 2, 3], "size": ["1280*1280"]},
        client=client,
    )
    for job in sweep:
        job.result(timeout=60)
    html = contact_sheet(sweep.run)["text/html"]
    assert "<table" not in html and html.count('class="gw-sheet-cell"') == 3
    assert "seed=3" in html.replace(" ", "") and html.count("gw-thumb") == 3


@pytest.mark.slow
def test_an_imgm_sheet_shows_each_cells_first_image_and_how_many_as_the_live_grid(
    client: gw.Client,
) -> None:
    """Issue 40: the sheet stacked the four images of each imgM cell (a cell ~1,000 px
    tall) where the live grid shows one thumbnail and a "4" badge."""
    grid = gw.grid("imgM-v8.1-t2i", {"prompt": "a {red, blue} kite"}, client=client)
    grid.wait(timeout=60)
    assert [len(c.outputs) for c in grid.cells] == [4, 4]
    html = contact_sheet(grid.run)["text/html"]
    assert html.count('class="gw-sheet-cell"') == 2
    assert html.count('class="gw-thumb"') == 2  # one picture a cell, not four
    assert html.count('class="gw-sheet-count"') == 2 and html.count(">4</span>") == 2
    names = [o.path.name for o in grid.cells[0].outputs if o.path is not None]
    assert len(names) == 4 and [n in html for n in names] == [True, False, False, False]


def test_score_text_reads_as_the_live_margins() -> None:
    assert score_text({"mean": 4.0, "rated": 1, "failed": 0}) == "★ 4.0 · 1 rated"
    assert score_text({"mean": None, "rated": 0, "failed": 2}) == "★ – · 0 rated · 2 failed"
    assert score_text(None) == ""


def test_a_running_grids_sheet_waits_for_the_end_of_its_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import IPython.display
    from widgets.taskfakes import FakeClient, on_thread

    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path))
    display = DisplayRecorder()
    monkeypatch.setattr(IPython.display, "display", display)
    monkeypatch.setattr("genwidgets.widgets.grid.in_kernel", lambda: True)
    monkeypatch.setattr(faces, "in_kernel", lambda: True)
    fake = FakeClient()
    grid = gw.grid("genW2.5-t2i-preview", {"prompt": "a fox", "n": 1}, x=("seed", [1, 2]),
                   client=fake)  # fmt: skip
    grid._ipython_display_()
    [handle] = display.handles
    jobs = [cell.job for cell in grid.cells]
    for job in jobs:
        on_thread(job.run)  # polls come and go: a sheet of many cells is heavy to resend
    on_thread(lambda: jobs[0].finish([{"url": "https://cdn.example/0.png",
                                       "content_type": "image/png"}]))  # fmt: skip
    assert faces.settle(30) and handle.updates == []
    on_thread(lambda: jobs[1].finish([{"url": "https://cdn.example/1.png",
                                       "content_type": "image/png"}]))  # fmt: skip
    assert wait_for(lambda: handle.last_html().count(">done<") == 2, timeout=30)
    assert len(handle.updates) <= 2
    grid.close()


def test_a_big_sheet_takes_smaller_thumbnails() -> None:
    from genwidgets.widgets.grid_sheet import sheet_side

    assert [sheet_side(n) for n in (1, 16, 17, 36, 37, 400)] == [256, 256, 160, 160, 96, 96]


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FileHost, str]]:
    """A loopback gateway (its address) whose results list ``host.outputs`` images each;
    ``host.asked`` counts the files read from it."""
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path))
    host = FileHost()
    server = files_gateway(host)
    yield host, server.base
    server.close()


def finished_grid(base: str, seeds: list[int], *, download: bool = True) -> gw.Grid:
    client = gw.Client(base_url=base, api_key="k-demo", download=download)
    grid = gw.grid(
        "genW2.5-t2i-preview", {"prompt": "a fox", "n": 1}, x=("seed", seeds), client=client
    )
    return grid.wait(timeout=60)


@pytest.mark.slow  # 8 to 18 s beside busy cores: the full command runs it
def test_a_page_holds_a_cells_outputs_up_to_the_clients_cap_and_counts_the_rest(
    files: tuple[FileHost, str], tmp_path: Path
) -> None:
    """A result listing more outputs than the client downloads: the page embeds those it
    downloaded and reads none of the rest from the gateway (it once read every one, in
    series: minutes); it and the lightbox say how many more there are."""
    host, base = files
    host.outputs = CELL_OUTPUTS + 30
    grid = finished_grid(base, [1])
    assert host.asked == CELL_OUTPUTS  # the client's own cap
    page = grid.save_html(tmp_path / "page.html").read_text()
    assert host.asked == CELL_OUTPUTS
    assert page.count("data:image/png") == CELL_OUTPUTS
    assert f"30 more outputs not shown: at most {CELL_OUTPUTS} of a cell are" in page
    assert f"grid.cells[0].outputs lists all {CELL_OUTPUTS + 30}" in page
    lightbox = ask(grid, "_ask_full", {"index": 0})
    assert len(lightbox["outputs"]) == CELL_OUTPUTS
    assert lightbox["more"].startswith("30 more outputs not shown")
    # the live cell's record stops at the cap too, and says how many there are (it held
    # one record per output: 10,000 outputs were 10,000 records in the widget's state)
    [cell] = grid.cell_states
    assert (len(cell["outputs"]), cell["outputs_total"]) == (CELL_OUTPUTS, CELL_OUTPUTS + 30)
    grid.close()


def test_the_outputs_a_page_reads_from_the_gateway_are_bounded_in_count_and_time(
    files: tuple[FileHost, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Outputs not downloaded are read for the page within one budget for all its cells:
    at most PAGE_READS of them, none past its deadline, none after one failed; each
    other output says why it is not embedded. (The live grid reads each cell's first
    image for its thumbnail, in the background: those bytes are in hand.)"""
    host, base = files
    host.outputs = 3
    grid = finished_grid(base, [1, 2], download=False)  # 6 outputs, none downloaded
    firsts = [cell.outputs[0] for cell in grid.cells]
    assert wait_for(lambda: all(o.in_hand() is not None for o in firsts), 10)  # thumbnails
    assert host.asked == 2
    monkeypatch.setattr(grid_sheet, "PAGE_READS", 3)
    page = grid.save_html(tmp_path / "counted.html").read_text()
    assert host.asked == 2 + 3 and page.count("data:image/png") == 5
    said = "image not embedded: not downloaded, and at most 3 outputs are read from the"
    assert page.count(said) == 1

    monkeypatch.setattr(grid_sheet, "PAGE_READ_SECONDS", 0.0)  # its deadline already past
    page = grid.save_html(tmp_path / "late.html").read_text()
    assert host.asked == 5 and page.count("data:image/png") == 5  # those read are kept
    assert page.count("outputs are read from the gateway for at most 0 s") == 1

    monkeypatch.setattr(grid_sheet, "PAGE_READ_SECONDS", 30.0)
    host.answer = 404  # expired: the first read fails, no other is tried
    fresh = finished_grid(base, [1, 2], download=False)
    assert wait_for(lambda: host.asked == 5 + 2, 10)  # its thumbnails, failed
    page = fresh.save_html(tmp_path / "expired.html").read_text()
    assert host.asked == 5 + 2 + 1 and "data:image/png" not in page
    assert page.count("image unavailable (DownloadError)") == 1
    assert page.count("a read from the gateway failed before it: no more are made") == 5
    grid.close()
    fresh.close()


def test_a_rating_made_in_another_kernel_reaches_the_cells_and_both_faces(
    client: gw.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review-25 fault 3: another kernel (its own store on the same file) rates a cell of
    a finished grid shown here. With nothing done in this kernel, its cells, its live
    records and its lasting face come to show that rating; a face written meanwhile
    (not displayed: built at once) shows what the store holds."""
    import IPython.display

    from genwidgets.lab import GridStore

    faces.REPUBLISH.flush()  # nothing of other tests pending
    display = DisplayRecorder()
    monkeypatch.setattr(IPython.display, "display", display)
    monkeypatch.setattr("genwidgets.widgets.grid.in_kernel", lambda: True)
    monkeypatch.setattr(faces, "in_kernel", lambda: True)
    grid = gw.grid("genW2.5-t2i-preview", {"prompt": "a fox", "n": 1}, x=("seed", [1, 2]),
                   client=client)  # fmt: skip
    grid.wait(timeout=60)
    grid.rate(0, 2)  # stored; this kernel's own rating
    other = GridStore(grid.run.store.path)  # another kernel's store: no watcher of ours
    try:
        other.rate(grid.id, 1, 5, "the one, from kernel B")
        face = grid._sheet("posters")  # a face written now says what the store holds
        assert 'title="5 of 5"' in face["text/html"] and "from kernel B" in face["text/html"]
        other.rate(grid.id, 0, 3, "kernel B again")
        grid._ipython_display_()  # shown: it reads the store at its display
        [handle] = display.handles
        (_live, _), (shown, _) = display.calls
        assert 'title="3 of 5"' in shown["text/html"]
        other.rate(grid.id, 1, 4, "kernel B, later")  # nothing asked in this kernel since
        assert wait_for(lambda: "kernel B, later" in handle.last_html(), timeout=60)
        assert (grid.cells[1].rating, grid.cells[1].note) == (4, "kernel B, later")
        assert wait_for(
            lambda: (
                [(c["stars"], c["note"]) for c in grid.cell_states]
                == [(3, "kernel B again"), (4, "kernel B, later")]
            ),
            timeout=30,
        )
    finally:
        other.close()
        grid.close()
    assert faces.settle(30)
