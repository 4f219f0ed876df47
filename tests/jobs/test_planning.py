"""A client's poll plans are made off the engine's loop (issue 42): the loop serves its
timers while a plan is being made, and the key's tasks follow the last plan, or the
schedule with no history, until the new one lands. No wall-clock assertions."""

from __future__ import annotations

import asyncio
import concurrent.futures
import math
import random
import threading
from collections.abc import Callable
from typing import Any

import pytest
from fake_time import FakeTime

from genwidgets.jobs import polling, runtime
from genwidgets.jobs.engine import get_engine
from genwidgets.jobs.planning import PLANNER
from genwidgets.jobs.polling import PollState, Schedule, base_interval
from genwidgets.jobs.runtime import Observation


class HeldExecutor(concurrent.futures.Executor):
    """Runs what it was given only when told to (:meth:`run`)."""

    def __init__(self) -> None:
        self.held: list[tuple[concurrent.futures.Future[Any], Callable[..., Any], tuple[Any, ...]]]
        self.held = []

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self.held.append((future, fn, args))
        return future

    def run(self) -> None:
        held, self.held = self.held, []
        for future, fn, args in held:
            future.set_result(fn(*args))


def lognormal(count: int, median: float, sigma: float, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [rng.lognormvariate(math.log(median), sigma) for _ in range(count)]


def learnt(schedule: Schedule, count: int = 100, seed: int = 50) -> runtime.Key:
    key = schedule.key("asset-get", {})
    for d in lognormal(count, 10.0, 0.3, seed=seed):
        schedule.model(key).add(Observation(d, 0.1))
    return key


def test_a_plan_is_made_on_the_planner_from_a_copy_and_the_last_one_serves_meanwhile() -> None:
    time, held = FakeTime(), HeldExecutor()
    schedule = Schedule(clock=time.clock, planner=held)
    key = learnt(schedule)
    at_once = Schedule(clock=time.clock)
    at_once.models = schedule.models
    timing = schedule.track("asset-get", {}, 0)
    time.now += 3.0
    # the first plan is being made: the schedule with no history polls meanwhile
    assert schedule.plan(key) is None and schedule.plan(key) is None
    assert len(held.held) == 1  # asked once, not at every poll
    adaptive = base_interval(PollState(running_for=3.0))
    delay = timing.next_delay(rng=random.Random(1))
    assert adaptive * (1 - polling.JITTER) <= delay <= adaptive
    copy = held.held[0][2][0]
    assert copy is not schedule.model(key) and copy.total == schedule.model(key).total
    held.run()
    first = schedule.plan(key)
    assert first is not None and first == at_once.plan(key)  # the plan made at once
    # stale (more observations, time passed): renewed on the planner, the last one serves
    model = schedule.model(key)
    for d in lognormal(40, 10.0, 0.3, seed=51):
        model.add(Observation(d, 0.1))
    time.now += 10.0
    assert schedule.plan(key) is first and len(held.held) == 1
    copy = held.held[0][2][0]
    total = copy.total
    model.add(Observation(30.0))  # the model learns on while the copy is planned from
    assert copy.total == total == model.total - 1
    held.run()
    renewed = schedule.plan(key)
    assert renewed is not None and renewed is not first


def test_a_plan_of_a_model_that_since_widened_is_not_followed() -> None:
    held = HeldExecutor()
    schedule = Schedule(clock=FakeTime().clock, planner=held)
    key = learnt(schedule)
    schedule.plan(key)
    held.run()
    assert schedule.plan(key) is not None
    model = schedule.model(key)
    while not model.checkpoint(0.25, True):  # every task ends before the lower quartile
        pass
    # its new plan is being made: until then, the schedule with no history
    assert schedule.plan(key) is None and len(held.held) == 1
    held.run()
    assert schedule.plan(key) is not None


@pytest.mark.timeout(120)
def test_the_engine_loop_fires_its_timers_while_a_plan_is_being_made(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A client's schedule plans on :data:`PLANNER`: with a plan that does not end until
    released, the engine's loop still fires timers (a poll's wait) and answers."""
    started, release = threading.Event(), threading.Event()
    plan_polls = runtime.plan_polls
    on: list[str] = []

    def held_plan(*args: Any, **kwargs: Any) -> runtime.Plan:
        on.append(threading.current_thread().name)
        assert kwargs["pause"] is not None  # it hands the GIL back to the loop now and then
        started.set()
        release.wait(60)
        return plan_polls(*args, **kwargs)

    monkeypatch.setattr(runtime, "plan_polls", held_plan)
    schedule = Schedule(clock=FakeTime().clock, planner=PLANNER)
    key = learnt(schedule)
    timing = schedule.track("asset-get", {}, 0)

    async def while_planning() -> int:
        assert schedule.plan(key) is None  # asked: the planner makes it
        ticks = 0
        for _ in range(6000):  # timers, fired while the plan is held
            await asyncio.sleep(0.01)
            ticks += started.is_set()
            if ticks >= 5:
                break
        assert schedule.plan(key) is None and not release.is_set()
        timing.next_delay()  # a poll's delay meanwhile: no plan, no wait
        return ticks

    engine = get_engine()
    try:
        assert engine.run(while_planning(), timeout=60) >= 5
    finally:
        release.set()

    async def landed() -> runtime.Plan | None:
        for _ in range(6000):
            if (plan := schedule.plan(key)) is not None:
                return plan
            await asyncio.sleep(0.01)
        return None

    assert engine.run(landed(), timeout=60) is not None
    worker = PLANNER.submit(lambda: threading.current_thread().name).result(30)
    assert on == [worker]  # on the planner's worker, not the engine's thread
