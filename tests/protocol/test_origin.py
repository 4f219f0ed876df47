"""The key stays at the gateway's origin for status, result and cancel (issue 21, point 6).

Two real HTTP servers on loopback: the gateway, whose handles name the second one
for their status/result/cancel URLs (or which redirects there), and the second
one, which records every request it gets. None may carry the key.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from loopback import LoopbackServer, QuietHandler

import genwidgets as gw
from genwidgets.errors import GatewayError, GenwidgetsWarning

KEY = "sk-live-ORIGIN-789"
ENDPOINT = "speechM-02-turbo"


class Recorder:
    """A loopback server; ``answer(handler)`` -> (status, headers, body)."""

    def __init__(self, answer: Any) -> None:
        self.seen: list[tuple[str, str, str | None]] = []
        self.answer = answer
        server = self

        class Handler(QuietHandler):
            def _any(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                if length:
                    self.rfile.read(length)
                server.seen.append((self.command, self.path, self.headers.get("authorization")))
                status, headers, body = server.answer(self)
                data = json.dumps(body).encode() if body is not None else b""
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = _any

        self.loop = LoopbackServer(Handler)
        self.url = self.loop.base


@pytest.fixture
def servers() -> Iterator[tuple[Recorder, Recorder]]:
    elsewhere = Recorder(lambda h: (200, {}, {"status": "COMPLETED", "outputs": []}))
    gateway = Recorder(lambda h: (500, {}, {"detail": "unset"}))
    yield gateway, elsewhere
    for s in (elsewhere, gateway):
        s.loop.close()


def _documented(gateway: Recorder, elsewhere: Recorder, *, redirect: bool) -> Any:
    """The gateway's answers: a handle naming ``elsewhere``; on its own documented
    addresses, a task that runs once and completes (or a redirect to ``elsewhere``)."""
    polls = {"n": 0}

    def answer(h: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], Any]:
        path = h.path
        if h.command == "POST":
            foreign = f"{elsewhere.url}/v1/queue/{ENDPOINT}/requests/r1"
            return (
                200,
                {},
                {
                    "request_id": "r1",
                    "status_url": f"{foreign}/status",
                    "response_url": f"{foreign}/response",
                    "cancel_url": f"{foreign}/cancel",
                },
            )
        if redirect:
            return 307, {"Location": f"{elsewhere.url}{path}"}, None
        if path.endswith("/status"):
            polls["n"] += 1
            word = "IN_PROGRESS" if polls["n"] < 2 else "COMPLETED"
            return 200, {}, {"request_id": "r1", "status": word}
        if path.endswith("/cancel"):
            return 400, {}, {"detail": "Task already completed"}
        return 200, {}, {"request_id": "r1", "status": "COMPLETED", "outputs": []}

    return answer


@pytest.mark.slow
def test_a_handle_on_another_origin_never_gets_the_key(
    servers: tuple[Recorder, Recorder],
) -> None:
    gateway, elsewhere = servers
    gateway.answer = _documented(gateway, elsewhere, redirect=False)
    client = gw.Client(gateway.url, KEY, download=False)
    try:
        with pytest.warns(GenwidgetsWarning, match="another origin"):
            job = client.submit(ENDPOINT, {"text": "hello"})
            result = job.result(timeout=30)
            job.cancel()
    finally:
        client.close()
    assert result.ok
    assert [s for s in elsewhere.seen if s[2]] == []  # 0 requests there carry the key
    assert elsewhere.seen == []  # in fact the client never went there at all
    asked = {path.rsplit("/", 1)[-1] for method, path, auth in gateway.seen if method != "POST"}
    assert {"status", "response"} <= asked
    assert all(auth == f"Bearer {KEY}" for _, _, auth in gateway.seen)


def test_a_redirect_to_another_origin_is_not_followed(
    servers: tuple[Recorder, Recorder],
) -> None:
    gateway, elsewhere = servers
    gateway.answer = _documented(gateway, elsewhere, redirect=True)
    client = gw.Client(gateway.url, KEY, download=False)
    try:
        with pytest.warns(GenwidgetsWarning, match="another origin"):
            job = client.submit(ENDPOINT, {"text": "hello"})
            with pytest.raises(GatewayError, match="redirected to another origin"):
                job.result(timeout=30)
    finally:
        client.close()
    assert elsewhere.seen == []
    assert KEY not in json.dumps(gateway.seen[0][1])
