"""``Client`` and ``AsyncClient``: the public face of the protocol and the engine.

Both share the engine thread of :mod:`genwidgets.jobs.engine`. ``Client`` blocks
on futures (fine in scripts and in notebook cells, no ``asyncio.run`` inside a
running loop); ``AsyncClient`` awaits the same futures from any loop.
"""

from __future__ import annotations

import asyncio
import getpass
import logging
import warnings
import weakref
from collections.abc import Coroutine, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import httpx

from . import _config
from ._protocols import ClientLike, JobLike
from .errors import (
    EndpointNotFound,
    LedgerError,
    LedgerWarning,
    ModelNotAllowed,
    NotSupported,
    PayloadError,
    RateLimited,
    Unauthorized,
    WebhookNotSupported,
)
from .jobs.engine import StatusBudget, get_engine
from .jobs.job import Job, Recorder, output_fetcher
from .jobs.ledger import Ledger, LedgerRow
from .jobs.polling import Schedule
from .jobs.recorder import LedgerRecorder
from .protocol.http import Gateway
from .protocol.prepared import PreparedRequest, prepare
from .protocol.records import Handle, Result

log = logging.getLogger("genwidgets")

#: Answers to a create request that certainly created no task.
_CREATED_NOTHING = (
    PayloadError,
    Unauthorized,
    RateLimited,
    EndpointNotFound,
    ModelNotAllowed,
    WebhookNotSupported,
    NotSupported,
)

T = TypeVar("T")

_latest: weakref.ref[Client] | None = None


def latest_client() -> Client | None:
    """The most recently made client of this process, if it is still alive (board, sweep)."""
    return _latest() if _latest is not None else None


def login(api_key: str | None = None) -> None:
    """Ask for the key with ``getpass`` (or take it) and keep it in memory only.

    Clients made afterwards without an explicit key use it. It is never written
    anywhere; restart the kernel to forget it.
    """
    key = api_key if api_key is not None else getpass.getpass("Gateway API key: ")
    key = key.strip()
    if not key:
        raise ValueError("no key entered")
    _config.set_session_key(key)


class Client:
    """A client of one gateway. With no URL and no key, the embedded simulator.

    ``timeout`` bounds each HTTP request (connect at most 10 s); ``max_retries``
    bounds retries of one operation. Nothing is sent at construction except
    starting the embedded simulator when it is the gateway. ``notice_target``: the
    p95 delay (seconds) between a task's end and our noticing it, which the polling
    schedule aims for; ``max_status_rate``: polls per second this client never
    exceeds, however many jobs are live (status requests, and the result-address
    polls of running tasks; see ``genwidgets.jobs.polling``).
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        max_retries: int = 2,
        max_in_flight: int = 16,
        allow_insecure: bool = False,
        headers: Mapping[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        ledger: bool | Ledger = True,
        download: bool = True,
        notice_target: float = 1.5,
        max_status_rate: float = 50,
    ) -> None:
        settings = _config.resolve(base_url, api_key)
        self.embedded = settings.embedded
        if settings.embedded:
            from .simulator import embedded

            sim = embedded()
            resolved_url: str = sim.base_url
            key: str | None = _config.DEMO_KEY
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
                    f"refusing to send the API key over plain http to {resolved_url}: use "
                    "https, or pass allow_insecure=True if you really mean it"
                )
        self.base_url: str = resolved_url
        self.timeout = timeout
        self.max_retries = max_retries
        self._engine = get_engine()
        self._gateway: Gateway = self._engine.run(
            self._make_gateway(key, timeout, max_retries, max_in_flight, transport, headers)
        )
        self.ledger: Ledger | None = self._open_ledger(ledger)
        self._recorder: Recorder | None = (
            LedgerRecorder(
                self.ledger,
                self.gateway_name,
                opener=self._gateway.open_output,
                download=download,
            )
            if self.ledger is not None
            else None
        )
        budget = StatusBudget(max_status_rate, hold=lambda: self._gateway.gate.remaining)
        self._schedule = Schedule(
            notice_target, budget=budget, ledger=self.ledger, gateway=self.gateway_name
        )
        self._jobs: dict[tuple[str, str], Job] = {}  # by (endpoint, request_id)
        global _latest
        _latest = weakref.ref(self)

    async def _make_gateway(
        self,
        key: str | None,
        timeout: float,
        max_retries: int,
        max_in_flight: int,
        transport: httpx.AsyncBaseTransport | None,
        headers: Mapping[str, str] | None,
    ) -> Gateway:
        # Built on the engine loop: its AsyncClient and semaphore belong to that loop.
        return Gateway(
            self.base_url,
            key,
            timeout=timeout,
            max_retries=max_retries,
            max_in_flight=max_in_flight,
            transport=transport,
            headers=headers,
        )

    @staticmethod
    def _open_ledger(ledger: bool | Ledger) -> Ledger | None:
        if isinstance(ledger, Ledger):
            return ledger
        if not ledger:
            return None
        try:
            return Ledger()
        except (LedgerError, OSError) as exc:
            warnings.warn(
                f"genwidgets: the task ledger is off ({_config.redact(str(exc))}); tasks will "
                f"not survive a kernel restart. Set {_config.ENV_HOME} to a writable folder.",
                LedgerWarning,
                stacklevel=3,
            )
            return None

    def __repr__(self) -> str:
        return f"<Client {self.base_url}{' (simulated)' if self.embedded else ''}>"

    @property
    def gateway_name(self) -> str:
        """How the ledger names this gateway ("simulator" for the embedded one)."""
        return "simulator" if self.embedded else self.base_url

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

    def send(self, prepared: PreparedRequest, *, headers: Mapping[str, str] | None = None) -> Job:
        """Create the task of a prepared request: its exact ``body``, not validated again."""
        row = self._record_intent(prepared)
        return self._engine.run(self._create(prepared, headers, row))

    def submit(
        self,
        endpoint: str,
        payload: Mapping[str, Any],
        *,
        validate: bool = True,
        headers: Mapping[str, str] | None = None,
    ) -> Job:
        """Create a task and return its :class:`Job` (polled in the background).

        The same as ``send(prepare(endpoint, payload))``.
        """
        return self.send(self.prepare(endpoint, payload, validate=validate), headers=headers)

    def _record_intent(self, prepared: PreparedRequest) -> int | None:
        """Written before the request leaves, so a crash leaves "outcome unknown", not a gap."""
        if self.ledger is None:
            return None
        try:
            return self.ledger.record_intent(
                gateway=self.gateway_name, endpoint=prepared.endpoint, payload=prepared.payload
            )
        except (LedgerError, OSError) as exc:
            log.warning("genwidgets: could not record the task intent: %s", exc)
            return None

    def job(self, endpoint: str, request_id: str) -> Job:
        """Re-attach to an existing task by its request_id."""
        known = self._jobs.get((endpoint, request_id))
        if known is not None:
            return known
        handle = self._handle_for(endpoint, request_id)
        if self.ledger is not None:
            try:
                self.ledger.record_attach(self.gateway_name, handle)
            except (LedgerError, OSError) as exc:
                log.warning("genwidgets: could not record the re-attached task: %s", exc)
        return self._adopt(handle, payload=None)

    def history(
        self,
        endpoint: str | None = None,
        status: str | None = None,
        limit: int | None = None,
    ) -> list[Job]:
        """Jobs of this gateway from the ledger, newest first, re-attached.

        Finished ones carry their recorded result (and local output files); the
        others are polled again. ``status`` filters by the gateway's status name
        or a ledger state (``unfinished``, ``ok``, ``failed``, ...). Requests whose
        outcome is unknown have no request_id and so no Job: see ``client.ledger.rows()``.
        """
        if self.ledger is None:
            return []
        rows = self.ledger.rows(self.gateway_name, endpoint=endpoint, status=status, limit=limit)
        return [self._from_row(row) for row in rows if row.request_id is not None]

    def resume(self, *, force: bool = False) -> list[Job]:
        """Re-attach every unfinished job of this gateway (after a restart) and return them.

        Tasks another live kernel is polling are left to it (a warning says how
        many); ``force=True`` takes them too. See ``genwidgets.jobs.ledger.lease``.
        """
        if self.ledger is None:
            return []
        rows, skipped = self.ledger.claim_unfinished(self.gateway_name, force=force)
        if skipped:
            warnings.warn(
                f"genwidgets: {skipped} unfinished task(s) are being polled by another live "
                "kernel and were left to it; resume(force=True) takes them anyway.",
                LedgerWarning,
                stacklevel=2,
            )
        return [self._from_row(row) for row in rows]

    def _from_row(self, row: LedgerRow) -> Job:
        """The Job of a ledger row, with the URLs the gateway gave when it was created."""
        handle = row.handle(self.base_url)
        assert handle is not None
        known = self._jobs.get((handle.endpoint, handle.request_id))
        if known is not None:
            return known
        result = row.result(fetch=output_fetcher(self._engine, self._gateway))
        if result is None:
            return self._adopt(handle, payload=row.payload, submitted_at=row.submitted_at)
        job = Job(
            handle,
            client=self,
            gateway=self._gateway,
            engine=self._engine,
            payload=row.payload,
            submitted_at=row.submitted_at,
            result=result,
            finished_at=row.finished_at,
        )
        self._jobs[(handle.endpoint, handle.request_id)] = job
        return job

    def run(
        self, endpoint: str, payload: Mapping[str, Any], timeout: float | None = None
    ) -> Result:
        """Submit and wait for the result."""
        return self.submit(endpoint, payload).result(timeout=timeout)

    def close(self) -> None:
        """Stop polling this client's jobs and close its connections."""
        self._engine.run(self._aclose())
        if self.ledger is not None:
            self.ledger.release()  # another kernel may resume them at once

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _handle_for(self, endpoint: str, request_id: str) -> Handle:
        """The documented URLs of a task on this client's gateway (spec 2.1)."""
        return Handle.documented(self.base_url, endpoint, request_id)

    # -- engine side -------------------------------------------------------
    async def _create(
        self,
        prepared: PreparedRequest,
        headers: Mapping[str, str] | None,
        row: int | None = None,
    ) -> Job:
        try:
            handle = await self._gateway.create(prepared.endpoint, prepared.body, headers=headers)
        except BaseException as exc:
            if row is not None and self.ledger is not None:
                self._settle_failed_create(row, exc)
            raise
        if row is not None and self.ledger is not None:
            try:
                self.ledger.record_handle(row, handle)
            except (LedgerError, OSError) as exc:
                log.warning("genwidgets: could not record the task handle: %s", exc)
        return self._adopt(handle, payload=prepared.payload)

    def _settle_failed_create(self, row: int, exc: BaseException) -> None:
        assert self.ledger is not None
        try:
            self.ledger.record_create_failed(
                row,
                _config.redact(f"{type(exc).__name__}: {exc}"),
                created_nothing=isinstance(exc, _CREATED_NOTHING),
            )
        except (LedgerError, OSError) as err:
            log.warning("genwidgets: could not record the failed create: %s", err)

    def _adopt(
        self,
        handle: Handle,
        *,
        payload: Mapping[str, Any] | None,
        submitted_at: float | None = None,
    ) -> Job:
        job = Job(
            handle,
            client=self,
            gateway=self._gateway,
            engine=self._engine,
            payload=payload,
            submitted_at=submitted_at,
            recorder=self._recorder,
            schedule=self._schedule,
        )
        self._jobs[(handle.endpoint, handle.request_id)] = job
        job.start_polling()
        return job

    async def _aclose(self) -> None:
        for job in self._jobs.values():
            job.stop_polling()
        await self._gateway.aclose()


class AsyncClient:
    """The same client for ``async`` code: every method is a coroutine.

    The work still runs on the engine thread; this only awaits its futures, so
    it can be used from any event loop (a notebook's included).
    """

    def __init__(self, base_url: str | None = None, api_key: str | None = None, **kw: Any):
        self._sync = Client(base_url, api_key, **kw)

    def __repr__(self) -> str:
        return f"<AsyncClient {self._sync.base_url}{' (simulated)' if self.embedded else ''}>"

    embedded = property(lambda self: self._sync.embedded)
    base_url = property(lambda self: self._sync.base_url)
    jobs = property(lambda self: self._sync.jobs)

    async def _on_engine(self, coro: Coroutine[Any, Any, T]) -> T:
        return await asyncio.wrap_future(self._sync._engine.submit(coro))

    def prepare(
        self, endpoint: str, payload: Mapping[str, Any], *, validate: bool = True
    ) -> PreparedRequest:
        """As :meth:`Client.prepare` (no I/O, so not a coroutine)."""
        return prepare(endpoint, payload, validate=validate)

    async def send(
        self, prepared: PreparedRequest, *, headers: Mapping[str, str] | None = None
    ) -> Job:
        """As :meth:`Client.send`."""
        row = self._sync._record_intent(prepared)
        return await self._on_engine(self._sync._create(prepared, headers, row))

    async def submit(
        self,
        endpoint: str,
        payload: Mapping[str, Any],
        *,
        validate: bool = True,
        headers: Mapping[str, str] | None = None,
    ) -> Job:
        """As :meth:`Client.submit`: ``await send(prepare(endpoint, payload))``."""
        return await self.send(self.prepare(endpoint, payload, validate=validate), headers=headers)

    async def job(self, endpoint: str, request_id: str) -> Job:
        return self._sync.job(endpoint, request_id)

    async def run(
        self, endpoint: str, payload: Mapping[str, Any], timeout: float | None = None
    ) -> Result:
        job = await self.submit(endpoint, payload)
        return await job.aresult(timeout)

    async def aclose(self) -> None:
        await self._on_engine(self._sync._aclose())

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


if TYPE_CHECKING:  # mypy checks that the classes keep the contracts widgets code against

    def _contracts(client: Client, job: Job) -> tuple[ClientLike, JobLike]:
        return client, job
