"""The scheduler: workers, a falling queue_position, run times scaled by speed."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable

import httpx
import pytest

from genwidgets.simulator import SimulatorServer
from genwidgets.simulator.registry import BASE_SECONDS, ENDPOINTS

pytestmark = pytest.mark.timeout(60)

AUTH = {"Authorization": "Bearer sim-demo-key"}


@pytest.mark.slow
def test_tasks_beyond_the_workers_queue_with_falling_positions(
    make_simulator: Callable[..., SimulatorServer],
) -> None:
    sim = make_simulator(workers=1, speed=10)
    with httpx.Client(base_url=sim.base_url, headers=AUTH) as c:
        handles = [
            c.post(
                "/v1/queue/asset-get", json={"Id": "asset-demo"}, headers={"X-Sim-Duration": "3"}
            ).json()  # 0.3 s each
            for _ in range(3)
        ]
        assert [h["queue_position"] for h in handles] == [0, 1, 2]
        first = c.get(handles[0]["status_url"]).json()
        assert first["status"] == "IN_PROGRESS" and "queue_position" not in first
        last = c.get(handles[2]["status_url"]).json()
        assert last == {
            "request_id": handles[2]["request_id"],
            "status": "IN_QUEUE",
            "queue_position": 2,
            "error": None,
            "error_type": None,
        }
        positions: list[int] = []
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            body = c.get(handles[2]["status_url"]).json()
            if body["status"] != "IN_QUEUE":
                break
            positions.append(body["queue_position"])
            time.sleep(0.02)
        assert positions[0] == 2 and 1 in positions
        assert positions == sorted(positions, reverse=True)
        finished = []
        for h in handles:
            while c.get(h["status_url"]).json()["status"] != "COMPLETED":
                time.sleep(0.02)
            finished.append(c.get(f"/_sim/tasks/{h['request_id']}").json())
    # one at a time: each starts when the previous one completes
    for before, after in itertools.pairwise(finished):
        assert after["started_at"] >= before["completed_at"] - 0.01


def test_workers_run_in_parallel(make_simulator: Callable[..., SimulatorServer]) -> None:
    sim = make_simulator(workers=3)
    with httpx.Client(base_url=sim.base_url, headers=AUTH) as c:
        handles = [
            c.post(
                "/v1/queue/asset-get", json={"Id": "asset-demo"}, headers={"X-Sim-Duration": "100"}
            ).json()
            for _ in range(4)
        ]
        states = [c.get(h["status_url"]).json()["status"] for h in handles]
    assert states == ["IN_PROGRESS"] * 3 + ["IN_QUEUE"]


def test_demo_durations_per_kind() -> None:
    assert BASE_SECONDS["image"] == 2.0 and BASE_SECONDS["video"] == 6.0
    assert BASE_SECONDS["speech"] == 2.0 and BASE_SECONDS["asset"] == 1.0
    assert {e.kind for e in ENDPOINTS.values()} <= set(BASE_SECONDS)
    assert sum(e.documented for e in ENDPOINTS.values()) == 20


@pytest.mark.slow
def test_run_time_is_the_kind_duration_divided_by_speed(
    make_simulator: Callable[..., SimulatorServer],
) -> None:
    sim = make_simulator(speed=4)  # an asset task: 1 s / 4 = 0.25 s
    with httpx.Client(base_url=sim.base_url, headers=AUTH) as c:
        handle = c.post("/v1/queue/asset-get", json={"Id": "asset-demo"}).json()
        while c.get(handle["status_url"]).json()["status"] != "COMPLETED":
            time.sleep(0.02)
        info = c.get(f"/_sim/tasks/{handle['request_id']}").json()
    assert 0.24 <= info["completed_at"] - info["started_at"] < 1.0
