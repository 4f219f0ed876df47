"""The simulator's HTTP surface: the queue protocol of the spec, with its errors.

Routes, status codes and bodies where the spec shows none are one table in
docs/decisions.md#sim-http; ``--dialect`` rewords the answers (:mod:`.dialects`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from .._config import is_loopback_host
from .._formats import json_nested_deeper
from .._workers import Workers
from ..catalog.openapi_schema import openapi
from ..catalog.validation import MAX_DEPTH, names_a_webhook
from ..protocol.records import queue_url
from ..protocol.refusals import (
    HANDLERS,
    bearer,
    detail,
    gateway_error,
    read_capped,
    refuse,
    refuse_with,
)
from ..protocol.routes import queue_routes
from . import dialects
from .config import SimConfig
from .faults import Dice, RateLimiter
from .files import FileStore
from .registry import BASE_SECONDS, ENDPOINTS, describe_errors, payload_errors
from .synth import image_output, picture
from .tasks import COMPLETED, Scheduler, Task, log
from .world import World

MAX_BODY = 65 * 1024 * 1024
_BIG_BODY = 1024 * 1024
MAX_SIM_DURATION = 86400.0
OPERATIONS = ("create", "status", "result", "cancel", "files")
T = TypeVar("T")


class SimState:
    """Everything one running simulator knows."""

    def __init__(self, config: SimConfig) -> None:
        self.config = config
        self.dialect = dialects.DIALECTS[config.dialect]
        self.limiter = RateLimiter(config.rate_limit)
        self.create_limiter = RateLimiter(config.create_rate_limit)
        self.dice = Dice(config.seed)
        #: requests by operation, and ``created``: the tasks made
        self.stats = dict.fromkeys((*OPERATIONS, "created"), 0)
        self.files = FileStore()
        self.executor = Workers(2)  # media is made off the server's loop, two at a time
        drawn = picture(640, 640, 7, "asset-demo", ["the simulator's demo image asset"])
        demo = image_output("demo", drawn)
        stored = self.files.put(demo.name, demo.content_type, demo.data)
        self.scheduler = Scheduler(
            workers=lambda: self.config.workers,
            speed=lambda: self.config.speed,
            executor=self.executor,
            files=self.files,
            finish=lambda task, speed: self.world.finish(task, speed),
        )
        self.world = World(self.scheduler.tasks.get, stored.url_path)

    def reconfigure(self, changes: Mapping[str, Any]) -> None:
        new = self.config.with_live(changes)
        if new.rate_limit != self.config.rate_limit:
            self.limiter = RateLimiter(new.rate_limit)
        if new.create_rate_limit != self.config.create_rate_limit:
            self.create_limiter = RateLimiter(new.create_rate_limit)
        self.config = new

    def close(self) -> None:
        self.scheduler.shutdown()
        self.executor.shutdown(wait=False, cancel_futures=True)
        self.files.close()


# --------------------------------------------------------------------------- answers


def _answer(answer: dialects.Answer) -> Response:
    code, body = answer
    return Response(status_code=code) if body is None else JSONResponse(body, status_code=code)


def _base_url(request: Request) -> str:
    return str(request.base_url).rstrip("/")


def _state(request: Request) -> SimState:
    state: SimState = request.app.state.sim
    return state


def required_token(request: Request) -> str:
    """The caller's bearer token; refused 401 when it sends none (the class gateway's
    answer too)."""
    token = bearer(request)
    if not token:
        message = "Authorization Bearer token is required"
        raise refuse_with(gateway_error(401, "UNAUTHORIZED", message))
    return token


def _authorize(request: Request, state: SimState) -> str:
    """The caller's key; refused (missing key, unknown key, rate limit) otherwise."""
    token = required_token(request)
    if token not in state.config.keys:
        raise refuse_with(gateway_error(401, "UNAUTHORIZED", "Invalid API key"))
    _check_rate(state, state.limiter.take(token), exact=False)
    return token


def _check_rate(state: SimState, wait: float | None, *, exact: bool) -> None:
    """Refused with the dialect's rate-limit answer when a limiter asks to ``wait``."""
    if wait is not None:
        headers = dialects.retry_after_header(state.dialect, wait, exact=exact)
        message = "Rate limit exceeded, please try again later"
        code = state.dialect.rate_limit[0]
        raise refuse_with(gateway_error(code, "RATE_LIMIT_EXCEEDED", message, headers=headers))


def _check_transient(state: SimState) -> None:
    code = state.dice.transient_error(state.config.error_rate)
    if code == 502:
        message = "Upstream temporarily unavailable (simulated)"
        raise refuse_with(gateway_error(502, "BAD_GATEWAY", message))
    if code == 503:
        message = "Service temporarily unavailable (simulated)"
        raise refuse_with(gateway_error(503, "SERVICE_UNAVAILABLE", message, retry_after=1))


# --------------------------------------------------------------------------- create


async def _off_loop_if(big: bool, work: Callable[..., T], *args: Any) -> T:
    """``work(*args)``; in a worker thread when the body is big, so the loop keeps
    answering while a large payload is read or checked."""
    return await run_in_threadpool(work, *args) if big else work(*args)


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _parse(raw: bytes) -> Any:
    return json.loads(raw, parse_constant=_no_constants)


async def read_payload(
    request: Request, cap: int, *, drain_to: int | None = None, note: str = ""
) -> dict[str, Any]:
    """A create's body, read with a cap (:func:`read_capped`), as a JSON object (NaN and
    Infinity are not JSON); else refused 400 saying why. The class gateway reads its
    creates with it too (docs/decisions.md#serve-shared)."""
    raw = await read_capped(request, cap, drain_to=drain_to, note=note)
    if not raw.strip():
        raise refuse(400, "Request body is empty: send a JSON object with the endpoint's fields")
    if json_nested_deeper(raw, MAX_DEPTH):  # never handed to the parser (it recurses)
        raise refuse(400, f"Request body is JSON nested deeper than {MAX_DEPTH} levels")
    try:
        payload = await _off_loop_if(len(raw) > _BIG_BODY, _parse, raw)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise refuse(400, f"Request body is not valid JSON: {exc}") from None
    if not isinstance(payload, dict):
        raise refuse(
            400,
            "Request body must be a JSON object with the endpoint's fields, "
            f"not a JSON {type(payload).__name__}",
        )
    return payload


def _control(request: Request) -> tuple[float | None, str | None]:
    """The ``X-Sim-Duration`` and ``X-Sim-Fault`` headers, checked."""
    duration: float | None = None
    raw = request.headers.get("x-sim-duration")
    if raw is not None:
        try:
            duration = float(raw)
        except ValueError:
            duration = -1.0
        if not 0.0 <= duration <= MAX_SIM_DURATION:
            raise refuse(
                400,
                f"X-Sim-Duration must be a number of seconds from 0 to {MAX_SIM_DURATION:g}, "
                f"got {raw!r}",
            )
    fault = request.headers.get("x-sim-fault")
    if fault is not None and fault.strip().lower() not in {"runtime", "fail"}:
        raise refuse(400, f"X-Sim-Fault must be 'runtime' or 'fail', got {fault!r}")
    return duration, fault.strip().lower() if fault else None


def _counted_caller(request: Request, operation: str) -> tuple[SimState, str]:
    """Count the request in the stats, then the caller's key; refused as the gateway
    refuses (a create also meets the create limit)."""
    state = _state(request)
    state.stats[operation] += 1
    key = _authorize(request, state)
    if operation == "create":
        _check_rate(state, state.create_limiter.take(key), exact=True)
    return state, key


async def create_task(request: Request) -> Response:
    state, key = _counted_caller(request, "create")
    endpoint = request.path_params["endpoint"]
    served = ENDPOINTS.get(endpoint)  # looked up now: endpoints registered later are served
    if served is None:
        raise refuse(404, f"App not found: {endpoint}")
    allowed = state.config.restrict.get(key)
    if allowed is not None and endpoint not in allowed:
        raise refuse(403, "Model not allowed for this user")
    if any("webhook" in name.lower() for name in [*request.query_params, *request.headers]):
        raise refuse(400, "webhook not supported")
    duration, fault = _control(request)
    payload = await read_payload(request, MAX_BODY, drain_to=4 * MAX_BODY, note=" (64 MB payloads)")
    if names_a_webhook(payload):
        raise refuse(400, "webhook not supported")
    declared = request.headers.get("content-length", "0")
    big = declared.isdigit() and int(declared) > _BIG_BODY
    errors = await _off_loop_if(big, payload_errors, endpoint, payload)
    context: dict[str, Any] = {}
    if not errors:
        errors, context = state.world.check(endpoint, payload, key)
    if errors:
        raise refuse(422, describe_errors(errors))
    if fault == "runtime" or state.dice.create_error(state.config.create_error_rate):
        raise refuse(500, "Runtime execution failed")
    base = _base_url(request)
    task = Task(
        request_id=str(uuid.uuid4()),
        endpoint=endpoint,
        kind=served.kind,
        key=key,
        payload=payload,
        seed=state.dice.seed(),
        base_seconds=BASE_SECONDS[served.kind] if duration is None else duration,
        fails=fault == "fail" or state.dice.task_fails(state.config.fail_rate),
        base_url=base,
        context=context,
    )
    state.scheduler.submit(task)
    state.stats["created"] += 1
    prefix = queue_url(base, endpoint, task.request_id)
    return JSONResponse(
        dialects.handle_body(state.dialect, task, prefix, state.scheduler.place(task))
    )


# --------------------------------------------------------------------------- follow-ups


def _callers_task(request: Request, operation: str, *, transient: bool) -> tuple[SimState, Task]:
    """The caller's task named in the path; else refused: as the gateway refuses (key,
    rate limit), with a simulated transient error where ``transient``, or 404."""
    state, key = _counted_caller(request, operation)
    if transient:
        _check_transient(state)
    task = state.scheduler.tasks.get(request.path_params["request_id"])
    if task is None or task.endpoint != request.path_params["endpoint"] or task.key != key:
        raise refuse(404, "Request not found")  # another key's task too
    return state, task


async def get_status(request: Request) -> Response:
    state, task = _callers_task(request, "status", transient=True)
    return JSONResponse(dialects.status_body(state.dialect, task, state.scheduler.place(task)))


async def get_result(request: Request) -> Response:
    state, task = _callers_task(request, "result", transient=True)
    if task.status != COMPLETED:
        return _answer(dialects.not_ready(state.dialect, task, state.scheduler.place(task)))
    entries = [out.body(_base_url(request)) for out in task.outputs]
    return JSONResponse(dialects.result_body(state.dialect, task, entries))


async def cancel_task(request: Request) -> Response:
    state, task = _callers_task(request, "cancel", transient=False)
    if not state.scheduler.cancel(task):
        return _answer(state.dialect.cancel_finished)
    return _answer(dialects.cancelled(state.dialect, task))


async def _admitted(request: Request) -> None:
    """Refused unless the gateway lets the caller in (the sync path and the stream)."""
    _authorize(request, _state(request))


async def get_file(request: Request) -> Response:
    state = _state(request)
    state.stats["files"] += 1
    stored = state.files.get(request.path_params["token"], request.path_params["name"])
    if stored is None:
        raise refuse(404, "File not found")
    return FileResponse(
        stored.path,
        media_type=stored.content_type,
        headers={"Cache-Control": "private, max-age=86400", "Access-Control-Allow-Origin": "*"},
    )


# --------------------------------------------------------------------------- introspection


def _loopback_only(
    handler: Callable[[Request], Awaitable[Response]],
) -> Callable[[Request], Awaitable[Response]]:
    async def guarded(request: Request) -> Response:
        host = request.client.host if request.client else ""
        if not (is_loopback_host(host) or host == "testclient"):  # starlette's TestClient
            return detail(403, "Simulator introspection is only served to loopback clients")
        return await handler(request)

    return guarded


#: what the introspection routes show of every task
_LISTED = ("request_id", "endpoint", "status", "created_at")


async def sim_task(request: Request) -> Response:
    task = _state(request).scheduler.tasks.get(request.path_params["request_id"])
    if task is None:
        raise refuse(404, "Request not found")
    shown = (*_LISTED, "started_at", "completed_at", "error_type")
    return JSONResponse({name: getattr(task, name) for name in shown})


async def sim_stats(request: Request) -> Response:
    return JSONResponse(_state(request).stats)


async def sim_tasks(request: Request) -> Response:
    """Every task made, oldest first: request id, endpoint, status, when it was made and
    a digest of its payload (the batch benchmark counts duplicate creates with it)."""
    listed = []
    for task in _state(request).scheduler.tasks.values():
        payload = json.dumps(task.payload, sort_keys=True, default=str).encode()
        shown = {name: getattr(task, name) for name in _LISTED}
        listed.append(shown | {"payload_sha256": hashlib.sha256(payload).hexdigest()})
    return JSONResponse(listed)


async def sim_config(request: Request) -> Response:
    state = _state(request)
    if request.method == "PUT":
        try:
            changes = _parse(await request.body())  # one reader for every body
            if not isinstance(changes, dict):
                raise ValueError("send a JSON object of switches")
            state.reconfigure(changes)
        except (ValueError, TypeError, RecursionError) as exc:
            return detail(400, f"Bad config: {exc}")
    return JSONResponse(state.config.live())


async def index(request: Request) -> Response:
    return JSONResponse(
        {
            "service": "genwidgets gateway simulator",
            "protocol": "POST /v1/queue/{endpoint} with Authorization: Bearer <key>",
            "endpoints": sorted(ENDPOINTS),
            "dialect": _state(request).dialect.name,
        }
    )


async def openapi_document(request: Request) -> Response:
    """The OpenAPI 3.1 document of what this simulator serves (no key needed)."""
    return JSONResponse(openapi(_base_url(request)))


# --------------------------------------------------------------------------- the app


async def http_error(request: Request, exc: Exception) -> Response:
    """Starlette's own refusals (404, 405 naming the methods allowed) as a ``detail``;
    the class gateway answers them so too."""
    assert isinstance(exc, HTTPException)
    if exc.status_code == 405:
        allow = (exc.headers or {}).get("Allow", "")
        return detail(
            405,
            f"Method Not Allowed: {request.method} {request.url.path}; allowed: {allow}",
            exc.headers,
        )
    return detail(exc.status_code, str(exc.detail), exc.headers)


async def _internal_error(request: Request, exc: Exception) -> Response:
    log.exception("simulator error on %s %s", request.method, request.url.path, exc_info=exc)
    return detail(500, f"Internal simulator error: {type(exc).__name__}")


class _Latency:
    """Delay every answer (except ``/_sim`` control calls) by the configured latency."""

    def __init__(self, app: ASGIApp, state: SimState) -> None:
        self.app, self.state = app, state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        latency = self.state.config.latency
        if latency > 0 and scope["type"] == "http" and not scope["path"].startswith("/_sim"):
            await asyncio.sleep(latency)
        await self.app(scope, receive, send)


async def _too_deep(request: Request, exc: Exception) -> Response:
    """A body nested too deep for any reader is the client's error: 400, never a 500."""
    return detail(400, "Request body is nested too deeply to read")


def create_app(config: SimConfig) -> tuple[ASGIApp, SimState]:
    """The ASGI app of one simulator, and its state (close it when done)."""
    state = SimState(config)
    routes = [
        Route("/", index, methods=["GET"]),
        Route("/openapi.json", openapi_document, methods=["GET"]),
        *queue_routes(create_task, get_status, get_result, cancel_task, admit=_admitted),
        Route("/files/{token}/{name}", get_file, methods=["GET", "HEAD"]),
        Route("/_sim/tasks/{request_id}", _loopback_only(sim_task), methods=["GET"]),
        Route("/_sim/stats", _loopback_only(sim_stats), methods=["GET"]),
        Route("/_sim/tasks", _loopback_only(sim_tasks), methods=["GET"]),
        Route("/_sim/config", _loopback_only(sim_config), methods=["GET", "PUT"]),
    ]
    app = Starlette(
        routes=routes,
        exception_handlers={
            HTTPException: http_error,
            **HANDLERS,
            RecursionError: _too_deep,
            Exception: _internal_error,
        },
    )
    app.state.sim = state
    return _Latency(app, state), state
