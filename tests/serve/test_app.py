"""The class gateway over a real simulator upstream: the queue protocol unchanged for a
student's client, budgets in the gateway's own error shape, tasks kept apart by key,
bad input typed, and nothing billed for a create that never reached upstream."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import httpx
import pytest
from loopback import LoopbackServer, OneTaskGateway
from serve_helpers import TEACHER_KEY, Class, wait_for

import genwidgets as gw
from genwidgets.cli import main
from genwidgets.errors import GatewayError, OutcomeUnknown, RequestNotFound, ServeError
from genwidgets.protocol.body import Answer
from genwidgets.protocol.http import is_refusal
from genwidgets.serve import ClassServer, Database, ServeConfig, Upstream, app, budgets, sweep
from genwidgets.serve.budgets import tasks_of
from genwidgets.serve.config import ServeState
from genwidgets.serve.db import storage_error
from genwidgets.serve.keys import add_group, add_key, revoke_key
from genwidgets.serve.sweep import sweep_once
from genwidgets.serve.usage import usage
from genwidgets.simulator import SimConfig, SimulatorServer

IMAGE = "genW2.5-t2i-preview"
ONE = {"prompt": "a red fox", "n": 1}


def key_usage(db: Any, name: str) -> dict[str, Any]:
    return next(k for k in usage(db)["keys"] if k["name"] == name)


def class_db(folder: Path, name: str = "class.db") -> Database:
    """A class's database on SQLite in ``folder``, migrated."""
    db = Database(folder / name)
    db.migrate()
    return db


def student_client(base: str, token: str | None) -> httpx.Client:
    """A student's client of the class server at ``base``, with the key ``token``."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=base, headers=headers, timeout=60)


#: an upstream whose port refuses every connection
UNREACHABLE = "http://127.0.0.1:1"


@pytest.mark.slow
def test_a_students_client_works_unchanged(make_class: Callable[..., Class]) -> None:
    klass = make_class()
    token = add_key(klass.db, "alice", {"images": 10})
    with gw.Client(base_url=klass.server.base_url, api_key=token, ledger=False) as client:
        job = client.submit(IMAGE, ONE)
        result = job.result(timeout=120)
    assert result.ok and result.outputs
    assert job.request_id not in {t.request_id for t in klass.sim.state.scheduler.tasks.values()}
    seen = key_usage(klass.db, "alice")
    assert seen["spent"] == {"tasks": 1.0, "images": 1.0} and seen["reserved"] == {}


@pytest.mark.slow
def test_the_handle_status_result_and_cancel_speak_the_protocol(
    make_class: Callable[..., Class],
) -> None:
    klass = make_class()
    with klass.client(add_key(klass.db, "alice", {})) as api:
        handle = api.post(f"/v1/queue/{IMAGE}", json=ONE).json()
        assert set(handle) >= {"request_id", "status_url", "response_url", "cancel_url"}
        base = klass.server.base_url
        assert handle["status_url"].startswith(f"{base}/v1/queue/{IMAGE}/requests/")
        status = wait_for(
            lambda: (s := api.get(handle["status_url"]).json())["status"] == "COMPLETED" and s,
            what="the task to complete",
        )
        assert status["request_id"] == handle["request_id"]
        result = api.get(handle["response_url"])
        assert result.status_code == 200 and result.json()["outputs"]
        late = api.put(handle["cancel_url"])
        assert late.status_code == 400  # a finished task's, answered here
    assert klass.sim.state.stats["cancel"] == 0  # upstream was not asked
    assert api.is_closed


@pytest.mark.slow
def test_another_keys_request_id_is_unknown(make_class: Callable[..., Class]) -> None:
    klass = make_class()
    alice, bob = add_key(klass.db, "alice", {}), add_key(klass.db, "bob", {})
    with klass.client(alice) as a, klass.client(bob) as b:
        handle = a.post(f"/v1/queue/{IMAGE}", json=ONE).json()
        for method, url in (
            ("GET", handle["status_url"]),
            ("GET", handle["response_url"]),
            ("PUT", handle["cancel_url"]),
        ):
            answer = b.request(method, url)
            assert answer.status_code == 404 and answer.json() == {"detail": "Request not found"}
        wrong_endpoint = handle["status_url"].replace(IMAGE, "imgG-1.5-edit")
        assert a.get(wrong_endpoint).status_code == 404
        assert a.get(handle["status_url"]).status_code == 200
    with (
        gw.Client(base_url=klass.server.base_url, api_key=bob, ledger=False) as client,
        pytest.raises(RequestNotFound),
    ):
        client.job(IMAGE, handle["request_id"]).status()


@pytest.mark.slow
def test_over_budget_is_the_gateways_error_shape_saying_what_is_left(
    make_class: Callable[..., Class],
) -> None:
    klass = make_class()
    token = add_key(klass.db, "alice", {"images": 3})
    with klass.client(token) as api:
        assert api.post(f"/v1/queue/{IMAGE}", json={"prompt": "x", "n": 2}).status_code == 200
        refused = api.post(f"/v1/queue/{IMAGE}", json={"prompt": "x", "n": 2})
    assert refused.status_code == 402
    body = refused.json()
    assert set(body) == {"error", "request_id"} and body["error"]["code"] == "BUDGET_EXCEEDED"
    assert "your key has 1 of 3 left" in body["error"]["message"]
    assert klass.sim.state.stats["created"] == 1
    with (
        gw.Client(base_url=klass.server.base_url, api_key=token, ledger=False) as client,
        pytest.raises(GatewayError, match="1 of 3 left"),
    ):
        client.submit(IMAGE, {"prompt": "x", "n": 2})


@pytest.mark.slow
@pytest.mark.parametrize("n", ["4", 4.0])
def test_a_create_is_counted_as_the_catalog_reads_it_and_sent_so(
    make_class: Callable[..., Class], n: Any
) -> None:
    """A count a lenient upstream reads as 4 is counted as 4: ``"4"`` was counted as one
    image and made four, past the key's cap."""
    klass = make_class()
    token = add_key(klass.db, "alice", {"images": 4})
    with klass.client(token) as api:
        handle = api.post(f"/v1/queue/{IMAGE}", json={"prompt": "x", "n": n}).json()
        wait_for(
            lambda: api.get(handle["status_url"]).json()["status"] == "COMPLETED",
            what="the task to end",
        )
        outputs = api.get(handle["response_url"]).json()["outputs"]
        refused = api.post(f"/v1/queue/{IMAGE}", json={"prompt": "x", "n": "1"})
    assert len(outputs) == 4 and key_usage(klass.db, "alice")["spent"]["images"] == 4.0
    assert refused.status_code == 402 and "0 of 4 left" in refused.json()["error"]["message"]


@pytest.mark.parametrize(
    ("payload", "says"),
    [
        ({"prompt": "x", "n": 10**30}, "n: must be 1-4"),
        ({"prompt": "x", "n": True}, "n: expected a number"),
        ({"n": 1}, "prompt"),
    ],
)
def test_an_invalid_create_is_refused_before_anything_is_reserved(
    make_class: Callable[..., Class], payload: dict[str, Any], says: str
) -> None:
    klass = make_class()
    token = add_key(klass.db, "alice", {"images": 2})
    with klass.client(token) as api:
        answer = api.post(f"/v1/queue/{IMAGE}", json=payload)
    assert answer.status_code == 422
    assert answer.json()["detail"].startswith("Invalid payload") and says in answer.text
    assert tasks_of(klass.db) == [] and klass.sim.state.stats["create"] == 0


@pytest.mark.parametrize(
    ("content", "status", "says"),
    [
        (b"", 400, "empty"),
        (b"{not json", 400, "not valid JSON"),
        (b"[1, 2]", 400, "JSON object"),
        (b"[" * 100_000, 400, "nested deeper than 64 levels"),  # never parsed
        (b'{"prompt": "x", "seed": NaN}', 400, "NaN is not JSON"),  # upstream could not read it
        (b'{"prompt": "x", "webhook_url": "http://x"}', 400, "webhook not supported"),
    ],
)
def test_malformed_bodies_are_typed_and_bill_nothing(
    make_class: Callable[..., Class], content: bytes, status: int, says: str
) -> None:
    klass = make_class()
    token = add_key(klass.db, "alice", {"tasks": 5})
    with klass.client(token) as api:
        answer = api.post(f"/v1/queue/{IMAGE}", content=content)
    assert answer.status_code == status and says in answer.json()["detail"]
    assert key_usage(klass.db, "alice")["held"] == {}
    assert klass.sim.state.stats["create"] == 0


def test_an_oversized_body_is_refused_before_it_is_read(make_class: Callable[..., Class]) -> None:
    klass = make_class(max_body=1000)
    token = add_key(klass.db, "alice", {})
    with klass.client(token) as api:
        answer = api.post(f"/v1/queue/{IMAGE}", json={"prompt": "x" * 5000})
        streamed = api.post(f"/v1/queue/{IMAGE}", content=iter([b'{"prompt": "', b"x" * 5000]))
    assert answer.status_code == 413 and "at most 1000 bytes" in answer.json()["detail"]
    assert streamed.status_code == 413
    assert klass.sim.state.stats["create"] == 0


def test_unknown_endpoints_and_the_paths_the_gateway_refuses(
    make_class: Callable[..., Class],
) -> None:
    klass = make_class()
    with klass.client(add_key(klass.db, "alice", {})) as api:
        assert api.post("/v1/queue/nope-9", json={}).json() == {"detail": "App not found: nope-9"}
        assert api.post(f"/v1/queue/{IMAGE}/sync", json=ONE).json() == {"detail": "Not Found"}
        stream = api.get(f"/v1/queue/{IMAGE}/requests/x/status/stream")
        assert stream.json() == {"detail": "SSE streaming not supported"}
        assert api.get("/v1/nothing").status_code == 404
    assert klass.sim.state.stats["create"] == 0


@pytest.mark.slow
@pytest.mark.parametrize("how", ["missing", "unknown", "revoked", "expired"])
def test_keys_that_may_not_pass(make_class: Callable[..., Class], how: str) -> None:
    klass = make_class()
    token = add_key(klass.db, "alice", {}, expires_at=time.time() - 1 if how == "expired" else None)
    if how == "revoked":
        revoke_key(klass.db, "alice")
    sent = {"missing": None, "unknown": "gwc_" + "x" * 43}.get(how, token)
    with klass.client(sent) as api:
        answer = api.post(f"/v1/queue/{IMAGE}", json=ONE)
    assert answer.status_code == 401
    body = answer.json()
    assert body["error"]["code"] == "UNAUTHORIZED" and "request_id" in body
    if how in ("revoked", "expired"):
        assert how in body["error"]["message"]
    assert klass.sim.state.stats["create"] == 0


def test_a_key_revoked_mid_run_stops_at_once(make_class: Callable[..., Class]) -> None:
    klass = make_class()
    with klass.client(add_key(klass.db, "alice", {})) as api:
        handle = api.post(f"/v1/queue/{IMAGE}", json=ONE).json()
        revoke_key(klass.db, "alice")
        assert api.post(f"/v1/queue/{IMAGE}", json=ONE).status_code == 401
        assert api.get(handle["status_url"]).status_code == 401
    assert klass.sim.state.stats["created"] == 1


def test_upstream_down_bills_nothing(make_class: Callable[..., Class]) -> None:
    klass = make_class()
    token = add_key(klass.db, "alice", {"tasks": 1})
    klass.sim.stop()
    with klass.client(token) as api:
        answer = api.post(f"/v1/queue/{IMAGE}", json=ONE)
    assert answer.status_code == 502 and answer.json()["error"]["code"] == "UPSTREAM_UNAVAILABLE"
    assert "nothing was billed" in answer.json()["error"]["message"]
    assert key_usage(klass.db, "alice")["held"] == {}


@pytest.mark.slow
def test_upstream_slow_keeps_the_create_reserved(make_class: Callable[..., Class]) -> None:
    """A create upstream may have made (no answer in time) stays reserved: the key's one
    task is held, so a second create is refused, though the first answered 504."""
    klass = make_class(timeout=0.5)
    token = add_key(klass.db, "alice", {"tasks": 1})
    klass.sim.state.reconfigure({"latency": 3.0})
    with klass.client(token) as api:
        answer = api.post(f"/v1/queue/{IMAGE}", json=ONE)
        assert answer.status_code == 504 and answer.json()["error"]["code"] == "UPSTREAM_TIMEOUT"
        klass.sim.state.reconfigure({"latency": 0.0})
        again = api.post(f"/v1/queue/{IMAGE}", json=ONE)
    assert again.status_code == 402
    seen = key_usage(klass.db, "alice")
    assert seen["unknown"] == 1 and seen["reserved"] == {"tasks": 1.0, "images": 1.0}
    # the teacher looks upstream, finds no such task, and says so: the reservation goes
    [task] = tasks_of(klass.db, state="unknown")
    assert task["id"] in answer.json()["error"]["message"]
    assert (
        main(
            [
                "serve",
                "--database",
                str(klass.db.path),
                "tasks",
                "--settle",
                task["id"],
                "--not-made",
            ]
        )
        == 0
    )
    assert key_usage(klass.db, "alice")["held"] == {}
    with klass.client(token) as api:
        assert api.post(f"/v1/queue/{IMAGE}", json=ONE).status_code == 200


@pytest.mark.slow
def test_upstream_rate_limit_is_passed_on_with_retry_after(
    make_class: Callable[..., Class],
) -> None:
    klass = make_class(rate=None)
    klass.sim.state.reconfigure({"create_rate_limit": 0.2})  # one create, then 5 s
    token = add_key(klass.db, "alice", {"tasks": 10})
    with klass.client(token) as api:
        assert api.post(f"/v1/queue/{IMAGE}", json=ONE).status_code == 200
        limited = api.post(f"/v1/queue/{IMAGE}", json=ONE)
        assert limited.status_code == 429
        assert limited.json()["error"]["code"] == "RATE_LIMIT_EXCEEDED"
        assert int(limited.headers["retry-after"]) >= 1
        held_back = api.post(f"/v1/queue/{IMAGE}", json=ONE)  # absorbed: not sent upstream
        assert held_back.status_code == 429 and "retry-after" in held_back.headers
    assert klass.sim.state.stats["create"] == 2
    assert key_usage(klass.db, "alice")["held"] == {"tasks": 1.0, "images": 1.0}


@pytest.mark.slow
def test_a_keys_concurrency_and_rate_caps(make_class: Callable[..., Class]) -> None:
    klass = make_class(max_running=2, rate=None)
    klass.sim.state.reconfigure({"speed": 0.05})  # tasks that run for a while
    token = add_key(klass.db, "alice", {})
    other = add_key(klass.db, "bob", {})
    with klass.client(token) as api, klass.client(other) as bob:
        assert api.post(f"/v1/queue/{IMAGE}", json=ONE).status_code == 200
        assert api.post(f"/v1/queue/{IMAGE}", json=ONE).status_code == 200
        third = api.post(f"/v1/queue/{IMAGE}", json=ONE)
        assert third.status_code == 429 and "at most 2 at once" in third.json()["error"]["message"]
        assert bob.post(f"/v1/queue/{IMAGE}", json=ONE).status_code == 200  # not starved
    limited = make_class(rate=1.0)
    token = add_key(limited.db, "carol", {})
    with limited.client(token) as api:
        answers = [api.get("/v1/queue/x/requests/y/status").status_code for _ in range(5)]
    assert 429 in answers


def test_cancel_is_forwarded_and_a_cancelled_task_stays_charged(
    make_class: Callable[..., Class],
) -> None:
    klass = make_class()
    klass.sim.state.reconfigure({"speed": 0.05})
    token = add_key(klass.db, "alice", {"tasks": 5})
    with klass.client(token) as api:
        handle = api.post(f"/v1/queue/{IMAGE}", json=ONE).json()
        assert api.put(handle["cancel_url"]).status_code < 300
        wait_for(
            lambda: api.get(handle["status_url"]).json()["status"] == "COMPLETED",
            what="the cancelled task to end",
        )
    seen = key_usage(klass.db, "alice")
    assert seen["spent"] == {"tasks": 1.0, "images": 1.0} and seen["failed"] == 0


def test_a_failed_task_is_released(make_class: Callable[..., Class]) -> None:
    klass = make_class()
    klass.sim.state.reconfigure({"fail_rate": 1.0})
    token = add_key(klass.db, "alice", {"tasks": 5})
    with klass.client(token) as api:
        handle = api.post(f"/v1/queue/{IMAGE}", json=ONE).json()
        wait_for(
            lambda: api.get(handle["status_url"]).json()["status"] == "COMPLETED",
            what="the failing task to end",
        )
    seen = key_usage(klass.db, "alice")
    assert seen["failed"] == 1 and seen["held"] == {} and seen["spent"] == {}


@pytest.mark.slow
def test_the_group_demo_cache_answers_identical_seeded_creates_once(
    make_class: Callable[..., Class],
) -> None:
    klass = make_class()
    add_group(klass.db, "demo", {}, cache_seconds=600)
    add_group(klass.db, "plain", {})
    seeded = {"prompt": "the teacher's cell", "n": 1, "seed": 42}
    results = []
    for group in ("demo", "plain"):
        for i in range(4):
            token = add_key(klass.db, f"{group}{i}", {"tasks": 3}, group=group)
            with klass.client(token) as api:
                handle = api.post(f"/v1/queue/{IMAGE}", json=seeded).json()
                wait_for(
                    lambda h=handle, a=api: a.get(h["status_url"]).json()["status"] == "COMPLETED",
                    what="the task",
                )
                results.append(api.get(handle["response_url"]).json()["outputs"])
        unseeded = {"prompt": "no seed", "n": 1}
        with klass.client(token) as api:
            assert api.post(f"/v1/queue/{IMAGE}", json=unseeded).status_code == 200
    assert klass.sim.state.stats["created"] == 1 + 1 + 4 + 1  # demo: one seeded, one not
    assert all(r == results[0] for r in results[:4])
    report = {k["name"]: k for k in usage(klass.db)["keys"]}
    assert report["demo0"]["spent"].get("tasks") == 1.0 and report["demo1"]["cached"] == 1
    assert report["demo1"]["spent"].get("tasks") is None
    assert report["plain1"]["spent"]["tasks"] == 1.0


@pytest.mark.slow
def test_index_names_the_service(make_class: Callable[..., Class]) -> None:
    klass = make_class()
    answer = httpx.get(klass.server.base_url + "/", timeout=30)
    assert answer.json()["service"] == "genwidgets class gateway"


@pytest.mark.slow
def test_a_task_upstream_no_longer_knows_frees_its_place_and_stays_reserved(
    make_class: Callable[..., Class], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An upstream that restarted, or whose retention ended, answers 404 for a task: the
    key's place among ``max_running`` is free again, polled or swept; its cost stays
    reserved (upstream may have billed it) until the teacher settles it."""
    klass = make_class(max_running=2, sweep_every=0.2)
    klass.sim.state.reconfigure({"speed": 0.01})  # they stay unfinished
    token = add_key(klass.db, "alice", {"tasks": 10})
    with klass.client(token) as api:
        polled, swept = (api.post(f"/v1/queue/{IMAGE}", json=ONE).json() for _ in range(2))
        assert api.post(f"/v1/queue/{IMAGE}", json=ONE).status_code == 429
        klass.sim.state.scheduler.tasks.clear()  # upstream forgets them
        assert api.get(polled["status_url"]).status_code == 404
        assert api.post(f"/v1/queue/{IMAGE}", json=ONE).status_code == 429  # too new to tell
        monkeypatch.setattr(budgets, "GONE_AFTER", 0.0)
        assert api.get(polled["status_url"]).status_code == 404
        assert api.post(f"/v1/queue/{IMAGE}", json=ONE).status_code == 200
        wait_for(lambda: len(tasks_of(klass.db, state="unknown")) == 2, what="the sweep to see it")
    forgotten = tasks_of(klass.db, state="unknown")
    assert {t["id"] for t in forgotten} == {polled["request_id"], swept["request_id"]}
    assert all("404 Request not found" in t["error"] for t in forgotten)
    assert key_usage(klass.db, "alice")["held"] == {"tasks": 3.0, "images": 3.0}
    database = str(klass.db.path)
    assert (
        main(
            [
                "serve",
                "--database",
                database,
                "tasks",
                "--settle",
                polled["request_id"],
                "--not-made",
            ]
        )
        == 0
    )
    assert key_usage(klass.db, "alice")["held"] == {"tasks": 2.0, "images": 2.0}


@pytest.mark.slow
def test_tasks_nobody_polls_settle_by_the_sweep(make_class: Callable[..., Class]) -> None:
    """A failed task nobody asks about still gives its reservation back, and a finished
    one frees its key's place among the tasks it may run at once."""
    klass = make_class(sweep_every=0.2, max_running=1)
    klass.sim.state.reconfigure({"fail_rate": 1.0})
    token = add_key(klass.db, "alice", {"tasks": 5})
    with klass.client(token) as api:
        assert api.post(f"/v1/queue/{IMAGE}", json=ONE).status_code == 200
        wait_for(lambda: key_usage(klass.db, "alice")["failed"] == 1, what="the sweep")
        assert key_usage(klass.db, "alice")["held"] == {}
        klass.sim.state.reconfigure({"fail_rate": 0.0})
        assert api.post(f"/v1/queue/{IMAGE}", json=ONE).status_code == 200
        wait_for(
            lambda: key_usage(klass.db, "alice")["spent"].get("tasks") == 1.0,
            what="the finished task to settle",
        )
        assert api.post(f"/v1/queue/{IMAGE}", json=ONE).status_code == 200


@pytest.mark.slow
def test_a_result_not_ready_is_passed_on_as_upstream_says(make_class: Callable[..., Class]) -> None:
    klass = make_class()
    klass.sim.state.reconfigure({"speed": 0.05})
    token = add_key(klass.db, "alice", {})
    with klass.client(token) as api:
        handle = api.post(f"/v1/queue/{IMAGE}", json=ONE).json()
        early = api.get(handle["response_url"])
    assert early.status_code == 202
    assert early.json()["request_id"] == handle["request_id"]
    assert early.json()["status"] in ("IN_QUEUE", "IN_PROGRESS")


@pytest.mark.slow
def test_under_a_prefix_as_a_jupyterhub_service(make_class: Callable[..., Class]) -> None:
    """Behind JupyterHub's proxy every path keeps the service's prefix: the handle's
    addresses carry it, and a student's client pointed at the prefixed URL works."""
    klass = make_class(prefix="/services/class/")
    base = klass.server.base_url
    assert base.endswith("/services/class")
    token = add_key(klass.db, "alice", {})
    with gw.Client(base_url=base, api_key=token, ledger=False) as client:
        job = client.submit(IMAGE, ONE)
        assert job.handle.status_url.startswith(f"{base}/v1/queue/")
        assert job.result(timeout=120).ok
    root = base.removesuffix("/services/class")
    assert httpx.post(f"{root}/v1/queue/{IMAGE}", json=ONE, timeout=30).status_code == 404


@pytest.mark.slow
def test_the_demo_cache_holds_when_students_send_at_once(
    make_class: Callable[..., Class],
) -> None:
    """Twelve students send the teacher's seeded cell at the same instant: one create
    upstream, and every student's own task completes with its outputs."""
    from concurrent.futures import ThreadPoolExecutor

    klass = make_class(rate=None)
    add_group(klass.db, "demo", {}, cache_seconds=600)
    tokens = [add_key(klass.db, f"s{i}", {"tasks": 1}, group="demo") for i in range(12)]
    seeded = {"prompt": "the teacher's cell", "n": 1, "seed": 7}

    def student(token: str) -> Any:
        with klass.client(token) as api:
            handle = api.post(f"/v1/queue/{IMAGE}", json=seeded).json()
            wait_for(
                lambda: api.get(handle["status_url"]).json()["status"] == "COMPLETED",
                what="the student's task",
            )
            return api.get(handle["response_url"]).json()["outputs"]

    with ThreadPoolExecutor(max_workers=len(tokens)) as pool:
        outputs = list(pool.map(student, tokens))
    assert klass.sim.state.stats["created"] == 1
    assert all(o == outputs[0] and o for o in outputs)
    charged = [k for k in usage(klass.db)["keys"] if k["spent"]]
    assert len(charged) == 1  # the first pays; the others rode along


@pytest.mark.slow
def test_a_busy_port_is_the_class_gateways_own_error(
    tmp_path: Path, upstream_sim: SimulatorServer
) -> None:
    """The lifecycle the simulator shares (protocol/serving.py) fails with this server's
    error, naming the address, and lets its database go."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        db = Database(tmp_path / "class.db")
        upstream = Upstream(upstream_sim.base_url, TEACHER_KEY)
        with pytest.raises(ServeError, match=f"127.0.0.1:{port}") as caught:
            ClassServer(ServeConfig(upstream=upstream, database=db), port=port).start()
    assert caught.value.code == "START_FAILED"
    server = ClassServer(ServeConfig(upstream=upstream, database=db)).start()
    with httpx.Client(base_url=server.base_url) as api:
        assert api.get("/").status_code == 200
    server.stop()
    server.stop()  # twice is harmless
    assert not server.running


def test_a_database_failure_after_the_create_was_sent_is_an_outcome_unknown(
    make_class: Callable[..., Class],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Upstream made (and billed) the task, then the database failed to record it: the
    student is never told nothing was sent, and upstream's id is in the log first."""
    klass = make_class()
    token = add_key(klass.db, "alice", {"tasks": 5})
    recorded = budgets.move

    def failing(db: Database, task_id: str, state: str, **rest: Any) -> bool:
        if state == "open":
            raise storage_error("disk I/O error")
        return recorded(db, task_id, state, **rest)

    monkeypatch.setattr(app, "move", failing)
    with caplog.at_level(logging.INFO, logger="genwidgets.serve"), klass.client(token) as api:
        answer = api.post(f"/v1/queue/{IMAGE}", json=ONE)
    [task] = tasks_of(klass.db)
    error = answer.json()["error"]
    assert answer.status_code == 503 and error["code"] == "STORAGE_UNAVAILABLE"
    assert "nothing was sent" not in error["message"] and "may exist" in error["message"]
    assert task["id"] in error["message"]
    [made] = klass.sim.state.scheduler.tasks
    assert made in caplog.text and TEACHER_KEY not in caplog.text
    assert key_usage(klass.db, "alice")["held"] == {"tasks": 1.0, "images": 1.0}


def test_cancelling_a_task_others_follow_by_the_demo_cache_ends_only_it(
    make_class: Callable[..., Class],
) -> None:
    """The student whose create was sent cancels it while a classmate's identical seeded
    create follows the same upstream task: only the first task ends (cancelled, still
    charged), the shared task is never cancelled upstream and the classmate's completes.
    The first task answers as it ended (cancelled), not as the shared task runs, and a
    second cancel of it is a finished task's, never forwarded (it ended the classmate's
    task); so does a follower cancelled alone. Once nobody follows it, a cancel is
    forwarded again."""
    klass = make_class()
    klass.sim.state.reconfigure({"speed": 1.0})  # a task of 2 s
    add_group(klass.db, "demo", {}, cache_seconds=600)
    seeded = {"prompt": "the teacher's cell", "n": 1, "seed": 7}
    first, other, third = (
        add_key(klass.db, n, {"tasks": 3}, group="demo") for n in ("first", "other", "third")
    )
    with klass.client(first) as mine, klass.client(other) as theirs, klass.client(third) as last:
        sent = mine.post(f"/v1/queue/{IMAGE}", json=seeded).json()
        follows = theirs.post(f"/v1/queue/{IMAGE}", json=seeded).json()
        also = last.post(f"/v1/queue/{IMAGE}", json=seeded).json()
        for api, task in ((mine, sent), (last, also)):  # the sender, and a follower
            assert api.put(task["cancel_url"]).json()["status"] == "CANCELLATION_REQUESTED"
            ended = api.get(task["status_url"]).json()
            assert (ended["status"], ended["error_type"]) == ("COMPLETED", "cancelled")
            result = gw.Result.from_body(api.get(task["response_url"]).json())
            assert not result.ok and result.error and not result.outputs
            again = api.put(task["cancel_url"])
            assert again.status_code == 400
            assert again.json() == {"detail": "Task already completed"}
        assert klass.sim.state.stats["cancel"] == 0
        wait_for(
            lambda: theirs.get(follows["status_url"]).json()["status"] == "COMPLETED",
            what="the classmate's task to end",
        )
        result = theirs.get(follows["response_url"]).json()
        assert result["error"] is None and result["outputs"]
        lone = mine.post(f"/v1/queue/{IMAGE}", json={**seeded, "seed": 8}).json()
        mine.put(lone["cancel_url"])
    assert klass.sim.state.stats["cancel"] == 1  # followed by nobody: forwarded
    states = {t["id"]: (t["state"], t["charged"]) for t in tasks_of(klass.db)}
    assert states[sent["request_id"]] == ("cancelled", True)
    assert states[follows["request_id"]] == ("done", False)
    assert states[also["request_id"]] == ("cancelled", False)
    assert key_usage(klass.db, "first")["spent"]["tasks"] == 1.0


def test_tasks_end_on_any_gateways_ending_word_as_the_client_reads_it(tmp_path: Path) -> None:
    """An upstream of another dialect (Replicate's ``succeeded``/``failed``): its finished
    task is spent and its failed one given back, as for the spec's ``COMPLETED``, so
    neither holds its key's place for ever."""
    config = SimConfig(speed=20.0, keys=(TEACHER_KEY,), dialect="replicate")
    db = class_db(tmp_path)
    token = add_key(db, "alice", {"tasks": 5})
    with SimulatorServer(config, port=0) as sim:
        upstream = Upstream(sim.base_url, TEACHER_KEY)
        with ClassServer(ServeConfig(upstream=upstream, database=db, max_running=1)) as server:
            api = httpx.Client(base_url=server.base_url, timeout=60)
            api.headers["Authorization"] = f"Bearer {token}"
            for fail_rate in (0.0, 1.0):
                sim.state.reconfigure({"fail_rate": fail_rate})
                handle = api.post(f"/v1/queue/{IMAGE}", json=ONE).json()
                wait_for(
                    lambda h=handle: gw.Status.from_body(api.get(h["status_url"]).json()).done,
                    what="the task to end",
                )
            api.close()
    seen = key_usage(db, "alice")
    assert seen["spent"] == {"tasks": 1.0, "images": 1.0} and seen["failed"] == 1
    assert seen["held"] == seen["spent"]


@contextlib.contextmanager
def class_over(
    upstream: str | type[BaseHTTPRequestHandler], db: Database, token: str | None
) -> Iterator[tuple[httpx.Client, ServeConfig]]:
    """A class server on ``db`` (no sweep) over ``upstream``, a URL or a handler served on
    loopback meanwhile, and a client of its student ``token``: the client and the
    server's configuration. All ended on leaving."""
    with contextlib.ExitStack() as stack:
        if not isinstance(upstream, str):
            served = LoopbackServer(upstream)
            stack.callback(served.close)
            upstream = served.base
        config = ServeConfig(upstream=Upstream(upstream, TEACHER_KEY), database=db, sweep_every=0)
        server = stack.enter_context(ClassServer(config))
        yield stack.enter_context(student_client(server.base_url, token)), config


def sweeper(config: ServeConfig) -> ServeState:
    """A sweep's state, as another process's over the same class: its own upstream."""
    upstream = Upstream(config.upstream.base_url, TEACHER_KEY)
    return ServeState(replace(config, upstream=upstream))


def cancelled_unreachable(db: Database) -> tuple[httpx.Response, str]:
    """alice's task, open upstream as ``u1``, cancelled through a class server whose
    upstream cannot be reached: the answer and the task's id."""
    token = add_key(db, "alice", {"tasks": 5})
    task_id = budgets.reserve(db, "alice", IMAGE, budgets.charge_of(IMAGE, ONE, {})).task_id
    budgets.move(db, task_id, "open", upstream_id="u1")
    with class_over(UNREACHABLE, db, token) as (api, _):
        return api.put(f"/v1/queue/{IMAGE}/requests/{task_id}/cancel", timeout=60), task_id


class ForgetfulUpstream(OneTaskGateway):
    """An upstream whose status address answers with the class's ``answer`` (status,
    Content-Type, body): a proxy's page, a router's bare 404, or the gateway's word."""

    answer: tuple[int, str, bytes] = (200, "application/json", b"{}")

    def do_GET(self) -> None:
        status, kind, body = self.answer
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


PROXY_PAGE = b"<!DOCTYPE html><html><body><h1>404 Not Found</h1><hr>nginx</body></html>"


@pytest.mark.parametrize(
    ("upstream_answer", "gone"),
    [
        ((404, "text/html", PROXY_PAGE), False),
        ((404, "application/json", b'{"detail": "Not Found"}'), False),
        ((404, "text/plain", b""), False),
        ((404, "application/json", b'{"status": "error", "message": "Not Found"}'), False),
        ((404, "application/json", b'{"detail": "Request not found"}'), True),
        ((410, "text/plain", b"Request not found"), True),
        ((404, "application/json", b'{"detail": "Request r1 not found"}'), True),
        ((404, "application/json", b'{"error": {"code": "REQUEST_NOT_FOUND"}}'), True),
        ((404, "application/json", b'{"detail": "Result for request r1 not found"}'), False),
        ((404, "application/json", b'{"detail": "Request r2 not found"}'), False),
    ],
    ids=[
        "proxy-page",
        "router-not-found",
        "empty",
        "jsend-404",
        "request-not-found",
        "gone-410",
        "id-in-words",
        "machine-code",
        "its-result-not-found",
        "another-id",
    ],
)
def test_only_upstreams_word_that_it_forgot_a_task_frees_its_place(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    upstream_answer: tuple[int, str, bytes],
    gone: bool,
) -> None:
    """Any upstream 404 (a proxy's HTML page in front of it during a deploy) was taken as
    the task gone: its key's place freed, the student told "Request not found" and the
    paid task never followed again. Only upstream's word counts, by the rule the
    student's client goes by; anything else is a 502 to try again, the task kept, on a
    poll and in the sweep alike (the sweep read a JSend 404's ``"status": "error"`` as
    the task failed, and gave its reservation back)."""
    monkeypatch.setattr(budgets, "GONE_AFTER", 0.0)  # every task old enough to believe gone
    ForgetfulUpstream.answer = upstream_answer
    db = class_db(tmp_path)
    token = add_key(db, "alice", {"tasks": 5})
    with class_over(ForgetfulUpstream, db, token) as (api, config):
        polled, swept = (api.post(f"/v1/queue/{IMAGE}", json=ONE).json() for _ in "ab")
        answer = api.get(polled["status_url"])
        asyncio.run(sweep_once(sweeper(config)))  # asks about both; the polled one is settled
    states = {t["id"]: t["state"] for t in tasks_of(db)}
    if gone:
        assert answer.status_code == 404 and answer.json() == {"detail": "Request not found"}
        assert states == {polled["request_id"]: "unknown", swept["request_id"]: "unknown"}
    else:
        assert answer.status_code == 502, answer.text
        assert answer.json()["error"]["code"] == "UPSTREAM_UNAVAILABLE"
        assert "the task is kept" in answer.json()["error"]["message"]
        assert states == {polled["request_id"]: "open", swept["request_id"]: "open"}


def lost_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every task old enough to believe gone, and a stretch of error answers about it
    long enough (``LOST_AFTER``) from its second."""
    monkeypatch.setattr(budgets, "GONE_AFTER", 0.0)
    monkeypatch.setattr(budgets, "LOST_AFTER", 0.0)


def sweep_answered(
    tmp_path: Path, answers: list[tuple[int, str, bytes]]
) -> tuple[Database, list[str], bool]:
    """One task of a key with one running place, swept once per upstream answer in
    ``answers`` (every sweep finds it not looked at lately): the class's database, the
    task's state after each, and whether the key's next create was taken."""
    db = class_db(tmp_path)
    token = add_key(db, "alice", {"tasks": 5}, max_running=1)
    ForgetfulUpstream.answer = RUNNING
    states: list[str] = []

    async def sweeps(config: ServeConfig) -> None:
        state = sweeper(config)
        for answer in answers:
            ForgetfulUpstream.answer = answer
            db.run(lambda tx: tx.run("UPDATE tasks SET checked_at = NULL"))
            await sweep_once(state)
            states.append(tasks_of(db)[0]["state"])
        await state.config.upstream.close()

    with class_over(ForgetfulUpstream, db, token) as (api, config):
        assert api.post(f"/v1/queue/{IMAGE}", json=ONE).status_code == 200
        asyncio.run(sweeps(config))
        taken = api.post(f"/v1/queue/{IMAGE}", json=ONE).status_code == 200
    return db, states, taken


def poll_answered(
    tmp_path: Path, answers: list[tuple[int, str, bytes]]
) -> tuple[Database, list[str], bool, list[int]]:
    """As :func:`sweep_answered`, the task polled by its student once per answer (no
    sweep); and the status of each poll's answer."""
    db = class_db(tmp_path)
    token = add_key(db, "alice", {"tasks": 5}, max_running=1)
    ForgetfulUpstream.answer = RUNNING
    states: list[str] = []
    polls: list[int] = []
    with class_over(ForgetfulUpstream, db, token) as (api, _):
        handle = api.post(f"/v1/queue/{IMAGE}", json=ONE).json()
        for answer in answers:
            ForgetfulUpstream.answer = answer
            polls.append(api.get(handle["status_url"]).status_code)
            states.append(tasks_of(db)[0]["state"])
        taken = api.post(f"/v1/queue/{IMAGE}", json=ONE).status_code == 200
    return db, states, taken, polls


ROUTER_404 = (404, "application/json", b'{"detail": "Not Found"}')
RUNNING = (200, "application/json", b'{"status": "IN_PROGRESS"}')


def test_a_task_upstream_forgot_in_its_word_stays_forgotten_through_a_routers_404(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task upstream forgot is ``unknown`` (reserved, no running place); a router's bare
    404 to the next sweep was read as a status saying it runs, made it ``open`` again,
    and its key (one place) was refused every create."""
    monkeypatch.setattr(budgets, "GONE_AFTER", 0.0)
    word = (404, "application/json", b'{"detail": "Request not found"}')
    _, states, taken = sweep_answered(tmp_path, [word, ROUTER_404])
    assert states == ["unknown", "unknown"] and taken


#: upstream saying a task is gone in words other than its "Request not found"
gone_in_other_words = pytest.mark.parametrize(
    "gone",
    [
        (404, "application/json", b'{"detail": "Not found."}'),
        (410, "application/json", b'{"detail": "Request expired"}'),
    ],
    ids=["replicate-like", "410-expired"],
)


@gone_in_other_words
def test_a_task_answered_only_404s_for_a_long_stretch_frees_its_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gone: tuple[int, str, bytes]
) -> None:
    """A task gone upstream in words other than upstream's "Request not found" was never
    forgotten: every sweep settled nothing and it held its key's place for ever. Only
    404s and 410s for ``LOST_AFTER`` (0 here: from the second such sweep on) make it
    ``unknown``, still reserved; a status answer in between starts the stretch anew."""
    lost_at_once(monkeypatch)
    db, states, taken = sweep_answered(tmp_path, [gone, RUNNING, gone, ROUTER_404])
    assert states == ["open", "open", "open", "unknown"] and taken
    task = tasks_of(db)[-1]
    assert task["charged"] and "only errors" in task["error"]


class RefusingUpstream(OneTaskGateway):
    """An upstream whose create answers the class's ``create`` (status, body, Retry-After)
    unless it is None (a handle), whose cancel answers ``cancel`` and is then applied
    (``cancelled``: its status says the task ended cancelled by the user), and whose
    result address answers ``result`` unless it is None (as its status)."""

    create: tuple[int, Any, str | None] | None = None
    poll: tuple[int, Any, str | None] | None = None
    result: tuple[int, Any, str | None] | None = None
    cancel: tuple[int, bytes] = (200, b'{"status": "CANCELLATION_REQUESTED"}')
    cancelled = False

    def do_POST(self) -> None:
        if self.create is None:
            return super().do_POST()
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_scripted(*self.create)

    def send_scripted(self, status: int, body: Any, wait: str | None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if wait is not None:
            self.send_header("Retry-After", wait)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.result is not None and self.path.endswith("/response"):
            self.send_scripted(*self.result)
        elif self.poll is not None:
            self.send_scripted(*self.poll)
        elif type(self).cancelled:
            ended = {"status": "COMPLETED", "error": "cancelled by user"}
            self.send_json({"request_id": "r1", **ended, "error_type": "cancelled"})
        else:
            self.send_json({"request_id": "r1", "status": "IN_PROGRESS"})

    def do_PUT(self) -> None:
        type(self).cancelled = True
        status, body = self.cancel
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def refusing(tmp_path: Path) -> Iterator[tuple[str, Database]]:
    """A class server (its address and database) over a :class:`RefusingUpstream`, its
    answers reset; no sweep."""
    RefusingUpstream.create, RefusingUpstream.poll, RefusingUpstream.cancelled = None, None, False
    RefusingUpstream.result = None
    RefusingUpstream.cancel = (200, b'{"status": "CANCELLATION_REQUESTED"}')
    upstream_server = LoopbackServer(RefusingUpstream)
    db = class_db(tmp_path)
    upstream = Upstream(upstream_server.base, TEACHER_KEY)
    try:
        with ClassServer(ServeConfig(upstream=upstream, database=db, sweep_every=0)) as server:
            yield server.base_url, db
    finally:
        upstream_server.close()


def create_answered(
    refusing: tuple[str, Database], status: int, code: str
) -> tuple[httpx.Response, dict[str, Any]]:
    """alice's create, upstream answering ``status`` in the spec's error shape with
    ``code``, its ``request_id`` (``e1``) and ``Retry-After: 7``: our answer and task."""
    base, db = refusing
    body = {"error": {"code": code, "message": "no"}, "request_id": "e1"}
    RefusingUpstream.create = (status, body, "7")
    token = add_key(db, "alice", {"tasks": 2})
    with student_client(base, token) as api:
        answer = api.post(f"/v1/queue/{IMAGE}", json=ONE)
    return answer, tasks_of(db)[0]


@pytest.mark.parametrize("code", ["RATE_LIMIT_EXCEEDED", "CONTENT_POLICY"])
def test_a_create_refused_under_a_200_is_passed_on_and_never_charged(
    refusing: tuple[str, Database], code: str
) -> None:
    """The spec shows its error shape, not its statuses: an upstream 200 carrying
    ``{"error": {"code": "RATE_LIMIT_EXCEEDED"}, "request_id": "e1"}`` was recorded as a
    paid task ``e1`` and the student handed a handle, though the client reads it as a
    refusal. It is one here too: released, and a rate limit is a 429 with its wait."""
    answer, task = create_answered(refusing, 200, code)
    assert is_refusal(Answer.of(answer)), answer.text
    assert answer.json()["error"]["code"] == code
    if code == "RATE_LIMIT_EXCEEDED":
        assert answer.status_code == 429 and int(answer.headers["retry-after"]) == 7
    assert (task["state"], task["charged"]) == ("refused", False) and code in task["error"]
    assert key_usage(refusing[1], "alice")["held"] == {}


@pytest.mark.parametrize(
    ("cancel_answer", "after"),
    [
        ((504, b"<html>504 Gateway Time-out</html>"), ("cancelled", True)),
        ((400, b'{"detail": "Task already completed"}'), ("cancelled", True)),
    ],
    ids=["proxy-504", "refused-400"],
)
def test_a_cancel_answered_5xx_stays_asked_and_charged(
    refusing: tuple[str, Database],
    cancel_answer: tuple[int, bytes],
    after: tuple[str, bool],
) -> None:
    """A proxy's 504 to a cancel that upstream applied was taken as a refusal: the task
    went back to ``open``, and its end, "cancelled by user", was settled ``failed`` and
    given back. Only a 4xx refusal restores the task; a 5xx leaves it being cancelled.
    Upstream's end, its cancel word, is then ``cancelled``, charged, either way: after a
    refusal too it was ``failed`` with "cancelled by user" and given back (review-31)."""
    base, db = refusing
    RefusingUpstream.cancel = cancel_answer
    token = add_key(db, "alice", {"tasks": 2})
    with student_client(base, token) as api:
        handle = api.post(f"/v1/queue/{IMAGE}", json=ONE).json()
        cancel = api.put(handle["cancel_url"])
        assert cancel.status_code >= 400
        asked = tasks_of(db)[0]["state"]
        assert api.get(handle["status_url"]).json()["status"] == "COMPLETED"
    assert asked == ("cancelling" if cancel_answer[0] >= 500 else "open")
    task = tasks_of(db)[0]
    assert (task["state"], task["charged"]) == after


def test_an_upstream_429_holds_creates_back_as_long_as_it_says(
    refusing: tuple[str, Database],
) -> None:
    """README and #serve-http say an upstream 429's Retry-After is passed on and creates
    are held back for that long; it was cut to 60 s. Now up to the client's own ceiling
    (``GATE_CEILING``, 10 minutes), the same a student's client would wait."""
    base, db = refusing
    RefusingUpstream.create = (429, {"detail": "Rate limit exceeded"}, "300")
    token = add_key(db, "alice", {"tasks": 5})
    with student_client(base, token) as api:
        limited = api.post(f"/v1/queue/{IMAGE}", json=ONE)
        assert limited.status_code == 429 and int(limited.headers["retry-after"]) == 300
        RefusingUpstream.create = None  # upstream would take it: held back all the same
        held_back = api.post(f"/v1/queue/{IMAGE}", json=ONE)
        assert held_back.status_code == 429 and int(held_back.headers["retry-after"]) > 60
        admin = add_key(db, "teacher", {}, admin=True)
        page = api.get("/admin", headers={"Authorization": f"Bearer {admin}"})
        assert "sends no create for" in page.text  # the teacher sees why
    assert [t["state"] for t in tasks_of(db)] == ["refused"]  # the held-back one: never made


@pytest.mark.parametrize("code", ["SERVICE_UNAVAILABLE", "RATE_LIMIT_EXCEEDED"])
def test_a_create_answered_5xx_is_never_a_task_handle(
    refusing: tuple[str, Database], code: str
) -> None:
    """A 503 in the spec's error shape carries the error's own ``request_id``: it was
    recorded as a paid task ``e1`` and the student handed a handle to nothing. A 5xx is
    an outcome unknown (502, the task kept reserved for the teacher), but a rate limit,
    whatever its status, is upstream's refusal: given back, a 429 with its wait."""
    answer, task = create_answered(refusing, 503, code)
    if code == "RATE_LIMIT_EXCEEDED":
        assert answer.status_code == 429 and int(answer.headers["retry-after"]) == 7
        assert (task["state"], task["charged"]) == ("refused", False)
    else:
        assert answer.status_code == 502, answer.text
        assert answer.json()["error"]["code"] == "UPSTREAM_ERROR"
        assert task["id"] in answer.json()["error"]["message"]
        assert (task["state"], task["charged"]) == ("unknown", True)


def test_the_simulators_replicate_rate_limit_makes_no_task(tmp_path: Path) -> None:
    """The simulator in its replicate dialect refuses a create over its rate limit with
    a 503 ``RATE_LIMIT_EXCEEDED`` that names a ``request_id``: each was a made, charged
    task. Only the create upstream made is one; the refused one is a 429."""
    db = class_db(tmp_path)
    token = add_key(db, "alice", {"tasks": 10})
    sim = SimConfig(speed=20.0, keys=(TEACHER_KEY,), dialect="replicate", create_rate_limit=0.2)
    with SimulatorServer(sim, port=0) as upstream:
        config = ServeConfig(upstream=Upstream(upstream.base_url, TEACHER_KEY), database=db)
        with ClassServer(config) as server, httpx.Client(base_url=server.base_url) as api:
            api.headers["Authorization"] = f"Bearer {token}"
            answers = [
                api.post(f"/v1/queue/{IMAGE}", json={"prompt": f"fox {i}", "n": 1}, timeout=60)
                for i in range(2)
            ]
    assert [a.status_code for a in answers] == [200, 429]
    newest_first = [(t["state"], t["charged"]) for t in tasks_of(db)]
    assert newest_first == [("refused", False), ("open", True)]


def test_a_polls_429_holds_back_only_its_poller(refusing: tuple[str, Database]) -> None:
    """A status poll answered ``429 Retry-After: 600`` held every create of the class
    back for 10 minutes, though upstream limited only polls. The poller is told to
    wait; a classmate's create goes on."""
    base, db = refusing
    alice, bob = add_key(db, "alice", {"tasks": 2}), add_key(db, "bob", {"tasks": 2})
    with httpx.Client(base_url=base, timeout=60) as api:
        handle = api.post(
            f"/v1/queue/{IMAGE}", json=ONE, headers={"Authorization": f"Bearer {alice}"}
        ).json()
        RefusingUpstream.poll = (429, {"detail": "Too many status requests"}, "600")
        polled = api.get(handle["status_url"], headers={"Authorization": f"Bearer {alice}"})
        assert polled.status_code == 429 and int(polled.headers["retry-after"]) == 600
        RefusingUpstream.poll = None
        created = api.post(
            f"/v1/queue/{IMAGE}", json=ONE, headers={"Authorization": f"Bearer {bob}"}
        )
    assert created.status_code == 200, created.text
    assert [t["state"] for t in tasks_of(db)] == ["open", "open"]


class HeldUpstream(OneTaskGateway):
    """An upstream whose create waits for ``go``, then makes task ``r1`` or, with
    ``refuse``, answers 422; ``r1``'s status says it completed."""

    go = threading.Event()
    refuse = False

    def do_POST(self) -> None:
        self.go.wait(30)
        if not self.refuse:
            return super().do_POST()
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_json({"detail": "prompt refused by the safety filter"}, code=422)

    def do_GET(self) -> None:
        self.send_json({"request_id": "r1", "status": "COMPLETED", "outputs": []})


@pytest.mark.parametrize("refuse", [True, False], ids=["refused", "made"])
def test_a_demo_cache_answer_ends_with_or_follows_its_first_create(
    tmp_path: Path, refuse: bool
) -> None:
    """A classmate's identical seeded create, answered by the demo cache while the first
    one was still being sent, was ``open`` for ever: ``Request not found`` once upstream
    refused the first (and it was never settled), and never swept once upstream made it
    (it never got the upstream id). Refused, it ends with it at no cost, its status
    saying why; made, it gets the upstream id, and the sweep settles it unpolled."""
    HeldUpstream.go, HeldUpstream.refuse = threading.Event(), refuse
    db = class_db(tmp_path)
    add_group(db, "demo", {}, cache_seconds=600)
    first, other = (add_key(db, n, {"tasks": 3}, group="demo") for n in ("first", "other"))
    seeded = {"prompt": "the teacher's cell", "n": 1, "seed": 7}
    try:
        with class_over(HeldUpstream, db, None) as (api, config):
            sent: list[httpx.Response] = []
            headers = {"Authorization": f"Bearer {first}"}
            url = f"/v1/queue/{IMAGE}"
            sender = threading.Thread(
                target=lambda: sent.append(api.post(url, json=seeded, headers=headers))
            )
            sender.start()
            wait_for(lambda: tasks_of(db, state="sending"), what="the first create to leave")
            api.headers["Authorization"] = f"Bearer {other}"
            follower = api.post(url, json=seeded).json()
            HeldUpstream.go.set()
            sender.join(60)
            if not refuse:  # nobody polls it: the sweep alone settles it
                asyncio.run(sweep_once(sweeper(config)))
            swept = {t["key"]: (t["state"], t["charged"]) for t in tasks_of(db)}
            status = api.get(follower["status_url"])
    finally:
        HeldUpstream.go.set()
    states = {t["key"]: (t["state"], t["charged"]) for t in tasks_of(db)}
    if refuse:
        assert sent[0].status_code == 422
        assert status.status_code == 200 and "refused" in status.json()["error"]
        assert states == {"first": ("refused", False), "other": ("refused", False)}
    else:
        assert sent[0].status_code == 200 and status.json()["status"] == "COMPLETED"
        assert swept == states == {"first": ("done", True), "other": ("done", False)}


@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
def test_the_teacher_clears_upstreams_hold_on_creates_in_every_process(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    request: pytest.FixtureRequest,
    store: str,
) -> None:
    """An upstream 429 with ``Retry-After: 600`` held creates back for ten minutes, and
    only a restart ended it, process by process. The hold is the class's (in the
    database): a second server on it holds back too (two in this process on SQLite, two
    ``genwidgets serve`` processes on PostgreSQL), the admin page says how to clear it,
    and ``serve hold --clear`` lets every one send again at once."""
    RefusingUpstream.create, RefusingUpstream.poll = (429, {"detail": "Slow down"}, "600"), None
    upstream_server = LoopbackServer(RefusingUpstream)
    url = (
        str(tmp_path / "class.db") if store == "sqlite" else request.getfixturevalue("postgres_url")
    )
    db = Database(url)
    db.migrate()
    token, admin = add_key(db, "alice", {"tasks": 5}), add_key(db, "teacher", {}, admin=True)
    try:
        with contextlib.ExitStack() as running, httpx.Client(timeout=60) as api:
            if store == "sqlite":
                servers = [
                    running.enter_context(
                        ClassServer(
                            ServeConfig(
                                upstream=Upstream(upstream_server.base, TEACHER_KEY),
                                database=Database(url),
                                sweep_every=0,
                            )
                        )
                    ).base_url
                    for _ in "ab"
                ]
            else:
                start = request.getfixturevalue("serve_processes")
                servers = [start(upstream_server.base, url, "--rate", "0").base_url for _ in "ab"]
            api.headers["Authorization"] = f"Bearer {token}"
            assert api.post(f"{servers[0]}/v1/queue/{IMAGE}", json=ONE).status_code == 429
            RefusingUpstream.create = None  # upstream takes creates again
            for server in servers:
                held = api.post(f"{server}/v1/queue/{IMAGE}", json=ONE)
                assert held.status_code == 429 and int(held.headers["retry-after"]) > 60
            admin_page = {"Authorization": f"Bearer {admin}"}
            assert "hold --clear" in api.get(f"{servers[1]}/admin", headers=admin_page).text
            assert main(["serve", "--database", url, "hold", "--json"]) == 0
            assert json.loads(capsys.readouterr().out)["held_seconds"] > 60
            assert main(["serve", "--database", url, "hold", "--clear"]) == 0
            assert "cleared" in capsys.readouterr().out
            made = [api.post(f"{s}/v1/queue/{IMAGE}", json=ONE) for s in servers]
            page = api.get(f"{servers[0]}/admin", headers=admin_page)
    finally:
        upstream_server.close()
        db.close()
    assert [answer.status_code for answer in made] == [200, 200]
    assert "hold --clear" not in page.text


def test_the_teacher_sees_and_clears_the_hold_on_sweeps(
    refusing: tuple[str, Database], capsys: pytest.CaptureFixture[str]
) -> None:
    """A status answered 429 (``Retry-After: 600``) held every process's sweeps back
    for ten minutes, unseen: ``serve hold`` said creates were not held back, and
    ``--clear`` left it, so tasks nobody polls kept their places and reservations. Both
    show it, the admin page too, and ``--clear`` ends it."""
    base, db = refusing
    budgets.hold_creates(db, 600, what="sweeps")  # a sweep's status answered 429
    admin = {"Authorization": f"Bearer {add_key(db, 'teacher', {}, admin=True)}"}
    with httpx.Client(base_url=base, timeout=60) as api:
        assert "asks about no task" in api.get("/admin", headers=admin).text
        assert main(["serve", "--database", str(db.path), "hold", "--json"]) == 0
        shown = json.loads(capsys.readouterr().out)
        assert shown["holds"]["sweeps"] > 500 and shown["held_seconds"] == 0.0
        assert main(["serve", "--database", str(db.path), "hold", "--clear"]) == 0
        assert "status requests go upstream again" in capsys.readouterr().out
        assert "asks about no task" not in api.get("/admin", headers=admin).text
    assert budgets.holding_creates(db, what="sweeps") == 0.0


@gone_in_other_words
def test_a_stretch_of_404s_to_a_students_polls_is_bounded_without_a_sweep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gone: tuple[int, str, bytes]
) -> None:
    """With ``sweep_every=0`` only the sweep counted a stretch of 404s: a task its
    student polled, answered nothing but 404s not in upstream's words, held its key's
    place for ever. A poll counts by the sweep's rule: a status answer starts the
    stretch anew, and only 404s and 410s for ``LOST_AFTER`` (0 here: from the second
    such poll on) make it ``unknown``, still reserved."""
    lost_at_once(monkeypatch)
    db, states, taken, _ = poll_answered(tmp_path, [gone, RUNNING, gone, ROUTER_404])
    assert states == ["open", "open", "open", "unknown"] and taken
    task = tasks_of(db)[-1]
    assert task["charged"] and "only errors" in task["error"]


def test_a_failed_tasks_error_is_escaped_once_in_tasks_json(
    refusing: tuple[str, Database], capsys: pytest.CaptureFixture[str]
) -> None:
    """``tasks --json`` showed an upstream error as the client shows it on a terminal,
    pre-escaped (``\\x1b``), then escaped again by JSON (``\\\\x1b``). The error is kept
    as upstream wrote it and JSON's own escapes make it inert: read back, it is the
    text upstream sent."""
    base, db = refusing
    text = "\x1b[31mno GPU\u202e left\\n"
    RefusingUpstream.poll = (200, {"request_id": "r1", "status": "FAILED", "error": text}, None)
    token = add_key(db, "alice", {"tasks": 2})
    with student_client(base, token) as api:
        handle = api.post(f"/v1/queue/{IMAGE}", json=ONE).json()
        assert api.get(handle["status_url"]).status_code == 200
    assert main(["serve", "--database", db.url, "tasks", "--json"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out  # inert on a terminal
    assert "\\\\x1b" not in out and "\\u001b" in out  # escaped once, by JSON
    [task] = json.loads(out)["tasks"]
    assert (task["state"], task["error"]) == ("failed", text)


def test_our_own_failures_carry_no_request_id_a_client_could_take_for_a_task(
    refusing: tuple[str, Database],
) -> None:
    """A create answered 503 by upstream is an outcome unknown: our 502 carried a fresh
    ``request_id`` beside its error, which a reader could take for a made task's. It
    carries none (its message names our task), and a student's client takes it as what
    it is: an outcome unknown, never a handle, never retried."""
    answer, task = create_answered(refusing, 503, "SERVICE_UNAVAILABLE")
    assert answer.status_code == 502 and "request_id" not in answer.json()
    assert task["id"] in answer.json()["error"]["message"]
    base, db = refusing
    token = add_key(db, "bob", {"tasks": 2})
    with (
        gw.Client(base_url=base, api_key=token, ledger=False) as client,
        pytest.raises(OutcomeUnknown, match="a task may exist"),
    ):
        client.submit(IMAGE, ONE)


def test_one_sweep_reaches_every_due_task_when_a_class_creates_many(tmp_path: Path) -> None:
    """A sweep asked about 20 tasks at most: with a class making 20 or more creates per
    sweep, the re-checks of an old task grew apart without bound. A sweep passes again
    while a pass found a full batch due: three batches' worth are all asked in one."""
    from genwidgets.serve.sweep import BATCH

    ForgetfulUpstream.answer = RUNNING
    upstream_server = LoopbackServer(ForgetfulUpstream)
    db = class_db(tmp_path)
    add_key(db, "alice", {})
    amounts = budgets.charge_of(IMAGE, ONE, {})
    for i in range(3 * BATCH):
        task_id = budgets.reserve(db, "alice", IMAGE, amounts).task_id
        budgets.move(db, task_id, "open", upstream_id=f"u{i}")
    upstream = Upstream(upstream_server.base, TEACHER_KEY)
    config = ServeConfig(upstream=upstream, database=db, sweep_every=5.0)
    try:
        asyncio.run(sweep_once(ServeState(config)))
    finally:
        upstream_server.close()
    checked = db.run(lambda tx: tx.rows("SELECT checked_at FROM tasks"))
    assert len(checked) == 3 * BATCH and all(row[0] is not None for row in checked)


def open_tasks(db: Database, count: int) -> list[str]:
    """``count`` tasks of alice (no caps), open upstream as ``u0``, ``u1``...: their ids."""
    add_key(db, "alice", {})
    amounts = budgets.charge_of(IMAGE, ONE, {})
    ids = [budgets.reserve(db, "alice", IMAGE, amounts).task_id for _ in range(count)]
    for i, task_id in enumerate(ids):
        budgets.move(db, task_id, "open", upstream_id=f"u{i}")
    return ids


class CountingUpstream(RefusingUpstream):
    """An upstream whose status answers ``answer`` (status, body, Retry-After) once
    ``release`` is set (at once unless cleared); ``asked`` counts the requests."""

    answer: tuple[int, Any, str | None] = (200, {"status": "IN_PROGRESS"}, None)
    release = threading.Event()
    asked = 0

    def do_GET(self) -> None:
        type(self).asked += 1
        self.release.wait(60)
        with contextlib.suppress(ConnectionError):  # a sweep past its deadline hung up
            self.send_scripted(*self.answer)


@pytest.fixture
def counting(tmp_path: Path) -> Iterator[tuple[ServeState, Database]]:
    """A sweeper's state (``sweep_every`` 5 s) over a :class:`CountingUpstream`, reset."""
    CountingUpstream.answer = (200, {"status": "IN_PROGRESS"}, None)
    CountingUpstream.asked = 0
    CountingUpstream.release.set()
    upstream_server = LoopbackServer(CountingUpstream)
    db = class_db(tmp_path)
    upstream = Upstream(upstream_server.base, TEACHER_KEY, timeout=60)
    try:
        yield ServeState(ServeConfig(upstream=upstream, database=db, sweep_every=5.0)), db
    finally:
        CountingUpstream.release.set()
        upstream_server.close()
        db.close()


def test_upstreams_rate_limit_ends_the_sweep_and_holds_back_the_next(
    counting: tuple[ServeState, Database],
) -> None:
    """A sweep read upstream's 429 to a status as any error answer and went on: 200
    status requests in one sweep, all refused, each prolonging the limit. The first 429
    ends the sweep (the requests already sent end too), and every process's sweeps wait
    out its Retry-After."""
    from genwidgets.serve.sweep import ASKS_AT_ONCE, BATCH

    state, db = counting
    open_tasks(db, 3 * BATCH)
    limited = {"error": {"code": "RATE_LIMIT_EXCEEDED", "message": "slow down"}}
    CountingUpstream.answer = (429, limited, "30")
    asyncio.run(sweep_once(state))
    assert 1 <= CountingUpstream.asked <= ASKS_AT_ONCE
    db.run(lambda tx: tx.run("UPDATE tasks SET checked_at = NULL"))  # every task due
    asyncio.run(sweep_once(ServeState(state.config)))
    assert CountingUpstream.asked <= ASKS_AT_ONCE
    assert budgets.holding_creates(db, what="sweeps") > 25
    assert budgets.holding_creates(db) == 0.0  # a status's limit holds no create back


def test_a_sweep_ends_by_its_deadline_even_when_upstream_hangs(
    counting: tuple[ServeState, Database], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``SWEEP_SECONDS`` was checked only before a pass: a pass of status requests upstream
    was slow to answer ran on past it (38 s against a 30 s promise, and up to a pass of
    upstream timeouts). The whole sweep has one deadline; what it claimed and did not
    hear about stays as it was, for the next sweep."""
    from genwidgets.serve import sweep

    state, db = counting
    monkeypatch.setattr(sweep, "SWEEP_SECONDS", 0.5)
    ids = open_tasks(db, 3)
    CountingUpstream.release.clear()  # upstream answers no status until the test ends

    async def bounded() -> int:  # a guard on the test, not the sweep's deadline
        return await asyncio.wait_for(sweep_once(state), 30)

    assert asyncio.run(bounded()) == 0
    CountingUpstream.release.set()
    assert CountingUpstream.asked == 3
    assert {t["id"]: t["state"] for t in tasks_of(db)} == dict.fromkeys(ids, "open")


def test_a_sweep_stamps_each_task_when_it_asks_about_it(
    counting: tuple[ServeState, Database],
) -> None:
    """Every pass of a sweep stamped its tasks with the sweep's start, so another
    process's sweep took a task claimed late in a long sweep as long unchecked and asked
    about it again meanwhile. Each task is stamped when its ask is sent: none is left
    stamped ahead (taken) once the sweep is over, and each was asked once."""
    from genwidgets.serve.sweep import BATCH

    state, db = counting
    open_tasks(db, 2 * BATCH + 1)
    asyncio.run(sweep_once(state))
    over = time.time()
    stamps = [row[0] for row in db.run(lambda tx: tx.rows("SELECT checked_at FROM tasks"))]
    assert CountingUpstream.asked == 2 * BATCH + 1  # each asked once
    assert all(stamp <= over for stamp in stamps)


def test_another_process_does_not_ask_what_a_slow_sweep_has_queued(
    counting: tuple[ServeState, Database],
) -> None:
    """A pass asks :data:`ASKS_AT_ONCE` at a time, and its tasks were stamped when
    claimed: with upstream slow (a pass longer than ``sweep_every``), another process's
    sweep found those still queued due and asked about them too, seconds apart. What a
    sweep has taken and not yet asked about is no other sweep's until it ends."""
    from genwidgets.serve.sweep import ASKS_AT_ONCE, BATCH, claim

    state, db = counting
    open_tasks(db, BATCH)
    CountingUpstream.release.clear()  # upstream answers no status until told

    async def meanwhile() -> list[tuple[Any, ...]]:
        first = asyncio.ensure_future(sweep_once(state))
        for _ in range(3000):  # until its first asks are out (bounded)
            if CountingUpstream.asked >= ASKS_AT_ONCE:
                break
            await asyncio.sleep(0.01)
        later = time.time() + state.config.sweep_every + 1  # another process's sweep
        taken = await asyncio.to_thread(claim, db, state.config.sweep_every, later)
        CountingUpstream.release.set()
        await first
        return taken

    taken = asyncio.run(meanwhile())
    assert CountingUpstream.asked == BATCH
    assert len(taken) == ASKS_AT_ONCE  # only those asked, sweep_every ago


def test_a_stale_create_is_given_up_while_the_sweeps_are_held(
    counting: tuple[ServeState, Database],
) -> None:
    """While upstream's 429 to a status held the sweeps back (up to 10 minutes), a
    create its process left ``sending`` stayed so, and kept its student's only running
    place. Giving it up needs no upstream: the sweep still does it, and asks nothing."""
    from genwidgets.serve.sweep import STALE_SENDING

    state, db = counting
    add_key(db, "alice", {}, max_running=1)
    amounts = budgets.charge_of(IMAGE, ONE, {})
    budgets.reserve(db, "alice", IMAGE, amounts, now=time.time() - STALE_SENDING - 60)
    budgets.hold_creates(db, 600, what="sweeps")
    asyncio.run(sweep_once(state))
    assert [t["state"] for t in tasks_of(db)] == ["unknown"]
    budgets.reserve(db, "alice", IMAGE, amounts, max_running=1)  # her place is free
    assert CountingUpstream.asked == 0


def test_one_failing_task_neither_ends_the_sweep_early_nor_stops_the_sweeping(
    counting: tuple[ServeState, Database], monkeypatch: pytest.MonkeyPatch
) -> None:
    """One task the sweep could not settle (an error neither database could store) made
    ``asyncio.gather`` raise at once: the sweep ended while its other requests ran on,
    their answers dropped, and the next sweep overlapped them; an error that was not a
    ``ServeError`` ended the process's sweeping for good. The others are settled, the
    failing one is left for the next sweep, and the sweeping goes on."""
    from genwidgets.serve import sweep

    state, db = counting
    ids = open_tasks(db, 6)
    CountingUpstream.answer = (200, {"status": "COMPLETED"}, None)

    def settle_failing_first(database: Database, task_id: str, body: Any, **seen: Any) -> bool:
        if task_id == ids[0]:
            raise UnicodeEncodeError("utf-8", "\ud800", 0, 1, "surrogates not allowed")
        return budgets.settle(database, task_id, body, **seen)

    monkeypatch.setattr(sweep, "settle", settle_failing_first)
    assert asyncio.run(sweep_once(state)) == 5
    states = {t["id"]: t["state"] for t in tasks_of(db)}
    assert states == {ids[0]: "open", **dict.fromkeys(ids[1:], "done")}

    sweeps: list[int] = []

    async def failing_sweep(_: ServeState) -> int:
        sweeps.append(1)
        raise RuntimeError("an error the sweep did not foresee")

    async def sweep_twice() -> None:
        async with sweep.sweeping(ServeState(replace(state.config, sweep_every=0.01)))(None):
            for _ in range(3000):  # bounded: each turn yields to the sweeping
                if len(sweeps) >= 2:
                    break
                await asyncio.sleep(0.01)

    monkeypatch.setattr(sweep, "sweep_once", failing_sweep)
    asyncio.run(sweep_twice())
    assert len(sweeps) >= 2


def test_404s_to_a_running_tasks_result_address_never_make_it_unknown(
    refusing: tuple[str, Database], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A student's client waiting on the result address of a running task, answered a
    router's bare 404 there while its status said ``IN_PROGRESS``: two such answers a
    stretch apart made the task ``unknown``, its place freed, the teacher asked to
    settle it. Only 404s to its status count: upstream's own word about the task."""
    lost_at_once(monkeypatch)  # the second such answer ends a stretch
    RefusingUpstream.result = (404, {"detail": "Not Found"}, None)
    base, db = refusing
    token = add_key(db, "alice", {"tasks": 5})
    with student_client(base, token) as api:
        handle = api.post(f"/v1/queue/{IMAGE}", json=ONE).json()
        answers = [api.get(handle["response_url"]).status_code for _ in range(3)]
        states = [t["state"] for t in tasks_of(db)]
        status = api.get(handle["status_url"]).json()["status"]
    assert answers == [502, 502, 502] and status == "IN_PROGRESS"
    assert states == ["open"]


def test_upstreams_nan_or_infinity_is_passed_on_as_valid_json_never_a_500(
    refusing: tuple[str, Database],
) -> None:
    """Python reads ``NaN`` and ``Infinity`` as JSON, Starlette refuses to write them: a
    status, a result or a refusal holding one was a 500 with a traceback, and a paid,
    finished task's result could never be read. Each such value is passed on as null."""
    base, db = refusing
    nan, inf = float("nan"), float("inf")
    RefusingUpstream.poll = (200, {"request_id": "r1", "status": "COMPLETED", "p": nan}, None)
    outputs = [{"url": "http://files.example/a.png", "seed": inf}]
    RefusingUpstream.result = (
        200,
        {"request_id": "r1", "status": "COMPLETED", "outputs": outputs},
        None,
    )
    token = add_key(db, "alice", {"tasks": 5})
    with student_client(base, token) as api:
        handle = api.post(f"/v1/queue/{IMAGE}", json=ONE).json()
        status = api.get(handle["status_url"])
        result = api.get(handle["response_url"])
        RefusingUpstream.create = (422, {"detail": "no", "score": -inf}, None)
        refused = api.post(f"/v1/queue/{IMAGE}", json=ONE)
    assert (status.status_code, status.json()["p"]) == (200, None), status.text
    assert result.status_code == 200 and result.json()["outputs"][0]["seed"] is None
    assert (refused.status_code, refused.json()) == (422, {"detail": "no", "score": None})
    assert [t["state"] for t in tasks_of(db)] == ["refused", "done"]


def test_a_cancel_that_never_reached_upstream_leaves_the_task_as_it_was(tmp_path: Path) -> None:
    """Upstream refused the connection: nothing was cancelled, yet the task stayed
    ``cancelling``, so when upstream then failed it, it was settled cancelled and
    charged. It is back as it was, and the student is told nothing was cancelled."""
    db = class_db(tmp_path)
    cancel, task_id = cancelled_unreachable(db)
    assert cancel.status_code == 502 and "nothing was cancelled" in cancel.text, cancel.text
    assert budgets.task_state(db, task_id) == "open"


def test_a_cancel_refused_by_upstreams_rate_limit_under_a_503_is_a_refusal(
    refusing: tuple[str, Database],
) -> None:
    """A 503 ``RATE_LIMIT_EXCEEDED`` (the replicate dialect's rate limit) to a cancel was
    taken as "may have been applied": the task stayed ``cancelling`` and a later failure
    was charged. A rate limit is upstream's refusal whatever its status: the task is back
    as it was and the student told to wait (429), as for a create."""
    base, db = refusing
    limited = {"error": {"code": "RATE_LIMIT_EXCEEDED", "message": "Rate limit exceeded"}}
    RefusingUpstream.cancel = (503, json.dumps(limited).encode())
    token = add_key(db, "alice", {"tasks": 2})
    with student_client(base, token) as api:
        handle = api.post(f"/v1/queue/{IMAGE}", json=ONE).json()
        cancel = api.put(handle["cancel_url"])
    assert cancel.status_code == 429 and int(cancel.headers["retry-after"]) >= 1, cancel.text
    assert cancel.json()["error"]["code"] == "RATE_LIMIT_EXCEEDED"
    assert tasks_of(db)[0]["state"] == "open"


class _Announced(logging.Handler):
    """Sets ``seen`` once a record holding ``text`` is emitted."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text, self.seen = text, threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if self.text in record.getMessage():
            self.seen.set()


@pytest.mark.slow
def test_a_create_reserving_when_the_server_stops_is_given_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server stopped past its grace while a create waited for the database's write
    lock: the reservation committed in its thread after the request was cancelled and
    nothing gave it back, so a create never sent stayed ``sending`` (a running place,
    then ``unknown``, reserved until the teacher guessed). It is given back, not sent."""
    import sqlite3

    RefusingUpstream.create = None
    upstream_server = LoopbackServer(RefusingUpstream)
    db = class_db(tmp_path)
    token = add_key(db, "alice", {"tasks": 5})
    entered = threading.Event()
    real_reserve = budgets.reserve

    def reserve(*args: Any, **kwargs: Any) -> Any:
        entered.set()
        return real_reserve(*args, **kwargs)

    monkeypatch.setattr(app, "reserve", reserve)
    config = ServeConfig(
        upstream=Upstream(upstream_server.base, TEACHER_KEY), database=db, sweep_every=0
    )
    server = ClassServer(config).start()
    cancelled = _Announced("graceful shutdown exceeded")  # after uvicorn set its logging up
    uvicorn_log = logging.getLogger("uvicorn.error")
    uvicorn_log.addHandler(cancelled)
    blocker = sqlite3.connect(str(tmp_path / "class.db"), isolation_level=None)
    answers: list[Any] = []

    def create() -> None:
        with httpx.Client(base_url=server.base_url, timeout=60) as api:
            try:
                answer = api.post(
                    f"/v1/queue/{IMAGE}", json=ONE, headers={"Authorization": f"Bearer {token}"}
                )
                answers.append(answer.status_code)
            except httpx.HTTPError as exc:  # the server stopped under it
                answers.append(type(exc).__name__)

    try:
        blocker.execute("BEGIN IMMEDIATE")  # another process's write transaction
        sender = threading.Thread(target=create)
        sender.start()
        assert entered.wait(60), "the create never reached its reservation"
        stopper = threading.Thread(target=server.stop, kwargs={"timeout": 60})
        stopper.start()
        assert cancelled.seen.wait(60), "the stop never cancelled the request"
        blocker.execute("COMMIT")  # the reservation commits now, after its request ended
        stopper.join(60)
        sender.join(60)
    finally:
        blocker.close()
        uvicorn_log.removeHandler(cancelled)
        server.stop()
        upstream_server.close()
    check = Database(tmp_path / "class.db")
    # the reservation's thread may outlive the stop: its outcome is waited for
    wait_for(
        lambda: [t["state"] for t in tasks_of(check)] == ["not_sent"],
        what=f"the reservation given back, not left sending ({answers})",
    )
    [task] = tasks_of(check)
    assert not task["charged"]
    assert usage(check)["keys"][0]["held"] == {}
    check.close()


#: upstream answering a task's status with a lasting error other than a 404 or 410
lasting_errors = pytest.mark.parametrize(
    "lasting",
    [
        (400, "application/json", b'{"detail": "Task expired"}'),
        (403, "application/json", b'{"error": {"code": "FORBIDDEN", "message": "old key"}}'),
        (500, "text/html", b"<html>500 Internal Server Error</html>"),
    ],
    ids=["400-expired", "403-rotated-key", "500"],
)


@lasting_errors
def test_a_task_the_sweep_hears_only_errors_about_for_a_long_stretch_frees_its_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lasting: tuple[int, str, bytes]
) -> None:
    """Only 404s and 410s started the bounded stretch: a task upstream answered a lasting
    400, 403 (the teacher's key rotated) or 500 for stayed ``open`` for ever, holding
    its key's place and its reservation, and the teacher could not end it. Any error
    answer but a rate limit counts (``LOST_AFTER``, 0 here: from the second on)."""
    lost_at_once(monkeypatch)
    db, states, taken = sweep_answered(tmp_path, [lasting, RUNNING, lasting, lasting])
    assert states == ["open", "open", "open", "unknown"] and taken
    task = tasks_of(db)[-1]
    assert task["charged"] and "only errors" in task["error"]


@lasting_errors
def test_a_task_a_student_polls_hearing_only_errors_for_a_long_stretch_frees_its_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lasting: tuple[int, str, bytes]
) -> None:
    """The same stretch, counted by the student's status polls (no sweep)."""
    lost_at_once(monkeypatch)
    _, states, taken, polls = poll_answered(tmp_path, [lasting, RUNNING, lasting, lasting])
    assert states == ["open", "open", "open", "unknown"] and taken
    assert all(status != 500 for status in polls), polls


def test_a_create_given_up_as_stale_while_upstream_still_had_it_keeps_its_handle(
    tmp_path: Path,
) -> None:
    """A create still waiting for upstream when a sweep took it as one whose process had
    stopped (``unknown``, no upstream id): the handle that then came was not recorded
    (the move to ``open`` from ``sending`` found nothing to move), yet the student got
    it, and its every poll was ``Request not found``. The late handle is recorded."""
    HeldUpstream.go.clear()
    HeldUpstream.refuse = False
    db = class_db(tmp_path)
    token = add_key(db, "alice", {"tasks": 5})
    answers: list[httpx.Response] = []
    try:
        with class_over(HeldUpstream, db, token) as (api, _):
            sender = threading.Thread(
                target=lambda: answers.append(api.post(f"/v1/queue/{IMAGE}", json=ONE))
            )
            sender.start()
            wait_for(lambda: tasks_of(db, state="sending"), what="the create to be sent")
            later = time.time() + budgets.STALE_SENDING + 1  # a sweep, 10 minutes on
            sweep.claim(db, 5.0, now=later)
            assert tasks_of(db)[0]["state"] == "unknown"
            HeldUpstream.go.set()
            sender.join(60)
            [handle] = answers
            assert handle.status_code == 200, handle.text
            status = api.get(handle.json()["status_url"])
    finally:
        HeldUpstream.go.set()
    assert status.status_code == 200 and status.json()["status"] == "COMPLETED", status.text
    assert tasks_of(db)[0]["state"] == "done"


@pytest.mark.parametrize(
    "body",
    [{"message": "Invalid authentication credentials"}, {"detail": "Unauthorized"}, None],
    ids=["kong", "detail", "no-json"],
)
def test_any_401_upstream_is_the_teachers_key_refused_never_the_students(
    refusing: tuple[str, Database], caplog: pytest.LogCaptureFixture, body: Any
) -> None:
    """Students' keys never go upstream, so any 401 from it is the teacher's key refused.
    Only one in the spec's error shape was said so: a gateway in front of upstream
    (``{"message": ...}``) reached the student as a 401 on their own key, which works,
    and the teacher's log was silent."""
    caplog.set_level(logging.ERROR, logger="genwidgets.serve")
    base, db = refusing
    RefusingUpstream.create = (401, body, None)
    RefusingUpstream.poll = (401, body, None)
    token = add_key(db, "alice", {"tasks": 5})
    with student_client(base, token) as api:
        create = api.post(f"/v1/queue/{IMAGE}", json=ONE)
        task_id = budgets.reserve(db, "alice", IMAGE, budgets.charge_of(IMAGE, ONE, {})).task_id
        budgets.move(db, task_id, "open", upstream_id="r1")
        poll = api.get(f"/v1/queue/{IMAGE}/requests/{task_id}/status")
    for answer in (create, poll):
        assert answer.status_code == 502, answer.text
        assert answer.json()["error"]["code"] == "UPSTREAM_KEY_REFUSED"
    assert "nothing was billed" in create.text
    assert "refused the teacher's key" in caplog.text


def test_a_fault_upstream_reads_as_a_sentence_and_an_answer_over_the_cap_says_so(
    refusing: tuple[str, Database], tmp_path: Path
) -> None:
    """Students read "The class gateway the upstream connection failed
    (RemoteProtocolError)" for an answer over the 8 MB cap, and "The class gateway the
    upstream gateway did not answer in time" for a timeout: each fault is one sentence,
    and the cap is named as the cap."""
    base, db = refusing
    RefusingUpstream.poll = (200, {"status": "IN_PROGRESS", "pad": "x" * (9 << 20)}, None)
    token = add_key(db, "alice", {"tasks": 5})
    with student_client(base, token) as api:
        handle = api.post(f"/v1/queue/{IMAGE}", json=ONE).json()
        huge = api.get(handle["status_url"])
    assert huge.status_code == 502
    said = huge.json()["error"]["message"]
    assert said == "The class gateway's request upstream failed: upstream's answer was over 8 MB"
    lone = class_db(tmp_path, "lone.db")
    with class_over(UNREACHABLE, lone, add_key(lone, "bo", {"tasks": 5})) as (api, _):
        down = api.post(f"/v1/queue/{IMAGE}", json=ONE, timeout=60)
    said = down.json()["error"]["message"]
    assert said.startswith("The class gateway's request upstream failed: cannot reach"), said
    assert said.endswith("; nothing was billed"), said


def test_upstreams_retry_after_past_the_holds_ceiling_is_told_as_upstream_said_it(
    refusing: tuple[str, Database], capsys: pytest.CaptureFixture[str]
) -> None:
    """Upstream said ``Retry-After: 3600``; students were told 600 (the ceiling of the
    class's own hold) and retried 50 minutes early, each hold's end sending one more
    refused create upstream. The hold is capped; what students are told is not."""
    base, db = refusing
    RefusingUpstream.create = (429, {"detail": "Rate limit exceeded"}, "3600")
    token = add_key(db, "alice", {"tasks": 5})
    with student_client(base, token) as api:
        limited = api.post(f"/v1/queue/{IMAGE}", json=ONE)
        RefusingUpstream.create = None
        held_back = api.post(f"/v1/queue/{IMAGE}", json=ONE)
    assert limited.status_code == 429 and int(limited.headers["retry-after"]) == 3600
    assert held_back.status_code == 429 and int(held_back.headers["retry-after"]) > 3000
    assert 0 < budgets.holding_creates(db) <= 600  # the class asks upstream again by then
    assert budgets.clear_hold(db) > 0 and budgets.holding_creates(db, what="creates_told") == 0


GPU_FAILED = {"request_id": "r1", "status": "COMPLETED", "error": "GPU out of memory"}


def failing_meanwhile(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each cancel's move to ``cancelling`` is followed by upstream's failure of the
    task, settled as the sweep settles it, before the cancel is sent."""
    asked = app.ask_cancel

    def ask_then_fail(db: Database, task_id: str) -> Any:
        way = asked(db, task_id)
        budgets.settle(db, task_id, {**GPU_FAILED, "error_type": "internal"}, seen="cancelling")
        return way

    monkeypatch.setattr(app, "ask_cancel", ask_then_fail)


def test_a_failure_heard_while_a_cancel_never_left_is_given_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Upstream failed the task while its cancel was being sent (a connect takes up to
    5 s), and the sweep settled it as a cancel, charged; then the cancel never left, and
    the student was told nothing was cancelled while charged for upstream's failure.
    Failed, given back."""
    failing_meanwhile(monkeypatch)
    db = class_db(tmp_path)
    cancel, _ = cancelled_unreachable(db)
    assert cancel.status_code == 502 and "nothing was cancelled" in cancel.text, cancel.text
    assert [(t["state"], t["error"]) for t in tasks_of(db)] == [("failed", "GPU out of memory")]
    assert key_usage(db, "alice")["spent"] == {}


@pytest.mark.parametrize(
    "refusal",
    [(429, b'{"detail": "slow down"}'), (400, b'{"detail": "Task already completed"}')],
)
def test_a_failure_heard_while_a_cancel_was_refused_is_given_back(
    refusing: tuple[str, Database], monkeypatch: pytest.MonkeyPatch, refusal: tuple[int, bytes]
) -> None:
    """As above, the cancel refused (a rate limit, or the task already ended): upstream's
    failure heard during its round trip is a failure, given back."""
    base, db = refusing
    failing_meanwhile(monkeypatch)
    RefusingUpstream.cancel = refusal
    token = add_key(db, "alice", {"tasks": 5})
    with student_client(base, token) as api:
        handle = api.post(f"/v1/queue/{IMAGE}", json=ONE).json()
        answer = api.put(handle["cancel_url"])
    assert answer.status_code == refusal[0], answer.text
    assert [(t["state"], t["error"]) for t in tasks_of(db)] == [("failed", "GPU out of memory")]
    assert key_usage(db, "alice")["spent"] == {}


def test_a_second_cancel_refused_never_undoes_the_first(
    refusing: tuple[str, Database], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two cancels read the task open; the first moved it to ``cancelling`` and upstream
    accepted it, the second was refused (``Task already completed``) and moved it back to
    the ``open`` it had read. Upstream's cancelled end was then taken as a failure and
    its billed cost given back. A cancel undoes only its own move."""
    base, db = refusing
    asked = app.ask_cancel

    def first_cancel_came_between(db: Database, task_id: str) -> Any:
        asked(db, task_id)  # the first cancel's move, after this one read the task open
        return asked(db, task_id)

    monkeypatch.setattr(app, "ask_cancel", first_cancel_came_between)
    RefusingUpstream.cancel = (400, b'{"detail": "Task already completed"}')
    token = add_key(db, "alice", {"tasks": 5})
    with student_client(base, token) as api:
        handle = api.post(f"/v1/queue/{IMAGE}", json=ONE).json()
        refused = api.put(handle["cancel_url"])
        assert refused.status_code == 400, refused.text
        assert tasks_of(db)[0]["state"] == "cancelling"
        status = api.get(handle["status_url"])
    assert status.json()["error"] == "cancelled by user", status.text
    assert [t["state"] for t in tasks_of(db)] == ["cancelled"]
    assert key_usage(db, "alice")["spent"] == {"tasks": 1.0, "images": 1.0}
