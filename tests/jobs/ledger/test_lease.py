"""Leases: an owner that holds only rows of other tables (a batch's reserved rows, no
task yet) is alive while its process runs, and a resume's clean-up of stopped owners
keeps it; owners that stopped and own nothing are forgotten."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from genwidgets.jobs.ledger import Ledger


def owners(path: Path) -> set[str]:
    with sqlite3.connect(path) as con:
        return {o for (o,) in con.execute("SELECT owner FROM owners")}


def test_an_owner_holding_rows_of_other_tables_stays_alive_through_a_claim(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ledger.sqlite3"
    with Ledger(path) as holder, Ledger(path) as resumer:
        with holder.transaction() as conn:
            assert holder.hold(conn) == holder.owner
        with sqlite3.connect(path) as con:  # an owner of another host that stopped long ago
            con.execute("INSERT INTO owners VALUES ('far:1:x', 'far', 1, ?)", (time.time() - 3600,))
        assert holder.owner in resumer.alive_owners()
        assert "far:1:x" not in resumer.alive_owners()
        assert resumer.claim_unfinished("gw") == ([], 0)
        assert owners(path) >= {holder.owner} and "far:1:x" not in owners(path)
        assert holder.owner in resumer.alive_owners()
    assert owners(path) == set()  # closing gives every lease up
