"""``Client`` and ``AsyncClient``: the public face of the protocol and the engine.

Both share the engine thread of :mod:`genwidgets.jobs.engine`. ``Client`` blocks
on futures (fine in scripts and in notebook cells, no ``asyncio.run`` inside a
running loop); ``AsyncClient`` awaits the same futures from any loop.
"""

from __future__ import annotations

import asyncio
import getpass
import json
import logging
import warnings
import weakref
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx

from . import _config
from .catalog import EndpointModel, webhook_fields
from .catalog import validate as validate_payload
from .errors import (
    EndpointNotFound,
    ModelNotAllowed,
    NotSupported,
    PayloadError,
    RateLimited,
    Unauthorized,
    WebhookNotSupported,
)
from .jobs import job as job_module
from .jobs.engine import get_engine
from .jobs.job import Job, Recorder
from .jobs.ledger import Ledger, LedgerError, LedgerRow
from .jobs.recorder import LedgerRecorder
from .protocol.http import Gateway
from .protocol.records import Handle, Output, Result

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

#: The largest request body the spec states (vidA); anything larger is refused here.
MAX_BODY_BYTES = 64 * 2**20


def _display_task_view(job: Job) -> None:
    from .widgets.task import display_job

    display_job(job)


job_module.display_hook = _display_task_view


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


def prepare_payload(
    endpoint: str, payload: Mapping[str, Any], *, validate: bool = True
) -> dict[str, Any]:
    """What submit sends: validated and trimmed to set fields, or passed through.

    Webhook fields are refused either way (the service rejects them), and so is a
    body over the spec's 64 MB.
    """
    if not isinstance(payload, Mapping):
        raise PayloadError(
            f"a payload is a dict of fields, not {type(payload).__name__}", endpoint=endpoint
        )
    if validate:
        with warnings.catch_warnings():
            warnings.simplefilter("default")
            body = validate_payload(endpoint, payload).payload()
    else:
        hooks = webhook_fields(payload)
        if hooks:
            raise PayloadError(
                [
                    {
                        "loc": (k,),
                        "msg": "webhook not supported: the service delivers no "
                        "webhooks; poll instead",
                    }
                    for k in hooks
                ],
                endpoint=endpoint,
            )
        body = dict(payload)
    size = len(json.dumps(body, separators=(",", ":")))
    if size > MAX_BODY_BYTES:
        raise PayloadError(
            f"the request body would be {size / 2**20:.1f} MB; the service accepts at most "
            "64 MB and large files must not be sent as Base64: pass a URL or an asset:// id",
            endpoint=endpoint,
        )
    return body


@dataclass(frozen=True)
class PreparedRequest:
    """TEMP shim (the core helper owns the real one): a payload validated once."""

    endpoint: str
    model: EndpointModel
    payload: dict[str, Any]
    body: bytes


class Client:
    """A client of one gateway. With no URL and no key, the embedded simulator.

    ``timeout`` bounds each HTTP request (connect at most 10 s); ``max_retries``
    bounds retries of one operation. Nothing is sent at construction except
    starting the embedded simulator when it is the gateway.
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
        self.ledger: Ledger | None = self._open_ledger(ledger)
        self._recorder: Recorder | None = (
            LedgerRecorder(self.ledger, self.gateway_name, download=download)
            if self.ledger is not None
            else None
        )
        self._jobs: dict[tuple[str, str], Job] = {}  # by (endpoint, request_id)
        self._gateway: Gateway = self._engine.run(
            self._make_gateway(key, timeout, max_retries, max_in_flight, transport, headers)
        )
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
    def submit(
        self,
        endpoint: str,
        payload: Mapping[str, Any],
        *,
        validate: bool = True,
        headers: Mapping[str, str] | None = None,
    ) -> Job:
        """Create a task and return its :class:`Job` (polled in the background)."""
        body = prepare_payload(endpoint, payload, validate=validate)
        row = self._record_intent(endpoint, body)
        return self._engine.run(self._create(endpoint, body, headers, row))

    def prepare(self, endpoint: str, payload: Mapping[str, Any]) -> PreparedRequest:
        """TEMP shim (core owns the real one): validate once, serialise once."""
        model = validate_payload(endpoint, payload)
        sent = model.payload()
        return PreparedRequest(endpoint, model, sent, json.dumps(sent).encode())

    def send(self, prepared: PreparedRequest) -> Job:
        """TEMP shim (core owns the real one): send without validating again."""
        return self.submit(prepared.endpoint, prepared.payload, validate=False)

    def _record_intent(self, endpoint: str, body: Mapping[str, Any]) -> int | None:
        """Written before the request leaves, so a crash leaves "outcome unknown", not a gap."""
        if self.ledger is None:
            return None
        try:
            return self.ledger.record_intent(
                gateway=self.gateway_name, endpoint=endpoint, payload=body
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

    def resume(self) -> list[Job]:
        """Re-attach every unfinished job of this gateway (after a restart) and return them."""
        if self.ledger is None:
            return []
        return [self._from_row(row) for row in self.ledger.unfinished(self.gateway_name)]

    def _from_row(self, row: LedgerRow) -> Job:
        assert row.request_id is not None
        known = self._jobs.get((row.endpoint, row.request_id))
        if known is not None:
            return known
        handle = self._handle_for(row.endpoint, row.request_id)
        if row.unfinished:
            return self._adopt(handle, payload=row.payload, submitted_at=row.submitted_at)
        job = Job(
            handle,
            client=self,
            gateway=self._gateway,
            engine=self._engine,
            payload=row.payload,
            submitted_at=row.submitted_at,
        )
        outputs = [
            Output(
                content_type=o.get("content_type") or "application/octet-stream",
                url=o.get("url"),
                raw={**o, "from_ledger": True},
                path=Path(o["path"]) if o.get("path") else None,
                index=int(o.get("index", i)),
                _fetch=job._fetch_bytes,
            )
            for i, o in enumerate(row.outputs)
        ]
        result = Result(
            status=row.status or ("COMPLETED" if row.ok is not None else row.state),
            error=row.error if row.ok is False else None,
            error_type=row.error_type,
            outputs=outputs,
            raw={"from_ledger": True},
            endpoint=row.endpoint,
            request_id=row.request_id,
        )
        job._restore(result, row.finished_at)
        self._jobs[(row.endpoint, row.request_id)] = job
        return job

    def run(
        self, endpoint: str, payload: Mapping[str, Any], timeout: float | None = None
    ) -> Result:
        """Submit and wait for the result."""
        return self.submit(endpoint, payload).result(timeout=timeout)

    def close(self) -> None:
        """Stop polling this client's jobs and close its connections."""
        self._engine.run(self._aclose())

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _handle_for(self, endpoint: str, request_id: str) -> Handle:
        """The documented URLs of a task on this client's gateway (spec 2.1)."""
        root = f"{self.base_url}/v1/queue/{endpoint}/requests/{request_id}"
        return Handle(
            endpoint=endpoint,
            request_id=request_id,
            status_url=f"{root}/status",
            response_url=f"{root}/response",
            cancel_url=f"{root}/cancel",
            queue_position=None,
        )

    # -- engine side -------------------------------------------------------
    async def _create(
        self,
        endpoint: str,
        body: dict[str, Any],
        headers: Mapping[str, str] | None,
        row: int | None = None,
    ) -> Job:
        try:
            handle = await self._gateway.create(endpoint, body, headers=headers)
        except BaseException as exc:
            if row is not None and self.ledger is not None:
                self._settle_failed_create(row, exc)
            raise
        if row is not None and self.ledger is not None:
            try:
                self.ledger.record_handle(row, handle)
            except (LedgerError, OSError) as exc:
                log.warning("genwidgets: could not record the task handle: %s", exc)
        return self._adopt(handle, payload=body)

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
        )
        self._jobs[(handle.endpoint, handle.request_id)] = job
        job._start()
        return job

    async def _aclose(self) -> None:
        for job in self._jobs.values():
            if job._task is not None:
                job._task.cancel()
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

    async def submit(
        self,
        endpoint: str,
        payload: Mapping[str, Any],
        *,
        validate: bool = True,
        headers: Mapping[str, str] | None = None,
    ) -> Job:
        body = prepare_payload(endpoint, payload, validate=validate)
        row = self._sync._record_intent(endpoint, body)
        return await self._on_engine(self._sync._create(endpoint, body, headers, row))

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
