"""Polling efficiency: genwidgets' schedule against fixed pollers on four task sets.

Sets (``benchmarks/sets.py``): the *20 s* set (300 tasks, lognormal median 20 s), the
*bimodal* one, the *short* one (lognormal median 3 s, sigma 0.5) and the *mixed* one
(images of median 3 s and videos of median 60 s, interleaved, one client). Every arm
(one schedule on one set) gets its own child simulator and its own child client process
(``benchmarks/pollers.py``), so a busy arm cannot slow another through a shared GIL or
event loop; arms run at the same time, each from its ``start_s``, and while they run
the orchestrator probes every simulator's own answer time and measures CPU shares, so
saturation shows.

Ours: *cold* arms submit through a fresh client per batch (no history), *warm* arms
first run a warm-up of the same distribution through a client with a ledger, then poll
the measured tasks with a fresh client on that ledger; *shift*: the measured tasks run
twice as long as the warm-up's (a gateway that became 2x slower). Our clients get
``max_status_rate=1000``: the budget is measured in section 6, not here.

Fixed pollers are measured on a *sample* of their set (evenly spread over its run
times), in a rolling window of ``max_live`` tasks so that none sends more requests than
its CPU share allows. A fixed poller's requests are exact on paper (``ceil(d / i) + 1``
per task) when it keeps its interval; so each ratio is the fixed poller's on-paper count
over the very tasks our arm measured, divided by our measured count, and it is evidence
only when the fixed poller's sample kept its interval within 2 % and its measured count
(simulator and client) matched the on-paper count of the sample.

*Poll requests* per task, the ratios' unit: every status and result request the
simulator answered (``/_sim/stats``, cross-checked with the client's own count) less
one result per task, the one every poller fetches. *Notice latency*: the moment the
client saw ``COMPLETED`` minus the simulator's ``completed_at``.
"""

from __future__ import annotations

import json
import math
import random
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from . import _common as common
from . import on_paper, sets
from .pollers import OURS, READY, STATUS_RATE
from .sets import ALL_AT_ONCE, WARM_UP, Arrivals, BimodalTaskSet, MixedTaskSet, Task, TaskSet

__all__ = ["OURS", "STATUS_RATE"]

OURS_WARM = "genwidgets warm"
OURS_SHIFT = "genwidgets shift"
OURS_BIMODAL = "genwidgets bimodal"
OURS_SHORT = "genwidgets short"
OURS_SHORT_WARM = "genwidgets short warm"
OURS_MIXED = "genwidgets mixed warm"
#: the suffix of an arm's name names its set (none: the 20 s set)
BIMODAL, SHORT, MIXED = " bimodal", " short", " mixed"
FIXED_INTERVALS = {"fixed 0.1 s": 0.1, "fixed 0.5 s": 0.5, "fixed 1 s": 1.0}
#: whose clients poll like a fixed poller (the issue's side-by-side row)
PEERS = {"fixed 0.1 s": "fal_client", "fixed 0.5 s": "replicate"}
#: a ratio against a fixed poller is evidence only if that poller's mean interval between
#: polls stayed this close to its nominal one (docs/decisions.md, "Benchmarks")
INTERVAL_TOLERANCE = 0.02
#: ... and its measured count of its sample this close to the sample's on-paper count
COUNT_TOLERANCE = 0.01
PROBE_PERIOD = 0.5
#: how long a worker may take to import what it needs and say it is ready
READY_WITHIN_S = 120.0
SHIFT_FACTOR = 2.0
#: the shift arm's tasks are drawn from those of the 20 s set under this (before doubling)
SHIFT_UNDER_S = 70.0
#: the mixed set's warm-up: 40 videos (a model of 24, ready at 20, misjudged their tails)
MIXED_WARM_UP = 100
#: how a warm-up's tasks arrive (cold tasks are polled often while young: not all at once)
WARM_ARRIVALS = Arrivals(10, 4.0)


@dataclass(frozen=True)
class ArmPlan:
    """How one arm runs: ``count`` measured tasks (0: the whole set), how they arrive,
    the fixed poller's window, and when the arm starts (seconds into the polling run)."""

    count: int = 0
    arrivals: Arrivals = ALL_AT_ONCE
    max_live: int = 0
    start_s: float = 0.0


@dataclass(frozen=True)
class PollingPlan:
    """The sets, and the arms that run (by name) with their plans."""

    twenty: TaskSet = sets.TWENTY
    bimodal: BimodalTaskSet = sets.BIMODAL
    short: TaskSet = sets.SHORT
    mixed: MixedTaskSet = sets.MIXED
    arms: Mapping[str, ArmPlan] = field(default_factory=dict)
    warm_arrivals: Arrivals = WARM_ARRIVALS


@dataclass(frozen=True)
class Arm:
    """One schedule polling measured tasks (after an optional warm-up)."""

    name: str
    worker: str  # OURS or a fixed interval in seconds
    tasks: tuple[Task, ...]
    arrivals: Arrivals = ALL_AT_ONCE
    warm: tuple[Task, ...] = ()
    warm_arrivals: Arrivals = ALL_AT_ONCE
    fresh_every_batch: bool = False
    max_live: int = 0
    start_s: float = 0.0
    whole: tuple[Task, ...] = ()  # the set the arm samples


def set_of(name: str, plan: PollingPlan) -> sets._Draw:
    for suffix, draw in ((BIMODAL, plan.bimodal), (SHORT, plan.short), (MIXED, plan.mixed)):
        if suffix in name:
            return draw
    return plan.twenty


def _measured(tasks: Sequence[Task], count: int, seed: int) -> tuple[Task, ...]:
    """The whole set, or a sample of ``count`` in a seeded random order of arrival."""
    if not count or count >= len(tasks):
        return tuple(tasks)
    chosen = sets.sample(tasks, count)
    random.Random(seed).shuffle(chosen)
    return tuple(chosen)


def arms_for(plan: PollingPlan) -> dict[str, Arm]:
    """Every arm the plan names, with its measured tasks and its warm-up."""
    arms = {}
    for name, a in plan.arms.items():
        draw = set_of(name, plan)
        whole = tuple(draw.tasks())
        tasks = _measured(whole, a.count, draw.seed)
        interval = interval_of(name)
        if interval is not None:
            arms[name] = Arm(
                name,
                f"{interval:g}",
                tasks,
                a.arrivals,
                max_live=a.max_live,
                start_s=a.start_s,
                whole=whole,
            )
            continue
        if name == OURS_SHIFT:
            under = [t for t in whole if t.seconds <= SHIFT_UNDER_S]
            chosen = _measured(under, a.count, draw.seed)
            tasks = tuple(Task(t.endpoint, round(t.seconds * SHIFT_FACTOR, 3)) for t in chosen)
        cold = name in (OURS, OURS_SHORT)
        # in the order drawn: longest first would teach the warm-up's client a model of
        # long tasks first, whose sparse polls then blur the short ones' run times
        warm = () if cold else tuple(draw.warm_up(MIXED_WARM_UP if name == OURS_MIXED else WARM_UP))
        arms[name] = Arm(
            name,
            OURS,
            tasks,
            a.arrivals,
            warm=warm,
            warm_arrivals=plan.warm_arrivals,
            fresh_every_batch=cold,
            start_s=a.start_s,
            whole=whole,
        )
    return arms


# --------------------------------------------------------------------------- running


@dataclass(eq=False)  # compared by identity
class _Running:
    arm: Arm
    sim: common.ChildSimulator
    process: subprocess.Popen[str]
    output: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    ready: threading.Event = field(default_factory=threading.Event)
    probes: list[float] = field(default_factory=list)
    meter: common.CpuMeter | None = None
    cpu_sim: float | None = None  # the simulator's CPU share from start to the worker's exit


def _read(stream: Any, into: list[str], ready: threading.Event | None = None) -> None:
    """Drain a worker's pipe (a full pipe would block it), noting when it is ready."""
    for line in stream:
        if ready is not None and line.strip() == READY:
            ready.set()
        else:
            into.append(line)
            del into[:-200]  # the last lines are what tells


def _spawn(arm: Arm, sim: common.ChildSimulator) -> _Running:
    """Start an arm's worker; it imports what it needs, says it is ready, and waits."""
    process = subprocess.Popen(
        [common.PYTHON, "-m", "benchmarks.pollers", "--worker", arm.worker, "--base", sim.base_url],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=common.child_env(),
        cwd=common.REPO,
    )
    running = _Running(arm, sim, process)
    for stream, into, ready in (
        (process.stdout, running.output, running.ready),
        (process.stderr, running.errors, None),
    ):
        threading.Thread(target=_read, args=(stream, into, ready), daemon=True).start()
    return running


def _start(running: _Running) -> None:
    """Send the arm its plan: its clock starts now."""
    arm = running.arm
    plan = {
        "tasks": [list(t) for t in arm.tasks],
        "arrivals": [arm.arrivals.batch, arm.arrivals.every],
        "warm": [list(t) for t in arm.warm],
        "warm_arrivals": [arm.warm_arrivals.batch, arm.warm_arrivals.every],
        "fresh_every_batch": arm.fresh_every_batch,
        "max_live": arm.max_live or None,
    }
    running.meter = common.CpuMeter({arm.name: running.sim.pid})
    assert running.process.stdin is not None
    running.process.stdin.write(json.dumps(plan))
    running.process.stdin.close()


def _last_end(tasks: Sequence[Task], arrivals: Arrivals) -> float:
    """When the last of ``tasks`` ends, if each runs from its arrival."""
    offsets = arrivals.offsets(len(tasks))
    return max((o + t.seconds for o, t in zip(offsets, tasks, strict=True)), default=0.0)


def expected_duration_s(arm: Arm) -> float:
    """When an arm should be done, seconds into the polling run: its start, its
    warm-up, then its tasks as they arrive (back to back in a fixed poller's window)."""
    window = sum(t.seconds for t in arm.tasks) / arm.max_live if arm.max_live else 0.0
    measured = max(_last_end(arm.tasks, arm.arrivals), window)
    return arm.start_s + _last_end(arm.warm, arm.warm_arrivals) + measured


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


def _figures(r: _Running, cpu_sim: float) -> dict[str, Any]:
    """One arm's figures, from its worker's output and its simulator's counts."""
    arm = r.arm
    lines = [line for line in r.output if line.strip()]
    if r.process.returncode != 0 or not lines:
        raise RuntimeError(
            f"the {arm.name} worker failed (exit {r.process.returncode}): "
            + "".join(r.errors)[-2000:]
        )
    worker = json.loads(lines[-1])
    tasks = worker["tasks"]
    completed = _completion_times(r.sim, [t["request_id"] for t in tasks])
    stats = r.sim.stats()
    detail = [
        [task.endpoint, task.seconds, round(t["seen_at"] - completed[t["request_id"]], 4)]
        for t, task in zip(tasks, _in_report_order(arm), strict=True)
        if t["seen_at"] is not None and t["request_id"] in completed
    ]
    notices = [d[2] for d in detail]
    intervals = [t["mean_interval_s"] for t in tasks if t.get("mean_interval_s")]
    n = len(tasks)
    # The warm-up's requests went to the same simulator: take them off.
    status = stats["status"] - worker["warm_status_requests"]
    result = stats["result"] - worker["warm_result_requests"]
    if arm.worker == OURS:
        paper = on_paper.ours(
            arm.tasks,
            arm.arrivals,
            warm=arm.warm,
            warm_arrivals=arm.warm_arrivals,
            fresh_every_batch=arm.fresh_every_batch,
        )
        paper_requests, paper_p95 = paper["poll_requests_per_task"], paper["notice_p95_s"]
    else:
        paper_requests = on_paper.fixed_per_task(arm.tasks, float(arm.worker))
        paper_p95 = None
    return {
        "tasks": n,
        "warm_up_tasks": len(arm.warm),
        "set_tasks": len(arm.whole),
        "start_s": arm.start_s,
        # every poller fetches each result once; every other request is a poll
        "poll_requests_per_task": round((status + result - n) / n, 3),
        "client_poll_requests_per_task": round(
            (worker["status_requests"] + worker["result_requests"] - n) / n, 3
        ),
        "model_poll_requests_per_task": round(paper_requests, 3),
        "model_notice_p95_s": paper_p95,
        "status_requests_per_task": round(status / n, 3),
        "client_status_requests_per_task": round(worker["status_requests"] / n, 3),
        "result_requests_per_task": round(result / n, 3),
        "notice_s": _summary(notices),
        "notices_measured": len(notices),
        "detail": detail,
        "mean_achieved_interval_s": round(sum(intervals) / len(intervals), 4)
        if intervals
        else None,
        "sim_probe_ms": {k: round(v * 1000, 2) for k, v in _summary(r.probes).items()},
        "cpu_share_sim": cpu_sim,
        "cpu_share_client": round(worker["cpu_share"], 3),
        "max_live_tasks": arm.max_live or n,
        "arrivals": [arm.arrivals.batch, arm.arrivals.every],
        "clients": worker.get("clients", 1),
        "model_shifts": worker.get("model_shifts"),
        **{k: worker.get(k) for k in ("engine_lag_p95_ms", "engine_lag_max_ms", "plans", "plan_s")},
    }


def _in_report_order(arm: Arm) -> list[Task]:
    """The arm's tasks in the order its worker reports them (a fixed poller submits the
    longest first)."""
    if arm.worker == OURS:
        return list(arm.tasks)
    return sorted(arm.tasks, key=lambda t: -t.seconds)


def measure_arms(arms: Sequence[Arm]) -> dict[str, dict[str, Any]]:
    """Run every arm (each from its ``start_s``, all at once after that); their figures.

    Every simulator and worker starts first, and the clock starts once all are ready."""
    results: dict[str, dict[str, Any]] = {}
    with common.simulators(len(arms)) as sims:
        runs = [_spawn(a, s) for a, s in zip(arms, sims, strict=True)]
        try:
            for r in runs:
                if not r.ready.wait(READY_WITHIN_S):
                    raise RuntimeError(
                        f"the {r.arm.name} worker was not ready: {''.join(r.errors)[-2000:]}"
                    )
            _run_until_done(runs)
        finally:
            for r in runs:
                common.stop_process(r.process)
        for r in runs:
            for _ in range(100):  # the reader thread reads the last line right after the exit
                if r.output:
                    break
                time.sleep(0.05)
            assert r.meter is not None
            cpu = r.cpu_sim if r.cpu_sim is not None else r.meter.shares()[r.arm.name]
            results[r.arm.name] = _figures(r, cpu)
    return results


def _run_until_done(runs: Sequence[_Running]) -> None:
    """Start each arm at its time, probe the simulators of the running ones, until all
    workers have exited (or the arms' longest expected duration has long passed)."""
    started = time.monotonic()
    deadline = started + max(expected_duration_s(r.arm) for r in runs) + 240.0
    waiting = list(runs)
    with httpx.Client(timeout=30.0) as http:
        while waiting or any(r.process.poll() is None for r in runs):
            if time.monotonic() > deadline:
                raise RuntimeError("polling workers did not finish in time")
            now = time.monotonic() - started
            for r in [r for r in waiting if r.arm.start_s <= now]:
                _start(r)
                waiting.remove(r)
            for r in runs:
                if r in waiting or r.cpu_sim is not None:
                    continue
                if r.process.poll() is not None:
                    assert r.meter is not None
                    r.cpu_sim = r.meter.shares()[r.arm.name]
                    continue
                begin = time.perf_counter()
                http.get(f"{r.sim.base_url}/_sim/stats").raise_for_status()
                r.probes.append(time.perf_counter() - begin)
            time.sleep(PROBE_PERIOD)
    for r in runs:
        r.process.wait()


# --------------------------------------------------------------------------- verdicts


def interval_of(name: str) -> float | None:
    for fixed, interval in FIXED_INTERVALS.items():
        if name == fixed or name.startswith(fixed + " "):
            return interval
    return None


def interval_drift(name: str, schedule: Mapping[str, Any]) -> float | None:
    """How far a fixed poller's achieved interval strayed from its nominal one (0.116 =
    11.6 % slower); None for our arms, or when no task was polled twice."""
    nominal = interval_of(name)
    achieved = schedule.get("mean_achieved_interval_s")
    if nominal is None or achieved is None:
        return None
    return float(achieved) / nominal - 1.0


def count_drift(schedule: Mapping[str, Any]) -> float | None:
    """How far a fixed poller's measured count strayed from its sample's on-paper one."""
    paper = schedule.get("model_poll_requests_per_task")
    measured = schedule.get("poll_requests_per_task")
    if not paper or measured is None:
        return None
    return float(measured) / float(paper) - 1.0


def interval_kept(name: str, schedule: Mapping[str, Any]) -> bool:
    """Whether a fixed poller kept its interval within :data:`INTERVAL_TOLERANCE` (and,
    when the count is known, its count within :data:`COUNT_TOLERANCE` of the paper)."""
    drift = interval_drift(name, schedule)
    counted = count_drift(schedule)
    return (
        drift is not None
        and abs(drift) <= INTERVAL_TOLERANCE
        and (counted is None or abs(counted) <= COUNT_TOLERANCE)
    )


def _ratio(
    schedules: Mapping[str, Any], arms: Mapping[str, Arm], fixed: str, ours: str
) -> float | None:
    """The fixed poller's on-paper requests over the tasks ``ours`` measured, divided
    by ours measured (None when either did not run)."""
    if fixed not in schedules or ours not in schedules:
        return None
    interval = interval_of(fixed)
    mine = schedules[ours]["poll_requests_per_task"]
    if interval is None or mine <= 0:
        return None
    return round(on_paper.fixed_per_task(arms[ours].tasks, interval) / mine, 3)


def within_target(detail: Sequence[Sequence[Any]], medians: Mapping[str, float]) -> float | None:
    """The share of tasks noticed within their kind's target (a tenth of its median
    run time, within [0.25, 1.5] s)."""
    if not detail:
        return None
    within = sum(1 for e, _s, notice in detail if notice <= sets.notice_target(medians[e]))
    return round(within / len(detail), 4)


def run_polling(plan: PollingPlan) -> dict[str, Any]:
    """Run every arm of ``plan``; each arm's figures, the sets, the ratios and p95s."""
    arms = arms_for(plan)
    schedules = measure_arms(list(arms.values()))

    def ratio(fixed: str, ours: str) -> float | None:
        return _ratio(schedules, arms, fixed, ours)

    def p95(name: str) -> float | None:
        return schedules[name]["notice_s"]["p95"] if name in schedules else None

    mixed = schedules.get(OURS_MIXED)
    cold_twenty = arms[OURS].tasks if OURS in arms else plan.twenty.tasks()
    cold_short = arms[OURS_SHORT].tasks if OURS_SHORT in arms else plan.short.tasks()
    alone = Arrivals(1, 0.0)  # each task through a client of its own: nothing learnt
    fixed_target = on_paper.ours(cold_twenty, alone, fresh_every_batch=True, notice_target=1.5)
    short_fixed = on_paper.ours(cold_short, alone, fresh_every_batch=True, notice_target=1.5)
    short_in_proportion = on_paper.ours(cold_short, alone, fresh_every_batch=True)
    return {
        "sets": {
            "twenty": {"shape": plan.twenty.describe(), "seed": plan.twenty.seed}
            | sets.figures(plan.twenty.tasks()),
            "bimodal": {"shape": plan.bimodal.describe(), "seed": plan.bimodal.seed}
            | sets.figures(plan.bimodal.tasks()),
            "short": {"shape": plan.short.describe(), "seed": plan.short.seed}
            | sets.figures(plan.short.tasks()),
            "mixed": {"shape": plan.mixed.describe(), "seed": plan.mixed.seed}
            | sets.figures(plan.mixed.tasks()),
        },
        "mixed_medians": plan.mixed.medians(),
        "warm_arrivals": [plan.warm_arrivals.batch, plan.warm_arrivals.every],
        "shift_factor": SHIFT_FACTOR,
        "shift_under_s": SHIFT_UNDER_S,
        "schedules": schedules,
        # on paper, the schedule with no history and one fixed target of 1.5 s (the last
        # round's) against the one in proportion (docs/decisions.md#notice-in-proportion)
        "cold_alternatives": {
            "twenty_requests_fixed_1_5": fixed_target["poll_requests_per_task"],
            "short_p95_fixed_1_5": short_fixed["notice_p95_s"],
            "short_requests_fixed_1_5": short_fixed["poll_requests_per_task"],
            "short_p95_in_proportion": short_in_proportion["notice_p95_s"],
        },
        "requests_ratio_vs_0_1s": ratio("fixed 0.1 s", OURS),
        "requests_ratio_vs_0_5s": ratio("fixed 0.5 s", OURS),
        "requests_ratio_vs_1s": ratio("fixed 1 s", OURS),
        "p95_notice_s": p95(OURS),
        "p95_notice_s_0_5s": p95("fixed 0.5 s"),
        "requests_ratio_vs_0_5s_warm": ratio("fixed 0.5 s", OURS_WARM),
        "requests_ratio_vs_0_1s_warm": ratio("fixed 0.1 s", OURS_WARM),
        "p95_notice_s_warm": p95(OURS_WARM),
        "requests_ratio_vs_0_5s_warm_bimodal": ratio("fixed 0.5 s" + BIMODAL, OURS_BIMODAL),
        "requests_ratio_vs_0_1s_warm_bimodal": ratio("fixed 0.1 s" + BIMODAL, OURS_BIMODAL),
        "p95_notice_s_warm_bimodal": p95(OURS_BIMODAL),
        "p95_notice_s_shift": p95(OURS_SHIFT),
        "p95_notice_s_short_warm": p95(OURS_SHORT_WARM),
        "requests_ratio_vs_0_1s_short_warm": ratio("fixed 0.1 s" + SHORT, OURS_SHORT_WARM),
        "requests_ratio_vs_0_5s_short_warm": ratio("fixed 0.5 s" + SHORT, OURS_SHORT_WARM),
        "p95_notice_s_short": p95(OURS_SHORT),
        "requests_ratio_vs_0_1s_short": ratio("fixed 0.1 s" + SHORT, OURS_SHORT),
        "requests_ratio_vs_0_1s_mixed_warm": ratio("fixed 0.1 s" + MIXED, OURS_MIXED),
        "requests_ratio_vs_0_5s_mixed_warm": ratio("fixed 0.5 s" + MIXED, OURS_MIXED),
        "mixed_share_within_target": None
        if mixed is None
        else within_target(mixed["detail"], plan.mixed.medians()),
    }
