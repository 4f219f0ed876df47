"""A video endpoint is one class: the simulator plans its size, length and sound
from the model's fields, defaults and ranges, with no code of its own."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Literal

import pytest
from pydantic import Field

from genwidgets.catalog import Endpoint, ServiceDefault, register, unregister
from genwidgets.simulator.outputs import producer
from genwidgets.simulator.videos import MODE_TIERS, PLANS_BY_ENDPOINT, video_plan

NEW = "test-video-one-class"


@pytest.fixture
def one_class() -> Iterator[None]:
    @register(NEW, kind="video", family="vidNew", title="A video endpoint of one class")
    class NewVideo(Endpoint):
        prompt: str = Field(description="What to film.")
        resolution: Annotated[Literal["720p", "1080p", "4K"] | None, ServiceDefault("1080p")] = None
        aspect_ratio: Annotated[Literal["16:9", "9:16"] | None, ServiceDefault("9:16")] = None
        duration: Annotated[int | None, ServiceDefault(7)] = Field(None, ge=2, le=12)
        sound: Annotated[Literal["on", "off"] | None, ServiceDefault("on")] = None

    yield
    unregister(NEW)


def test_a_new_video_endpoint_is_planned_from_its_model(one_class: None) -> None:
    assert video_plan(NEW, {"prompt": "x"}, {}) == {
        "size": (1080, 1920),  # the service's defaults: 1080p at 9:16
        "seconds": 7,
        "audio": True,
    }
    sent = {"prompt": "x", "resolution": "4K", "aspect_ratio": "16:9", "sound": "off"}
    assert video_plan(NEW, {**sent, "duration": 99}, {}) == {
        "size": (3840, 2160),
        "seconds": 12,  # clamped to the model's range, not a range restated here
        "audio": False,
    }


@pytest.mark.parametrize(
    ("endpoint", "payload", "plan"),
    [
        ("vidVq2-text2video", {"prompt": "x"}, {"size": (1280, 720), "seconds": 5, "audio": False}),
        ("vidVq2-text2video", {"prompt": "x", "bgm": True, "duration": 9}, {"audio": False}),
        ("vidVq2-text2video", {"prompt": "x", "bgm": True, "duration": 8}, {"audio": True}),
        ("vidH_1.0_r2v", {"prompt": "x"}, {"size": (1920, 1080), "seconds": 5}),
        ("vidK-v1-6-multi-i2v", {"mode": "pro", "duration": "10"}, {"size": (1920, 1080)}),
        ("vidK-v3-turbo-t2v", {"prompt": "x", "sound": "on"}, {"audio": True}),
        ("genW2.6-r2v", {"prompt": "x"}, {"size": (1920, 1080), "seconds": 5}),
        ("vidA-2-0-fast", {"content": []}, {"size": (1280, 720), "audio": True}),
    ],
)
def test_the_services_videos_follow_their_models(
    endpoint: str, payload: dict[str, object], plan: dict[str, object]
) -> None:
    made = video_plan(endpoint, payload, {})
    assert {k: made[k] for k in plan} == plan


def test_only_videos_shaped_by_their_inputs_have_a_plan_of_their_own() -> None:
    assert set(PLANS_BY_ENDPOINT) == {"vidK-lip-sync", "vidK-v3-motion-control"}
    assert MODE_TIERS == {"std": "720p", "pro": "1080p"}


def test_makers_are_chosen_by_family_and_kind() -> None:
    assert producer("imgM_pan", "image") is producer("imgM-v8.1-t2i", "image")
    assert producer("genW2.5-t2i-preview", "image") is producer("test-anything", "image")
