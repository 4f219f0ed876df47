"""Malformed answers from a misbehaving gateway: a clear GatewayError, never a hang or a traceback.

The gateway here is a small ``http.server`` on 127.0.0.1 whose answer to each
operation a test chooses: non-JSON, an HTML error page, a JSON list, missing
fields, an unknown status or content type, a 10 MB body, a body cut short, a
connection that stalls. The client runs with a 1 s timeout where an answer stalls, so
a stall is quick, and with a busy machine's elsewhere.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import socket
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from fake_gateway import FAST_POLICY

import genwidgets as gw
from genwidgets.errors import OutcomeUnknown, ServerError, TaskTimeout
from genwidgets.jobs import polling
from genwidgets.jobs.downloads import gateway_folder
from genwidgets.jobs.ledger import OUTCOME_UNKNOWN
from genwidgets.protocol import http
from reliability.harness import genwidgets_home, operation_of, wait_until

pytestmark = pytest.mark.reliability

KEY = "malformed-test-key"
ENDPOINT = "asset-get"
PAYLOAD = {"Id": "asset-demo"}
REQUEST_ID = "req-malformed-1"
#: Bodies over the client's 8 MB parsing bound.
HUGE = 10 * 2**20
#: How long a stalled answer stalls (the client gives up after STALLED_TIMEOUT_S).
STALL_S = 5.0
#: The client's timeout where an answer stalls, and elsewhere: a whole small answer can
#: take over a second on a busy machine (a 34-byte file did, with four test workers).
STALLED_TIMEOUT_S, TIMEOUT_S = 1.0, 30.0
FILE_BYTES = b"\x00\x01 some bytes of an unknown kind \xff"

Behaviour = Callable[["GatewayHandler"], None]


class MisbehavingGateway(ThreadingHTTPServer):
    """Answers each operation with the behaviour a test set (well-formed by default)."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), GatewayHandler)
        self.behaviours: dict[str, Behaviour] = {}
        self.seen: Counter[str] = Counter()
        self.release = threading.Event()
        self.base_url = f"http://127.0.0.1:{self.server_address[1]}"


class GatewayHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: MisbehavingGateway

    def log_message(self, format: str, *args: Any) -> None:  # quiet in test output
        pass

    def _dispatch(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        op = operation_of(self.command, urlsplit(self.path).path)
        self.server.seen[op] += 1
        self.server.behaviours.get(op, WELL_FORMED[op])(self)

    do_GET = do_POST = do_PUT = _dispatch

    def reply(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        # the client refuses a body over its cap and hangs up: what the test wants
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(body)


def json_answer(value: Any, status: int = 200) -> Behaviour:
    return lambda h: h.reply(status, json.dumps(value).encode())


def not_json(h: GatewayHandler) -> None:
    h.reply(200, b"all good, probably", "text/plain")


def html_error_page(h: GatewayHandler) -> None:
    page = b"<!DOCTYPE html><html><body><h1>502 Bad Gateway</h1><p>nginx</p></body></html>"
    h.reply(502, page, "text/html")


def ten_megabytes(h: GatewayHandler) -> None:
    h.reply(200, b'{"request_id": "' + b"x" * HUGE + b'", "status": "COMPLETED"}')


def cut_short(h: GatewayHandler) -> None:
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", "1000")
    h.end_headers()
    h.wfile.write(b'{"request_id": "req-mal')
    h.wfile.flush()
    h.close_connection = True
    h.connection.shutdown(socket.SHUT_RDWR)


def stall(h: GatewayHandler) -> None:
    h.server.release.wait(STALL_S)
    h.close_connection = True


def file_of_unknown_kind(h: GatewayHandler) -> None:
    h.reply(200, FILE_BYTES, "application/x-never-seen")


def result_with(outputs: list[dict[str, Any]]) -> Behaviour:
    def answer(h: GatewayHandler) -> None:
        body: dict[str, Any] = {"request_id": REQUEST_ID, "status": "COMPLETED", "error": None}
        body["outputs"] = [
            {k: v.replace("{base}", h.server.base_url) if isinstance(v, str) else v
             for k, v in o.items()}
            for o in outputs
        ]  # fmt: skip
        h.reply(200, json.dumps(body).encode())

    return answer


WELL_FORMED: dict[str, Behaviour] = {
    "create": json_answer({"request_id": REQUEST_ID, "queue_position": 0}),
    "status": json_answer({"request_id": REQUEST_ID, "status": "COMPLETED"}),
    "result": result_with(
        [{"url": "{base}/files/t/out.bin", "content_type": "image/png", "file_size": 3}]
    ),
    "cancel": json_answer({"request_id": REQUEST_ID, "status": "CANCELLATION_REQUESTED"}),
    "files": file_of_unknown_kind,
    "other": json_answer({"detail": "Not Found"}, 404),
}

#: Broken answers every operation can meet, by name.
BROKEN: dict[str, Behaviour] = {
    "not JSON": not_json,
    "an HTML error page": html_error_page,
    "a JSON list": json_answer([1, 2, 3]),
    "a 10 MB body": ten_megabytes,
    "a body cut short": cut_short,
    "a stalled connection": stall,
    "a 500 with a JSON detail": json_answer({"detail": "upstream exploded"}, 500),
}


@pytest.fixture
def gateway() -> Iterator[MisbehavingGateway]:
    server = MisbehavingGateway()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    yield server
    server.release.set()
    server.shutdown()
    thread.join(10)
    server.server_close()


@pytest.fixture
def client(
    gateway: MisbehavingGateway, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[gw.Client]:
    callspec = getattr(request.node, "callspec", None)
    stalls = callspec is not None and callspec.params.get("answer") == "a stalled connection"
    with genwidgets_home(tmp_path):
        made = gw.Client(gateway.base_url, KEY, timeout=STALLED_TIMEOUT_S if stalls else TIMEOUT_S)
        yield made
        made.close()


@pytest.fixture
def no_tracebacks(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """The poller logs a traceback only for an error it did not expect: none may happen."""
    caplog.set_level(logging.WARNING, logger="genwidgets")
    yield
    unexpected = [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert unexpected == [], [r.getMessage() for r in unexpected]


@pytest.fixture
def impatient_poller(monkeypatch: pytest.MonkeyPatch) -> None:
    """Give up after 2 failed polls rather than 10 (about 50 s of backoff), each poll and
    retry at once: what is pinned is the error a broken answer ends in, not the pace."""
    impatient = dataclasses.replace(FAST_POLICY, failure_limit=2)
    monkeypatch.setattr(polling, "DEFAULT_POLICY", impatient)  # read at each failed poll
    monkeypatch.setattr(http, "backoff_delay", lambda attempt, rng=None: 0.01)


def _names_the_task(exc: BaseException, request_id: str | None = REQUEST_ID) -> None:
    text = str(exc)
    assert ENDPOINT in text, text
    if request_id is not None:
        assert request_id in text, text
    assert KEY not in text


@pytest.mark.slow
@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "answer", [*BROKEN, "a handle without request_id"], ids=lambda name: name.replace(" ", "-")
)
def test_a_broken_create_answer_is_outcome_unknown_and_never_retried(
    answer: str, gateway: MisbehavingGateway, client: gw.Client, no_tracebacks: None
) -> None:
    gateway.behaviours["create"] = BROKEN.get(answer) or json_answer({"status_url": "x"})
    with pytest.raises(OutcomeUnknown) as caught:  # a hang would meet the test's timeout
        client.submit(ENDPOINT, PAYLOAD)  # a 5xx to a create, too: a task may exist
    _names_the_task(caught.value, request_id=None)
    assert gateway.seen["create"] == 1  # a task may exist: a retry could pay twice
    assert client.ledger is not None
    (row,) = client.ledger.rows()
    assert (row.state, row.request_id) == (OUTCOME_UNKNOWN, None)


@pytest.mark.slow
@pytest.mark.timeout(60)
@pytest.mark.parametrize("answer", list(BROKEN), ids=lambda name: name.replace(" ", "-"))
def test_a_broken_status_answer_is_a_server_error_naming_the_task(
    answer: str,
    gateway: MisbehavingGateway,
    client: gw.Client,
    no_tracebacks: None,
    impatient_poller: None,
) -> None:
    gateway.behaviours["status"] = BROKEN[answer]
    job = client.submit(ENDPOINT, PAYLOAD)
    with pytest.raises(ServerError) as asked:
        job.status()
    _names_the_task(asked.value)
    with pytest.raises(ServerError) as waited:  # not TaskTimeout: the poller gave up
        job.result(timeout=30)
    assert waited.value.request_id == REQUEST_ID
    _names_the_task(waited.value)
    assert gateway.seen["result"] == 0


@pytest.mark.slow
@pytest.mark.timeout(60)
@pytest.mark.parametrize("answer", list(BROKEN), ids=lambda name: name.replace(" ", "-"))
def test_a_broken_result_answer_is_a_server_error_naming_the_task(
    answer: str,
    gateway: MisbehavingGateway,
    client: gw.Client,
    no_tracebacks: None,
    impatient_poller: None,
) -> None:
    gateway.behaviours["result"] = BROKEN[answer]
    job = client.submit(ENDPOINT, PAYLOAD)
    with pytest.raises(ServerError) as waited:
        job.result(timeout=30)
    assert waited.value.request_id == REQUEST_ID
    _names_the_task(waited.value)


@pytest.mark.slow
@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "body",
    [{"request_id": REQUEST_ID}, {"request_id": REQUEST_ID, "status": "PONDERING"}],
    ids=["no-status", "unknown-status"],
)
def test_an_unknown_or_missing_status_keeps_polling_until_the_wait_runs_out(
    body: dict[str, Any], gateway: MisbehavingGateway, client: gw.Client, no_tracebacks: None
) -> None:
    gateway.behaviours["status"] = json_answer(body)
    # the result address agrees: not yet (a task seen running with a status word is
    # polled there; its 202 carries the same body)
    gateway.behaviours["result"] = json_answer(body, 202)
    job = client.submit(ENDPOINT, PAYLOAD)
    with pytest.raises(TaskTimeout) as waited:
        job.result(timeout=2.5)
    _names_the_task(waited.value)
    assert not job.done()
    assert job.last_status is not None
    assert job.last_status.status == body.get("status", "UNKNOWN")

    def polls() -> int:
        return gateway.seen["status"] + gateway.seen["result"]

    before = polls()
    assert before >= 2
    wait_until(lambda: polls() > before, 30, "a poll after the wait gave up")
    if "status" not in body:  # no status word: never a sign that it runs
        assert gateway.seen["result"] == 0


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "entry",
    [
        {"url": "{base}/files/t/blob", "content_type": "application/x-never-seen"},
        {"url": "{base}/files/t/blob"},
        {"url": "{base}/files/t/blob", "content_type": 42, "file_size": len(FILE_BYTES)},
    ],
    ids=["unknown-content-type", "no-content-type", "content-type-not-a-string"],
)
def test_an_output_of_unknown_kind_reads_as_binary(
    entry: dict[str, Any],
    gateway: MisbehavingGateway,
    client: gw.Client,
    tmp_path: Path,
    no_tracebacks: None,
) -> None:
    gateway.behaviours["result"] = result_with([entry])
    result = client.submit(ENDPOINT, PAYLOAD).result(timeout=20)
    (output,) = result.outputs
    assert result.ok
    assert output.kind == "binary"
    assert output.read() == FILE_BYTES
    assert output.path is not None and output.path.suffix == ".bin"
    assert output.path.read_bytes() == FILE_BYTES
    assert output.path.parent == tmp_path / "outputs" / gateway_folder(client.base_url) / REQUEST_ID


@pytest.mark.timeout(30)
def test_a_result_with_no_outputs_and_no_error_is_an_empty_success(
    gateway: MisbehavingGateway, client: gw.Client, no_tracebacks: None
) -> None:
    gateway.behaviours["result"] = json_answer({"status": "COMPLETED"})
    result = client.submit(ENDPOINT, PAYLOAD).result(timeout=20)
    assert (result.ok, result.outputs, result.request_id) == (True, [], REQUEST_ID)
