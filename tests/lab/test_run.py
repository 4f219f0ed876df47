"""A grid at work (``lab/run.py``): what a run does when its store cannot keep a cell."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from widgets.taskfakes import ForecastClient

import genwidgets as gw
from genwidgets.lab.plan import plan_grid
from genwidgets.lab.run import GridRun
from genwidgets.lab.store import GridStore

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
