"""imgQ rules on both sides of every boundary."""

from __future__ import annotations

from typing import Any

from catalog_rules import Sent, Warned, table_tests

from genwidgets.catalog import IneffectiveFieldWarning, payload_of

URL = "https://example.com/a.png"


def imgq(**fields: Any) -> dict[str, Any]:
    return {"prompt": "merge them", "images": [URL], **fields}


CASES: list[tuple[str, dict[str, Any], str | None]] = [
    ("imgQ-edit-plus", imgq(), None),
    ("imgQ-edit-plus", imgq(images=[URL] * 3), None),
    ("imgQ-edit-plus", imgq(images=[URL] * 4), "must have 1-3 items"),
    ("imgQ-edit-plus", imgq(images=[]), "must have 1-3 items"),
    ("imgQ-edit-plus", imgq(images=["data:image/bmp;base64,Qk0="]), None),
    ("imgQ-edit-plus", imgq(images=["data:image/svg+xml;base64,PHN2Zz4="]), "not accepted"),
    ("imgQ-edit-plus", imgq(images=["data:video/mp4;base64,AAAA"]), "expected a image data URL"),
    ("imgQ-edit-plus", imgq(size="512*2048"), None),
    ("imgQ-edit-plus", imgq(size="2048*512"), None),
    ("imgQ-edit-plus", imgq(size="511*1024"), "width must be 512-2048"),
    ("imgQ-edit-plus", imgq(size="1024*2049"), "height must be 512-2048"),
    ("imgQ-edit-plus", imgq(size="1024"), "width*height"),
    ("imgQ-edit-plus", imgq(size="big"), "width*height"),
    ("imgQ-edit-plus", imgq(n=1), None),
    ("imgQ-edit-plus", imgq(n=6), None),
    ("imgQ-edit-plus", imgq(n=7), "must be 1-6"),
    ("imgQ-edit-plus", imgq(n=0), "must be 1-6"),
    ("imgQ-edit-plus", imgq(seed=0), None),
    ("imgQ-edit-plus", imgq(seed=2147483647), None),
    ("imgQ-edit-plus", imgq(seed=2147483648), "must be 0-2147483647"),
    ("imgQ-edit-plus", imgq(seed=-1), "must be 0-2147483647"),
    ("imgQ-edit-plus", imgq(prompt_extend=False, watermark=True), None),
    ("imgQ-edit-plus", imgq(negative_prompt="n" * 500), None),
    ("imgQ-edit-plus", {"images": [URL]}, "Field required"),
]  # fmt: skip

WARNED: list[Warned] = [
    (
        "imgQ-edit-plus",
        imgq(negative_prompt="n" * 501),
        IneffectiveFieldWarning,
        "truncates it to 500",
    ),
]

SLIPS: list[Sent] = [
    ("imgQ-edit-plus", imgq(size="1024x1024"), "size", "1024*1024"),
    ("imgQ-edit-plus", imgq(size=" 1024 * 768 "), "size", "1024*768"),
]

test_imgq_rules, test_imgq_warnings, test_imgq_slips = table_tests(CASES, WARNED, SLIPS)


def test_a_single_image_string_is_wrapped_in_a_list() -> None:
    assert payload_of("imgQ-edit-plus", imgq(images=URL))["images"] == [URL]
