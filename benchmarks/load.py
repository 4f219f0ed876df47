"""A small, bounded load test of the status route: how many status requests per second?

    python -m benchmarks.load --n 5000 --connections 8 --max-seconds 30

Without ``--url`` it starts a simulator in a child process (so the server has
its own interpreter and core), creates one long task, and sends ``--n`` status
requests for it over ``--connections`` keep-alive HTTP/1.1 connections. The
client is a few lines of raw asyncio (not httpx) so that the figure measures
the server rather than the client. It stops after ``--max-seconds`` whatever
the count.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from urllib.parse import urlsplit

import httpx

from genwidgets.protocol.records import queue_url
from genwidgets.protocol.serving import child_of_this_process
from genwidgets.simulator import DEMO_KEY


@dataclass
class LoadResult:
    requests: int
    ok: int
    seconds: float

    @property
    def per_second(self) -> float:
        return self.requests / self.seconds if self.seconds > 0 else 0.0

    def __str__(self) -> str:
        return (
            f"{self.requests} status requests ({self.ok} answered 200) in {self.seconds:.2f} s: "
            f"{self.per_second:.0f} requests/s"
        )


async def _worker(
    host: str, port: int, request: bytes, quota: list[int], deadline: float, tally: list[int]
) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    try:
        while quota[0] > 0 and time.monotonic() < deadline:
            quota[0] -= 1
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            await reader.readexactly(length)
            tally[0] += 1
            if head.startswith(b"HTTP/1.1 200"):
                tally[1] += 1
    finally:
        writer.close()


async def hammer(
    status_url: str, key: str, n: int, connections: int, max_seconds: float
) -> LoadResult:
    """Send ``n`` GETs to ``status_url`` over ``connections`` keep-alive connections."""
    parts = urlsplit(status_url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    request = (
        f"GET {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\nAuthorization: Bearer {key}\r\n\r\n"
    ).encode()
    quota, tally = [n], [0, 0]
    start = time.monotonic()
    deadline = start + max_seconds
    await asyncio.gather(
        *(_worker(host, port, request, quota, deadline, tally) for _ in range(connections))
    )
    return LoadResult(tally[0], tally[1], time.monotonic() - start)


def _start_child(port: int = 0) -> tuple[subprocess.Popen[str], str]:
    child = subprocess.Popen(
        [sys.executable, "-m", "genwidgets.simulator", "--port", str(port), "--speed", "1"],
        stdout=subprocess.PIPE,
        text=True,
        env={**child_of_this_process(), "PYTHONUNBUFFERED": "1"},
    )
    assert child.stdout is not None
    line = child.stdout.readline()
    if " on http" not in line:
        child.kill()
        raise RuntimeError(f"the simulator did not start: {line!r}")
    return child, line.rsplit(" ", 1)[1].strip()


def measure_status(
    *,
    url: str | None = None,
    key: str = DEMO_KEY,
    n: int = 5000,
    connections: int = 8,
    max_seconds: float = 30.0,
) -> LoadResult:
    """Measure status requests per second (starting a child simulator unless ``url``)."""
    child = None
    if url is None:
        child, url = _start_child()
    try:
        handle = httpx.post(
            queue_url(url, "vidVq2-text2video"),
            json={"prompt": "load test"},
            headers={"Authorization": f"Bearer {key}", "X-Sim-Duration": "3600"},
        ).json()
        return asyncio.run(hammer(handle["status_url"], key, n, connections, max_seconds))
    finally:
        if child is not None:
            child.terminate()
            child.wait(10)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.load")
    parser.add_argument("--url", help="a running simulator (default: start one)")
    parser.add_argument("--key", default=DEMO_KEY)
    parser.add_argument("--n", type=int, default=5000, help="status requests to send")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--max-seconds", type=float, default=30.0)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if not 1 <= args.n <= 1_000_000 or not 1 <= args.connections <= 256:
        parser.error("--n must be 1..1000000 and --connections 1..256")
    result = measure_status(**{name: value for name, value in vars(args).items() if name != "json"})
    figures = asdict(result) | {"per_second": result.per_second}
    print(json.dumps(figures) if args.json else result)
    return 0 if result.ok == result.requests else 1


if __name__ == "__main__":
    sys.exit(main())
