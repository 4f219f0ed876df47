"""The client and the ledger together: recorded before sending, outputs on disk, history."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import signal
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from fake_gateway import BASE, FakeGateway, error, speed_up
from loopback import FileHost, files_gateway

import genwidgets as gw
from genwidgets.jobs import downloads, recorder
from genwidgets.jobs.downloads import gateway_folder
from genwidgets.jobs.job import AsyncJob, Job
from genwidgets.jobs.ledger import MAX_COPY_TRIES, Ledger
from genwidgets.jobs.ledger import schema as ledger_schema
from genwidgets.jobs.ledger import writes as ledger_writes
from genwidgets.jobs.recorder import LedgerRecorder
from genwidgets.protocol.records import Result

KEY = "sk-ledger-SECRET-7777"
RATE = {"error": {"code": "RATE_LIMIT_EXCEEDED", "message": "slow"}, "request_id": "g"}


@pytest.fixture(autouse=True)
def _fast(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, known_key: Callable[[str], str]) -> None:
    speed_up(monkeypatch, tmp_path / "home")
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path / "home"))
    known_key(KEY)


@pytest.fixture
def fake() -> FakeGateway:
    f = FakeGateway()
    f.next_result = {
        "status": "COMPLETED",
        "error": None,
        "outputs": [
            {"url": f"{BASE}/files/tok/a.jpg", "content_type": "image/png"},
            {"content_type": "application/json", "content": '{"Id": "x"}'},
        ],
    }
    return f


def make_client(fake: FakeGateway) -> gw.Client:
    return gw.Client(BASE, KEY, transport=fake.transport())


def test_a_task_is_recorded_and_its_outputs_saved(fake: FakeGateway, tmp_path: Path) -> None:
    client = make_client(fake)
    job = client.submit("ep", {"prompt": "x"}, validate=False)
    res = job.result(timeout=5)
    row = client.ledger.get(client.gateway_name, job.request_id)
    assert row is not None and row.ok is True and row.status == "COMPLETED"
    assert row.payload == {"prompt": "x"}
    # the gateway's own folder (docs/decisions.md#outputs-by-gateway)
    out_dir = tmp_path / "home" / "outputs" / gateway_folder(BASE) / job.request_id
    # extension from content_type, never from the URL (.jpg there)
    assert res.outputs[0].path == out_dir / "0.png"
    assert res.outputs[0].path.read_bytes() == b"file:/files/tok/a.jpg"
    assert res.outputs[1].path == out_dir / "1.json"
    assert [o["path"] for o in row.outputs] == [str(out_dir / "0.png"), str(out_dir / "1.json")]
    written = res.outputs[0].path.read_bytes()
    assert row.outputs[0]["sha256"] == hashlib.sha256(written).hexdigest()
    assert row.outputs[0]["size"] == len(written)
    client.close()


def test_a_record_size_that_differs_is_kept_and_the_ledger_says_both(
    fake: FakeGateway, caplog: pytest.LogCaptureFixture
) -> None:
    """docs/decisions.md#downloads: a record's file_size that is not the size served
    (the transfer itself checked out) keeps the paid output; the ledger row says both
    sizes, and a warning names the output (the download was thrown away)."""
    fake.next_result = {
        "status": "COMPLETED",
        "outputs": [
            {"url": f"{BASE}/files/tok/a.png", "content_type": "image/png", "file_size": 99}
        ],
    }
    client = make_client(fake)
    with caplog.at_level("WARNING", logger="genwidgets"):
        job = client.submit("ep", {"prompt": "x"}, validate=False)
        output = job.result(timeout=5).outputs[0]
    assert output.path is not None and output.path.read_bytes() == b"file:/files/tok/a.png"
    row = client.ledger.get(client.gateway_name, job.request_id)
    assert row is not None
    (kept,) = row.outputs
    assert (kept["file_size"], kept["size"]) == (99, 21) and "download_error" not in kept
    assert kept["path"] == str(output.path)
    assert f"request_id {job.request_id}: the record says 99 bytes" in caplog.text
    client.close()


def test_key_is_never_written_to_the_ledger(fake: FakeGateway, tmp_path: Path) -> None:
    client = make_client(fake)
    fake.faults["create"].append(error(400, {"detail": f"bad key {KEY}"}))
    with pytest.raises(gw.GatewayError):
        client.submit("ep", {"prompt": "x"}, validate=False)
    client.submit("ep", {"prompt": "y"}, validate=False).result(timeout=5)
    client.close()
    for path in (tmp_path / "home").rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


def test_failed_creates_leave_the_right_trace(fake: FakeGateway) -> None:
    client = make_client(fake)
    # refused for 10 ms each (without a Retry-After the gate would hold each retry 1 s)
    fake.faults["create"].extend([error(429, RATE, {"retry-after-ms": "10"})] * 3)
    with pytest.raises(gw.RateLimited):
        client.submit("ep", {"n": 1}, validate=False)
    fake.faults["create"].append(httpx.ReadTimeout("lost"))
    with pytest.raises(gw.OutcomeUnknown, match="may exist"):
        client.submit("ep", {"n": 2}, validate=False)
    states = {r.payload["n"]: r.state for r in client.ledger.rows(client.gateway_name)}
    assert states == {1: "not_created", 2: "outcome_unknown"}
    client.close()


def test_history_after_a_restart_shows_results_without_polling(fake: FakeGateway) -> None:
    first = make_client(fake)
    done = first.submit("ep", {"prompt": "done"}, validate=False)
    done.result(timeout=5)
    first.close()

    later = make_client(fake)  # a new process would do the same: same GENWIDGETS_HOME
    before = fake.count("status")
    history = later.history()
    assert [j.request_id for j in history] == [done.request_id]
    job = history[0]
    assert job.done() and job.result(timeout=1).ok
    assert job.result().outputs[0].path is not None
    assert job.result().outputs[0].raw["from_ledger"] is True  # renderers prefer the file
    assert job.result().outputs[0].read() == b"file:/files/tok/a.jpg"
    assert fake.count("status") == before  # nothing asked of the gateway
    assert later.history(status="failed") == []
    assert later.history(endpoint="other") == []
    later.close()


def test_resume_reattaches_unfinished_jobs(fake: FakeGateway, tmp_path: Path) -> None:
    fake.next_statuses = [{"status": "IN_PROGRESS"}] * 5 + [{"status": "COMPLETED"}]
    first = gw.Client(BASE, KEY, transport=fake.transport())
    job = first.submit("ep", {"prompt": "slow"}, validate=False)
    first.close()  # the "kernel" dies while the task runs

    ledger = Ledger(tmp_path / "home" / "ledger.sqlite3")
    assert [r.request_id for r in ledger.rows(BASE, status="unfinished")] == [job.request_id]
    later = make_client(fake)
    resumed = later.resume()
    assert [j.request_id for j in resumed] == [job.request_id]
    assert resumed[0].result(timeout=60).ok
    assert later.ledger.flush(60)  # its end is written by its own ledger's writer thread
    assert ledger.rows(BASE, status="unfinished") == []
    later.close()


def test_reattach_by_id_is_recorded(fake: FakeGateway) -> None:
    rid = fake.add_task("ep", [{"status": "COMPLETED"}], {"status": "COMPLETED"})
    client = make_client(fake)
    client.job("ep", rid).result(timeout=5)
    row = client.ledger.get(client.gateway_name, rid)
    assert row is not None and row.ok is True
    client.close()


def test_ledger_can_be_turned_off(fake: FakeGateway, tmp_path: Path) -> None:
    client = gw.Client(BASE, KEY, transport=fake.transport(), ledger=False)
    res = client.submit("ep", {}, validate=False).result(timeout=5)
    assert client.ledger is None and client.history() == [] and res.outputs[0].path is None
    assert not (tmp_path / "home").exists()
    client.close()


def test_a_task_the_gateway_forgot_is_recorded_as_ended(fake: FakeGateway) -> None:
    client = make_client(fake)
    job = client.job("ep", "forgotten-id")
    with pytest.raises(gw.RequestNotFound):
        job.result(timeout=10)
    row = client.ledger.get(client.gateway_name, "forgotten-id")
    assert row is not None and row.ok is False and row.error_type == "request_not_found"
    assert client.ledger.rows(client.gateway_name, status="unfinished") == []
    assert client.resume() == []  # not re-attached again and again
    client.close()


def test_a_finished_task_a_new_gateway_forgot_is_answered_from_the_ledger(
    fake: FakeGateway,
) -> None:
    first = make_client(fake)
    done = first.submit("ep", {"prompt": "kept"}, validate=False)
    done.result(timeout=5)
    first.close()
    # a new kernel's embedded simulator (or a gateway past its retention) knows nothing
    forgetful = FakeGateway()
    later = gw.Client(BASE, KEY, transport=forgetful.transport())
    job = later.job("ep", done.request_id)
    result = job.result(timeout=5)
    assert result.ok and job.status_text == "COMPLETED" and len(result.outputs) == 2
    assert result.outputs[0].read() == b"file:/files/tok/a.jpg"  # the local copy
    assert forgetful.log == []  # the gateway was not asked
    row = later.ledger.get(later.gateway_name, done.request_id)
    assert row is not None and row.ok is True and row.error is None and len(row.outputs) == 2
    later.close()


def test_a_not_found_never_overwrites_a_recorded_end(fake: FakeGateway) -> None:
    client = make_client(fake)
    done = client.submit("ep", {"prompt": "kept"}, validate=False)
    done.result(timeout=5)
    gone = Result(status="UNKNOWN", error="the gateway no longer knows this task")
    assert client.ledger is not None
    written = client.ledger.writes.record_result(
        client.gateway_name, done.request_id, gone, gone=True
    )
    assert written.result(timeout=5) is False
    row = client.ledger.get(client.gateway_name, done.request_id)
    assert row is not None and row.ok is True and row.error is None and len(row.outputs) == 2
    client.close()


def test_a_task_of_another_key_is_neither_resumed_nor_called_gone(fake: FakeGateway) -> None:
    fake.next_statuses = [{"status": "IN_PROGRESS"}] * 5 + [{"status": "COMPLETED"}]
    ann = make_client(fake)
    job = ann.submit("ep", {"prompt": "ann's"}, validate=False)
    ann.close()  # ann's kernel stops while the task runs
    # a shared home, another student's key: the class gateway hides ann's task (404)
    hidden = FakeGateway()
    ben = gw.Client(BASE, "sk-ben-OTHER-4242", transport=hidden.transport())
    with pytest.warns(gw.LedgerWarning, match="another API key"):
        assert ben.resume(force=True) == []
    with pytest.warns(gw.LedgerWarning, match="another API key"):
        assert ben.history() == []
    with pytest.warns(gw.LedgerWarning, match="created with another API key"):
        asked = ben.job("ep", job.request_id)  # asked for by its id: followed, said
    with pytest.raises(gw.RequestNotFound):
        asked.result(timeout=10)
    ben.close()
    ann_again = make_client(fake)
    resumed = ann_again.resume()
    assert [j.request_id for j in resumed] == [job.request_id]
    assert resumed[0].result(timeout=60).ok
    assert ann_again.ledger is not None and ann_again.ledger.flush(60)
    row = ann_again.ledger.get(ann_again.gateway_name, job.request_id)
    assert row is not None and row.ok is True
    ann_again.close()


def test_a_task_of_an_older_ledger_is_followed_by_any_key(
    fake: FakeGateway, tmp_path: Path
) -> None:
    rid = fake.add_task("ep", [{"status": "COMPLETED"}], {"status": "COMPLETED", "outputs": []})
    path = tmp_path / "home" / "ledger.sqlite3"
    with pytest.MonkeyPatch.context() as old:  # a ledger of schema 4: no key recorded
        old.setattr(ledger_schema, "SCHEMA_VERSION", 4)
        Ledger(path).close()
    con = sqlite3.connect(path)
    con.execute(
        "INSERT INTO tasks (gateway, endpoint, request_id, state, payload, pid, host, "
        "submitted_at, updated_at) VALUES (?, 'ep', ?, 'submitted', '{}', 1, 'h', 1, 1)",
        (BASE, rid),
    )
    con.commit()
    con.close()
    client = make_client(fake)  # migrates the file
    resumed = client.resume()
    assert [j.request_id for j in resumed] == [rid] and resumed[0].result(timeout=10).ok
    client.close()


def test_a_task_ended_only_by_a_not_found_is_asked_again_by_its_id(fake: FakeGateway) -> None:
    client = make_client(fake)
    with pytest.raises(gw.RequestNotFound):
        client.job("ep", "late-id").result(timeout=10)
    client.close()
    # the gateway knows it after all (another key's 404, a gateway that came back)
    fake.add_task("ep", [{"status": "COMPLETED"}], {"status": "COMPLETED"}, request_id="late-id")
    again = make_client(fake)
    assert again.job("ep", "late-id").result(timeout=10).ok
    row = again.ledger.get(again.gateway_name, "late-id")
    assert row is not None and row.ok is True and row.error is None
    again.close()


# ----------------------------------------------------------------- copies pending
# docs/decisions.md#copies-pending: a finished task whose outputs were not copied is
# copied later, never created nor polled again; an expired URL, or MAX_COPY_TRIES, ends it


@pytest.fixture
def host(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FileHost, str]]:
    """A loopback gateway whose file host answers as the test says, and its address;
    a download's tries wait 10 ms (not the queue's backoff)."""
    monkeypatch.setattr(downloads, "backoff_delay", lambda attempt, rng=None: 0.01)
    files = FileHost()
    server = files_gateway(files)
    yield files, server.base
    server.close()


def finished_without_copies(base: str, *, saved: int = 0) -> tuple[gw.Client, str]:
    """A task that ended COMPLETED whose outputs were not copied (but ``saved`` of them);
    its client closed."""
    client = gw.Client(base, KEY)
    job = client.submit("ep", {"prompt": "x"}, validate=False)
    result = job.result(timeout=60)
    assert result.ok and sum(o.path is not None for o in result.outputs) == saved
    client.close()
    return client, job.request_id


def copied(base: str, result: Result) -> None:
    """Each output of ``result`` has its local copy, with its file's bytes."""
    for output in result.outputs:
        assert output.path is not None, output.raw
        assert (
            output.path.read_bytes()
            == f"bytes of /files/{result.request_id}/{output.index}.png".encode()
        )


def test_outputs_a_failing_file_host_kept_are_copied_by_the_next_resume_once(
    host: tuple[FileHost, str],
) -> None:
    files, base = host
    files.answer = 503  # every download fails, its tries too
    first, rid = finished_without_copies(base)
    row = first.ledger.get(first.gateway_name, rid)
    assert row is not None and row.copies_pending == [0, 1] and row.status == "COMPLETED"

    later = gw.Client(base, KEY)
    [listed] = later.history()  # said, not copied: history asks nothing
    assert "2 copies pending" in repr(listed) and listed.result().outputs[0].path is None
    files.answer = 200  # the file host works again
    [job] = later.resume()
    assert later.resume() in ([job], [])  # while it copies, the same job; never a second
    copied(base, job.result(timeout=30))
    assert later.resume() == []  # nothing left to copy
    assert files.served == {f"/files/{rid}/0.png": 1, f"/files/{rid}/1.png": 1}  # each once
    assert files.creates == 1  # nothing created again
    row = later.ledger.get(later.gateway_name, rid)
    assert row is not None and (row.status, row.ok, row.copies_pending) == ("COMPLETED", True, [])
    assert later.history()[0].result().outputs[1].path is not None
    later.close()


def test_outputs_a_home_that_could_not_take_them_missed_are_copied_by_resume(
    host: tuple[FileHost, str], tmp_path: Path
) -> None:
    """The outputs folder cannot be written (a file stands at its name: a way that works
    as root too, where chmod does not stop a write)."""
    files, base = host
    outputs = tmp_path / "home" / "outputs"
    outputs.parent.mkdir(parents=True)
    outputs.write_text("not a folder")
    _first, rid = finished_without_copies(base)
    outputs.unlink()  # space again
    before = dict(files.served)  # fetched, and not kept
    later = gw.Client(base, KEY)
    [job] = later.resume()
    copied(base, job.result(timeout=30))
    assert files.creates == 1
    assert {path: n - before[path] for path, n in files.served.items()} == {
        f"/files/{rid}/0.png": 1,
        f"/files/{rid}/1.png": 1,
    }  # each fetched once more
    row = later.ledger.get(later.gateway_name, rid)
    assert row is not None and (row.status, row.copies_pending) == ("COMPLETED", [])
    later.close()


def test_outputs_never_downloaded_before_the_kernel_died_are_copied_by_resume(
    host: tuple[FileHost, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The result was recorded and the kernel died before its download began (its copy
    never runs here); the next resume copies them."""
    files, base = host

    async def died_first(self: LedgerRecorder, job: Job, result: Result) -> None:
        pass

    with monkeypatch.context() as dying:
        dying.setattr(LedgerRecorder, "copy_outputs", died_first)
        first, rid = finished_without_copies(base)
    assert files.asked == 0
    row = first.ledger.get(first.gateway_name, rid)
    assert row is not None and row.copies_pending == [0, 1]
    with gw.Client(base, KEY) as later:
        [again] = later.resume()
        copied(base, again.result(timeout=30))
    assert files.creates == 1


def test_a_client_that_downloads_nothing_leaves_no_copies_pending(
    host: tuple[FileHost, str],
) -> None:
    """``download=False`` says no copies are wanted: a later client does not make them."""
    files, base = host
    with gw.Client(base, KEY, download=False) as first:
        rid = first.submit("ep", {"prompt": "x"}, validate=False).request_id
        first.job("ep", rid).result(timeout=30)
    with gw.Client(base, KEY) as later:
        assert later.resume() == []
        assert later.job("ep", rid).result(timeout=30).outputs[0].path is None
        row = later.ledger.get(later.gateway_name, rid)
        assert row is not None and row.copies_pending == []
        assert row.copies_given_up[0] == "declined: its client was made with download=False"
    assert files.asked == 0


def test_an_expired_url_ends_the_copy_with_its_reason_and_the_task_stays_completed(
    host: tuple[FileHost, str],
) -> None:
    files, base = host
    files.answer = 410
    _first, rid = finished_without_copies(base)
    asked = files.asked
    later = gw.Client(base, KEY)
    assert later.resume() == []  # nothing to copy: those URLs are gone
    job = later.job("ep", rid)
    assert job.result(timeout=30).ok and files.asked == asked  # not tried again
    row = later.ledger.get(later.gateway_name, rid)
    assert row is not None and (row.status, row.ok, row.copies_pending) == ("COMPLETED", True, [])
    assert set(row.copies_given_up) == {0, 1}
    assert (
        row.copies_given_up[0].startswith("URL expired: ") and "HTTP 410" in row.copies_given_up[0]
    )
    later.close()


def test_a_removed_copy_is_left_removed_by_resume_and_copied_again_when_asked(
    host: tuple[FileHost, str],
) -> None:
    """The user removed a task's local files (to free space): a plain resume leaves them
    removed, asking the file host nothing (review-5 fault 5: every resume fetched them
    again, against the user's will); ``resume(recopy=True)`` and ``client.job`` of the
    task copy them again, creating nothing. Removed again with the URLs expired, the copy
    is given up, not tried again (a failure used to be kept out by the path recorded)."""
    files, base = host
    client, rid = finished_without_copies(base, saved=2)
    row = client.ledger.get(client.gateway_name, rid)
    assert row is not None and row.copies_pending == []
    for output in row.outputs:
        Path(output["path"]).unlink()
    later = gw.Client(base, KEY)
    asked = files.asked
    assert later.resume() == [] and files.asked == asked
    [job] = later.resume(recopy=True)
    copied(base, job.result(timeout=30))
    for output in job.result().outputs:
        assert output.path is not None
        output.path.unlink()
    files.answer = 410
    again = gw.Client(base, KEY)
    assert again.job("ep", rid).result(timeout=30).ok
    asked = files.asked
    row = again.ledger.get(again.gateway_name, rid)
    assert row is not None and row.copies_pending == [] and row.copies_gone == []
    assert all(why.startswith("URL expired: ") for why in row.copies_given_up.values())
    assert again.resume(recopy=True) == [] and files.asked == asked  # not tried again
    assert files.creates == 1
    for done in (later, again):
        done.close()


def test_a_removed_copy_whose_url_now_serves_other_bytes_is_given_up_its_record_kept(
    host: tuple[FileHost, str], caplog: pytest.LogCaptureFixture
) -> None:
    """The user removed a task's files and its URLs now serve other bytes (ids reused by
    a restarted simulator, a replaced CDN object): asked for again, the new bytes are
    checked against the sha256 the ledger recorded, not saved, and the copy given up
    with why, the record of the removed copy kept and a warning said (review-5 fault 4:
    the file and the recorded digest were replaced in silence)."""
    files, base = host
    client, rid = finished_without_copies(base, saved=2)
    row = client.ledger.get(client.gateway_name, rid)
    assert row is not None
    before = [(o["path"], o["sha256"], o["size"]) for o in row.outputs]
    for output in row.outputs:
        Path(output["path"]).unlink()
    files.content = "other bytes at"
    later = gw.Client(base, KEY)
    with caplog.at_level("WARNING", logger="genwidgets"):
        result = later.job("ep", rid).result(timeout=30)
    assert result.ok and [o.path for o in result.outputs] == [None, None]
    row = later.ledger.get(later.gateway_name, rid)
    assert row is not None and [(o["path"], o["sha256"], o["size"]) for o in row.outputs] == before
    assert not any(Path(path).exists() for path, _, _ in before)
    assert row.copies_gone == [] and sorted(row.copies_given_up) == [0, 1]
    for why in row.copies_given_up.values():
        assert why.startswith("the URL now serves other bytes than the local copy removed since")
    assert "the URL now serves other bytes than the local copy removed since" in caplog.text
    asked = files.asked
    assert later.resume(recopy=True) == [] and files.asked == asked  # not asked again
    assert files.creates == 1
    later.close()


def test_a_copy_that_keeps_failing_is_given_up_after_its_tries(
    host: tuple[FileHost, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """result() of a task with copies pending tries them again, MAX_COPY_TRIES times in
    all (the first at the task's end), then says why it stopped."""
    files, base = host
    files.answer = 503
    _first, rid = finished_without_copies(base)
    later = gw.Client(base, KEY)
    monkeypatch.setattr(ledger_writes, "COPY_TRY_INTERVAL", 0.0)  # each try counts
    monkeypatch.setattr(recorder, "COPY_RETRY_PAUSE", 0.0)  # and none waits a minute
    for _ in range(MAX_COPY_TRIES - 1):
        job = later.job("ep", rid)
        assert job.result(timeout=30).outputs[0].path is None
    row = later.ledger.get(later.gateway_name, rid)
    assert row is not None and row.copies_pending == [] and set(row.copies_given_up) == {0, 1}
    assert row.copies_given_up[0].startswith(f"{MAX_COPY_TRIES} tries failed, the last: ")
    asked = files.asked
    assert later.resume() == [] and later.job("ep", rid).result(timeout=30).ok
    assert files.asked == asked and files.creates == 1 and row.status == "COMPLETED"
    later.close()


def test_a_copy_fetches_only_the_outputs_pending_and_its_failure_keeps_the_paths_recorded(
    host: tuple[FileHost, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Output 0 was copied, output 1 not; by the next session the URLs have expired. The
    copy asks for output 1 alone, and its failure gives 1 up without erasing 0's path
    (the review's R1: the whole result was downloaded again, and 'expired' written over
    the path of a file on disk). The home is reached by a link, as on many machines."""
    files, base = host
    (tmp_path / "home").mkdir(exist_ok=True)
    (tmp_path / "link").symlink_to(tmp_path / "home")
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path / "link"))
    files.answers = {1: 503}
    _first, rid = finished_with_one_copy(base)
    files.answer, files.answers = 410, {}
    asked = files.asked
    with gw.Client(base, KEY) as later:
        [job] = later.resume()
        result = job.result(timeout=30)
        assert files.asked == asked + 1  # output 1 only
        row = later.ledger.get(later.gateway_name, rid)
    assert row is not None and row.copies_pending == [] and set(row.copies_given_up) == {1}
    assert row.outputs[0]["path"] is not None and "copy_given_up" not in row.outputs[0]
    assert result.outputs[0].path is not None and result.outputs[0].path.is_file()


def finished_with_one_copy(base: str) -> tuple[gw.Client, str]:
    """A COMPLETED task whose output 0 was copied and output 1 was not; client closed."""
    client = gw.Client(base, KEY)
    job = client.submit("ep", {"prompt": "x"}, validate=False)
    result = job.result(timeout=30)
    assert result.outputs[0].path is not None and result.outputs[1].path is None
    client.close()
    return client, job.request_id


def test_a_copy_never_fetches_again_a_file_the_user_edited(
    host: tuple[FileHost, str],
) -> None:
    """An edited copy no longer holds its recorded digest; it is the user's now, and a
    later copy of the outputs pending leaves it be (R1c: it was fetched over)."""
    files, base = host
    files.answers = {1: 503}
    first, rid = finished_with_one_copy(base)
    row = first.ledger.get(first.gateway_name, rid)
    assert row is not None
    edited = Path(row.outputs[0]["path"])
    edited.write_bytes(b"my own edit")
    files.answers = {}
    with gw.Client(base, KEY) as later:
        [job] = later.resume()
        assert job.result(timeout=30).outputs[1].path is not None
    assert edited.read_bytes() == b"my own edit"
    assert files.served[f"/files/{rid}/0.png"] == 1


def test_a_job_read_back_with_copies_pending_is_done_at_once_and_cancels_nothing(
    host: tuple[FileHost, str],
) -> None:
    """The task ended: its job is done with the recorded result while its copy runs
    (``job.copying``); a cancel sends nothing, and ``result(timeout)`` returns the
    recorded result when the copy takes longer (R3: a TaskTimeout that said the task
    was alive, and a cancel request for a COMPLETED task)."""
    files, base = host
    files.answer = 503
    _first, _rid = finished_without_copies(base)
    files.answer = 200
    files.files_open.clear()  # the file host hangs
    try:
        with gw.Client(base, KEY) as later:
            [job] = later.resume()
            assert job.done() and job.copying is not None and not job.copying.done()
            result = job.result(timeout=0.05, cancel_on_timeout=True)
            assert result.ok and result.status == "COMPLETED"
            assert [o.path for o in result.outputs] == [None, None]
            job.cancel()
            job.request_cancel()
            assert job.copies_pending == 2 and not job.cancel_requested
            assert files.creates == 1  # the one create: no cancel was sent (a POST too)
            files.files_open.set()
            assert job.copying.result(timeout=30) is None
            assert job.copies_pending == 0 and job.result(timeout=30).outputs[0].path is not None
    finally:
        files.files_open.set()


def test_closing_the_client_mid_copy_keeps_the_recorded_end(
    host: tuple[FileHost, str],
) -> None:
    """R14: the job's finished_at is the task's, not the moment its client closed."""
    files, base = host
    files.answer = 503
    first, rid = finished_without_copies(base)
    row = first.ledger.get(first.gateway_name, rid)
    assert row is not None and row.finished_at is not None
    files.answer = 200
    files.files_open.clear()
    try:
        later = gw.Client(base, KEY)
        [job] = later.resume()
        later.close()
        assert job.finished_at == row.finished_at and job.result().ok
        assert job.copying is not None and job.copying.done()
    finally:
        files.files_open.set()


def test_a_task_another_key_made_is_not_copied_by_client_job(
    host: tuple[FileHost, str],
) -> None:
    """R4: ``client.job(id)`` copied a task another key made (its URLs are for that
    key's client; a refusal then gave the copy up for good)."""
    files, base = host
    files.answer = 503
    _first, rid = finished_without_copies(base)
    files.answer = 200
    asked = files.asked
    with gw.Client(base, "sk-another-KEY-8888") as other:
        job = other.job("ep", rid)
        assert job.copying is None and job.result(timeout=30).outputs[0].path is None
        row = other.ledger.get(other.gateway_name, rid)
    assert files.asked == asked
    assert row is not None and row.copies_pending == [0, 1] and row.copies_given_up == {}


@pytest.mark.parametrize(
    ("answer", "html_page"), [(403, False), (404, True)], ids=["403", "proxy-404-page"]
)
def test_a_403_from_the_gateways_own_origin_is_no_expired_url(
    host: tuple[FileHost, str], answer: int, html_page: bool
) -> None:
    """R4: the key is sent to the gateway's origin, so its 403 refuses the key (revoked,
    a proxy's page): a fault of contact, the copy stays pending (it was given up as an
    expired URL). N5: nor is a 404 there that is a proxy's HTML page (a deploy), not the
    gateway's JSON word: the copy is made once it is fixed."""
    files, base = host
    files.answer, files.html_errors = answer, html_page
    first, rid = finished_without_copies(base)
    row = first.ledger.get(first.gateway_name, rid)
    assert row is not None and row.copies_pending == [0, 1] and row.copies_given_up == {}
    files.answer = 200
    with gw.Client(base, KEY) as later:
        [job] = later.resume()
        copied(base, job.result(timeout=30))


def test_a_client_that_downloads_nothing_says_no_copies_pending(
    host: tuple[FileHost, str],
) -> None:
    """R2: the job's count is the ledger's rule: a ``download=False`` job has none."""
    _files, base = host
    with gw.Client(base, KEY, download=False) as client:
        job = client.submit("ep", {"prompt": "x"}, validate=False)
        assert job.result(timeout=30).outputs[0].path is None
        assert job.copies_pending == 0 and "pending" not in repr(job)


def test_an_async_job_read_back_waits_for_its_copy_too(host: tuple[FileHost, str]) -> None:
    """``await AsyncJob.result()`` waits for the copy as ``Job.result`` does."""
    files, base = host
    files.answer = 503
    _first, _rid = finished_without_copies(base)
    files.answer = 200
    with gw.Client(base, KEY) as later:
        [job] = later.resume()
        copied(base, asyncio.run(AsyncJob(job).result(timeout=30)))
        assert AsyncJob(job).copying is job.copying and job.copies_pending == 0


def test_a_row_whose_outputs_hold_no_object_stops_neither_resume_nor_history(
    host: tuple[FileHost, str],
) -> None:
    """N9: one row a foreign tool wrote (an output that is a string) is skipped: resume
    still follows the unfinished task it leased (it raised after the lease, stranding
    the task), and the history shows the rest."""
    files, base = host
    files.answer = 503
    first, odd = finished_without_copies(base)
    files.results_open.clear()  # the next task's result hangs: its client closes first
    try:
        with gw.Client(base, KEY) as waiting:
            unfinished = waiting.submit("ep", {"prompt": "y"}, validate=False).request_id
    finally:
        files.results_open.set()
    with sqlite3.connect(first.ledger.path) as conn:
        outputs = '["note", {"index": 0, "url": "https://cdn.test/0.png", "path": null}]'
        conn.execute("UPDATE tasks SET outputs = ? WHERE request_id = ?", (outputs, odd))
    conn.close()
    with gw.Client(base, KEY) as later:
        [job] = later.resume()
        assert job.request_id == unfinished and job.result(timeout=30).ok
        assert [j.request_id for j in later.history()] == [unfinished]


@pytest.mark.slow  # 8 to 18 s beside busy cores: the full command runs it
def test_outputs_over_a_cap_are_given_up_not_copied_by_the_next_resume(
    host: tuple[FileHost, str],
) -> None:
    """N1: a copy starts its caps afresh, so outputs past max_outputs were downloaded by
    the next resume; they are given up at once, saying the cap."""
    files, base = host
    files.outputs = downloads.MAX_OUTPUTS + 2
    first, rid = finished_without_copies(base, saved=downloads.MAX_OUTPUTS)
    row = first.ledger.get(first.gateway_name, rid)
    assert row is not None and row.copies_pending == []
    over = row.copies_given_up[downloads.MAX_OUTPUTS]
    assert over.startswith("over a cap: ") and "max_outputs" in over
    asked = files.asked
    with gw.Client(base, KEY) as later:
        assert later.resume() == []
    assert files.asked == asked


@contextlib.contextmanager
def read_back_with_copies_pending(files: FileHost, base: str) -> Iterator[Job]:
    """The job ``resume()`` gives of a COMPLETED task whose file host failed every
    download at its end and works now; its client closes when the block ends."""
    files.answer = 503
    finished_without_copies(base)
    files.answer = 200
    with gw.Client(base, KEY) as later:
        [job] = later.resume()
        yield job


def test_a_copy_cannot_be_cancelled_so_result_still_answers(host: tuple[FileHost, str]) -> None:
    """N6: ``job.copying.cancel()`` made ``result()`` raise CancelledError (and an async
    wait read it as its caller's own cancel); it is refused, the copy goes on."""
    files, base = host
    with read_back_with_copies_pending(files, base) as job:
        assert job.copying is not None and job.copying.cancel() is False
        copied(base, job.result(timeout=30))
        copied(base, asyncio.run(AsyncJob(job).result(timeout=30)))


def test_await_job_waits_for_its_copy_as_result_does(host: tuple[FileHost, str]) -> None:
    """N7: ``await job`` returned at once, its outputs with no path, while ``result()``
    and ``await AsyncJob(job)`` waited for the copy."""
    files, base = host
    with read_back_with_copies_pending(files, base) as job:

        async def awaited() -> Result:
            return await job

        copied(base, asyncio.run(awaited()))


def test_ctrl_c_while_waiting_for_a_copy_says_the_task_ended(
    host: tuple[FileHost, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """N8: it said the task was still running and offered job.cancel()."""
    files, base = host
    files.answer = 503
    _first, rid = finished_without_copies(base)
    files.answer = 200
    files.files_open.clear()  # the copy hangs
    try:
        with gw.Client(base, KEY) as later:
            [job] = later.resume()
            timer = threading.Timer(0.2, lambda: os.kill(os.getpid(), signal.SIGINT))
            timer.start()
            with pytest.raises(KeyboardInterrupt):
                job.result(timeout=30)
            err = capsys.readouterr().err
            assert f"task {rid} on ep has ended (COMPLETED)" in err
            assert "copies of its outputs not made yet pending" in err
            assert "still running" not in err and "cancel" not in err
    finally:
        files.files_open.set()


def test_asking_again_and_again_within_a_minute_of_a_failed_copy_costs_no_requests(
    host: tuple[FileHost, str],
) -> None:
    """N10: each client.job(...) ran a whole copy (3 requests an output) though a failed
    copy counts one try per 10 minutes; a copy that failed is not asked for again within
    COPY_RETRY_PAUSE."""
    files, base = host
    files.answer = 503
    _first, rid = finished_without_copies(base)
    with gw.Client(base, KEY) as later:
        later.job("ep", rid).result(timeout=30)  # the first copy fails: 3 requests each
        asked = files.asked
        for _ in range(5):
            assert later.job("ep", rid).result(timeout=30).outputs[0].path is None
        assert files.asked == asked


def test_client_job_of_a_task_a_live_kernel_holds_copies_nothing_while_another_is_pending(
    host: tuple[FileHost, str],
) -> None:
    """Only the task asked for is chosen (``request_id=``): a kernel still open holds
    this task's lease (its own copy may run), while another task's copy is pending."""
    files, base = host
    files.answer = 503
    _first, pending = finished_without_copies(base)
    with gw.Client(base, KEY) as kernel:  # stays open while the other client asks
        held = kernel.submit("ep", {"prompt": "y"}, validate=False).request_id
        assert kernel.job("ep", held).result(timeout=30).outputs[0].path is None
        files.answer = 200
        asked = files.asked
        with gw.Client(base, KEY) as later:
            job = later.job("ep", held)
            assert job.copying is None and job.result(timeout=30).outputs[0].path is None
        assert files.asked == asked
        assert pending != held
