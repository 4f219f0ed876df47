"""A grid at work (``lab/run.py``): what a run does when its store cannot keep a cell."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from widgets.taskfakes import ForecastClient

import genwidgets as gw
from genwidgets.lab.plan import plan_grid
from genwidgets.lab.run import GridRun, status_of
from genwidgets.lab.store import GridStore, store_for

T2I = "genW2.5-t2i-preview"


def test_a_grid_store_that_cannot_write_a_cell_warns_and_every_cell_is_still_sent(
    tmp_path: Path,
) -> None:
    """A lock held past the ledger's busy timeout fails one store write: the batch
    goes on (a LedgerWarning names the cell and its request id), nothing is lost."""

    class LockedOnce(GridStore):
        def set_request(self, grid_id: str, index: int, *args: Any) -> None:
            if index == 1:
                raise gw.LedgerError(f"the ledger {self.path} is locked")
            super().set_request(grid_id, index, *args)

    fake = ForecastClient()
    store = LockedOnce(tmp_path / "grids.sqlite3")
    plan = plan_grid(T2I, {"prompt": "a fox", "n": 1}, ("seed", [1, 2, 3]), prepare=fake.prepare)
    run = GridRun(plan, fake, store=store)
    with pytest.warns(gw.LedgerWarning, match=r"cell 1 \(req-2\).*client.history"):
        run.submit(wait=True)
    assert len(fake.sent) == 3 and all(c.request_id for c in run.cells)
    stored = store.require(run.id)
    assert [c.request_id for c in stored.cells] == ["req-1", None, "req-3"]
    store.close()


def test_a_cell_the_grid_store_missed_is_found_by_its_tag_when_the_grid_is_reopened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, simulator: Any
) -> None:
    """The store missed cell 1's request id (a locked file): re-opened, the grid finds
    its task in the ledger by the tag its create was written with, and sends nothing."""
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path / "home"))
    with gw.Client(simulator.base_url, "sim-demo-key") as client:
        store = store_for(client)
        keep = store.set_request

        def locked_for_cell_1(grid_id: str, index: int, *args: Any) -> None:
            if index == 1:
                raise gw.LedgerError(f"the ledger {store.path} is locked")
            keep(grid_id, index, *args)

        monkeypatch.setattr(store, "set_request", locked_for_cell_1)
        plan = plan_grid(T2I, {"prompt": "a fox", "n": 1}, ("seed", [1, 2, 3]))
        run = GridRun(plan, client)
        with pytest.warns(gw.LedgerWarning, match="cell 1"):
            run.submit(wait=True)
        sent = [c.request_id for c in run.cells]
        assert store.require(run.id).cells[1].request_id is None
        monkeypatch.setattr(store, "set_request", keep)
        creates = client.request_counts.get("create", 0)
        again = GridRun.load(run.id, client)
        assert [c.request_id for c in again.cells] == sent
        assert again.wait(timeout=120).counts() == (3, 0, 3)
        assert store.require(run.id).cells[1].request_id == sent[1]  # written back
        assert client.request_counts.get("create", 0) == creates  # nothing sent again


def test_a_cell_whose_create_failed_says_what_it_means_for_money(tmp_path: Path) -> None:
    """A 400 made nothing ("not created"); a 500 may come after the task was made
    ("outcome unknown", never "not created"): the cell, its export and its words agree."""
    from genwidgets.errors import GatewayError, ServerError

    class Failing(ForecastClient):
        def send(self, prepared: Any) -> Any:
            seed = prepared[1]["seed"]  # the fake prepares (endpoint, payload)
            if seed == 2:
                raise GatewayError("bad seed", status_code=400)
            if seed == 3:
                raise ServerError("Runtime execution failed", status_code=500)
            return super().send(prepared)

    fake = Failing()
    store = GridStore(tmp_path / "grids.sqlite3")
    plan = plan_grid(T2I, {"prompt": "a fox", "n": 1}, ("seed", [1, 2, 3]), prepare=fake.prepare)
    run = GridRun(plan, fake, store=store).submit(wait=True)
    assert [status_of(c) for c in run.cells[1:]] == ["not created", "outcome unknown"]
    assert (run.cells[2].error or "").startswith("outcome unknown: ServerError")
    assert "not sent again" in (run.cells[2].error or "")
    assert run.counts()[1] == 2  # both failed cells count as failed, neither is retried
    described = {c["index"]: c["error"] for c in run.describe()["cells"]}
    assert described[2] == run.cells[2].error  # the export says it the same way
    store.close()


def test_creates_failing_in_a_row_pause_the_grid_until_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make_simulator: Any
) -> None:
    """A gateway answering 500 to every create: the grid pauses after the breaker's
    count (creates in flight answer, no more leave), each failed cell says "outcome
    unknown", the rest wait; asked to go on, it sends only those, each once."""
    import httpx

    from genwidgets.lab.breaker import BREAKER_AFTER

    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path / "home"))
    sim = make_simulator()

    def stats() -> dict[str, Any]:
        return dict(httpx.get(f"{sim.base_url}/_sim/stats", timeout=10).json())

    httpx.put(f"{sim.base_url}/_sim/config", json={"create_error_rate": 1.0}, timeout=10)
    with gw.Client(sim.base_url, "sim-demo-key", max_retries=0) as client:
        plan = plan_grid(T2I, {"prompt": "a fox", "n": 1}, ("seed", list(range(1, 13))))
        run = GridRun(plan, client).submit(wait=True)
        posted = stats()["create"]
        assert BREAKER_AFTER <= posted <= BREAKER_AFTER + run.concurrency
        assert run.paused is not None and "creates in a row" in run.paused
        failed = [c for c in run.cells if c.error is not None]
        assert len(failed) == posted
        assert all((c.error or "").startswith("outcome unknown") for c in failed)
        held = [c for c in run.cells if c.held]
        assert len(held) == 12 - posted and all(c.job is None for c in held)
        assert {status_of(c) for c in held} == {"not sent (paused)"}
        run.wait(timeout=60)  # a paused grid's wait returns: nothing more is coming
        httpx.put(f"{sim.base_url}/_sim/config", json={"create_error_rate": 0.0}, timeout=10)
        run.submit(wait=True)  # asked to go on
        assert run.paused is None
        run.wait(timeout=120)
        assert stats()["created"] == 12 - posted  # the held cells, each once
        assert all(c.job is not None for c in held)
        assert all(c.job is None for c in failed)  # never sent again
