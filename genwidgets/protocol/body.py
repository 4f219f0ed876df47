"""Reading a gateway's bytes: capped while read, inflated within bounds, on a deadline.

Every answer of the gateway and every output read or downloaded passes through here, so
one set of rules holds for all: caps counted chunk by chunk (on the wire and inflated),
``gzip`` and ``deflate`` inflated :data:`CHUNK` bytes at a time (bombs refused, other
encodings too), a total deadline that grows with the bytes moved, JSON no deeper than
:data:`MAX_DEPTH` and redacted before any record sees it. The rules, their numbers and why
they are kept by hand: docs/decisions.md#reading-answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import time
import zlib
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx

from .._config import redact
from .._formats import json_nested_deeper
from ..catalog.validation import MAX_DEPTH  # the one limit, for payloads sent and bytes read

__all__ = [
    "ACCEPT_ENCODING",
    "CHUNK",
    "MAX_ANSWER_BYTES",
    "MAX_DEPTH",
    "MAX_RATIO",
    "MIN_RATE",
    "RATIO_FLOOR",
    "Answer",
    "Deadline",
    "Stopwatch",
    "Watch",
    "aiter_capped",
    "failure_words",
    "gathered",
    "iter_capped",
    "outlasted",
    "read_answer",
    "read_capped",
    "redact_json",
    "within",
]

#: Bytes inflated (and handed on) at a time.
CHUNK = 64 * 1024
#: The slowest transfer a deadline allows once its grace is spent: 32 KiB/s.
MIN_RATE = 32 * 1024
#: The largest answer of the four operations that is read (a misbehaving proxy, a wrong URL).
MAX_ANSWER_BYTES = 8 * 2**20
#: An encoded body may inflate at most this many times its wire size...
MAX_RATIO = 200
#: ...once it is past this size (a small, very compressible JSON is fine).
RATIO_FLOOR = 2 * 2**20
#: What the client asks for: the encodings it inflates itself, within bounds.
ACCEPT_ENCODING = "gzip, deflate"
_MAX_STAGES = 2


class _BodyRefused(httpx.TransportError):
    """An answer not read whole: over a cap, a compression bomb, an encoding the
    client does not read, or slower than its deadline. A transport error, so a create
    that meets it is "outcome unknown" and a poll that meets it is a server error."""


class _TooSlow(_BodyRefused):
    """The exchange outlasted its total deadline (see :class:`Deadline`)."""


def outlasted(exc: BaseException) -> bool:
    """Whether ``exc`` is an exchange that outlasted its deadline (:class:`_TooSlow`)."""
    return isinstance(exc, _TooSlow)


#: httpx's words for a connect that failed on every address: the reason is the OSError
#: beneath it (``connection refused``), said instead
_ALL_FAILED = "All connection attempts failed"


def _with(exc: httpx.HTTPError) -> str:
    """``HOST:PORT`` of the exchange that failed ("" when httpx did not say which)."""
    try:
        url = exc.request.url
    except RuntimeError:  # raised with no request (a transport's own test)
        return ""
    port = url.port or {"http": 80, "https": 443}.get(url.scheme)
    host = f"[{url.host}]" if ":" in url.host else url.host
    return f"{host}:{port}" if port else host


def _os_reason(exc: BaseException) -> str:
    """The reason of the innermost OSError beneath ``exc`` (``connection refused``,
    ``name or service not known``), or "": httpx keeps it as a cause or context."""
    reason, seen = "", 0
    cause: BaseException | None = exc
    while cause is not None and seen < 10:  # bounded: a chain may loop
        if isinstance(cause, OSError) and isinstance(cause.errno, int):
            # asyncio's strerror is its own sentence ("Connect call failed (...)"): the
            # system's words for the number; a resolver's (negative) numbers its own
            reason = os.strerror(cause.errno) if cause.errno > 0 else cause.strerror or ""
            reason = reason.lower()
        cause, seen = cause.__cause__ or cause.__context__, seen + 1
    return reason


def failure_words(exc: BaseException) -> str:
    """A failed exchange in words, the one place they are made (the Python API's texts
    and the command line say these): ``could not connect to 127.0.0.1:9 (connection
    refused)``, ``no answer in time from HOST:PORT``, never httpx's class name, which
    ``__cause__`` keeps for code that wants it. An answer refused here (over a cap, past
    its deadline) by its own words. docs/decisions.md#batch-cli."""
    if isinstance(exc, _BodyRefused) and str(exc):
        return str(exc)
    if not isinstance(exc, httpx.HTTPError) or not type(exc).__module__.startswith("httpx"):
        return f"{type(exc).__name__}: {str(exc) or 'no detail'}"  # ours (InternalAddress)
    where = _with(exc)
    detail = str(exc) if str(exc) != _ALL_FAILED else ""
    said = f" ({detail})" if detail else ""
    if isinstance(exc, httpx.ConnectTimeout):
        return f"could not connect to {where or 'the gateway'} (no answer in time)"
    if isinstance(exc, httpx.ConnectError):
        reason = (_os_reason(exc) if not detail else "") or detail
        return f"could not connect to {where or 'the gateway'}" + (f" ({reason})" if reason else "")
    from_, to, with_ = (f" {word} {where}" if where else "" for word in ("from", "to", "with"))
    if isinstance(exc, httpx.ReadTimeout):
        return f"no answer in time{from_}"
    if isinstance(exc, httpx.WriteTimeout):
        return f"the request could not be sent in time{to}"
    if isinstance(exc, httpx.PoolTimeout):
        return f"no connection free in time{to}"
    if isinstance(exc, httpx.RemoteProtocolError):
        return f"the answer{from_} broke off{said}"
    if isinstance(exc, (httpx.ReadError, httpx.WriteError)):
        return f"the connection{to} broke{said}"
    return f"the exchange{with_} failed ({detail or 'no detail'})"


@dataclass(frozen=True)
class Deadline:
    """How long one exchange may take: ``grace`` seconds, plus one second for every
    ``min_rate`` bytes sent (``sent``) or received so far. ``said``: the seconds its
    words give, when ``grace`` is what was left of a longer one (a download's later
    try): alike failures say alike words, never a time left to the microsecond."""

    grace: float
    sent: int = 0
    min_rate: float = MIN_RATE
    said: float | None = None

    def allowed(self, received: int) -> float:
        return self.grace + (self.sent + received) / self.min_rate

    def __str__(self) -> str:
        grace = self.grace if self.said is None else self.said
        return f"{grace:g} s, plus 1 s per {self.min_rate / 1024:g} KiB sent or received"


class Stopwatch:
    """A deadline for a blocking read, checked as each hop's answer and each chunk
    arrive (no loop to cancel it): one wait lasts at most the client's timeouts, so the
    exchange ends within its deadline plus one hop's (docs/decisions.md#reading-answers)."""

    def __init__(self, deadline: Deadline, clock: Callable[[], float] = time.monotonic) -> None:
        self.deadline = deadline
        self._clock = clock
        self._start = clock()

    def due(self, received: int) -> float:
        """When the exchange must have ended, ``received`` bytes in (on its clock)."""
        return self._start + self.deadline.allowed(received)

    def progress(self, received: int) -> None:
        if self._clock() > self.due(received):
            raise _TooSlow(f"no whole answer within the deadline ({self.deadline})")


class Watch(Stopwatch):
    """A running deadline on the current task: :meth:`progress` moves it as bytes
    arrive; past it, the task is cancelled (and :func:`within` says why)."""

    def __init__(self, deadline: Deadline) -> None:
        self.expired = False
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.current_task()
        self._timer: asyncio.TimerHandle | None = None
        super().__init__(deadline, self._loop.time)
        self.progress(0)

    def progress(self, received: int) -> None:
        if self.expired or self._task is None:
            return
        self.stop()
        self._timer = self._loop.call_at(self.due(received), self._expire)

    def _expire(self) -> None:
        self.expired = True
        if self._task is not None:
            self._task.cancel()

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()


@contextlib.asynccontextmanager
async def within(deadline: Deadline) -> AsyncIterator[Watch]:
    """Run the body (sending, redirects, reading) within ``deadline``; past it, the
    body is cancelled and :class:`_TooSlow` raised. (``asyncio.timeout`` would do,
    but Python 3.10 has none.)"""
    task = asyncio.current_task()
    cancelling = getattr(task, "cancelling", lambda: 0)()  # Python 3.11+: cancels pending
    watch = Watch(deadline)
    try:
        yield watch
    except asyncio.CancelledError:
        if not watch.expired:
            raise
        uncancel = getattr(task, "uncancel", None)
        if uncancel is not None and uncancel() > cancelling:
            raise  # cancelled from outside as well: that cancel goes on
        raise _TooSlow(f"no whole answer within the deadline ({deadline})") from None
    finally:
        watch.stop()


class _Inflater:
    """One ``gzip``/``deflate`` stage, giving at most :data:`CHUNK` bytes per step."""

    def __init__(self, encoding: str) -> None:
        self.encoding = encoding
        self._raw_deflate = False
        self._inflate = zlib.decompressobj(zlib.MAX_WBITS | 16 if "gzip" in encoding else 15)
        self._started = False

    def feed(self, data: bytes) -> Iterator[bytes]:
        pending = data
        while True:
            try:
                out = self._inflate.decompress(pending, CHUNK)
            except zlib.error as exc:
                if self.encoding == "deflate" and not self._started and not self._raw_deflate:
                    # "deflate" is often sent raw (no zlib header): try that once
                    self._raw_deflate, self._inflate = True, zlib.decompressobj(-zlib.MAX_WBITS)
                    continue
                raise _BodyRefused(
                    f"a {self.encoding} body that does not inflate ({exc})"
                ) from None
            self._started = True
            pending = self._inflate.unconsumed_tail
            if out:
                yield out
            if not pending and len(out) < CHUNK:
                return


def _stages(headers: httpx.Headers) -> list[_Inflater]:
    words = [w.strip().lower() for w in headers.get("content-encoding", "").split(",") if w.strip()]
    words = [w for w in words if w != "identity"]
    unknown = [w for w in words if w not in ("gzip", "x-gzip", "deflate")]
    if unknown:
        raise _BodyRefused(
            f"the answer is encoded with {', '.join(unknown)}, which the client does not "
            "read (it reads gzip, deflate and identity)"
        )
    if len(words) > _MAX_STAGES:
        raise _BodyRefused(f"the answer is encoded {len(words)} times over ({', '.join(words)})")
    return [_Inflater(w) for w in reversed(words)]


def _through(stages: list[_Inflater], data: bytes) -> Iterator[bytes]:
    if not stages:
        if data:
            yield data
        return
    first, rest = stages[0], stages[1:]
    for piece in first.feed(data):
        yield from _through(rest, piece)


def _declared(headers: httpx.Headers) -> int | None:
    raw = headers.get("content-length", "").strip()
    return int(raw) if raw.isdigit() and len(raw) < 20 else None


def _too_large(size: int, max_bytes: int, what: str) -> _BodyRefused:
    return _BodyRefused(f"the answer is larger than {max_bytes:,} bytes ({what} {size:,})")


class _Capped:
    """The caps of one streamed body, counted as its raw chunks arrive (a blocking
    and an async read share them; only the iteration differs)."""

    def __init__(self, response: httpx.Response, max_bytes: int, watch: Stopwatch | None) -> None:
        declared = _declared(response.headers)
        if declared is not None and declared > max_bytes:
            raise _too_large(declared, max_bytes, "Content-Length")
        self.max_bytes, self.watch = max_bytes, watch
        self.wire = self.inflated = 0
        self.read_already: list[bytes] | None = None
        self.stages: list[_Inflater] = []
        if response.is_stream_consumed:  # read (and inflated) already: a transport in memory
            content = response.content
            if len(content) > max_bytes:
                raise _too_large(len(content), max_bytes, "received")
            self.read_already = [content[i : i + CHUNK] for i in range(0, len(content), CHUNK)]
        else:
            self.stages = _stages(response.headers)

    def feed(self, raw: bytes) -> Iterator[bytes]:
        self.wire += len(raw)
        if self.watch is not None:
            self.watch.progress(self.wire)
        if self.wire > self.max_bytes:
            raise _too_large(self.wire, self.max_bytes, "received at least")
        for piece in _through(self.stages, raw):
            self.inflated += len(piece)
            if self.inflated > self.max_bytes:
                raise _too_large(self.inflated, self.max_bytes, "inflated to at least")
            if (
                self.stages
                and self.inflated > RATIO_FLOOR
                and self.inflated > MAX_RATIO * self.wire
            ):
                raise _BodyRefused(
                    f"the answer inflates more than {MAX_RATIO}-fold ({self.wire:,} bytes "
                    f"received, {self.inflated:,} inflated): a compression bomb"
                )
            yield piece


async def aiter_capped(
    response: httpx.Response, max_bytes: int, watch: Watch | None = None
) -> AsyncIterator[bytes]:
    """The body of a streamed ``response``, inflated, in pieces of at most
    :data:`CHUNK` bytes; :class:`_BodyRefused` the moment a cap is passed."""
    capped = _Capped(response, max_bytes, watch)
    for piece in capped.read_already or ():
        yield piece
    if capped.read_already is None:
        async for raw in response.aiter_raw():
            for piece in capped.feed(raw):
                yield piece


def iter_capped(response: httpx.Response, max_bytes: int, watch: Stopwatch) -> Iterator[bytes]:
    """:func:`aiter_capped` for a blocking read (``httpx.Client``)."""
    capped = _Capped(response, max_bytes, watch)
    yield from capped.read_already or ()
    if capped.read_already is None:
        for raw in response.iter_raw():
            yield from capped.feed(raw)


async def read_capped(
    response: httpx.Response, max_bytes: int, watch: Watch | None = None
) -> bytes:
    """The whole body of a streamed ``response`` (see :func:`aiter_capped`), gathered
    as :func:`gathered` does."""
    buffer = io.BytesIO()
    async for piece in aiter_capped(response, max_bytes, watch):
        buffer.write(piece)
    return buffer.getvalue()


def gathered(pieces: Iterable[bytes]) -> bytes:
    """``pieces`` in one buffer, handed over uncopied (``BytesIO.getvalue``): a body read
    whole is held once, where the pieces kept and then joined held it twice."""
    buffer = io.BytesIO()
    for piece in pieces:
        buffer.write(piece)
    return buffer.getvalue()


def _text(value: str) -> str:
    """``value`` redacted and made Unicode: a lone surrogate (``"\\ud800"`` is valid
    JSON) is kept as its escape, so no ledger write, file or terminal fails on it
    (docs/decisions.md#inline-content)."""
    try:
        value.encode()
    except UnicodeEncodeError:
        value = value.encode("utf-8", "backslashreplace").decode()
    return redact(value)


def redact_json(value: Any, depth: int = 1) -> Any:
    """``value`` (parsed JSON) with every string, keys included, redacted and made
    Unicode (:func:`_text`); a ``RecursionError`` (as the parser's own) for a list or
    object nested deeper than :data:`MAX_DEPTH`."""
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, dict | list) and depth > MAX_DEPTH:
        raise RecursionError(f"nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, dict):
        return {_text(k): redact_json(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_json(v, depth + 1) for v in value]
    return value


@dataclass
class Answer:
    """A gateway's answer, read within its caps: the one thing records and errors
    are made from. ``refused`` says why the body was not read (``content`` is then
    empty); the status line and headers are always there."""

    status_code: int
    headers: httpx.Headers
    reason_phrase: str = ""
    url: httpx.URL | None = None
    content: bytes = b""
    refused: str | None = None
    #: the method of the request this answers: a create's POST that a 301/302/303 turned
    #: into a GET is answered by that GET (``Gateway.create`` reads it)
    method: str | None = None
    _parsed: list[Any] = field(default_factory=list, repr=False)

    @classmethod
    def of(cls, response: httpx.Response, max_bytes: int = MAX_ANSWER_BYTES) -> Answer:
        """The answer of a response already read whole (one built by hand, a test's)."""
        try:
            url: httpx.URL | None = response.request.url
            method: str | None = response.request.method
        except RuntimeError:  # a Response built by hand has no request
            url, method = None, None
        content, refused = response.content, None
        if len(content) > max_bytes:
            content, refused = b"", str(_too_large(len(content), max_bytes, "received"))
        return cls(response.status_code, response.headers, response.reason_phrase, url, content,
                   refused, method)  # fmt: skip

    def json(self) -> Any:
        """The body as JSON (depth-checked, redacted), or None when it is not readable."""
        if not self._parsed:
            self._parsed.append(self._read_json())
        return self._parsed[0]

    def _read_json(self) -> Any:
        if self.refused is not None or not self.content:
            return None
        if json_nested_deeper(self.content, MAX_DEPTH):  # never handed to the parser
            self.refused = f"JSON nested deeper than {MAX_DEPTH} levels"
            return None
        try:
            return redact_json(json.loads(self.content))
        except (ValueError, UnicodeDecodeError):
            return None
        except RecursionError:  # deeper than MAX_DEPTH (or than the parser goes)
            self.refused = f"JSON nested deeper than {MAX_DEPTH} levels"
            return None

    def describe(self) -> str:
        """What the body was, for a message: ``a JSON list, 12 bytes``, ``an HTML page,
        ...``, ``the text 'Request not found', 17 bytes``, ``not JSON, ...``, or why it
        was refused."""
        parsed = self.json()  # a body nested too deep says so in ``refused``
        if self.refused is not None:
            return self.refused
        size = f"{len(self.content):,} bytes"
        if parsed is not None or self.content.strip() == b"null":
            kinds: dict[type, str] = {
                dict: "a JSON object",
                list: "a JSON list",
                str: "a JSON string",
            }
            return f"{kinds.get(type(parsed), 'JSON ' + json.dumps(parsed)[:20])}, {size}"
        if self.is_html_page():
            return f"an HTML page, {size}"
        said = self.plain_text()
        return f"the text {said!r}, {size}" if said else f"not JSON, {size}"

    def is_html_page(self) -> bool:
        """Whether the body is an HTML page (a proxy's or a web server's, never the
        gateway's own answer, which is JSON or a line of text)."""
        return self.content[:64].lstrip().lower().startswith((b"<!doctype", b"<html"))

    def plain_text(self, limit: int = 120) -> str | None:
        """The body when it is a short line of readable UTF-8 text (a gateway's plain
        ``Request not found``), redacted; None for anything else."""
        if not self.content or len(self.content) > limit * 4:
            return None
        try:
            text = self.content.decode("utf-8").strip()
        except UnicodeDecodeError:
            return None
        if not text or len(text) > limit or not text.isprintable() or text.startswith("<"):
            return None  # markup is a page, described as one
        return redact(text)


async def read_answer(
    response: httpx.Response, max_bytes: int = MAX_ANSWER_BYTES, watch: Watch | None = None
) -> Answer:
    """Read a streamed ``response`` into an :class:`Answer`. A body over a cap or
    undecodable is an answer with ``refused`` set (its status still counts); only a
    transport failure or the deadline (:class:`_TooSlow`) raises."""
    answer = Answer(
        response.status_code,
        response.headers,
        response.reason_phrase,
        response.request.url,
        method=response.request.method,
    )
    try:
        answer.content = await read_capped(response, max_bytes, watch)
    except _TooSlow:
        raise
    except _BodyRefused as exc:
        answer.refused = str(exc)
    return answer
