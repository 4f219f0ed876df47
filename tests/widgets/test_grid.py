"""The grid view (``gw.grid``): against the simulator (sending, the locked seed on the
wire, the widget's state, confirmation, a failing cell, cancel-all, ratings that survive
a new client, re-opening that sends nothing, recall into a form), and against gateways
whose output URLs expired (nothing freezes).

The expired-URL scenarios run in a child process (``expired_gateway.py``) with a
deadline, so a deadlock fails the test instead of hanging the suite
(docs/decisions.md#no-waits-under-locks).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from faults import ctrl_c_after
from widgets.taskfakes import ForecastClient, ask, wait_for

import genwidgets as gw
from genwidgets.lab import GridStore
from genwidgets.simulator import SimulatorServer

CHILD = Path(__file__).with_name("expired_gateway.py")
#: generous: each scenario takes a few seconds; a deadlock never ends
DEADLINE = 240


def _run(scenario: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GENWIDGETS_HOME": str(tmp_path)}
    try:
        return subprocess.run(
            [sys.executable, str(CHILD), scenario],
            capture_output=True,
            text=True,
            timeout=DEADLINE,
            env=env,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{scenario} hung past {DEADLINE} s:\n{exc.stderr!r}")


@pytest.mark.slow
def test_a_write_holding_the_lock_never_meets_an_engine_callback_waiting_for_it(
    tmp_path: Path,
) -> None:
    done = _run("held_write_meets_engine_callback", tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("ok")


@pytest.mark.slow
def test_a_grid_whose_image_urls_expired_finishes_waits_and_closes(tmp_path: Path) -> None:
    done = _run("expired_grid", tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("ok")


@pytest.mark.slow
def test_thumbnails_only_a_download_can_make_arrive_from_the_background(
    make_simulator: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no local copies (no ledger), a finished cell's image thumbnail is
    downloaded off the write path, and the grid shows it once it is made."""
    import time

    import genwidgets as gw

    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path))
    sim = make_simulator(keys=("k-grid",))  # type: ignore[operator]
    client = gw.Client(sim.base_url, "k-grid", ledger=False)
    try:
        grid = gw.grid(
            "genW2.5-t2i-preview", {"prompt": "a fox", "n": 1}, x=("seed", [1, 2]), client=client
        )
        grid.wait(timeout=120)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            states = grid.cell_states
            if grid.thumbs and all(
                urls and urls[0].startswith("data:image/") for urls in grid.thumbs.values()
            ):
                break
            time.sleep(0.05)
        assert sorted(grid.thumbs) == ["0", "1"], states
        assert all(urls[0].startswith("data:image/") for urls in grid.thumbs.values())
        assert all(c.outputs[0].path is None for c in grid.cells)  # made from the URL
    finally:
        client.close()


@pytest.mark.slow
def test_a_viewed_grid_sends_only_the_cell_records_that_changed(client: gw.Client) -> None:
    """Once a view said hello, a write sends the changed records as a message (the
    page merges them); the kernel's trait stays current and goes whole when the run
    ends (docs/decisions.md#grid-cell-patches)."""
    grid = table(client, confirm_above=1)
    try:
        wire: list[dict[str, Any]] = []  # every message to the page, as ipywidgets sends it
        grid._send = lambda msg, buffers=None: wire.append(msg)  # type: ignore[method-assign]
        hello = ask(grid, "_ask_thumbs")  # what a new view asks first
        assert hello == {"ok": True, "thumbs": {}}  # no "cells": the page has every record
        assert wire == []  # the answer is the reply, nothing else went
        grid.submit(wait=False)
        grid.wait(timeout=120)

        def whole() -> list[list[dict[str, Any]]]:
            updates = [m["state"] for m in wire if m.get("method") == "update"]
            return [u["cell_states"] for u in updates if "cell_states" in u]

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not whole():
            time.sleep(0.05)
        patches = [
            m["content"]["cells"]
            for m in wire
            if m.get("method") == "custom" and "cells" in m["content"]
        ]
        # every cell changed while it ran, and each change went as its own record
        assert patches and all(0 < len(p) <= 6 for p in patches)
        assert {s["index"] for p in patches for s in p} == set(range(6))
        # the trait went whole once: when the run ended, with every cell done
        [ended] = whole()
        assert [s["index"] for s in ended] == list(range(6))
        assert all(s["category"] == "done" for s in ended)
        # the kernel's own copy was current all along (it is what a new page gets)
        assert grid.cell_states == ended == grid.get_state()["cell_states"]
        # and each thumbnail went once
        thumbs = [
            i
            for m in wire
            if m.get("method") == "custom"
            for i, urls in m["content"].get("thumbs", {}).items()
            if urls
        ]
        assert sorted(thumbs) == [str(i) for i in range(6)]
        # a second view of the same page says what its page has: nothing is sent again
        before = len(wire)
        have = [str(i) for i in range(6)]
        assert ask(grid, "_ask_thumbs", {"have": have}) == {"ok": True, "thumbs": {}}
        assert len(wire) == before
    finally:
        grid.close()


@pytest.mark.slow
def test_an_unviewed_grid_sends_its_records_whole_only_at_the_ends_and_a_late_view_gets_the_rest(
    client: gw.Client,
) -> None:
    """No view yet (a page still loading, nbclient): the records stay in the kernel
    until the run ends, and the thumbnails stay there too (no saved widget state holds
    them: issue 40's weight); a view that says hello later gets them, once."""
    grid = table(client, confirm_above=1)
    try:
        wire: list[dict[str, Any]] = []
        grid._send = lambda msg, buffers=None: wire.append(msg)  # type: ignore[method-assign]
        grid.submit(wait=False)
        grid.wait(timeout=120)

        def sent(key: str) -> list[Any]:
            updates = [m["state"] for m in wire if m.get("method") == "update"]
            return [u[key] for u in updates if key in u]

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not sent("cell_states"):
            time.sleep(0.05)
        # one whole send, when the run ended (the first write was before submit)
        [ended] = sent("cell_states")
        assert all(s["category"] == "done" for s in ended)
        assert wait_for(lambda: len(grid.thumbs) == 6, timeout=30)
        assert sent("thumbs") == [] and "thumbs" not in grid.get_state()
        before = len(wire)
        answer = ask(grid, "_ask_thumbs")  # a view, late
        assert sorted(answer["thumbs"]) == [str(i) for i in range(6)] and len(wire) == before
    finally:
        grid.close()


# --- against the simulator ----------------------------------------------------------

T2I = "genW2.5-t2i-preview"
KEY = "sim-demo-key"
#: a bound for each test that runs a grid on the simulator
ON_THE_SIMULATOR = pytest.mark.timeout(120)


def stats(sim: SimulatorServer) -> dict[str, Any]:
    return dict(httpx.get(f"{sim.base_url}/_sim/stats", timeout=10).json())


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path))
    return tmp_path


@pytest.fixture
def client(home: Path, simulator: SimulatorServer) -> Iterator[gw.Client]:
    made = gw.Client(base_url=simulator.base_url, api_key=KEY)
    yield made
    made.close()


def table(client: gw.Client, **kw: Any) -> Any:
    return gw.grid(
        T2I,
        {"prompt": "a fox in the snow", "n": 1},
        x=("seed", "1-3"),
        y=("prompt_sr", ["fox", "cat"]),
        client=client,
        **kw,
    )


@pytest.mark.slow
@ON_THE_SIMULATOR
def test_a_table_is_sent_once_and_every_cell_shows_its_image(client: gw.Client) -> None:
    grid = table(client)
    assert grid.shape == (1, 2, 3)
    assert client.request_counts["create"] == 6
    grid.wait(timeout=60)
    assert grid.head["progress"] == "6 of 6 done"
    assert wait_for(lambda: all(c["outputs"] for c in grid.cell_states), timeout=30)
    for state in grid.cell_states:
        assert state["outputs"][0]["kind"] == "image"
        # the cell holds a thumbnail made in the kernel, never the full file
        assert grid.thumbs[str(state["index"])][0].startswith("data:image/jpeg;base64,")
        assert state["outputs"][0]["src"] == ""
        assert state["category"] == "done" and state["request_id"]
    # only the varied parameters label the grid
    assert grid.head["x"] == {"label": "seed", "values": ["1", "2", "3"]}
    assert grid.head["y"]["values"] == ["fox", "cat"]
    cell = grid.cell(x=2, y="cat")
    assert cell.payload == {"prompt": "a cat in the snow", "n": 1, "seed": 2}
    assert len(cell.outputs) >= 1 and cell.job is not None
    assert "6 of 6 done" in repr(grid)


@ON_THE_SIMULATOR
def test_the_locked_seed_is_what_the_gateway_received(client: gw.Client) -> None:
    payload = {"prompt": "a fox", "n": 1}
    grid = gw.grid(T2I, payload, x=("prompt", ["a fox", "a wolf"]), client=client)
    seed = grid.plan.seed
    assert isinstance(seed, int)
    assert client.ledger is not None
    for cell in grid.cells:
        row = client.ledger.get(client.gateway_name, cell.request_id)
        assert row is not None and row.payload["seed"] == seed  # the body that was sent
    assert grid.describe()["seed"] == seed


@pytest.mark.slow
@ON_THE_SIMULATOR
def test_above_confirm_above_nothing_is_sent_until_confirmed(
    home: Path, make_simulator: Callable[..., SimulatorServer]
) -> None:
    sim = make_simulator()
    with gw.Client(base_url=sim.base_url, api_key=KEY) as client:
        grid = table(client, confirm_above=5)
        assert stats(sim).get("create", 0) == 0
        assert grid.head["needs_confirmation"] and not grid.head["started"]
        assert grid.head["progress"] == "nothing sent yet"
        assert gw.grids(client) == []  # stored when submitted
        with pytest.raises(RuntimeError, match=r"grid.submit\(\)"):
            grid.wait(timeout=1)
        assert ask(grid, "_ask_submit") == {"ok": True}  # the button
        grid.wait(timeout=60)
        assert stats(sim)["create"] == 6
        grid.submit()  # a second submit sends nothing
        assert stats(sim)["create"] == 6
        assert [g.id for g in gw.grids(client)] == [grid.id]


@pytest.mark.slow
@ON_THE_SIMULATOR
def test_a_failing_cell_shows_its_error_and_the_grid_goes_on(
    home: Path, make_simulator: Callable[..., SimulatorServer]
) -> None:
    sim = make_simulator(fail_rate=0.5, seed=3)
    with gw.Client(base_url=sim.base_url, api_key=KEY) as client:
        grid = table(client)
        grid.wait(timeout=60)
        states = grid.cell_states
        failed = [s for s in states if s["category"] == "failed"]
        done = [s for s in states if s["category"] == "done"]
        assert failed and done and len(failed) + len(done) == 6
        assert all(s["error"] for s in failed)
        assert all(s["outputs"] for s in done)
        assert f"({len(failed)} failed)" in grid.head["progress"]
        # the cells failed are sent again from the grid itself, and only they
        assert f"grid.retry_failed() sends {len(failed)} again" in repr(grid)
        created = stats(sim)["created"]
        sim.state.reconfigure({"fail_rate": 0.0})
        assert grid.retry_failed() == len(failed)
        assert [s["category"] for s in grid.cell_states] == ["done"] * 6
        assert stats(sim)["created"] == created + len(failed)
        assert "failed" not in repr(grid)


@ON_THE_SIMULATOR
def test_cancel_all_cancels_the_unfinished_cells(
    home: Path, make_simulator: Callable[..., SimulatorServer]
) -> None:
    sim = make_simulator(speed=0.2)  # image tasks take seconds
    with gw.Client(base_url=sim.base_url, api_key=KEY) as client:
        grid = gw.grid(T2I, {"prompt": "a fox", "n": 1}, x=("seed", [1, 2, 3]), client=client)
        assert ask(grid, "_ask_cancel") == {"ok": True, "asked": 3}
        grid.wait(timeout=60)
        assert stats(sim).get("cancel", 0) == 3
        assert all(s["category"] == "cancelled" for s in grid.cell_states)
        assert all("cancel" in s["status"] for s in grid.cell_states)


@pytest.mark.slow
@ON_THE_SIMULATOR
def test_ratings_survive_a_new_client_and_load_grid_sends_nothing(
    home: Path, make_simulator: Callable[..., SimulatorServer]
) -> None:
    sim = make_simulator()
    with gw.Client(base_url=sim.base_url, api_key=KEY) as first:
        grid = table(first)
        grid.wait(timeout=60)
        grid.rate(grid.cell(x=1, y="fox"), 5, "the one")
        assert ask(grid, "_ask_rate", {"index": 4, "stars": 2, "note": None})["stars"] == 2
        grid.rate(grid.cells[1], 3)
        grid.rate(grid.cells[1], 0)  # cleared
        with pytest.raises(ValueError, match="1-5"):
            grid.rate(grid.cells[0], 6)
    # the file itself holds them
    file_store = GridStore(home / "ledger.sqlite3")
    assert file_store.ratings(grid.id) == {0: (5, "the one"), 4: (2, None)}
    file_store.close()
    creates = stats(sim)["create"]
    with gw.Client(base_url=sim.base_url, api_key=KEY) as later:
        assert [g.id for g in gw.grids(later)] == [grid.id]
        again = gw.load_grid(grid.id, client=later)
        assert again.shape == (1, 2, 3)
        assert [(c.rating, c.note) for c in again.cells][:2] == [(5, "the one"), (0, None)]
        assert again.cells[4].rating == 2
        assert [c.request_id for c in again.cells] == [c.request_id for c in grid.cells]
        for cell in again.cells:
            assert cell.outputs and cell.outputs[0].path is not None
            assert cell.outputs[0].path.exists()  # from the local copy
        assert stats(sim)["create"] == creates
        assert later.request_counts == {"create": 0, "status": 0, "result": 0, "cancel": 0}
        assert all(
            again.thumbs[str(s["index"])][0].startswith("data:image/") for s in again.cell_states
        )
        with pytest.raises(KeyError) as caught:
            gw.load_grid(grid.id[:-1] + "z", client=later)
        assert grid.id[:-1] + "z" in str(caught.value) and grid.id in str(caught.value)


#: what the browser sends: a star's click carries the stars only, the note field's
#: ``change`` the note only (issue 40: a whole ``rate`` message from each lost one)
NOTE = {"index": 0, "note": "at dawn"}
STAR = {"index": 0, "stars": 4}


@pytest.mark.slow
@ON_THE_SIMULATOR
@pytest.mark.parametrize("order", [(NOTE, STAR), (STAR, NOTE)], ids=["note-star", "star-note"])
def test_a_star_and_a_note_sent_apart_both_stay_in_either_order(
    home: Path, client: gw.Client, order: tuple[dict[str, Any], ...]
) -> None:
    grid = gw.grid(T2I, {"prompt": "a fox", "n": 1}, x=("seed", [1, 2]), client=client)
    grid.wait(timeout=60)
    for message in order:
        assert ask(grid, "_ask_rate", message)["ok"]
    assert (grid.cells[0].rating, grid.cells[0].note) == (4, "at dawn")
    assert grid.cell_states[0]["stars"] == 4 and grid.cell_states[0]["note"] == "at dawn"
    # a later star keeps the note; a cleared note keeps the stars
    kept = ask(grid, "_ask_rate", {**STAR, "stars": 2})  # the answer: what the store holds
    assert kept == {"ok": True, "stars": 2, "note": "at dawn"}
    assert ask(grid, "_ask_rate", {**NOTE, "note": None}) == {"ok": True, "stars": 2, "note": None}
    ask(grid, "_ask_rate", {"index": 1, "note": "dusk"})
    grid.rate(1, 3)
    file_store = GridStore(home / "ledger.sqlite3")
    assert file_store.ratings(grid.id) == {0: (2, None), 1: (3, "dusk")}
    file_store.close()
    assert grid.scores("x")[0]["mean"] == 3.0


@pytest.mark.slow
@ON_THE_SIMULATOR
def test_an_imgm_cell_carries_the_one_thumbnail_it_draws(client: gw.Client) -> None:
    """The cell draws its first image and a "4" badge: the other three thumbnails were
    sent and saved with the notebook for nothing (issue 40: the notebook's weight)."""
    grid = gw.grid("imgM-v8.1-t2i", {"prompt": "a {red, blue} kite"}, client=client)
    grid.wait(timeout=60)
    assert [len(c.outputs) for c in grid.cells] == [4, 4]
    assert wait_for(lambda: len(grid.thumbs) == 2, timeout=30)
    assert [len(urls) for urls in grid.thumbs.values()] == [1, 1]
    assert all(urls[0].startswith("data:image/") for urls in grid.thumbs.values())


def test_the_store_merges_a_rating_per_field(tmp_path: Path) -> None:
    store = GridStore(tmp_path / "ledger.sqlite3")
    assert store.rate("g", 0, note="calm") == (0, "calm")
    assert store.rate("g", 0, 5) == (5, "calm")  # a stale star message keeps the note
    assert store.rate("g", 0, None, "") == (5, None)  # "" clears the note alone
    assert store.rate("g", 0, 0) == (0, None)  # nothing left: no rating
    assert store.ratings("g") == {}
    store.close()


@pytest.mark.slow
@ON_THE_SIMULATOR
def test_load_grid_re_attaches_unfinished_cells_without_creating(
    home: Path, make_simulator: Callable[..., SimulatorServer]
) -> None:
    sim = make_simulator(speed=0.5)
    with gw.Client(base_url=sim.base_url, api_key=KEY) as first:
        grid = gw.grid(T2I, {"prompt": "a fox", "n": 1}, x=("seed", [1, 2]), client=first)
        ids = [c.request_id for c in grid.cells]
    with gw.Client(base_url=sim.base_url, api_key=KEY) as later:
        again = gw.load_grid(grid.id, client=later)
        again.wait(timeout=60)
        assert [c.request_id for c in again.cells] == ids
        assert all(c.outputs for c in again.cells)
        assert later.request_counts["create"] == 0 and stats(sim)["create"] == 2


@pytest.mark.slow
@ON_THE_SIMULATOR
def test_swap_and_recall_into_a_prefilled_form(client: gw.Client) -> None:
    grid = table(client)
    cell = grid.cell(x=3, y="cat")
    assert ask(grid, "_ask_swap", {"a": "x", "b": "y"}) == {"ok": True}
    assert grid.shape == (1, 3, 2)
    assert grid.head["x"]["label"] == "prompt_sr" and grid.head["y"]["label"] == "seed"
    assert grid.cell(x="cat", y=3) is cell
    assert client.request_counts["create"] == 6  # no new tasks
    form = grid.form(cell)
    assert form.endpoint == T2I
    assert form.value["prompt"] == "a cat in the snow" and form.value["seed"] == 3
    assert ask(grid, "_ask_recall", {"index": cell.index}) == {"ok": True}  # the cell's button
    assert grid.recall_area is not None
    (shown,) = grid.recall_area.outputs
    assert "EndpointForm genW2.5-t2i-preview" in shown["data"]["text/plain"]
    assert "application/vnd.jupyter.widget-view+json" in shown["data"]
    grid.wait(timeout=60)


@ON_THE_SIMULATOR
def test_a_bad_ask_from_the_page_is_answered_with_what_is_allowed(client: gw.Client) -> None:
    """Every ask is an anywidget command answered either way: a bad one (an unknown
    name, a bad index, stars out of range, no two axes) gets an error that says what
    is allowed, and nothing changes; the helper fails on an ask left unanswered (an
    exception in the kernel)."""
    grid = table(client, confirm_above=1)  # waits for its Submit: nothing is sent
    refused = {
        ("_ask_rate", 6): "index must be a cell number 0-5, not 6",
        ("_ask_rate", -1): "index must be a cell number 0-5, not -1",
        ("_ask_rate", True): "index must be a cell number 0-5, not True",
        ("_ask_full", "0"): "index must be a cell number 0-5, not '0'",
        ("_ask_recall", None): "index must be a cell number 0-5, not None",
    }
    for (name, index), said in refused.items():
        assert ask(grid, name, {"index": index, "stars": 3}) == {"error": said}
    assert ask(grid, "_ask_rate", {"index": 0, "stars": 7}) == {
        "error": "stars must be a whole number 1-5 (0 clears), not 7"
    }
    assert ask(grid, "_ask_rate", {"index": 0, "note": 5}) == {
        "error": 'a note is a string ("" clears it), not int'
    }
    assert "swap two of" in ask(grid, "_ask_swap", {"a": "x", "b": "q"})["error"]
    assert ask(grid, "_ask_rate", [0, 4]) == {"error": "an ask is a JSON object, not list"}
    unknown = ask(grid, "_ask_delete", {"index": 0})["error"]
    assert unknown.startswith("unknown ask '_ask_delete'; this view answers _ask_cancel")
    assert "_ask_rate" in unknown and "_ask_thumbs" in unknown
    assert all(c.rating == 0 and c.note is None for c in grid.cells)
    assert grid.shape == (1, 2, 3) and not grid.run.started and grid.recall_area is None
    grid.close()


@ON_THE_SIMULATOR
def test_grid_form_takes_a_cell_number_and_says_which_ones_there_are(client: gw.Client) -> None:
    """``grid.form(i)`` takes the cell numbers 0 to n-1 as the page's asks do: a number
    past the last, a negative one (never the last cell counted from the end) or a bool
    is an IndexError saying what is allowed."""
    grid = table(client, confirm_above=1)  # waits for its Submit: nothing is sent
    assert grid.form(5).value["seed"] == grid.cells[5].payload["seed"]
    for index in (6, 99, -1, True):
        with pytest.raises(IndexError, match=rf"^cell must be a cell number 0-5, not {index!r}$"):
            grid.form(index)
    assert not grid.run.started
    grid.close()


@ON_THE_SIMULATOR
def test_the_expected_finish_of_running_cells_is_shown() -> None:
    fake = ForecastClient()
    before = time.time()
    grid = gw.grid(T2I, {"prompt": "a fox", "n": 1}, x=("seed", [1, 2]), client=fake)
    assert [p for _, p in fake.sent] == [
        {"prompt": "a fox", "n": 1, "seed": 1},
        {"prompt": "a fox", "n": 1, "seed": 2},
    ]
    assert grid.run.expected_finish() == 14.0  # the latest of the running cells
    grid.tick()  # the ticker's call; the write lands within the throttle's interval
    assert wait_for(lambda: grid.head["expected_finish_at"] is not None, timeout=10)
    at = grid.head["expected_finish_at"]
    assert at is not None and at >= before + 14.0
    assert grid.head["progress"] == "0 of 2 done" and not grid.head["finished"]
    grid.close()


@pytest.mark.slow
@ON_THE_SIMULATOR
def test_a_viewed_grid_sends_its_thumbnails_once(client: gw.Client) -> None:
    """A page that asked for thumbnails gets each once, as a message; viewed or not
    (nbclient), no grid puts them into its state, which a notebook saves."""
    viewed, unviewed = table(client, confirm_above=1), table(client)
    sent: list[dict[str, Any]] = []
    viewed.send = lambda content, buffers=None: sent.append(content)  # type: ignore[method-assign]
    ask(viewed, "_ask_thumbs")  # what a new view asks first
    viewed.submit(wait=False)
    for grid in (viewed, unviewed):
        grid.wait(timeout=60)
    assert wait_for(lambda: len(unviewed.thumbs) == 6, timeout=30)
    assert wait_for(lambda: sum(len(m.get("thumbs", {})) for m in sent) >= 6, timeout=30)
    got = {i for m in sent for i, urls in m.get("thumbs", {}).items() if urls[0]}
    assert got == {str(i) for i in range(6)}
    assert "thumbs" not in viewed.get_state() and "thumbs" not in unviewed.get_state()


@ON_THE_SIMULATOR
def test_a_big_grid_writes_its_cells_less_often(client: gw.Client) -> None:
    small = table(client, confirm_above=100)
    big = gw.grid(
        T2I,
        {"prompt": "a fox0", "n": 1},
        x=("seed", "1-10"),
        y=("prompt_sr", [f"fox{i}" for i in range(10)]),
        client=client,
        confirm_above=1,
    )
    assert small._throttle.interval == pytest.approx(0.1)
    assert big._throttle.interval == pytest.approx(1.0)
    assert client.request_counts["create"] == 6  # the big one waits for submit()


@ON_THE_SIMULATOR
def test_ctrl_c_in_gw_grid_says_how_to_go_on_and_that_way_pays_each_cell_once(
    client: gw.Client, simulator: SimulatorServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while ``gw.grid`` sends: the grid is not returned, so the interrupt says
    how to go on (its id, ``gw.load_grid(...).submit()``); that way sends only the cells
    that never left, and no cell is created twice."""
    send_many = client.send_many
    ctrl_c_after(monkeypatch, client, 1)
    before = stats(simulator)["created"]
    with pytest.raises(KeyboardInterrupt) as stopped:
        gw.grid(T2I, {"prompt": "a fox", "n": 1}, x=("seed", "1-10"), client=client)
    said = " ".join(stopped.value.__notes__)
    grid_id = said.split()[1]
    assert f"gw.load_grid({grid_id!r})" in said and ".submit()" in said
    monkeypatch.setattr(client, "send_many", send_many)
    grid = gw.load_grid(grid_id, client=client)
    assert 1 <= sum(1 for c in grid.cells if c.request_id) <= 8  # the second chunk waits
    grid.submit(wait=True).wait(timeout=120)
    made = [c for c in grid.cells if c.request_id]
    unknown = [c for c in grid.cells if (c.error or "").startswith("outcome unknown")]
    assert len(made) + len(unknown) == 10  # a create cut off in flight is never sent again
    assert len(made) <= stats(simulator)["created"] - before <= 10
    assert client.ledger is not None
    tagged = client.ledger.tagged([grid.run.tag(c.row) for c in grid.cells])
    may_have_made = sorted(r.tag for r in tagged if r.state != "not_created")
    assert may_have_made == sorted(grid.run.tag(c.row) for c in grid.cells)  # one each


@pytest.mark.slow
@ON_THE_SIMULATOR
def test_a_reopened_grid_never_sent_offers_its_submit_button(
    home: Path, make_simulator: Callable[..., SimulatorServer]
) -> None:
    """Review-25 fault 5: a grid waiting for its Submit, stored by a rating and re-opened
    in another kernel, had no Submit button (nor Go on): only code could send it. It
    offers Submit as when it was planned, and the button sends each cell once."""
    sim = make_simulator()
    with gw.Client(base_url=sim.base_url, api_key=KEY) as first:
        grid = table(first, confirm_above=5)
        grid.rate(0, 3, "before sending")  # stores it, nothing sent
    with gw.Client(base_url=sim.base_url, api_key=KEY) as later:
        again = gw.load_grid(grid.id, client=later)
        head = again.head
        assert head["needs_confirmation"] and not head["started"]  # the Submit button
        assert stats(sim).get("create", 0) == 0
        assert ask(again, "_ask_submit") == {"ok": True}  # the button
        again.wait(timeout=60)
        assert stats(sim)["create"] == 6
        assert again.head["started"] and again.cells[0].rating == 3
