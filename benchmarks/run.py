"""Run every benchmark against the simulator on loopback; write RESULTS.md; print JSON.

    python benchmarks/run.py            # full run, about 35 minutes on 2 cores
    python benchmarks/run.py --quick    # smaller everything, about 3 minutes

The last line printed is one JSON object with the headline figures (keys in
:data:`JSON_KEYS`). A full run writes ``benchmarks/RESULTS.md``; ``--quick``
writes ``benchmarks/RESULTS-quick.md`` so a quick check never overwrites the
figures of a full run (``--output`` chooses another file). Figures are figures:
a missed goal is reported with its reason, it never fails the command.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import _common as common
from benchmarks import kernel, ledger_lock, notebook_weight, polling, scale, simulator, startup
from benchmarks.figures import JSON_KEYS, headline
from benchmarks.goals import GOALS
from benchmarks.plans import FULL, QUICK, Plan
from benchmarks.report import report

__all__ = ["FULL", "GOALS", "JSON_KEYS", "QUICK", "Plan", "headline", "main", "measure", "report"]


def measure(plan: Plan, log: Callable[[str], None]) -> dict[str, Any]:
    """Run every measurement (quiet ones first); their results and wall times."""
    steps: list[tuple[str, Callable[[], dict[str, Any]]]] = [
        ("startup", lambda: startup.run_startup(plan.import_runs, plan.form_runs)),
        ("simulator", lambda: simulator.run_simulator(plan.sim_requests)),
        ("kernel", lambda: kernel.run_kernel(plan.kernel_jobs, plan.kernel_samples)),
        (
            "kernel_many",
            lambda: kernel.run_kernel(plan.kernel_jobs_many, plan.kernel_samples),
        ),
        (
            "notebook_weight",
            lambda: notebook_weight.run_notebook_weight(plan.videos, plan.nb_variants),
        ),
        (
            "polling",
            lambda: polling.run_polling(
                plan.task_set, plan.polling_groups, plan.polling_max_live, plan.bimodal_set
            ),
        ),
        ("scale", lambda: scale.run_scale(plan.scale_jobs)),
    ]
    if plan.ledger_lock_s > 0:
        locked = plan.ledger_lock_s
        steps.insert(2, ("ledger_lock", lambda: ledger_lock.run_ledger_lock(30, locked)))
    results: dict[str, Any] = {"seconds": {}}
    for name, step in steps:
        log(f"benchmarks: {name} ...")
        started = time.monotonic()
        results[name] = step()
        results["seconds"][name] = round(time.monotonic() - started, 1)
        log(f"benchmarks: {name} done in {results['seconds'][name]:.0f} s")
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python benchmarks/run.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="a small run, a few minutes")
    parser.add_argument("--output", type=Path, help="where to write the report")
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else FULL
    here = Path(__file__).resolve().parent
    output = args.output or here / ("RESULTS-quick.md" if args.quick else "RESULTS.md")
    command = "python benchmarks/run.py" + (" --quick" if args.quick else "")
    if args.output:
        command += f" --output {shlex.quote(str(args.output))}"
    machine = common.machine()

    def log(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    started = time.monotonic()
    results = measure(plan, log)
    results["seconds"]["total"] = round(time.monotonic() - started, 1)
    output.write_text(report(results, command, args.quick, machine))
    log(f"benchmarks: wrote {output} ({results['seconds']['total']:.0f} s in all)")
    print(json.dumps(headline(results)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
