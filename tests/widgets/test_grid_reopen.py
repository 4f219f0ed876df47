"""``gw.grid`` run again after the kernel that sent it ended mid-grid (review-33 point 2):
the same grid is re-opened, its cells sent are followed and never created again, only
the cells never sent are sent, and it says so; ``new=True`` plans a new grid."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import pytest
from widgets.taskfakes import wait_for

import genwidgets as gw
from genwidgets.lab import GridRun, GridStore
from genwidgets.lab.batch_store import WAITING
from genwidgets.simulator import SimulatorServer

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

T2I = "genW2.5-t2i-preview"
KEY = "sim-demo-key"
CELLS = 12
#: the cell a student runs again after "Restart kernel and Run All"
CALL = (
    "import genwidgets as gw\n"
    "client = gw.Client()\n"
    "gw.grid('genW2.5-t2i-preview', {'prompt': 'a lighthouse at dusk', 'n': 1},\n"
    "        x=('seed', list(range(1, 13))), client=client, confirm_above=100)\n"
)


def stats(sim: SimulatorServer) -> dict[str, Any]:
    return dict(httpx.get(f"{sim.base_url}/_sim/stats", timeout=10).json())


def same_call(client: gw.Client, **kwargs: Any) -> gw.Grid:
    return gw.grid(
        T2I,
        {"prompt": "a lighthouse at dusk", "n": 1},
        x=("seed", list(range(1, CELLS + 1))),
        client=client,
        confirm_above=100,
        **kwargs,
    )


def kernel_running_the_cell(sim: SimulatorServer, home: Path) -> subprocess.Popen[bytes]:
    """Another process running :data:`CALL`, as a kernel with ``home`` would."""
    env = dict(
        os.environ,
        GENWIDGETS_HOME=str(home),
        GENWIDGETS_BASE_URL=sim.base_url,
        GENWIDGETS_API_KEY=KEY,
    )
    return subprocess.Popen([sys.executable, "-c", CALL], env=env)


def killed_mid_grid(sim: SimulatorServer, home: Path) -> str:
    """Run :data:`CALL` in another process, kill it with SIGKILL once 3 creates were
    answered (the others in flight or never sent); the id of the grid it left."""
    kernel = kernel_running_the_cell(sim, home)
    try:
        assert wait_for(lambda: stats(sim)["created"] >= 3, 120), "no create was answered"
    finally:
        kernel.send_signal(signal.SIGKILL)
        kernel.wait(timeout=60)
    store = GridStore(home / "ledger.sqlite3")
    try:
        (left,) = store.grids()
    finally:
        store.close()
    return left.id


def owners(home: Path, grid_id: str) -> set[str]:
    with closing(sqlite3.connect(home / "ledger.sqlite3")) as db:
        found = db.execute(
            "SELECT DISTINCT owner FROM batch_rows WHERE batch_id = ? AND owner IS NOT NULL",
            (grid_id,),
        ).fetchall()
    return {owner for (owner,) in found}


def reserved_only(home: Path, grid_id: str, index: int) -> None:
    """Leave cell ``index`` as a kill between its reservation and its create's intent
    leaves it: reserved by the ended kernel, nothing in the ledger (it never left)."""
    owner = min(owners(home, grid_id))  # the ended kernel's (the only one yet)
    with closing(sqlite3.connect(home / "ledger.sqlite3")) as db, db:
        db.execute(
            "UPDATE batch_rows SET state = 'sending', owner = ?, reserved_at = ? "
            "WHERE batch_id = ? AND idx = ?",
            (owner, time.time(), grid_id, index),
        )


def tasks(sim: SimulatorServer) -> list[dict[str, Any]]:
    return list(httpx.get(f"{sim.base_url}/_sim/tasks", timeout=10).json())


def test_a_grid_a_killed_kernel_left_is_reopened_and_pays_only_its_unsent_cells(
    make_simulator: Callable[..., SimulatorServer],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    sim = make_simulator(latency=1.0)  # creates answered slowly: the kill finds some out
    home = tmp_path / "home"
    left_id = killed_mid_grid(sim, home)
    httpx.put(f"{sim.base_url}/_sim/config", json={"latency": 0}, timeout=10).raise_for_status()
    store = GridStore(home / "ledger.sqlite3")
    unsent = [row.index for row in store.rows(left_id) if row.state == WAITING]
    store.close()
    assert 0 < len(unsent) < CELLS, "the kill came too early or too late: it proves nothing"
    reserved_only(home, left_id, unsent[0])

    monkeypatch.setenv("GENWIDGETS_HOME", str(home))
    with gw.Client(sim.base_url, KEY) as client:
        view = same_call(client)
        said = capsys.readouterr().out
        assert view.run.id == left_id  # the same grid, not a new one
        view.wait(timeout=120)
        assert all(view.run.cells[i].request_id for i in unsent)  # the unsent: sent now
        made = [t["payload_sha256"] for t in tasks(sim)]  # each cell's payload is its own
        assert len(made) == len(set(made)) <= CELLS  # no cell paid twice
        assert f"re-opened grid {left_id} left unfinished by a kernel that ended" in said
        # one count, said once: the cells sent and those sent now make the grid (a
        # cell reserved whose create never left counts as never sent: CI found "8 of
        # 12 were sent; the 8 never sent are sent now")
        counts = re.search(r"(\d+) of (\d+) were sent .*the (\d+) never sent are sent now", said)
        assert counts is not None and "new=True" in said, said
        sent, cells, now = (int(n) for n in counts.groups())
        assert (cells, sent + now) == (CELLS, CELLS) and now >= len(unsent), said
        assert view.head["progress"].startswith(f"re-opened grid {left_id}")
        assert [g.id for g in gw.grids(client)] == [left_id]
        # finished now: the same call would plan a new grid
        assert GridRun.reopen_left(view.run.plan, client) is None


def test_a_second_kernel_while_the_first_re_opener_sends_re_opens_the_grid_too(
    make_simulator: Callable[..., SimulatorServer], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After the kill, two kernels run the cell (a second notebook, a second Run All):
    the second, while the first still sends, re-opens the same grid and shares its
    cells, each paid once (it planned a new grid and paid for all 12 again: review-34)."""
    sim = make_simulator(latency=1.0)
    home = tmp_path / "home"
    left_id = killed_mid_grid(sim, home)
    (killed,) = owners(home, left_id)
    httpx.put(f"{sim.base_url}/_sim/config", json={"latency": 6}, timeout=10).raise_for_status()
    first = kernel_running_the_cell(sim, home)
    try:
        assert wait_for(lambda: len(owners(home, left_id) - {killed}) > 0, 120), (
            "the first re-opener never reserved a cell"
        )
        assert first.poll() is None  # its creates are answered in 6 s: it still sends
        monkeypatch.setenv("GENWIDGETS_HOME", str(home))
        with gw.Client(sim.base_url, KEY) as client:
            second = same_call(client)
            assert second.run.id == left_id  # the same grid, not a new one paid again
            httpx.put(f"{sim.base_url}/_sim/config", json={"latency": 0}, timeout=10)
            second.wait(timeout=120)
        assert first.wait(timeout=120) == 0
    finally:
        first.kill()
        first.wait(timeout=60)
    made = tasks(sim)
    store = GridStore(home / "ledger.sqlite3")
    try:
        assert [g.id for g in store.grids()] == [left_id]
        cells = store.rows(left_id)
    finally:
        store.close()
    payloads = [t["payload_sha256"] for t in made]
    assert len(payloads) == len(set(payloads)) <= CELLS  # no cell paid twice
    # each cell follows its one task, but those the kill left with an answer never heard
    # (outcome unknown, never sent again: the gateway may have made them, no idempotency
    # key tells); none is followed twice, none a task the gateway did not make
    followed = [row.request_id for row in cells if row.request_id is not None]
    assert len(followed) == len(set(followed)) and set(followed) <= {t["request_id"] for t in made}
    assert all(r.request_id or "outcome unknown" in (r.error or "") for r in cells), cells


def test_new_true_plans_a_new_grid_beside_the_one_a_killed_kernel_left(
    make_simulator: Callable[..., SimulatorServer], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sim = make_simulator(latency=1.0)
    home = tmp_path / "home"
    left_id = killed_mid_grid(sim, home)
    httpx.put(f"{sim.base_url}/_sim/config", json={"latency": 0}, timeout=10).raise_for_status()
    monkeypatch.setenv("GENWIDGETS_HOME", str(home))
    with gw.Client(sim.base_url, KEY) as client:
        view = same_call(client, new=True)
        assert view.run.id != left_id and view.run.left_note is None
        view.wait(timeout=120)
        assert all(c.request_id for c in view.run.cells)  # every cell paid again
        assert {g.id for g in gw.grids(client)} == {left_id, view.run.id}
