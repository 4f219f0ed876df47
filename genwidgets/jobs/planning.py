"""The poll plans of a schedule's keys, kept and renewed off the engine's loop.

A plan (:func:`.runtime.plan_polls`) is a tenth to a few tenths of a second of Python;
made on the engine's loop, every timer due meanwhile fires late, and a late timer is
late notice. A client's plans are made on a worker (:data:`PLANNER`) from a copy of
the key's model; until the new one lands, the key's tasks follow the plan they had (the
first time: the schedule with no history). With no executor (a schedule on a virtual
clock) a plan is made at once: docs/decisions.md#plans-off-the-loop.
"""

from __future__ import annotations

import concurrent.futures
import time
from collections.abc import Callable
from dataclasses import dataclass

from .._workers import Workers
from .runtime import Key, Plan, RunTimeModel

#: a key's plan is renewed at most this often (seconds), and after 5 % more
#: observations, unless its model widened
REPLAN_AFTER_S = 5.0
#: one worker makes every client's plans in turn (one thread, not one per key)
PLANNER = Workers(1, failed="a poll plan")

#: how a plan is made: from a model, with a pause to call now and then (or None)
Make = Callable[[RunTimeModel, Callable[[], None] | None], Plan]


def let_the_loop_run() -> None:
    """Hand the GIL to a thread waiting for it (the engine's loop, back from a socket)
    now, not after the switch interval (5 ms): without it, a plan on a worker slowed
    the loop's I/O more than a plan on the loop (docs/decisions.md#plans-off-the-loop)."""
    time.sleep(0)


@dataclass(frozen=True)
class _Made:
    """A key's plan and the model it was made from (its count, shifts and when)."""

    plan: Plan | None
    total: int
    shifts: int
    at: float

    def fresh(self, model: RunTimeModel, now: float) -> bool:
        """Whether ``model`` has moved too little since for a new plan to be worth it."""
        return self.shifts == model.shifts and (
            now - self.at < REPLAN_AFTER_S or model.total - self.total < max(5, model.total // 20)
        )


class Plans:
    """The plans of one schedule's keys (engine thread only, like the schedule)."""

    def __init__(self, executor: concurrent.futures.Executor | None = None) -> None:
        self.executor = executor
        self._made: dict[Key, _Made] = {}
        self._making: dict[Key, tuple[concurrent.futures.Future[Plan], _Made]] = {}

    def current(self, key: Key) -> Plan | None:
        """The last plan made for ``key`` (however old), or None."""
        made = self._made.get(key)
        return None if made is None else made.plan

    def get(
        self,
        key: Key,
        model: RunTimeModel,
        now: float,
        make: Make,
    ) -> Plan | None:
        """The plan of ``key`` for ``model`` as it is at ``now``: the one made, renewed
        by ``make`` once stale (at once, or on the executor, pausing for the loop:
        meanwhile the last plan of the same shifts, or None)."""
        self._land(key)
        made = self._made.get(key)
        if made is not None and made.fresh(model, now):
            return made.plan
        if self.executor is None:
            plan = make(model, None)
            self._made[key] = _Made(plan, model.total, model.shifts, now)
            return plan
        if key not in self._making:
            asked = _Made(None, model.total, model.shifts, now)
            work = self.executor.submit(make, model.copy(), let_the_loop_run)
            self._making[key] = (work, asked)
        return made.plan if made is not None and made.shifts == model.shifts else None

    def _land(self, key: Key) -> None:
        """Adopt ``key``'s plan made on the executor, once it is done (a failure,
        logged by the worker, keeps the last plan until the next renewal falls due)."""
        making = self._making.get(key)
        if making is None or not making[0].done():
            return
        del self._making[key]
        future, asked = making
        if future.cancelled() or future.exception() is not None:
            old = self._made.get(key)
            plan = old.plan if old is not None and old.shifts == asked.shifts else None
        else:
            plan = future.result()
        self._made[key] = _Made(plan, asked.total, asked.shifts, asked.at)
