"""The client against every dialect of the simulator (issue 21, point 7).

One real simulator per dialect on loopback; every test runs against each, so a
dialect that breaks the client fails CI: tasks end, outputs keep their real
types, rate limits are honoured, failures read as text, logs are kept.
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from PIL import Image

import genwidgets as gw
from genwidgets import _config
from genwidgets.simulator import SimConfig, SimulatorServer
from genwidgets.simulator.dialects import DIALECTS

pytestmark = [
    pytest.mark.timeout(120),
    # fal and replicate results have no 'outputs': the client says so, as it should
    pytest.mark.filterwarnings("ignore::genwidgets.errors.GenwidgetsWarning"),
]
KEY = _config.DEMO_KEY
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


def test_an_audio_task_keeps_its_real_type(client: gw.Client) -> None:
    result = quiet(client.run, "speechM-02-turbo", {"text": "hello there"}, timeout=60)
    assert result.ok and [o.kind for o in result.outputs] == ["audio"]
    assert result.outputs[0].content_type.startswith("audio/")


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


def test_cancel_ends_a_running_task(client: gw.Client) -> None:
    job = client.submit("vidVq2-text2video", {"prompt": "slow"}, headers={"X-Sim-Duration": "600"})
    job.cancel()
    result = quiet(job.result, timeout=60)
    assert result.done and not result.ok
    assert job.cancel_error is None


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
            jobs = [patient.submit("speechM-02-turbo", {"text": f"{i}"}) for i in range(6)]
            assert all(quiet(j.result, timeout=60).ok for j in jobs)
        finally:
            patient.close()
