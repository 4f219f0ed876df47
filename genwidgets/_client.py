"""``Client`` and ``AsyncClient``: the public face of the protocol and the engine.

Both share the engine thread of :mod:`genwidgets.jobs.engine`. ``Client`` blocks
on futures (fine in scripts and in notebook cells, no ``asyncio.run`` inside a
running loop); ``AsyncClient`` awaits the same futures from any loop.
"""

from __future__ import annotations

import asyncio
import getpass
import json
import warnings
from collections.abc import Coroutine, Mapping
from typing import Any, TypeVar

import httpx

from . import _config
from .catalog import validate as validate_payload
from .catalog import webhook_fields
from .errors import PayloadError
from .jobs import job as job_module
from .jobs.engine import get_engine
from .jobs.job import Job, Recorder
from .protocol.http import Gateway
from .protocol.records import Handle, Result

T = TypeVar("T")

#: The largest request body the spec states (vidA); anything larger is refused here.
MAX_BODY_BYTES = 64 * 2**20


def _display_task_view(job: Job) -> None:
    from .widgets.task import display_job

    display_job(job)


job_module.display_hook = _display_task_view


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
        recorder: Recorder | None = None,
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
        self._recorder = recorder
        self._jobs: dict[str, Job] = {}
        self._gateway: Gateway = self._engine.run(
            self._make_gateway(key, timeout, max_retries, max_in_flight, transport, headers)
        )

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
        return self._engine.run(self._create(endpoint, body, headers))

    def job(self, endpoint: str, request_id: str) -> Job:
        """Re-attach to an existing task by its request_id."""
        key = request_id
        if key in self._jobs:
            return self._jobs[key]
        root = f"{self.base_url}/v1/queue/{endpoint}/requests/{request_id}"
        handle = Handle(
            endpoint=endpoint,
            request_id=request_id,
            status_url=f"{root}/status",
            response_url=f"{root}/response",
            cancel_url=f"{root}/cancel",
            queue_position=None,
        )
        return self._adopt(handle, payload=None)

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

    # -- engine side -------------------------------------------------------
    async def _create(
        self, endpoint: str, body: dict[str, Any], headers: Mapping[str, str] | None
    ) -> Job:
        handle = await self._gateway.create(endpoint, body, headers=headers)
        return self._adopt(handle, payload=body)

    def _adopt(self, handle: Handle, *, payload: Mapping[str, Any] | None) -> Job:
        job = Job(
            handle,
            client=self,
            gateway=self._gateway,
            engine=self._engine,
            payload=payload,
            recorder=self._recorder,
        )
        self._jobs[handle.request_id] = job
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
        return await self._on_engine(self._sync._create(endpoint, body, headers))

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
