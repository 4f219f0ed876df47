"""The polling schedule: when to ask a job's status next.

A fixed interval either notices a finish late or burns the rate limit, so the schedule
aims at a notice target in proportion to the task (a tenth of its run time, between a
quarter second and a second and a half), adapts to queue position and run time, learns
from history (:mod:`.runtime`), polls a running task at its result address, and takes a
slot of the client's :class:`~genwidgets.jobs.status_budget.StatusBudget` per poll. The rules
and their request counts: docs/decisions.md#polling.
"""

from __future__ import annotations

import collections
import concurrent.futures
import heapq
import logging
import math
import random
import time
from bisect import bisect_right
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .. import catalog
from ..errors import EndpointNotFound, LedgerError
from ..protocol.gate import GATE_CEILING
from ..protocol.http import NOT_FOUND_GRACE_S
from ..protocol.records import is_failure
from . import runtime
from .planning import Plans
from .runtime import Key, Observation, Plan, RunTimeModel

if TYPE_CHECKING:
    from .ledger import Ledger
    from .status_budget import StatusBudget

log = logging.getLogger("genwidgets")

FIRST = 0.5
GROWTH = 0.5
EARLY_CAP = 1.5
KNEE = 60.0
RAMP = 60.0  # seconds of run time per extra second of cap
LATE_CAP = 5.0
QUEUE_STEP = 0.5
QUEUE_CAP = 5.0
JITTER = 0.1
#: The notice target in proportion (docs/decisions.md#notice-in-proportion): a task of T
#: seconds is noticed within clamp(NOTICE_SHARE × T, NOTICE_FLOOR, NOTICE_CEILING).
NOTICE_SHARE = 0.1
NOTICE_FLOOR = 0.25
NOTICE_CEILING = 1.5
#: Consecutive failed polls (after backoff) before a job gives up with the error.
POLL_FAILURE_LIMIT = 10
#: Seconds of polls refused for the rate limit, nothing else answered, before a job gives
#: up as ``RateLimited`` (contact, never a failure): three rounds of the gate's ceiling
RATE_LIMITED_FOR = 3 * GATE_CEILING


@dataclass(frozen=True)
class PollPolicy:
    """How a client polls, as one value (``Client(poll_policy=...)``): the adaptive
    schedule's shape (the constants above are its defaults), how many failed polls
    in a row a job survives, how long it polls through nothing but rate limits
    (``rate_limited_for`` seconds), and how long a 404 is doubted after a create. The
    notice target is in proportion to the task (``notice_share`` of its run time,
    between ``notice_floor`` and ``notice_ceiling``) unless ``Client(notice_target=...)``
    fixes one (then ``first`` and ``growth`` shape the ramp up to it)."""

    first: float = FIRST
    growth: float = GROWTH
    knee: float = KNEE
    ramp: float = RAMP
    late_cap: float = LATE_CAP
    queue_step: float = QUEUE_STEP
    queue_cap: float = QUEUE_CAP
    jitter: float = JITTER
    failure_limit: int = POLL_FAILURE_LIMIT
    rate_limited_for: float = RATE_LIMITED_FOR
    not_found_grace: float = NOT_FOUND_GRACE_S
    notice_share: float = NOTICE_SHARE
    notice_floor: float = NOTICE_FLOOR
    notice_ceiling: float = NOTICE_CEILING

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"PollPolicy.{name} must be a number, not {value!r}")
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"PollPolicy.{name} must be finite and 0 or more, not {value!r}")
        if self.failure_limit < 1 or self.jitter >= 1 or self.ramp <= 0:
            raise ValueError("PollPolicy needs failure_limit >= 1, jitter < 1 and ramp > 0")
        if not 0 < self.notice_floor <= self.notice_ceiling or self.notice_share <= 0:
            raise ValueError(
                "PollPolicy needs notice_share > 0 and 0 < notice_floor <= notice_ceiling"
            )


#: The policy of a client given none (read when a schedule polls, not when it is made).
DEFAULT_POLICY = PollPolicy()


@dataclass
class PollState:
    """What the schedule needs to know about one job."""

    running_for: float  # seconds since the job was first seen not queued (or since submit)
    queue_position: int | None = None
    position_fell: bool = False
    failures: int = 0
    #: a fixed notice target (``Client(notice_target=...)``); None: in proportion
    early_cap: float | None = None


def notice_in_proportion(seconds: float, policy: PollPolicy | None = None) -> float:
    """The notice target of a task of ``seconds``: a tenth of it, within [0.25, 1.5] s."""
    p = policy or DEFAULT_POLICY
    return min(p.notice_ceiling, max(p.notice_floor, p.notice_share * seconds))


def cap_at(
    running_for: float, early_cap: float = EARLY_CAP, policy: PollPolicy | None = None
) -> float:
    p = policy or DEFAULT_POLICY
    if running_for < p.knee:
        return early_cap
    return max(early_cap, min(p.late_cap, early_cap + (running_for - p.knee) / p.ramp))


def base_interval(state: PollState, policy: PollPolicy | None = None) -> float:
    p = policy or DEFAULT_POLICY
    if state.queue_position is not None and state.queue_position > 0:
        delay = min(p.queue_cap, p.first + p.queue_step * state.queue_position)
        if state.position_fell:
            delay = min(delay, 1.0)
        return delay
    age = max(0.0, state.running_for)
    if state.early_cap is None:  # in proportion: a task ending now is noticed in its target
        return max(p.notice_floor, min(cap_at(age, p.notice_ceiling, p), p.notice_share * age))
    first = min(p.first, state.early_cap)
    return max(first, min(cap_at(age, state.early_cap, p), first + p.growth * age))


def next_interval(
    state: PollState, rng: random.Random | None = None, policy: PollPolicy | None = None
) -> float:
    p = policy or DEFAULT_POLICY
    delay = base_interval(state, p)
    if state.failures:
        delay = max(delay, min(0.5 * 2 ** (state.failures - 1), 8.0))
    return delay * (1 - p.jitter * (rng or random).random())


def requests_for(
    seconds: float, policy: PollPolicy | None = None, target: float | None = None
) -> int:
    """Status requests the schedule with no history makes for a task running ``seconds``
    (no queue, no jitter), the one that sees it end included; ``target``: a fixed one."""
    t, n = 0.0, 0
    while t < seconds:
        t += base_interval(PollState(running_for=t, early_cap=target), policy)
        n += 1
    return n


# --------------------------------------------------------------------------- with history

#: a planned poll closer than this share of the target to the last one is skipped
MIN_GAP_SHARE = 0.25
#: how fast the timers' lateness estimate follows a later poll, and a less late one:
#: it rises fast and falls slowly, so it sits near the late end of what timers do
LAG_RISE, LAG_FALL = 0.2, 0.02
#: the lateness a poll is brought forward by is at most this share of its wait (the
#: gateway never sees more than twice the schedule's rate)
LAG_SHARE_MAX = 0.5
#: timer slack kept off the notice target by a plan, as a share of the target and at
#: least PLAN_MARGIN_MIN_S (the round trip comes on top)
PLAN_MARGIN_SHARE = 1 / 30
PLAN_MARGIN_MIN_S = 0.02
#: spreads the tasks of a key evenly over a plan's two variants (seq × φ mod 1)
GOLDEN = 0.6180339887498949
#: a checkpoint outcome still unknown this long after it fell due is dropped
STALE_DUE_S = 60.0
#: finished rows read from the ledger per endpoint when its first job starts
LEDGER_ROWS = 500
#: budget priority of a job whose finish the model cannot tell (seconds)
UNKNOWN_FINISH_S = 60.0
#: a job older than this (no plan yet) stops holding back the observations of
#: jobs that started after it (see ``Schedule._release``)
COLD_HOLD_S = 600.0


def adaptive_notice_delay(seconds: float) -> float:
    """The expected notice delay of the adaptive schedule for a task of ``seconds``:
    half the interval in use then (used to correct times read from the ledger)."""
    return base_interval(PollState(running_for=seconds)) / 2


class Schedule:
    """One client's polling: run-time models per key, their plans, the status budget.

    Lives on the engine thread (every method is called there), so it needs no lock.
    """

    def __init__(
        self,
        notice_target: float | None = None,
        *,
        budget: StatusBudget | None = None,
        ledger: Ledger | None = None,
        gateway: str = "",
        clock: Callable[[], float] = time.monotonic,
        policy: PollPolicy | None = None,
        planner: concurrent.futures.Executor | None = None,
    ) -> None:
        if notice_target is not None:
            if isinstance(notice_target, bool) or not isinstance(notice_target, (int, float)):
                raise TypeError(
                    f"notice_target must be a number of seconds or None, not {notice_target!r}"
                )
            if not (math.isfinite(notice_target) and 0.2 <= notice_target <= 600):
                raise ValueError(
                    f"notice_target must be between 0.2 and 600 seconds, not {notice_target!r}"
                )
        #: the client's fixed notice target, or None: in proportion to each key's tasks
        self.notice_target = None if notice_target is None else float(notice_target)
        self.budget = budget
        self.clock = clock
        self._policy = policy
        self._ledger = ledger
        self._gateway = gateway
        self.models: dict[Key, RunTimeModel] = {}
        #: the keys' plans, made on ``planner`` (a client's: off the engine's loop)
        self._plans = Plans(planner)
        self._billed: dict[str, tuple[str, ...]] = {}
        self._seeded: set[str] = set()
        self._cohorts: dict[Key, collections.OrderedDict[int, Timing]] = {}
        # checkpoint outcomes to count, by when they fall due (see ``_drain``)
        self._due: list[tuple[float, int, Timing, float, float, int]] = []
        #: the status round trip (seconds, a moving average): a poll notices an end
        #: this much after it is sent, so plans keep their gaps this much shorter
        self.latency = 0.0
        #: how late the polls' timers fire on this machine (seconds, near the late end
        #: of the recent ones): each wait is that much shorter (docs/decisions.md#timer-lag)
        self.lag = 0.0
        self._seq = 0
        #: whether this gateway's 202 answers at the result address carry the status
        #: (None: not seen yet); running tasks are polled there while it is not False
        self.result_address: bool | None = None

    @property
    def policy(self) -> PollPolicy:
        """The client's :class:`PollPolicy`, or the default one as it is now."""
        return self._policy or DEFAULT_POLICY

    def __repr__(self) -> str:
        target = "in proportion" if self.notice_target is None else f"{self.notice_target:g} s"
        return f"<Schedule notice_target={target}, {len(self.models)} models>"

    def result_address_says(self, carries_status: bool, *, reason: str = "") -> None:
        """Whether a poll of the result address, while the task ran, answered with the
        task's status (it says as much as the status address) or not (stop using it)."""
        if carries_status:
            self.result_address = True
            return
        if self.result_address is not False:
            log.info(
                "genwidgets: the result address of %s does not answer with the task's "
                "status%s; running tasks are polled at their status address",
                self._gateway or "this gateway",
                f" ({reason})" if reason else "",
            )
        self.result_address = False

    # ------------------------------------------------------------------ keys and models

    def billed_fields(self, endpoint: str) -> tuple[str, ...]:
        """Wire names of the endpoint's billed fields (none for an unknown endpoint)."""
        if endpoint not in self._billed:
            try:
                names = catalog.endpoint(endpoint).billing_fields
            except EndpointNotFound:
                names = ()
            self._billed[endpoint] = names
        return self._billed[endpoint]

    def key(self, endpoint: str, payload: Mapping[str, Any] | None) -> Key:
        return runtime.key_for(endpoint, payload, self.billed_fields(endpoint))

    def model(self, key: Key) -> RunTimeModel:
        """The model of ``key`` (created empty, then seeded from the ledger once)."""
        model = self.models.get(key)
        if model is None:
            model = self.models[key] = RunTimeModel()
        endpoint = key[0]
        if endpoint not in self._seeded:
            self._seeded.add(endpoint)
            self._seed(endpoint)
        return model

    def _seed(self, endpoint: str) -> None:
        if self._ledger is None:
            return

        try:
            rows = self._ledger.run_times(self._gateway, endpoint, limit=LEDGER_ROWS)
        except (LedgerError, OSError) as exc:
            log.info("genwidgets: no run times from the ledger for %s: %s", endpoint, exc)
            return
        found = runtime.observations_from_rows(reversed(rows), adaptive_notice_delay)
        for row_endpoint, payload, observation in found:
            if row_endpoint == endpoint:
                key = self.key(endpoint, payload)
                self.models.setdefault(key, RunTimeModel()).add(observation)

    def target(self, key: Key) -> float | None:
        """The notice target of ``key``'s tasks: the client's fixed one, else a tenth of
        the key's median run time within [0.25, 1.5] s; None while the model is not
        ready (each task then aims at a tenth of its own age: :func:`base_interval`)."""
        if self.notice_target is not None:
            return self.notice_target
        model = self.models.get(key)
        if model is None or not model.ready:
            return None
        return self._target_of(model)

    def _target_of(self, model: RunTimeModel) -> float:
        if self.notice_target is not None:
            return self.notice_target
        return notice_in_proportion(model.quantile(0.5), self.policy)

    def plan(self, key: Key) -> Plan | None:
        """The poll plan of ``key``, or None while its model is not ready (or, with a
        ``planner``, while its first plan is being made)."""
        model = self.model(key)
        if not model.ready:
            return None
        latency = self.latency

        def make(model: RunTimeModel, pause: Callable[[], None] | None) -> Plan:
            target = self._target_of(model)  # of the copy, on the planner
            # A round trip near the target cannot be beaten by polling faster, only paid
            # for: gaps stay at least half the target (docs/decisions.md#notice-in-proportion).
            margin = min(max(PLAN_MARGIN_MIN_S, PLAN_MARGIN_SHARE * target) + latency, target / 2)
            return runtime.plan_polls(model, target, margin=margin, pause=pause)

        return self._plans.get(key, model, self.clock(), make)

    # ------------------------------------------------------------------ jobs

    def track(
        self, endpoint: str, payload: Mapping[str, Any] | None, queue_position: int | None
    ) -> Timing:
        """The timing of a job that was just created (or re-attached)."""
        self._seq += 1
        key = self.key(endpoint, payload)
        self.model(key)  # seeds the endpoint's models from the ledger on its first job
        return Timing(self, key, queue_position, self._seq)

    def _join(self, timing: Timing) -> None:
        cohort = self._cohorts.setdefault(timing.key, collections.OrderedDict())
        cohort.pop(timing.seq, None)
        cohort[timing.seq] = timing
        timing.joined = True
        plan = self.plan(timing.key)
        origin = timing.origin
        if plan is None or origin is None:
            return
        shifts = self.model(timing.key).shifts
        for q, age in plan.checkpoints.items():
            self._seq += 1
            heapq.heappush(self._due, (origin + age, self._seq, timing, q, origin, shifts))

    def _leave(self, timing: Timing) -> None:
        cohort = self._cohorts.get(timing.key)
        if cohort is not None:
            cohort.pop(timing.seq, None)

    def _release(self, key: Key, now: float) -> None:
        """Teach the model the finished jobs in the order they started.

        A batch's short tasks end first: learning each at its end would make the
        model think tasks got shorter while the long ones still run. So a finished
        job's run time waits until every job of its key that started before it
        has finished too (or has outlived the plan, or was forgotten).
        """
        cohort = self._cohorts.get(key)
        if not cohort:
            return
        model = self.model(key)
        plan = self._plans.current(key)
        hold = plan.end if plan is not None and model.ready else COLD_HOLD_S
        while cohort:
            first = next(iter(cohort.values()))
            if first.finished:
                cohort.popitem(last=False)
                if first.observation is not None:
                    model.add(first.observation)
            elif first.origin is not None and now - first.origin > hold:
                cohort.popitem(last=False)
                first.released = True
            else:
                break

    def _drain(self, now: float) -> None:
        """Count the checkpoint outcomes that fell due, strictly in order of due time.

        Each task that started under a plan counts once at each checkpoint age x_q:
        finished before it, or seen running past it. Counting in due order, and
        waiting at the head until its outcome is known (one poll at most), keeps a
        batch's early finishers from being counted before its survivors.
        """
        while self._due and self._due[0][0] <= now:
            due, _, timing, q, origin, shifts = self._due[0]
            model = self.models.get(timing.key)
            # finished without a run time, or not polled for a minute (its poller stopped)
            gone = (timing.finished and timing.observation is None) or now - due > STALE_DUE_S
            if model is None or model.shifts != shifts or gone or timing.origin != origin:
                heapq.heappop(self._due)
                continue
            if timing.observation is not None:
                finished_before = origin + timing.observation.seconds < due
            elif timing.running_seen is not None and timing.running_seen >= due:
                finished_before = False
            else:
                return  # not known yet: its next poll will tell
            heapq.heappop(self._due)
            if model.checkpoint(q, finished_before):
                log.info(
                    "genwidgets: tasks of %s now run %s than the run-time model said; it widened",
                    timing.key[0],
                    "faster" if finished_before else "slower",
                )


@dataclass(slots=True, eq=False)
class Timing:
    """What the schedule knows of one job's timing (engine thread only; small)."""

    schedule: Schedule
    key: Key
    position: int | None  # the last queue position seen
    seq: int
    submitted: float = 0.0
    queued_seen: float | None = None
    running_seen: float | None = None
    observation: Observation | None = None
    finished: bool = False
    released: bool = False
    joined: bool = False  # in its key's cohort (on the engine thread, at its first poll)
    asked: float | None = None  # when the status request in flight was sent
    due: float | None = None  # when the next poll's timer should fire
    position_fell: bool = False
    start: tuple[float, float] | None = None  # the two polls the start lies between

    def __post_init__(self) -> None:
        self.submitted = self.schedule.clock()
        # Not queued at creation: assume it runs from now (a later IN_QUEUE corrects it).
        if not self.position:
            self.start = (self.submitted, self.submitted)

    @property
    def origin(self) -> float | None:
        """When the task started running (the middle of its start bracket)."""
        return None if self.start is None else (self.start[0] + self.start[1]) / 2

    def age(self) -> float | None:
        origin = self.origin
        return None if origin is None else self.schedule.clock() - origin

    # ------------------------------------------------------------------ events

    def saw(self, word: str, queue_position: int | None, terminal: bool) -> None:
        """A status answer arrived (every answer, changed or not)."""
        schedule = self.schedule
        now = schedule.clock()
        if self.asked is not None:
            schedule.latency += 0.1 * (min(now - self.asked, 5.0) - schedule.latency)
            self.asked = None
        schedule._drain(now)  # noqa: SLF001 - Timing and Schedule are this module's pair; the cohort's bookkeeping is theirs
        if terminal:
            if self.observation is None and self.start is not None and not is_failure(word):
                last_running = self.running_seen if self.running_seen is not None else self.start[1]
                self.observation = runtime.observe_bracket(self.start, (last_running, now))
            return
        if word.upper() == "IN_QUEUE":
            self.position_fell = (
                queue_position is not None
                and self.position is not None
                and queue_position < self.position
            )
            self.position = queue_position
            self.queued_seen = now
            if self.start is not None:
                self.start = None
                schedule._leave(self)  # noqa: SLF001 - Timing and Schedule are this module's pair; the cohort's bookkeeping is theirs
                self.joined = False
            return
        self.position, self.position_fell = None, False
        if self.start is None:
            since = self.queued_seen if self.queued_seen is not None else self.submitted
            self.start = (since, now)
        if not self.joined:
            schedule._join(self)  # noqa: SLF001 - Timing and Schedule are this module's pair; the cohort's bookkeeping is theirs
        self.running_seen = now

    def done(self, ok: bool) -> None:
        """The job ended (result delivered, failed or gone): learn, then let go."""
        if self.finished:
            return
        self.finished = True
        if not self.joined:  # never polled running (restored from the ledger, or queued)
            return
        schedule = self.schedule
        now = schedule.clock()
        if not ok:
            self.observation = None
        schedule._drain(now)  # noqa: SLF001 - Timing and Schedule are this module's pair; the cohort's bookkeeping is theirs
        if self.released:  # it outlived the plan: it no longer waits in the cohort
            if self.observation is not None:
                schedule.model(self.key).add(self.observation)
        else:
            schedule._release(self.key, now)  # noqa: SLF001 - this module's pair (above); it leaves the cohort in its turn

    # ------------------------------------------------------------------ asking

    def next_delay(self, failures: int = 0, rng: random.Random | None = None) -> float:
        """Seconds until the next status request: the schedule's wait, brought forward
        by how late timers fire here (at most half of it), so the poll lands on time."""
        wait = self._wait(failures, rng)
        delay = wait - min(self.schedule.lag, LAG_SHARE_MAX * wait)
        self.due = self.schedule.clock() + delay
        return delay

    def _wait(self, failures: int, rng: random.Random | None) -> float:
        schedule = self.schedule
        age = self.age()
        # without a plan (or past it): the schedule with no history; queued: the queue
        # position sets the pace
        state = PollState(
            running_for=0.0 if age is None else age,
            queue_position=self.position if age is None else None,
            position_fell=age is None and self.position_fell,
            failures=failures,
            early_cap=schedule.notice_target,
        )
        if age is None:
            return next_interval(state, rng, schedule.policy)
        if not self.joined:
            schedule._join(self)  # noqa: SLF001 - Timing and Schedule are this module's pair; the cohort's bookkeeping is theirs
        plan = schedule.plan(self.key)
        if not failures and plan is not None and age < plan.end:
            polls = plan.for_task((self.seq * GOLDEN) % 1.0)
            index = bisect_right(polls, age + MIN_GAP_SHARE * plan.target)
            if index < len(polls):
                return polls[index] - age
        return next_interval(state, rng, schedule.policy)

    def expected_finish(self) -> float | None:
        """Seconds until the task is expected to finish, when the model is confident."""
        age = self.age()
        if self.finished or age is None:
            return None
        model = self.schedule.models.get(self.key)
        if model is None or not model.confident:
            return None
        end = model.quantile(runtime.PLAN_TAIL)
        if age >= end:
            return None
        return model.expected_remaining(age, until=end * 1.5)

    def priority(self) -> float:
        """Budget priority: the expected finish in seconds (lower is served first)."""
        expected = self.expected_finish()
        return UNKNOWN_FINISH_S if expected is None else expected

    def poll_result_address(self) -> bool:
        """Whether the next poll goes to the result address: the task was seen
        running (not queued: the queue position is only on the status) and the
        gateway's result address has not shown it says less than the status."""
        return (
            self.schedule.result_address is not False
            and self.start is not None
            and self.running_seen is not None
            and not self.finished
        )

    async def before_status(self, *, urgent: bool = False) -> None:
        """Note how late the poll's timer fired (not when it was woken early), then wait
        for a slot of the client's status budget."""
        schedule, due, self.due = self.schedule, self.due, None
        late = None if due is None else schedule.clock() - due
        if late is not None and late >= 0:
            weight = LAG_RISE if late > schedule.lag else LAG_FALL
            schedule.lag += weight * (min(late, 5.0) - schedule.lag)
        budget = self.schedule.budget
        if budget is not None:
            await budget.acquire(0.0 if urgent else self.priority())
        self.asked = self.schedule.clock()
