"""Scale: one client holding ten thousand live jobs against a child simulator.

A child client process (``gw.Client``, default ``max_status_rate`` of 50/s, no
ledger and no downloads, so that what is measured is the jobs and the engine)
submits ``jobs`` tasks with seeded run times of 2 to 20 s (``longest_s``) to a child simulator
running 1024 at once (its most; the others queue, as on a busy gateway), then
waits for every result.

- ``kb_per_job``: resident memory growth of the client process from before the
  first submit to the moment all jobs are submitted (all of them live then: the
  budget lets at most 50 status requests a second through), divided by jobs.
- ``engine_cpu_ms_per_status``: CPU time of the engine thread (from
  ``/proc/self/task/<tid>/stat``) while only polls and result fetches ran
  (after the last submit), divided by the polls of that window.
- ``status_rate``: polls per second over that window (slots the client's status
  budget granted: status requests, and the result-address polls that stand in
  for them once a task runs), against the budget (it binds: ten thousand jobs
  want far more). ``request_rate``: status + result requests per second in the
  same window, as sent (a little above the polls: a result fetched after a
  status poll saw the end takes no slot).
- ``completed``: results received.

Run the client by hand: ``python -m benchmarks.scale --worker --base URL --jobs N``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import threading
import time
from typing import Any

from . import _common as common

ENDPOINT = "asset-get"
PAYLOAD = {"Id": "asset-demo"}
SHORTEST_S, LONGEST_S = 2.0, 20.0
#: the simulator runs at most this many tasks at once (its maximum); the rest queue
SIM_WORKERS = 1024
WORKER = ("-m", "benchmarks.scale", "--worker")


def _rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _thread_cpu_s(native_id: int) -> float:
    """utime + stime of one thread of this process, in seconds (Linux)."""
    with open(f"/proc/self/task/{native_id}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def worker(base_url: str, jobs: int, seed: int = 5, longest_s: float = LONGEST_S) -> dict[str, Any]:
    import genwidgets as gw

    rng = random.Random(seed)
    durations = [rng.uniform(SHORTEST_S, longest_s) for _ in range(jobs)]
    client = gw.Client(base_url, common.DEMO_KEY, ledger=False, download=False)
    first = client.submit(ENDPOINT, PAYLOAD, headers={"X-Sim-Duration": "0.1"})
    first.result(timeout=60)  # the engine, the connection pool and the imports exist now
    engine = next(t for t in threading.enumerate() if t.name == "genwidgets-engine")
    assert engine.native_id is not None
    rss_before = _rss_bytes()
    started = time.monotonic()
    live = [
        client.submit(ENDPOINT, PAYLOAD, headers={"X-Sim-Duration": f"{d:.3f}"}) for d in durations
    ]
    submit_s = time.monotonic() - started
    rss_live = _rss_bytes()
    live_at_end_of_submit = sum(not j.done() for j in live)
    budget = client._schedule.budget  # its grants are the polls (no public counter)
    assert budget is not None
    cpu0, counts0, t0 = _thread_cpu_s(engine.native_id), client.request_counts, time.monotonic()
    polls0 = budget.granted
    # The steady window: from the last submit until a tenth of the jobs are left.
    while sum(not j.done() for j in live) > jobs // 10:
        time.sleep(1.0)
    cpu1, counts1, t1 = _thread_cpu_s(engine.native_id), client.request_counts, time.monotonic()
    polls = budget.granted - polls0
    completed = 0
    for job in live:
        if job.result(timeout=600).ok:
            completed += 1
    sent = sum(counts1[op] - counts0[op] for op in ("status", "result"))
    total = client.request_counts
    client.close()
    return {
        "jobs": jobs,
        "completed": completed,
        "submit_s": round(submit_s, 1),
        "live_at_end_of_submit": live_at_end_of_submit,
        "rss_before_mb": round(rss_before / 2**20, 1),
        "rss_live_mb": round(rss_live / 2**20, 1),
        "kb_per_job": round((rss_live - rss_before) / 1024 / jobs, 2),
        "window_s": round(t1 - t0, 1),
        "status_rate": round(polls / (t1 - t0), 2) if t1 > t0 else None,
        "request_rate": round(sent / (t1 - t0), 2) if t1 > t0 else None,
        "engine_cpu_ms_per_status": round((cpu1 - cpu0) * 1000 / polls, 3) if polls else None,
        "engine_cpu_share": round((cpu1 - cpu0) / (t1 - t0), 3) if t1 > t0 else None,
        "status_requests_per_job": round(total["status"] / (jobs + 1), 2),
        "result_requests_per_job": round(total["result"] / (jobs + 1), 2),
        "total_s": round(time.monotonic() - started, 1),
    }


def run_scale(
    jobs: int = 10_000, budget: float = 50.0, longest_s: float = LONGEST_S
) -> dict[str, Any]:
    """The figures above, from a child client against a child simulator."""
    with common.simulators(1, workers=min(jobs, SIM_WORKERS)) as (sim,):
        process = subprocess.run(
            [
                common.PYTHON,
                *WORKER,
                *("--base", sim.base_url, "--jobs", str(jobs), "--longest", str(longest_s)),
            ],
            capture_output=True,
            text=True,
            env=common.child_env(),
            cwd=common.REPO,
            timeout=jobs / budget * 3 + 600,
        )
        if process.returncode != 0:
            raise RuntimeError(f"the scale worker failed: {process.stderr[-2000:]}")
        out: dict[str, Any] = json.loads(process.stdout.strip().splitlines()[-1])
        out["sim_status_requests"] = sim.stats()["status"]
    out["budget"] = budget
    return out


def _main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scale")
    parser.add_argument("--worker", action="store_true", required=True)
    parser.add_argument("--base", required=True)
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--longest", type=float, default=LONGEST_S)
    args = parser.parse_args(argv)
    print(json.dumps(worker(args.base, args.jobs, longest_s=args.longest)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
