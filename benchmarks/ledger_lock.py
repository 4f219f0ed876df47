"""The engine while another process holds the ledger locked (issue 22 point 1).

One run, two arms on the same child simulator and the same task durations:
*unlocked* (a fresh ledger nobody else touches), then *locked* (a second process
holds ``BEGIN EXCLUSIVE`` on the ledger for ``lock_seconds``, from before the
client is made until after every task has ended). Per arm: status requests per
second the client made, notice latency (our seeing ``COMPLETED`` minus the
simulator's completion time), the time ``Client()`` and each ``submit()`` took,
and the rows on disk once the lock is gone. The ratios locked / unlocked are the
figures: near 1 means the lock delays only the ledger.

    python -m benchmarks.ledger_lock --lock-seconds 30 --tasks 30

Beside it, the merge of the notes such a lock leaves (``<ledger>.pending.jsonl``) at the
next open: pending files of 2,000 and 8,000 notes (held creates: an intent and its handle
each), merged side by side in turn; the time ratio is the figure, near 4 when the merge is
linear in the notes (16 when it looked the table up once per note).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import subprocess
import tempfile
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks import _common as common
from benchmarks.polling import _completion_times, _summary

ENDPOINT = "asset-get"
PAYLOAD = {"Id": "asset-demo"}

HOLDER = textwrap.dedent(
    """
    import sqlite3, sys, time
    from pathlib import Path
    con = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
    con.execute("BEGIN EXCLUSIVE")
    con.execute("INSERT INTO meta (key, value) VALUES ('held', 'yes')")
    Path(sys.argv[2]).touch()
    time.sleep(float(sys.argv[3]))
    con.execute("ROLLBACK")
    """
)


def _hold(path: Path, seconds: float) -> subprocess.Popen[str]:
    """A second process holding ``BEGIN EXCLUSIVE`` on ``path`` for ``seconds``."""
    held = path.with_name("held")
    process = subprocess.Popen(
        [common.PYTHON, "-c", HOLDER, str(path), str(held), f"{seconds:g}"],
        text=True,
        env=common.child_env(),
    )
    deadline = time.monotonic() + 30
    while not held.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("the lock holder did not take the lock")
        time.sleep(0.01)
    return process


def _arm(
    sim: common.ChildSimulator, durations: Sequence[float], folder: Path, lock_seconds: float
) -> dict[str, Any]:
    import genwidgets as gw
    from genwidgets.jobs.ledger import Ledger

    path = folder / "ledger.sqlite3"
    Ledger(path).close()
    holder = _hold(path, lock_seconds) if lock_seconds > 0 else None
    started = time.monotonic()
    ledger = Ledger(path)
    client = gw.Client(sim.base_url, common.DEMO_KEY, ledger=ledger, download=False)
    client_s = time.monotonic() - started
    seen: dict[str, float] = {}

    def on_update(job: Any) -> None:
        status = job.last_status
        if status is not None and status.status == "COMPLETED" and job.request_id not in seen:
            seen[job.request_id] = time.time()

    submits, jobs = [], []
    first = time.monotonic()
    for duration in durations:
        at = time.monotonic()
        job = client.submit(ENDPOINT, PAYLOAD, headers={"X-Sim-Duration": f"{duration:.3f}"})
        submits.append(time.monotonic() - at)
        job.add_update_callback(on_update)
        jobs.append(job)
    for job in jobs:
        job.result(timeout=max(durations) + 120.0)
        seen.setdefault(job.request_id, time.time())
    window = time.monotonic() - first
    locked_at_end = holder is not None and holder.poll() is None
    counts = client.request_counts
    polls = counts.get("status", 0) + counts.get("result", 0) - len(jobs)
    if holder is not None:
        holder.wait(lock_seconds + 60)
    flushed = ledger.flush(60)
    client.close()
    ledger.close()
    done = _completion_times(sim, [j.request_id for j in jobs])
    notices = [seen[i] - done[i] for i in done if i in seen]
    con = sqlite3.connect(path)
    finished = con.execute("SELECT count(*) FROM tasks WHERE state = 'finished'").fetchone()[0]
    con.close()
    return {
        "lock_s": lock_seconds,
        "lock_held_until_every_task_ended": locked_at_end,
        "client_init_s": round(client_s, 3),
        "submit_s": _summary(submits),
        "status_requests": counts.get("status", 0),
        "status_rps": round(counts.get("status", 0) / window, 2),
        # every poll: status requests and result-address polls (the last result GET of
        # each task is the fetch, not a poll), as in benchmarks/polling.py
        "poll_rps": round(polls / window, 2),
        "notice_s": _summary(notices),
        "rows_finished_on_disk": finished,
        "tasks": len(jobs),
        "flushed": flushed,
    }


def run_ledger_lock(tasks: int = 30, lock_seconds: float = 30.0) -> dict[str, Any]:
    """Both arms on one child simulator; the locked / unlocked ratios."""
    # tasks end between 2 s and 6 s before the lock does, spread evenly
    span = max(lock_seconds - 8.0, 1.0)
    durations = [2.0 + span * i / max(tasks - 1, 1) for i in range(tasks)]
    sim = common.start_simulator(workers=max(64, tasks), speed=1.0)
    try:
        with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
            unlocked = _arm(sim, durations, Path(a), 0.0)
            locked = _arm(sim, durations, Path(b), lock_seconds)
    finally:
        common.stop_process(sim.process)

    def ratio(key: str, sub: str | None = None) -> float:
        x = locked[key] if sub is None else locked[key][sub]
        y = unlocked[key] if sub is None else unlocked[key][sub]
        return round(x / y, 3) if y else float("nan")

    return {
        "unlocked": unlocked,
        "locked": locked,
        "status_rps_ratio": ratio("status_rps"),
        "poll_rps_ratio": ratio("poll_rps"),
        "notice_p95_ratio": ratio("notice_s", "p95"),
        "notice_p95_added_s": round(locked["notice_s"]["p95"] - unlocked["notice_s"]["p95"], 3),
        "submit_p95_s_locked": locked["submit_s"]["p95"],
        "pending_merge": measure_pending_merge(),
    }


def _held_creates(notes: int) -> list[dict[str, Any]]:
    """The notes of ``notes // 2`` held creates of one process: an intent, its handle."""
    made: list[dict[str, Any]] = []
    for n in range(1, notes // 2 + 1):
        at = 1_000_000.0 + n
        made.append(
            {"ticket": -n, "gateway": "http://gw", "endpoint": ENDPOINT, "payload": "{}"}
            | {"tag": None, "at": at, "key": None, "pid": 4242, "host": "held-host"}
        )
        made.append(
            {"row": -n, "request_id": f"held-{n}", "endpoint": ENDPOINT, "at": at + 1}
            | {"pid": 4242, "host": "held-host"}
        )
    return made


def _merge_s(notes: list[dict[str, Any]], folder: Path) -> float:
    """Seconds one merge of ``notes`` takes in a fresh ledger's write transaction."""
    from genwidgets.jobs.ledger import Ledger
    from genwidgets.jobs.ledger.file import merge_notes

    path = folder / f"merge-{len(notes)}-{time.monotonic_ns()}.sqlite3"
    with Ledger(path) as ledger, ledger.transaction() as conn:
        started = time.perf_counter()
        merge_notes(notes)(conn)
        return time.perf_counter() - started


def measure_pending_merge(small: int = 2000, large: int = 8000, rounds: int = 3) -> dict[str, Any]:
    """The next open's merge of a pending file of ``small`` and of ``large`` notes, in
    turn (``rounds`` each, the median kept): the ratio large / small, near large / small
    when the merge is linear."""
    times: dict[int, list[float]] = {small: [], large: []}
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(rounds):
            for size in (small, large):
                times[size].append(_merge_s(_held_creates(size), Path(folder)))
    median = {size: sorted(taken)[len(taken) // 2] for size, taken in times.items()}
    return {
        "small_notes": small,
        "large_notes": large,
        "small_s": round(median[small], 4),
        "large_s": round(median[large], 4),
        "ratio": round(median[large] / median[small], 2) if median[small] else float("nan"),
    }


def section(r: dict[str, Any]) -> list[str]:
    """The RESULTS.md rows: both arms of one run, and the ratios."""
    header = "| | Client() s | submit p95 s | status req/s | polls/s | notice p50 / p95 s | rows |"
    lines = [
        "## Ledger locked by another process",
        "",
        f"{r['locked']['tasks']} tasks; in the locked arm a second process holds `BEGIN "
        f"EXCLUSIVE` on the ledger for {r['locked']['lock_s']:g} s, from before `Client()` "
        "until after the tasks end (`benchmarks/ledger_lock.py`). Same run, same durations.",
        "",
        header,
        "|---|---|---|---|---|---|---|",
    ]
    for name in ("unlocked", "locked"):
        a = r[name]
        lines.append(
            f"| {name} | {a['client_init_s']:.3f} | {a['submit_s']['p95']:.4f} | "
            f"{a['status_rps']:.2f} | {a['poll_rps']:.2f} | {a['notice_s']['p50']:.2f} / "
            f"{a['notice_s']['p95']:.2f} | {a['rows_finished_on_disk']}/{a['tasks']} |"
        )
    lines += [
        "",
        f"Locked / unlocked: status requests/s **{r['status_rps_ratio']:.2f}**, polls/s "
        f"**{r['poll_rps_ratio']:.2f}**, p95 notice **{r['notice_p95_ratio']:.2f}** "
        f"({r['notice_p95_added_s']:+.2f} s). Rows: written once the lock ended, none lost.",
        "",
    ]
    merged = r.get("pending_merge")
    if merged is not None:
        lines += [
            f"The notes such a lock leaves, merged at the next open: {merged['small_notes']} "
            f"notes in {merged['small_s']:.3f} s, {merged['large_notes']} in "
            f"{merged['large_s']:.3f} s: **{merged['ratio']:.2f}x** the time for "
            f"{merged['large_notes'] / merged['small_notes']:g}x the notes (linear: near "
            f"{merged['large_notes'] / merged['small_notes']:g}).",
            "",
        ]
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ledger_lock")
    parser.add_argument("--tasks", type=int, default=30)
    parser.add_argument("--lock-seconds", type=float, default=30.0)
    parser.add_argument("--merge-only", action="store_true", help="only the pending merge")
    args = parser.parse_args(argv)
    if args.merge_only:
        print(json.dumps(measure_pending_merge(), indent=2))
        return 0
    print(json.dumps(run_ledger_lock(args.tasks, args.lock_seconds), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
