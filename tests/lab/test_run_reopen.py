"""``GridRun.reopen_left``: which stored grid the same call re-opens (review-33 point 2):
one of the same plan whose cells only a process that ended reserved; a drawn seed matched
by its own; never a grid a live process holds, nor a finished one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import genwidgets as gw
from genwidgets.lab import GridRun
from genwidgets.lab.plan import GridPlan, plan_grid
from genwidgets.simulator import SimulatorServer

pytestmark = pytest.mark.timeout(120)

T2I = "genW2.5-t2i-preview"
KEY = "sim-demo-key"
GONE = "another-host:4242:ended"  # a ledger owner with no heartbeat: not alive


@pytest.fixture
def client(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, simulator: SimulatorServer
) -> Iterator[gw.Client]:
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path / "home"))
    with gw.Client(simulator.base_url, KEY) as made:
        yield made


def planned(client: gw.Client, seed: int | None = None, prompt: str = "a fox") -> GridPlan:
    """A grid whose seed is drawn (no axis or field sets it) unless ``seed`` replays it."""
    return plan_grid(
        T2I, {"prompt": prompt, "n": 1}, ("n", [1, 2]), seed=seed, prepare=client.prepare
    )


def left(client: gw.Client, plan: GridPlan, owner: str, state: str = "sending") -> str:
    """A grid stored with its first cell reserved by ``owner``, nothing sent."""
    run = GridRun(plan, client)
    run.store_batch()
    assert client.ledger is not None
    with client.ledger.transaction() as conn:
        conn.execute(
            "UPDATE batch_rows SET state = ?, owner = ?, attempt = 1 "
            "WHERE batch_id = ? AND idx = 0",
            (state, owner, run.id),
        )
    return run.id


def test_a_drawn_seed_grid_left_by_an_ended_process_is_matched_by_its_own_seed(
    client: gw.Client,
) -> None:
    first = planned(client)
    grid_id = left(client, first, GONE)
    again = planned(client)  # the same call: another drawn seed, another digest
    assert again.seed is not None and again.digest != first.digest
    replayed: list[Any] = []

    def replan(seed: int) -> GridPlan:
        replayed.append(seed)
        return planned(client, seed)

    run = GridRun.reopen_left(again, client, replan)
    assert run is not None and run.id == grid_id and replayed == [first.seed]
    assert run.plan.seed == first.seed  # its own seed: the cells never sent match the sent
    assert run.left_note is not None and f"grid {grid_id} left unfinished" in str(run.left_note)
    assert "1 of 2 were sent" in str(run.left_note)


def test_a_grid_a_live_process_holds_or_of_another_plan_is_not_reopened(
    client: gw.Client,
) -> None:
    assert client.ledger is not None
    plan = planned(client, seed=7)
    left(client, plan, client.ledger.owner)  # this live process reserved it
    assert GridRun.reopen_left(plan, client) is None
    other = planned(client, seed=7, prompt="a heron")
    left(client, other, GONE)
    assert GridRun.reopen_left(planned(client, seed=7), client) is None  # another plan


def test_a_finished_grid_or_one_never_sent_is_not_reopened(client: gw.Client) -> None:
    plan = planned(client, seed=9)
    GridRun(plan, client).store_batch()  # stored, never sent: no owner ended
    assert GridRun.reopen_left(plan, client) is None
    grid_id = left(client, plan, GONE, state="done")
    assert client.ledger is not None
    with client.ledger.transaction() as conn:
        conn.execute("UPDATE batch_rows SET state = 'failed' WHERE batch_id = ?", (grid_id,))
    assert GridRun.reopen_left(plan, client) is None
