"""Resuming a batch after a crash: each row reserved when the process stopped is settled
by what the ledger says of its create (created: re-attached, never sent again; certainly
not created: sent; unknown: listed), and never-sent rows are sent, a process killed
while its creates hang among them."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from faults import HeldCreates
from widgets.taskfakes import wait_for

import genwidgets as gw
from genwidgets.lab.batch_open import open_batch
from genwidgets.lab.batch_store import RowUpdate
from genwidgets.lab.outfiles import write_outputs
from genwidgets.simulator import SimulatorServer

T2I = "genW2.5-t2i-preview"
KEY = "sim-demo-key"
TEMPLATE = {"prompt": "{text}", "seed": "{seed}", "n": 1}
ROWS = [{"text": f"a lantern {i}", "seed": str(i + 1)} for i in range(5)]
pytestmark = pytest.mark.timeout(180)


def created(sim: SimulatorServer) -> int:
    return int(httpx.get(f"{sim.base_url}/_sim/stats", timeout=10).json()["created"])


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def reserve(batch: Any, indices: range) -> list[Any]:
    """Rows reserved in the store as the sender reserves them (their attempt taken)."""
    batch.store_batch()
    charges = [(i, {"tasks": 1.0, "images": 1.0}) for i in indices]
    taken = batch.store.reserve(batch.id, charges, {}).taken
    assert [i for i, _ in taken] == list(indices)
    for index, attempt in taken:
        batch.rows[index].attempt = attempt
    return list(batch.rows)


@pytest.mark.slow
def test_a_rerun_after_a_crash_settles_each_reserved_row_by_the_ledger(
    home: Path, make_simulator: Callable[..., SimulatorServer], tmp_path: Path
) -> None:
    sim = make_simulator()
    with gw.Client(sim.base_url, KEY) as first:
        batch = open_batch(T2I, ROWS, TEMPLATE, out=tmp_path / "o", client=first, id="crashed")
        batch.store_batch()
        rows = reserve(batch, range(4))  # rows 0-3 sending
        ledger = first.ledger
        assert ledger is not None
        # row 0: its task was created; the process died before the batch stored the answer
        [job] = first.send_many([rows[0].planned.prepared], tags=[batch.tag(rows[0])])
        # row 1: its create certainly made nothing (refused before anything left)
        refused = ledger.writes.record_intent(
            gateway=first.gateway_name,
            endpoint=T2I,
            payload=rows[1].payload,
            tag=batch.tag(rows[1]),
        )
        ledger.writes.record_create_failed(refused, "Unreachable: refused", created_nothing=True)
        # row 2: its create left and its answer was lost with the process
        lost = ledger.writes.record_intent(
            gateway=first.gateway_name,
            endpoint=T2I,
            payload=rows[2].payload,
            tag=batch.tag(rows[2]),
        )
        recorder = ledger.writes  # no longer in flight: the process is gone
        recorder._settle(recorder.row_of(lost))
        # row 3: reserved, and the process died before the ledger had its intent
        # row 4: never reserved
        ledger.flush()
    assert created(sim) == 1
    with gw.Client(sim.base_url, KEY) as second:  # a new process: the same call again
        again = gw.batch(T2I, ROWS, TEMPLATE, client=second, id="crashed").wait(timeout=120)
    statuses = [r.status for r in again.rows]
    assert statuses == ["done", "done", "unknown", "done", "done"]
    assert again.rows[0].request_id == job.request_id  # re-attached, not created again
    assert again.unknown == [again.rows[2]]
    assert "not sent again" in (again.rows[2].error or "")
    assert created(sim) == 4  # rows 1, 3 and 4 sent; 0 and 2 never again
    assert len([p for p in (tmp_path / "o").iterdir() if p.suffix == ".png"]) == 4


@contextlib.contextmanager
def on_a_full_disk(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """The ledger writer's transaction on a full disk (SQLite's SQLITE_FULL)."""
    raise sqlite3.OperationalError("database or disk is full")
    yield conn


@pytest.mark.slow
def test_a_batch_whose_home_fills_while_its_creates_leave_makes_each_row_once_when_run_again(
    home: Path,
    make_simulator: Callable[..., SimulatorServer],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The home fills up while a batch's rows are reserved ``sending`` (explorer of the
    lab, a 2 MB tmpfs): the ledger and its pending notes cannot be written, and the
    process ends before space comes back. Their creates left all the same, their
    intents nowhere; the rerun read "no intent" as "never sent" and paid for them again.
    Now a create leaves only once its intent is kept: they were never sent (NotRecorded),
    and the rerun sends each row once. SQLITE_FULL played on the ledger's writes."""
    from genwidgets.jobs.ledger import writer
    from genwidgets.jobs.ledger.file import LedgerFile

    sim = make_simulator()
    with gw.Client(sim.base_url, KEY) as first:
        batch = open_batch(T2I, ROWS[:4], TEMPLATE, out=tmp_path / "o", client=first, id="full")
        rows = reserve(batch, range(4))  # rows 0-3 sending
        [job] = first.send_many([rows[0].planned.prepared], tags=[batch.tag(rows[0])])
        assert first.ledger is not None and first.ledger.flush(30)
        with pytest.MonkeyPatch.context() as disk, warnings.catch_warnings():
            # the disk fills up: the ledger's writes and its pending notes fail from here on
            disk.setattr(writer, "immediate", on_a_full_disk)
            disk.setattr(LedgerFile, "keep_pending", lambda _self, _notes: "No space left")
            warnings.simplefilter("ignore", gw.LedgerWarning)
            outcomes = first.send_many(
                [row.planned.prepared for row in rows[1:]], tags=[batch.tag(r) for r in rows[1:]]
            )
            assert all(isinstance(o, gw.NotRecorded) for o in outcomes), outcomes
            assert created(sim) == 1  # none of them left
            first.close()  # the process ends while the disk is still full
            first.ledger.close()  # its writes left behind, kept nowhere
        assert first.ledger.tagged([batch.tag(r) for r in rows[1:]]) == []
    # space is freed
    with gw.Client(sim.base_url, KEY) as second:
        again = gw.batch(T2I, ROWS[:4], TEMPLATE, client=second, id="full").wait(timeout=120)
    assert [r.status for r in again.rows] == ["done"] * 4
    assert again.rows[0].request_id == job.request_id  # re-attached, not created again
    assert created(sim) == 4  # each row once


@pytest.mark.slow
def test_a_batch_run_on_a_full_home_waits_unsent_and_the_next_run_sends_each_row_once(
    home: Path, make_simulator: Callable[..., SimulatorServer], tmp_path: Path
) -> None:
    """The ledger and its pending notes cannot be written (a full disk): no create
    leaves; each row waits, saying why, and the batch pauses; the next run sends each
    row once."""
    from genwidgets.jobs.ledger import writer
    from genwidgets.jobs.ledger.file import LedgerFile

    sim = make_simulator()
    with (
        warnings.catch_warnings(),  # its close, once space is back, says so
        gw.Client(sim.base_url, KEY) as client,
        pytest.MonkeyPatch.context() as disk,
    ):
        disk.setattr(writer, "immediate", on_a_full_disk)
        disk.setattr(LedgerFile, "keep_pending", lambda _self, _notes: "No space left")
        warnings.simplefilter("ignore", gw.LedgerWarning)
        full = gw.batch(T2I, ROWS[:3], TEMPLATE, out=tmp_path / "o", client=client, id="full")
        full.wait(timeout=120, progress="none")
        assert [r.status for r in full.rows] == ["waiting"] * 3
        said = full.rows[0].error or ""
        assert said.startswith("not sent: the home could not record its intent first"), said
        assert "disk is full" in said and "nothing was paid" in said
        assert "the home could not record its intent first" in (full.stopped or "")
        assert full.paused and created(sim) == 0
    with gw.Client(sim.base_url, KEY) as client:
        again = gw.batch(T2I, ROWS[:3], TEMPLATE, client=client, id="full").wait(timeout=120)
    assert [r.status for r in again.rows] == ["done"] * 3
    assert created(sim) == 3  # each row once


@pytest.mark.slow
def test_a_row_refused_for_the_rate_limit_then_created_is_re_attached_not_sent_again(
    home: Path, make_simulator: Callable[..., SimulatorServer], tmp_path: Path
) -> None:
    """Each attempt of a row leaves its own ledger record, tagged with its attempt: the
    first (refused, nothing made) must not hide the second, whose task exists."""
    sim = make_simulator()
    with gw.Client(sim.base_url, KEY) as first:
        batch = open_batch(T2I, ROWS[:2], TEMPLATE, out=tmp_path / "o", client=first, id="paced")
        rows = reserve(batch, range(2))
        ledger = first.ledger
        assert ledger is not None
        for row in rows:  # each refused once (nothing made: given back), then reserved again
            refused = ledger.writes.record_intent(
                gateway=first.gateway_name,
                endpoint=T2I,
                payload=row.payload,
                tag=batch.tag(row),
            )
            ledger.writes.record_create_failed(
                refused, "RateLimited: slow down", created_nothing=True
            )
            batch.store.settle("paced", [RowUpdate(row.index, "waiting", release=row.attempt)])
        rows = reserve(batch, range(2))
        assert [r.attempt for r in rows] == [2, 2]
        # row 0's second attempt made its task; row 1's left and its answer was lost
        [job] = first.send_many([rows[0].planned.prepared], tags=[batch.tag(rows[0])])
        lost = ledger.writes.record_intent(
            gateway=first.gateway_name,
            endpoint=T2I,
            payload=rows[1].payload,
            tag=batch.tag(rows[1]),
        )
        recorder = ledger.writes
        recorder._settle(recorder.row_of(lost))
        ledger.flush()
    assert created(sim) == 1
    with gw.Client(sim.base_url, KEY) as second:
        again = gw.batch(T2I, ROWS[:2], TEMPLATE, client=second, id="paced").wait(timeout=120)
    assert [r.status for r in again.rows] == ["done", "unknown"]
    assert again.rows[0].request_id == job.request_id
    assert created(sim) == 1  # neither row was made twice


def test_rows_of_one_payload_each_find_their_own_create_by_its_tag(
    home: Path, make_simulator: Callable[..., SimulatorServer], tmp_path: Path
) -> None:
    """Two rows of the same values (a file with a line twice): only the second's create
    made a task before the crash. Matched by payload, the first would take the second's
    task and the second be sent again; by tag, the first is sent and the second kept."""
    sim = make_simulator()
    twice = [ROWS[0], ROWS[0]]
    with gw.Client(sim.base_url, KEY) as first:
        batch = open_batch(T2I, twice, TEMPLATE, out=tmp_path / "o", client=first, id="twice")
        rows = reserve(batch, range(2))
        ledger = first.ledger
        assert ledger is not None
        refused = ledger.writes.record_intent(
            gateway=first.gateway_name,
            endpoint=T2I,
            payload=rows[0].payload,
            tag=batch.tag(rows[0]),
        )
        ledger.writes.record_create_failed(refused, "Unreachable: refused", created_nothing=True)
        [job] = first.send_many([rows[1].planned.prepared], tags=[batch.tag(rows[1])])
        ledger.flush()
    with gw.Client(sim.base_url, KEY) as second:
        again = gw.batch(T2I, twice, TEMPLATE, client=second, id="twice").wait(timeout=120)
    assert [r.status for r in again.rows] == ["done", "done"]
    assert again.rows[1].request_id == job.request_id  # kept, not made again
    assert again.rows[0].request_id != job.request_id  # its own task, sent on the resume
    assert created(sim) == 2


def test_a_row_reserved_before_the_ledger_wrote_tags_is_unknown_not_sent_again(
    home: Path, make_simulator: Callable[..., SimulatorServer], tmp_path: Path
) -> None:
    """An older genwidgets wrote its intents with no tag: a row it reserved cannot be
    told from its create in the ledger, so it is listed, never sent a second time."""
    simulator = make_simulator()
    with gw.Client(simulator.base_url, KEY) as client:
        batch = open_batch(T2I, ROWS[:1], TEMPLATE, out=tmp_path / "o", client=client)
        [row] = reserve(batch, range(1))[:1]
        row.state, row.reserved_at = "sending", 1.0  # long before the ledger took tags
        batch.reconcile([row])
        assert row.status == "unknown" and "older genwidgets" in (row.error or "")
        assert created(simulator) == 0


def test_without_a_ledger_a_reserved_row_is_unknown(
    home: Path, simulator: SimulatorServer, tmp_path: Path
) -> None:
    with gw.Client(simulator.base_url, KEY, ledger=False) as client:
        batch = open_batch(T2I, ROWS[:1], TEMPLATE, out=tmp_path / "o", client=client)
        batch.store_batch()
        batch.store.reserve(batch.id, [(0, {"tasks": 1.0})], {})
        row = batch.rows[0]
        row.state, row.reserved_at = "sending", 0.0
        batch.reconcile([row])
        assert row.status == "unknown" and "no ledger" in (row.error or "")


@pytest.mark.slow
def test_a_done_row_whose_file_went_missing_is_written_again(
    home: Path, make_simulator: Callable[..., SimulatorServer], tmp_path: Path
) -> None:
    sim = make_simulator()
    kwargs: dict[str, Any] = {"out": tmp_path / "o", "id": "files"}
    with gw.Client(sim.base_url, KEY) as client:
        done = gw.batch(T2I, ROWS[:2], TEMPLATE, client=client, **kwargs).wait(timeout=120)
        lost = done.rows[1].files[0]
        lost.unlink()
        again = gw.batch(T2I, ROWS[:2], TEMPLATE, client=client, **kwargs).wait(timeout=120)
    assert lost.exists() and [r.status for r in again.rows] == ["done", "done"]
    assert created(sim) == 2


@pytest.mark.slow
def test_a_row_whose_answer_reached_only_the_manifest_is_re_attached_with_its_file_kept(
    home: Path, make_simulator: Callable[..., SimulatorServer], tmp_path: Path
) -> None:
    """A process killed while its ledger's writer lagged: the create's answer reached the
    manifest (flushed at once) and the row's file was written, but neither the store nor
    the ledger kept the request id. The resume follows the manifest's id (same attempt),
    makes nothing again, and ends the row done with its one file."""
    sim = make_simulator()
    out = tmp_path / "o"
    with gw.Client(sim.base_url, KEY) as first, gw.Client(sim.base_url, KEY, ledger=False) as raw:
        batch = open_batch(T2I, ROWS[:2], TEMPLATE, out=out, client=first, id="lagged")
        batch.store_batch()
        assert len(batch.store.reserve("lagged", [(0, {"tasks": 1.0})], {}).taken) == 1
        ledger = first.ledger
        assert ledger is not None
        lost = ledger.writes.record_intent(  # its intent on disk; the answer never reached it
            gateway=first.gateway_name, endpoint=T2I, payload=batch.rows[0].payload
        )
        recorder = ledger.writes
        recorder._settle(recorder.row_of(lost))
        ledger.flush()
        job = raw.send(batch.rows[0].planned.prepared)  # made at the gateway, no ledger
        row = batch.rows[0]
        row.state, row.attempt, row.request_id = "created", 1, str(job.request_id)
        batch.manifest.event(row.record(out))
        written = write_outputs(
            out,
            row.planned.stem,
            list(job.result(timeout=60).outputs),
            own=(),
            batch="lagged",
            row=0,
            endpoint=T2I,
            request_id=row.request_id,
            payload=row.payload,
        )
        batch.manifest.close()
    assert created(sim) == 1
    with gw.Client(sim.base_url, KEY) as second:
        again = gw.batch(T2I, ROWS[:2], TEMPLATE, client=second, id="lagged").wait(timeout=120)
    assert [r.status for r in again.rows] == ["done", "done"]
    assert again.rows[0].request_id == str(job.request_id)
    assert again.rows[0].files == written  # its own file, replaced, not beside a ~2
    assert created(sim) == 2  # row 0 never made again
    assert sorted(p.name for p in out.iterdir() if p.suffix == ".png") == sorted(
        p.name for r in again.rows for p in r.files
    )


@pytest.mark.slow
def test_a_rerun_cancels_a_task_already_past_its_timeout_at_once(
    home: Path, make_simulator: Callable[..., SimulatorServer], tmp_path: Path
) -> None:
    """A row whose task ran past its ``timeout`` before the process ended: the re-run
    counts the deadline from the stored reservation, not from when it follows the task
    again (a job asked for by its id says "now"), so the task is cancelled at once
    instead of billing a whole new ``timeout``."""
    sim = make_simulator(speed=0.1)  # a task of about forty seconds
    with gw.Client(sim.base_url, KEY) as first:
        batch = open_batch(T2I, ROWS[:1], TEMPLATE, out=tmp_path / "o", client=first, id="late")
        [row] = reserve(batch, range(1))
        [job] = first.send_many([row.planned.prepared], tags=[batch.tag(row)])
        batch.store.settle("late", [RowUpdate(0, "created", str(job.request_id))])
        batch.manifest.close()
        ledger = first.ledger
        assert ledger is not None
        ledger.flush()
        with contextlib.closing(sqlite3.connect(ledger.path)) as conn, conn:
            conn.execute("UPDATE batch_rows SET reserved_at = reserved_at - 600")  # 10 min ago
    with gw.Client(sim.base_url, KEY) as second:
        again = gw.batch(T2I, ROWS[:1], TEMPLATE, client=second, id="late", timeout=300)
        again.wait(timeout=120, progress="none")
    assert again.rows[0].status == "timed out"
    assert again.rows[0].request_id == str(job.request_id)
    assert created(sim) == 1


@pytest.mark.slow
def test_a_retried_row_is_not_re_attached_to_its_earlier_attempts_task(
    home: Path, make_simulator: Callable[..., SimulatorServer], tmp_path: Path
) -> None:
    """The manifest's last line of a row retried and then reserved again names the task of
    the attempt before: it must not stand for the new attempt (the ledger decides)."""
    sim = make_simulator()
    out = tmp_path / "o"
    with gw.Client(sim.base_url, KEY) as first, gw.Client(sim.base_url, KEY, ledger=False) as raw:
        batch = open_batch(T2I, ROWS[:1], TEMPLATE, out=out, client=first, id="retried")
        batch.store_batch()
        batch.store.reserve("retried", [(0, {"tasks": 1.0})], {})
        old = raw.send(batch.rows[0].planned.prepared)
        row = batch.rows[0]
        row.state, row.attempt, row.request_id = "failed", 1, str(old.request_id)
        batch.manifest.event(row.record(out))  # attempt 1 failed (as far as it knows)
        batch.store.settle("retried", [RowUpdate(0, "waiting")])
        assert batch.store.reserve("retried", [(0, {"tasks": 1.0})], {}).taken == [(0, 2)]
        batch.manifest.close()  # attempt 2 reserved; the process dies before its intent
    with gw.Client(sim.base_url, KEY) as second:
        again = gw.batch(T2I, ROWS[:1], TEMPLATE, client=second, id="retried").wait(timeout=120)
    assert again.rows[0].status == "done"
    assert again.rows[0].request_id != str(old.request_id)  # sent: no ledger record of it
    assert created(sim) == 2


@pytest.mark.slow
def test_the_same_batch_from_another_home_or_gateway_sends_nothing(
    home: Path,
    make_simulator: Callable[..., SimulatorServer],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The second time in a fresh container (another GENWIDGETS_HOME, the same ``out``), or
    with the gateway's variables not exported (another gateway, the same home): the rows
    were paid already, so nothing is sent and no paid file is written over."""
    sim, other = make_simulator(), make_simulator()
    out = tmp_path / "o"
    with gw.Client(sim.base_url, KEY) as client:
        gw.batch(T2I, ROWS[:2], TEMPLATE, out=out, client=client).wait(120, progress="none")
    paid = {p.name: p.read_bytes() for p in out.glob("*.png")}
    assert len(paid) == 2 and created(sim) == 2
    with (
        gw.Client(other.base_url, KEY) as elsewhere,
        pytest.raises(gw.PayloadError, match="was sent through the gateway"),
    ):
        gw.batch(T2I, ROWS[:2], TEMPLATE, out=out, client=elsewhere)
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path / "fresh-home"))
    with (
        gw.Client(sim.base_url, KEY) as fresh,
        pytest.raises(gw.PayloadError, match=r"already sent .* by another ledger"),
    ):
        gw.batch(T2I, ROWS[:2], TEMPLATE, out=out, client=fresh)
    assert created(sim) == 2 and created(other) == 0
    assert {p.name: p.read_bytes() for p in out.glob("*.png")} == paid


def batch_command(base_url: str, tmp_path: Path, count: int) -> tuple[list[str], dict[str, str]]:
    """``genwidgets batch`` of ``count`` rows with 2 creates in flight, as a child process
    runs it (a home of its own, ``base_url`` its gateway), with --json."""
    rows = tmp_path / "rows.csv"
    rows.write_text("text,seed\n" + "".join(f"a lantern {i},{i + 1}\n" for i in range(count)))
    env = {**os.environ, "GENWIDGETS_HOME": str(tmp_path / "home"),
           "GENWIDGETS_BASE_URL": base_url, "GENWIDGETS_API_KEY": KEY}  # fmt: skip
    command = [sys.executable, "-m", "genwidgets.cli", "batch", str(rows), "--endpoint", T2I,
               "--set", "prompt={text}", "--set", "seed={seed}", "--set", "n=1",
               "--out", str(tmp_path / "o"), "--yes", "--json", "--concurrency", "2"]  # fmt: skip
    return command, env


@pytest.mark.slow
@pytest.mark.parametrize("kill", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_a_batch_killed_while_its_creates_hang_sends_the_rows_that_never_left_when_run_again(
    make_simulator: Callable[..., SimulatorServer], tmp_path: Path, kill: signal.Signals
) -> None:
    """A gateway holding every create (never answered), the command killed once two
    creates (its concurrency) reached the gateway, the rest of its chunk waiting their
    turn: the same command again sends every row whose create never left, lists the two
    that did as unknown (never sent again), and no row reaches the gateway twice.

    SIGTERM stops the command as Ctrl-C does: the batch lets its chunk in flight answer
    (15 s, silent), then the client waits for its creates' answers and says so. Once it
    says so, the gateway cuts the two unanswered, as a gateway that hung up would: the
    client's grace (``CREATE_ANSWER_GRACE``, whose end tests/test_client.py covers
    in-process) is not waited out, 15 s of this test's 45 s."""
    sim = make_simulator()
    gate = HeldCreates(sim.base_url)
    try:
        count = 8
        command, env = batch_command(gate.base_url, tmp_path, count)
        gate.holding.set()
        child = subprocess.Popen(
            command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        said: list[str] = []  # its stderr, read as written (a full pipe would block it)
        reader = threading.Thread(target=lambda: said.extend(child.stderr or ()), daemon=True)
        reader.start()
        try:
            wait_for(lambda: gate.creates >= 2 or child.poll() is not None, timeout=120)
            assert child.poll() is None, "".join(said)
        finally:
            child.send_signal(kill)
            if kill == signal.SIGTERM:  # it waits for the answers of the two in flight
                waiting = wait_for(lambda: any("waiting at most" in line for line in said), 120)
                assert waiting, "".join(said)
                gate.drop()  # the two held are never made, never answered
            child.wait(120)
            reader.join(10)
        assert gate.creates == 2  # the other rows of its chunk never left
        gate.drop()  # the two held are never made
        gate.holding.clear()  # the gateway answers again
        again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=240)
        report = json.loads(again.stdout)
        assert report["counts"] == {"done": count - 2, "unknown": 2}, again.stdout
        for row in report["not_done"]:
            assert "not sent again" in row["error"] and "genwidgets history" in row["next"]
        assert gate.creates == count  # each row's create reached the gateway once
        assert created(sim) == count - 2
        assert len(list((tmp_path / "o").glob("*.png"))) == count - 2
    finally:
        gate.close()
