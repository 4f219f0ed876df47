"""A grid at work (``lab/run.py``): what a run does when its store cannot keep a cell."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from faults import ctrl_c_after
from widgets.taskfakes import ForecastClient, wait_for

import genwidgets as gw
from genwidgets.lab import GridStore
from genwidgets.lab.batch_store import store_for
from genwidgets.lab.plan import plan_grid
from genwidgets.lab.run import GridRun, status_of
from genwidgets.widgets.grid_sheet import save_html, state_words

T2I = "genW2.5-t2i-preview"


def test_a_grid_store_that_cannot_write_once_loses_nothing_and_every_cell_is_still_sent(
    tmp_path: Path,
) -> None:
    """A lock held past the ledger's busy timeout fails one store write: the grid goes
    on, says why in its ``problem``, and the next write keeps what the failed one held."""

    class LockedOnce(GridStore):
        locked = True

        def settle(self, grid_id: str, updates: Any) -> None:
            if self.locked and any(u.request_id == "req-2" for u in updates):
                self.locked = False
                raise gw.LedgerError(f"the ledger {self.path} is locked")
            super().settle(grid_id, updates)

    fake = ForecastClient()
    store = LockedOnce(tmp_path / "grids.sqlite3")
    plan = plan_grid(T2I, {"prompt": "a fox", "n": 1}, ("seed", [1, 2, 3]), prepare=fake.prepare)
    run = GridRun(plan, fake, store=store).submit(wait=True)
    assert not store.locked, "the store was never locked: the test proves nothing"
    assert len(fake.sent) == 3 and all(c.request_id for c in run.cells)
    assert "locked" in str(run.problem)
    kept = ["req-1", "req-2", "req-3"]  # the tasks run on: the finisher writes again
    assert wait_for(lambda: [c.request_id for c in store.require(run.id).cells] == kept, 60)
    store.close()


def test_a_second_submit_while_the_grid_sends_sends_no_cell_twice(tmp_path: Path) -> None:
    """Submit again (a second click) while the first creates are still out: it starts
    nothing, and each cell is created once."""
    entered, release = threading.Event(), threading.Event()
    senders: set[threading.Thread] = set()

    class Slow(ForecastClient):
        def send(self, prepared: Any) -> Any:
            senders.add(threading.current_thread())
            entered.set()
            if len(senders) > 1:  # a second sender: let both go, the count shows it
                release.set()
            assert release.wait(60), "the creates were never released"
            return super().send(prepared)

    fake = Slow()
    store = GridStore(tmp_path / "grids.sqlite3")
    plan = plan_grid(T2I, {"prompt": "a fox", "n": 1}, ("seed", [1, 2, 3]), prepare=fake.prepare)
    run = GridRun(plan, fake, store=store)
    run.submit(wait=False)
    assert entered.wait(60)  # the first create is out, unanswered
    run.submit(wait=False)  # a second click: this grid is sending, it starts nothing
    release.set()
    run.submit(wait=True)  # starts nothing either, and returns once the creates answered
    assert len(fake.sent) == 3 and len(senders) == 1
    with pytest.raises(TimeoutError, match=rf"grid {run.id}: 3 of its tasks had not ended"):
        run.wait(timeout=0.2)  # these tasks never end: the deadline says so, in a grid's words
    store.close()


def test_a_grid_its_store_could_not_record_is_not_started_and_a_later_submit_sends_it(
    tmp_path: Path,
) -> None:
    """The store is locked when the grid is confirmed: nothing is sent, the grid is
    not started, and the next submit() records it and sends each cell once."""

    class LockedOnce(GridStore):
        locked = True

        def save_batch(self, grid_id: str, **kwargs: Any) -> Any:
            if self.locked:
                self.locked = False
                raise gw.LedgerError(f"the ledger {self.path} is locked")
            return super().save_batch(grid_id, **kwargs)

    fake = ForecastClient()
    store = LockedOnce(tmp_path / "grids.sqlite3")
    plan = plan_grid(T2I, {"prompt": "a fox", "n": 1}, ("seed", [1, 2, 3]), prepare=fake.prepare)
    run = GridRun(plan, fake, store=store)
    with pytest.raises(gw.LedgerError, match="locked"):
        run.submit(wait=True)
    assert not run.started and fake.sent == []
    with pytest.raises(RuntimeError, match=rf"grid {run.id} was not sent.*call grid.submit\(\)"):
        run.wait(timeout=1)
    run.submit(wait=True)
    assert len(fake.sent) == 3 and store.require(run.id).sent == 3
    store.close()


def test_a_cell_the_grid_store_missed_is_found_by_its_tag_when_the_grid_is_reopened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, simulator: Any
) -> None:
    """The store missed cell 1's request id (a locked file): re-opened, the grid finds
    its task in the ledger by the tag its create was written with, and sends nothing."""
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path / "home"))
    with gw.Client(simulator.base_url, "sim-demo-key") as client:
        store = store_for(client, GridStore)
        keep = store.settle

        def killed_before_cell_1_was_written(grid_id: str, updates: Any) -> None:
            keep(grid_id, [u for u in updates if u.index != 1])

        monkeypatch.setattr(store, "settle", killed_before_cell_1_was_written)
        plan = plan_grid(T2I, {"prompt": "a fox", "n": 1}, ("seed", [1, 2, 3]))
        run = GridRun(plan, client).submit(wait=True)
        sent = [c.request_id for c in run.cells]
        assert store.require(run.id).cells[1].request_id is None
        monkeypatch.setattr(store, "settle", keep)
        creates = client.request_counts.get("create", 0)
        again = GridRun.load(run.id, client)
        assert [c.request_id for c in again.cells] == sent
        assert again.wait(timeout=120).tally() == (3, 0, 3)
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
    said = run.cells[2].error or ""
    assert said.startswith("outcome unknown: HTTP 500: Runtime execution failed"), said
    assert "not sent again" in (run.cells[2].error or "")
    # the one that made nothing failed (retry_failed sends it); the one in doubt is said apart
    assert run.tally()[1] == 1 and run.in_doubt() == 1
    assert state_words(run).endswith(
        " done, 1 failed (grid.retry_failed() sends 1 again), "
        "1 outcome unknown (a task may exist and bill: see client.history())"
    )
    described = {c["index"]: c["error"] for c in run.describe()["cells"]}
    assert described[2] == run.cells[2].error  # the export says it the same way
    page = save_html(run, tmp_path / "grid.html").read_text(encoding="utf-8")
    # in words, never a Python class name (review 32)
    assert "outcome unknown: HTTP 500" in page and "not created: HTTP 400" in page
    assert "ServerError" not in page and "GatewayError" not in page
    assert "failed: outcome unknown" not in page and "failed: not created" not in page
    store.close()


def test_creates_failing_in_a_row_pause_the_grid_until_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make_simulator: Any
) -> None:
    """A gateway answering 500 to every create: the grid pauses after the breaker's
    count (creates in flight answer, no more leave), each failed cell says "outcome
    unknown", the rest wait; asked to go on, it sends only those, each once."""
    import httpx

    from genwidgets.lab.batch import BREAKER_AFTER

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


def test_a_grid_interrupted_while_sending_sends_only_what_never_left_when_submitted_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, simulator: Any
) -> None:
    """Ctrl-C during ``grid.submit()``, then ``grid.submit()`` again (the same cell run
    twice): cells whose create was answered keep their task, one in flight is followed
    or listed "outcome unknown" as the ledger says, and only the cells that never left
    are sent; no cell is paid twice."""
    import httpx

    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path / "home"))
    with gw.Client(simulator.base_url, "sim-demo-key") as client:
        plan = plan_grid(T2I, {"prompt": "a fox", "n": 1}, ("seed", list(range(1, 9))))
        run = GridRun(plan, client, concurrency=1)
        ctrl_c_after(monkeypatch, client, 1)
        before = httpx.get(f"{simulator.base_url}/_sim/stats", timeout=10).json()["created"]
        with pytest.raises(KeyboardInterrupt):
            run.submit(wait=True)
        waiting = [c for c in run.cells if c.unsent]
        assert run.cells[0].request_id and 0 < len(waiting) < 8  # the later chunks wait
        assert {status_of(c) for c in waiting} == {"not sent"}
        run.submit(wait=True)  # the same cell, run again
        run.wait(timeout=120)
        assert not any(c.unsent for c in run.cells)
        made = [c for c in run.cells if c.request_id]
        unknown = [c for c in run.cells if (c.error or "").startswith("outcome unknown")]
        assert len(made) + len(unknown) == 8
        created = httpx.get(f"{simulator.base_url}/_sim/stats", timeout=10).json()["created"]
        assert len(made) <= created - before <= 8  # each cell created at most once
        assert len({c.request_id for c in made}) == len(made)
        assert client.ledger is not None
        tags = [run.tag(c.row) for c in run.cells]
        rows = client.ledger.tagged(tags)
        made_or_maybe = [r for r in rows if r.state != "not_created"]  # not: refused unsent
        per_cell = [sum(1 for r in made_or_maybe if r.tag == tag) for tag in tags]
        assert per_cell == [1] * 8  # one create each that may have made a task
        assert GridRun.load(run.id, client).tally() == run.tally()  # the store agrees


def test_a_ctrl_c_before_submit_joins_its_sender_is_heard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, simulator: Any
) -> None:
    """Ctrl-C after the sender started but before ``submit`` waits on it (a loaded
    machine's order: the main thread not yet scheduled) stops the sending as one during
    the wait does; the cells not sent wait for the next ``submit``."""
    import time

    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path / "home"))
    with gw.Client(simulator.base_url, "sim-demo-key") as client:
        plan = plan_grid(T2I, {"prompt": "a fox", "n": 1}, ("seed", [1, 2, 3, 4, 5, 6]))
        run = GridRun(plan, client, concurrency=1)
        join = run.join_sender

        def descheduled_then_joined(timeout: float | None = None) -> None:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:  # the Ctrl-C lands here
                time.sleep(0.01)
            join(timeout)

        ctrl_c_after(monkeypatch, client, 1)
        monkeypatch.setattr(run, "join_sender", descheduled_then_joined)
        with pytest.raises(KeyboardInterrupt):
            run.submit(wait=True)
        monkeypatch.setattr(run, "join_sender", join)
        assert run.stop.is_set() and run.cells[0].request_id
        assert any(c.unsent for c in run.cells)  # sending stopped: the rest wait
        run.submit(wait=True).wait(timeout=120)
        assert run.tally() == (6, 0, 6)


def test_a_reopened_grid_sends_the_cells_that_never_left_and_nothing_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, simulator: Any
) -> None:
    """A grid stored before all its cells left (here: interrupted once its first two
    cells were answered), re-opened: ``submit()`` sends only the cells no create of
    which is in the ledger."""
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path / "home"))
    with gw.Client(simulator.base_url, "sim-demo-key") as client:
        plan = plan_grid(T2I, {"prompt": "a fox", "n": 1}, ("seed", [1, 2, 3, 4, 5, 6]))
        run = GridRun(plan, client, concurrency=1)  # chunks of two
        ctrl_c_after(monkeypatch, client, 2)
        with pytest.raises(KeyboardInterrupt):
            run.submit(wait=True)
        assert [bool(c.request_id) for c in run.cells] == [True, True, False, False, False, False]
        creates = client.request_counts.get("create", 0)
        again = GridRun.load(run.id, client)
        assert [c.request_id for c in again.cells[:2]] == [c.request_id for c in run.cells[:2]]
        assert [c.unsent for c in again.cells] == [False, False, True, True, True, True]
        again.submit(wait=True).wait(timeout=120)
        assert again.tally() == (6, 0, 6)
        assert client.request_counts.get("create", 0) == creates + 4


def test_a_cell_that_cannot_be_prepared_when_sent_is_not_created_and_the_rest_go(
    tmp_path: Path,
) -> None:
    """An item whose request cannot be made when sent (here: its input file gone) is
    settled "not created" (nothing left) without a create; the others are sent."""

    class GoneFile(ForecastClient):
        def prepare(self, endpoint: str, payload: Any) -> Any:
            if payload["seed"] == 2:
                raise FileNotFoundError("input.png is gone")
            return super().prepare(endpoint, payload)

    fake = GoneFile()
    store = GridStore(tmp_path / "grids.sqlite3")
    plan = plan_grid(T2I, {"prompt": "a fox", "n": 1}, ("seed", [1, 2, 3]))  # not prepared
    run = GridRun(plan, fake, store=store).submit(wait=True)
    assert len(fake.sent) == 2 and run.cells[1].job is None
    assert (run.cells[1].error or "").startswith("not created: invalid payload for")
    assert "input.png is gone" in (run.cells[1].error or "")
    assert status_of(run.cells[1]) == "not created" and run.cells[1].failed
    store.close()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_grid_whose_gateway_went_away_says_contact_lost_never_failed_and_goes_on_unpaid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make_simulator: Any
) -> None:
    """The gateway goes away while a grid's tasks run: its cells say "contact lost",
    not failed (the task may still run), in the cell, the grid's counts and the task's
    look; once it is back, ``submit()`` (the view's Go on) follows them again, and the
    gateway counts one create per cell."""
    from urllib.parse import urlsplit

    import httpx
    from faults import Outage
    from widgets.taskfakes import wait_for

    from genwidgets.widgets.grid import Grid

    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path / "home"))
    sim = make_simulator(speed=0.5)  # tasks of about four seconds: running when it goes
    proxy = Outage(urlsplit(sim.base_url).port or 0)
    policy = gw.PollPolicy(failure_limit=2)  # contact is lost within the test
    try:
        with gw.Client(proxy.base_url, "sim-demo-key", poll_policy=policy) as client:
            plan = plan_grid(T2I, {"prompt": "a fox", "n": 1}, ("seed", [1, 2, 3]))
            run = GridRun(plan, client).submit(wait=True)
            proxy.down()
            assert wait_for(lambda: all(c.done or c.lost for c in run.cells), timeout=120)
            lost = [c for c in run.cells if c.lost]
            assert lost and all(status_of(c) == "contact lost" for c in lost)
            assert run.tally()[1] == 0 and not any(c.failed for c in run.cells)
            view = Grid(run)
            said = [view.cell_states[c.index] for c in lost]
            assert {s["status"] for s in said} == {"contact lost"}
            assert all("no new create" in (s["error"] or "") for s in said)
            head = view.head
            assert head["resumable"] and "contact lost" in head["progress"]
            proxy.up()
            run.submit(wait=True)  # Go on
            run.wait(timeout=180)
            assert [status_of(c) for c in run.cells] == ["done"] * 3
            created = httpx.get(f"{sim.base_url}/_sim/stats", timeout=10).json()["created"]
            assert created == 3
    finally:
        proxy.close()


def test_a_note_with_half_an_emoji_is_kept_escaped_with_its_stars(tmp_path: Path) -> None:
    """A page's JSON.stringify of a note cut inside an emoji sends a lone surrogate:
    SQLite refused it with a bare UnicodeEncodeError and the stars given with it were
    lost. The note is kept with the surrogate as its escape, the stars with it."""
    fake = ForecastClient()
    store = GridStore(tmp_path / "grids.sqlite3")
    plan = plan_grid(T2I, {"prompt": "a fox", "n": 1}, ("seed", [1, 2]), prepare=fake.prepare)
    run = GridRun(plan, fake, store=store)
    cell = run.rate(0, 5, "best one \ud83e")
    assert (cell.rating, cell.note) == (5, "best one \\ud83e")
    assert store.ratings(run.id) == {0: (5, "best one \\ud83e")}
    store.close()


def test_a_numpy_cell_number_rates_its_cell(tmp_path: Path) -> None:
    """rate(np.argmax(scores), 5) was refused "rate a cell number 0-1 ..., not
    np.int64(1)": a number in 0-1. Any integer Python indexes a list with is taken."""
    import numpy as np

    fake = ForecastClient()
    store = GridStore(tmp_path / "grids.sqlite3")
    plan = plan_grid(T2I, {"prompt": "a fox", "n": 1}, ("seed", [1, 2]), prepare=fake.prepare)
    run = GridRun(plan, fake, store=store)
    assert run.rate(np.argmax([2.0, 7.0]), 5) is run.cells[1]
    assert store.ratings(run.id) == {1: (5, None)}
    with pytest.raises(ValueError, match=r"rate a cell number 0-1 .*not np.True_"):
        run.rate(np.True_, 3)
    store.close()


@pytest.mark.parametrize("cell", [2, -1, True, "0", None])
def test_rating_a_cell_the_grid_lacks_says_which_cells_there_are(tmp_path: Path, cell: Any) -> None:
    """grid.rate(99, 3) raised a bare IndexError and rate(-1, ...) rated the last cell."""
    fake = ForecastClient()
    store = GridStore(tmp_path / "grids.sqlite3")
    plan = plan_grid(T2I, {"prompt": "a fox", "n": 1}, ("seed", [1, 2]), prepare=fake.prepare)
    run = GridRun(plan, fake, store=store)
    with pytest.raises(ValueError, match=r"rate a cell number 0-1 or one of this grid's cells"):
        run.rate(cell, 3)
    assert store.ratings(run.id) == {} and [c.rating for c in run.cells] == [0, 0]
    store.close()


@pytest.mark.timeout(240)
def test_a_task_the_gateway_forgot_is_outcome_unknown_never_failed_nor_sent_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review-25 fault 1: every create answered (request ids known), then the gateway
    restarts on its port and forgets the tasks (404). They may have run and billed: each
    cell ends "outcome unknown" with its request id and words saying so, never "failed",
    and ``retry_failed()`` sends none of them again."""
    import httpx

    from genwidgets.jobs import job as job_module
    from genwidgets.simulator import DEMO_KEY, SimConfig, SimulatorServer
    from genwidgets.widgets.grid import Grid

    monkeypatch.setattr(job_module, "NOT_VISIBLE_FOR", 1.0)  # past the first minute
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path / "home"))
    first = SimulatorServer(SimConfig(speed=0.1), host="127.0.0.1", port=0).start()
    fresh = None
    try:
        with gw.Client(first.base_url, DEMO_KEY) as client:
            plan = plan_grid(T2I, {"prompt": "a fox", "n": 1}, ("seed", [1, 2]))
            run = GridRun(plan, client).submit(wait=True)  # tasks of about 20 s
            ids = [c.request_id for c in run.cells]
            assert all(ids), [c.trouble for c in run.cells]
            first.stop()  # the gateway restarts and forgets them
            fresh = SimulatorServer(SimConfig(), host="127.0.0.1", port=first.port).start()
            run.wait(timeout=180)
            assert [status_of(c) for c in run.cells] == ["outcome unknown"] * 2
            assert [c.request_id for c in run.cells] == ids  # kept, to look for it
            for cell in run.cells:
                assert not cell.failed and cell.in_doubt
                said = cell.trouble or ""
                assert "no longer knows" in said and cell.request_id in said
                assert "billed" in said and "not sent again" in said
            assert run.tally()[1] == 0 and run.failed == []
            words = state_words(run)
            assert "failed" not in words and "2 outcome unknown" in words
            view = Grid(run)
            said = [view.cell_states[c.index] for c in run.cells]
            assert {s["status"] for s in said} == {"outcome unknown"}
            assert all("no longer knows" in (s["error"] or "") for s in said)
            assert view.retry_failed(wait=False) == 0
            created = httpx.get(f"{fresh.base_url}/_sim/stats", timeout=10).json()["created"]
            assert created == 0
    finally:
        first.stop()
        if fresh is not None:
            fresh.stop()


def test_a_grid_a_read_only_home_cannot_record_says_so_and_what_to_do(tmp_path: Path) -> None:
    """Review-25 fault 6: a ledger that cannot be written (a read-only home, a full disk)
    refuses to record the grid before its creates leave: right for money, but it was a
    bare ``LedgerError`` out of sqlite's internals. It says the grid was not sent, why
    (GENWIDGETS_HOME cannot be written), that nothing was billed, and what to do; no
    sqlite chain. A later submit() in a writable home sends it."""
    import sqlite3

    class ReadOnlyOnce(GridStore):
        read_only = True

        def save_batch(self, grid_id: str, **kwargs: Any) -> Any:
            if self.read_only:
                self.read_only = False
                try:
                    raise sqlite3.OperationalError("attempt to write a readonly database")
                except sqlite3.OperationalError as exc:
                    raise gw.LedgerError(f"cannot write the ledger {self.path}: {exc}") from exc
            return super().save_batch(grid_id, **kwargs)

    fake = ForecastClient()
    store = ReadOnlyOnce(tmp_path / "grids.sqlite3")
    plan = plan_grid(T2I, {"prompt": "a fox", "n": 1}, ("seed", [1, 2]), prepare=fake.prepare)
    run = GridRun(plan, fake, store=store)
    with pytest.raises(gw.LedgerError) as refused:
        run.submit(wait=True)
    said = str(refused.value)
    assert said.startswith(f"grid {run.id} not sent: GENWIDGETS_HOME")
    assert "cannot be written" in said and "nothing was sent or billed" in said
    assert "set GENWIDGETS_HOME to a folder you can write" in said
    assert refused.value.__cause__ is None and refused.value.__suppress_context__
    assert not run.started and fake.sent == []
    run.submit(wait=True)
    assert len(fake.sent) == 2
    store.close()
