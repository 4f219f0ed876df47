"""Judgements that add up: grid.scores per axis value (failed cells counted),
the margins in the grid's state, gw.scores across two grids and a restart, and
ratings made in one view shown in another view of the same grid."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import Field

import genwidgets as gw
from genwidgets.catalog import Endpoint, register, unregister
from genwidgets.lab.scores import ScoreTable
from genwidgets.simulator import SimulatorServer

T2I = "genW2.5-t2i-preview"
VID = "vidVq2-text2video"
KEY = "sim-demo-key"
GONE = "test-scores-gone-image"

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path))
    return tmp_path


@pytest.fixture
def client(home: Path, simulator: SimulatorServer) -> Iterator[gw.Client]:
    made = gw.Client(base_url=simulator.base_url, api_key=KEY)
    yield made
    made.close()


def compare(client: gw.Client, prompt: str = "a red fox", **kw: Any) -> Any:
    return gw.grid(
        T2I,
        {"prompt": prompt, "n": 1},
        x=("endpoint", [T2I, VID]),
        y=("seed", [1, 2]),
        client=client,
        **kw,
    )


@pytest.mark.slow
def test_scores_per_axis_value_best_first_with_failed_cells(
    home: Path, make_simulator: Callable[..., SimulatorServer]
) -> None:
    sim = make_simulator(fail_rate=0.5, seed=3)
    with gw.Client(base_url=sim.base_url, api_key=KEY) as client:
        grid = gw.grid(
            T2I,
            {"prompt": "a fox", "n": 1},
            x=("seed", "1-4"),
            y=("prompt_sr", ["fox", "cat"]),
            client=client,
        )
        grid.wait(timeout=120)
        failed = {c.value("x") for c in grid.cells if c.failed}
        assert failed  # the simulator failed some cells
        grid.rate(grid.cell(x=1, y="fox"), 2)
        grid.rate(grid.cell(x=1, y="cat"), 4)
        grid.rate(grid.cell(x=3, y="fox"), 5)
        rows = grid.scores("x")
        by_value = {r["value"]: r for r in rows}
        assert by_value[1] == {
            "value": 1,
            "mean": 3.0,
            "rated": 2,
            "cells": 2,
            "failed": sum(1 for c in grid.cells if c.x == 1 and c.failed),
        }
        assert by_value[3]["mean"] == 5.0 and by_value[3]["rated"] == 1
        assert [r["value"] for r in rows[:2]] == [3, 1]  # best first
        assert all(r["mean"] is None and r["rated"] == 0 for r in rows[2:])
        assert sum(r["failed"] for r in rows) == sum(1 for c in grid.cells if c.failed)
        ys = grid.scores("y")
        assert [(r["value"], r["mean"]) for r in ys] == [("cat", 4.0), ("fox", 3.5)]
        # the margins in the view's state, in axis order
        grid.wait(timeout=5)
        margins = grid.head["scores"]
        assert margins["x"][0]["mean"] == 3.0 and margins["x"][2]["mean"] == 5.0
        assert margins["y"] == [
            {"mean": 3.5, "rated": 2, "failed": ys[1]["failed"], "cells": 4},
            {"mean": 4.0, "rated": 1, "failed": ys[0]["failed"], "cells": 4},
        ]
        with pytest.raises(ValueError, match="no z axis"):
            grid.scores("z")
        with pytest.raises(ValueError, match="one of"):
            grid.scores("w")


@pytest.mark.slow
def test_gw_scores_gathers_two_grids_and_survives_a_restart(
    client: gw.Client, simulator: SimulatorServer
) -> None:
    first = compare(client)
    second = compare(client, "a grey cat")
    first.wait(timeout=150)
    second.wait(timeout=150)
    first.rate(first.cell(x=T2I, y=1), 5, "sharp")
    first.rate(first.cell(x=VID, y=2), 2)
    second.rate(second.cell(x=T2I, y=2), 3)
    second.rate(second.cell(x=VID, y=1), 1)
    second.rate(second.cell(x=VID, y=1), 0)  # cleared: not a rated cell
    # a new client on the same ledger file: another kernel, or after a restart
    with gw.Client(base_url=simulator.base_url, api_key=KEY) as later:
        table = gw.scores(client=later)
        assert isinstance(table, ScoreTable) and len(table) == 3
        rows = {(r["grid"], r["cell"]): r for r in table}
        top = rows[(first.id, first.cell(x=T2I, y=1).index)]
        assert top["endpoint"] == T2I and top["seed"] == 1 and top["stars"] == 5
        assert top["prompt"] == "a red fox" and top["note"] == "sharp"
        assert top["request_id"] == first.cell(x=T2I, y=1).request_id
        vid = rows[(first.id, first.cell(x=VID, y=2).index)]
        assert vid["endpoint"] == VID and vid["prompt"] == "a red fox" and vid["stars"] == 2
        only = gw.scores(endpoint=T2I, client=later)
        assert {(r["grid"], r["prompt"], r["stars"]) for r in only} == {
            (first.id, "a red fox", 5),
            (second.id, "a grey cat", 3),
        }
        future = dt.datetime.now() + dt.timedelta(days=1)
        assert gw.scores(since=future, client=later) == []
        assert len(gw.scores(since=dt.date(2000, 1, 1), client=later)) == 3
        with pytest.raises(ValueError, match="ISO date"):
            gw.scores(since="yesterday", client=later)
        try:
            import pandas  # noqa: F401
        except ImportError:
            with pytest.raises(ImportError, match="pip install pandas"):
                table.dataframe()
        else:
            frame = table.dataframe()
            assert list(frame["stars"]) == [r["stars"] for r in table]


def test_a_reopened_grid_shows_ratings_made_in_another_view(client: gw.Client) -> None:
    grid = compare(client)
    grid.wait(timeout=150)
    again = gw.load_grid(grid.id, client=client)
    grid.rate(grid.cells[0], 4, "the best")
    # the other view of the same grid shows it at once, nothing re-run
    assert again.cells[0].rating == 4 and again.cells[0].note == "the best"
    creates = client.request_counts["create"]
    # a rating written by another kernel (straight into the file) shows when displayed
    again.run.store.rate(grid.id, 1, 2, None)
    again._repr_mimebundle_()
    assert again.cells[1].rating == 2
    assert client.request_counts["create"] == creates
    # and in what is exported or scored, shown or not: an export said the ratings before
    other_kernel = (
        "import sys, genwidgets as gw; client = gw.Client(sys.argv[1], sys.argv[2]); "
        "gw.load_grid(sys.argv[3], client=client).rate(2, 5, 'from the other kernel')"
    )
    command = [sys.executable, "-c", other_kernel, client.base_url, KEY, grid.id]
    subprocess.run(command, check=True, timeout=120, capture_output=True)
    assert grid.describe()["cells"][2]["stars"] == 5
    assert grid.describe()["cells"][2]["note"] == "from the other kernel"
    assert sum(row["rated"] for row in grid.scores("x")) == 3


class GoneImage(Endpoint):
    """An image endpoint that leaves the catalog after its grid was rated."""

    prompt: str = Field(min_length=1, description="What to draw.")
    seed: int | None = Field(default=None, description="The same seed, the same picture.")


@pytest.mark.slow
def test_gw_scores_lists_a_rating_whose_endpoint_has_left_the_catalog(
    client: gw.Client,
) -> None:
    register(GONE, kind="image", family="gone", title="Gone image")(GoneImage)
    try:
        grid = gw.grid(GONE, {"prompt": "a red fox"}, x=("seed", [1, 2]), client=client)
        grid.wait(timeout=150)
        grid.rate(grid.cell(x=1), 4)
    finally:
        unregister(GONE)
    (row,) = gw.scores(client=client)
    assert row["endpoint"] == GONE and row["stars"] == 4
    assert row["prompt"] is None  # the endpoint that said where its prompt is has gone


def test_a_rated_sweep_cell_scores_each_varied_field_with_its_value(client: gw.Client) -> None:
    """A sweep's cells are labelled ``seed=1 · n=1``; a score's row has each varied field
    with its value as sent, as a grid's has (it had the label text in one column)."""
    sweep = gw.sweep(T2I, {"prompt": "a fox"}, vary={"seed": [1, 2], "n": [1]}, client=client)
    for job in sweep:
        job.result(timeout=120)
    gw.load_grid(sweep.id, client=client).rate(1, 5)
    [row] = gw.scores(client=client)
    assert (row["seed"], row["n"], row["stars"]) == (2, 1, 5)
    assert not any(" · " in str(name) for name in row)


def test_a_store_that_cannot_be_read_now_leaves_exports_and_stars_with_what_the_grid_holds(
    client: gw.Client,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    grid = compare(client)
    grid.wait(timeout=150)
    grid.rate(grid.cells[0], 4, "the best")

    def locked(grid_id: str) -> dict[int, tuple[int, str | None]]:
        raise gw.LedgerError("database is locked")

    monkeypatch.setattr(grid.run.store, "ratings", locked)
    # a star given now is written and shown, though reading the others back fails
    grid.rate(grid.cells[1], 2)
    assert [c.rating for c in grid.cells[:2]] == [4, 2]
    saved = grid.save_html(tmp_path / "sheet.html")
    assert "the best" in saved.read_text(encoding="utf-8")
    assert sum(row["rated"] for row in grid.scores("x")) == 2
    assert grid.describe()["cells"][0]["note"] == "the best"
    assert "ratings not read again: database is locked" in caplog.text
