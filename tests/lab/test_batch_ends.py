"""What a batch row says when its task ended but its result could not be read, when no
status ever answered, and when its deadline cancel was taken before contact was lost
(review 32, faults 2 to 5): words true to what the gateway said, no Python class name,
never "left running" of a task that ended or of one whose cancel the gateway took."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from loopback import LoopbackServer, OneTaskGateway

import genwidgets as gw
from genwidgets.lab import batch as lab_batch

T2I = "genW2.5-t2i-preview"
TEMPLATE = {"prompt": "{text}, watercolor", "n": 1}
pytestmark = pytest.mark.timeout(180)
#: a Python class name said as the start of a failure ("ServerError: HTTP 500")
CLASS_NAME = re.compile(r"\b[A-Z][A-Za-z]*(Error|Unknown|Missing|NotFound|Closed|Unreachable): ")


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


@contextmanager
def client_of(handler: type[BaseHTTPRequestHandler], **options: Any) -> Iterator[gw.Client]:
    """A client (no ledger, one try a request) of a loopback gateway answering as
    ``handler``, whose polls give up only after ``failure_limit`` (many unless told)."""
    gateway = LoopbackServer(handler)
    policy = gw.PollPolicy(failure_limit=options.pop("failure_limit", 1000))
    try:
        with gw.Client(gateway.base, "key", ledger=False, max_retries=0, poll_policy=policy) as c:
            yield c
    finally:
        gateway.close()


def one_row(client: gw.Client, tmp_path: Path, **options: Any) -> gw.Batch:
    return gw.batch(
        T2I, [{"text": "a heron"}], TEMPLATE, out=tmp_path / "c", client=client, **options
    ).wait(timeout=120, progress="none")


class CompletedResultFails(OneTaskGateway):
    """Task ``r1`` COMPLETED; its result answers 500; its cancel is refused "Task
    already completed" (409)."""

    def do_GET(self) -> None:
        if self.path.endswith("/response"):
            self.send_json({"detail": "boom"}, code=500)
        else:
            self.send_json({"request_id": "r1", "status": "COMPLETED"})

    def do_PUT(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_json({"detail": "Task already completed"}, code=409)


@pytest.mark.parametrize("on_timeout", ["leave", "cancel"])
def test_a_row_whose_task_completed_and_whose_result_fails_says_it_ended(
    on_timeout: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fault 2 (a, b): every row was "left running" ("still running after 6 s", or "its
    cancel did not end it within 30 s") of a task the gateway said COMPLETED. It says the
    task ended and its result could not be read; running the batch again asks for it."""
    monkeypatch.setattr(lab_batch, "CANCEL_GRACE", 1.0)
    with client_of(CompletedResultFails) as client:
        batch = one_row(client, tmp_path, timeout=3, on_timeout=on_timeout)
        [row] = batch.rows
        words = row.error or ""
        assert row.status == "unknown" and row.request_id == "r1", words
        assert "its task ended (COMPLETED), but its result could not be read" in words
        assert "HTTP 500: boom" in words and "no new create" in words
        assert "left running" not in words and "still running" not in words
        assert "may still run" not in words and not CLASS_NAME.search(words), words
        assert "re-attaches it" in row.next_step
        assert batch.retry_failed() == 0


class StatusFails(OneTaskGateway):
    """Task ``r1``, whose status (and result) address answers 500 every time."""

    def do_GET(self) -> None:
        self.send_json({"detail": "boom"}, code=500)


def test_a_row_with_no_status_ever_heard_at_its_deadline_is_contact_lost(
    tmp_path: Path,
) -> None:
    """Fault 2 (c): a row whose polls all failed was "still running after 6 s: left
    running"; nothing was ever heard of its task: contact lost, ``unknown``."""
    with client_of(StatusFails) as client:
        [row] = one_row(client, tmp_path, timeout=3, on_timeout="leave").rows
        words = row.error or ""
        assert row.status == "unknown" and row.request_id == "r1", words
        assert words.startswith("contact lost (") and "HTTP 500: boom" in words, words
        assert "still running" not in words and "left running" not in words
        assert not CLASS_NAME.search(words), words


@pytest.mark.parametrize("said", ["Result not found", "Not Found", "Request not found"])
def test_a_row_whose_task_completed_and_whose_result_is_gone_says_so(
    said: str, tmp_path: Path
) -> None:
    """Fault 3: a 404 to a COMPLETED task's result other than "Request not found" was
    "contact lost (GatewayError: HTTP 404 ...): the task may still run or be done". The
    task completed, and is paid: its result is gone at the gateway."""

    class Purged(OneTaskGateway):
        def do_GET(self) -> None:
            if self.path.endswith("/response"):
                self.send_json({"detail": said}, code=404)
            else:
                self.send_json({"request_id": "r1", "status": "COMPLETED"})

    with client_of(Purged, failure_limit=2) as client:
        batch = one_row(client, tmp_path)
        [row] = batch.rows
        words = row.error or ""
        assert row.status == "unknown" and row.request_id == "r1", words
        assert "its task completed (COMPLETED) and is paid, but its result is gone" in words
        assert said in words and "may still run" not in words, words
        assert not CLASS_NAME.search(words), words
        assert batch.retry_failed() == 0


class CancelTakenThenAway(OneTaskGateway):
    """Task ``r1`` runs until its cancel, which is taken (202); from then on every poll
    and cancel answers 503 (the gateway away, past the cancel's grace)."""

    away = False

    def do_GET(self) -> None:
        if type(self).away:
            self.send_json({"detail": "upstream unavailable"}, code=503)
        else:
            self.send_json({"request_id": "r1", "status": "IN_PROGRESS"})

    def do_PUT(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if type(self).away:
            self.send_json({"detail": "upstream unavailable"}, code=503)
            return
        type(self).away = True
        self.send_json({"request_id": "r1", "status": "IN_PROGRESS"}, code=202)


def test_a_row_whose_deadline_cancel_was_taken_then_out_of_contact_is_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fault 4: the gateway took the deadline cancel (202), then went away past the
    cancel's grace while the job's own polls failed: the row was "left running: its
    cancel did not end it". It is ``unknown``, saying its cancel was taken."""
    monkeypatch.setattr(lab_batch, "CANCEL_GRACE", 1.0)
    monkeypatch.setattr(CancelTakenThenAway, "away", False)
    with client_of(CancelTakenThenAway) as client:
        [row] = one_row(client, tmp_path, timeout=1).rows
        words = row.error or ""
        assert row.status == "unknown" and row.request_id == "r1", words
        assert "the gateway had taken its cancel" in words and "HTTP 503" in words, words
        assert "left running" not in words and "did not end it" not in words
        assert not CLASS_NAME.search(words), words
