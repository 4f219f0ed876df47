"""The ledger on real SQLite files: lifecycle, crashes, concurrency, scrubbing, secrets."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from genwidgets.errors import LedgerError, LedgerWarning
from genwidgets.jobs.ledger import MAX_COPY_TRIES, Ledger, LedgerRow, scrub_payload
from genwidgets.jobs.ledger import lease as ledger_lease
from genwidgets.jobs.ledger import schema as ledger_schema
from genwidgets.jobs.ledger import store as ledger_store
from genwidgets.jobs.ledger import writes as ledger_writes
from genwidgets.jobs.ledger.rows import COPY_TRY_INTERVAL
from genwidgets.protocol.records import Handle, Result, Status

GATEWAY = "http://127.0.0.1:9999"
ENDPOINT = "vidVq2-text2video"


class Clock:
    """A settable clock so ages are exact."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def handle_for(request_id: str, endpoint: str = ENDPOINT, queue_position: int | None = 3) -> Handle:
    return Handle.from_body(
        endpoint, {"request_id": request_id, "queue_position": queue_position}, GATEWAY
    )


def result_for(request_id: str, **body: Any) -> Result:
    body.setdefault("status", "COMPLETED")
    body.setdefault(
        "outputs",
        [{"url": f"{GATEWAY}/files/t/{request_id}.mp4", "content_type": "video/mp4"}],
    )
    return Result.from_body({"request_id": request_id, **body}, endpoint=ENDPOINT)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def ledger(tmp_path: Path, clock: Clock) -> Any:
    with Ledger(tmp_path / "deep" / "dir" / "ledger.sqlite3", clock=clock) as led:
        yield led


def submit(
    led: Ledger, request_id: str, *, gateway: str = GATEWAY, endpoint: str = ENDPOINT
) -> int:
    row_id = led.writes.record_intent(
        gateway=gateway, endpoint=endpoint, payload={"prompt": request_id}
    )
    led.writes.record_handle(row_id, handle_for(request_id, endpoint))
    return row_id


def test_rows_carry_when_a_task_was_first_seen_running_and_done(
    ledger: Ledger, clock: Clock
) -> None:
    submit(ledger, "t1")
    submit(ledger, "t2")
    for rid, statuses in (("t1", ["IN_QUEUE", "IN_PROGRESS", "IN_PROGRESS", "COMPLETED"]),
                          ("t2", ["IN_QUEUE", "COMPLETED"])):  # fmt: skip
        for n, name in enumerate(statuses):
            clock.now = 1_000_000.0 + 10 * (n + 1)
            ledger.writes.record_status(GATEWAY, rid, Status(name, queue_position=n))
        clock.now += 5
        ledger.writes.record_result(GATEWAY, rid, Result(status="COMPLETED", request_id=rid))
    t1, t2 = ledger.get(GATEWAY, "t1"), ledger.get(GATEWAY, "t2")
    assert t1 is not None and t2 is not None
    assert (t1.running_at, t1.done_at, t1.finished_at) == (1_000_020.0, 1_000_040.0, 1_000_045.0)
    assert (t2.running_at, t2.done_at) == (None, 1_000_020.0)  # never seen running


def test_a_damaged_row_is_skipped_with_a_log_line(
    ledger: Ledger, caplog: pytest.LogCaptureFixture
) -> None:
    submit(ledger, "good")
    bad = submit(ledger, "bad")
    with ledger.transaction() as conn:  # as a foreign tool might leave it
        conn.execute("UPDATE tasks SET payload = 'not json' WHERE id = ?", (bad,))
    with caplog.at_level("WARNING", logger="genwidgets"):
        assert [row.request_id for row in ledger.rows()] == ["good"]
        assert ledger.get(GATEWAY, "bad") is None and ledger.row(bad) is None
    assert f"skipped ledger row {bad}" in caplog.text


def test_other_parts_keep_their_own_table_in_the_ledger_file(ledger: Ledger) -> None:
    with ledger.transaction() as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS lab_grids (id TEXT PRIMARY KEY, body TEXT)")
        conn.execute("INSERT INTO lab_grids VALUES ('g1', '{}')")
    with pytest.raises(LedgerError), ledger.transaction() as conn:
        conn.execute("INSERT INTO lab_grids VALUES ('g1', 'duplicate')")
    assert ledger.query("SELECT id, body FROM lab_grids") == [("g1", "{}")]
    submit(ledger, "still-fine")
    assert ledger.flush(30)  # another Ledger object reads the file, not this one's queue
    with Ledger(ledger.path) as again:  # the extra table does not make the file foreign
        assert again.get(GATEWAY, "still-fine") is not None


def test_creates_parent_dirs_in_wal_mode_with_schema_version(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "ledger.sqlite3"
    with Ledger(path) as led:
        assert led.journal_mode.lower() == "wal"
    assert path.exists()
    con = sqlite3.connect(path)
    try:
        meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        con.close()
    assert float(meta.pop("tags_since")) > 0  # intents from here on carry their tag
    assert float(meta.pop("copies_marked_since")) > 0  # declined copies marked from here on
    assert float(meta.pop("addresses_masked_since")) > 0  # no password in any address
    assert float(meta.pop("lab_addresses_masked_since")) > 0  # nor in the lab's tables
    assert meta == {
        "application": "genwidgets-ledger",
        "schema_version": str(ledger_schema.SCHEMA_VERSION),
    }


def test_default_path_is_under_genwidgets_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path / "gwhome"))
    with Ledger() as led:
        assert led.path == tmp_path / "gwhome" / "ledger.sqlite3"
        led.writes.record_intent(gateway=GATEWAY, endpoint=ENDPOINT, payload={})
    assert (tmp_path / "gwhome" / "ledger.sqlite3").exists()


def test_full_lifecycle(ledger: Ledger, clock: Clock) -> None:
    row_id = ledger.writes.record_intent(
        gateway=GATEWAY, endpoint=ENDPOINT, payload={"prompt": "a red kite", "duration": 5}
    )
    first = ledger.row(row_id)
    assert first is not None
    assert (first.state, first.request_id, first.status) == ("submitting", None, None)
    assert first.payload == {"prompt": "a red kite", "duration": 5}
    assert first.pid == os.getpid()

    clock.now += 1
    ledger.writes.record_handle(row_id, handle_for("req-1"))
    row = ledger.get(GATEWAY, "req-1")
    assert row is not None
    assert (row.id, row.state, row.queue_position) == (row_id, "submitted", 3)
    assert row.status_url == f"{GATEWAY}/v1/queue/{ENDPOINT}/requests/req-1/status"
    assert row.cancel_url is not None and row.cancel_url.endswith("/req-1/cancel")
    assert row.handle_at == clock.now and row.unfinished

    clock.now += 1
    status = Status.from_body({"status": "IN_PROGRESS"})
    assert ledger.writes.record_status(GATEWAY, "req-1", status).result(timeout=30)
    clock.now += 1
    ledger.writes.record_result(GATEWAY, "req-1", result_for("req-1"))
    done = ledger.get(GATEWAY, "req-1")
    assert done is not None
    assert (done.state, done.status, done.ok, done.error) == ("finished", "COMPLETED", True, None)
    assert done.finished_at == clock.now and done.submitted_at == first.submitted_at
    assert done.outputs == [
        {
            "index": 0,
            "content_type": "video/mp4",
            "url": f"{GATEWAY}/files/t/req-1.mp4",
            "path": None,
            "file_name": None,
            "file_size": None,
        }
    ]
    assert not done.unfinished and ledger.rows(GATEWAY, status="unfinished") == []


def test_repeated_status_writes_nothing_and_changes_write(ledger: Ledger, clock: Clock) -> None:
    submit(ledger, "req-q")
    queued = Status.from_body({"status": "IN_QUEUE", "queue_position": 2})
    assert ledger.writes.record_status(GATEWAY, "req-q", queued).result(timeout=30)
    stamp = clock.now
    clock.now += 5
    assert not ledger.writes.record_status(GATEWAY, "req-q", queued).result(timeout=30)
    row = ledger.get(GATEWAY, "req-q")
    assert row is not None and row.updated_at == stamp
    moved = Status.from_body({"status": "IN_QUEUE", "queue_position": 1})
    assert ledger.writes.record_status(GATEWAY, "req-q", moved).result(timeout=30)
    row = ledger.get(GATEWAY, "req-q")
    assert row is not None and (row.queue_position, row.updated_at) == (1, clock.now)


def test_same_status_from_another_ledger_instance_is_not_rewritten(
    ledger: Ledger, clock: Clock
) -> None:
    submit(ledger, "req-x")
    running = Status.from_body({"status": "IN_PROGRESS"})
    assert ledger.writes.record_status(GATEWAY, "req-x", running).result(timeout=30)
    with Ledger(ledger.path, clock=clock) as other:  # no shared memory: the SQL decides
        clock.now += 1
        assert not other.writes.record_status(GATEWAY, "req-x", running).result(timeout=30)


def test_status_after_result_does_not_reopen_the_task(ledger: Ledger) -> None:
    submit(ledger, "req-late")
    ledger.writes.record_result(GATEWAY, "req-late", result_for("req-late"))
    assert not ledger.writes.record_status(
        GATEWAY, "req-late", Status.from_body({"status": "IN_QUEUE"})
    ).result(timeout=30)
    row = ledger.get(GATEWAY, "req-late")
    assert row is not None and (row.state, row.status) == ("finished", "COMPLETED")


def test_status_of_an_unknown_task_is_reported_not_invented(ledger: Ledger) -> None:
    running = Status.from_body({"status": "IN_PROGRESS"})
    assert not ledger.writes.record_status(GATEWAY, "nobody", running).result(timeout=30)
    assert ledger.rows() == []
    assert not ledger.writes.record_result(GATEWAY, "nobody", result_for("nobody")).result(
        timeout=30
    )


def test_attach_creates_one_row_for_a_task_known_only_by_id(ledger: Ledger) -> None:
    row_id = ledger.writes.record_attach(GATEWAY, handle_for("req-att")).result(timeout=30)
    assert ledger.writes.record_attach(GATEWAY, handle_for("req-att")).result(timeout=30) == row_id
    row = ledger.get(GATEWAY, "req-att")
    assert row is not None and (row.state, row.payload) == ("submitted", {})
    assert ledger.writes.record_status(
        GATEWAY, "req-att", Status.from_body({"status": "IN_PROGRESS"})
    ).result(timeout=30)


def test_failed_result_keeps_error_and_type(ledger: Ledger) -> None:
    submit(ledger, "req-f")
    failed = result_for(
        "req-f", error="Runtime execution failed", error_type="runtime_error", outputs=[]
    )
    ledger.writes.record_result(GATEWAY, "req-f", failed)
    row = ledger.get(GATEWAY, "req-f")
    assert row is not None
    assert (row.ok, row.error, row.error_type) == (False, failed.error, "runtime_error")
    assert [r.request_id for r in ledger.rows(status="failed")] == ["req-f"]
    assert ledger.rows(status="ok") == []


def test_create_failed_states(ledger: Ledger) -> None:
    nothing = ledger.writes.record_intent(gateway=GATEWAY, endpoint=ENDPOINT, payload={})
    ledger.writes.record_create_failed(nothing, "429 RATE_LIMIT_EXCEEDED", created_nothing=True)
    maybe = ledger.writes.record_intent(gateway=GATEWAY, endpoint=ENDPOINT, payload={})
    ledger.writes.record_create_failed(maybe, "read timeout after sending", created_nothing=False)
    a, b = ledger.row(nothing), ledger.row(maybe)
    assert a is not None and b is not None
    assert (a.state, a.error, a.finished_at is not None) == (
        "not_created",
        "429 RATE_LIMIT_EXCEEDED",
        True,
    )
    assert (b.state, b.error, b.finished_at) == (
        "outcome_unknown",
        "read timeout after sending",
        None,
    )
    assert [r.id for r in ledger.rows(status="outcome_unknown")] == [maybe]
    assert [r.id for r in ledger.rows(status="not_created")] == [nothing]


def test_unknown_row_ids_are_an_error(ledger: Ledger) -> None:
    with pytest.raises(LedgerError, match="no ledger row 42"):
        ledger.writes.record_handle(42, handle_for("x")).result(timeout=30)
    with pytest.raises(LedgerError, match="no ledger row 43"):
        ledger.writes.record_create_failed(43, "boom", created_nothing=True).result(timeout=30)


def test_intent_without_handle_becomes_outcome_unknown_after_stale_after(
    tmp_path: Path, clock: Clock
) -> None:
    path = tmp_path / "ledger.sqlite3"
    with Ledger(path, clock=clock) as sender:
        row_id = sender.writes.record_intent(gateway=GATEWAY, endpoint=ENDPOINT, payload={})
        clock.now += 3600
        # still being sent by this very process: not a lost task
        assert sender.rows()[0].state == "submitting"
    # a reader that is not sending it, young row from a live process: still "submitting"
    clock.now -= 3600
    assert ledger_lease.pid_alive(os.getpid())
    with Ledger(path, clock=clock) as reader:
        # as if the sending process were another one, alive on this host
        ledger_writes.SENDING.discard((str(path.resolve()), row_id))
        fake_live_other = os.getppid()
        con = sqlite3.connect(path)
        con.execute("UPDATE tasks SET pid = ? WHERE id = ?", (fake_live_other, row_id))
        con.commit()
        con.close()
        assert reader.rows()[0].state == "submitting"
        clock.now += 61
        row = reader.rows()[0]
        assert (row.id, row.state) == (row_id, "outcome_unknown")
        assert [r.id for r in reader.rows(status="outcome_unknown")] == [row_id]
        assert reader.rows(status="submitting") == []
        assert reader.rows(GATEWAY, status="unfinished") == []


@pytest.mark.timeout(60)
def test_intent_of_a_dead_process_is_outcome_unknown_at_once(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    script = textwrap.dedent(
        f"""
        import os
        from genwidgets.jobs.ledger import Ledger
        led = Ledger({str(path)!r})
        led.writes.record_intent(gateway={GATEWAY!r}, endpoint={ENDPOINT!r}, payload={{"p": 1}})
        os._exit(0)  # dies between sending and receiving
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=50)
    with Ledger(path) as led:
        (row,) = led.rows()
        assert row.pid != os.getpid()
        assert row.state == "outcome_unknown"
        assert row.payload == {"p": 1}


def test_rows_filters_and_order(ledger: Ledger, clock: Clock) -> None:
    other = "http://other.example"
    submit(ledger, "r1")
    submit(ledger, "r2", endpoint="imgQ-edit-plus")
    submit(ledger, "r3", gateway=other)
    submit(ledger, "r4")
    ledger.writes.record_status(GATEWAY, "r4", Status.from_body({"status": "IN_QUEUE"}))
    ledger.writes.record_result(GATEWAY, "r1", result_for("r1"))
    ids = lambda rows: [r.request_id for r in rows]  # noqa: E731
    assert ids(ledger.rows()) == ["r4", "r3", "r2", "r1"]
    assert ids(ledger.rows(GATEWAY)) == ["r4", "r2", "r1"]
    assert ids(ledger.rows(GATEWAY, endpoint="imgQ-edit-plus")) == ["r2"]
    assert ids(ledger.rows(status="completed")) == ["r1"]
    assert ids(ledger.rows(status="IN_QUEUE")) == ["r4"]
    assert ids(ledger.rows(GATEWAY, status="unfinished")) == ["r4", "r2"]
    assert ids(ledger.rows(other, status="unfinished")) == ["r3"]
    assert ids(ledger.rows(GATEWAY, limit=2)) == ["r4", "r2"]
    assert ids(ledger.rows(status="finished")) == ["r1"]
    assert ledger.rows(limit=0) == []
    with pytest.raises(ValueError, match="limit must be a whole number from 0 to 1,000,000"):
        ledger.rows(limit=-1)
    with pytest.raises(TypeError, match="status must be a string"):
        ledger.rows(status=3)  # type: ignore[arg-type]


def test_row_handle_reattaches(ledger: Ledger) -> None:
    submit(ledger, "req-h")
    row = ledger.get(GATEWAY, "req-h")
    assert row is not None
    handle = row.handle()
    assert handle is not None
    assert (handle.endpoint, handle.request_id) == (ENDPOINT, "req-h")
    assert handle.response_url == f"{GATEWAY}/v1/queue/{ENDPOINT}/requests/req-h/response"
    lone = ledger.writes.record_intent(gateway=GATEWAY, endpoint=ENDPOINT, payload={})
    lone_row = ledger.row(lone)
    assert lone_row is not None and lone_row.handle() is None


def test_output_paths_recorded_and_kept_on_a_second_result(ledger: Ledger, tmp_path: Path) -> None:
    submit(ledger, "req-o")
    two = result_for(
        "req-o",
        outputs=[
            {"url": f"{GATEWAY}/files/a/0.png", "content_type": "image/png", "file_size": 10},
            {"url": f"{GATEWAY}/files/a/1.png", "content_type": "image/png"},
        ],
    )
    ledger.writes.record_result(GATEWAY, "req-o", two)
    assert ledger.writes.record_output_path(GATEWAY, "req-o", 1, tmp_path / "1.png").result(
        timeout=30
    )
    ledger.writes.record_result(GATEWAY, "req-o", two)  # e.g. a resumed job fetching it again
    row = ledger.get(GATEWAY, "req-o")
    assert row is not None
    assert [o["path"] for o in row.outputs] == [None, str(tmp_path / "1.png")]
    assert row.outputs[0]["file_size"] == 10
    assert not ledger.writes.record_output_path(GATEWAY, "missing", 0, tmp_path / "x").result(
        timeout=30
    )


def test_inline_output_content_is_kept_when_small(ledger: Ledger) -> None:
    submit(ledger, "req-j")
    record = json.dumps({"GroupId": "g-1"})
    small = {"url": f"{GATEWAY}/files/j", "content_type": "application/json", "content": record}
    big_hex = "ab" * 100_000
    big = {"content_type": "audio/mpeg", "encoding": "hex", "content": big_hex}
    ledger.writes.record_result(GATEWAY, "req-j", result_for("req-j", outputs=[small, big]))
    row = ledger.get(GATEWAY, "req-j")
    assert row is not None
    assert row.outputs[0]["content"] == record
    digest = hashlib.sha256(bytes.fromhex(big_hex)).hexdigest()
    assert row.outputs[1]["content"] == f"<hex sha256={digest} bytes=100000>"


# --------------------------------------------------------------------------- scrubbing


def test_a_1mb_data_url_is_replaced_by_digest_and_size(ledger: Ledger) -> None:
    image = os.urandom(1_000_000)
    data_url = "data:image/png;base64," + base64.b64encode(image).decode()
    raw_b64 = base64.b64encode(image[:300_000]).decode()
    tiny = "data:image/png;base64,iVBORw0KGgo="
    payload = {
        "prompt": "a kite " * 50,
        "content": [{"type": "image_url", "image_url": {"url": data_url}}, {"text": "hi"}],
        "image_list": [{"image": raw_b64}],
        "tiny": tiny,
        "headers": {"Authorization": "Bearer abc", "X-Trace": "1"},
    }
    row_id = ledger.writes.record_intent(gateway=GATEWAY, endpoint=ENDPOINT, payload=payload)
    row = ledger.row(row_id)
    assert row is not None
    digest = hashlib.sha256(image).hexdigest()
    assert row.payload["content"][0]["image_url"]["url"] == (
        f"<data:image/png;base64 sha256={digest} bytes=1000000>"
    )
    assert row.payload["content"][1] == {"text": "hi"}
    raw_digest = hashlib.sha256(image[:300_000]).hexdigest()
    assert row.payload["image_list"][0]["image"] == f"<base64 sha256={raw_digest} bytes=300000>"
    assert row.payload["prompt"] == payload["prompt"]
    assert row.payload["tiny"] == tiny
    assert row.payload["headers"] == {"X-Trace": "1"}
    assert ledger.path.stat().st_size + Path(f"{ledger.path}-wal").stat().st_size < 200_000


def test_scrub_payload_details() -> None:
    text_url = "data:text/plain," + "%41" * 2000
    scrubbed = scrub_payload(
        {
            "api_key": "k",
            "X-API-Key": "k",
            "blob": b"\x00\x01",
            "text": text_url,
            "long": "word " * 20_000,
            "n": [1, 2.5, None, True],
            "image": Path.home() / "refs" / "fox.png",
        }
    )
    assert set(scrubbed) == {"blob", "text", "long", "n", "image"}
    assert scrubbed["image"] == "~/refs/fox.png"  # a local file as shown (never absolute)
    blob_digest = hashlib.sha256(bytes([0, 1])).hexdigest()
    assert scrubbed["blob"] == f"<bytes sha256={blob_digest} bytes=2>"
    a_digest = hashlib.sha256(b"A" * 2000).hexdigest()
    assert scrubbed["text"] == f"<data:text/plain sha256={a_digest} bytes=2000>"
    assert scrubbed["long"].startswith("<text sha256=") and scrubbed["long"].endswith(
        "bytes=100000>"
    )
    assert scrubbed["n"] == [1, 2.5, None, True]
    with pytest.raises(TypeError, match="must be a mapping"):
        scrub_payload(["not", "a", "dict"])  # type: ignore[arg-type]


# --------------------------------------------------------------------------- secrets


def test_the_key_never_reaches_the_database_file(
    tmp_path: Path, known_key: Callable[[str], str]
) -> None:
    key = known_key("sk-live-" + os.urandom(12).hex())
    path = tmp_path / "ledger.sqlite3"
    with Ledger(path) as led:
        lost = led.writes.record_intent(
            gateway=GATEWAY,
            endpoint=ENDPOINT,
            payload={"prompt": f"echo {key}", "headers": {"authorization": f"Bearer {key}"}},
        )
        led.writes.record_create_failed(
            lost, f"401 Unauthorized for key {key}", created_nothing=True
        )
        row_id = led.writes.record_intent(gateway=GATEWAY, endpoint=ENDPOINT, payload={})
        led.writes.record_handle(row_id, handle_for("req-s"))
        led.writes.record_status(GATEWAY, "req-s", Status.from_body({"status": f"WEIRD {key}"}))
        failed = result_for(
            "req-s",
            error={"detail": f"upstream rejected {key}"},
            error_type="runtime_error",
            outputs=[{"url": f"{GATEWAY}/files/x?token={key}", "content_type": "image/png"}],
        )
        led.writes.record_result(GATEWAY, "req-s", failed)
        row = led.get(GATEWAY, "req-s")
        assert row is not None and row.error is not None and "***" in row.error
        assert led.row(lost) is not None
    files = list(tmp_path.iterdir())
    assert files  # the db, and the WAL while it lasts
    for file in files:
        assert key.encode() not in file.read_bytes(), file.name


def test_newer_schema_is_refused_clearly(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    Ledger(path).close()
    con = sqlite3.connect(path)
    con.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    con.commit()
    con.close()
    with pytest.raises(LedgerError, match=r"schema version 99, newer than .* understands \(5\)"):
        Ledger(path)


@pytest.mark.parametrize("kind", ["foreign", "corrupted"])
def test_an_unusable_file_is_moved_aside_and_recording_goes_on(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "ledger.sqlite3"
    if kind == "foreign":
        con = sqlite3.connect(path)
        con.execute("CREATE TABLE photos (id INTEGER)")
        con.commit()
        con.close()
    else:
        path.write_bytes(b"hello, this is not sqlite" * 100)
    original = path.read_bytes()
    with pytest.warns(LedgerWarning) as caught:
        led = Ledger(path)
    with led:
        assert led.set_aside is not None and led.set_aside.parent == tmp_path
        message = str(caught[0].message)
        assert str(led.set_aside) in message and "recording goes on" in message
        assert ("not a genwidgets ledger" if kind == "foreign" else "not a usable") in message
        assert led.set_aside.read_bytes() == original  # kept as it was
        submit(led, "after")
        assert led.get(GATEWAY, "after") is not None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with Ledger(path) as again:  # the new file is a ledger: nothing moved twice
            assert again.set_aside is None and again.get(GATEWAY, "after") is not None


@pytest.mark.slow
def test_a_client_keeps_recording_past_a_corrupted_ledger(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import genwidgets as gw

    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path))
    (tmp_path / "ledger.sqlite3").write_bytes(b"\x00garbage" * 500)
    with pytest.warns(LedgerWarning, match="moved to"):
        client = gw.Client()
    try:
        assert client.ledger is not None
        client.run("asset-get", {"Id": "asset-demo"}, timeout=60)
        assert [row.state for row in client.ledger.rows()] == ["finished"]
    finally:
        client.close()


def test_a_registered_migration_upgrades_old_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "ledger.sqlite3"
    with Ledger(path) as led:
        submit(led, "old")
    ran: list[int] = []

    def add_column(conn: sqlite3.Connection) -> None:
        ran.append(1)
        conn.execute("ALTER TABLE tasks ADD COLUMN note TEXT")

    current = ledger_schema.SCHEMA_VERSION
    monkeypatch.setattr(ledger_schema, "SCHEMA_VERSION", current + 1)
    monkeypatch.setitem(ledger_schema.MIGRATIONS, current, add_column)
    with Ledger(path) as led:
        assert led.get(GATEWAY, "old") is not None
    with Ledger(path):
        pass  # already at the new version: not migrated twice
    con = sqlite3.connect(path)
    version = con.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    columns = [c[1] for c in con.execute("PRAGMA table_info(tasks)")]
    con.close()
    assert (ran, version, "note" in columns) == ([1], (str(current + 1),), True)


def test_the_schema_5_migration_masks_a_password_of_a_stored_gateway_address(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ledger.sqlite3"
    with pytest.MonkeyPatch.context() as old:  # a ledger of schema 4
        old.setattr(ledger_schema, "SCHEMA_VERSION", 4)
        Ledger(path).close()
    address = "https://alice:pw-SECRET-9@gw.example"
    con = sqlite3.connect(path)
    con.execute(
        "INSERT INTO tasks (gateway, endpoint, request_id, state, payload, pid, host, "
        "submitted_at, updated_at, status_url) VALUES (?, 'ep', 'r1', 'submitted', '{}', 1, "
        "'h', 1, 1, ?)",
        (address, f"{address}/v1/queue/ep/requests/r1/status"),
    )
    con.commit()
    con.close()
    with Ledger(path) as led:
        row = led.get("https://alice:***@gw.example", "r1")
        assert row is not None and row.key_fingerprint is None
        assert row.status_url == "https://alice:***@gw.example/v1/queue/ep/requests/r1/status"
        # the masked address is not followed: the documented one on the client's address is
        handle = row.handle(address)
        assert handle is not None and handle.status_url.startswith(address)


# --------------------------------------------------------------------------- concurrency

WORKER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from genwidgets.jobs.ledger import Ledger
    from genwidgets.protocol.records import Handle, Result, Status

    path, tag, count, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
    led = Ledger(path, busy_timeout=30)
    deadline = time.time() + 30
    while not go.exists() and time.time() < deadline:
        time.sleep(0.005)
    gw = "http://127.0.0.1:1"
    for i in range(count):
        rid = f"{tag}-{i}"
        row = led.writes.record_intent(gateway=gw, endpoint="imgQ-edit-plus", payload={"i": i})
        led.writes.record_handle(row, Handle.from_body("imgQ-edit-plus", {"request_id": rid}, gw))
        for st in ("IN_QUEUE", "IN_PROGRESS"):
            led.writes.record_status(gw, rid, Status.from_body({"status": st}))
        done = Result.from_body({"request_id": rid, "status": "COMPLETED"})
        led.writes.record_result(gw, rid, done)
        led.rows(gw, limit=5)
    led.close()
    """
)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_two_processes_write_concurrently_without_locking_errors(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    go = tmp_path / "go"
    Ledger(path).close()
    count = 150
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(path), tag, str(count), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for tag in ("a", "b")
    ]
    go.touch()
    outcomes = [p.communicate(timeout=100) for p in procs]
    for proc, (_, err) in zip(procs, outcomes, strict=True):
        assert "locked" not in err
        assert proc.returncode == 0, err
    with Ledger(path) as led:
        rows = led.rows()
    assert len(rows) == 2 * count
    assert {r.state for r in rows} == {"finished"}
    assert {r.request_id for r in rows} == {f"{t}-{i}" for t in "ab" for i in range(count)}


@pytest.mark.timeout(60)
def test_threads_share_one_ledger(ledger: Ledger) -> None:
    errors: list[BaseException] = []

    def work(tag: str) -> None:
        try:
            for i in range(40):
                submit(ledger, f"{tag}-{i}")
                ledger.rows(limit=3)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in "wxyz"]
    for t in threads:
        t.start()
    for t in threads:
        t.join(50)
    assert errors == []
    assert len(ledger.rows(GATEWAY, status="unfinished")) == 160


# ------------------------------------------------------------------ copies pending
# docs/decisions.md#copies-pending: which rows resume() copies, and what a copy writes


def finished(led: Ledger, request_id: str, *outputs: dict[str, Any]) -> None:
    """A COMPLETED task of ``outputs`` (two URLs by default), none of them copied."""
    submit(led, request_id)
    files = f"{GATEWAY}/files/{request_id}"
    urls = [{"url": f"{files}/{n}.png", "content_type": "image/png"} for n in (0, 1)]
    result = result_for(request_id, outputs=list(outputs) or urls)
    led.writes.record_result(GATEWAY, request_id, result)


def test_old_rows_keep_no_password_nor_a_tail_of_one_in_their_addresses(tmp_path: Path) -> None:
    """Rows of older versions held a base URL's password, or only its tail when the
    password held an ``@`` (masked once as ``u:***@ss@host``): the file kept it."""
    path = tmp_path / "ledger.sqlite3"
    with Ledger(path) as old:
        submit(old, "req-a")
    addresses = {
        "gateway": "http://u:***@ss@gw.test",  # masked by a version that cut at the first @
        "status_url": "http://alice:secret@gw.test/requests/req-a/status",
        "response_url": b"http://u:p@ss@gw.test/\xff",  # and bytes that are not UTF-8
        "error": "cannot reach http://bob:hunter2@gw.test: refused",
    }
    with sqlite3.connect(path) as conn:  # as an older genwidgets left the file
        for name, value in addresses.items():
            conn.execute(f"UPDATE tasks SET {name} = CAST(? AS TEXT)", (value,))
        conn.execute("DELETE FROM meta WHERE key = 'addresses_masked_since'")
    conn.close()
    with Ledger(path):
        pass
    with sqlite3.connect(path) as conn:
        stored = conn.execute(
            "SELECT CAST(gateway AS BLOB), CAST(status_url AS BLOB), "
            "CAST(response_url AS BLOB), CAST(error AS BLOB) FROM tasks"
        ).fetchone()
    conn.close()
    assert stored == (
        b"http://u:***@gw.test",
        b"http://alice:***@gw.test/requests/req-a/status",
        b"http://u:***@gw.test/\xff",
        b"cannot reach http://bob:***@gw.test: refused",
    )
    assert not any(word in path.read_bytes() for word in (b"secret", b"hunter2", b"@ss@"))


#: a base URL with its password, as an older genwidgets stored it in the lab's tables
CLEAR = "http://alice:S3cretPw9q@127.0.0.1:9"


def old_lab_tables(path: Path) -> None:
    """A ledger whose lab tables (a batch's, an older version's grid) hold :data:`CLEAR`,
    marked masked by a version that masked only ``tasks``."""
    Ledger(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TABLE batches (id TEXT PRIMARY KEY, gateway TEXT NOT NULL, endpoint TEXT "
            "NOT NULL, created_at REAL NOT NULL, out TEXT NOT NULL, digest TEXT NOT NULL, "
            "description TEXT NOT NULL, kind TEXT NOT NULL DEFAULT 'batch')"
        )
        conn.execute("CREATE TABLE batch_rows (batch_id TEXT, idx INTEGER, error TEXT)")
        conn.execute("CREATE TABLE grids (id TEXT, gateway TEXT, endpoint TEXT, description TEXT)")
        conn.execute("CREATE TABLE grid_cells (grid_id TEXT, idx INTEGER, error TEXT)")
        conn.execute(
            "INSERT INTO batches VALUES ('b1', ?, 'e', 0, '', '', '{}', 'batch')", (CLEAR,)
        )
        conn.execute("INSERT INTO batch_rows VALUES ('b1', 0, ?)", (f"cannot reach {CLEAR}",))
        conn.execute("INSERT INTO grids VALUES ('g1', ?, 'e', '{}')", (CLEAR,))
        conn.execute("INSERT INTO grid_cells VALUES ('g1', 0, ?)", (f"refused by {CLEAR}",))
        conn.execute("DELETE FROM meta WHERE key = 'lab_addresses_masked_since'")
    conn.close()


def test_the_lab_tables_an_older_version_kept_hold_no_password_once_the_file_is_masked(
    tmp_path: Path,
) -> None:
    """An older genwidgets stored a batch's gateway (and a grid's, in its own tables)
    with the base URL's password, and errors naming the address; the masking read only
    ``tasks``, rewrote the file with them and marked it masked: the password stayed
    for good (review-21 fault 5). A file marked before the lab's tables were masked is
    masked again."""
    path = tmp_path / "ledger.sqlite3"
    old_lab_tables(path)
    masked = "http://alice:***@127.0.0.1:9"
    with Ledger(path) as led:
        assert led.flush(30)
        assert led.query("SELECT gateway FROM batches UNION ALL SELECT gateway FROM grids") == [
            (masked,),
            (masked,),
        ]
        assert led.query("SELECT error FROM batch_rows UNION ALL SELECT error FROM grid_cells") == [
            (f"cannot reach {masked}",),
            (f"refused by {masked}",),
        ]
        left = {
            p.name: p.read_bytes().count(b"S3cretPw9q") for p in tmp_path.iterdir() if p.is_file()
        }
        assert set(left.values()) == {0}, left  # the file and its log, while still open


def test_lab_tables_masked_while_the_disk_was_too_full_to_rewrite_are_rewritten_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lab's values are masked, the rewrite is put off (no room for the copy): the
    next open finds nothing left to mask, and still rewrites the file before marking it."""
    path = tmp_path / "ledger.sqlite3"
    old_lab_tables(path)
    real_rewrite = ledger_schema._rewrite
    monkeypatch.setattr(ledger_schema, "_rewrite", lambda conn: False)
    with Ledger(path) as led:
        assert led.flush(30)
        assert "lab_addresses_masked_since" not in dict(led.query("SELECT key, value FROM meta"))
    rewrites: list[bool] = []

    def rewrite(conn: sqlite3.Connection) -> bool:
        rewrites.append(real_rewrite(conn))
        return rewrites[-1]

    monkeypatch.setattr(ledger_schema, "_rewrite", rewrite)
    with Ledger(path) as led:
        assert led.flush(30)
        assert "lab_addresses_masked_since" in dict(led.query("SELECT key, value FROM meta"))
        assert rewrites == [True]
        left = {
            p.name: p.read_bytes().count(b"S3cretPw9q") for p in tmp_path.iterdir() if p.is_file()
        }
        assert set(left.values()) == {0}, left


def old_ledger_with_passwords(path: Path, rows: int) -> None:
    """A ledger of ``rows`` tasks as a version before masking left it: a password in
    each ``status_url`` (``.../<id>/status``), no ``addresses_masked_since``."""
    with Ledger(path) as old:
        for n in range(rows):
            submit(old, f"req-{n}")
    with sqlite3.connect(path) as conn:
        conn.execute(
            "UPDATE tasks SET status_url = 'http://alice:secret@gw.test/' || id || '/status'"
        )
        conn.execute("DELETE FROM meta WHERE key = 'addresses_masked_since'")
    conn.close()


def test_masking_a_big_old_ledger_goes_on_where_a_process_that_stopped_left_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Old addresses were masked in one transaction inside the open's write: on a big
    ledger it outlasted ``busy_timeout``, each short-lived process's work was rolled
    back at its exit, and the password stayed in the file for good."""
    path = tmp_path / "ledger.sqlite3"
    old_ledger_with_passwords(path, 25)
    real_hide = ledger_schema.hide_userinfo

    def stops_at_row_21(text: str) -> str:  # the process ends in its third chunk
        if "/21/" in text:
            raise InterruptedError
        return real_hide(text)

    monkeypatch.setattr(ledger_schema, "MASK_CHUNK", 10)
    monkeypatch.setattr(ledger_schema, "hide_userinfo", stops_at_row_21)
    conn = sqlite3.connect(path, isolation_level=None)
    with pytest.raises(InterruptedError):
        ledger_schema.mask_addresses(conn)

    def still_secret() -> list[int]:  # read as it is, not opened as a ledger (that masks)
        found = conn.execute("SELECT id FROM tasks WHERE instr(status_url, 'secret')")
        return [row_id for (row_id,) in found]

    assert still_secret() == list(range(21, 26))  # two chunks committed, one rolled back
    monkeypatch.setattr(ledger_schema, "hide_userinfo", real_hide)
    with Ledger(path) as led:
        meta = dict(led.query("SELECT key, value FROM meta"))
    assert "addresses_masked_since" in meta and "addresses_masked_upto" not in meta
    assert still_secret() == []
    conn.close()
    assert b"secret" not in path.read_bytes()  # zeroed (its last connection closed)


@pytest.mark.parametrize(("rows", "spread"), [(200, 20), (300, 20), (500, 50), (1000, 100)])
def test_masking_old_addresses_leaves_no_piece_of_a_password_in_the_file(
    tmp_path: Path, rows: int, spread: int
) -> None:
    """The masking zeroed each old value (``secure_delete``), but a b-tree page rebuilt
    as the index of gateways changed kept pieces of the old addresses in its unused
    gap, and the write-ahead log held the old pages while the process ran, after the
    file was marked masked (review-14 fault 2): the file is rewritten once masked, its
    log emptied. Passwords of varied lengths and distinct request ids move the index."""
    path = tmp_path / "ledger.sqlite3"
    Ledger(path).close()
    with sqlite3.connect(path) as conn:  # as an older genwidgets left the file
        conn.executemany(
            "INSERT INTO tasks (gateway, endpoint, request_id, state, payload, pid, host, "
            "submitted_at, updated_at) VALUES (?, ?, ?, 'submitted', '{}', 1, 'h', 0, 0)",
            [
                (f"http://alice:SECRET{'x' * (n % spread)}@h", ENDPOINT, f"req-{n}")
                for n in range(rows)
            ],
        )
        conn.execute("DELETE FROM meta WHERE key = 'addresses_masked_since'")
    conn.close()
    with Ledger(path) as led:
        assert led.flush(30)
        assert "addresses_masked_since" in dict(led.query("SELECT key, value FROM meta"))
        left = {p.name: p.read_bytes().count(b"SECRET") for p in tmp_path.iterdir() if p.is_file()}
        assert set(left.values()) == {0}, left  # the file and its log, while still open
    assert b"SECRET" not in path.read_bytes()


def test_a_ledger_busy_masking_its_old_addresses_does_not_blame_another_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A ledger whose open masked an old file's addresses past its wait said it was
    "locked by another process": the only process was itself."""
    path = tmp_path / "ledger.sqlite3"
    old_ledger_with_passwords(path, 3)
    real_hide, go_on = ledger_schema.hide_userinfo, threading.Event()

    def slow(text: str) -> str:  # the masking outlasts the open's wait
        go_on.wait(30)
        return real_hide(text)

    monkeypatch.setattr(ledger_schema, "hide_userinfo", slow)
    try:
        with caplog.at_level("WARNING", "genwidgets"):
            led = Ledger(path, busy_timeout=0.2)
        with pytest.warns(LedgerWarning) as caught:
            led.rows()
    finally:
        go_on.set()
    said = [caplog.text, str(caught[0].message)]
    assert all("this process is masking the addresses" in text for text in said), said
    assert not any("another process" in text for text in said), said
    assert led.flush(30)
    led.close()


def test_marking_old_copies_keeps_the_bytes_of_outputs_that_are_not_utf8(tmp_path: Path) -> None:
    """The once-per-file marking of declined copies read ``outputs`` through the text
    factory, so a byte that was not UTF-8 was written back as U+FFFD, for good."""
    path = tmp_path / "ledger.sqlite3"
    with Ledger(path) as old:
        finished(old, "req-x")
    with sqlite3.connect(path) as conn:  # an output's URL with a stray byte, as an older
        (text,) = conn.execute("SELECT outputs FROM tasks").fetchone()  # version left it
        raw = text.replace("0.png", "0-\\u00e9.png").encode().replace(b"\\u00e9", b"\xff")
        conn.execute("UPDATE tasks SET outputs = CAST(? AS TEXT)", (raw,))
        conn.execute("DELETE FROM meta WHERE key = 'copies_marked_since'")
    conn.close()
    with Ledger(path) as upgraded:
        declined = upgraded.get(GATEWAY, "req-x")
        assert declined is not None and declined.copies_pending == []  # marked
    with sqlite3.connect(path) as conn:
        (stored,) = conn.execute("SELECT CAST(outputs AS BLOB) FROM tasks").fetchone()
    conn.close()
    outputs = json.loads(bytes(stored).decode("utf-8", errors="surrogateescape"))
    assert outputs[0]["url"].endswith("/0-\udcff.png")  # the byte itself, not U+FFFD


def test_a_failed_copy_never_replaces_a_path_recorded(ledger: Ledger, tmp_path: Path) -> None:
    """Two copiers of one task: the one that failed (its URL expired) does not erase the
    path the other recorded, nor give the copy up (R7)."""
    finished(ledger, "req-c")
    saved = tmp_path / "0.png"
    saved.write_bytes(b"x")
    ledger.writes.record_output_path(GATEWAY, "req-c", 0, saved, sha256="0" * 64, size=1)
    ledger.writes.record_output_path(GATEWAY, "req-c", 0, None, error="HTTP 410", expired=True)
    row = ledger.get(GATEWAY, "req-c")
    assert row is not None and row.outputs[0]["path"] == str(saved)
    assert row.copies_given_up == {} and row.copies_pending == [1]


def test_failed_copies_count_one_try_per_interval(ledger: Ledger, clock: Clock) -> None:
    """Five failures in a moment (a loop calling result()) are one try; a copy is given
    up only after MAX_COPY_TRIES tries COPY_TRY_INTERVAL apart (R11)."""
    finished(ledger, "req-t")
    for _ in range(MAX_COPY_TRIES + 1):
        ledger.writes.record_output_path(GATEWAY, "req-t", 0, None, error="HTTP 503")
    row = ledger.get(GATEWAY, "req-t")
    assert row is not None and row.copies_pending == [0, 1] and row.outputs[0]["copy_tries"] == 1
    for _ in range(MAX_COPY_TRIES - 1):
        clock.now += COPY_TRY_INTERVAL
        ledger.writes.record_output_path(GATEWAY, "req-t", 0, None, error="HTTP 503")
    row = ledger.get(GATEWAY, "req-t")
    assert row is not None and row.copies_pending == [1]
    assert row.copies_given_up[0].startswith(f"{MAX_COPY_TRIES} tries failed, the last: ")


def test_copies_pending_are_read_from_the_newest_row_of_each_task_alone(
    ledger: Ledger, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The SQL picks the rows: those given up, copied, or older rows of a task are never
    read (R6: every finished row was parsed on each resume; R8: an older duplicate row
    was copied again and again, its copies recorded on the newest). Of the rows whose
    copies are recorded, only the paths are read, and only when asked (``removed``): a
    row is made of those gone alone. What every resume asks stats no file (review-5
    fault 5: 200,000 stats a resume of 50,000 tasks)."""
    finished(ledger, "req-p")
    finished(ledger, "req-done")
    for index in (0, 1):
        ledger.writes.record_output_path(GATEWAY, "req-done", index, None, error="x", expired=True)
    finished(ledger, "req-dup")
    finished(ledger, "req-dup")  # a second row of one task (created twice by a tool)
    finished(ledger, "req-gone")
    for name in ("req-dup", "req-gone"):
        for index in (0, 1):
            saved = tmp_path / f"{name}-{index}.png"
            saved.write_bytes(b"x")
            ledger.writes.record_output_path(GATEWAY, name, index, saved)
    (tmp_path / "req-gone-1.png").unlink()  # removed by the user since
    made = []
    monkeypatch.setattr(ledger_store, "LedgerRow", lambda **f: made.append(f) or LedgerRow(**f))
    ledger.flush()
    asked_disk: list[str] = []
    real_exists = os.path.exists
    monkeypatch.setattr(os.path, "exists", lambda p: asked_disk.append(p) or real_exists(p))
    found = ledger.with_copies_pending(GATEWAY)  # what every resume asks: no stat
    assert [(r.request_id, r.copies_pending) for r in found] == [("req-p", [0, 1])]
    assert len(made) == 1 and asked_disk == []  # review-5 fault 5: one stat a recorded copy
    found = ledger.with_copies_pending(GATEWAY, removed=True)
    assert [(r.request_id, r.copies_pending, r.copies_gone) for r in found] == [
        ("req-gone", [], [1]),
        ("req-p", [0, 1], []),
    ]
    assert len(made) == 3


def test_copies_pending_of_a_task_a_live_kernel_holds_are_left_to_it(tmp_path: Path) -> None:
    """Its own download may be running (the result is recorded before it): another
    kernel copies it only once that lease ends (R7b: the files were fetched twice)."""
    path = tmp_path / "ledger.sqlite3"
    with Ledger(path) as owner, Ledger(path) as other:
        finished(owner, "req-l")
        owner.flush()
        assert other.with_copies_pending(GATEWAY) == []
        owner.release()
        owner.flush()
        assert [r.request_id for r in other.with_copies_pending(GATEWAY)] == ["req-l"]


def test_inline_content_is_copied_only_when_stored_as_sent(ledger: Ledger) -> None:
    """A JSON output whose long base64 the ledger scrubbed is not the output: nothing to
    copy it from (R9: a file of its scrubbed form was recorded as the output's copy)."""
    scrubbed = {"content_type": "application/json", "content": {"image": "QUJD" * 400}}
    whole = {"content_type": "application/json", "content": {"Id": "x"}}
    finished(ledger, "req-i", scrubbed, whole)
    row = ledger.get(GATEWAY, "req-i")
    assert row is not None and row.copies_pending == [1]
    assert "<base64 sha256=" in row.outputs[0]["content"]


def test_without_sqlites_json_functions_the_rows_rule_chooses_the_same_rows(
    ledger: Ledger, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An SQLite built without JSON (before 3.38 it was an option): the rows lacking a
    path are read and ``LedgerRow.copies_pending`` chooses, as the SQL would."""
    finished(ledger, "req-p")
    finished(ledger, "req-given-up")
    for index in (0, 1):
        ledger.writes.record_output_path(GATEWAY, "req-given-up", index, None, expired=True)
    finished(ledger, "req-gone")
    ledger.writes.record_output_path(GATEWAY, "req-gone", 0, tmp_path / "removed.png")
    chosen = [r.request_id for r in ledger.with_copies_pending(GATEWAY, removed=True)]
    monkeypatch.setattr(ledger_store, "_COPIES_PENDING_WHERE", "")
    found = [r.request_id for r in ledger.with_copies_pending(GATEWAY, removed=True)]
    assert found == chosen == ["req-gone", "req-p"]
    found_now = [(r.request_id, r.copies_pending) for r in ledger.with_copies_pending(GATEWAY)]
    assert found_now == [("req-gone", [1]), ("req-p", [0, 1])]  # never copied: 1, not 0


@pytest.mark.parametrize("in_sql", [True, False], ids=["sql", "python"])
def test_a_row_whose_outputs_hold_no_object_is_skipped_and_the_others_still_read(
    ledger: Ledger, monkeypatch: pytest.MonkeyPatch, in_sql: bool
) -> None:
    """N9: one row written by hand or by a foreign tool (an output that is a string) is
    skipped with a log line; every read goes on (it raised, after resume had leased the
    unfinished tasks)."""
    if not in_sql:
        monkeypatch.setattr(ledger_store, "_COPIES_PENDING_WHERE", "")
    finished(ledger, "req-odd")
    finished(ledger, "req-p")
    ledger.flush()
    with sqlite3.connect(ledger.path) as conn:
        odd = '["note", {"index": 0, "url": "https://cdn.test/0.png", "path": null}]'
        conn.execute("UPDATE tasks SET outputs = ? WHERE request_id = 'req-odd'", (odd,))
    conn.close()
    assert [r.request_id for r in ledger.with_copies_pending(GATEWAY)] == ["req-p"]
    assert [r.request_id for r in ledger.rows(GATEWAY)] == ["req-p"]


def test_rows_finished_before_copies_were_marked_are_copied_only_where_a_download_failed(
    tmp_path: Path,
) -> None:
    """N2: a ``download=False`` client of an older genwidgets marked nothing; the first
    ledger opened by this one gives those outputs up (the upgrade downloaded every output
    ever declined), except where a download was tried and failed: that client wanted it."""
    path = tmp_path / "ledger.sqlite3"
    with Ledger(path) as old:
        finished(old, "req-declined")
        finished(old, "req-failed")
        old.writes.record_output_path(GATEWAY, "req-failed", 0, None, error="HTTP 503")
    with sqlite3.connect(path) as conn:  # as an older genwidgets left the file
        conn.execute("DELETE FROM meta WHERE key = 'copies_marked_since'")
    conn.close()
    with Ledger(path) as upgraded:
        [chosen] = upgraded.with_copies_pending(GATEWAY)
        assert (chosen.request_id, chosen.copies_pending) == ("req-failed", [0])
        declined = upgraded.get(GATEWAY, "req-declined")
        assert declined is not None and declined.copies_pending == []
        assert declined.copies_given_up[1].startswith("recorded before declined copies")
        finished(upgraded, "req-new")  # rows from here on follow the rules as they are
        assert [r.request_id for r in upgraded.with_copies_pending(GATEWAY)] == [
            "req-new",
            "req-failed",
        ]
