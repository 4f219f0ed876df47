"""Every fixed poller runs alone in the plans that produce figures, so that its interval
(and thus the ratio against it) is not bent by what runs beside it."""

from __future__ import annotations

import pytest

from benchmarks import plans, polling


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
