"""Polling efficiency: genwidgets' schedule against fixed 0.1 s, 0.5 s and 1 s pollers.

One seeded task set (lognormal run times) is polled by every schedule. Each
schedule gets its own child simulator (speed 1, workers enough that nothing
queues) and its own child *worker* process (the client), so a busy schedule
cannot slow another one down through a shared GIL or event loop. Schedules
in one *group* run at the same time; groups run one after another. A fixed
poller may keep only ``max_live`` tasks live at once (a rolling window): an
httpx client costs about 2 ms of CPU per request on this machine, and 300
tasks polled every 0.1 s would need 3000 requests/s, more than 2 shared cores
can send, which would stretch every interval and distort the figures. While a
group runs, the orchestrator probes every simulator's own answer time and
measures each process's CPU share, so saturation shows.

Per schedule: status requests per task (the simulator's ``/_sim/stats``, cross
checked with the client's own count) and notice latency (the moment the client
saw ``COMPLETED`` minus the simulator's ``completed_at``).

The fixed pollers are a few lines of asyncio on ``httpx.AsyncClient`` (the
stack genwidgets uses): create, then GET the status URL, sleep the interval,
repeat until ``COMPLETED``, then GET the result once, as the peers' loops do.

Run a worker by hand: ``python -m benchmarks.polling --worker 0.5 --base URL``
with ``{"durations": [...]}`` on stdin.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from . import _common as common

#: A cheap operation (JSON output, no media to encode), so completion times are
#: set by ``X-Sim-Duration`` alone and not by the simulator's media threads.
ENDPOINT = "asset-get"
PAYLOAD = {"Id": "asset-demo"}
OURS = "genwidgets"
FIXED_INTERVALS = {"fixed 0.1 s": 0.1, "fixed 0.5 s": 0.5, "fixed 1 s": 1.0}
SCHEDULES = (OURS, *FIXED_INTERVALS)
PROBE_PERIOD = 0.5


@dataclass(frozen=True)
class TaskSet:
    """Run times in seconds: lognormal(ln median, sigma), capped, seeded."""

    count: int = 300
    median_s: float = 20.0
    sigma: float = 0.7
    cap_s: float = 150.0
    floor_s: float = 0.5
    seed: int = 20240917

    def durations(self) -> list[float]:
        rng = random.Random(self.seed)
        raw = [rng.lognormvariate(math.log(self.median_s), self.sigma) for _ in range(self.count)]
        return [round(min(self.cap_s, max(self.floor_s, d)), 3) for d in raw]


# --------------------------------------------------------------------------- workers


def genwidgets_worker(base_url: str, durations: Sequence[float]) -> dict[str, Any]:
    """Poll with ``gw.Client`` (its own schedule); note when each job saw COMPLETED."""
    import genwidgets as gw

    client = gw.Client(base_url, common.DEMO_KEY, ledger=False)
    seen: dict[str, float] = {}

    def on_update(job: Any) -> None:
        status = job.last_status
        if status is not None and status.status == "COMPLETED" and job.request_id not in seen:
            seen[job.request_id] = time.time()

    jobs = []
    for duration in durations:
        job = client.submit(ENDPOINT, PAYLOAD, headers={"X-Sim-Duration": f"{duration:.3f}"})
        job.add_update_callback(on_update)
        jobs.append(job)
    for job in jobs:
        job.result(timeout=max(durations) + 120.0)
    counts = client.request_counts
    client.close()
    return {
        "tasks": [
            {"request_id": job.request_id, "seen_at": seen.get(job.request_id), "polls": None}
            for job in jobs
        ],
        "status_requests": counts["status"],
        "result_requests": counts["result"],
    }


async def _fixed(
    base_url: str, durations: Sequence[float], interval: float, max_live: int | None
) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {common.DEMO_KEY}"}
    async with httpx.AsyncClient(headers=headers, timeout=30.0) as http:

        async def poll(handle: dict[str, Any]) -> dict[str, Any]:
            polls, first = 0, time.monotonic()
            while True:
                response = await http.get(handle["status_url"])
                response.raise_for_status()
                polls += 1
                if response.json()["status"] == "COMPLETED":
                    seen_at, last = time.time(), time.monotonic()
                    break
                await asyncio.sleep(interval)
            (await http.get(handle["response_url"])).raise_for_status()
            return {
                "request_id": handle["request_id"],
                "seen_at": seen_at,
                "polls": polls,
                "mean_interval_s": (last - first) / (polls - 1) if polls > 1 else None,
            }

        # At most ``max_live`` tasks at once, longest first: the run then lasts about
        # max(longest task, total run time / max_live).
        window = asyncio.Semaphore(max_live or len(durations))

        async def poll_and_release(handle: dict[str, Any]) -> dict[str, Any]:
            try:
                return await poll(handle)
            finally:
                window.release()

        pollers = []
        for duration in sorted(durations, reverse=True):
            await window.acquire()
            response = await http.post(
                f"{base_url}/v1/queue/{ENDPOINT}",
                json=PAYLOAD,
                headers={"X-Sim-Duration": f"{duration:.3f}"},
            )
            response.raise_for_status()
            pollers.append(asyncio.create_task(poll_and_release(response.json())))
        tasks = await asyncio.gather(*pollers)
    return {
        "tasks": tasks,
        "status_requests": sum(t["polls"] for t in tasks),
        "result_requests": len(tasks),
    }


def fixed_worker(
    base_url: str, durations: Sequence[float], interval: float, max_live: int | None = None
) -> dict[str, Any]:
    """Poll every task at a fixed ``interval`` on one ``httpx.AsyncClient``."""
    return asyncio.run(_fixed(base_url, durations, interval, max_live))


def _worker_main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.polling")
    parser.add_argument("--worker", required=True, help=f"{OURS} or an interval in seconds")
    parser.add_argument("--base", required=True, help="the simulator's base URL")
    args = parser.parse_args(argv)
    plan = json.loads(sys.stdin.read())
    durations = [float(d) for d in plan["durations"]]
    wall, cpu = time.monotonic(), time.process_time()
    if args.worker == OURS:
        out = genwidgets_worker(args.base, durations)
    else:
        out = fixed_worker(args.base, durations, float(args.worker), plan.get("max_live"))
    # The worker's own CPU share (1.0 = one core busy) while it polled.
    out["cpu_share"] = (time.process_time() - cpu) / max(time.monotonic() - wall, 1e-9)
    print(json.dumps(out), flush=True)
    return 0


# --------------------------------------------------------------------------- orchestration


@dataclass
class _Running:
    schedule: str
    sim: common.ChildSimulator
    process: subprocess.Popen[str]
    output: list[str]


def _launch(
    schedule: str,
    sim: common.ChildSimulator,
    durations: Sequence[float],
    max_live: int | None,
) -> _Running:
    arg = OURS if schedule == OURS else f"{FIXED_INTERVALS[schedule]:g}"
    process = subprocess.Popen(
        [common.PYTHON, "-m", "benchmarks.polling", "--worker", arg, "--base", sim.base_url],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=common.child_env(),
        cwd=common.REPO,
    )
    running = _Running(schedule, sim, process, [])
    # Read stdout/stderr in threads: a full pipe would otherwise block the worker.
    threading.Thread(
        target=lambda: running.output.append(
            process.communicate(json.dumps({"durations": list(durations), "max_live": max_live}))[0]
        ),
        daemon=True,
    ).start()
    return running


def _completion_times(sim: common.ChildSimulator, ids: Sequence[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    with httpx.Client(timeout=30.0) as http:
        for request_id in ids:
            body = http.get(f"{sim.base_url}/_sim/tasks/{request_id}").json()
            if body.get("completed_at") is not None:
                out[request_id] = float(body["completed_at"])
    return out


def _summary(values: Sequence[float]) -> dict[str, float]:
    return {
        "p50": round(common.median(values), 4),
        "p95": round(common.percentile(values, 95), 4),
        "max": round(max(values), 4) if values else math.nan,
    }


def _model_requests(schedule: str, durations: Sequence[float]) -> float:
    """Status requests per task the schedule makes on paper (no latency, no jitter)."""
    if schedule == OURS:
        from genwidgets.jobs.polling import requests_for

        return sum(requests_for(d) for d in durations) / len(durations)
    interval = FIXED_INTERVALS[schedule]
    return sum(math.floor(d / interval) + 1 for d in durations) / len(durations)


def requests_with_cap(seconds: float, early_cap: float) -> int:
    """Status requests of our schedule on paper if its first-minute cap were ``early_cap``
    (the rest as in genwidgets.jobs.polling: same start, growth and late ramp)."""
    from genwidgets.jobs import polling as schedule

    t, n = 0.0, 0
    while t < seconds:
        cap = early_cap
        if t >= schedule.KNEE:
            cap = min(schedule.LATE_CAP, early_cap + (t - schedule.KNEE) / schedule.RAMP)
        t += max(schedule.FIRST, min(cap, schedule.FIRST + schedule.GROWTH * t))
        n += 1
    return n


def cap_alternatives(
    durations: Sequence[float], caps: Sequence[float] = (1.5, 1.75, 2.0, 2.5)
) -> dict[str, dict[str, float]]:
    """On paper, for other first-minute caps: requests per task, the ratio to a fixed
    0.5 s poller, and the p95 notice delay to expect (0.95 x cap)."""
    fixed = sum(math.floor(d / 0.5) + 1 for d in durations) / len(durations)
    out = {}
    for cap in caps:
        ours = sum(requests_with_cap(d, cap) for d in durations) / len(durations)
        out[f"{cap:g}"] = {
            "requests_per_task": round(ours, 2),
            "ratio_vs_0_5s": round(fixed / ours, 2),
            "p95_notice_s": round(0.95 * cap, 2),
        }
    return out


def _run_group(
    schedules: Sequence[str],
    durations: Sequence[float],
    timeout_s: float,
    max_live: Mapping[str, int],
) -> dict[str, dict[str, Any]]:
    results: dict[str, dict[str, Any]] = {}
    with common.simulators(len(schedules)) as sims:
        runs = [
            _launch(s, sim, durations, max_live.get(s))
            for s, sim in zip(schedules, sims, strict=True)
        ]
        meter = common.CpuMeter({r.schedule: r.sim.pid for r in runs})
        probes: dict[str, list[float]] = {r.schedule: [] for r in runs}
        deadline = time.monotonic() + timeout_s
        with httpx.Client(timeout=30.0) as http:
            while any(r.process.poll() is None for r in runs):
                if time.monotonic() > deadline:
                    for r in runs:
                        common.stop_process(r.process)
                    raise RuntimeError(f"polling workers did not finish in {timeout_s:.0f} s")
                for r in runs:
                    start = time.perf_counter()
                    http.get(f"{r.sim.base_url}/_sim/stats").raise_for_status()
                    probes[r.schedule].append(time.perf_counter() - start)
                time.sleep(PROBE_PERIOD)
        cpu = meter.shares()
        for r in runs:
            r.process.wait()
            for _ in range(100):  # the reader thread appends right after the exit
                if r.output:
                    break
                time.sleep(0.05)
            if r.process.returncode != 0 or not r.output or not r.output[0].strip():
                raise RuntimeError(f"the {r.schedule} worker failed (exit {r.process.returncode})")
            worker = json.loads(r.output[0].strip().splitlines()[-1])
            tasks = worker["tasks"]
            completed = _completion_times(r.sim, [t["request_id"] for t in tasks])
            stats = r.sim.stats()
            notices = [
                t["seen_at"] - completed[t["request_id"]]
                for t in tasks
                if t["seen_at"] is not None and t["request_id"] in completed
            ]
            intervals = [t["mean_interval_s"] for t in tasks if t.get("mean_interval_s")]
            n = len(tasks)
            results[r.schedule] = {
                "tasks": n,
                "status_requests_per_task": round(stats["status"] / n, 3),
                "client_status_requests_per_task": round(worker["status_requests"] / n, 3),
                "model_status_requests_per_task": round(_model_requests(r.schedule, durations), 3),
                "result_requests_per_task": round(stats["result"] / n, 3),
                "notice_s": _summary(notices),
                "notices_measured": len(notices),
                "mean_achieved_interval_s": round(sum(intervals) / len(intervals), 4)
                if intervals
                else None,
                "sim_probe_ms": {
                    k: round(v * 1000, 2) for k, v in _summary(probes[r.schedule]).items()
                },
                "cpu_share_sim": cpu[r.schedule],
                "cpu_share_client": round(worker["cpu_share"], 3),
                "concurrent_with": [s for s in schedules if s != r.schedule],
                "max_live_tasks": max_live.get(r.schedule, n),
            }
    return results


def run_polling(
    task_set: TaskSet | None = None,
    groups: Sequence[Sequence[str]] = ((OURS, "fixed 1 s"), ("fixed 0.5 s", "fixed 0.1 s")),
    max_live: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """Poll one task set with every schedule; per-schedule figures and the ratios.

    ``max_live`` limits how many tasks a fixed poller keeps live at once (a
    rolling window, longest tasks first), so that its request rate stays within
    what this machine's CPU can send: the figures per task do not depend on how
    many other tasks are live, as long as nothing is starved. Ours always has
    every task live at once (the load the schedule is designed for).
    """
    task_set = task_set or TaskSet()
    durations = task_set.durations()
    windows = dict(max_live or {})
    longest_group = max(
        max(max(durations), sum(durations) / windows.get(name, len(durations)))
        for group in groups
        for name in group
    )
    timeout_s = longest_group + 240.0
    schedules: dict[str, dict[str, Any]] = {}
    for group in groups:
        schedules |= _run_group(group, durations, timeout_s, windows)
    ours = schedules[OURS]["status_requests_per_task"]

    def ratio(name: str) -> float | None:
        if name not in schedules or ours <= 0:
            return None
        return round(schedules[name]["status_requests_per_task"] / ours, 3)

    return {
        "task_set": {
            "count": task_set.count,
            "median_s": task_set.median_s,
            "sigma": task_set.sigma,
            "cap_s": task_set.cap_s,
            "seed": task_set.seed,
            "measured_median_s": round(common.median(durations), 3),
            "mean_s": round(sum(durations) / len(durations), 3),
            "max_s": max(durations),
            "capped": sum(1 for d in durations if d >= task_set.cap_s),
        },
        "groups": [list(g) for g in groups],
        "max_live": windows,
        "cap_alternatives": cap_alternatives(durations),
        "schedules": schedules,
        "requests_ratio_vs_0_1s": ratio("fixed 0.1 s"),
        "requests_ratio_vs_0_5s": ratio("fixed 0.5 s"),
        "requests_ratio_vs_1s": ratio("fixed 1 s"),
        "p95_notice_s": schedules[OURS]["notice_s"]["p95"],
        "p95_notice_s_0_5s": schedules["fixed 0.5 s"]["notice_s"]["p95"]
        if "fixed 0.5 s" in schedules
        else None,
    }


if __name__ == "__main__":
    sys.exit(_worker_main(sys.argv[1:]))
