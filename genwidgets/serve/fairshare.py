"""Fair queueing of creates: at most ``rate`` creates a second go upstream from this
process, handed out in turn across the keys that wait (round robin), so one student's
batch of a hundred waits behind the others' single creates instead of in front of them.

A create waits at most ``max_wait`` seconds for its turn; then it is answered
``429`` with a ``Retry-After`` and its reservation released (nothing was sent).
Several processes on one database each keep their own share: give each
``rate / processes`` (docs/decisions.md#serve-http).
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict, deque

from .._workers import wait_within

__all__ = ["MAX_WAIT", "FairGate"]

#: seconds a create waits for its turn, by default (``ServeConfig.queue_wait``)
MAX_WAIT = 30.0


class FairGate:
    """Turns for upstream creates, one every ``1 / rate`` seconds, round robin by key."""

    def __init__(self, rate: float | None, max_wait: float = MAX_WAIT) -> None:
        self.rate, self.max_wait = rate, max_wait
        self._waiting: OrderedDict[str, deque[asyncio.Future[None]]] = OrderedDict()
        self._next_free = 0.0
        self._dispatcher: asyncio.Task[None] | None = None
        #: turns given so far
        self.granted = 0

    def waiting(self) -> int:
        """Creates waiting for a turn (a turn given up stays queued, done, until the
        dispatcher passes it by)."""
        return sum(not turn.done() for queue in self._waiting.values() for turn in queue)

    async def admit(self, key: str) -> float | None:
        """Wait for ``key``'s turn: None once it may go, else the seconds after which to
        try again (it waited ``max_wait`` in vain)."""
        if self.rate is None:
            return None
        now = time.monotonic()
        if not self._waiting and now >= self._next_free:
            self._next_free = now + 1 / self.rate
            self.granted += 1
            return None
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(key, deque()).append(turn)
        if self._dispatcher is None or self._dispatcher.done():
            self._dispatcher = asyncio.get_running_loop().create_task(self._dispatch())
        try:
            await wait_within(asyncio.shield(turn), self.max_wait)
            return None
        except asyncio.TimeoutError:
            if turn.done():  # its turn came as the wait ended: take it
                return None
            turn.cancel()
            return max(1.0, self.waiting() / self.rate)
        except asyncio.CancelledError:  # the request ended (the server stops): no turn taken
            turn.cancel()
            raise

    async def _dispatch(self) -> None:
        assert self.rate is not None
        while self._waiting:
            delay = self._next_free - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            if not self._waiting:
                break
            key, queue = next(iter(self._waiting.items()))
            turn = queue.popleft()
            if queue:
                self._waiting.move_to_end(key)  # the next key's turn comes first
            else:
                del self._waiting[key]
            if not turn.done():
                turn.set_result(None)
                self.granted += 1
                self._next_free = max(self._next_free, time.monotonic() - 1 / self.rate)
                self._next_free += 1 / self.rate
