"""The refusals every queue server shares: a client gone while its body is read."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from genwidgets._config import DEMO_KEY
from genwidgets.protocol.refusals import GONE, read_capped
from genwidgets.simulator.app import create_app
from genwidgets.simulator.config import SimConfig

pytestmark = pytest.mark.timeout(60)


def cut_receive(parts: list[bytes]) -> Any:
    """An ASGI ``receive`` that sends ``parts`` of a body (more to come), then the client
    goes away: a kernel killed mid-create."""
    messages: list[dict[str, Any]] = [
        {"type": "http.request", "body": part, "more_body": True} for part in parts
    ]
    messages.append({"type": "http.disconnect"})

    async def receive() -> dict[str, Any]:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    return receive


def create_scope(length: int) -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/v1/queue/vidVq2-text2video",
        "raw_path": b"/v1/queue/vidVq2-text2video",
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"127.0.0.1"),
            (b"content-type", b"application/json"),
            (b"content-length", str(length).encode()),
            (b"authorization", f"Bearer {DEMO_KEY}".encode()),
        ],
        "client": ("127.0.0.1", 5555),
        "server": ("127.0.0.1", 80),
    }


def test_a_client_gone_mid_body_is_one_log_line(caplog: pytest.LogCaptureFixture) -> None:
    from starlette.requests import Request

    request = Request(create_scope(100), cut_receive([b'{"prompt": "a ki']))
    with caplog.at_level(logging.WARNING), pytest.raises(Exception) as refused:
        asyncio.run(read_capped(request, 2**20))
    assert refused.value.response.status_code == GONE  # type: ignore[attr-defined]
    lines = [r for r in caplog.records if "went away" in r.getMessage()]
    assert len(lines) == 1 and lines[0].exc_info is None
    assert "16 bytes" in lines[0].getMessage()


def test_the_simulator_logs_a_cut_create_in_one_line(caplog: pytest.LogCaptureFixture) -> None:
    app, state = create_app(SimConfig())
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    try:
        with caplog.at_level(logging.DEBUG):
            asyncio.run(app(create_scope(100), cut_receive([b'{"prompt": "a ki']), send))
    finally:
        state.close()
    assert not [r for r in caplog.records if r.exc_info is not None]  # no traceback
    assert [r.levelno for r in caplog.records if "went away" in r.getMessage()] == [logging.WARNING]
    assert sent[0]["status"] == GONE  # answered to nobody; nothing made
    assert state.stats["created"] == 0
