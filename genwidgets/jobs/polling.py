"""The polling schedule: when to ask a job's status next.

Peers poll at a fixed 0.1 s (fal), 0.5 s (replicate) or 1 s (openai) and burn
rate limits (replicate #32, #65). Ours adapts:

- queued: slower the further back in the queue (0.5 s + 0.5 s per place, up to
  5 s), and at most 1 s just after the position fell (the head is near);
- running: 0.5 s at first, growing by 0.5 s per second of run time, capped at
  1.5 s for the first minute (so a finished task is noticed within ~1.5 s),
  then the cap rises by 1 s a minute to 5 s for long tasks;
- after failed polls: the backoff of the retry policy, whichever is longer;
- up to 10 % jitter, downwards only (so the cap holds), so hundreds of jobs
  do not poll in lockstep.

Status requests this makes (no queue, no jitter): a 10 s task 9, a 60 s task
42, a 5 min task 121 (``requests_for(seconds)`` computes it).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

FIRST = 0.5
GROWTH = 0.5
EARLY_CAP = 1.5
KNEE = 60.0
RAMP = 60.0  # seconds of run time per extra second of cap
LATE_CAP = 5.0
QUEUE_STEP = 0.5
QUEUE_CAP = 5.0
JITTER = 0.1


@dataclass
class PollState:
    """What the schedule needs to know about one job."""

    running_for: float  # seconds since the job was first seen not queued (or since submit)
    queue_position: int | None = None
    position_fell: bool = False
    failures: int = 0


def cap_at(running_for: float) -> float:
    if running_for < KNEE:
        return EARLY_CAP
    return min(LATE_CAP, EARLY_CAP + (running_for - KNEE) / RAMP)


def base_interval(state: PollState) -> float:
    if state.queue_position is not None and state.queue_position > 0:
        delay = min(QUEUE_CAP, FIRST + QUEUE_STEP * state.queue_position)
        if state.position_fell:
            delay = min(delay, 1.0)
        return delay
    age = max(0.0, state.running_for)
    return max(FIRST, min(cap_at(age), FIRST + GROWTH * age))


def next_interval(state: PollState, rng: random.Random | None = None) -> float:
    delay = base_interval(state)
    if state.failures:
        delay = max(delay, min(0.5 * 2 ** (state.failures - 1), 8.0))
    return delay * (1 - JITTER * (rng or random).random())


def requests_for(seconds: float) -> int:
    """Status requests the schedule makes for a task running ``seconds`` (no queue)."""
    t, n = 0.0, 0
    while t < seconds:
        t += base_interval(PollState(running_for=t))
        n += 1
    return n
