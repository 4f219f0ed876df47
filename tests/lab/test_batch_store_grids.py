"""The grid store through the ledger: one file, the ledger's transactions and errors,
ratings shared by two ledgers and two processes, a locked and a damaged file, and
the session store of a client without a ledger."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, cast

import pytest
from reliability.harness import damage_root_page, wait_until

import genwidgets as gw
from genwidgets._protocols import ClientLike
from genwidgets.errors import LedgerError, LedgerWarning
from genwidgets.jobs.ledger import Ledger
from genwidgets.lab.batch_store import (
    CREATED,
    DONE,
    WAITING,
    GridStore,
    RowUpdate,
    SessionTables,
    store_for,
)
from genwidgets.simulator import SimulatorServer

pytestmark = pytest.mark.timeout(120)

#: a grid's cells are a run's rows; its ratings have a table of their own
GRID_TABLES = {"batches", "batch_rows", "grid_ratings"}


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    with Ledger(tmp_path / "ledger.sqlite3") as made:
        yield made


def tables(ledger: Ledger) -> set[str]:
    return {r[0] for r in ledger.query("SELECT name FROM sqlite_master WHERE type = 'table'")}


def save(store: GridStore, grid_id: str = "g1", cells: int = 4, gateway: str = "sim") -> None:
    endpoint = "genW2.5-t2i-preview"
    store.save_batch(
        grid_id,
        gateway=gateway,
        endpoint=endpoint,
        out="",
        digest="a grid",
        description={"endpoint": endpoint, "seed": 7},
        rows=[(i, endpoint, json.dumps({"prompt": "a fox", "seed": i})) for i in range(cells)],
    )


def set_request(store: GridStore, grid_id: str, index: int, request_id: str) -> None:
    """A cell's create answered: its row ``created`` with its request id."""
    store.settle(grid_id, [RowUpdate(index, CREATED, request_id)])


class Holding:
    """What :func:`store_for` reads of a client: its ledger (a client with none has its
    store for as long as it lives: it is weakly referenced, as a client is)."""

    def __init__(self, ledger: Ledger | None) -> None:
        self.ledger = ledger


def holding(ledger: Ledger | None) -> ClientLike:
    return cast("ClientLike", Holding(ledger))


class Counting:
    """A ledger's ``transaction`` and ``query``, counted: the store's only way to the file."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger, self.path = ledger, ledger.path
        self.calls: list[str] = []

    def transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        self.calls.append("transaction")
        return self.ledger.transaction()

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        self.calls.append("query")
        return self.ledger.query(sql, params)

    @property
    def owner(self) -> str:
        return self.ledger.owner

    def alive_owners(self) -> set[str]:  # a write keeps to the rows of live owners
        self.calls.append("query")
        return self.ledger.alive_owners()


def test_every_read_and_write_goes_through_the_ledger(ledger: Ledger) -> None:
    counted = Counting(ledger)
    store = GridStore(counted)
    assert store.path == ledger.path
    save(store)
    set_request(store, "g1", 2, "req-2")
    store.rate("g1", 2, 4, "sharp")
    assert counted.calls.count("transaction") == 4  # three writes, the first made the tables
    assert store.ratings("g1") == {2: (4, "sharp")}
    record = store.require("g1")
    assert [c.request_id for c in record.cells] == [None, None, "req-2", None]
    assert (record.cells[2].stars, record.cells[2].note, record.rated, record.sent) == (
        4,
        "sharp",
        1,
        1,
    )
    assert set(counted.calls) == {"transaction", "query"}
    # the rows are in the ledger's own file, beside its tasks, and the ledger still opens it
    assert GRID_TABLES | {"tasks", "meta"} <= tables(ledger)
    assert ledger.query("SELECT stars, note FROM grid_ratings") == [(4, "sharp")]
    with Ledger(ledger.path) as again:
        assert again.rows() == []


def test_reads_of_a_file_without_grids_write_nothing(ledger: Ledger) -> None:
    store = GridStore(ledger)
    assert (store.grids(), store.ids(), store.ratings("g1"), store.rated()) == ([], [], {}, [])
    assert store.get("g1") is None
    with pytest.raises(KeyError, match="no grid is stored yet"):
        store.require("g1")
    with pytest.raises(KeyError) as caught:  # a pasted text as the id: shown short
        store.require("x" * 100_000)
    assert "(100000 characters)" in str(caught.value) and len(str(caught.value)) < 200
    assert not GRID_TABLES & tables(ledger)
    store.rate("g1", 0, 3, None)  # the first write makes the tables
    assert tables(ledger) >= GRID_TABLES and store.ratings("g1") == {0: (3, None)}


def test_store_for_follows_the_clients_ledger_one_store_per_file(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    with Ledger(path) as first, Ledger(path) as second:
        a, b = holding(first), holding(second)
        store = store_for(a, GridStore)
        assert store.tables is first and store_for(b, GridStore) is store
        save(store)
        store.rate("g1", 1, 5, None)
        assert GridStore(second).ratings("g1") == {1: (5, None)}
    none_a, none_b = holding(None), holding(None)
    memory = store_for(none_a, GridStore)
    assert isinstance(memory.tables, SessionTables) and memory.path is None
    assert store_for(none_a, GridStore) is memory and store_for(none_b, GridStore) is not memory


def test_a_path_opens_a_ledger_that_close_closes(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    store = GridStore(path)
    try:
        assert isinstance(store.tables, Ledger) and store.path == path
        save(store)
    finally:
        store.close()
    with Ledger(path) as ledger:
        found = ledger.query("SELECT id, gateway FROM batches WHERE kind = 'grid'")
        assert found == [("g1", "sim")]


def test_two_ledgers_on_one_file_rate_at_once_without_a_lock_error(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    errors: list[BaseException] = []
    with Ledger(path) as one, Ledger(path) as two:
        stores = [GridStore(one), GridStore(two)]
        save(stores[0], cells=40)

        def rate(store: GridStore, start: int) -> None:
            try:
                for index in range(start, 40, 4):
                    store.rate("g1", index, index % 5 + 1, f"cell {index}")
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=rate, args=(stores[i % 2], i)) for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert errors == []
        expected = {i: (i % 5 + 1, f"cell {i}") for i in range(40)}
        assert stores[0].ratings("g1") == stores[1].ratings("g1") == expected


RATER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from genwidgets.lab.batch_store import GridStore
    from genwidgets.lab.batch_store import RowUpdate
    path, parity, tmp = Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
    store = GridStore(path)
    (tmp / f"ready-{parity}").touch()
    deadline = time.monotonic() + 60
    while not (tmp / "go").exists() and time.monotonic() < deadline:
        time.sleep(0.005)
    store.save_batch("shared", gateway="sim", endpoint="e", out="", digest="d",
                     description={}, rows=[(i, "e", '{"seed": %d}' % i) for i in range(CELLS)])
    for index in range(parity, CELLS, 2):
        store.rate("shared", index, 1 + parity, None)
        store.settle("shared", [RowUpdate(index, "created", f"req-{index}")])
    store.close()
    """
)
CELLS = 200


@pytest.mark.slow
def test_two_processes_rate_one_grid_without_a_lock_error(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    Ledger(path).close()
    script = RATER.replace("CELLS", str(CELLS))
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(path), str(parity), str(tmp_path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for parity in (0, 1)
    ]
    wait_until(
        lambda: all(
            (tmp_path / f"ready-{p}").exists() or procs[p].poll() is not None for p in (0, 1)
        ),
        60,
        "both writers to open the file",
    )
    (tmp_path / "go").touch()  # both write at once
    for proc in procs:
        err = proc.communicate(timeout=90)[1]
        assert proc.returncode == 0 and "Error" not in err, err  # no "database is locked"
    store = GridStore(path)
    try:
        assert store.ratings("shared") == {i: (1 + i % 2, None) for i in range(CELLS)}
        assert [c.request_id for c in store.require("shared").cells] == [
            f"req-{i}" for i in range(CELLS)
        ]
    finally:
        store.close()


def test_a_locked_file_is_a_ledger_error_naming_it_and_nothing_is_half_written(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ledger.sqlite3"
    with Ledger(path, busy_timeout=0.3) as ledger:
        store = GridStore(ledger)
        save(store)
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")  # as another kernel or a sqlite3 shell might
        try:
            with pytest.raises(LedgerError, match="locked") as caught:
                store.rate("g1", 0, 5, None)
            assert str(path) in str(caught.value)
            assert store.ratings("g1") == {}  # reads go on while the file is locked (WAL)
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        store.rate("g1", 0, 5, None)
        assert store.ratings("g1") == {0: (5, None)}


def test_a_damaged_file_is_said_moved_aside_and_grids_go_on_in_a_fresh_one(
    ledger: Ledger,
) -> None:
    store = GridStore(ledger)
    save(store, cells=30)
    store.rate("g1", 0, 4, None)
    damage_root_page(ledger.path, "grid_ratings")
    damaged = ledger.path.read_bytes()
    with pytest.warns(LedgerWarning, match="moved to"), pytest.raises(LedgerError) as caught:
        store.rate("g1", 1, 2, None)
    assert str(ledger.path) in str(caught.value) and "malformed" in str(caught.value)
    assert ledger.set_aside is not None and ledger.set_aside.read_bytes() == damaged
    save(store, "g2")  # the fresh file gets the grid tables at its first write
    store.rate("g2", 3, 5, None)
    assert store.ids() == ["g2"] and store.ratings("g2") == {3: (5, None)}
    assert ledger.query("PRAGMA quick_check") == [("ok",)]


def test_the_session_store_keeps_grids_in_memory() -> None:
    store = GridStore(None)
    assert store.path is None
    save(store, cells=3, gateway="a")
    save(store, "g2", cells=2, gateway="b")
    store.rate("g1", 2, 5, "best")
    store.rate("g1", 1, 3, None)
    store.rate("g1", 1, 0, None)  # cleared
    assert store.ratings("g1") == {2: (5, "best")}
    assert store.ids("a") == ["g1"] and sorted(store.ids()) == ["g1", "g2"]
    (rated,) = store.rated()
    assert rated[0] == "g1" and rated[4] == 2 and rated[7:9] == (5, "best")
    with pytest.raises(sqlite3.IntegrityError), store.tables.transaction() as conn:
        conn.execute("UPDATE grid_ratings SET note = 'x'")  # undone with the failed write
        conn.execute("INSERT INTO batches (id) VALUES ('g1')")  # no gateway: refused
    assert store.ratings("g1") == {2: (5, "best")}


def test_a_client_without_a_ledger_rates_a_grid_and_writes_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, simulator: SimulatorServer
) -> None:
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path))
    with gw.Client(base_url=simulator.base_url, api_key="sim-demo-key", ledger=False) as client:
        grid = gw.grid(
            "genW2.5-t2i-preview", {"prompt": "a fox", "n": 1}, x=("seed", [1, 2]), client=client
        )
        grid.wait(timeout=60)
        grid.rate(grid.cells[1], 4, "crisp")
        assert [g.id for g in gw.grids(client)] == [grid.id]
        assert store_for(client, GridStore).ratings(grid.id) == {1: (4, "crisp")}
        assert store_for(client, GridStore).require(grid.id).sent == 2
    assert not list(tmp_path.glob("*.sqlite3*"))


def test_without_a_ledger_a_grid_stored_before_it_was_sent_reopens_waiting_to_be_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, simulator: SimulatorServer
) -> None:
    """Rated before it was confirmed (which stores it), re-opened in the session by a
    client without a ledger: its cells wait (none is called "outcome unknown": the
    session's store misses no write), and ``submit()`` sends each once."""
    from genwidgets.lab.run import status_of

    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path))
    with gw.Client(base_url=simulator.base_url, api_key="sim-demo-key", ledger=False) as client:
        grid = gw.grid(
            "genW2.5-t2i-preview",
            {"prompt": "a fox", "n": 1},
            x=("seed", [1, 2]),
            client=client,
            confirm_above=1,
        )
        grid.rate(grid.cells[0], 3)  # stored, nothing sent
        again = gw.load_grid(grid.id, client=client)
        assert [status_of(c) for c in again.cells] == ["not sent", "not sent"]
        again.submit(wait=True).wait(timeout=60)
        assert again.run.tally() == (2, 0, 2)
        assert client.request_counts.get("create", 0) == 2


def test_cells_another_kernel_is_sending_are_followed_once_it_has_sent_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, simulator: SimulatorServer
) -> None:
    """A grid re-opened while another kernel sends it: its cells showed "not created"
    and failed, and this kernel's wait() and submit() never read them again. They are
    "being sent in another kernel", not failed, and followed (no create) once that kernel
    has created their tasks, or ended them (read again at a final write too: it showed
    "done" with no outputs); one whose kernel went away before its answer is settled from
    the ledger by its tag (it never left: submit() sends it once)."""
    from genwidgets.lab.run import status_of

    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path))
    with gw.Client(base_url=simulator.base_url, api_key="sim-demo-key") as client:
        grid = gw.grid(
            "genW2.5-t2i-preview",
            {"prompt": "a fox", "n": 1},
            x=("seed", [1, 2, 3]),
            client=client,
            confirm_above=0,
        )
        grid.rate(grid.cells[1], 2)  # stored, nothing sent
        other = Ledger(tmp_path / "ledger.sqlite3")  # the other kernel: its own owner
        sending = GridStore(other)
        taken = sending.reserve(grid.id, [(i, {}) for i in range(3)], {}).taken
        assert taken == [(0, 1), (1, 1), (2, 1)]
        again = gw.load_grid(grid.id, client=client)
        assert [status_of(c) for c in again.cells] == ["being sent in another kernel"] * 3
        assert again.run.tally() == (0, 0, 3) and not any(c.trouble for c in again.cells)
        described = again.describe()["cells"]
        assert [(c["status"], c["error"]) for c in described] == [
            ("being sent in another kernel", None)
        ] * 3
        with pytest.raises(TimeoutError, match="3 of its cells were still being sent in another"):
            again.wait(timeout=0.3)
        tasks = [client.submit("genW2.5-t2i-preview", grid.cells[i].payload) for i in (0, 1)]
        tasks[1].result(60)
        sending.settle(
            grid.id,
            [
                RowUpdate(0, CREATED, str(tasks[0].request_id)),
                RowUpdate(1, DONE, str(tasks[1].request_id)),
            ],
        )
        again.run.write_all()  # a final write reads them again: the ended one, as it ended
        other.close()  # gone before cell 2's create was sent
        creates = client.request_counts["create"]
        again.wait(timeout=60)
        assert [c.request_id for c in again.cells[:2]] == [t.request_id for t in tasks]
        assert all(c.outputs for c in again.cells[:2]), "followed: their outputs are shown"
        assert [status_of(c) for c in again.cells] == ["done", "done", "not sent"]
        assert client.request_counts["create"] == creates  # followed, never created here
        again.submit(wait=True).wait(timeout=60)
        assert [status_of(c) for c in again.cells] == ["done"] * 3
        assert client.request_counts["create"] == creates + 1


def test_cells_another_kernel_gave_back_unsent_are_sent_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, simulator: SimulatorServer
) -> None:
    """Cells the other kernel gave back unsent (a rate limit, a pause: ``waiting``, its
    spend released) and never sent again before it went away: they read "not created",
    submit() sent nothing and wait() never ended. They are this kernel's: "not sent",
    and submit() sends each once."""
    from genwidgets.lab.run import status_of

    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path))
    with gw.Client(base_url=simulator.base_url, api_key="sim-demo-key") as client:
        grid = gw.grid(
            "genW2.5-t2i-preview",
            {"prompt": "a fox", "n": 1},
            x=("seed", [1, 2]),
            client=client,
            confirm_above=0,
        )
        grid.run.store_batch()
        other = Ledger(tmp_path / "ledger.sqlite3")  # the other kernel: its own owner
        sending = GridStore(other)
        taken = sending.reserve(grid.id, [(i, {}) for i in range(2)], {}).taken
        again = gw.load_grid(grid.id, client=client)
        assert [status_of(c) for c in again.cells] == ["being sent in another kernel"] * 2
        given_back = "not sent: rate limited; nothing was made, so it waits to be sent again"
        sending.settle(
            grid.id, [RowUpdate(i, WAITING, None, given_back, None, n) for i, n in taken]
        )
        other.close()  # gone before sending them again
        creates = client.request_counts.get("create", 0)
        assert again.run.follow_elsewhere() == 0
        assert [status_of(c) for c in again.cells] == ["not sent"] * 2
        assert not any(c.failed or c.trouble for c in again.cells)
        again.submit(wait=False).run.wait(timeout=60)  # bounded: it never ended
        assert [status_of(c) for c in again.cells] == ["done"] * 2
        assert client.request_counts["create"] == creates + 2


@pytest.mark.slow  # 8 to 18 s beside busy cores: the full command runs it
def test_a_change_queued_at_a_locked_reopen_never_undoes_another_kernels_retry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make_simulator: Any
) -> None:
    """A grid re-opened while the store's lock was held kept what it learnt (its task
    failed) queued; another kernel then retried the cell (a new, paid task, done). The
    queued change was written over that newer row: the cell read failed again, and a
    later retry_failed() paid a third time. A change is written only over the attempt it
    was learnt of; the newer row is read again and followed here."""
    from genwidgets.lab.run import status_of

    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path))
    sim = make_simulator(fail_rate=1.0)
    path = tmp_path / "ledger.sqlite3"
    with gw.Client(base_url=sim.base_url, api_key="sim-demo-key") as client:
        grid = gw.grid(
            "genW2.5-t2i-preview", {"prompt": "a fox", "n": 1}, x=("seed", [1]), client=client
        )
        first = grid.wait(timeout=60).cells[0].request_id
        assert first is not None and grid.cells[0].failed
    with Ledger(path) as gone:  # its kernel died before its last flush: 'created' stored
        set_request(GridStore(gone), grid.id, 0, first)
    view = gw.Client(sim.base_url, "sim-demo-key", ledger=Ledger(path, busy_timeout=0.2))
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock past the wait
    try:
        with pytest.warns(LedgerWarning, match="cannot be written now"):
            again = gw.load_grid(grid.id, client=view)
            assert again.run.settled.wait(30) and again.cells[0].failed  # learnt, queued
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    sim.state.reconfigure({"fail_rate": 0.0})
    retried = view.submit("genW2.5-t2i-preview", grid.cells[0].payload)
    retried.result(60)
    with Ledger(path) as other:  # another kernel's retry_failed(): attempt 2, done
        store = GridStore(other)
        store.settle(grid.id, [RowUpdate(0, WAITING)])
        assert store.reserve(grid.id, [(0, {})], {}).taken == [(0, 2)]
        store.settle(grid.id, [RowUpdate(0, DONE, str(retried.request_id))])
    creates = sim.state.stats["created"]
    try:
        again.wait(timeout=60).wait(timeout=60)  # its queued change flushed, then followed
        with Ledger(path) as later:
            (row,) = GridStore(later).rows(grid.id)
        assert (row.state, row.request_id, row.attempt) == ("done", retried.request_id, 2)
        assert again.cells[0].request_id == retried.request_id
        assert status_of(again.cells[0]) == "done" and again.cells[0].outputs
        assert again.run.retry_failed() == 0 and sim.state.stats["created"] == creates
    finally:
        view.close()


@pytest.mark.parametrize("taker_dies", [False, True])
def test_a_dead_kernels_cell_another_kernel_reserved_meanwhile_is_not_sent_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, simulator: SimulatorServer, taker_dies: bool
) -> None:
    """A cell a dead kernel left 'sending', read here and settled from the ledger while
    another kernel took it up (settled it and reserved it, attempt 2): this kernel wrote
    'waiting' for attempt 1 over that reservation and created the cell too. Its change
    is refused (learnt of attempt 1); the cell is the other kernel's, sent once. That
    kernel gone too, its own create's intent kept: its attempt is settled by its tag
    (outcome unknown), never sent again."""
    from genwidgets.lab.run import status_of

    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path))
    path = tmp_path / "ledger.sqlite3"
    with gw.Client(base_url=simulator.base_url, api_key="sim-demo-key") as client:
        grid = gw.grid(
            "genW2.5-t2i-preview",
            {"prompt": "a fox", "n": 1},
            x=("seed", [1]),
            client=client,
            confirm_above=0,
        )
        grid.run.store_batch()
        dead = Ledger(path)
        GridStore(dead).reserve(grid.id, [(0, {})], {})  # it sends cell 0 ...
        again = gw.load_grid(grid.id, client=client)  # ... as this kernel opens the grid
        dead.close()  # gone before its create left
        other = Ledger(path)  # a third kernel, alive, takes it up meanwhile
        taking = GridStore(other)
        ledger = client.ledger
        assert ledger is not None
        read_tags = ledger.tagged

        def tagged(tags: Any) -> Any:  # between this kernel's read of the row and its write
            if not taking.rows(grid.id)[0].attempt > 1:
                taking.settle(grid.id, [RowUpdate(0, WAITING, release=1)])
                assert taking.reserve(grid.id, [(0, {})], {}).taken == [(0, 2)]
                if taker_dies:  # its create may have left: its intent is kept, then it goes
                    other.writes.record_intent(
                        gateway=client.gateway_name,
                        endpoint="genW2.5-t2i-preview",
                        payload=grid.cells[0].payload,
                        tag=f"grid {grid.id} cell 0 attempt 2",
                    )
                    other.close()
            return read_tags(tags)

        monkeypatch.setattr(ledger, "tagged", tagged)
        creates = client.request_counts.get("create", 0)
        again.submit(wait=True)
        again.run.flush()
        if taker_dies:
            again.wait(timeout=60)
            assert status_of(again.cells[0]) == "outcome unknown"
            with Ledger(path) as later:
                (row,) = GridStore(later).rows(grid.id)
            assert (row.state, row.attempt) == ("unknown", 2)
        else:
            (row,) = taking.rows(grid.id)
            assert (row.state, row.attempt, row.owner) == ("sending", 2, other.owner)
            assert status_of(again.cells[0]) == "being sent in another kernel"
            other.close()
        assert client.request_counts.get("create", 0) == creates  # never created here


#: a kernel of its own (one process keeps one store per ledger file, open for writing)
MAKE_AND_RATE = """
import sys, genwidgets as gw
with gw.Client(sys.argv[1], "sim-demo-key") as client:
    grid = gw.grid("genW2.5-t2i-preview", {"prompt": "a fox", "n": 1}, x=("seed", [1, 2]),
                   client=client)
    grid.wait(timeout=60)
    grid.rate(grid.cells[0], 5, "the one")
    print(grid.id, *(c.request_id for c in grid.cells))
"""
REOPEN = """
import json, sys, warnings, genwidgets as gw
with gw.Client(sys.argv[1], "sim-demo-key") as client, warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    grid = gw.load_grid(sys.argv[2], client=client)
    said = gw.read_export(grid.save_png(sys.argv[3]))
    print(json.dumps({
        "warned": [str(x.message) for x in w if x.category is gw.LedgerWarning],
        "ratings": [[c.rating, c.note] for c in grid.cells],
        "tally": grid.run.tally(), "outputs": [len(c.outputs) for c in grid.cells],
        "exported": [c["stars"] for c in said["cells"]],
    }))
"""


@pytest.mark.slow  # 8 to 18 s beside busy cores: the full command runs it
def test_a_finished_grid_reopens_from_a_home_that_cannot_be_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, simulator: SimulatorServer
) -> None:
    """A full or read-only home: ``load_grid`` raised the store's LedgerError though
    ``gw.grids()`` listed the grid and history read its tasks. It opens with a
    LedgerWarning, its ratings and exports read from what is stored, what it learns
    (each task finished) waits (decisions#ledger-locked-resume)."""
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path))

    def kernel(code: str, *args: str) -> str:
        ran = subprocess.run(
            [sys.executable, "-c", code, simulator.base_url, *args],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert ran.returncode == 0, ran.stderr[-3000:]
        return ran.stdout.strip().splitlines()[-1]

    grid_id, *request_ids = kernel(MAKE_AND_RATE).split()
    path = tmp_path / "ledger.sqlite3"
    with Ledger(path) as ledger:  # a kernel gone before its last flush: its tasks "created"
        store = GridStore(ledger)
        for index, request_id in enumerate(request_ids):
            set_request(store, grid_id, index, request_id)
    if os.geteuid() == 0:  # root ignores modes: an immutable file
        chattr = shutil.which("chattr")
        assert chattr is not None, "root without chattr cannot make a file unwritable"
        subprocess.run([chattr, "+i", str(path)], check=True)
    else:
        path.chmod(0o444)
    try:
        seen = json.loads(kernel(REOPEN, grid_id, str(tmp_path / "sheet.png")))
    finally:
        if os.geteuid() == 0:
            subprocess.run([shutil.which("chattr") or "chattr", "-i", str(path)], check=True)
        else:
            path.chmod(0o644)
    assert any(f"grid {grid_id} is shown from its store" in w for w in seen["warned"]), seen
    assert seen["ratings"] == [[5, "the one"], [0, None]]
    assert seen["tally"] == [2, 0, 2] and seen["outputs"] == [1, 1]
    assert seen["exported"] == [5, 0]


#: the grid tables of genwidgets before grids ran on the run core, as it wrote them
OLD_GRID_TABLES = (
    "CREATE TABLE grids (id TEXT PRIMARY KEY, gateway TEXT NOT NULL, endpoint TEXT NOT NULL, "
    "created_at REAL NOT NULL, description TEXT NOT NULL)",
    "CREATE TABLE grid_cells (grid_id TEXT NOT NULL, idx INTEGER NOT NULL, payload TEXT NOT "
    "NULL, request_id TEXT, error TEXT, PRIMARY KEY (grid_id, idx))",
    "CREATE TABLE grid_ratings (grid_id TEXT NOT NULL, idx INTEGER NOT NULL, stars INTEGER NOT "
    "NULL, note TEXT, updated_at REAL NOT NULL, PRIMARY KEY (grid_id, idx))",
)


def test_a_grid_an_older_genwidgets_stored_is_listed_reopened_and_rated_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, simulator: SimulatorServer
) -> None:
    """A ledger file whose grids an older genwidgets kept in tables of their own: the
    grid is listed, re-opened with its task followed (no create), its unknown create
    still unknown, its never-sent cell waiting, its rating kept; no batch is listed."""
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path))
    endpoint = "genW2.5-t2i-preview"
    with gw.Client(base_url=simulator.base_url, api_key="sim-demo-key") as client:
        assert client.ledger is not None
        done = client.submit(endpoint, {"prompt": "a fox", "n": 1, "seed": 1})
        done.result(timeout=60)
        axes = {"x": {"field": "seed", "values": [1, 2, 3], "kind": "field"}}
        description = {
            "endpoint": endpoint,
            "base_payload": {"prompt": "a fox", "n": 1},
            "axes": axes,
            "layout": {"x": "x", "y": "y", "z": "z"},
        }
        cells = [
            (0, {"prompt": "a fox", "n": 1, "seed": 1}, done.request_id, None),
            (1, {"prompt": "a fox", "n": 1, "seed": 2}, None, "outcome unknown: ReadTimeout"),
            (2, {"prompt": "a fox", "n": 1, "seed": 3}, None, None),
        ]
        with client.ledger.transaction() as conn:
            for statement in OLD_GRID_TABLES:
                conn.execute(statement)
            conn.execute(
                "INSERT INTO grids VALUES ('g-old', ?, ?, 1.0, ?)",
                (client.gateway_name, endpoint, json.dumps(description)),
            )
            conn.executemany(
                "INSERT INTO grid_cells VALUES ('g-old', ?, ?, ?, ?)",
                [(i, json.dumps(p), rid, err) for i, p, rid, err in cells],
            )
            conn.execute("INSERT INTO grid_ratings VALUES ('g-old', 0, 4, 'keep', 1.0)")
        creates = client.request_counts.get("create", 0)
        assert [g.id for g in gw.grids(client)] == ["g-old"]
        assert gw.batches(client) == []
        grid = gw.load_grid("g-old", client=client)
        first, unknown, waiting = grid.cells
        assert first.done and first.request_id == done.request_id and first.outputs
        assert (first.rating, first.note) == (4, "keep")
        assert unknown.done and (unknown.error or "").startswith("outcome unknown")
        assert waiting.unsent and not waiting.done
        assert client.request_counts.get("create", 0) == creates  # nothing sent
        grid.submit(wait=True).wait(timeout=60)  # the cell never sent goes, once
        assert waiting.done and waiting.request_id
        assert client.request_counts.get("create", 0) == creates + 1
        assert [g.id for g in gw.grids(client)] == ["g-old"]  # adopted once, not twice


def test_cells_another_kernel_sends_after_this_one_reopened_the_grid_are_followed_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, simulator: SimulatorServer
) -> None:
    """Review-25 fault 4: a grid re-opened while another kernel sends it in chunks. The
    cells that kernel had not reserved yet were this kernel's "not sent" for ever (its
    state line offering Go on, its export), and "sending" in its view, after that kernel
    had sent and finished them. While this kernel does not send, its unsent cells are
    read again with the held ones: taken up and followed (no create)."""
    from genwidgets.lab.run import status_of

    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path))
    with gw.Client(base_url=simulator.base_url, api_key="sim-demo-key") as client:
        grid = gw.grid(
            "genW2.5-t2i-preview",
            {"prompt": "a fox", "n": 1},
            x=("seed", [1, 2, 3]),
            client=client,
            confirm_above=0,
        )
        grid.rate(grid.cells[1], 2)  # stored, nothing sent
        other = Ledger(tmp_path / "ledger.sqlite3")  # the other kernel: its own owner
        try:
            sending = GridStore(other)
            assert sending.reserve(grid.id, [(0, {})], {}).taken == [(0, 1)]  # a first chunk
            again = gw.load_grid(grid.id, client=client)
            said = [status_of(c) for c in again.cells]
            assert said == ["being sent in another kernel", "not sent", "not sent"]
            assert [s["status"] for s in again.cell_states] == said  # the view's words too
            # the other kernel sends its next chunk and creates every task
            assert sending.reserve(grid.id, [(1, {}), (2, {})], {}).taken == [(1, 1), (2, 1)]
            tasks = [client.submit("genW2.5-t2i-preview", c.payload) for c in grid.cells]
            sending.settle(
                grid.id,
                [RowUpdate(i, CREATED, str(task.request_id)) for i, task in enumerate(tasks)],
            )
            creates = client.request_counts["create"]
            again.wait(timeout=60)
            assert [c.request_id for c in again.cells] == [t.request_id for t in tasks]
            assert [status_of(c) for c in again.cells] == ["done"] * 3
            assert "not sent" not in repr(again) and "not sent" not in again.head["progress"]
            assert [c["status"] for c in again.describe()["cells"]] == ["done"] * 3
            wait_until(
                lambda: [s["status"] for s in again.cell_states] == ["done"] * 3, 30, "the view"
            )
            assert all(c.outputs for c in again.cells), "followed: their outputs are shown"
            again.submit(wait=True)  # Go on: nothing is left to send
            assert client.request_counts["create"] == creates  # followed, never created here
        finally:
            other.close()
