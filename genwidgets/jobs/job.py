"""``Job``: one task on the gateway, polled in the background, awaitable and blockable.

Every state change happens on the engine thread (one writer); readers on other
threads see whole values (a ``Status``/``Result`` is replaced, never mutated).
``result()`` waits on a ``concurrent.futures.Future`` the poller completes, so a
blocking wait works in scripts, in notebook cells and with nest_asyncio; an
interrupt stops the wait, never the task.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import dataclasses
import functools
import logging
import sys
import threading
import time
import warnings
from collections.abc import Callable, Collection, Generator, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from .._workers import RUNS, wait_within
from ..errors import (
    ClientClosed,
    GatewayError,
    GenwidgetsError,
    RateLimited,
    RequestNotFound,
    ResultMissing,
    ServerError,
    TaskTimeout,
    Unreachable,
)
from ..protocol.records import Handle, Result, Status, is_failure, says_cancelled
from .engine import Engine, wait_future
from .output_files import gateway_outputs
from .polling import PollState, Schedule, next_interval

if TYPE_CHECKING:
    from ..protocol.http import Gateway

log = logging.getLogger("genwidgets")
T = TypeVar("T")


def copies_pending_words(count: int) -> str:
    """``2 copies pending``: outputs of a finished task with no local copy yet, in the
    words the job's repr and the command line's history say."""
    return f"{count} cop{'y' if count == 1 else 'ies'} pending"


#: whether ``Job.result()`` stopped by Ctrl-C says how to go on in Python
_STOP_HINT: contextvars.ContextVar[bool] = contextvars.ContextVar("stop_hint", default=True)


@contextlib.contextmanager
def no_stop_hint() -> Iterator[None]:
    """``Job.result()`` stopped by Ctrl-C says nothing in this block: a command (``genwidgets
    result``) says how to go on in its own words, not "wait again with job.result()"."""
    token = _STOP_HINT.set(False)
    try:
        yield
    finally:
        _STOP_HINT.reset(token)


class Recorder(Protocol):
    """Where a job reports its life (the ledger); every method is called on the engine thread.

    ``on_result`` runs before the result is delivered, so outputs are on disk by
    the time ``job.result()`` returns.
    """

    def on_status(self, job: Job, status: Status) -> None: ...

    async def on_result(self, job: Job, result: Result) -> None: ...

    async def copy_outputs(
        self, job: Job, result: Result, indexes: Collection[int] | None = None
    ) -> None: ...

    def on_gone(self, job: Job, error: RequestNotFound) -> None: ...


def _shielded(future: concurrent.futures.Future[T]) -> asyncio.Future[T]:
    """``future`` awaited on this loop behind a shield of its own: a wait that gives up (a
    timeout, a cancel) leaves the job be. The shield forgets the future it guards once
    the wait is gone, so its outcome is read here when it comes: a close ending the job
    with ``ClientClosed`` made asyncio log "Future exception was never retrieved"."""
    ended = asyncio.wrap_future(future)
    ended.add_done_callback(lambda done: done.cancelled() or done.exception())
    return asyncio.shield(ended)


class Job:
    """A task: ``status()``, ``result()``, ``cancel()``, ``await job``; displays as a live view."""

    def __init__(
        self,
        handle: Handle,
        *,
        simulated: bool,
        gateway: Gateway,
        engine: Engine,
        payload: Mapping[str, Any] | None = None,
        submitted_at: float | None = None,
        known_made: bool = False,
        recorder: Recorder | None = None,
        schedule: Schedule | None = None,
        result: Result | None = None,
        finished_at: float | None = None,
        copies_pending: Collection[int] = (),
    ) -> None:
        """A job of ``handle``. With ``result``, a job known finished (read back from
        the ledger): done at once, never polled, nothing to cancel. ``copies_pending``:
        the indexes of its outputs the ledger has still to copy; with a ``recorder``,
        they are copied in the background (:attr:`copying`), and ``result()`` waits for
        that copy within its timeout (docs/decisions.md#copies-pending).
        ``simulated``: the task runs on the embedded simulator (every view says so).
        ``known_made``: a create answered with this handle at ``submitted_at`` (this
        client's, or a ledger row's), so a 404 soon after is not yet believed."""
        self._handle = handle
        self.simulated = simulated
        self._closed = False
        self._gateway = gateway
        self._engine = engine
        self.payload: dict[str, Any] | None = dict(payload) if payload is not None else None
        self.submitted_at = submitted_at if submitted_at is not None else time.time()
        self.known_made = known_made
        self.finished_at: float | None = None
        self.last_status: Status | None = None
        self.last_result: Result | None = None
        #: a cancel was asked and not refused: sent, or kept to be sent (``cancel_error``)
        self.cancel_requested = False
        #: why the last cancel was not taken: refused (``cancel_requested`` is False), or
        #: not delivered and kept, to be sent again (:data:`CANCEL_KEPT`)
        self.cancel_error: BaseException | None = None
        #: the gateway answered a cancel by taking it (or said the task had ended): a
        #: batch row following the task again with a new job does not ask it again
        self.cancel_taken = False
        #: why its last poll failed for want of contact (a 5xx, no answer) and when
        #: (``time.time()``); both None once a status answers (:func:`poll_failed_since`)
        self.poll_error: BaseException | None = None
        self.poll_failed_at: float | None = None
        self._resend: asyncio.Future[None] | None = None
        #: the urgent status asked once a cancel could not be sent (:meth:`_ask_now`)
        self._asked_now: asyncio.Future[None] | None = None
        #: set when a kept cancel may go now (an answer came, the job ended)
        self._resend_now: asyncio.Event | None = None
        self._recorder = recorder
        self._future: concurrent.futures.Future[Result] = concurrent.futures.Future()
        self._update_callbacks: list[Callable[[Job], None]] = []
        self._callbacks_lock = threading.Lock()
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Future[None] | None = None
        self._timing = (schedule or Schedule()).track(
            handle.endpoint, self.payload, handle.queue_position
        )
        #: when the task was made, on the schedule's monotonic clock: its age is read
        #: there, so a step of the wall clock never makes a new task old (the wall
        #: clock gives only the age it had when this job began: a ledger row's)
        self._made_at = self._timing.submitted - max(0.0, time.time() - self.submitted_at)
        self._output_source = gateway_outputs(engine, gateway)
        self._copies = frozenset(copies_pending)
        #: the copy of the outputs the ledger had pending (a job read back from it with
        #: its client's recorder): done once tried; None when there is none to make. It
        #: is running from the start, so ``cancel()`` on it is refused (closing the
        #: client stops a copy): a cancelled one made ``result()`` raise CancelledError
        self.copying: concurrent.futures.Future[None] | None = None
        if result is not None and self._copies and recorder is not None:
            self._finish(result, finished_at)  # the task's end is the recorded one
            self.copying = concurrent.futures.Future()
            self.copying.set_running_or_notify_cancel()
            self._engine.call_soon(self._spawn_copy, recorder, result)
        elif result is not None:
            self._finish(result, finished_at)

    def _not_visible_yet(self) -> bool:
        """Whether a 404 may only mean the task does not show yet: it is known made
        (a create answered, a ledger row) less than :data:`NOT_VISIBLE_FOR` seconds
        ago. A task asked for by a bare id is believed gone at once (a wrong id says so
        without a minute's wait)."""
        age = self._timing.schedule.clock() - self._made_at
        return self.known_made and age < NOT_VISIBLE_FOR

    # -- identity -----------------------------------------------------------
    endpoint = property(lambda self: self._handle.endpoint)
    request_id = property(lambda self: self._handle.request_id)
    status_url = property(lambda self: self._handle.status_url)
    response_url = property(lambda self: self._handle.response_url)
    cancel_url = property(lambda self: self._handle.cancel_url)

    @property
    def handle(self) -> Handle:
        return self._handle

    @property
    def queue_position(self) -> int | None:
        if self.last_status is not None:
            return self.last_status.queue_position
        return self._handle.queue_position

    @property
    def expected_finish(self) -> float | None:
        """Seconds until the task is expected to finish, or None when unknown (no
        confident run-time model, queued, past the model's range, or done)."""
        return self._timing.expected_finish()

    @property
    def elapsed(self) -> float:
        return (self.finished_at or time.time()) - self.submitted_at

    @property
    def status_text(self) -> str:
        """The status word: the gateway's verbatim, or SUBMITTED before the first poll."""
        if self.last_result is not None:
            return "FAILED" if not self.last_result.ok else self.last_result.status
        return self.last_status.status if self.last_status else "SUBMITTED"

    @property
    def copies_pending(self) -> int:
        """Outputs of its result the ledger has still to copy (``LedgerRow.copies_pending``
        when the job was read back from it: the one rule) and that have no local copy
        yet; ``client.resume()`` and ``client.job(...)`` copy them
        (docs/decisions.md#copies-pending). A job this client followed says none."""
        result = self.last_result
        if result is None or not self._copies:
            return 0
        return sum(1 for o in result.outputs if o.index in self._copies and o.path is None)

    def __repr__(self) -> str:
        copies = f", {copies_pending_words(self.copies_pending)}" if self.copies_pending else ""
        shown = f"{self.endpoint} {self.request_id} {self.status_text} {self.elapsed:.1f}s"
        return f"<Job {shown}{copies}>"

    # -- blocking API -------------------------------------------------------
    def done(self) -> bool:
        return self._future.done()

    def exception(self) -> BaseException | None:
        """Why the job ended without a result (polling gave up, the task vanished, its
        client closed), without waiting: ``None`` while it runs or once it has one."""
        if not self._future.done():
            return None
        return self._future.exception()

    def status(self, *, retries: int | None = None) -> Status:
        """Ask the gateway now (one request, with the retry policy; ``retries=0``: one
        try, so an address that never answers costs one request timeout, not the
        policy's several)."""
        return self._engine.run(self._status_now(retries))

    def result(self, timeout: float | None = None, *, cancel_on_timeout: bool = False) -> Result:
        """Block until the task is terminal. ``TaskTimeout`` after ``timeout`` seconds
        leaves the task running, or, with ``cancel_on_timeout=True``, first asks the
        gateway to cancel it, so a forgotten task does not bill on. A job read back from
        the ledger is done at once: this waits for the copy of its outputs
        (:attr:`copying`) at most ``timeout`` seconds, then returns its result (those
        not copied yet have no ``path``)."""
        try:
            if self.copying is not None and self._future.done():
                with contextlib.suppress(concurrent.futures.TimeoutError):
                    wait_future(self.copying, timeout)
            return wait_future(self._future, timeout)
        except concurrent.futures.TimeoutError:
            if self._future.done():
                raise
            if not cancel_on_timeout:
                raise TaskTimeout(self, timeout or 0.0) from None
            try:
                self.cancel()
            except GenwidgetsError as exc:  # the cancel failed: the task may still run
                raise TaskTimeout(self, timeout or 0.0) from exc
            raise TaskTimeout(self, timeout or 0.0, cancelled=True) from None
        except KeyboardInterrupt:
            if not _STOP_HINT.get():
                raise
            if self._future.done():  # waiting for the copy of a task that has ended
                print(
                    f"\nStopped waiting; task {self.request_id} on {self.endpoint} has "
                    f"ended ({self.status_text}), and the ledger keeps the copies of its "
                    "outputs not made yet pending: client.resume() or "
                    f"client.job({self.endpoint!r}, {self.request_id!r}) copies them.",
                    file=sys.stderr,
                )
                raise
            print(
                f"\nStopped waiting; task {self.request_id} on {self.endpoint} is still "
                f"running. Wait again with job.result(), re-attach later with "
                f"client.job({self.endpoint!r}, {self.request_id!r}), or stop it with "
                "job.cancel().",
                file=sys.stderr,
            )
            raise

    def cancel(self) -> None:
        """Ask the gateway to cancel (no-op once the job is done; ``ClientClosed`` once
        its client is closed, since the task may still run). A cancel not taken (no
        contact, the rate limit, a fault of the gateway: :data:`CANCEL_KEPT`) raises and
        is kept: the job sends it again until the gateway takes it or the task ends
        (docs/decisions.md#cancel-kept)."""
        if self._closed:
            raise ClientClosed(endpoint=self.endpoint, request_id=self.request_id)
        if not self.done():
            self._engine.run(self._cancel())

    @property
    def cancel_kept(self) -> bool:
        """A cancel was asked and the gateway has not taken it yet: ``cancel_error`` says
        why, and the job sends it again (a click on Cancel sends it at once)."""
        return self.cancel_requested and self.cancel_error is not None

    def request_cancel(self) -> None:
        """Schedule a cancel without blocking (for buttons); errors land in ``cancel_error``.
        Asked again while a cancel is kept (not taken), it is sent again at once."""
        if self.done() or (self.cancel_requested and not self.cancel_kept):
            return  # sent already, or on its way
        if not self.cancel_requested:
            self.cancel_error = None
        self.cancel_requested = True
        self._engine.submit(self._cancel())

    def add_done_callback(self, fn: Callable[[Job], Any]) -> None:
        """Call ``fn(job)`` when terminal (on the engine thread, or now if already done)."""
        self._future.add_done_callback(lambda _f: fn(self))

    def add_update_callback(self, fn: Callable[[Job], Any]) -> Callable[[], None]:
        """Call ``fn(job)`` on every status change (engine thread); returns a remover."""
        with self._callbacks_lock:
            self._update_callbacks.append(fn)

        def remove() -> None:
            with self._callbacks_lock:
                if fn in self._update_callbacks:
                    self._update_callbacks.remove(fn)

        return remove

    def __await__(self) -> Generator[Any, None, Result]:
        return self._awaited().__await__()

    async def _awaited(self) -> Result:
        """``await job``: as ``result()``, the copy of a job read back from the ledger
        is waited for first. Shielded: a wait that gives up (a timeout, a cancelled cell)
        ends alone; the job is still followed and its result fetched (and the copy
        made), as after ``result(timeout=...)``."""
        if self.copying is not None:
            await _shielded(self.copying)
        return await _shielded(self._future)

    # The old async spellings, for one release, found only when asked for: dir()
    # and help() show the current names alone, and mypy still flags misspelt
    # attributes of a Job (docs/decisions.md#old-async-spellings-are-hidden).
    if not TYPE_CHECKING:

        def __getattr__(self, name: str) -> Any:
            new = _OLD_ASYNC.get(name)
            if new is None:
                raise AttributeError(f"'Job' object has no attribute {name!r}")
            return _old_async(self, name, new)

    # -- polling (started and stopped by the client) -------------------------
    def start_polling(self) -> None:
        """Begin polling in the background; a finished or already polled job ignores it."""
        if self._task is None and not self.done():
            self._engine.call_soon(self._spawn)

    def close(self) -> None:
        """The client closed (on the engine thread): stop polling (the task itself goes on)
        and end an unfinished job with :class:`ClientClosed`, which says how to re-attach.
        Records nothing."""
        if self._task is not None:
            self._task.cancel()
        if self._resend is not None:
            self._resend.cancel()
        if self.copying is not None and not self.copying.done():
            self.copying.set_result(None)  # stopped: the ledger keeps them pending
        if not self.done():
            self._closed = True
            self._finish(ClientClosed(endpoint=self.endpoint, request_id=self.request_id))

    # -- engine side --------------------------------------------------------

    def _spawn(self) -> None:
        if self._task is not None:
            return
        self._wake = asyncio.Event()
        self._task = asyncio.ensure_future(self._watch())

    def _spawn_copy(self, recorder: Recorder, result: Result) -> None:
        if self._task is None and self.copying is not None and not self.copying.done():
            self._task = asyncio.ensure_future(self._copy(recorder, result))

    async def _copy(self, recorder: Recorder, result: Result) -> None:
        """The copy of the recorded result's outputs the ledger had pending; views
        redraw with their paths, and :attr:`copying` is done (also when it failed or was
        stopped: the ledger says why, and keeps those not copied)."""
        try:
            await recorder.copy_outputs(self, result, self._copies)
        except Exception:  # a copy's bug must never stop the engine
            log.exception("genwidgets: copying the outputs of %s failed", self.request_id)
        finally:
            if self.copying is not None and not self.copying.done():
                self.copying.set_result(None)
            self._notify()

    def _notify(self) -> None:
        with self._callbacks_lock:
            callbacks = list(self._update_callbacks)
        for fn in callbacks:
            try:
                fn(self)
            except Exception:  # a view's bug must never stop the poller
                log.exception("genwidgets: an update callback of %s failed", self.request_id)

    def _apply_status(self, status: Status) -> None:
        previous = self.last_status
        if previous is not None and previous.logs and not status.logs:
            status = dataclasses.replace(status, logs=previous.logs)  # a result carries none
        self.last_status = status
        self.poll_error = self.poll_failed_at = None  # an answer: contact holds
        if self._resend_now is not None and isinstance(self.cancel_error, Unreachable):
            self._resend_now.set()  # contact is back: a cancel kept for want of it goes now
        self._timing.saw(status.status, status.queue_position, status.done)
        if (
            previous is None
            or previous.status != status.status
            or previous.queue_position != status.queue_position
        ):
            if self._recorder is not None:
                self._recorder.on_status(self, status)
            self._notify()
        elif previous.latest_log != status.latest_log:  # a new log line: views show it
            self._notify()

    def _finish(self, result: Result | BaseException, finished_at: float | None = None) -> None:
        """The end (a result, or why there is none), in a fixed order that views rely on:
        update callbacks see the final state, then the future completes
        (``JobLike.add_update_callback``), so a cell that waits on ``result()`` ends after
        every view has drawn it."""
        if self._future.done():
            return
        self.finished_at = finished_at or time.time()
        if isinstance(result, BaseException):
            self._timing.done(False)
            self._notify()
            self._future.set_exception(result)
            return
        self.last_result = result
        if self.cancel_kept and ended_by_a_cancel(result):
            self.cancel_error = None  # a kept cancel was taken after all: its answer was lost
        self._timing.done(result.ok)
        self._notify()
        self._future.set_result(result)

    async def _status_now(self, retries: int | None = None) -> Status:
        await self._timing.before_status(urgent=True)
        status = await self._gateway.status(self._handle, retries=retries)
        self._apply_status(status)
        if status.done and self._wake is not None:
            self._wake.set()
        return status

    async def _cancel(self, *, resend: bool = False) -> None:
        """Send the cancel; ``resend``: a kept one sent again, which waits for the rate
        gate as every request (only a cancel's first try may pass it closed)."""
        self.cancel_requested = True
        self._notify()
        asking_now = False  # an urgent status says at once: no wake of the poll as well
        try:
            await self._gateway.cancel(self._handle, urgent=not resend)
        except CANCEL_KEPT as exc:  # not delivered: kept, and sent again
            self.cancel_error = exc
            self._notify()
            self._resend_later()
            if not resend and isinstance(exc, (ServerError, Unreachable)):
                asking_now = True
                if self._asked_now is None or self._asked_now.done():  # one at a time
                    self._asked_now = asyncio.ensure_future(self._ask_now())
            raise
        except GatewayError as exc:
            # A 400/409 is "already finished" (a kept cancel taken after all, its answer
            # lost) or "too late" (many gateways cancel only tasks not started), in words
            # each gateway says its own way: a cancel (first or resent) of a task not seen
            # ended asks the status, which says which (its words are never read).
            ended = exc.status_code in (400, 409) and not isinstance(exc, RateLimited)
            if ended and not (self.last_status and self.last_status.done):
                with contextlib.suppress(GenwidgetsError):  # no answer: not known ended
                    await self._status_now(retries=0)
                ended = self.last_status is not None and self.last_status.done
            if ended:
                log.info("genwidgets: cancel of %s: %s", self.request_id, exc)
                self._cancel_taken()
            else:  # not asked: the task bills on, and a cancel may be asked again
                self.cancel_error, self.cancel_requested = exc, False
                self._notify()
                raise
        else:
            self._cancel_taken()
        finally:
            if self._wake is not None and not asking_now:
                self._wake.set()

    async def _ask_now(self) -> None:
        """A status asked at the front of the status budget's queue once a cancel could
        not be sent for want of contact: whoever waits on that cancel (a batch's deadline,
        :func:`poll_failed_since`) learns at once whether contact holds, however long the
        budget's queue its own poll waits in; a failure is kept as a poll's."""
        if self.done():
            return
        try:
            await self._status_now(retries=0)
        except (ServerError, Unreachable) as exc:
            self.poll_error, self.poll_failed_at = exc, time.time()
        except GenwidgetsError:  # a rate limit, a task gone: the job's own poll says
            pass
        except Exception:  # a bug must not stop the engine
            log.exception("genwidgets: asking the status of %s failed", self.request_id)

    def _cancel_taken(self) -> None:
        """The gateway took the cancel, or the task ended: a kept cancel is no more."""
        self.cancel_taken = True
        if self.cancel_error is not None:
            self.cancel_error = None
            self._notify()

    def _resend_later(self) -> None:
        if self._resend is None or self._resend.done():
            self._resend = asyncio.ensure_future(self._resend_kept_cancel())

    async def _resend_kept_cancel(self) -> None:
        """Send a kept cancel again until the gateway takes it or the job ends: not sent
        for want of contact, as soon as a poll is answered; refused for the rate limit,
        when the rate gate opens; at the latest backing off as failed polls do (8 s at
        most). A cancel is idempotent; the one taken stops the billing."""
        self._resend_now = now = asyncio.Event()
        loop = asyncio.get_running_loop()
        self._future.add_done_callback(lambda _f: loop.call_soon_threadsafe(now.set))
        tries = 0
        while not self.done() and self.cancel_kept:
            tries += 1
            backoff = next_interval(
                PollState(running_for=0.0, failures=tries),
                self._gateway.rng,
                self._timing.schedule.policy,
            )
            with contextlib.suppress(asyncio.TimeoutError):
                await wait_within(now.wait(), max(backoff, self._gateway.gate.remaining))
            now.clear()
            if self.done() or not self.cancel_kept:
                return
            try:
                await self._cancel(resend=True)
            except GenwidgetsError:
                continue  # kept (said in cancel_error) or refused: the loop's test says
            except Exception:  # a bug must not stop the engine
                log.exception("genwidgets: sending the cancel of %s failed", self.request_id)
                return

    async def _fetch_result(self, status: Status) -> Result | None:
        """The result of a task whose ``status`` ended it. A 404 (or 410) of the result
        after a status that did not say failed (results purged, a replica that lost them),
        whatever its words ("Request not found", "Not Found", none: a status said the
        task ended, so "is the task gone" is answered), is no end of the task: the gateway
        said it was done, and it is paid. It is a failed contact (``ResultMissing``, a
        ``ServerError``), asked again up to the failure limit, then the job's end as
        contact lost: never "gone", never created again. A proxy's 404 page is a failed
        contact as it came (``ServerError``)."""
        try:
            result = await self._gateway.result(self._handle, source=self._output_source)
        except GatewayError as exc:
            if is_failure(status.status):
                result = None
            elif exc.status_code in (404, 410) and not isinstance(exc, ServerError):
                raise ResultMissing(
                    f"the gateway said {status.status}, but its result address answers "
                    f"{exc.message!r}: the task ended and bills; its result was not read",
                    status_code=exc.status_code,
                    endpoint=self.endpoint,
                    request_id=self.request_id,
                ) from exc
            else:
                raise
        if result is None and is_failure(status.status):
            # CANCELLED / FAILED / ERROR with no readable result: the status says it all.
            return Result.from_body(
                status.raw,
                endpoint=self.endpoint,
                request_id=self.request_id,
                source=self._output_source,
            )
        return result

    def _said_status(self) -> bool:
        """The last status answer carried a status word (a body without one is not a
        sign that the task runs: the status address is asked again)."""
        status = self.last_status
        return status is not None and isinstance(status.raw.get("status"), str)

    async def _poll_result_address(self) -> Result | Status | None:
        """One poll of a running task at its result address (see :mod:`.polling`).

        A 200 is the result: its status is applied as the final one (no status
        request left to send). A 202 whose body carries a status is applied like a
        status answer; a 202 without one, or an error other than a rate limit, a
        5xx or a 404, tells that this gateway's result address does not say as
        much as its status address, and the client polls the status from then on.
        So does a proxy's HTML 404 page here (a ``ServerError`` of status 404 or 410,
        ``Gateway._call``): a web framework's page until the result exists is no failed
        contact; the status address's own page is (docs/decisions.md#retries).
        """
        schedule = self._timing.schedule
        try:
            answer = await self._gateway.result_or_status(
                self._handle, retries=0, source=self._output_source
            )
        except ServerError as exc:
            if exc.status_code not in (404, 410):
                raise
            schedule.result_address_says(False, reason=str(exc))
            return None
        except (RateLimited, RequestNotFound, Unreachable):
            raise
        except GatewayError as exc:
            schedule.result_address_says(False, reason=str(exc))
            return None
        if isinstance(answer, Result):
            word = answer.raw.get("status")
            if not isinstance(word, str) or not word:  # no status: it cannot end the task
                schedule.result_address_says(False, reason="a result without a status")
                return None
            status = Status.from_body(
                {
                    k: v
                    for k, v in answer.raw.items()
                    if k in ("status", "error", "error_type", "logs")
                },
                endpoint=self.endpoint,
                request_id=self.request_id,
            )
            self._apply_status(status)
            return answer if status.done else status
        schedule.result_address_says(answer is not None)
        if answer is not None:
            self._apply_status(answer)
        return answer

    def _rate_limited_too_long(self, exc: RateLimited) -> RateLimited:
        """The end of a job whose polls were all refused for the rate limit for the
        policy's ``rate_limited_for``: contact lost, never a failure (docs/decisions.md#polling)."""
        minutes = self._timing.schedule.policy.rate_limited_for / 60
        return RateLimited(
            f"every poll was refused for the rate limit for {minutes:g} minutes; the task "
            "may still run and bill: follow it again later (client.job(endpoint, "
            "request_id) or genwidgets resume), which creates nothing",
            retry_after=exc.retry_after,
            status_code=exc.status_code,
            code=exc.code,
            endpoint=self.endpoint,
            request_id=self.request_id,
        )

    async def _watch(self) -> None:
        failures = 0
        #: when the polls began to be refused for the rate limit, nothing else answered
        rate_limited_since: float | None = None
        terminal: Status | None = None
        #: a 404 of the result address while the status said the task runs: the status
        #: address is asked before the job believes it gone (it is the authority)
        result_not_found: RequestNotFound | None = None
        rng = self._gateway.rng
        assert self._wake is not None
        while not self._future.done():
            with contextlib.suppress(asyncio.TimeoutError):
                await wait_within(self._wake.wait(), self._timing.next_delay(failures, rng))
            self._wake.clear()
            try:
                result = None
                if terminal is None:
                    await self._timing.before_status()
                    if (
                        self._timing.poll_result_address()
                        and self._said_status()
                        and result_not_found is None
                    ):
                        try:
                            answer = await self._poll_result_address()
                        except RequestNotFound as exc:
                            rate_limited_since, result_not_found = None, exc
                            continue
                        rate_limited_since = None  # any answer ends a stretch of rate limits
                        if answer is not None:  # a status or the result: progress
                            failures = 0
                        if isinstance(answer, Result):
                            result = answer
                        elif answer is None or not answer.done:
                            continue
                        else:
                            terminal = answer
                    else:
                        status = await self._gateway.status(self._handle, retries=0)
                        failures, rate_limited_since = 0, None
                        self._apply_status(status)
                        if result_not_found is not None and not status.done:
                            self._timing.schedule.result_address_says(
                                False, reason=f"{result_not_found} while the task runs"
                            )
                        result_not_found = None
                        if not status.done:
                            continue
                        terminal = status  # from now on only the result is left to fetch
                if result is None:
                    assert terminal is not None
                    result = await self._fetch_result(terminal)
            except RateLimited as exc:
                # a task that exists is not lost to one rate limit, however long the wait it
                # asks: the job waits for the gate to open (a poll before it, past the gate's
                # max_wait, is refused at once) and polls on; only a lasting one, past the
                # policy's rate_limited_for, ends it, as contact (docs/decisions.md#polling)
                now = self._timing.schedule.clock()
                rate_limited_since = now if rate_limited_since is None else rate_limited_since
                if now - rate_limited_since >= self._timing.schedule.policy.rate_limited_for:
                    self._finish(self._rate_limited_too_long(exc))
                    return
                if (held := self._gateway.gate.remaining) > 0:
                    with contextlib.suppress(asyncio.TimeoutError):
                        await wait_within(self._wake.wait(), held)
                continue
            except (ServerError, Unreachable) as exc:
                self.poll_error, self.poll_failed_at = exc, time.time()
                failures += 1
                if failures >= self._timing.schedule.policy.failure_limit:
                    self._finish(exc)
                    return
                continue
            except (GatewayError, ClientClosed) as exc:
                if isinstance(exc, RequestNotFound) and self._not_visible_yet():
                    continue  # a task made moments ago may not show at every replica yet
                if isinstance(exc, RequestNotFound) and self._recorder is not None:
                    self._recorder.on_gone(self, exc)  # the gateway forgot it: final
                self._finish(exc)
                return
            except Exception as exc:  # never let the poller die silently (a cancel is no Exception)
                log.exception("genwidgets: polling %s failed", self.request_id)
                self._finish(exc)
                return
            if result is None:  # COMPLETED but the result address still says 202: an
                # answer, which ends a stretch of rate limits, but no progress: a result
                # address flapping 5xx / 202 ends the job at the failure limit
                rate_limited_since = None
                continue
            try:
                if self._recorder is not None:
                    await self._recorder.on_result(self, result)
            except Exception:  # recording must never lose the result itself
                log.exception("genwidgets: recording the result of %s failed", self.request_id)
            self._finish(result)
            return


#: A cancel that failed with one of these was not taken (no contact, the rate limit, a
#: fault of the gateway): the job keeps it and sends it again (docs/decisions.md#cancel-kept)
CANCEL_KEPT = (Unreachable, RateLimited, ServerError)


def ended_by_a_cancel(result: object) -> bool:
    """A result saying its task was cancelled (``records.says_cancelled``, as the views
    read it)."""
    status, error_type = getattr(result, "status", None), getattr(result, "error_type", None)
    return says_cancelled(str(status or ""), str(error_type or ""))


def poll_failed_since(job: object, since: float) -> BaseException | None:
    """Why a job's last poll failed for want of contact, when it failed after ``since``
    (a ``time.time()``) with no status answered since; None otherwise (or a job of another
    kind): what a batch reads after a failed deadline cancel to tell lost contact from
    silence (docs/decisions.md#batch-progress)."""
    failed_at = getattr(job, "poll_failed_at", None)
    if failed_at is None or failed_at < since:
        return None
    error: BaseException | None = getattr(job, "poll_error", None)
    return error


def kept_cancel(job: object) -> tuple[str, str] | None:
    """A job's kept cancel (:data:`CANCEL_KEPT`): whether it was ``"not sent"`` (no
    contact) or ``"not taken"`` (an answer that did not take it), and why; None when
    the job keeps none (none asked, taken, refused, or a job of another kind)."""
    error = getattr(job, "cancel_error", None)
    if error is None or not getattr(job, "cancel_requested", False):
        return None
    if ended_by_a_cancel(getattr(job, "last_result", None)):
        return None  # taken after all: the task ended cancelled
    if isinstance(error, Unreachable):
        return "not sent", f"cannot reach the gateway ({error})"
    if isinstance(error, RateLimited):
        wait = f", asking to wait {error.retry_after:.0f} s" if error.retry_after else ""
        return "not taken", f"the gateway's rate limit{wait}"
    return "not taken", f"the gateway failed ({error})"


#: How long after its create a task's 404 may only mean "not visible yet" (a replica
#: behind, a queue that shows tasks late): polled on at its pace meanwhile, as the
#: class gateway waits (serve.budgets.GONE_AFTER) before it believes one.
NOT_VISIBLE_FOR = 60.0

#: old spelling -> the AsyncJob method it became
_OLD_ASYNC = {"astatus": "status", "aresult": "result", "acancel": "cancel"}


def _old_async(job: Job, old: str, new: str) -> Callable[..., Any]:
    """``job.<old>``: a coroutine function that warns, then awaits ``AsyncJob(job).<new>``."""

    async def call(*args: Any, **kwargs: Any) -> Any:
        warnings.warn(
            f"Job.{old}() is deprecated and goes in the next release: use gw.AsyncClient, "
            f"whose submit() returns an AsyncJob (await job.{new}())",
            DeprecationWarning,
            stacklevel=2,
        )
        return await getattr(AsyncJob(job), new)(*args, **kwargs)

    call.__name__ = call.__qualname__ = old
    return call


class AsyncJob:
    """A :class:`Job` for ``async`` code: Job's names, as coroutines.

    ``await job.status()``, ``await job.result(timeout=...)``, ``await job.cancel()``
    and ``await job``. It wraps the same Job (``job.sync``), so both see one task;
    waits never block the caller's loop
    (docs/decisions.md#asyncclient-holds-a-client-asyncjob-holds-a-job).
    """

    def __init__(self, job: Job, *, executor: concurrent.futures.Executor | None = None) -> None:
        """``executor``: the threads its blocking requests wait on (the client's;
        None: the package's workers, never the loop's default executor)."""
        self._job = job
        self._executor = executor if executor is not None else RUNS

    @property
    def sync(self) -> Job:
        """The blocking Job of the same task (for widgets and plain code)."""
        return self._job

    endpoint = property(lambda self: self._job.endpoint)
    request_id = property(lambda self: self._job.request_id)
    status_url = property(lambda self: self._job.status_url)
    response_url = property(lambda self: self._job.response_url)
    cancel_url = property(lambda self: self._job.cancel_url)
    handle = property(lambda self: self._job.handle)
    queue_position = property(lambda self: self._job.queue_position)
    expected_finish = property(lambda self: self._job.expected_finish)
    elapsed = property(lambda self: self._job.elapsed)
    status_text = property(lambda self: self._job.status_text)
    simulated = property(lambda self: self._job.simulated)
    payload = property(lambda self: self._job.payload)
    last_status = property(lambda self: self._job.last_status)
    last_result = property(lambda self: self._job.last_result)
    copies_pending = property(lambda self: self._job.copies_pending)
    copying = property(lambda self: self._job.copying)
    cancel_kept = property(lambda self: self._job.cancel_kept)

    def __repr__(self) -> str:
        return "<Async" + repr(self._job)[1:]

    def done(self) -> bool:
        return self._job.done()

    def exception(self) -> BaseException | None:
        """As :meth:`Job.exception` (no wait, so not a coroutine)."""
        return self._job.exception()

    def add_done_callback(self, fn: Callable[[AsyncJob], Any]) -> None:
        """Call ``fn(job)`` when terminal (on the engine thread, or now if already done)."""
        self._job.add_done_callback(lambda _job: fn(self))

    async def status(self, *, retries: int | None = None) -> Status:
        """Ask the gateway now (as :meth:`Job.status`)."""
        loop = asyncio.get_running_loop()
        ask = functools.partial(self._job.status, retries=retries)
        return await loop.run_in_executor(self._executor, ask)

    async def result(
        self, timeout: float | None = None, *, cancel_on_timeout: bool = False
    ) -> Result:
        """Wait until the task is terminal; ``TaskTimeout`` leaves it running, or with
        ``cancel_on_timeout=True`` first asks the gateway to cancel it (as ``Job.result``,
        which also says how a job read back from the ledger waits for its copy)."""
        copying = self._job.copying
        if copying is not None and self._job.done():
            with contextlib.suppress(asyncio.TimeoutError):
                await wait_within(_shielded(copying), timeout)
        try:
            # The shield is this wait's own: cancelling it on timeout leaves the task be.
            job_ended = self._job._future  # noqa: SLF001 - AsyncJob is this module's Job, awaited
            return await wait_within(_shielded(job_ended), timeout)
        except asyncio.TimeoutError:
            if not cancel_on_timeout:
                raise TaskTimeout(self, timeout or 0.0) from None
        try:
            await self.cancel()
        except GenwidgetsError as exc:
            raise TaskTimeout(self, timeout or 0.0) from exc
        raise TaskTimeout(self, timeout or 0.0, cancelled=True)

    async def cancel(self) -> None:
        """Ask the gateway to cancel (no-op once the job is done)."""
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor, self._job.cancel)

    def __await__(self) -> Generator[Any, None, Result]:
        return self.result().__await__()
