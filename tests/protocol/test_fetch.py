"""The one rule for fetching outputs, on real sockets: the key goes to the gateway's
own origin only, and a redirect to another origin (another loopback port) never
carries it. Every path that reads an output is checked: Gateway.fetch, the
recorder's download, the blocking download and Output.read."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from loopback import LoopbackServer, QuietHandler

from genwidgets.jobs.downloads import download_outputs, download_outputs_async
from genwidgets.protocol.fetch import same_origin
from genwidgets.protocol.http import Gateway
from genwidgets.protocol.records import Output, Result

KEY = "sk-live-REDIRECT-4711"
pytestmark = pytest.mark.timeout(60)


class Server:
    """A loopback HTTP server that records the headers of every request."""

    def __init__(self, redirect_to: str | None = None) -> None:
        self.seen: list[tuple[str, str | None, str | None]] = []
        seen, target = self.seen, redirect_to

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                seen.append(
                    (self.path, self.headers.get("Authorization"), self.headers.get("X-Api-Key"))
                )
                if target is not None and self.path.startswith("/moved/"):
                    self.send_response(302)
                    self.send_header("Location", f"{target}/{self.path.split('/')[-1]}")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = b"PNGDATA"
                self.send_response(200)
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
    storage = Server()
    gateway = Server(redirect_to=storage.base)
    try:
        yield gateway, storage
    finally:
        gateway.close()
        storage.close()


def test_same_origin_compares_scheme_host_and_port() -> None:
    assert same_origin("https://g.test/files/a", "https://g.test")
    assert same_origin("https://G.test:443/x", "https://g.test/")
    assert not same_origin("http://g.test/x", "https://g.test")
    assert not same_origin("https://g.test:8443/x", "https://g.test")
    assert not same_origin("http://127.0.0.1:2/x", "http://127.0.0.1:1")
    assert not same_origin("https://g.test/x", None)


def test_a_redirect_to_another_port_never_carries_the_key(
    servers: tuple[Server, Server], tmp_path: Path
) -> None:
    gateway_server, storage = servers

    async def scenario() -> tuple[bytes, list[Path]]:
        gateway = Gateway(gateway_server.base, KEY, headers={"X-Api-Key": KEY})
        try:
            data = await gateway.fetch(f"{gateway_server.base}/moved/a.png")
            result = Result.from_body(
                {
                    "request_id": "r1",
                    "outputs": [
                        {"url": f"{gateway_server.base}/moved/b.png", "content_type": "image/png"},
                        {"url": f"{storage.base}/c.png", "content_type": "image/png"},
                    ],
                }
            )
            paths = await download_outputs_async(
                result, opener=gateway.open_output, root=tmp_path
            )
            return data, paths
        finally:
            await gateway.aclose()

    data, paths = asyncio.run(scenario())
    assert data == b"PNGDATA" and [p.read_bytes() for p in paths] == [b"PNGDATA"] * 2
    # the gateway's own origin got the key; the other port never did
    assert gateway_server.seen == [
        ("/moved/a.png", f"Bearer {KEY}", KEY),
        ("/moved/b.png", f"Bearer {KEY}", KEY),
    ]
    assert storage.seen == [("/a.png", None, None), ("/b.png", None, None), ("/c.png", None, None)]


def test_the_blocking_paths_send_no_credential_anywhere(
    servers: tuple[Server, Server], tmp_path: Path
) -> None:
    gateway_server, storage = servers
    result = Result.from_body(
        {
            "request_id": "r2",
            "outputs": [{"url": f"{gateway_server.base}/moved/d.png", "content_type": "image/png"}],
        }
    )
    assert [p.read_bytes() for p in download_outputs(result, root=tmp_path)] == [b"PNGDATA"]
    assert Output.from_entry(f"{gateway_server.base}/moved/e.png").read() == b"PNGDATA"
    assert all(auth is None and key is None for _, auth, key in gateway_server.seen)
    assert [path for path, _, _ in storage.seen] == ["/d.png", "/e.png"]


def test_a_request_searches_for_no_module(simulator: object) -> None:
    """httpcore asks sniffio which async library runs, several times a request; were
    sniffio missing, each ask would be an import that fails after searching sys.path,
    a third of a request's CPU (docs/decisions.md#sniffio)."""
    import importlib.abc
    import sys

    from genwidgets.protocol.fetch import http_client

    searched: list[str] = []

    class Spy(importlib.abc.MetaPathFinder):
        def find_spec(self, name: str, path: object = None, target: object = None) -> None:
            searched.append(name)

    base = simulator.base_url  # type: ignore[attr-defined]

    async def requests(spy: Spy | None) -> None:
        async with http_client() as http:
            await http.get(f"{base}/v1/queue/imgG-flash-1/nothing/status")  # imports done
            if spy is not None:
                sys.meta_path.insert(0, spy)
            try:
                for _ in range(3):
                    await http.get(f"{base}/v1/queue/imgG-flash-1/nothing/status")
            finally:
                if spy is not None:
                    sys.meta_path.remove(spy)

    asyncio.run(requests(None))  # a first client's lazy imports happen here
    asyncio.run(requests(Spy()))
    assert searched == [], f"each request searched sys.path for {sorted(set(searched))}"


def test_a_blocking_fetch_starts_no_thread_of_its_own(
    servers: tuple[Server, Server], monkeypatch: pytest.MonkeyPatch
) -> None:
    """It reads on the caller's thread with an ``httpx.Client``: no thread and no event
    loop of its own (only the loopback servers start threads, one a connection)."""
    import threading

    gateway_server, _ = servers
    started: list[str] = []
    start = threading.Thread.start

    def recorded(thread: threading.Thread) -> None:
        started.append(thread.name)
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", recorded)
    assert Output.from_entry(f"{gateway_server.base}/moved/f.png").read() == b"PNGDATA"
    assert all("process_request" in name for name in started), started
