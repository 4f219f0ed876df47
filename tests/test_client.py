"""Client construction, configuration and the submit path (no simulator needed)."""

from __future__ import annotations

import _thread
import asyncio
import concurrent.futures
import errno
import json
import signal
import sqlite3
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from fake_gateway import BASE, FakeGateway, error, speed_up
from loopback import HeldCreates, LoopbackServer, OneTaskGateway, held_creates_gateway
from widgets.taskfakes import wait_for

import genwidgets as gw
from genwidgets import _client as client_module
from genwidgets import _config
from genwidgets.jobs.ledger import Ledger
from genwidgets.protocol.prepared import BODY_LIMIT_BYTES as MAX_BODY_BYTES


@pytest.fixture(autouse=True)
def _fast(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    speed_up(monkeypatch, tmp_path / "home")
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


@pytest.mark.slow
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


@pytest.mark.slow
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


# -- closing is a clear end (ClientClosed) --------------------------------------------


def test_close_ends_live_jobs_and_later_calls_with_client_closed() -> None:
    fake = FakeGateway()
    client = gw.Client(BASE, "sk-123456", transport=fake.transport())
    done = client.submit("ep", {"n": 0}, validate=False)
    assert done.result(timeout=5).ok
    fake.next_statuses = [{"status": "IN_PROGRESS"}]
    live = client.submit("ep", {"n": 1}, validate=False)
    assert client.ledger is not None
    rows_before = len(client.ledger.rows(client.gateway_name))
    client.close()
    with pytest.raises(gw.ClientClosed, match="may still run") as info:
        live.result(timeout=20)  # at once, not after the timeout
    assert f".job('ep', '{live.request_id}')" in str(info.value)
    assert done.result(timeout=1).ok  # a finished job keeps its result
    for call in (
        lambda: client.submit("ep", {"n": 2}, validate=False),
        lambda: client.job("ep", "req-other"),
        lambda: client.history(),
        lambda: client.resume(),
        live.status,
        live.cancel,
    ):
        with pytest.raises(gw.ClientClosed):
            call()
    assert fake.count("cancel") == 0
    assert len(client.ledger.rows(client.gateway_name)) == rows_before  # no row written
    client.close()  # twice is fine


# -- outcomes as they are --------------------------------------------------------------


@pytest.mark.parametrize(
    ("fault", "error", "state"),
    [
        (httpx.ConnectError("refused"), gw.Unreachable, "not_created"),
        (httpx.ConnectTimeout("dns"), gw.Unreachable, "not_created"),
        (error(400, {"detail": "bad input"}), gw.GatewayError, "not_created"),
        (error(422, {"detail": [{"msg": "bad"}]}), gw.GatewayError, "not_created"),
        (httpx.ReadTimeout("lost"), gw.OutcomeUnknown, "outcome_unknown"),
        (error(502, "<html>bad gateway</html>"), gw.OutcomeUnknown, "outcome_unknown"),
    ],
)
def test_a_failed_create_is_recorded_as_what_is_known(
    fault: Any, error: type[Exception], state: str
) -> None:
    fake = FakeGateway()
    fake.faults["create"].extend([fault] * 3)  # beyond max_retries=2 for connect errors
    client = gw.Client(BASE, "sk-123456", transport=fake.transport())
    with pytest.raises(error):
        client.submit("ep", {"n": 1}, validate=False)
    assert client.ledger is not None
    (row,) = client.ledger.rows(client.gateway_name)
    assert row.state == state
    client.close()


def test_a_refused_connection_on_loopback_is_unreachable_and_not_created() -> None:
    import socket

    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = gw.Client(f"http://127.0.0.1:{port}", "sk-123456", max_retries=0)
    with pytest.raises(gw.Unreachable, match="cannot reach"):
        client.submit("ep", {"n": 1}, validate=False)
    assert client.ledger is not None
    assert [r.state for r in client.ledger.rows(client.gateway_name)] == ["not_created"]
    client.close()


# -- the client that pays is never guessed ---------------------------------------------


@pytest.fixture
def no_live_clients(monkeypatch: pytest.MonkeyPatch) -> None:
    from genwidgets import _client

    monkeypatch.setattr(_client, "LIVE_CLIENTS", _client.LiveClients())


@pytest.mark.slow
@pytest.mark.usefixtures("no_live_clients")
def test_default_client_uses_the_one_live_client_and_refuses_to_guess() -> None:
    from genwidgets._client import default_client, live_client

    assert live_client() is None
    one = gw.Client("https://a.test", "sk-123456", ledger=False)
    same = gw.Client("https://a.test", "sk-123456", ledger=False)
    assert default_client() is same is live_client()  # one gateway and key: the newest
    assert "simulated" not in gw.form("asset-get").title.value  # the badge asks the same
    other = gw.Client("https://b.test", "sk-123456", ledger=False)
    assert live_client() is None  # a badge never raises; a submit does
    with pytest.raises(gw.AmbiguousClient, match="client=") as info:
        default_client()
    assert any("a.test" in c for c in info.value.clients)
    assert any("b.test" in c for c in info.value.clients)
    with pytest.raises(gw.AmbiguousClient):
        gw.grids()  # the lab asks the same function
    other_key = gw.Client("https://a.test", "sk-654321", ledger=False)
    other.close()
    with pytest.raises(gw.AmbiguousClient):  # same gateway, another key: another payer
        default_client()
    other_key.close()
    assert default_client() is same
    same.close()
    one.close()


@pytest.mark.usefixtures("no_live_clients")
def test_default_client_without_live_clients_comes_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from genwidgets._client import default_client

    monkeypatch.setenv(_config.ENV_BASE_URL, "https://env.test")
    monkeypatch.setenv(_config.ENV_API_KEY, "sk-env-2222")
    made = default_client()
    assert made.base_url == "https://env.test" and not made.embedded
    assert default_client() is made
    made.close()


# -- the key never shows in a traceback's locals ---------------------------------------

SECRET = "sk-VERBOSE-3f9a1c77e2"


def _every_local(tb: Any) -> list[tuple[str, str, str]]:
    seen = []
    while tb is not None:
        frame = tb.tb_frame
        for name, value in frame.f_locals.items():
            seen.append((frame.f_code.co_name, name, repr(value)))
        tb = tb.tb_next
    return seen


def test_refusing_plain_http_never_shows_the_password_of_the_address() -> None:
    with pytest.raises(ValueError, match="plain http") as info:
        gw.Client("http://alice:pa55-word@gateway.example", SECRET)
    assert "pa55-word" not in str(info.value) and "alice:***@" in str(info.value)


@pytest.mark.parametrize(
    ("args", "kw", "env"),
    [
        (("http://gateway.example", SECRET), {}, {}),  # refused: plain http to a remote host
        ((), {}, {_config.ENV_API_KEY: SECRET}),  # a key with no address
        (("https://gateway.example", SECRET), {"timeout": "soon"}, {}),  # fails in the engine
    ],
)
def test_the_key_never_appears_in_a_verbose_traceback(
    monkeypatch: pytest.MonkeyPatch, args: tuple[Any, ...], kw: dict[str, Any], env: dict[str, str]
) -> None:
    import traceback

    from IPython.core.ultratb import VerboseTB

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(Exception) as info:
        gw.Client(*args, **kw)
    exc = info.value
    tb = exc.__traceback__
    assert tb is not None
    tb = tb.tb_next  # from the library's first frame on (this test's own frame holds the key)
    assert tb is not None and "genwidgets" in tb.tb_frame.f_code.co_filename
    verbose = VerboseTB().text(type(exc), exc, tb)
    with_locals = "".join(
        traceback.TracebackException(type(exc), exc, tb, capture_locals=True).format()
    )
    assert "api_key = Secret('***')" in with_locals  # the first frame holds the wrapper
    assert SECRET not in verbose and SECRET not in with_locals
    assert [(f, n) for f, n, text in _every_local(tb) if SECRET in text] == []


@pytest.mark.slow
def test_ipython_verbose_mode_never_shows_the_key(tmp_path: Any) -> None:
    """As a user meets it: ``%xmode Verbose`` in IPython and a refused client whose key
    comes from the environment (so the user's own cell does not hold it)."""
    import os
    import subprocess

    script = tmp_path / "cell.ipy"
    script.write_text(
        'get_ipython().run_line_magic("xmode", "Verbose")\n'
        "import genwidgets as gw\n"
        "client = gw.Client()\n",
        encoding="utf-8",
    )
    env = {
        **os.environ,
        _config.ENV_BASE_URL: "http://gateway.example",
        _config.ENV_API_KEY: SECRET,
        "GENWIDGETS_HOME": str(tmp_path),
    }
    out = subprocess.run(
        [sys.executable, "-m", "IPython", "--no-banner", "--colors=nocolor", str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    text = out.stdout + out.stderr
    assert "refusing to send the API key" in text and "Client.__init__(" in text  # verbose
    assert SECRET not in text


def test_one_client_contract() -> None:
    """``ClientLike`` is the only Protocol a client is typed against (no per-widget copies)."""
    import re

    import genwidgets

    root = Path(genwidgets.__file__).parent
    protocols = {
        f"{path.relative_to(root)}:{name}"
        for path in root.rglob("*.py")
        for name in re.findall(r"^class (\w+)\(Protocol\):", path.read_text("utf-8"), re.M)
        if "client" in name.lower() or "ledger" in name.lower()
    }
    assert protocols == {"_protocols.py:ClientLike"}


# -- many creates: the one batch sender ------------------------------------------------


class SlowCreates:
    """An async transport over the fake gateway whose creates wait until opened,
    counting how many are in flight at once."""

    def __init__(self, fake: FakeGateway, allow: int = 0) -> None:
        self.fake = fake
        self.in_flight = 0
        self.peak = 0
        self.arrived = 0
        self.allow = allow  # creates answered before the gate is opened
        self.opened = False

    async def handle(self, request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            self.arrived += 1
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            try:
                while not self.opened and self.arrived > self.allow:
                    await asyncio.sleep(0.005)
            finally:
                self.in_flight -= 1
        return self.fake.handle(request)


def test_send_many_keeps_concurrency_creates_in_flight_and_answers_in_order() -> None:
    import threading

    fake = FakeGateway()
    slow = SlowCreates(fake)
    fake.faults["create"].extend([None, None, error(422, {"detail": "bad seed"})])
    client = gw.Client(BASE, "sk-123456", transport=httpx.MockTransport(slow.handle))
    requests = [client.prepare("ep", {"seed": i}, validate=False) for i in range(6)]
    heard: list[int] = []
    outcomes: list[Any] = []
    sender = threading.Thread(
        target=lambda: outcomes.extend(
            client.send_many(requests, concurrency=2, on_sent=lambda i, _o: heard.append(i))
        )
    )
    sender.start()
    wait_for(lambda: slow.in_flight >= 2, timeout=30)
    assert slow.in_flight == 2 and fake.count("create") == 0  # two wait at the gateway
    slow.opened = True
    sender.join(timeout=60)
    assert not sender.is_alive() and slow.peak == 2
    assert sorted(heard) == list(range(6))
    failed = [o for o in outcomes if isinstance(o, Exception)]
    assert len(failed) == 1 and isinstance(failed[0], gw.GatewayError)  # one 422: not created
    jobs = [o for o in outcomes if isinstance(o, gw.Job)]
    assert [j.payload for j in jobs] == [
        {"seed": i} for i in range(6) if outcomes[i] is not failed[0]
    ]
    assert client.ledger is not None
    states = sorted(r.state for r in client.ledger.rows(client.gateway_name))
    assert states.count("not_created") == 1 and "submitting" not in states
    client.close()


def test_an_interrupted_batch_leaves_no_row_without_an_outcome(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(client_module, "CREATE_ANSWER_GRACE", 0.2)  # the creates never answer
    fake = FakeGateway()
    slow = SlowCreates(fake, allow=1)  # the first create answers; the next ones wait
    client = gw.Client(BASE, "sk-123456", transport=httpx.MockTransport(slow.handle))
    requests = [client.prepare("ep", {"seed": i}, validate=False) for i in range(5)]

    def interrupt(index: int, outcome: Any) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        client.send_many(requests, concurrency=1, on_sent=interrupt)
    assert client.ledger is not None
    rows = client.ledger.rows(client.gateway_name)
    # a create writes its intent as it leaves: those that never began leave no row (a
    # process killed then leaves them known never sent); concurrency 1: the one answered
    # and at most the one that had begun
    assert 1 <= len(rows) <= 2
    states = [r.state for r in client.ledger.rows(client.gateway_name)]
    assert "submitting" not in states  # each one sent, not sent, or outcome unknown
    assert sum(s in ("submitted", "finished") for s in states) == 1  # the one answered
    assert set(states) <= {"submitted", "finished", "outcome_unknown", "not_created"}
    # "not created" is never said of a create that reached the gateway
    assert states.count("not_created") <= 5 - slow.arrived
    client.close()


def test_a_create_of_send_many_waiting_after_a_rate_limit_is_recorded_as_not_yet_sent() -> None:
    """A create refused for the rate limit, then sent again once the gate opens: the try
    refused is settled as making nothing before the next waits its turn, and the next
    has an intent of its own written as it leaves; so a process killed while it waited
    at the gate leaves only "not created" for it (a batch sends it again), never a
    create that may have left (docs/decisions.md#one-batch-sender)."""
    fake = FakeGateway()
    limited = {"error": {"code": "RATE_LIMIT_EXCEEDED", "message": "slow down"}}
    fake.faults["create"].append(error(429, limited, {"Retry-After": "0.2"}))
    with gw.Client(BASE, "sk-123456", transport=fake.transport()) as client:
        prepared = client.prepare("ep", {"seed": 1}, validate=False)
        [job] = client.send_many([prepared], tags=["batch b row 0 attempt 1"])
        assert isinstance(job, gw.Job) and fake.count("create") == 2
        assert client.ledger is not None
        records = client.ledger.tagged(["batch b row 0 attempt 1"])
        assert records[0].state == "not_created"
        assert [r.request_id for r in records] == [None, job.request_id]


def test_send_many_on_a_closed_client_sends_nothing() -> None:
    fake = FakeGateway()
    client = gw.Client(BASE, "sk-123456", transport=fake.transport())
    requests = [client.prepare("ep", {"seed": 1}, validate=False)]
    client.close()
    with pytest.raises(gw.ClientClosed):
        client.send_many(requests)
    assert fake.count("create") == 0


@pytest.mark.parametrize("bad", ["bad\x00id", "", "x" * 5000])
def test_re_attaching_by_a_request_id_no_url_can_carry_is_a_payload_error(bad: str) -> None:
    fake = FakeGateway()
    client = gw.Client(BASE, "sk-123456", transport=fake.transport())
    try:
        with pytest.raises(gw.PayloadError) as caught:
            client.job("ep", bad)
        assert caught.value.errors[0]["loc"] == ("request_id",)
        assert "request_id" in str(caught.value)
        assert not fake.log  # nothing was sent
    finally:
        client.close()


class InterruptedCreate:
    """A create during which Ctrl-C arrives (the process's SIGINT, as a kernel interrupt
    sends it): its answer comes once the interrupt was heard, or never (``answer``)."""

    def __init__(self, fake: FakeGateway, *, answer: bool) -> None:
        self.fake = fake
        self.answer = answer
        self.heard = threading.Event()

    def on_sigint(self, signum: int, frame: Any) -> None:
        self.heard.set()
        raise KeyboardInterrupt

    async def handle(self, request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            _thread.interrupt_main(signal.SIGINT)
            for _ in range(2000):  # at most 10 s; cancelled sooner when never answered
                if self.heard.is_set() and self.answer:
                    break
                await asyncio.sleep(0.005)
        return self.fake.handle(request)


@pytest.fixture
def sigint() -> Any:
    """Restores the process's SIGINT handler after a test that sets its own."""
    previous = signal.getsignal(signal.SIGINT)
    yield
    signal.signal(signal.SIGINT, previous)


def test_ctrl_c_during_submit_lets_the_create_answer_and_names_its_task(sigint: Any) -> None:
    fake = FakeGateway()
    create = InterruptedCreate(fake, answer=True)
    signal.signal(signal.SIGINT, create.on_sigint)
    client = gw.Client(BASE, "sk-123456", transport=httpx.MockTransport(create.handle))
    with pytest.raises(
        KeyboardInterrupt, match=r"created task req-1 .* client\.job\('ep', 'req-1'\)"
    ):
        client.submit("ep", {"prompt": "paid"}, validate=False)
    assert create.heard.is_set()
    assert client.ledger is not None
    [row] = client.ledger.rows(client.gateway_name)
    assert row.request_id == "req-1" and row.state in ("submitted", "finished")
    assert client.job("ep", "req-1").result(timeout=5).ok  # followed: never sent again
    assert fake.count("create") == 1
    client.close()


def test_ctrl_c_during_submit_past_the_grace_says_outcome_unknown(
    sigint: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(client_module, "CREATE_ANSWER_GRACE", 0.2)
    create = InterruptedCreate(FakeGateway(), answer=False)
    signal.signal(signal.SIGINT, create.on_sigint)
    client = gw.Client(BASE, "sk-123456", transport=httpx.MockTransport(create.handle))
    with pytest.raises(KeyboardInterrupt, match=r"did not answer the create within 0\.2 s"):
        client.submit("ep", {"prompt": "paid"}, validate=False)
    assert client.ledger is not None
    [row] = client.ledger.rows(client.gateway_name)
    assert row.state == "outcome_unknown" and row.request_id is None
    assert row.error is not None and "interrupted before the gateway answered" in row.error
    client.close()


def test_ctrl_c_during_send_many_lets_the_creates_in_flight_answer_and_names_their_tasks(
    sigint: Any,
) -> None:
    """A real SIGINT while two creates of ``send_many`` wait at the gateway: as in
    ``send``, they are let answer, so the tasks the gateway made (and bills) are in the
    ledger and followed, and the interrupt names them; the four never sent left nothing.
    Before, they were cut at once: two tasks made, no id kept, an empty message."""
    host = HeldCreates()
    heard = threading.Event()
    host.release = heard.is_set  # the gateway answers once the Ctrl-C was heard

    def on_sigint(signum: int, frame: Any) -> None:
        heard.set()
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_sigint)
    gateway = held_creates_gateway(host)
    client = gw.Client(gateway.base, "sk-123456")
    requests = [client.prepare("ep", {"seed": i}, validate=False) for i in range(6)]

    def press() -> None:  # Ctrl-C once two creates wait at the gateway
        if wait_for(lambda: host.held == 2, timeout=30):
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)

    threading.Thread(target=press, daemon=True).start()
    try:
        with pytest.raises(
            KeyboardInterrupt,
            match=r"of 6 requests, the gateway created 2 tasks \(r[12] on ep, r[12] on ep\).*"
            r"client\.jobs.*4 made nothing",
        ):
            client.send_many(requests, concurrency=2)
        assert client.ledger is not None
        rows = client.ledger.rows(client.gateway_name)
        assert sorted(r.request_id for r in rows if r.request_id) == ["r1", "r2"]
        # the four never sent left no record: an intent is written as its create leaves
        assert [r.state for r in rows if not r.request_id] == []
        assert sorted(job.request_id for job in client.jobs) == ["r1", "r2"]  # followed
        assert host.creates == 2
    finally:
        client.close()
        gateway.close()


def test_send_many_stopped_from_another_thread_sends_no_more_and_names_what_it_made() -> None:
    """``stop`` set from another thread (an AsyncClient's cancelled caller) while two
    creates wait at the gateway: none leaves from then on, the two answer and are
    followed, and ``CancelledError`` names the tasks made, as Ctrl-C's interrupt does."""
    host = HeldCreates()
    stop = threading.Event()
    host.release = stop.is_set  # the gateway answers once the stop was set
    gateway = held_creates_gateway(host)
    client = gw.Client(gateway.base, "sk-123456")
    requests = [client.prepare("ep", {"seed": i}, validate=False) for i in range(6)]
    pool = ThreadPoolExecutor(1)
    try:
        sent = pool.submit(client.send_many, requests, concurrency=2, stop=stop)
        assert wait_for(lambda: host.held == 2, timeout=30)
        stop.set()
        with pytest.raises(
            concurrent.futures.CancelledError,
            match=r"cancelled; of 6 requests, the gateway created 2 tasks .*4 made nothing",
        ):
            sent.result(timeout=60)
        assert sorted(job.request_id for job in client.jobs) == ["r1", "r2"]
        assert host.creates == 2
    finally:
        pool.shutdown()
        client.close()
        gateway.close()


def test_a_create_stopped_while_its_intent_is_written_never_leaves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A ledger slow to take a ``send_many`` create's intent (a busy disk) holds the
    create at its last step before the wire; a stop set meanwhile keeps it from leaving,
    its row not created. Before, the stop was read only before the intent: it left."""
    fake = FakeGateway()
    client = gw.Client(BASE, "sk-123456", transport=fake.transport())
    assert client.ledger is not None
    writes = client.ledger.writes
    record = writes.record_intent_as_it_leaves
    writing, stop = threading.Event(), threading.Event()

    async def slow_to_write(**intent: Any) -> int:
        writing.set()
        for _ in range(3000):  # until the stop, 30 s at most
            if stop.is_set():
                break
            await asyncio.sleep(0.01)
        return await record(**intent)

    monkeypatch.setattr(writes, "record_intent_as_it_leaves", slow_to_write)
    requests = [client.prepare("ep", {}, validate=False)]
    pool = ThreadPoolExecutor(1)
    try:
        sent = pool.submit(client.send_many, requests, concurrency=1, stop=stop)
        assert wait_for(writing.is_set, timeout=30)
        stop.set()
        with pytest.raises(concurrent.futures.CancelledError, match="1 made nothing"):
            sent.result(timeout=60)
        assert fake.count("create") == 0
        assert [r.state for r in client.ledger.rows(client.gateway_name)] == ["not_created"]
    finally:
        pool.shutdown()
        client.close()


def test_a_with_block_left_by_an_error_lets_creates_in_flight_answer_and_keeps_their_ids() -> None:
    """The script's own error leaves ``with gw.Client()`` while three creates of its
    threads wait at the gateway: the close lets them answer, so each task made (and
    billed) is in the ledger with its request id, a warning names them, and a new client
    resumes them without a create. Before, the close cut them: three made, no id kept."""
    host = HeldCreates()
    gateway = held_creates_gateway(host)
    client = gw.Client(gateway.base, "sk-123456")
    host.release = lambda: client.closed  # the gateway answers once the close has begun
    pool = ThreadPoolExecutor(3)
    try:
        with (
            pytest.warns(
                gw.GenwidgetsWarning,
                match=r"closing the client, waited for the answers to 3 creates in flight .*"
                r"created 3 tasks \(r\d on ep, r\d on ep, r\d on ep\).*client\.resume\(\)",
            ),
            pytest.raises(RuntimeError, match="own error"),
            client,
        ):
            sent = [pool.submit(client.submit, "ep", {"seed": i}, validate=False) for i in range(3)]
            assert wait_for(lambda: host.held == 3, timeout=30)
            raise RuntimeError("the script's own error")
        assert sorted(future.result(timeout=60).request_id for future in sent) == ["r1", "r2", "r3"]
        assert client.ledger is not None
        rows = client.ledger.rows(client.gateway_name)
        assert sorted(row.request_id or "" for row in rows) == ["r1", "r2", "r3"]
        again = gw.Client(gateway.base, "sk-123456")
        assert sorted(job.request_id for job in again.resume()) == ["r1", "r2", "r3"]
        again.close()
        assert host.creates == 3  # none sent twice
    finally:
        pool.shutdown()
        gateway.close()


def test_a_close_waits_for_a_create_at_most_the_grace_and_says_it_may_have_made_a_task(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(client_module, "CREATE_ANSWER_GRACE", 0.2)
    host = HeldCreates()
    released = threading.Event()
    host.release = released.is_set
    gateway = held_creates_gateway(host)
    client = gw.Client(gateway.base, "sk-123456")
    pool = ThreadPoolExecutor(1)
    try:
        sent = pool.submit(client.submit, "ep", {}, validate=False)
        assert wait_for(lambda: host.held == 1, timeout=30)
        with pytest.warns(gw.GenwidgetsWarning, match=r"1 may have made a task .*outcome unknown"):
            client.close()
        assert host.held == 1  # the close ended while the gateway still held the create
        with pytest.raises(gw.OutcomeUnknown):
            sent.result(timeout=60)
        assert client.ledger is not None
        [row] = client.ledger.rows(client.gateway_name)
        assert row.state == "outcome_unknown" and row.request_id is None
    finally:
        released.set()
        pool.shutdown()
        gateway.close()


def refusing_the_first_create() -> FakeGateway:
    """A gateway that refuses the first create for the rate limit (Retry-After 1 s)."""
    fake = FakeGateway()
    limited = {"error": {"code": "RATE_LIMIT_EXCEEDED", "message": "slow down"}}
    fake.faults["create"].append(error(429, limited, {"Retry-After": "1"}))
    return fake


def ctrl_c_once_it_was_refused(fake: FakeGateway) -> None:
    """A real SIGINT to the main thread (raising KeyboardInterrupt) once ``fake`` saw a create."""

    def press() -> None:
        if wait_for(lambda: fake.count("create") == 1, timeout=30):
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)

    signal.signal(signal.SIGINT, signal.default_int_handler)
    threading.Thread(target=press, daemon=True).start()


def test_ctrl_c_in_send_many_while_a_create_waits_at_the_rate_gate_sends_it_never(
    sigint: Any,
) -> None:
    """A real SIGINT while a create of ``send_many`` waits at the rate gate (refused 429,
    Retry-After 1 s): it never leaves, the interrupt says it made nothing, and the ledger
    says not created. Before, the grace for creates in flight counted it, so it left
    after the interrupt: a task made after the user asked to stop."""
    fake = refusing_the_first_create()
    client = gw.Client(BASE, "sk-123456", transport=fake.transport())
    requests = [client.prepare("ep", {"seed": 1}, validate=False)]
    ctrl_c_once_it_was_refused(fake)
    try:
        with pytest.raises(KeyboardInterrupt, match=r"of 1 requests, 1 made nothing"):
            client.send_many(requests, concurrency=1)
        assert fake.count("create") == 1  # the refused try only
        assert client.ledger is not None
        assert [r.state for r in client.ledger.rows(client.gateway_name)] == ["not_created"]
    finally:
        client.close()


def test_ctrl_c_in_submit_while_its_create_waits_at_the_rate_gate_sends_it_never(
    sigint: Any,
) -> None:
    """As in ``send_many``: Ctrl-C while the create of ``submit`` waits at the rate gate
    (refused 429, Retry-After 1 s) stops it there, nothing more sent, its row not created.
    Before, the grace let it leave after the interrupt and named the task it made."""
    fake = refusing_the_first_create()
    client = gw.Client(BASE, "sk-123456", transport=fake.transport())
    ctrl_c_once_it_was_refused(fake)
    try:
        with pytest.raises(KeyboardInterrupt, match=r"nothing was sent, no task made"):
            client.submit("ep", {}, validate=False)
        assert fake.count("create") == 1
        assert client.ledger is not None
        [row] = client.ledger.rows(client.gateway_name)
        assert row.state == "not_created" and row.request_id is None
    finally:
        client.close()


def test_a_close_while_a_create_waits_at_the_rate_gate_sends_it_never() -> None:
    """close() while a ``submit`` on another thread waits at the rate gate (refused 429,
    Retry-After 1 s): the create ends at once with ``ClientClosed``, nothing more sent,
    its row not created. Before, the close's grace let it leave after the close began
    (and, a Retry-After past the grace, cut it with httpx's own RuntimeError)."""
    fake = refusing_the_first_create()
    client = gw.Client(BASE, "sk-123456", transport=fake.transport())
    pool = ThreadPoolExecutor(1)
    try:
        sent = pool.submit(client.submit, "ep", {}, validate=False)
        assert wait_for(lambda: fake.count("create") == 1, timeout=30)
        client.close()
        with pytest.raises(gw.ClientClosed) as info:
            sent.result(timeout=60)
        assert fake.count("create") == 1
        assert client.ledger is not None
        [row] = client.ledger.rows(client.gateway_name)
        assert row.state == "not_created"
        # its words say so, not the close's own ("a task may still run at the gateway")
        said = "the client closed before this create was sent: nothing was sent, no task made"
        assert info.value.never_sent and str(info.value).startswith(
            f"{said}, nothing paid; send it again from a new client (gw.Client())"
        )
        assert row.error is not None and said in row.error
    finally:
        pool.shutdown()


def test_a_close_while_a_batch_row_waits_at_the_rate_gate_says_a_new_run_sends_it() -> None:
    """As above, for a create of ``send_many`` (a batch's or a grid's row): its outcome
    says it was never sent and that running it again sends it."""
    fake = refusing_the_first_create()
    client = gw.Client(BASE, "sk-123456", transport=fake.transport())
    requests = [client.prepare("ep", {"seed": 1}, validate=False)]
    pool = ThreadPoolExecutor(1)
    try:
        sent = pool.submit(client.send_many, requests, concurrency=1)
        assert wait_for(lambda: fake.count("create") == 1, timeout=30)
        client.close()
        [outcome] = sent.result(timeout=60)
        assert isinstance(outcome, gw.ClientClosed) and outcome.never_sent
        assert "before this create was sent: nothing was sent, no task made" in str(outcome)
        assert "running it again from a new client (the batch, the grid or send_many)" in str(
            outcome
        )
        assert "may still run" not in str(outcome) and fake.count("create") == 1
    finally:
        pool.shutdown()


def test_a_close_from_a_job_callback_closes_the_client_whole() -> None:
    """``client.close()`` from a job's done callback (the engine thread, which cannot
    wait for itself): the close is scheduled there, so the client's other jobs end with
    ``ClientClosed``. Before, it refused with a RuntimeError after marking the client
    closed: a half-closed client that a later close() did not finish."""
    fake = FakeGateway()
    client = gw.Client(BASE, "sk-123456", transport=fake.transport())
    fake.next_statuses = [{"status": "IN_PROGRESS"}]  # the second task never ends
    fake.next_result = None
    first_rid = fake.add_task(
        "ep", [{"status": "COMPLETED"}], {"status": "COMPLETED", "outputs": []}
    )
    running = client.submit("ep", {}, validate=False)
    closing: list[BaseException | None] = []

    def close(job: gw.Job) -> None:
        try:
            client.close()
            closing.append(None)
        except BaseException as exc:
            closing.append(exc)

    first = client.job("ep", first_rid)
    first.add_done_callback(close)
    assert wait_for(lambda: bool(closing), timeout=30)
    assert closing == [None] and client.closed
    assert wait_for(running.done, timeout=30)
    assert isinstance(running.exception(), gw.ClientClosed)


def test_a_script_that_ends_with_a_create_in_flight_lets_it_answer_first(tmp_path: Path) -> None:
    """An AsyncClient never closed, its create still in flight on a worker thread when
    the script ends: the exit lets the create answer, so the task is in the ledger with
    its request id. Before, the exit cut it: made and billed, the row left submitting."""
    import subprocess

    host = HeldCreates()
    ended = threading.Event()
    host.release = ended.is_set
    gateway = held_creates_gateway(host)
    script = (
        "import asyncio, sys, genwidgets as gw\n"
        f"client = gw.AsyncClient({gateway.base!r}, 'sk-123456')\n"
        "async def main():\n"
        "    sending = asyncio.ensure_future(client.submit('ep', {}, validate=False))\n"
        "    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)\n"
        "    print('ends', flush=True)\n"
        "asyncio.run(main())\n"
    )
    script_run = subprocess.Popen(
        [sys.executable, "-c", script],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert wait_for(lambda: host.held == 1, timeout=60)
        assert script_run.stdin is not None and script_run.stdout is not None
        script_run.stdin.write("the create waits at the gateway\n")
        script_run.stdin.flush()
        assert script_run.stdout.readline() == "ends\n"
        said: list[str] = []
        reader = threading.Thread(target=lambda: said.extend(script_run.stderr), daemon=True)
        reader.start()
        # the gateway answers once the exit waits for it (answered sooner, on a loaded
        # machine before the exit began, there would be nothing in flight to wait for)
        assert wait_for(lambda: any("exiting; waiting" in line for line in said), timeout=60)
        ended.set()
        script_run.wait(timeout=120)
        reader.join(timeout=60)
        err = "".join(said)
        client = gw.Client(gateway.base, "sk-123456")
        assert client.ledger is not None
        [row] = client.ledger.rows(client.gateway_name)
        assert row.request_id == "r1"
        assert "exiting, waited for the answers to 1 create in flight" in err
        assert "r1 on ep" in err
        assert [job.request_id for job in client.resume()] == ["r1"]
        client.close()
        assert host.creates == 1
    finally:
        ended.set()
        if script_run.poll() is None:
            script_run.kill()
            script_run.communicate()
        gateway.close()


def test_run_s_timeout_bounds_its_create_too_and_never_cuts_it() -> None:
    """``run(timeout=...)`` against a gateway that holds the create: it raises
    ``OutcomeUnknown`` at the timeout, though the create has not answered; the create
    goes on, and the task it makes is recorded and followed. Before, the timeout bounded
    only the result: the run waited for the create's own 30 s request timeout."""
    host = HeldCreates()
    released = threading.Event()
    host.release = released.is_set
    gateway = held_creates_gateway(host)
    client = gw.Client(gateway.base, "sk-123456")
    try:
        with pytest.raises(
            gw.OutcomeUnknown,
            match=r"no answer to the create within the run's timeout of 0\.3 s.*"
            r"client\.history\(\)",
        ):
            client.run("genW2.5-t2i-preview", {"prompt": "a kite"}, timeout=0.3)
        # the run ended before the create answered (on a loaded machine the create may
        # reach the gateway only after the run's 0.3 s): the create goes on and is held
        assert wait_for(lambda: host.held == 1, timeout=30)
        released.set()
        assert client.ledger is not None
        ledger = client.ledger
        assert wait_for(
            lambda: [r.request_id for r in ledger.rows(client.gateway_name)] == ["r1"],
            timeout=30,
        )
        # the job joins client.jobs just after its row has the id (a loaded machine sees
        # the gap)
        assert wait_for(lambda: len(client.jobs) == 1, timeout=30)
        [job] = client.jobs
        assert job.result(timeout=30).ok
        assert host.creates == 1
    finally:
        released.set()
        client.close()
        gateway.close()


def test_credentials_in_the_base_url_are_never_shown_nor_stored(tmp_path: Path) -> None:
    fake = FakeGateway()
    url = "https://alice:basic-PASSWORD-77@gateway.test"
    client = gw.Client(url, "sk-123456", transport=fake.transport())
    assert repr(client) == "<Client https://alice:***@gateway.test>"
    assert client.gateway_name == "https://alice:***@gateway.test"
    fake.faults["create"].extend([httpx.ConnectError("down")] * 3)  # and its retries
    with pytest.raises(gw.Unreachable) as refused:
        client.submit("ep", {}, validate=False)
    assert "alice:***@gateway.test" in str(refused.value)
    assert "PASSWORD" not in str(refused.value)
    assert client.submit("ep", {}, validate=False).result(timeout=10).ok
    # a task followed by its id: its documented URLs are built on the address
    running = [{"status": "IN_PROGRESS"}] * 50 + [{"status": "COMPLETED"}]
    rid = fake.add_task("ep", running, {"status": "COMPLETED", "outputs": []})
    followed = client.job("ep", rid)
    assert "PASSWORD" not in repr(followed.handle) and "alice:***@" in repr(followed.handle)
    assert wait_for(lambda: fake.tasks[rid].polls > 0)
    before = fake.seen_headers[-1]["authorization"]
    assert before.startswith("Basic ")  # httpx sends the address's own credentials
    client.close()  # the kernel stops while the task runs
    again = gw.Client(url, "sk-123456", transport=fake.transport())
    [resumed] = again.resume()
    assert resumed.request_id == rid and resumed.result(timeout=10).ok
    # followed after the restart with the credentials it was followed with before
    assert fake.seen_headers[-1]["authorization"] == before
    again.close()
    for path in (tmp_path / "home").rglob("*"):
        if path.is_file():
            assert b"PASSWORD" not in path.read_bytes(), path


class ShownLate(OneTaskGateway):
    """A gateway whose new task answers 404 until ``shown`` is set (a replica behind),
    then is done."""

    shown = threading.Event()
    asked_before = 0

    def do_GET(self) -> None:
        if not self.shown.is_set():
            type(self).asked_before += 1
            self.send_json({"detail": "Request not found"}, code=404)
        elif self.path.endswith("/status"):
            self.send_json({"request_id": "r1", "status": "COMPLETED"})
        else:
            self.send_json({"request_id": "r1", "status": "COMPLETED", "outputs": []})


def test_a_task_made_moments_ago_is_not_believed_gone_but_a_bare_wrong_id_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """404 for the first seconds after its create: the job ended "no longer known" after
    3 s and the ledger recorded it ended, so resume() and the CLI never asked again and
    its paid outputs were never fetched."""
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path))
    ShownLate.shown, ShownLate.asked_before = threading.Event(), 0
    gateway = LoopbackServer(ShownLate)
    policy = gw.PollPolicy(first=0.05, growth=0.0, not_found_grace=0.2)
    try:
        with gw.Client(gateway.base, "key-of-a-loopback-gateway", poll_policy=policy) as client:
            job = client.submit("genW2.5-t2i-preview", {"prompt": "a kite"})
            # past the 404 grace of one request several times over, still followed
            assert wait_for(lambda: ShownLate.asked_before >= 10, timeout=60)
            assert not job.done()
            ShownLate.shown.set()
            assert job.result(timeout=60).ok
            ShownLate.shown.clear()
            wrong = client.job("genW2.5-t2i-preview", "no-such-task")
            with pytest.raises(gw.RequestNotFound):
                wrong.result(timeout=60)
    finally:
        gateway.close()


def test_a_ledger_row_no_address_can_be_made_of_is_left_out_not_every_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task re-attached before endpoint ids were checked (a pasted trailing space): its
    row's ValueError made history(), resume() and a batch's re-attach fail whole."""
    import sqlite3

    from genwidgets.jobs.ledger import Ledger
    from genwidgets.protocol.records import Handle

    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path))
    base = "http://127.0.0.1:9"
    with Ledger() as ledger:
        for endpoint, rid in (("genW2.5-t2i-preview", "good"), ("genW2.5-t2i-preview ", "odd")):
            urls = {f"{op}_url": f"{base}/x/{rid}/{op}" for op in ("status", "response", "cancel")}
            handle = Handle(endpoint=endpoint, request_id=rid, queue_position=None, **urls)
            ledger.writes.record_attach(base, handle).result(timeout=30)
    with sqlite3.connect(tmp_path / "ledger.sqlite3") as conn:  # as an older attach left it
        conn.execute("UPDATE tasks SET status_url = NULL WHERE request_id = 'odd'")
    with gw.Client(base, "sk-test-odd-row") as client:
        with pytest.warns(gw.LedgerWarning, match=r"1 task\(s\) of the ledger cannot be followed"):
            found = client.history()
        assert [job.request_id for job in found] == ["good"]


def test_a_job_that_lost_contact_is_answered_by_what_another_client_recorded() -> None:
    """Client A's job ended for want of contact; client B (another cell, another kernel)
    followed the task to its end: A's client.job gave back A's dead job, whose result()
    raised Unreachable, though the ledger held the result."""
    fake = FakeGateway()
    policy = gw.PollPolicy(first=0.02, growth=0.0, failure_limit=2)
    with gw.Client(BASE, "sk-123456", transport=fake.transport(), poll_policy=policy) as a:
        fake.next_statuses = [{"status": "IN_PROGRESS"}] * 3 + [{"status": "COMPLETED"}]
        fake.faults["status"].extend([httpx.ConnectError("down")] * 50)
        job = a.submit("ep", {}, validate=False)
        with pytest.raises(gw.Unreachable):
            job.result(timeout=60)
        fake.faults["status"].clear()
        with gw.Client(BASE, "sk-123456", transport=fake.transport(), poll_policy=policy) as b:
            assert b.job("ep", job.request_id).result(timeout=60).ok
            assert b.ledger is not None and b.ledger.flush(30)
        again = a.job("ep", job.request_id)
        assert again is not job and again.result(timeout=60).ok


def test_outputs_are_saved_though_the_ledger_cannot_be_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make_simulator: Any
) -> None:
    """A ledger a newer genwidgets wrote, or a folder where its file should be: no
    output was saved at all, though the outputs folder could be written."""
    home = tmp_path / "unopenable"
    (home / "ledger.sqlite3").mkdir(parents=True)  # not a file: the ledger cannot open
    monkeypatch.setenv("GENWIDGETS_HOME", str(home))
    sim = make_simulator()
    with pytest.warns(gw.LedgerWarning, match="their outputs are still saved"):
        client = gw.Client(sim.base_url, "sim-demo-key")
    try:
        assert client.ledger is None
        result = client.submit("genW2.5-t2i-preview", {"prompt": "a kite", "n": 1}).result(
            timeout=120
        )
        [output] = result.outputs
        assert output.path is not None and output.path.is_file()
        assert home / "outputs" in output.path.parents
    finally:
        client.close()


def _home_file(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home.write_text("")


def _home_under_a_file(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home.write_text("")
    monkeypatch.setenv("GENWIDGETS_HOME", str(home / "sub"))


def _folder_at_the_ledger(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (home / "ledger.sqlite3").mkdir(parents=True)


def _newer_ledger(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Ledger(home / "ledger.sqlite3"):
        pass
    with sqlite3.connect(home / "ledger.sqlite3") as conn:
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")


def _dangling_link(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home.symlink_to(home.parent / "unmounted" / "genwidgets")


def _full_disk(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class Full(Ledger):
        def __init__(self, *_args: Any, **_kwargs: Any) -> None:
            raise OSError(errno.ENOSPC, "No space left on device")

    home.mkdir()
    monkeypatch.setattr(client_module, "Ledger", Full)


@pytest.mark.parametrize(
    ("make", "said", "saved"),
    [
        (_home_file, "no output can be saved: GENWIDGETS_HOME ({home}) is a file", False),
        (_home_under_a_file, "GENWIDGETS_HOME ({home}/sub) is under the file {home}; ", False),
        (_folder_at_the_ledger, "({home}/ledger.sqlite3 is a folder, where the ledger", True),
        (_newer_ledger, "; upgrade genwidgets, or set GENWIDGETS_HOME to another directory", True),
        (_full_disk, "no output can be saved: GENWIDGETS_HOME ({home}) is on a full disk", False),
        (
            _dangling_link,
            "no output can be saved: GENWIDGETS_HOME ({home}) is a link to "
            "{home.parent}/unmounted/genwidgets, a place that does not exist",
            False,
        ),
    ],
    ids=["home-file", "under-a-file", "ledger-folder", "newer-schema", "full-disk", "dangling"],
)
def test_a_ledger_that_cannot_open_is_said_with_what_is_wrong_and_the_fix(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    make: Callable[[Path, pytest.MonkeyPatch], None],
    said: str,
    saved: bool,
) -> None:
    """The home a file (or under one), its disk full: no output can be saved either,
    and the fix is another home (a link to a missing place: mount it, review-5 fault 6);
    a folder at the ledger's name: moved away; a newer
    schema: the ledger's own words, with no folder advice appended. It said "[Errno 17]
    File exists ... (their outputs are still saved)" while none was saved."""
    home = tmp_path / "home"
    monkeypatch.setenv("GENWIDGETS_HOME", str(home))
    make(home, monkeypatch)
    with pytest.warns(gw.LedgerWarning) as caught:
        client = gw.Client("http://127.0.0.1:9", "sk-123456")
    client.close()
    assert client.ledger is None
    [text] = [str(w.message) for w in caught if isinstance(w.message, gw.LedgerWarning)]
    assert said.format(home=home) in text, text
    assert ("outputs are still saved" in text) is saved, text
    assert "If the" not in text, text  # no folder advice beside the fix said


def test_a_client_used_in_a_forked_child_says_to_make_one_there() -> None:
    """multiprocessing's fork: the child's submit() waited for ever on the parent's
    engine, and its ledger said a task "may exist" that was never sent."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    said = context.Queue()
    with gw.Client(BASE, "sk-123456", transport=FakeGateway().transport()) as client:

        def child() -> None:
            try:
                client.submit("ep", {}, validate=False)
            except RuntimeError as exc:
                said.put(str(exc))
            else:
                said.put("sent")

        forked = context.Process(target=child)
        forked.start()
        try:
            assert "make a new gw.Client() here" in said.get(timeout=60)
        finally:
            forked.join(60)


def test_history_says_what_it_takes_for_a_limit_or_a_status_it_cannot_use() -> None:
    """``history(limit=10**20)`` blamed the ledger ("datatype mismatch"), and a status
    filter no task can have (a typo: ``COMPLETE``) listed nothing in silence: each is a
    ``ValueError`` saying what is allowed, a typo with the closest word; a gateway's own
    word that the ledger holds is a filter like the spec's."""
    fake = FakeGateway()
    with gw.Client(BASE, "sk-history-1234", transport=fake.transport()) as client:
        with pytest.raises(ValueError, match=r"from 0 to 1,000,000, or None"):
            client.history(limit=10**20)
        with pytest.raises(ValueError, match=r"'COMPLETE'; did you mean 'COMPLETED'\?") as typo:
            client.history(status="COMPLETE")
        assert "unfinished" in str(typo.value) and "IN_QUEUE" in str(typo.value)
        with pytest.raises(ValueError, match=r"'bogus'\. A status is a state \("):
            client.history(status="bogus")
        job = client.submit("ep", {"prompt": "x"}, validate=False)
        assert job.result(timeout=10).ok
        assert client.history(status="cancelled") == []  # a known word no task has yet
        assert client.history(limit=1_000_000, status="completed") == [job]
        fake.next_statuses = [{"status": "WARMING_UP"}]
        warming = client.submit("ep", {"prompt": "y"}, validate=False)
        assert wait_for(lambda: warming.status_text == "WARMING_UP", timeout=30)
        assert client.history(status="warming_up") == [warming]
        warming.cancel()


def test_one_gateway_is_one_name_however_its_address_is_spelt() -> None:
    """A base URL is compared as its normal origin and path: an upper-case host, the
    scheme's own port, a trailing slash named another gateway in the ledger, so a task
    recorded under one spelling was never resumed under another. Two hosts stay two
    (``localhost`` is not ``127.0.0.1``), and the key goes to the origin given."""
    fake = FakeGateway()
    rid = fake.add_task("ep", [{"status": "COMPLETED"}], {"status": "COMPLETED", "outputs": []})
    with Ledger() as older:  # a row recorded under another spelling, as before
        spelt = "HTTPS://Gateway.TEST:443"
        row = older.writes.record_intent(gateway=spelt, endpoint="ep", payload={})
        handle = gw.Handle.from_body("ep", {"request_id": rid}, spelt)
        older.writes.record_handle(row, handle).result(timeout=30)
    names = set()
    for typed in ("https://GATEWAY.test:443/", "HTTPS://gateway.test", f"{BASE}/"):
        with gw.Client(typed, "sk-spelt-1234", transport=fake.transport()) as client:
            names.add((client.base_url, client.gateway_name))
    assert names == {(BASE, BASE)}
    with gw.Client(BASE, "sk-spelt-1234", transport=fake.transport()) as client:
        [resumed] = client.resume()
        assert resumed.request_id == rid and resumed.result(timeout=10).ok
    with gw.Client("http://localhost:9", "k") as one, gw.Client("http://127.0.0.1:9", "k") as two:
        assert one.gateway_name == "http://localhost:9" != two.gateway_name


class LoneSurrogates(OneTaskGateway):
    """A gateway whose texts hold lone surrogates (``"\\ud800"``: valid JSON, no
    Unicode): in a log, an error, an error type and an output's inline content."""

    BAD = '"bad \\ud800 text \\udfff"'

    def do_GET(self) -> None:
        if self.path.endswith("/status"):
            body = '{"request_id": "r1", "status": "COMPLETED", "logs": [{"message": %s}]}'
        else:
            body = (
                '{"request_id": "r1", "status": "FAILED", "error": %s, "error_type": %s,'
                ' "outputs": [{"content_type": "text/plain", "content": %s}]}'
            )
        data = (body % ((self.BAD,) * body.count("%s"))).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def test_a_gateways_lone_surrogates_are_kept_as_escapes_and_the_task_is_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """run() raised UnicodeEncodeError and the ledger could not record the task's end:
    a text no UTF-8 file, database or terminal can carry."""
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path))
    gateway = LoopbackServer(LoneSurrogates)
    try:
        with gw.Client(gateway.base, "key-of-a-loopback-gateway") as client:
            result = client.run("genW2.5-t2i-preview", {"prompt": "a kite"}, timeout=60)
            assert not result.ok and result.error == "bad \\ud800 text \\udfff"
            assert result.outputs[0].read() == b"bad \\ud800 text \\udfff"
            (job,) = client.history(limit=5)  # its end recorded, read back
            recorded = job.result(timeout=10)
            assert (recorded.status, recorded.error) == ("FAILED", result.error)
    finally:
        gateway.close()
