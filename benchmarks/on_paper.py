"""Our schedule on paper: its own code on a virtual clock, with no latency and a machine
that is never busy, for the "on paper" column and the other first-minute caps."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any

from . import _common as common


def fixed_polls(seconds: float, interval: float) -> int:
    """Status polls of a fixed poller on a task of ``seconds``: one at 0, one every
    ``interval`` while it runs, and the one that sees it ``COMPLETED``."""
    return math.ceil(seconds / interval) + 1


class _PaperClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def on_paper(
    warm: Sequence[float], durations: Sequence[float], endpoint: str, payload: dict[str, Any]
) -> dict[str, float]:
    """Our schedule's own code (``Schedule``/``Timing``) on a virtual clock: a warm-up
    batch, then the measured batch, every task polled exactly when the schedule says,
    answered at once, at the address the schedule picks (status, or result once seen
    running). Poll requests per task and notice latency of the measured batch: what
    the schedule does with zero latency and a machine that is never busy."""
    from genwidgets.jobs.polling import Schedule

    clock = _PaperClock()
    schedule = Schedule(clock=clock)
    rng = random.Random(0)  # the adaptive part's jitter, seeded
    polls: list[int] = []
    late: list[float] = []
    for batch, measured in ((warm, False), (durations, True)):
        timings = [schedule.track(endpoint, payload, 0) for _ in batch]
        ends = [clock.now + d for d in batch]
        due = [clock.now + t.next_delay(rng=rng) for t in timings]
        count = [0] * len(batch)
        live = set(range(len(batch)))
        while live:
            i = min(live, key=due.__getitem__)
            clock.now = due[i]
            at_result = timings[i].poll_result_address()
            if clock.now >= ends[i]:
                timings[i].saw("COMPLETED", None, True)
                timings[i].done(True)
                live.discard(i)
                if not at_result:
                    count[i] += 1  # a status poll saw COMPLETED; the fetch is not a poll
                if measured:
                    polls.append(count[i])
                    late.append(clock.now - ends[i])
            else:
                count[i] += 1
                if at_result:
                    schedule.result_address_says(True)  # a 202 with the status
                timings[i].saw("IN_PROGRESS", None, False)
                due[i] = clock.now + timings[i].next_delay(rng=rng)
    return {
        "poll_requests_per_task": round(sum(polls) / len(polls), 3),
        "notice_p95_s": round(common.percentile(late, 95), 3),
    }


def requests_with_cap(seconds: float, early_cap: float) -> int:
    """Status requests of our schedule on paper if its first-minute cap were ``early_cap``
    (the rest as in genwidgets.jobs.polling: same start, growth and late ramp)."""
    from genwidgets.jobs import polling as schedule

    t, n = 0.0, 0
    while t < seconds:
        cap = early_cap
        if t >= schedule.KNEE:
            cap = min(schedule.LATE_CAP, early_cap + (t - schedule.KNEE) / schedule.RAMP)
        t += max(schedule.FIRST, min(cap, schedule.FIRST + schedule.GROWTH * t))
        n += 1
    return n


def cap_alternatives(
    durations: Sequence[float], caps: Sequence[float] = (1.5, 1.75, 2.0, 2.5)
) -> dict[str, dict[str, float]]:
    """On paper, for other first-minute caps: requests per task, the ratio to a fixed
    0.5 s poller, and the p95 notice delay to expect (0.95 x cap)."""
    fixed = sum(fixed_polls(d, 0.5) for d in durations) / len(durations)
    out = {}
    for cap in caps:
        ours = sum(requests_with_cap(d, cap) for d in durations) / len(durations)
        out[f"{cap:g}"] = {
            "requests_per_task": round(ours, 2),
            "ratio_vs_0_5s": round(fixed / ours, 2),
            "p95_notice_s": round(0.95 * cap, 2),
        }
    return out
