"""Job futures over the engine: terminality, waits, cancel, callbacks, interrupts."""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import itertools
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from fake_gateway import BASE, FAST_POLICY, FakeGateway, error, speed_up
from loopback import LoopbackServer, OneTaskGateway

import genwidgets as gw
from genwidgets._client import lost_contact
from genwidgets.jobs import job as job_module
from genwidgets.jobs.engine import get_engine
from genwidgets.jobs.job import AsyncJob, Job, poll_failed_since

KEY = "sk-job-tests-SECRET-42"


@pytest.fixture(autouse=True)
def _fast(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    speed_up(monkeypatch, tmp_path / "home")


@pytest.fixture
def fake() -> FakeGateway:
    return FakeGateway()


@pytest.fixture
def client(fake: FakeGateway) -> gw.Client:
    c = gw.Client(BASE, KEY, transport=fake.transport())
    yield c
    c.close()


def submit(client: gw.Client, **payload: Any) -> Job:
    return client.submit("ep", payload or {"prompt": "x"}, validate=False)


def test_submit_returns_a_job_with_the_handle(client: gw.Client) -> None:
    job = submit(client)
    assert job.endpoint == "ep"
    assert job.request_id.startswith("req-")
    assert job.status_url == f"{BASE}/v1/queue/ep/requests/{job.request_id}/status"
    assert job.response_url.endswith("/response") and job.cancel_url.endswith("/cancel")
    # the handle's place (the job's own follows its first poll, which may come first)
    assert job.handle.queue_position == 0
    assert job.payload == {"prompt": "x"}
    res = job.result(timeout=5)
    assert res.ok and job.done() and res.request_id == job.request_id
    assert job.finished_at is not None and job.elapsed >= 0
    assert client.jobs == [job]
    assert job.simulated is False and not hasattr(job, "client")  # knows the fact, not its client


def test_unknown_statuses_are_kept_verbatim_and_do_not_end_the_wait(
    client: gw.Client, fake: FakeGateway
) -> None:
    fake.next_statuses = [
        {"status": "IN_QUEUE", "queue_position": 2},
        {"status": "IN_QUEUE", "queue_position": 1},
        {"status": "WARMING_UP"},
        {"status": "IN_PROGRESS"},
        {"status": "COMPLETED"},
    ]
    seen: list[tuple[str, int | None]] = []
    job = submit(client)
    job.add_update_callback(lambda j: seen.append((j.last_status.status, j.queue_position)))
    assert job.result(timeout=5).ok
    statuses = [s for s, _ in seen]
    assert "WARMING_UP" in statuses and statuses[-1] == "COMPLETED"
    assert ("IN_QUEUE", 1) in seen or statuses[0] != "IN_QUEUE"


@pytest.mark.parametrize("final", ["CANCELLED", "CANCELED", "FAILED", "ERROR"])
def test_failure_statuses_end_the_wait(client: gw.Client, fake: FakeGateway, final: str) -> None:
    fake.next_statuses = [{"status": "IN_PROGRESS"}, {"status": final}]
    fake.next_result = None  # the result address never becomes readable
    res = submit(client).result(timeout=5)
    assert res.status == final and not res.ok


def test_completed_with_error_is_a_failed_result(client: gw.Client, fake: FakeGateway) -> None:
    fake.next_result = {"status": "COMPLETED", "error": "boom", "error_type": "runtime_error"}
    job = submit(client)
    res = job.result(timeout=5)
    assert not res.ok and res.error_type == "runtime_error"
    with pytest.raises(gw.TaskFailed) as info:
        res.raise_for_error()
    assert job.request_id in str(info.value)
    assert job.status_text == "FAILED"


def test_202_after_completed_keeps_polling(client: gw.Client, fake: FakeGateway) -> None:
    fake.next_statuses = [{"status": "COMPLETED"}]  # the first status poll sees it done
    fake.faults["response"].extend([httpx.Response(202, json={"status": "COMPLETED"})] * 3)
    assert submit(client).result(timeout=5).ok
    assert fake.count("response") == 4 and fake.count("status") == 1


def test_a_running_task_is_polled_at_its_result_address(
    client: gw.Client, fake: FakeGateway
) -> None:
    """Queued: the status address (the queue position is only there); seen running:
    the result address, whose 202 carries the status and whose 200 is the result,
    so no status request is left to send at the end."""
    fake.next_statuses = [
        {"status": "IN_QUEUE", "queue_position": 2},
        {"status": "IN_QUEUE", "queue_position": 1},
        {"status": "IN_PROGRESS"},
        {"status": "RENDERING"},
        {"status": "IN_PROGRESS"},
        {"status": "COMPLETED"},
    ]
    seen: list[tuple[str, int | None]] = []
    job = submit(client)
    job.add_update_callback(lambda j: seen.append((j.status_text, j.queue_position)))
    assert job.result(timeout=5).ok
    ops = [op for _, op, _ in fake.log if op in ("status", "response")]
    assert ops == ["status", "status", "status", "response", "response", "response"]
    words = [s for i, (s, q) in enumerate(seen) if i == 0 or seen[i - 1] != (s, q)]
    assert words == ["IN_QUEUE", "IN_QUEUE", "IN_PROGRESS", "RENDERING", "IN_PROGRESS", "COMPLETED"]
    assert seen[1] == ("IN_QUEUE", 1)
    assert job.last_status is not None and job.last_status.status == "COMPLETED"
    assert client.request_counts["status"] == 3 and client.request_counts["result"] == 3


@pytest.mark.parametrize(
    "answer",
    [
        httpx.Response(202),  # no body
        httpx.Response(202, json={"detail": "not ready"}),  # a body without the status
        httpx.Response(400, json={"detail": "use the status address"}),  # an error
        httpx.Response(200, json={"outputs": []}),  # a result without a status: not an end
    ],
    ids=["empty-202", "202-without-status", "400", "200-without-status"],
)
def test_a_result_address_that_says_less_than_the_status_is_not_polled_again(
    client: gw.Client, fake: FakeGateway, answer: httpx.Response, caplog: Any
) -> None:
    fake.next_statuses = [{"status": "IN_PROGRESS"}] * 3 + [{"status": "COMPLETED"}]
    fake.faults["response"].append(answer)
    with caplog.at_level("INFO", logger="genwidgets"):
        job = submit(client)
        assert job.result(timeout=5).ok  # the job is not failed by it
    assert "polled at their status address" in caplog.text
    ops = [op for _, op, _ in fake.log if op in ("status", "response")]
    # one status poll (running), the one result-address poll, then status polls to
    # the end, and the result fetched once
    assert ops[:2] == ["status", "response"] and ops[-1] == "response"
    assert set(ops[2:-1]) == {"status"}
    # later jobs of this client poll the status address only, while they run too
    fake.log.clear()
    fake.next_statuses = [{"status": "IN_PROGRESS"}] * 3 + [{"status": "COMPLETED"}]
    assert submit(client).result(timeout=5).ok
    later = [op for _, op, _ in fake.log if op in ("status", "response")]
    assert later.count("response") == 1 and later[-1] == "response"


def test_timeout_leaves_the_task_alive(client: gw.Client, fake: FakeGateway) -> None:
    fake.next_statuses = [{"status": "IN_PROGRESS"}] * 30 + [{"status": "COMPLETED"}]
    job = submit(client)
    with pytest.raises(gw.TaskTimeout) as info:
        job.result(timeout=0.05)
    assert isinstance(info.value, TimeoutError) and info.value.job is job
    assert job.request_id in str(info.value)
    assert not job.done()
    assert job.result(timeout=10).ok  # awaited again


def test_a_timeout_with_cancel_on_timeout_cancels_at_the_gateway(
    client: gw.Client, fake: FakeGateway
) -> None:
    """fal's ``client_timeout`` pair: the wait ends and the task does not bill on."""
    fake.next_statuses = [{"status": "IN_PROGRESS"}] * 1000
    job = submit(client)
    with pytest.raises(gw.TaskTimeout) as info:
        job.result(timeout=0.05, cancel_on_timeout=True)
    assert info.value.cancelled and "the gateway was asked to cancel it" in str(info.value)
    assert fake.count("cancel") == 1 and job.cancel_requested
    assert job.result(timeout=5).error_type == "cancelled"


def test_a_cancel_that_fails_after_a_timeout_says_the_task_may_run(
    client: gw.Client, fake: FakeGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake.next_statuses = [{"status": "IN_PROGRESS"}] * 1000
    job = submit(client)

    def refused() -> None:
        raise gw.Unauthorized("no", status_code=401)

    monkeypatch.setattr(job, "cancel", refused)
    with pytest.raises(gw.TaskTimeout) as info:
        job.result(timeout=0.05, cancel_on_timeout=True)
    assert not info.value.cancelled and "still alive" in str(info.value)
    assert isinstance(info.value.__cause__, gw.Unauthorized)
    job.request_cancel()


def test_cancel_ends_the_task(client: gw.Client, fake: FakeGateway) -> None:
    fake.next_statuses = [{"status": "IN_PROGRESS"}] * 1000
    job = submit(client)
    job.cancel()
    assert job.cancel_requested
    res = job.result(timeout=5)
    assert res.error_type == "cancelled" and fake.count("cancel") == 1
    job.cancel()  # a no-op once done
    assert fake.count("cancel") == 1


def test_request_cancel_does_not_block(client: gw.Client, fake: FakeGateway) -> None:
    fake.next_statuses = [{"status": "IN_PROGRESS"}] * 1000
    job = submit(client)
    engine_free = threading.Event()
    get_engine().call_soon(lambda: engine_free.wait(30))  # the engine thread is busy...
    try:
        job.request_cancel()  # ...so a call that waited for the cancel could not return
        job.request_cancel()  # second click ignored
        assert job.cancel_requested and fake.count("cancel") == 0
    finally:
        engine_free.set()
    assert job.result(timeout=5).error_type == "cancelled"
    assert fake.count("cancel") == 1


def wait_for(condition: Any, what: str, limit: float = 30.0) -> None:
    """Poll ``condition`` until true; fail naming ``what`` after a generous limit."""
    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, f"no {what} within {limit:g} s"
        time.sleep(0.005)


def test_done_callbacks_run_once_and_immediately_when_done(client: gw.Client) -> None:
    calls: list[Job] = []
    job = submit(client)
    job.add_done_callback(calls.append)
    job.result(timeout=5)
    # the future wakes waiters before it runs its callbacks: wait for that, bounded
    wait_for(lambda: calls == [job], "the done callback")
    job.add_done_callback(calls.append)  # already done: called now, in this thread
    assert calls == [job, job]  # and the first one did not run again


def test_a_failing_callback_does_not_stop_polling(client: gw.Client) -> None:
    job = submit(client)
    job.add_update_callback(lambda j: 1 / 0)
    assert job.result(timeout=5).ok


def test_remove_update_callback(client: gw.Client, fake: FakeGateway) -> None:
    fake.next_statuses = [{"status": "A"}, {"status": "B"}, {"status": "COMPLETED"}]
    seen: list[str] = []
    job = submit(client)
    remove = job.add_update_callback(lambda j: seen.append(j.status_text))
    remove()
    job.result(timeout=5)
    assert seen == []


def test_await_job_from_any_loop(client: gw.Client) -> None:
    async def main() -> Any:
        job = submit(client)
        return await job

    assert asyncio.run(main()).ok


def test_an_await_that_gives_up_leaves_the_job_followed(
    client: gw.Client, fake: FakeGateway
) -> None:
    """``await asyncio.wait_for(job, t)`` timing out (or a cancelled cell) ends that
    wait alone: the job goes on being polled and its result is fetched, as after
    ``job.result(timeout=t)``; the task exists and is paid."""
    fake.next_statuses = [{"status": "IN_PROGRESS"}] * 30 + [{"status": "COMPLETED"}]
    job = submit(client)

    async def impatient() -> None:
        await asyncio.wait_for(job, 0.05)

    with pytest.raises(TimeoutError):
        asyncio.run(impatient())
    assert not job.done()
    assert job.result(timeout=10).ok


def test_reattach_by_request_id(client: gw.Client, fake: FakeGateway) -> None:
    rid = fake.add_task("ep", [{"status": "COMPLETED"}], {"status": "COMPLETED", "outputs": []})
    job = client.job("ep", rid)
    assert job.result(timeout=5).ok
    assert client.job("ep", rid) is job


def test_unknown_request_id_fails_fast_with_request_not_found(
    client: gw.Client, fake: FakeGateway
) -> None:
    job = client.job("ep", "never-existed")
    with pytest.raises(gw.RequestNotFound):  # not TaskTimeout: believed after a short grace
        job.result(timeout=10)
    assert fake.count("status") <= 10  # and asked about a bounded number of times


def test_exception_says_why_a_job_ended_without_a_result_and_never_waits(
    client: gw.Client, fake: FakeGateway
) -> None:
    fake.next_statuses = [{"status": "IN_PROGRESS"}] * 1000
    running = submit(client)
    assert running.exception() is None  # still running: no wait, no answer
    lost = client.job("ep", "never-existed")
    with pytest.raises(gw.RequestNotFound) as raised:
        lost.result(timeout=10)
    assert lost.exception() is raised.value
    assert AsyncJob(lost).exception() is raised.value
    done = client.job("ep", fake.add_task("ep", [{"status": "COMPLETED"}], {"status": "COMPLETED"}))
    assert done.result(timeout=5).ok and done.exception() is None
    running.cancel()


def test_update_callbacks_see_the_final_state_before_the_result_is_released(
    client: gw.Client, fake: FakeGateway
) -> None:
    """The JobLike contract views rely on: at the last update the job is not yet done,
    so whoever waits on result() wakes after every view has drawn the end."""
    fake.next_statuses = [{"status": "IN_PROGRESS"}, {"status": "COMPLETED"}]
    seen: list[tuple[bool, bool]] = []
    job = submit(client)
    job.add_update_callback(lambda j: seen.append((j.last_result is not None, j.done())))
    job.result(timeout=5)
    assert (True, False) in seen  # the result was visible while done() was still false
    assert not any(done for _, done in seen)


@pytest.mark.slow
def test_persistent_poll_failures_end_with_server_error(
    client: gw.Client, fake: FakeGateway
) -> None:
    fake.next_statuses = [{"status": "IN_PROGRESS"}]
    job = submit(client)
    # at both addresses: the schedule may poll the result address instead (a 202 there
    # kept the job polling until the test's bound ran out, on a busy machine)
    fake.faults["status"].extend([error(503, {"detail": "down"})] * 50)
    fake.faults["response"].extend([error(503, {"detail": "down"})] * 50)
    with pytest.raises(gw.ServerError):
        job.result(timeout=60)  # about 1.5 s of backoff: a generous bound


def test_a_jobs_last_poll_failure_is_kept_until_a_status_answers(fake: FakeGateway) -> None:
    """A batch tells lost contact from silence after a failed deadline cancel by its job
    (``poll_failed_since``): the last poll's failure for want of contact and its time,
    kept until a status answers (the batch asked a status itself, on a pool of threads)."""
    fake.next_statuses = [{"status": "IN_PROGRESS"}] * 3 + [{"status": "COMPLETED"}]
    down = [error(503, {"detail": "down"})] * 10_000
    fake.faults["status"].extend(down)
    fake.faults["response"].extend(down)
    patient = dataclasses.replace(FAST_POLICY, failure_limit=10_000)
    started = time.time()
    with gw.Client(BASE, KEY, transport=fake.transport(), poll_policy=patient) as client:
        job = submit(client)
        wait_for(lambda: isinstance(poll_failed_since(job, started), gw.ServerError), "a 503")
        assert poll_failed_since(job, time.time() + 60) is None  # none failed after that
        fake.faults["status"].clear()
        fake.faults["response"].clear()
        assert job.result(timeout=30).ok
        assert poll_failed_since(job, started) is None  # a status answered since


def test_a_cancel_not_sent_for_want_of_contact_asks_a_status_ahead_of_the_queue(
    fake: FakeGateway,
) -> None:
    """A cancel that fails for want of contact (a 503) has the job's status asked at once,
    at the front of the client's status budget (``poll_failed_since`` answers within a
    batch's grace): the job's own poll waited behind a queue of other jobs' polls, and a
    row out of contact at its deadline was "left running" though no poll had failed."""
    fake.next_statuses = [{"status": "IN_PROGRESS"}]
    patient = dataclasses.replace(FAST_POLICY, failure_limit=10_000)
    with gw.Client(
        BASE,
        KEY,
        transport=fake.transport(),
        poll_policy=patient,
        max_retries=0,
        max_status_rate=2,
    ) as client:
        job = submit(client)
        wait_for(lambda: job.last_status is not None, "a status")
        budget = client._schedule.budget
        assert budget is not None
        engine = get_engine()  # 40 polls of other jobs at their ordinary priority: 20 s
        others = [engine.submit(budget.acquire(30.0)) for _ in range(40)]
        wait_for(lambda: budget.waiting >= 30, "a queue")
        down = [error(503, {"detail": "down"})] * 10_000
        for op in ("status", "response", "cancel"):
            fake.faults[op].extend(down)
        asked = time.time()
        job.request_cancel()
        try:
            wait_for(lambda: poll_failed_since(job, asked) is not None, "a failed poll", 60)
            assert isinstance(job.cancel_error, gw.ServerError)
            assert sum(f.done() for f in others) < 20  # it went ahead of the queue
        finally:
            for future in others:
                future.cancel()


class DownAfterCreate(OneTaskGateway):
    """A task running on; once ``down`` every poll and cancel gets a 503. ``gets`` counts
    the polls (status and result address) asked while down."""

    down = False
    gets = 0

    def do_GET(self) -> None:
        if not self.down:
            self.send_json({"request_id": "r1", "status": "IN_PROGRESS"})
            return
        type(self).gets += 1
        self.send_json({"detail": "upstream unavailable"}, code=503)

    def do_PUT(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_json({"detail": "upstream unavailable"}, code=503)


def test_cancels_failing_for_want_of_contact_ask_one_status_each_not_two(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Cancel clicked again and again in an outage: each failed cancel asks one urgent
    status at most (none while one is pending) and does not also wake the job's poll,
    which doubled the requests of every click."""
    monkeypatch.setattr(DownAfterCreate, "down", False)
    monkeypatch.setattr(DownAfterCreate, "gets", 0)
    patient = gw.PollPolicy(failure_limit=10_000, first=30.0, late_cap=30.0, knee=30.0)
    gateway = LoopbackServer(DownAfterCreate)
    clicks = 10
    try:
        with gw.Client(gateway.base, KEY, max_retries=0, poll_policy=patient) as client:
            job = submit(client)
            wait_for(lambda: job.last_status is not None, "a status")
            DownAfterCreate.down = True
            for _ in range(clicks):
                before = job.cancel_error
                job.request_cancel()
                wait_for(lambda b=before: job.cancel_error is not b, "a failed cancel")
                wait_for(lambda: job._asked_now is not None and job._asked_now.done(), "a status")
                wait_for(lambda: job.poll_error is not None, "a failed poll")
            # one each, and a kept cancel sent again on its own wakes the poll: not two each
            assert 1 <= DownAfterCreate.gets <= clicks * 3 // 2
    finally:
        gateway.close()


@pytest.mark.slow
def test_occasional_poll_failures_are_absorbed(client: gw.Client, fake: FakeGateway) -> None:
    fake.next_statuses = [{"status": "IN_PROGRESS"}] * 4 + [{"status": "COMPLETED"}]
    fake.faults["status"].extend([error(502, "<html>bad gateway</html>"), httpx.ReadTimeout("x")])
    assert submit(client).result(timeout=5).ok


def test_one_request_in_flight_per_job_and_a_bound_per_client() -> None:
    in_flight: dict[str, int] = {}
    peak = {"total": 0, "per_job": 0}
    total = 0
    polls: dict[str, int] = {}

    async def handler(request: httpx.Request) -> httpx.Response:
        nonlocal total
        parts = request.url.path.strip("/").split("/")
        if request.method == "POST":
            rid = f"r{len(polls)}"
            polls[rid] = 0
            return httpx.Response(200, json={"request_id": rid})
        rid = parts[-2]
        in_flight[rid] = in_flight.get(rid, 0) + 1
        total += 1
        peak["per_job"] = max(peak["per_job"], in_flight[rid])
        peak["total"] = max(peak["total"], total)
        await asyncio.sleep(0.02)
        in_flight[rid] -= 1
        total -= 1
        polls[rid] += 1
        done = polls[rid] >= 3
        return httpx.Response(200, json={"status": "COMPLETED" if done else "IN_PROGRESS"})

    client = gw.Client(BASE, KEY, transport=httpx.MockTransport(handler), max_in_flight=3)
    jobs = [client.submit("ep", {}, validate=False) for _ in range(12)]
    for job in jobs:
        job.result(timeout=20)
    client.close()
    assert peak["per_job"] == 1
    assert 1 < peak["total"] <= 3


def test_key_never_in_reprs_errors_or_logs(
    client: gw.Client, fake: FakeGateway, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG")
    fake.faults["create"].append(
        error(401, {"error": {"code": "UNAUTHORIZED", "message": f"bad {KEY}"}})
    )
    with pytest.raises(gw.Unauthorized) as info:
        submit(client)
    job = submit(client)
    job.result(timeout=5)
    texts = [repr(client), str(client), repr(job), str(info.value), repr(info.value), caplog.text]
    assert not [t for t in texts if KEY in t]
    assert fake.seen_headers[0]["authorization"] == f"Bearer {KEY}"


def test_blocking_call_from_a_callback_is_refused_clearly(client: gw.Client) -> None:
    errors: list[BaseException] = []

    def blocking(job: Job) -> None:
        try:
            job.status()
        except RuntimeError as exc:
            errors.append(exc)

    job = submit(client)
    job.add_done_callback(blocking)
    job.result(timeout=5)
    wait_for(lambda: bool(errors), "the callback's refused blocking call")
    assert "engine thread" in str(errors[0])


def test_ctrl_c_stops_the_wait_not_the_task(
    client: gw.Client, fake: FakeGateway, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.next_statuses = [{"status": "IN_PROGRESS"}] * 40 + [{"status": "COMPLETED"}]
    job = submit(client)
    timer = threading.Timer(0.2, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        job.result(timeout=30)
    err = capsys.readouterr().err
    assert "still running" in err and job.request_id in err and "job.cancel()" in err
    assert fake.count("cancel") == 0
    assert job.result(timeout=10).ok


@pytest.mark.slow
def test_works_unchanged_under_nest_asyncio(tmp_path: Path) -> None:
    # nest_asyncio patches asyncio globally, so it runs in its own interpreter
    script = textwrap.dedent(
        f"""
        import asyncio, sys
        sys.path.insert(0, {str(Path(__file__).parents[1])!r})
        import nest_asyncio
        nest_asyncio.apply()
        from fake_gateway import BASE, FakeGateway
        import genwidgets as gw

        fake = FakeGateway()
        client = gw.Client(BASE, "k-123456", transport=fake.transport())

        async def cell():
            # a notebook cell: a running loop, a blocking call, then an await
            job = client.submit("ep", {{}}, validate=False)
            blocking = job.result(timeout=20)
            again = await client.submit("ep", {{}}, validate=False)
            return blocking.ok and again.ok

        loop = asyncio.new_event_loop()
        print("OK" if loop.run_until_complete(cell()) else "BAD")
        """
    )
    path = tmp_path / "nested.py"
    path.write_text(script)
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "OK", done.stderr


# -- a poll policy and a clock per client (no module constants to patch) ----------------


@pytest.mark.slow
def test_a_clients_poll_policy_sets_how_many_failed_polls_a_job_survives(
    fake: FakeGateway,
) -> None:
    from fake_gateway import FAST_POLICY

    from genwidgets.jobs.polling import PollPolicy

    outcomes = []
    for limit in (1, 3):
        policy = PollPolicy(**{**vars(FAST_POLICY), "failure_limit": limit})
        client = gw.Client(BASE, KEY, transport=fake.transport(), poll_policy=policy)
        job = submit(client)
        for address in ("status", "response"):  # the schedule may poll either
            fake.faults[address].extend([error(503, {"detail": "down"})] * 2)
        try:
            outcomes.append(job.result(timeout=60).ok)
        except gw.ServerError:
            outcomes.append("gave up")
        fake.faults["status"].clear()
        fake.faults["response"].clear()
        client.close()
    assert outcomes == ["gave up", True]


def test_a_clients_clock_times_its_schedule(fake: FakeGateway) -> None:
    ticks: list[float] = []

    def clock() -> float:
        ticks.append(time.monotonic())
        return ticks[-1]

    client = gw.Client(BASE, KEY, transport=fake.transport(), clock=clock)
    assert submit(client).result(timeout=5).ok
    client.close()
    assert len(ticks) >= 2  # the schedule and the budget read this clock, not time's


@pytest.mark.parametrize(
    ("field", "value", "error_type"),
    [
        ("first", -0.5, ValueError),
        ("failure_limit", 0, ValueError),
        ("growth", "fast", TypeError),
        ("jitter", 1.0, ValueError),
        ("not_found_grace", float("nan"), ValueError),
    ],
)
def test_a_poll_policy_refuses_what_cannot_work(
    field: str, value: Any, error_type: type[Exception]
) -> None:
    from genwidgets.jobs.polling import PollPolicy

    with pytest.raises(error_type, match=field):
        PollPolicy(**{field: value})


HTML_404 = "<!DOCTYPE html><html><body><h1>404 Not Found</h1><hr>nginx</body></html>"


def test_a_proxys_404_page_on_a_poll_is_contact_lost_never_the_task_gone(
    client: gw.Client, fake: FakeGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past a task's first minute a proxy's HTML 404 on a poll ended the job with
    ``RequestNotFound`` and the ledger recorded the paid task gone. Only the gateway's
    word means gone: this is contact lost, and following the task again gives its result
    with no second create."""
    monkeypatch.setattr(job_module, "NOT_VISIBLE_FOR", 0.0)  # past the first minute
    for op in ("status", "response"):
        fake.faults[op].extend([error(404, HTML_404)] * 20)
    job = submit(client)
    with pytest.raises(gw.GatewayError) as raised:
        job.result(timeout=10)
    assert not isinstance(raised.value, gw.RequestNotFound)
    assert raised.value.status_code == 404 and "HTML page" in str(raised.value)
    assert lost_contact(job)
    assert client.ledger is not None
    row = client.ledger.rows(client.gateway_name, limit=1)[0]
    assert row.request_id == job.request_id and row.state != "finished", row
    fake.faults.clear()  # the proxy is fixed
    again = client.job("ep", job.request_id)
    assert again.result(timeout=10).ok
    assert fake.count("create") == 1


def test_one_proxy_404_page_on_a_poll_is_one_failed_contact_and_the_job_polls_on(
    client: gw.Client, fake: FakeGateway
) -> None:
    """A single HTML 404 page from a proxy in front of the gateway (a deploy) ended a
    live job "contact lost" at once. It is one failed contact, as a 5xx is: followed on
    with backoff up to the failure limit, and the task's result is had."""
    for op in ("status", "response"):  # the schedule may poll either
        fake.faults[op].append(error(404, HTML_404))
    job = submit(client)
    assert job.result(timeout=10).ok
    assert fake.count("create") == 1


def test_a_result_address_answering_a_proxy_404_page_while_the_task_runs_is_left_for_the_status(
    client: gw.Client, fake: FakeGateway, caplog: Any
) -> None:
    """A gateway whose result address answers its web framework's HTML 404 page until the
    result exists ended a running task "contact lost" after the failure limit's polls of
    it. Such a page at the result address says less than the status address: the job
    polls the status from then on, and has the result."""
    fake.next_statuses = [{"status": "IN_PROGRESS"}] * 6 + [{"status": "COMPLETED"}]
    limit = FAST_POLICY.failure_limit
    fake.faults["response"].extend([error(404, HTML_404)] * limit)
    with caplog.at_level("INFO", logger="genwidgets"):
        assert submit(client).result(timeout=10).ok
    assert "polled at their status address" in caplog.text
    ops = [op for _, op, _ in fake.log if op in ("status", "response")]
    assert ops[:3] == ["status", "response", "status"], ops  # one page, then the status


RATE_LIMITED = {"error": {"code": "RATE_LIMIT_EXCEEDED", "message": "slow down"}}


@pytest.fixture
def short_rate_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Clients whose rate gate waits out at most 0.05 s silently (``max_wait``): a
    ``Retry-After`` of a fraction of a second is then past it."""
    from genwidgets.protocol import http
    from genwidgets.protocol.gate import RateGate

    monkeypatch.setattr(http, "RateGate", lambda: RateGate(max_wait=0.05))


@pytest.mark.usefixtures("short_rate_waits")
def test_a_poll_told_to_wait_past_the_gates_max_wait_waits_and_the_job_follows_on(
    fake: FakeGateway,
) -> None:
    """A status poll's 429 whose Retry-After exceeded the gate's ``max_wait`` ended the
    job with ``RateLimited``, though the task exists: the job waits the whole wait and
    polls on, at the status and at the result address alike."""
    for op in ("status", "response"):
        fake.faults[op].append(error(429, RATE_LIMITED, {"Retry-After": "0.3"}))
    with gw.Client(BASE, KEY, transport=fake.transport()) as client:
        assert submit(client).result(timeout=10).ok
    assert fake.count("create") == 1


@pytest.mark.usefixtures("short_rate_waits")
def test_only_the_callers_timeout_ends_the_wait_of_a_rate_limited_job(
    fake: FakeGateway,
) -> None:
    """Under a long rate limit the caller's timeout is what ends the wait, as a
    ``TaskTimeout``; the job still follows its task (it may have billed)."""
    fake.faults["status"].append(error(429, RATE_LIMITED, {"Retry-After": "30"}))
    with gw.Client(BASE, KEY, transport=fake.transport()) as client:
        job = submit(client)
        wait_for(lambda: not fake.faults["status"], "the first poll's 429")
        with pytest.raises(gw.TaskTimeout):
            job.result(timeout=0.3)
        assert not job.done()


@pytest.mark.usefixtures("short_rate_waits")
def test_a_lasting_rate_limit_on_polls_ends_the_job_as_contact_lost_after_its_bound(
    fake: FakeGateway,
) -> None:
    """Polls refused for the rate limit without end (a daily quota) kept a job with no
    timeout waiting for ever: ``client.run()``, ``genwidgets resume`` without ``--wait``.
    Past the policy's ``rate_limited_for`` of nothing but 429s (measured on the
    client's clock) the job ends ``RateLimited``: contact lost, never failed, its
    ledger row unfinished so that it is followed again later."""
    shift = [0.0]
    for op in ("status", "response"):
        fake.faults[op].extend([error(429, RATE_LIMITED, {"Retry-After": "0.1"})] * 500)
    from genwidgets.jobs.polling import PollPolicy

    policy = PollPolicy(**{**vars(FAST_POLICY), "late_cap": 0.05})  # an old task: no 5 s wait
    with gw.Client(
        BASE,
        KEY,
        transport=fake.transport(),
        clock=lambda: time.monotonic() + shift[0],
        poll_policy=policy,
    ) as client:
        job = submit(client)
        wait_for(lambda: fake.count("status") + fake.count("response") >= 3, "refused polls")
        assert not job.done()
        shift[0] = FAST_POLICY.rate_limited_for + 1.0  # half an hour of 429s passes
        with pytest.raises(gw.RateLimited, match="for 30 minutes") as ended:
            job.result(timeout=10)
        assert ended.value.request_id == job.request_id and lost_contact(job)
        assert client.ledger is not None
        row = client.ledger.rows(client.gateway_name, limit=1)[0]
        assert row.request_id == job.request_id and row.state != "finished", row
    assert fake.count("create") == 1


@pytest.mark.usefixtures("short_rate_waits")
@pytest.mark.parametrize(
    ("response_faults", "answered"),
    [
        ([RATE_LIMITED] * 2, ("status", 200)),  # the status says COMPLETED
        ([RATE_LIMITED, "202", RATE_LIMITED, RATE_LIMITED], ("response", 202)),  # not yet
    ],
    ids=["terminal-status", "result-202"],
)
def test_any_answer_of_the_gateway_ends_a_stretch_of_rate_limits(
    fake: FakeGateway, response_faults: list[Any], answered: tuple[str, int]
) -> None:
    """``rate_limited_for`` bounds a stretch of nothing but 429s. A status saying the
    task ended, and a 202 of its result address, did not end the stretch: the result
    fetch's next 429 counted from the polls' first one, and a job the gateway had just
    answered ended ``RateLimited``, its result moments away. Any answer ends it."""
    from genwidgets.jobs.polling import PollPolicy

    limited = error(429, RATE_LIMITED, {"Retry-After": "0.1"})
    fake.next_statuses = [{"status": "COMPLETED"}]
    fake.faults["status"].extend([limited] * 2)
    for fault in response_faults:
        done = httpx.Response(202, json={"status": "COMPLETED"})
        fake.faults["response"].append(done if fault == "202" else limited)
    shift = [0.0]
    policy = PollPolicy(**{**vars(FAST_POLICY), "late_cap": 0.05})

    def handle(request: httpx.Request) -> httpx.Response:
        response = fake.handle(request)
        op = request.url.path.rsplit("/", 1)[-1]
        if (op, response.status_code) == answered:  # then the rest of the stretch passes
            shift[0] = policy.rate_limited_for + 1.0
        return response

    with gw.Client(
        BASE,
        KEY,
        transport=httpx.MockTransport(handle),
        clock=lambda: time.monotonic() + shift[0],
        poll_policy=policy,
        max_retries=0,
    ) as client:
        assert submit(client).result(timeout=10).ok
    assert shift[0] > 0 and not fake.faults["response"]  # every 429 was met
    assert fake.count("create") == 1


def test_a_result_address_flapping_5xx_and_202_after_the_task_ended_ends_at_the_failure_limit(
    fake: FakeGateway,
) -> None:
    """A task COMPLETED whose result address answered 503, then 202 "not yet", again and
    again, was polled for ever: every 202 cleared the count of failed fetches. Once the
    task has ended a 202 is no progress, so the job ends at the failure limit."""
    fake.next_statuses = [{"status": "COMPLETED"}]
    flaps = [error(503, {"detail": "upstream unavailable"}), httpx.Response(202, json={})]
    fake.faults["response"].extend(flaps * 10)  # then the result: the job ended ok before
    client = gw.Client(BASE, KEY, transport=fake.transport(), max_retries=0)
    with client, pytest.raises(gw.ServerError, match="503"):
        submit(client).result(timeout=10)
    limit = FAST_POLICY.failure_limit
    assert fake.count("response") == 2 * limit - 1  # 503, 202, 503, 202, 503
    assert fake.count("create") == 1


def test_a_result_address_404_while_the_status_says_the_task_runs_is_asked_of_the_status(
    fake: FakeGateway, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    """A running task's result address answering 404 ``Request not found`` until the
    result exists ended the job gone past its first minute, and a ledger recorded the
    paid task final. While the task runs its status is the authority: the status
    address is asked; it says the task runs, so the job polls the status from then
    on and has the result."""
    monkeypatch.setattr(job_module, "NOT_VISIBLE_FOR", 0.0)  # past the first minute
    fake.next_statuses = [{"status": "IN_PROGRESS"}] * 4 + [{"status": "COMPLETED"}]

    def handle(request: httpx.Request) -> httpx.Response:
        task = next(iter(fake.tasks.values()), None)
        running = task is not None and task.polls < len(task.statuses) - 1
        if request.url.path.endswith("/response") and running:
            fake.log.append((time.monotonic(), "response", request.url.path))
            return error(404, {"detail": "Request not found"})
        return fake.handle(request)

    with (
        caplog.at_level("INFO", logger="genwidgets"),
        gw.Client(BASE, KEY, transport=httpx.MockTransport(handle)) as client,
    ):
        assert submit(client).result(timeout=10).ok
        assert client.ledger is not None
        row = client.ledger.rows(client.gateway_name, limit=1)[0]
        assert row.state == "finished" and row.error is None, row
    assert fake.count("response") >= 2  # the 404s, then the result
    assert "polled at their status address" in caplog.text
    assert fake.count("create") == 1


def test_a_wall_clock_step_never_makes_a_new_task_believed_gone(
    fake: FakeGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first minute in which a task's 404 may mean "not visible yet" is measured on
    the client's monotonic clock: a wall clock stepped an hour on (NTP, a laptop waking)
    called a task made a moment ago gone; a minute on that clock does."""
    shift = [0.0]
    with gw.Client(
        BASE, KEY, transport=fake.transport(), clock=lambda: time.monotonic() + shift[0]
    ) as client:
        job = submit(client)
        fake.tasks.clear()  # from now on the gateway answers 404 "Request not found"
        stepped = time.time() + 3600.0
        monkeypatch.setattr(job_module, "time", SimpleNamespace(time=lambda: stepped))
        wait_for(lambda: fake.count("status") + fake.count("response") >= 12, "a dozen polls")
        assert not job.done()
        shift[0] = job_module.NOT_VISIBLE_FOR + 1.0  # a minute passes on the job's clock
        with pytest.raises(gw.RequestNotFound):
            job.result(timeout=10)


def test_a_cancel_that_cannot_reach_the_gateway_is_kept_and_sent_once_contact_is_back(
    client: gw.Client, fake: FakeGateway
) -> None:
    """A cancel met by an outage (connections refused) was dropped: ``cancel()`` raised,
    but ``cancel_requested`` stayed True with no ``cancel_error`` (the view said "cancel
    requested", its button spent), and the task ran on and billed. It is kept, said in
    ``cancel_error``, and sent again once the gateway answers."""
    fake.next_statuses = [{"status": "IN_PROGRESS"}] * 1000
    job = submit(client)
    fake.faults["cancel"].extend([httpx.ConnectError("refused")] * 100)
    with pytest.raises(gw.Unreachable):
        job.cancel()
    assert job.cancel_requested and isinstance(job.cancel_error, gw.Unreachable)
    # its tries, and any resend at an answered poll since: nothing taken
    assert job.cancel_kept and fake.count("cancel") >= 3
    fake.faults["cancel"].clear()  # contact is back
    assert job.result(timeout=30).error_type == "cancelled"
    assert job.cancel_error is None and not job.cancel_kept


def test_a_click_on_a_kept_cancel_sends_it_again_at_once(
    client: gw.Client, fake: FakeGateway
) -> None:
    """A second click did nothing while the first cancel had not been taken."""
    fake.next_statuses = [{"status": "IN_PROGRESS"}] * 1000
    job = submit(client)
    fake.faults["cancel"].extend([httpx.ConnectError("refused")] * 1000)
    job.request_cancel()
    wait_for(lambda: job.cancel_kept, "the cancel kept")  # kept while contact is lost
    fake.faults["cancel"].clear()  # contact is back: the click sends it, taken
    job.request_cancel()
    assert job.result(timeout=30).error_type == "cancelled"


@pytest.mark.usefixtures("short_rate_waits")
def test_a_cancel_is_sent_while_polls_wait_out_a_long_rate_limit(fake: FakeGateway) -> None:
    """While polls waited on a 429 asking an hour, the client's own gate refused the
    cancel unsent: ``result(cancel_on_timeout=True)`` said not cancelled and the gateway
    got no cancel. A cancel's first try passes the closed gate."""
    fake.next_statuses = [{"status": "IN_PROGRESS"}] * 1000
    fake.faults["status"].append(error(429, RATE_LIMITED, {"Retry-After": "3600"}))
    fake.faults["response"].append(error(429, RATE_LIMITED, {"Retry-After": "3600"}))
    with gw.Client(BASE, KEY, transport=fake.transport()) as client:
        job = submit(client)
        wait_for(lambda: not fake.faults["status"] or not fake.faults["response"], "a 429")
        with pytest.raises(gw.TaskTimeout) as info:
            job.result(timeout=0.1, cancel_on_timeout=True)
        assert info.value.cancelled and fake.count("cancel") == 1
        assert job.cancel_requested and job.cancel_error is None


def test_kept_cancels_of_many_jobs_go_one_per_opening_of_the_rate_gate(
    client: gw.Client, fake: FakeGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kept cancels burst past the closed rate gate on every round of resends: 40 jobs
    whose cancels got 429 Retry-After 4 sent 160 cancels in 14 s, 157 of them inside
    the gateway's wait, since each resend was a first try again, which passes a closed
    gate. Only a cancel's first try may; after a refusal one cancel at a time tries
    again, when the gate opens."""
    fake.next_statuses = [{"status": "IN_PROGRESS"}] * 1000
    fake.faults["cancel"].extend([error(429, RATE_LIMITED, {"Retry-After": "0.1"})] * 1000)
    monkeypatch.setattr(job_module, "next_interval", lambda *_: 0.02)  # resends try often
    jobs = [submit(client) for _ in range(8)]
    for job in jobs:
        job.request_cancel()
    wait_for(lambda: fake.count("cancel") >= 3 * len(jobs), "three rounds of cancels")
    sent = [at for at, op, _ in fake.log if op == "cancel"][len(jobs) :]  # after first tries
    gaps = [b - a for a, b in itertools.pairwise(sent)]
    assert min(gaps) >= 0.09, gaps  # each waited for the gate the refusal before closed
    assert all(job.cancel_kept and not job.done() for job in jobs)


def test_a_kept_cancel_answered_already_cancelled_was_taken_and_is_not_sent_again(
    client: gw.Client, fake: FakeGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cancel whose answers a proxy lost (502) is kept; the gateway had taken it, and
    its resends were answered 400 "Task already cancelled", but the job kept it "not
    taken" and sent it again until the task ended, and the view then said "the task
    ended first" of the cancel that ended it. The 400 asks the status, which says
    CANCELLED: it was taken (the status decides, never the 400's words: clifold)."""
    monkeypatch.setattr(job_module, "next_interval", lambda *_: 0.02)  # resends try often
    fake.next_statuses = [{"status": "IN_PROGRESS"}] * 1000
    already = error(400, {"detail": "Task already cancelled"})
    job = submit(client)
    task = fake.tasks[job.request_id]

    class Answers(collections.deque[Any]):
        """The cancel's answers; from the 400 on, the status says what it does."""

        def popleft(self) -> Any:
            answer = super().popleft()
            if answer is already:
                task.statuses, task.result = [{"status": "CANCELLED"}], {"status": "CANCELLED"}
            return answer

    fake.faults["cancel"] = Answers([error(502, {"detail": "Bad Gateway"})] * 3 + [already] * 50)
    with pytest.raises(gw.ServerError):
        job.cancel()
    assert job.cancel_kept
    wait_for(lambda: not job.cancel_kept, "the kept cancel taken")
    assert job.cancel_requested and job.cancel_error is None and fake.count("cancel") == 4
    assert job.result(timeout=30).status == "CANCELLED"
    assert fake.count("cancel") == 4  # nothing sent after the 400
    assert job_module.kept_cancel(job) is None


@pytest.mark.parametrize("then", ["IN_PROGRESS", "COMPLETED"])
def test_a_kept_cancel_resent_and_refused_too_late_is_a_refusal_unless_the_task_ended(
    then: str, client: gw.Client, fake: FakeGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review 27, fault 2: a cancel kept (502) while the task queued, resent once it ran,
    answered 400 "already in progress and cannot be cancelled", was recorded as taken:
    no error, nothing sent again, nothing said, and the task billed on. The resend's
    400 asks the status, as a first cancel's does: a refusal unless it says ended."""
    monkeypatch.setattr(job_module, "next_interval", lambda *_: 0.02)  # resends try often
    fake.next_statuses = [{"status": "IN_PROGRESS"}] * 1000
    too_late = error(400, {"detail": "Request is already in progress and cannot be cancelled"})
    fake.faults["cancel"].extend([error(502, {"detail": "Bad Gateway"})] * 3 + [too_late] * 50)
    job = submit(client)
    if then == "COMPLETED":
        task = fake.tasks[job.request_id]
        task.statuses, task.result = [{"status": then}], None  # ended: its result not yet there
    with pytest.raises(gw.ServerError):
        job.cancel()
    wait_for(lambda: not job.cancel_kept, "the kept cancel answered", limit=10)
    assert fake.count("cancel") == 4
    if then == "IN_PROGRESS":
        assert not job.cancel_requested and job.cancel_error is not None
        assert "cannot be cancelled" in str(job.cancel_error) and not job.done()
    else:
        assert job.cancel_requested and job.cancel_error is None


@pytest.mark.parametrize("then", ["IN_PROGRESS", "COMPLETED"])
def test_a_first_cancel_answered_400_is_a_refusal_unless_the_status_says_it_ended(
    then: str, client: gw.Client, fake: FakeGateway
) -> None:
    """Review 23, fault 1: many gateways cancel only tasks not started ("already in
    progress and cannot be cancelled", 400). A first cancel of a task last seen running
    read that 400 as "already finished": ``cancel()`` returned, ``cancel_requested``
    True, and the task billed on. The status asked then says which it is."""
    fake.next_statuses = [{"status": "IN_PROGRESS"}] * 1000
    too_late = error(400, {"detail": "Request is already in progress and cannot be cancelled"})
    fake.faults["cancel"].extend([too_late] * 5)
    job = submit(client)
    wait_for(lambda: job.status_text == "IN_PROGRESS", "a status seen", limit=10)
    task = fake.tasks[job.request_id]
    task.statuses, task.result = [{"status": then}], None  # ended: its result not yet there
    if then == "IN_PROGRESS":
        with pytest.raises(gw.GatewayError, match="cannot be cancelled"):
            job.cancel()
        assert not job.cancel_requested and job.cancel_error is not None
        assert not job.done() and job_module.kept_cancel(job) is None
    else:
        job.cancel()  # the task had ended: nothing to refuse
        assert job.cancel_requested and job.cancel_error is None
    assert fake.count("cancel") == 1


def test_a_kept_cancel_is_taken_when_the_task_ends_cancelled(
    client: gw.Client, fake: FakeGateway
) -> None:
    """A job whose task ended CANCELLED while its cancel was kept (every answer to it
    lost) still said the cancel was "not taken"."""
    fake.next_statuses = [{"status": "IN_PROGRESS"}] * 1000
    fake.faults["cancel"].extend([error(502, {"detail": "Bad Gateway"})] * 1000)
    job = submit(client)
    with pytest.raises(gw.ServerError):
        job.cancel()
    task = fake.tasks[job.request_id]
    task.statuses, task.result = [{"status": "CANCELLED"}], {"status": "CANCELLED"}
    assert job.result(timeout=30).status == "CANCELLED"
    assert not job.cancel_kept and job_module.kept_cancel(job) is None


@pytest.mark.usefixtures("short_rate_waits")
def test_a_cancel_refused_for_the_rate_limit_is_sent_again_when_the_gate_opens(
    client: gw.Client, fake: FakeGateway
) -> None:
    fake.next_statuses = [{"status": "IN_PROGRESS"}] * 1000
    fake.faults["cancel"].append(error(429, RATE_LIMITED, {"Retry-After": "0.3"}))
    job = submit(client)
    with pytest.raises(gw.TaskTimeout) as info:
        job.result(timeout=0.05, cancel_on_timeout=True)
    assert not info.value.cancelled and "sends it again" in str(info.value)
    assert isinstance(info.value.__cause__, gw.RateLimited) and job.cancel_kept
    assert job.result(timeout=30).error_type == "cancelled"
    assert fake.count("cancel") == 2


def test_a_result_answering_404_after_the_status_said_completed_is_contact_lost_never_gone(
    fake: FakeGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task whose status said COMPLETED, whose result address then answered 404
    "Request not found" (results purged, a replica that lost them), ended as
    ``RequestNotFound``: a batch called the paid task failed and ``retry_failed()``
    created it again. The gateway never failed it: the job ends as contact lost (its
    outputs not read), the status COMPLETED kept, and the ledger never calls it gone."""
    monkeypatch.setattr(job_module, "NOT_VISIBLE_FOR", 0.0)  # past the first minute
    fake.next_statuses = [{"status": "COMPLETED"}]

    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/response"):
            fake.log.append((time.monotonic(), "response", request.url.path))
            return error(404, {"detail": "Request not found"})
        return fake.handle(request)

    with gw.Client(BASE, KEY, transport=httpx.MockTransport(handle), max_retries=0) as client:
        job = submit(client)
        with pytest.raises(gw.GenwidgetsError) as raised:
            job.result(timeout=30)
        assert not isinstance(raised.value, gw.RequestNotFound), raised.value
        assert lost_contact(job) and "COMPLETED" in str(raised.value)
        assert job.last_status is not None and job.last_status.status == "COMPLETED"
        assert client.ledger is not None
        row = client.ledger.rows(client.gateway_name, limit=1)[0]
        assert row.state != "finished", row
    assert fake.count("response") >= FAST_POLICY.failure_limit  # asked again before giving up
    assert fake.count("create") == 1
