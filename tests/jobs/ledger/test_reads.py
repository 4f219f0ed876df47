"""The ledger's reads as a piece of their own: composed by hand from the other pieces,
without the Ledger facade, they read what the recorder wrote (each piece owns its state)."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from genwidgets.jobs.ledger.file import LedgerFile
from genwidgets.jobs.ledger.lease import Leases
from genwidgets.jobs.ledger.reads import Reader
from genwidgets.jobs.ledger.writer import WriteQueue
from genwidgets.jobs.ledger.writes import SENDING, LedgerWrites
from genwidgets.protocol.records import Handle

GATEWAY = "https://gw.test"
ENDPOINT = "asset-get"


@dataclass
class Pieces:
    file: LedgerFile
    queue: WriteQueue
    recorder: LedgerWrites
    reader: Reader


def compose(path: Path, clock: list[float]) -> Pieces:
    file = LedgerFile(path, busy_timeout=5.0)
    leases = Leases(file, ttl=120.0, clock=lambda: clock[0])
    queue = WriteQueue(
        file.open_for_writes,
        file.on_fault,
        name="test-reads",
        idle=leases.heartbeat,
        idle_every=30.0,
        exit_wait=5.0,
    )
    recorder = LedgerWrites(file, queue, leases, intent_wait=30.0, clock=lambda: clock[0])
    reader = Reader(file, queue, recorder, stale_after=60.0, clock=lambda: clock[0])
    return Pieces(file, queue, recorder, reader)


@pytest.fixture
def pieces(tmp_path: Path) -> Iterator[Pieces]:
    made = compose(tmp_path / "ledger.sqlite3", [1_000_000.0])
    yield made
    made.queue.stop(5.0)
    made.file.close()


def intent(pieces: Pieces) -> int:
    return pieces.recorder.record_intent(gateway=GATEWAY, endpoint=ENDPOINT, payload={})


def test_the_reader_reads_what_the_recorder_wrote_newest_first(pieces: Pieces) -> None:
    first, second = intent(pieces), intent(pieces)
    for row_id, request_id in ((first, "r1"), (second, "r2")):
        handle = Handle.from_body(ENDPOINT, {"request_id": request_id}, GATEWAY)
        pieces.recorder.record_handle(row_id, handle).result(timeout=30)
    assert [r.request_id for r in pieces.reader.rows(GATEWAY)] == ["r2", "r1"]
    assert [r.id for r in pieces.reader.by_ids((first, second))] == [second, first]
    assert pieces.reader.get(GATEWAY, "r1") == pieces.reader.row(first)


def test_a_submitting_row_is_lost_once_its_sender_no_longer_sends_it(
    pieces: Pieces, tmp_path: Path
) -> None:
    row_id = intent(pieces)
    assert pieces.recorder.sending(row_id)
    row = pieces.reader.row(row_id)
    assert row is not None and row.state == "submitting"  # this process sends it now
    other = compose(tmp_path / "ledger.sqlite3", [1_000_000.0])  # same file, same process
    try:
        assert other.recorder.sending(row_id)  # what is in flight is per file, per process
        SENDING.settle(str((tmp_path / "ledger.sqlite3").resolve()), row_id)
        assert not other.recorder.sending(row_id)
        row = other.reader.row(row_id)  # our own pid, not sending: the outcome is unknown
        assert row is not None and row.state == "outcome_unknown"
        assert row.pid == os.getpid()
    finally:
        other.queue.stop(5.0)
        other.file.close()


def test_a_row_a_foreign_tool_damaged_is_skipped_not_fatal(pieces: Pieces) -> None:
    good, bad = intent(pieces), intent(pieces)
    con = sqlite3.connect(pieces.file.path)
    con.execute("UPDATE tasks SET outputs = '{not json' WHERE id = ?", (bad,))
    con.commit()
    con.close()
    assert [r.id for r in pieces.reader.by_ids((good, bad))] == [good]
