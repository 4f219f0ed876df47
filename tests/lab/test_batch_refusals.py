"""A batch its home cannot record (``lab/batch.py``'s ``store_batch``): refused in words
that say nothing was sent and what to do, the ledger named by the shown-path rule, and
shown in a notebook as those words alone (review-33 point 3)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import genwidgets as gw
from genwidgets.lab.batch_store import BatchStore, store_for
from genwidgets.simulator import SimulatorServer

pytestmark = pytest.mark.timeout(120)

T2I = "genW2.5-t2i-preview"
KEY = "sim-demo-key"


@pytest.fixture
def sim(make_simulator: Callable[..., SimulatorServer]) -> SimulatorServer:
    return make_simulator()


@pytest.fixture
def client(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sim: SimulatorServer
) -> Iterator[gw.Client]:
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path / "home"))
    with gw.Client(sim.base_url, KEY) as made:
        yield made


def read_only_write(*args: Any, **kwargs: Any) -> Any:
    """The ledger's words when its file is on a read-only mount (``ledger/file.py``)."""
    try:
        raise sqlite3.OperationalError("attempt to write a readonly database")
    except sqlite3.OperationalError as exc:
        raise gw.LedgerError(f"cannot write the ledger /abs/where/ledger.sqlite3: {exc}") from exc


def test_a_batch_a_read_only_ledger_cannot_record_says_nothing_was_sent_and_what_to_do(
    client: gw.Client, sim: SimulatorServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = store_for(client, BatchStore)
    monkeypatch.setattr(store, "save_batch", read_only_write)
    rows = [{"text": "a fox"}, {"text": "a heron"}]
    with pytest.raises(gw.NotRecorded) as refused:
        gw.batch(T2I, rows, {"prompt": "{text}", "n": 1}, out=tmp_path / "shots", client=client)
    said = str(refused.value)
    assert said.startswith("batch ") and " not sent: GENWIDGETS_HOME cannot be written" in said
    assert "attempt to write a readonly database" in said
    assert "nothing was sent or billed" in said and "set GENWIDGETS_HOME to a folder" in said
    assert "$GENWIDGETS_HOME/ledger.sqlite3" in said and str(tmp_path) not in said
    assert refused.value.__cause__ is None and refused.value.__suppress_context__
    assert refused.value._render_traceback_() == [f"NotRecorded: {said}"]
    assert httpx.get(f"{sim.base_url}/_sim/stats", timeout=10).json()["created"] == 0


def test_another_ledger_fault_at_recording_is_not_called_a_read_only_home(
    client: gw.Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def damaged(*args: Any, **kwargs: Any) -> Any:
        raise gw.LedgerError("the ledger's schema version 99 is newer than this genwidgets")

    monkeypatch.setattr(store_for(client, BatchStore), "save_batch", damaged)
    with pytest.raises(gw.LedgerError, match="schema version 99") as refused:
        gw.batch(T2I, [{"text": "a fox"}], {"prompt": "{text}"}, out=tmp_path / "o", client=client)
    assert not isinstance(refused.value, gw.NotRecorded)
