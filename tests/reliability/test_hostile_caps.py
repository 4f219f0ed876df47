"""Reads with caps, whatever came before (issue 39 point 4): a 64 MiB body, served by a
loopback gateway that counts the bytes it managed to send, is read only up to its cap,
three times over, beside a busy loop, after the other hostile cases (dripping bodies,
cut streams, a large answer within its cap on a kept-alive connection) have run on the
same client.

The bound is the cap plus the socket buffers of loopback (the client's receive buffer
and the server's send buffer, a few MiB each): :data:`SLACK`, far below the 64 MiB
that reading the whole body sends.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

import genwidgets as gw
from genwidgets.errors import ServerError
from genwidgets.protocol.body import MAX_ANSWER_BYTES
from genwidgets.protocol.output import Output
from genwidgets.widgets.lasting import EMBED_LIMIT
from genwidgets.widgets.render import render, to_mimebundle
from reliability.harness import genwidgets_home, wait_until
from reliability.test_hostile import OUTER, Gateways, drip, ends
from reliability.test_malformed import (
    ENDPOINT,
    PAYLOAD,
    REQUEST_ID,
    GatewayHandler,
    cut_short,
    json_answer,
)

pytestmark = [pytest.mark.reliability, pytest.mark.timeout(300)]

KEY = "hostile-caps-key-0123456789"
HUGE = 64 * 2**20
#: What loopback's socket buffers may hold beyond a cap (measured: 4 to 8 MiB).
SLACK = 16 * 2**20
TIMES = 3


class Counted:
    """A 64 MiB body with no ``Content-Length`` (so no header can refuse it early),
    written until the client leaves; each answer's bytes sent are kept in ``sent``."""

    def __init__(self, content_type: str, head: bytes) -> None:
        self.content_type, self.head = content_type, head
        self.sent: list[int] = []

    def __call__(self, h: GatewayHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", self.content_type)
        h.send_header("Connection", "close")
        h.end_headers()
        count, block = 0, self.head + b"x" * (65536 - len(self.head))
        try:
            while count < HUGE:
                h.wfile.write(block)
                count += len(block)
                block = b"x" * 65536
        except OSError:
            pass
        finally:
            self.sent.append(count)
            h.close_connection = True


@pytest.fixture
def busy() -> Iterator[None]:
    """A busy loop in the client's process (it holds the GIL half the time) while the
    test runs: the reads slow down, and the socket buffers fill."""
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            sum(range(1000))

    thread = threading.Thread(target=spin, daemon=True)
    thread.start()
    yield
    stop.set()
    thread.join(10)


@pytest.fixture
def gateways(tmp_path: Path) -> Iterator[Gateways]:
    made = Gateways()
    with genwidgets_home(tmp_path):
        yield made
    made.close()


def _earlier_hostile_cases(client: gw.Client, server: Any) -> None:
    """What a probe runs first: a large answer within the cap (a connection kept alive
    and its buffers grown), a dripping body, a stream cut short."""
    big = {"request_id": REQUEST_ID, "status": "IN_QUEUE", "pad": "x" * (7 * 2**20)}
    for behaviour, fails in [(json_answer(big), False), (drip, True), (cut_short, True)]:
        server.behaviours["status"] = behaviour
        job = client.submit(ENDPOINT, PAYLOAD)
        if fails:
            with pytest.raises(ServerError):
                ends(job.status)
        else:
            assert ends(job.status).status == "IN_QUEUE"
    server.release.set()  # the drips end


def _settled(counted: Counted, answers: int) -> None:
    wait_until(lambda: len(counted.sent) >= answers, OUTER, "the server to see the client go")


@pytest.mark.slow
def test_a_64_mib_status_body_stops_at_its_cap_after_other_hostile_cases(
    gateways: Gateways, busy: None
) -> None:
    huge = Counted("application/json", b'{"pad": "')
    server = gateways.start()
    with gw.Client(server.base_url, KEY, timeout=1.0, max_retries=0) as client:
        _earlier_hostile_cases(client, server)
        server.behaviours["status"] = huge
        for time in range(TIMES):
            job = client.submit(ENDPOINT, PAYLOAD)
            with pytest.raises(ServerError, match="larger than 8,388,608 bytes"):
                ends(job.status)
            _settled(huge, time + 1)
    assert len(huge.sent) >= TIMES  # the client's own polls met it too
    assert max(huge.sent) <= MAX_ANSWER_BYTES + SLACK, [n / 2**20 for n in huge.sent]


@pytest.mark.slow
def test_rendering_a_64_mib_text_output_reads_at_most_the_embed_limit(
    gateways: Gateways, busy: None
) -> None:
    """``gw.render`` of a text or JSON output with no local copy, whose record declares
    no size: at most the embedding limit is read, and the output is linked."""
    server = gateways.start()
    with gw.Client(server.base_url, KEY, timeout=1.0, max_retries=0) as client:
        _earlier_hostile_cases(client, server)
    for kind, head in [("text/plain", b""), ("application/json", b'{"pad": "')]:
        huge = Counted(kind, head)
        server.behaviours["files"] = huge
        url = f"{server.base_url}/files/t/big"
        output = Output.from_entry({"url": url, "content_type": kind})
        for time in range(TIMES):
            widget = ends(partial(render, output))
            _settled(huge, time + 1)
            assert url in widget.value and "x" * 1000 not in widget.value  # linked
            # its lasting face names no loopback URL and reads none (point 7)
            saved = ends(partial(to_mimebundle, output, fetch=True))["text/html"]
            assert "x" * 1000 not in saved and len(huge.sent) == time + 1
        assert max(huge.sent) <= EMBED_LIMIT + SLACK, [n / 2**20 for n in huge.sent]
        assert json.dumps(output.raw)  # the record itself is untouched
