"""The simulator's dialects on the wire (issue 21, point 7): each switch of the
table in :mod:`genwidgets.simulator.dialects`, seen by a plain HTTP client."""

from __future__ import annotations

import email.utils
import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from genwidgets.cli import build_parser
from genwidgets.simulator import SimConfig, SimulatorServer
from genwidgets.simulator.cli import config_from

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
