"""The client-wide status budget (issue 14), on a fake clock: no wall-clock anywhere."""

from __future__ import annotations

import asyncio
import itertools
import math
import random
from collections.abc import Callable

import pytest
from fake_time import FakeTime

from genwidgets.jobs.status_budget import StatusBudget


def most_in_any_window(times: list[float], window: float) -> int:
    """The largest number of ``times`` inside any half-open window of ``window`` seconds."""
    times = sorted(times)
    best, left = 0, 0
    for right, t in enumerate(times):
        while times[left] <= t - window:
            left += 1
        best = max(best, right - left + 1)
    return best


def run_requests(
    budget: StatusBudget,
    fake: FakeTime,
    requests: list[tuple[float, float]],
    hold: Callable[[], float] | None = None,
) -> list[tuple[float, int]]:
    """Each (arrival, priority) asks the budget at its arrival; (grant time, index) back."""
    granted: list[tuple[float, int]] = []

    async def one(index: int, arrival: float, priority: float) -> None:
        await fake.sleep(arrival)  # arrive at the given fake time
        await budget.acquire(priority)
        granted.append((fake.now, index))

    async def main() -> None:
        await asyncio.gather(*(one(i, a, p) for i, (a, p) in enumerate(requests)))

    asyncio.run(fake.run(main()))
    return granted


@pytest.mark.parametrize("rate", [50.0, 7.5, 0.5])
def test_the_budget_is_never_exceeded_and_is_sustained(rate: float) -> None:
    fake = FakeTime()
    budget = StatusBudget(rate, clock=fake.clock, sleep=fake.sleep)
    rng = random.Random(1)
    count = int(max(40, rate * 20))
    requests = [(rng.uniform(0, 2.0), rng.uniform(0, 120)) for _ in range(count)]
    granted = run_requests(budget, fake, requests)
    times = [t for t, _ in granted]
    assert len(granted) == count == budget.granted
    window = max(1.0, 1.0 / rate)
    assert most_in_any_window(times, window) <= math.floor(rate * window)
    # sustained: all of them within (count / rate) + a little, not much slower
    assert max(times) <= count / rate + 2.0 + window
    gaps = [b - a for a, b in itertools.pairwise(sorted(times))]
    assert min(gaps) >= 0.5 / rate - 1e-9  # no bursts


def test_jobs_nearest_their_finish_go_first_and_nothing_starves() -> None:
    fake = FakeTime()
    budget = StatusBudget(10, clock=fake.clock, sleep=fake.sleep)
    # 100 requests arrive at once: index 0-49 expect to finish in 60 s, 50-99 in 1 s
    requests = [(0.0, 60.0)] * 50 + [(0.0, 1.0)] * 50
    granted = run_requests(budget, fake, requests)
    order = [i for _, i in sorted(granted)]
    soon = [order.index(i) for i in range(50, 100)]
    late = [order.index(i) for i in range(1, 50)]  # index 0 may take the free slot
    assert max(soon) < min(late)
    # a far-from-finish request that waited long enough goes ahead of a fresh urgent one
    fake2 = FakeTime()
    budget2 = StatusBudget(1, clock=fake2.clock, sleep=fake2.sleep)
    requests2 = [(0.0, 0.0)] + [(0.0, 60.0)] + [(t, 0.0) for t in range(1, 60)]
    granted2 = dict((i, t) for t, i in run_requests(budget2, fake2, requests2))
    assert granted2[1] <= 32.0  # half a minute of priority at most, then its turn


def test_a_closed_rate_gate_holds_every_grant() -> None:
    fake = FakeTime()
    closed_until = 5.0
    budget = StatusBudget(
        20, clock=fake.clock, sleep=fake.sleep, hold=lambda: max(0.0, closed_until - fake.now)
    )
    granted = run_requests(budget, fake, [(0.0, 1.0)] * 30)
    times = sorted(t for t, _ in granted)
    assert times[0] >= closed_until
    assert most_in_any_window(times, 1.0) <= 20  # no burst when it reopens


def test_a_cancelled_waiter_gives_its_slot_away() -> None:
    fake = FakeTime()
    budget = StatusBudget(1, clock=fake.clock, sleep=fake.sleep)

    async def main() -> list[str]:
        done: list[str] = []
        await budget.acquire()  # the free slot

        async def ask(name: str) -> None:
            await budget.acquire()
            done.append(name)

        first = asyncio.ensure_future(ask("cancelled"))
        second = asyncio.ensure_future(ask("served"))
        await asyncio.sleep(0)
        first.cancel()
        await asyncio.gather(second, return_exceptions=True)
        return done

    assert asyncio.run(fake.run(main())) == ["served"]
    assert budget.granted == 2


@pytest.mark.parametrize("rate", [0, -1, math.inf, math.nan])
def test_a_rate_that_is_not_a_positive_number_is_refused(rate: float) -> None:
    with pytest.raises(ValueError, match="max_status_rate"):
        StatusBudget(rate)
    with pytest.raises(TypeError, match="max_status_rate"):
        StatusBudget("50")  # type: ignore[arg-type]


def test_the_budget_still_caps_a_schedule_that_polls_short_tasks_often() -> None:
    """A hundred 3 s tasks of a learnt key at once ask for a poll every ~0.3 s each in
    their finish window, far more than 50 a second: the client's budget holds, the
    tasks nearest their finish go first, and every task is still noticed."""
    from genwidgets.jobs.polling import Schedule
    from genwidgets.jobs.runtime import Observation

    def run(rate: float) -> tuple[list[float], list[float]]:
        fake = FakeTime()
        budget = StatusBudget(rate, clock=fake.clock, sleep=fake.sleep)
        schedule = Schedule(budget=budget, clock=fake.clock)
        key = schedule.key("asset-get", {})
        rng = random.Random(3)
        for _ in range(200):
            schedule.model(key).add(Observation(rng.lognormvariate(math.log(3.0), 0.5), 0.05))
        grants: list[float] = []
        late: list[float] = []

        async def task(seconds: float) -> None:
            timing = schedule.track("asset-get", {}, 0)
            end = fake.now + seconds
            while True:
                await fake.sleep(timing.next_delay())
                await timing.before_status()
                grants.append(fake.now)
                if fake.now >= end:
                    timing.saw("COMPLETED", None, True)
                    timing.done(True)
                    late.append(fake.now - end)
                    return
                timing.saw("IN_PROGRESS", None, False)

        async def main() -> None:
            seconds = [rng.lognormvariate(math.log(3.0), 0.5) for _ in range(100)]
            await asyncio.gather(*(task(s) for s in seconds))

        asyncio.run(fake.run(main()))
        return grants, late

    free_grants, free_late = run(10_000.0)
    assert most_in_any_window(free_grants, 1.0) > 150  # what the schedule asks for
    assert sorted(free_late)[94] <= 0.3  # p95 within the key's target: a tenth of 3 s
    grants, late = run(50.0)
    assert most_in_any_window(grants, 1.0) <= 50
    assert len(late) == 100  # every task noticed, later (the budget's price)
    assert sorted(late)[94] > sorted(free_late)[94]


class LateTime(FakeTime):
    """Virtual time on a busy machine: every sleep wakes 10 ms late."""

    async def sleep(self, seconds: float) -> None:
        await super().sleep(seconds + 0.01)


def test_a_loop_that_wakes_late_still_grants_the_whole_rate() -> None:
    """At 1,000 a second one wake-up per grant is more than a loaded loop makes; the
    slots a late wake-up slept through are granted at once (at most CATCH_UP_S of them),
    so the rate holds and the window cap too."""
    fake = LateTime()
    budget = StatusBudget(1000.0, clock=fake.clock, sleep=fake.sleep)
    granted = run_requests(budget, fake, [(0.0, 1.0)] * 400)
    times = [t for t, _ in granted]
    assert len(times) == 400
    assert max(times) <= 1.0  # one grant per late wake-up: 400 x 10.5 ms, about 4 s
    assert most_in_any_window(times, 1.0) <= 1000
    per_wake = max(times.count(t) for t in set(times))
    assert per_wake <= 1 + budget.CATCH_UP_S / budget.spacing
