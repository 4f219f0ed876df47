"""The client's rate gate: when the gateway says wait, requests wait; while creates are
refused for the rate limit, they are paced to what the gateway lets through (a refused
create closes the gate for creates only, a refused follow-up for every request). The
cycles and why: docs/decisions.md#create-pacing.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ..errors import RateLimited

__all__ = ["GATE_CEILING", "MAX_RATE_WAIT_S", "CreateTicket", "RateGate"]

#: The longest Retry-After we wait out silently.
MAX_RATE_WAIT_S = 120.0
#: the longest one rate-limit answer closes the gate (seconds): a wait past ``max_wait``
#: is refused at once (``RateLimited``), and the gateway asked again after this (one
#: answer saying 10**9 s, inf or a date in 2100 refused every request for as long)
GATE_CEILING = 600.0
#: creates passed in one cycle beyond its burst, after which creates go unpaced again
UNPACED_AFTER = 32
#: the cycle of a create sent while creates were not paced
UNPACED = 0


@dataclass
class CreateTicket:
    """One create's leave to be sent; its answer is told back through :meth:`RateGate.done`."""

    cycle: int
    #: True refused for the rate limit, False answered otherwise, None no answer
    refused: bool | None = None


class RateGate:
    """One gate per gateway, on the engine's loop (``close``/``done`` from any of its
    coroutines). ``clock`` and ``sleep`` time the waits; tests pass fakes that agree."""

    def __init__(
        self,
        max_wait: float = MAX_RATE_WAIT_S,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        self.max_wait = max_wait
        self._clock = clock
        self._sleep = sleep
        self._open_at = 0.0  # every request
        self._creates_open_at = 0.0  # creates only
        # when the gateway's asked waits end (every request, creates): said, held at most
        # GATE_CEILING (a 3600 s quota was said as 600 s, and retried 50 minutes early)
        self._asked_until = {False: 0.0, True: 0.0}
        # create pacing: None while creates are not refused
        self._cycle: int | None = None
        self._cycles = 0
        self._burst = 1  # creates the gateway let through in the last cycle
        self._sent = 0  # creates sent in this cycle
        self._passed = 0  # and answered without a refusal
        self._queue: list[tuple[int, int, asyncio.Future[int]]] = []  # attempt, order
        self._queued = 0
        # cancels: refused for the rate limit, and none answered otherwise since
        self._cancels_refused = False
        self._cancel_trying = False  # a cancel holds the turn (take_cancel_turn)

    @property
    def remaining(self) -> float:
        """Seconds every request still waits (a follow-up was refused)."""
        return max(0.0, self._open_at - self._clock())

    @property
    def creates_remaining(self) -> float:
        """Seconds a create still waits."""
        return max(0.0, max(self._open_at, self._creates_open_at) - self._clock())

    @property
    def paced(self) -> bool:
        return self._cycle is not None

    def asked(self, *, create: bool = False) -> float:
        """Seconds the gateway asked still to wait (for a create: its and every request's
        asked wait), said to the user, as the gate holds at most ``GATE_CEILING``."""
        until = max(self._asked_until[False], self._asked_until[create])
        return max(0.0, until - self._clock())

    def close(self, seconds: float, *, creates_only: bool = False) -> None:
        now = self._clock()
        at = now + min(seconds, GATE_CEILING)
        self._asked_until[creates_only] = max(self._asked_until[creates_only], now + seconds)
        if creates_only:
            self._creates_open_at = max(self._creates_open_at, at)
        else:
            self._open_at = max(self._open_at, at)

    async def wait(
        self,
        *,
        endpoint: str | None = None,
        request_id: str | None = None,
        create: bool = False,
        urgent: bool = False,
    ) -> None:
        """Until the gate is open (for a create: both gates), or :class:`RateLimited`
        when the gateway asks for more than ``max_wait``. ``urgent`` (a cancel's first
        try) passes at once: a cancel stops the billing, and its refusal costs nothing;
        its retries and resends wait, and so does every cancel while the gateway refuses
        cancels (docs/decisions.md#cancel-kept)."""
        if urgent and not create and not self._cancels_refused:
            return
        left = (lambda: self.creates_remaining) if create else (lambda: self.remaining)
        if (remaining := left()) > self.max_wait:
            raise RateLimited(
                "Rate limit exceeded, and the gateway asks for a longer wait than "
                f"{self.max_wait:.0f} s",
                retry_after=max(remaining, self.asked(create=create)),
                code="RATE_LIMIT_EXCEEDED",
                endpoint=endpoint,
                request_id=request_id,
            )
        while (remaining := left()) > 0:
            await self._sleep(remaining)

    # ---------------------------------------------------------------- cancels

    @property
    def cancels_refused(self) -> bool:
        """The last cancel answered was refused for the rate limit."""
        return self._cancels_refused

    def cancel_answered(self, *, refused: bool) -> None:
        """A cancel's answer: ``refused`` for the rate limit, or not."""
        self._cancels_refused = refused

    def take_cancel_turn(self, endpoint: str, request_id: str | None) -> bool:
        """Leave to send a cancel. While the gateway refuses cancels for the rate limit,
        one cancel at a time tries again, when the gate opens (True: this one; give the
        turn back with :meth:`end_cancel_turn`); any other is refused unsent at once
        (:meth:`cancel_waits`: its job keeps it and tries later), never held in a line.
        Else every cancel goes (False)."""
        if not self._cancels_refused:
            return False
        if self._cancel_trying:
            raise self.cancel_waits(endpoint, request_id)
        self._cancel_trying = True
        return True

    def end_cancel_turn(self) -> None:
        self._cancel_trying = False

    def cancel_waits(self, endpoint: str, request_id: str | None) -> RateLimited:
        """Why a cancel was not sent: another is trying while cancels are refused."""
        return RateLimited(
            "cancel not sent: the gateway refuses cancels for the rate limit, and one "
            "cancel at a time tries again as the rate gate opens",
            retry_after=max(self.remaining, self.asked()) or None,
            code="RATE_LIMIT_EXCEEDED",
            endpoint=endpoint,
            request_id=request_id,
        )

    # ---------------------------------------------------------------- create pacing

    def _allowed(self) -> int:
        """Creates this cycle may send: its burst, then one more, then two per pass."""
        beyond = self._passed - self._burst
        return self._burst if beyond < 0 else self._burst + 1 + 2 * beyond

    def _admit(self) -> None:
        """Hand out the tickets the cycle allows: one of its burst (likely to pass) to the
        queued create refused most often, the one beyond it (likely refused) to the one
        refused least; first queued first among equals."""
        while self._queue and (self._cycle is None or self._sent < self._allowed()):
            probe = self._cycle is not None and self._sent >= self._burst
            waiter = min(self._queue, key=lambda w: (w[0] if probe else -w[0], w[1]))
            self._queue.remove(waiter)
            future = waiter[2]
            if future.done():  # cancelled while queued
                continue
            if self._cycle is not None:
                self._sent += 1
            future.set_result(UNPACED if self._cycle is None else self._cycle)

    async def ticket(self, *, attempt: int = 0) -> CreateTicket:
        """Leave to send one create (then :meth:`wait` for the opening, send, and tell
        :meth:`done`); ``attempt``: how often this create was refused already."""
        if self._cycle is None and not self._queue:
            return CreateTicket(UNPACED)
        if not self._queue and self._sent < self._allowed():
            self._sent += 1
            return CreateTicket(self._cycle)  # type: ignore[arg-type]
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._queued += 1
        self._queue.append((attempt, self._queued, future))
        self._admit()
        try:
            return CreateTicket(await future)
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():  # a ticket came with the cancel
                self.done(CreateTicket(future.result()))
            raise

    def done(self, ticket: CreateTicket) -> None:
        """A create's outcome: a refusal starts a cycle (its burst: what passed in the
        one before); a pass widens the cycle; no answer gives the ticket back.

        After a refusal the tickets are handed out on the loop's next turn, so the
        refused create, asking again at once, is among those served."""
        if ticket.refused:
            if self._cycle is None or ticket.cycle == self._cycle:
                self._burst = min(max(1, self._passed), UNPACED_AFTER)
                self._cycles += 1
                self._cycle = self._cycles
                self._sent = self._passed = 0
                asyncio.get_running_loop().call_soon(self._admit)
            return
        if self._cycle is None:
            self._passed += ticket.refused is False  # the burst the first refusal learns
        elif ticket.cycle == self._cycle:
            if ticket.refused is None:
                self._sent -= 1
            else:
                self._passed += 1
                if self._passed - self._burst >= UNPACED_AFTER:
                    self._cycle = None  # creates pass again: full concurrency
                    self._passed = 0
        self._admit()
