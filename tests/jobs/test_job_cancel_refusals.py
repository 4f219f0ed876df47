"""A cancel's 400 whose words name another end too ("already cancelled or completed")
is no cancel taken: the status says which (review 28, fault 2), on a loopback gateway."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from loopback import LoopbackServer, OneTaskGateway

import genwidgets as gw

AMBIGUOUS = [
    "Task already cancelled or completed",
    "Task has already been cancelled/completed",
    "Request already cancelled, completed or failed",
]


class RunningTask(OneTaskGateway):
    """A task that runs on (its status IN_PROGRESS) whose cancels are answered by
    ``answer`` (status code, words); ``cancels`` counts them and ``asked_after`` the
    status asks after the first cancel."""

    lock = threading.Lock()
    answer = (500, "not set")
    cancels = 0
    asked_after = 0

    def handle(self) -> None:
        with contextlib.suppress(ConnectionError):  # a client closed: not the subject
            super().handle()

    def do_GET(self) -> None:
        with self.lock:
            if type(self).cancels:
                type(self).asked_after += 1
        self.send_json({"request_id": "r1", "status": "IN_PROGRESS"})

    def do_PUT(self) -> None:
        with self.lock:
            code, words = type(self).answer
            type(self).cancels += 1
        self.send_json({"detail": words}, code=code)


@pytest.fixture
def gateway(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackServer]:
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path))
    RunningTask.cancels = RunningTask.asked_after = 0
    server = LoopbackServer(RunningTask)
    try:
        yield server
    finally:
        server.close()


def _until(condition: Callable[[], bool], limit: float = 60.0) -> bool:
    """Whether ``condition`` holds within ``limit`` seconds (asked every 20 ms)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


@pytest.mark.parametrize("words", AMBIGUOUS)
def test_a_first_cancel_refused_already_cancelled_or_completed_asks_the_status(
    gateway: LoopbackServer, words: str
) -> None:
    """Review 28, fault 2: any refusal whose words held "already cancelled" was a cancel
    taken, the status not asked; a gateway says one refusal for both ends, and of a task
    running (or completed, billed in full) ``cancel()`` returned as if taken. Words that
    name another end ask the status: running, the cancel is refused."""
    RunningTask.answer = (400, words)
    with gw.Client(gateway.base, "key-of-a-loopback-gateway") as client:
        job = client.submit("genW2.5-t2i-preview", {"prompt": "a heron"})
        with pytest.raises(gw.GatewayError, match="already"):
            job.cancel()
        assert not job.cancel_requested and job.cancel_error is not None
        assert not job.cancel_kept and not job.done()
        assert RunningTask.asked_after >= 1  # the status said it runs


@pytest.mark.parametrize("words", AMBIGUOUS)
def test_a_resent_cancel_refused_already_cancelled_or_completed_is_no_cancel_taken(
    gateway: LoopbackServer, words: str
) -> None:
    """The same words to a kept cancel sent again (its first try met a proxy's 502):
    recorded as taken, nothing sent again nor said, while the task billed on. The status
    is asked; running, the cancel is refused."""
    RunningTask.answer = (502, "Bad Gateway")
    with gw.Client(gateway.base, "key-of-a-loopback-gateway", max_retries=0) as client:
        job = client.submit("genW2.5-t2i-preview", {"prompt": "a heron"})
        with pytest.raises(gw.ServerError):
            job.cancel()
        first = RunningTask.cancels
        RunningTask.answer = (400, words)
        job.request_cancel()  # a click on Cancel: the kept cancel sent again at once
        assert _until(lambda: RunningTask.cancels > first and not job.cancel_kept)
        assert not job.cancel_requested and job.cancel_error is not None
        assert "already" in str(job.cancel_error) and not job.done()


def test_a_cancel_refused_already_cancelled_and_nothing_else_is_taken(
    gateway: LoopbackServer,
) -> None:
    """Words saying cancelled and nothing else ("Task already cancelled") are a cancel
    taken, its answer lost: kept no longer, not refused."""
    RunningTask.answer = (400, "Task already cancelled")
    with gw.Client(gateway.base, "key-of-a-loopback-gateway") as client:
        job = client.submit("genW2.5-t2i-preview", {"prompt": "a heron"})
        job.cancel()
        assert job.cancel_requested and job.cancel_error is None
        assert RunningTask.cancels == 1
