"""Helpers of the class gateway's tests (tests/serve/): the teacher's key, a class
server with its database and upstream, and a wait for a condition."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from genwidgets.serve import ClassServer, Database
from genwidgets.simulator import SimulatorServer

#: the teacher's upstream key: the one string no byte the class server sends may hold
TEACHER_KEY = "teacher-" + "k3y-" + uuid.uuid4().hex


@dataclass
class Class:
    """A class server, its database and its upstream."""

    server: ClassServer
    db: Database
    sim: SimulatorServer

    def client(self, token: str | None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.server.base_url, headers=headers, timeout=60.0)


def wait_for(check: Callable[[], Any], timeout: float = 60.0, what: str = "a condition") -> Any:
    """Poll ``check`` until it is truthy (its value), failing after a generous deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)
