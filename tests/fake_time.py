"""Virtual time for tests of what waits (the status budget, the rate gate): sleeping
moves a fake clock, never the wall clock."""

from __future__ import annotations

import asyncio
import heapq
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class FakeTime:
    """Virtual time: sleepers wait in a heap; :meth:`run` wakes the earliest one
    whenever everything else is blocked, moving the clock to its wake time."""

    def __init__(self, yields: int = 20) -> None:
        self.now = 0.0
        self.yields = yields
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = 0

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._seq += 1
        heapq.heappush(self._sleepers, (self.now + max(0.0, seconds), self._seq, future))
        await future

    async def run(self, work: Coroutine[Any, Any, T]) -> T:
        task = asyncio.ensure_future(work)
        for _ in range(1_000_000):
            for _ in range(self.yields):  # let everything runnable run
                await asyncio.sleep(0)
            if task.done():
                return task.result()
            assert self._sleepers, "deadlock: nothing sleeps and the work is not done"
            wake, _, future = heapq.heappop(self._sleepers)
            self.now = max(self.now, wake)
            if not future.done():
                future.set_result(None)
        raise AssertionError("the work never finished")
