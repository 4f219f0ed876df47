"""Run-time model: how long a task of one endpoint and billed payload will run.

Per key (endpoint + the billed fields that set the run time) a fading histogram of
observed run times, corrected by the poll interval, plans polls (:func:`plan_polls`) and
widens itself when the gateway changes. Pure Python with no clock of its own
(callers pass times), so it is deterministic. The maths: docs/decisions.md#runtime-model.
"""

from __future__ import annotations

import bisect
import copy
import itertools
import json
import logging
import math
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("genwidgets")

LOW_S = 0.05
HIGH_S = 7200.0
BIN_RATIO = 1.08
MIN_SPREAD = 0.04
#: the largest log-time spread used for the smoothing bandwidth
MAX_SIGMA = 0.6
HALF_LIFE = 150.0
#: observations of a key before its model drives the schedule ("about 20 tasks")
MIN_OBSERVATIONS = 20
CHECKPOINTS = (0.25, 0.5, 0.75)
SHIFT_WINDOW = 40
SHIFT_MIN = 20
SHIFT_MIN_DEVIATION = 0.2
#: standard deviations (the window's and the model's own) a checkpoint must be off by
SHIFT_SIGMAS = 4.0
WIDEN_MASS = 0.5
WIDEN_DECAY = 0.93
#: a ledger row's start lies at most this long before the poll that saw it running
ROW_START_SLACK_S = 5.0
#: the plan covers run times up to this quantile; older tasks: the adaptive schedule
PLAN_TAIL = 0.995
#: the plan's grid has at most this many steps (its cost is grid × gaps × 20)
MAX_GRID = 1500
#: a plan made on a worker thread calls its ``pause`` every this many grid rows
PAUSE_ROWS = 16
#: no planned gap is longer than this share of the task's age, or than the floor: a
#: task that ends where the model says it rarely does is noticed late, but boundedly
#: (the miss budget counts late tasks, not how late; without a bound the far tail
#: got gaps of a minute and more). On the benchmark sets it costs nothing measurable.
MAX_GAP_SHARE = 0.1
MAX_GAP_FLOOR_S = 10.0
#: ... and the floor is at most this share of the key's median run time: a key of
#: 3 s tasks never waits 10 s between polls, so a gateway that slows down leaves
#: its tasks noticed within a second and a half, not ten (docs/decisions.md#notice-in-proportion)
MAX_GAP_MEDIAN_SHARE = 0.5
#: the share of a key's tasks a plan may notice later than the target (of the 5 % a p95
#: target allows, 1 % is kept for model error; 4 %, not 3 %: 4 % fewer polls, issue 31)
PLAN_MISS = 0.04
#: the model is not "confident" (no expected finish shown) while widened more than this
CONFIDENT_WIDEN = 0.2

_LOG_RATIO = math.log(BIN_RATIO)
_BINS = math.ceil(math.log(HIGH_S / LOW_S) / _LOG_RATIO)
_EDGES = [LOW_S * BIN_RATIO**i for i in range(_BINS + 1)]

Key = tuple[Any, ...]


def _json_scalar(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return json.dumps(value, sort_keys=True, default=str)


def key_for(endpoint: str, payload: Mapping[str, Any] | None, billed: Sequence[str]) -> Key:
    """The model key: the endpoint and the values of its billed fields (wire names)."""
    payload = payload if isinstance(payload, Mapping) else {}
    return (endpoint, *(_json_scalar(payload.get(name)) for name in billed))


@dataclass(frozen=True)
class Observation:
    """One run time: ``seconds`` ± ``spread`` (half-width), with a weight."""

    seconds: float
    spread: float = 0.0
    weight: float = 1.0


def observe_bracket(started: tuple[float, float], ended: tuple[float, float]) -> Observation | None:
    """Run time from the two poll brackets (seen not-yet, seen-now) of start and end."""
    (s0, s1), (e0, e1) = started, ended
    if not all(math.isfinite(v) for v in (s0, s1, e0, e1)) or s0 > s1 or e0 > e1:
        return None
    estimate = (e0 + e1) / 2 - (s0 + s1) / 2
    if estimate <= 0:
        return None
    return Observation(estimate, ((s1 - s0) + (e1 - e0)) / 2)


class RunTimeModel:
    """The run-time distribution of one key (see the module docstring)."""

    def __init__(self, half_life: float = HALF_LIFE) -> None:
        self._weights = [0.0] * _BINS
        self._growth = 2.0 ** (1.0 / half_life)
        self._scale = 1.0  # weight of the next observation (older ones stay put)
        self._cumulative: list[float] | None = None
        self._effective = 0.0  # observations, faded like the weights
        self.count = 0  # observations since the model was created (or last widened)
        self.total = 0  # observations ever
        self.widened = 0.0  # mass of the broad component
        self._broad: tuple[float, float] = (LOW_S, HIGH_S)
        self._checkpoints: dict[float, deque[bool]] = {
            q: deque(maxlen=SHIFT_WINDOW) for q in CHECKPOINTS
        }
        self.shifts = 0

    # ------------------------------------------------------------------ learning

    def add(self, observation: Observation) -> None:
        seconds, spread = observation.seconds, observation.spread
        if not (math.isfinite(seconds) and math.isfinite(spread) and seconds > 0):
            raise ValueError(f"a run time must be a positive number of seconds, not {seconds!r}")
        spread = max(abs(spread), MIN_SPREAD * seconds)
        low = min(max(LOW_S, seconds - spread), HIGH_S * 0.999)
        high = min(max(low * 1.0001, seconds + spread), HIGH_S)
        weight = self._scale * observation.weight
        first, last = self._bin(low), self._bin(high)
        width = math.log(high / low)
        for i in range(first, last + 1):
            part = math.log(min(high, _EDGES[i + 1]) / max(low, _EDGES[i]))
            self._weights[i] += weight * part / width
        self._scale *= self._growth
        self._effective = self._effective / self._growth + 1
        if self._scale > 1e12:
            self._weights = [w / self._scale for w in self._weights]
            self._scale = 1.0
        self.count += 1
        self.total += 1
        self.widened *= WIDEN_DECAY
        self._cumulative = None

    def copy(self) -> RunTimeModel:
        """A copy to plan from on another thread while this one goes on learning (the
        lists a plan reads are copied; the checkpoints, which it does not read, shared)."""
        twin = copy.copy(self)
        twin._weights = list(self._weights)  # noqa: SLF001 - its own copy, made here
        return twin

    def checkpoint(self, q: float, finished_before: bool) -> bool:
        """One task's outcome at checkpoint ``q``; True when a shift was detected."""
        window = self._checkpoints[q]
        window.append(finished_before)
        if len(window) < SHIFT_MIN:
            return False
        seen = sum(window) / len(window)
        # the window's own noise, and the model's: a quartile learnt from fifty tasks is
        # itself off by a few hundredths (docs/decisions.md#notice-in-proportion)
        sigma = math.sqrt(q * (1 - q) * (1 / len(window) + 1 / max(self._effective, 1.0)))
        if abs(seen - q) <= max(SHIFT_MIN_DEVIATION, SHIFT_SIGMAS * sigma):
            return False
        self._widen(slower=seen < q)
        return True

    def _widen(self, *, slower: bool) -> None:
        low, high = self.quantile(0.01), self.quantile(0.99)
        self._broad = (
            max(LOW_S, low / (2 if slower else 6)),
            min(HIGH_S, high * (6 if slower else 2)),
        )
        self._weights = [w / 4 for w in self._weights]
        self.widened = WIDEN_MASS
        self.count = min(self.count, MIN_OBSERVATIONS)
        for window in self._checkpoints.values():
            window.clear()
        self._cumulative = None
        self.shifts += 1

    # ------------------------------------------------------------------ reading

    @staticmethod
    def _bin(seconds: float) -> int:
        return min(_BINS - 1, max(0, int(math.log(max(seconds, LOW_S) / LOW_S) / _LOG_RATIO)))

    @property
    def ready(self) -> bool:
        """Enough observations for the model to drive the schedule."""
        return self.count >= MIN_OBSERVATIONS

    @property
    def confident(self) -> bool:
        return self.ready and self.widened <= CONFIDENT_WIDEN

    def _smoothed(self) -> list[float]:
        """The weights smoothed by a Gaussian kernel in log time, of bandwidth
        0.9 σ n^(−1/5) (Silverman's rule, σ from the interquartile range, at most
        0.6 so that two modes stay apart): fifty observations leave holes between
        them that are not real."""
        weights = self._weights
        total = sum(weights)
        if total <= 0:
            return weights
        running, quartiles, targets = 0.0, [], [0.25, 0.75]
        for i, w in enumerate(weights):
            running += w
            while targets and running >= targets[0] * total:
                quartiles.append(i)
                targets.pop(0)
        spread = (quartiles[1] - quartiles[0]) / 1.349 if len(quartiles) == 2 else 1.0
        sigma = min(max(1.0, spread), MAX_SIGMA / _LOG_RATIO)  # in bins
        bandwidth = max(0.7, 0.9 * sigma * max(self._effective, 1.0) ** -0.2)
        reach = int(2.5 * bandwidth) + 1
        kernel = [math.exp(-0.5 * (k / bandwidth) ** 2) for k in range(-reach, reach + 1)]
        norm = sum(kernel)
        out = [0.0] * _BINS
        for i, w in enumerate(weights):
            if w <= 0:
                continue
            for k, kw in enumerate(kernel):
                j = min(_BINS - 1, max(0, i + k - reach))
                out[j] += w * kw / norm
        return out

    def _cum(self) -> list[float]:
        if self._cumulative is None:
            weights = self._smoothed()
            total = sum(weights)
            running = itertools.accumulate(weights)
            self._cumulative = [0.0, *(r / total if total > 0 else 0.0 for r in running)]
        return self._cumulative

    def _hist_cdf(self, seconds: float) -> float:
        if seconds <= LOW_S:
            return 0.0
        if seconds >= HIGH_S:
            return 1.0
        cum = self._cum()
        i = self._bin(seconds)
        inside = math.log(seconds / _EDGES[i]) / _LOG_RATIO
        return cum[i] + (cum[i + 1] - cum[i]) * inside

    def _broad_cdf(self, seconds: float) -> float:
        low, high = self._broad
        if seconds <= low:
            return 0.0
        if seconds >= high:
            return 1.0
        return math.log(seconds / low) / math.log(high / low)

    def cdf(self, seconds: float) -> float:
        """P(run time ≤ seconds)."""
        if self.widened <= 0:
            return self._hist_cdf(seconds)
        return (1 - self.widened) * self._hist_cdf(seconds) + self.widened * self._broad_cdf(
            seconds
        )

    def quantile(self, p: float) -> float:
        """The run time not exceeded with probability ``p`` (bisection on the CDF)."""
        if self.total == 0:
            raise ValueError("an empty model has no quantiles")
        p = min(max(p, 1e-9), 1 - 1e-9)
        cum = self._cum()
        if self.widened <= 0:
            i = min(_BINS - 1, max(0, bisect.bisect_left(cum, p) - 1))
            span = cum[i + 1] - cum[i]
            inside = (p - cum[i]) / span if span > 0 else 0.0
            return _EDGES[i] * BIN_RATIO**inside
        low, high = LOW_S, HIGH_S
        for _ in range(60):
            mid = math.sqrt(low * high)
            if self.cdf(mid) < p:
                low = mid
            else:
                high = mid
        return math.sqrt(low * high)

    def expected_remaining(self, age: float, until: float) -> float | None:
        """E[run time − age | run time > age], over the model's range up to ``until``."""
        survive = 1 - self.cdf(age)
        if survive <= 1e-6:
            return None
        # E[(T - a)+] = ∫_a^∞ S(t) dt, summed on the log grid up to ``until``
        area, t = 0.0, age
        while t < until:
            step = max(0.05, t * (BIN_RATIO - 1))
            area += (1 - self.cdf(t + step / 2)) * step
            t += step
        return area / survive


# --------------------------------------------------------------------------- planning


@dataclass(frozen=True)
class Plan:
    """Poll ages (seconds since the task started running) for one model version.

    ``alternate`` is the sparser plan just past the λ where the late mass jumps
    above the budget; a share ``alternate_share`` of the tasks follows it, so that
    the expected late mass is the budget itself (the Lagrangian solutions move in
    jumps; mixing the two neighbours fills the gap). Figures are of the mixture.
    """

    polls: tuple[float, ...]
    end: float  # past this age the task has outlived the model: adaptive schedule
    expected_requests: float
    miss_probability: float
    checkpoints: Mapping[float, float]
    alternate: tuple[float, ...] = ()
    alternate_share: float = 0.0
    target: float = 1.5  # the notice target the plan was made for (seconds)

    def for_task(self, draw: float) -> tuple[float, ...]:
        """The polls of a task whose uniform ``draw`` (fixed per task) is given."""
        return self.alternate if draw < self.alternate_share else self.polls


def plan_polls(
    model: RunTimeModel,
    target: float,
    *,
    miss: float = PLAN_MISS,
    tail: float = PLAN_TAIL,
    margin: float = 0.05,
    pause: Callable[[], None] | None = None,
) -> Plan:
    """Place polls to minimise expected requests with P(notice > target) ≤ ``miss``.

    A task ending in (s, s'] is noticed at s' (late by s' − T), so a gap g after a
    poll at s makes late every task ending in (s, s + g − τ), τ = target −
    ``margin`` (timer slack, plus the status round trip the caller measured).
    Expected requests = Σ S(sᵢ) (a poll happens while the task still runs).
    Minimise requests + λ·late mass by dynamic programming on a grid of τ/4
    (backwards: V(s) = min_g S(s) + λ·late(s, g) + V(s + g)), and bisect λ until
    the late mass is at most ``miss`` (the 5 % a p95 target allows, less 1 % for
    model error). Where the density is high the penalty forces g = τ; where
    it is low (the start, a valley between two modes, the far tail) gaps grow,
    but never past max(floor, ``MAX_GAP_SHARE`` × age), the floor being the smaller
    of ``MAX_GAP_FLOOR_S`` and half the median run time.
    The two plans either side of the λ where the late mass jumps are mixed to use
    the budget exactly (:class:`Plan`). Past the ``tail`` quantile the adaptive
    schedule takes over (it keeps every gap within the target). Computed once per
    model version and shared by every task of the key. ``pause``, when given, is
    called every ``PAUSE_ROWS`` rows of each pass (a worker's plan lets the loop run).
    """
    tau = max(0.05, target - margin)
    step = tau / 4
    floor = min(MAX_GAP_FLOOR_S, MAX_GAP_MEDIAN_SHARE * model.quantile(0.5))
    # The range: to the ``tail`` quantile, but not past three times the 95 % one
    # (a few hung tasks must not stretch it to hours) nor past MAX_GRID steps.
    end = min(model.quantile(tail), 3 * model.quantile(0.95), MAX_GRID * step)
    n = max(1, math.ceil(end / step))
    ks = sorted({*range(4, 13), *(int(4 * 1.15**j) for j in range(60) if 4 * 1.15**j <= n + 4)})
    cdf_at = [model.cdf(i * step) for i in range(n + 1)]
    survive = [1 - f for f in cdf_at]
    # The gaps allowed after each grid point and the late mass of each are the same for
    # every λ: worked out once, not in each of the 22 passes (the same plans, 2.5x faster)
    gaps = [
        [
            (i + k, max(0.0, cdf_at[min(i + k - 4, n)] - cdf_at[i]))
            for k in ks
            if k == 4 or k * step <= max(floor, MAX_GAP_SHARE * i * step)
        ]
        for i in range(n)
    ]

    def run(lam: float) -> tuple[list[float], float, float]:
        value = [0.0] * (n + ks[-1] + 1)  # past the end: nothing more to pay
        choice = [4] * (n + 1)
        for i in range(n - 1, -1, -1):
            if pause is not None and not i % PAUSE_ROWS:
                pause()
            survive_i, best, best_j = survive[i], math.inf, i + 4
            for j, late in gaps[i]:
                v = survive_i + lam * late + value[j]
                if v < best:
                    best, best_j = v, j
            value[i], choice[i] = best, best_j - i
        polls: list[float] = []
        i, late_total, cost = 0, 0.0, 0.0
        while i < n:
            k = choice[i]
            late_total += max(0.0, cdf_at[min(i + k - 4, n)] - cdf_at[i])
            cost += survive[i]
            i += k
            polls.append(i * step)
        return polls, late_total, cost

    low, high = 1.0, 1e7
    chosen, over = run(high), run(low)
    for _ in range(20):
        lam = math.sqrt(low * high)
        attempt = run(lam)
        if attempt[1] <= miss:
            high, chosen = lam, attempt
        else:
            low, over = lam, attempt
    polls, late, cost = chosen
    share = 0.0
    if over[1] > miss > late and over[2] < cost:
        share = (miss - late) / (over[1] - late)
    return Plan(
        tuple(polls),
        max(polls[-1], over[0][-1]),
        (1 - share) * cost + share * over[2],
        (1 - share) * late + share * over[1],
        {q: model.quantile(q) for q in CHECKPOINTS},
        tuple(over[0]),
        share,
        target,
    )


# --------------------------------------------------------------------------- ledger rows


def observations_from_rows(
    rows: Iterable[Sequence[Any]], notice_delay: Any
) -> Iterable[tuple[str, Mapping[str, Any], Observation]]:
    """(endpoint, payload, observation) from raw ledger rows; bad rows are skipped
    with a log line, never raised.

    A row is ``(request_id, endpoint, payload_json, handle_at, running_at, done_at,
    finished_at, ok)``. With ``running_at`` and ``done_at`` (the polls that first saw
    the task running and done) each end is bracketed: the start between
    ``max(handle_at, running_at − QUEUE_CAP)`` and ``running_at``, the end between
    ``done_at − 2·notice_delay(age)`` and ``done_at`` (``notice_delay(seconds)``: the
    expected notice delay of the schedule that polled it, half its interval).
    Without them (older rows), created → result recorded less that notice delay.
    """
    for row in rows:
        try:
            _request_id, endpoint, payload_text, handle_at, running_at, done_at, finished_at, ok = (
                row
            )
            if not ok:
                continue
            payload = json.loads(payload_text)
            if not isinstance(endpoint, str) or not isinstance(payload, dict):
                raise ValueError("endpoint or payload of the wrong type")
            if running_at is not None and done_at is not None:
                start = (
                    max(float(handle_at), float(running_at) - ROW_START_SLACK_S),
                    float(running_at),
                )
                delay = float(notice_delay(float(done_at) - float(running_at)))
                observation = observe_bracket(start, (float(done_at) - 2 * delay, float(done_at)))
                if observation is None or not observation.seconds < HIGH_S:
                    raise ValueError(f"times {running_at!r} -> {done_at!r} are out of range")
            else:
                seconds = float(finished_at) - float(handle_at)
                delay = float(notice_delay(seconds))
                if not (math.isfinite(seconds) and 0 < seconds - delay < HIGH_S):
                    raise ValueError(f"run time {seconds!r} s is out of range")
                observation = Observation(seconds - delay, delay)
        except (ValueError, TypeError, json.JSONDecodeError) as exc:
            ident = row[0] if isinstance(row, Sequence) and row else "?"
            log.info("genwidgets: ledger row %s skipped by the run-time model: %s", ident, exc)
            continue
        yield endpoint, payload, observation
