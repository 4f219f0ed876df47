"""The ledger against real faults: a lock held by another process, a damaged page,
an immutable file, and two kernels sharing tasks (issue 22 points 1-3)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from reliability.harness import damage_root_page, wait_until

import genwidgets as gw
from genwidgets._config import Secret, normal_base_url
from genwidgets.errors import LedgerError, LedgerWarning
from genwidgets.jobs.ledger import Ledger
from genwidgets.protocol.records import Handle, Status
from genwidgets.simulator import DEMO_KEY, SimulatorServer

GATEWAY = "http://127.0.0.1:9999"
ENDPOINT = "asset-get"

HOLDER = textwrap.dedent(
    """
    import sqlite3, sys, time
    from pathlib import Path
    con = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
    con.execute("BEGIN EXCLUSIVE")
    con.execute("INSERT INTO meta (key, value) VALUES ('held', 'yes')")
    Path(sys.argv[2]).touch()
    deadline = time.time() + 90
    while not Path(sys.argv[3]).exists() and time.time() < deadline:
        time.sleep(0.02)
    con.execute("ROLLBACK")
    """
)


#: the same, in SQLite's exclusive locking mode: readers are kept out too
HOLDER_OF_READS = HOLDER.replace(
    'con.execute("BEGIN EXCLUSIVE")',
    'con.execute("PRAGMA locking_mode = EXCLUSIVE"); con.execute("BEGIN EXCLUSIVE")',
)


class Lock:
    """``BEGIN EXCLUSIVE`` held on a ledger by a second process until :meth:`release`."""

    def __init__(self, path: Path, tmp: Path, script: str = HOLDER) -> None:
        self.held, self.free = tmp / "held", tmp / "free"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", script, str(path), str(self.held), str(self.free)],
            stderr=subprocess.PIPE,
            text=True,
        )
        wait_until(lambda: self.held.exists() or self.proc.poll() is not None, 30, "the lock")
        assert self.held.exists(), self.proc.communicate()[1]

    @property
    def holding(self) -> bool:
        return self.proc.poll() is None

    def release(self) -> None:
        self.free.touch()
        self.proc.wait(30)


@pytest.fixture
def locked(tmp_path: Path) -> Iterator[Callable[[Path], Lock]]:
    locks: list[Lock] = []

    def hold(path: Path) -> Lock:
        locks.append(Lock(path, tmp_path))
        return locks[-1]

    yield hold
    for lock in locks:
        if lock.holding:
            lock.release()


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Clients made in the test keep their ledger in ``tmp_path``."""
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path))
    return tmp_path


def handle(request_id: str) -> Handle:
    return Handle.from_body(ENDPOINT, {"request_id": request_id}, GATEWAY)


# --------------------------------------------------------------------------- point 1


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_lock_held_by_another_process_delays_only_the_ledger(
    home: Path,
    make_simulator: Callable[..., SimulatorServer],
    locked: Callable[[Path], Lock],
) -> None:
    tmp_path = home
    sim = make_simulator()
    path = tmp_path / "ledger.sqlite3"
    Ledger(path).close()
    lock = locked(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "ledger is off" warning
        client = gw.Client(sim.base_url, DEMO_KEY)
    try:
        assert client.ledger is not None and client.ledger.path == path
        jobs = [client.submit(ENDPOINT, {"Id": "asset-demo"}) for i in range(4)]
        results = [job.result(timeout=60) for job in jobs]
        assert all(r.ok for r in results)
        # every task was created, polled and noticed while the file stayed locked ...
        assert lock.holding and client.ledger.pending > 0
        outside = sqlite3.connect(path)
        assert outside.execute("SELECT count(*) FROM tasks").fetchone() == (0,)
        outside.close()
        lock.release()
        # ... and nothing recorded was dropped: every row, in order, once it freed
        assert client.ledger.flush(60)
        rows = client.ledger.rows(client.gateway_name)
        assert [r.request_id for r in reversed(rows)] == [j.request_id for j in jobs]
        assert {r.state for r in rows} == {"finished"} and all(r.ok for r in rows)
    finally:
        client.close()


@pytest.mark.timeout(60)
def test_writes_made_while_locked_keep_their_order_and_tickets(
    tmp_path: Path, locked: Callable[[Path], Lock]
) -> None:
    path = tmp_path / "ledger.sqlite3"
    Ledger(path).close()
    lock = locked(path)
    led = Ledger(path, intent_wait=0.05)
    try:
        ticket = led.writes.record_intent(gateway=GATEWAY, endpoint=ENDPOINT, payload={"n": 1})
        assert ticket < 0  # not on disk yet: a ticket standing for the row
        led.writes.record_handle(ticket, handle("r-1"))
        status = led.writes.record_status(GATEWAY, "r-1", gw.Status("IN_PROGRESS"))
        assert not status.done() and led.pending == 3
        lock.release()
        assert status.result(timeout=30) is True
        row = led.row(ticket)
        assert row is not None and (row.request_id, row.state, row.status) == (
            "r-1",
            "submitted",
            "IN_PROGRESS",
        )
    finally:
        led.close()


# --------------------------------------------------------------------------- point 2


def test_a_damaged_page_is_found_at_open_moved_aside_and_recording_goes_on(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ledger.sqlite3"
    with Ledger(path) as led:
        row = led.writes.record_intent(gateway=GATEWAY, endpoint=ENDPOINT, payload={})
        led.writes.record_handle(row, handle("before"))
    damage_root_page(path, "tasks")
    damaged = path.read_bytes()
    with pytest.warns(LedgerWarning, match="moved to") as caught:
        led = Ledger(path)
    try:
        assert led.set_aside is not None and str(led.set_aside) in str(caught[0].message)
        assert caught[0].filename == __file__  # said at the user's line, not the ledger's
        assert led.set_aside.read_bytes() == damaged  # kept as it was, for the user
        row = led.writes.record_intent(gateway=GATEWAY, endpoint=ENDPOINT, payload={})
        led.writes.record_handle(row, handle("after"))
        assert [r.request_id for r in led.rows()] == ["after"]
    finally:
        led.close()
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA quick_check").fetchone() == ("ok",)
    assert con.execute("SELECT request_id FROM tasks").fetchall() == [("after",)]
    con.close()


def test_a_page_damaged_while_open_is_found_by_the_first_failed_write(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    led = Ledger(path, intent_wait=30)
    try:
        for name in ("a", "b"):
            led.writes.record_handle(
                led.writes.record_intent(gateway=GATEWAY, endpoint=ENDPOINT, payload={}),
                handle(name),
            )
        assert led.flush(30)
        damage_root_page(path, "tasks")  # under the open ledger's feet
        with pytest.warns(LedgerWarning, match="is damaged .* moved to") as caught:
            row = led.writes.record_intent(gateway=GATEWAY, endpoint=ENDPOINT, payload={})
        led.writes.record_handle(row, handle("after"))
        assert led.set_aside is not None and str(led.set_aside) in str(caught[0].message)
        assert caught[0].filename == __file__  # said at the caller's line
        assert [r.request_id for r in led.rows()] == ["after"]  # recording went on
    finally:
        led.close()
    assert led.set_aside.exists()


def test_a_warning_found_on_the_writer_is_said_at_the_line_that_called_the_ledger(
    tmp_path: Path,
) -> None:
    """However the ledger's pieces call each other, a LedgerWarning names the caller's
    line: a read that delivers it, and a ``with ledger.transaction()`` that meets it."""
    path = tmp_path / "ledger.sqlite3"
    with Ledger(path, intent_wait=30) as led:
        row = led.writes.record_intent(gateway=GATEWAY, endpoint=ENDPOINT, payload={})
        led.writes.record_handle(row, handle("a")).result(timeout=30)
        damage_root_page(path, "tasks")
        led.writes.record_status(GATEWAY, "a", Status("IN_PROGRESS"))  # queued: says nothing
        with pytest.warns(LedgerWarning, match="moved to") as caught:
            led.rows()  # waits for the status's write, which found the damage
        assert [w.filename for w in caught] == [__file__]
    with Ledger(path) as led:
        with led.transaction() as conn:
            conn.execute("CREATE TABLE extra (n INTEGER)")
            conn.executemany("INSERT INTO extra VALUES (?)", [(n,) for n in range(2000)])
        damage_root_page(path, "extra")
        with (
            pytest.warns(LedgerWarning, match="moved to") as caught,
            pytest.raises(LedgerError),
            led.transaction() as conn,
        ):
            conn.execute("UPDATE extra SET n = n + 1")
        assert [w.filename for w in caught] == [__file__]


def _make_unwritable(path: Path) -> Callable[[], None]:
    """chattr +i as root (root ignores modes), chmod 444 otherwise; returns the undo."""
    if os.geteuid() == 0:
        chattr = shutil.which("chattr")
        assert chattr is not None, "root without chattr cannot make a file unwritable"
        subprocess.run([chattr, "+i", str(path)], check=True)
        return lambda: subprocess.run([chattr, "-i", str(path)], check=True)
    path.chmod(0o444)
    return lambda: path.chmod(0o644)


@pytest.mark.timeout(120)
def test_an_unwritable_ledger_is_said_once_in_a_warning_and_tasks_still_run(
    home: Path, make_simulator: Callable[..., SimulatorServer]
) -> None:
    sim = make_simulator()
    path = home / "ledger.sqlite3"
    with Ledger(path) as led:  # one finished task from before, still readable
        row = led.writes.record_intent(gateway="simulator", endpoint=ENDPOINT, payload={})
        led.writes.record_handle(row, handle("old"))
    undo = _make_unwritable(path)
    try:
        client = gw.Client(sim.base_url, DEMO_KEY)
        try:
            with pytest.warns(LedgerWarning) as caught:
                jobs = [client.submit(ENDPOINT, {"Id": "asset-demo"}) for i in range(3)]
            said = [str(w.message) for w in caught if issubclass(w.category, LedgerWarning)]
            assert len(said) == 1, said  # once, not per task
            assert "cannot be written now" in said[0] and "kept in this process" in said[0]
            assert str(path) in said[0]
            assert all(job.result(timeout=60).ok for job in jobs)  # the work goes on
            assert client.ledger is not None and client.ledger.unwritable is not None
            assert not client.ledger.flush(30)  # kept: it says so at once, never waits 30 s
        finally:
            client.close()
        # its ledger closed (or the process ending) still unwritable: each paid task
        # named, and kept beside the file for the next open
        with pytest.warns(LedgerWarning, match="could not be written") as closing:
            client.ledger.close()
    finally:
        undo()
    assert all(job.request_id in str(closing[0].message) for job in jobs)
    con = sqlite3.connect(path)  # what is on disk: the old row only
    assert con.execute("SELECT request_id FROM tasks").fetchall() == [("old",)]
    con.close()
    with Ledger(path) as again:  # the next open records what was kept: nothing lost
        assert {r.request_id for r in again.rows()} == {"old", *(job.request_id for job in jobs)}


def test_writes_a_read_only_ledger_refuses_are_kept_and_written_once_it_can_be(
    tmp_path: Path,
) -> None:
    """A task created while the ledger could not be written was lost for good: its
    writes were given up, so neither this process's history nor a later one knew it."""
    path = tmp_path / "ledger.sqlite3"
    Ledger(path).close()
    undo = _make_unwritable(path)
    try:
        led = Ledger(path, intent_wait=30)
        with pytest.warns(LedgerWarning, match="cannot be written now.*kept in this process"):
            row = led.writes.record_intent(gateway=GATEWAY, endpoint=ENDPOINT, payload={})
        assert row < 0  # a ticket: the create left without waiting for the file
        led.writes.record_handle(row, handle("paid"))
        assert not led.flush(30) and led.unwritable is not None and led.dropped == 0
    finally:
        undo()
    try:  # writable again: the next write (or flush) writes what was kept, in order
        with pytest.warns(LedgerWarning, match="can be written again"):
            led.writes.record_handle(
                led.writes.record_intent(gateway=GATEWAY, endpoint=ENDPOINT, payload={}),
                handle("after"),
            )
            assert led.flush(30)
        assert [(r.request_id, r.state) for r in led.rows()] == [
            ("after", "submitted"),
            ("paid", "submitted"),
        ]
        assert led.unwritable is None
    finally:
        led.close()
    with Ledger(path) as later:  # and a later session knows it
        assert [r.request_id for r in later.rows()] == ["after", "paid"]


def _descriptors_on(path: Path) -> int:
    """This process's open descriptors on ``path`` (0 where /proc is missing)."""
    fds = Path("/proc/self/fd")
    if not fds.is_dir():
        return 0
    count = 0
    for fd in fds.iterdir():
        with contextlib.suppress(OSError):
            count += os.readlink(fd) == str(path)
    return count


def test_a_table_write_a_lock_keeps_out_says_it_was_not_saved_who_holds_it_and_what_to_do(
    tmp_path: Path, locked: Callable[[Path], Lock]
) -> None:
    """A grid's rating refused under a lock said only SQLite's "database is locked": not
    that it was lost, who held the file, nor what to do (review-21 fault 7)."""
    path = tmp_path / "ledger.sqlite3"
    with Ledger(path, busy_timeout=0.5) as led:
        with led.transaction() as conn:
            conn.execute("CREATE TABLE extra (n INTEGER)")
        locked(path)
        with pytest.raises(LedgerError) as refused, led.transaction() as conn:
            conn.execute("INSERT INTO extra VALUES (1)")
        said = str(refused.value)
        assert "another process holds the ledger" in said and str(path) in said, said
        assert "not saved" in said and "again once it frees" in said, said


def test_a_table_write_a_read_only_file_refused_succeeds_once_it_can_be(
    tmp_path: Path,
) -> None:
    """SQLite opens a file it cannot write read-only, and that connection stays so: a
    grid re-opened from a read-only home had its ratings and changes refused ("attempt
    to write a readonly database") until the kernel restarted, though the warning said
    they are written once the file can be."""
    path = tmp_path / "ledger.sqlite3"
    with Ledger(path) as first, first.transaction() as conn:
        conn.execute("CREATE TABLE extra (n INTEGER)")
        conn.execute("INSERT INTO extra VALUES (0)")
    undo = _make_unwritable(path)
    try:
        led = Ledger(path)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LedgerWarning)  # its own warning is tested above
            assert led.query("SELECT n FROM extra") == [(0,)]  # opened, read-only
            with pytest.raises(LedgerError, match="readonly"), led.transaction() as conn:
                conn.execute("UPDATE extra SET n = n + 1")
            opened = _descriptors_on(path)
            for _ in range(20):  # refused again and again while it stays read-only
                with pytest.raises(LedgerError, match="readonly"), led.transaction() as conn:
                    conn.execute("UPDATE extra SET n = n + 1")
            # each refusal reopened the connection, and SQLite kept the old descriptor
            assert _descriptors_on(path) == opened
    finally:
        undo()
    try:  # writable again: written, in this process
        with led.transaction() as conn:
            conn.execute("UPDATE extra SET n = n + 1")
        assert led.query("SELECT n FROM extra") == [(1,)]
    finally:
        led.close()


LEAVES_ITS_JOURNALS = textwrap.dedent(
    """
    import os, sys
    from genwidgets.jobs.ledger import Ledger
    led = Ledger(sys.argv[1])
    led.writes.record_intent(gateway="gw", endpoint="asset-get", payload={"n": 0})
    assert led.flush(30)
    os._exit(0)  # as a kernel that ended without closing: its -wal and -shm stay
    """
)


@contextmanager
def read_only_with_its_journals(path: Path) -> Iterator[None]:
    """A ledger an ended kernel left with its ``-wal`` and ``-shm``, all three made
    unwritable in the block (as a home mounted read-only): SQLite opens them read-only."""
    subprocess.run([sys.executable, "-c", LEAVES_ITS_JOURNALS, str(path)], check=True, timeout=60)
    names = [path.with_name(path.name + suffix) for suffix in ("", "-wal", "-shm")]
    assert all(name.exists() for name in names)
    undo = [_make_unwritable(name) for name in names]
    try:
        yield
    finally:
        for step in undo:
            step()


def test_writes_kept_while_the_home_was_read_only_land_once_it_can_be_written(
    tmp_path: Path,
) -> None:
    """The readers' connection, opened while the home was read-only, kept SQLite's
    shared state of the file read-only, and every retry of the kept writes shared it:
    refused for ever, though the home could be written again (review-21 fault 2)."""
    path = tmp_path / "ledger.sqlite3"
    with read_only_with_its_journals(path):
        led = Ledger(path)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LedgerWarning)  # its own warning is tested above
            assert led.query("SELECT count(*) FROM tasks") == [(1,)]  # as a Client's open reads
            row = led.writes.record_intent(gateway=GATEWAY, endpoint=ENDPOINT, payload={})
            led.writes.record_handle(row, handle("paid"))
            assert not led.flush(30) and led.unwritable is not None
    try:
        with pytest.warns(LedgerWarning, match="can be written again"):
            wait_until(lambda: led.flush(1), 30, "the kept writes written")
        assert led.unwritable is None
    finally:
        led.close()
    with Ledger(path) as later:
        assert "paid" in [r.request_id for r in later.rows()]


def test_a_read_only_home_keeps_a_bounded_number_of_descriptors_while_writes_are_kept(
    tmp_path: Path,
) -> None:
    """Each retry of the kept writes opened the file again, and SQLite kept each
    refused connection's descriptor open while the readers' connection locked the
    file: one more descriptor a second, and one per flush, without bound (review-21
    fault 4)."""
    path = tmp_path / "ledger.sqlite3"
    with read_only_with_its_journals(path), warnings.catch_warnings():
        warnings.simplefilter("ignore", LedgerWarning)
        led = Ledger(path)
        try:
            assert led.query("SELECT count(*) FROM tasks") == [(1,)]
            led.writes.record_intent(gateway=GATEWAY, endpoint=ENDPOINT, payload={})
            assert not led.flush(30)
            opened = _descriptors_on(path)
            for _ in range(40):  # each tries the kept writes again, and fails
                assert not led.flush(30)
            assert _descriptors_on(path) <= opened + 1
        finally:
            led.close()


@contextmanager
def disk_full_for_the_ledger(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bool]]:
    """Every write transaction of the ledger's writer meets a full disk while the
    yielded flag is set (SQLite's SQLITE_FULL): portable, no root, no mount."""
    from genwidgets.jobs.ledger import writer

    full = [True]
    real = writer.immediate

    @contextmanager
    def immediate(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
        if full[0]:
            raise sqlite3.OperationalError("database or disk is full")
        with real(conn) as inside:
            yield inside

    monkeypatch.setattr(writer, "immediate", immediate)
    yield full


def close_with_a_paid_task(path: Path, request_id: str) -> str:
    """Open the ledger, create one task while the disk is full, close: what the
    closing warning said (its notes go to the pending file)."""
    led = Ledger(path, intent_wait=0)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        row = led.writes.record_intent(gateway=GATEWAY, endpoint=ENDPOINT, payload={"n": 1})
        led.writes.record_handle(row, handle(request_id))
        led.close()
    return " ".join(str(w.message) for w in said)


def test_a_full_disk_keeps_a_tasks_writes_in_order_until_space_comes_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same with the disk full (SQLite's SQLITE_FULL), played on the writer's
    transactions: portable, no root, no mount."""
    with (
        Ledger(tmp_path / "ledger.sqlite3", intent_wait=30) as led,
        disk_full_for_the_ledger(monkeypatch) as full,
    ):
        with pytest.warns(LedgerWarning, match="disk is full"):
            row = led.writes.record_intent(gateway=GATEWAY, endpoint=ENDPOINT, payload={"n": 1})
        led.writes.record_handle(row, handle("during"))
        status = Status.from_body({"status": "IN_PROGRESS"}, endpoint=ENDPOINT, request_id="during")
        led.writes.record_status(GATEWAY, "during", status)
        assert not led.flush(30)
        with pytest.warns(LedgerWarning, match="cannot be written now"):
            assert led.rows() == []  # said: this history lacks the writes kept
        full[0] = False
        with pytest.warns(LedgerWarning, match="can be written again"):
            assert led.flush(30)
        found = led.get(GATEWAY, "during")
        assert found is not None and found.payload == {"n": 1} and found.status == "IN_PROGRESS"


def leave(led: Ledger, tag: str | None) -> int:
    """A create of ``send_many`` about to leave: its intent written as it does."""
    intent = led.writes.record_intent_as_it_leaves(
        gateway=GATEWAY, endpoint=ENDPOINT, payload={"n": 1}, tag=tag
    )
    return asyncio.run(intent)


@pytest.mark.timeout(60)
def test_a_batchs_create_whose_intent_the_full_home_cannot_keep_is_not_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ledger and its pending notes on one full disk (intentdisk): a tagged create
    (a batch's row, a grid's cell) left with no intent anywhere, so a rerun read "no
    intent" as "never sent" and paid for it again. It does not leave now: NotRecorded,
    and its row, once the disk frees, reads "not created". An untagged create leaves."""
    from genwidgets.jobs.ledger.file import LedgerFile

    monkeypatch.setattr(LedgerFile, "keep_pending", lambda _self, _notes: "No space left")
    tag = "batch b row 0 attempt 1"
    with (
        Ledger(tmp_path / "ledger.sqlite3") as led,
        disk_full_for_the_ledger(monkeypatch) as full,
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore", LedgerWarning)  # said by the tests above
        with pytest.raises(gw.NotRecorded, match="not sent: the home cannot record it") as e:
            leave(led, tag)
        assert "disk is full" in str(e.value) and "nothing was paid" in str(e.value)
        assert leave(led, None) < 0  # untagged: it leaves with its ticket, as before
        full[0] = False
        assert led.flush(30)
        assert [r.state for r in led.tagged([tag])] == ["not_created"]


@pytest.mark.timeout(60)
def test_the_tasks_of_held_intents_are_read_by_their_tags_in_the_same_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Creates that left with their intents kept beside a full ledger: a rerun in this
    process (``Batch.reconcile`` reads ``tagged``) read "no intent", so "never sent",
    and sent them again. It reads what the held writes say: made, may have left, or
    not created; the same as the file says once it takes them."""
    tags = [f"batch b row {i} attempt 1" for i in range(3)]
    with (
        Ledger(tmp_path / "ledger.sqlite3") as led,
        disk_full_for_the_ledger(monkeypatch) as full,
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore", LedgerWarning)  # said by the tests above
        led.writes.record_handle(leave(led, tags[0]), handle("made"))
        leave(led, tags[1])  # it left; its answer was lost
        refused = leave(led, tags[2])
        led.writes.record_create_failed(refused, "RateLimited: slow down", created_nothing=True)

        def read() -> list[tuple[str | None, str | None, str]]:
            return sorted((r.tag, r.request_id, r.state) for r in led.tagged(tags))

        expected = [(tags[0], "made", "submitted"), (tags[1], None, "submitting")]
        assert read() == [*expected, (tags[2], None, "not_created")]
        full[0] = False
        assert led.flush(30)
        assert read() == [*expected, (tags[2], None, "not_created")]


@contextmanager
def intent_written_once_safe_is_asked(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A tagged create's intent is applied (and its note dropped) only once the create
    asks ``WriteQueue.safe``, after the create has looked at the write: the interleaving
    a loaded machine gives with ``intent_wait=0`` (review-17), forced here."""
    from genwidgets.jobs.ledger import writes
    from genwidgets.jobs.ledger.writer import WriteQueue

    asked, real_insert, real_safe = threading.Event(), writes._insert, WriteQueue.safe

    def insert(*args: Any) -> int:
        assert asked.wait(30), "the create never asked whether its intent was safe"
        return real_insert(*args)

    def safe(self: WriteQueue, note: dict[str, Any], *rest: Any) -> Any:
        asked.set()
        assert self.flush(30)  # applied, its note gone from the queue
        return real_safe(self, note, *rest)

    monkeypatch.setattr(writes, "_insert", insert)
    monkeypatch.setattr(WriteQueue, "safe", safe)
    yield


@pytest.mark.timeout(60)
def test_a_batchs_create_whose_intent_was_applied_before_it_asked_leaves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer applied a tagged create's intent between the create's look at its
    write and its question "is it safe?": told "no longer queued, so not safe", the
    create was refused as NotRecorded on a free file (saying "locked by another
    process") and the batch paused (review-17). An applied intent is safe: it leaves."""
    tag = "batch b row 0 attempt 1"
    with (
        Ledger(tmp_path / "ledger.sqlite3", intent_wait=0) as led,
        intent_written_once_safe_is_asked(monkeypatch),
    ):
        assert led.flush(30)
        leave(led, tag)
        assert [r.state for r in led.tagged([tag])] == ["submitting"]


@pytest.mark.timeout(60)
def test_a_batchs_create_refused_on_a_free_file_blames_no_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tagged create refused while no lock and no disk fault was seen said the ledger
    was "locked by another process" (review-17): it says only what is known."""
    from genwidgets.jobs.ledger import writer
    from genwidgets.jobs.ledger.writer import WriteQueue

    monkeypatch.setattr(WriteQueue, "safe", lambda *_args: writer._settled(False))
    with Ledger(tmp_path / "ledger.sqlite3", intent_wait=0) as led:
        with pytest.raises(gw.NotRecorded, match="no lock or disk fault was seen") as e:
            leave(led, "batch b row 0 attempt 1")
        assert "locked by another process" not in str(e.value)


@pytest.mark.timeout(60)
def test_held_handles_and_failures_are_read_with_their_intents_once_those_are_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two tagged creates left with their intents held by a full disk; a little space
    came back and the intents reached the file, the handle of one and the "not created"
    of the other still held. Their notes name the creates' tickets, the rows on disk
    their ids: ``tagged`` read both as "submitting", so a rerun marked the paid task
    unknown instead of following it (review-17). They read as the file later says."""
    from genwidgets.jobs.ledger import writer

    tags = ["batch b row 0 attempt 1", "batch b row 1 attempt 1"]
    room, real = [0], writer.immediate  # writes the full disk lets through

    @contextmanager
    def immediate(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
        if room[0] <= 0:
            raise sqlite3.OperationalError("database or disk is full")
        room[0] -= 1
        with real(conn) as inside:
            yield inside

    with Ledger(tmp_path / "ledger.sqlite3") as led, warnings.catch_warnings():
        warnings.simplefilter("ignore", LedgerWarning)  # said by the tests above
        assert led.flush(30)
        monkeypatch.setattr(writer, "immediate", immediate)
        made, refused = leave(led, tags[0]), leave(led, tags[1])
        led.writes.record_handle(made, handle("made"))
        led.writes.record_create_failed(refused, "RateLimited: slow down", created_nothing=True)
        room[0] = 2  # the two intents, not what follows them
        led.flush(0)  # the kept writes are tried now
        wait_until(lambda: led.writes.row_of(refused) > 0 and led.pending == 2, 30, "intents")

        def read() -> list[tuple[str | None, str | None, str]]:
            return [(r.tag, r.request_id, r.state) for r in led.tagged(tags)]

        expected = [(tags[0], "made", "submitted"), (tags[1], None, "not_created")]
        assert read() == expected
        room[0] = 1_000
        assert led.flush(30)
        assert read() == expected


@pytest.mark.timeout(60)
def test_an_intent_written_while_its_tag_is_read_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``tagged`` read the file, then this process's held writes: an intent applied in
    between (the disk freed, a lock ended) was in neither, so a create that left read
    as "no intent", which a rerun takes for "never sent", and paid for again
    (review-17). The interleaving is forced: the disk frees right after the read."""
    tag = "grid g cell 4 attempt 1"
    real_select = Ledger._select
    with (
        Ledger(tmp_path / "ledger.sqlite3") as led,
        disk_full_for_the_ledger(monkeypatch) as full,
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore", LedgerWarning)  # said by the tests above
        assert leave(led, tag) < 0  # it left, its intent kept beside the full file

        def select_then_the_disk_frees(self: Ledger, *args: Any, **kwargs: Any) -> Any:
            rows = real_select(self, *args, **kwargs)
            full[0] = False
            assert self.flush(30)  # the intent is applied after the read
            return rows

        monkeypatch.setattr(Ledger, "_select", select_then_the_disk_frees)
        assert [(r.tag, r.state) for r in led.tagged([tag])] == [(tag, "submitting")]
        monkeypatch.setattr(Ledger, "_select", real_select)
        assert [(r.tag, r.state) for r in led.tagged([tag])] == [(tag, "submitting")]


def test_a_batchs_create_on_a_free_file_waits_for_its_row_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The common path: the row is on disk within ``intent_wait``, so nothing more is
    awaited (the keeper is never asked)."""
    from genwidgets.jobs.ledger.writer import WriteQueue

    def never(*_args: object) -> None:
        raise AssertionError("a free file's intent waited for the keeper")

    monkeypatch.setattr(WriteQueue, "safe", never)
    with Ledger(tmp_path / "ledger.sqlite3", intent_wait=30) as led:
        row = leave(led, "batch b row 0 attempt 1")
        assert row > 0 and led.row(row) is not None


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_a_batchs_create_leaves_once_its_intent_held_by_a_lock_is_kept_beside(
    tmp_path: Path, locked: Callable[[Path], Lock]
) -> None:
    """Another process holds the ledger's lock: the tagged create leaves once its
    intent's note is in the pending file, not before (and not after the lock)."""
    path = tmp_path / "ledger.sqlite3"
    pending = path.with_name(path.name + ".pending.jsonl")
    with Ledger(path, intent_wait=0.05) as led:
        lock = locked(path)
        ticket = leave(led, "grid g cell 1 attempt 1")
        assert ticket < 0 and lock.holding
        notes = [json.loads(line) for line in pending.read_text().splitlines()]
        assert [note["tag"] for note in notes] == ["grid g cell 1 attempt 1"]
        lock.release()
        assert led.flush(30)
        assert [r.state for r in led.tagged(["grid g cell 1 attempt 1"])] == ["submitting"]


@pytest.mark.timeout(60)
def test_a_batchs_create_leaves_once_its_intent_held_by_a_full_disk_is_kept_beside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ledger cannot be written but its pending notes can: the tagged create leaves
    once its intent's note is on disk there (a kill then loses nothing)."""
    path = tmp_path / "ledger.sqlite3"
    pending = path.with_name(path.name + ".pending.jsonl")
    with (
        Ledger(path) as led,
        disk_full_for_the_ledger(monkeypatch) as full,
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore", LedgerWarning)  # said by the tests above
        assert leave(led, "grid g cell 3 attempt 1") < 0
        notes = [json.loads(line) for line in pending.read_text().splitlines()]
        assert [note["tag"] for note in notes] == ["grid g cell 3 attempt 1"]
        full[0] = False
        assert led.flush(30)
        assert [r.state for r in led.tagged(["grid g cell 3 attempt 1"])] == ["submitting"]


@pytest.mark.timeout(60)
def test_bytes_that_are_not_utf8_in_the_pending_notes_skip_their_line_only(
    tmp_path: Path, locked: Callable[[Path], Lock], caplog: pytest.LogCaptureFixture
) -> None:
    """Stale disk bytes past the last line (a crash mid-append) made every open of the
    home raise a bare ``UnicodeDecodeError``: no client could be made, and the paid
    tasks in the good lines were never recorded (review-21 fault 6)."""
    path = tmp_path / "ledger.sqlite3"
    Ledger(path).close()
    at = time.time() - 60
    where = {"pid": 4242, "host": "another-host", "endpoint": ENDPOINT}
    intent = {"ticket": -1, "gateway": GATEWAY, "payload": "{}", "at": at, **where}
    paid = {"row": -1, "request_id": "paid", "at": at + 1, **where}
    pending = path.with_name(path.name + ".pending.jsonl")
    pending.write_bytes(
        (json.dumps(intent) + "\n").encode()
        + b"\x00\xff\xfe\x93 a torn append\n"
        + (json.dumps(paid) + "\n").encode()
    )
    lock = locked(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LedgerWarning)  # the lock's, tested above
        led = Ledger(path, busy_timeout=0.2)  # read under the lock: listed, not merged
        try:
            assert [(e, rid) for e, rid, *_ in led.left_pending()] == [(ENDPOINT, "paid")]
        finally:
            led.close()
    assert "skipped a line of a ledger's pending file" in caplog.text
    lock.release()
    with Ledger(path) as fresh:
        assert fresh.flush(30)
        assert [(r.request_id, r.state) for r in fresh.rows()] == [("paid", "submitted")]
    assert not pending.exists()


def test_a_torn_line_in_the_pending_notes_never_swallows_a_later_processs_paid_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pending file whose last line has no end (an append cut by a full disk, a
    process killed mid-append): the next process's first note (its intent) was glued
    onto it and skipped, and its paid task never reached the ledger (review of
    ledgerfix). Portable: the torn line is written here."""
    path = tmp_path / "ledger.sqlite3"
    pending = path.with_name(path.name + ".pending.jsonl")
    Ledger(path).close()
    pending.write_bytes(b'{"ticket": 7, "gatew')
    with disk_full_for_the_ledger(monkeypatch) as full:
        assert f"was kept in {pending}" in close_with_a_paid_task(path, "paid-B")
        full[0] = False
    with Ledger(path) as again:
        assert again.flush(30)
        assert [r.request_id for r in again.rows()] == ["paid-B"]


NOTES_ON_A_FULL_DISK = textwrap.dedent(
    """
    import contextlib, os, sqlite3, sys, warnings
    from genwidgets.jobs.ledger import Ledger, writer
    from genwidgets.protocol.records import Handle

    @contextlib.contextmanager
    def full(conn):
        raise sqlite3.OperationalError("database or disk is full")
        yield conn

    path, request_id, tasks = sys.argv[1], sys.argv[2], int(sys.argv[3])
    led = Ledger(path, intent_wait=0)
    writer.immediate = full  # the ledger's writes meet a full disk from here on
    if len(sys.argv) > 4:  # another program fills the disk meanwhile, a few KB left
        with open(sys.argv[4], "wb") as out, contextlib.suppress(OSError):
            for _ in range(64):  # 4 MB at most: the disk is full long before
                out.write(b"x" * 65536)
                out.flush()
        os.truncate(sys.argv[4], os.path.getsize(sys.argv[4]) - 8192)
    warnings.simplefilter("ignore")
    for n in range(tasks):
        row = led.writes.record_intent(gateway="gw", endpoint="asset-get", payload={"n": n})
        body = {"request_id": f"{request_id}-{n}"}
        led.writes.record_handle(row, Handle.from_body("asset-get", body, "gw"))
    led.close()
    """
)


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root")
@pytest.mark.timeout(120)
def test_notes_cut_by_a_really_full_disk_leave_the_pending_file_at_a_lines_end(
    tmp_path: Path,
) -> None:
    """The pending notes sit on the same full disk: an append stopped partway is cut
    back to the size before it, and a later process's notes are recorded."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=700", "tmpfs", str(disk)])
    if mounted.returncode != 0:
        pytest.skip("this root may not mount a tmpfs (a container without CAP_SYS_ADMIN)")
    try:
        path = disk / "ledger.sqlite3"
        pending = path.with_name(path.name + ".pending.jsonl")
        Ledger(path).close()
        filler = disk / "filler"
        run = [sys.executable, "-c", NOTES_ON_A_FULL_DISK, str(path)]
        subprocess.run([*run, "paid-A", "400", filler], capture_output=True, timeout=60, check=True)
        assert pending.read_bytes() == b"" or pending.read_bytes().endswith(b"\n")
        filler.unlink()  # space is back; a later process leaves its notes too
        subprocess.run([*run, "paid-B", "1"], capture_output=True, timeout=60, check=True)
        with Ledger(path) as again:
            assert again.flush(30)
            assert "paid-B-0" in {r.request_id for r in again.rows()}
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


@pytest.mark.timeout(60)
def test_a_full_disk_is_checked_for_damage_once_not_at_each_retry_of_a_kept_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each retry of a kept write (every second, at each write and flush) ran
    ``PRAGMA quick_check`` twice, a read of the whole file, for as long as the disk
    stayed full: 17% of a core on a 125 MB ledger (review of ledgerfix)."""
    from genwidgets.jobs.ledger import file

    checks = [0]
    real = file.quick_check

    def counted(conn: sqlite3.Connection) -> str:
        checks[0] += 1
        return real(conn)

    monkeypatch.setattr(file, "quick_check", counted)
    with (
        Ledger(tmp_path / "ledger.sqlite3", intent_wait=0) as led,
        disk_full_for_the_ledger(monkeypatch) as full,
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore", LedgerWarning)
        checks[0] = 0
        row = led.writes.record_intent(gateway=GATEWAY, endpoint=ENDPOINT, payload={})
        assert not led.flush(30)
        assert checks[0] == 1  # when the fault appears
        led.writes.record_handle(row, handle("during"))  # a new write: tried at once
        for _ in range(5):  # each flush waits for one more try of the kept write
            assert not led.flush(30)
        assert checks[0] == 1  # the retries check nothing
        full[0] = False
        assert led.flush(30)
        full[0] = True  # a later fault is checked when it appears
        status = Status.from_body({"status": "IN_QUEUE"}, endpoint=ENDPOINT, request_id="during")
        led.writes.record_status(GATEWAY, "during", status)
        assert not led.flush(30)
        assert checks[0] == 2
        full[0] = False
        assert led.flush(30)


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root")
@pytest.mark.timeout(60)
def test_a_really_full_disk_keeps_a_tasks_writes_until_space_comes_back(tmp_path: Path) -> None:
    """The full disk for real: a 2 MB tmpfs another program fills."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m,mode=700", "tmpfs", str(disk)])
    if mounted.returncode != 0:
        pytest.skip("this root may not mount a tmpfs (a container without CAP_SYS_ADMIN)")
    try:
        path = disk / "ledger.sqlite3"
        with Ledger(path, intent_wait=30) as led:
            filler = disk / "filler"
            with filler.open("wb") as out, pytest.raises(OSError):
                for _ in range(1024):  # 64 MB at most: the disk is full long before
                    out.write(b"x" * 65536)
                    out.flush()
            with pytest.warns(LedgerWarning, match="full"):
                for n in range(20):  # enough rows that the file must grow
                    row = led.writes.record_intent(
                        gateway=GATEWAY, endpoint=ENDPOINT, payload={"p": "x" * 4000}
                    )
                    led.writes.record_handle(row, handle(f"during-{n}"))
                assert not led.flush(30)
            filler.unlink()  # space is back
            with pytest.warns(LedgerWarning, match="can be written again"):
                assert led.flush(30)
            assert len(led.rows()) == 20
        with Ledger(path) as later:
            assert {r.request_id for r in later.rows()} == {f"during-{n}" for n in range(20)}
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


# --------------------------------------------------------------------------- point 3

OWNER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from genwidgets.jobs.ledger import Ledger
    from genwidgets.protocol.records import Handle
    led = Ledger(sys.argv[1])
    for i in range(int(sys.argv[2])):
        row = led.writes.record_intent(gateway="gw", endpoint="asset-get", payload={})
        led.writes.record_handle(row, Handle.from_body("asset-get", {"request_id": f"t{i}"}, "gw"))
    led.flush(30)
    print("leased", flush=True)
    sys.stdin.readline()
    """
)


@contextmanager
def live_owner(path: Path, tasks: int) -> Iterator[subprocess.Popen[str]]:
    """A second process that leases ``tasks`` unfinished tasks of gateway ``gw`` and
    lives until killed (or the block ends)."""
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER, str(path), str(tasks)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert owner.stdout is not None and owner.stdout.readline().strip() == "leased"
        yield owner
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait(30)
        for stream in (owner.stdout, owner.stdin):
            if stream is not None:
                stream.close()


@pytest.mark.timeout(90)
def test_resume_skips_tasks_a_live_process_polls_and_takes_them_when_it_stops(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ledger.sqlite3"
    with live_owner(path, 5) as owner:
        with Ledger(path) as other:
            assert other.claim_unfinished("gw") == ([], 5)  # a live owner: left to it
            owner.kill()
            owner.wait(30)
            rows, skipped = other.claim_unfinished("gw")  # its owner stopped: taken
            assert (sorted(r.request_id or "" for r in rows), skipped) == (
                [f"t{i}" for i in range(5)],
                0,
            )
            with Ledger(path) as third:  # ours now: a third ledger skips them
                assert third.claim_unfinished("gw") == ([], 5)
                forced, skipped = third.claim_unfinished("gw", force=True)
                assert (len(forced), skipped) == (5, 0)
        con = sqlite3.connect(path)
        assert con.execute("SELECT count(*) FROM tasks WHERE owner IS NOT NULL").fetchone() == (
            0,
        )  # closing gave the leases up
        con.close()


@pytest.mark.timeout(90)
def test_history_leaves_tasks_a_live_process_polls_to_it_and_takes_no_lease(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ledger.sqlite3"
    with live_owner(path, 3) as owner, Ledger(path) as other:
        rows = other.rows("gw")
        assert len(rows) == 3 and all(row.unfinished for row in rows)
        with pytest.warns(gw.LedgerWarning, match="3 unfinished task"):
            assert other.without_held("gw", rows) == []
        con = sqlite3.connect(path)
        owners = {o for (o,) in con.execute("SELECT DISTINCT owner FROM tasks")}
        con.close()
        assert len(owners) == 1  # still the live process's: a read claims nothing
        owner.kill()
        owner.wait(30)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # its owner stopped: no warning, all kept
            assert [r.request_id for r in other.without_held("gw", rows)] == [
                r.request_id for r in rows
            ]


def _state(pid: int) -> str:
    """The state letter ``/proc/<pid>/stat`` gives (R, S, Z ...)."""
    return Path(f"/proc/{pid}/stat").read_bytes().rpartition(b")")[2].split()[0].decode()


def kill_unreaped(owner: subprocess.Popen[str]) -> None:
    """Kill ``owner`` and leave it unreaped (a zombie), as a kernel killed under a
    server that has not collected it yet: ``kill(pid, 0)`` still answers."""
    owner.kill()  # no wait(), no poll(): either would reap it
    wait_until(lambda: _state(owner.pid) == "Z", 30, "the killed owner to become a zombie")
    os.kill(owner.pid, 0)  # still there to a plain liveness probe


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
@pytest.mark.timeout(90)
def test_a_killed_unreaped_kernel_is_dead_to_history_and_resume(tmp_path: Path) -> None:
    from genwidgets.jobs.ledger.lease import pid_alive

    path = tmp_path / "ledger.sqlite3"
    with live_owner(path, 3) as owner, Ledger(path) as other:
        assert pid_alive(owner.pid) and other.claim_unfinished("gw") == ([], 3)
        kill_unreaped(owner)
        assert not pid_alive(owner.pid)
        rows = other.rows("gw")
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # history: nothing left to "another live kernel"
            assert len(other.without_held("gw", rows)) == 3
        taken, skipped = other.claim_unfinished("gw")  # resume: all taken
        assert (sorted(r.request_id or "" for r in taken), skipped) == (["t0", "t1", "t2"], 0)


def test_the_heartbeat_keeps_going_while_writes_keep_the_writer_busy(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    with Ledger(path, lease_ttl=0.4) as led:  # a heartbeat every 0.1 s
        led.writes.record_handle(
            led.writes.record_intent(gateway="gw", endpoint=ENDPOINT, payload={}), handle("t")
        )
        assert led.flush(30)

        def beat() -> float:
            found = led.query("SELECT heartbeat FROM owners")
            return float(found[0][0]) if found else 0.0

        first = beat()
        deadline = time.monotonic() + 30
        i = 0
        while beat() <= first and time.monotonic() < deadline:  # a steady stream of writes:
            i += 1  # the queue is never idle for a whole heartbeat period
            led.writes.record_status("gw", "t", gw.Status("IN_PROGRESS", queue_position=i))
            led.flush(30)
        assert beat() > first


def test_rows_another_live_process_owns_keep_its_spelling_of_the_gateway(
    tmp_path: Path,
) -> None:
    """A process of an older version records under its spelling of the address and
    finds its rows by it: renaming a row it polls made its result land nowhere (the
    task stayed ``submitted``). Its rows keep their name while it lives; rows of a
    dead owner, released ones and finished ones are renamed, and a later client
    renames the rest once it has stopped."""
    path, spelt, normal = tmp_path / "ledger.sqlite3", "HTTPS://GW.test:443", "https://gw.test"
    with Ledger(path) as led:
        for rid in ("held", "dead", "done", "released"):
            row = led.writes.record_intent(gateway=spelt, endpoint=ENDPOINT, payload={})
            led.writes.record_handle(row, Handle.from_body(ENDPOINT, {"request_id": rid}, spelt))
        led.writes.record_intent(gateway=spelt, endpoint=ENDPOINT, payload={})  # in flight
        assert led.flush(30)
    con = sqlite3.connect(path)
    now = float(con.execute("SELECT max(handle_at) FROM tasks").fetchone()[0])
    con.execute("UPDATE tasks SET owner = 'other-host:1:live' WHERE request_id IN ('held', 'done')")
    con.execute("UPDATE tasks SET owner = 'other-host:2:dead' WHERE request_id = 'dead'")
    con.execute("UPDATE tasks SET owner = NULL WHERE request_id = 'released'")
    con.execute("UPDATE tasks SET state = 'finished', finished_at = ? WHERE request_id = 'done'",
                (now,))  # fmt: skip
    con.execute("INSERT INTO owners VALUES ('other-host:1:live', 'other-host', 1, ?)", (now,))
    con.execute("INSERT INTO owners VALUES ('other-host:2:dead', 'other-host', 2, ?)", (now - 999,))
    # the create in flight is another live process's of this host (its parent's pid)
    con.execute("UPDATE tasks SET pid = ? WHERE request_id IS NULL", (os.getppid(),))
    con.commit()

    def names() -> dict[str | None, str]:
        return dict(con.execute("SELECT request_id, gateway FROM tasks").fetchall())

    with Ledger(path, lease_ttl=120, clock=lambda: now) as new:
        renamed = new.writes.record_gateway_name(normal)
        assert renamed is not None and renamed.result(timeout=30) == 2
    # the live owner's rows (its finished one too: its copies are recorded by that
    # name) and the create in flight keep the older spelling
    assert names() == {
        "held": spelt,
        "dead": normal,
        "done": spelt,
        "released": normal,
        None: spelt,
    }
    stopped = subprocess.Popen([sys.executable, "-c", "pass"])
    stopped.wait(30)
    con.execute("UPDATE tasks SET pid = ? WHERE request_id IS NULL", (stopped.pid,))
    con.commit()
    with Ledger(path, lease_ttl=120, clock=lambda: now + 999) as later:  # they have stopped
        renamed = later.writes.record_gateway_name(normal)
        assert renamed is not None and renamed.result(timeout=30) == 3
    assert set(names().values()) == {normal}
    con.close()


@pytest.mark.parametrize(("age", "taken"), [(10.0, False), (500.0, True)])
def test_an_owner_on_another_host_is_alive_while_its_heartbeat_is_fresh(
    tmp_path: Path, age: float, taken: bool
) -> None:
    path = tmp_path / "ledger.sqlite3"
    with Ledger(path) as led:
        led.writes.record_handle(
            led.writes.record_intent(gateway="gw", endpoint=ENDPOINT, payload={}), handle("t")
        )
        assert led.flush(30)
    con = sqlite3.connect(path)
    now = float(con.execute("SELECT handle_at FROM tasks").fetchone()[0])
    con.execute("UPDATE tasks SET owner = 'other-host:1:x'")
    con.execute("INSERT INTO owners VALUES ('other-host:1:x', 'other-host', 1, ?)", (now - age,))
    con.commit()
    con.close()
    with Ledger(path, lease_ttl=120, clock=lambda: now) as other:
        rows, skipped = other.claim_unfinished("gw")
    assert (len(rows), skipped) == ((1, 0) if taken else (0, 1))


# --------------------------------------------------------------------------- a lock, a removed home

EXITS_WHILE_LOCKED = textwrap.dedent(
    """
    import sys
    from genwidgets.jobs.ledger import Ledger
    from genwidgets.protocol.records import Handle
    led = Ledger(sys.argv[1], busy_timeout=0.2, intent_wait=0)
    row = led.writes.record_intent(gateway="gw", endpoint="asset-get", payload={"n": 1})
    base = "https://alice:S3CRETPW@gw.example"  # a password in the base URL
    led.writes.record_handle(row, Handle.from_body("asset-get", {"request_id": "paid"}, base))
    print("exiting", flush=True)
    """
)


def made_on(sim: SimulatorServer, script: str) -> str:
    """``script`` with its task made on the gateway of the commands (``sim``'s), which
    lists only the pending notes of its own gateway."""
    return script.replace('gateway="gw"', f"gateway={normal_base_url(sim.base_url)!r}")


def exit_while_locked(
    script: str, path: Path, locked: Callable[[Path], Lock]
) -> tuple[Lock, subprocess.CompletedProcess[str]]:
    """``script`` run on a new ledger at ``path`` whose lock another process holds until
    after the script has exited: the lock, and how the script ended."""
    Ledger(path).close()
    lock = locked(path)
    ended = subprocess.run(
        [sys.executable, "-W", "always", "-c", script, str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ended.returncode == 0, ended.stderr
    return lock, ended


@pytest.mark.slow  # 8 to 18 s beside busy cores: the full command runs it
@pytest.mark.timeout(90)
def test_writes_a_lock_keeps_out_until_exit_are_said_kept_and_recorded_by_the_next_open(
    tmp_path: Path, locked: Callable[[Path], Lock]
) -> None:
    path = tmp_path / "ledger.sqlite3"
    lock, ended = exit_while_locked(EXITS_WHILE_LOCKED, path, locked)
    # the paid task is named, with how to follow it, and kept beside the ledger
    assert "LedgerWarning" in ended.stderr and "asset-get paid" in ended.stderr
    assert "client.job(endpoint, request_id)" in ended.stderr
    pending = path.with_name(path.name + ".pending.jsonl")
    assert "paid" in pending.read_text() and "S3CRETPW" not in pending.read_text()
    # a process that opens the ledger and exits while the lock still holds leaves the
    # pending file for the next one (it claimed it by a rename, and lost it)
    opens = "import sys; from genwidgets.jobs.ledger import Ledger; Ledger(sys.argv[1])"
    subprocess.run([sys.executable, "-c", opens, str(path)], capture_output=True, timeout=60)
    assert "paid" in pending.read_text()
    lock.release()
    with Ledger(path) as again:  # the next open records it: resume() follows it
        rows, _ = again.claim_unfinished("gw")
        assert [(r.request_id, r.state, r.payload) for r in rows] == [
            ("paid", "submitted", {"n": 1})
        ]
        assert "S3CRETPW" not in (rows[0].status_url or "") and "***@" in (rows[0].status_url or "")
    assert not pending.exists()
    with Ledger(path) as third:  # recorded once, never twice
        assert [r.request_id for r in third.rows("gw")] == ["paid"]


FAILS_WHILE_LOCKED = textwrap.dedent(
    """
    import sys
    from genwidgets.jobs.ledger import Ledger
    led = Ledger(sys.argv[1], busy_timeout=0.2, intent_wait=0)
    for nothing in (True, False):
        row = led.writes.record_intent(gateway="gw", endpoint="asset-get", payload={"n": 1})
        led.writes.record_create_failed(row, f"refused {nothing}", created_nothing=nothing)
    """
)


@pytest.mark.timeout(90)
def test_a_failed_create_a_lock_keeps_out_until_exit_is_recorded_as_its_process_knew_it(
    tmp_path: Path, locked: Callable[[Path], Lock]
) -> None:
    """A create known to have made nothing, written while a lock kept the ledger out
    until exit: its note was not kept, so the merged intent read "outcome unknown" (a
    task may exist and bill) where its process knew "not created"."""
    path = tmp_path / "ledger.sqlite3"
    exit_while_locked(FAILS_WHILE_LOCKED, path, locked)[0].release()
    with Ledger(path) as again:
        rows = again.rows("gw")
        assert [(r.state, r.error) for r in rows] == [
            ("outcome_unknown", "refused False"),
            ("not_created", "refused True"),
        ]
        assert rows[1].finished_at is not None and rows[0].finished_at is None
    assert not path.with_name(path.name + ".pending.jsonl").exists()


@pytest.mark.timeout(60)
def test_closing_a_ledger_a_lock_keeps_out_says_what_it_could_not_write(
    tmp_path: Path, locked: Callable[[Path], Lock]
) -> None:
    path = tmp_path / "ledger.sqlite3"
    Ledger(path).close()
    lock = locked(path)
    led = Ledger(path, busy_timeout=0.2, intent_wait=0)
    key = Secret("a-students-key").fingerprint()
    row = led.writes.record_intent(gateway=GATEWAY, endpoint=ENDPOINT, payload={}, fingerprint=key)
    led.writes.record_handle(row, handle("r-paid"))
    with pytest.warns(LedgerWarning, match=f"{ENDPOINT} r-paid") as caught:
        led.close()
    assert len(caught) == 1 and caught[0].filename == __file__
    lock.release()
    with Ledger(path) as again:
        found = again.get(GATEWAY, "r-paid")
        assert found is not None and found.state == "submitted"
        assert len(again.rows()) == 1  # the closed writer gave its copy up: no second row
        # kept with the key that made it: another key's client leaves it alone
        assert not found.made_with_another_key(key) and found.made_with_another_key("0" * 12)


@pytest.mark.timeout(90)
def test_a_close_never_waits_for_ever_on_an_appender_stopped_holding_the_pending_notes(
    tmp_path: Path, locked: Callable[[Path], Lock]
) -> None:
    """Another process stopped mid-append to the pending notes (Ctrl-Z, a hung NFS lock)
    kept their ``flock``: a close whose writes a lock kept out waited for it with no
    limit, so a kernel or command never exited (review-5 fault 3). It waits a few
    seconds, then appends its notes after the torn line, whole, and says so."""
    fcntl = pytest.importorskip("fcntl")
    path = tmp_path / "ledger.sqlite3"
    pending = path.with_name(path.name + ".pending.jsonl")
    Ledger(path).close()
    lock = locked(path)
    led = Ledger(path, busy_timeout=0.2, intent_wait=0)
    row = led.writes.record_intent(gateway=GATEWAY, endpoint=ENDPOINT, payload={"n": 1})
    led.writes.record_handle(row, handle("paid"))
    stopped = os.open(pending, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
    said: list[str] = []

    def close() -> None:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            led.close()
        said.extend(str(w.message) for w in caught)

    closing = threading.Thread(target=close, daemon=True)
    try:
        fcntl.flock(stopped, fcntl.LOCK_EX)
        os.write(stopped, b'{"ticket": 7, "gatew')  # stopped here, holding the lock
        closing.start()
        closing.join(60)
        assert not closing.is_alive(), "close() still waits for the pending file's lock"
    finally:
        os.close(stopped)  # the stopped appender lets go (an old close ends now)
        closing.join(60)
    assert f"{ENDPOINT} paid" in " ".join(said) and f"was kept in {pending}" in " ".join(said)
    lock.release()
    with Ledger(path) as again:
        assert again.flush(30)
        found = again.get(GATEWAY, "paid")
        assert found is not None and found.state == "submitted"


def _a_paid_task_held_elsewhere(pending: Path, request_id: str) -> None:
    """Notes of a create another host's process held, appended to ``pending``."""
    at = time.time() - 60
    where = {"pid": 404, "host": "another-host", "endpoint": ENDPOINT}
    intent = {"ticket": -1, "gateway": GATEWAY, "payload": "{}", "at": at, **where}
    paid = {"row": -1, "request_id": request_id, "at": at + 1, **where}
    with pending.open("a") as file:
        file.write("".join(json.dumps(note) + "\n" for note in (intent, paid)))


def test_the_merge_leaves_the_pending_notes_to_an_appender_holding_their_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The next open's merge checked that nobody had appended to the pending notes, then
    removed them, without the lock appenders take: a kernel's held create appended
    between the two was removed with the file, a paid task lost (review-14). Now the
    check and the removal wait for the lock (bounded): a holder past it keeps the
    file, which the next open records again."""
    fcntl = pytest.importorskip("fcntl")
    from genwidgets.jobs.ledger import file

    monkeypatch.setattr(file, "PENDING_LOCK_WAIT", 0.2)
    path = tmp_path / "ledger.sqlite3"
    pending = path.with_name(path.name + ".pending.jsonl")
    Ledger(path).close()
    _a_paid_task_held_elsewhere(pending, "merged")
    appender = os.open(pending, os.O_RDWR | os.O_APPEND)
    try:
        fcntl.flock(appender, fcntl.LOCK_EX)  # a kernel mid-append
        with Ledger(path) as led:
            assert led.flush(30) and led.get(GATEWAY, "merged") is not None
        os.write(
            appender, b'{"row": 7, "request_id": "appended", "endpoint": "asset-get", "at": 1}\n'
        )
    finally:
        os.close(appender)
    assert "appended" in pending.read_text()


def test_an_append_waiting_while_the_merge_removes_the_pending_notes_goes_to_a_new_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An appender that opened the pending notes and then waited for their lock while
    a merge removed them appended its notes to the removed file: a paid task lost."""
    fcntl = pytest.importorskip("fcntl")
    fds = Path("/proc/self/fd")
    if not fds.is_dir():
        pytest.skip("needs /proc to see the appender open the file")
    from genwidgets.jobs.ledger import file

    monkeypatch.setattr(file, "PENDING_LOCK_WAIT", 60.0)  # the appender waits for the merge
    path = tmp_path / "ledger.sqlite3"
    pending = path.with_name(path.name + ".pending.jsonl")
    _a_paid_task_held_elsewhere(pending, "merged")
    kept = file.LedgerFile(path, busy_timeout=1.0)
    merging = os.open(pending, os.O_RDONLY)
    said: list[str] = []
    try:
        fcntl.flock(merging, fcntl.LOCK_EX)  # the merge, checking the file
        held = [{"row": 7, "request_id": "appended", "endpoint": ENDPOINT, "at": time.time()}]
        appending = threading.Thread(target=lambda: said.append(kept.keep_pending(held)))
        appending.start()

        def opened() -> int:
            links = []
            for fd in fds.iterdir():
                with contextlib.suppress(OSError):  # closed meanwhile
                    links.append(os.readlink(fd))
            return links.count(os.path.realpath(pending))

        wait_until(lambda: opened() == 2, 30, "the appender to open the pending notes")
        pending.unlink()  # recorded: removed under the lock
    finally:
        os.close(merging)
    appending.join(30)
    assert said == [""] and "appended" in pending.read_text()


@pytest.mark.parametrize("restarted", [False, True], ids=["removed", "replaced"])
def test_a_ledger_removed_under_a_running_process_is_written_back_or_kept_beside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, restarted: bool
) -> None:
    monkeypatch.setattr("genwidgets.jobs.ledger.file.MOVED_CHECK_EVERY", 0.0)
    folder = tmp_path / "home"
    path = folder / "ledger.sqlite3"
    said = "replaced by another file.* records on in a copy" if restarted else "removed .* back"
    with Ledger(path, intent_wait=30) as led:
        led.writes.record_handle(
            led.writes.record_intent(gateway=GATEWAY, endpoint=ENDPOINT, payload={}),
            handle("before"),
        )
        assert led.flush(30)
        shutil.rmtree(folder)  # rm -rf ~/.genwidgets under a running kernel
        if restarted:
            Ledger(path).close()  # another kernel started a fresh ledger there first
        with pytest.warns(LedgerWarning, match=said) as caught:
            row = led.writes.record_intent(gateway=GATEWAY, endpoint=ENDPOINT, payload={})
        led.writes.record_handle(row, handle("after"))
        assert len(caught) == 1 and caught[0].filename == __file__
        # nothing this process knew is lost, and its row ids stay its own
        assert [r.request_id for r in led.rows()] == ["after", "before"]
    # the copies themselves (``detached-<time>-<pid>``), not the notes a slow write kept
    # beside one (a loaded machine), nor its journals
    copies = list(folder.glob("ledger.sqlite3.detached-*[0-9]"))
    assert [str(c) in str(caught[0].message) for c in copies] == [True] * restarted
    with Ledger(copies[0] if restarted else path) as kept:
        assert [r.request_id for r in kept.rows()] == ["after", "before"]
    if restarted:  # the other process's file got none of these writes (by row id, they
        with Ledger(path) as theirs:  # landed on its own rows)
            assert theirs.rows() == []


@pytest.mark.timeout(60)
def test_resume_while_another_process_holds_the_lock_waits_at_most_busy_timeout(
    tmp_path: Path, locked: Callable[[Path], Lock]
) -> None:
    path = tmp_path / "ledger.sqlite3"
    with Ledger(path) as led:
        row = led.writes.record_intent(gateway=GATEWAY, endpoint=ENDPOINT, payload={})
        led.writes.record_handle(row, handle("unfinished"))
    lock = locked(path)
    with Ledger(path, busy_timeout=0.2) as led:
        with pytest.warns(LedgerWarning, match="locked by another process"):
            rows, skipped = led.claim_unfinished(GATEWAY)
        assert ([r.request_id for r in rows], skipped) == (["unfinished"], 0)
        assert lock.holding  # it did not wait for the other process
        lock.release()
        assert led.flush(30)  # the claim stayed queued: the lease follows once it frees
        con = sqlite3.connect(path)
        assert con.execute("SELECT owner FROM tasks").fetchone() == (led.owner,)
        con.close()


@pytest.mark.timeout(120)
def test_resume_in_a_read_only_home_reattaches_in_memory_with_one_warning(
    home: Path, make_simulator: Callable[..., SimulatorServer]
) -> None:
    sim = make_simulator()
    path = home / "ledger.sqlite3"
    other = Secret("another-students-key").fingerprint()
    with Ledger(path) as led:  # a crashed kernel's unfinished tasks, one of another key
        for request_id, key in (("k1", None), ("k2", None), ("k3", other)):
            row = led.writes.record_intent(
                gateway=sim.base_url, endpoint=ENDPOINT, payload={}, fingerprint=key
            )
            led.writes.record_handle(row, handle(request_id))
    undo = _make_unwritable(path)
    try:
        client = gw.Client(sim.base_url, DEMO_KEY)
        try:
            with pytest.warns(LedgerWarning) as caught:
                jobs = client.resume()
            assert sorted(job.request_id for job in jobs) == ["k1", "k2"]
            said = [str(w.message) for w in caught if issubclass(w.category, LedgerWarning)]
            assert len(said) == 2 and "cannot be written" in said[0], said
            assert "1 unfinished task(s) in this ledger were created with another" in said[1]
        finally:
            client.close()
    finally:
        undo()


@pytest.mark.timeout(90)
def test_history_under_a_lock_says_so_and_names_the_tasks_left_in_the_pending_notes(
    tmp_path: Path, locked: Callable[[Path], Lock]
) -> None:
    """Under a lock held elsewhere, a history listed nothing and said nothing, and the
    warning at exit called the merge of the pending notes "statuses or results"."""
    path = tmp_path / "ledger.sqlite3"
    exit_while_locked(EXITS_WHILE_LOCKED, path, locked)  # "paid" waits in the notes
    led = Ledger(path, busy_timeout=0.2, intent_wait=0)
    row = led.writes.record_intent(gateway="gw", endpoint=ENDPOINT, payload={})
    led.writes.record_handle(row, handle("mine"))
    with pytest.warns(LedgerWarning) as caught:
        assert led.rows("gw") == []
    said = str(caught[0].message)
    assert "is locked by another process" in said and "still waiting in this process" in said
    assert f"{ENDPOINT} paid" in said and str(led._file.pending_path) in said
    with pytest.warns(LedgerWarning) as closing:
        led.close()
    said = str(closing[0].message)
    assert f"{ENDPOINT} mine" in said and "statuses or results:" not in said
    assert "notes another process kept in" in said


@pytest.mark.timeout(120)
def test_a_clients_history_under_a_lock_lists_its_own_jobs_of_this_session(
    home: Path, locked: Callable[[Path], Lock], make_simulator: Callable[..., SimulatorServer]
) -> None:
    sim = make_simulator()
    path = home / "ledger.sqlite3"
    Ledger(path).close()
    lock = locked(path)
    client = gw.Client(sim.base_url, DEMO_KEY, ledger=Ledger(path, busy_timeout=0.2))
    try:
        job = client.submit(ENDPOINT, {"Id": "asset-demo"})
        assert job.result(timeout=60).ok
        with pytest.warns(LedgerWarning, match="locked by another process"):
            assert [j.request_id for j in client.history()] == [job.request_id]
        with pytest.warns(LedgerWarning, match="locked by another process"):
            assert client.history(endpoint="another-endpoint") == []
        lock.release()
        assert client.ledger is not None and client.ledger.flush(30)
        assert [j.request_id for j in client.history()] == [job.request_id]  # once
    finally:
        client.close()
        if client.ledger is not None:
            client.ledger.close()


@pytest.mark.timeout(120)
def test_a_first_client_in_a_home_on_a_full_disk_lists_its_jobs_and_resumes_without_raising(
    home: Path, monkeypatch: pytest.MonkeyPatch, make_simulator: Callable[..., SimulatorServer]
) -> None:
    """A new home on a full disk: the file was made, its schema could not be written,
    and history()/resume() raised "no such table: tasks" (review of ledgerfix). Now
    they warn and list this session's jobs; the schema and rows follow once it can be
    written. Portable: the schema's write meets the full disk here."""
    from genwidgets.jobs.ledger import file

    full = [True]
    real = file.ensure_schema

    def ensure_schema(conn: sqlite3.Connection, path: Path) -> None:
        if full[0]:
            raise sqlite3.OperationalError("database or disk is full")
        real(conn, path)

    monkeypatch.setattr(file, "ensure_schema", ensure_schema)
    sim = make_simulator()
    with pytest.warns(LedgerWarning, match="cannot be written now"):
        client = gw.Client(sim.base_url, DEMO_KEY)
    try:
        job = client.submit(ENDPOINT, {"Id": "asset-demo"})
        assert job.result(timeout=60).ok
        with pytest.warns(LedgerWarning, match="cannot be written now"):
            assert [j.request_id for j in client.history()] == [job.request_id]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LedgerWarning)
            assert client.resume() == []  # its own job is finished: nothing to follow
        full[0] = False
        assert client.ledger is not None
        with pytest.warns(LedgerWarning, match="can be written again"):
            assert client.ledger.flush(30)
        assert [j.request_id for j in client.history()] == [job.request_id]  # once
    finally:
        client.close()


def quick_ledger_for_commands(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The commands' ledger, at ``path``, waits 0.2 s for a lock, not 5."""

    class Quick(Ledger):
        def __init__(self) -> None:
            super().__init__(path, busy_timeout=0.2)

    monkeypatch.setattr("genwidgets._client.Ledger", Quick)


@pytest.mark.timeout(90)
def test_the_history_command_under_a_lock_lists_the_tasks_left_in_the_pending_notes(
    gateway_env: SimulatorServer,
    tmp_path: Path,
    locked: Callable[[Path], Lock],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``genwidgets history`` under a lock printed nothing on stdout, not even the paid
    task a script that ended left in the pending notes."""
    from genwidgets.cli import main

    path = tmp_path / "home" / "ledger.sqlite3"
    exit_while_locked(made_on(gateway_env, EXITS_WHILE_LOCKED), path, locked)

    quick_ledger_for_commands(path, monkeypatch)
    assert main(["history"]) == 0
    said = capsys.readouterr()
    assert "locked by another process" in said.err and f"{ENDPOINT} paid" in said.err
    [line] = said.out.splitlines()
    assert f"{ENDPOINT} " in line and "pending notes" in line and line.rstrip().count(" paid ") == 1


HOLDS_A_PAID_TASK = textwrap.dedent(
    """
    import sys, time
    from genwidgets.jobs.ledger import Ledger
    from genwidgets.protocol.records import Handle
    led = Ledger(sys.argv[1], busy_timeout=0.2, intent_wait=0)
    row = led.writes.record_intent(gateway="gw", endpoint="asset-get", payload={"n": 1})
    led.writes.record_handle(row, Handle.from_body("asset-get", {"request_id": "paid"}, "http://gw"))
    print("held", flush=True)
    sys.stdin.readline()  # the test's word: write what is held, then say how many rows
    assert led.flush(30)
    print(len([r for r in led.rows() if r.request_id == "paid"]), flush=True)
    """
)


@contextmanager
def kernel_holding_a_paid_task(
    path: Path, script: str = HOLDS_A_PAID_TASK, request_id: str = "paid"
) -> Iterator[subprocess.Popen[str]]:
    """A process that created a task while another holds the ledger's lock, once its
    held writes are kept in the pending notes (as they are held, not at its exit)."""
    kernel = subprocess.Popen(
        [sys.executable, "-c", script.replace('"paid"', repr(request_id)), str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert kernel.stdout is not None and kernel.stdout.readline() == "held\n"
        pending = path.with_name(path.name + ".pending.jsonl")
        wait_until(
            lambda: pending.exists() and f'"{request_id}"' in pending.read_text(), 30, "kept notes"
        )
        yield kernel
    finally:
        if kernel.poll() is None:
            kernel.kill()
        kernel.communicate(timeout=30)


@pytest.mark.slow  # 8 to 18 s beside busy cores: the full command runs it
@pytest.mark.timeout(90)
def test_history_says_a_running_process_holds_its_kept_task_and_lists_only_its_gateways(
    gateway_env: SimulatorServer,
    tmp_path: Path,
    locked: Callable[[Path], Lock],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A running kernel keeps its held writes in the pending notes as they are held:
    ``genwidgets history`` called its paid task "left by a process that ended", and
    listed the notes of every gateway."""
    from genwidgets.cli import main
    from genwidgets.jobs.ledger.lease import HOST

    path = tmp_path / "home" / "ledger.sqlite3"
    exit_while_locked(EXITS_WHILE_LOCKED, path, locked)  # "paid", of another gateway
    with kernel_holding_a_paid_task(
        path, made_on(gateway_env, HOLDS_A_PAID_TASK), "live"
    ) as kernel:
        quick_ledger_for_commands(path, monkeypatch)
        assert main(["history"]) == 0
        said = capsys.readouterr()
        [line] = said.out.splitlines()
        assert " live " in line and f"held by process {kernel.pid} on {HOST}" in line
        assert "it may still be running" in line and "ended" not in line
    assert f"{ENDPOINT} live" in said.err and f"{ENDPOINT} paid" not in said.err
    assert "earlier process" not in said.err


@pytest.mark.timeout(90)
def test_history_lists_an_ended_processs_kept_task_whose_note_spells_the_gateway_the_old_way(
    tmp_path: Path,
    locked: Callable[[Path], Lock],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A note an older version kept names the gateway as it was written then: with its
    password in clear, or in upper case with a trailing ``/``. ``genwidgets history``
    under a lock hid those paid tasks (listed as this gateway's once the notes were
    recorded), and said of a process this host knows has ended that "it may still be
    running" (review-14 fault 3)."""
    from genwidgets.cli import main
    from genwidgets.jobs.ledger.lease import HOST

    path = tmp_path / "home" / "ledger.sqlite3"
    monkeypatch.setenv("GENWIDGETS_HOME", str(path.parent))
    monkeypatch.setenv("GENWIDGETS_BASE_URL", "http://alice:s3cret@127.0.0.1:9")
    monkeypatch.setenv("GENWIDGETS_API_KEY", DEMO_KEY)
    Ledger(path).close()
    ended = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    where = {"pid": int(ended.stdout), "host": HOST, "endpoint": ENDPOINT}
    at = time.time() - 60
    gateways = {
        "paid-clear": "http://alice:s3cret@127.0.0.1:9",
        "paid-spelt": "HTTP://alice:***@127.0.0.1:9/",
        "paid-other": "http://alice:***@127.0.0.1:8",  # another gateway's: not listed
    }
    notes: list[dict[str, Any]] = []
    for ticket, (request_id, gateway) in enumerate(gateways.items(), start=1):
        notes.append({"ticket": -ticket, "gateway": gateway, "payload": "{}", "at": at, **where})
        notes.append({"row": -ticket, "request_id": request_id, "at": at + 1, **where})
    pending = path.with_name(path.name + ".pending.jsonl")
    pending.write_text("".join(json.dumps(note) + "\n" for note in notes))
    locked(path)
    quick_ledger_for_commands(path, monkeypatch)
    assert main(["history"]) == 0
    said = capsys.readouterr()
    listed = [rid for rid in gateways if any(f" {rid} " in line for line in said.out.splitlines())]
    assert listed == ["paid-clear", "paid-spelt"], said.out
    held = f"held by process {where['pid']} on {HOST}: it has ended; recorded at the next open"
    assert said.out.count(held) == 2 and "may still be running" not in said.out
    assert "a process that has ended left in" in said.err and "may still be running" not in said.err
    assert f"{ENDPOINT} paid-spelt" in said.err and "paid-other" not in said.err


@pytest.mark.timeout(90)
def test_a_kernel_killed_while_a_lock_holds_its_writes_back_loses_no_paid_task(
    tmp_path: Path, locked: Callable[[Path], Lock]
) -> None:
    """The held writes lived only in the process until close or exit: ``kill -9``
    while another process held the lock lost the paid task for good."""
    path = tmp_path / "ledger.sqlite3"
    Ledger(path).close()
    lock = locked(path)
    with kernel_holding_a_paid_task(path) as kernel:
        kernel.kill()  # SIGKILL: no atexit, no close
        kernel.wait(30)
    lock.release()
    with Ledger(path) as fresh:
        assert [(r.request_id, r.state) for r in fresh.rows()] == [("paid", "submitted")]
        rows, _ = fresh.claim_unfinished("gw")
        assert [r.request_id for r in rows] == ["paid"]  # resume() follows it


@pytest.mark.timeout(90)
def test_held_writes_another_process_recorded_first_are_not_recorded_twice(
    tmp_path: Path, locked: Callable[[Path], Lock]
) -> None:
    """The kept notes recorded by another process while their own process lives on:
    its intent, written once the lock frees, finds its row instead of making a second."""
    from genwidgets.jobs.ledger.file import merge_notes

    path = tmp_path / "ledger.sqlite3"
    Ledger(path).close()
    with (
        Ledger(path) as other,
        other.transaction() as conn,  # the lock, held here
        kernel_holding_a_paid_task(path) as kernel,
    ):
        pending = path.with_name(path.name + ".pending.jsonl")
        notes = [json.loads(line) for line in pending.read_text().splitlines()]
        assert merge_notes(notes)(conn) == 1  # the next open's merge, played first
        conn.execute("COMMIT")
        conn.execute("BEGIN")  # the transaction's end commits nothing more
        assert kernel.stdin is not None and kernel.stdout is not None
        kernel.stdin.write("go\n")
        kernel.stdin.flush()
        assert kernel.stdout.readline() == "1\n"
    with Ledger(path) as fresh:
        assert [(r.request_id, r.state) for r in fresh.rows()] == [("paid", "submitted")]


#: a kernel whose held intents a lock keeps out; told "go", it gets the first create's
#: handle and the second's failure (both held too), then waits to be killed
HOLDS_INTENTS_THEN_THEIR_ENDS = textwrap.dedent(
    """
    import sys
    from genwidgets.jobs.ledger import Ledger
    from genwidgets.protocol.records import Handle
    led = Ledger(sys.argv[1], busy_timeout=0.2, intent_wait=0)
    paid = led.writes.record_intent(gateway="gw", endpoint="asset-get", payload={"n": 1})
    refused = led.writes.record_intent(gateway="gw", endpoint="asset-get", payload={"n": 2})
    print("held", flush=True)
    sys.stdin.readline()
    led.writes.record_handle(paid, Handle.from_body("asset-get", {"request_id": "paid"}, "http://gw"))
    led.writes.record_create_failed(refused, "429: too many", created_nothing=True)
    print("answered", flush=True)
    sys.stdin.readline()
    """
)


@pytest.mark.timeout(120)
def test_a_held_handle_reaches_the_row_another_processs_merge_made_of_its_intent(
    tmp_path: Path,
) -> None:
    """Another process's open merged a held intent's note (and removed the pending file)
    while its kernel still waited for the lock; the create's handle, kept next, named the
    intent by its ticket alone, so after ``kill -9`` the next open found no row for it:
    the paid task read ``outcome_unknown`` with no request id (review-21 fault 1)."""
    from genwidgets.jobs.ledger.file import merge_notes

    path = tmp_path / "ledger.sqlite3"
    pending = path.with_name(path.name + ".pending.jsonl")
    Ledger(path).close()
    script = HOLDS_INTENTS_THEN_THEIR_ENDS
    kernel = subprocess.Popen(
        [sys.executable, "-c", script, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert kernel.stdin is not None and kernel.stdout is not None
    try:
        with Ledger(path) as other, other.transaction() as conn:  # the lock, held here
            assert kernel.stdout.readline() == "held\n"
            wait_until(
                lambda: pending.exists() and pending.read_text().count('"ticket"') == 2,
                30,
                "the intents kept",
            )
            notes = [json.loads(line) for line in pending.read_text().splitlines()]
            merge_notes(notes)(conn)  # another open's merge, which then removes the file
            pending.unlink()
            conn.execute("COMMIT")
            conn.execute("BEGIN IMMEDIATE")  # and the lock is held again
            kernel.stdin.write("go\n")
            kernel.stdin.flush()
            assert kernel.stdout.readline() == "answered\n"
            wait_until(
                lambda: pending.exists() and '"failed"' in pending.read_text(), 30, "ends kept"
            )
            kernel.kill()  # SIGKILL: its writes never reach the file
            kernel.wait(30)
    finally:
        if kernel.poll() is None:
            kernel.kill()
        kernel.communicate(timeout=30)
    with Ledger(path) as fresh:
        assert fresh.flush(30)
        rows = sorted((r.payload["n"], r.request_id, r.state) for r in fresh.rows())
    assert rows == [(1, "paid", "submitted"), (2, None, "not_created")]


def test_two_processes_held_creates_in_one_pending_file_each_keep_their_paid_task(
    tmp_path: Path,
) -> None:
    """Every process numbers its intent tickets from -1: the notes of two kernels whose
    first creates a lock held, interleaved in one pending file, were merged by ticket
    alone, so one paid task landed on the other's row and the other was recorded
    nowhere, and a third's failed create missed its row (review-14 fault 1)."""
    path = tmp_path / "ledger.sqlite3"
    Ledger(path).close()
    at = time.time() - 60
    where = {"host": "another-host", "endpoint": ENDPOINT}

    def intent(pid: int, who: str) -> dict[str, Any]:
        payload = json.dumps({"who": who})
        return {"ticket": -1, "gateway": GATEWAY, "payload": payload, "pid": pid, "at": at, **where}

    def paid(pid: int, request_id: str) -> dict[str, Any]:
        return {"row": -1, "request_id": request_id, "pid": pid, "at": at + 1, **where}

    refused = {"failed": -1, "error": "refused", "created_nothing": True, "pid": 303, "at": at + 1}
    notes = [intent(101, "A"), intent(202, "B"), intent(303, "C")]
    notes += [paid(101, "paid-A"), paid(202, "paid-B"), {**refused, **where}]
    pending = path.with_name(path.name + ".pending.jsonl")
    pending.write_text("".join(json.dumps(note) + "\n" for note in notes))
    with Ledger(path) as led:
        assert led.flush(30)
        rows = led.rows()
    assert sorted((r.payload["who"], r.request_id, r.state) for r in rows) == [
        ("A", "paid-A", "submitted"),
        ("B", "paid-B", "submitted"),
        ("C", None, "not_created"),
    ]
    assert not pending.exists()


def test_a_kept_write_stays_kept_when_opening_the_file_again_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write kept on a full disk, whose retry could not open the file again (too many
    open files: SQLite's CANTOPEN, raised as a LedgerError), was given up for good
    (and "can be written again" said)."""
    from genwidgets.jobs.ledger.file import LedgerFile

    real_connect = LedgerFile._connect
    no_files = [False]

    def connect(self: LedgerFile) -> sqlite3.Connection:
        if no_files[0]:
            cause = sqlite3.OperationalError("unable to open database file")
            cause.sqlite_errorcode = 14  # type: ignore[attr-defined]
            raise LedgerError(f"cannot open the ledger {self.path}: {cause}") from cause
        return real_connect(self)

    monkeypatch.setattr(LedgerFile, "_connect", connect)
    with (
        Ledger(tmp_path / "ledger.sqlite3", intent_wait=30) as led,
        disk_full_for_the_ledger(monkeypatch) as full,
    ):
        with pytest.warns(LedgerWarning, match="disk is full"):
            row = led.writes.record_intent(gateway=GATEWAY, endpoint=ENDPOINT, payload={"n": 1})
        led.writes.record_handle(row, handle("kept"))
        no_files[0] = True  # each retry opens the file anew (the fault reset it)
        assert not led.flush(30)
        full[0] = False
        assert not led.flush(30)  # still no file to open: kept, not given up
        no_files[0] = False
        with pytest.warns(LedgerWarning, match="can be written again"):
            assert led.flush(30)
        found = led.get(GATEWAY, "kept")
        assert found is not None and found.payload == {"n": 1} and led.dropped == 0


@pytest.mark.timeout(90)
def test_reads_under_a_lock_that_keeps_readers_out_wait_once_then_say_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each read waited ``busy_timeout`` again and ended in a bare "database is locked"
    (``genwidgets history`` took three waits): the first read waits, then reads try
    without waiting until one gets through, and a flush or close waits only what is
    left of ``busy_timeout`` since the writes began to be held."""
    from genwidgets.jobs.ledger.store import AFTER_A_WAIT
    from genwidgets.jobs.ledger.writer import WriteQueue

    path = tmp_path / "ledger.sqlite3"
    Ledger(path).close()
    lock = Lock(path, tmp_path, HOLDER_OF_READS)
    waits: list[float | None] = []
    real_flush = WriteQueue.flush

    def flush(self: WriteQueue, timeout: float | None) -> bool:
        waits.append(timeout)
        return real_flush(self, timeout)

    monkeypatch.setattr(WriteQueue, "flush", flush)
    try:
        led = Ledger(path, busy_timeout=1)
        with pytest.raises(LedgerError, match="locked by another process"):
            led.query("SELECT count(*) FROM tasks")  # waits busy_timeout, once
        assert led.locked_out and led.query("PRAGMA busy_timeout") == [(0,)]
        with (
            pytest.warns(LedgerWarning, match="locked by another process"),
            pytest.raises(LedgerError, match="locked by another process"),
        ):
            led.rows()
        assert waits == [AFTER_A_WAIT]  # held longer than busy_timeout: no second wait
    finally:
        lock.release()
    assert led.rows() == [] and not led.locked_out
    assert led.query("PRAGMA busy_timeout") == [(1000,)]
    led.close()


@pytest.mark.timeout(90)
def test_the_history_command_under_a_lock_that_keeps_readers_out_shows_the_pending_notes(
    gateway_env: SimulatorServer,
    tmp_path: Path,
    locked: Callable[[Path], Lock],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """It ended in "cannot read the ledger: database is locked", after three waits."""
    from genwidgets.cli import EXIT_NOT_DONE, main

    path = tmp_path / "home" / "ledger.sqlite3"
    lock, _ = exit_while_locked(made_on(gateway_env, EXITS_WHILE_LOCKED), path, locked)
    lock.release()  # nobody opened the ledger since: its paid task is in the notes only
    (tmp_path / "again").mkdir()

    quick_ledger_for_commands(path, monkeypatch)
    readers_out = Lock(path, tmp_path / "again", HOLDER_OF_READS)
    try:
        assert main(["history"]) == EXIT_NOT_DONE
    finally:
        readers_out.release()
    said = capsys.readouterr()
    assert "only the pending notes are shown" in said.err and "locked by another" in said.err
    assert "pending notes" in said.out and " paid " in said.out


@pytest.mark.timeout(90)
def test_a_create_queued_behind_a_heartbeat_the_lock_holds_is_kept_at_once(
    tmp_path: Path, locked: Callable[[Path], Lock], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lease heartbeat waiting for a lock held elsewhere did not count as held for
    the first ``busy_timeout``: a create queued behind it waited ``intent_wait``, was
    sent, and its notes were not kept, so ``kill -9`` then lost the paid task.

    A heartbeat waiting now is one made and not applied: a flag set once the lock was
    held missed the one made between the lock and the flag on a loaded machine, which
    then waited ``busy_timeout`` and made no other (ledgermend3)."""
    from genwidgets.jobs.ledger.lease import Leases

    real_heartbeat, not_applied = Leases.heartbeat, set[Callable[..., None]]()

    def heartbeat(self: Leases) -> Callable[[sqlite3.Connection], None] | None:
        op = real_heartbeat(self)
        if op is None:
            return None

        def beat(conn: sqlite3.Connection) -> None:
            op(conn)
            not_applied.discard(beat)

        not_applied.add(beat)
        return beat

    monkeypatch.setattr(Leases, "heartbeat", heartbeat)
    path = tmp_path / "ledger.sqlite3"
    # a heartbeat every 0.1 s; SQLite waits up to 60 s for the lock; a create 5 s for its row
    with Ledger(path, lease_ttl=0.4, busy_timeout=60, intent_wait=5) as led:
        led.writes.record_handle(
            led.writes.record_intent(gateway="gw", endpoint=ENDPOINT, payload={}), handle("first")
        )
        assert led.flush(30)  # it holds a lease: the heartbeat runs
        lock = locked(path)
        # from here no heartbeat can be applied: one made and not applied meets the lock
        wait_until(lambda: bool(not_applied), 30, "a heartbeat meeting the lock")
        row = led.writes.record_intent(gateway="gw", endpoint=ENDPOINT, payload={"n": 2})
        led.writes.record_handle(row, handle("second"))
        pending = path.with_name(path.name + ".pending.jsonl")
        # well before busy_timeout (60 s), when a heartbeat's wait did not count as held
        wait_until(lambda: pending.exists() and "second" in pending.read_text(), 20, "kept notes")
        lock.release()
        assert led.flush(30)
        assert sorted(r.request_id or "" for r in led.rows()) == ["first", "second"]


@pytest.mark.timeout(120)
def test_held_writes_are_written_in_linear_work_once_the_lock_frees(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each held write, once applied, rebuilt the list of kept notes and looked for its
    copy by a scan of the whole table: 12,000 held writes took 19.5 s to write, most of
    them left behind at close. Counted, not timed: the writer thread's Python lines and
    SQLite's steps per write stay the same however many writes were held."""
    from genwidgets.jobs.ledger.file import LedgerFile

    steps = [0]  # SQLite's virtual-machine steps on the writer's connection, in thousands
    real_open = LedgerFile.open_for_writes

    def open_for_writes(self: LedgerFile) -> sqlite3.Connection:
        conn = real_open(self)
        conn.set_progress_handler(lambda: steps.__setitem__(0, steps[0] + 1) or 0, 1000)
        return conn

    monkeypatch.setattr(LedgerFile, "open_for_writes", open_for_writes)
    lines = [0]  # lines run on the writer thread

    def count_lines(frame: Any, event: str, arg: Any) -> Any:
        lines[0] += event == "line"
        return count_lines

    def trace_the_writer(frame: Any, event: str, arg: Any) -> Any:
        name = threading.current_thread().name
        return (
            count_lines if name.startswith("genwidgets-ledger") and "keeper" not in name else None
        )

    def work_per_write(held: int) -> tuple[float, float]:
        path = tmp_path / f"ledger-{held}.sqlite3"
        threading.settrace(trace_the_writer)  # threads started from here on
        try:
            led = Ledger(path, busy_timeout=60, intent_wait=0)
        finally:
            threading.settrace(None)
        try:
            assert led.flush(30)
            with Ledger(path, busy_timeout=60) as other, other.transaction():  # the lock
                for i in range(held):
                    led.writes.record_intent(gateway="gw", endpoint=ENDPOINT, payload={"n": i})
                pending = path.with_name(path.name + ".pending.jsonl")
                wait_until(
                    lambda: pending.exists() and pending.read_text().count("\n") >= held,
                    60,
                    "the held writes kept",
                )
                lines[0] = steps[0] = 0
            assert led.flush(60)
            return lines[0] / held, steps[0] / held
        finally:
            led.close()

    few_lines, few_steps = work_per_write(200)
    many_lines, many_steps = work_per_write(1600)
    assert many_lines < few_lines + 20, (few_lines, many_lines)
    assert many_steps < few_steps + 1, (few_steps, many_steps)


def test_a_ledger_in_a_folder_that_cannot_be_written_promises_no_file_beside_it(
    tmp_path: Path,
) -> None:
    """Explorer (pipes) defect 5: on a read-only home the warning said the created tasks
    were kept in ``ledger.sqlite3.pending.jsonl``, in the very folder that cannot be
    written; it says so instead, and that each is named in a warning at exit."""
    folder = tmp_path / "home"
    folder.mkdir()
    path = folder / "ledger.sqlite3"
    led = Ledger(path, intent_wait=30)
    undo_file = _make_unwritable(path)
    undo_folder = _make_unwritable(folder)
    try:
        with pytest.warns(LedgerWarning, match="cannot be written now") as caught:
            led.writes.record_handle(
                led.writes.record_intent(gateway=GATEWAY, endpoint=ENDPOINT, payload={}),
                handle("paid"),
            )
    finally:
        undo_folder()
        undo_file()
    with pytest.warns(LedgerWarning, match="can be written again"):  # kept, then written
        led.close()
    said = str(caught[0].message)
    assert "pending.jsonl" not in said
    assert "Its folder cannot be written either, so nothing is kept beside it" in said
