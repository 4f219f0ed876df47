"""The adaptive polling schedule."""

from __future__ import annotations

import random

import pytest

from genwidgets.jobs import polling
from genwidgets.jobs.polling import PollState, base_interval, next_interval, requests_for


def test_fast_at_first_then_slower_then_capped() -> None:
    early = base_interval(PollState(running_for=0))
    later = base_interval(PollState(running_for=1.5))
    assert early == pytest.approx(0.5)
    assert early < later <= 1.5
    assert base_interval(PollState(running_for=30)) == pytest.approx(1.5)
    assert base_interval(PollState(running_for=59)) == pytest.approx(1.5)
    assert 1.5 < base_interval(PollState(running_for=180)) < 5.0
    assert base_interval(PollState(running_for=3600)) == pytest.approx(5.0)


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
    assert stormy > 4 * calm
    assert next_interval(PollState(running_for=0, failures=50), rng) <= 8.0


def test_jitter_only_shortens_so_the_cap_holds() -> None:
    rng = random.Random(3)
    values = [next_interval(PollState(running_for=30), rng) for _ in range(200)]
    assert min(values) >= 1.5 * 0.9 and max(values) <= 1.5
    assert max(values) - min(values) > 0.1  # not lockstep


def test_requests_for_typical_durations() -> None:
    # the figures quoted in docs/decisions.md#polling
    assert (requests_for(10), requests_for(60), requests_for(300)) == (9, 42, 121)
    # far fewer than fixed 0.1 s / 0.5 s pollers
    assert requests_for(60) * 10 < 60 / 0.1 and requests_for(300) * 3 < 300 / 0.5
