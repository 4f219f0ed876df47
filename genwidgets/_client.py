"""``Client``: the public face of the protocol and the engine.

It is the core and blocks on the engine's futures (fine in scripts and cells);
:mod:`._async_client` calls only its public methods, off the caller's loop: one behaviour.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import errno
import functools
import itertools
import logging
import os
import sqlite3
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Collection, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import httpx

from . import _config
from ._config import login as login  # gw.login, beside the client it configures
from ._protocols import ClientLike, JobLike
from .errors import (
    AmbiguousClient,
    ClientClosed,
    EndpointNotFound,
    GatewayError,
    GenwidgetsWarning,
    LedgerError,
    LedgerWarning,
    ModelNotAllowed,
    NotRecorded,
    NotSupported,
    OutcomeUnknown,
    PayloadError,
    RateLimited,
    RequestNotFound,
    RuntimeFailed,
    Unauthorized,
    Unreachable,
    WebhookNotSupported,
    words_of,
)
from .jobs import polling
from .jobs.engine import (
    Engine,
    check_timeout,
    get_engine,
    wait_future,
    wait_through_interrupts,
)
from .jobs.fanout import HALTED, STOP_WAIT, Leaving, run_each
from .jobs.job import Job, Recorder
from .jobs.ledger import FINISHED, LEDGER_FILE_NAME, Ledger, LedgerRow, left_to_other_kernels
from .jobs.output_files import gateway_outputs
from .jobs.planning import PLANNER
from .jobs.polling import PollPolicy, Schedule
from .jobs.recorder import GONE, LedgerRecorder
from .jobs.status_budget import StatusBudget
from .protocol.http import Gateway
from .protocol.prepared import PreparedRequest, prepare
from .protocol.records import Handle, Result

log = logging.getLogger("genwidgets")
T = TypeVar("T")

#: Failures of a create request that certainly created no task: nothing left
#: (``Unreachable``, ``ClientClosed``, ``NotRecorded``), or the gateway said no (any 4xx).
_CREATED_NOTHING = (
    PayloadError,
    Unreachable,
    ClientClosed,
    NotRecorded,
    Unauthorized,
    RateLimited,
    EndpointNotFound,
    ModelNotAllowed,
    WebhookNotSupported,
    NotSupported,
)


#: seconds a create in flight is let answer after Ctrl-C in ``send``/``submit``/
#: ``send_many``, and before a client closes or the interpreter exits: its answer names
#: a task that exists and bills (as a batch lets its chunk in flight answer,
#: ``lab.batch.STOP_WAIT``)
CREATE_ANSWER_GRACE = 15.0

#: what happens next to a task contact was lost with, in the words every view shows
CONTACT_LOST_NEXT = (
    "The task may still run or be done: following it again (client.job(endpoint, "
    "request_id), a grid's Submit, the batch run again) makes no new create"
)


def lost_contact(job: JobLike) -> bool:
    """Whether a job ended without word of its task: every end but the gateway's word
    about the task itself (404 "Request not found", "Runtime execution failed") and a
    closed client. Polling gave up on faults of contact, or a poll was refused (a key
    revoked then given back, a proxy's 403 page, a 409): the task may run and bill, so
    it is never called failed; following it again (``client.job``) makes no create."""
    exc = job.exception()
    return isinstance(exc, Exception) and not isinstance(
        exc, (RequestNotFound, RuntimeFailed, ClientClosed)
    )


def _copy_over(job: Job) -> bool:
    """Whether ``job`` has ended and copies nothing now (no copy of its outputs, or
    that copy done): a copy asked again starts anew, never beside a running one."""
    return job.done() and (job.copying is None or job.copying.done())


def created_nothing(exc: BaseException) -> bool:
    """Whether a failed create certainly made no task (else: "outcome unknown")."""
    if isinstance(exc, _CREATED_NOTHING):
        return True
    code = exc.status_code if isinstance(exc, GatewayError) else None
    return code is not None and 400 <= code < 500


def create_failure(exc: BaseException) -> str:
    """A failed create in words, by what it means for money: "not created" (nothing
    was made, sending it again pays once) or "outcome unknown" (a task may exist and
    bill: never sent again by us). Batches, grids and sweeps say it alike."""
    said = words_of(exc)
    if created_nothing(exc):
        return f"not created: {said}"
    return (
        f"outcome unknown: {said}. Its task may exist (and bill): it is not sent again; "
        "look for it with client.history()"
    )


def creates_said(
    outcomes: Collection[Job | BaseException | None], follow: str, *, never_sent: int = 0
) -> str:
    """What creates came to, in words, by what each means for money: the tasks made,
    named, with ``follow`` (how to follow them); those that made nothing (and
    ``never_sent`` more); those whose task may exist (a failure that may have billed,
    or ``None``: no answer, the create cut)."""
    made = [o for o in outcomes if isinstance(o, Job)]
    nothing = never_sent + sum(
        isinstance(o, BaseException) and created_nothing(o) for o in outcomes
    )
    unknown = len(outcomes) + never_sent - len(made) - nothing
    said = []
    if made:
        named = ", ".join(f"{job.request_id} on {job.endpoint}" for job in made[:5])
        more = f" and {len(made) - 5} more" if len(made) > 5 else ""
        tasks = "a task" if len(made) == 1 else f"{len(made)} tasks"
        said.append(
            f"the gateway created {tasks} ({named}{more}), which run (and bill): {follow}; "
            "never send them again"
        )
    if nothing:
        said.append(f"{nothing} made nothing (never sent, or refused): sending again pays once")
    if unknown:
        said.append(
            f"{unknown} may have made a task (no answer, or a 5xx): the ledger says outcome "
            "unknown; look with client.history() before sending again"
        )
    return "; ".join(said) or "nothing was sent"


def create_unanswered(endpoint: str, seconds: float) -> OutcomeUnknown:
    """The error of a ``run`` whose ``timeout`` passed before its create answered: the
    create is never cut for it (its answer names a paid task): it goes on."""
    return OutcomeUnknown(
        f"no answer to the create within the run's timeout of {seconds:g} s: its task may "
        "exist (and bill). The create goes on: a task the gateway makes is recorded in the "
        "ledger and followed (client.jobs, client.history()); else the ledger says outcome "
        "unknown. Look there before sending it again",
        endpoint=endpoint,
    )


class CreatesInFlight:
    """The creates of this process on the wire and not answered yet, by client: a
    client's close and the interpreter's exit let them answer (at most
    :data:`CREATE_ANSWER_GRACE` seconds) before the gateway goes, so a task made is
    recorded with its request id; and from the moment they stop, no create leaves
    (docs/decisions.md#closing-lets-creates-answer).

    Owner: ``Client._create_and_record``, the only writer (on the engine: an entry from
    the moment a create goes on the wire to its end). Readers: :meth:`Client.close` (its
    own) and the exit hook (:func:`_let_creates_answer_at_exit`, every client's)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[concurrent.futures.Future[Job], Client] = {}
        self._exiting = False

    def leave(self, client: Client, endpoint: str) -> concurrent.futures.Future[Job]:
        """A create of ``client`` goes on the wire now; the future returned takes its
        outcome. ``ClientClosed`` instead (nothing sent) once the client or the process
        stopped: decided here, under the lock :meth:`stop` takes, so a create either is
        counted in the grace of a stop or never leaves."""
        answered: concurrent.futures.Future[Job] = concurrent.futures.Future()
        with self._lock:
            if client._closed or self._exiting:  # noqa: SLF001 - its own module's
                raise ClientClosed(endpoint=endpoint)
            self._entries[answered] = client
        return answered

    def end(self, answered: concurrent.futures.Future[Job]) -> None:
        with self._lock:
            self._entries.pop(answered, None)

    def stop(self, client: Client | None = None) -> list[concurrent.futures.Future[Job]]:
        """No create of ``client`` (None: of the process, exiting) leaves from now on;
        returns those on the wire, to let answer."""
        with self._lock:
            if client is None:
                self._exiting = True
            else:
                client._closed = True  # noqa: SLF001 - its own module's
        return self.of(client)

    def of(self, client: Client | None = None) -> list[concurrent.futures.Future[Job]]:
        """The outcomes to come of ``client``'s creates in flight (None: every client's
        in this process: a forked child's copy of its parent's never end here)."""
        with self._lock:
            entries = list(self._entries.items())
        return [
            answered
            for answered, owner in entries
            if client in (owner, None) and owner._pid == os.getpid()  # noqa: SLF001 - its own module's
        ]


#: The process's one registry of creates in flight (see :class:`CreatesInFlight`).
CREATES_IN_FLIGHT = CreatesInFlight()


def let_creates_answer(
    creates: Collection[concurrent.futures.Future[Job]], why: str, follow: str
) -> None:
    """Before the gateway goes (``why``: a close, the exit), let ``creates`` answer, at
    most :data:`CREATE_ANSWER_GRACE` seconds through Ctrl-C, and say in a warning what
    they came to (``follow``: how to follow the tasks made)."""
    if not creates:
        return
    waited = f"{len(creates)} create{'s' if len(creates) > 1 else ''} in flight"
    wait_through_interrupts(creates, CREATE_ANSWER_GRACE, why=why, waited=waited)
    outcomes = [
        None if not f.done() or f.cancelled() else (f.exception() or f.result()) for f in creates
    ]
    warnings.warn(
        f"genwidgets: {why}, waited for the answers to {waited} (at most "
        f"{CREATE_ANSWER_GRACE:g} s): {creates_said(outcomes, follow)}",
        GenwidgetsWarning,
        stacklevel=3,
    )


@atexit.register  # after the ledger writer's exit flush (imported above): runs before it
def _let_creates_answer_at_exit() -> None:
    """At interpreter exit (a script ending, an AsyncClient never closed, a create still
    in flight on a worker thread), every create in flight answers first: its task is
    recorded with its request id, and resumed by a later run."""
    let_creates_answer(
        CREATES_IN_FLIGHT.stop(),
        "exiting",
        "their handles are in the ledger: client.resume() in a new process follows them",
    )


def _never_sent(exc: BaseException, endpoint: str, rows: bool) -> ClientClosed | None:
    """The words of a create the client's close (or the exit) stopped before it left,
    in place of the close's own (``exc``), which say a task may run: none was made.
    ``rows``: a create of ``send_many`` (a batch's or a grid's row), sent by a new run."""
    if not isinstance(exc, ClientClosed) or exc.request_id is not None:
        return None
    again = (
        "running it again from a new client (the batch, the grid or send_many) sends it"
        if rows
        else "send it again from a new client (gw.Client())"
    )
    return ClientClosed(endpoint=endpoint, never_sent=True, again=again)


class _CreateInFlight:
    """The create of one :meth:`Client.send`, shielded from the cancel of an interrupted
    wait: its answer names a paid task, so on Ctrl-C the caller lets it answer (at most
    :data:`CREATE_ANSWER_GRACE` seconds) before cancelling it, wherever the interrupt
    lands (docs/decisions.md#an-interrupted-submit)."""

    def __init__(
        self,
        engine: Engine,
        create: Callable[[Leaving], Coroutine[Any, Any, Job]],
        never_sent: Callable[[], None],
        halt: threading.Event | None = None,
    ) -> None:
        self._engine = engine
        self._stop = asyncio.Event()  # set on the engine: Ctrl-C came, it may not leave
        self._leaving = Leaving(0, self._stop, set(), halt)  # halt: its caller's stop
        self._create = create(self._leaving)
        self._never_sent = never_sent
        self._halt = halt
        self._lock = threading.Lock()  # began / abandoned: the engine's or the caller's
        self._task: asyncio.Future[Job] | None = None
        self._abandoned = False
        #: the create's outcome, on the caller's side
        self.answered: concurrent.futures.Future[Job] = concurrent.futures.Future()

    async def shielded(self) -> Job:
        """On the engine: the create, which a cancel of this wait leaves running."""
        with self._lock:
            if self._abandoned:  # interrupted before it began: it never will
                self._create.close()
                raise asyncio.CancelledError
            self._task = asyncio.ensure_future(self._create)
        self._task.add_done_callback(self._copy_outcome)
        if self._halt is not None:
            watching = asyncio.ensure_future(self._held_back_once_halted(self._task))
            self._task.add_done_callback(lambda _: watching.cancel())
        return await asyncio.shield(self._task)

    async def _held_back_once_halted(self, task: asyncio.Future[Job]) -> None:
        """On the engine: once its caller's ``halt`` is set (seen within a quarter
        second), a create waiting to leave (the rate gate, a backoff) is cancelled there
        and then, as at Ctrl-C, instead of holding its worker thread until the gate opens
        only to be refused as it leaves; one on the wire answers, and is watched on: a try
        back off the wire (a 429) is cancelled as it waits for the next."""
        assert self._halt is not None
        while not task.done():
            if self._halt.is_set() and await self._hold_back(task):
                return
            await asyncio.wait({task}, timeout=0.25)

    def _copy_outcome(self, task: asyncio.Future[Job]) -> None:
        if task.cancelled():
            self.answered.cancel()
        elif (error := task.exception()) is not None:
            self.answered.set_exception(error)
        else:
            self.answered.set_result(task.result())

    def interrupted(self, endpoint: str) -> str:
        """After Ctrl-C, on the caller's thread: the create is let answer (bounded) or,
        not begun, never sent; says what that left."""
        with self._lock:
            self._abandoned = self._task is None
            task = self._task
        if task is None:
            self._create.close()
            self._never_sent()
            return "interrupted before the create was sent: nothing was sent, no task made"
        if self._engine.run(self._hold_back(task)):
            with contextlib.suppress(BaseException):  # ended and recorded in milliseconds
                wait_future(self.answered, STOP_WAIT)
            return "interrupted before the create was sent: nothing was sent, no task made"
        wait_through_interrupts([self.answered], CREATE_ANSWER_GRACE)
        if not self.answered.done():
            self._engine.call_soon(task.cancel)
            with contextlib.suppress(BaseException):  # ended and recorded in milliseconds
                wait_future(self.answered, STOP_WAIT)
            return (
                "interrupted; the gateway did not answer the create within "
                f"{CREATE_ANSWER_GRACE:g} s: its task may exist (and bill). The ledger says "
                "outcome unknown; look for it with client.history() before sending it again"
            )
        if self.answered.cancelled():
            return "interrupted; the create was cancelled: its task may exist (and bill)"
        error = self.answered.exception()
        if error is not None:
            return f"interrupted; the create failed, {create_failure(error)}"
        rid = self.answered.result().request_id
        return (
            f"interrupted; the gateway had created task {rid} on {endpoint}: it runs (and "
            "bills), and this client goes on following it. Follow it with "
            f"client.job({endpoint!r}, {rid!r}), or client.resume() after a restart; "
            "do not send it again"
        )

    async def _hold_back(self, task: asyncio.Future[Job]) -> bool:
        """On the engine, after Ctrl-C: whether the create was still waiting to leave
        (its turn, the rate gate, a retry's backoff): then it never leaves (cancelled,
        recorded as nothing sent); else it is on the wire, or done, and let answer."""
        self._stop.set()
        if task.done() or self._leaving.on_wire:
            return False
        task.cancel()
        return True

    def unanswered(self, endpoint: str, seconds: float) -> Job:
        """Past the caller's deadline (``run``'s timeout) with the create left running:
        its Job if it answered as the wait ran out, else :func:`create_unanswered`."""
        if self.answered.done():
            return self.answered.result()
        raise create_unanswered(endpoint, seconds)


async def _on_loop(make: Callable[[], T]) -> T:
    """``make()``, called on the loop that runs this coroutine."""
    return make()


class LiveClients:
    """Who pays: the live (not closed, not collected) clients of this process, oldest
    first, each with its gateway name and key.

    Owner: :class:`Client`, the only writer: a client joins when made and leaves
    when closed (or collected). Readers: :func:`default_client` and
    :func:`live_client`, nothing else (docs/decisions.md#who-owns-the-process-wide-state).
    """

    def __init__(self) -> None:
        self._entries: dict[int, tuple[weakref.ref[Client], str, _config.Secret | None]] = {}
        self._sequence = itertools.count()

    def join(self, client: Client, key: _config.Secret | None) -> int:
        """Count ``client`` as live; returns its number, for :meth:`leave`."""
        seq = next(self._sequence)

        def forget(_collected: weakref.ref[Client]) -> None:
            self.leave(seq)

        # by its whole address: a password in it is a payer too (the name hides it)
        self._entries[seq] = (weakref.ref(client, forget), client.base_url, key)
        return seq

    def leave(self, seq: int) -> None:
        self._entries.pop(seq, None)

    def payers(self) -> list[tuple[Client, str, _config.Secret | None]]:
        """Live clients, oldest first, with who pays: (client, gateway name, key)."""
        live = [(ref(), name, key) for ref, name, key in list(self._entries.values())]
        return [(client, name, key) for client, name, key in live if client is not None]


#: The process's one registry of live clients (see :class:`LiveClients`).
LIVE_CLIENTS = LiveClients()


def default_client() -> Client:
    """The client ``gw.grid``/``form``/``board``/``sweep`` use when none is given.

    One live client (or several of one gateway and key): that one, the newest.
    Live clients of different gateways or keys: :class:`AmbiguousClient` naming
    them, since guessing would pick who pays. None: ``gw.Client()`` from the
    environment (the embedded simulator when nothing is set).
    """
    found = LIVE_CLIENTS.payers()
    if len({(name, key) for _client, name, key in found}) > 1:
        raise AmbiguousClient(sorted(repr(client) for client, _name, _key in found))
    return found[-1][0] if found else Client()


def live_client() -> Client | None:
    """The client :func:`default_client` would pick among the live ones, without
    making one or raising: None when there is none, or several payers (a form's
    "simulated" badge asks this before its first submit)."""
    found = LIVE_CLIENTS.payers()
    if not found or len({(name, key) for _client, name, key in found}) > 1:
        return None
    return found[-1][0]


class Client:
    """A client of one gateway. With no URL and no key, the embedded simulator.

    ``timeout`` bounds each HTTP request (connect at most 10 s); ``max_retries``
    bounds retries of one operation. Nothing is sent at construction except
    starting the embedded simulator when it is the gateway. ``notice_target``: the
    p95 delay (seconds) between a task's end and our noticing it, which the polling
    schedule aims for; None (the default) keeps it in proportion to the task, a tenth
    of its endpoint's learnt run time within [0.25, 1.5] s; ``max_status_rate``: polls
    per second this client never exceeds, however many jobs are live (status requests,
    and the result-address polls of running tasks; see ``genwidgets.jobs.polling``).
    ``poll_policy``: the schedule's shape and a job's patience (:class:`PollPolicy`);
    ``clock``: seconds like ``time.monotonic``, for the schedule, the budget and the
    retries.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | _config.Secret | None = None,
        *,
        timeout: float = _config.DEFAULT_TIMEOUT_S,
        max_retries: int = _config.DEFAULT_MAX_RETRIES,
        max_in_flight: int = _config.DEFAULT_MAX_IN_FLIGHT,
        allow_insecure: bool = False,
        headers: Mapping[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        ledger: bool | Ledger | None = True,
        download: bool = True,
        notice_target: float | None = None,
        max_status_rate: float = 50,
        poll_policy: PollPolicy | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        api_key = _config.Secret.wrap(api_key)  # first: no frame keeps the raw key (22.7)
        self.base_url: str = "(not set up)"  # a repr that works while the client is built
        self.embedded = False
        settings = _config.resolve(base_url, api_key)
        self.embedded = settings.embedded
        if settings.embedded:
            from .simulator import embedded  # noqa: PLC0415 - the simulator's web app loads only when it is the gateway

            sim = embedded()
            resolved_url: str = sim.base_url
            key: _config.Secret | None = _config.Secret(_config.DEMO_KEY)
        else:
            assert settings.base_url is not None
            resolved_url, key = settings.base_url, settings.api_key
            if (
                key
                and resolved_url.startswith("http://")
                and not _config.is_loopback(resolved_url)
                and not allow_insecure
            ):
                raise ValueError(
                    "refusing to send the API key over plain http to "
                    f"{_config.hide_userinfo(resolved_url)}: use "
                    "https, or pass allow_insecure=True if you really mean it"
                )
        self.base_url = resolved_url
        #: which key pays, as the ledger records it (never the key itself)
        self._fingerprint = key.fingerprint() if key is not None else None
        self.timeout = timeout
        self.max_retries = max_retries
        self._engine = get_engine()
        policy = poll_policy or polling.DEFAULT_POLICY
        # Built on the engine's loop: its AsyncClient and semaphore belong to that loop.
        self._gateway: Gateway = self._engine.run(
            _on_loop(
                functools.partial(
                    Gateway,
                    self.base_url,
                    key,
                    timeout=timeout,
                    max_retries=max_retries,
                    max_in_flight=max_in_flight,
                    transport=transport,
                    headers=headers,
                    clock=clock,
                    not_found_grace=policy.not_found_grace,
                )
            )
        )
        self.ledger: Ledger | None = self._open_ledger(ledger)
        # off on purpose: False, or any other value that reads false (None, 0)
        asked = isinstance(ledger, Ledger) or bool(ledger)
        #: a ledger was asked for and could not be opened (a home that cannot be written):
        #: a grid or a batch then refuses before any create, as the home's ledger would;
        #: False with a ledger, or one turned off on purpose (``ledger=False``, ``None``)
        self.ledger_unopened = self.ledger is None and asked
        if self.ledger is not None and not self.embedded:  # rows of older spellings too
            try:
                self.ledger.writes.record_gateway_name(self.gateway_name)
            except (LedgerError, OSError) as exc:
                log.warning("genwidgets: could not read the ledger's gateway names: %s", exc)
        self._recorder: Recorder | None = (
            LedgerRecorder(
                self.ledger,
                self.gateway_name,
                opener=self._gateway.open_output,
                download=download,
                timeout=timeout,
                fingerprint=self._fingerprint,
            )
            if self.ledger is not None or asked  # asked for, though unopened
            else None
        )
        budget = StatusBudget(
            max_status_rate, hold=lambda: self._gateway.gate.remaining, clock=clock
        )
        self._schedule = Schedule(
            notice_target,
            budget=budget,
            ledger=self.ledger,
            gateway=self.gateway_name,
            clock=clock,
            policy=poll_policy,
            planner=PLANNER,  # off the engine's loop (docs/decisions.md#plans-off-the-loop)
        )
        self._jobs: dict[tuple[str, str], Job] = {}  # by (endpoint, request_id)
        self._download = download
        self._closed = False
        self._pid = os.getpid()
        self._seq = LIVE_CLIENTS.join(self, key)

    @staticmethod
    def _open_ledger(ledger: bool | Ledger | None) -> Ledger | None:
        if isinstance(ledger, Ledger):
            return ledger
        if not ledger:
            return None
        try:
            return Ledger()
        except (LedgerError, OSError) as exc:
            warnings.warn(Client._ledger_off(exc), LedgerWarning, stacklevel=3)
            return None

    @staticmethod
    def _ledger_off(exc: BaseException) -> str:
        """Why the ledger is off, said from what the home is: a file, a folder at the
        ledger's name, a link to a missing place, a full disk, a folder that cannot be
        written (outputs cannot be saved either, but for a folder at the ledger's name),
        and the fix; an error of the ledger's own (a newer schema) already says its fix
        (docs/decisions.md#ledger-off)."""
        where, env = _config.home(), _config.ENV_HOME
        said = _config.redact(str(exc))
        cause = exc.__cause__ if isinstance(exc, LedgerError) else exc
        above = next((p for p in where.parents if p.exists()), where)
        anew = f"Set {env} to a folder you can write."
        full = getattr(cause, "errno", None) == errno.ENOSPC
        if where.is_symlink() and not where.exists():  # a drive not mounted, a folder moved
            home_is = f"a link to {os.readlink(where)}, a place that does not exist"
            fix = f"Mount or make that place, or set {env} to a folder you can write."
        elif where.exists() and not where.is_dir():
            home_is, fix = "a file, not a folder", anew
        elif not where.exists() and not above.is_dir():
            home_is, fix = f"under the file {above}", anew
        elif full or (getattr(cause, "sqlite_errorcode", 0) or 0) & 0xFF == 13:  # SQLITE_FULL
            home_is = f"on a full disk ({said})"
            fix = f"Free some space, or set {env} to a folder on another disk."
        elif not os.access(where if where.exists() else above, os.W_OK):
            home_is, fix = f"not writable ({said})", anew
        else:  # the home is fine: the ledger file is not, and outputs are still saved
            ledger = where / LEDGER_FILE_NAME
            if ledger.is_dir():
                said = f"{ledger} is a folder, where the ledger file goes"
                fix = f" Move that folder away (a new ledger starts there), or set {env} elsewhere."
            elif isinstance(exc, LedgerError) and not isinstance(cause, (sqlite3.Error, OSError)):
                fix = ""  # the ledger's own words (a newer schema version) say what to do
            else:
                fix = f" If the ledger file cannot be written, set {env} to a folder that can."
            return (
                f"genwidgets: the task ledger is off ({said}); tasks will not survive a "
                f"kernel restart (their outputs are still saved).{fix}"
            )
        return (
            f"genwidgets: the task ledger is off and no output can be saved: {env} "
            f"({where}) is {home_is}; tasks will not survive a kernel restart. {fix}"
        )

    def __repr__(self) -> str:
        shown = _config.hide_userinfo(self.base_url)
        return f"<Client {shown}{' (simulated)' if self.embedded else ''}>"

    @property
    def gateway_name(self) -> str:
        """How the ledger (and every view of it) names this gateway: "simulator" for the
        embedded one, else its address with a password in it masked
        (docs/decisions.md#credentials-in-the-base-url)."""
        return "simulator" if self.embedded else _config.hide_userinfo(self.base_url)

    @property
    def closed(self) -> bool:
        """True after :meth:`close`: nothing more is sent, polled or recorded."""
        return self._closed

    def _check_open(self, endpoint: str | None = None, request_id: str | None = None) -> None:
        if self._closed:
            raise ClientClosed(endpoint=endpoint, request_id=request_id)
        if os.getpid() != self._pid:  # a forked child: the engine and the connections
            raise RuntimeError(  # are the parent's (a submit hung there, no deadline)
                f"this gw.Client was made in process {self._pid}, and this is process "
                f"{os.getpid()} (a fork, e.g. multiprocessing): make a new gw.Client() here"
            )

    @property
    def jobs(self) -> list[Job]:
        """Jobs of this client in this session, newest first."""
        return sorted(self._jobs.values(), key=lambda j: j.submitted_at, reverse=True)

    @property
    def request_counts(self) -> dict[str, int]:
        """Requests sent so far, by operation (create, status, result, cancel)."""
        return dict(self._gateway.counts)

    # -- the operations ----------------------------------------------------
    def prepare(
        self, endpoint: str, payload: Mapping[str, Any], *, validate: bool = True
    ) -> PreparedRequest:
        """Validate and serialise ``payload`` once, sending nothing (see :meth:`send`).

        Raises :class:`PayloadError` for a payload the endpoint refuses, webhook
        fields, or a body over the spec's 64 MB (UTF-8 bytes of the exact body).
        """
        return prepare(endpoint, payload, validate=validate)

    def send(
        self,
        prepared: PreparedRequest,
        *,
        headers: Mapping[str, str] | None = None,
        stop: threading.Event | None = None,
    ) -> Job:
        """Create the task of a prepared request: its exact ``body``, not validated again.

        Ctrl-C while the create is in flight lets it answer (at most
        :data:`CREATE_ANSWER_GRACE` seconds), so a task the gateway made is recorded and
        followed, then raises ``KeyboardInterrupt`` saying whether a task exists and how
        to follow it (docs/decisions.md#an-interrupted-submit). ``stop``, set from another
        thread, keeps a create that has not left from ever leaving (``Unreachable``,
        nothing sent); one already sent answers and is recorded
        (docs/decisions.md#a-cancelled-async-call)."""
        return self._send(prepared, headers, stop=stop)

    def _send(
        self,
        prepared: PreparedRequest,
        headers: Mapping[str, str] | None,
        within: float | None = None,
        *,
        stop: threading.Event | None = None,
    ) -> Job:
        """:meth:`send`, waiting at most ``within`` seconds for the create's answer (the
        deadline of :meth:`run`): past it the create goes on (never cut: its answer names
        a paid task) and ``OutcomeUnknown`` says so."""
        self._check_open(prepared.endpoint)
        row = self._record_intent(prepared)

        def never_sent() -> None:
            if row is not None and self.ledger is not None:
                stopped = KeyboardInterrupt("interrupted before it was sent")
                self._settle_failed_create(row, stopped, nothing_sent=True)

        create = _CreateInFlight(
            self._engine,
            lambda leaving: self._create(prepared, headers, row, batch=leaving),
            never_sent,
            stop,
        )
        try:
            return self._engine.run(create.shielded(), within, cancel_on_timeout=False)
        except concurrent.futures.CancelledError:
            if stop is not None and stop.is_set():  # held back at the rate gate: never sent
                raise Unreachable(HALTED) from None
            raise
        except KeyboardInterrupt:
            raise KeyboardInterrupt(create.interrupted(prepared.endpoint)) from None
        except concurrent.futures.TimeoutError:
            if within is None:  # the create's own failure, not this wait's
                raise
            return create.unanswered(prepared.endpoint, within)

    def send_many(
        self,
        requests: Sequence[PreparedRequest],
        *,
        concurrency: int = 4,
        on_sent: Callable[[int, Job | Exception], object] | None = None,
        hold: Callable[[], bool] | None = None,
        tags: Sequence[str | None] | None = None,
        stop: threading.Event | None = None,
        on_answer: Callable[[int, Job | Exception], object] | None = None,
    ) -> list[Job | Exception]:
        """Create the tasks of many prepared requests, at most ``concurrency`` at once,
        on the engine; one failed create never stops the others.

        Returns each request's Job, or the exception its create raised, in order.
        ``on_sent(index, outcome)`` runs on this thread as each answer arrives. Each
        create's ledger intent is written just before it is put on the wire, so a create
        that never left (waiting its turn or at the rate gate when an interrupt or a
        kill came) leaves no record: it was never sent. An interrupt stops the rest: the
        creates in flight are let answer (at most :data:`CREATE_ANSWER_GRACE` seconds,
        as in :meth:`send`), and the ``KeyboardInterrupt`` names the tasks made and how
        to follow them (docs/decisions.md#an-interrupted-submit).
        ``hold()`` (thread-safe, asked before each create leaves) holds the rest back;
        ``on_answer(index, outcome)`` runs on the engine as each create answers, before
        its slot goes to the next create (a batch's breaker counts there).
        ``tags[i]`` is written with request ``i``'s intent in the ledger: what it was sent
        for (a batch's row and attempt), so a resume finds its task by it.
        ``stop``, set from another thread (an :class:`AsyncClient`'s caller cancelled),
        stops the rest as an interrupt does: from the moment it is set no create leaves;
        those in flight answer (never cut), then ``concurrent.futures.CancelledError``
        says what the call made
        (docs/decisions.md#a-cancelled-async-call).
        """
        requests = list(requests)
        for prepared in requests:
            self._check_open(prepared.endpoint)
        tags = list(tags) if tags is not None else [None] * len(requests)
        if len(tags) != len(requests):
            raise ValueError(f"{len(tags)} tags for {len(requests)} requests: one each")

        ended: dict[int, Job | BaseException] = {}  # on the engine, as each create ends

        def create(index: int) -> Callable[[Leaving], Coroutine[Any, Any, Job]]:
            async def one(batch: Leaving) -> Job:
                try:
                    ended[index] = job = await self._create(
                        requests[index], None, tag=tags[index], late=True, batch=batch
                    )
                except asyncio.CancelledError:
                    if batch.on_wire:  # cut on the wire; else stopped before it left
                        ended[index] = asyncio.CancelledError()
                    raise
                except BaseException as exc:
                    ended[index] = exc
                    raise
                return job

            return one

        try:
            return run_each(
                self._engine,
                [create(i) for i in range(len(requests))],
                concurrency=concurrency,
                on_each=on_sent,
                hold=hold,
                answer_grace=CREATE_ANSWER_GRACE,
                halt=stop,
                on_answer=on_answer,
            )
        except (KeyboardInterrupt, concurrent.futures.CancelledError) as stopping:
            follow = (
                "this client goes on following them: client.jobs, client.job(endpoint, "
                "request_id), or client.resume() after a restart"
            )
            said = creates_said(list(ended.values()), follow, never_sent=len(requests) - len(ended))
            how = "interrupted" if isinstance(stopping, KeyboardInterrupt) else "cancelled"
            raise type(stopping)(f"{how}; of {len(requests)} requests, {said}") from None

    def submit(
        self,
        endpoint: str,
        payload: Mapping[str, Any],
        *,
        validate: bool = True,
        headers: Mapping[str, str] | None = None,
    ) -> Job:
        """Create a task and return its :class:`Job`: ``send(prepare(endpoint, payload))``."""
        return self.send(self.prepare(endpoint, payload, validate=validate), headers=headers)

    def _record_intent(self, prepared: PreparedRequest, tag: str | None = None) -> int | None:
        """Written before the request leaves, so a crash leaves "outcome unknown", not a gap."""
        if self.ledger is None:
            return None
        try:
            return self.ledger.writes.record_intent(**self._intent(prepared, tag))
        except (LedgerError, OSError) as exc:
            log.warning("genwidgets: could not record the task intent: %s", exc)
            return None

    async def _intent_as_it_leaves(self, prepared: PreparedRequest, tag: str | None) -> int | None:
        """:meth:`_record_intent` for a create of :meth:`send_many`, on the engine as the
        request goes on the wire (docs/decisions.md#one-batch-sender). A tagged one whose
        intent cannot be kept raises ``NotRecorded``: it does not leave."""
        if self.ledger is None:
            return None
        try:
            return await self.ledger.writes.record_intent_as_it_leaves(
                **self._intent(prepared, tag)
            )
        except NotRecorded:
            raise
        except (LedgerError, OSError) as exc:
            log.warning("genwidgets: could not record the task intent: %s", exc)
            return None

    def _intent(self, prepared: PreparedRequest, tag: str | None) -> dict[str, Any]:
        """What a create's intent records: the ledger's ``record_intent`` arguments."""
        return {
            "gateway": self.gateway_name,
            "endpoint": prepared.endpoint,
            "payload": prepared.payload,
            "tag": tag,
            "fingerprint": self._fingerprint,
        }

    def job(self, endpoint: str, request_id: str) -> Job:
        """Re-attach to an existing task by its request_id. A task the ledger records as
        ended is answered from the ledger, as :meth:`history` does: the gateway is not
        asked (it may have forgotten the task: a new embedded simulator, a retention
        past). A job of this client that stopped polling for want of contact
        (``Unreachable``, ``ServerError``, a long rate limit) is polled anew: its task
        may still run."""
        self._check_open(endpoint, request_id)
        known = self._jobs.get((endpoint, request_id))
        if known is not None and not lost_contact(known):
            if not self._copies_left(known):
                return known
            return self._recorded_end(endpoint, request_id) or known  # copied again
        try:
            handle = Handle.documented(self.base_url, endpoint, request_id)  # spec 2.1's URLs
        except ValueError as exc:  # an id no URL can carry: the caller's input, no payload
            field = "endpoint" if str(exc).startswith("the endpoint id") else "request_id"
            raise PayloadError([{"loc": (field,), "msg": str(exc)}]) from None
        if self.ledger is not None:
            ended = self._recorded_end(endpoint, request_id)
            if ended is not None:
                return ended
            try:
                self.ledger.writes.record_attach(
                    self.gateway_name, handle, fingerprint=self._fingerprint
                )
            except (LedgerError, OSError) as exc:
                log.warning("genwidgets: could not record the re-attached task: %s", exc)
        return self._adopt(handle, payload=None, known_made=False)

    def _recorded_end(self, endpoint: str, request_id: str) -> Job | None:
        """The job of a task the ledger records as ended (None if it does not), with its
        recorded result; an end that was only the gateway's "not found" is no result, and
        is asked again. A task another key made is said in a warning, since the gateway
        may answer this key "not found" (docs/decisions.md#key-fingerprints)."""
        assert self.ledger is not None
        try:
            row = self.ledger.get(self.gateway_name, request_id)
        except (LedgerError, OSError) as exc:
            log.warning("genwidgets: could not read the ledger: %s", exc)
            return None
        if row is None or row.endpoint != endpoint:
            return None
        if row.state == FINISHED and row.error_type != GONE:
            # copied only as resume() would: this key's, newest row, no live kernel's; a
            # copy removed since too, since this task is asked for by name
            copy = False
            if (row.copies_pending or row.copies_gone) and self._copies:
                try:
                    copy = bool(
                        self.ledger.with_copies_pending(
                            self.gateway_name,
                            fingerprint=self._fingerprint,
                            request_id=request_id,
                            removed=True,
                        )
                    )
                except (LedgerError, OSError) as exc:  # the recorded end still answers
                    log.warning("genwidgets: could not read the ledger: %s", exc)
            return self._from_row(row, copy=copy, recopy=True)
        if row.made_with_another_key(self._fingerprint):
            warnings.warn(
                f"genwidgets: task {request_id} was created with another API key than this "
                "client's: the gateway may not show it to this key. It is followed, but a "
                "'not found' will not mark it gone in the ledger; a client made with the "
                "key that created it follows it as its own.",
                LedgerWarning,
                stacklevel=3,
            )
        return None

    def history(
        self,
        endpoint: str | None = None,
        status: str | None = None,
        limit: int | None = None,
    ) -> list[Job]:
        """Jobs of this gateway from the ledger, newest first, re-attached.

        Finished ones carry their recorded result (and local output files); the
        others are polled again. ``status`` filters by the gateway's status name
        or a ledger state (``unfinished``, ``ok``, ``failed``, ...); ``limit`` is at
        most 1,000,000 (``jobs.ledger.MAX_LIMIT``). Either out of bounds is a
        ``ValueError`` saying what is allowed. Requests whose outcome is unknown have
        no request_id and so no Job: see ``client.ledger.rows()``. While this client's
        writes cannot reach the ledger (a lock held elsewhere, a full disk) a warning
        says so and its own jobs of this session not there yet are listed too.
        """
        self._check_open()
        if self.ledger is None:
            return []
        rows = self.ledger.rows(self.gateway_name, endpoint=endpoint, status=status, limit=limit)
        # another kernel polls those, or another key made them
        rows = self.ledger.without_held(self.gateway_name, rows, fingerprint=self._fingerprint)
        jobs = self._from_rows([row for row in rows if row.request_id is not None])
        if self.ledger.pending and status is None:  # a lock (a full disk) holds its writes
            listed = {(job.endpoint, job.request_id) for job in jobs}
            own = [j for j in self.jobs if endpoint in (None, j.endpoint)]
            jobs += [j for j in own if (j.endpoint, j.request_id) not in listed]
            jobs.sort(key=lambda job: job.submitted_at, reverse=True)  # newest first
        return jobs if limit is None else jobs[:limit]

    def resume(self, *, force: bool = False, recopy: bool = False) -> list[Job]:
        """Re-attach every unfinished job of this gateway (after a restart) and return them,
        then the finished ones whose outputs were never copied: those are copied in the
        background, each job's ``result()`` returning once its copies were tried
        (nothing is created or polled again: docs/decisions.md#copies-pending). A local
        copy removed since is left removed (the user may have freed space), unless
        ``recopy=True``: then every recorded copy is looked for on disk (one ``stat``
        each) and those gone are copied again; ``client.job(endpoint, id)`` does that
        for its one task.

        Tasks another live kernel polls stay its own unless ``force=True``
        (docs/decisions.md#ledger-leases); tasks another API key created are left to a
        client of that key, even with ``force`` (docs/decisions.md#key-fingerprints)."""
        self._check_open()
        if self.ledger is None:
            return []
        rows, skipped = self.ledger.claim_unfinished(
            self.gateway_name, force=force, fingerprint=self._fingerprint
        )
        if skipped:
            left_to_other_kernels(skipped, stacklevel=3)
        if self._copies:
            try:
                rows += self.ledger.with_copies_pending(
                    self.gateway_name, fingerprint=self._fingerprint, removed=recopy
                )
            except (LedgerError, OSError) as exc:  # the tasks leased above are still followed
                log.warning("genwidgets: could not read the ledger's copies pending: %s", exc)
        return self._from_rows(rows, copy=True, recopy=recopy)

    def _from_rows(
        self, rows: list[LedgerRow], *, copy: bool = False, recopy: bool = False
    ) -> list[Job]:
        """The jobs of ``rows``; a row no address can be made of (an endpoint id recorded
        before ids were checked) is left out with one warning, never every other row."""
        jobs, unusable = [], []
        for row in rows:
            try:
                jobs.append(self._from_row(row, copy=copy, recopy=recopy))
            except ValueError as exc:
                unusable.append(f"{row.request_id} ({exc})")
        if unusable:
            warnings.warn(
                f"genwidgets: {len(unusable)} task(s) of the ledger cannot be followed and "
                f"were left out: {'; '.join(unusable[:3])}",
                LedgerWarning,
                stacklevel=3,
            )
        return jobs

    def _from_row(self, row: LedgerRow, *, copy: bool = False, recopy: bool = False) -> Job:
        """The Job of a ledger row, with the URLs the gateway gave when it was created;
        with ``copy``, a finished one copies its outputs never copied (with ``recopy``,
        those whose copy was removed since too; a known job that ended without them is
        made anew to try again)."""
        handle = row.handle(self.base_url)
        assert handle is not None
        pending = row.copies_pending + (row.copies_gone if recopy else [])
        copy = copy and self._copies and bool(pending)
        known = self._jobs.get((handle.endpoint, handle.request_id))
        # one that stopped, or ended with its copies pending (and copies none now): anew
        if known is not None and not lost_contact(known) and not (copy and _copy_over(known)):
            return known
        return self._adopt(
            handle,
            payload=row.payload,
            submitted_at=row.submitted_at,
            result=row.result(source=gateway_outputs(self._engine, self._gateway)),
            finished_at=row.finished_at,
            copies_pending=pending,
            copy=copy,
        )

    @property
    def key_fingerprint(self) -> str | None:
        """A short digest of this client's API key (None without one): which key made a
        ledger row is kept this way, never the key (docs/decisions.md#key-fingerprints)."""
        return self._fingerprint

    @property
    def _copies(self) -> bool:
        """Whether this client copies outputs (``download=True``, a recorder)."""
        return self._download and self._recorder is not None

    def _copies_left(self, job: Job) -> bool:
        """Whether ``job`` ended with outputs not copied, which the ledger may still
        have pending: ``client.job`` then asks the ledger (docs/decisions.md#copies-pending)."""
        result = job.last_result
        return (
            self._copies
            and self.ledger is not None
            and _copy_over(job)
            and result is not None
            and any(o.path is None for o in result.outputs)
        )

    def run(
        self, endpoint: str, payload: Mapping[str, Any], timeout: float | None = None
    ) -> Result:
        """Submit and wait for the result, ``timeout`` seconds at most in all, the create
        included. A create not answered by then raises ``OutcomeUnknown`` and goes on
        (never cut: its answer names a paid task, then recorded and followed); a result
        not in by then, ``TaskTimeout`` (the task goes on): docs/decisions.md#run-timeout."""
        check_timeout(timeout)
        prepared = self.prepare(endpoint, payload)
        if timeout is None:
            return self.send(prepared).result()
        started = time.monotonic()
        job = self._send(prepared, None, within=timeout)
        return job.result(timeout=max(0.0, timeout - (time.monotonic() - started)))

    def close(self) -> None:
        """End this client and every unfinished job with :class:`ClientClosed`; idempotent
        (docs/decisions.md#closing-ends-the-clients-jobs). Its creates in flight are let
        answer first (at most :data:`CREATE_ANSWER_GRACE` seconds), so each task made is
        in the ledger with its request id, and a warning names them
        (docs/decisions.md#closing-lets-creates-answer)."""
        if self._closed:
            return
        # no create leaves from now on: one waiting its turn at the rate gate or in a
        # retry's backoff ends at once, nothing sent; only those on the wire are waited for
        creates = CREATES_IN_FLIGHT.stop(self)
        LIVE_CLIENTS.leave(self._seq)
        if self._engine.in_engine_thread:
            self._close_from_engine()
            return
        self._engine.call_soon(self._gateway.stop)
        let_creates_answer(
            creates,
            "closing the client",
            "their handles are in the ledger: follow them from a new client with "
            "client.job(endpoint, request_id), or client.resume()",
        )
        self._engine.run(self._aclose())
        # those still unanswered were cut as the gateway closed: recorded (in milliseconds)
        # as outcome unknown before the ledger is flushed below
        with contextlib.suppress(BaseException):
            concurrent.futures.wait(creates, STOP_WAIT)
        if self.ledger is not None:
            self.ledger.release()  # another kernel may resume them at once
            # what this client recorded is on disk when close() returns, not at exit
            # (bounded by the ledger's busy timeout): a command that ends next leaves a
            # ledger that says what it printed
            self.ledger.flush()

    def _close_from_engine(self) -> None:
        """:meth:`close` from a job callback (the engine thread), which cannot wait for
        the loop it runs on: the close is scheduled there, whole (creates on the wire are
        cut: no answer could come while it waited), and the ledger's writes reach the disk
        on their own (docs/decisions.md#closing-lets-creates-answer)."""
        self._gateway.stop()
        self._engine.submit(self._aclose())
        if self.ledger is not None:
            self.ledger.release()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- engine side -------------------------------------------------------
    async def _create(
        self,
        prepared: PreparedRequest,
        headers: Mapping[str, str] | None,
        row: int | None = None,
        *,
        tag: str | None = None,
        late: bool = False,
        batch: Leaving | None = None,
    ) -> Job:
        """One create, counted in :data:`CREATES_IN_FLIGHT` from the moment it goes on
        the wire to its end: a close begun meanwhile waits for it; one begun before it
        left stops it (``ClientClosed``, nothing sent); so does its ``batch`` stopped."""
        return await self._create_and_record(
            prepared, headers, row, tag=tag, late=late, batch=batch
        )

    async def _create_and_record(
        self,
        prepared: PreparedRequest,
        headers: Mapping[str, str] | None,
        row: int | None,
        *,
        tag: str | None,
        late: bool,
        batch: Leaving | None,
    ) -> Job:
        """The create of ``prepared``, its ledger row ``row`` settled by its outcome;
        ``late``: the intents (with ``tag``) are written here instead, one as each try goes
        on the wire, each try that made nothing (refused for the rate limit) settled so
        before the next waits its turn (``send_many``'s creates: a kill while a create
        waits at the rate gate leaves it known never sent)."""

        answered: concurrent.futures.Future[Job] | None = None  # while a try is on the wire

        async def leaving() -> None:
            nonlocal row, answered
            # each try, at the last moment: stopped (closed, exiting, its batch), it never leaves
            if batch is not None:
                batch.leave()
            answered = CREATES_IN_FLIGHT.leave(self, prepared.endpoint)
            if late and row is None:
                try:
                    row = await self._intent_as_it_leaves(prepared, tag)
                except NotRecorded as exc:  # it stays off the wire: nothing made
                    made_nothing(exc)
                    raise
                if batch is not None:  # stopped while its intent was written: it never leaves
                    batch.leave()

        def made_nothing(exc: BaseException) -> None:
            nonlocal row, answered
            if answered is not None:  # off the wire: a stop meanwhile holds the next try
                answered.set_exception(exc)
                CREATES_IN_FLIGHT.end(answered)
                answered = None
            if batch is not None:
                batch.back()
            if not late:
                return
            if row is not None and self.ledger is not None:
                self._settle_failed_create(row, exc, nothing_sent=True)
            row = None

        try:
            handle = await self._gateway.create(
                prepared.endpoint,
                prepared.body,
                headers=headers,
                leaving=leaving,
                made_nothing=made_nothing,
            )
        except BaseException as exc:
            stopped = _never_sent(exc, prepared.endpoint, late) if answered is None else None
            if row is not None and self.ledger is not None:  # off the wire: nothing sent
                self._settle_failed_create(row, stopped or exc, nothing_sent=answered is None)
            if answered is not None:
                answered.set_exception(exc)
                CREATES_IN_FLIGHT.end(answered)
            if stopped is not None:
                raise stopped from None
            raise
        if row is not None and self.ledger is not None:
            try:
                self.ledger.writes.record_handle(row, handle)
            except (LedgerError, OSError) as exc:
                log.warning("genwidgets: could not record the task handle: %s", exc)
        job = self._adopt(handle, payload=prepared.payload)
        if answered is not None:
            answered.set_result(job)
            CREATES_IN_FLIGHT.end(answered)
        return job

    def _settle_failed_create(
        self, row: int, exc: BaseException, *, nothing_sent: bool = False
    ) -> None:
        assert self.ledger is not None
        said = (
            "interrupted before it was sent: nothing was sent"
            if isinstance(exc, asyncio.CancelledError) and nothing_sent
            else "interrupted before the gateway answered the create (Ctrl-C, or its wait "
            "cancelled): its task may exist (and bill); look for it with client.history() "
            "before sending it again"
            if isinstance(exc, asyncio.CancelledError)
            else words_of(exc)
        )
        try:
            self.ledger.writes.record_create_failed(
                row,
                _config.redact(said),
                created_nothing=nothing_sent or created_nothing(exc),
            )
        except (LedgerError, OSError) as err:
            log.warning("genwidgets: could not record the failed create: %s", err)

    def _adopt(
        self,
        handle: Handle,
        *,
        payload: Mapping[str, Any] | None,
        submitted_at: float | None = None,
        result: Result | None = None,
        finished_at: float | None = None,
        known_made: bool = True,
        copies_pending: Collection[int] = (),
        copy: bool = False,
    ) -> Job:
        """The Job of ``handle``, kept by this client: polled, unless it is known
        finished (``result``, read back from the ledger, with the indexes of its
        ``copies_pending``, which it copies with ``copy``). ``known_made``: a create is
        known to have made it at ``submitted_at`` (not a task asked for by a bare id)."""
        live = result is None
        job = Job(
            handle,
            simulated=self.embedded,
            gateway=self._gateway,
            engine=self._engine,
            payload=payload,
            submitted_at=submitted_at,
            known_made=known_made,
            recorder=self._recorder if live or copy else None,
            schedule=self._schedule if live else None,
            result=result,
            finished_at=finished_at,
            copies_pending=copies_pending,
        )
        self._jobs[(handle.endpoint, handle.request_id)] = job
        if live:
            job.start_polling()
        return job

    async def _aclose(self) -> None:
        for job in list(self._jobs.values()):
            job.close()
        await self._gateway.aclose()


if TYPE_CHECKING:  # mypy checks that the classes keep the contracts widgets code against

    def _contracts(client: Client, job: Job) -> tuple[ClientLike, JobLike]:
        return client, job
