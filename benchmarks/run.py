"""Run every benchmark against the simulator on loopback; write RESULTS.md; print JSON.

    python benchmarks/run.py            # full run, about 15 minutes on 2 cores
    python benchmarks/run.py --quick    # smaller everything, about 5 minutes

The last line printed is one JSON object with the headline figures (keys in
:data:`JSON_KEYS`). A full run writes ``benchmarks/RESULTS.md``; ``--quick``
writes ``benchmarks/RESULTS-quick.md`` so a quick check never overwrites the
figures of a full run (``--output`` chooses another file). Figures are figures:
a missed goal is reported with its reason, it never fails the command.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import _common as common
from benchmarks import (
    batch,
    drawn,
    grid_weight,
    kernel,
    ledger_lock,
    notebook_weight,
    parsing,
    plot,
    polling,
    prompt,
    scale,
    serve,
    simulator,
    startup,
    teaching_weight,
)
from benchmarks.figures import JSON_KEYS, headline
from benchmarks.goals import GOALS
from benchmarks.plans import FULL, QUICK, Plan
from benchmarks.report import report

__all__ = ["FULL", "GOALS", "JSON_KEYS", "QUICK", "Plan", "headline", "main", "measure", "report"]


#: steps that run at the same time as the step named: each measures bytes or a rate its
#: own simulator paces, which the other's CPU does not bend, and together they take the
#: time of the longer (docs/decisions.md#a-benchmark-a-developer-can-run)
ALONGSIDE = {
    "notebook_weight": "grid_weight",
    "teaching_weight": "grid_weight",
    "batch": "scale",
}


def measure(plan: Plan, log: Callable[[str], None]) -> dict[str, Any]:
    """Run every measurement the plan sizes (quiet ones first; those of
    :data:`ALONGSIDE` beside their partner); their results and wall times. A
    measurement the plan sizes at zero (the test suite's tiny plan) is left out."""
    steps: list[tuple[str, bool, Callable[[], dict[str, Any]]]] = [
        ("startup", True, lambda: startup.run_startup(plan.import_runs, plan.form_runs)),
        ("prompt", True, lambda: prompt.run_prompt(plan.prompt_runs)),
        ("simulator", True, lambda: simulator.run_simulator(plan.sim_requests)),
        ("parsing", True, lambda: parsing.run_parsing(runs=1)),
        (
            "ledger_lock",
            plan.ledger_lock_s > 0,
            lambda: ledger_lock.run_ledger_lock(30, plan.ledger_lock_s),
        ),
        ("kernel", True, lambda: kernel.run_kernel(plan.kernel_jobs, plan.kernel_samples)),
        (
            "kernel_many",
            True,
            lambda: kernel.run_kernel(plan.kernel_jobs_many, plan.kernel_samples),
        ),
        (
            "notebook_weight",
            True,
            lambda: notebook_weight.run_notebook_weight(plan.videos, plan.nb_variants),
        ),
        # bytes, not times: what else runs does not bend them
        (
            "teaching_weight",
            bool(plan.teaching),
            lambda: teaching_weight.run_teaching_weight(plan.teaching),
        ),
        ("grid_weight", bool(plan.grid_arms), lambda: grid_weight.run_grid_weight(plan.grid_arms)),
        # times: alone, after the byte counters
        ("drawn", plan.drawn_singles > 0, lambda: drawn.run_drawn(plan.drawn_singles)),
        (
            "polling",
            True,
            lambda: polling.run_polling(plan.polling),
        ),
        ("scale", True, lambda: scale.run_scale(plan.scale_jobs, longest_s=plan.scale_longest_s)),
        ("batch", plan.batch_rows > 0, lambda: batch.run_batch(plan.batch_rows)),
        (
            "serve",
            plan.serve_status > 0,
            lambda: serve.run_serve(plan.serve_status, 5 * plan.serve_status),
        ),
    ]
    enabled = {name: step for name, on, step in steps if on}
    results: dict[str, Any] = {"seconds": {}}

    def timed(name: str) -> None:
        log(f"benchmarks: {name} ...")
        started = time.monotonic()
        results[name] = enabled[name]()
        results["seconds"][name] = round(time.monotonic() - started, 1)
        log(f"benchmarks: {name} done in {results['seconds'][name]:.0f} s")

    begun = time.monotonic()
    for name in enabled:
        if ALONGSIDE.get(name) in enabled:
            continue  # it runs beside its partner
        partners = [o for o, partner in ALONGSIDE.items() if partner == name and o in enabled]
        beside = [threading.Thread(target=timed, args=(other,)) for other in partners]
        for thread in beside:
            thread.start()
        try:
            timed(name)
        finally:
            for thread in beside:
                thread.join()
        missing = [other for other in partners if other not in results]
        if missing:
            raise RuntimeError(f"the {', '.join(missing)} benchmark failed; its error is above")
    results["seconds"]["total"] = round(time.monotonic() - begun, 1)
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

    results = measure(plan, log)
    # The mixed set's plot: docs/img/ for the full run's report, beside any other report.
    picture = (
        here.parent / "docs/img/notice-mixed.png"
        if not (args.quick or args.output)
        else output.with_name(output.stem + "-notice-mixed.png")
    )
    drawn = plot.draw_notice_plot(results["polling"], picture)
    if drawn is not None:
        results["polling"]["plot"] = os.path.relpath(drawn, output.resolve().parent)
    output.write_text(report(results, command, args.quick, machine))
    log(f"benchmarks: wrote {output} ({results['seconds']['total']:.0f} s in all)")
    print(json.dumps(headline(results)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
