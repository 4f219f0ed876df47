"""The polling schedule with no history (in proportion to the task, or to a fixed
target), and the client-wide status budget (issue 14) on a fake clock: no wall-clock
anywhere."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from genwidgets.jobs import polling
from genwidgets.jobs.polling import (
    PollPolicy,
    PollState,
    base_interval,
    next_interval,
    notice_in_proportion,
    requests_for,
)


def polls_until(seconds: float, target: float | None = None) -> list[float]:
    """The ages at which a task with no history is polled, up to the first past ``seconds``."""
    ages, t = [], 0.0
    while t < seconds:
        t += base_interval(PollState(running_for=t, early_cap=target))
        ages.append(t)
    return ages


@pytest.mark.parametrize("seconds", [0.4, 1.0, 2.0, 3.0, 7.5, 14.0, 20.0, 45.0])
def test_a_task_is_noticed_within_its_own_target_with_no_history(seconds: float) -> None:
    """In proportion: whenever a task ends, the next poll comes within a tenth of its
    run time, never sooner than a quarter second, never later than a second and a half."""
    ages = polls_until(seconds)
    previous = max((a for a in ages if a < seconds), default=0.0)
    late = ages[-1] - seconds
    assert 0 <= late <= notice_in_proportion(seconds) + 1e-9
    assert ages[-1] - previous <= notice_in_proportion(seconds) + 1e-9


def test_the_target_in_proportion_is_clamped() -> None:
    assert notice_in_proportion(1.0) == pytest.approx(0.25)
    assert notice_in_proportion(3.0) == pytest.approx(0.3)
    assert notice_in_proportion(8.0) == pytest.approx(0.8)
    assert notice_in_proportion(300.0) == pytest.approx(1.5)
    tighter = PollPolicy(notice_share=0.05, notice_floor=0.1, notice_ceiling=1.0)
    assert notice_in_proportion(4.0, tighter) == pytest.approx(0.2)
    assert notice_in_proportion(60.0, tighter) == pytest.approx(1.0)


def test_gaps_grow_with_age_then_slow_down_after_the_first_minute() -> None:
    gaps = [base_interval(PollState(running_for=a)) for a in (0, 2, 5, 10, 30, 59)]
    assert gaps == sorted(gaps) and gaps[0] == pytest.approx(0.25)
    assert gaps[-1] == pytest.approx(1.5)
    assert 1.5 < base_interval(PollState(running_for=180)) < 5.0
    assert base_interval(PollState(running_for=3600)) == pytest.approx(5.0)


def test_a_fixed_target_keeps_the_ramp_up_to_it() -> None:
    """``Client(notice_target=1.5)``: 0.5 s at first, growing, capped at the target."""
    early = base_interval(PollState(running_for=0, early_cap=1.5))
    later = base_interval(PollState(running_for=1.5, early_cap=1.5))
    assert early == pytest.approx(0.5)
    assert early < later <= 1.5
    assert base_interval(PollState(running_for=30, early_cap=1.5)) == pytest.approx(1.5)
    assert base_interval(PollState(running_for=0.1, early_cap=0.3)) == pytest.approx(0.3)


def test_short_tasks_cost_more_than_with_a_fixed_target_and_far_less_than_a_fast_poller() -> None:
    # the figures quoted in docs/decisions.md#polling
    assert [requests_for(s) for s in (3, 10, 60, 300)] == [12, 25, 59, 138]
    assert [requests_for(s, target=1.5) for s in (3, 10, 60, 300)] == [4, 9, 42, 121]
    for seconds in (3, 10, 60, 300):  # fal's client polls every 0.1 s, from the start
        assert requests_for(seconds) * 2.5 < math.ceil(seconds / 0.1) + 1


def test_queue_position_sets_the_pace_and_a_falling_position_speeds_up() -> None:
    near = base_interval(PollState(running_for=0, queue_position=1))
    far = base_interval(PollState(running_for=0, queue_position=20))
    assert near < far <= polling.QUEUE_CAP
    fell = base_interval(PollState(running_for=0, queue_position=20, position_fell=True))
    assert fell <= 1.0


def test_failures_back_off() -> None:
    rng = random.Random(0)
    calm = next_interval(PollState(running_for=0), rng)
    stormy = next_interval(PollState(running_for=0, failures=5), rng)
    assert stormy > 8 * calm
    assert next_interval(PollState(running_for=0, failures=50), rng) <= 8.0


@pytest.mark.parametrize("target", [None, 1.5])
def test_jitter_only_shortens_so_the_target_holds(target: float | None) -> None:
    rng = random.Random(3)
    values = [next_interval(PollState(running_for=30, early_cap=target), rng) for _ in range(200)]
    assert min(values) >= 1.5 * 0.9 and max(values) <= 1.5
    assert max(values) - min(values) > 0.1  # not lockstep


def test_the_policy_refuses_a_target_range_that_is_not_one() -> None:
    with pytest.raises(ValueError, match="notice_floor"):
        PollPolicy(notice_floor=2.0, notice_ceiling=1.0)
    with pytest.raises(ValueError, match="notice_share"):
        PollPolicy(notice_share=0.0)
    with pytest.raises(TypeError, match="notice_ceiling"):
        PollPolicy(notice_ceiling="1.5")  # type: ignore[arg-type]


def test_a_policy_reshapes_the_schedule_in_proportion() -> None:
    eager = PollPolicy(notice_share=0.05, notice_floor=0.1, notice_ceiling=1.0)
    ages = [0.0, 1.0, 4.0, 30.0]
    mine = [base_interval(PollState(running_for=a), eager) for a in ages]
    assert mine == pytest.approx([0.1, 0.1, 0.2, 1.0])
    for a, b in itertools.pairwise(ages):
        assert base_interval(PollState(running_for=b), eager) >= base_interval(
            PollState(running_for=a), eager
        )
