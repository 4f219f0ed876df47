"""A gateway on loopback whose output URLs have expired, and the grid scenarios that
once froze the whole process against it (run as a child process by
``test_grid.py``, so a hang is a test failure with a deadline, not a hung suite).

``python expired_gateway.py SCENARIO`` prints ``ok`` and exits 0 when the scenario
ends; a deadlock never prints it.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("GENWIDGETS_HOME", tempfile.mkdtemp(prefix="gw-expired-"))

from loopback import JsonHandler, LoopbackServer

import genwidgets as gw

KEY = "expired-gateway-key"
#: how long the file handler holds a download before answering 404 at the latest
HOLD_LIMIT = 120.0


class ExpiredGateway:
    """Tasks finish after ``polls_before_done(index)`` result polls; every output
    URL answers 404 after ``hold`` (set or cleared by the scenario)."""

    def __init__(self, polls_before_done: Any, *, file_delay: float = 0.0) -> None:
        self.polls: dict[str, int] = {}
        self.polls_before_done = polls_before_done
        self.file_delay = file_delay
        self.release = threading.Event()
        self.release.set()
        self.file_asked = threading.Event()
        gateway = self

        class Handler(JsonHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                endpoint = self.path.split("/v1/queue/")[1]
                rid = f"r{len(gateway.polls)}"
                gateway.polls[rid] = 0
                base = f"{server.base}/v1/queue/{endpoint}/requests/{rid}"
                self.send_json(
                    {
                        "request_id": rid,
                        "status_url": base + "/status",
                        "response_url": base + "/response",
                        "cancel_url": base + "/cancel",
                        "queue_position": 0,
                    },
                )

            def do_GET(self) -> None:
                if "/files/" in self.path:
                    gateway.file_asked.set()
                    gateway.release.wait(HOLD_LIMIT)
                    if gateway.file_delay:
                        threading.Event().wait(gateway.file_delay)
                    return self.send_json({"detail": "Not Found"}, 404)
                rid = self.path.split("/requests/")[1].split("/")[0]
                gateway.polls[rid] += 1
                done = gateway.polls[rid] > gateway.polls_before_done(int(rid[1:]))
                if self.path.endswith("/status"):
                    return self.send_json({"status": "COMPLETED" if done else "IN_PROGRESS"})
                if not done:
                    return self.send_json({"status": "IN_PROGRESS"}, 202)
                url = f"{server.base}/files/{rid}.png"
                return self.send_json(
                    {
                        "status": "COMPLETED",
                        "error": None,
                        "outputs": [{"content_type": "image/png", "url": url}],
                    },
                )

            def do_PUT(self) -> None:
                self.send_json({})

        server = LoopbackServer(Handler)
        self.server = server


def held_write_meets_engine_callback() -> None:
    """The cycle the issue found: a finished grid's thumbnail hangs on its URL
    while the engine calls the grid back (as a task's finish does). Whichever
    thread asked for the thumbnail, the engine must stay free, the task must
    finish and a write from the caller's thread must end while the URL still hangs."""
    gateway = ExpiredGateway(lambda index: 1)
    gateway.release.clear()
    client = gw.Client(gateway.server.base, KEY, ledger=False)
    grid = gw.grid(
        "genW2.5-t2i-preview", {"prompt": "a fox", "n": 1}, x=("seed", [1]), client=client
    )
    if not gateway.file_asked.wait(60):
        raise SystemExit("the thumbnail was never asked for")
    engine = client._engine
    engine.call_soon(grid._on_change)  # what a task's finish callback does
    engine.run(asyncio.sleep(0), timeout=30)  # the engine still answers
    grid.run.wait(30)  # and the task has finished
    writer = threading.Thread(target=lambda: grid._throttle.request(force=True), daemon=True)
    writer.start()
    writer.join(30)
    if writer.is_alive():
        raise SystemExit("a write from the caller's thread never ended")
    gateway.release.set()
    client.close()


def expired_grid() -> None:
    """Six cells finishing in pairs, every image URL expired (a slow 404): the grid
    finishes, waits and closes."""
    gateway = ExpiredGateway(lambda index: 1 + 2 * (index // 2), file_delay=0.3)
    client = gw.Client(gateway.server.base, KEY)
    grid = gw.grid(
        "genW2.5-t2i-preview",
        {"prompt": "a fox", "n": 1},
        x=("seed", [1, 2, 3, 4, 5, 6]),
        client=client,
    )
    grid.wait(timeout=120)
    client.close()


SCENARIOS = {
    "held_write_meets_engine_callback": held_write_meets_engine_callback,
    "expired_grid": expired_grid,
}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]]()
    print("ok", flush=True)
    os._exit(0)  # a worker still holding a download must not delay the exit
