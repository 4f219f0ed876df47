"""Bad input never gives a 500: arbitrary JSON bodies on every endpoint."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genwidgets.simulator import SimulatorServer
from genwidgets.simulator.registry import ENDPOINTS
from genwidgets.simulator.videos import video_plan

pytestmark = pytest.mark.timeout(120)

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)
field_names = st.sampled_from(
    [
        "prompt",
        "content",
        "duration",
        "jobId",
        "imageNo",
        "image_no",
        "mask",
        "text",
        "audio_setting",
        "media",
        "images",
        "size",
        "n",
        "session_id",
        "face_choose",
        "element_list",
        "Id",
        "GroupId",
        "URL",
        "image_url",
        "video_url",
        "seed",
    ]
)
payloads = st.dictionaries(field_names | st.text(max_size=8), json_values, max_size=6)


@pytest.mark.slow
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(endpoint=st.sampled_from(sorted(ENDPOINTS)), payload=payloads | json_values)
def test_no_500_for_any_json(simulator: SimulatorServer, endpoint: str, payload: Any) -> None:
    # Accepted tasks are told to fail, so the fuzzing never encodes media.
    reply = httpx.post(
        f"{simulator.base_url}/v1/queue/{endpoint}",
        json=payload,
        headers={"Authorization": "Bearer sim-demo-key", "X-Sim-Fault": "fail"},
    )
    assert reply.status_code in {200, 400, 422}, reply.text
    if reply.status_code != 200:
        assert isinstance(reply.json()["detail"], str) and reply.json()["detail"]


VIDEO_IDS = sorted(e.id for e in ENDPOINTS.values() if e.kind == "video")


@settings(max_examples=150, deadline=None)
@given(endpoint=st.sampled_from(VIDEO_IDS), payload=payloads)
def test_video_plans_read_any_payload(endpoint: str, payload: dict[str, Any]) -> None:
    """What validation lets through never breaks media making: values are read tolerantly."""
    plan = video_plan(endpoint, payload, {})
    width, height = plan["size"]
    assert width >= 2 and height >= 2 and width % 2 == 0 and height % 2 == 0
    assert 1 <= plan["seconds"] <= 60 and isinstance(plan["audio"], bool)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(
    endpoint=st.sampled_from(["imgM-v8.1-t2i", "imgG-1.5-edit", "imgQ-edit-plus"]),
    payload=payloads,
)
def test_image_sizes_read_any_payload(endpoint: str, payload: dict[str, Any]) -> None:
    from genwidgets.simulator import outputs

    if endpoint == "imgM-v8.1-t2i":
        width, height = outputs.imgm_size(str(payload.get("prompt", "")))
        assert min(width, height) >= 64 and max(width, height) == 1024
    else:
        produced = outputs.produce(endpoint, "image", {**payload, "n": 1}, 1, {})
        assert len(produced.files) == 1
