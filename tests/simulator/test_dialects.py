"""The simulator's dialects (issue 21, point 7): each switch of the table in
:mod:`genwidgets.simulator.dialects`, seen by a plain HTTP client; then the client
against every dialect, one real simulator per dialect on loopback, so a dialect that
breaks the client fails CI: tasks end, outputs keep their real types, rate limits are
honoured, failures read as text, logs are kept."""

from __future__ import annotations

import email.utils
import io
import os
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from PIL import Image

import genwidgets as gw
from genwidgets.cli import build_parser
from genwidgets.simulator import DEMO_KEY, SimConfig, SimulatorServer
from genwidgets.simulator.cli import config_from
from genwidgets.simulator.dialects import DIALECTS

pytestmark = pytest.mark.timeout(60)
AUTH = {"Authorization": "Bearer sim-demo-key"}
Make = Callable[..., SimulatorServer]


def _until_done(c: httpx.Client, url: str, words: set[str]) -> list[dict[str, Any]]:
    seen = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        body = c.get(url).json()
        seen.append(body)
        if body["status"] in words:
            return seen
        time.sleep(0.02)
    raise AssertionError(f"never reached {words}: {seen[-1]}")


def test_the_dialect_is_chosen_by_flag_argument_or_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert SimConfig().dialect == "spec"
    assert SimConfig(dialect="FAL").dialect == "fal"
    with pytest.raises(ValueError, match="dialect must be one of spec, fal, replicate"):
        SimConfig(dialect="openai")
    monkeypatch.setenv("GENWIDGETS_SIM_DIALECT", "replicate")
    assert SimConfig().dialect == "replicate"
    assert config_from(build_parser().parse_args(["simulate"])).dialect == "replicate"
    args = build_parser().parse_args(["simulate", "--dialect", "fal"])
    assert config_from(args).dialect == "fal"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["simulate", "--dialect", "nope"])


@pytest.mark.slow
def test_fal_words_logs_metrics_positions_and_model_shaped_outputs(make_simulator: Make) -> None:
    sim = make_simulator(dialect="fal", workers=1)
    with httpx.Client(base_url=sim.base_url, headers=AUTH, timeout=30) as c:
        slow = {"X-Sim-Duration": "10"}
        handles = [
            c.post(
                "/v1/queue/genW2.5-t2i-preview", json={"prompt": "p", "n": 1}, headers=slow
            ).json()
            for _ in range(3)
        ]
        assert [h["queue_position"] for h in handles] == [0, 0, 1]  # 0-based, like fal
        queued = c.get(handles[2]["status_url"]).json()
        assert queued["status"] == "IN_QUEUE" and queued["queue_position"] == 1
        assert queued["logs"] == []
        early = c.get(handles[0]["response_url"])
        assert early.status_code == 400 and "still in progress" in early.json()["detail"]
        seen = _until_done(c, handles[0]["status_url"], {"COMPLETED"})
        running = [b for b in seen if b["status"] == "IN_PROGRESS"]
        assert running and running[0]["logs"][0]["message"].startswith("loading")
        assert set(running[0]["logs"][0]) == {"message", "level", "source", "timestamp"}
        assert seen[-1]["metrics"]["inference_time"] > 0
        result = c.get(handles[0]["response_url"]).json()
        assert "outputs" not in result and isinstance(result["seed"], int)
        (image,) = result["images"]
        assert image["content_type"] == "image/png"
        assert image["file_name"].endswith(".png") and image["file_size"] > 0
        finished = c.put(handles[0]["cancel_url"])
        assert finished.status_code == 400 and finished.json()["code"] == "ALREADY_COMPLETED"
        live = c.put(handles[2]["cancel_url"])
        assert live.status_code == 202
        failed = c.post(
            "/v1/queue/speechM-02-turbo", json={"text": "x"}, headers={"X-Sim-Fault": "fail"}
        ).json()
        _until_done(c, failed["status_url"], {"COMPLETED"})
        body = c.get(failed["response_url"]).json()
        assert body["error"] == {"code": "RUNTIME_ERROR", "message": "Runtime execution failed"}
        assert body["error_type"]["type"] == "runtime_error"


@pytest.mark.slow
def test_replicate_words_bare_urls_text_logs_and_a_bare_handle(make_simulator: Make) -> None:
    sim = make_simulator(dialect="replicate")
    with httpx.Client(base_url=sim.base_url, headers=AUTH, timeout=30) as c:
        created = c.post(
            "/v1/queue/genW2.5-t2i-preview",
            json={"prompt": "p", "n": 1},
            headers={"X-Sim-Duration": "10"},
        ).json()
        assert set(created) == {"request_id", "status", "urls"}
        assert created["status"] in {"starting", "processing"}
        root = f"/v1/queue/genW2.5-t2i-preview/requests/{created['request_id']}"
        early = c.get(f"{root}/response")
        assert early.status_code == 202 and early.content == b""
        seen = _until_done(c, f"{root}/status", {"succeeded"})
        assert {b["status"] for b in seen} <= {"starting", "processing", "succeeded"}
        assert isinstance(seen[-1]["logs"], str) and seen[-1]["logs"].endswith("done\n")
        result = c.get(f"{root}/response").json()
        (url,) = result["output"]
        assert isinstance(url, str) and result["metrics"]["predict_time"] > 0
        served = c.get(url)
        assert served.headers["content-type"] == "image/png"
        assert c.put(f"{root}/cancel").status_code == 409
        live = c.post(
            "/v1/queue/vidVq2-text2video", json={"prompt": "p"}, headers={"X-Sim-Duration": "600"}
        ).json()
        cancelled = c.put(f"/v1/queue/vidVq2-text2video/requests/{live['request_id']}/cancel")
        assert cancelled.status_code == 200 and cancelled.json()["status"] == "canceled"


def test_replicate_rate_limits_are_503_with_an_http_date(make_simulator: Make) -> None:
    sim = make_simulator(dialect="replicate", rate_limit=1)
    with httpx.Client(base_url=sim.base_url, headers=AUTH, timeout=30) as c:
        answers = [c.get("/v1/queue/asset-get/requests/none/status") for _ in range(5)]
    limited = [a for a in answers if a.status_code == 503]
    assert limited, [a.status_code for a in answers]
    assert limited[0].json()["error"]["code"] == "RATE_LIMIT_EXCEEDED"
    when = email.utils.parsedate_to_datetime(limited[0].headers["retry-after"])
    assert when.timestamp() >= time.time()  # a date in the future, not a number


def test_the_spec_dialect_is_unchanged(make_simulator: Make) -> None:
    sim = make_simulator(rate_limit=1)
    with httpx.Client(base_url=sim.base_url, headers=AUTH, timeout=30) as c:
        assert c.get("/").json()["dialect"] == "spec"
        answers = [c.get("/v1/queue/asset-get/requests/none/status") for _ in range(5)]
    limited = [a for a in answers if a.status_code == 429]
    assert limited and limited[0].headers["retry-after"].isdigit()
    assert "retry-after-ms" not in limited[0].headers  # only the create limit says it


@pytest.mark.slow
def test_the_embedded_simulator_takes_its_dialect_from_the_environment(tmp_path: Any) -> None:
    """A fresh interpreter, as a user starts one: no URL, no key, the variable set."""
    script = (
        "import warnings, genwidgets as gw\n"
        "warnings.simplefilter('ignore')\n"
        "client = gw.Client()\n"
        "result = client.run('speechM-02-turbo', {'text': 'hi'}, timeout=120)\n"
        "print(result.status, result.ok, result.outputs[0].kind)\n"
        "client.close()\n"
    )
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("GENWIDGETS_BASE_URL", "GENWIDGETS_API_KEY")
    }
    env |= {"GENWIDGETS_SIM_DIALECT": "replicate", "GENWIDGETS_HOME": str(tmp_path)}
    run = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=180
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["succeeded", "True", "audio"]


# --- the client against every dialect ------------------------------------------------


def through_the_client(test: Callable[..., None]) -> Callable[..., None]:
    """A test of the client against a dialect: a longer deadline, and fal's and
    replicate's results have no 'outputs' (the client says so, as it should)."""
    test = pytest.mark.timeout(120)(test)
    return pytest.mark.filterwarnings("ignore::genwidgets.errors.GenwidgetsWarning")(test)


KEY = DEMO_KEY
SPEED = 20.0


@pytest.fixture(scope="module", params=sorted(DIALECTS))
def dialect_sim(request: pytest.FixtureRequest) -> Iterator[SimulatorServer]:
    with SimulatorServer(SimConfig(speed=SPEED, dialect=request.param), port=0) as sim:
        yield sim


@pytest.fixture
def client(dialect_sim: SimulatorServer) -> Iterator[gw.Client]:
    c = gw.Client(dialect_sim.base_url, KEY)
    yield c
    c.close()


def dialect(sim: SimulatorServer) -> str:
    return sim.config.dialect


def quiet(fn: Any, *args: Any, **kw: Any) -> Any:
    """Run ``fn``: the fallback-key warning of fal/replicate results is expected here."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gw.GenwidgetsWarning)
        return fn(*args, **kw)


@pytest.mark.slow
@through_the_client
def test_an_image_task_ends_with_typed_outputs(
    client: gw.Client, dialect_sim: SimulatorServer
) -> None:
    job = client.submit("genW2.5-t2i-preview", {"prompt": "a lighthouse", "n": 2, "seed": 7})
    result = quiet(job.result, timeout=60)
    assert result.ok, result.error
    assert [o.content_type for o in result.outputs] == ["image/png", "image/png"]
    assert Image.open(io.BytesIO(result.outputs[0].read())).size == (1280, 1280)
    saved = result.outputs[1].path
    assert saved is not None and saved.suffix == ".png" and saved.exists()


@through_the_client
def test_an_audio_task_keeps_its_real_type(client: gw.Client) -> None:
    result = quiet(client.run, "speechM-02-turbo", {"text": "hello there"}, timeout=60)
    assert result.ok and [o.kind for o in result.outputs] == ["audio"]
    assert result.outputs[0].content_type.startswith("audio/")


@through_the_client
def test_a_result_shaped_per_model_warns_naming_its_key(
    client: gw.Client, dialect_sim: SimulatorServer
) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = client.run("genW2.5-t2i-preview", {"prompt": "x", "seed": 1, "n": 1}, timeout=60)
    said = [str(w.message) for w in caught if issubclass(w.category, gw.GenwidgetsWarning)]
    expected = {"spec": None, "fal": "'images'", "replicate": "'output'"}[dialect(dialect_sim)]
    if expected is None:
        assert not any("outputs" in text for text in said)
    else:
        assert any(expected in text for text in said), said
    assert len(result.outputs) == 1


@through_the_client
def test_a_failed_task_reads_as_text(client: gw.Client, dialect_sim: SimulatorServer) -> None:
    job = client.submit("speechM-02-turbo", {"text": "x"}, headers={"X-Sim-Fault": "fail"})
    result = quiet(job.result, timeout=60)
    assert result.done and not result.ok
    assert result.error == "Runtime execution failed"
    with pytest.raises(gw.TaskFailed) as info:
        result.raise_for_error()
    assert "Runtime execution failed" in str(info.value) and "{'" not in str(info.value)
    if dialect(dialect_sim) == "fal":
        assert result.error_type == "runtime_error"
        assert result.raw["error"]["code"] == "RUNTIME_ERROR"  # the object kept whole


@through_the_client
def test_cancel_ends_a_running_task(client: gw.Client) -> None:
    job = client.submit("vidVq2-text2video", {"prompt": "slow"}, headers={"X-Sim-Duration": "600"})
    job.cancel()
    result = quiet(job.result, timeout=60)
    assert result.done and not result.ok
    assert job.cancel_error is None


@pytest.mark.slow
@through_the_client
def test_logs_are_kept(client: gw.Client, dialect_sim: SimulatorServer) -> None:
    job = client.submit("speechM-02-turbo", {"text": "logs"}, headers={"X-Sim-Duration": "20"})
    seen: list[str] = []
    job.add_update_callback(
        lambda j: seen.append(j.last_status.latest_log or "") if j.last_status else None
    )
    quiet(job.result, timeout=60)
    assert job.last_status is not None
    if dialect(dialect_sim) == "spec":
        assert job.last_status.logs == []  # the spec's gateway sends none
    else:
        assert job.last_status.logs, "the status bodies carried logs"
        assert any(line.startswith(("loading", "step")) for line in seen), seen
        assert job.last_status.latest_log  # the finished job keeps the last lines seen


@pytest.mark.slow
@through_the_client
def test_rate_limits_are_honoured(dialect_sim: SimulatorServer) -> None:
    config = SimConfig(speed=SPEED, dialect=dialect(dialect_sim), rate_limit=3)
    with SimulatorServer(config, port=0) as sim:
        impatient = gw.Client(sim.base_url, KEY, max_retries=0)
        try:
            with pytest.raises(gw.RateLimited) as info:
                for _ in range(20):
                    impatient.submit("speechM-02-turbo", {"text": "x"})
        finally:
            impatient.close()
        assert info.value.retry_after is not None and info.value.retry_after >= 0.5
        patient = gw.Client(sim.base_url, KEY, max_retries=3)
        try:
            # three jobs: nine requests or more at three a second, after a refused burst
            jobs = [patient.submit("speechM-02-turbo", {"text": f"{i}"}) for i in range(3)]
            assert all(quiet(j.result, timeout=60).ok for j in jobs)
        finally:
            patient.close()
