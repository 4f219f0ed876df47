"""A client's status budget: at most so many status requests a second, the most
urgent first (a polling idea; the engine only runs it). Why the shape:
docs/decisions.md#polling.
"""

from __future__ import annotations

import asyncio
import collections
import heapq
import math
import time
from collections.abc import Callable, Coroutine
from typing import Any

__all__ = ["StatusBudget"]


class StatusBudget:
    """At most ``rate`` status requests per second for one client, most urgent first.

    No window of ``window`` seconds (1 s, or 1 / ``rate`` below one a second)
    ever holds more than ``rate`` × ``window`` grants (the grant times of the last
    window are kept), and grants are at least 0.5 / ``rate`` apart: no burst, and
    the window (not the spacing) sets the pace, so timers that fire late on a busy
    loop do not lower the sustained rate. A request
    that finds the budget busy waits in a queue ordered by enqueue time + half its priority (its
    expected finish in seconds, capped at a minute): a job about to finish goes
    ahead of one that has waited up to half a minute longer, and nothing starves.
    ``hold()`` (the rate gate's remaining wait after a refused follow-up; a refused
    create holds creates only) stops all grants while it is positive, so a reopened
    gate meets no burst. Engine thread only.
    """

    #: how far back a late dispatcher may date the slots it missed (seconds)
    CATCH_UP_S = 0.02
    #: priority seconds count this much against seconds already waited
    PRIORITY_WEIGHT = 0.5
    PRIORITY_CAP = 60.0

    def __init__(
        self,
        rate: float,
        *,
        hold: Callable[[], float] | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Coroutine[Any, Any, Any]] = asyncio.sleep,
    ) -> None:
        if isinstance(rate, bool) or not isinstance(rate, (int, float)):
            raise TypeError(
                f"max_status_rate must be a number of requests per second, not {rate!r}"
            )
        if not (math.isfinite(rate) and rate > 0):
            raise ValueError(f"max_status_rate must be a positive number, not {rate!r}")
        self.rate = float(rate)
        self.spacing = 0.5 / self.rate
        self.window = max(1.0, 1.0 / self.rate)
        self.limit = max(1, math.floor(self.rate * self.window + 1e-9))
        self._recent: collections.deque[float] = collections.deque(maxlen=self.limit)
        self.hold = hold or (lambda: 0.0)
        self._clock = clock
        self._sleep = sleep
        self._waiting: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = 0
        self._dispatcher: asyncio.Task[None] | None = None
        self.granted = 0

    def __repr__(self) -> str:
        return f"<StatusBudget {self.rate:g}/s, {len(self._waiting)} waiting>"

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def _ready_at(self) -> float:
        """The earliest time the next grant may happen."""
        if not self._recent:
            return -math.inf
        at = self._recent[-1] + self.spacing
        if len(self._recent) == self.limit:
            at = max(at, self._recent[0] + self.window + 1e-9)  # float slack: strictly after
        return at

    def _grant(self, now: float) -> None:
        self._recent.append(now)
        self.granted += 1

    async def acquire(self, priority: float = 0.0) -> None:
        """Wait for a slot; ``priority`` in seconds (lower goes first)."""
        now = self._clock()
        if not self._waiting and now >= self._ready_at() and self.hold() <= 0:
            self._grant(now)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._seq += 1
        rank = now + self.PRIORITY_WEIGHT * min(max(priority, 0.0), self.PRIORITY_CAP)
        heapq.heappush(self._waiting, (rank, self._seq, future))
        if self._dispatcher is None or self._dispatcher.done():
            self._dispatcher = asyncio.ensure_future(self._dispatch())
        await future

    async def _dispatch(self) -> None:
        caught_up = True  # False after sleeping for the spacing (not for a closed gate)
        while self._waiting:
            now = self._clock()
            ready, hold = self._ready_at(), self.hold()
            if hold > 0 or ready > now:
                caught_up = hold > 0
                await self._sleep(max(ready - now, hold))
                continue
            _, _, future = heapq.heappop(self._waiting)
            if future.done():  # its job was cancelled while waiting
                continue
            # A loop that wakes late (a busy machine) grants the slots it slept through
            # (at most CATCH_UP_S of them) now, not one per wake-up: at 1,000 a second a
            # wake-up per grant is more than a loaded loop makes, and polls queued here
            self._grant(now if caught_up else max(ready, now - self.CATCH_UP_S))
            future.set_result(None)
