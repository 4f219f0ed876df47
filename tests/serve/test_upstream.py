"""Keys apart: the teacher's key never leaves the class server (answers, errors, headers,
logs, the database), and no byte of a student's request (their key among them) reaches
upstream, even from an upstream that echoes the key it was sent everywhere."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import httpx
import pytest
from loopback import LoopbackServer, OneTaskGateway, QuietHandler
from serve_helpers import TEACHER_KEY

import genwidgets as gw
from genwidgets.serve import ClassServer, Database, ServeConfig, Upstream
from genwidgets.serve.keys import add_key
from genwidgets.serve.upstream import UpstreamAnswer
from genwidgets.serve.usage import usage

IMAGE = "genW2.5-t2i-preview"


class EchoingUpstream(QuietHandler):
    """An upstream that puts the Authorization it got into every answer: bodies,
    headers, output URLs, error messages; and records every byte it was sent."""

    received: list[bytes] = []

    def _answer(self, status: int, body: dict[str, Any], escaped: bool = False) -> None:
        auth = self.headers.get("Authorization", "")
        # the bare key, each character a JSON escape ("\u0074..."): the same text once parsed
        echo = "".join(f"\\u{ord(c):04x}" for c in auth.split()[-1]) if escaped else auth
        data = json.dumps(body).replace("ECHO", echo).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Echo", auth)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _record(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.received.append(self.requestline.encode() + bytes(self.headers) + body)
        return body

    def do_POST(self) -> None:
        body = self._record()
        if b"fail500" in body:
            self._answer(500, {"detail": "upstream broke with key ECHO"})
        elif b"refuse422" in body:
            self._answer(422, {"detail": "bad payload from ECHO"})
        elif b"escaped422" in body:
            self._answer(422, {"detail": "bad payload for key ECHO"}, escaped=True)
        elif b"ratelimit" in body:
            self._answer(429, {"error": {"code": "RATE_LIMIT_EXCEEDED", "message": "ECHO"}})
        else:
            self._answer(
                200, {"request_id": "up-1", "status_url": "http://up/ECHO", "note": "key ECHO"}
            )

    def do_GET(self) -> None:
        self._record()
        self._answer(
            200,
            {
                "request_id": "up-1",
                "status": "COMPLETED",
                "error": None,
                "logs": [{"message": "ran with ECHO"}],
                "outputs": [
                    {"url": "http://files.example/ECHO/a.png", "content_type": "image/png"}
                ],
            },
        )

    def do_PUT(self) -> None:
        self._record()
        self._answer(401, {"error": {"code": "UNAUTHORIZED", "message": "bad key ECHO"}})


@pytest.fixture
def echoing() -> Iterator[LoopbackServer]:
    EchoingUpstream.received = []
    server = LoopbackServer(EchoingUpstream)
    yield server
    server.close()


def _raw(answer: httpx.Response) -> bytes:
    head = f"{answer.status_code} {answer.reason_phrase}\n".encode()
    return head + b"".join(k + b": " + v + b"\n" for k, v in answer.headers.raw) + answer.content


def test_no_byte_sent_or_logged_holds_the_teachers_key(
    echoing: LoopbackServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG)
    db = Database(tmp_path / "class.db")
    db.migrate()
    student = add_key(db, "alice", {"tasks": 100})
    admin = add_key(db, "teacher", {}, admin=True)
    config = ServeConfig(upstream=Upstream(echoing.base, TEACHER_KEY), database=db)
    sent: list[bytes] = []
    with ClassServer(config) as server, httpx.Client(base_url=server.base_url, timeout=60) as api:
        auth = {"Authorization": f"Bearer {student}"}

        def call(method: str, url: str, **kw: Any) -> httpx.Response:
            answer = api.request(method, url, **kw)
            sent.append(_raw(answer))
            return answer

        handle = call(
            "POST", f"/v1/queue/{IMAGE}", json={"prompt": "ok", "n": 1}, headers=auth
        ).json()
        assert "up-1" not in json.dumps(handle)  # upstream's id stays inside
        # cancelled while open (once seen ended, a cancel is answered without upstream)
        assert call("PUT", handle["cancel_url"], headers=auth).status_code == 502
        status = call("GET", handle["status_url"], headers=auth)
        assert status.json()["request_id"] == handle["request_id"]
        result = call("GET", handle["response_url"], headers=auth).json()
        assert result["outputs"][0]["url"] == "http://files.example/Bearer [redacted]/a.png"
        for prompt, status_code in (
            ("fail500", 502),
            ("refuse422", 422),
            ("escaped422", 422),
            ("ratelimit", 429),
        ):
            answer = call(
                "POST", f"/v1/queue/{IMAGE}", json={"prompt": prompt, "n": 1}, headers=auth
            )
            assert answer.status_code == status_code
        call(
            "POST",
            f"/v1/queue/{IMAGE}",
            json={"prompt": "x"},
            headers={"Authorization": "Bearer no"},
        )
        call("GET", "/admin", params={"key": admin})
        call("GET", "/admin/usage.csv", headers={"Authorization": f"Bearer {admin}"})
        call("GET", "/admin/usage.json", headers={"Authorization": f"Bearer {admin}"})
    seen = next(k for k in usage(db)["keys"] if k["name"] == "alice")
    # the 500 may have made a task: reserved; the 422 and the 429 made none: released
    assert seen["unknown"] == 1 and seen["held"] == {"tasks": 2.0, "images": 2.0}
    db.close()
    everything_sent = b"\n".join(sent)
    assert b"bad payload from Bearer" in everything_sent and b"[redacted]" in everything_sent
    assert b"bad payload for key ***" in everything_sent
    assert TEACHER_KEY.encode() not in everything_sent
    logged = caplog.text + "".join(capfd.readouterr())
    assert "upstream refused the teacher's key" in logged  # the logs were captured
    assert TEACHER_KEY not in logged
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert TEACHER_KEY.encode() not in stored and student.encode() not in stored
    upstream_saw = b"\n".join(EchoingUpstream.received)
    assert len(EchoingUpstream.received) >= 7
    assert student.encode() not in upstream_saw and admin.encode() not in upstream_saw
    assert upstream_saw.count(f"Bearer {TEACHER_KEY}".encode()) == len(EchoingUpstream.received)


@pytest.mark.slow
def test_the_upstream_repr_and_errors_hold_no_key() -> None:
    upstream = Upstream("http://127.0.0.1:1", TEACHER_KEY)
    assert TEACHER_KEY not in repr(upstream)
    assert upstream.scrub(f"a {TEACHER_KEY} b") == "a [redacted] b"


def status_from(
    handler: type[BaseHTTPRequestHandler], key: str = TEACHER_KEY, request_id: str = "r1"
) -> UpstreamAnswer:
    """The class gateway's :class:`Upstream` (signing with ``key``) asking ``handler``,
    served on loopback, for a task's status: its answer as read."""
    server = LoopbackServer(handler)
    upstream = Upstream(server.base, key)

    async def ask() -> UpstreamAnswer:
        try:
            return await upstream.send("GET", f"/{IMAGE}/requests/{request_id}/status")
        finally:
            await upstream.close()

    try:
        return asyncio.run(ask())
    finally:
        server.close()


class ScriptedUpstream(QuietHandler):
    """An upstream whose status answers are the class's ``body``, sent as it is (JSON
    Python would not write)."""

    body = b"{}"

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)


class DeepUpstream(ScriptedUpstream):
    """An upstream whose status answers are JSON nested 50,000 deep."""

    body = b'[{"a":' * 25_000 + b"1" + b"}]" * 25_000


def test_an_upstream_answer_nested_too_deep_is_no_answer_not_a_crash() -> None:
    """The class gateway reads an upstream answer as our client does: JSON nested deeper
    than its limit is never parsed (a RecursionError escaped as a 500 before)."""
    answer = status_from(DeepUpstream, request_id="r-1")
    assert answer.status == 200 and answer.body is None


class OverflowingUpstream(ScriptedUpstream):
    """An upstream whose status answers hold numbers too large for a float (valid JSON)."""

    body = b'{"request_id": "r1", "status": "COMPLETED", "p": 1e999, "q": [-1e999, 0.5]}'


def test_an_upstream_number_too_large_for_a_float_is_passed_on_as_null() -> None:
    """``1e999`` is valid JSON that Python reads as ``inf``, which no JSON answer may
    carry: a finished task's status and result were a 500, its paid result never read.
    It is null, as ``NaN`` and ``Infinity`` are; a finite number stays."""
    answer = status_from(OverflowingUpstream, request_id="r-1")
    assert answer.body == {"request_id": "r1", "status": "COMPLETED", "p": None, "q": [None, 0.5]}
    json.dumps(answer.body, allow_nan=False)  # as the student's answer is written


class RelativeFilesUpstream(OneTaskGateway):
    """A gateway whose output URLs are relative to itself (as docs/decisions.md#hostile-
    values allows), in ``outputs`` and in a fal-style ``images`` field; it records who
    asked for a file with which Authorization."""

    files: list[str | None] = []

    def do_GET(self) -> None:
        if self.path.startswith("/files/"):
            self.files.append(self.headers.get("Authorization"))
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", "5")
            self.end_headers()
            self.wfile.write(b"hello")
            return
        done = {"request_id": "r1", "status": "COMPLETED", "error": None}
        if self.path.endswith("/response"):
            done["outputs"] = [{"url": "/files/a.txt", "content_type": "text/plain"}]
            done["images"] = [{"url": "files/b.png"}]
        self.send_json(done)


def test_relative_output_urls_are_made_absolute_against_upstream(tmp_path: Path) -> None:
    """A relative output URL from upstream is passed on absolute against upstream: the
    student's client would resolve it against the class gateway, which has no file.
    The teacher's key is never added to it (the client sends none to another origin)."""
    RelativeFilesUpstream.files = []
    upstream_server = LoopbackServer(RelativeFilesUpstream)
    db = Database(tmp_path / "class.db")
    db.migrate()
    token = add_key(db, "alice", {"tasks": 5})
    config = ServeConfig(upstream=Upstream(upstream_server.base, TEACHER_KEY), database=db)
    try:
        with (
            ClassServer(config) as server,
            gw.Client(base_url=server.base_url, api_key=token) as client,
        ):
            result = client.run(IMAGE, {"prompt": "x", "n": 1}, timeout=60)
            [output] = result.outputs
            assert output.url == f"{upstream_server.base}/files/a.txt"
            assert output.read() == b"hello"
            raw = httpx.get(
                f"{server.base_url}/v1/queue/{IMAGE}/requests/{result.request_id}/response",
                headers={"Authorization": f"Bearer {token}"},
            ).json()
    finally:
        upstream_server.close()
    assert raw["images"] == [{"url": f"{upstream_server.base}/files/b.png"}]
    assert RelativeFilesUpstream.files == [None]


class AuthEcho(ScriptedUpstream):
    """An upstream that records the Authorization of each request and answers 200."""

    seen: list[str | None] = []
    body = b'{"request_id": "r1", "status": "IN_QUEUE"}'

    def do_GET(self) -> None:
        self.seen.append(self.headers.get("Authorization"))
        super().do_GET()


@pytest.mark.parametrize("saved", ["{}\r", " {}\n", "\t{} "], ids=["crlf", "lead-lf", "tabs"])
def test_a_key_saved_with_a_line_end_or_spaces_is_sent_without_them(saved: str) -> None:
    """A key read from a file saved with Windows line ends kept its ``\\r``: h11 refused
    the header and its message, quoting ``Bearer <key>\\r``, went to every student. The
    key is taken without its surrounding whitespace, as the teacher meant it."""
    AuthEcho.seen = []
    answer = status_from(AuthEcho, saved.format(TEACHER_KEY))
    assert answer.status == 200
    assert AuthEcho.seen == [f"Bearer {TEACHER_KEY}"]


@pytest.mark.parametrize(
    ("inside", "named"),
    [("\r", "U+000D"), ("\x00", "U+0000"), (" ", "U+0020"), ("\u00e9", "U+00E9")],
    ids=["cr", "nul", "space", "non-ascii"],
)
def test_a_key_holding_a_character_no_header_can_carry_is_refused_without_showing_it(
    inside: str, named: str
) -> None:
    """Refused when the class gateway is made, saying which character and where, never
    the key: sent, it would be refused at every request (and said to students)."""
    key = f"sk-live-{inside}TEACHERSECRET123"
    with pytest.raises(ValueError) as caught:
        Upstream("http://127.0.0.1:1", key)
    said = str(caught.value)
    assert named in said and "character 9 of 25" in said
    assert "TEACHERSECRET" not in said and "sk-live" not in said


@pytest.mark.parametrize(
    "url",
    [
        "http://classadmin:pw-S3CRET@127.0.0.1:9",
        "http://pw-S3CRET@127.0.0.1:9/gw",
        "ftp://classadmin:pw-S3CRET@127.0.0.1:9",
    ],
    ids=["user-password", "token-as-user", "not-http"],
)
def test_an_upstream_url_with_credentials_is_refused_without_showing_them(url: str) -> None:
    """Credentials in the upstream's URL are never sent (the teacher's key signs every
    request), but they were copied into students' output URLs, made absolute against
    it, and printed on the ready line and in the repr. Refused, never shown."""
    with pytest.raises(ValueError) as refused:
        Upstream(url, TEACHER_KEY)
    assert "pw-S3CRET" not in str(refused.value), str(refused.value)
