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

Besides the cold run (no history), three *warm* arms measure the schedule
that learns run times (issue 14): each first runs a warm-up of 50 tasks of the
same distribution through a client with a ledger, then polls the measured set
with a fresh client on that ledger (so the model is seeded from the ledger and
goes on learning live): ``genwidgets warm`` on the main set, ``genwidgets
bimodal`` on a bimodal set (30 % lognormal(4 s, 0.4), 70 % lognormal(40 s,
0.4)) next to fixed pollers on the same set, and ``genwidgets shift``, whose
measured tasks run twice as long as the warm-up's (a gateway that became 2×
slower). Our clients get ``max_status_rate=1000``: the budget is not what is
measured here, and the fixed pollers have none.

Per schedule: *poll requests* per task, the ratios' unit: every status and
result request the simulator answered (``/_sim/stats``, cross checked with the
client's own count) less one result per task, the one every poller fetches. A
fixed poller's polls are its status requests; ours are its status requests and
its result-address polls answered 202 (a running task is polled at its result
address, whose 200 is the result: see ``genwidgets.jobs.polling``). Status and
result requests are reported apart too. And notice latency (the moment the
client saw ``COMPLETED`` minus the simulator's ``completed_at``).

The fixed pollers are a few lines of asyncio on ``httpx.AsyncClient`` (the
stack genwidgets uses): create, then GET the status URL every interval (aimed
at first poll + k x interval, so an answer's latency does not stretch it) until
``COMPLETED``, then GET the result once. Each one's achieved interval is
measured: a ratio is evidence only when it stayed within 2 % of the nominal one.

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
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx

from . import _common as common
from . import on_paper

#: A cheap operation (JSON output, no media to encode), so completion times are
#: set by ``X-Sim-Duration`` alone and not by the simulator's media threads.
ENDPOINT = "asset-get"
PAYLOAD = {"Id": "asset-demo"}
OURS = "genwidgets"
OURS_WARM = "genwidgets warm"
OURS_SHIFT = "genwidgets shift"
OURS_BIMODAL = "genwidgets bimodal"
BIMODAL = " bimodal"  # suffix of the fixed pollers on the bimodal set
FIXED_INTERVALS = {"fixed 0.1 s": 0.1, "fixed 0.5 s": 0.5, "fixed 1 s": 1.0}
SCHEDULES = (OURS, *FIXED_INTERVALS)
WARM_ARMS = (OURS_WARM, OURS_SHIFT, OURS_BIMODAL, "fixed 0.5 s bimodal", "fixed 0.1 s bimodal")
#: a ratio against a fixed poller is evidence only if that poller's mean interval between
#: polls stayed this close to its nominal one (docs/decisions.md, "Benchmarks")
INTERVAL_TOLERANCE = 0.02
PROBE_PERIOD = 0.5
WARM_UP = 50
SHIFT_FACTOR = 2.0
#: our clients' status budget here (requests/s): high enough never to bind
STATUS_RATE = 1000.0


class _Draw:
    """A seeded draw of run times; the warm-up is the same draw with another seed."""

    count: int
    seed: int

    def durations(self) -> list[float]:
        raise NotImplementedError

    def warm_up(self) -> list[float]:
        """Another draw of the same distribution (the next seed), ``WARM_UP`` tasks long."""
        return replace(self, count=WARM_UP, seed=self.seed + 1).durations()  # type: ignore[type-var]


@dataclass(frozen=True)
class TaskSet(_Draw):
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

    def describe(self) -> dict[str, Any]:
        return {"shape": f"lognormal(median {self.median_s:g} s, sigma {self.sigma:g})"}


@dataclass(frozen=True)
class BimodalTaskSet(_Draw):
    """``short_share`` lognormal(short median, sigma), the rest lognormal(long median, sigma)."""

    count: int = 300
    short_share: float = 0.3
    short_median_s: float = 4.0
    long_median_s: float = 40.0
    sigma: float = 0.4
    seed: int = 20241123

    def durations(self) -> list[float]:
        rng = random.Random(self.seed)
        out = []
        for _ in range(self.count):
            median = self.short_median_s if rng.random() < self.short_share else self.long_median_s
            out.append(round(rng.lognormvariate(math.log(median), self.sigma), 3))
        return out

    def describe(self) -> dict[str, Any]:
        return {
            "shape": f"{self.short_share:.0%} lognormal(median {self.short_median_s:g} s, sigma "
            f"{self.sigma:g}) + {1 - self.short_share:.0%} lognormal(median "
            f"{self.long_median_s:g} s, sigma {self.sigma:g})"
        }


@dataclass(frozen=True)
class Arm:
    """One schedule polling one measured set (after an optional warm-up)."""

    name: str
    worker: str  # OURS or a fixed interval in seconds
    durations: tuple[float, ...]
    warm: tuple[float, ...] = ()


# --------------------------------------------------------------------------- workers


def _warm_up(base_url: str, durations: Sequence[float], ledger_path: Path) -> dict[str, int]:
    """Run the warm-up tasks through a client with a ledger; its request counts."""
    import genwidgets as gw
    from genwidgets.jobs.ledger import Ledger

    with Ledger(ledger_path) as ledger:
        client = gw.Client(
            base_url, common.DEMO_KEY, ledger=ledger, download=False, max_status_rate=STATUS_RATE
        )
        jobs = [
            client.submit(ENDPOINT, PAYLOAD, headers={"X-Sim-Duration": f"{d:.3f}"})
            for d in durations
        ]
        for job in jobs:
            job.result(timeout=max(durations) + 120.0)
        counts = client.request_counts
        client.close()
    return counts


def genwidgets_worker(
    base_url: str, durations: Sequence[float], warm: Sequence[float] = ()
) -> dict[str, Any]:
    """Poll with ``gw.Client`` (its own schedule); note when each job saw COMPLETED.

    With ``warm`` durations, a warm-up client runs those first on a ledger in a
    temporary folder, and the measured client uses that ledger.
    """
    with tempfile.TemporaryDirectory(prefix="gw-bench-ledger-") as home:
        ledger_path = Path(home) / "ledger.sqlite3"
        warm_counts = _warm_up(base_url, warm, ledger_path) if warm else {}
        out = _measured(base_url, durations, ledger_path if warm else None)
    out["warm_status_requests"] = warm_counts.get("status", 0)
    out["warm_result_requests"] = warm_counts.get("result", 0)
    return out


def _measured(
    base_url: str, durations: Sequence[float], ledger_path: Path | None
) -> dict[str, Any]:
    import genwidgets as gw
    from genwidgets.jobs.ledger import Ledger

    ledger: Ledger | bool = Ledger(ledger_path) if ledger_path is not None else False
    client = gw.Client(
        base_url, common.DEMO_KEY, ledger=ledger, download=False, max_status_rate=STATUS_RATE
    )
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
    if isinstance(ledger, Ledger):
        ledger.close()
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
            # Polls aim at first + k * interval: the time an answer takes does not stretch
            # the interval, a starved loop does (and the achieved interval shows it).
            polls, first = 0, time.monotonic()
            due = first
            while True:
                response = await http.get(handle["status_url"])
                response.raise_for_status()
                polls += 1
                if response.json()["status"] == "COMPLETED":
                    seen_at, last = time.time(), time.monotonic()
                    break
                due = max(due + interval, time.monotonic())  # late: no burst to catch up
                await asyncio.sleep(due - time.monotonic())
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
    warm = [float(d) for d in plan.get("warm", ())]
    wall, cpu = time.monotonic(), time.process_time()
    if args.worker == OURS:
        out = genwidgets_worker(args.base, durations, warm)
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
    arm: Arm


def _launch(arm: Arm, sim: common.ChildSimulator, max_live: int | None) -> _Running:
    arg = arm.worker
    durations = arm.durations
    process = subprocess.Popen(
        [common.PYTHON, "-m", "benchmarks.polling", "--worker", arg, "--base", sim.base_url],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=common.child_env(),
        cwd=common.REPO,
    )
    running = _Running(arm.name, sim, process, [], arm)
    plan = {"durations": list(durations), "warm": list(arm.warm), "max_live": max_live}
    # Read stdout/stderr in threads: a full pipe would otherwise block the worker.
    threading.Thread(
        target=lambda: running.output.append(process.communicate(json.dumps(plan))[0]),
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


def _model_requests(arm: Arm) -> float | None:
    """Poll requests per task the schedule makes on paper (no latency, no jitter)."""
    durations = arm.durations
    if arm.worker == OURS:
        if arm.warm:
            return on_paper.on_paper(arm.warm, durations, ENDPOINT, PAYLOAD)[
                "poll_requests_per_task"
            ]
        from genwidgets.jobs.polling import requests_for

        # the first poll (status) sees the task running, the others are at the result
        # address: the last of them is the result itself, not a poll
        counts = [requests_for(d) for d in durations]
        return sum(n - 1 if n > 1 else n for n in counts) / len(durations)
    interval = float(arm.worker)
    return sum(on_paper.fixed_polls(d, interval) for d in durations) / len(durations)


def _run_group(
    arms: Sequence[Arm],
    timeout_s: float,
    max_live: Mapping[str, int],
) -> dict[str, dict[str, Any]]:
    results: dict[str, dict[str, Any]] = {}
    schedules = [a.name for a in arms]
    with common.simulators(len(arms)) as sims:
        runs = [
            _launch(arm, sim, max_live.get(arm.name)) for arm, sim in zip(arms, sims, strict=True)
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
            # The warm-up's requests went to the same simulator: take them off.
            status = stats["status"] - worker.get("warm_status_requests", 0)
            result = stats["result"] - worker.get("warm_result_requests", 0)
            client_polls = worker["status_requests"] + worker["result_requests"] - n
            on_paper = _model_requests(r.arm)
            results[r.schedule] = {
                "tasks": n,
                "warm_up_tasks": len(r.arm.warm),
                # every poller fetches each result once; every other request is a poll
                "poll_requests_per_task": round((status + result - n) / n, 3),
                "client_poll_requests_per_task": round(client_polls / n, 3),
                "model_poll_requests_per_task": None if on_paper is None else round(on_paper, 3),
                "status_requests_per_task": round(status / n, 3),
                "client_status_requests_per_task": round(worker["status_requests"] / n, 3),
                "result_requests_per_task": round(result / n, 3),
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


def arms_for(task_set: TaskSet, bimodal: BimodalTaskSet) -> dict[str, Arm]:
    """Every arm by name: the main set cold, warm and shifted, and the bimodal set."""
    main = tuple(task_set.durations())
    warm = tuple(task_set.warm_up())
    shifted = tuple(round(d * SHIFT_FACTOR, 3) for d in main)
    two = tuple(bimodal.durations())
    arms = {OURS: Arm(OURS, OURS, main)}
    for name, interval in FIXED_INTERVALS.items():
        arms[name] = Arm(name, f"{interval:g}", main)
        arms[name + BIMODAL] = Arm(name + BIMODAL, f"{interval:g}", two)
    arms[OURS_WARM] = Arm(OURS_WARM, OURS, main, warm)
    arms[OURS_SHIFT] = Arm(OURS_SHIFT, OURS, shifted, warm)
    arms[OURS_BIMODAL] = Arm(OURS_BIMODAL, OURS, two, tuple(bimodal.warm_up()))
    return arms


def interval_drift(name: str, schedule: Mapping[str, Any]) -> float | None:
    """How far a fixed poller's achieved interval strayed from its nominal one (0.116 =
    11.6 % slower); None for our arms, or when no task was polled twice."""
    nominal = FIXED_INTERVALS.get(name.removesuffix(BIMODAL))
    achieved = schedule.get("mean_achieved_interval_s")
    if nominal is None or achieved is None:
        return None
    return float(achieved) / nominal - 1.0


def interval_kept(name: str, schedule: Mapping[str, Any]) -> bool:
    """Whether a fixed poller kept its interval within :data:`INTERVAL_TOLERANCE`."""
    drift = interval_drift(name, schedule)
    return drift is not None and abs(drift) <= INTERVAL_TOLERANCE


def _set_figures(durations: Sequence[float]) -> dict[str, Any]:
    return {
        "count": len(durations),
        "measured_median_s": round(common.median(durations), 3),
        "mean_s": round(sum(durations) / len(durations), 3),
        "max_s": max(durations),
    }


def run_polling(
    task_set: TaskSet | None = None,
    groups: Sequence[Sequence[str]] = ((OURS, "fixed 1 s"), ("fixed 0.5 s", "fixed 0.1 s")),
    max_live: Mapping[str, int] | None = None,
    bimodal: BimodalTaskSet | None = None,
) -> dict[str, Any]:
    """Poll the task sets with every arm named in ``groups``; figures and the ratios.

    ``max_live`` limits how many tasks a fixed poller keeps live at once (a
    rolling window, longest tasks first), so that its request rate stays within
    what this machine's CPU can send: the figures per task do not depend on how
    many other tasks are live, as long as nothing is starved. Ours always has
    every task live at once (the load the schedule is designed for). Ratios are
    between arms of the same run.
    """
    task_set = task_set or TaskSet()
    bimodal = bimodal or BimodalTaskSet()
    arms = arms_for(task_set, bimodal)
    durations = list(arms[OURS].durations)
    windows = dict(max_live or {})
    longest_group = max(
        (max(arm.warm) if arm.warm else 0.0)
        + max(max(arm.durations), sum(arm.durations) / windows.get(name, len(arm.durations)))
        for group in groups
        for name in group
        for arm in (arms[name],)
    )
    timeout_s = longest_group + 240.0
    schedules: dict[str, dict[str, Any]] = {}
    for group in groups:
        schedules |= _run_group([arms[name] for name in group], timeout_s, windows)

    def ratio(name: str, ours_name: str = OURS) -> float | None:
        if name not in schedules or ours_name not in schedules:
            return None
        ours = schedules[ours_name]["poll_requests_per_task"]
        return round(schedules[name]["poll_requests_per_task"] / ours, 3) if ours > 0 else None

    def p95(name: str) -> float | None:
        return schedules[name]["notice_s"]["p95"] if name in schedules else None

    return {
        "task_set": {
            **task_set.describe(),
            "median_s": task_set.median_s,
            "sigma": task_set.sigma,
            "cap_s": task_set.cap_s,
            "seed": task_set.seed,
            **_set_figures(durations),
            "capped": sum(1 for d in durations if d >= task_set.cap_s),
        },
        "bimodal_set": {
            **bimodal.describe(),
            "seed": bimodal.seed,
            **_set_figures(bimodal.durations()),
        },
        "warm_up": WARM_UP,
        "shift_factor": SHIFT_FACTOR,
        "groups": [list(g) for g in groups],
        "max_live": windows,
        "cap_alternatives": on_paper.cap_alternatives(durations),
        "schedules": schedules,
        "requests_ratio_vs_0_1s": ratio("fixed 0.1 s"),
        "requests_ratio_vs_0_5s": ratio("fixed 0.5 s"),
        "requests_ratio_vs_1s": ratio("fixed 1 s"),
        "p95_notice_s": p95(OURS),
        "p95_notice_s_0_5s": p95("fixed 0.5 s"),
        "requests_ratio_vs_0_5s_warm": ratio("fixed 0.5 s", OURS_WARM),
        "requests_ratio_vs_0_1s_warm": ratio("fixed 0.1 s", OURS_WARM),
        "p95_notice_s_warm": p95(OURS_WARM),
        "requests_ratio_vs_0_5s_warm_bimodal": ratio("fixed 0.5 s" + BIMODAL, OURS_BIMODAL),
        "requests_ratio_vs_0_1s_warm_bimodal": ratio("fixed 0.1 s" + BIMODAL, OURS_BIMODAL),
        "p95_notice_s_warm_bimodal": p95(OURS_BIMODAL),
        "p95_notice_s_shift": p95(OURS_SHIFT),
    }


if __name__ == "__main__":
    sys.exit(_worker_main(sys.argv[1:]))
