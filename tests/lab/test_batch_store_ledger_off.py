"""A client with no ledger (``lab/batch_store.py``'s memory store): one whose ledger was
asked for and could not be opened (a home that cannot be written) refuses a grid or a
batch before any create; one made with ``ledger=False`` keeps its runs in memory, and
says so when a grid is not found (review-33 point 1)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import genwidgets as gw
from genwidgets.simulator import SimulatorServer

pytestmark = pytest.mark.timeout(120)

T2I = "genW2.5-t2i-preview"
KEY = "sim-demo-key"


def created(sim: SimulatorServer) -> int:
    return int(httpx.get(f"{sim.base_url}/_sim/stats", timeout=10).json()["created"])


@pytest.fixture
def sim(make_simulator: Callable[..., SimulatorServer]) -> SimulatorServer:
    return make_simulator()


@pytest.fixture
def unwritable_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home no ledger can be made in, even by root: under a file (an empty first run)."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    home = blocker / "genwidgets-home"
    monkeypatch.setenv("GENWIDGETS_HOME", str(home))
    return home


@pytest.fixture
def unopened(unwritable_home: Path, sim: SimulatorServer) -> Iterator[gw.Client]:
    with pytest.warns(gw.LedgerWarning, match="ledger is off"):
        made = gw.Client(sim.base_url, KEY)
    assert made.ledger is None
    yield made
    made.close()


def test_a_grid_of_a_client_whose_home_cannot_be_written_is_refused_before_any_create(
    unopened: gw.Client, sim: SimulatorServer
) -> None:
    with pytest.raises(gw.NotRecorded) as refused:
        gw.grid(T2I, {"prompt": "a fox", "n": 1}, x=("seed", [1, 2, 3]), client=unopened)
    said = str(refused.value)
    assert said.startswith("grid g-") and " not sent: GENWIDGETS_HOME cannot be written" in said
    assert "nothing was sent or billed" in said
    assert "set GENWIDGETS_HOME to a folder you can write" in said
    assert "$GENWIDGETS_HOME" in said and "a-file" not in said  # the shown-path rule
    assert created(sim) == 0
    assert refused.value._render_traceback_()[0].startswith("NotRecorded: grid g-")


def test_a_batch_of_a_client_whose_home_cannot_be_written_is_refused_before_any_create(
    unopened: gw.Client, sim: SimulatorServer, tmp_path: Path
) -> None:
    rows = [{"text": "a fox"}, {"text": "a heron"}]
    with pytest.raises(gw.NotRecorded) as refused:
        gw.batch(T2I, rows, {"prompt": "{text}", "n": 1}, out=tmp_path / "shots", client=unopened)
    said = str(refused.value)
    assert said.startswith("batch ") and " not sent: GENWIDGETS_HOME cannot be written" in said
    assert "nothing was sent or billed" in said
    assert created(sim) == 0


@pytest.mark.parametrize("off", [False, None, 0])
def test_a_client_made_with_the_ledger_off_keeps_its_grid_in_memory_and_says_so(
    unwritable_home: Path, sim: SimulatorServer, off: Any
) -> None:
    """``ledger=None`` (or 0) is off on purpose as ``False`` is: it read as a ledger that
    could not be opened, and every grid was refused (review-34)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", gw.LedgerWarning)  # off on purpose: no warning
        client = gw.Client(sim.base_url, KEY, ledger=off)
    try:
        view = gw.grid(T2I, {"prompt": "a fox", "n": 1}, x=("seed", [1, 2]), client=client)
        view.wait(timeout=60)
        assert created(sim) == 2
        assert gw.load_grid(view.run.id, client=client).run.id == view.run.id  # this session's
        with pytest.raises(KeyError) as missing:
            gw.load_grid("g-20260101-000000-abcd", client=client)
        said = str(missing.value)
        assert "the ledger is off" in said and "no grid is stored yet" not in said
    finally:
        client.close()
