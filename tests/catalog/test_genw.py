"""genW rules (2.5 text to image, 2.6 reference to video) on both sides of every boundary."""

from __future__ import annotations

from typing import Any

import pytest
from catalog_rules import Sent, Warned, table_tests

from genwidgets.catalog import DeprecatedFieldWarning, IneffectiveFieldWarning, payload_of

URL = "https://example.com/a.png"
VIDEO = "https://example.com/v.mp4"
B64 = "iVBORw0KGgo="


def genw(**fields: Any) -> dict[str, Any]:
    return {"prompt": "a lighthouse", **fields}


def r2v(**fields: Any) -> dict[str, Any]:
    return {"reference_urls": [URL], **fields}


CASES: list[tuple[str, dict[str, Any], str | None]] = [
    ("genW2.6-r2v", r2v(), None),
    ("genW2.6-r2v", r2v(reference_urls=[URL, VIDEO, URL, URL, URL]), None),
    ("genW2.6-r2v", r2v(reference_urls=[URL] * 6), "must have 1-5 items"),
    ("genW2.6-r2v", r2v(reference_urls=[]), "must have 1-5 items"),
    ("genW2.6-r2v", r2v(reference_urls=["data:image/png;base64," + B64]), "not accepted"),
    ("genW2.6-r2v", {}, "reference_urls (1-5 image or video URLs) is required"),
    ("genW2.6-r2v", r2v(reference_video_urls=[VIDEO]), "not both"),
    ("genW2.6-r2v", r2v(prompt="character1 waves" + "p" * 1484), None),
    ("genW2.6-r2v", r2v(prompt="p" * 1501), "at most 1500"),
    ("genW2.6-r2v", r2v(duration=2), None),
    ("genW2.6-r2v", r2v(duration=10), None),
    ("genW2.6-r2v", r2v(duration=1), "must be 2-10"),
    ("genW2.6-r2v", r2v(duration=11), "must be 2-10"),
    *[("genW2.6-r2v", r2v(size=s), None) for s in (
        "1280*720", "720*1280", "960*960", "1088*832", "832*1088",
        "1920*1080", "1080*1920", "1440*1440", "1632*1248", "1248*1632")],
    ("genW2.6-r2v", r2v(size="1280*1280"), "expected one of"),
    ("genW2.6-r2v", r2v(size="640*480"), "expected one of"),
    ("genW2.6-r2v", r2v(shot_type="multi", seed=0, watermark=True, negative_prompt="n"), None),
    ("genW2.6-r2v", r2v(shot_type="double"), "expected one of"),
    ("genW2.6-r2v", r2v(seed=2147483648), "must be 0-2147483647"),
    ("genW2.5-t2i-preview", genw(), None),
    ("genW2.5-t2i-preview", genw(size="1280*1280"), None),
    ("genW2.5-t2i-preview", genw(size="1440*1440"), None),
    ("genW2.5-t2i-preview", genw(size="1279*1280"), "total pixels must be between"),
    ("genW2.5-t2i-preview", genw(size="1441*1440"), "total pixels must be between"),
    ("genW2.5-t2i-preview", genw(size="2560*640"), None),
    ("genW2.5-t2i-preview", genw(size="640*2560"), None),
    ("genW2.5-t2i-preview", genw(size="2880*700"), "aspect ratio must be between 1:4 and 4:1"),
    ("genW2.5-t2i-preview", genw(size="700*2880"), "aspect ratio"),
    ("genW2.5-t2i-preview", genw(size="1280:1280"), "width*height"),
    ("genW2.5-t2i-preview", genw(n=1), None),
    ("genW2.5-t2i-preview", genw(n=4), None),
    ("genW2.5-t2i-preview", genw(n=5), "must be 1-4"),
    ("genW2.5-t2i-preview", genw(n=0), "must be 1-4"),
    ("genW2.5-t2i-preview", genw(seed=2147483648), "must be 0-2147483647"),
    ("genW2.5-t2i-preview", genw(prompt="p" * 2000, negative_prompt="n" * 500), None),
    ("genW2.5-t2i-preview", {}, "Field required"),
]  # fmt: skip

WARNED: list[Warned] = [
    ("genW2.6-r2v", {"reference_video_urls": [VIDEO]}, DeprecatedFieldWarning,
     "soon to be deprecated"),
    ("genW2.5-t2i-preview", genw(prompt="p" * 2001), IneffectiveFieldWarning,
     "truncates it to 2000"),
    ("genW2.5-t2i-preview", genw(negative_prompt="n" * 501), IneffectiveFieldWarning,
     "truncates it to 500"),
]  # fmt: skip

SLIPS: list[Sent] = [
    ("genW2.5-t2i-preview", genw(size="1280X1280"), "size", "1280*1280"),
]

test_genw_rules, test_genw_warnings, test_genw_slips = table_tests(CASES, WARNED, SLIPS)


def test_deprecated_reference_videos_are_still_sent() -> None:
    with pytest.warns(DeprecatedFieldWarning):
        body = payload_of("genW2.6-r2v", {"reference_video_urls": [VIDEO], "size": "1920x1080"})
    assert body == {"reference_video_urls": [VIDEO], "size": "1920*1080"}
