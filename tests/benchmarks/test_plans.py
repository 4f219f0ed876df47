"""Every fixed poller runs alone in the plans that produce figures, so that its interval
(and thus the ratio against it) is not bent by what runs beside it."""

from __future__ import annotations

import pytest

from benchmarks import grid_weight, notebook_weight, plans, polling


@pytest.mark.parametrize("plan", [plans.FULL, plans.QUICK], ids=["full", "quick"])
def test_each_fixed_poller_has_a_group_of_its_own(plan: plans.Plan) -> None:
    names = [name for group in plan.polling_groups for name in group]
    fixed = [n for n in names if n.removesuffix(polling.BIMODAL) in polling.FIXED_INTERVALS]
    assert len(fixed) == 2 * len(polling.FIXED_INTERVALS) - 1  # no 1 s poller on the bimodal set
    for group in plan.polling_groups:
        if any(name in fixed for name in group):
            assert len(group) == 1, group
    assert len(names) == len(set(names))
    assert set(names) <= set(polling.arms_for(plan.task_set, plan.bimodal_set))


@pytest.mark.parametrize("plan", [plans.FULL, plans.QUICK], ids=["full", "quick"])
def test_a_plan_names_only_arms_and_variants_that_exist(plan: plans.Plan) -> None:
    """The full plan takes paths --quick does not (the full image grid arm, the notebook
    without a ledger, windows for every fixed poller): a name that no longer exists
    would end a 40-minute run half way."""
    assert plan.grid_arms and set(plan.grid_arms) <= set(grid_weight.PATCHES)
    assert "thumbnails" in plan.grid_arms  # the arm the goal is about
    assert set(plan.nb_variants) <= set(notebook_weight.VARIANTS)
    assert "embedded" in plan.nb_variants  # the goal's why text compares with it
    names = {name for group in plan.polling_groups for name in group}
    assert set(plan.polling_max_live) <= names
    assert plan.prompt_runs >= 1 and plan.ledger_lock_s > 0
