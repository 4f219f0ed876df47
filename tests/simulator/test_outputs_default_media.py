"""Endpoints registered at run time get their kind's default media (checked by decoding it)."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from genwidgets.catalog.registry import KINDS
from genwidgets.simulator import synth
from genwidgets.simulator.outputs import DEFAULT_MAKERS, produce
from genwidgets.simulator.videos import video_plan

pytestmark = pytest.mark.timeout(120)

NEW = "test-registered-later"  # no maker of its own: the kind decides
NO_MEDIA = ("asset", "subject", "face")  # kinds whose tasks answer with JSON only


def test_every_kind_either_makes_media_or_says_it_makes_none() -> None:
    assert set(DEFAULT_MAKERS) | set(NO_MEDIA) == set(KINDS)
    assert not set(DEFAULT_MAKERS) & set(NO_MEDIA)


@pytest.mark.parametrize(
    ("payload", "count", "size"),
    [
        ({"prompt": "a kite"}, 1, (1024, 1024)),
        ({"prompt": "a kite", "n": 3, "size": "640*480"}, 3, (640, 480)),
        ({"prompt": "a kite", "n": "2", "size": "512x768"}, 2, (512, 768)),
        ({"n": 99, "size": "huge"}, 10, (1024, 1024)),  # read tolerantly, clamped
    ],
)
def test_images_follow_prompt_n_and_size(
    payload: dict[str, object], count: int, size: tuple[int, int]
) -> None:
    files = produce(NEW, "image", payload, 7, {}).files
    assert len(files) == count
    for made in files:
        assert made.content_type == "image/png"
        with Image.open(io.BytesIO(made.data)) as image:
            assert image.size == size


def test_a_video_is_720p_16_9_of_the_duration_asked() -> None:
    produced = produce(NEW, "video", {"prompt": "waves", "duration": 2}, 7, {})
    [made] = produced.files
    assert made.content_type == "video/mp4"
    frames, rate = synth.video_frames(made.data)
    assert frames and frames[0].size == (1280, 720)
    assert len(frames) / rate == pytest.approx(2, abs=0.2)
    assert produced.facts["video"] == {"size": (1280, 720), "seconds": 2, "audio": False}


def test_a_video_without_duration_lasts_5_s_and_has_sound_when_asked() -> None:
    plan = video_plan(NEW, {"generate_audio": True}, {})
    assert plan == {"size": (1280, 720), "seconds": 5, "audio": True}


@pytest.mark.parametrize("kind", ["speech", "audio"])
def test_speech_and_audio_make_a_short_clip(kind: str) -> None:
    spoken = produce(NEW, kind, {"text": "hello there"}, 7, {})
    [made] = spoken.files
    assert made.content_type == "audio/mpeg"
    pcm = synth.decode_audio(made.data)
    assert pcm is not None
    seconds = len(pcm) / 2 / synth.AUDIO_RATE
    assert 2 <= seconds <= 60
    assert spoken.facts["duration_ms"] == pytest.approx(seconds * 1000, abs=150)

    music = produce(NEW, kind, {"duration": 4}, 7, {})
    assert music.facts["duration_ms"] == pytest.approx(4000, abs=50)


@pytest.mark.parametrize("kind", NO_MEDIA)
def test_kinds_that_make_no_media_still_answer_with_json_only(kind: str) -> None:
    assert produce(NEW, kind, {"prompt": "x"}, 7, {}).files == []
