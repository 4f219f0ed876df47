"""Rerun the fault load and write its figures to ``docs/reliability.md``.

Usage (from the repository root)::

    .venv/bin/python tests/reliability/report.py [--tasks N] [--output PATH]

It runs the same scenario as ``tests/reliability/test_load.py`` (one client,
N tasks, 10 % 5xx on polls, bursts of 429 with Retry-After, 5 % runtime
failures) against a simulator on 127.0.0.1, and exits 1 if any promise broke
(the document then lists the problems).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shlex
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))

from reliability.harness import (  # noqa: E402  (the tests folder is not installed)
    CHEAP_ENDPOINT,
    FILE_ENDPOINT,
    FILE_EVERY,
    LoadFigures,
    run_fault_load,
)

ERROR_RATE, FAIL_RATE = 0.1, 0.05
#: Rate-limit bursts: requests/s allowed, every how many seconds, for how long.
BURST_RATE, BURST_PERIOD, BURST_LENGTH = 5.0, 5.0, 2.5


def _machine() -> str:
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    return (
        f"{platform.platform()}, {os.cpu_count()} CPU(s), Python {platform.python_version()}; "
        f"load average before the run {load} (a shared machine: wall time varies with it)"
    )


def _row(name: str, value: object, meaning: str) -> str:
    return f"| {name} | {value} | {meaning} |"


def render(figures: LoadFigures, *, command: str, machine: str, date: str) -> str:
    five = ", ".join(f"{n} × {code}" for code, n in sorted(figures.answers_5xx.items())) or "0"
    limited = ", ".join(f"{n} on {op}" for op, n in figures.answers_429.items() if n) or "0"
    verdict = (
        "**Every promise held.**"
        if not figures.problems
        else "**Broken promises:**\n\n" + "\n".join(f"- {p}" for p in figures.problems)
    )
    lines = [
        "# Reliability figures",
        "",
        "Produced by the command below; rerun it to check them. It drives one",
        "`genwidgets.Client` against the simulator on 127.0.0.1 with its fault switches",
        f"on: {ERROR_RATE:.0%} of status/result requests answered 502/503, the rate limit",
        f"switched on live for {BURST_LENGTH:g} s every {BURST_PERIOD:g} s "
        f"({BURST_RATE:g} requests/s, 429 with",
        f"Retry-After), {FAIL_RATE:.0%} of tasks ending with a runtime failure. Tasks are",
        f"`{CHEAP_ENDPOINT}` (JSON record), every {FILE_EVERY}th `{FILE_ENDPOINT}` (an MP3",
        "downloaded from its URL). Creates refused by the rate limit after the client's own",
        "retries raise `RateLimited`; the run resubmits them, as a user would.",
        "",
        f"- command: `{command}`",
        f"- date: {date}",
        f"- machine: {machine}",
        f"- wall time: {figures.wall_seconds:.1f} s",
        "",
        verdict,
        "",
        "| figure | value | what it counts |",
        "|---|---|---|",
        _row("tasks", figures.tasks, "tasks the user asked for"),
        _row(
            "completed ok",
            figures.completed_ok,
            "results with outputs, each saved under GENWIDGETS_HOME/outputs",
        ),
        _row(
            "failed with request_id",
            figures.failed_with_request_id,
            "results with an error (or a GatewayError) naming their task",
        ),
        _row("**lost**", f"**{figures.lost}**", "tasks with no outcome, or none naming them"),
        _row(
            "**duplicated creates**",
            f"**{figures.duplicated_creates}**",
            "tasks created on the gateway beyond one per task asked",
        ),
        _row(
            "created on the gateway",
            figures.created_on_gateway,
            "the simulator's own task store after the run",
        ),
        _row(
            "create requests",
            f"{figures.create_requests} (gateway counted {figures.gateway_create_requests})",
            "one accepted per task; the rest answered 429 and created nothing",
        ),
        _row("faults injected", figures.faults_injected, "the three kinds below"),
        _row("— 5xx on polls", five, "status/result answers 502/503 the client met"),
        _row("— 429 (rate limit)", limited, f"answers during {figures.rate_limit_bursts} bursts"),
        _row(
            "— runtime failures",
            figures.runtime_failures,
            "tasks the simulator ended with `Runtime execution failed`",
        ),
        _row(
            "rejected by rate limit, resubmitted",
            figures.rejected_resubmitted,
            f"ledger rows `not_created`: {figures.not_created_rows}",
        ),
        _row(
            "recovered",
            f"{figures.recovered} of {figures.met_a_fault}",
            "tasks that met a 5xx/429 while polling and still reached their outcome",
        ),
        _row(
            "ledger rows",
            figures.ledger_rows,
            "one per created task, each `finished` with the result's ok/error",
        ),
        _row("outputs on disk", figures.outputs_on_disk, "local copies whose size was checked"),
        _row(
            "requests sent",
            ", ".join(f"{op} {n}" for op, n in figures.requests.items()),
            "by operation, retries included",
        ),
        "",
        "## Also proved by `.venv/bin/pytest tests/reliability` (not rerun here)",
        "",
        "- `test_restart.py`: the simulator's HTTP front killed and restarted on the same",
        "  port keeping its tasks: every job finishes, no task is created twice; a fresh",
        "  simulator that forgot them: every job (and a new session's `resume()`) ends",
        "  with `RequestNotFound` within 12 s, never a hang.",
        "- `test_client_kill.py`: a client process SIGKILLed mid-poll; a new client with",
        "  the same GENWIDGETS_HOME resumes every task and gets every result and file. A",
        "  kill while the create request is in flight leaves an `outcome_unknown` row.",
        "- `test_malformed.py`: non-JSON, HTML error pages, JSON lists, missing fields, a",
        "  10 MB body, a body cut short and a stalled connection on create, status and",
        "  result give a `GatewayError` naming the endpoint and request_id (a broken create",
        "  is `OutcomeUnknown` and never retried); an unknown status keeps polling until",
        "  the wait's own `TaskTimeout`; an unknown content type reads as binary.",
        "- `test_fuzz.py`: hypothesis on `Handle`/`Status`/`Result.from_body` and",
        "  `error_from_response`.",
        "- `test_secrets.py`: a notebook that used a key, saved with widget state and",
        "  DEBUG logs: the key is nowhere in the .ipynb nor under GENWIDGETS_HOME.",
        "- `test_rate_limit.py`: a refused create is a `not_created` row and can be",
        "  resubmitted; a completed task whose result fetch is refused still finishes.",
        "- `test_async_ledger.py`: a task submitted through `AsyncClient` is in the ledger.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=1000, help="tasks to run (default 1000)")
    parser.add_argument(
        "--output", type=Path, default=REPO / "docs" / "reliability.md", help="where to write"
    )
    args = parser.parse_args(argv)
    if not 1 <= args.tasks <= 100_000:
        parser.error(f"--tasks must be from 1 to 100000, got {args.tasks}")
    command = ".venv/bin/python tests/reliability/report.py " + shlex.join(
        sys.argv[1:] if argv is None else argv
    )
    machine = _machine()
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    with tempfile.TemporaryDirectory(prefix="genwidgets-reliability-") as home:
        figures = run_fault_load(
            args.tasks,
            Path(home),
            error_rate=ERROR_RATE,
            fail_rate=FAIL_RATE,
            burst_rate=BURST_RATE,
            burst_period=BURST_PERIOD,
            burst_length=BURST_LENGTH,
        )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(render(figures, command=command.strip(), machine=machine, date=date))
    print(
        f"wrote {args.output}: {figures.tasks} tasks, {figures.lost} lost, "
        f"{figures.duplicated_creates} duplicated, {len(figures.problems)} problem(s)"
    )
    return 1 if figures.problems else 0


if __name__ == "__main__":
    sys.exit(main())
