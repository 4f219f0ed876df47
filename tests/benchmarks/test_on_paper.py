"""The on-paper counts the measured ones are compared with; no poller runs here."""

from __future__ import annotations

import pytest

from benchmarks import on_paper


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


def test_the_cap_alternatives_ratio_uses_the_same_fixed_count() -> None:
    durations = [3.0, 7.2, 19.9]
    fixed = sum(on_paper.fixed_polls(d, 0.5) for d in durations) / len(durations)
    for cap, row in on_paper.cap_alternatives(durations).items():
        ours = sum(on_paper.requests_with_cap(d, float(cap)) for d in durations) / len(durations)
        assert row["ratio_vs_0_5s"] == pytest.approx(fixed / ours, abs=0.01)
        assert row["p95_notice_s"] == pytest.approx(0.95 * float(cap), abs=0.01)
    # a longer first-minute cap makes fewer requests
    per_task = [row["requests_per_task"] for row in on_paper.cap_alternatives(durations).values()]
    assert per_task == sorted(per_task, reverse=True) and per_task[0] > per_task[-1]
