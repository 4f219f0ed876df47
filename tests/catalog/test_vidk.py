"""vidK rules (and its referenced operations) on both sides of every boundary."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from catalog_rules import Sent, Warned, table_tests

from genwidgets.catalog import IneffectiveFieldWarning, validate
from genwidgets.errors import PayloadError

URL = "https://example.com/a.png"
VIDEO = "https://example.com/v.mp4"
B64 = "iVBORw0KGgo="
MB = 1024 * 1024
WHOLE_SECONDS = "expected whole seconds 3-15 (e.g. 5, '5' or 5.0)"


def turbo(**fields: Any) -> dict[str, Any]:
    return {"prompt": "a fox", **fields}


def multi(**fields: Any) -> dict[str, Any]:
    return {"image_list": [{"image": URL}], **fields}


def face(**fields: Any) -> dict[str, Any]:
    return {"face_id": "f1", "audio_id": "a1", **fields}


def lip(*faces: dict[str, Any]) -> dict[str, Any]:
    return {"session_id": "s1", "face_choose": list(faces) or [face()]}


def motion(**fields: Any) -> dict[str, Any]:
    base = {"image_url": URL, "video_url": VIDEO, "character_orientation": "video", "mode": "std"}
    return {**base, **fields}


CASES: list[tuple[str, dict[str, Any], str | None]] = [
    ("vidK-v3-turbo-t2v", turbo(), None),
    ("vidK-v3-turbo-t2v", turbo(duration=3), None),
    ("vidK-v3-turbo-t2v", turbo(duration=15), None),
    ("vidK-v3-turbo-t2v", turbo(duration="3"), None),
    ("vidK-v3-turbo-t2v", turbo(duration="15"), None),
    ("vidK-v3-turbo-t2v", turbo(duration=2), "3-15 seconds"),
    ("vidK-v3-turbo-t2v", turbo(duration=16), "3-15 seconds"),
    ("vidK-v3-turbo-t2v", turbo(duration="2"), "3-15 seconds"),
    ("vidK-v3-turbo-t2v", turbo(duration="16"), "3-15 seconds"),
    ("vidK-v3-turbo-t2v", turbo(duration="five"), "whole seconds"),
    ("vidK-v3-turbo-t2v", turbo(duration="5.5"), "whole seconds"),
    ("vidK-v3-turbo-t2v", turbo(duration=5.0), None),  # pandas and CSV rows give floats
    ("vidK-v3-turbo-t2v", turbo(duration=15.0), None),
    ("vidK-v3-turbo-t2v", turbo(duration=5.5), f"{WHOLE_SECONDS}; got 5.5"),
    ("vidK-v3-turbo-t2v", turbo(duration="5.5"), f"{WHOLE_SECONDS}; got '5.5'"),
    ("vidK-v3-turbo-t2v", turbo(duration="16.0"), "must be 3-15 seconds; got '16.0'"),
    ("vidK-v3-turbo-t2v", turbo(duration=1e300), "must be 3-15 seconds; got 1e+300"),
    ("vidK-v3-turbo-t2v", turbo(duration="1" * 5000), "expected whole seconds 3-15"),
    ("vidK-v3-turbo-t2v", turbo(duration=16.0), "3-15 seconds; got 16.0"),
    ("vidK-v3-turbo-t2v", turbo(duration=float("nan")), "whole seconds"),
    ("vidK-v3-turbo-t2v", turbo(duration=True), "boolean"),
    ("vidK-v3-turbo-t2v", turbo(resolution="4K", aspect_ratio="1:1", sound="on"), None),
    ("vidK-v3-turbo-t2v", turbo(resolution="8K"), "expected one of"),
    ("vidK-v3-turbo-t2v", turbo(sound="yes"), "expected one of"),
    *[("vidK-v3-turbo-t2v", turbo(enhance_prompt=v), None)
      for v in (True, False, "true", "false", "on", "off", "enabled", "disabled")],
    ("vidK-v3-turbo-t2v", turbo(enhance_prompt="yes"), "takes true or false"),
    ("vidK-v3-turbo-t2v", turbo(enhance_prompt=1), "takes true or false"),
    ("vidK-v3-turbo-t2v", turbo(element_list=[{"element_id": 7}]), None),
    ("vidK-v3-turbo-t2v", turbo(element_list=[{}]), "Field required"),
    ("vidK-v3-turbo-t2v", turbo(element_list=[{"element_id": "seven"}]), "expected a whole number"),
    ("vidK-v3-turbo-t2v", {}, "Field required"),
    ("vidK-v1-6-multi-i2v", multi(), None),
    ("vidK-v1-6-multi-i2v", multi(image_list=[{"image": B64}] * 4), None),
    ("vidK-v1-6-multi-i2v", multi(image_list=[{"image": B64}] * 5), "must have 1-4 items"),
    ("vidK-v1-6-multi-i2v", multi(image_list=[]), "must have 1-4 items"),
    ("vidK-v1-6-multi-i2v", {}, "Field required"),
    ("vidK-v1-6-multi-i2v", multi(image_list=[{"image": "data:image/png;base64," + B64}]),
     "raw base64 without a 'data:...;base64,' prefix"),
    ("vidK-v1-6-multi-i2v", multi(image_list=[{"image": "cat.png"}]), "raw base64"),
    ("vidK-v1-6-multi-i2v", multi(image_list=[{"image": "A" * (14 * MB)}]), "the limit is 10.0"),
    ("vidK-v1-6-multi-i2v", multi(prompt="p" * 2500, negative_prompt="n" * 2500), None),
    ("vidK-v1-6-multi-i2v", multi(prompt="p" * 2501), "at most 2500"),
    ("vidK-v1-6-multi-i2v", multi(negative_prompt="n" * 2501), "at most 2500"),
    ("vidK-v1-6-multi-i2v", multi(mode="pro", duration="10", aspect_ratio="9:16"), None),
    ("vidK-v1-6-multi-i2v", multi(mode="max"), "expected one of"),
    ("vidK-v1-6-multi-i2v", multi(duration=5), None),
    ("vidK-v1-6-multi-i2v", multi(duration=10), None),
    ("vidK-v1-6-multi-i2v", multi(duration=7), "expected one of '5', '10'; got"),
    ("vidK-v1-6-multi-i2v", multi(duration=10.0), None),
    ("vidK-v1-6-multi-i2v", multi(duration=7.0), "expected one of '5', '10'; got 7.0"),
    ("vidK-v1-6-multi-i2v", multi(duration="7"), "expected one of '5', '10'; got"),
    ("vidK-lip-sync", lip(), None),
    ("vidK-lip-sync", lip(face(audio_id=None, sound_file=B64)), None),
    ("vidK-lip-sync", lip(face(audio_id=None, sound_file="https://x/a.mp3")), None),
    ("vidK-lip-sync", lip(face(sound_file=B64)), "exactly one of audio_id and sound_file"),
    ("vidK-lip-sync", lip(face(audio_id=None)), "exactly one of audio_id and sound_file"),
    ("vidK-lip-sync", lip(face(audio_id=None, sound_file="data:audio/mpeg;base64," + B64)),
     "raw base64 without"),
    ("vidK-lip-sync", lip(face(audio_id=None, sound_file="A" * (7 * MB))), "the limit is 5.0 MB"),
    ("vidK-lip-sync", lip(face(), face()), "exactly one face"),
    ("vidK-lip-sync", {"session_id": "s", "face_choose": []}, "exactly one face"),
    ("vidK-lip-sync", {"face_choose": [face()]}, "Field required"),
    ("vidK-lip-sync", lip({"audio_id": "a"}), "Field required"),
    ("vidK-lip-sync", lip(face(sound_start_time=0, sound_end_time=2000)), None),
    ("vidK-lip-sync", lip(face(sound_start_time=0, sound_end_time=1999)), "at least 2 s"),
    ("vidK-lip-sync", lip(face(sound_start_time=1000, sound_end_time=3000)), None),
    ("vidK-lip-sync", lip(face(sound_start_time=1000, sound_end_time=2999)), "at least 2 s"),
    ("vidK-lip-sync", lip(face(sound_start_time=5000, sound_end_time=1000)), "at least 2 s"),
    ("vidK-lip-sync", lip(face(sound_end_time=2000)), None),
    ("vidK-lip-sync", lip(face(sound_end_time=1999)), "at least 2 s"),
    ("vidK-lip-sync", lip(face(sound_start_time=0, sound_end_time=60000)), None),
    ("vidK-lip-sync", lip(face(sound_end_time=60001)), "must be 0-60000"),
    ("vidK-lip-sync", lip(face(sound_start_time=-1)), "must be 0-60000"),
    ("vidK-lip-sync", lip(face(sound_insert_time=0)), None),
    ("vidK-lip-sync", lip(face(sound_insert_time=-1)), "must be 0 or more; got"),
    ("vidK-lip-sync", lip(face(sound_volume=0, original_audio_volume=2)), None),
    ("vidK-lip-sync", lip(face(sound_volume=2.0, original_audio_volume=0.0)), None),
    ("vidK-lip-sync", lip(face(sound_volume=2.01)), "must be 0-2"),
    ("vidK-lip-sync", lip(face(original_audio_volume=-0.01)), "must be 0-2"),
    ("vidK-v3-motion-control", motion(), None),
    ("vidK-v3-motion-control", motion(image_url=B64, mode="pro", character_orientation="image",
                                      keep_original_sound="no", prompt="p" * 2500), None),
    ("vidK-v3-motion-control", motion(prompt="p" * 2501), "at most 2500"),
    ("vidK-v3-motion-control", motion(element_list=[{"element_id": 1}]), None),
    ("vidK-v3-motion-control", motion(element_list=[{"element_id": 1}] * 2), "at most 1"),
    ("vidK-v3-motion-control", motion(keep_original_sound="maybe"), "expected one of"),
    ("vidK-v3-motion-control", motion(character_orientation="left"), "expected one of"),
    ("vidK-v3-motion-control", motion(mode="max"), "expected one of"),
    ("vidK-v3-motion-control", motion(image_url="data:image/png;base64," + B64), "raw base64"),
    ("vidK-v3-motion-control", motion(video_url="data:video/mp4;base64,AAAA"), "not accepted"),
    ("vidK-v3-motion-control", motion(video_url="dance.mp4"), "public http(s) URL"),
    ("vidK-v3-motion-control", {"image_url": URL, "video_url": VIDEO, "mode": "std"},
     "Field required"),
    ("vidK-v3-motion-control", {"image_url": URL, "video_url": VIDEO,
                                "character_orientation": "video"}, "Field required"),
    ("vidK-face-identify", {"video_url": VIDEO}, None),
    ("vidK-face-identify", {}, "Field required"),
    ("vidK-audio-preview", {"text": "hello", "voice_id": "v"}, None),
    ("vidK-audio-preview", {"text": ""}, "at least 1 character"),
    ("vidK-custom-element", {"name": "e", "image_urls": [URL] * 4}, None),
    ("vidK-custom-element", {"name": "e", "image_urls": [URL] * 5}, "must have 1-4 items"),
    ("vidK-custom-element", {"name": "e", "image_urls": []}, "must have 1-4 items"),
]  # fmt: skip

WARNED: list[Warned] = [
    ("vidK-v3-motion-control", motion(character_orientation="image",
                                      element_list=[{"element_id": 1}]),
     IneffectiveFieldWarning, "orientation"),
]  # fmt: skip

SLIPS: list[Sent] = [
    ("vidK-v1-6-multi-i2v", multi(duration=5), "duration", "5"),
    ("vidK-v1-6-multi-i2v", multi(duration=10), "duration", "10"),
    ("vidK-v3-turbo-t2v", turbo(duration=7), "duration", 7),
    ("vidK-v3-turbo-t2v", turbo(duration=" 7 "), "duration", "7"),
    ("vidK-v3-turbo-t2v", turbo(duration=7.0), "duration", 7),
    ("vidK-v1-6-multi-i2v", multi(duration=5.0), "duration", "5"),
    # a CSV cell of a float column: the text of a whole number is that number
    ("vidK-v3-turbo-t2v", turbo(duration="5.0"), "duration", "5"),
    ("vidK-v3-turbo-t2v", turbo(duration=" 07.00 "), "duration", "7"),
    ("vidK-v1-6-multi-i2v", multi(duration="10.0"), "duration", "10"),
    ("vidK-v3-turbo-t2v", turbo(enhance_prompt="Enabled"), "enhance_prompt", "enabled"),
]

test_vidk_rules, test_vidk_warnings, test_vidk_slips = table_tests(CASES, WARNED, SLIPS)


def test_lip_sync_error_points_at_the_face() -> None:
    with warnings.catch_warnings(), pytest.raises(PayloadError) as info:
        validate("vidK-lip-sync", lip(face(sound_file=B64)))
    assert info.value.errors[0]["loc"] == ("face_choose", 0)
