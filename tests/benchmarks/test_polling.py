"""The task sets, the arms a plan makes of them, and how a fixed poller's interval and
count are judged; no poller runs here."""

from __future__ import annotations

import pytest

from benchmarks import polling, sets
from benchmarks.polling import ArmPlan, PollingPlan
from benchmarks.sets import Arrivals


@pytest.mark.parametrize(
    "draw",
    [sets.TaskSet(count=40, seed=7), sets.BimodalTaskSet(count=40, seed=7), sets.MixedTaskSet()],
    ids=type,
)
def test_the_warm_up_is_the_same_distribution_with_the_next_seed(
    draw: sets.TaskSet | sets.BimodalTaskSet | sets.MixedTaskSet,
) -> None:
    warm = draw.warm_up()
    assert len(warm) == sets.WARM_UP
    assert warm != draw.tasks()[: sets.WARM_UP]
    again = type(draw)(**{**vars(draw), "count": sets.WARM_UP, "seed": draw.seed + 1})
    assert warm == again.tasks()


def test_the_mixed_set_interleaves_its_two_kinds_on_two_endpoints() -> None:
    tasks = sets.MixedTaskSet(count=200).tasks()
    images = [t for t in tasks if t.endpoint == sets.ENDPOINT]
    videos = [t for t in tasks if t.endpoint == sets.VIDEO_ENDPOINT]
    assert (len(images), len(videos)) == (120, 80)
    assert max(t.seconds for t in images) < min(t.seconds for t in videos)
    first_half = tasks[:100]
    assert 40 <= sum(t.endpoint == sets.VIDEO_ENDPOINT for t in first_half) <= 60  # interleaved


def test_a_sample_spans_the_run_times_of_its_set() -> None:
    tasks = sets.TaskSet(count=300).tasks()
    chosen = sets.sample(tasks, 20)
    seconds = sorted(t.seconds for t in tasks)
    assert len(chosen) == 20
    assert (chosen[0].seconds, chosen[-1].seconds) == (seconds[0], seconds[-1])
    assert sets.sample(tasks, 0) == tasks and sets.sample(tasks, 500) == tasks


def test_arrivals_spread_batches_over_time() -> None:
    assert Arrivals(2, 3.0).offsets(5) == [0.0, 0.0, 3.0, 3.0, 6.0]
    assert Arrivals(2, 3.0).span(5) == 6.0 and Arrivals().offsets(3) == [0.0] * 3
    assert [Arrivals(2, 3.0).batch_of(i) for i in range(5)] == [0, 0, 1, 1, 2]


def test_arms_take_their_set_from_their_name_and_cold_arms_learn_nothing() -> None:
    plan = PollingPlan(
        arms={
            polling.OURS_SHORT: ArmPlan(count=30, arrivals=Arrivals(10, 2.0)),
            polling.OURS_MIXED: ArmPlan(),
            "fixed 0.1 s" + polling.SHORT: ArmPlan(count=15, max_live=5),
        }
    )
    arms = polling.arms_for(plan)
    short = arms[polling.OURS_SHORT]
    assert short.fresh_every_batch and not short.warm and len(short.tasks) == 30
    assert set(short.tasks) <= set(plan.short.tasks())
    mixed = arms[polling.OURS_MIXED]
    assert len(mixed.warm) == polling.MIXED_WARM_UP and not mixed.fresh_every_batch
    assert list(mixed.warm) == plan.mixed.warm_up(polling.MIXED_WARM_UP)
    fixed = arms["fixed 0.1 s" + polling.SHORT]
    assert (fixed.worker, fixed.max_live, len(fixed.tasks)) == ("0.1", 5, 15)


@pytest.mark.parametrize(
    ("name", "achieved", "drift", "kept"),
    [
        ("fixed 0.5 s", 0.558, 0.116, False),
        ("fixed 0.5 s", 0.506, 0.012, True),
        ("fixed 0.1 s bimodal", 0.107, 0.07, False),
        ("fixed 0.1 s short", 0.1015, 0.015, True),
        ("fixed 1 s", 0.985, -0.015, True),
    ],
)
def test_the_interval_drift_is_measured_against_the_pollers_own_interval(
    name: str, achieved: float, drift: float, kept: bool
) -> None:
    schedule = {"mean_achieved_interval_s": achieved}
    assert polling.interval_drift(name, schedule) == pytest.approx(drift)
    assert polling.interval_kept(name, schedule) is kept


def test_a_sample_whose_count_left_the_paper_is_not_kept() -> None:
    schedule = {
        "mean_achieved_interval_s": 0.1,
        "model_poll_requests_per_task": 40.0,
        "poll_requests_per_task": 40.3,
    }
    assert polling.interval_kept("fixed 0.1 s mixed", schedule)
    schedule["poll_requests_per_task"] = 39.0
    assert polling.count_drift(schedule) == pytest.approx(-0.025)
    assert not polling.interval_kept("fixed 0.1 s mixed", schedule)


def test_our_arms_and_unmeasured_pollers_have_no_drift() -> None:
    assert polling.interval_drift(polling.OURS, {"mean_achieved_interval_s": 1.0}) is None
    assert polling.interval_drift("fixed 0.5 s", {"mean_achieved_interval_s": None}) is None
    assert not polling.interval_kept("fixed 0.5 s", {"mean_achieved_interval_s": None})


def test_the_share_within_target_reads_each_kinds_median() -> None:
    medians = {sets.ENDPOINT: 3.0, sets.VIDEO_ENDPOINT: 60.0}
    detail = [
        [sets.ENDPOINT, 2.0, 0.29],  # within 0.3 s: its kind's target, not its own 0.25 s
        [sets.ENDPOINT, 4.0, 0.31],
        [sets.VIDEO_ENDPOINT, 50.0, 1.4],
        [sets.VIDEO_ENDPOINT, 70.0, 1.6],
    ]
    assert polling.within_target(detail, medians) == 0.5
    assert polling.within_target([], medians) is None
