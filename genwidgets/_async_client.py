"""``AsyncClient``: the same client for ``async`` code, built on :class:`Client`.

It calls only the client's public methods, on its own worker threads, never on the
caller's loop, and hands out :class:`AsyncJob` views of the client's jobs.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import signal
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import FrameType
from typing import Any, TypeVar

from . import _config
from ._client import Client, create_unanswered
from ._workers import Workers, wait_within
from .jobs.engine import check_timeout
from .jobs.job import AsyncJob, Job
from .protocol.prepared import PreparedRequest
from .protocol.records import Result

__all__ = ["AsyncClient"]

T = TypeVar("T")


def _outcome_read(sending: asyncio.Future[Any]) -> None:
    """Reads the outcome of a create nobody awaits any more (asyncio would log it)."""
    if not sending.cancelled():
        sending.exception()


#: seconds between the wakes of a caller waiting on a worker thread: a task awaiting the
#: worker alone wakes only when it ends, so a cancel its loop schedules (ipykernel's
#: interrupt, ``add_callback``) would wait for the whole call
CALLER_TICK = 0.25


class _CallerStop(threading.Event):
    """The ``stop`` of one async call that creates: set by whatever ends the caller's
    wait (a cancel, Ctrl-C raised in the task), or by Ctrl-C itself (:func:`_on_sigint`):
    Ctrl-C out of ``loop.run_until_complete`` never enters the task, and its loop may run
    it again at once (docs/decisions.md#a-cancelled-async-call)."""

    def __init__(self) -> None:
        super().__init__()
        self._let_go = False

    def set(self) -> None:
        if not self._let_go:
            super().set()

    def let_go(self) -> None:
        """The caller stopped waiting without cancelling (``run``'s timeout ran out): the
        create goes on, whatever becomes of the caller or its loop."""
        self._let_go = True


#: the stops of the calls waiting on the main thread, which Ctrl-C sets
_INTERRUPTIBLE: set[_CallerStop] = set()
#: the SIGINT handler :func:`_on_sigint` took over, called after it
_handed_on: list[Callable[[int, FrameType | None], Any]] = []


def _stop_all() -> None:
    for stop in list(_INTERRUPTIBLE):
        stop.set()


#: ``asyncio.run``'s SIGINT handler, a method of its Runner (none before Python 3.11)
_RUNNER_ON_SIGINT = getattr(getattr(asyncio, "Runner", None), "_on_sigint", None)


def _runner_task(handler: object) -> asyncio.Future[Any] | None:
    """The main task of the ``asyncio.Runner`` whose SIGINT handler ``handler`` is (it
    cancels that task), else None."""
    method = getattr(handler, "func", None)
    if _RUNNER_ON_SIGINT is None or getattr(method, "__func__", None) is not _RUNNER_ON_SIGINT:
        return None
    task = getattr(handler, "keywords", {}).get("main_task")
    return task if isinstance(task, asyncio.Future) else None


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    """Ctrl-C while calls that create wait on the main thread runs the handler it took
    over, as the sync client would. One that stops the program (Python's, which raises
    KeyboardInterrupt, or ``asyncio.run``'s, which cancels its main task) stops their
    creates now: the edge is recorded, not the loop's state read later. A script's own
    handler decides alone what Ctrl-C means: the creates stop only if it raises."""
    handler = _handed_on[-1] if _handed_on else signal.default_int_handler
    if handler is signal.default_int_handler or _runner_task(handler) is not None:
        _stop_all()
    try:
        handler(signum, frame)
    except BaseException:
        _stop_all()
        raise


def _restored(handler: Callable[[int, FrameType | None], Any]) -> Any:
    """The handler to put back: an ``asyncio.run`` whose main task has ended has left,
    and found this module's in force, so left it: Python's, which it would have put back
    (a dead Runner's kept its task alive and held off every later ``asyncio.run``'s)."""
    task = _runner_task(handler)
    return signal.default_int_handler if task is not None and task.done() else handler


@contextlib.contextmanager
def _interruptible(stop: _CallerStop) -> Iterator[None]:
    """While the caller waits: Ctrl-C sets ``stop`` (:func:`_on_sigint`). Only on the main
    thread (where signals land), and only over a Python handler (one that ignores Ctrl-C
    stays). Put back first, then forgotten: a Ctrl-C in between runs the handler before."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handler = signal.getsignal(signal.SIGINT)
    if handler is not _on_sigint and callable(handler):
        _handed_on[:] = [handler]
        signal.signal(signal.SIGINT, _on_sigint)
    _INTERRUPTIBLE.add(stop)
    try:
        yield
    finally:
        _INTERRUPTIBLE.discard(stop)
        if not _INTERRUPTIBLE and signal.getsignal(signal.SIGINT) is _on_sigint:
            before = _handed_on[-1] if _handed_on else signal.default_int_handler
            signal.signal(signal.SIGINT, _restored(before))
            _handed_on.clear()


async def _waited(pool: concurrent.futures.Executor, work: Callable[[], T]) -> T:
    """``work()`` on ``pool``, the caller awake every :data:`CALLER_TICK` seconds, so a
    cancel scheduled on its loop (ipykernel's interrupt) reaches it while it waits."""
    working = asyncio.get_running_loop().run_in_executor(pool, work)
    try:
        while not working.done():
            await asyncio.wait({working}, timeout=CALLER_TICK)
    except BaseException:  # the caller's cancel: the worker goes on, its outcome moot
        working.add_done_callback(_outcome_read)
        raise
    return working.result()


class AsyncClient:
    """The same client for ``async`` code: Client's methods as coroutines, jobs as
    :class:`AsyncJob`, ``aclose()`` and ``async with``. Blocking calls run on its own
    ``max_in_flight`` worker threads, never on the caller's loop
    (docs/decisions.md#asyncclient-holds-a-client-asyncjob-holds-a-job)."""

    def __init__(
        self, base_url: str | None = None, api_key: str | _config.Secret | None = None, **kw: Any
    ) -> None:
        api_key = _config.Secret.wrap(api_key)
        self._client = Client(base_url, api_key, **kw)
        self._wrapped: dict[tuple[str, str], AsyncJob] = {}
        # As many waiting threads as requests the client lets fly at once.
        workers = max(1, int(kw.get("max_in_flight", _config.DEFAULT_MAX_IN_FLIGHT)))
        self._pool = Workers(workers)

    async def _call(self, fn: Callable[..., T], *args: Any, **kw: Any) -> T:
        """``fn(*args, **kw)`` on this client's worker threads."""
        return await _waited(self._pool, functools.partial(fn, *args, **kw))

    async def _creating(
        self, fn: Callable[..., T], *args: Any, stop: _CallerStop | None = None, **kw: Any
    ) -> T:
        """``fn(*args, stop=stop, **kw)``, a call that creates tasks, as :meth:`_call`. A
        cancel of the caller cannot reach the worker thread: the call's ``stop`` is set by
        whatever ends the caller's wait (a cancel, Ctrl-C raised in the task), and by
        Ctrl-C as it lands (out of ``run_until_complete`` it never enters the task), so no
        create of the call leaves from then on (one already sent answers and is recorded)
        (docs/decisions.md#a-cancelled-async-call)."""
        if stop is None:
            stop = _CallerStop()
        try:
            with _interruptible(stop):
                return await self._call(fn, *args, stop=stop, **kw)
        except BaseException:  # its own failure too: the call is over, the stop is moot
            stop.set()
            raise

    def __repr__(self) -> str:
        return "<Async" + repr(self._client)[1:]

    @property
    def sync(self) -> Client:
        """The blocking :class:`Client` underneath (for widgets: ``gw.grid(client=...)``)."""
        return self._client

    embedded = property(lambda self: self._client.embedded)
    base_url = property(lambda self: self._client.base_url)
    gateway_name = property(lambda self: self._client.gateway_name)
    key_fingerprint = property(lambda self: self._client.key_fingerprint)
    ledger = property(lambda self: self._client.ledger)
    closed = property(lambda self: self._client.closed)
    request_counts = property(lambda self: self._client.request_counts)

    @property
    def jobs(self) -> list[AsyncJob]:
        """Jobs of this client in this session, newest first."""
        return [self._wrap(job) for job in self._client.jobs]

    def _wrap(self, job: Job) -> AsyncJob:
        key = (job.endpoint, job.request_id)
        found = self._wrapped.get(key)
        if found is None or found.sync is not job:
            found = self._wrapped[key] = AsyncJob(job, executor=self._pool)
        return found

    def prepare(
        self, endpoint: str, payload: Mapping[str, Any], *, validate: bool = True
    ) -> PreparedRequest:
        """As :meth:`Client.prepare`: no I/O, so a plain method (as httpx's ``build_request``)."""
        return self._client.prepare(endpoint, payload, validate=validate)

    async def send(
        self, prepared: PreparedRequest, *, headers: Mapping[str, str] | None = None
    ) -> AsyncJob:
        """As :meth:`Client.send`."""
        job = await self._creating(self._client.send, prepared, headers=headers)
        return self._wrap(job)

    async def send_many(
        self,
        requests: Sequence[PreparedRequest],
        *,
        concurrency: int = 4,
        on_sent: Callable[[int, AsyncJob | Exception], object] | None = None,
    ) -> list[AsyncJob | Exception]:
        """As :meth:`Client.send_many`; ``on_sent`` runs on one of this client's worker
        threads (not the caller's loop), as each answer arrives. Cancelled, it stops: the
        creates not sent never leave, those in flight answer and are recorded
        (``client.jobs``, ``history()``; docs/decisions.md#a-cancelled-async-call)."""

        def wrapped(outcome: Job | Exception) -> AsyncJob | Exception:
            return self._wrap(outcome) if isinstance(outcome, Job) else outcome

        def tell(index: int, outcome: Job | Exception) -> object:
            return None if on_sent is None else on_sent(index, wrapped(outcome))

        outcomes = await self._creating(
            self._client.send_many, requests, concurrency=concurrency, on_sent=tell
        )
        return [wrapped(outcome) for outcome in outcomes]

    async def submit(
        self,
        endpoint: str,
        payload: Mapping[str, Any],
        *,
        validate: bool = True,
        headers: Mapping[str, str] | None = None,
    ) -> AsyncJob:
        """As :meth:`Client.submit`: ``await send(prepare(endpoint, payload))``."""
        return await self.send(self.prepare(endpoint, payload, validate=validate), headers=headers)

    async def job(self, endpoint: str, request_id: str) -> AsyncJob:
        """As :meth:`Client.job`: re-attach to an existing task."""
        return self._wrap(await self._call(self._client.job, endpoint, request_id))

    async def history(
        self,
        endpoint: str | None = None,
        status: str | None = None,
        limit: int | None = None,
    ) -> list[AsyncJob]:
        """As :meth:`Client.history`."""
        jobs = await self._call(self._client.history, endpoint, status, limit)
        return [self._wrap(job) for job in jobs]

    async def resume(self, **kw: Any) -> list[AsyncJob]:
        """As :meth:`Client.resume` (same keywords)."""
        jobs = await self._call(self._client.resume, **kw)
        return [self._wrap(job) for job in jobs]

    async def run(
        self, endpoint: str, payload: Mapping[str, Any], timeout: float | None = None
    ) -> Result:
        """As :meth:`Client.run`: submit and await the result, ``timeout`` seconds at most
        in all, the create included. Past it with no answer to the create,
        ``OutcomeUnknown``: the create goes on on its worker thread, never cut."""
        check_timeout(timeout)
        prepared = self.prepare(endpoint, payload)
        if timeout is None:
            return await (await self.send(prepared)).result()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        stop = _CallerStop()
        sending = asyncio.ensure_future(self._creating(self._client.send, prepared, stop=stop))
        try:  # the shield is this wait's own: a timeout leaves the create be
            job = await wait_within(asyncio.shield(sending), timeout)
        except asyncio.TimeoutError:
            stop.let_go()  # running out is not a cancel: the create goes on
            sending.add_done_callback(_outcome_read)  # its failure is the ledger's now
            raise create_unanswered(endpoint, timeout) from None
        except BaseException:  # the caller's cancel: a create not sent never is, from now
            stop.set()
            sending.cancel()
            raise
        return await self._wrap(job).result(max(0.0, deadline - loop.time()))

    async def aclose(self) -> None:
        """As :meth:`Client.close`."""
        # The pool stays: later calls must raise ClientClosed, not "no new futures"; its
        # idle threads end when the client is collected. The close runs on a thread of
        # its own: cancelled calls may hold every worker while their creates on the wire
        # answer (to the request's timeout), and the close bounds that wait itself.
        await _waited(Workers(1), self._client.close)

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
