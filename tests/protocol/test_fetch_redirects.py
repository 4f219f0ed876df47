"""httpx follows redirects; the clients' hooks keep our rule on every hop it follows
(docs/decisions.md#fetch-redirects): every header the gateway client was given stays at
its origin (httpx alone would keep ``Authorization`` on an http -> https hop and every
other header everywhere), a redirect's body is never read (httpx alone reads it whole,
with no cap), and a loop of redirects ends in a clear error."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from loopback import LoopbackServer, QuietHandler

from genwidgets.errors import GatewayError
from genwidgets.protocol.fetch import MAX_REDIRECTS, fetch_url
from genwidgets.protocol.http import Gateway
from genwidgets.protocol.records import Handle

KEY = "sk-live-HOPS-0042"
pytestmark = pytest.mark.timeout(60)


class Endless(httpx.AsyncByteStream):
    """A body of ``size`` bytes that counts what was pulled of it."""

    def __init__(self, size: int = 32 * 2**20) -> None:
        self.size, self.pulled = size, 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while self.pulled < self.size:
            self.pulled += 65536
            yield bytes(65536)


def test_every_header_the_gateway_is_given_stays_at_its_origin_on_every_hop() -> None:
    seen: list[tuple[str, str | None, str | None]] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append((str(request.url), request.headers.get("authorization"),
                     request.headers.get("x-team-token")))  # fmt: skip
        if request.url.scheme == "http":  # the gateway sends its outputs to https
            return httpx.Response(
                301, headers={"location": str(request.url.copy_with(scheme="https"))}
            )
        return httpx.Response(200, content=b"png")

    async def scenario() -> None:
        gateway = Gateway("http://gw.test", KEY, headers={"X-Team-Token": "team-7"},
                          transport=httpx.MockTransport(handle))  # fmt: skip
        try:
            assert await gateway.fetch("http://gw.test/files/a.png") == b"png"
        finally:
            await gateway.aclose()

    asyncio.run(scenario())
    assert seen == [
        ("http://gw.test/files/a.png", f"Bearer {KEY}", "team-7"),
        ("https://gw.test/files/a.png", None, None),  # another scheme: another origin
    ]


def test_a_redirects_body_is_never_read() -> None:
    bodies: list[Endless] = []
    base = "https://gateway.test"

    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith(("/moved.png", "/status")):
            bodies.append(Endless())
            target = str(request.url).replace("moved.png", "o.png").replace("status", "now")
            return httpx.Response(302, headers={"location": target}, stream=bodies[-1])
        if request.url.path.endswith("/now"):
            return httpx.Response(200, json={"request_id": "r", "status": "IN_PROGRESS"})
        return httpx.Response(200, content=b"png")

    async def scenario() -> str:
        gateway = Gateway(base, KEY, transport=httpx.MockTransport(handle))
        try:
            assert await gateway.fetch(f"{base}/files/moved.png") == b"png"
            status = await gateway.status(Handle.from_body("ep", {"request_id": "r"}, base))
            return status.status
        finally:
            await gateway.aclose()

    assert asyncio.run(scenario()) == "IN_PROGRESS"
    assert len(bodies) == 2 and [body.pulled for body in bodies] == [0, 0]


def test_a_queue_request_redirected_in_a_loop_ends_in_a_gateway_error() -> None:
    base = "https://gateway.test"
    hops: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        hops.append(request.url.path)
        return httpx.Response(307, headers={"location": f"{request.url.path}/again"})

    async def scenario() -> None:
        gateway = Gateway(base, KEY, transport=httpx.MockTransport(handle), max_retries=0)
        try:
            await gateway.status(Handle.from_body("ep", {"request_id": "r"}, base))
        finally:
            await gateway.aclose()

    with pytest.raises(GatewayError, match=f"redirected more than {MAX_REDIRECTS} times"):
        asyncio.run(scenario())
    assert len(hops) == MAX_REDIRECTS + 1


@pytest.fixture
def moving() -> Iterator[str]:
    """``/moved`` answers a redirect whose body announces 100 MB and never comes."""
    release = threading.Event()

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            moved = self.path == "/moved"
            body = b"DATA"
            self.send_response(302 if moved else 200)
            self.send_header("Content-Length", str(10**8 if moved else len(body)))
            if moved:
                self.send_header("Location", "/file")
            self.end_headers()
            self.wfile.write(b"x" * 10 if moved else body)
            self.wfile.flush()
            if moved:
                release.wait(30)
                self.close_connection = True

    server = LoopbackServer(Handler)
    try:
        yield server.base
    finally:
        release.set()
        server.close()


def test_the_blocking_fetch_never_reads_a_redirects_body(moving: str) -> None:
    """Were the redirect's body read, the fetch would wait for its 100 MB until the
    read timeout, and fail."""
    assert fetch_url(f"{moving}/moved", timeout=5) == b"DATA"


@pytest.fixture
def slow_hops() -> Iterator[tuple[str, list[str]]]:
    """Each ``/hop/<n>`` answers after 0.6 s with a redirect to the next, up to 10."""
    seen: list[str] = []

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            hop = int(self.path.rsplit("/", 1)[-1])
            threading.Event().wait(0.6)  # the server is slow, each read well within its timeout
            self.send_response(302 if hop < MAX_REDIRECTS else 200)
            self.send_header("Location", f"/hop/{hop + 1}")
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = LoopbackServer(Handler)
    try:
        yield server.base, seen
    finally:
        server.close()


@pytest.mark.slow
def test_the_blocking_fetch_checks_its_deadline_on_every_hop(
    slow_hops: tuple[str, list[str]],
) -> None:
    """Every hop arrives within the read timeout; the whole chain would not: it ends
    at the first hop past the deadline, not after all ten. (Each hop takes a third of
    the read timeout, so a busy machine's lag never turns a hop into a read timeout.)"""
    base, seen = slow_hops
    with pytest.raises(httpx.TransportError, match="within the deadline"):
        fetch_url(f"{base}/hop/0", timeout=2.0)
    assert 3 <= len(seen) <= 6, seen
