"""A scriptable in-memory gateway for unit tests, served through httpx.MockTransport.

Each task answers a scripted list of status bodies (the last one repeats) and a
result body once its status is terminal. Faults are queued per operation: the
next request of that operation gets the queued response (or raises the queued
exception) instead of the normal answer.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from genwidgets.jobs.polling import PollPolicy
from genwidgets.protocol.records import is_terminal

BASE = "https://gateway.test"


@dataclass
class FakeTask:
    endpoint: str
    statuses: list[dict[str, Any]]
    result: dict[str, Any] | None
    polls: int = 0
    cancelled: bool = False


@dataclass
class FakeGateway:
    base: str = BASE
    tasks: dict[str, FakeTask] = field(default_factory=dict)
    log: list[tuple[float, str, str]] = field(default_factory=list)
    faults: dict[str, deque[Any]] = field(default_factory=lambda: defaultdict(deque))
    next_statuses: list[dict[str, Any]] = field(
        default_factory=lambda: [{"status": "IN_PROGRESS"}, {"status": "COMPLETED"}]
    )
    next_result: dict[str, Any] | None = field(
        default_factory=lambda: {"status": "COMPLETED", "error": None, "outputs": []}
    )
    seen_headers: list[dict[str, str]] = field(default_factory=list)
    #: the exact bytes of every create request, in order
    bodies: list[bytes] = field(default_factory=list)
    _ids: Any = field(default_factory=lambda: itertools.count(1))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)

    def add_task(
        self,
        endpoint: str,
        statuses: list[dict[str, Any]],
        result: dict[str, Any] | None = None,
        request_id: str | None = None,
    ) -> str:
        rid = request_id or f"req-{next(self._ids)}"
        self.tasks[rid] = FakeTask(endpoint, statuses, result)
        return rid

    def count(self, op: str) -> int:
        return sum(1 for _, o, _ in self.log if o == op)

    def handle(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        parts = path.strip("/").split("/")
        op = (
            "create"
            if request.method == "POST"
            else "cancel"
            if request.method == "PUT"
            else parts[-1]
            if parts[-1] in ("status", "response")
            else "other"
        )
        with self._lock:
            self.log.append((time.monotonic(), op, path))
            self.seen_headers.append(dict(request.headers))
            queue = self.faults[op]
            fault = queue.popleft() if queue else None
        if isinstance(fault, BaseException):
            raise fault
        if isinstance(fault, httpx.Response):
            return fault
        if parts[0] == "files":
            return httpx.Response(200, content=b"file:" + path.encode())
        if op == "create":
            with self._lock:
                self.bodies.append(request.read())
            endpoint = "/".join(parts[2:])
            rid = self.add_task(endpoint, list(self.next_statuses), self.next_result)
            root = f"{self.base}/v1/queue/{endpoint}/requests/{rid}"
            return httpx.Response(
                200,
                json={
                    "request_id": rid,
                    "status_url": f"{root}/status",
                    "response_url": f"{root}/response",
                    "cancel_url": f"{root}/cancel",
                    "queue_position": 0,
                },
            )
        rid = parts[-2] if op in ("status", "response", "cancel") else ""
        endpoint = "/".join(parts[2:-3])
        task = self.tasks.get(rid)
        if task is None or task.endpoint != endpoint:
            return httpx.Response(404, json={"detail": "Request not found"})
        if op == "cancel":
            task.cancelled = True
            task.statuses = [{"status": "COMPLETED"}]
            task.result = {"status": "COMPLETED", "error": "cancelled", "error_type": "cancelled"}
            return httpx.Response(200, json={"status": "CANCELLATION_REQUESTED"})
        index = min(task.polls, len(task.statuses) - 1)
        current = task.statuses[index]
        if op == "status":
            task.polls += 1
            return httpx.Response(200, json={"request_id": rid, **current})
        terminal = is_terminal(str(current.get("status", "")))
        if not terminal or task.result is None:
            task.polls += 1  # a 202 carrying the status is a poll too
            return httpx.Response(202, json={"request_id": rid, **current})
        return httpx.Response(200, content=json.dumps({"request_id": rid, **task.result}))


def error(status: int, body: Any, headers: dict[str, str] | None = None) -> httpx.Response:
    if isinstance(body, str):
        return httpx.Response(status, text=body, headers=headers)
    return httpx.Response(status, json=body, headers=headers)


#: Polling fast enough for unit tests: every 0.01 s, 3 failed polls, a 0.3 s 404 grace.
FAST_POLICY = PollPolicy(
    first=0.01,
    growth=0.0,
    queue_step=0.0,
    queue_cap=0.02,
    failure_limit=3,
    not_found_grace=0.3,
    notice_floor=0.01,
    notice_ceiling=0.01,
)


def speed_up(monkeypatch: Any, home: Path) -> None:
    """Make polling, backoff and the not-found grace fast enough for unit tests, with
    ``home`` (in the test's ``tmp_path``, which pytest removes) as ``GENWIDGETS_HOME``."""
    from genwidgets.jobs import polling
    from genwidgets.protocol import http

    monkeypatch.setenv("GENWIDGETS_HOME", str(home))
    # Clients made without a poll_policy use the default one: the fast one here.
    monkeypatch.setattr(polling, "DEFAULT_POLICY", FAST_POLICY)
    monkeypatch.setattr(http, "backoff_delay", lambda attempt, rng=None: 0.01)
