"""How big each measurement is: the full plan, the quick one, and the shape they share."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from . import grid_weight, polling, scale, teaching_weight
from .polling import ArmPlan, PollingPlan
from .sets import Arrivals, BimodalTaskSet, MixedTaskSet, TaskSet


@dataclass(frozen=True)
class Plan:
    """How big each measurement is."""

    polling: PollingPlan
    kernel_jobs: int
    kernel_samples: int
    scale_jobs: int
    kernel_jobs_many: int
    import_runs: int
    form_runs: int
    videos: int
    nb_variants: tuple[str, ...]
    sim_requests: int
    #: median of how many runs each long imgM prompt step is timed over
    prompt_runs: int
    #: seconds another process holds the ledger locked (benchmarks/ledger_lock.py);
    #: 0 skips that row (the test suite's tiny plan)
    ledger_lock_s: float = 0.0
    #: arms of the grid weight (benchmarks/grid_weight.py: JupyterLab in chromium);
    #: () skips it (the test suite's tiny plan drives no browser)
    grid_arms: tuple[str, ...] = ()
    #: rows of the batch step (benchmarks/batch.py: a create limit, a kill -9 half way,
    #: the re-run); 0 skips it. The 10,000-row figures of issue 30 come from
    #: ``python -m benchmarks.batch`` alone: at the limit this machine sustains they
    #: take about 25 minutes, more than the whole run's 15-minute goal
    batch_rows: int = 0
    #: single-image tasks whose COMPLETED -> drawn wait is measured in JupyterLab, with
    #: a 3 x 3 grid (benchmarks/drawn.py: chromium); 0 skips it (the tiny plan drives no
    #: browser)
    drawn_singles: int = 0
    #: the teaching notebooks weighed executed with widget state
    #: (benchmarks/teaching_weight.py); () skips it
    teaching: tuple[Path, ...] = ()
    #: status requests timed through the class gateway and without it
    #: (benchmarks/serve.py; its load is five times as many); 0 skips it
    serve_status: int = 0
    #: the scale step's longest task in seconds (its run times are drawn from 2 s up to
    #: it); the tiny plan shortens them, what it checks being counts, not rates
    scale_longest_s: float = scale.LONGEST_S


#: The full run's arms and when each starts. The long warm arms start first with their
#: warm-ups (cold tasks, polled often while young), and beside those warm-ups, whose
#: figures are not measured, the 20 s set's cold arm and the fixed pollers' samples: all
#: of these are done, or nearly, when the warm arms' measured tasks arrive (30 every 3 s
#: for the 20 s set, from about 160 s). The short set's arms, whose targets are the
#: tightest, start once those arrivals are over (a measured phase beside the fixed
#: pollers measured the benchmark's own load: docs/decisions.md#benchmark-on-paper).
#: So the machine is never asked for more requests than its two cores answer on time:
#: the fixed pollers' achieved intervals and the simulators' probe times show it.
#: Each fixed poller's window keeps it at 10-50 requests/s.
SHORT_S, LATER_S = 215.0, 0.0
FULL_ARMS: dict[str, ArmPlan] = {
    polling.OURS_WARM: ArmPlan(arrivals=Arrivals(30, 3.0)),
    polling.OURS_SHIFT: ArmPlan(count=100, arrivals=Arrivals(20, 5.0)),
    polling.OURS_BIMODAL: ArmPlan(arrivals=Arrivals(30, 3.0)),
    polling.OURS_MIXED: ArmPlan(arrivals=Arrivals(20, 4.0)),
    polling.OURS_SHORT: ArmPlan(arrivals=Arrivals(20, 4.0), start_s=SHORT_S),
    polling.OURS_SHORT_WARM: ArmPlan(arrivals=Arrivals(20, 4.0), start_s=SHORT_S),
    "fixed 0.1 s" + polling.SHORT: ArmPlan(count=100, max_live=5, start_s=SHORT_S),
    "fixed 0.5 s" + polling.SHORT: ArmPlan(max_live=25, start_s=SHORT_S),
    polling.OURS: ArmPlan(count=100, arrivals=Arrivals(20, 10.0), start_s=LATER_S),
    "fixed 0.1 s": ArmPlan(count=20, max_live=4, start_s=LATER_S),
    "fixed 0.5 s": ArmPlan(count=40, max_live=10, start_s=LATER_S),
    "fixed 1 s": ArmPlan(count=40, max_live=10, start_s=LATER_S),
    "fixed 0.1 s" + polling.BIMODAL: ArmPlan(count=20, max_live=4, start_s=LATER_S),
    "fixed 0.5 s" + polling.BIMODAL: ArmPlan(count=40, max_live=10, start_s=LATER_S),
    "fixed 0.1 s" + polling.MIXED: ArmPlan(count=30, max_live=5, start_s=LATER_S),
    "fixed 0.5 s" + polling.MIXED: ArmPlan(count=40, max_live=10, start_s=LATER_S),
}

FULL = Plan(
    polling=PollingPlan(arms=FULL_ARMS),
    kernel_jobs=200,
    kernel_samples=300,
    scale_jobs=10_000,
    kernel_jobs_many=1000,
    import_runs=9,
    form_runs=3,
    videos=10,
    nb_variants=("ours", "ours_posters", "ours_full", "embedded", "ours_no_ledger"),
    sim_requests=20000,
    prompt_runs=5,
    ledger_lock_s=20.0,
    grid_arms=grid_weight.ARMS,
    batch_rows=1000,
    drawn_singles=20,
    teaching=teaching_weight.TEACHING,
    serve_status=2000,
)

QUICK = Plan(
    polling=PollingPlan(
        twenty=TaskSet(count=30, median_s=3.0, sigma=0.7, cap_s=8.0),
        bimodal=BimodalTaskSet(count=30, short_median_s=0.6, long_median_s=6.0),
        short=TaskSet(count=60, median_s=3.0, sigma=0.5, floor_s=0.05, seed=20261130),
        mixed=MixedTaskSet(count=40, video_median_s=12.0),
        arms={
            name: ArmPlan(
                count=min(a.count, 20) if a.count else 0,
                arrivals=Arrivals(10, 2.0) if a.arrivals.batch else Arrivals(),
                max_live=min(a.max_live, 10),
                start_s=a.start_s / 5,
            )
            for name, a in FULL_ARMS.items()
        },
        warm_arrivals=Arrivals(25, 2.0),
    ),
    kernel_jobs=200,
    kernel_samples=40,
    scale_jobs=1000,
    kernel_jobs_many=1000,
    import_runs=3,
    form_runs=1,
    videos=2,
    nb_variants=("ours", "ours_posters", "ours_full", "embedded"),
    sim_requests=3000,
    prompt_runs=3,
    ledger_lock_s=10.0,
    grid_arms=grid_weight.ARMS,  # bytes, not times: as in the full run (about 35 s an arm)
    batch_rows=200,
    drawn_singles=10,
    teaching=teaching_weight.TEACHING,  # bytes, as in the full run
    serve_status=500,
)
