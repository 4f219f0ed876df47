"""The class gateway's HTTP surface: the gateway's queue protocol, each student on their
own key, forwarded upstream on the teacher's.

A create is priced and reserved before it is forwarded; a follow-up finds the task among
the caller's own and forwards with the upstream id, which students never see. Every
refusal has the gateway's own shape (spec 2.4): docs/decisions.md#serve-http.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, TypeVar

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route

from ..catalog.validation import names_a_webhook
from ..errors import EndpointNotFound, PayloadError, ServeError
from ..protocol.gate import GATE_CEILING
from ..protocol.records import FALLBACK_OUTPUT_KEYS, queue_url, says_rate_limited
from ..protocol.refusals import HANDLERS, detail, gateway_error
from ..protocol.routes import queue_routes
from ..protocol.values import resolve_output_url
from ..simulator.app import http_error, read_payload, required_token
from ..simulator.registry import describe_errors
from ..simulator.tasks import CANCELLED_ERROR
from .budgets import (
    LIVE,
    SHARED_CANCEL,
    TOLD,
    Reservation,
    as_counted,
    ask_cancel,
    caller_and_task,
    cancel_answered,
    charge_of,
    forgotten,
    heard,
    hold_creates,
    holding_creates,
    move,
    rate_limited,
    refusal,
    release,
    reserve,
    settle,
    unanswered,
    usable,
)
from .config import ServeConfig, ServeState
from .db import Database
from .keys import KeyRecord, find_key
from .sweep import sweeping
from .upstream import UpstreamAnswer

__all__ = ["create_app", "serve_state"]

log = logging.getLogger("genwidgets.serve")
T = TypeVar("T")
_SEED_IN_PROMPT = re.compile(r"--seed\s+\d+")
#: how a student is told that a request upstream failed, before the fault's own sentence
_UPSTREAM_FAILED = "The class gateway's request upstream failed: "


def serve_state(request: Request) -> ServeState:
    state: ServeState = request.app.state.serve
    return state


def _base(request: Request) -> str:
    """The address students reach us at, the prefix included (a Mount's root path is not
    in ``base_url`` in every Starlette)."""
    base = str(request.base_url).rstrip("/")
    mount = serve_state(request).config.mount
    return base + mount if mount and not base.endswith(mount) else base


async def _read(state: ServeState, read: Callable[..., T], *args: Any) -> T:
    """A read of one indexed row: inline on SQLite (WAL readers never wait for a writer,
    and a thread hop would cost more than the read), in a thread on PostgreSQL."""
    if state.config.database.postgres:
        return await run_in_threadpool(read, *args)
    return read(*args)


def _admit(state: ServeState, key: KeyRecord | None) -> KeyRecord:
    """The key if it may be used now and within its rate, else a ServeError."""
    key = usable(key)
    wait = state.limiter.take(key.name)
    if wait is not None:
        raise rate_limited(wait, f"this key's share is {state.config.rate:g} requests a second")
    return key


async def _caller(request: Request) -> KeyRecord:
    """The student's key of this request, usable now and within its rate, or a ServeError
    (the app answers it; the sync path and the stream admit by it too)."""
    state = serve_state(request)
    token = required_token(request)
    key = await _read(state, find_key, state.config.database, token)
    return _admit(state, key)


def cache_key_of(endpoint: str, payload: Mapping[str, Any]) -> str | None:
    """The demo cache's key: endpoint and payload, only when the payload fixes its seed
    (a non-zero ``seed`` field or an imgM ``--seed``); else None (never cached)."""
    seed = payload.get("seed")
    fixed = isinstance(seed, int) and not isinstance(seed, bool) and seed != 0
    fixed = fixed or any(isinstance(v, str) and _SEED_IN_PROMPT.search(v) for v in payload.values())
    if not fixed:
        return None
    text = json.dumps([endpoint, payload], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _addresses(base: str, endpoint: str, task_id: str, position: Any = None) -> dict[str, Any]:
    """Our task id and the addresses of our task, by the handle's field names, and its
    ``queue_position`` when ``position`` is one."""
    prefix = queue_url(base, endpoint, task_id)
    urls = {f"{tail}_url": f"{prefix}/{tail}" for tail in ("response", "status", "cancel")}
    handle: dict[str, Any] = {"request_id": task_id, **urls}
    if isinstance(position, int) and not isinstance(position, bool):
        handle["queue_position"] = position
    return handle


async def create_task(request: Request) -> Response:
    state = serve_state(request)
    config = state.config
    endpoint = request.path_params["endpoint"]
    try:
        key = await _caller(request)
        if any("webhook" in name.lower() for name in [*request.query_params, *request.headers]):
            raise refusal(400, None, "webhook not supported")
        payload = await read_payload(request, config.max_body)
        if names_a_webhook(payload):
            raise refusal(400, None, "webhook not supported")
        try:  # off the loop: a 64 MB body's media are checked too
            payload = await run_in_threadpool(as_counted, endpoint, payload)
        except PayloadError as exc:
            raise refusal(422, None, describe_errors(exc.errors)) from None
        amounts = charge_of(endpoint, payload, config.prices)
        wait = await _read(state, holding_creates, config.database)
        if wait > 0:  # told the longer wait upstream said, if it was past the hold's ceiling
            told = await _read(state, partial(holding_creates, config.database, what=TOLD))
            raise rate_limited(max(wait, told))
        reservation = await _reserve(
            config, key, endpoint, amounts, cache_key_of(endpoint, payload)
        )
    except EndpointNotFound:
        return detail(404, f"App not found: {endpoint}")
    except PayloadError as exc:
        return detail(422, f"cannot count this create's cost: {exc}")
    if reservation.cached:
        log.info(
            "create %s %s by %s: answered by the demo cache",
            reservation.task_id,
            endpoint,
            key.name,
        )
        return JSONResponse(_addresses(_base(request), endpoint, reservation.task_id, 0))
    try:
        retry = await state.gate.admit(key.name)
    except asyncio.CancelledError:  # the server stops while it waits its turn: nothing left
        # written here, not awaited: a stopping server's loop may run no other step
        _given_back_at_stop(config.database, reservation.task_id)
        raise
    if retry is not None:
        await run_in_threadpool(release, config.database, reservation.task_id, "not_sent")
        why = f"the class's creates wait their turn and this one waited {config.queue_wait:g} s"
        raise rate_limited(retry, why + "; nothing was billed")
    return await _forward_create(request, state, key, endpoint, payload, reservation.task_id)


async def _reserve(
    config: ServeConfig,
    key: KeyRecord,
    endpoint: str,
    amounts: dict[str, int | None],
    cache_key: str | None,
) -> Reservation:
    """:func:`~.budgets.reserve` in a thread, given back (``not_sent``) if the server
    stops while it waits for the database's write lock: its thread commits after the
    request ended, and the create, never sent, stayed ``sending`` (a running place, then
    ``unknown``, reserved until the teacher guessed). Whichever side comes last, the
    thread as it commits or the request as it is cancelled, gives it back."""
    guard = threading.Lock()
    made: list[Reservation] = []
    stopped = threading.Event()

    def work() -> Reservation:
        reservation = reserve(
            config.database,
            key.name,
            endpoint,
            amounts,
            cache_key=cache_key,
            max_running=config.max_running,
            long_sending=config.longest_send,
        )
        with guard:
            made.append(reservation)
            late = stopped.is_set()
        if late and not reservation.cached:
            _given_back_at_stop(config.database, reservation.task_id)
        return reservation

    try:
        return await run_in_threadpool(work)
    except asyncio.CancelledError:
        with guard:
            stopped.set()
            done = made[0] if made else None
        if done is not None and not done.cached:
            _given_back_at_stop(config.database, done.task_id)
        log.warning("a create by %s: given back at the stop, never sent", key.name)
        raise ServeError(
            "The class gateway stopped: nothing was billed", status=503, code="SERVER_STOPPING"
        ) from None


def _given_back_at_stop(db: Database, task_id: str) -> None:
    """A create the server stopped before it was sent, released ``not_sent``; written
    where it is called, not awaited: a stopping server's loop may run no other step."""
    try:
        release(db, task_id, "not_sent", "the class gateway stopped")
    except ServeError as exc:  # the sweep makes it unknown in time; the stop goes on
        log.warning("create %s: not given back at the stop: %s", task_id, exc)


async def _forward_create(
    request: Request,
    state: ServeState,
    key: KeyRecord,
    endpoint: str,
    payload: dict[str, Any],
    task_id: str,
) -> Response:
    """Send the reserved create upstream and record what came of it. Once it may have
    left, no failure here says "nothing was billed": a database that fails, or a server
    that stops, answers an outcome unknown naming the task (docs/decisions.md#serve-http)."""
    db = state.config.database
    body = json.dumps(payload).encode()
    answer: UpstreamAnswer | ServeError
    try:
        answer = await state.config.upstream.send("POST", f"/v1/queue/{endpoint}", body)
    except ServeError as fault:
        if not fault.sent:
            await run_in_threadpool(release, db, task_id, "not_sent", fault.message)
            return _failure(
                502,
                "UPSTREAM_UNAVAILABLE",
                f"{_UPSTREAM_FAILED}{fault.message}; nothing was billed",
            )
        answer = fault
    except asyncio.CancelledError:  # the server stops (SIGTERM) while upstream has it
        return _stopped_while_sending(db, key, task_id)
    try:
        return await _record_create(request, state, key, endpoint, task_id, answer)
    except ServeError as exc:
        if exc.code != "STORAGE_UNAVAILABLE":
            raise
        log.error(
            "create %s by %s: the database failed after it was sent: %s", task_id, key.name, exc
        )
        return _outcome_unknown(
            503,
            "STORAGE_UNAVAILABLE",
            "The class gateway's database failed after the create was sent upstream",
            task_id,
        )


def _outcome_unknown(status: int, code: str, why: str, task_id: str) -> JSONResponse:
    """The answer to a create that may have reached upstream: it may exist (and bill), so
    its cost stays reserved, and it names our task for the teacher to settle."""
    return _failure(
        status,
        code,
        f"{why}: the task may exist; its cost stays reserved until the teacher settles "
        f"task {task_id}",
    )


def _stopped_while_sending(db: Database, key: KeyRecord, task_id: str) -> Response:
    """The server was told to stop while upstream had the create: it is ``unknown`` at
    once (it holds no running place) and the student is told so, in one warning line."""
    why = "the class gateway stopped while sending this create"
    # written here, not awaited: a stopping server's loop may run no other step
    try:
        move(db, task_id, "unknown", error=why)
    except ServeError as exc:  # the sweep makes it unknown in time; the stop goes on
        log.warning("create %s: not recorded at the stop: %s", task_id, exc)
    log.warning("create %s by %s: outcome unknown (%s)", task_id, key.name, why)
    return _outcome_unknown(503, "SERVER_STOPPING", "The class gateway stopped", task_id)


async def _record_create(
    request: Request,
    state: ServeState,
    key: KeyRecord,
    endpoint: str,
    task_id: str,
    answer: UpstreamAnswer | ServeError,
) -> Response:
    """Record upstream's answer to the create (or its fault, once it may have arrived)
    and answer the student; a database failure here is the caller's to answer."""
    db = state.config.database
    if isinstance(answer, ServeError):
        await run_in_threadpool(move, db, task_id, "unknown", error=answer.message[:500])
        log.warning("create %s by %s: outcome unknown (%s)", task_id, key.name, answer.message)
        why = _UPSTREAM_FAILED + answer.message
        return _outcome_unknown(504, "UPSTREAM_TIMEOUT", why, task_id)
    # refused, never made, so never a task to charge: a 3xx or 4xx, a 2xx in the spec's
    # error shape (its error codes are shown, not their statuses), or a rate limit under any
    # status (the simulator's replicate dialect answers it 503). Any other 5xx may have
    # been made: its error shape's ``request_id`` is the error's, never a task's.
    refused = (
        300 <= answer.status < 500
        or (answer.status < 300 and answer.refused)
        or says_rate_limited(answer.status, answer.body)
    )
    upstream_id = answer.body.get("request_id") if isinstance(answer.body, dict) else None
    made = not refused and 200 <= answer.status < 300
    if made and isinstance(upstream_id, str) and upstream_id:
        # logged before it is written: if the write fails, the teacher can still settle it
        log.info(
            "create %s %s by %s: sent, upstream id %s", task_id, endpoint, key.name, upstream_id
        )
        try:
            # from unknown too: a sweep may have taken a create upstream was slow to
            # answer as one whose process stopped (it had no upstream id to follow)
            moved = await run_in_threadpool(
                partial(
                    move,
                    db,
                    task_id,
                    "open",
                    source=("sending", "unknown"),
                    upstream_id=upstream_id,
                    error=None,
                )
            )
        except ServeError:
            log.error(
                "create %s by %s: upstream made it as %s, but it could not be recorded; once "
                "it is unknown (within 10 minutes), settle it: serve tasks --settle %s --made",
                task_id,
                key.name,
                upstream_id,
                task_id,
            )
            raise
        if not moved:  # settled meanwhile (by the teacher): the upstream id is kept here
            log.error(
                "create %s by %s: upstream made it as %s after it was settled here; check "
                "it upstream and its settlement (serve tasks --key %s)",
                task_id,
                key.name,
                upstream_id,
                key.name,
            )
        position = answer.body.get("queue_position")
        return JSONResponse(_addresses(_base(request), endpoint, task_id, position))
    if not refused:  # a 5xx, or a 2xx without a request id
        why = f"upstream answered {answer.status} to the create"
        await run_in_threadpool(move, db, task_id, "unknown", error=why)
        return _outcome_unknown(
            502, "UPSTREAM_ERROR", f"The class gateway's upstream failed ({why})", task_id
        )
    code = _error_code(answer.body)
    why = f"upstream {answer.status}" + (f" {code}" if code else "")
    await run_in_threadpool(release, db, task_id, "refused", why)
    return await _passed_on(state, answer, refused_create=True)


async def _passed_on(
    state: ServeState, answer: UpstreamAnswer, *, refused_create: bool
) -> Response:
    """An upstream refusal as the student sees it: a 429 with its Retry-After (and, for a
    create's, every process holds creates back as long, at most :data:`GATE_CEILING`, as
    the client waits, unless the teacher clears it: ``serve hold --clear``), the
    teacher's key refused as the server's fault, anything else as upstream said it."""
    if says_rate_limited(answer.status, answer.body):
        told = max(1.0, answer.retry_after or 1.0)  # said as upstream said it: a 3600 s
        # quota said as 600 s was retried 50 minutes early (protocol/http.py's rule)
        if refused_create:  # a poll's limit is its poller's: upstream may still take creates
            try:
                await run_in_threadpool(
                    partial(hold_creates, state.config.database, min(GATE_CEILING, told), told=told)
                )
            except ServeError as exc:  # the student is told to wait all the same
                log.warning("upstream's rate limit could not be written: %s", exc)
        raise rate_limited(told)
    # students' keys never go upstream: any 401 is the teacher's key refused, in whatever
    # shape (a gateway in front of upstream answers {"message": ...}); a 403 only in the
    # error shape (another 403 may be the task's or the model's, passed on as it came)
    shaped = isinstance(answer.body, dict) and "error" in answer.body
    if answer.status == 401 or (answer.status == 403 and shaped):
        log.error("upstream refused the teacher's key (%s)", answer.status)
        return _failure(
            502,
            "UPSTREAM_KEY_REFUSED",
            "The class gateway's upstream refused its key: tell your teacher"
            + (" (nothing was billed)" if refused_create else ""),
        )
    if answer.status == 403:  # the teacher sees it too: a key refused in another shape?
        log.warning("upstream answered 403, passed on: if every request gets it, check its key")
    if answer.body is None:
        return _failure(502, "UPSTREAM_ERROR", f"upstream answered {answer.status}")
    return JSONResponse(answer.body, status_code=answer.status)


def _failure(
    status: int, code: str, message: str, retry_after: float | None = None
) -> JSONResponse:
    """Our own failure (a 5xx) in the gateway's error shape, without a ``request_id``: a
    task may exist behind it, and a fresh id beside it could be taken for the task's (its
    message names our task where one may exist)."""
    return gateway_error(status, code, message, retry_after, with_id=False)


def _error_code(body: Any) -> str | None:
    """The code of a body in the gateway's error shape (``{"error": {"code": ...}}``)."""
    error = body.get("error") if isinstance(body, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    return code if isinstance(code, str) else None


# --------------------------------------------------------------------------- follow-ups
async def _callers_task(request: Request, state: ServeState) -> tuple[Any, ...]:
    """The caller's task named in the path (budgets' ``_TASK_FIELDS``: id, endpoint,
    upstream id, state, charged, its first task's state, error), or a ServeError: another
    key's task, or one upstream never made, is ``Request not found``."""
    token = required_token(request)
    params = request.path_params
    key, task = await _read(
        state,
        caller_and_task,
        state.config.database,
        token,
        params["endpoint"],
        params["request_id"],
    )
    _admit(state, key)
    if task is None or (task[2] is None and task[5] is None):  # not a demo-cache answer
        raise refusal(404, None, "Request not found")
    return task


#: the names an output entry's URL goes by in the gateways' dialects (protocol/output.py)
_OUTPUT_URL_FIELDS = ("url", "file_url", "uri")


def _rewrite(body: Any, base: str, endpoint: str, task_id: str, upstream: str) -> Any:
    """An upstream status or result body with our task id and addresses in place of
    upstream's. Output files pass through as upstream's URLs, a relative one made
    absolute against ``upstream`` (a student's client would resolve it against us,
    who have no such file), as the client resolves them (no key is added: none is in
    ``upstream``)."""
    if not isinstance(body, dict):
        return body
    ours = _addresses(base, endpoint, task_id)
    rewritten = body | {name: value for name, value in ours.items() if name in body}

    def absolute(entry: Any, bare: bool) -> Any:
        if isinstance(entry, str):  # a bare URL is an output only in ``outputs``
            return resolve_output_url(entry, upstream) if bare else entry
        if not isinstance(entry, dict):
            return entry
        urls = {k: v for k, v in entry.items() if k in _OUTPUT_URL_FIELDS and isinstance(v, str)}
        return entry | {k: resolve_output_url(v, upstream) for k, v in urls.items()}

    for name in ("outputs", *FALLBACK_OUTPUT_KEYS):
        value, bare = body.get(name), name == "outputs"
        if isinstance(value, list):
            rewritten[name] = [absolute(entry, bare) for entry in value]
        elif value is not None:
            rewritten[name] = absolute(value, bare)
    return rewritten


def _ended_here(task_id: str, tail: str, error: str, error_type: str) -> dict[str, Any]:
    """The status or result of a task that ended here, not upstream: one cancelled alone
    while the upstream task it shares runs on for classmates (upstream's would say it
    runs, and invite a second cancel), or a demo-cache answer whose first create was
    never made. Its own end, as the simulator answers a failed or cancelled task."""
    body: dict[str, Any] = {"request_id": task_id, "status": "COMPLETED"}
    body |= {"error": error, "error_type": error_type}
    if tail == "response":
        body["outputs"] = []
    return body


async def _follow_up(request: Request, method: str, tail: str) -> Response:
    """A status or result request, forwarded upstream (a task that ended here, or a
    demo-cache answer whose first task upstream has not answered yet, answered here)."""
    state = serve_state(request)
    task = await _callers_task(request, state)
    if task[3] == "cancelled" and task[6] == SHARED_CANCEL:
        return JSONResponse(_ended_here(task[0], tail, CANCELLED_ERROR, "cancelled"))
    if task[2] is None and task[3] not in LIVE:  # its first never made
        return JSONResponse(_ended_here(task[0], tail, task[6] or task[3], task[3]))
    if task[2] is None:  # a demo-cache answer whose first task upstream has not answered yet
        queued = {"request_id": task[0], "status": "IN_QUEUE"}
        return JSONResponse(queued, status_code=202 if tail == "response" else 200)
    path = queue_url("", request.path_params["endpoint"], task[2]) + f"/{tail}"
    try:
        answer = await state.config.upstream.send(method, path)
    except ServeError as fault:
        return _failure(502, "UPSTREAM_UNAVAILABLE", _UPSTREAM_FAILED + fault.message)
    return await _answered(request, state, task, tail, answer)


async def cancel_task(request: Request) -> Response:
    """A student's cancel: counted in flight with the task (``budgets.ask_cancel``) until
    upstream's answer, or its fault, says whether it may have been applied
    (``budgets.cancel_answered``)."""
    state = serve_state(request)
    task = await _callers_task(request, state)
    db = state.config.database
    way = await run_in_threadpool(ask_cancel, db, task[0])
    if way == "alone":  # its upstream task is shared with others: only ours ends
        return JSONResponse({"request_id": task[0], "status": "CANCELLATION_REQUESTED"})
    if way == "ended":  # as the gateway answers a finished task's cancel; upstream not asked
        return detail(400, "Task already completed")
    path = queue_url("", request.path_params["endpoint"], task[2]) + "/cancel"
    try:
        answer = await state.config.upstream.send("PUT", path)
    except ServeError as fault:  # a cancel that may have reached upstream stays asked
        undone = await run_in_threadpool(partial(cancel_answered, db, task[0], taken=fault.sent))
        if fault.sent:
            return _failure(502, "UPSTREAM_UNAVAILABLE", _UPSTREAM_FAILED + fault.message)
        said = (  # it never left: the task is as it was
            "nothing was cancelled, try again"
            if undone
            # not undone: another is in flight now (stamped, not stale) or one was taken
            else "this cancel was not sent, but an earlier cancel of the task is on its "
            "way or may have reached the gateway: it is being cancelled"
        )
        return _failure(502, "UPSTREAM_UNAVAILABLE", f"{_UPSTREAM_FAILED}{fault.message}; {said}")
    # refused: the task is as it was. A 5xx may have been applied (a proxy's 504), but a
    # rate limit under any status is a refusal, as for a create (the replicate dialect's 503)
    refused = answer.refused and (
        answer.status < 500 or says_rate_limited(answer.status, answer.body)
    )
    # undone only if no other cancel of the task is in flight or was taken
    await run_in_threadpool(partial(cancel_answered, db, task[0], taken=not refused))
    if refused and answer.status >= 500:
        return await _passed_on(state, answer, refused_create=False)
    if answer.status >= 500:  # a proxy's 504 while upstream applied it: still asked
        return _failure(
            502,
            "UPSTREAM_ERROR",
            f"The class gateway's upstream answered {answer.status} to the cancel: it may "
            "have been applied, so the task stays being cancelled (and charged); cancel "
            "again or poll its status",
        )
    return await _answered(request, state, task, "cancel", answer)


async def _answered(
    request: Request, state: ServeState, task: tuple[Any, ...], tail: str, answer: UpstreamAnswer
) -> Response:
    """Upstream's answer to a follow-up (``tail``: status, response or cancel) as the
    student sees it; a status or a result that says the task ended settles it."""
    db = state.config.database
    if answer.task_unknown:  # gone upstream, once old enough: it frees its key's place
        await run_in_threadpool(forgotten, db, task[0])
        return detail(404, "Request not found")
    if answer.status in (404, 410):  # not upstream's word (a proxy's page): the task is kept
        # counted as the sweep counts it: only such answers for LOST_AFTER end the task,
        # and only to its status (a result route may 404 while the task runs)
        lost = tail == "status" and await run_in_threadpool(unanswered, db, task[0])
        kept = "after so long, the task is taken as gone" if lost else "the task is kept, try again"
        return _failure(
            502,
            "UPSTREAM_UNAVAILABLE",
            f"The class gateway's upstream answered {answer.status} without saying it does "
            f"not know the task (a proxy's page, a wrong route?): {kept}",
        )
    if (
        tail == "status"
        and answer.status >= 400
        and not says_rate_limited(answer.status, answer.body)
    ):
        # a lasting 400, 403 or 5xx to its status counts as the sweep counts it: kept,
        # but only for a bounded stretch (it held its key's place for ever)
        await run_in_threadpool(unanswered, db, task[0])
    if task[7] is not None and answer.status < 400:  # answered: a stretch of errors is over
        await run_in_threadpool(heard, db, task[0])
    if answer.status < 300 and answer.body is None:
        return Response(status_code=answer.status)  # e.g. a bare 202: not ready yet
    if answer.refused or answer.body is None:
        return await _passed_on(state, answer, refused_create=False)
    upstream = state.config.upstream.base_url
    endpoint = request.path_params["endpoint"]
    body = _rewrite(answer.body, _base(request), endpoint, task[0], upstream)
    if tail != "cancel":  # a cancel's answer says nothing of how the task ended
        await run_in_threadpool(partial(settle, db, task[0], body, seen=task[3]))
    return JSONResponse(body, status_code=answer.status)


get_status = partial(_follow_up, method="GET", tail="status")
get_result = partial(_follow_up, method="GET", tail="response")


async def index(request: Request) -> Response:
    return JSONResponse(
        {
            "service": "genwidgets class gateway",
            "protocol": "POST /v1/queue/{endpoint} with Authorization: Bearer <key>",
        }
    )


# --------------------------------------------------------------------------- the app


async def _serve_error(request: Request, exc: Exception) -> Response:
    """A ServeError a handler raised: a refusal, in the gateway's shape (``code`` None:
    a ``detail``), or the database's failure, logged and answered without its detail."""
    assert isinstance(exc, ServeError)
    if exc.code is None:
        return detail(exc.status, exc.message)
    if exc.code != "STORAGE_UNAVAILABLE":
        answer = gateway_error if exc.status < 500 else _failure
        return answer(exc.status, exc.code, exc.message, exc.retry_after)
    log.error("%s on %s %s: %s", exc.code, request.method, request.url.path, exc)
    # a create's failure after it was sent is answered where it was sent (_forward_create)
    said = "nothing was sent upstream" if request.method == "POST" else "try again"
    return _failure(503, "STORAGE_UNAVAILABLE", f"The class gateway's database failed; {said}", 1.0)


async def _internal_error(request: Request, exc: Exception) -> Response:
    log.error("error on %s %s: %s", request.method, request.url.path, type(exc).__name__)
    return _failure(500, "INTERNAL_ERROR", f"Internal error: {type(exc).__name__}")


def create_app(
    config: ServeConfig, extra: Sequence[BaseRoute] = ()
) -> tuple[Starlette, ServeState]:
    """The ASGI app of one class gateway (with ``extra`` routes: the admin page), and
    its state."""
    state = ServeState(config)
    routes = [
        Route("/", index, methods=["GET"]),
        *queue_routes(create_task, get_status, get_result, cancel_task, admit=_caller),
        *extra,
    ]
    app = Starlette(
        routes=[Mount(config.mount, routes=routes)] if config.mount else routes,
        lifespan=sweeping(state),
        exception_handlers={
            HTTPException: http_error,
            **HANDLERS,
            ServeError: _serve_error,
            Exception: _internal_error,
        },
    )
    app.state.serve = state
    return app, state
