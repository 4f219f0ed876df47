"""The four queue operations over httpx, with the retry and rate-limit policy.

Create is retried only when it certainly created nothing; status, result and cancel
back off on 5xx, 429 and transport errors; a rate limit closes the client's gate (a
create's for creates only, which it paces: :mod:`.gate`); the key stays at the gateway's
origin; every answer is read within its caps and its deadline (:mod:`.body`). The rules:
docs/decisions.md#retries, docs/decisions.md#gateways-and-their-dialects,
docs/decisions.md#create-pacing and docs/decisions.md#reading-answers.
"""

from __future__ import annotations

import asyncio
import email.utils
import inspect
import logging
import random
import re
import time
import unicodedata
import urllib.parse
import warnings
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any, TypeVar

import httpx

from .._config import (
    DEFAULT_MAX_IN_FLIGHT,
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT_S,
    Secret,
    redact,
)
from ..errors import (
    ClientClosed,
    EndpointNotFound,
    GatewayError,
    GenwidgetsWarning,
    ModelNotAllowed,
    NotSupported,
    OutcomeUnknown,
    RateLimited,
    RequestNotFound,
    RuntimeFailed,
    ServerError,
    Unauthorized,
    Unreachable,
    WebhookNotSupported,
)
from .body import MAX_ANSWER_BYTES, Answer, Deadline, failure_words, read_answer, within
from .fetch import (
    MAX_READ_BYTES,
    MAX_REDIRECTS,
    STAY_HOME,
    GatewayAddress,
    InternalAddress,
    fetch_async,
    http_client,
    open_url_async,
    origin_text,
    same_origin,
)
from .gate import RateGate
from .records import (
    ERROR_TEXT_KEYS,
    ERROR_TYPE_KEYS,
    Handle,
    OutputSource,
    Result,
    Status,
    is_terminal,
    queue_url,
    readable,
    says_rate_limited,
)

log = logging.getLogger("genwidgets")
T = TypeVar("T")

#: How long a 404 ``Request not found`` is retried before it is believed.
NOT_FOUND_GRACE_S = 3.0

#: The gateway's own word that it does not know a task: the spec's ``Request not found``,
#: or the same said of a prediction, task or job (other queues' dialects), as the whole of
#: a body's ``detail``, ``message`` or ``title`` or of its text, or as its code
#: (:data:`_TASK_UNKNOWN_CODE`), on a 404 or 410 (on a 5xx it is the server's passing
#: trouble, not the task's end). An id in the words counts only when it is the task's own
#: (``Request r1 not found`` of r1, :func:`_says_task_unknown`): a sentence about the
#: task's result, output or a file (``Result for request r1 not found``, ``Job output_0 not
#: found``) is not the task's end. Only this means gone: a bare ``Not Found`` is a
#: router's (the spec's answer to an unknown path) and an HTML page a proxy's
#: (docs/decisions.md#gateways-and-their-dialects).
_TASK_UNKNOWN = (
    r"(?:the )?(?:request|prediction|task|job)(?:[ _]id)?(?: {id})? (?:was )?not found(?::? {id})?"
)
#: a task's follow-up address as sent (percent-encoded: an id with a ``/`` is one
#: segment), its id the task asked about
_TASK_ADDRESS = re.compile(r"/requests/([^/?]+)/(?:status|response|cancel)/?(?:\?.*)?$")
#: how many items of an ``errors`` or ``detail`` list are read for the words
_LISTED_ERRORS = 3
#: the keys of such an item that may hold them (a JSON:API error's ``title`` too)
_ITEM_TEXT_KEYS = ("title", *ERROR_TEXT_KEYS)
#: the same word as an error code (``REQUEST_NOT_FOUND``); a bare ``NOT_FOUND`` is a route's
_TASK_UNKNOWN_CODE = re.compile(r"(?:request|prediction|task|job)_not_found", re.IGNORECASE)


def _says_task_unknown(text: str, request_id: str | None) -> bool:
    """Whether ``text`` is, as a whole, the word :data:`_TASK_UNKNOWN`, an id in it
    ``request_id`` (quoted or not): without the task's id known, only the bare words."""
    said = " ".join(text.lower().split()).rstrip(".!")
    own = re.escape(request_id.lower()) if request_id else "(?!)"  # (?!): no id matches
    return re.fullmatch(_TASK_UNKNOWN.format(id=f"['\"`]?{own}['\"`]?"), said) is not None


def _listed_texts(value: object) -> list[str]:
    """The texts of the first items of an error list (``{"errors": [{"title": ...}]}``,
    JSON:API and GraphQL; ``{"detail": [{"msg": ...}]}``, FastAPI): a string item, or
    an object's string values under :data:`_ITEM_TEXT_KEYS`."""
    if not isinstance(value, list):
        return []
    texts: list[str] = []
    for item in value[:_LISTED_ERRORS]:
        if isinstance(item, Mapping):
            texts.extend(t for k in _ITEM_TEXT_KEYS if isinstance(t := item.get(k), str))
        elif isinstance(item, str):
            texts.append(item)
    return texts


def backoff_delay(attempt: int, rng: random.Random | None = None) -> float:
    """Jittered exponential backoff, bounded at 8 s (attempt counts from 0)."""
    r = (rng or random).random()
    return min(0.5 * 2**attempt, 8.0) * (1 - 0.25 * r)


#: the longest ``Retry-After`` kept as said (a week): ``1e308`` was said in 309 digits
RETRY_AFTER_MOST = 7 * 86_400.0


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP date),
    as the gateway asked, from 0 to :data:`RETRY_AFTER_MOST` (``nan`` is no wait, 0): what
    the user is told. Only the gate's hold is capped, at its ceiling
    (:data:`~.gate.GATE_CEILING`, in ``RateGate.close``): a 3600 s quota said as 600 s
    was retried 50 minutes early, and refused again."""
    raw = (headers.get("retry-after") or "").strip()
    for text, per_second in ((headers.get("retry-after-ms"), 1000), (raw, 1)):
        try:
            seconds = float(text or "") / per_second
        except ValueError:
            continue
        return min(max(0.0, seconds), RETRY_AFTER_MOST)  # nan: max keeps its first, 0.0
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):  # none, or neither seconds nor a date
        return None
    later = when.timestamp() - (time.time() if now is None else now)
    return min(max(0.0, later), RETRY_AFTER_MOST)


def _read(answer: Answer, handle: Handle, read: Callable[..., T], **kw: Any) -> T:
    """A follow-up answer read by ``read`` (a record's ``from_body``, given ``kw``) as
    ``handle``'s: a :class:`ServerError` naming the answer when the record refuses it."""
    endpoint, request_id = handle.endpoint, handle.request_id
    try:
        return read(answer.json(), endpoint=endpoint, request_id=request_id, **kw)
    except ValueError as exc:
        raise ServerError(
            f"{exc} (HTTP {answer.status_code}, {answer.describe()})",
            endpoint=endpoint,
            request_id=request_id,
            status_code=answer.status_code,
        ) from None


def error_from_response(
    response: httpx.Response | Answer,
    *,
    endpoint: str | None = None,
    request_id: str | None = None,
) -> GatewayError:
    """Map an error answer to its class: body first, HTTP status second."""
    answer = response if isinstance(response, Answer) else Answer.of(response)
    # the task asked about (the caller's, or its address's): only its id in the words says gone
    raw_path = answer.url.raw_path.decode("ascii", "replace") if answer.url is not None else ""
    asked = _TASK_ADDRESS.search(raw_path)
    asked_for = request_id or (urllib.parse.unquote(asked[1]) if asked else None)
    body = answer.json()
    code = message = detail = title = None
    if isinstance(body, Mapping):
        err = body.get("error")
        if isinstance(err, Mapping):
            code = readable(err.get("code"), ERROR_TYPE_KEYS) if err.get("code") else None
            message = readable({k: v for k, v in err.items() if k != "code"}, ERROR_TEXT_KEYS)
            message = None if message == "{}" else message
        elif isinstance(err, str):
            message = err
        if code is None and isinstance(body.get("code"), str):
            code = body["code"]
        title = body.get("title") if isinstance(body.get("title"), str) else None
        raw_detail = body.get("detail")
        if raw_detail is not None:
            detail = readable(raw_detail, ERROR_TEXT_KEYS)
        found = body.get("request_id")
        request_id = request_id or (str(found) if found and isinstance(found, str | int) else None)
    status = answer.status_code
    text = detail or message or answer.plain_text()
    if text is None:
        text = (
            f"unreadable answer ({answer.describe()})"
            if answer.content.strip() or answer.refused or status >= 500
            else answer.reason_phrase or "error"
        )
    text = redact(text)
    kw: dict[str, Any] = dict(
        status_code=status, code=code, detail=detail, request_id=request_id, endpoint=endpoint
    )
    lowered = (detail or "").lower()
    # the detail, the message (an error's or the body's own), a problem's title, a
    # plain-text body, or an item of an errors or detail list says it
    top = body.get("message") if isinstance(body, Mapping) else None
    listed = (
        _listed_texts(body.get("errors")) + _listed_texts(body.get("detail"))
        if isinstance(body, Mapping)
        else []
    )
    texts = [
        t
        for t in (detail, message, top, title, answer.plain_text(), *listed)
        if isinstance(t, str) and t
    ]
    said = "\n".join(texts).lower()
    path = answer.url.path if answer.url is not None else ""

    # the body first, then (the body unknown) the status code: the first rule that holds
    rules: tuple[tuple[object, type[GatewayError]], ...] = (
        (code == "UNAUTHORIZED", Unauthorized),
        (code == "RATE_LIMIT_EXCEEDED", RateLimited),
        (lowered.startswith("app not found"), EndpointNotFound),
        ("model not allowed" in lowered, ModelNotAllowed),
        ("webhook not supported" in lowered, WebhookNotSupported),
        ("sse streaming not supported" in lowered, NotSupported),
        (lowered == "not found" and path.endswith("/sync"), NotSupported),
        # gone is said by a 404 (or 410) only: a 5xx naming a missing job is a fault of
        # contact (ServerError, retried), never a paid task to record as gone
        (
            status in (404, 410) and any(_says_task_unknown(t, asked_for) for t in texts),
            RequestNotFound,
        ),
        (status in (404, 410) and _TASK_UNKNOWN_CODE.fullmatch(code or ""), RequestNotFound),
        ("runtime execution failed" in said, RuntimeFailed),
        (status == 401, Unauthorized),
        (status == 429, RateLimited),
        (status >= 500, ServerError),
    )
    kind = next((kind for holds, kind in rules if holds), GatewayError)
    if kind is RateLimited:
        kw["retry_after"] = parse_retry_after(answer.headers)
    return kind(text, **kw)


def says_task_unknown(answer: Answer) -> bool:
    """Whether ``answer`` is the gateway's own word that it does not know the task
    (:class:`RequestNotFound` by :func:`error_from_response`: a 404 or 410 saying so), the
    one rule by which a task is believed gone, by the client and the class gateway alike."""
    return answer.status_code in (404, 410) and isinstance(
        error_from_response(answer), RequestNotFound
    )


def _redirected_create(answer: Answer, endpoint: str) -> OutcomeUnknown:
    """A create answered by a 301/302/303 (POST-redirect-GET: "made, see there"), whose
    GET then answered an error (a result address's 400 "still in progress", a 405): the
    error answers the GET, never the create, and the redirect is the best sign that a
    task exists. Outcome unknown: never "not created", never sent again."""
    said = error_from_response(answer, endpoint=endpoint).message
    return OutcomeUnknown(
        "the create request was answered by a redirect, and the address it named answered "
        f"HTTP {answer.status_code} ({said}); a task may exist and is not retried to "
        "avoid a duplicate. Check client.history() before submitting again.",
        endpoint=endpoint,
        status_code=answer.status_code,
    )


def is_refusal(answer: Answer) -> bool:
    """An error answer: a status of 400 or more, or a body in the spec's gateway error
    shape (an ``error`` object with a string ``code``, no task ``status`` and no task
    address) whatever its status, since the spec does not show its errors' status
    codes: a 200 refusing a create is not a task handle."""
    if answer.status_code >= 400:
        return True
    if b'"code"' not in answer.content[:65536]:  # a handle or a record: not parsed again
        return False
    body = answer.json()
    return (
        isinstance(body, Mapping)
        and isinstance(body.get("error"), Mapping)
        and isinstance(body["error"].get("code"), str)
        and not any(key in body for key in ("status", "status_url", "response_url"))
    )


def _says_rate_limited(answer: Answer) -> bool:
    """A rate limit by :func:`~.records.says_rate_limited` (a body without the code is
    not parsed for it)."""
    said = b"RATE_LIMIT_EXCEEDED" in answer.content[:4096]
    return says_rate_limited(answer.status_code, answer.json() if said else None)


#: Transport failures before the request left: nothing reached the gateway. httpx's
#: ``LocalProtocolError`` is h11 refusing the request's head as it is built (a header
#: value with a space at its end), which httpcore does before writing a byte.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.LocalProtocolError)
#: What a request of the gateway's may fail with, no whole answer read: a transport
#: failure, or an address refused (the gateway's name rebound into this machine or
#: its network: docs/decisions.md#fetch-addresses), a fault of contact either way.
_NO_ANSWER = (httpx.TransportError, InternalAddress)

#: The failures of a status, result or cancel request worth another try.
_TRANSIENT = (ServerError, RateLimited, Unreachable)


def _nothing_sent(exc: Exception) -> bool:
    """Whether the request never left: its connection failed, or was refused as made."""
    return isinstance(exc, _NOT_SENT) or (isinstance(exc, InternalAddress) and not exc.sent)


def _after_a_redirect(exc: Exception, url: str) -> bool:
    """Whether a failed request is a hop a redirect led to, not the create's own POST:
    that POST was sent and answered (a 303's "made, see there"), so nothing the next
    hop meets, unsent or not, makes the create safe to send again."""
    try:
        request = exc.request if isinstance(exc, httpx.RequestError) else None
    except RuntimeError:  # httpx's words for a failure told no request
        return False
    return request is not None and (request.method != "POST" or request.url != httpx.URL(url))


def _unsendable(text: str) -> str | None:
    """Words for the first character of a key no header can carry (not printable
    ASCII: a pasted no-break space, a curly quote, a newline; or a space at either end,
    which h11 refuses in a header value, or which makes ``Bearer  key``), naming the
    character and its place, never the key; None when every character can go."""
    for place, end in ((1, "start"), (len(text), "end")):
        if text and text[place - 1] == " ":
            return (
                f"the API key (api_key or GENWIDGETS_API_KEY) holds a space at character "
                f"{place} (its {end}), which no HTTP header carries there (copied with a "
                "space?): give the key without surrounding spaces"
            )
    for place, char in enumerate(text, 1):
        if not (char.isascii() and char.isprintable()):
            name = unicodedata.name(char, "a control character")
            return (
                f"the API key (api_key or GENWIDGETS_API_KEY) holds U+{ord(char):04X} "
                f"({name}) at character {place}, which no HTTP header can carry (pasted "
                "with a space or a quote?): keys are printable ASCII"
            )
    return None


def _headers(key: Secret | None, extra: Mapping[str, str] | None) -> httpx.Headers:
    """The client's headers; the key is read in this one expression and held only by
    ``httpx.Headers``, whose repr hides it (no frame keeps it as a str). A key no
    header can carry is refused in words of its own, not Python's codec's."""
    if key and (words := _unsendable(key.reveal())) is not None:
        raise ValueError(words)
    return httpx.Headers(
        {**({"Authorization": "Bearer " + key.reveal()} if key else {}), **dict(extra or {})}
    )


class Gateway:
    """The four operations against one gateway, on the engine's loop.

    One instance per client, holding that client's ``httpx.AsyncClient``; it
    must only be used from the loop it was created on (httpx #2058).
    """

    def __init__(
        self,
        base_url: str,
        api_key: Secret | str | None,
        *,
        timeout: float = DEFAULT_TIMEOUT_S,
        max_retries: int = DEFAULT_MAX_RETRIES,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        transport: httpx.AsyncBaseTransport | None = None,
        headers: Mapping[str, str] | None = None,
        sleep: Any = None,
        clock: Callable[[], float] = time.monotonic,
        not_found_grace: float = NOT_FOUND_GRACE_S,
    ) -> None:
        """``sleep`` (an ``asyncio.sleep`` stand-in) and ``clock`` (seconds, like
        ``time.monotonic``) time the retries; tests pass fakes that agree.
        ``not_found_grace``: how long a 404 is retried before it is believed."""
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.max_retries = max_retries
        self.gate = RateGate()
        #: set by the client's close: no request leaves from now on, and the waits before
        #: one (the rate gate, a retry's backoff) end at once with ``ClientClosed``
        self._stopping = asyncio.Event()
        self._waiting: set[asyncio.Task[Any]] = set()  # tasks in a wait a stop ends
        self._stopped: set[asyncio.Task[Any]] = set()  # of those, the ones it cancelled
        self._semaphore = asyncio.Semaphore(max_in_flight)
        self._sleep = sleep or asyncio.sleep
        self._clock = clock
        self.not_found_grace = not_found_grace
        #: the jitter source of this client's retries and polls
        self.rng = random.Random()
        sent = _headers(Secret.wrap(api_key), headers)
        #: the class of the gateway's address, learnt by either client: a name rebound
        #: between a create and a poll is refused by both
        self.address = address = GatewayAddress()
        self._http = http_client(
            headers=sent,
            timeout=timeout,
            transport=transport,
            trusted_origin=self.base_url,
            gateway=address,
        )
        #: creates go on connections of their own, closed after their answer: a paid
        #: request never rides a connection an earlier answer left bytes on (a
        #: Content-Length counting characters), which made its answer garbage and its
        #: task unaddressable (docs/decisions.md#retries). A transport the caller gives
        #: keeps its own connections (httpx applies no limits to it): one client then
        self._creates = (
            http_client(
                headers=sent,
                timeout=timeout,
                trusted_origin=self.base_url,
                keep_alive=False,
                gateway=address,
            )
            if transport is None
            else self._http
        )
        self._foreign_origins: set[str] = set()
        #: request counts by operation, for benchmarks and tests
        self.counts: dict[str, int] = {"create": 0, "status": 0, "result": 0, "cancel": 0}

    def __repr__(self) -> str:
        return f"Gateway({self.base_url!r})"

    def stop(self) -> None:
        """On the loop: no request leaves from now on; the waits before one end
        (docs/decisions.md#closing-lets-creates-answer)."""
        self._stopping.set()
        for task in list(self._waiting):
            self._stopped.add(task)
            task.cancel()

    async def _unless_stopped(self, waiting: Awaitable[T], endpoint: str) -> T:
        """``waiting``'s value, or ``ClientClosed`` as soon as :meth:`stop` is called.
        Awaited in the caller's own task (no task of its own: an extra turn of the loop
        would reorder the rate gate's pacing); :meth:`stop` cancels that task and the
        cancel is turned into ``ClientClosed`` here."""
        if self._stopping.is_set():
            if inspect.iscoroutine(waiting):
                waiting.close()  # it never runs
            raise ClientClosed(endpoint=endpoint)
        task = asyncio.current_task()
        assert task is not None
        self._waiting.add(task)
        try:
            return await waiting
        except asyncio.CancelledError:
            if task not in self._stopped:
                raise  # the caller's own cancel (Ctrl-C, a deadline)
            self._stopped.discard(task)
            if hasattr(task, "uncancel"):  # Python 3.11+: the cancel is answered here
                task.uncancel()
            raise ClientClosed(endpoint=endpoint) from None
        finally:
            self._waiting.discard(task)

    async def aclose(self) -> None:
        await self._http.aclose()
        if self._creates is not self._http:
            await self._creates.aclose()

    async def _send(
        self,
        op: str,
        method: str,
        url: str,
        *,
        endpoint: str,
        request_id: str | None,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        attempt: int = 0,
        urgent: bool = False,
        leaving: Callable[[], Awaitable[object]] | None = None,
    ) -> Answer:
        """One request through the gate: a create with its pacing ticket (``attempt``:
        its tries so far), a cancel in its turn (``urgent``: a first try, which may pass a
        closed gate; :meth:`RateGate.take_cancel_turn`), the redirects httpx
        follows on the same origin only; ``leaving()`` is awaited just before the request
        is put on the wire (it may refuse: the client stopped); a stop ends the waits
        before it with ``ClientClosed``."""
        create = op == "create"
        ticket = (
            await self._unless_stopped(self.gate.ticket(attempt=attempt), endpoint)
            if create
            else None
        )
        turn = op == "cancel" and self.gate.take_cancel_turn(endpoint, request_id)
        try:
            await self._unless_stopped(
                self.gate.wait(
                    endpoint=endpoint,
                    request_id=request_id,
                    create=create,
                    urgent=urgent,
                ),
                endpoint,
            )

            def away(status_code: int, target: str) -> GatewayError:
                return GatewayError(
                    f"the {op} request was redirected to another origin ({target}); not "
                    f"followed, so the API key stays at {origin_text(self.base_url)}",
                    status_code=status_code,
                    endpoint=endpoint,
                    request_id=request_id,
                )

            try:
                async with self._semaphore:
                    if self._stopping.is_set() or self._http.is_closed:
                        raise ClientClosed(endpoint=endpoint, request_id=request_id)
                    if op == "cancel" and self.gate.cancels_refused and not turn:
                        raise self.gate.cancel_waits(endpoint, request_id)  # refused meanwhile
                    if leaving is not None:
                        await leaving()
                    self.counts[op] += 1
                    http = self._creates if create else self._http
                    answer = await self._exchange(http, method, url, content, headers, away)
            except httpx.TooManyRedirects:
                raise GatewayError(
                    f"the {op} request was redirected more than {MAX_REDIRECTS} times",
                    endpoint=endpoint,
                    request_id=request_id,
                ) from None
            limited = _says_rate_limited(answer)
            if limited:  # a create's refusal holds creates only: docs/decisions.md#create-pacing
                wait = parse_retry_after(answer.headers)
                self.gate.close(wait if wait is not None else 1.0, creates_only=create)
            if op == "cancel":
                self.gate.cancel_answered(refused=limited)
            if ticket is not None:
                ticket.refused = limited
            return answer
        finally:
            if ticket is not None:
                self.gate.done(ticket)
            if turn:
                self.gate.end_cancel_turn()

    async def _exchange(
        self,
        http: httpx.AsyncClient,
        method: str,
        url: str,
        content: bytes | None,
        headers: Mapping[str, str] | None,
        away: Callable[[int, str], Exception],
    ) -> Answer:
        """One request and its whole answer, within the total deadline: the connect
        timeout and ``timeout``, plus the time the body's bytes may take
        (docs/decisions.md#reading-answers)."""
        grace = self.timeout + min(10.0, self.timeout)  # connecting, then answering
        async with within(Deadline(grace, sent=len(content or b""))) as watch:
            request = http.build_request(
                method, url, content=content, headers=headers, extensions={STAY_HOME: away}
            )
            response = await http.send(request, stream=True)
            try:
                return await read_answer(response, MAX_ANSWER_BYTES, watch)
            finally:
                await response.aclose()

    def _follow_up_url(self, handle: Handle, url: str, suffix: str) -> str:
        """``url`` when it is on the gateway's origin; else the documented address,
        with one warning per foreign origin (the key never goes there)."""
        if same_origin(url, self.base_url):
            return url
        origin = origin_text(url)
        if origin not in self._foreign_origins:
            self._foreign_origins.add(origin)
            warnings.warn(
                f"the task handle names another origin ({origin}) than the gateway "
                f"({origin_text(self.base_url)}); the client uses the documented "
                "addresses on the gateway instead, so the API key is not sent there",
                GenwidgetsWarning,
                stacklevel=2,
            )
        return f"{queue_url(self.base_url, handle.endpoint, handle.request_id)}/{suffix}"

    async def create(
        self,
        endpoint: str,
        body: bytes,
        *,
        headers: Mapping[str, str] | None = None,
        leaving: Callable[[], Awaitable[object]] | None = None,
        made_nothing: Callable[[BaseException], object] | None = None,
    ) -> Handle:
        """Send a create-task request. ``body`` is the exact JSON body of a prepared
        request (validated and size-checked by ``Client.prepare``): the one way in.
        ``leaving()`` is awaited before each try is put on the wire, after the rate
        gate's wait; ``made_nothing(error)`` is told of a try that made nothing (never
        sent, refused for the rate limit) before the next one waits its turn (a batch
        writes its intents by them: docs/decisions.md#one-batch-sender)."""
        if not isinstance(body, bytes):
            raise TypeError("Gateway.create sends a prepared request's body (bytes)")
        url = queue_url(self.base_url, endpoint)
        sent_headers = {"Content-Type": "application/json", **dict(headers or {})}
        attempt = 0
        while True:
            try:
                answer = await self._send(
                    "create",
                    "POST",
                    url,
                    endpoint=endpoint,
                    request_id=None,
                    content=body,
                    headers=sent_headers,
                    attempt=attempt,
                    leaving=leaving,
                )
            except _NO_ANSWER as exc:
                if _after_a_redirect(exc, url):
                    raise OutcomeUnknown(
                        "the create request was answered by a redirect, whose address then "
                        f"could not be reached ({redact(failure_words(exc))}); a task may "
                        "exist and is not retried to avoid a duplicate. Check "
                        "client.history() before submitting again.",
                        endpoint=endpoint,
                    ) from None
                if not _nothing_sent(exc):
                    raise OutcomeUnknown(
                        "the create request was sent but no whole answer arrived "
                        f"({redact(failure_words(exc))}); a task "
                        "may exist and is not retried to avoid a duplicate. Check "
                        "client.history() before submitting again.",
                        endpoint=endpoint,
                    ) from None
                # Nothing was sent: safe to try again, unless refused as made (again).
                if isinstance(exc, httpx.LocalProtocolError):
                    raise Unreachable(
                        "the create request was not sent: the HTTP library refused it as "
                        f"it was built ({redact(failure_words(exc))}); nothing reached the "
                        "gateway, so no task was made",
                        endpoint=endpoint,
                    ) from None
                if attempt >= self.max_retries:
                    raise Unreachable(
                        f"cannot reach the gateway at {self.base_url}: {redact(str(exc))}",
                        endpoint=endpoint,
                    ) from None
                if made_nothing is not None:
                    made_nothing(exc)
            else:
                if not is_refusal(answer):
                    return self._handle(endpoint, answer)
                if answer.method not in (None, "POST"):
                    raise _redirected_create(answer, endpoint)
                error = error_from_response(answer, endpoint=endpoint)
                if isinstance(error, ServerError):  # a 5xx may follow a task made
                    raise OutcomeUnknown(
                        f"the gateway answered the create request with HTTP "
                        f"{answer.status_code} ({error.message}); a task may "
                        "exist and is not retried to avoid a duplicate. Check "
                        "client.history() before submitting again.",
                        endpoint=endpoint,
                        status_code=answer.status_code,
                    ) from None
                if not isinstance(error, RateLimited) or attempt >= self.max_retries:
                    raise error
                if made_nothing is not None:
                    made_nothing(error)
                if error.retry_after is not None:  # the gate holds it exactly that long
                    attempt += 1
                    continue
            attempt += 1
            await self._unless_stopped(self._sleep(backoff_delay(attempt - 1, self.rng)), endpoint)

    def _handle(self, endpoint: str, answer: Answer) -> Handle:
        try:
            return Handle.from_body(endpoint, answer.json(), self.base_url)
        except ValueError as exc:
            raise OutcomeUnknown(
                f"the gateway accepted the request but {exc} (HTTP {answer.status_code}, "
                f"{answer.describe()}); a task may exist, but it cannot be addressed",
                endpoint=endpoint,
                status_code=answer.status_code,
            ) from None

    async def _call(
        self,
        op: str,
        method: str,
        handle: Handle,
        url: str,
        *,
        retries: int | None = None,
        urgent: bool = False,
    ) -> Answer:
        """A follow-up request of ``handle`` (``op``: status, result or cancel, to ``url``
        or the documented address) with the retry policy; ``urgent``: its first try may
        pass a closed rate gate, its retries wait."""
        endpoint, request_id = handle.endpoint, handle.request_id
        url = self._follow_up_url(handle, url, "response" if op == "result" else op)
        retries = self.max_retries if retries is None else retries
        attempt = 0
        first_not_found: float | None = None
        while True:
            try:
                answer = await self._send(
                    op,
                    method,
                    url,
                    endpoint=endpoint,
                    request_id=request_id,
                    attempt=attempt,
                    urgent=urgent and attempt == 0,
                )
                if not is_refusal(answer):
                    return answer
                error: Exception = error_from_response(
                    answer, endpoint=endpoint, request_id=request_id
                )
                if answer.status_code in (404, 410) and answer.is_html_page():
                    # a proxy's page (a deploy in front of the gateway): a failed contact,
                    # retried as a 5xx is; never the task's end (docs/decisions.md#retries)
                    error = ServerError(
                        f"a proxy's {answer.status_code} page, not the gateway's answer "
                        f"({answer.describe()})",
                        status_code=answer.status_code,
                        endpoint=endpoint,
                        request_id=request_id,
                    )
            except _NO_ANSWER as exc:
                # Nothing sent: Unreachable; an answer that broke off: the gateway failed.
                kind = Unreachable if _nothing_sent(exc) else ServerError
                error = kind(
                    f"{op} request failed: {redact(failure_words(exc))}",
                    endpoint=endpoint,
                    request_id=request_id,
                )
                error.__cause__ = exc  # a timeout is told from an answer that came (cli)
            if isinstance(error, RequestNotFound):
                now = self._clock()
                if first_not_found is None:
                    first_not_found = now
                if now - first_not_found >= self.not_found_grace:
                    raise error
                await self._sleep(min(1.0, self.not_found_grace - (now - first_not_found)))
                continue
            if not isinstance(error, _TRANSIENT) or attempt >= retries:
                raise error
            if not isinstance(error, RateLimited):
                await self._sleep(backoff_delay(attempt, self.rng))
            attempt += 1

    async def status(self, handle: Handle, *, retries: int | None = None) -> Status:
        answer = await self._call("status", "GET", handle, handle.status_url, retries=retries)
        return _read(answer, handle, Status.from_body)

    async def result(
        self, handle: Handle, *, retries: int | None = None, source: OutputSource | None = None
    ) -> Result | None:
        """The result, or None while the gateway answers 202 (not yet); its outputs read
        through ``source`` (the jobs layer's)."""
        answer = await self.result_or_status(handle, retries=retries, source=source)
        return answer if isinstance(answer, Result) else None

    async def result_or_status(
        self, handle: Handle, *, retries: int | None = None, source: OutputSource | None = None
    ) -> Result | Status | None:
        """The result; or, while the gateway answers 202 (not yet), the status its body
        carries, or None when the body carries none.

        The spec does not show the 202 body. The simulator sends the status body;
        another gateway may send nothing: then None (still "not yet", no status).
        """
        answer = await self._call("result", "GET", handle, handle.response_url, retries=retries)
        body = answer.json()
        word = body.get("status") if isinstance(body, Mapping) else None
        running = isinstance(word, str) and word != "" and not is_terminal(word)
        if answer.status_code == 202 and not (isinstance(word, str) and word):
            return None
        if answer.status_code == 202 or running:
            # a 200 that says the task runs is not its result: docs/decisions.md#records
            return _read(answer, handle, Status.from_body)
        return _read(answer, handle, Result.from_body, source=source, base_url=self.base_url)

    async def cancel(self, handle: Handle, *, urgent: bool = True) -> Mapping[str, Any]:
        """Ask the gateway to cancel; the answer's shape is not shown, so it is kept raw.
        ``urgent``: its first try may pass a closed rate gate (a kept cancel's resend
        passes False and waits as every request: docs/decisions.md#cancel-kept)."""
        answer = await self._call("cancel", "PUT", handle, handle.cancel_url, urgent=urgent)
        body = answer.json()
        return body if isinstance(body, Mapping) else {"status_code": answer.status_code}

    def open_output(self, url: str) -> AbstractAsyncContextManager[httpx.Response]:
        """Stream an output URL: the key goes only to this gateway's own origin, and
        no redirect carries it elsewhere (:mod:`genwidgets.protocol.fetch`)."""
        return open_url_async(self._http, url, trusted_origin=self.base_url)

    async def fetch(self, url: str, max_bytes: int = MAX_READ_BYTES) -> bytes:
        """Download an output whole, by the rule of :meth:`open_output`, within its caps
        and its deadline (:mod:`.body`)."""
        return await fetch_async(
            self._http, url, trusted_origin=self.base_url, grace=self.timeout, max_bytes=max_bytes
        )
