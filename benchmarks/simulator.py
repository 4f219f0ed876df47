"""Simulator throughput: status requests per second on loopback.

Uses :func:`benchmarks.load.measure_status`: a child simulator (its own
interpreter), one long task, and ``requests`` status GETs over ``connections``
keep-alive HTTP/1.1 connections from a few lines of raw asyncio in this process,
so the figure measures the server, not an HTTP client library. On a 2-core
machine client and server share the cores: the figure is a floor.
"""

from __future__ import annotations

from typing import Any

from benchmarks.load import measure_status


def run_simulator(
    requests: int = 20000, connections: int = 8, max_seconds: float = 30.0
) -> dict[str, Any]:
    """Status requests per second; ``ok`` counts the 200 answers."""
    result = measure_status(n=requests, connections=connections, max_seconds=max_seconds)
    return {
        "requests": result.requests,
        "ok": result.ok,
        "seconds": round(result.seconds, 3),
        "connections": connections,
        "sim_status_rps": round(result.per_second, 1),
    }
