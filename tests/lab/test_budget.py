"""Budgets: caps per billed kind or money through prices, checked against what was
spent, each mistake a typed error."""

from __future__ import annotations

import math

import pytest

from genwidgets.errors import BudgetExceeded, PayloadError
from genwidgets.lab.budget import MONEY, Budget, make_budget

IMG = "genW2.5-t2i-preview"
VID = "vidA-2-0"


def test_a_plan_over_its_cap_counting_the_spent_is_budget_exceeded() -> None:
    budget = make_budget({"images": 10}, None, ["tasks", "images"], [IMG])
    rows = [(i, IMG, {"tasks": 1, "images": 4}) for i in range(2)]
    budget.check(rows, {}, "batch b")  # 8 of 10: fine
    with pytest.raises(BudgetExceeded) as info:
        budget.check(rows, {"images": 3}, "batch b")
    assert info.value.kind == "images" and info.value.cap == 10
    assert info.value.planned == 8 and info.value.spent == 3
    assert "bills 8 images; the budget allows 10 (3 already spent by batch b)" in str(info.value)


def test_money_through_prices() -> None:
    prices = {VID: {"per_second": 0.08}, IMG: {"per_image": 0.04, "per_task": 0.01}}
    budget = make_budget(1.0, prices, ["tasks", "images", "video_seconds"], [IMG, VID])
    assert budget.caps == {MONEY: 1.0}
    assert budget.cost(VID, {"tasks": 1, "video_seconds": 5.0}) == pytest.approx(0.4)
    assert budget.cost(IMG, {"tasks": 1, "images": 4}) == pytest.approx(0.17)
    rows = [(0, VID, {"tasks": 1, "video_seconds": 5.0}), (1, IMG, {"tasks": 1, "images": 4})]
    budget.check(rows, {}, "b")
    with pytest.raises(BudgetExceeded, match=r"0\.57 price units; the budget allows 1"):
        budget.check(rows, {MONEY: 0.5}, "b")


def test_a_capped_amount_the_plan_cannot_count_is_refused_naming_rows() -> None:
    budget = make_budget({"video_seconds": 100}, None, ["tasks", "video_seconds"], [VID])
    with pytest.raises(BudgetExceeded, match=r"cannot count for 1 row\(s\) \(3\)") as info:
        budget.check([(3, VID, {"tasks": 1, "video_seconds": None})], {}, "b")
    assert info.value.planned == math.inf


@pytest.mark.parametrize(
    ("budget", "prices", "expected"),
    [
        ({"image": 10}, None, "not a billed kind; one of tasks, images"),
        ({"speech_characters": 10}, None, "the plan bills no speech_characters"),
        ({"images": "ten"}, None, "is a number"),
        ({"images": -1}, None, "a cap is 0 or more"),
        ({MONEY: 5}, None, "money needs prices="),
        (5, None, "a budget is a dict of caps"),
        (5, {IMG: {"per_gram": 1}}, "not one of per_task"),
        (5, {IMG: {"per_image": -1}}, "a price 0 or more"),
        (5, {"other": {"per_task": 1}}, f"the plan sends to {IMG}, which prices= does not price"),
        (5, ["x"], "prices is a dict"),
    ],
)
def test_budget_and_price_mistakes_are_payload_errors(
    budget: object, prices: object, expected: str
) -> None:
    with pytest.raises(PayloadError, match=expected):
        make_budget(budget, prices, ["tasks", "images"], [IMG])


def test_no_budget_caps_nothing() -> None:
    assert not make_budget(None, None, ["tasks"], [IMG])
    Budget().check([(i, IMG, {"tasks": 1, "images": 1e300}) for i in range(9)], {}, "b")
    assert Budget().charges(IMG, {"tasks": 1}) == {"tasks": 1}  # counted, capped nowhere


HUGE = 10**400  # an integer no float holds: float(HUGE) is an OverflowError


@pytest.mark.parametrize(
    ("budget", "prices", "expected"),
    [
        (HUGE, {IMG: {"per_task": 1}}, "a budget in money is a number, not an integer past"),
        ({"images": HUGE}, None, "the cap on images is a number, not an integer past"),
        (5, {IMG: {"per_task": HUGE}}, "a price 0 or more, not an integer past"),
        (5, {IMG: {"per_task": math.inf}}, "a price 0 or more, not inf"),
        (5, {IMG: {"per_task": math.nan}}, "a price 0 or more, not nan"),
        (math.inf, {IMG: {"per_task": 1}}, "a budget in money is a number, not inf"),
        ({"images": math.nan}, None, "the cap on images is a number, not nan"),
    ],
    ids=["huge-budget", "huge-cap", "huge-price", "inf-price", "nan-price", "inf", "nan-cap"],
)
def test_numbers_past_a_float_are_payload_errors_not_overflow_errors(
    budget: object, prices: object, expected: str
) -> None:
    with pytest.raises(PayloadError, match=expected):
        make_budget(budget, prices, ["tasks", "images"], [IMG])


def test_a_cost_past_a_float_is_budget_exceeded() -> None:
    """1e308 a task, three tasks: the sum is inf, which no cap allows."""
    budget = make_budget(1e308, {IMG: {"per_task": 1e308}}, ["tasks", "images"], [IMG])
    rows = [(i, IMG, {"tasks": 1, "images": 1}) for i in range(3)]
    with pytest.raises(BudgetExceeded, match=r"bills over 1\.8e308 price units") as info:
        budget.check(rows, {}, "b")
    assert info.value.planned == math.inf


@pytest.mark.parametrize("caps", [{MONEY: 0}, {"tasks": 0}])
def test_a_budget_of_zero_allows_nothing_however_tiny_the_price(caps: dict[str, float]) -> None:
    budget = make_budget(caps, {IMG: {"per_task": 1e-12}}, ["tasks", "images"], [IMG])
    with pytest.raises(BudgetExceeded, match="the budget allows 0"):
        budget.check([(0, IMG, {"tasks": 1, "images": 1})], {}, "b")


def test_a_cap_still_takes_a_sum_a_float_rounds_over_it() -> None:
    """Ten prices of 0.1 sum to 1.0000000000000002: a cap of 1 allows them."""
    budget = make_budget(1.0, {IMG: {"per_task": 0.1}}, ["tasks", "images"], [IMG])
    budget.check([(i, IMG, {"tasks": 1, "images": 1}) for i in range(10)], {}, "b")
