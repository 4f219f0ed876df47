"""A cancel's 400/409 is no cancel taken by its words: the status says which (review 28,
fault 2; clifold: words differ between gateways, and are never read), on a loopback
gateway."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from loopback import LoopbackServer, OneTaskGateway

import genwidgets as gw
from genwidgets.jobs import job as job_module

AMBIGUOUS = [
    "Task already cancelled or completed",
    "Task has already been cancelled/completed",
    "Request already cancelled, completed or failed",
]


class RunningTask(OneTaskGateway):
    """A task whose status says IN_PROGRESS, then ``then`` once a cancel was answered
    (IN_PROGRESS unless set: it runs on), whose cancels are answered by ``answer``
    (status code, words); ``cancels`` counts them and ``asked_after`` the status asks
    after the first cancel."""

    lock = threading.Lock()
    answer = (500, "not set")
    then = "IN_PROGRESS"
    cancels = 0
    asked_after = 0

    def handle(self) -> None:
        with contextlib.suppress(ConnectionError):  # a client closed: not the subject
            super().handle()

    def do_GET(self) -> None:
        with self.lock:
            cancelled = type(self).cancels > 0
            type(self).asked_after += cancelled
        self.send_json({"request_id": "r1", "status": self.then if cancelled else "IN_PROGRESS"})

    def do_PUT(self) -> None:
        with self.lock:
            code, words = type(self).answer
            type(self).cancels += 1
        self.send_json({"detail": words}, code=code)


@pytest.fixture
def gateway(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackServer]:
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path))
    RunningTask.cancels = RunningTask.asked_after = 0
    RunningTask.then = "IN_PROGRESS"
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


@pytest.mark.parametrize(
    "answer",
    [(400, "Task already cancelled"), (409, "conflict"), (400, "Bad Request")],
    ids=["already-cancelled", "conflict", "bad-request"],
)
@pytest.mark.parametrize("then", ["CANCELLED", "COMPLETED"])
def test_a_cancel_refused_of_a_task_whose_status_says_it_ended_is_taken_whatever_its_words(
    gateway: LoopbackServer, answer: tuple[int, str], then: str
) -> None:
    """clifold, item 2: a 400/409 to a cancel was read by its words ("already
    cancelled"); a gateway saying 409 ``{"detail": "conflict"}`` of a task its status
    says CANCELLED (a cancel taken, its answer lost) or COMPLETED (it ended first) is the
    same case. The status asked says the task ended: the cancel is not refused, kept no
    longer, not sent again."""
    RunningTask.answer, RunningTask.then = answer, then
    with gw.Client(gateway.base, "key-of-a-loopback-gateway") as client:
        job = client.submit("genW2.5-t2i-preview", {"prompt": "a heron"})
        job.cancel()
        assert job.cancel_requested and job.cancel_error is None and job.cancel_taken
        assert RunningTask.asked_after >= 1  # the status, asked, said it ended
        assert job.last_status is not None and job.last_status.status == then
        assert job_module.kept_cancel(job) is None
    assert RunningTask.cancels == 1


def test_a_cancel_refused_already_cancelled_of_a_task_whose_status_says_it_runs_is_refused(
    gateway: LoopbackServer,
) -> None:
    """clifold, item 2: words saying cancelled and nothing else ("Task already
    cancelled") were a cancel taken, the status not asked: of a task its status says
    runs, ``cancel()`` returned as if taken while it billed on. The status decides: it
    runs, so the cancel is refused (a cancel may be asked again)."""
    RunningTask.answer = (400, "Task already cancelled")
    with gw.Client(gateway.base, "key-of-a-loopback-gateway") as client:
        job = client.submit("genW2.5-t2i-preview", {"prompt": "a heron"})
        with pytest.raises(gw.GatewayError, match="already cancelled"):
            job.cancel()
        assert not job.cancel_requested and not job.cancel_taken and not job.done()
        assert RunningTask.asked_after >= 1 and RunningTask.cancels == 1
