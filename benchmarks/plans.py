"""How big each measurement is: the full plan, the quick one, and the shape they share."""

from __future__ import annotations

from dataclasses import dataclass

from . import grid_weight, polling


@dataclass(frozen=True)
class Plan:
    """How big each measurement is."""

    task_set: polling.TaskSet
    polling_groups: tuple[tuple[str, ...], ...]
    polling_max_live: dict[str, int]
    kernel_jobs: int
    kernel_samples: int
    bimodal_set: polling.BimodalTaskSet
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


#: Every fixed poller runs alone (one process, one simulator, nothing beside it): a ratio
#: is evidence only when the poller kept its interval within 2 %, and in a run where the
#: 0.5 s poller shared the machine with our arms its timer lagged (0.558 s between polls).
#: Our arms are light (a few % of a core each) and run together.
GROUPS: tuple[tuple[str, ...], ...] = (
    (polling.OURS, polling.OURS_WARM, polling.OURS_SHIFT),
    *((name,) for name in polling.FIXED_INTERVALS),
    (polling.OURS_BIMODAL,),
    ("fixed 0.5 s" + polling.BIMODAL,),
    ("fixed 0.1 s" + polling.BIMODAL,),
)

FULL = Plan(
    task_set=polling.TaskSet(count=300, median_s=20.0, sigma=0.7, cap_s=150.0),
    polling_groups=GROUPS,
    # Windows keep each baseline at 150-200 requests/s: an httpx client costs about
    # 2 ms of CPU per request here, and the machine has 2 shared cores.
    polling_max_live={
        "fixed 1 s": 150,
        "fixed 0.5 s": 100,
        "fixed 0.1 s": 20,
        "fixed 0.5 s bimodal": 100,
        "fixed 0.1 s bimodal": 20,
    },
    kernel_jobs=200,
    kernel_samples=300,
    bimodal_set=polling.BimodalTaskSet(),
    scale_jobs=10_000,
    kernel_jobs_many=1000,
    import_runs=9,
    form_runs=3,
    videos=10,
    nb_variants=("ours", "ours_posters", "ours_full", "embedded", "ours_no_ledger"),
    sim_requests=20000,
    prompt_runs=5,
    ledger_lock_s=30.0,
    grid_arms=grid_weight.ARMS,
)

QUICK = Plan(
    task_set=polling.TaskSet(count=30, median_s=3.0, sigma=0.7, cap_s=8.0),
    polling_groups=GROUPS,
    polling_max_live={"fixed 0.1 s": 20, "fixed 0.1 s bimodal": 20},
    kernel_jobs=200,
    kernel_samples=40,
    bimodal_set=polling.BimodalTaskSet(count=30, short_median_s=0.6, long_median_s=6.0),
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
)
