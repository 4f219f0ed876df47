"""The task sets share one warm-up, and a fixed poller's achieved interval is judged
against its own; no poller runs here."""

from __future__ import annotations

import pytest

from benchmarks import polling


@pytest.mark.parametrize(
    "task_set",
    [polling.TaskSet(count=40, seed=7), polling.BimodalTaskSet(count=40, seed=7)],
    ids=type,
)
def test_the_warm_up_is_the_same_distribution_with_the_next_seed(task_set: polling._Draw) -> None:
    warm = task_set.warm_up()
    assert len(warm) == polling.WARM_UP
    assert warm != task_set.durations()[: polling.WARM_UP]
    again = type(task_set)(**{**vars(task_set), "count": polling.WARM_UP, "seed": 8})
    assert warm == again.durations()


@pytest.mark.parametrize(
    ("name", "achieved", "drift", "kept"),
    [
        ("fixed 0.5 s", 0.558, 0.116, False),
        ("fixed 0.5 s", 0.506, 0.012, True),
        ("fixed 0.1 s bimodal", 0.107, 0.07, False),
        ("fixed 1 s", 0.985, -0.015, True),
    ],
)
def test_the_interval_drift_is_measured_against_the_pollers_own_interval(
    name: str, achieved: float, drift: float, kept: bool
) -> None:
    schedule = {"mean_achieved_interval_s": achieved}
    assert polling.interval_drift(name, schedule) == pytest.approx(drift)
    assert polling.interval_kept(name, schedule) is kept


def test_our_arms_and_unmeasured_pollers_have_no_drift() -> None:
    assert polling.interval_drift(polling.OURS, {"mean_achieved_interval_s": 1.0}) is None
    assert polling.interval_drift("fixed 0.5 s", {"mean_achieved_interval_s": None}) is None
    assert not polling.interval_kept("fixed 0.5 s", {"mean_achieved_interval_s": None})
