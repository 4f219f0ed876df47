"""vidV, vidH, vidK, vidP and genW2.6 rules on both sides of every boundary."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from genwidgets.catalog import payload_of, validate
from genwidgets.catalog.video import DeprecatedFieldWarning, IneffectiveFieldWarning

URL = "https://example.com/a.png"
VIDEO = "https://example.com/v.mp4"
B64 = "iVBORw0KGgo="
MB = 1024 * 1024


def q2(**fields: Any) -> dict[str, Any]:
    return {"prompt": "a red kite", **fields}


def vidh(**fields: Any) -> dict[str, Any]:
    return {
        "prompt": "[Image 1] walks",
        "media": [{"type": "reference_image", "url": URL}],
        **fields,
    }


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


def vidp(**fields: Any) -> dict[str, Any]:
    return {"first_frame_image": URL, "last_frame_image": URL, **fields}


def r2v(**fields: Any) -> dict[str, Any]:
    return {"reference_urls": [URL], **fields}


CASES: list[tuple[str, dict[str, Any], str | None]] = [
    # vidVq2-text2video
    ("vidVq2-text2video", q2(), None),
    ("vidVq2-text2video", q2(prompt="p" * 2000), None),
    ("vidVq2-text2video", q2(prompt="p" * 2001), "at most 2000"),
    ("vidVq2-text2video", q2(prompt=""), "at least 1 character"),
    ("vidVq2-text2video", {}, "Field required"),
    ("vidVq2-text2video", q2(duration=1), None),
    ("vidVq2-text2video", q2(duration=10), None),
    ("vidVq2-text2video", q2(duration=0), "greater than or equal to 1"),
    ("vidVq2-text2video", q2(duration=11), "less than or equal to 10"),
    ("vidVq2-text2video", q2(aspect_ratio="3:4", resolution="540p", seed=0), None),
    ("vidVq2-text2video", q2(aspect_ratio="21:9"), "Input should be"),
    ("vidVq2-text2video", q2(resolution="4k"), "Input should be"),
    ("vidVq2-text2video", q2(movement_amplitude="anything"), None),
    ("vidVq2-text2video", q2(bgm=True, duration=8), None),
    ("vidVq2-text2video", q2(payload="x" * 1_048_576), None),
    ("vidVq2-text2video", q2(payload="x" * 1_048_577), "at most 1048576"),
    ("vidVq2-text2video", q2(wm_position=1, watermark=True, wm_url=URL), None),
    ("vidVq2-text2video", q2(wm_position=4), None),
    ("vidVq2-text2video", q2(wm_position=0), "Input should be 1, 2, 3 or 4"),
    ("vidVq2-text2video", q2(wm_position=5), "Input should be 1, 2, 3 or 4"),
    ("vidVq2-text2video", q2(meta_data=""), None),
    ("vidVq2-text2video", q2(meta_data='{"Label": "x"}'), None),
    ("vidVq2-text2video", q2(meta_data="{not json"), "does not parse as JSON"),
    ("vidVq2-text2video", q2(meta_data="[1, 2]"), "JSON object string"),
    # vidVq1-text2video
    ("vidVq1-text2video", q2(), None),
    ("vidVq1-text2video", q2(style="anime", duration=5, resolution="1080p"), None),
    ("vidVq1-text2video", q2(duration=4), "Input should be 5"),
    ("vidVq1-text2video", q2(resolution="720p"), "Input should be '1080p'"),
    ("vidVq1-text2video", q2(style="noir"), "Input should be"),
    ("vidVq1-text2video", q2(movement_amplitude="large"), None),
    ("vidVq1-text2video", q2(movement_amplitude="huge"), "Input should be"),
    ("vidVq1-text2video", q2(aspect_ratio="4:3"), "Input should be"),
    ("vidVq1-text2video", q2(prompt="p" * 2001), "at most 2000"),
    ("vidVq1-text2video", {"style": "anime"}, "Field required"),
    ("vidVq1-text2video", q2(wm_position=5), "Input should be"),
    # vidV-create-subjects
    ("vidV-create-subjects", {"name": "kit", "images": [URL]}, None),
    ("vidV-create-subjects", {"name": "kit", "images": [URL] * 3}, None),
    ("vidV-create-subjects", {"name": "kit", "images": [URL] * 4}, "at most 3"),
    ("vidV-create-subjects", {"name": "kit", "images": []}, "at least 1 item"),
    ("vidV-create-subjects", {"name": "kit"}, "needs images (1-3) or a video"),
    ("vidV-create-subjects", {"name": "kit", "videos": [VIDEO]}, None),
    ("vidV-create-subjects", {"name": "kit", "videos": [VIDEO] * 2}, "at most 1"),
    ("vidV-create-subjects", {"name": "kit", "images": ["data:image/jpeg;base64," + B64]}, None),
    ("vidV-create-subjects", {"name": "kit", "images": ["data:image/jpg;base64," + B64]}, None),
    ("vidV-create-subjects", {"name": "kit", "images": [B64]}, "data:<MIME type>"),
    ("vidV-create-subjects", {"name": "kit", "images": ["data:image/bmp;base64,Qk0="]}, "bmp"),
    ("vidV-create-subjects", {"name": "kit", "videos": ["data:video/quicktime;base64,AAAA"]}, None),
    ("vidV-create-subjects", {"name": "kit", "videos": ["data:video/webm;base64,AAAA"]}, "webm"),
    ("vidV-create-subjects", {"name": "kit", "images": ["data:image/png;base64," + "A" * 28 * MB]},
     "the limit is 20.0 MB"),
    ("vidV-create-subjects", {"images": [URL]}, "Field required"),
    ("vidV-create-subjects", {"name": "kit", "images": [URL], "voice_id": "v1"}, None),
    # vidH_1.0_r2v
    ("vidH_1.0_r2v", vidh(), None),
    ("vidH_1.0_r2v", vidh(media=[{"type": "reference_image", "url": URL}] * 9), None),
    ("vidH_1.0_r2v", vidh(media=[{"type": "reference_image", "url": URL}] * 10), "at most 9"),
    ("vidH_1.0_r2v", vidh(media=[]), "at least 1 item"),
    ("vidH_1.0_r2v", vidh(media=[{"type": "image", "url": URL}]), "'reference_image'"),
    ("vidH_1.0_r2v", vidh(media=[{"type": "reference_image"}]), "Field required"),
    ("vidH_1.0_r2v", vidh(media=[{"type": "reference_image", "url": "data:image/webp;base64,"
                                  + B64}]), None),
    ("vidH_1.0_r2v", vidh(media=[{"type": "reference_image", "url": "data:image/gif;base64,"
                                  + B64}]), "not accepted"),
    ("vidH_1.0_r2v", vidh(media=[{"type": "reference_image", "url": B64}]), "data:<MIME type>"),
    ("vidH_1.0_r2v", vidh(duration=3), None),
    ("vidH_1.0_r2v", vidh(duration=15), None),
    ("vidH_1.0_r2v", vidh(duration=2), "greater than or equal to 3"),
    ("vidH_1.0_r2v", vidh(duration=16), "less than or equal to 15"),
    ("vidH_1.0_r2v", vidh(resolution="720P", ratio="9:21", watermark=False), None),
    ("vidH_1.0_r2v", vidh(resolution="480P"), "Input should be"),
    ("vidH_1.0_r2v", vidh(ratio="2:1"), "Input should be"),
    ("vidH_1.0_r2v", vidh(seed=0), None),
    ("vidH_1.0_r2v", vidh(seed=2147483647), None),
    ("vidH_1.0_r2v", vidh(seed=2147483648), "less than or equal"),
    ("vidH_1.0_r2v", vidh(seed=-1), "greater than or equal"),
    ("vidH_1.0_r2v", vidh(prompt="p" * 5000), None),
    ("vidH_1.0_r2v", vidh(prompt="字" * 2500), None),
    ("vidH_1.0_r2v", {"media": [{"type": "reference_image", "url": URL}]}, "Field required"),
    # vidK-v3-turbo-t2v
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
    ("vidK-v3-turbo-t2v", turbo(duration=True), "boolean"),
    ("vidK-v3-turbo-t2v", turbo(resolution="4K", aspect_ratio="1:1", sound="on"), None),
    ("vidK-v3-turbo-t2v", turbo(resolution="8K"), "Input should be"),
    ("vidK-v3-turbo-t2v", turbo(sound="yes"), "Input should be"),
    *[("vidK-v3-turbo-t2v", turbo(enhance_prompt=v), None)
      for v in (True, False, "true", "false", "on", "off", "enabled", "disabled")],
    ("vidK-v3-turbo-t2v", turbo(enhance_prompt="yes"), "enhance_prompt takes true or false"),
    ("vidK-v3-turbo-t2v", turbo(enhance_prompt=1), "enhance_prompt takes true or false"),
    ("vidK-v3-turbo-t2v", turbo(element_list=[{"element_id": 7}]), None),
    ("vidK-v3-turbo-t2v", turbo(element_list=[{}]), "Field required"),
    ("vidK-v3-turbo-t2v", turbo(element_list=[{"element_id": "seven"}]), "valid integer"),
    ("vidK-v3-turbo-t2v", {}, "Field required"),
    # vidK-v1-6-multi-i2v
    ("vidK-v1-6-multi-i2v", multi(), None),
    ("vidK-v1-6-multi-i2v", multi(image_list=[{"image": B64}] * 4), None),
    ("vidK-v1-6-multi-i2v", multi(image_list=[{"image": B64}] * 5), "at most 4"),
    ("vidK-v1-6-multi-i2v", multi(image_list=[]), "at least 1 item"),
    ("vidK-v1-6-multi-i2v", {}, "Field required"),
    ("vidK-v1-6-multi-i2v", multi(image_list=[{"image": "data:image/png;base64," + B64}]),
     "raw base64 without a 'data:...;base64,' prefix"),
    ("vidK-v1-6-multi-i2v", multi(image_list=[{"image": "cat.png"}]), "raw base64"),
    ("vidK-v1-6-multi-i2v", multi(image_list=[{"image": "A" * (14 * MB)}]), "the limit is 10.0"),
    ("vidK-v1-6-multi-i2v", multi(prompt="p" * 2500, negative_prompt="n" * 2500), None),
    ("vidK-v1-6-multi-i2v", multi(prompt="p" * 2501), "at most 2500"),
    ("vidK-v1-6-multi-i2v", multi(negative_prompt="n" * 2501), "at most 2500"),
    ("vidK-v1-6-multi-i2v", multi(mode="pro", duration="10", aspect_ratio="9:16"), None),
    ("vidK-v1-6-multi-i2v", multi(mode="max"), "Input should be"),
    ("vidK-v1-6-multi-i2v", multi(duration=5), None),
    ("vidK-v1-6-multi-i2v", multi(duration=10), None),
    ("vidK-v1-6-multi-i2v", multi(duration=7), "Input should be '5' or '10'"),
    ("vidK-v1-6-multi-i2v", multi(duration="7"), "Input should be '5' or '10'"),
    # vidK-lip-sync
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
    ("vidK-lip-sync", lip(face(sound_end_time=60001)), "less than or equal to 60000"),
    ("vidK-lip-sync", lip(face(sound_start_time=-1)), "greater than or equal to 0"),
    ("vidK-lip-sync", lip(face(sound_insert_time=0)), None),
    ("vidK-lip-sync", lip(face(sound_insert_time=-1)), "greater than or equal to 0"),
    ("vidK-lip-sync", lip(face(sound_volume=0, original_audio_volume=2)), None),
    ("vidK-lip-sync", lip(face(sound_volume=2.0, original_audio_volume=0.0)), None),
    ("vidK-lip-sync", lip(face(sound_volume=2.01)), "less than or equal to 2"),
    ("vidK-lip-sync", lip(face(original_audio_volume=-0.01)), "greater than or equal to 0"),
    # vidK-v3-motion-control
    ("vidK-v3-motion-control", motion(), None),
    ("vidK-v3-motion-control", motion(image_url=B64, mode="pro", character_orientation="image",
                                      keep_original_sound="no", prompt="p" * 2500), None),
    ("vidK-v3-motion-control", motion(prompt="p" * 2501), "at most 2500"),
    ("vidK-v3-motion-control", motion(element_list=[{"element_id": 1}]), None),
    ("vidK-v3-motion-control", motion(element_list=[{"element_id": 1}] * 2), "at most 1"),
    ("vidK-v3-motion-control", motion(keep_original_sound="maybe"), "Input should be"),
    ("vidK-v3-motion-control", motion(character_orientation="left"), "Input should be"),
    ("vidK-v3-motion-control", motion(mode="max"), "Input should be"),
    ("vidK-v3-motion-control", motion(image_url="data:image/png;base64," + B64), "raw base64"),
    ("vidK-v3-motion-control", motion(video_url="data:video/mp4;base64,AAAA"), "not accepted"),
    ("vidK-v3-motion-control", motion(video_url="dance.mp4"), "public http(s) URL"),
    ("vidK-v3-motion-control", {"image_url": URL, "video_url": VIDEO, "mode": "std"},
     "Field required"),
    ("vidK-v3-motion-control", {"image_url": URL, "video_url": VIDEO,
                                "character_orientation": "video"}, "Field required"),
    # referenced vidK operations
    ("vidK-face-identify", {"video_url": VIDEO}, None),
    ("vidK-face-identify", {}, "Field required"),
    ("vidK-audio-preview", {"text": "hello", "voice_id": "v"}, None),
    ("vidK-audio-preview", {"text": ""}, "at least 1 character"),
    ("vidK-custom-element", {"name": "e", "image_urls": [URL] * 4}, None),
    ("vidK-custom-element", {"name": "e", "image_urls": [URL] * 5}, "at most 4"),
    ("vidK-custom-element", {"name": "e", "image_urls": []}, "at least 1 item"),
    # vidP_v6_transition
    ("vidP_v6_transition", vidp(), None),
    ("vidP_v6_transition", vidp(first_frame_image="/tmp/a.png"), "upload a local file"),
    ("vidP_v6_transition", vidp(last_frame_image="data:image/png;base64," + B64), "not accepted"),
    ("vidP_v6_transition", vidp(first_frame_image="asset://a1"), "not accepted here"),
    ("vidP_v6_transition", {"first_frame_image": URL}, "Field required"),
    ("vidP_v6_transition", vidp(prompt="p" * 5000), None),
    ("vidP_v6_transition", vidp(prompt="p" * 5001), "at most 5000"),
    ("vidP_v6_transition", vidp(duration=1), None),
    ("vidP_v6_transition", vidp(duration=15), None),
    ("vidP_v6_transition", vidp(duration=7.5), None),
    ("vidP_v6_transition", vidp(duration=0.9), "greater than or equal to 1"),
    ("vidP_v6_transition", vidp(duration=15.1), "less than or equal to 15"),
    ("vidP_v6_transition", vidp(quality="360p", generate_audio_switch=True), None),
    ("vidP_v6_transition", vidp(quality="4k"), "Input should be"),
    ("vidP_v6_transition", vidp(seed=2147483647), None),
    ("vidP_v6_transition", vidp(seed=2147483648), "less than or equal"),
    # genW2.6-r2v
    ("genW2.6-r2v", r2v(), None),
    ("genW2.6-r2v", r2v(reference_urls=[URL, VIDEO, URL, URL, URL]), None),
    ("genW2.6-r2v", r2v(reference_urls=[URL] * 6), "at most 5"),
    ("genW2.6-r2v", r2v(reference_urls=[]), "at least 1 item"),
    ("genW2.6-r2v", r2v(reference_urls=["data:image/png;base64," + B64]), "not accepted"),
    ("genW2.6-r2v", {}, "reference_urls (1-5 image or video URLs) is required"),
    ("genW2.6-r2v", r2v(reference_video_urls=[VIDEO]), "not both"),
    ("genW2.6-r2v", r2v(prompt="character1 waves" + "p" * 1484), None),
    ("genW2.6-r2v", r2v(prompt="p" * 1501), "at most 1500"),
    ("genW2.6-r2v", r2v(duration=2), None),
    ("genW2.6-r2v", r2v(duration=10), None),
    ("genW2.6-r2v", r2v(duration=1), "greater than or equal to 2"),
    ("genW2.6-r2v", r2v(duration=11), "less than or equal to 10"),
    *[("genW2.6-r2v", r2v(size=s), None) for s in (
        "1280*720", "720*1280", "960*960", "1088*832", "832*1088",
        "1920*1080", "1080*1920", "1440*1440", "1632*1248", "1248*1632")],
    ("genW2.6-r2v", r2v(size="1280*1280"), "Input should be"),
    ("genW2.6-r2v", r2v(size="640*480"), "Input should be"),
    ("genW2.6-r2v", r2v(shot_type="multi", seed=0, watermark=True, negative_prompt="n"), None),
    ("genW2.6-r2v", r2v(shot_type="double"), "Input should be"),
    ("genW2.6-r2v", r2v(seed=2147483648), "less than or equal"),
]  # fmt: skip


@pytest.mark.parametrize(("endpoint_id", "payload", "error"), CASES)
def test_video_rules(
    check: Any, endpoint_id: str, payload: dict[str, Any], error: str | None
) -> None:
    check(endpoint_id, payload, error)


@pytest.mark.parametrize(
    ("endpoint_id", "payload", "category", "warning"),
    [
        ("genW2.6-r2v", {"reference_video_urls": [VIDEO]}, DeprecatedFieldWarning,
         "soon to be deprecated"),
        ("vidVq2-text2video", q2(bgm=True, duration=9), IneffectiveFieldWarning, "bgm has no"),
        ("vidVq2-text2video", q2(bgm=True, duration=10), IneffectiveFieldWarning, "bgm has no"),
        ("vidVq2-text2video", q2(off_peak=True), IneffectiveFieldWarning, "currently unavailable"),
        ("vidVq1-text2video", q2(off_peak=True), IneffectiveFieldWarning, "currently unavailable"),
        ("vidVq2-text2video", q2(callback_url="https://h"), IneffectiveFieldWarning, "webhooks"),
        ("vidH_1.0_r2v", vidh(prompt="p" * 5001), IneffectiveFieldWarning, "truncates"),
        ("vidH_1.0_r2v", vidh(prompt="字" * 2501), IneffectiveFieldWarning, "truncates"),
        ("vidK-v3-motion-control", motion(character_orientation="image",
                                          element_list=[{"element_id": 1}]),
         IneffectiveFieldWarning, "orientation"),
    ],
)  # fmt: skip
def test_advisory_warnings(
    endpoint_id: str, payload: dict[str, Any], category: type[Warning], warning: str
) -> None:
    with pytest.warns(category, match=warning):
        validate(endpoint_id, payload)


def test_deprecated_reference_videos_are_still_sent() -> None:
    with pytest.warns(DeprecatedFieldWarning):
        body = payload_of("genW2.6-r2v", {"reference_video_urls": [VIDEO], "size": "1920x1080"})
    assert body == {"reference_video_urls": [VIDEO], "size": "1920*1080"}


def test_warnings_are_user_warnings_not_deprecation_warnings() -> None:
    assert issubclass(DeprecatedFieldWarning, UserWarning)
    assert not issubclass(DeprecatedFieldWarning, DeprecationWarning)


@pytest.mark.parametrize(
    ("endpoint_id", "payload", "field", "sent"),
    [
        ("vidK-v1-6-multi-i2v", multi(duration=5), "duration", "5"),
        ("vidK-v1-6-multi-i2v", multi(duration=10), "duration", "10"),
        ("vidK-v3-turbo-t2v", turbo(duration=7), "duration", 7),
        ("vidK-v3-turbo-t2v", turbo(duration=" 7 "), "duration", "7"),
        ("vidK-v3-turbo-t2v", turbo(enhance_prompt="Enabled"), "enhance_prompt", "enabled"),
        ("vidVq2-text2video", q2(meta_data={"Label": "AI"}), "meta_data", '{"Label": "AI"}'),
        ("vidVq2-text2video", q2(wm_position="2"), "wm_position", 2),
        ("vidH_1.0_r2v", vidh(resolution="1080p"), "resolution", "1080P"),
        ("vidP_v6_transition", vidp(duration=5), "duration", 5),
    ],
)
def test_unambiguous_slips_are_normalised(
    endpoint_id: str, payload: dict[str, Any], field: str, sent: Any
) -> None:
    body = payload_of(endpoint_id, payload)
    assert body[field] == sent and type(body[field]) is type(sent)


def test_lip_sync_error_points_at_the_face() -> None:
    from genwidgets.errors import PayloadError

    with warnings.catch_warnings(), pytest.raises(PayloadError) as info:
        validate("vidK-lip-sync", lip(face(sound_file=B64)))
    assert info.value.errors[0]["loc"] == ("face_choose", 0)
