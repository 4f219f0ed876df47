"""The client side of the polling benchmark: one child process per arm polls its own
child simulator, either with ``gw.Client`` (our schedule) or with a fixed-interval
poller, and prints what it saw as one JSON line.

Ours submits its tasks as they arrive (``sets.Arrivals``): through one client, seeded
from a warm-up's ledger when the arm is warm, or through a fresh client for each batch
(no history at all: a *cold* arm measures the schedule with nothing learnt). The fixed
pollers are a few lines of asyncio on ``httpx.AsyncClient`` (the stack genwidgets
uses): create, then GET the status URL every interval (aimed at first poll + k x
interval, so an answer's latency does not stretch it) until ``COMPLETED``, then GET the
result once, at most ``max_live`` tasks at once (a rolling window, longest first).

Run a worker by hand: ``python -m benchmarks.pollers --worker 0.5 --base URL`` with
``{"tasks": [[endpoint, seconds], ...]}`` on stdin.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from . import _common as common
from .sets import ALL_AT_ONCE, PAYLOADS, Arrivals, Task

OURS = "genwidgets"
#: our clients' status budget here (requests/s): high enough never to bind
STATUS_RATE = 1000.0
#: the longest a worker waits for one result past its task's run time
RESULT_SLACK_S = 120.0


def _submit_as_they_arrive(
    clients: Sequence[Any], tasks: Sequence[Task], arrivals: Arrivals, on_update: Any
) -> list[Any]:
    """Submit each task at its arrival offset, task i through ``clients[i]``."""
    started, jobs = time.monotonic(), []
    for task, offset, client in zip(tasks, arrivals.offsets(len(tasks)), clients, strict=True):
        wait = started + offset - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        job = client.submit(
            task.endpoint,
            PAYLOADS[task.endpoint],
            headers={"X-Sim-Duration": f"{task.seconds:.3f}"},
        )
        if on_update is not None:
            job.add_update_callback(on_update)
        jobs.append(job)
    for job, task in zip(jobs, tasks, strict=True):
        job.result(timeout=task.seconds + arrivals.span(len(tasks)) + RESULT_SLACK_S)
    return jobs


def _counts(clients: Sequence[Any]) -> dict[str, int]:
    """Requests by kind over ``clients`` (then closed), and how often their run-time
    models widened (a shift detected: their plans went broad)."""
    total = {"status": 0, "result": 0, "model_shifts": 0}
    for client in {id(c): c for c in clients}.values():
        counts = client.request_counts
        total["status"] += counts["status"]
        total["result"] += counts["result"]
        total["model_shifts"] += sum(m.shifts for m in client._schedule.models.values())
        client.close()
    return total


class _EngineWatch:
    """How late the engine's loop runs a 50 ms timer (its lag: what every poll waits on
    top of its schedule), and the time the schedule spends making poll plans there."""

    PERIOD = 0.05

    def __init__(self) -> None:
        self.lags: list[float] = []
        self.plans = 0
        self.plan_s = 0.0
        self._stop = False

    def start(self, engine: Any) -> None:
        from genwidgets.jobs import runtime

        plan_polls = runtime.plan_polls

        def timed(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return plan_polls(*args, **kwargs)
            finally:
                self.plans += 1
                self.plan_s += time.perf_counter() - began

        runtime.plan_polls = timed
        engine.submit(self._probe())

    async def _probe(self) -> None:
        while not self._stop:
            began = time.monotonic()
            await asyncio.sleep(self.PERIOD)
            self.lags.append(time.monotonic() - began - self.PERIOD)

    def figures(self) -> dict[str, Any]:
        self._stop = True
        lags = sorted(self.lags) or [0.0]
        return {
            "engine_lag_p95_ms": round(lags[int(0.95 * (len(lags) - 1))] * 1000, 1),
            "engine_lag_max_ms": round(lags[-1] * 1000, 1),
            "plans": self.plans,
            "plan_s": round(self.plan_s, 2),
        }


def ours_worker(
    base_url: str,
    tasks: Sequence[Task],
    arrivals: Arrivals,
    warm: Sequence[Task] = (),
    warm_arrivals: Arrivals = ALL_AT_ONCE,
    fresh_every_batch: bool = False,
) -> dict[str, Any]:
    """Poll with ``gw.Client``; note when each job saw COMPLETED (``time.time()``).

    With ``warm`` tasks, a client with a ledger in a temporary folder runs them first,
    and the measured client uses that ledger (its run-time models start from it)."""
    import genwidgets as gw
    from genwidgets.jobs.engine import get_engine
    from genwidgets.jobs.ledger import Ledger

    def client(ledger: Ledger | bool) -> Any:
        return gw.Client(
            base_url, common.DEMO_KEY, ledger=ledger, download=False, max_status_rate=STATUS_RATE
        )

    seen: dict[str, float] = {}

    def on_update(job: Any) -> None:
        status = job.last_status
        if status is not None and status.status == "COMPLETED" and job.request_id not in seen:
            seen[job.request_id] = time.time()

    with tempfile.TemporaryDirectory(prefix="gw-bench-ledger-") as home:
        ledger_path = Path(home) / "ledger.sqlite3"
        warm_counts = {"status": 0, "result": 0}
        watch = _EngineWatch()
        watch.start(get_engine())  # the one engine every client of the process shares
        if warm:
            with Ledger(ledger_path) as warm_ledger:
                warming = client(warm_ledger)
                _submit_as_they_arrive([warming] * len(warm), warm, warm_arrivals, None)
                warm_counts = _counts([warming])
        ledger = Ledger(ledger_path) if warm else None
        if fresh_every_batch:
            by_batch: dict[int, Any] = {}
            for i in range(len(tasks)):
                if arrivals.batch_of(i) not in by_batch:
                    by_batch[arrivals.batch_of(i)] = client(False)
            clients = [by_batch[arrivals.batch_of(i)] for i in range(len(tasks))]
        else:
            clients = [client(ledger if ledger is not None else False)] * len(tasks)
        jobs = _submit_as_they_arrive(clients, tasks, arrivals, on_update)
        counts = _counts(clients)
        if ledger is not None:
            ledger.close()
    return {
        "tasks": [
            {"request_id": job.request_id, "seen_at": seen.get(job.request_id), "polls": None}
            for job in jobs
        ],
        "status_requests": counts["status"],
        "result_requests": counts["result"],
        "warm_status_requests": warm_counts["status"],
        "warm_result_requests": warm_counts["result"],
        "model_shifts": counts["model_shifts"],
        **watch.figures(),
        "clients": len({id(c) for c in clients}),
    }


async def _fixed(
    base_url: str, tasks: Sequence[Task], interval: float, max_live: int | None
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
        window = asyncio.Semaphore(max_live or len(tasks))

        async def poll_and_release(handle: dict[str, Any]) -> dict[str, Any]:
            try:
                return await poll(handle)
            finally:
                window.release()

        pollers = []
        for task in sorted(tasks, key=lambda t: -t.seconds):
            await window.acquire()
            response = await http.post(
                f"{base_url}/v1/queue/{task.endpoint}",
                json=PAYLOADS[task.endpoint],
                headers={"X-Sim-Duration": f"{task.seconds:.3f}"},
            )
            response.raise_for_status()
            pollers.append(asyncio.create_task(poll_and_release(response.json())))
        done = await asyncio.gather(*pollers)
    return {
        "tasks": done,
        "status_requests": sum(t["polls"] for t in done),
        "result_requests": len(done),
        "warm_status_requests": 0,
        "warm_result_requests": 0,
    }


def fixed_worker(
    base_url: str, tasks: Sequence[Task], interval: float, max_live: int | None = None
) -> dict[str, Any]:
    """Poll every task at a fixed ``interval`` on one ``httpx.AsyncClient``."""
    return asyncio.run(_fixed(base_url, tasks, interval, max_live))


#: what a worker prints once its imports are done; then it reads its plan from stdin
READY = "ready"


def worker_main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.pollers")
    parser.add_argument("--worker", required=True, help=f"{OURS} or an interval in seconds")
    parser.add_argument("--base", required=True, help="the simulator's base URL")
    args = parser.parse_args(argv)
    # Import everything first, then say so: the orchestrator starts the clock (sends the
    # plan) only then, so that twenty interpreters starting up do not starve the arms.
    import genwidgets  # noqa: F401
    from genwidgets.jobs import ledger  # noqa: F401

    print(READY, flush=True)
    plan = json.loads(sys.stdin.read())
    tasks = [Task(str(e), float(s)) for e, s in plan["tasks"]]
    wall, cpu = time.monotonic(), time.process_time()
    if args.worker == OURS:
        out = ours_worker(
            args.base,
            tasks,
            Arrivals(*plan.get("arrivals", (0, 0.0))),
            [Task(str(e), float(s)) for e, s in plan.get("warm", ())],
            Arrivals(*plan.get("warm_arrivals", (0, 0.0))),
            bool(plan.get("fresh_every_batch")),
        )
    else:
        out = fixed_worker(args.base, tasks, float(args.worker), plan.get("max_live"))
    # The worker's own CPU share (1.0 = one core busy) while it polled.
    out["cpu_share"] = (time.process_time() - cpu) / max(time.monotonic() - wall, 1e-9)
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(worker_main(sys.argv[1:]))
