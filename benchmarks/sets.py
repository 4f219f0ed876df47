"""The task sets the polling benchmark polls: seeded run times, the endpoint of each task,
how the tasks arrive, and the sample a fixed poller measures.

Every task runs on a simulator endpoint that answers with JSON only, so completion times
are set by ``X-Sim-Duration`` alone (no media to encode). The mixed set's two kinds run
on two such endpoints because the schedule learns per endpoint (and billed payload): an
image endpoint and a video endpoint are two keys, and so are these two.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

#: the endpoint every task of a one-kind set runs on, and the mixed set's images
ENDPOINT = "asset-get"
#: the mixed set's videos: another JSON-only endpoint, so another key
VIDEO_ENDPOINT = "asset-group-create"
PAYLOADS: dict[str, dict[str, Any]] = {
    ENDPOINT: {"Id": "asset-demo"},
    VIDEO_ENDPOINT: {"Name": "bench"},
}
#: tasks of a warm-up: another draw of the same distribution (the next seed)
WARM_UP = 50


class Task(NamedTuple):
    endpoint: str
    seconds: float


@dataclass(frozen=True)
class Arrivals:
    """Tasks arrive ``batch`` at once every ``every`` seconds (0: all at once)."""

    batch: int = 0
    every: float = 0.0

    def offsets(self, count: int) -> list[float]:
        """When each of ``count`` tasks is submitted, seconds after the first."""
        if self.batch <= 0:
            return [0.0] * count
        return [(i // self.batch) * self.every for i in range(count)]

    def batch_of(self, index: int) -> int:
        """Which batch the task of this index arrives in (0 for all when all at once)."""
        return index // self.batch if self.batch > 0 else 0

    def span(self, count: int) -> float:
        return max(self.offsets(count), default=0.0)


#: every task submitted at once
ALL_AT_ONCE = Arrivals()


def _lognormal(rng: random.Random, median: float, sigma: float) -> float:
    return rng.lognormvariate(math.log(median), sigma)


class _Draw:
    """A seeded draw; the warm-up is the same draw with the next seed."""

    count: int
    seed: int

    def tasks(self) -> list[Task]:
        raise NotImplementedError

    def durations(self) -> list[float]:
        return [t.seconds for t in self.tasks()]

    def warm_up(self, count: int = WARM_UP) -> list[Task]:
        """Another draw of the same distribution (the next seed), ``count`` tasks long."""
        return replace(self, count=count, seed=self.seed + 1).tasks()  # type: ignore[type-var]


@dataclass(frozen=True)
class TaskSet(_Draw):
    """Run times in seconds: lognormal(ln median, sigma), capped, seeded."""

    count: int = 300
    median_s: float = 20.0
    sigma: float = 0.7
    cap_s: float = 150.0
    floor_s: float = 0.5
    seed: int = 20240917

    def tasks(self) -> list[Task]:
        rng = random.Random(self.seed)
        raw = [_lognormal(rng, self.median_s, self.sigma) for _ in range(self.count)]
        return [Task(ENDPOINT, round(min(self.cap_s, max(self.floor_s, d)), 3)) for d in raw]

    def describe(self) -> str:
        return f"lognormal(median {self.median_s:g} s, sigma {self.sigma:g})"


@dataclass(frozen=True)
class BimodalTaskSet(_Draw):
    """``short_share`` lognormal(short median, sigma), the rest lognormal(long median, sigma)."""

    count: int = 300
    short_share: float = 0.3
    short_median_s: float = 4.0
    long_median_s: float = 40.0
    sigma: float = 0.4
    seed: int = 20241123

    def tasks(self) -> list[Task]:
        rng = random.Random(self.seed)
        out = []
        for _ in range(self.count):
            median = self.short_median_s if rng.random() < self.short_share else self.long_median_s
            out.append(Task(ENDPOINT, round(_lognormal(rng, median, self.sigma), 3)))
        return out

    def describe(self) -> str:
        return (
            f"{self.short_share:.0%} lognormal(median {self.short_median_s:g} s, sigma "
            f"{self.sigma:g}) + {1 - self.short_share:.0%} lognormal(median "
            f"{self.long_median_s:g} s, sigma {self.sigma:g})"
        )


@dataclass(frozen=True)
class MixedTaskSet(_Draw):
    """Images (``ENDPOINT``) and videos (``VIDEO_ENDPOINT``) interleaved in a seeded order:
    ``image_share`` lognormal(image median, image sigma), the rest lognormal(video median,
    video sigma). A video endpoint at one duration and resolution (one key) varies less
    than an image endpoint's short tasks, hence its smaller sigma."""

    count: int = 200
    image_share: float = 0.6
    image_median_s: float = 3.0
    image_sigma: float = 0.5
    video_median_s: float = 60.0
    video_sigma: float = 0.3
    seed: int = 20261201

    def tasks(self) -> list[Task]:
        rng = random.Random(self.seed)
        images = round(self.count * self.image_share)
        kinds = [ENDPOINT] * images + [VIDEO_ENDPOINT] * (self.count - images)
        rng.shuffle(kinds)
        out = []
        for endpoint in kinds:
            if endpoint == ENDPOINT:
                seconds = _lognormal(rng, self.image_median_s, self.image_sigma)
            else:
                seconds = _lognormal(rng, self.video_median_s, self.video_sigma)
            out.append(Task(endpoint, round(seconds, 3)))
        return out

    def medians(self) -> dict[str, float]:
        """The median run time of each kind, by endpoint (what its notice target follows)."""
        return {ENDPOINT: self.image_median_s, VIDEO_ENDPOINT: self.video_median_s}

    def describe(self) -> str:
        return (
            f"{self.image_share:.0%} images lognormal(median {self.image_median_s:g} s, sigma "
            f"{self.image_sigma:g}) and {1 - self.image_share:.0%} videos lognormal(median "
            f"{self.video_median_s:g} s, sigma {self.video_sigma:g}), interleaved"
        )


#: the sets of the full run
TWENTY = TaskSet()
BIMODAL = BimodalTaskSet()
SHORT = TaskSet(count=300, median_s=3.0, sigma=0.5, floor_s=0.05, seed=20261130)
MIXED = MixedTaskSet()


def sample(tasks: Sequence[Task], count: int) -> list[Task]:
    """``count`` tasks spread evenly over the run times (the shortest, the longest and
    evenly between, in rank), so that a fixed poller measured on them sees the set's
    whole range; all of them when ``count`` is not smaller."""
    if count >= len(tasks) or count <= 0:
        return list(tasks)
    ranked = sorted(tasks, key=lambda t: t.seconds)
    if count == 1:
        return [ranked[len(ranked) // 2]]
    step = (len(ranked) - 1) / (count - 1)
    return [ranked[round(i * step)] for i in range(count)]


def figures(tasks: Sequence[Task]) -> dict[str, Any]:
    """Count, median, mean and longest run time of a set."""
    seconds = sorted(t.seconds for t in tasks)
    middle = len(seconds) // 2
    median = seconds[middle] if len(seconds) % 2 else (seconds[middle - 1] + seconds[middle]) / 2
    return {
        "count": len(seconds),
        "measured_median_s": round(median, 3),
        "mean_s": round(sum(seconds) / len(seconds), 3),
        "max_s": max(seconds),
    }


def notice_target(seconds: float) -> float:
    """The notice target of a task of ``seconds`` (the schedule's own rule)."""
    from genwidgets.jobs.polling import notice_in_proportion

    return notice_in_proportion(seconds)
