"""Cookies set by the gateway go back to the gateway's origin only (issue 22 point 8):
never to storage on another port of the same host, directly or through a redirect."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from loopback import LoopbackServer, QuietHandler

from genwidgets.jobs.downloads import download_outputs, download_outputs_async
from genwidgets.protocol.http import Gateway
from genwidgets.protocol.records import Result

pytestmark = pytest.mark.timeout(60)


class Server:
    """A loopback server that sets a session cookie on every answer and records the
    Cookie header of every request; ``/moved/<name>`` redirects to ``redirect_to``."""

    def __init__(self, name: str, redirect_to: str | None = None) -> None:
        self.cookies: list[tuple[str, str | None]] = []
        cookies, target = self.cookies, redirect_to

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                cookies.append((self.path, self.headers.get("Cookie")))
                moved = target is not None and self.path.startswith("/moved/")
                body = b"" if moved else b"DATA"
                self.send_response(302 if moved else 200)
                self.send_header("Set-Cookie", f"{name}=secret-{name}; Path=/")
                if moved:
                    self.send_header("Location", f"{target}/{self.path.split('/')[-1]}")
                else:
                    self.send_header("Content-Type", "image/png")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.loop = LoopbackServer(Handler)
        self.base = self.loop.base

    def close(self) -> None:
        self.loop.close()


@pytest.fixture
def servers() -> Iterator[tuple[Server, Server]]:
    storage = Server("storage")
    gateway = Server("gw", redirect_to=storage.base)
    try:
        yield gateway, storage
    finally:
        gateway.close()
        storage.close()


def test_a_gateway_cookie_never_reaches_another_origin(
    servers: tuple[Server, Server], tmp_path: Path
) -> None:
    gateway_server, storage = servers

    async def scenario() -> None:
        gateway = Gateway(gateway_server.base, "sk-cookie-test")
        try:
            await gateway.fetch(f"{gateway_server.base}/first.png")  # the cookie is set
            await gateway.fetch(f"{gateway_server.base}/second.png")  # and goes back home
            result = Result.from_body(
                {
                    "request_id": "r1",
                    "outputs": [
                        {"url": f"{gateway_server.base}/moved/a.png", "content_type": "image/png"},
                        {"url": f"{storage.base}/b.png", "content_type": "image/png"},
                    ],
                }
            )
            await download_outputs_async(result, opener=gateway.open_output, root=tmp_path)
        finally:
            await gateway.aclose()

    asyncio.run(scenario())
    assert gateway_server.cookies[1] == ("/second.png", "gw=secret-gw")  # the jar works
    assert [path for path, _ in storage.cookies] == ["/a.png", "/b.png"]
    assert all(cookie is None for _, cookie in storage.cookies), storage.cookies


def test_the_blocking_download_sends_no_cookie_across_a_redirect(
    servers: tuple[Server, Server], tmp_path: Path
) -> None:
    gateway_server, storage = servers
    result = Result.from_body(
        {
            "request_id": "r2",
            "outputs": [{"url": f"{gateway_server.base}/moved/c.png", "content_type": "image/png"}],
        }
    )
    assert [p.read_bytes() for p in download_outputs(result, root=tmp_path)] == [b"DATA"]
    assert storage.cookies == [("/c.png", None)]


def test_a_cookie_set_by_another_origin_on_a_redirect_never_reaches_the_gateway(
    servers: tuple[Server, Server], tmp_path: Path
) -> None:
    """Issue 29 point 8: storage on another port of the same host sets a cookie while
    answering a redirected output; the gateway's next request (with the key) must
    not carry it (a cookie jar matches hosts, not ports)."""
    gateway_server, storage = servers

    async def scenario() -> None:
        gateway = Gateway(gateway_server.base, "sk-cookie-test")
        try:
            await gateway.fetch(f"{gateway_server.base}/moved/a.png")  # -> storage, cookie set
            await gateway.fetch(f"{gateway_server.base}/after.png")
        finally:
            await gateway.aclose()

    asyncio.run(scenario())
    assert [path for path, _ in storage.cookies] == ["/a.png"]  # the redirect was followed
    sent_home = dict(gateway_server.cookies)
    assert "storage=" not in (sent_home["/after.png"] or ""), sent_home
    assert sent_home["/after.png"] == "gw=secret-gw"  # the gateway's own cookie still goes home
