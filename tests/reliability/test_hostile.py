"""Hostile gateways and bad days (issue 29): each point, end to end, against small
gateways on 127.0.0.1 whose answers a test scripts (``MisbehavingGateway``).

Every wait is bounded: a call that would hang without the fix runs in a thread
joined with a generous deadline, and the test asserts the typed error it ended
with, never how long it took.
"""

from __future__ import annotations

import hashlib
import io
import json
import threading
import tracemalloc
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from PIL import Image

import genwidgets as gw
from genwidgets.errors import (
    OutcomeUnknown,
    ServerError,
    TaskFailed,
    TaskTimeout,
    Unauthorized,
)
from genwidgets.jobs.downloads import gateway_folder
from genwidgets.jobs.ledger import OUTCOME_UNKNOWN
from reliability.harness import genwidgets_home, wait_until
from reliability.test_malformed import (
    ENDPOINT,
    PAYLOAD,
    REQUEST_ID,
    Behaviour,
    GatewayHandler,
    MisbehavingGateway,
    json_answer,
)

pytestmark = [pytest.mark.reliability, pytest.mark.timeout(120)]

KEY = "hostile-test-key-0123456789"
T = TypeVar("T")
#: The outer bound of a call that must end by itself (far above every deadline here).
OUTER = 60.0


def ends(call: Callable[[], T], within: float = OUTER) -> T:
    """Run ``call`` in a thread and return (or raise) what it ended with; fail if it
    has not ended within ``within`` seconds (it would hang without the fix)."""
    outcome: list[tuple[bool, Any]] = []

    def run() -> None:
        try:
            outcome.append((True, call()))
        except BaseException as exc:  # handed back below
            outcome.append((False, exc))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(within)
    assert outcome, f"still running after {within:g} s"
    ok, value = outcome[0]
    if not ok:
        raise value
    result: T = value
    return result


class Gateways:
    """Started gateways, closed when the test ends."""

    def __init__(self) -> None:
        self.started: list[tuple[MisbehavingGateway, threading.Thread]] = []

    def start(self, **behaviours: Behaviour) -> MisbehavingGateway:
        server = MisbehavingGateway()
        server.behaviours.update(behaviours)
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
        thread.start()
        self.started.append((server, thread))
        return server

    def close(self) -> None:
        for server, thread in self.started:
            server.release.set()
            server.shutdown()
            thread.join(10)
            server.server_close()


@pytest.fixture
def gateways(tmp_path: Path) -> Iterator[Gateways]:
    made = Gateways()
    with genwidgets_home(tmp_path):
        yield made
    made.close()


@pytest.fixture
def clients() -> Iterator[Callable[..., gw.Client]]:
    made: list[gw.Client] = []

    def client(server: MisbehavingGateway, **kw: Any) -> gw.Client:
        kw.setdefault("timeout", 1.0)
        made.append(gw.Client(server.base_url, KEY, **kw))
        return made[-1]

    yield client
    for c in made:
        c.close()


# ---------------------------------------------------------------- answers


def answer(
    status: int, body: bytes, content_type: str = "application/json", **headers: str
) -> Behaviour:
    def reply(h: GatewayHandler) -> None:
        h.send_response(status)
        h.send_header("Content-Type", content_type)
        h.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            h.send_header(name.replace("_", "-"), value)
        h.end_headers()
        try:
            h.wfile.write(body)
        except OSError:  # the client stopped reading (a body over its cap)
            h.close_connection = True

    return reply


def result_of(*outputs: dict[str, Any], request_id: str = REQUEST_ID) -> Behaviour:
    def reply(h: GatewayHandler) -> None:
        entries = [
            {k: v.replace("{base}", h.server.base_url) if isinstance(v, str) else v
             for k, v in o.items()}
            for o in outputs
        ]  # fmt: skip
        body = {"request_id": request_id, "status": "COMPLETED", "outputs": entries}
        h.reply(200, json.dumps(body).encode())

    return reply


def drip(h: GatewayHandler) -> None:
    """Headers at once, then a byte every 50 ms until the test ends: every read
    arrives within any timeout, the whole answer never."""
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", "100000")
    h.end_headers()
    h.server.seen["dripping"] += 1
    try:
        while not h.server.release.wait(0.05):
            h.wfile.write(b" ")
            h.wfile.flush()
    except OSError:
        pass
    finally:
        h.server.seen["dripping"] -= 1
        h.close_connection = True


def png(size: tuple[int, int] = (8, 8), mode: str = "RGB") -> bytes:
    buffer = io.BytesIO()
    Image.new(mode, size).save(buffer, format="PNG")
    return buffer.getvalue()


OUTPUT = {"url": "{base}/files/t/out.png", "content_type": "image/png"}


# ---------------------------------------------------------------- point 2


@pytest.mark.slow
def test_two_gateways_outputs_never_mix_and_a_planted_file_is_fetched_over(
    gateways: Gateways, clients: Callable[..., gw.Client], tmp_path: Path
) -> None:
    """Point 2: gateway L's task with the id of an earlier task of gateway H gets L's
    bytes, in L's folder, even when a file of the right size waits in that folder."""
    h_bytes, l_bytes = png((8, 8)), png((9, 9))
    sized = {**OUTPUT, "file_size": len(l_bytes)}
    high = gateways.start(files=answer(200, h_bytes, "image/png"), result=result_of(OUTPUT))
    low = gateways.start(files=answer(200, l_bytes, "image/png"), result=result_of(sized))
    first = clients(high).run(ENDPOINT, PAYLOAD, timeout=30)
    assert first.outputs[0].read() == h_bytes
    planted = tmp_path / "outputs" / gateway_folder(low.base_url) / REQUEST_ID / "0.png"
    planted.parent.mkdir(parents=True)
    planted.write_bytes(b"P" * len(l_bytes))  # planted for the id it expects, right size
    low_client = clients(low)
    second = low_client.run(ENDPOINT, PAYLOAD, timeout=30)
    assert second.outputs[0].path == planted and planted.read_bytes() == l_bytes
    assert second.outputs[0].read() == l_bytes and first.outputs[0].path != planted
    assert low.seen["files"] == 1  # fetched, never trusted
    assert low_client.ledger is not None
    row = low_client.ledger.get(low_client.gateway_name, REQUEST_ID)
    assert row is not None and row.outputs[0]["sha256"] == hashlib.sha256(l_bytes).hexdigest()
    planted.write_bytes(b"Q" * len(l_bytes))  # changed since: read back, it is not used
    (restored,) = clients(low).history()  # a new client: the ledger's record
    (kept,) = restored.result(timeout=5).outputs
    assert kept.path is None  # its bytes no longer hash to the record: not the copy
    assert kept.read() == l_bytes and low.seen["files"] == 2  # fetched again from the URL


def test_a_300_character_request_id_keeps_its_outputs(
    gateways: Gateways, clients: Callable[..., gw.Client]
) -> None:
    """Point 7 (and 2): a request id too long for a folder name still keeps its files."""
    long_id = "r" * 300
    server = gateways.start(
        create=json_answer({"request_id": long_id}),
        status=json_answer({"request_id": long_id, "status": "COMPLETED"}),
        result=result_of(OUTPUT, request_id=long_id),
        files=answer(200, png(), "image/png"),
    )
    result = clients(server).run(ENDPOINT, PAYLOAD, timeout=30)
    (output,) = result.outputs
    assert result.request_id == long_id
    assert output.path is not None and output.path.read_bytes() == png()
    assert len(output.path.parent.name) <= 96


# ---------------------------------------------------------------- point 3


@pytest.mark.slow
def test_a_dripping_status_answer_ends_in_a_server_error(
    gateways: Gateways, clients: Callable[..., gw.Client]
) -> None:
    server = gateways.start(status=drip, result=drip)
    job = clients(server, max_retries=0).submit(ENDPOINT, PAYLOAD)
    with pytest.raises(ServerError, match="within the deadline"):
        ends(job.status)


@pytest.mark.slow
def test_dripping_polls_never_freeze_the_clients_other_requests(
    gateways: Gateways, clients: Callable[..., gw.Client]
) -> None:
    """Two dripping polls hold both slots of ``max_in_flight=2``; a submit still ends."""
    server = gateways.start(status=drip, result=drip)
    client = clients(server, max_in_flight=2)
    client.submit(ENDPOINT, PAYLOAD)
    client.submit(ENDPOINT, PAYLOAD)
    wait_until(lambda: server.seen["dripping"] >= 2, OUTER, "two dripping polls")
    job = ends(lambda: client.submit(ENDPOINT, PAYLOAD))
    assert job.request_id == REQUEST_ID


@pytest.mark.slow
def test_a_completed_task_whose_output_drips_ends_with_its_result(
    gateways: Gateways, clients: Callable[..., gw.Client]
) -> None:
    server = gateways.start(files=drip, result=result_of(OUTPUT))
    client = clients(server)
    result = ends(lambda: client.submit(ENDPOINT, PAYLOAD).result(timeout=OUTER))
    assert result.ok and result.outputs[0].path is None  # the result, not TaskTimeout
    assert client.ledger is not None
    row = client.ledger.get(client.gateway_name, REQUEST_ID)
    assert row is not None and "deadline" in row.outputs[0]["download_error"]


# ---------------------------------------------------------------- point 4


def test_a_300_mb_status_body_is_never_read_whole(
    gateways: Gateways, clients: Callable[..., gw.Client]
) -> None:
    sent: list[int] = []

    def huge(h: GatewayHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Connection", "close")
        h.end_headers()
        count, block = 0, b'{"pad": "' + b"x" * 65536
        try:
            while count < 300 * 2**20:
                h.wfile.write(block)
                count += len(block)
        except OSError:
            pass
        sent.append(count)
        h.close_connection = True

    server = gateways.start(status=huge)
    job = clients(server, max_retries=0).submit(ENDPOINT, PAYLOAD)
    with pytest.raises(ServerError, match="larger than 8,388,608 bytes"):
        ends(job.status)
    wait_until(lambda: bool(sent), OUTER, "the server to notice the client left")
    assert max(sent) < 64 * 2**20  # the cap plus socket buffers, never 300 MB


def gzip_bomb(size: int = 256 * 2**20) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [packer.compress(bytes(2**20)) for _ in range(size // 2**20)]
    return b"".join([*parts, packer.flush()])


@pytest.mark.slow
def test_a_gzip_bomb_output_is_refused_within_a_small_memory_bound(
    gateways: Gateways, clients: Callable[..., gw.Client]
) -> None:
    from genwidgets.widgets.lasting import output_html

    bomb = gzip_bomb()
    server = gateways.start(
        files=answer(200, bomb, "image/png", Content_Encoding="gzip"), result=result_of(OUTPUT)
    )
    result = clients(server).run(ENDPOINT, PAYLOAD, timeout=30)
    (output,) = result.outputs
    assert output.path is None  # the download was refused too
    tracemalloc.start()
    try:
        html = output_html(output, fetch=True)  # what gw.render's static copy does
        with pytest.raises(gw.DownloadError, match="compression bomb"):
            output.read()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 32 * 2**20, peak  # 256 MiB inflated would be 256 MiB
    assert "<img" in html or "not shown" in html


# ---------------------------------------------------------------- point 5


@pytest.mark.slow
def test_a_pixel_bomb_output_still_gets_its_static_copy(
    gateways: Gateways, clients: Callable[..., gw.Client]
) -> None:
    from genwidgets.widgets.lasting import output_html

    bomb = png((20000, 10000), "1")  # a few KB, 200 million pixels
    server = gateways.start(files=answer(200, bomb, "image/png"), result=result_of(OUTPUT))
    (output,) = clients(server).run(ENDPOINT, PAYLOAD, timeout=30).outputs
    assert output.path is not None and output.path.read_bytes() == bomb
    html = output_html(output, fetch=True)  # raised DecompressionBombError before
    assert "<img" in html and "thumb256" not in html


# ---------------------------------------------------------------- point 6


def echo(body: Callable[[str], dict[str, Any]], status: int = 200) -> Behaviour:
    """Answer ``body(authorization header)``: a gateway that echoes the key."""

    def reply(h: GatewayHandler) -> None:
        h.reply(status, json.dumps(body(h.headers.get("Authorization", ""))).encode())

    return reply


def test_a_key_the_gateway_echoes_is_kept_nowhere(
    gateways: Gateways, clients: Callable[..., gw.Client], tmp_path: Path
) -> None:
    from genwidgets.widgets.task import TaskView, lasting_face

    server = gateways.start(
        status=echo(lambda auth: {"status": "COMPLETED", "logs": [f"seen {auth}"]}),
        result=echo(
            lambda auth: {
                "status": "COMPLETED",
                "error": f"upstream refused header Authorization: {auth}",
                "error_type": f"echo {auth}",
                "outputs": [{"content_type": "text/plain", "content": f"{auth}", "url": "/x"}],
            }
        ),
    )
    client = clients(server)
    job = client.submit(ENDPOINT, PAYLOAD)
    result = job.result(timeout=30)
    with pytest.raises(TaskFailed) as failed:
        result.raise_for_error()
    view = TaskView(job)
    seen = [
        str(failed.value),
        repr(result),
        json.dumps(result.raw),
        json.dumps(job.last_status.raw if job.last_status else {}),
        json.dumps(view.get_state(), default=str),
        json.dumps(lasting_face(job)),
        json.dumps(lasting_face(job, media="full")),
    ]
    view.close()
    assert "***" in seen[0]
    assert all(KEY not in text for text in seen), [text for text in seen if KEY in text]
    assert client.ledger is not None and client.ledger.flush()
    assert not [p for p in tmp_path.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]


def test_a_401_echo_is_redacted_in_the_detail_too(
    gateways: Gateways, clients: Callable[..., gw.Client]
) -> None:
    server = gateways.start(
        create=echo(lambda auth: {"detail": f"invalid token: {auth}"}, status=401)
    )
    with pytest.raises(Unauthorized) as caught:
        clients(server).submit(ENDPOINT, PAYLOAD)
    error = caught.value
    assert KEY not in f"{error} {error.message} {error.detail} {error!r}"
    assert error.detail is not None and "***" in error.detail


# ---------------------------------------------------------------- point 7


@pytest.mark.slow
@pytest.mark.parametrize("position", [2**63, 10**400, -5], ids=["2**63", "10**400", "negative"])
def test_a_hostile_queue_position_never_stops_polling_nor_the_ledger(
    position: int, gateways: Gateways, clients: Callable[..., gw.Client]
) -> None:
    queued = {"request_id": REQUEST_ID, "status": "IN_QUEUE", "queue_position": position}
    polls: list[int] = []

    def status(h: GatewayHandler) -> None:
        polls.append(1)
        done = {"request_id": REQUEST_ID, "status": "COMPLETED"}
        h.reply(200, json.dumps(queued if len(polls) < 3 else done).encode())

    server = gateways.start(
        create=json_answer({"request_id": REQUEST_ID, "queue_position": position}),
        status=status,
        result=result_of(),
    )
    client = clients(server)
    job = client.submit(ENDPOINT, PAYLOAD)
    assert job.queue_position is None
    assert job.result(timeout=OUTER).ok  # polling went on to the end
    assert client.ledger is not None
    (row,) = client.ledger.rows()
    assert row.request_id == REQUEST_ID and row.ok and row.queue_position is None


def test_json_nested_50000_deep_is_a_typed_error(
    gateways: Gateways, clients: Callable[..., gw.Client]
) -> None:
    deep = answer(200, b"[" * 50_000 + b"]" * 50_000)
    server = gateways.start(create=deep)
    client = clients(server)
    with pytest.raises(OutcomeUnknown, match="nested deeper"):
        client.submit(ENDPOINT, PAYLOAD)
    server.behaviours.pop("create")
    server.behaviours["status"] = deep
    job = client.submit(ENDPOINT, PAYLOAD)
    with pytest.raises(ServerError, match="nested deeper"):
        job.status()
    assert client.ledger is not None
    states = sorted(row.state for row in client.ledger.rows())
    assert states == ["outcome_unknown", "submitted"]


@pytest.mark.slow
def test_a_result_that_says_in_progress_after_completed_is_not_a_failed_done(
    gateways: Gateways, clients: Callable[..., gw.Client]
) -> None:
    answers: list[int] = []

    def result(h: GatewayHandler) -> None:
        answers.append(1)
        word = "IN_PROGRESS" if len(answers) < 3 else "COMPLETED"
        h.reply(200, json.dumps({"request_id": REQUEST_ID, "status": word}).encode())

    server = gateways.start(result=result)
    client = clients(server)
    final = client.submit(ENDPOINT, PAYLOAD).result(timeout=OUTER)
    assert final.ok and final.status == "COMPLETED" and len(answers) >= 3

    server.behaviours["result"] = json_answer({"request_id": REQUEST_ID, "status": "IN_PROGRESS"})
    job = client.submit(ENDPOINT, PAYLOAD)
    with pytest.raises(TaskTimeout):  # still not a result: never "done" with "task failed: None"
        job.result(timeout=3)
    assert job.last_result is None and not job.done()


@pytest.mark.parametrize("request_id", ["abc\x00def", {"id": 1}], ids=["NUL", "an-object"])
def test_an_unaddressable_request_id_is_outcome_unknown_and_kept(
    request_id: Any, gateways: Gateways, clients: Callable[..., gw.Client]
) -> None:
    server = gateways.start(create=json_answer({"request_id": request_id}))
    client = clients(server)
    with pytest.raises(OutcomeUnknown, match="request_id") as caught:
        client.submit(ENDPOINT, PAYLOAD)
    assert "a task may exist" in str(caught.value)
    assert client.ledger is not None
    (row,) = client.ledger.rows()
    assert row.state == OUTCOME_UNKNOWN


# ---------------------------------------------------------------- point 8


def test_a_relative_output_url_resolves_against_the_gateway(
    gateways: Gateways, clients: Callable[..., gw.Client]
) -> None:
    from genwidgets.widgets.lasting import output_html
    from genwidgets.widgets.render import to_html

    server = gateways.start(result=result_of({"url": "/logout", "content_type": "image/png"}))
    (output,) = clients(server, download=False).run(ENDPOINT, PAYLOAD, timeout=30).outputs
    assert output.url == f"{server.base_url}/logout"
    # the live card shows it by its resolved URL; the lasting face never by a relative one
    assert f'src="{server.base_url}/logout"' in to_html(output)
    assert 'src="/logout"' not in output_html(output) + to_html(output)


def test_a_cookie_met_on_a_redirect_elsewhere_never_comes_back_to_the_gateway(
    gateways: Gateways, clients: Callable[..., gw.Client]
) -> None:
    storage = gateways.start(files=answer(200, png(), "image/png", Set_Cookie="planted=1; Path=/"))
    cookies: list[str | None] = []

    def status(h: GatewayHandler) -> None:
        cookies.append(h.headers.get("Cookie"))
        h.reply(200, json.dumps({"request_id": REQUEST_ID, "status": "COMPLETED"}).encode())

    def moved(h: GatewayHandler) -> None:
        h.send_response(302)
        h.send_header("Location", f"{storage.base_url}/files/t/out.png")
        h.send_header("Content-Length", "0")
        h.end_headers()

    server = gateways.start(files=moved, status=status, result=result_of(OUTPUT))
    client = clients(server)
    first = client.run(ENDPOINT, PAYLOAD, timeout=30)
    assert first.outputs[0].path is not None  # downloaded through the redirect
    job = client.submit(ENDPOINT, PAYLOAD)
    job.status()
    assert cookies and all(c is None or "planted" not in c for c in cookies), cookies
