"""The package's worker threads: blocking work kept off the engine's loop and the caller.

One mechanism for every piece of work that must wait without holding up the engine or
the notebook: a batch's sending and finishing, a grid's creates, a view's thumbnail or
lasting face, an :class:`~genwidgets.AsyncClient`'s blocking call, the simulator's
media. A :class:`Workers` is a ``concurrent.futures.Executor`` of daemon threads (a
download that never ends must not hold the interpreter open at exit, as a
``ThreadPoolExecutor``'s threads do), started as work arrives up to its bound, each
ending after ``idle`` seconds with nothing to do: docs/decisions.md#threads. A process
forked from one starts its pools afresh (:func:`_forget_threads`).
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import logging
import os
import sys
import threading
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

__all__ = ["RUNS", "THREAD_NAME", "Work", "Workers", "wait_within"]

log = logging.getLogger("genwidgets")

T = TypeVar("T")
#: every worker thread's name: one kind of thread, whatever it runs
THREAD_NAME = "genwidgets-worker"


class Work(concurrent.futures.Future[Any]):
    """A submitted piece of work: a future that also knows the thread running it."""

    def __init__(self) -> None:
        super().__init__()
        self.ident: int | None = None

    def alive(self) -> bool:
        """Queued or running: not ended."""
        return not self.done()

    def join(self, timeout: float | None) -> bool:
        """Wait until it has ended (at most ``timeout`` seconds); whether it has. A
        work joining itself returns at once (it cannot end while it waits)."""
        if self.ident == threading.get_ident():
            return False
        done, _ = concurrent.futures.wait([self], timeout)
        return bool(done)

    @property
    def on_this_thread(self) -> bool:
        return self.ident == threading.get_ident()


class Workers(concurrent.futures.Executor):
    """Up to ``workers`` daemon threads running submitted work in order of submission.

    ``failed``, when given, names what fails in a log line (``"a view update"``): work
    whose future nobody reads (a thumbnail) still says that it failed."""

    def __init__(self, workers: int, *, idle: float = 5.0, failed: str | None = None) -> None:
        self.workers = workers
        self.idle = idle
        self.failed = failed
        #: guards everything below; a thread takes work and stops being counted as
        #: waiting in one hold of it, so a thread that has taken work is never free
        self._lock = threading.Condition()
        self._work: collections.deque[tuple[Work, Callable[[], Any]]] = collections.deque()
        self._running = 0
        self._waiting = 0  # threads waiting for work
        self._outstanding = 0
        _POOLS.add(self)

    def _forget(self) -> None:
        """In a forked child (no thread of the parent's runs there): no thread, no
        work. Counted as the parent's, the child's work waited for ever for a thread it
        believed it had (review-21: a forked kernel's ledger keeper never ran); the
        parent's queued work is the parent's to do (a batch's sender run twice would pay
        twice); the lock, which a parent's thread may have held, is a new one."""
        self._lock = threading.Condition()
        self._work = collections.deque()
        self._running = self._waiting = self._outstanding = 0

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Work:
        """Run ``fn(*args, **kwargs)`` on a worker thread; its :class:`Work` holds what it
        returned or raised."""
        work = Work()
        with self._lock:
            self._outstanding += 1
            self._work.append((work, lambda: fn(*args, **kwargs)))
            self._grow()
            self._lock.notify()
        return work

    def _grow(self) -> None:
        """A thread more when more work waits than threads wait for it (up to the bound;
        under the lock). Counting a thread that took work as free once let a batch's
        sender wait behind its finisher, which waits for the sender: for ever."""
        if self._waiting < len(self._work) and self._running < self.workers:
            self._running += 1
            threading.Thread(target=self._run, name=THREAD_NAME, daemon=True).start()

    @property
    def pending(self) -> int:
        """Work submitted and not yet ended (for tests and diagnostics)."""
        with self._lock:
            return self._outstanding

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Threads end by themselves once idle (the pool stays usable); with
        ``cancel_futures`` the work not yet begun is cancelled."""
        if not cancel_futures:
            return
        with self._lock:
            dropped, self._work = self._work, collections.deque()
            self._outstanding -= len(dropped)
        for work, _call in dropped:
            work.cancel()

    def _run(self) -> None:
        try:
            self._serve()
        except BaseException:  # a KeyboardInterrupt in a work ends this thread, counted:
            with self._lock:  # the work queued meanwhile gets another
                self._running -= 1
                self._grow()
            raise

    def _serve(self) -> None:
        while True:
            with self._lock:
                deadline = time.monotonic() + self.idle
                while not self._work:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        self._running -= 1
                        return
                    self._waiting += 1
                    self._lock.wait(left)
                    self._waiting -= 1
                work, call = self._work.popleft()
            try:
                self._one(work, call)
            finally:
                with self._lock:
                    self._outstanding -= 1

    def _one(self, work: Work, call: Callable[[], Any]) -> None:
        if not work.set_running_or_notify_cancel():
            return
        work.ident = threading.get_ident()
        try:
            result = call()
        except BaseException as exc:
            if self.failed is not None:
                log.error("genwidgets: %s failed", self.failed, exc_info=exc)
            work.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
        else:
            work.set_result(result)


#: every pool of this process, started afresh in a forked child
_POOLS: weakref.WeakSet[Workers] = weakref.WeakSet()


def _forget_threads() -> None:
    """After ``fork``, in the child: each pool as new (see :meth:`Workers._forget`)."""
    for pool in list(_POOLS):
        pool._forget()  # noqa: SLF001 - the module's own pools


if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(after_in_child=_forget_threads)

#: work with no pool of its own, often long: a batch's sender and finisher, a grid's
#: creates, a served process watching its parent, an AsyncJob's blocking calls. The
#: bound is only a guard: each gets its thread
RUNS = Workers(256)


async def wait_within(awaitable: Awaitable[T], seconds: float | None) -> T:
    """``await awaitable``, ``TimeoutError`` past ``seconds`` (None: no limit), and a
    cancel never lost. ``asyncio.wait_for`` of Python 3.10 and 3.11 returns a result that
    came together with a cancel and drops the cancel (a hung-up request went on, a
    stopped poll loop polled again); ``asyncio.timeout`` (3.11) keeps it."""
    if seconds is None:
        return await awaitable
    if sys.version_info >= (3, 11):
        async with asyncio.timeout(seconds):
            return await awaitable
    return await asyncio.wait_for(awaitable, seconds)  # Python 3.10: its race remains
