"""Dependencies between operations, checked as the real service would."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from PIL import Image

from genwidgets.catalog import Endpoint, register, unregister
from genwidgets.simulator import SimulatorServer
from genwidgets.simulator.tasks import Task
from genwidgets.simulator.world import OPERATIONS_BY_ENDPOINT, Operation, World, operation_of

pytestmark = pytest.mark.timeout(60)
LATE_VIDA = "test-world-late-vida"
Run = Callable[..., dict[str, Any]]


def _detail(api: httpx.Client, endpoint: str, payload: dict[str, Any]) -> str:
    reply = api.post(f"/v1/queue/{endpoint}", json=payload)
    assert reply.status_code == 422, reply.text
    text: str = reply.json()["detail"]
    return text


def _inline(result: dict[str, Any]) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(result["outputs"][0]["content"])
    return value


@pytest.mark.slow
def test_variation_needs_a_completed_imgm_task(api: httpx.Client, run: Run, wait: Run) -> None:
    assert "jobId" in _detail(api, "imgM-v8.1-i2i", {"jobId": "nope", "image_no": 0})
    video = api.post("/v1/queue/vidVq2-text2video", json={"prompt": "x"}).json()
    assert "not an imgM" in _detail(
        api, "imgM-v8.1-i2i", {"jobId": video["request_id"], "image_no": 0}
    )
    slow = api.post(
        "/v1/queue/imgM-v8.1-t2i", json={"prompt": "a cat"}, headers={"X-Sim-Duration": "600"}
    ).json()
    assert "IN_PROGRESS" in _detail(
        api, "imgM-v8.1-i2i", {"jobId": slow["request_id"], "image_no": 0}
    )
    failed = api.post(
        "/v1/queue/imgM-v8.1-t2i",
        json={"prompt": "a cat"},
        headers={"X-Sim-Fault": "fail", "X-Sim-Duration": "0"},
    ).json()
    time.sleep(0.2)
    assert "failed" in _detail(api, "imgM-v8.1-i2i", {"jobId": failed["request_id"], "image_no": 0})
    source = api.post("/v1/queue/imgM-v8.1-t2i", json={"prompt": "a cat --ar 3:4"}).json()
    wait(api, source)
    run_result = run("imgM-v8.1-i2i", {"jobId": source["request_id"], "image_no": 3, "type": 1})
    assert len(run_result["outputs"]) == 4
    with Image.open(io.BytesIO(httpx.get(run_result["outputs"][0]["url"]).content)) as img:
        assert img.size == (768, 1024)  # the upstream size


def test_image_number_must_be_0_to_3(api: httpx.Client, wait: Run) -> None:
    source = api.post("/v1/queue/imgM-v8.1-t2i", json={"prompt": "a cat"}).json()
    wait(api, source)
    detail = _detail(
        api, "imgM_pan", {"jobId": source["request_id"], "imageNo": 4, "direction": 1, "scale": 1.5}
    )
    assert "imageNo" in detail


@pytest.mark.slow
def test_inpaint_and_pan_refuse_v8_diffusion_and_accept_v7(
    api: httpx.Client, run: Run, wait: Run
) -> None:
    v8 = api.post("/v1/queue/imgM_diffusion", json={"prompt": "a castle"}).json()
    v7 = api.post("/v1/queue/imgM_diffusion", json={"prompt": "a castle --v 7"}).json()
    for handle in (v8, v7):
        wait(api, handle)
    pan = {"imageNo": 0, "direction": 1, "scale": 1.5}
    inpaint = {"imageNo": 1, "mask": {"url": "https://example.com/mask.png"}}
    assert "V8-series" in _detail(api, "imgM_pan", {"jobId": v8["request_id"], **pan})
    assert "V8-series" in _detail(api, "imgM-inpaint", {"jobId": v8["request_id"], **inpaint})
    panned = run("imgM_pan", {"jobId": v7["request_id"], **pan})
    with Image.open(io.BytesIO(httpx.get(panned["outputs"][0]["url"]).content)) as img:
        assert img.size == (1536, 1024)  # 1024x1024 grown 1.5x to the right
    assert len(run("imgM-inpaint", {"jobId": v7["request_id"], **inpaint})["outputs"]) == 4
    # a variation of a V8 diffusion task is fine (only inpaint/pan are refused)
    assert len(run("imgM-v8.1-i2i", {"jobId": v8["request_id"], "image_no": 2})["outputs"]) == 4


@pytest.mark.slow
def test_asset_chain_processing_then_active(make_simulator: Callable[..., SimulatorServer]) -> None:
    sim = make_simulator(speed=2)  # an asset turns Active 0.5 s after asset-create completes
    headers = {"Authorization": "Bearer sim-demo-key", "X-Sim-Duration": "0"}
    with httpx.Client(base_url=sim.base_url, headers=headers) as c:

        def result(endpoint: str, payload: dict[str, Any]) -> dict[str, Any]:
            handle = c.post(f"/v1/queue/{endpoint}", json=payload)
            assert handle.status_code == 200, handle.text
            while (r := c.get(handle.json()["response_url"])).status_code == 202:
                time.sleep(0.01)
            body: dict[str, Any] = r.json()
            return body

        missing = c.post("/v1/queue/asset-create", json={"GroupId": "nope", "URL": "https://x"})
        assert missing.status_code == 422 and "GroupId" in missing.json()["detail"]
        group = _inline(result("asset-group-create", {"Name": "class"}))["GroupId"]
        record = _inline(
            result("asset-create", {"GroupId": group, "URL": "https://x/a.png", "Name": "a"})
        )
        assert record["Status"] == "Processing" and record["GroupId"] == group
        asset = f"asset://{record['Id']}"
        video = {
            "content": [
                {"type": "text", "text": "go"},
                {"type": "image_url", "image_url": {"url": asset}},
            ]
        }
        early = c.post("/v1/queue/vidA-2-0", json=video)
        assert early.status_code == 422 and "Processing" in early.json()["detail"]
        time.sleep(0.6)
        assert _inline(result("asset-get", {"Id": record["Id"]}))["Status"] == "Active"
        assert c.post("/v1/queue/vidA-2-0", json=video).status_code == 200
        gone = {"content": [{"type": "image_url", "image_url": {"url": "asset://nope"}}]}
        reply = c.post("/v1/queue/vidA-2-0", json=gone)
        assert reply.status_code == 422 and "content.0.image_url.url" in reply.json()["detail"]
        unknown = c.post("/v1/queue/asset-get", json={"Id": "nope"})
        assert unknown.status_code == 422 and "Id" in unknown.json()["detail"]


def test_lip_sync_needs_face_session_and_audio_preview(api: httpx.Client, run: Run) -> None:
    faces = _inline(run("vidK-face-identify", {"video_url": "https://x/v.mp4"}))
    face = faces["face_data"][0]["face_id"]
    preview = run("vidK-audio-preview", {"text": "Hello, this is a test of the preview."})
    audio = json.loads(
        next(o["content"] for o in preview["outputs"] if o["content_type"] == "application/json")
    )
    assert audio["duration_ms"] >= 2000
    assert any(o["content_type"] == "audio/mpeg" for o in preview["outputs"])
    bad = _detail(
        api,
        "vidK-lip-sync",
        {"session_id": "nope", "face_choose": [{"face_id": face, "audio_id": "x"}]},
    )
    assert "session_id" in bad
    bad = _detail(
        api,
        "vidK-lip-sync",
        {"session_id": faces["session_id"], "face_choose": [{"face_id": face, "audio_id": "x"}]},
    )
    assert "audio_id" in bad
    bad = _detail(
        api,
        "vidK-lip-sync",
        {
            "session_id": faces["session_id"],
            "face_choose": [{"face_id": "f", "audio_id": audio["audio_id"]}],
        },
    )
    assert "face_id" in bad
    ok = api.post(
        "/v1/queue/vidK-lip-sync",
        json={
            "session_id": faces["session_id"],
            "face_choose": [{"face_id": face, "audio_id": audio["audio_id"]}],
        },
    )
    assert ok.status_code == 200, ok.text


def test_element_ids_come_from_custom_elements(api: httpx.Client, run: Run) -> None:
    element = _inline(
        run("vidK-custom-element", {"name": "hero", "image_urls": ["https://x/a.png"]})
    )
    assert isinstance(element["element_id"], int)
    bad = _detail(api, "vidK-v3-turbo-t2v", {"prompt": "x", "element_list": [{"element_id": 1}]})
    assert "element_list.0.element_id" in bad
    ok = api.post(
        "/v1/queue/vidK-v3-turbo-t2v",
        json={"prompt": "x", "element_list": [{"element_id": element["element_id"]}]},
    )
    assert ok.status_code == 200, ok.text


# ---------------------------------------------------------------- the operations table


def _world() -> World:
    return World(lambda request_id: None, "/files/demo/demo.png")


def _task(endpoint: str, payload: dict[str, Any]) -> Task:
    return Task("r-1", endpoint, "video", "k", payload, 1, 1.0, False, "http://127.0.0.1")


@pytest.fixture
def late_vida() -> Iterator[str]:
    @register(LATE_VIDA, kind="video", family="vidA", title="A vidA endpoint added at run time")
    class LateVida(Endpoint):
        content: list[dict[str, Any]] | None = None

    yield LATE_VIDA
    unregister(LATE_VIDA)


def test_a_plain_endpoint_has_no_operation() -> None:
    world = _world()
    for endpoint in ("vidVq2-text2video", "imgM-v8.1-t2i", "no-such-endpoint"):
        assert operation_of(endpoint) == Operation()
        assert world.check(endpoint, {"element_list": [{"element_id": 9}]}, "k") == ([], {})
        assert world.finish(_task(endpoint, {"Name": "x"}), 1.0) == []
    assert (world.groups.keys(), world.assets.keys()) == ({"group-demo"}, {"asset-demo"})


def test_a_family_row_checks_an_endpoint_registered_at_run_time(late_vida: str) -> None:
    content = [{"type": "image_url", "image_url": {"url": "asset://nope"}}]
    errors, _ = _world().check(late_vida, {"content": content}, "k")
    assert [e["loc"] for e in errors] == [("content", 0, "image_url", "url")]
    assert "asset://nope" in errors[0]["msg"]


def test_each_edit_names_the_image_number_field_of_its_own_model() -> None:
    world = _world()
    for endpoint, field in [
        ("imgM-v8.1-i2i", "image_no"),
        ("imgM-inpaint", "imageNo"),
        ("imgM_pan", "imageNo"),
    ]:
        errors, _ = world.check(endpoint, {"jobId": "nope", field: 7}, "k")
        assert [e["loc"] for e in errors] == [(field,), ("jobId",)], endpoint
        assert "got 7" in errors[0]["msg"]


def test_every_referenced_operation_answers_from_its_row() -> None:
    world = _world()
    answered = {
        endpoint: json.loads(world.finish(_task(endpoint, payload), 1.0)[0].inline or "")
        for endpoint, payload in [
            ("asset-group-create", {"Name": "g"}),
            ("asset-get", {"Id": "asset-demo"}),
            ("vidK-face-identify", {"video_url": "v.mp4"}),
            ("vidK-audio-preview", {"text": "hi"}),
            ("vidK-custom-element", {"name": "e"}),
            ("vidV-create-subjects", {"name": "s"}),
        ]
    }
    assert answered["asset-group-create"]["GroupId"] in world.groups
    assert answered["asset-get"]["Id"] == "asset-demo"
    assert answered["vidK-face-identify"]["session_id"] in world.sessions
    assert answered["vidK-audio-preview"]["audio_id"] in world.audio_texts
    assert answered["vidK-custom-element"] == {"element_id": 1001}
    assert answered["vidV-create-subjects"]["name"] == "s"
    assert {e for e, op in OPERATIONS_BY_ENDPOINT.items() if op.answer} == {
        *answered,
        "asset-create",
    }


def test_an_edit_numbers_its_image_by_its_own_models_field_even_when_both_are_sent() -> None:
    """The world checks and the maker pictures the same image: the one the model's
    field names (i2i: ``image_no``), whatever other spelling rides along."""
    from genwidgets.simulator.outputs import image_number_field, produce

    assert image_number_field("imgM-v8.1-i2i") == "image_no"
    assert image_number_field("imgM-inpaint") == image_number_field("imgM_pan") == "imageNo"
    ctx = {"upstream_seed": 5, "upstream_size": (256, 256)}
    base = {"jobId": "j", "remix_prompt": "a kite"}

    def pictures(payload: dict[str, Any]) -> list[bytes]:
        made = produce("imgM-v8.1-i2i", "image", payload, 1, ctx)
        return [f.data or b"" for f in made.files]

    assert pictures({**base, "image_no": 2, "imageNo": 0}) == pictures({**base, "image_no": 2})
    assert pictures({**base, "image_no": 2}) != pictures({**base, "image_no": 1})


def test_an_imgm_endpoint_registered_at_run_time_is_an_edits_upstream() -> None:
    """The upstream's family is read from the catalog when the edit is checked, not
    from a list made at import."""
    late = "imgM-late-t2i"

    @register(late, kind="image", family="imgM", title="An imgM endpoint added at run time")
    class LateImgm(Endpoint):
        prompt: str

    try:
        done = Task("up-1", late, "image", "k", {"prompt": "a kite"}, 1, 1.0, False, "http://x")
        done.status = "COMPLETED"
        other = Task("up-2", "vidVq2-text2video", "video", "k", {}, 1, 1.0, False, "http://x")
        other.status = "COMPLETED"
        world = World({"up-1": done, "up-2": other}.get, "/files/demo/demo.png")
        payload = {"remix_prompt": "a red kite", "image_no": 1}
        errors, _ = world.check("imgM-v8.1-i2i", {**payload, "jobId": "up-1"}, "k")
        assert [e for e in errors if e["loc"] == ("jobId",)] == []
        errors, _ = world.check("imgM-v8.1-i2i", {**payload, "jobId": "up-2"}, "k")
        assert any("not an imgM image task" in e["msg"] for e in errors)
    finally:
        unregister(late)
