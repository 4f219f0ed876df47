"""Schedules on paper: our schedule's own code on a virtual clock (no latency, a machine
that is never busy), and the fixed pollers' exact counts. The "on paper" column of the
report, and the whole-set figure of a fixed poller measured on a sample."""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Sequence
from typing import Any

from . import _common as common
from .sets import ALL_AT_ONCE, PAYLOADS, Arrivals, Task


def fixed_polls(seconds: float, interval: float) -> int:
    """Status polls of a fixed poller on a task of ``seconds``: one at 0, one every
    ``interval`` while it runs, and the one that sees it ``COMPLETED``."""
    return math.ceil(seconds / interval) + 1


def fixed_per_task(tasks: Sequence[Task], interval: float) -> float:
    """A fixed poller's poll requests per task over ``tasks``, on paper."""
    return sum(fixed_polls(t.seconds, interval) for t in tasks) / len(tasks)


class _PaperClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _run(
    clock: _PaperClock,
    schedules: Sequence[Any],
    tasks: Sequence[Task],
    offsets: Sequence[float],
    rng: random.Random,
) -> tuple[list[int], list[float], list[Any]]:
    """Poll ``tasks`` (task i through ``schedules[i]``, started ``offsets[i]`` after now)
    exactly when the schedule says, answered at once at the address it picks (status,
    or result once seen running); each task's poll requests, notice delay and timing."""
    start = clock.now
    timings: list[Any] = [None] * len(tasks)
    count = [0] * len(tasks)
    late = [0.0] * len(tasks)
    events = [(start + offset, i) for i, offset in enumerate(offsets)]
    heapq.heapify(events)
    while events:
        clock.now, i = heapq.heappop(events)
        task, timing = tasks[i], timings[i]
        if timing is None:  # submitted now
            timings[i] = timing = schedules[i].track(task.endpoint, PAYLOADS[task.endpoint], 0)
            heapq.heappush(events, (clock.now + timing.next_delay(rng=rng), i))
            continue
        at_result = timing.poll_result_address()
        if clock.now >= start + offsets[i] + task.seconds:
            timing.saw("COMPLETED", None, True)
            timing.done(True)
            if not at_result:
                count[i] += 1  # a status poll saw COMPLETED; the fetch is not a poll
            late[i] = clock.now - (start + offsets[i] + task.seconds)
            continue
        count[i] += 1
        if at_result:
            timing.schedule.result_address_says(True)  # a 202 with the status
        timing.saw("IN_PROGRESS", None, False)
        heapq.heappush(events, (clock.now + timing.next_delay(rng=rng), i))
    return count, late, timings


def ours(
    tasks: Sequence[Task],
    arrivals: Arrivals,
    *,
    warm: Sequence[Task] = (),
    warm_arrivals: Arrivals = ALL_AT_ONCE,
    fresh_every_batch: bool = False,
    notice_target: float | None = None,
) -> dict[str, Any]:
    """Our schedule (``Schedule``/``Timing``) on a virtual clock: the ``warm`` tasks
    first, through a client whose run times seed a fresh one (as a ledger does), then
    ``tasks`` as they arrive, through that client, or a fresh client per batch
    (``fresh_every_batch``: no history at all). Poll requests per task, notice p95,
    and each task's polls and notice delay."""
    from genwidgets.jobs.polling import Schedule

    clock = _PaperClock()
    rng = random.Random(0)  # the jitter of the schedule with no history, seeded
    learning = Schedule(notice_target, clock=clock)
    if warm:
        warming = Schedule(notice_target, clock=clock)
        offsets = warm_arrivals.offsets(len(warm))
        *_, timings = _run(clock, [warming] * len(warm), warm, offsets, rng)
        for timing in timings:  # what the warm-up's ledger rows tell the measured client
            if timing.observation is not None:
                learning.model(timing.key).add(timing.observation)
    offsets = arrivals.offsets(len(tasks))
    if fresh_every_batch:
        by_batch = {
            b: Schedule(notice_target, clock=clock)
            for b in {arrivals.batch_of(i) for i in range(len(tasks))}
        }
        schedules = [by_batch[arrivals.batch_of(i)] for i in range(len(tasks))]
    else:
        schedules = [learning] * len(tasks)
    polls, late, _ = _run(clock, schedules, tasks, offsets, rng)
    return {
        "poll_requests_per_task": round(sum(polls) / len(polls), 3),
        "notice_p95_s": round(common.percentile(late, 95), 3),
        "polls": polls,
        "notice_s": [round(x, 4) for x in late],
    }
