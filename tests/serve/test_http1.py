"""The class gateway's upstream pool (serve/http1.py): connections kept and reused, a
connection closed while idle replaced for a GET only, every fault typed with whether the
request may have reached upstream, and no connection reused after a cut exchange."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import ssl
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from genwidgets.errors import UpstreamFault
from genwidgets.serve.http1 import Http1Pool

#: how a test upstream answers the n-th request (from 1) of a connection: raw bytes, or
#: None to close the connection without answering, or "hang" to answer nothing
Script = Callable[[int, bytes], "bytes | str | None"]


def ok(body: bytes = b'{"status": "IN_QUEUE"}') -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)


async def _read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return head + (await reader.readexactly(length) if length else b"")


async def with_upstream(
    script: Script, test: Callable[[str, list[int]], Awaitable[None]]
) -> list[bytes]:
    """Run ``test(base_url, connections)`` against a raw upstream answering by ``script``;
    the requests it received. ``connections`` holds one entry per accepted connection."""
    connections: list[int] = []
    received: list[bytes] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        count = 0
        try:
            while True:
                request = await _read_request(reader)
                count += 1
                received.append(request)
                answer = script(count, request)
                if answer is None:
                    break
                if answer == "hang":
                    await asyncio.sleep(30)
                    break
                assert isinstance(answer, bytes)
                writer.write(answer)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass  # the client went, or the test ended: this connection's handler ends
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        await asyncio.wait_for(test(f"http://127.0.0.1:{port}", connections), 60)
    finally:
        server.close()
    return received


def run(script: Script, test: Callable[[str, list[int]], Awaitable[None]]) -> list[bytes]:
    return asyncio.run(with_upstream(script, test))


def _pool(base: str, timeout: float = 30.0) -> Http1Pool:
    return Http1Pool(base, timeout=timeout, connect_timeout=5.0)


def test_one_connection_serves_many_requests_and_chunked_answers_are_read() -> None:
    chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    chunked += b"3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"

    async def test(base: str, connections: list[int]) -> None:
        pool = _pool(base)
        for _ in range(20):
            answer = await pool.request("GET", "/v1/x", [], None, max_body=1000)
            assert (answer.status, answer.body) == (200, b"abcde")
        assert len(connections) == 1
        answers = await asyncio.gather(
            *(pool.request("GET", "/v1/x", [], None, max_body=1000) for _ in range(8))
        )
        assert [a.body for a in answers] == [b"abcde"] * 8
        assert len(connections) <= 8
        await pool.close()

    received = run(lambda n, request: chunked, test)
    assert all(r.startswith(b"GET /v1/x HTTP/1.1\r\nHost: 127.0.0.1:") for r in received)


def test_the_base_urls_path_prefixes_every_target_and_ids_are_encoded() -> None:
    async def test(base: str, connections: list[int]) -> None:
        pool = _pool(base + "/gw/")
        await pool.request("GET", "/v1/queue/a/requests/x y\r\nInjected: 1", [], None, max_body=99)
        await pool.close()

    received = run(lambda n, request: ok(), test)
    assert received[0].startswith(b"GET /gw/v1/queue/a/requests/x%20y%0D%0AInjected:%201 ")


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_connection_closed_while_idle_is_replaced_only_for_a_get(method: str) -> None:
    """The upstream takes the second request of each connection and closes it unanswered
    (as a server whose keep-alive ran out as the request came): a GET goes again on a new
    connection; a create may have reached upstream, so it is a fault that says so."""

    async def test(base: str, connections: list[int]) -> None:
        pool = _pool(base)
        await pool.request(method, "/v1/x", [], b"{}", max_body=1000)
        if method == "GET":
            answer = await pool.request("GET", "/v1/x", [], None, max_body=1000)
            assert answer.status == 200 and len(connections) == 2
        else:
            with pytest.raises(UpstreamFault) as caught:
                await pool.request("POST", "/v1/x", [], b"{}", max_body=1000)
            assert caught.value.sent and len(connections) == 1
        await pool.close()

    run(lambda n, request: ok() if n == 1 else None, test)


def test_faults_say_whether_the_request_may_have_reached_upstream() -> None:
    async def test(base: str, connections: list[int]) -> None:
        with pytest.raises(UpstreamFault) as slow:
            await _pool(base, timeout=0.3).request("POST", "/v1/x", [], b"{}", max_body=99)
        assert slow.value.sent and "in time" in str(slow.value)
        with pytest.raises(UpstreamFault) as refused:
            await _pool("http://127.0.0.1:1").request("POST", "/v1/x", [], b"{}", max_body=99)
        assert not refused.value.sent and "cannot reach" in str(refused.value)

    run(lambda n, request: "hang", test)


def test_an_answer_over_the_cap_is_a_fault_and_its_connection_is_not_kept() -> None:
    async def test(base: str, connections: list[int]) -> None:
        pool = _pool(base)
        with pytest.raises(UpstreamFault) as caught:
            await pool.request("GET", "/big", [], None, max_body=1000)
        assert caught.value.sent and "over 1000 bytes" in str(caught.value)
        answer = await pool.request("GET", "/small", [], None, max_body=1000)
        assert answer.body == b"small" and len(connections) == 2
        await pool.close()

    run(lambda n, request: ok(b"x" * 2000) if b"/big" in request else ok(b"small"), test)


def test_a_cancelled_exchange_leaves_no_bytes_for_the_next_one() -> None:
    """A request cancelled while upstream is answering (a student hung up): its connection
    is closed, so the next request never reads the first one's late answer."""

    def script(n: int, request: bytes) -> bytes | str | None:
        return ok(b"second") if b"/second" in request else "hang"

    async def test(base: str, connections: list[int]) -> None:
        pool = _pool(base)
        first = asyncio.ensure_future(pool.request("GET", "/first", [], None, max_body=99))
        while not connections:
            await asyncio.sleep(0.01)
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        answer = await pool.request("GET", "/second", [], None, max_body=99)
        assert answer.body == b"second" and len(connections) == 2
        await pool.close()

    run(script, test)


def test_an_https_upstream_is_verified(tmp_path: Path) -> None:
    """Over TLS the pool checks the upstream's certificate: one it trusts answers, an
    unknown one is refused before anything is sent."""
    if shutil.which("openssl") is None:
        pytest.skip("!!! openssl is missing (tests/run.sh installs it as root): SKIPPED")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    make = "req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 -addext"
    subprocess.run(
        ["openssl", *make.split(), "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", cert],
        check=True,
        capture_output=True,
        timeout=120,
    )
    served = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    served.load_cert_chain(cert, key)

    async def main() -> None:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            with contextlib.suppress(Exception):
                await _read_request(reader)
                writer.write(ok(b"secure"))
                await writer.drain()
            writer.close()

        server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=served)
        base = f"https://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        try:
            trusting = Http1Pool(
                base,
                timeout=30,
                connect_timeout=30,
                ssl_context=ssl.create_default_context(cafile=str(cert)),
            )
            answer = await trusting.request("GET", "/v1/x", [], None, max_body=99)
            assert answer.body == b"secure"
            await trusting.close()
            stranger = Http1Pool(base, timeout=30, connect_timeout=30)
            with pytest.raises(UpstreamFault) as caught:
                await stranger.request("POST", "/v1/x", [], b"{}", max_body=99)
            assert not caught.value.sent and "cannot reach" in str(caught.value)
        finally:
            server.close()

    asyncio.run(main())


def test_a_header_h11_refuses_is_a_fault_that_does_not_quote_it() -> None:
    """h11's message quotes the whole illegal header value, a key among them: the fault
    names the refusal, never the value, and says nothing was sent."""

    async def test(base: str, connections: list[int]) -> None:
        headers = [("Authorization", "Bearer secret-value\x00")]
        with pytest.raises(UpstreamFault) as caught:
            await _pool(base).request("GET", "/v1/x", headers, None, max_body=99)
        assert not caught.value.sent
        assert "secret-value" not in str(caught.value) and "header" in str(caught.value)

    run(lambda n, request: ok(), test)


def test_faults_are_said_in_the_clients_words_without_class_names() -> None:
    """The pool made its own words for a failed connect ("cannot reach the upstream
    gateway (ConnectError: ConnectionRefusedError)") and named h11's and Python's classes
    for the others: each is said as the client says the same failure
    (``protocol.body.failure_words``), the upstream's address named."""
    import httpx

    from genwidgets.protocol.body import failure_words

    async def client_words(url: str) -> str:
        async with httpx.AsyncClient() as client:
            try:
                await client.get(url)
            except httpx.HTTPError as exc:
                return failure_words(exc)
        raise AssertionError("answered")

    async def test(base: str, connections: list[int]) -> None:
        down = "http://127.0.0.1:1"
        with pytest.raises(UpstreamFault) as refused:
            await _pool(down).request("POST", "/v1/x", [], b"{}", max_body=99)
        said = await client_words(down + "/v1/x")
        assert str(refused.value) == f"cannot reach the upstream gateway: {said}"
        assert said.startswith("could not connect to 127.0.0.1:1"), said
        with pytest.raises(UpstreamFault) as slow:
            await _pool(base, timeout=0.3).request("POST", "/v1/x", [], b"{}", max_body=99)
        port = base.rsplit(":", 1)[1]
        assert str(slow.value) == f"no answer in time from 127.0.0.1:{port}"
        for fault in (refused.value, slow.value):
            assert "Error" not in str(fault) and "Timeout" not in str(fault), fault

    run(lambda n, request: "hang", test)
