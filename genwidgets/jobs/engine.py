"""The engine: one private event loop in a daemon thread, shared by every client.

Every network call runs here and the caller waits on a ``concurrent.futures.Future``,
the same in a script, a notebook cell or under ``await``; the caller's loop is never
touched or patched. Why a thread: docs/decisions.md#engine-thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Collection, Coroutine, Iterator
from typing import Any, TypeVar

T = TypeVar("T")
log = logging.getLogger("genwidgets")

#: What the current thread is: an engine's loop thread (``engine``), or a thread
#: that holds a view's lock (``holding``): docs/decisions.md#no-waits-under-locks.
_thread_role = threading.local()


def on_engine_thread() -> bool:
    """True on the loop thread of any engine: code there must never wait on a view."""
    return getattr(_thread_role, "engine", False)


@contextlib.contextmanager
def engine_waits_forbidden(holder: str) -> Iterator[None]:
    """While inside, the current thread holds ``holder`` (a view's lock): a wait on
    the engine from here would deadlock against an engine callback that wants the
    same lock, so :meth:`Engine.run` and :func:`wait_future` refuse it at once."""
    previous = getattr(_thread_role, "holding", None)
    _thread_role.holding = holder
    try:
        yield
    finally:
        _thread_role.holding = previous


def _refuse_wait_under_lock() -> None:
    holder = getattr(_thread_role, "holding", None)
    if holder is not None:
        raise RuntimeError(
            f"genwidgets: {holder} would wait on the engine while holding its lock; "
            "work that needs the network must run off the write path "
            "(docs/decisions.md#no-waits-under-locks)"
        )


class Engine:
    """A daemon thread running an asyncio loop forever."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self.thread = threading.Thread(target=self._run, name="genwidgets-engine", daemon=True)
        self.thread.start()
        self._ready.wait()

    def _run(self) -> None:
        _thread_role.engine = True
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(self._ready.set)
        self.loop.run_forever()

    @property
    def in_engine_thread(self) -> bool:
        return threading.current_thread() is self.thread

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule ``coro`` on the engine loop; thread-safe; cancelling the future cancels it.

        ``asyncio.run_coroutine_threadsafe``, called in a fresh ``contextvars.Context``
        (it starts the task with the context current at its call): otherwise the task
        would keep the caller's context, and ipykernel 7 would label every message the
        job sends later with the cell that submitted it, so nbclient would drop them
        from the saved notebook.
        """
        return contextvars.Context().run(asyncio.run_coroutine_threadsafe, coro, self.loop)

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn`` on the loop, in a fresh context (see :meth:`submit`)."""
        self.loop.call_soon_threadsafe(fn, *args, context=contextvars.Context())

    def run(
        self,
        coro: Coroutine[Any, Any, T],
        timeout: float | None = None,
        *,
        cancel_on_timeout: bool = True,
    ) -> T:
        """Run ``coro`` on the engine and block for its result (not from the engine thread).
        Past ``timeout``: ``concurrent.futures.TimeoutError``, ``coro`` cancelled unless
        ``cancel_on_timeout=False`` (it goes on: a create whose answer names a paid task)."""
        try:  # a wait refused: the coroutine never runs
            if self.in_engine_thread:
                raise RuntimeError(
                    "a blocking genwidgets call was made from a job callback, which runs on "
                    "the engine thread; use the async API or schedule the work elsewhere"
                )
            _refuse_wait_under_lock()
        except RuntimeError:
            coro.close()
            raise
        future = self.submit(coro)
        try:
            return wait_future(future, timeout)
        except concurrent.futures.TimeoutError:
            if cancel_on_timeout:
                future.cancel()
            raise
        except BaseException:
            future.cancel()
            raise


def wait_through_interrupts(
    futures: Collection[concurrent.futures.Future[Any]],
    grace: float,
    *,
    why: str = "interrupted",
    waited: str = "the request in flight",
) -> None:
    """Wait up to ``grace`` seconds for every one of ``futures`` (their outcomes are the
    caller's to read), said on stderr (``why`` it waits, for the answers to what:
    ``waited``), through further interrupts: hammering Ctrl-C must not drop the answer
    of a paid create (docs/decisions.md#an-interrupted-submit). Creates in flight when
    a client closes or the interpreter exits wait the same way."""
    pending = [future for future in futures if not future.done()]
    if not pending:
        return
    print(
        f"\ngenwidgets: {why}; waiting at most {grace:g} s for the gateway's answer to "
        f"{waited} (a task it made bills)",
        file=sys.stderr,
    )
    deadline = time.monotonic() + grace
    while pending and (remaining := deadline - time.monotonic()) > 0:
        try:
            wait_future(pending[0], remaining)
        except KeyboardInterrupt:
            continue
        except BaseException:  # its own failure (the caller reads it), or the grace passed
            if not pending[0].done():
                return
        pending = [future for future in pending if not future.done()]


def check_timeout(timeout: object) -> None:
    """A ``TypeError`` unless ``timeout`` is a number of seconds or None: a string or NaN
    would be a raw ``TypeError`` later, or a wait with no deadline."""
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout != timeout
    ):
        raise TypeError(f"timeout must be a number of seconds or None, not {timeout!r}")


def wait_future(future: concurrent.futures.Future[T], timeout: float | None) -> T:
    """Wait in short slices so Ctrl-C / a kernel interrupt is seen promptly (never
    while the thread holds a view's lock, see :func:`engine_waits_forbidden`)."""
    check_timeout(timeout)
    if future.done():  # even with timeout=0: a settled future answers at once
        return future.result()
    if timeout != 0:
        _refuse_wait_under_lock()
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        remaining = None if deadline is None else deadline - time.monotonic()
        if remaining is not None and remaining <= 0:
            raise concurrent.futures.TimeoutError()
        try:
            return future.result(timeout=0.25 if remaining is None else min(0.25, remaining))
        except concurrent.futures.TimeoutError:
            if future.done():
                raise
            continue


#: The process's one engine (per pid: a forked child makes its own). Owner:
#: :func:`get_engine`, the only writer; every reader asks it (the clients and their
#: jobs): docs/decisions.md#who-owns-the-process-wide-state.
_lock = threading.Lock()
_engine: Engine | None = None
_engine_pid: int | None = None


def get_engine() -> Engine:
    """The process's engine, started on first use (and again in a forked child or
    after its thread died): the one way to reach it."""
    global _engine, _engine_pid
    with _lock:
        if _engine is None or _engine_pid != os.getpid() or not _engine.thread.is_alive():
            _engine = Engine()
            _engine_pid = os.getpid()
        return _engine
