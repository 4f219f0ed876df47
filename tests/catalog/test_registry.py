"""The registry: looking endpoints up, and adding one at run time."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator

import httpx
import pytest
from PIL import Image
from pydantic import Field

import genwidgets as gw
import genwidgets.catalog as catalog
from genwidgets.catalog import Endpoint, register
from genwidgets.errors import EndpointNotFound, PayloadError
from genwidgets.simulator import DEMO_KEY
from genwidgets.simulator.synth import video_frames

MINE = "test-mine-image"


def _register_mine() -> type[Endpoint]:
    """The README's example: one class, registered while the process runs."""

    @register(MINE, kind="image", family="mine", title="My image endpoint")
    class MyImage(Endpoint):
        """Make an image from a prompt. (Only this first sentence is the help text.)"""

        prompt: str = Field(min_length=1, description="What to draw.")
        steps: int | None = Field(None, ge=1, le=50, description="Sampling steps, 1-50.")

    return MyImage


@pytest.fixture
def mine() -> Iterator[type[Endpoint]]:
    yield _register_mine()
    catalog.unregister(MINE)


def test_a_registered_class_is_listed_validated_and_described(mine: type[Endpoint]) -> None:
    spec = catalog.endpoint(MINE)
    assert (spec.kind, spec.family, spec.model) == ("image", "mine", mine)
    assert spec.description == "Make an image from a prompt."
    assert MINE in {s.id for s in gw.endpoints()}
    assert gw.validate(MINE, {"prompt": "a lighthouse", "steps": "7"}).to_wire() == {
        "prompt": "a lighthouse",
        "steps": 7,
    }
    with pytest.raises(PayloadError) as info:
        gw.validate(MINE, {"prompt": "", "steps": 51})
    assert {e["loc"] for e in info.value.errors} == {("prompt",), ("steps",)}


def test_unregister_takes_it_out_again() -> None:
    _register_mine()
    catalog.unregister(MINE)
    assert MINE not in {s.id for s in catalog.endpoints(documented_only=False)}
    with pytest.raises(EndpointNotFound, match="unknown endpoint"):
        catalog.unregister(MINE)


def test_a_wrong_endpoint_is_endpoint_not_found_with_the_closest_id() -> None:
    import genwidgets as gw

    for call in (
        lambda: gw.validate("genW2.5-t2i-previw", {"prompt": "x"}),
        lambda: gw.endpoint("genW2.5-t2i-previw"),
    ):
        hint = re.escape("did you mean 'genW2.5-t2i-preview'")
        with pytest.raises(EndpointNotFound, match=hint) as info:
            call()
        assert not isinstance(info.value, PayloadError)
        assert info.value.endpoint == "genW2.5-t2i-previw"
    with pytest.raises(EndpointNotFound, match="unknown endpoint 5"):
        gw.endpoint(5)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("endpoint_id", "kind", "says"),
    [
        ("my endpoint", "image", "one URL path segment"),
        ("my/endpoint", "image", "one URL path segment"),
        ("", "image", "one URL path segment"),
        ("mine", "picture", "kind 'picture' is not one of video, image"),
    ],
)
def test_register_refuses_what_the_gateway_could_not_serve(
    endpoint_id: str, kind: str, says: str
) -> None:
    with pytest.raises(ValueError, match=says):
        register(endpoint_id, kind=kind, family="mine", title="t")
    assert endpoint_id not in {s.id for s in catalog.endpoints(documented_only=False)}


@pytest.mark.parametrize(
    ("endpoint_id", "family"),
    [("test-family", "test"), ("testQ2-x", "testQ"), ("9-lives", "9-lives")],
)
def test_a_family_not_given_is_the_ids_head(endpoint_id: str, family: str) -> None:
    class Plain(Endpoint):
        """Plain."""

    register(endpoint_id, kind="image", title="t", documented=False)(Plain)
    try:
        assert catalog.endpoint(endpoint_id).family == family
    finally:
        catalog.unregister(endpoint_id)


def test_register_decorates_endpoint_models_only() -> None:
    with pytest.raises(TypeError, match=r"subclass of genwidgets\.catalog\.Endpoint"):
        register(MINE, kind="image", family="mine", title="t")(dict)  # type: ignore[type-var]
    assert MINE not in {s.id for s in catalog.endpoints(documented_only=False)}


@pytest.mark.slow
def test_registered_after_the_simulator_started_it_runs_end_to_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GENWIDGETS_BASE_URL", raising=False)
    monkeypatch.delenv("GENWIDGETS_API_KEY", raising=False)
    client = gw.Client()  # the embedded simulator, running before the endpoint exists
    create = f"{client.base_url}/v1/queue/{MINE}"
    auth = {"Authorization": f"Bearer {DEMO_KEY}"}
    config = f"{client.base_url}/_sim/config"
    speed = httpx.get(config).json()["speed"]
    try:
        assert client.embedded
        # the embedded simulator at test speed while this test runs (its tasks' length
        # is not the subject); the process-wide one gets its speed back below
        httpx.put(config, json={"speed": 20}).raise_for_status()
        assert httpx.post(create, json={"prompt": "x"}, headers=auth).status_code == 404
        _register_mine()
        refused = httpx.post(create, json={"prompt": "x", "steps": 0}, headers=auth)
        assert refused.status_code == 422 and "steps" in refused.json()["detail"]

        result = client.run(MINE, {"prompt": "a lighthouse", "steps": 4}, timeout=60)
        assert result.ok and result.raw["status"] == "COMPLETED"
        [picture] = result.outputs  # the image kind's default: one 1024x1024 PNG
        assert picture.content_type == "image/png"
        with Image.open(io.BytesIO(picture.read())) as image:
            assert image.size == (1024, 1024)

        form = gw.form(MINE, client=client, prompt="a red kite")
        assert set(form.fields) == {"prompt", "steps"}
        assert form.value == {"prompt": "a red kite"}
        assert form.submit().result(timeout=60).ok

        _register_my_video()
        clip = client.run(MINE_VIDEO, {"prompt": "waves", "duration": 1}, timeout=120)
        [video] = clip.raise_for_error().outputs  # the video kind's default: 720p 16:9
        assert video.content_type == "video/mp4"
        frames, _ = video_frames(video.read())
        assert frames and frames[0].size == (1280, 720)
    finally:
        registered = {s.id for s in catalog.endpoints(documented_only=False)}
        for endpoint_id in {MINE, MINE_VIDEO} & registered:
            catalog.unregister(endpoint_id)
        httpx.put(config, json={"speed": speed}).raise_for_status()
        client.close()


MINE_VIDEO = "test-mine-video"


def _register_my_video() -> None:
    @register(MINE_VIDEO, kind="video", family="mine", title="My video endpoint")
    class MyVideo(Endpoint):
        """Make a video from a prompt."""

        prompt: str = Field(min_length=1, description="What to film.")
        duration: int = Field(5, ge=1, le=10, description="Seconds, 1-10.")


def test_the_spec_answers_each_field_question_by_wire_name() -> None:
    """Billed, required, prompt fields and defaults come keyed as payloads are, even
    where Python names differ (docs/decisions.md#wire-names)."""
    from typing import Annotated

    from genwidgets.catalog import BILLED, PROMPT_STRING, ServiceDefault

    @register("test-aliased", kind="image", family="mine", title="t", documented=False)
    class Aliased(Endpoint):
        aspect: Annotated[str | None, BILLED, ServiceDefault("16:9")] = Field(
            None, alias="aspectRatio"
        )
        text: Annotated[str, PROMPT_STRING] = Field(alias="remixPrompt")

    try:
        spec = catalog.endpoint("test-aliased")
        assert list(spec.fields) == ["aspectRatio", "remixPrompt"]
        assert spec.billing_fields == ("aspectRatio",)
        assert spec.required_fields == ("remixPrompt",)
        assert spec.prompt_fields == ("remixPrompt",)
        assert spec.defaults == {"aspectRatio": "16:9"}
        assert spec.field("aspect") is spec.field("aspectRatio") is not None
        assert spec.value_of({"aspectRatio": "1:1"}, "aspect") == "1:1"
        assert spec.value_of({}, "aspectRatio") == "16:9"
    finally:
        catalog.unregister("test-aliased")
