"""A video endpoint is one class: the simulator plans its size, length and sound
from the model's fields, defaults and ranges, with no code of its own."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Literal

import pytest
from pydantic import Field

from genwidgets.catalog import Endpoint, ServiceDefault, register, unregister
from genwidgets.simulator.outputs import producer
from genwidgets.simulator.videos import (
    MODE_TIERS,
    VIDEOS_BY_ENDPOINT,
    Video,
    model_plan,
    no_frames,
    plain_prompt,
    video_of,
    video_plan,
)

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


def test_only_videos_shaped_by_their_inputs_have_a_row_of_their_own() -> None:
    assert set(VIDEOS_BY_ENDPOINT) == {
        "vidK-lip-sync",
        "vidK-v3-motion-control",
        "vidP_v6_transition",
    }
    assert MODE_TIERS == {"std": "720p", "pro": "1080p"}


def test_a_new_video_endpoint_needs_no_row(one_class: None) -> None:
    video = video_of(NEW)
    assert video == Video()
    assert (video.plan, video.prompt, video.frames, video.redub) == (
        model_plan,
        plain_prompt,
        no_frames,
        None,
    )
    assert video.prompt({"prompt": "a heron"}) == "a heron"
    assert video.prompt({}) == "(no prompt)"
    assert video.frames({"first_frame_image": "x"}) == (None, None)


def test_vida_reads_its_text_and_frames_from_content_by_family() -> None:
    content = [
        {"type": "text", "text": "a fox"},
        {"type": "image_url", "image_url": {"url": "last"}, "role": "last_frame"},
        {"type": "image_url", "image_url": {"url": "first"}},  # no role: the first frame
        {"type": "text", "text": "at dusk"},
    ]
    for endpoint in ("vidA-2-0", "vidA-2-0-fast"):
        video = video_of(endpoint)
        assert video.prompt({"content": content}) == "a fox at dusk"
        assert video.prompt({"content": "not a list"}) == "(no text)"
        assert video.frames({"content": content}) == ("first", "last")
        assert video.redub is None


def test_the_transition_reads_two_frame_fields_and_says_what_it_does() -> None:
    video = video_of("vidP_v6_transition")
    payload = {"first_frame_image": "a", "last_frame_image": "b"}
    assert video.frames(payload) == ("a", "b")
    assert video.prompt(payload) == "first frame → last frame"
    assert video.prompt({**payload, "prompt": "melt"}) == "melt"
    assert video.plan is model_plan


def test_lip_sync_re_dubs_its_source_with_the_chosen_sound() -> None:
    video = video_of("vidK-lip-sync")
    assert video.prompt({"session_id": "s-1"}) == "lip-sync of session s-1"
    assert video.frames({}) == (None, None)
    assert video.redub is not None
    choice = {"audio_id": "a-1", "sound_start_time": 500, "sound_end_time": 1500}
    ctx = {"audio_texts": {"a-1": "hello"}}
    sound = video.redub({"face_choose": [choice]}, ctx)
    assert len(sound) == 24000 * 2  # one second of mono s16 at the simulator's rate
    placed = video.redub({"face_choose": [{**choice, "sound_insert_time": 250}]}, ctx)
    assert placed == bytes(6000 * 2) + sound  # a quarter second of silence first


def test_makers_are_chosen_by_family_and_kind() -> None:
    assert producer("imgM_pan", "image") is producer("imgM-v8.1-t2i", "image")
    assert producer("genW2.5-t2i-preview", "image") is producer("test-anything", "image")
