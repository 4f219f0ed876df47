"""The plans name arms that exist, keep each fixed poller within its CPU share, and fit
the full run into a quarter of an hour on paper; no benchmark runs here."""

from __future__ import annotations

import pytest

from benchmarks import grid_weight, notebook_weight, plans, polling, teaching_weight

#: requests/s a fixed poller may send at most (its window / its interval): an httpx
#: client costs 1-2 ms of CPU a request here, and the machine has two shared cores
MOST_PER_SECOND = 50


@pytest.mark.parametrize("plan", [plans.FULL, plans.QUICK], ids=["full", "quick"])
def test_a_plan_names_only_arms_and_variants_that_exist(plan: plans.Plan) -> None:
    """The full plan takes paths --quick does not (the full image grid arm, the notebook
    without a ledger): a name that no longer exists would end a long run half way."""
    assert plan.grid_arms and set(plan.grid_arms) <= set(grid_weight.PATCHES)
    assert "thumbnails" in plan.grid_arms  # the arm the goal is about
    assert set(plan.nb_variants) <= set(notebook_weight.VARIANTS)
    assert "embedded" in plan.nb_variants  # the goal's why text compares with it
    assert plan.prompt_runs >= 1 and plan.ledger_lock_s > 0
    # what a person waits for, and every lesson weighed (issue 40's goals)
    assert plan.drawn_singles >= 10
    assert plan.teaching == teaching_weight.TEACHING and len(plan.teaching) >= 10
    arms = polling.arms_for(plan.polling)
    assert set(arms) == set(plan.polling.arms)
    # every goal's arm runs, with every baseline it is judged against
    for name in (polling.OURS, polling.OURS_WARM, polling.OURS_SHORT_WARM, polling.OURS_MIXED):
        assert name in arms
    for suffix in ("", polling.BIMODAL, polling.SHORT, polling.MIXED):
        assert "fixed 0.1 s" + suffix in arms and "fixed 0.5 s" + suffix in arms


@pytest.mark.parametrize("plan", [plans.FULL, plans.QUICK], ids=["full", "quick"])
def test_every_fixed_poller_stays_within_its_cpu_share(plan: plans.Plan) -> None:
    for name, arm in polling.arms_for(plan.polling).items():
        if arm.worker == polling.OURS:
            assert arm.max_live == 0, name  # ours keeps every task live
            continue
        live = arm.max_live or len(arm.tasks)
        assert live / float(arm.worker) <= MOST_PER_SECOND, name


def test_the_full_polling_run_fits_in_six_minutes_on_paper() -> None:
    """The longest arm (start, warm-up, arrivals, longest task) bounds the polling step:
    with the rest of the run (about seven minutes) it keeps the whole under fifteen."""
    arms = polling.arms_for(plans.FULL.polling)
    longest = max(polling.expected_duration_s(arm) for arm in arms.values())
    assert longest <= 360.0


def test_the_shift_arm_doubles_tasks_of_the_twenty_second_set() -> None:
    arm = polling.arms_for(plans.FULL.polling)[polling.OURS_SHIFT]
    whole = {t.seconds for t in plans.FULL.polling.twenty.tasks()}
    assert len(arm.tasks) == plans.FULL_ARMS[polling.OURS_SHIFT].count
    for task in arm.tasks:
        assert round(task.seconds / polling.SHIFT_FACTOR, 3) in whole
        assert task.seconds <= polling.SHIFT_UNDER_S * polling.SHIFT_FACTOR
    assert arm.warm  # learnt before the gateway slowed down
