"""Client construction, configuration and the submit path (no simulator needed)."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import pytest
from fake_gateway import BASE, FakeGateway, speed_up

import genwidgets as gw
from genwidgets import _config
from genwidgets.media import BODY_LIMIT_BYTES as MAX_BODY_BYTES


@pytest.fixture(autouse=True)
def _fast(monkeypatch: pytest.MonkeyPatch) -> None:
    speed_up(monkeypatch)
    for name in (_config.ENV_BASE_URL, _config.ENV_API_KEY):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(_config, "_session_key", None)


def test_import_is_light() -> None:
    import subprocess

    code = (
        "import sys, genwidgets, threading; "
        "print('ipywidgets' in sys.modules, 'genwidgets.simulator' in sys.modules, "
        "threading.active_count())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["False", "False", "1"], out.stderr


def test_key_over_plain_http_to_a_remote_host_is_refused() -> None:
    with pytest.raises(ValueError, match="allow_insecure"):
        gw.Client("http://gateway.example", "sk-123456")
    gw.Client("http://gateway.example", "sk-123456", allow_insecure=True).close()
    gw.Client("http://127.0.0.1:9", "sk-123456").close()  # loopback is fine


def test_environment_configures_the_client(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(_config.ENV_BASE_URL, "https://gw.example/")
    monkeypatch.setenv(_config.ENV_API_KEY, "sk-from-env-999")
    client = gw.Client()
    assert client.base_url == "https://gw.example" and not client.embedded
    assert "sk-from-env-999" not in repr(client)
    client.close()


def test_a_key_without_an_address_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(_config.ENV_API_KEY, "sk-lonely-123")
    with pytest.raises(ValueError, match="GENWIDGETS_BASE_URL"):
        gw.Client()


def test_login_keeps_the_key_in_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeGateway()
    monkeypatch.setattr("getpass.getpass", lambda prompt="": "  sk-typed-4242  ")
    gw.login()
    client = gw.Client(BASE, transport=fake.transport())
    client.submit("ep", {}, validate=False).result(timeout=5)
    assert fake.seen_headers[0]["authorization"] == "Bearer sk-typed-4242"
    assert "sk-typed-4242" not in repr(client)
    assert _config.redact("key sk-typed-4242 here") == "key *** here"
    client.close()
    with pytest.raises(ValueError, match="no key"):
        gw.login("   ")


def test_webhook_fields_are_refused_before_anything_is_sent() -> None:
    fake = FakeGateway()
    client = gw.Client(BASE, "sk-123456", transport=fake.transport())
    for validate in (True, False):
        with pytest.raises(gw.PayloadError, match="webhook") as info:
            client.submit(
                "vidVq2-text2video", {"prompt": "x", "webhook_url": "http://h"}, validate=validate
            )
        assert info.value.errors[0]["loc"] == ("webhook_url",)
    assert fake.log == []
    client.close()


def test_oversized_body_is_refused() -> None:
    fake = FakeGateway()
    client = gw.Client(BASE, "sk-123456", transport=fake.transport())
    with pytest.raises(gw.PayloadError, match="64 MB"):
        client.submit("ep", {"blob": "x" * (MAX_BODY_BYTES + 1)}, validate=False)
    assert fake.log == []
    client.close()


def _count_validations(monkeypatch: pytest.MonkeyPatch, endpoint: str) -> list[object]:
    """Every model validation of ``endpoint``'s model, recorded as it happens."""
    model = gw.endpoint(endpoint).model
    seen: list[object] = []
    original = model.model_validate.__func__  # type: ignore[attr-defined]

    def counting(cls: Any, obj: Any, *args: Any, **kw: Any) -> Any:
        seen.append(obj)
        return original(cls, obj, *args, **kw)

    monkeypatch.setattr(model, "model_validate", classmethod(counting))
    return seen


def test_one_submit_validates_once_and_sends_the_prepared_body(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = FakeGateway()
    client = gw.Client(BASE, "sk-123456", transport=fake.transport(), ledger=False)
    seen = _count_validations(monkeypatch, "vidA-2-0")
    payload = {"content": [{"type": "text", "text": "a red fox, étoile ✨"}]}
    client.submit("vidA-2-0", payload).result(timeout=5)
    assert len(seen) == 1
    prepared = client.prepare("vidA-2-0", payload)
    assert len(seen) == 2
    client.send(prepared).result(timeout=5)
    assert len(seen) == 2  # send never validates again
    assert fake.bodies[-1] == prepared.body == fake.bodies[0]
    assert json.loads(prepared.body) == prepared.payload
    assert "✨".encode() in prepared.body  # UTF-8 on the wire, not \\u escapes
    client.close()


def test_a_prepared_request_is_frozen_and_keeps_no_key() -> None:
    client = gw.Client(BASE, "sk-secret-4711", transport=FakeGateway().transport(), ledger=False)
    prepared = client.prepare("ep", {"prompt": "x"}, validate=False)
    with pytest.raises(AttributeError):
        prepared.body = b"{}"  # type: ignore[misc]
    assert prepared.model is None and prepared.payload == {"prompt": "x"}
    assert "sk-secret-4711" not in repr(prepared) + prepared.body.decode()
    client.close()


def test_the_body_limit_counts_utf8_bytes_of_the_body_sent() -> None:
    fake = FakeGateway()
    client = gw.Client(BASE, "sk-123456", transport=fake.transport(), ledger=False)
    overhead = len(b'{"blob":""}')
    # 2-byte characters: just over the limit in UTF-8 bytes, well under it in characters
    over = "é" * ((MAX_BODY_BYTES - overhead) // 2 + 1)
    with pytest.raises(gw.PayloadError, match="64 MB"):
        client.prepare("ep", {"blob": over}, validate=False)
    # exactly at the limit in bytes; as ASCII-escaped JSON (\\u00e9) it would be 3x larger
    at = "é" * ((MAX_BODY_BYTES - overhead) // 2)
    prepared = client.prepare("ep", {"blob": at}, validate=False)
    assert len(prepared.body) <= MAX_BODY_BYTES
    assert fake.log == []
    client.close()


def test_async_client_prepares_and_sends_once(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeGateway()
    seen = _count_validations(monkeypatch, "vidA-2-0")
    payload = {"content": [{"type": "text", "text": "a fox"}]}

    async def main() -> None:
        async with gw.AsyncClient(BASE, "sk-123456", transport=fake.transport(), ledger=False) as c:
            await (await c.submit("vidA-2-0", payload))
            assert len(seen) == 1
            prepared = c.prepare("vidA-2-0", payload)
            await (await c.send(prepared))
            assert len(seen) == 2

    asyncio.run(main())
    assert fake.bodies[0] == fake.bodies[1]


def test_not_a_dict_is_a_payload_error() -> None:
    client = gw.Client(BASE, "sk-123456", transport=FakeGateway().transport())
    with pytest.raises(gw.PayloadError, match="dict"):
        client.submit("ep", ["prompt"], validate=False)  # type: ignore[arg-type]
    client.close()


def test_async_client_has_the_same_methods_as_coroutines() -> None:
    fake = FakeGateway()

    async def main() -> Any:
        async with gw.AsyncClient(BASE, "sk-123456", transport=fake.transport()) as client:
            job = await client.submit("ep", {"prompt": "x"}, validate=False)
            first = await job
            again = await client.job("ep", job.request_id)
            st = await again.status()
            res = await job.result(5)
            return first.ok, again is job, st.done, res.ok, repr(client)

    ok, same, done, ok2, text = asyncio.run(main())
    assert ok and same and done and ok2 and "sk-123456" not in text
