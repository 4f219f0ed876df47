"""The ledger's reads: they read what its writes wrote, newest first, each row with its
derived state; a row a foreign tool damaged is skipped."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from genwidgets.jobs.ledger import Ledger
from genwidgets.jobs.ledger.writes import SENDING
from genwidgets.protocol.records import Handle, Result

GATEWAY = "https://gw.test"
ENDPOINT = "asset-get"


def compose(path: Path, clock: list[float]) -> Ledger:
    return Ledger(path, intent_wait=30.0, clock=lambda: clock[0])


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    made = compose(tmp_path / "ledger.sqlite3", [1_000_000.0])
    yield made
    made.close()


def intent(ledger: Ledger) -> int:
    return ledger.writes.record_intent(gateway=GATEWAY, endpoint=ENDPOINT, payload={})


def test_the_reader_reads_what_the_recorder_wrote_newest_first(ledger: Ledger) -> None:
    first, second = intent(ledger), intent(ledger)
    for row_id, request_id in ((first, "r1"), (second, "r2")):
        handle = Handle.from_body(ENDPOINT, {"request_id": request_id}, GATEWAY)
        ledger.writes.record_handle(row_id, handle).result(timeout=30)
    assert [r.request_id for r in ledger.rows(GATEWAY)] == ["r2", "r1"]
    assert [r.id for r in ledger.rows(GATEWAY, limit=1)] == [second]
    assert ledger.get(GATEWAY, "r1") == ledger.row(first)


def test_a_submitting_row_is_lost_once_its_sender_no_longer_sends_it(
    ledger: Ledger, tmp_path: Path
) -> None:
    row_id = intent(ledger)
    assert ledger.writes.sending(row_id)
    row = ledger.row(row_id)
    assert row is not None and row.state == "submitting"  # this process sends it now
    other = compose(tmp_path / "ledger.sqlite3", [1_000_000.0])  # same file, same process
    try:
        assert other.writes.sending(row_id)  # what is in flight is per file, per process
        SENDING.discard((str((tmp_path / "ledger.sqlite3").resolve()), row_id))
        assert not other.writes.sending(row_id)
        row = other.row(row_id)  # our own pid, not sending: the outcome is unknown
        assert row is not None and row.state == "outcome_unknown"
        assert row.pid == os.getpid()
    finally:
        other.close()


def test_a_row_a_foreign_tool_damaged_is_skipped_not_fatal(ledger: Ledger) -> None:
    good, bad = intent(ledger), intent(ledger)
    con = sqlite3.connect(ledger.path)
    con.execute("UPDATE tasks SET outputs = '{not json' WHERE id = ?", (bad,))
    con.commit()
    con.close()
    assert [r.id for r in ledger.rows(GATEWAY)] == [good]
    assert ledger.row(bad) is None


def test_a_row_with_a_column_of_the_wrong_type_is_skipped_with_a_log_line(
    ledger: Ledger, caplog: pytest.LogCaptureFixture
) -> None:
    good, bad, worse = intent(ledger), intent(ledger), intent(ledger)
    con = sqlite3.connect(ledger.path)  # as an edit by hand or another tool may leave them
    con.execute("UPDATE tasks SET submitted_at = 'yesterday' WHERE id = ?", (bad,))
    con.execute("UPDATE tasks SET queue_position = 'first' WHERE id = ?", (worse,))
    con.commit()
    con.close()
    with caplog.at_level("WARNING", logger="genwidgets"):
        assert [r.id for r in ledger.rows(GATEWAY)] == [good]
    assert f"skipped ledger row {bad}" in caplog.text and "submitted_at" in caplog.text
    assert f"skipped ledger row {worse}" in caplog.text


def test_a_row_with_text_that_is_not_utf8_is_read_replaced_and_said_never_fatal(
    ledger: Ledger, caplog: pytest.LogCaptureFixture
) -> None:
    """Two bytes of one row's payload gone bad (a bad sector: ``PRAGMA quick_check``
    still says ok) made every read raise, so history() and resume() failed for all."""
    rows = [intent(ledger), intent(ledger)]
    for row_id, request_id in zip(rows, ("bad", "good"), strict=True):
        handle = Handle.from_body(ENDPOINT, {"request_id": request_id}, GATEWAY)
        ledger.writes.record_handle(row_id, handle).result(timeout=30)
    con = sqlite3.connect(ledger.path)  # {"p": "<0xff>"}
    con.execute(
        "UPDATE tasks SET payload = CAST(X'7b2270223a2022ff227d' AS TEXT) WHERE id = ?", (rows[0],)
    )
    con.commit()
    con.close()
    with caplog.at_level("WARNING", logger="genwidgets"):
        found = ledger.rows(GATEWAY)
        assert [(r.request_id, r.payload) for r in found] == [
            ("good", {}),
            ("bad", {"p": "\ufffd"}),
        ]
        taken, _ = ledger.claim_unfinished(GATEWAY)  # resume() follows both
        assert sorted(r.request_id for r in taken) == ["bad", "good"]
    assert (
        f"ledger row {rows[0]} of {ledger.path} holds text that is not UTF-8 (payload)"
        in caplog.text
    )


def test_writes_that_rewrite_a_rows_outputs_keep_its_bytes_that_are_not_utf8(
    ledger: Ledger,
) -> None:
    """A row whose saved path held bytes that are not UTF-8: recording another output's
    copy (or the result) read the outputs back with U+FFFD in their place and wrote
    that, changing the file for good, in silence (review of ledgerfix). They are kept as
    their escapes, which read back as the path with those bytes (review-5)."""
    row = intent(ledger)
    ledger.writes.record_handle(row, Handle.from_body(ENDPOINT, {"request_id": "t1"}, GATEWAY))
    bad = b'[{"index": 0, "path": "/data/out-\xff\xfe.png", "sha256": null, "size": 3}]'
    assert ledger.flush(30)
    con = sqlite3.connect(ledger.path)
    con.execute("UPDATE tasks SET outputs = CAST(? AS TEXT) WHERE id = ?", (bad, row))
    con.commit()

    def on_disk() -> bytes:
        con.text_factory = bytes
        return bytes(con.execute("SELECT outputs FROM tasks WHERE id = ?", (row,)).fetchone()[0])

    try:
        assert ledger.writes.record_output_path(GATEWAY, "t1", 1, None, error="down").result(30)
        assert b"/data/out-\\udcff\\udcfe.png" in on_disk() and b'"index": 1' in on_disk()
        urls = [{"url": f"{GATEWAY}/files/{n}.png"} for n in (0, 1)]
        result = Result.from_body({"request_id": "t1", "status": "COMPLETED", "outputs": urls})
        assert ledger.writes.record_result(GATEWAY, "t1", result).result(30)
        assert b"\xef\xbf\xbd" not in on_disk()
        found = ledger.get(GATEWAY, "t1")
        assert found is not None and found.state == "finished"
        assert os.fsencode(found.outputs[0]["path"]) == b"/data/out-\xff\xfe.png"
    finally:
        con.close()


def test_a_copy_under_a_folder_whose_name_is_not_utf8_is_recorded_as_on_disk(
    ledger: Ledger, tmp_path: Path
) -> None:
    """A home under a Latin-1 folder (``caf\\xe9``: Python holds a surrogate): the path was
    written as the raw byte, read back with U+FFFD, named no file, and the copy counted as
    gone, downloaded again at every resume (review-5 fault 1)."""
    folder = tmp_path / os.fsdecode(b"caf\xe9")
    folder.mkdir()
    saved = folder / "out.png"
    saved.write_bytes(b"png")
    row = intent(ledger)
    ledger.writes.record_handle(row, Handle.from_body(ENDPOINT, {"request_id": "t1"}, GATEWAY))
    assert ledger.writes.record_output_path(GATEWAY, "t1", 0, saved, size=3).result(30)
    found = ledger.get(GATEWAY, "t1")
    assert found is not None and found.outputs[0]["path"] == str(saved)
    assert found.copies_gone == []


@pytest.mark.parametrize("escape", ["\\udc80", "\\ud83e"])
def test_a_row_holding_the_escape_of_a_lone_surrogate_is_kept_by_its_writes(
    ledger: Ledger, escape: str
) -> None:
    """A row holding a JSON escape of a lone surrogate (valid ASCII JSON: an older writer,
    another tool): the next copy's record wrote ``\\udc80`` as a raw byte (read as U+FFFD
    for good) or failed on ``\\ud83e``, so the copy was never recorded and downloaded
    again at every resume (review-5 fault 2)."""
    row = intent(ledger)
    ledger.writes.record_handle(row, Handle.from_body(ENDPOINT, {"request_id": "t1"}, GATEWAY))
    stored = f'[{{"index": 0, "path": null, "file_name": "heron {escape}.png"}}]'
    assert ledger.flush(30)
    con = sqlite3.connect(ledger.path)
    try:
        con.execute("UPDATE tasks SET outputs = ? WHERE id = ?", (stored, row))
        con.commit()
        assert ledger.writes.record_output_path(GATEWAY, "t1", 0, "/data/heron.png").result(30)
        con.text_factory = bytes
        (kept,) = con.execute("SELECT outputs FROM tasks WHERE id = ?", (row,)).fetchone()
    finally:
        con.close()
    assert f"heron {escape}.png".encode() in bytes(kept)
    found = ledger.get(GATEWAY, "t1")
    assert found is not None and found.outputs[0]["path"] == "/data/heron.png"
