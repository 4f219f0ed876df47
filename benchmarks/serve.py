"""The class gateway's costs and savings, on loopback (issue 41's goals):

- the latency it adds to a status request (p50 and p95 of the same request sent to the
  simulator directly and through the class server), goal at most 3 ms and 10 ms;
- status requests a second through one server process (the simulator's load client),
  goal at least 500;
- the demo cache: thirty students running ``notebooks/07_prompt_tuning.ipynb`` at once,
  each in a kernel of its own with its own key and ``GENWIDGETS_HOME`` (nbclient), through
  a group with the cache on; against one student's run through a group with it off
  (with no cache every create of every student goes upstream: thirty times that run's),
  goal at least 25 times fewer upstream creates.

    python benchmarks/serve.py [--status 2000] [--load 10000] [--students 30] [--baseline DIR]

The simulator and the class server each run in a child process (their own interpreter);
the client is this process. ``--baseline DIR`` (another checkout, e.g. ``git worktree add
DIR main``) runs a second server from that tree beside this one, over the same simulator
and database, and times both interleaved in the same run: its figures get a ``baseline_``
prefix, and ``*_ratio`` is this tree's over the baseline's. Figures are figures: the last
line is one JSON object, and a missed goal never fails the command.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
import nbformat

from benchmarks import _common as common
from benchmarks import notebook_weight
from benchmarks.load import measure_status
from genwidgets.protocol.records import queue_url
from genwidgets.serve.db import Database
from genwidgets.serve.keys import add_group, add_key

TEACHER = "bench-teacher-key-0123456789"
IMAGE = "genW2.5-t2i-preview"
#: the lesson every student runs
LESSON = common.REPO / "notebooks" / "07_prompt_tuning.ipynb"


def _serve(
    upstream: str, database: Path, source: Path = common.REPO
) -> tuple[subprocess.Popen[str], str]:
    """A ``genwidgets serve`` child running the code of the tree ``source``."""
    code = "import sys; from genwidgets.cli import main; sys.exit(main())"
    process = subprocess.Popen(
        [
            common.PYTHON,
            "-c",
            code,
            "serve",
            "--upstream",
            upstream,
            "--database",
            str(database),
            "--port",
            "0",
            "--rate",
            "0",
            "--max-running",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=common.child_env({"GENWIDGETS_UPSTREAM_KEY": TEACHER, "PYTHONPATH": str(source)}),
        cwd=source,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.startswith("genwidgets serve: "):
        process.kill()
        raise RuntimeError(f"the class server did not start: {line!r}")
    return process, line.split()[2]


def _timed_status(client: httpx.Client, url: str, count: int) -> list[float]:
    times = []
    for _ in range(count):
        start = time.perf_counter()
        client.get(url).raise_for_status()
        times.append((time.perf_counter() - start) * 1000)
    return times


def _long_task(base: str, key: str) -> str:
    handle = httpx.post(
        queue_url(base, "vidVq2-text2video"),
        json={"prompt": "long", "duration": 10},
        headers={"Authorization": f"Bearer {key}"},
        timeout=60,
    ).json()
    return str(handle["status_url"])


def added_latency(sim: str, servers: dict[str, str], student: str, count: int) -> dict[str, Any]:
    """Status p50 and p95 direct and through each server (``{label: base_url}``, label
    "" for this tree), the same request interleaved in rounds of 100."""
    urls = {"direct": _long_task(sim, TEACHER)}
    urls |= {label: _long_task(base, student) for label, base in servers.items()}
    keys = {label: (TEACHER if label == "direct" else student) for label in urls}
    clients = {
        label: httpx.Client(headers={"Authorization": f"Bearer {keys[label]}"}, timeout=30)
        for label in urls
    }
    times: dict[str, list[float]] = {label: [] for label in urls}
    try:
        for label, client in clients.items():
            _timed_status(client, urls[label], 50)  # warm each
        for _ in range(count // 100):  # interleaved, so each sees the same machine
            for label, client in clients.items():
                times[label] += _timed_status(client, urls[label], 100)
    finally:
        for client in clients.values():
            client.close()
    figures = {}
    for q in (50, 95):
        base = common.percentile(times["direct"], q)
        figures[f"direct_p{q}_ms"] = round(base, 3)
        for label in servers:
            total = common.percentile(times[label], q)
            figures[f"{label}proxied_p{q}_ms"] = round(total, 3)
            figures[f"{label}added_p{q}_ms"] = round(total - base, 3)
    return figures


def throughput(
    processes: dict[str, subprocess.Popen[str]],
    servers: dict[str, str],
    sim_pid: int,
    student: str,
    load: int,
) -> dict[str, Any]:
    """Status requests a second through each server (8 keep-alive connections), in
    alternating rounds, and each one's CPU per request, its own and the simulator's."""
    rounds = 4 if len(servers) > 1 else 1
    done = {label: [0, 0, 0.0, 0.0, 0.0] for label in servers}  # requests, ok, s, cpu, sim cpu
    for _ in range(rounds):
        for label, base in servers.items():
            cpu = common.cpu_seconds(processes[label].pid), common.cpu_seconds(sim_pid)
            result = measure_status(
                url=base, key=student, n=load // rounds, connections=8, max_seconds=60 / rounds
            )
            tally = done[label]
            tally[0] += result.requests
            tally[1] += result.ok
            tally[2] += result.seconds
            tally[3] += common.cpu_seconds(processes[label].pid) - cpu[0]
            tally[4] += common.cpu_seconds(sim_pid) - cpu[1]
    figures: dict[str, Any] = {}
    for label, (requests, ok, seconds, own_cpu, sim_cpu) in done.items():
        figures[f"{label}proxied_status_rps"] = round(requests / max(seconds, 1e-9), 1)
        # what a request costs the server's own core, whatever else the machine runs
        figures[f"{label}own_cpu_ms_per_request"] = round(1000 * own_cpu / max(1, requests), 3)
        figures[f"{label}upstream_cpu_ms_per_request"] = round(1000 * sim_cpu / max(1, requests), 3)
        figures[f"{label}proxied_status_ok"] = ok
    return figures


def _run_lesson(server: str, key: str, root: Path, kernels: Path) -> None:
    """The lesson executed as one student runs it: a fresh kernel, their own key and
    home, the class server as their gateway (``GENWIDGETS_BASE_URL``)."""
    env = {"GENWIDGETS_BASE_URL": server, "GENWIDGETS_API_KEY": key}
    notebook = nbformat.read(LESSON, as_version=4)
    notebook_weight.execute(notebook, root, timeout=600, extra_env=env, kernels=kernels)


def demo_cache(sim: str, server: str, db: Database, students: int, folder: Path) -> dict[str, Any]:
    def created() -> int:
        return int(httpx.get(f"{sim}/_sim/stats", timeout=30).json()["created"])

    kernels = common.install_kernel(folder / "kernel", common.child_env())
    add_group(db, "cache-off", {}, cache_seconds=0)
    add_group(db, "cache-on", {}, cache_seconds=3600)
    alone = add_key(db, "off00", {}, group="cache-off")
    before = created()
    _run_lesson(server, alone, folder / "lesson-off", kernels)
    per_run = created() - before
    keys = [add_key(db, f"on{i:02}", {}, group="cache-on") for i in range(students)]
    before = created()
    with ThreadPoolExecutor(max_workers=students) as pool:
        list(
            pool.map(
                lambda i: _run_lesson(server, keys[i], folder / f"lesson-on-{i:02}", kernels),
                range(students),
            )
        )
    on = created() - before
    return {
        "students": students,
        "lesson": LESSON.name,
        "upstream_creates_one_run": per_run,
        "upstream_creates_cache_off": students * per_run,
        "upstream_creates_cache_on": on,
        "cache_ratio": round(students * per_run / max(1, on), 1),
    }


def run_serve(
    status: int = 2000, load: int = 10000, students: int = 30, baseline: Path | None = None
) -> dict[str, Any]:
    sim = common.start_simulator(speed=50.0, flags=["--key", TEACHER])
    folder = Path(tempfile.mkdtemp(prefix="genwidgets-bench-serve-"))
    db = Database(folder / "class.db")
    db.migrate()
    student = add_key(db, "bench", {})
    processes: dict[str, subprocess.Popen[str]] = {}
    servers: dict[str, str] = {}
    try:
        processes[""], servers[""] = _serve(sim.base_url, folder / "class.db")
        if baseline is not None:
            found = _serve(sim.base_url, folder / "class.db", baseline)
            processes["baseline_"], servers["baseline_"] = found
        figures: dict[str, Any] = {"machine": common.machine()}
        figures |= added_latency(sim.base_url, servers, student, status)
        figures |= throughput(processes, servers, sim.pid, student, load)
        if baseline is not None:
            for name in ("proxied_status_rps", "own_cpu_ms_per_request", "added_p50_ms"):
                figures[f"{name}_ratio"] = round(
                    figures[name] / max(1e-9, figures[f"baseline_{name}"]), 2
                )
        figures |= demo_cache(sim.base_url, servers[""], db, students, folder)
        figures["goals"] = {
            "added_p50_ms <= 3": figures["added_p50_ms"] <= 3,
            "added_p95_ms <= 10": figures["added_p95_ms"] <= 10,
            "proxied_status_rps >= 500": figures["proxied_status_rps"] >= 500,
            "cache_ratio >= 25": figures["cache_ratio"] >= 25,
        }
        return figures
    finally:
        for process in processes.values():
            common.stop_process(process)
        common.stop_process(sim.process)
        db.close()


def section(figures: dict[str, Any]) -> list[str]:
    """The class gateway's part of RESULTS.md: its figures and goals (issue 41)."""
    shown = {k: v for k, v in figures.items() if k not in ("machine", "goals")}
    lines = ["## The class gateway (`genwidgets serve`, issue 41)", ""]
    lines += [f"- `{key}`: {value}" for key, value in shown.items()]
    lines += [
        f"- goal `{goal}`: {'met' if met else 'missed'}" for goal, met in figures["goals"].items()
    ]
    return [*lines, ""]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python benchmarks/serve.py")
    parser.add_argument("--status", type=int, default=2000, help="status requests timed each way")
    parser.add_argument("--load", type=int, default=10000, help="status requests of the load")
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument(
        "--baseline", type=Path, help="another checkout whose server is timed beside this one"
    )
    args = parser.parse_args(argv)
    print(json.dumps(run_serve(args.status, args.load, args.students, args.baseline)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
