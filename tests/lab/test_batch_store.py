"""The batch store: rows reserved against a cap in one transaction, so two processes
sharing the ledger's file never pass it together nor take one row twice; spend given
back when nothing was created; batches listed with their rows per state."""

from __future__ import annotations

import gc
import json
import sqlite3
import threading
import weakref
from pathlib import Path

import genwidgets as gw
from genwidgets.jobs.ledger import Ledger
from genwidgets.lab.batch_store import (
    _SCHEMA,
    CREATED,
    DONE,
    FAILED,
    SENDING,
    WAITING,
    BatchStore,
    RowUpdate,
    store_for,
)


def saved(store: BatchStore, batch_id: str = "b", rows: int = 10, gateway: str = "sim") -> None:
    store.save_batch(
        batch_id,
        gateway=gateway,
        endpoint="genW2.5-t2i-preview",
        out="/tmp/out",
        digest="d" * 64,
        description={"endpoint": "genW2.5-t2i-preview"},
        rows=[(i, "genW2.5-t2i-preview", json.dumps({"prompt": f"p{i}"})) for i in range(rows)],
    )


def test_rows_are_taken_in_order_until_a_cap_and_spend_is_summed(tmp_path: Path) -> None:
    store = BatchStore(tmp_path / "ledger.sqlite3")
    saved(store)
    wanted = [(i, {"tasks": 1.0, "images": 4.0}) for i in range(5)]
    first = store.reserve("b", wanted, {"images": 10})
    assert first.taken == [(0, 1), (1, 1)] and first.capped and first.elsewhere == []
    assert first.spent == {"tasks": 2.0, "images": 8.0}
    assert [r.state for r in store.rows("b")][:3] == [SENDING, SENDING, WAITING]
    store.settle("b", [RowUpdate(1, WAITING, release=1)])  # row 1 made nothing: given back
    assert store.spent("b") == {"tasks": 1.0, "images": 4.0}
    again = store.reserve("b", wanted[1:], {"images": 10})
    assert again.taken == [(1, 2)] and again.capped  # row 1 again (attempt 2), then 12 > 10
    store.close()


def test_two_processes_sharing_the_file_never_pass_the_cap_nor_share_a_row(
    tmp_path: Path,
) -> None:
    """Two stores, each with its own ledger connection and writer (as two processes),
    reserve the same batch's rows at once."""
    path = tmp_path / "ledger.sqlite3"
    first, second = BatchStore(path), BatchStore(path)
    saved(first, rows=60)
    taken: dict[str, list[tuple[int, int]]] = {"a": [], "b": []}

    def run(name: str, store: BatchStore) -> None:
        for start in range(0, 60, 4):
            wanted = [(i, {"images": 1.0}) for i in range(start, start + 4)]
            taken[name] += store.reserve("b", wanted, {"images": 25}).taken

    threads = [
        threading.Thread(target=run, args=("a", first)),
        threading.Thread(target=run, args=("b", second)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    rows = [i for i, _ in taken["a"] + taken["b"]]
    assert len(rows) == len(set(rows)) == 25  # the cap, exactly, and no row twice
    assert first.spent("b") == {"images": 25.0}
    assert sum(1 for r in second.rows("b") if r.state == SENDING) == 25
    first.close()
    second.close()


def test_a_row_another_process_took_is_said_to_be_elsewhere(tmp_path: Path) -> None:
    store = BatchStore(tmp_path / "ledger.sqlite3")
    saved(store, rows=3)
    store.reserve("b", [(0, {"tasks": 1.0})], {})
    found = store.reserve("b", [(0, {"tasks": 1.0}), (1, {"tasks": 1.0})], {})
    assert found.taken == [(1, 1)] and found.elsewhere == [0] and not found.capped
    store.close()


def test_settled_rows_and_listed_batches(tmp_path: Path) -> None:
    store = BatchStore(tmp_path / "ledger.sqlite3")
    saved(store, "older", rows=2)
    saved(store, "newer", rows=3)
    store.reserve("newer", [(0, {"tasks": 1.0})], {})
    store.settle(
        "newer",
        [
            RowUpdate(0, CREATED, request_id="r0"),
            RowUpdate(1, DONE, request_id="r1", files=["a.png"]),
        ],
    )
    store.settle("newer", [RowUpdate(0, DONE, files=["b.png"])])  # the request id stays
    rows = store.rows("newer")
    assert (rows[0].state, rows[0].request_id, rows[0].files) == (DONE, "r0", ["b.png"])
    assert [b.id for b in store.batches("sim")] == ["newer", "older"]
    listed = store.batches("sim")[0]
    assert listed.counts == {DONE: 2, WAITING: 1} and listed.rows == 3
    assert store.batches("another gateway") == [] and store.summary("nope") is None
    store.close()


def test_a_batch_saved_under_an_older_spelling_of_the_address_is_listed(tmp_path: Path) -> None:
    """Before addresses were made normal a batch was saved under the address as typed
    (``https://GW.test:443``): the client's normal name must still list it (batches,
    grids, the board), and another gateway's stay apart."""
    store = BatchStore(tmp_path / "ledger.sqlite3")
    saved(store, "older", rows=1, gateway="https://GW.test:443")
    saved(store, "newer", rows=1, gateway="https://gw.test")
    saved(store, "elsewhere", rows=1, gateway="https://gw.test:8443")
    assert [b.id for b in store.batches("https://gw.test")] == ["newer", "older"]
    assert [b.id for b in store.batches("HTTPS://gw.TEST/")] == ["newer", "older"]
    assert [b.id for b in store.batches("https://gw.test:8443")] == ["elsewhere"]
    assert store.batches("https://other.test") == []
    store.close()


def test_a_file_without_batch_tables_reads_empty(tmp_path: Path) -> None:
    store = BatchStore(tmp_path / "ledger.sqlite3")
    assert store.batches() == [] and store.rows("b") == [] and store.spent("b") == {}
    store.close()


def test_a_reserved_row_keeps_the_owner_that_took_it_alive(tmp_path: Path) -> None:
    """A reservation writes the reserving ledger's heartbeat in its transaction: another
    process sees at once that a live owner holds the row (without a ledger: no owner)."""
    store = BatchStore(tmp_path / "ledger.sqlite3")
    saved(store, rows=2)
    store.reserve("b", [(0, {})], {})
    row = store.rows("b")[0]
    assert row.owner == store.tables.owner is not None and row.owner in store.tables.alive_owners()
    assert store.rows("b")[1].owner is None
    assert [r.index for r in store.rows("b", [1])] == [1]  # only those asked for
    store.close()
    assert row.owner not in BatchStore(tmp_path / "ledger.sqlite3").tables.alive_owners()  # closed
    memory = BatchStore()
    saved(memory, rows=1)
    memory.reserve("b", [(0, {})], {})
    assert memory.rows("b")[0].owner is None and memory.tables.alive_owners() == set()


def test_a_file_an_older_genwidgets_wrote_gets_the_owner_column(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    Ledger(path).close()
    with sqlite3.connect(path) as con:  # batch_rows as it was before owners
        con.execute(_SCHEMA[0])
        con.execute(_SCHEMA[1].replace("    owner TEXT,\n", ""))
        con.execute(_SCHEMA[2])
        con.execute(
            "INSERT INTO batch_rows (batch_id, idx, endpoint, payload, state, updated_at) "
            "VALUES ('b', 0, 'genW2.5-t2i-preview', '{}', 'waiting', 0)"
        )
    store = BatchStore(path)
    assert [(r.index, r.state, r.owner) for r in store.rows("b")] == [(0, WAITING, None)]
    assert store.reserve("b", [(0, {})], {}).taken == [(0, 1)]
    assert store.rows("b")[0].owner == store.tables.owner
    store.close()


def test_a_cap_of_zero_reserves_nothing_however_tiny_the_spend(tmp_path: Path) -> None:
    store = BatchStore(tmp_path / "ledger.sqlite3")
    saved(store)
    found = store.reserve("b", [(0, {"money": 1e-12})], {"money": 0.0})
    assert found.taken == [] and found.capped and store.spent("b") == {}
    store.close()


def test_a_row_another_live_process_holds_is_never_written_over_by_a_copy(
    tmp_path: Path,
) -> None:
    """Two copies of one batch (two stores on one file, as two processes): a row the
    holder reserved is its own, and a copy's change from its older view is not written
    over it (its ``waiting`` over a ``done`` sent the row again, paid twice); the end of
    the same task over a state not ended is (a grid follows another kernel's tasks)."""
    path = tmp_path / "ledger.sqlite3"
    holder, copy = BatchStore(path), BatchStore(path)
    saved(holder, rows=2)
    assert holder.reserve("b", [(0, {}), (1, {})], {}).taken == [(0, 1), (1, 1)]
    holder.settle("b", [RowUpdate(0, DONE, "r0", files=["a.png"]), RowUpdate(1, CREATED, "r1")])
    copy.settle("b", [RowUpdate(0, WAITING), RowUpdate(1, DONE, "r1", files=["b.png"])])
    assert [(r.state, r.files) for r in copy.rows("b")] == [(DONE, ["a.png"]), (DONE, ["b.png"])]
    holder.settle("b", [RowUpdate(0, FAILED, "r0")])
    copy.settle("b", [RowUpdate(0, WAITING)])  # a retry of a failed row (reserve decides)
    assert copy.rows("b")[0].state == WAITING
    holder.settle("b", [RowUpdate(0, DONE, "r0")])
    holder.close()  # its leases given back: its rows are anyone's
    copy.settle("b", [RowUpdate(0, WAITING)])
    assert copy.rows("b")[0].state == WAITING
    copy.close()


def test_a_client_with_no_ledger_has_its_own_store_for_as_long_as_it_lives() -> None:
    """The store of a client with no ledger was kept under ``id(client)`` for ever: a
    later client given that id (Python reuses them) found the batches of a client gone,
    and one of the same rows was refused as "sent through the gateway" of the other
    (met in a run of the batch tests). Each client has its own, gone with it."""
    first = gw.Client("http://127.0.0.1:9", "key", ledger=False)
    second = gw.Client("http://127.0.0.1:9", "key", ledger=False)
    try:
        store = store_for(first, BatchStore)
        assert store_for(first, BatchStore) is store
        assert store_for(second, BatchStore) is not store
        kept = weakref.ref(store)
    finally:
        first.close()
        second.close()
    del first, store
    gc.collect()
    assert kept() is None
