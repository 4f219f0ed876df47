"""Work a view needs that may wait on the network, run off every write path.

A view writes under its lock (:class:`~genwidgets.widgets.ticker.Throttle`), and
an engine callback may want that lock; so nothing under it may wait on the
engine (docs/decisions.md#no-waits-under-locks). What a view can only get from
the network (the thumbnail of an output whose bytes are at a URL) is made here,
on a few daemon threads that hold no view's lock, and the view asks for a write
when it is ready. Daemon threads, not a ``ThreadPoolExecutor``: a download that
never ends must not hold the interpreter open at exit.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

from .ticker import guarded

__all__ = ["BACKGROUND", "Background"]


class Background:
    """Up to ``workers`` daemon threads running submitted callables in order of
    submission; a thread exits when it has found nothing to do for ``idle`` s."""

    def __init__(self, workers: int = 2, *, idle: float = 5.0) -> None:
        self.workers = workers
        self.idle = idle
        self._queue: queue.SimpleQueue[Callable[[], Any]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._running = 0
        self._busy = 0
        self._outstanding = 0

    def submit(self, work: Callable[[], Any]) -> None:
        """Run ``work`` on a worker thread; an exception it raises is logged, not raised."""
        with self._lock:
            self._outstanding += 1
        self._queue.put(work)
        with self._lock:
            if self._running - self._busy < self._queue.qsize() and self._running < self.workers:
                self._running += 1
                threading.Thread(
                    target=self._run, name="genwidgets-background", daemon=True
                ).start()

    @property
    def pending(self) -> int:
        """Work submitted and not yet finished (for tests and diagnostics)."""
        with self._lock:
            return self._outstanding

    def _run(self) -> None:
        while True:
            try:
                work = self._queue.get(timeout=self.idle)
            except queue.Empty:
                with self._lock:
                    if self._queue.empty():
                        self._running -= 1
                        return
                continue
            with self._lock:
                self._busy += 1
            try:
                guarded(work)
            finally:
                with self._lock:
                    self._busy -= 1
                    self._outstanding -= 1


#: The process's background workers for views.
BACKGROUND = Background()
