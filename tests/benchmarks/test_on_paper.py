"""The on-paper counts the measured ones are compared with; no poller runs here."""

from __future__ import annotations

import pytest

from benchmarks import on_paper, sets
from benchmarks.sets import Arrivals, Task, TaskSet


@pytest.mark.parametrize(
    ("seconds", "interval", "polls"),
    [
        (2.3, 0.5, 6),  # at 0, 0.5, 1, 1.5, 2 (running) and 2.5 (COMPLETED)
        (2.0, 0.5, 5),  # the poll just after 2.0 sees it done
        (0.2, 1.0, 2),  # one that sees it running, one that sees it done
        (24.55, 0.1, 247),
    ],
)
def test_a_fixed_poller_counts_the_poll_that_sees_completed(
    seconds: float, interval: float, polls: int
) -> None:
    assert on_paper.fixed_polls(seconds, interval) == polls
    tasks = [Task(sets.ENDPOINT, seconds), Task(sets.ENDPOINT, 2 * seconds)]
    both = polls + on_paper.fixed_polls(2 * seconds, interval)
    assert on_paper.fixed_per_task(tasks, interval) == pytest.approx(both / 2)


SHORT = TaskSet(count=60, median_s=3.0, sigma=0.5, floor_s=0.05, seed=11)


def test_with_no_history_every_task_is_noticed_within_its_own_target() -> None:
    out = on_paper.ours(SHORT.tasks(), Arrivals(1, 0.0), fresh_every_batch=True)
    for task, late in zip(SHORT.tasks(), out["notice_s"], strict=True):
        assert 0 <= late <= sets.notice_target(task.seconds) + 1e-6
    assert len(out["polls"]) == SHORT.count
    assert out["poll_requests_per_task"] == pytest.approx(sum(out["polls"]) / SHORT.count, 1e-3)


def test_a_warm_schedule_polls_less_than_a_cold_one_and_a_fixed_target_least() -> None:
    tasks = SHORT.tasks()
    cold = on_paper.ours(tasks, Arrivals(10, 2.0), fresh_every_batch=True)
    warm = on_paper.ours(tasks, Arrivals(10, 2.0), warm=SHORT.warm_up())
    fixed = on_paper.ours(tasks, Arrivals(10, 2.0), fresh_every_batch=True, notice_target=1.5)
    assert warm["poll_requests_per_task"] < cold["poll_requests_per_task"]
    assert fixed["poll_requests_per_task"] < warm["poll_requests_per_task"]
    # ... and notices late what the schedule in proportion notices at once
    assert fixed["notice_p95_s"] > 2 * cold["notice_p95_s"]
    assert warm["notice_p95_s"] <= 0.31  # the short key's target: a tenth of 3 s
