"""vidV rules (text to video, subjects) on both sides of every boundary."""

from __future__ import annotations

from typing import Any

from catalog_rules import Sent, Warned, table_tests

from genwidgets.catalog import IneffectiveFieldWarning

URL = "https://example.com/a.png"
VIDEO = "https://example.com/v.mp4"
B64 = "iVBORw0KGgo="
MB = 1024 * 1024


def q2(**fields: Any) -> dict[str, Any]:
    return {"prompt": "a red kite", **fields}


CASES: list[tuple[str, dict[str, Any], str | None]] = [
    ("vidVq2-text2video", q2(), None),
    ("vidVq2-text2video", q2(prompt="p" * 2000), None),
    ("vidVq2-text2video", q2(prompt="p" * 2001), "must have 1-2000 characters"),
    ("vidVq2-text2video", q2(prompt=""), "must have 1-2000 characters"),
    ("vidVq2-text2video", {}, "Field required"),
    ("vidVq2-text2video", q2(duration=1), None),
    ("vidVq2-text2video", q2(duration=10), None),
    ("vidVq2-text2video", q2(duration=0), "must be 1-10"),
    ("vidVq2-text2video", q2(duration=11), "must be 1-10"),
    ("vidVq2-text2video", q2(aspect_ratio="3:4", resolution="540p", seed=0), None),
    ("vidVq2-text2video", q2(seed=4_294_967_295), None),
    ("vidVq2-text2video", q2(seed=4_294_967_296), "must be 0-4294967295"),
    ("vidVq2-text2video", q2(seed=-1), "must be 0-4294967295"),
    ("vidVq2-text2video", q2(seed=10**400), "must be 0-4294967295"),
    ("vidVq1-text2video", q2(seed=4_294_967_295), None),
    ("vidVq1-text2video", q2(seed=-1), "must be 0-4294967295"),
    ("vidVq1-text2video", q2(seed=2**63), "must be 0-4294967295"),
    ("vidVq2-text2video", q2(aspect_ratio="21:9"), "expected one of"),
    ("vidVq2-text2video", q2(resolution="4k"), "expected one of"),
    ("vidVq2-text2video", q2(movement_amplitude="anything"), None),
    ("vidVq2-text2video", q2(bgm=True, duration=8), None),
    ("vidVq2-text2video", q2(payload="x" * 1_048_576), None),
    ("vidVq2-text2video", q2(payload="x" * 1_048_577), "at most 1048576"),
    ("vidVq2-text2video", q2(wm_position=1, watermark=True, wm_url=URL), None),
    ("vidVq2-text2video", q2(wm_position=4), None),
    ("vidVq2-text2video", q2(wm_position=0), "expected one of 1, 2, 3, 4; got"),
    ("vidVq2-text2video", q2(wm_position=5), "expected one of 1, 2, 3, 4; got"),
    ("vidVq2-text2video", q2(meta_data=""), None),
    ("vidVq2-text2video", q2(meta_data='{"Label": "x"}'), None),
    ("vidVq2-text2video", q2(meta_data="{not json"), "does not parse as JSON"),
    ("vidVq2-text2video", q2(meta_data="[1, 2]"), "JSON object string"),
    ("vidVq1-text2video", q2(), None),
    ("vidVq1-text2video", q2(style="anime", duration=5, resolution="1080p"), None),
    ("vidVq1-text2video", q2(duration=4), "expected only 5; got 4"),
    ("vidVq1-text2video", q2(resolution="720p"), "expected only '1080p'; got '720p'"),
    ("vidVq1-text2video", q2(style="noir"), "expected one of"),
    ("vidVq1-text2video", q2(movement_amplitude="large"), None),
    ("vidVq1-text2video", q2(movement_amplitude="huge"), "expected one of"),
    ("vidVq1-text2video", q2(aspect_ratio="4:3"), "expected one of"),
    ("vidVq1-text2video", q2(prompt="p" * 2001), "must have 1-2000 characters"),
    ("vidVq1-text2video", {"style": "anime"}, "Field required"),
    ("vidVq1-text2video", q2(wm_position=5), "expected one of"),
    ("vidV-create-subjects", {"name": "kit", "images": [URL]}, None),
    ("vidV-create-subjects", {"name": "kit", "images": [URL] * 3}, None),
    ("vidV-create-subjects", {"name": "kit", "images": [URL] * 4}, "must have 1-3 items"),
    ("vidV-create-subjects", {"name": "kit", "images": []}, "must have 1-3 items"),
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
]  # fmt: skip

WARNED: list[Warned] = [
    ("vidVq2-text2video", q2(bgm=True, duration=9), IneffectiveFieldWarning, "bgm has no"),
    ("vidVq2-text2video", q2(bgm=True, duration=10), IneffectiveFieldWarning, "bgm has no"),
    ("vidVq2-text2video", q2(off_peak=True), IneffectiveFieldWarning, "currently unavailable"),
    ("vidVq1-text2video", q2(off_peak=True), IneffectiveFieldWarning, "currently unavailable"),
    ("vidVq2-text2video", q2(callback_url="https://h"), IneffectiveFieldWarning, "webhooks"),
]  # fmt: skip

SLIPS: list[Sent] = [
    ("vidVq2-text2video", q2(meta_data={"Label": "AI"}), "meta_data", '{"Label": "AI"}'),
    ("vidVq2-text2video", q2(wm_position="2"), "wm_position", 2),
]

test_vidv_rules, test_vidv_warnings, test_vidv_slips = table_tests(CASES, WARNED, SLIPS)
