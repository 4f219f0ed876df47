"""Helpers for the simulator's black-box tests (real HTTP on 127.0.0.1)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from genwidgets.simulator import DEMO_KEY, SimulatorServer

AUTH = {"Authorization": f"Bearer {DEMO_KEY}"}


def client_for(sim: SimulatorServer, key: str | None = DEMO_KEY) -> httpx.Client:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.Client(base_url=sim.base_url, headers=headers, timeout=30.0)


@pytest.fixture
def api(simulator: SimulatorServer) -> Iterator[httpx.Client]:
    with client_for(simulator) as client:
        yield client


Waiter = Callable[..., dict[str, Any]]


def _wait(client: httpx.Client, handle: dict[str, Any], timeout: float = 30.0) -> dict[str, Any]:
    """Poll until COMPLETED; return the result body."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = client.get(handle["status_url"])
        assert status.status_code == 200, status.text
        if status.json()["status"] == "COMPLETED":
            result = client.get(handle["response_url"])
            assert result.status_code == 200, result.text
            body: dict[str, Any] = result.json()
            return body
        time.sleep(0.02)
    raise AssertionError(f"task {handle['request_id']} not completed within {timeout} s")


@pytest.fixture
def wait() -> Waiter:
    return _wait


@pytest.fixture
def run(api: httpx.Client) -> Callable[..., dict[str, Any]]:
    """Create a task on the session simulator and wait for its result body."""

    def go(endpoint: str, payload: dict[str, Any], **headers: str) -> dict[str, Any]:
        created = api.post(f"/v1/queue/{endpoint}", json=payload, headers=headers)
        assert created.status_code == 200, created.text
        return _wait(api, created.json())

    return go
