"""The class gateway's connections to its upstream: a small HTTP/1.1 keep-alive pool on
asyncio and h11 (the parser under httpx), for one origin and short JSON answers: an
``httpx.AsyncClient`` took 40 % of the server's CPU on a proxied status request
(docs/decisions.md#serve-figures). Every exchange has one deadline; a connection goes
back to the pool only after a complete answer, never leaving bytes for the next one.
"""

from __future__ import annotations

import asyncio
import os
import ssl
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

import h11
import httpx

from .._config import hide_userinfo
from .._workers import wait_within
from ..errors import UpstreamFault
from ..protocol.body import failure_words

__all__ = ["Answer", "Http1Pool", "UpstreamFault"]

#: the characters a request target keeps as they are (RFC 3986 pchar, ``/`` and ``?``)
_TARGET_SAFE = "/:@!$&'()*+,;=-._~?%"


@dataclass(frozen=True)
class Answer:
    status: int
    headers: list[tuple[bytes, bytes]]
    body: bytes

    def header(self, name: bytes) -> str | None:
        for key, value in self.headers:
            if key == name:
                return value.decode("latin-1")
        return None


class _Connection(asyncio.Protocol):
    """One connection: its HTTP/1.1 state (h11) and its bytes as they arrive, read and
    drained with a deadline."""

    def __init__(self) -> None:
        self.h11 = h11.Connection(h11.CLIENT)
        self.used = False
        self.idle_until = 0.0
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self._chunks: deque[bytes] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self._chunks.append(data)
        self._wake()

    def eof_received(self) -> bool:
        self.closed = True
        self._wake()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._paused = False
        self._wake()

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def _wait(self, deadline: float) -> None:
        loop = asyncio.get_running_loop()
        waiter = self._waiter = loop.create_future()
        timer = loop.call_at(deadline, _expire, waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            self._waiter = None

    async def write(self, data: bytes, deadline: float) -> None:
        assert self.transport is not None
        self.transport.write(data)
        while self._paused and not self.closed:
            await self._wait(deadline)

    async def read(self, deadline: float) -> bytes:
        """The next bytes, or ``b""`` once the connection ended."""
        while not self._chunks:
            if self.closed:
                return b""
            await self._wait(deadline)
        return self._chunks.popleft()

    @property
    def pending(self) -> bool:
        """Bytes arrived while nothing was asked: the connection cannot be reused."""
        return bool(self._chunks)

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


def _expire(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_exception(TimeoutError())


class Http1Pool:
    """Keep-alive connections to the origin of ``base_url`` (its path is a prefix of
    every target): at most ``max_connections`` at once, idle ones kept ``keep_idle``
    seconds (less than servers' usual five) and at most ``max_idle`` of them."""

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float,
        connect_timeout: float,
        max_connections: int = 64,
        max_idle: int = 32,
        keep_idle: float = 4.0,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            shown = hide_userinfo(base_url)
            raise ValueError(f"the upstream gateway's URL must be http(s)://host, not {shown!r}")
        self._tls = ssl_context if parts.scheme == "https" else None
        if parts.scheme == "https" and self._tls is None:
            self._tls = ssl.create_default_context()
        self._host = parts.hostname
        self._port = parts.port or (443 if parts.scheme == "https" else 80)
        self._authority = parts.netloc.rpartition("@")[2]
        self._origin = f"{parts.scheme}://{self._authority}"
        self._prefix = parts.path.rstrip("/")
        self.timeout, self.connect_timeout = timeout, connect_timeout
        self.max_idle, self.keep_idle = max_idle, keep_idle
        self._limit = max_connections
        self._slots: asyncio.Semaphore | None = None
        self._idle: list[_Connection] = []

    async def _take_slot(self, deadline: float) -> asyncio.Semaphore:
        if self._slots is None:
            self._slots = asyncio.Semaphore(self._limit)
        slots = self._slots
        if slots.locked():
            try:
                await wait_within(slots.acquire(), max(0.0, deadline - time.monotonic()))
            except asyncio.TimeoutError:
                raise self._fault(httpx.PoolTimeout, sent=False) from None
        else:
            await slots.acquire()
        return slots

    def _take_idle(self) -> _Connection | None:
        now = time.monotonic()
        while self._idle:
            conn = self._idle.pop()
            if not conn.closed and not conn.pending and now < conn.idle_until:
                return conn
            conn.close()
        return None

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        try:
            _, conn = await wait_within(
                loop.create_connection(
                    _Connection,
                    self._host,
                    self._port,
                    ssl=self._tls,
                    server_hostname=self._host if self._tls else None,
                ),
                self.connect_timeout,
            )
        except asyncio.TimeoutError:
            raise self._fault(httpx.ConnectTimeout, sent=False, unreached=True) from None
        except ssl.SSLError as exc:  # the client says the TLS library's words
            raise self._fault(httpx.ConnectError, str(exc), sent=False, unreached=True) from None
        except OSError as exc:  # the reason beneath it: ``connection refused``
            raise self._fault(httpx.ConnectError, sent=False, unreached=True, cause=exc) from None
        return conn

    def _fault(
        self,
        kind: type[httpx.TransportError],
        detail: str = "",
        *,
        sent: bool,
        unreached: bool = False,
        cause: BaseException | None = None,
    ) -> UpstreamFault:
        """A failure said as the client says httpx's ``kind`` of it, naming this origin
        (``protocol.body.failure_words``, the one home of those words); ``unreached``:
        after "cannot reach the upstream gateway", as the client says "cannot reach the
        gateway"."""
        failed = kind(detail, request=httpx.Request("GET", self._origin))
        failed.__cause__ = cause
        said = failure_words(failed)
        return UpstreamFault(
            f"cannot reach the upstream gateway: {said}" if unreached else said, sent=sent
        )

    async def request(
        self,
        method: str,
        path: str,
        headers: Sequence[tuple[str, str]],
        body: bytes | None,
        *,
        max_body: int,
    ) -> Answer:
        """One exchange. A reused connection that ended before answering a GET is
        replaced once by a new one (the server closed it while idle; a GET changes
        nothing)."""
        fields: list[tuple[str, str]] = [("Host", self._authority), *headers]
        if body is not None:
            fields.append(("Content-Length", str(len(body))))
        target = quote(self._prefix + path, safe=_TARGET_SAFE).encode("ascii")
        for attempt in (1, 2):  # the second time on a new connection: the others may be stale too
            conn = self._take_idle() if attempt == 1 else None
            deadline = time.monotonic() + self.timeout
            slots = await self._take_slot(deadline)
            reusable, sent = False, False
            try:
                if conn is None:
                    conn = await self._connect()
                h = conn.h11
                parts = [h.send(h11.Request(method=method, target=target, headers=fields))]
                if body:
                    parts.append(h.send(h11.Data(data=body)))
                parts.append(h.send(h11.EndOfMessage()))
                data = b"".join(part for part in parts if part)
                sent = True
                await conn.write(data, deadline)
                answer = await self._receive(conn, deadline, max_body)
                conn.used = True
                if h.our_state is h11.DONE and h.their_state is h11.DONE:
                    h.start_next_cycle()
                    reusable = True
                return answer
            except _StaleConnection:
                if method != "GET" or attempt == 2:
                    raise self._fault(httpx.RemoteProtocolError, _CLOSED, sent=True) from None
            except _TooLarge:
                raise UpstreamFault(
                    f"upstream's answer was over {_size(max_body)}", sent=True
                ) from None
            except TimeoutError:
                raise self._fault(httpx.ReadTimeout, sent=sent) from None
            except (h11.LocalProtocolError, UnicodeEncodeError):
                # never its text: h11 quotes the whole refused value (the key's header)
                raise UpstreamFault(
                    "a header of the request could not be sent (a character no header may carry)",
                    sent=False,
                ) from None
            except h11.RemoteProtocolError as exc:  # h11's words: what was malformed
                raise self._fault(httpx.RemoteProtocolError, str(exc), sent=sent) from None
            except OSError as exc:
                reason = os.strerror(exc.errno).lower() if exc.errno else ""
                raise self._fault(httpx.ReadError, reason, sent=sent) from None
            finally:
                slots.release()
                if conn is not None:
                    if reusable and not conn.closed and len(self._idle) < self.max_idle:
                        conn.idle_until = time.monotonic() + self.keep_idle
                        self._idle.append(conn)
                    else:
                        conn.close()
        raise AssertionError("unreachable")

    async def _receive(self, conn: _Connection, deadline: float, max_body: int) -> Answer:
        h, status, headers = conn.h11, 0, []
        chunks, size, heard = [], 0, False
        while True:
            event = h.next_event()
            if event is h11.NEED_DATA:
                data = await conn.read(deadline)
                if not data and not heard and conn.used:
                    raise _StaleConnection
                heard = heard or bool(data)
                h.receive_data(data)
            elif isinstance(event, h11.Response):
                status, headers = event.status_code, list(event.headers)
            elif isinstance(event, h11.Data):
                size += len(event.data)
                if size > max_body:
                    raise _TooLarge
                chunks.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                return Answer(status, headers, b"".join(chunks))
            elif isinstance(event, h11.ConnectionClosed):
                raise h11.RemoteProtocolError("the connection closed before the answer ended")
            # an InformationalResponse (100 Continue) is passed over

    async def close(self) -> None:
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


def _size(count: int) -> str:
    """A byte count as said to a student: ``8 MB`` when whole megabytes."""
    return f"{count >> 20} MB" if count and not count % (1 << 20) else f"{count} bytes"


#: httpx's words for a connection closed before any byte of the answer
_CLOSED = "Server disconnected without sending a response."


class _TooLarge(Exception):
    """An answer longer than the cap: its connection is not kept."""


class _StaleConnection(Exception):
    """A reused connection ended before a byte of the answer came."""
