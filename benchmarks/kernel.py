"""Kernel responsiveness: does a kernel with 200 live, polling jobs still answer at once?

A real IPython kernel (jupyter_client ``KernelManager`` on this interpreter,
its kernel spec registered under a temporary prefix, every Jupyter/IPython/
genwidgets folder isolated there) executes a trivial request (``1``) many
times, idle first; then a cell submits ``jobs`` tasks with
``X-Sim-Duration: 3600`` to a child simulator (so they stay live and keep
polling for the whole measurement; the simulator's own CPU is not in the kernel
process, as a real gateway is not) and the same request is timed again.

Round trip = from sending ``execute_request`` to receiving its
``execute_reply`` on the shell channel. Samples are spaced by a seeded random
gap so they fall at every phase of the pollers. The busy samples are taken in
the jobs' first minute, where genwidgets polls most often (every ~1.5 s).
"""

from __future__ import annotations

import queue
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from jupyter_client.blocking.client import BlockingKernelClient

from . import _common as common

REPLY_TIMEOUT = 60.0

SETUP_CELL = """\
import time as _time
import genwidgets as gw
client = gw.Client({base!r}, {key!r})
"""

SUBMIT_CELL = """\
jobs = [
    client.submit("asset-get", {{"Id": "asset-demo"}}, headers={{"X-Sim-Duration": "3600"}})
    for _ in range({jobs})
]
_deadline = _time.monotonic() + 60
while any(j.last_status is None for j in jobs) and _time.monotonic() < _deadline:
    _time.sleep(0.05)
"""

REPORT_CELL = """\
print(sum(not j.done() for j in jobs), sum(j.last_status is not None for j in jobs),
      client.request_counts["status"] + client.request_counts["result"])
"""


def _read_iopub(client: BlockingKernelClient, msg_id: str | None) -> str:
    """Drain iopub; with ``msg_id``, until that request's ``idle`` (its printed text)."""
    printed = []
    while True:
        try:
            msg = client.get_iopub_msg(timeout=REPLY_TIMEOUT if msg_id else 0.0)
        except queue.Empty:
            if msg_id:
                raise RuntimeError("the kernel never went idle after a request") from None
            return ""
        if msg_id is None or msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream":
            printed.append(msg["content"]["text"])
        elif msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return "".join(printed)


def _execute(client: BlockingKernelClient, code: str, *, output: bool = True) -> tuple[float, str]:
    """Run ``code``; the round trip to its ``execute_reply`` in seconds, and what it printed."""
    start = time.perf_counter()
    msg_id = client.execute(code, store_history=False)
    while True:
        reply = client.get_shell_msg(timeout=REPLY_TIMEOUT)
        if reply["parent_header"].get("msg_id") == msg_id:
            break
    elapsed = time.perf_counter() - start
    if reply["content"].get("status") != "ok":
        content = reply["content"]
        raise RuntimeError(f"kernel error: {content.get('ename')}: {content.get('evalue')}")
    return elapsed, _read_iopub(client, msg_id if output else None)


def _samples(client: BlockingKernelClient, count: int, rng: random.Random) -> list[float]:
    times = []
    for _ in range(count):
        time.sleep(rng.uniform(0.0, 0.05))
        times.append(_execute(client, "1", output=False)[0])
    return times


def _ms(values: list[float]) -> dict[str, float]:
    return {
        "p50": round(common.median(values) * 1000, 2),
        "p95": round(common.percentile(values, 95) * 1000, 2),
        "max": round(max(values) * 1000, 2),
    }


def run_kernel(jobs: int = 200, samples: int = 300, seed: int = 7) -> dict[str, Any]:
    """Idle vs busy execute round trips; ``exec_p95_added_ms`` = p95(busy) - p95(idle)."""
    rng = random.Random(seed)
    with (
        tempfile.TemporaryDirectory(prefix="gw-bench-kernel-") as tmp,
        common.simulators(1) as (sim,),
    ):
        root = Path(tmp)
        env = common.child_env(common.isolated_dirs(root))
        kernels = common.install_kernel(root, env)
        with common.kernel_manager(kernels) as manager:
            manager.start_kernel(env=env, cwd=str(root))
            client = manager.client()
            client.start_channels()
            try:
                client.wait_for_ready(timeout=REPLY_TIMEOUT)
                _execute(client, SETUP_CELL.format(base=sim.base_url, key=common.DEMO_KEY))
                _samples(client, 10, rng)  # warm-up
                idle = _samples(client, samples, rng)
                _execute(client, SUBMIT_CELL.format(jobs=jobs))
                _, before = _execute(client, REPORT_CELL)
                kernel_pid = manager.provisioner.pid if manager.provisioner else None  # type: ignore[attr-defined]
                meter = common.CpuMeter({"kernel": kernel_pid or 0, "simulator": sim.pid})
                started = time.monotonic()
                busy = _samples(client, samples, rng)
                busy_seconds = time.monotonic() - started
                cpu = meter.shares()
                _, after = _execute(client, REPORT_CELL)
            finally:
                client.stop_channels()
    live, seen, polls_after = (int(x) for x in after.split())
    polls_before = int(before.split()[2])
    return {
        "jobs": jobs,
        "samples": samples,
        "jobs_live_after": live,
        "jobs_polled": seen,
        "polls_per_second_busy": round((polls_after - polls_before) / busy_seconds, 1),
        "busy_seconds": round(busy_seconds, 1),
        "idle_ms": _ms(idle),
        "busy_ms": _ms(busy),
        "cpu_share_kernel_busy": cpu["kernel"],
        "cpu_share_simulator_busy": cpu["simulator"],
        "exec_p95_added_ms": round(
            (common.percentile(busy, 95) - common.percentile(idle, 95)) * 1000, 2
        ),
    }
