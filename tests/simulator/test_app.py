"""The queue protocol and every error row of spec sections 4-7, over real HTTP."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from genwidgets.simulator import SimulatorServer
from genwidgets.simulator.app import MAX_BODY

pytestmark = pytest.mark.timeout(60)

VIDEO = "vidVq2-text2video"
KITE = {"prompt": "a red kite over the sea"}


def _create(api: httpx.Client, endpoint: str = VIDEO, payload: Any = None, **headers: str):
    return api.post(
        f"/v1/queue/{endpoint}", json=KITE if payload is None else payload, headers=headers
    )


def test_handle_has_absolute_urls_of_the_documented_shape(
    api: httpx.Client, simulator: SimulatorServer
) -> None:
    handle = _create(api, **{"X-Sim-Duration": "0"}).json()
    rid = handle["request_id"]
    prefix = f"{simulator.base_url}/v1/queue/{VIDEO}/requests/{rid}"
    assert handle["status_url"] == f"{prefix}/status"
    assert handle["response_url"] == f"{prefix}/response"
    assert handle["cancel_url"] == f"{prefix}/cancel"
    assert isinstance(handle["queue_position"], int)


@pytest.mark.slow
def test_result_is_202_with_status_body_until_completed_then_200(api: httpx.Client) -> None:
    handle = _create(api, **{"X-Sim-Duration": "6"}).json()  # 0.3 s at speed 20
    early = api.get(handle["response_url"])
    assert early.status_code == 202
    assert early.json()["status"] in {"IN_QUEUE", "IN_PROGRESS"}
    assert early.json()["request_id"] == handle["request_id"]
    seen = set()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        body = api.get(handle["status_url"]).json()
        seen.add(body["status"])
        if body["status"] == "COMPLETED":
            break
        time.sleep(0.02)
    assert "IN_PROGRESS" in seen and "COMPLETED" in seen
    assert body["error"] is None and body["error_type"] is None
    done = api.get(handle["response_url"])
    assert done.status_code == 200
    result = done.json()
    assert result["status"] == "COMPLETED" and result["error"] is None
    [video] = result["outputs"]
    assert video["content_type"] == "video/mp4" and video["file_size"] > 0
    assert video["url"].startswith("http://127.0.0.1:")


@pytest.mark.parametrize("header", [None, "Bearer", "Token sim-demo-key", "Basic abc"])
def test_missing_bearer_gets_the_gateway_error(
    simulator: SimulatorServer, header: str | None
) -> None:
    headers = {"Authorization": header} if header else {}
    reply = httpx.post(f"{simulator.base_url}/v1/queue/{VIDEO}", json=KITE, headers=headers)
    assert reply.status_code == 401
    body = reply.json()
    assert body["error"] == {
        "code": "UNAUTHORIZED",
        "message": "Authorization Bearer token is required",
    }
    assert isinstance(body["request_id"], str) and body["request_id"]


@pytest.mark.slow
def test_the_key_is_checked_on_status_result_and_cancel(
    api: httpx.Client, simulator: SimulatorServer
) -> None:
    handle = _create(api).json()
    for method, url in [
        ("GET", handle["status_url"]),
        ("GET", handle["response_url"]),
        ("PUT", handle["cancel_url"]),
    ]:
        assert httpx.request(method, url).status_code == 401
        wrong = httpx.request(method, url, headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        assert wrong.json()["error"]["code"] == "UNAUTHORIZED"


def test_unknown_endpoint_is_app_not_found(api: httpx.Client) -> None:
    reply = _create(api, "vidZ-9000")
    assert reply.status_code == 404
    assert reply.json() == {"detail": "App not found: vidZ-9000"}


def test_restricted_key_may_use_only_its_endpoints(
    make_simulator: Callable[..., SimulatorServer],
) -> None:
    sim = make_simulator(keys=("open", "narrow"), restrict={"narrow": ("asset-get",)})
    narrow = {"Authorization": "Bearer narrow"}
    denied = httpx.post(f"{sim.base_url}/v1/queue/{VIDEO}", json=KITE, headers=narrow)
    assert denied.status_code == 403
    assert denied.json() == {"detail": "Model not allowed for this user"}
    allowed = httpx.post(
        f"{sim.base_url}/v1/queue/asset-get", json={"Id": "asset-demo"}, headers=narrow
    )
    assert allowed.status_code == 200
    other = httpx.post(
        f"{sim.base_url}/v1/queue/{VIDEO}", json=KITE, headers={"Authorization": "Bearer open"}
    )
    assert other.status_code == 200


@pytest.mark.parametrize(
    ("payload", "params", "headers"),
    [
        ({**KITE, "webhook_url": "http://x"}, {}, {}),
        ({**KITE, "options": {"myWebhook": "http://x"}}, {}, {}),
        (KITE, {"webhook": "http://x"}, {}),
        (KITE, {}, {"X-Webhook-Url": "http://x"}),
    ],
    ids=["body", "nested-body", "query", "header"],
)
def test_webhook_information_is_refused(
    api: httpx.Client, payload: dict[str, Any], params: dict[str, str], headers: dict[str, str]
) -> None:
    reply = api.post(f"/v1/queue/{VIDEO}", json=payload, params=params, headers=headers)
    assert reply.status_code == 400
    assert reply.json() == {"detail": "webhook not supported"}


def test_callback_url_is_accepted(api: httpx.Client) -> None:
    assert _create(api, payload={**KITE, "callback_url": "http://x"}).status_code == 200


def test_sync_path_is_not_found_and_status_stream_unsupported(api: httpx.Client) -> None:
    sync = api.post(f"/v1/queue/{VIDEO}/sync", json=KITE)
    assert sync.status_code == 404 and sync.json() == {"detail": "Not Found"}
    handle = _create(api).json()
    stream = api.get(handle["status_url"] + "/stream")
    assert stream.status_code == 400
    assert stream.json() == {"detail": "SSE streaming not supported"}


@pytest.mark.slow
def test_request_not_found_for_unknown_id_other_endpoint_or_other_key(
    make_simulator: Callable[..., SimulatorServer],
) -> None:
    sim = make_simulator(keys=("alice", "bob"))
    alice = {"Authorization": "Bearer alice"}
    handle = httpx.post(f"{sim.base_url}/v1/queue/{VIDEO}", json=KITE, headers=alice).json()
    rid = handle["request_id"]
    wrong_endpoint = f"{sim.base_url}/v1/queue/vidVq1-text2video/requests/{rid}"
    urls = [
        (alice, f"{sim.base_url}/v1/queue/{VIDEO}/requests/no-such-id/status"),
        (alice, f"{wrong_endpoint}/status"),
        (alice, f"{wrong_endpoint}/response"),
        ({"Authorization": "Bearer bob"}, handle["status_url"]),
        ({"Authorization": "Bearer bob"}, handle["response_url"]),
    ]
    for headers, url in urls:
        reply = httpx.get(url, headers=headers)
        assert reply.status_code == 404, url
        assert reply.json() == {"detail": "Request not found"}
    cancel = httpx.put(f"{wrong_endpoint}/cancel", headers=alice)
    assert cancel.status_code == 404
    assert httpx.get(handle["status_url"], headers=alice).status_code == 200


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"{not json", "not valid JSON"),
        (b"[1, 2]", "JSON object"),
        (b'"prompt"', "JSON object"),
        (b"", "empty"),
        (b"\xff\xfe\x00", "not valid JSON"),
        (b'[{"a":' * 25_000, "nested deeper than 64 levels"),  # never parsed
        (b'{"prompt": "x", "duration": NaN}', "NaN is not JSON"),
    ],
)
def test_bad_bodies_get_a_clear_400(api: httpx.Client, content: bytes, words: str) -> None:
    reply = api.post(
        f"/v1/queue/{VIDEO}", content=content, headers={"Content-Type": "application/json"}
    )
    assert reply.status_code == 400
    assert words in reply.json()["detail"]


@pytest.mark.slow
def test_oversized_body_is_413(api: httpx.Client) -> None:
    reply = api.post(f"/v1/queue/{VIDEO}", content=b" " * (MAX_BODY + 1))
    assert reply.status_code == 413
    assert "too large" in reply.json()["detail"]


def test_missing_required_fields_are_named(api: httpx.Client) -> None:
    reply = _create(api, "vidH_1.0_r2v", {"duration": 5})
    assert reply.status_code == 422
    text = reply.json()["detail"]
    assert text.startswith("Invalid payload: ")
    assert "prompt" in text and "media" in text


def test_catalog_rules_are_enforced(api: httpx.Client) -> None:
    """Beyond required fields: the catalog model's ranges (vidVq2 duration is 1-10)."""
    reply = _create(api, payload={**KITE, "duration": 99})
    assert reply.status_code == 422
    assert "duration" in reply.json()["detail"]


def test_wrong_method_is_405_with_allowed_methods(api: httpx.Client) -> None:
    reply = api.get(f"/v1/queue/{VIDEO}")
    assert reply.status_code == 405
    assert "POST" in reply.json()["detail"] and reply.headers["allow"] == "POST"
    handle = _create(api).json()
    assert api.post(handle["status_url"]).status_code == 405
    assert api.get(handle["cancel_url"]).status_code == 405


def test_unknown_path_is_404_json(api: httpx.Client) -> None:
    reply = api.get("/v2/whatever")
    assert reply.status_code == 404 and reply.json() == {"detail": "Not Found"}


@pytest.mark.slow
def test_output_files_need_no_auth_and_support_head_and_range(
    api: httpx.Client, run: Callable[..., dict[str, Any]]
) -> None:
    result = run("genW2.5-t2i-preview", {"prompt": "a fox", "n": 1, "size": "1280*1280"})
    [image] = result["outputs"]
    got = httpx.get(image["url"])
    assert got.status_code == 200
    assert got.headers["content-type"] == "image/png"
    assert int(got.headers["content-length"]) == image["file_size"] == len(got.content)
    head = httpx.head(image["url"])
    assert head.status_code == 200 and head.content == b""
    assert int(head.headers["content-length"]) == image["file_size"]
    part = httpx.get(image["url"], headers={"Range": "bytes=0-9"})
    assert part.status_code == 206 and part.content == got.content[:10]
    token_path = image["url"].split("/files/")[1]
    assert len(token_path.split("/")[0]) >= 20  # unguessable
    assert httpx.get(image["url"] + "x").status_code == 404
    assert api.get("/files/guess/image_0.png").status_code == 404


def test_cancel_running_and_queued_tasks(make_simulator: Callable[..., SimulatorServer]) -> None:
    sim = make_simulator(workers=1)
    with httpx.Client(base_url=sim.base_url, headers={"Authorization": "Bearer sim-demo-key"}) as c:
        slow = {"X-Sim-Duration": "600"}
        running = c.post(f"/v1/queue/{VIDEO}", json=KITE, headers=slow).json()
        queued = c.post(f"/v1/queue/{VIDEO}", json=KITE, headers=slow).json()
        assert c.get(queued["status_url"]).json()["status"] == "IN_QUEUE"
        for handle in (queued, running):
            reply = c.put(handle["cancel_url"])
            assert reply.status_code == 200
            assert reply.json() == {
                "request_id": handle["request_id"],
                "status": "CANCELLATION_REQUESTED",
            }
            status = c.get(handle["status_url"]).json()
            assert status["status"] == "COMPLETED"
            assert status["error_type"] == "cancelled" and status["error"] == "cancelled by user"
            result = c.get(handle["response_url"])
            assert result.status_code == 200 and result.json()["outputs"] == []
            again = c.put(handle["cancel_url"])
            assert again.status_code == 400
            assert again.json() == {"detail": "Task already completed"}
        # the freed slot runs the next task
        nxt = c.post(f"/v1/queue/{VIDEO}", json=KITE, headers={"X-Sim-Duration": "0"}).json()
        assert c.get(nxt["status_url"]).json()["status"] != "IN_QUEUE"


def test_runtime_fault_header_answers_500(api: httpx.Client) -> None:
    reply = _create(api, **{"X-Sim-Fault": "runtime"})
    assert reply.status_code == 500
    assert reply.json() == {"detail": "Runtime execution failed"}


def test_fail_fault_header_ends_completed_with_runtime_error(
    api: httpx.Client, wait: Callable[..., dict[str, Any]]
) -> None:
    handle = _create(api, **{"X-Sim-Fault": "fail", "X-Sim-Duration": "0"}).json()
    result = wait(api, handle)
    assert result["status"] == "COMPLETED"
    assert result["error"] == "Runtime execution failed"
    assert result["error_type"] == "runtime_error"
    assert result["outputs"] == []


@pytest.mark.parametrize(
    ("name", "value"),
    [("X-Sim-Duration", "soon"), ("X-Sim-Duration", "-1"), ("X-Sim-Fault", "explode")],
)
def test_bad_control_headers_are_400(api: httpx.Client, name: str, value: str) -> None:
    reply = _create(api, **{name: value})
    assert reply.status_code == 400 and name in reply.json()["detail"]


def test_sim_duration_sets_the_run_time_before_speed(
    api: httpx.Client, wait: Callable[..., dict[str, Any]]
) -> None:
    handle = _create(api, "asset-get", {"Id": "asset-demo"}, **{"X-Sim-Duration": "4"}).json()
    wait(api, handle)
    info = api.get(f"/_sim/tasks/{handle['request_id']}").json()
    ran = info["completed_at"] - info["started_at"]
    assert 0.2 * 0.95 <= ran < 1.5  # 4 s / speed 20
    assert info["created_at"] <= info["started_at"] <= info["completed_at"]
    assert info["status"] == "COMPLETED"


def test_stats_count_requests_by_operation(make_simulator: Callable[..., SimulatorServer]) -> None:
    sim = make_simulator()
    with httpx.Client(base_url=sim.base_url, headers={"Authorization": "Bearer sim-demo-key"}) as c:
        handle = c.post(f"/v1/queue/{VIDEO}", json=KITE).json()
        for _ in range(3):
            c.get(handle["status_url"])
        c.get(handle["response_url"])
        c.put(handle["cancel_url"])
        stats = c.get("/_sim/stats").json()
    assert stats == {"create": 1, "status": 3, "result": 1, "cancel": 1, "files": 0, "created": 1}


def test_the_create_limit_refuses_creates_only_and_tasks_are_listed_with_digests(
    make_simulator: Callable[..., SimulatorServer],
) -> None:
    """``--create-rate-limit``: creates beyond it get the gateway's 429 (counted as create
    requests, not as tasks made), other requests pass; ``/_sim/tasks`` lists what was made."""
    sim = make_simulator(create_rate_limit=0.01)  # one create, then one per 100 s
    with httpx.Client(base_url=sim.base_url, headers={"Authorization": "Bearer sim-demo-key"}) as c:
        answers = [c.post(f"/v1/queue/{VIDEO}", json={**KITE, "seed": i}) for i in range(6)]
        made = [a.json() for a in answers if a.status_code == 200]
        refused = [a for a in answers if a.status_code == 429]
        assert len(made) == 1 and len(refused) == 5
        assert refused[0].json()["error"]["code"] == "RATE_LIMIT_EXCEEDED"
        assert int(refused[0].headers["retry-after"]) >= 1
        assert 0 < int(refused[0].headers["retry-after-ms"]) <= 100_000  # the exact wait
        for _ in range(5):  # status requests are not creates: never refused by this limit
            assert c.get(made[0]["status_url"]).status_code == 200
        stats = c.get("/_sim/stats").json()
        listed = c.get("/_sim/tasks").json()
    assert stats["create"] == 6 and stats["created"] == 1 and stats["status"] == 5
    assert [t["request_id"] for t in listed] == [m["request_id"] for m in made]
    sent = {**KITE, "seed": 0}
    digest = hashlib.sha256(json.dumps(sent, sort_keys=True).encode()).hexdigest()
    assert listed[0]["payload_sha256"] == digest
    assert listed[0]["created_at"] <= time.time()


@pytest.mark.slow
def test_live_config_changes_and_rejects_bad_values(
    make_simulator: Callable[..., SimulatorServer],
) -> None:
    sim = make_simulator()
    url = f"{sim.base_url}/_sim/config"
    changed = httpx.put(url, json={"fail_rate": 1.0, "latency": 0.0})
    assert changed.status_code == 200 and changed.json()["fail_rate"] == 1.0
    assert httpx.get(url).json()["fail_rate"] == 1.0
    for bad in ({"speed": 0}, {"fail_rate": 2}, {"colour": "red"}, [1]):
        reply = httpx.put(url, json=bad)
        assert reply.status_code == 400, bad
    assert "allowed" in httpx.put(url, json={"colour": 1}).json()["detail"]


def test_latency_delays_every_answer(make_simulator: Callable[..., SimulatorServer]) -> None:
    sim = make_simulator(latency=0.3)
    start = time.monotonic()
    reply = httpx.get(
        f"{sim.base_url}/v1/queue/{VIDEO}/requests/x/status",
        headers={"Authorization": "Bearer sim-demo-key"},
    )
    assert reply.status_code == 404
    assert time.monotonic() - start >= 0.3
