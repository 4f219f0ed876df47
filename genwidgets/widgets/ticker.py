"""The one ticker thread and the write throttle shared by every live view.

Job callbacks run on the engine's thread, so views keep moving while cells block. A
view writes only through its :class:`Throttle` (at most ~10 writes a second, the state
read at write time, terminal writes at once); one shared :data:`TICKER` thread moves the
views that change with time: docs/decisions.md#live-writes.
"""

from __future__ import annotations

import contextvars
import logging
import math
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from ..jobs.engine import engine_waits_forbidden, on_engine_thread

__all__ = [
    "MIN_INTERVAL",
    "TICKER",
    "TICK_PERIOD",
    "Throttle",
    "Tickable",
    "Ticker",
    "as_current_request",
    "guarded",
    "stop_following",
]

log = logging.getLogger(__name__)

#: Shortest time between two writes of one view (about 10 writes a second).
MIN_INTERVAL = 0.1
#: Period of the shared elapsed-time tick.
TICK_PERIOD = 1.0


class Tickable(Protocol):
    def tick(self) -> None: ...


class Ticker:
    """One daemon thread that ticks every live view once per period and flushes
    throttled writes when they fall due; it exits when nothing is live."""

    def __init__(self, period: float = TICK_PERIOD) -> None:
        self.period = period
        self._cond = threading.Condition()
        self._live: set[Tickable] = set()
        self._due: dict[Throttle, float] = {}
        self._thread: threading.Thread | None = None
        self._next_tick = 0.0

    def add(self, view: Tickable) -> None:
        with self._cond:
            self._live.add(view)
            self._ensure_running()

    def remove(self, view: Tickable) -> None:
        with self._cond:
            self._live.discard(view)
            self._cond.notify()

    def flush_at(self, throttle: Throttle, when: float) -> None:
        """Ask for ``throttle.flush()`` at monotonic time ``when``."""
        with self._cond:
            self._due[throttle] = min(when, self._due.get(throttle, math.inf))
            self._ensure_running()
            self._cond.notify()

    @property
    def live(self) -> frozenset[Tickable]:
        """The views ticking now (a copy: they may come and go as it is read)."""
        with self._cond:
            return frozenset(self._live)

    @property
    def running(self) -> bool:
        with self._cond:
            return self._thread is not None

    def _ensure_running(self) -> None:
        if self._thread is None:
            self._next_tick = time.monotonic() + self.period
            self._thread = threading.Thread(target=self._run, name="genwidgets-ticker", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    if not self._live and not self._due:
                        self._thread = None
                        return
                    now = time.monotonic()
                    next_due = min(self._due.values(), default=math.inf)
                    wake = min(next_due, self._next_tick if self._live else math.inf)
                    if now >= wake:
                        break
                    self._cond.wait(wake - now)
                flush = [t for t, at in self._due.items() if at <= now]
                for t in flush:
                    del self._due[t]
                tick: list[Tickable] = []
                if self._live and now >= self._next_tick:
                    tick = list(self._live)
                    self._next_tick = now + self.period
            for throttle in flush:
                guarded(throttle.flush)
            for view in tick:
                guarded(view.tick)


def guarded(fn: Callable[[], Any]) -> None:
    """Run a view callback; never let it raise into the engine or ticker thread."""
    try:
        fn()
    except Exception:
        log.exception("genwidgets: a view update failed")


def as_current_request(fn: Callable[[], Any]) -> Any:
    """Run ``fn`` in an empty :mod:`contextvars` context, so the kernel messages it
    sends are labelled with the request the kernel is handling *now*, as from a plain
    thread: ipykernel 7 keeps the parent header in context variables, and the engine's
    task carries the submitting cell's (docs/decisions.md#live-writes)."""
    return contextvars.Context().run(fn)


#: The process-wide ticker shared by task views, boards and sweeps.
TICKER = Ticker()


def stop_following(view: Tickable, removers: list[Callable[[], Any]]) -> None:
    """Take a job's view off the ticker and drop its job callbacks (a failing remover
    is contained, so the others still run)."""
    TICKER.remove(view)
    for remove in removers:
        guarded(remove)
    removers.clear()


class Throttle:
    """Coalesce write requests: at most one ``write()`` per ``interval``, the single
    writer of its view (under :attr:`lock`); the rest are flushed by the ticker.
    On an engine thread ``request()`` never takes the lock, and ``write`` may not wait
    on the engine: docs/decisions.md#no-waits-under-locks.
    """

    def __init__(
        self,
        write: Callable[[], None],
        *,
        interval: float = MIN_INTERVAL,
        ticker: Ticker | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.lock = threading.RLock()
        self._write = write
        self.interval = interval
        self._ticker = ticker or TICKER
        self._clock = clock
        self._last = -math.inf
        self._dirty = False
        self._forced = False
        self.writes = 0

    def request(self, *, force: bool = False) -> None:
        if on_engine_thread():  # an engine callback never waits on a view
            self._dirty = True
            self._forced |= force
            due = self._clock() if force else self._last + self.interval
            self._ticker.flush_at(self, due)
            return
        with self.lock:
            now = self._clock()
            if force or now - self._last >= self.interval:
                self._write_now(now)
            elif not self._dirty:
                self._dirty = True
                self._ticker.flush_at(self, self._last + self.interval)

    def flush(self) -> None:
        """The ticker's call: the write asked for, unless a write went out since it was
        asked (a late ticker on a busy machine): then it is asked again for when the
        interval allows, so no two writes are closer than ``interval`` but forced ones."""
        with self.lock:
            if not self._dirty:
                return
            now, due = self._clock(), self._last + self.interval
            if not self._forced and now < due:  # the sum the ticker compares with
                self._ticker.flush_at(self, due)
                return
            self._write_now(now)

    @property
    def dirty(self) -> bool:
        return self._dirty

    def _write_now(self, now: float) -> None:
        self._dirty = self._forced = False
        self._last = now
        self.writes += 1
        with engine_waits_forbidden(f"a view's write ({self._write.__qualname__})"):
            as_current_request(self._write)
