"""The one rule for fetching outputs, on real sockets: the key goes to the gateway's
own origin only, and a redirect to another origin (another loopback port) never
carries it. Every path that reads an output is checked: Gateway.fetch, the
recorder's download, the blocking download and Output.read. Cookies set by the gateway go
back to the gateway's origin only (issue 22 point 8): never to storage on another port of
the same host, directly or through a redirect."""

from __future__ import annotations

import asyncio
import re
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from loopback import LoopbackServer, OneTaskGateway, QuietHandler

from genwidgets.errors import DownloadError, Unreachable
from genwidgets.jobs.downloads import download_outputs, download_outputs_async
from genwidgets.jobs.engine import get_engine
from genwidgets.jobs.ledger.rows import restored_result
from genwidgets.jobs.output_files import gateway_outputs
from genwidgets.protocol import fetch
from genwidgets.protocol.fetch import is_internal, same_origin
from genwidgets.protocol.http import Gateway
from genwidgets.protocol.records import Output, Result

KEY = "sk-live-REDIRECT-4711"
pytestmark = pytest.mark.timeout(60)


class Server:
    """A loopback HTTP server that records the credentials and the Cookie header of
    every request and sets a session cookie ``<name>=secret-<name>`` on every answer;
    ``/moved/<name>`` redirects to ``redirect_to``."""

    def __init__(self, name: str, redirect_to: str | None = None, host: str = "127.0.0.1") -> None:
        self.seen: list[tuple[str, str | None, str | None]] = []
        self.cookies: list[tuple[str, str | None]] = []
        seen, cookies, target = self.seen, self.cookies, redirect_to

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                seen.append(
                    (self.path, self.headers.get("Authorization"), self.headers.get("X-Api-Key"))
                )
                cookies.append((self.path, self.headers.get("Cookie")))
                moved = target is not None and self.path.startswith("/moved/")
                body = b"" if moved else b"PNGDATA"
                self.send_response(302 if moved else 200)
                self.send_header("Set-Cookie", f"{name}=secret-{name}; Path=/")
                if moved:
                    self.send_header("Location", f"{target}/{self.path.split('/')[-1]}")
                else:
                    self.send_header("Content-Type", "image/png")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.loop = LoopbackServer(Handler, host)
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


def test_same_origin_compares_scheme_host_and_port() -> None:
    assert same_origin("https://g.test/files/a", "https://g.test")
    assert same_origin("https://G.test:443/x", "https://g.test/")
    assert not same_origin("http://g.test/x", "https://g.test")
    assert not same_origin("https://g.test:8443/x", "https://g.test")
    assert not same_origin("http://127.0.0.1:2/x", "http://127.0.0.1:1")
    assert not same_origin("http://localhost:1/x", "http://127.0.0.1:1")  # two hosts
    assert not same_origin("https://g.test/x", None)


def test_a_redirect_to_another_port_never_carries_the_key_nor_a_cookie(
    servers: tuple[Server, Server], tmp_path: Path
) -> None:
    gateway_server, storage = servers

    async def scenario() -> tuple[bytes, list[Path]]:
        gateway = Gateway(gateway_server.base, KEY, headers={"X-Api-Key": KEY})
        try:
            await gateway.fetch(f"{gateway_server.base}/first.png")  # the cookie is set
            await gateway.fetch(f"{gateway_server.base}/second.png")  # and goes back home
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
            paths = await download_outputs_async(result, opener=gateway.open_output, root=tmp_path)
            return data, paths
        finally:
            await gateway.aclose()

    data, paths = asyncio.run(scenario())
    assert data == b"PNGDATA" and [p.read_bytes() for p in paths] == [b"PNGDATA"] * 2
    # the gateway's own origin got the key and its cookie; the other port never did
    assert gateway_server.seen == [
        (path, f"Bearer {KEY}", KEY)
        for path in ("/first.png", "/second.png", "/moved/a.png", "/moved/b.png")
    ]
    assert gateway_server.cookies[1] == ("/second.png", "gw=secret-gw")  # the jar works
    assert storage.seen == [("/a.png", None, None), ("/b.png", None, None), ("/c.png", None, None)]
    assert all(cookie is None for _, cookie in storage.cookies), storage.cookies


def test_the_blocking_paths_send_no_credential_nor_cookie_anywhere(
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
    assert storage.cookies == [("/d.png", None), ("/e.png", None)]  # nor a cookie


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


#: The loopback address that stands for a public one in the tests below: the class of
#: an address is decided by ``fetch.is_internal`` alone, which they replace (the
#: documented seam: docs/decisions.md#fetch-addresses), so all traffic stays on loopback.
PUBLIC_STAND_IN = "127.0.0.2"


@pytest.fixture
def remote(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Server, Server, Server]]:
    """A "remote" gateway (on 127.0.0.2, taken for a public address) whose /moved/ URLs
    lead to an internal server (127.0.0.1); and public storage (127.0.0.2 too)."""
    internal = Server("internal")
    try:
        gateway = Server("gw", redirect_to=internal.base, host=PUBLIC_STAND_IN)
        storage = Server("cdn", host=PUBLIC_STAND_IN)
    except OSError:
        internal.close()
        pytest.skip(f"this machine cannot serve on {PUBLIC_STAND_IN}")
    classify = fetch.is_internal
    monkeypatch.setattr(fetch, "is_internal", lambda a: a != PUBLIC_STAND_IN and classify(a))
    try:
        yield gateway, internal, storage
    finally:
        for server in (gateway, internal, storage):
            server.close()


def test_addresses_of_this_machine_and_its_networks_are_internal() -> None:
    for address in (
        "127.0.0.1",
        "127.9.9.9",
        "0.0.0.0",
        "169.254.169.254",  # a cloud's metadata service
        "10.1.2.3",
        "172.16.0.1",
        "172.31.255.255",
        "192.168.1.1",
        "100.64.0.1",
        "::1",
        "::",
        "fd00::2",
        "fe80::1%eth0",
        "::ffff:127.0.0.1",  # IPv4 mapped into IPv6
    ):
        assert is_internal(address), address
    for address in ("8.8.8.8", "172.32.0.1", "192.0.2.2", "2001:db8::1", "no address"):
        assert not is_internal(address), address


def test_a_remote_gateway_cannot_lead_the_client_to_an_internal_address(
    remote: tuple[Server, Server, Server], tmp_path: Path
) -> None:
    """Explorer of the wire, repro 8: a gateway at a public address named an output at
    the cloud's metadata service (or redirected there); the kernel fetched it and the
    saved notebook kept the secret. Refused, before any request reaches it; a public
    output of the same gateway is still fetched."""
    gateway_server, internal, storage = remote

    async def scenario() -> list[Path] | DownloadError:
        gateway = Gateway(gateway_server.base, KEY)
        try:
            with pytest.raises(
                httpx.RequestError, match=re.escape(f"refused to fetch {internal.base}")
            ):
                await gateway.fetch(f"{internal.base}/latest/meta-data")
            with pytest.raises(httpx.RequestError, match=r"and the gateway .* is not"):
                await gateway.fetch(f"{gateway_server.base}/moved/secret")  # a redirect there
            assert await gateway.fetch(f"{storage.base}/fine.png") == b"PNGDATA"
            result = Result.from_body(
                {
                    "request_id": "r-ssrf",
                    "outputs": [
                        {"url": f"{internal.base}/role", "content_type": "application/json"},
                        {"url": f"{storage.base}/ok.png", "content_type": "image/png"},
                    ],
                }
            )
            try:
                await download_outputs_async(result, opener=gateway.open_output, root=tmp_path)
            except DownloadError as exc:
                return exc
            raise AssertionError("the internal output was saved")
        finally:
            await gateway.aclose()

    error = asyncio.run(scenario())
    assert isinstance(error, DownloadError)
    assert [index for index, _ in error.failures] == [0]
    assert "InternalAddress" in error.failures[0][1]
    assert internal.seen == []  # no request ever reached it
    assert [path for path, _, _ in storage.seen] == ["/fine.png", "/ok.png"]
    assert [path for path, _, _ in gateway_server.seen] == ["/moved/secret"]


def test_an_output_read_back_from_the_ledger_is_held_to_its_gateways_rule(
    remote: tuple[Server, Server, Server],
) -> None:
    """A remote gateway's output at an internal address, read back through the ledger's
    rows (``row.result()``, which ``gw.render`` reads too) or on the engine's thread,
    went by a plain GET with no address rule: the metadata service's answer reached the
    kernel and the view. It is read under the rule of the gateway that named it."""
    gateway_server, internal, storage = remote
    outputs = [
        {"url": f"{internal.base}/role", "content_type": "application/json"},
        {"url": f"{gateway_server.base}/moved/role", "content_type": "application/json"},
        {"url": f"{storage.base}/fine.png", "content_type": "image/png"},
    ]
    result = restored_result(
        endpoint="ep",
        request_id="r-ledger",
        status="COMPLETED",
        error=None,
        error_type=None,
        outputs=outputs,
        base_url=gateway_server.base,
    )
    for refused in result.outputs[:2]:
        with pytest.raises(DownloadError, match="refused to fetch"):
            refused.read()
    assert result.outputs[2].read() == b"PNGDATA"

    engine = get_engine()
    gateway = Gateway(gateway_server.base, KEY)
    source = gateway_outputs(engine, gateway)

    async def on_the_engine_thread() -> bytes:
        return source.fetch(f"{internal.base}/role", 1000)

    try:
        with pytest.raises(httpx.RequestError, match="refused to fetch"):
            engine.run(on_the_engine_thread())
    finally:
        engine.run(gateway.aclose())
    assert internal.seen == []  # no request ever reached it


class Rebound:
    """A remote gateway named ``gw.test``, served on :data:`PUBLIC_STAND_IN`, whose name
    leads there until :meth:`rebind`, then to 127.0.0.1, where an internal server
    listens on the same port. Every answer closes its connection, so every request
    looks the name up anew. ``seen`` of each: (method, path, Authorization)."""

    def __init__(self) -> None:
        self.gateway_seen: list[tuple[str, str, str | None]] = []
        self.internal_seen: list[tuple[str, str, str | None]] = []
        self.leads_to = PUBLIC_STAND_IN
        self.real_getaddrinfo = socket.getaddrinfo
        self.gateway: LoopbackServer | None = None
        self.internal: LoopbackServer | None = None
        for _ in range(5):  # a port free on both addresses
            gateway = LoopbackServer(self._handler(self.gateway_seen), PUBLIC_STAND_IN)
            port = gateway.httpd.server_address[1]
            try:
                self.internal = LoopbackServer(self._handler(self.internal_seen), port=port)
            except OSError:
                gateway.close()
                continue
            self.gateway, self.port = gateway, port
            break
        else:
            pytest.skip(f"no port free on both 127.0.0.1 and {PUBLIC_STAND_IN}")
        self.base = f"http://gw.test:{self.port}"

    @staticmethod
    def _handler(seen: list[tuple[str, str, str | None]]) -> type[OneTaskGateway]:
        class Handler(OneTaskGateway):
            def end_headers(self) -> None:
                self.send_header("Connection", "close")
                super().end_headers()

            def _seen(self) -> None:
                seen.append((self.command, self.path, self.headers.get("Authorization")))

            def do_POST(self) -> None:
                self._seen()
                super().do_POST()

            def do_GET(self) -> None:
                self._seen()
                self.send_json({"status": "IN_QUEUE", "secret": "role-credentials"})

            do_PUT = do_GET

        return Handler

    def getaddrinfo(self, host: object, *args: object, **kwargs: object) -> object:
        if host in ("gw.test", b"gw.test"):
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (self.leads_to, self.port))]
        return self.real_getaddrinfo(host, *args, **kwargs)

    def rebind(self) -> None:
        self.leads_to = "127.0.0.1"

    def close(self) -> None:
        for server in (self.gateway, self.internal):
            if server is not None:
                server.close()


@pytest.fixture
def rebound(monkeypatch: pytest.MonkeyPatch) -> Iterator[Rebound]:
    try:
        rebound = Rebound()
    except OSError:
        pytest.skip(f"this machine cannot serve on {PUBLIC_STAND_IN}")
    monkeypatch.setattr(socket, "getaddrinfo", rebound.getaddrinfo)
    classify = fetch.is_internal
    monkeypatch.setattr(fetch, "is_internal", lambda a: a != PUBLIC_STAND_IN and classify(a))
    try:
        yield rebound
    finally:
        rebound.close()


def test_a_remote_gateway_whose_name_is_rebound_inside_is_not_followed(rebound: Rebound) -> None:
    """Reviewer's repro (review 63): a gateway answered from a public address, then
    its name led to this machine (DNS rebinding: the metadata service, an admin port)
    and it named an output on its own origin; the client connected there with the API
    key and saved the reply. Every request of the gateway's client is refused there
    before it is sent: an output (InternalAddress), a poll, a create and a cancel (a
    fault of contact, Unreachable: the task is not failed), though the create that
    taught the gateway's address went on the creates' own connections."""
    error = r"refused to reach the gateway \(http://gw\.test:\d+\) at 127\.0\.0\.1.*rebinding"

    async def scenario() -> None:
        gateway = Gateway(rebound.base, KEY, max_retries=0)
        try:
            handle = await gateway.create("acme/model", b"{}")  # answered from the public address
            rebound.rebind()
            with pytest.raises(httpx.RequestError, match=error) as refused:
                await gateway.fetch(f"{rebound.base}/latest/meta-data/iam")
            assert type(refused.value).__name__ == "InternalAddress"
            for poll in (gateway.status(handle, retries=0), gateway.result(handle, retries=0)):
                with pytest.raises(Unreachable, match=error):
                    await poll
            with pytest.raises(Unreachable, match=error):
                await gateway.cancel(handle)
            with pytest.raises(Unreachable, match=error):
                await gateway.create("acme/model", b"{}")
        finally:
            await gateway.aclose()

    asyncio.run(scenario())
    assert rebound.internal_seen == []  # the key never reached this machine
    assert rebound.gateway_seen == [("POST", "/v1/queue/acme/model", f"Bearer {KEY}")]


def test_a_gateway_on_this_machine_may_lead_to_it(servers: tuple[Server, Server]) -> None:
    """The simulator, the tests, a class gateway on loopback or a private network:
    their outputs and redirects may lead to loopback (the rule is for remote ones)."""
    gateway_server, storage = servers

    async def scenario() -> bytes:
        gateway = Gateway(gateway_server.base, KEY)
        try:
            return await gateway.fetch(f"{gateway_server.base}/moved/local.png")
        finally:
            await gateway.aclose()

    assert asyncio.run(scenario()) == b"PNGDATA"
    assert [path for path, _, _ in storage.seen] == ["/local.png"]
