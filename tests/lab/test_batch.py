"""A batch against the simulator: each row sent once, named and tagged files, the manifest,
the rows back, confirmation, budgets before and while sending, retries, deadlines,
cancel, and two processes sending one batch without sending a row twice."""

from __future__ import annotations

import base64
import contextlib
import csv
import io
import itertools
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest
from faults import HeldCreates
from loopback import CancelRefused, JsonHandler, LoopbackServer, OneTaskGateway
from PIL import Image
from widgets.taskfakes import wait_for

import genwidgets as gw
from genwidgets.jobs.ledger import Ledger
from genwidgets.lab import batch as lab_batch
from genwidgets.lab import batch_store as lab_store
from genwidgets.lab.batch_open import batch as open_and_send
from genwidgets.lab.batch_store import BatchStore
from genwidgets.lab.manifest import read_manifest
from genwidgets.lab.provenance import read_provenance
from genwidgets.simulator import SimulatorServer

T2I = "genW2.5-t2i-preview"
KEY = "sim-demo-key"
pytestmark = pytest.mark.timeout(180)


def sim_stats(sim: SimulatorServer) -> dict[str, Any]:
    return dict(httpx.get(f"{sim.base_url}/_sim/stats", timeout=10).json())


def sim_tasks(sim: SimulatorServer) -> list[dict[str, Any]]:
    return list(httpx.get(f"{sim.base_url}/_sim/tasks", timeout=10).json())


def configure(sim: SimulatorServer, **changes: Any) -> None:
    httpx.put(f"{sim.base_url}/_sim/config", json=changes, timeout=10).raise_for_status()


def prompts(count: int, start: int = 0) -> list[dict[str, Any]]:
    return [{"text": f"a fox number {i}", "seed": str(i + 1)} for i in range(start, start + count)]


TEMPLATE = {"prompt": "{text}, watercolor", "seed": "{seed}", "n": 1}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


@pytest.fixture
def sim(make_simulator: Callable[..., SimulatorServer]) -> SimulatorServer:
    return make_simulator()


@pytest.fixture
def client(home: Path, sim: SimulatorServer) -> Iterator[gw.Client]:
    made = gw.Client(sim.base_url, KEY)
    yield made
    made.close()


@pytest.mark.slow
def test_each_row_is_sent_once_and_written_named_and_tagged_with_its_manifest(
    client: gw.Client, sim: SimulatorServer, tmp_path: Path
) -> None:
    out = tmp_path / "shots"
    batch = gw.batch(T2I, prompts(5), TEMPLATE, out=out, client=client, concurrency=2)
    assert isinstance(batch, gw.Batch)
    batch.wait(timeout=120, progress="none")
    assert [r.status for r in batch.rows] == ["done"] * 5
    assert sim_stats(sim)["created"] == 5
    for row in batch.rows:
        assert row.payload == {
            "prompt": f"a fox number {row.index}, watercolor",
            "seed": row.index + 1,
            "n": 1,
        }
        [path] = row.files
        assert (
            path.name == f"{row.index:05d}-a-fox-number-{row.index}-watercolor-{row.index + 1}.png"
        )
        made = read_provenance(path)
        assert made is not None
        assert (made["row"], made["request_id"], made["batch"]) == (
            row.index,
            row.request_id,
            batch.id,
        )
        assert made["payload"] == row.payload
    last = read_manifest(out)
    assert sorted(last) == [0, 1, 2, 3, 4] and {r["status"] for r in last.values()} == {"done"}
    assert (out / "manifest.csv").read_text().count("\n") == 6
    frame = batch.dataframe()
    assert list(frame.index) == [0, 1, 2, 3, 4] and set(frame["status"]) == {"done"}
    # files named in the batch's folder, as the manifest names them (issue 39.7): a
    # printed frame names no folder of this machine, and each still opens
    assert list(frame["files"]) == [[row.files[0].name] for row in batch.rows]
    assert [frame.attrs["out"] / f for [f] in frame["files"]] == [r.files[0] for r in batch.rows]
    assert str(tmp_path) not in frame.to_string()
    assert batch.snapshot().spent == {"tasks": 5.0, "images": 5.0}
    [listed] = gw.batches(client)
    assert (listed.id, listed.counts, listed.out) == (batch.id, {"done": 5}, str(out))
    assert repr(listed) == f"<BatchRecord {batch.id} {T2I}: 5 done; out shots>"
    assert "5 of 5 done" in repr(batch)
    assert files_held_open(out) == []  # wait() returned: the JSONL is closed


def files_held_open(folder: Path) -> list[str]:
    """The files under ``folder`` this process holds open (Linux's ``/proc``)."""
    held = []
    for fd in Path("/proc/self/fd").iterdir():
        with contextlib.suppress(OSError):  # the listing's own descriptor is gone
            target = os.readlink(fd)
            if target.startswith(f"{folder}{os.sep}"):
                held.append(target)
    return held


@pytest.mark.slow
def test_the_same_call_again_resumes_and_creates_nothing(
    client: gw.Client, sim: SimulatorServer, tmp_path: Path
) -> None:
    rows = prompts(3)
    first = gw.batch(T2I, rows, TEMPLATE, out=tmp_path / "o", client=client).wait(timeout=120)
    files = sorted(p.name for p in (tmp_path / "o").iterdir())
    again = gw.batch(T2I, rows, TEMPLATE, client=client).wait(timeout=120)  # out: remembered
    assert again.id == first.id and again.out == first.out
    assert sim_stats(sim)["created"] == 3
    assert [r.request_id for r in again.rows] == [r.request_id for r in first.rows]
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == files


@pytest.mark.slow
def test_above_confirm_above_nothing_is_sent_until_submit(
    client: gw.Client, sim: SimulatorServer, tmp_path: Path
) -> None:
    batch = gw.batch(T2I, prompts(3), TEMPLATE, out=tmp_path / "o", client=client, confirm_above=2)
    assert batch.needs_confirmation and not batch.started
    with pytest.raises(RuntimeError, match="needs confirmation"):
        batch.wait()
    assert sim_stats(sim)["created"] == 0
    # its id is held before it is confirmed (another plan under it is refused), every row waiting
    assert [(b.id, b.counts) for b in gw.batches(client)] == [(batch.id, {"waiting": 3})]
    batch.submit().wait(timeout=120)
    assert sim_stats(sim)["created"] == 3


def test_a_plan_over_budget_sends_nothing(
    client: gw.Client, sim: SimulatorServer, tmp_path: Path
) -> None:
    with pytest.raises(gw.BudgetExceeded, match="bills 3 images; the budget allows 2"):
        gw.batch(T2I, prompts(3), TEMPLATE, out=tmp_path / "o", client=client, budget={"images": 2})
    with pytest.raises(gw.BudgetExceeded, match="price units"):
        gw.batch(
            T2I,
            prompts(3),
            TEMPLATE,
            out=tmp_path / "o",
            client=client,
            budget=0.1,
            prices={T2I: {"per_image": 0.04}},
        )
    assert sim_stats(sim)["create"] == 0 and gw.batches(client) == []


@pytest.mark.slow
def test_rows_refused_for_the_create_limit_go_again_until_each_is_made_once(
    make_simulator: Callable[..., SimulatorServer], home: Path, tmp_path: Path
) -> None:
    """With no retry of its own, every 429 reaches the batch: the row made nothing, so it
    waits again (its units given back) and goes in a later chunk, never failed, never
    taken for another process's."""
    limited = make_simulator(create_rate_limit=4)
    with gw.Client(limited.base_url, KEY, max_retries=0) as client:
        batch = gw.batch(
            T2I, prompts(10), TEMPLATE, out=tmp_path / "o", client=client, concurrency=4
        ).wait(timeout=120)
        assert [r.status for r in batch.rows] == ["done"] * 10
        assert batch.snapshot().spent == {"tasks": 10.0, "images": 10.0}
    stats = sim_stats(limited)
    assert stats["created"] == 10 and stats["create"] > 10  # some were refused, then sent
    digests = [t["payload_sha256"] for t in sim_tasks(limited)]
    assert len(set(digests)) == 10


@pytest.mark.slow
def test_retried_rows_spend_again_and_the_batch_stops_at_the_cap(
    home: Path, sim: SimulatorServer, tmp_path: Path
) -> None:
    """Two rows fail (spent 2 of 3); their retry takes the last image and stops at the
    cap; a new process opening the batch counts the 3 the ledger says were spent."""
    configure(sim, fail_rate=1.0)
    with gw.Client(sim.base_url, KEY) as client:
        batch = gw.batch(
            T2I,
            prompts(2),
            TEMPLATE,
            out=tmp_path / "o",
            client=client,
            budget={"images": 3},
            id="capped",
        ).wait(timeout=120)
        assert [r.status for r in batch.rows] == ["failed", "failed"]
        assert "Runtime execution failed" in (batch.rows[0].error or "")
        configure(sim, fail_rate=0.0)
        assert batch.retry_failed() == 2
        batch.wait(timeout=120)
        assert [r.status for r in batch.rows] == ["done", "waiting"]
        assert read_manifest(tmp_path / "o")[1]["status"] == "waiting"  # no longer failed
        assert batch.stopped and "budget's cap (3 of 3 images)" in batch.stopped
        assert sim_stats(sim)["created"] == 3
    other = gw.Client(sim.base_url, KEY, ledger=Ledger(home / "ledger.sqlite3"))
    try:
        with pytest.raises(gw.BudgetExceeded, match=r"\(3 already spent by batch capped\)"):
            gw.batch(T2I, prompts(2), TEMPLATE, client=other, budget={"images": 3}, id="capped")
    finally:
        other.close()
    assert sim_stats(sim)["created"] == 3


@contextlib.contextmanager
def two_processes(home: Path, sim: SimulatorServer) -> Iterator[tuple[Path, list[gw.Client]]]:
    """Two clients of ``sim`` on one ledger in ``home``, as two processes have (its path
    and them), both closed on leaving."""
    path = home / "ledger.sqlite3"
    home.mkdir(parents=True, exist_ok=True)
    clients = [gw.Client(sim.base_url, KEY, ledger=Ledger(path)) for _ in range(2)]
    try:
        yield path, clients
    finally:
        for c in clients:
            c.close()


@pytest.mark.slow
def test_two_processes_sending_one_batch_never_send_a_row_twice(
    home: Path, sim: SimulatorServer, tmp_path: Path
) -> None:
    with two_processes(home, sim) as (path, clients):
        batches = [
            open_and_send(
                T2I,
                prompts(12),
                TEMPLATE,
                out=tmp_path / "o",
                client=c,
                id="shared",
                confirm_above=0,
            )
            for c in clients
        ]
        for b in batches:
            b.submit()
        for b in batches:
            b.wait(timeout=120, progress="none")
    digests = [t["payload_sha256"] for t in sim_tasks(sim)]
    assert len(digests) == len(set(digests)) == 12  # every row created once, by one of them
    for index in range(12):
        states = sorted(b.rows[index].status for b in batches)
        assert states[0] == "done" or states == ["done", "unknown"], (index, states)
        assert "done" in states
    names = [p.name for p in (tmp_path / "o").iterdir() if p.suffix == ".png"]
    assert len(names) == 12
    # the shared record says what happened: a row the other process took is its to tell
    assert {r["status"] for r in read_manifest(tmp_path / "o").values()} == {"done"}
    store = BatchStore(path)
    try:
        stored = store.rows("shared")
    finally:
        store.close()
    assert {r.state for r in stored} == {"done"}


@pytest.mark.slow
def test_a_process_that_finds_its_rows_done_by_another_leaves_their_record_done(
    home: Path, sim: SimulatorServer, tmp_path: Path
) -> None:
    """Two processes open one batch; the first sends it all and ends; the second's rows
    are then all taken. It says so, and never writes over the first's record."""
    kwargs: dict[str, Any] = {"out": tmp_path / "o", "id": "late", "confirm_above": 0}
    with two_processes(home, sim) as (path, clients):
        first, second = (
            open_and_send(T2I, prompts(3), TEMPLATE, client=c, **kwargs) for c in clients
        )
        first.submit().wait(timeout=120, progress="none")
        second.submit().wait(timeout=120, progress="none")
    assert sim_stats(sim)["created"] == 3
    assert [r.status for r in second.rows] == ["done"] * 3  # as the store says
    assert [r.files for r in second.rows] == [r.files for r in first.rows]
    assert {r["status"] for r in read_manifest(tmp_path / "o").values()} == {"done"}
    store = BatchStore(path)
    try:
        assert {r.state for r in store.rows("late")} == {"done"}
    finally:
        store.close()


@contextlib.contextmanager
def held_copies(
    home: Path, sim: SimulatorServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, batch_id: str
) -> Iterator[tuple[gw.Batch, gw.Batch, threading.Event, list[gw.Client]]]:
    """Two processes' copies of one batch of three rows (``batch_id``, into ``o``): the
    first's rows reserved and held unsent until ``go_on`` is set (on leaving at the
    latest), the second opened meanwhile on its own store; and the two clients."""
    with two_processes(home, sim) as (_, clients):
        reserved, go_on = _held_sends(clients[0], monkeypatch)
        kwargs: dict[str, Any] = {"out": tmp_path / "o", "id": batch_id}
        try:
            first = open_and_send(T2I, prompts(3), TEMPLATE, client=clients[0], **kwargs)
            assert reserved.wait(60)
            monkeypatch.setattr(lab_store, "_stores", {})  # its own store, as in another process
            second = open_and_send(T2I, prompts(3), TEMPLATE, client=clients[1], **kwargs)
            yield first, second, go_on, clients
        finally:
            go_on.set()


def _held_sends(client: gw.Client, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    """Make ``client``'s batch sender stop after reserving a chunk, before sending it:
    (reserved, go_on) events."""
    reserved, go_on = threading.Event(), threading.Event()
    real = client.send_many

    def held(*args: Any, **kw: Any) -> Any:
        reserved.set()
        assert go_on.wait(60)
        return real(*args, **kw)

    monkeypatch.setattr(client, "send_many", held)
    return reserved, go_on


@pytest.mark.slow
def test_a_batch_opened_again_in_its_process_while_it_sends_is_given_back(
    client: gw.Client,
    sim: SimulatorServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A cell run twice: its rows reserved and not yet sent are not a dead run's to settle
    (that sent each of them twice); the batch sending them is returned."""
    reserved, go_on = _held_sends(client, monkeypatch)
    kwargs: dict[str, Any] = {"out": tmp_path / "o", "id": "twice", "client": client}
    try:
        first = open_and_send(T2I, prompts(3), TEMPLATE, confirm_above=0, **kwargs).submit()
        assert reserved.wait(60)
        capsys.readouterr()
        again = open_and_send(T2I, prompts(3), TEMPLATE, confirm_above=0, **kwargs)
        assert again is first
        assert "nothing sent" not in capsys.readouterr().out  # it sends: nothing to confirm
    finally:
        go_on.set()
    first.wait(timeout=120, progress="none")
    digests = [t["payload_sha256"] for t in sim_tasks(sim)]
    assert len(digests) == len(set(digests)) == 3
    ended = open_and_send(T2I, prompts(3), TEMPLATE, **kwargs)  # ended: opened afresh
    assert ended is not first and [r.status for r in ended.rows] == ["done"] * 3


@pytest.mark.slow
def test_a_batch_opened_by_another_process_while_one_sends_it_leaves_that_ones_rows(
    home: Path, sim: SimulatorServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows another live process reserved and has not sent yet (no ledger intent) are its
    own: the second process shows them as taken and sends none of them."""
    with held_copies(home, sim, monkeypatch, tmp_path, "busy") as (first, second, go_on, _):
        assert second.store is not first.store
        second.wait(timeout=120, progress="none")
        assert [r.status for r in second.rows] == ["unknown"] * 3
        assert all("another process" in (r.error or "") for r in second.rows)
        go_on.set()
        first.wait(timeout=120, progress="none")
    digests = [t["payload_sha256"] for t in sim_tasks(sim)]
    assert len(digests) == len(set(digests)) == 3  # each row made once, by the first
    assert [r.status for r in first.rows] == ["done"] * 3
    assert {r["status"] for r in read_manifest(tmp_path / "o").values()} == {"done"}


@pytest.mark.slow
def test_a_batch_ending_after_the_process_that_held_its_rows_writes_them_as_stored(
    home: Path, sim: SimulatorServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two processes sending one batch: the one ending last wrote the other's rows as it
    saw them at its start (``unknown``, "another process ... holds it"), though they were
    done with their files. Its last write reads them from the store (issue 38)."""
    with held_copies(home, sim, monkeypatch, tmp_path, "overlap") as (first, second, go_on, _):
        second.wait(timeout=120, progress="none")
        assert [r.status for r in second.rows] == ["unknown"] * 3  # the first one's
        go_on.set()
        first.wait(timeout=120, progress="none")
        second.wait(timeout=120, progress="none")  # it ends last
    assert [r.status for r in second.rows] == ["done"] * 3
    assert second.counts()["unknown"] == 0
    with open(tmp_path / "o" / "manifest.csv", encoding="utf-8") as table:
        assert [r["status"] for r in csv.DictReader(table)] == ["done"] * 3


@pytest.mark.slow
def test_a_copy_of_a_batch_never_retries_rows_the_other_process_held_and_retried(
    home: Path, sim: SimulatorServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two copies of one batch: the first holds the rows and they fail; the second's
    re-read showed them failed and took them as its own. Once the first retried them
    (done), the second's ``retry_failed()`` wrote ``waiting`` over that ``done`` and paid
    for every row again. A row another live process holds is never sent by this one."""
    configure(sim, fail_rate=1.0)
    with held_copies(home, sim, monkeypatch, tmp_path, "copies") as (first, second, go_on, _):
        second.wait(timeout=120, progress="none")
        go_on.set()
        first.wait(timeout=120, progress="none")
        assert [r.status for r in first.rows] == ["failed"] * 3
        second.wait(timeout=120, progress="none")  # its last write re-reads them: failed
        assert [r.status for r in second.rows] == ["failed"] * 3
        configure(sim, fail_rate=0.0)
        assert second.retry_failed() == 0  # the first one's to retry
        assert first.retry_failed() == 3
        first.wait(timeout=120, progress="none")
        assert second.retry_failed() == 0
        second.wait(timeout=120, progress="none")
        assert [r.status for r in second.rows] == ["done"] * 3  # re-read from the store
    assert sim_stats(sim)["created"] == 6  # 3 failed, then 3 done: none paid twice
    store = BatchStore(Ledger(home / "ledger.sqlite3"))
    try:
        assert {r.state for r in store.rows("copies")} == {"done"}
    finally:
        store.close()


@pytest.mark.slow
def test_rows_failed_in_a_process_that_has_ended_are_retried_by_the_copy_still_running(
    home: Path, sim: SimulatorServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The copy opened while another process held the rows: while that process lives its
    failed rows are "held by another process" (not being sent); once it has ended they
    are anyone's, and the copy's ``retry_failed()`` sends them. Before, they stayed held
    for the rest of the copy's life."""
    configure(sim, fail_rate=1.0)
    with held_copies(home, sim, monkeypatch, tmp_path, "ended") as (first, second, go_on, clients):
        second.wait(timeout=120, progress="none")
        go_on.set()
        first.wait(timeout=120, progress="none")
        second.wait(timeout=120, progress="none")
        assert [r.status for r in second.rows] == ["failed"] * 3
        assert all(r.next_step.startswith("held by another process") for r in second.rows)
        clients[0].close()  # the first process ends
        configure(sim, fail_rate=0.0)
        assert second.retry_failed() == 3
        second.wait(timeout=120, progress="none")
        assert [r.status for r in second.rows] == ["done"] * 3
    assert sim_stats(sim)["created"] == 6  # 3 failed, then 3 done


def test_a_row_another_process_retried_and_failed_again_is_retried_here(
    home: Path, sim: SimulatorServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A copy holds a failed row learnt at attempt 1; another process (since ended) retried
    it and it failed again (attempt 2). The copy's ``retry_failed()`` sends it: it was
    queued at attempt 1, refused by the store as stale, and the row then read as held
    elsewhere, sent by no one (review-19 fault 1)."""
    configure(sim, fail_rate=1.0)
    path = home / "ledger.sqlite3"
    home.mkdir(parents=True, exist_ok=True)
    kwargs: dict[str, Any] = {"out": tmp_path / "o", "id": "again"}
    with gw.Client(sim.base_url, KEY, ledger=Ledger(path)) as first:
        open_and_send(T2I, prompts(1), TEMPLATE, client=first, **kwargs).wait(
            timeout=120, progress="none"
        )
    keeping = gw.Client(sim.base_url, KEY, ledger=Ledger(path))
    try:
        monkeypatch.setattr(lab_store, "_stores", {})  # its own store, as in another process
        copy = open_and_send(T2I, prompts(1), TEMPLATE, client=keeping, **kwargs)
        copy.wait(timeout=120, progress="none")
        assert [r.status for r in copy.rows] == ["failed"]
        monkeypatch.setattr(lab_store, "_stores", {})
        with gw.Client(sim.base_url, KEY, ledger=Ledger(path)) as other:
            retried = open_and_send(T2I, prompts(1), TEMPLATE, client=other, **kwargs)
            retried.wait(timeout=120, progress="none")
            assert retried.retry_failed() == 1
            retried.wait(timeout=120, progress="none")
            assert [r.status for r in retried.rows] == ["failed"]  # at attempt 2
        configure(sim, fail_rate=0.0)
        assert copy.retry_failed() == 1
        copy.wait(timeout=120, progress="none")
        assert [r.status for r in copy.rows] == ["done"]
    finally:
        keeping.close()
    assert sim_stats(sim)["created"] == 3  # failed, failed again, done


def test_a_store_write_that_succeeds_again_clears_the_stores_problem(
    home: Path, sim: SimulatorServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A re-opened run whose store could not be written showed "store not written: ...
    readonly database" as its trouble for ever, though its changes were written once
    the home could be again (review-19 fault 3)."""
    with gw.Client(sim.base_url, KEY) as client:
        run = open_and_send(T2I, prompts(1), TEMPLATE, client=client, out=tmp_path / "o")
        run.wait(timeout=120, progress="none")
        settle = run.store.settle

        def refused(*args: Any, **kwargs: Any) -> Any:
            raise gw.LedgerError("cannot write the ledger: attempt to write a readonly database")

        monkeypatch.setattr(run.store, "settle", refused)
        with run.lock:
            run.update(run.rows[0], run.rows[0].state)
        with pytest.warns(gw.LedgerWarning, match="cannot be written now"):
            run.flush_when_it_can()
        assert run.problem is not None and "readonly" in run.problem
        monkeypatch.setattr(run.store, "settle", settle)  # the home is writable again
        run.flush()
        assert run.problem is None


@pytest.mark.slow
def test_a_row_past_its_deadline_is_cancelled_or_left(
    make_simulator: Callable[..., SimulatorServer], home: Path, tmp_path: Path
) -> None:
    slow = make_simulator(speed=0.05)  # an image task runs about 40 s
    with gw.Client(slow.base_url, KEY) as client:
        batch = gw.batch(
            T2I, prompts(1), TEMPLATE, out=tmp_path / "c", client=client, timeout=0.5
        ).wait(timeout=120)
        row = batch.rows[0]
        assert row.status == "timed out" and "timed out after 0.5 s; cancelled" in (row.error or "")
        task = httpx.get(f"{slow.base_url}/_sim/tasks/{row.request_id}", timeout=10).json()
        assert task["error_type"] == "cancelled"
        left = gw.batch(
            T2I,
            prompts(1, start=5),
            TEMPLATE,
            out=tmp_path / "l",
            client=client,
            timeout=0.5,
            on_timeout="leave",
        ).wait(timeout=120)
        assert left.rows[0].status == "left running"
        assert "left running" in (left.rows[0].error or "")
        task = httpx.get(f"{slow.base_url}/_sim/tasks/{left.rows[0].request_id}", timeout=10)
        assert task.json()["status"] != "COMPLETED"  # still running at the gateway


class CancelLate(OneTaskGateway):
    """A gateway that accepts a cancel and runs the task on all the same (the spec does
    not say what a cancel does to a task), until ``end`` is set: then it has ended,
    cancelled."""

    cancels = 0
    end = threading.Event()

    def do_GET(self) -> None:
        if not self.end.is_set():
            self.send_json({"request_id": "r1", "status": "IN_PROGRESS"})
        else:
            self.send_json({"request_id": "r1", "status": "COMPLETED", "error": "cancelled"})

    def do_PUT(self) -> None:
        type(self).cancels += 1
        self.send_json({"request_id": "r1", "status": "CANCELLATION_REQUESTED"})


@pytest.fixture
def cancel_late() -> Iterator[LoopbackServer]:
    CancelLate.cancels = 0
    CancelLate.end = threading.Event()
    gateway = LoopbackServer(CancelLate)
    yield gateway
    gateway.close()


@pytest.mark.slow
def test_a_row_whose_cancel_does_not_end_its_task_is_left_running(
    cancel_late: LoopbackServer, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past its timeout a row's task is cancelled; a gateway that accepts the cancel and
    goes on kept ``wait()`` (and ``genwidgets batch``) waiting for ever. Left running, the
    row still ends, files and manifest, if its task ends while the process lives."""
    monkeypatch.setattr(lab_batch, "CANCEL_GRACE", 1.0)
    with gw.Client(cancel_late.base, "key-of-a-loopback-gateway", ledger=False) as client:
        batch = gw.batch(
            T2I, prompts(1), TEMPLATE, out=tmp_path / "c", client=client, timeout=0.5
        ).wait(timeout=120, progress="none")
        row = batch.rows[0]
        assert row.status == "left running"
        assert "its cancel did not end it within 1 s: left running" in (row.error or "")
        assert read_manifest(tmp_path / "c")[0]["status"] == "left running"
        assert wait_for(lambda: CancelLate.cancels == 1, timeout=60)  # the cancel went out
        CancelLate.end.set()  # the gateway ends it at last
        assert wait_for(lambda: row.status == "timed out", timeout=60)  # the left row ends
        batch.wait(timeout=60, progress="none")  # it returned at once, or spun for ever
        assert wait_for(
            lambda: read_manifest(tmp_path / "c")[0]["status"] == "timed out", timeout=60
        )


@contextlib.contextmanager
def loopback_client(handler: type[BaseHTTPRequestHandler], **options: Any) -> Iterator[gw.Client]:
    """A client (no ledger) of a loopback gateway answering as ``handler``: both ended
    on leaving."""
    gateway = LoopbackServer(handler)
    try:
        with gw.Client(gateway.base, "key", ledger=False, **options) as client:
            yield client
    finally:
        gateway.close()


def past_deadline(client: gw.Client, tmp_path: Path, timeout: float, wait: float = 60) -> gw.Batch:
    """A batch of one row sent by ``client`` with ``timeout``, waited for (``wait`` s at
    most): its row past its deadline."""
    return gw.batch(
        T2I, prompts(1), TEMPLATE, out=tmp_path / "c", client=client, timeout=timeout
    ).wait(timeout=wait, progress="none")


@pytest.mark.slow
def test_a_row_whose_deadline_cancel_was_not_taken_says_so(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A row past its deadline whose cancel the gateway never took (refused unsent by the
    client's rate gate, review fault 5; here a 500) was "left running" with "its cancel
    did not end it", as if the gateway had taken it."""
    monkeypatch.setattr(lab_batch, "CANCEL_GRACE", 1.0)
    monkeypatch.setattr(CancelRefused, "cancels", 0)  # answered 500: not taken
    with loopback_client(CancelRefused, max_retries=0) as client:
        batch = past_deadline(client, tmp_path, 0.5, wait=120)
        row = batch.rows[0]
        assert row.status == "left running" and CancelRefused.cancels >= 1
        assert "its cancel did not end it" not in (row.error or "")
        assert "its cancel was not taken within 1 s (the gateway failed" in (row.error or "")
        assert "cancel backend down" in (row.error or "")


@pytest.mark.slow
def test_a_row_whose_deadline_cancel_the_gateway_refused_says_it_bills_on(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review 27, fault 8: a deadline cancel the gateway refused at once (400 "too late"
    to a task running, which nothing will stop) was said "its cancel did not end it", as
    if taken: the user was not told the task bills to its end."""
    monkeypatch.setattr(lab_batch, "CANCEL_GRACE", 1.0)
    refused = type("Gateway", (CancelRefused,), {"cancels": 0, "answer": 400})
    with loopback_client(refused, max_retries=0) as client:
        batch = past_deadline(client, tmp_path, 0.5, wait=120)
        row = batch.rows[0]
        assert row.status == "left running" and refused.cancels == 1
        assert "its cancel did not end it" not in (row.error or "")
        assert "its cancel was refused by the gateway (" in (row.error or ""), row.error
        assert "cancel backend down" in (row.error or "")
        assert "bills to its end" in (row.error or "")


class KeyRefused(OneTaskGateway):
    """A gateway that takes the create, then refuses the key on every poll while
    ``refused`` is set (a teacher revoked it, then gave it back): the task goes on."""

    creates = 0
    refused = threading.Event()
    picture = ""

    def do_POST(self) -> None:
        type(self).creates += 1
        super().do_POST()

    refusal = 401

    def do_GET(self) -> None:
        if self.refused.is_set() and self.refusal == 403:  # a proxy's page, not the gateway's
            page = b"<html><body>Access denied by the firewall</body></html>"
            self.send_response(403)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)
        elif self.refused.is_set():
            self.send_json({"detail": "Unauthorized"}, code=self.refusal)
        elif self.path.endswith("/status"):
            self.send_json({"request_id": "r1", "status": "COMPLETED"})
        else:
            image = {"url": self.picture, "content_type": "image/png"}
            self.send_json({"request_id": "r1", "status": "COMPLETED", "outputs": [image]})


@pytest.mark.slow
@pytest.mark.parametrize(
    ("refusal", "said"), [(401, "HTTP 401"), (403, "HTTP 403"), (409, "HTTP 409")]
)
def test_a_key_refused_while_a_task_runs_leaves_it_unknown_and_a_rerun_reattaches(
    home: Path, tmp_path: Path, refusal: int, said: str
) -> None:
    """A poll refused (a key revoked then given back, a firewall's page, a 409) says
    nothing of the task, which goes on and is paid: the row is never failed (whose
    retry pays again); running the batch again follows it."""
    picture = io.BytesIO()
    Image.new("RGB", (4, 4), "red").save(picture, format="PNG")
    KeyRefused.creates, KeyRefused.refused = 0, threading.Event()
    KeyRefused.picture = "data:image/png;base64," + base64.b64encode(picture.getvalue()).decode()
    KeyRefused.refusal = refusal
    KeyRefused.refused.set()
    gateway = LoopbackServer(KeyRefused)
    try:
        with gw.Client(gateway.base, "key-of-a-loopback-gateway") as client:
            out = tmp_path / "k"
            batch = gw.batch(T2I, prompts(1), TEMPLATE, out=out, client=client, timeout=1)
            row = batch.wait(timeout=120, progress="none").rows[0]
            assert row.status == "unknown" and row.request_id == "r1"
            assert f"contact lost ({said}" in (row.error or "")
            assert batch.retry_failed() == 0
            KeyRefused.refused.clear()
            again = gw.batch(T2I, prompts(1), TEMPLATE, client=client, timeout=600)
            assert again.wait(timeout=120, progress="none").rows[0].status == "done"
            assert read_manifest(out)[0]["status"] == "done"
            assert KeyRefused.creates == 1
    finally:
        gateway.close()


@pytest.mark.slow
def test_a_cancels_grace_counts_from_the_cancel(
    cancel_late: LoopbackServer, home: Path, tmp_path: Path
) -> None:
    """A deadline noticed late (a batch opened again with a timeout, its task made long
    ago) still gives its cancel its whole grace."""
    with gw.Client(cancel_late.base, "key-of-a-loopback-gateway", ledger=False) as client:
        batch = gw.batch(T2I, prompts(1), TEMPLATE, out=tmp_path / "c", client=client)
        batch.submit()
        row = batch.rows[0]
        assert wait_for(lambda: row.status == "running", timeout=60)
        with batch.lock:
            batch.timeout, row.created_at = 0.5, time.time() - 1000.0
        batch.check_deadlines()
        batch.check_deadlines()
        assert row.status == "running" and row.timed_out and row.cancel_asked_at is not None
        with batch.lock:
            row.cancel_asked_at -= lab_batch.CANCEL_GRACE + 1
        batch.check_deadlines()
        assert row.status == "left running"
        batch.wait(timeout=60, progress="none")


class HeldAfterLoss(OneTaskGateway):
    """A gateway that takes the create, answers the first poll 503 (contact lost), then
    holds every later poll unanswered until ``release`` is set (30 s at most)."""

    polls = held = answered = 0
    release = threading.Event()

    def do_GET(self) -> None:
        type(self).polls += 1
        if self.polls == 1:
            self.send_json({"detail": "upstream unavailable"}, code=503)
            return
        type(self).held += 1
        self.release.wait(30)
        type(self).answered += 1
        self.send_json({"request_id": "r1", "status": "IN_PROGRESS"})


@pytest.mark.slow
def test_a_lost_row_ends_unknown_at_its_timeout_while_followed_again(
    home: Path, tmp_path: Path
) -> None:
    """A row out of contact is followed again with backoff; its ``timeout`` ends it
    ``unknown`` when it passes, with a follow-up's poll still unanswered (it waited for
    that poll's own end, long past the deadline the user gave)."""
    HeldAfterLoss.polls = HeldAfterLoss.held = HeldAfterLoss.answered = 0
    HeldAfterLoss.release = threading.Event()
    gateway = LoopbackServer(HeldAfterLoss)
    patience = gw.PollPolicy(failure_limit=1)  # the first 503 loses contact
    try:
        with gw.Client(gateway.base, "key", ledger=False, poll_policy=patience) as client:
            batch = gw.batch(
                T2I, prompts(1), TEMPLATE, out=tmp_path / "c", client=client, timeout=3
            ).wait(timeout=120, progress="none")
            row = batch.rows[0]
            assert row.status == "unknown" and row.request_id == "r1"
            assert "contact lost (HTTP 503" in (row.error or ""), row.error  # no class name
            assert "past its timeout of 3 s: the task may still run" in (row.error or "")
            assert HeldAfterLoss.held >= 1  # it was followed again...
            assert HeldAfterLoss.answered == 0  # ...and ended with that poll still held
            assert read_manifest(tmp_path / "c")[0]["status"] == "unknown"
    finally:
        HeldAfterLoss.release.set()
        gateway.close()


def sent_to(
    handler: type[BaseHTTPRequestHandler],
    tmp_path: Path,
    *,
    timeout: float,
    rows: int = 1,
    client_options: dict[str, Any] | None = None,
) -> gw.Batch:
    """A batch of ``rows`` prompts sent to a loopback gateway answering as ``handler``
    (no ledger) with ``timeout``, waited for to its end."""
    with loopback_client(handler, **(client_options or {})) as client:
        return gw.batch(
            T2I, prompts(rows), TEMPLATE, out=tmp_path / "c", client=client,
            timeout=timeout, concurrency=4, confirm_above=1000,
        ).wait(timeout=120, progress="none")  # fmt: skip


class OutUntilCancelled(OneTaskGateway):
    """A gateway whose task runs: its polls answer, except the 3rd on, which get a 503
    (a short outage) until a cancel comes (the gateway is back); a cancel ends it."""

    polls = cancels = 0
    cancelled = False

    def do_GET(self) -> None:
        type(self).polls += 1
        if self.cancelled:
            self.send_json({"request_id": "r1", "status": "CANCELLED"})
        elif self.polls >= 3:
            self.send_json({"detail": "upstream unavailable"}, code=503)
        else:
            self.send_json({"request_id": "r1", "status": "IN_PROGRESS"})

    def do_PUT(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        type(self).cancels += 1
        type(self).cancelled = True
        self.send_json({"request_id": "r1", "status": "CANCELLED"})


@pytest.mark.slow
def test_a_row_out_of_contact_at_its_timeout_is_asked_to_cancel_before_it_is_given_up(
    home: Path, tmp_path: Path
) -> None:
    """A row that lost contact shortly before its ``timeout`` is followed again and its
    cancel asked at the deadline: the gateway, back, cancels the task and the row is
    ``timed out``. It ended ``unknown`` there without a poll or a cancel, and its task
    billed on."""
    cancelled_once_at_its_deadline(OutUntilCancelled, tmp_path)


def cancelled_once_at_its_deadline(
    gateway: type[OutUntilCancelled], tmp_path: Path, *, cancels: tuple[int, ...] = (1,)
) -> None:
    """One row sent to ``gateway`` (afresh) with a 4 s ``timeout``, its polls giving up
    after two failures: its task was cancelled (asked as many times as ``cancels`` allows)
    and the row is ``timed out``."""
    gateway.polls = gateway.cancels = 0
    gateway.cancelled = False
    patience = {"poll_policy": gw.PollPolicy(failure_limit=2)}
    [row] = sent_to(gateway, tmp_path, timeout=4, client_options=patience).rows
    assert gateway.cancels in cancels
    assert row.status == "timed out", row.error
    assert "cancelled at the gateway" in (row.error or "")


class CancelAnsweredLate(OutUntilCancelled):
    """:class:`OutUntilCancelled` answering a cancel only once two more polls have had
    their 503: the job following the task past its deadline has given up by then."""

    heard = threading.Condition()

    def do_GET(self) -> None:
        super().do_GET()
        with self.heard:
            self.heard.notify_all()

    def do_PUT(self) -> None:
        arrived = type(self).polls
        with self.heard:
            self.heard.wait_for(lambda: type(self).polls >= arrived + 2, timeout=30)
        super().do_PUT()


@pytest.mark.slow
def test_a_row_whose_deadline_cancel_is_answered_after_its_polls_gave_up_is_followed_again(
    home: Path, tmp_path: Path
) -> None:
    """A row out of contact at its deadline is followed again and its cancel asked; that
    job's polls give up while the cancel is still on its way, and the gateway then takes
    it. The row was ``unknown`` ("contact lost, past its timeout") though its task was
    cancelled; now a cancel not failed is followed once more, and the row is ``timed out``
    (CI under load met this order by chance). Under load the cancel may reach the gateway
    only after that job's polls, so its answer waits for the next follow-up's polls: that
    follow-up, its cancel unanswered, asks it again (free, and an answer may never come),
    hence one or two cancels; the row's end is the same."""
    cancelled_once_at_its_deadline(CancelAnsweredLate, tmp_path, cancels=(1, 2))


class OutPastATakenCancel(OutUntilCancelled):
    """:class:`OutUntilCancelled` whose cancel is taken at once, while its polls still get
    a 503 for the next four (two follow-ups' worth): then CANCELLED."""

    after_cancel = 0

    def do_GET(self) -> None:
        cls = type(self)
        if cls.cancelled and cls.after_cancel < 4:
            cls.after_cancel += 1
            self.send_json({"detail": "upstream unavailable"}, code=503)
            return
        super().do_GET()


@pytest.mark.slow
def test_a_row_whose_deadline_cancel_was_taken_is_followed_within_its_grace(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A row's deadline cancel is taken, and contact is lost for two follow-ups after: the
    second (which rightly asks no cancel again) ended the row ``unknown`` at its loss,
    well within the cancel's grace, though the gateway then said CANCELLED. A taken
    cancel keeps its grace across follow-ups, and the row ends ``timed out``."""
    monkeypatch.setattr(lab_batch, "FOLLOW_BACKOFF", 0.5)
    OutPastATakenCancel.polls = OutPastATakenCancel.cancels = 0
    OutPastATakenCancel.after_cancel, OutPastATakenCancel.cancelled = 0, False
    patience = {"poll_policy": gw.PollPolicy(failure_limit=2), "max_retries": 0}
    [row] = sent_to(OutPastATakenCancel, tmp_path, timeout=4, client_options=patience).rows
    assert OutPastATakenCancel.cancels == 1  # taken once, never asked again
    assert OutPastATakenCancel.after_cancel == 4
    assert row.status == "timed out", row.error


class CancelFailedLate(JsonHandler):
    """A gateway whose task runs: polls answer, except from the 3rd until two polls after
    the first cancel came (a 503 each); that cancel is answered 503 only once the task is
    polled again after those, while later ones are taken (the task then CANCELLED)."""

    polls = cancels = 0
    held_at: int | None = None
    cancelled = False
    heard = threading.Condition()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_json({"request_id": "r1"})

    def do_GET(self) -> None:
        cls = type(self)
        with cls.heard:
            cls.polls += 1
            n, held = cls.polls, cls.held_at
            cls.heard.notify_all()
        if cls.cancelled:
            self.send_json({"request_id": "r1", "status": "CANCELLED"})
        elif n >= 3 and (held is None or n <= held + 2):
            self.send_json({"detail": "upstream unavailable"}, code=503)
        else:
            self.send_json({"request_id": "r1", "status": "IN_PROGRESS"})

    def do_PUT(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        cls = type(self)
        with cls.heard:
            first = cls.held_at is None
            if first:
                cls.held_at = cls.polls
                cls.heard.wait_for(lambda: cls.polls >= (cls.held_at or 0) + 3, timeout=30)
        if first:
            self.send_json({"detail": "upstream unavailable"}, code=503)
            return
        cls.cancels += 1
        cls.cancelled = True
        self.send_json({"request_id": "r1", "status": "CANCELLED"})


@pytest.mark.slow
def test_a_deadline_cancel_on_its_way_when_its_row_is_followed_again_is_asked_again_if_it_failed(
    home: Path, tmp_path: Path
) -> None:
    """A row's deadline cancel is still on its way when the job asking it gives up and the
    row is followed again; that cancel then fails (a 503). The new job asks it again:
    taken for a cancel on its way, it was asked by no one and the task billed on."""
    CancelFailedLate.polls = CancelFailedLate.cancels = 0
    CancelFailedLate.held_at, CancelFailedLate.cancelled = None, False
    patience = {"poll_policy": gw.PollPolicy(failure_limit=2), "max_retries": 0}
    [row] = sent_to(CancelFailedLate, tmp_path, timeout=4, client_options=patience).rows
    assert CancelFailedLate.cancels == 1  # the cancel asked again was taken
    assert row.status == "timed out", row.error


class ManyTasks(JsonHandler):
    """A gateway of many tasks that answers every poll and cancel at once: a task runs
    until its cancel (``cancelled``), then is CANCELLED."""

    ids = itertools.count(1)
    cancelled: ClassVar[set[str]] = set()
    lock = threading.Lock()
    cancel_delay = 0.0

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with self.lock:
            rid = f"r{next(self.ids)}"
        prefix = f"http://{self.headers['Host']}{self.path}/requests/{rid}"
        urls = {f"{tail}_url": f"{prefix}/{tail}" for tail in ("status", "response", "cancel")}
        self.send_json({"request_id": rid, **urls})

    def do_GET(self) -> None:
        rid = self.path.split("/requests/")[1].split("/")[0]
        word = "CANCELLED" if rid in self.cancelled else "IN_PROGRESS"
        self.send_json({"request_id": rid, "status": word})

    def do_PUT(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        time.sleep(self.cancel_delay)  # a gateway slow to answer a cancel
        rid = self.path.split("/requests/")[1].split("/")[0]
        with self.lock:
            self.cancelled.add(rid)
        self.send_json({"request_id": rid, "status": "CANCELLED"})


@pytest.mark.slow
def test_rows_past_their_timeout_under_the_status_budget_are_cancelled_not_lost(
    home: Path, tmp_path: Path
) -> None:
    """Rows past their ``timeout`` whose polls the client's own status budget holds are
    not out of contact: each is cancelled and ``timed out``. After 5 s without word
    they ended ``unknown`` ("contact lost"), and a command that ended then cut the
    cancels not yet sent."""
    ManyTasks.cancelled, ManyTasks.cancel_delay = set(), 0.0
    budget = {"max_status_rate": 1}
    batch = sent_to(ManyTasks, tmp_path, timeout=1, rows=8, client_options=budget)
    assert [r.status for r in batch.rows] == ["timed out"] * 8, [r.error for r in batch.rows]
    assert ManyTasks.cancelled == {r.request_id for r in batch.rows}


@pytest.mark.slow
def test_a_cancel_slow_to_answer_is_not_contact_lost(home: Path, tmp_path: Path) -> None:
    """A gateway that answers a row's cancel after 6.5 s, its polls at once: the row is
    ``timed out``, cancelled. It ended ``unknown`` ("contact lost") 5 s after the cancel
    was asked, the poller not woken until the cancel answered."""
    ManyTasks.cancelled, ManyTasks.cancel_delay = set(), 6.5
    slow_polls = {"poll_policy": gw.PollPolicy(notice_floor=8, notice_ceiling=8)}
    [row] = sent_to(ManyTasks, tmp_path, timeout=1, client_options=slow_polls).rows
    assert row.status == "timed out", row.error
    assert ManyTasks.cancelled == {row.request_id}


class CancelDownPollsLate(OneTaskGateway):
    """A gateway whose task runs on and whose cancel answers 503. Its polls answer at once
    until 0.7 s after the create; from then on (a row's deadline of 1 s near) they answer
    1.5 s late, or with a 503 when ``down`` is set."""

    created = 0.0
    cancels = 0
    down = False

    def do_POST(self) -> None:
        type(self).created = time.monotonic()
        super().do_POST()

    def do_GET(self) -> None:
        late = time.monotonic() - self.created >= 0.7
        if late and self.down:
            self.send_json({"detail": "upstream unavailable"}, code=503)
            return
        if late:
            threading.Event().wait(1.5)  # slow, but it answers
        self.send_json({"request_id": "r1", "status": "IN_PROGRESS"})

    def do_PUT(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        type(self).cancels += 1
        self.send_json({"detail": "cancel backend busy"}, code=503)


@pytest.mark.slow
def test_a_failed_deadline_cancel_with_polls_answered_is_left_running_not_lost(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A row whose deadline cancel gets a 503 while its polls are answered (slowly) is in
    contact: it waits the cancel's grace and is left running, its cancel kept and sent
    again. It ended ``unknown`` ("contact lost") at the next tick after the 503, before the
    poll the cancel woke had come back (review-3 fault 2)."""
    monkeypatch.setattr(lab_batch, "CANCEL_GRACE", 3.0)
    monkeypatch.setattr(CancelDownPollsLate, "cancels", 0)
    monkeypatch.setattr(CancelDownPollsLate, "down", False)
    with loopback_client(CancelDownPollsLate, max_retries=0) as client:
        batch = past_deadline(client, tmp_path, 1, wait=120)
        [row] = batch.rows
        assert row.status == "left running", row.error
        assert "its cancel was not taken within 3 s (the gateway failed" in (row.error or "")
        assert wait_for(lambda: CancelDownPollsLate.cancels >= 2, timeout=60)  # sent again


@pytest.mark.slow
def test_a_failed_deadline_cancel_with_polls_failing_too_is_unknown_at_once(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A row whose deadline cancel gets a 503 and whose polls get 503s too is out of
    contact: ``unknown`` (its request id kept for a rerun) as soon as a poll of its own
    fails, long before the cancel's grace and the poller's failure limit."""
    monkeypatch.setattr(CancelDownPollsLate, "cancels", 0)
    monkeypatch.setattr(CancelDownPollsLate, "down", True)
    patient = gw.PollPolicy(failure_limit=50)
    with loopback_client(CancelDownPollsLate, max_retries=0, poll_policy=patient) as client:
        batch = past_deadline(client, tmp_path, 1, wait=20)
        [row] = batch.rows
        assert row.status == "unknown" and row.request_id == "r1", row.error
        assert "its cancel failed (HTTP 503" in (row.error or "")  # no class name (review 32)
        assert "and so did a poll of it (HTTP 503" in (row.error or "")


class DownThenBack(OneTaskGateway):
    """A gateway whose task runs until it is cancelled; while ``down`` every poll and
    cancel gets a 503. ``taken`` counts the cancels it took."""

    down = True
    taken = 0

    def do_GET(self) -> None:
        if self.down:
            self.send_json({"detail": "upstream unavailable"}, code=503)
        else:
            word = "CANCELLED" if self.taken else "IN_PROGRESS"
            self.send_json({"request_id": "r1", "status": word})

    def do_PUT(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.down:
            self.send_json({"detail": "upstream unavailable"}, code=503)
            return
        type(self).taken += 1
        self.send_json({"request_id": "r1", "status": "CANCELLED"})


@contextlib.contextmanager
def down_then_back(
    monkeypatch: pytest.MonkeyPatch, grace: float, failure_limit: int
) -> Iterator[gw.Client]:
    """A client of a :class:`DownThenBack` gateway, down for now, its polls giving up
    after ``failure_limit`` failures; a batch's cancel grace ``grace`` s."""
    monkeypatch.setattr(lab_batch, "CANCEL_GRACE", grace)
    monkeypatch.setattr(DownThenBack, "down", True)
    monkeypatch.setattr(DownThenBack, "taken", 0)
    patience = gw.PollPolicy(failure_limit=failure_limit)
    with loopback_client(DownThenBack, max_retries=0, poll_policy=patience) as client:
        yield client


@pytest.mark.slow
def test_a_row_followed_again_after_its_deadline_cancel_failed_has_its_new_job_cancelled(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A row past its deadline whose cancel failed for want of contact ends ``unknown``;
    once its old job gives up, ``submit()`` follows its task again. That follow-up kept
    the old cancel's time: at the next check it was "left running: its cancel did not end
    it within N s" with no cancel asked of its task. Now its deadline asks one."""
    with down_then_back(monkeypatch, grace=1.0, failure_limit=3) as client:
        batch = past_deadline(client, tmp_path, 1)
        [row] = batch.rows
        assert row.status == "unknown" and "its cancel failed" in (row.error or "")
        assert row.cancel_asked_at is not None  # its deadline's cancel was asked
        old = row.job
        assert old is not None and wait_for(old.done, timeout=60)  # its polls gave up
        with batch.lock:  # the old cancel's grace is long past
            row.cancel_asked_at -= 10.0
        DownThenBack.down = False  # the gateway is back
        batch.submit().wait(timeout=60, progress="none")
        assert row.job is not old and row.job.cancel_requested  # asked of the new job
        assert row.status == "timed out", row.error  # not "left running"
        # the gateway took a cancel of the task; the old job's kept cancel, on the wire
        # as its polls gave up, may land once the gateway is back too (the same task)
        assert DownThenBack.taken in (1, 2)


@pytest.mark.slow
def test_a_row_followed_again_past_its_deadline_keeps_it_and_is_cancelled_at_once(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A row past its deadline, out of contact, is followed again by ``submit()``: the
    follow-up counted a whole new ``timeout`` from its new job before asking the cancel
    (the task billed on for as long). The row keeps its deadline: the cancel is asked
    of the new job as it is followed, and the row ends ``timed out``."""
    with down_then_back(monkeypatch, grace=1.0, failure_limit=3) as client:
        batch = past_deadline(client, tmp_path, 3)
        [row] = batch.rows
        assert row.status == "unknown" and "past its timeout" in (row.error or "")
        created_at = row.created_at
        old = row.job
        assert old is not None and wait_for(old.done, timeout=60)  # its polls gave up
        DownThenBack.down = False  # the gateway is back
        batch.submit()
        assert row.job is not old and row.created_at == created_at  # its own deadline
        assert row.timed_out and row.cancel_asked_at is not None  # asked at once
        batch.wait(timeout=60, progress="none")
        assert row.status == "timed out", row.error
        assert DownThenBack.taken == 1


class CancelTakenThenDown(OneTaskGateway):
    """A gateway whose task runs until its cancel is taken: it ends ``CANCELED`` (the
    spelling ``says_cancelled`` reads too), and contact is lost right after the cancel
    (every poll and cancel 503) until ``down`` is cleared."""

    down = False
    cancelled = False
    creates = 0

    def do_POST(self) -> None:
        type(self).creates += 1
        super().do_POST()

    def do_GET(self) -> None:
        if self.down:
            self.send_json({"detail": "upstream unavailable"}, code=503)
        elif self.cancelled:
            self.send_json({"request_id": "r1", "status": "CANCELED", "error": "cancelled"})
        else:
            self.send_json({"request_id": "r1", "status": "IN_PROGRESS"})

    def do_PUT(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.down:
            self.send_json({"detail": "upstream unavailable"}, code=503)
            return
        type(self).cancelled = type(self).down = True
        self.send_json({"request_id": "r1", "status": "CANCELED"})


@pytest.mark.slow
def test_a_row_cancelled_for_its_timeout_and_followed_again_ends_timed_out(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A row's deadline cancel was taken, then contact was lost before its end was seen
    (``unknown``); followed again, its task's end (``CANCELED``) made the row ``failed``,
    and ``retry_failed()`` paid for it again. It ends ``timed out``: nothing to retry."""
    for name, value in (("down", False), ("cancelled", False), ("creates", 0)):
        monkeypatch.setattr(CancelTakenThenDown, name, value)
    monkeypatch.setattr(lab_batch, "CANCEL_GRACE", 3.0)  # followed within it, then unknown
    patience = gw.PollPolicy(failure_limit=2)
    with loopback_client(CancelTakenThenDown, max_retries=0, poll_policy=patience) as client:
        batch = past_deadline(client, tmp_path, 1)
        [row] = batch.rows
        assert row.status == "unknown", row.error
        assert "the gateway had taken its cancel" in (row.error or "")
        assert row.job is not None and wait_for(row.job.done, timeout=60)
        CancelTakenThenDown.down = False  # the gateway is back
        batch.submit().wait(timeout=60, progress="none")
        assert row.status == "timed out", row.error
        assert batch.retry_failed() == 0
        assert CancelTakenThenDown.creates == 1


@pytest.mark.slow
def test_a_row_cancelled_by_a_person_and_followed_again_has_its_new_job_cancelled(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A person's cancel not taken (no contact), then the row's polls give up and its task
    is followed again with a new job: that job is asked to cancel too. The old job's kept
    cancel ended with it, and the row was "left running" by the old cancel's grace."""
    # the cancel's grace: past the follow-up, 2 s on
    with down_then_back(monkeypatch, grace=10.0, failure_limit=2) as client:
        batch = gw.batch(T2I, prompts(1), TEMPLATE, out=tmp_path / "c", client=client)
        batch.submit()
        [row] = batch.rows
        assert wait_for(lambda: row.job is not None, timeout=60)
        old = row.job
        assert batch.cancel() == 1
        assert old is not None and wait_for(old.done, timeout=60)  # its polls gave up
        DownThenBack.down = False  # the gateway is back for the follow-up
        batch.wait(timeout=60, progress="none")
        assert row.job is not old and row.job.cancel_requested  # asked of the new job
        assert row.status == "cancelled", row.error
        # the old job's kept cancel, on the wire as its polls gave up, may land too
        assert DownThenBack.taken in (1, 2)


class AlwaysDown(OneTaskGateway):
    """A gateway that took the create, then answers every poll and cancel 503."""

    polls = 0

    def do_GET(self) -> None:
        type(self).polls += 1
        self.send_json({"detail": "upstream unavailable"}, code=503)

    def do_PUT(self) -> None:
        self.send_json({"detail": "upstream unavailable"}, code=503)


@pytest.mark.slow
def test_a_lost_row_is_followed_again_with_a_doubling_backoff(home: Path, tmp_path: Path) -> None:
    """A row out of contact waits 2, 4, 8 s... between follow-ups (a silent gateway is
    not polled 30 times a minute a row): the follow-up's end for lost contact is no
    word of the task. It was followed every 2 s, its loss count reset by that end."""
    AlwaysDown.polls = 0
    patience = {"poll_policy": gw.PollPolicy(failure_limit=1)}
    [row] = sent_to(AlwaysDown, tmp_path, timeout=12, client_options=patience).rows
    assert row.status == "unknown"
    # the first poll, follow-ups after 2 and 4 s (then 8 s: past the deadline), and the
    # one at the deadline with its cancel; every 2 s made 6 or more
    assert AlwaysDown.polls <= 5


@pytest.mark.slow
def test_a_lost_row_come_due_after_its_client_closed_is_unknown_with_its_request_id(
    client: gw.Client, tmp_path: Path
) -> None:
    """Following a task again is one way (``attach_all``): a client closed meanwhile leaves
    the row ``unknown`` (its task may still run), its request id kept for a resume."""
    batch = gw.batch(T2I, prompts(1), TEMPLATE, out=tmp_path / "shots", client=client)
    batch.wait(timeout=120, progress="none")
    row = batch.rows[0]
    with batch.lock:  # as the finisher leaves a row whose polling lost contact
        row.state, row.follow_at = "created", 0.0
    client.close()
    batch.check_deadlines()
    assert row.status == "unknown" and "the task may still run" in (row.error or "")
    assert row.request_id and row.follow_at is None


@pytest.mark.slow
def test_cancel_all_cancels_what_runs_and_sends_no_more(
    make_simulator: Callable[..., SimulatorServer], home: Path, tmp_path: Path
) -> None:
    """Each answer takes a second and a task 40 s: cancelled once the first row runs, the
    batch cancels it (and the row whose create was in flight, once it answers) and sends
    nothing more; ``submit()`` then sends the rows never sent, each once."""
    slow = make_simulator(speed=0.05, latency=1.0)
    with gw.Client(slow.base_url, KEY) as client:
        batch = gw.batch(
            T2I, prompts(3), TEMPLATE, out=tmp_path / "o", client=client, concurrency=1
        )
        assert wait_for(lambda: batch.rows[0].status in ("queued", "running"), timeout=60)
        batch.cancel()
        batch.wait(timeout=120, progress="none")
        statuses = [r.status for r in batch.rows]
        assert statuses[0] == "cancelled" and statuses[2] == "waiting"
        assert statuses[1] in ("cancelled", "waiting")  # its create may have been in flight
        assert batch.stopped is not None and batch.stopped.startswith("cancelled")
        made = sim_tasks(slow)
        assert len(made) == statuses.count("cancelled")
        for task in made:
            found = httpx.get(f"{slow.base_url}/_sim/tasks/{task['request_id']}", timeout=10)
            assert found.json()["error_type"] == "cancelled"
        # asked to send again: the rows never sent go, each once; a cancelled one never
        configure(slow, speed=20.0, latency=0.0)
        batch.submit().wait(timeout=120, progress="none")
        again = [r.status for r in batch.rows]
        assert [s for s in again if s != "cancelled"] == ["done"] * again.count("done")
        assert again.count("cancelled") == statuses.count("cancelled")
        assert again.count("done") == statuses.count("waiting") and batch.stopped is None
    assert len(sim_tasks(slow)) == len(made) + statuses.count("waiting")


@pytest.mark.slow
def test_bad_arguments_and_a_folder_of_another_batch_are_refused(
    client: gw.Client, sim: SimulatorServer, tmp_path: Path
) -> None:
    cases: list[tuple[dict[str, Any], str]] = [
        ({"timeout": 0}, "a row's deadline is a number of seconds above 0"),
        ({"on_timeout": "ignore"}, "is not one of 'cancel'"),
        ({"id": "../x"}, "is not a batch id"),
        ({"concurrency": 0}, "concurrency must be a whole number 1 or more"),
        ({"confirm_above": -1}, "confirm_above must be a whole number 0 or more"),
        ({"out": 42}, "out is a folder path"),
    ]
    for kwargs, expected in cases:
        with pytest.raises(ValueError, match=expected):
            gw.batch(T2I, prompts(1), TEMPLATE, client=client, **{"out": tmp_path / "o", **kwargs})
    gw.batch(T2I, prompts(1), TEMPLATE, client=client, out=tmp_path / "o", id="one").wait(60)
    with pytest.raises(gw.PayloadError, match="holds the files of batch 'one'"):
        gw.batch(T2I, prompts(2), TEMPLATE, client=client, out=tmp_path / "o", id="two")
    with pytest.raises(gw.PayloadError, match="was planned with other contents: the rows"):
        gw.batch(T2I, prompts(2), TEMPLATE, client=client, out=tmp_path / "o", id="one")
    with pytest.raises(gw.PayloadError, match="writes into"):
        gw.batch(T2I, prompts(1), TEMPLATE, client=client, out=tmp_path / "x", id="one")
    assert sim_stats(sim)["created"] == 1


def test_a_derived_id_comes_from_the_files_stem(client: gw.Client, tmp_path: Path) -> None:
    path = tmp_path / "catalogue.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in prompts(2)))
    batch = gw.batch(T2I, path, TEMPLATE, client=client, out=tmp_path / "o", confirm_above=0)
    assert batch.id.startswith("catalogue-") and len(batch.id) == len("catalogue-") + 10


def test_an_interrupt_after_every_row_was_sent_does_not_say_rows_wait(
    make_simulator: Callable[..., SimulatorServer],
    home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 40.10: Ctrl-C in wait() once every row is sent says so; what the rows sent
    hold is reserved, not spent, until they are done."""
    from genwidgets.lab import progress

    slow = make_simulator(speed=0.05)  # an image task runs about 40 s
    with gw.Client(slow.base_url, KEY) as client:
        batch = gw.batch(T2I, prompts(2), TEMPLATE, out=tmp_path / "o", client=client)
        assert wait_for(lambda: all(r.request_id for r in batch.rows), timeout=60)
        assert batch.snapshot().line().endswith("reserved 2 images")

        def ctrl_c(self: progress.Progress, snap: progress.Snapshot) -> None:
            raise KeyboardInterrupt

        monkeypatch.setattr(progress.Progress, "show", ctrl_c)
        with pytest.raises(KeyboardInterrupt):
            batch.wait(timeout=60, progress="none")
        assert batch.stopped == "interrupted: every row was sent, their tasks go on"
        batch.cancel()


def test_an_interrupt_with_rows_of_the_chunk_not_yet_sent_says_they_wait(
    make_simulator: Callable[..., SimulatorServer],
    home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ctrl-C in wait() while a gateway holds the chunk's first two creates (four rows,
    all in one chunk, two in flight): once they answer, the two behind them are held
    back and said to wait, never "every row was sent"; submit() sends them."""
    from genwidgets.lab import progress

    sim = make_simulator()
    gate = HeldCreates(sim.base_url)
    gate.holding.set()
    try:
        with gw.Client(gate.base_url, KEY) as client:
            batch = gw.batch(T2I, prompts(4), TEMPLATE, out=tmp_path / "o", client=client,
                             concurrency=2)  # fmt: skip
            wait_for(lambda: gate.creates >= 2, timeout=60)

            def ctrl_c(self: progress.Progress, snap: progress.Snapshot) -> None:
                raise KeyboardInterrupt

            def answer_once_stopped() -> None:  # the held creates answer once it is heard
                wait_for(batch.stop.is_set, timeout=60)
                gate.holding.clear()

            answering = threading.Thread(target=answer_once_stopped, daemon=True)
            answering.start()
            monkeypatch.setattr(progress.Progress, "show", ctrl_c)
            with pytest.raises(KeyboardInterrupt):
                batch.wait(timeout=60, progress="none")
            answering.join(60)
            assert batch.stopped == "interrupted: 2 row(s) not sent wait", batch.stopped
            assert gate.creates == 2
            monkeypatch.undo()
            batch.submit().wait(timeout=120, progress="none")
            assert [r.status for r in batch.rows] == ["done"] * 4
            assert gate.creates == 4 == sim_stats(sim)["created"]
    finally:
        gate.close()


@pytest.mark.slow
def test_the_rows_done_are_what_the_batch_spent(client: gw.Client, tmp_path: Path) -> None:
    batch = gw.batch(T2I, prompts(2), TEMPLATE, out=tmp_path / "o", client=client)
    snap = batch.wait(timeout=120, progress="none").snapshot()
    assert snap.billed == {"tasks": 2.0, "images": 2.0} == snap.spent
    assert snap.line() == f"batch {batch.id}: 2 of 2 done; spent 2 images"


class Steered(httpx.AsyncHTTPTransport):
    """A client's way to the simulator that steers a create by its prompt: "FAIL" makes
    its task fail, "SLOW" makes it run for ten simulated minutes."""

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "POST" and b'"prompt"' in request.content:
            if b"FAIL" in request.content:
                request.headers["X-Sim-Fault"] = "fail"
            if b"SLOW" in request.content:
                request.headers["X-Sim-Duration"] = "600"
        return await super().handle_async_request(request)


def test_the_process_ending_last_writes_what_the_store_holds_of_rows_another_retried(
    home: Path, sim: SimulatorServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two copies of one batch: the first's rows 0 and 1 fail while it follows a slow row;
    the second retries them (failed, not held) and they end done there. The first ends
    last: its manifest.csv and its rows say what the store says, done, never its older
    view "failed" with "sends it again: a new create, billed" (review-20 fault 2)."""
    path = home / "ledger.sqlite3"
    home.mkdir(parents=True, exist_ok=True)
    texts = ["FAIL a heron", "FAIL a crane", "SLOW an ibis", "a stork"]
    rows = [{"text": t, "seed": str(i + 1)} for i, t in enumerate(texts)]
    kwargs: dict[str, Any] = {"out": tmp_path / "o", "id": "shared"}
    first_client = gw.Client(sim.base_url, KEY, ledger=Ledger(path), transport=Steered())
    try:
        first = open_and_send(T2I, rows, TEMPLATE, client=first_client, **kwargs)
        stored = BatchStore(path)
        try:
            assert wait_for(
                lambda: [r.state for r in stored.rows("shared")][:2] == ["failed"] * 2,
                timeout=120,
            )
        finally:
            stored.close()
        assert not first.finished  # it still follows the slow row
        monkeypatch.setattr(lab_store, "_stores", {})  # its own store, as in another process
        with gw.Client(sim.base_url, KEY, ledger=Ledger(path)) as other:
            second = open_and_send(T2I, rows, TEMPLATE, client=other, **kwargs)
            assert second.retry_failed() == 2
            second.wait(timeout=120, progress="none")
            assert [r.status for r in second.rows][:2] == ["done"] * 2
        assert first.cancel() == 1  # the slow row: the first process ends last
        first.wait(timeout=120, progress="none")
        said = {r.index: r.status for r in first.rows}
        assert said == {0: "done", 1: "done", 2: "cancelled", 3: "done"}
        assert all(p.exists() for r in first.rows[:2] for p in r.files)
        with open(tmp_path / "o" / "manifest.csv", encoding="utf-8", newline="") as fh:
            table = {int(r["row"]): r["status"] for r in csv.DictReader(fh)}
        assert table == said
        assert {r.index: r.state for r in first.store.rows("shared")} == said
    finally:
        first_client.close()


def test_rows_retried_as_the_sender_ends_are_sent_by_it_never_left_without_a_sender(
    home: Path, sim: SimulatorServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``retry_failed()`` (the command's ``--retry-failed``) while the sender has found
    nothing more to send and is ending: the sender was still alive, so no new one was
    started, and it ended without the retried row: waiting with no sender, ``wait()``
    never ended (review-20, "by reading only"). The interleaving is forced: the sender
    is held just past its last look for rows until the retry has been asked."""
    configure(sim, fail_rate=1.0)
    with gw.Client(sim.base_url, KEY) as client:
        batch = open_and_send(
            T2I, prompts(1), TEMPLATE, client=client, out=tmp_path / "o", confirm_above=0
        )
        assert not batch.started  # waits for submit(): its sender can be held first
        ending, go_on = threading.Event(), threading.Event()
        send_all = batch.send_all

        def held_as_it_ends() -> None:
            send_all()
            ending.set()  # nothing more to send: the sender is ending
            assert go_on.wait(60)

        monkeypatch.setattr(batch, "send_all", held_as_it_ends)
        batch.submit()
        try:
            assert ending.wait(60)
            assert wait_for(  # failed, and stored so: retry_failed() sends it
                lambda: [r.state for r in batch.store.rows(batch.id)] == ["failed"], timeout=60
            )
            configure(sim, fail_rate=0.0)
            assert batch.retry_failed() == 1
        finally:
            go_on.set()
        batch.wait(timeout=60, progress="none")
        assert [r.status for r in batch.rows] == ["done"]
    assert sim_stats(sim)["created"] == 2  # failed, then done


def test_one_id_with_other_rows_is_refused_naming_the_rows_file_and_the_row_that_differs(
    client: gw.Client, sim: SimulatorServer, tmp_path: Path
) -> None:
    """The refusal says what differs: the rows file the id was planned from, and the
    first row whose contents differ with its line and values, not "3 rows, not the same
    values" (review-20 fault 6). Nothing is sent by the refused plan."""
    herons, cranes = tmp_path / "herons.csv", tmp_path / "cranes.csv"
    herons.write_text("text,seed\n" + "".join(f"a heron {i},{i + 1}\n" for i in range(3)))
    cranes.write_text("text,seed\na heron 0,1\na heron 1,2\na crane 2,3\n")
    kwargs: dict[str, Any] = {"client": client, "out": tmp_path / "o", "id": "shared"}
    gw.batch(T2I, herons, TEMPLATE, **kwargs).wait(60, progress="none")
    with pytest.raises(gw.PayloadError) as refused:
        gw.batch(T2I, cranes, TEMPLATE, **kwargs)
    said = str(refused.value)
    assert "the rows' source ('herons.csv' then, 'cranes.csv' now)" in said, said
    assert (
        "row 2 (line 4): prompt 'a heron 2, watercolor' then, 'a crane 2, watercolor' now" in said
    )
    assert sim_stats(sim)["created"] == 3
