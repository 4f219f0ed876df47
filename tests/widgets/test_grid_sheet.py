"""A finished grid's display: the live grid with its contact sheet, then the sheet
alone (labels, stars, request ids, image thumbnails) from the end of the cell."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import genwidgets as gw
from genwidgets.simulator import SimulatorServer
from genwidgets.widgets import durable
from genwidgets.widgets.grid_sheet import contact_sheet

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def client(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, simulator: SimulatorServer
) -> Iterator[gw.Client]:
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path))
    made = gw.Client(base_url=simulator.base_url, api_key="sim-demo-key")
    yield made
    made.close()


class Handle:
    def __init__(self) -> None:
        self.updates: list[dict[str, Any]] = []

    def update(self, data: dict[str, Any], **kwargs: Any) -> None:
        self.updates.append(data)


def test_a_finished_grid_turns_into_its_contact_sheet_at_the_end_of_the_cell(
    client: gw.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    import IPython.display
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    durable.REPUBLISH.flush()  # nothing of other tests pending
    handle = Handle()
    shown: list[dict[str, Any]] = []

    def display(data: dict[str, Any], **kwargs: Any) -> Handle:
        shown.append(data)
        return handle

    monkeypatch.setattr(IPython.display, "display", display)
    monkeypatch.setattr("genwidgets.widgets.grid.in_kernel", lambda: True)
    grid = gw.grid(
        "genW2.5-t2i-preview",
        {"prompt": "a fox in the snow", "n": 1},
        x=("seed", [1, 2]),
        y=("prompt_sr", ["fox", "cat"]),
        client=client,
    )
    grid.wait(timeout=60)
    grid.rate(grid.cell(x=2, y="cat"), 4, "warm light")
    assert shell.display_formatter.ipython_display_formatter(grid) is True
    [data] = shown
    assert durable.WIDGET_VIEW_MIME in data and "gw-grid-sheet" in data["text/html"]
    shell.run_cell("1 + 1")  # the end of the cell: the sheet alone
    [sheet] = handle.updates
    assert set(sheet) == {"text/html", "text/plain"}
    html = sheet["text/html"]
    assert html.count('class="gw-sheet-cell"') == 4
    assert html.count('class="gw-thumb" src="data:image/') == 4  # kept after the gateway
    assert "seed = 2</th>" in html and "= cat</th>" in html  # the axes as labelled
    assert 'title="4 of 5"' in html and "warm light" in html
    assert all(c.request_id and c.request_id in html for c in grid.cells)
    grid.rate(0, 2)  # stars given later reach the sheet shown
    shell.run_cell("2 + 2")
    assert len(handle.updates) == 2 and 'title="2 of 5"' in handle.updates[1]["text/html"]


def test_a_grid_still_running_stays_live_until_it_ends(client: gw.Client) -> None:
    grid = gw.grid(
        "genW2.5-t2i-preview",
        {"prompt": "a fox in the snow", "n": 1},
        x=("seed", [1, 2, 3]),
        client=client,
        confirm_above=0,
    )
    sheet = contact_sheet(grid)
    assert "not sent" in sheet["text/html"] and "gw-thumb" not in sheet["text/html"]
    assert not grid._finished()
