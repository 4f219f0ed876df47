"""The client against the real simulator over loopback HTTP: every spec rule end to end."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from fake_gateway import FAST_POLICY
from faults import Outage
from PIL import Image

import genwidgets as gw
from genwidgets.protocol.http import error_from_response
from genwidgets.simulator import DEMO_KEY, SimulatorServer

pytestmark = pytest.mark.timeout(120)
KEY = DEMO_KEY


@pytest.fixture
def client(simulator: SimulatorServer) -> gw.Client:
    c = gw.Client(simulator.base_url, KEY)
    yield c
    c.close()


@pytest.mark.slow
def test_embedded_default_needs_no_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GENWIDGETS_BASE_URL", raising=False)
    monkeypatch.delenv("GENWIDGETS_API_KEY", raising=False)
    client = gw.Client()
    assert client.embedded and client.base_url.startswith("http://127.0.0.1:")
    assert "simulated" in repr(client)
    again = gw.Client()
    assert again.base_url == client.base_url  # one simulator per process
    res = client.run("speechM-02-turbo", {"text": "hello there"}, timeout=60)
    assert res.ok and res.outputs[0].kind == "audio" and len(res.outputs[0].read()) > 100
    client.close()
    again.close()


def test_an_image_task_end_to_end(client: gw.Client) -> None:
    job = client.submit("genW2.5-t2i-preview", {"prompt": "a lighthouse", "n": 2, "seed": 7})
    res = job.result(timeout=60).raise_for_error()
    assert [o.content_type for o in res.outputs] == ["image/png", "image/png"]
    image = Image.open(io.BytesIO(res.outputs[0].read()))
    assert image.size == (1280, 1280)
    assert res.outputs[0].path is not None and res.outputs[0].path.exists()  # kept on disk


@pytest.mark.slow
def test_queue_positions_fall_and_statuses_progress(make_simulator) -> None:  # type: ignore[no-untyped-def]
    sim = make_simulator(workers=1)
    client = gw.Client(sim.base_url, KEY)
    headers = {"X-Sim-Duration": "30"}  # 1.5 s at speed 20
    jobs = [
        client.submit("speechM-02-turbo", {"text": f"line {i}"}, headers=headers) for i in range(3)
    ]
    seen: dict[str, list[tuple[str, int | None]]] = {j.request_id: [] for j in jobs}
    for job in jobs:
        job.add_update_callback(
            lambda j: seen[j.request_id].append((j.last_status.status, j.queue_position))
        )
    for job in jobs:
        assert job.result(timeout=60).ok
    assert jobs[2].handle.queue_position is not None and jobs[2].handle.queue_position >= 1
    statuses = {s for trail in seen.values() for s, _ in trail}
    assert {"IN_QUEUE", "IN_PROGRESS", "COMPLETED"} <= statuses
    queued = [p for s, p in seen[jobs[2].request_id] if s == "IN_QUEUE"]
    assert queued == sorted(queued, reverse=True)  # the position only falls
    client.close()


def test_cancel_ends_a_running_task(client: gw.Client) -> None:
    job = client.submit("vidVq2-text2video", {"prompt": "slow"}, headers={"X-Sim-Duration": "600"})
    job.cancel()
    res = job.result(timeout=30)
    assert not res.ok and res.error_type == "cancelled"


def test_failed_task_is_completed_with_an_error(client: gw.Client) -> None:
    res = client.submit("speechM-02-turbo", {"text": "x"}, headers={"X-Sim-Fault": "fail"}).result(
        timeout=30
    )
    assert res.status == "COMPLETED" and not res.ok and res.error
    with pytest.raises(gw.TaskFailed):
        res.raise_for_error()


def test_asset_get_exposes_the_asset_record(client: gw.Client) -> None:
    res = client.run("asset-get", {"Id": "asset-demo"}, timeout=30)
    assert res.ok and res.asset is not None
    assert res.asset["Id"] == "asset-demo" and res.asset["Status"] == "Active"
    assert set(res.asset) >= {"Id", "Name", "URL", "AssetType", "GroupId", "Status"}


def test_hex_speech_output_reads_as_audio_bytes(client: gw.Client) -> None:
    res = client.run("speechM-02-turbo", {"text": "hex please", "output_format": "hex"}, 30)
    out = res.outputs[0]
    assert out.url is None and out.kind == "audio"
    data = out.read()
    assert data[:3] == b"ID3" or data[:2] in (b"\xff\xfb", b"\xff\xf3", b"\xff\xf2")


# -- every error of spec section 7, produced live ------------------------------
def test_missing_key_is_unauthorized(simulator: SimulatorServer) -> None:
    client = gw.Client(simulator.base_url)
    with pytest.raises(gw.Unauthorized, match="Authorization Bearer token is required"):
        client.submit("speechM-02-turbo", {"text": "x"})
    client.close()


def test_unknown_endpoint(client: gw.Client) -> None:
    with pytest.raises(gw.EndpointNotFound, match="App not found: no-such-model"):
        client.submit("no-such-model", {"prompt": "x"}, validate=False)
    with pytest.raises(gw.EndpointNotFound, match="unknown endpoint") as info:
        client.submit("no-such-model", {"prompt": "x"})  # caught before sending
    assert not isinstance(info.value, gw.PayloadError)


def test_model_not_allowed(make_simulator) -> None:  # type: ignore[no-untyped-def]
    sim = make_simulator(keys=("k-limited",), restrict={"k-limited": ("speechM-02-turbo",)})
    client = gw.Client(sim.base_url, "k-limited")
    assert client.run("speechM-02-turbo", {"text": "ok"}, timeout=30).ok
    with pytest.raises(gw.ModelNotAllowed, match="Model not allowed for this user"):
        client.submit("genW2.5-t2i-preview", {"prompt": "no"})
    client.close()


def test_webhook_in_a_header_is_refused_by_the_gateway(client: gw.Client) -> None:
    with pytest.raises(gw.WebhookNotSupported):
        client.submit(
            "speechM-02-turbo", {"text": "x"}, headers={"X-Webhook-Url": "http://h.example"}
        )


def test_sync_and_stream_paths_are_not_supported(simulator: SimulatorServer) -> None:
    with httpx.Client(headers={"Authorization": f"Bearer {KEY}"}) as http:
        sync = http.post(f"{simulator.base_url}/v1/queue/speechM-02-turbo/sync", json={})
        assert isinstance(error_from_response(sync), gw.NotSupported)
        stream = http.get(
            f"{simulator.base_url}/v1/queue/speechM-02-turbo/requests/x/status/stream"
        )
        assert isinstance(error_from_response(stream), gw.NotSupported)


@pytest.mark.slow
def test_unknown_or_mismatched_request_id(simulator: SimulatorServer) -> None:
    # the 404 grace shortened (3 s by default, twice here): its length is not the subject
    policy = gw.PollPolicy(not_found_grace=FAST_POLICY.not_found_grace)
    with gw.Client(simulator.base_url, KEY, poll_policy=policy) as client:
        with pytest.raises(gw.RequestNotFound):  # not TaskTimeout: believed after a grace
            client.job("speechM-02-turbo", "not-a-task").result(timeout=30)
        real = client.submit("speechM-02-turbo", {"text": "x"})
        with pytest.raises(gw.RequestNotFound):
            client.job("genW2.5-t2i-preview", real.request_id).result(timeout=30)


def test_runtime_failure_on_create(client: gw.Client) -> None:
    with pytest.raises(gw.RuntimeFailed, match="Runtime execution failed"):
        client.submit("speechM-02-turbo", {"text": "x"}, headers={"X-Sim-Fault": "runtime"})


@pytest.mark.slow
def test_rate_limit_carries_retry_after_and_gates_the_client(make_simulator) -> None:  # type: ignore[no-untyped-def]
    sim = make_simulator(rate_limit=3)
    client = gw.Client(sim.base_url, KEY, max_retries=0)
    with pytest.raises(gw.RateLimited) as info:
        for _ in range(20):
            client.submit("speechM-02-turbo", {"text": "x"})
    assert info.value.retry_after is not None and info.value.retry_after >= 1
    client.close()
    # with retries, the same burst goes through: every request waits at the gate
    patient = gw.Client(sim.base_url, KEY, max_retries=3)
    # three jobs: nine requests or more at three a second, after a refused burst
    jobs = [patient.submit("speechM-02-turbo", {"text": f"{i}"}) for i in range(3)]
    assert all(j.result(timeout=60).ok for j in jobs)
    patient.close()


@pytest.mark.slow
def test_flaky_polls_do_not_fail_jobs(make_simulator) -> None:  # type: ignore[no-untyped-def]
    sim = make_simulator(error_rate=0.3, seed=5)
    client = gw.Client(sim.base_url, KEY)
    jobs = [client.submit("speechM-02-turbo", {"text": f"{i}"}) for i in range(5)]
    assert all(j.result(timeout=60).ok for j in jobs)
    client.close()


@pytest.mark.slow
def test_a_job_that_lost_contact_is_polled_anew_by_client_job(
    make_simulator: Callable[..., SimulatorServer], tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Polling that gave up for want of contact says nothing of the task: re-attaching
    by id polls it again (before, client.job returned the ended job, Unreachable)."""
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path / "home"))
    sim = make_simulator(speed=0.5)
    outage = Outage(urlsplit(sim.base_url).port or 0)
    client = gw.Client(outage.base_url, "sim-demo-key", poll_policy=gw.PollPolicy(failure_limit=1))
    try:
        job = client.submit("genW2.5-t2i-preview", {"prompt": "a wren", "n": 1})
        outage.down()
        with pytest.raises(gw.Unreachable):
            job.result(timeout=60)
        outage.up()
        again = client.job(job.endpoint, job.request_id)
        assert again is not job
        assert again.result(timeout=60).ok
        assert client.job(job.endpoint, job.request_id) is again  # followed: kept
    finally:
        client.close()
        outage.close()
