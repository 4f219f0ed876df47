"""vidH rules on both sides of every boundary."""

from __future__ import annotations

from typing import Any

from catalog_rules import Sent, Warned, table_tests

from genwidgets.catalog import IneffectiveFieldWarning

URL = "https://example.com/a.png"
B64 = "iVBORw0KGgo="


def vidh(**fields: Any) -> dict[str, Any]:
    return {
        "prompt": "[Image 1] walks",
        "media": [{"type": "reference_image", "url": URL}],
        **fields,
    }


CASES: list[tuple[str, dict[str, Any], str | None]] = [
    ("vidH_1.0_r2v", vidh(), None),
    ("vidH_1.0_r2v", vidh(media=[{"type": "reference_image", "url": URL}] * 9), None),
    ("vidH_1.0_r2v", vidh(media=[{"type": "reference_image", "url": URL}] * 10), "1-9 items"),
    ("vidH_1.0_r2v", vidh(media=[]), "must have 1-9 items"),
    ("vidH_1.0_r2v", vidh(media=[{"type": "image", "url": URL}]), "'reference_image'"),
    ("vidH_1.0_r2v", vidh(media=[{"type": "reference_image"}]), "Field required"),
    ("vidH_1.0_r2v", vidh(media=[{"type": "reference_image", "url": "data:image/webp;base64,"
                                  + B64}]), None),
    ("vidH_1.0_r2v", vidh(media=[{"type": "reference_image", "url": "data:image/gif;base64,"
                                  + B64}]), "not accepted"),
    ("vidH_1.0_r2v", vidh(media=[{"type": "reference_image", "url": B64}]), "data:<MIME type>"),
    ("vidH_1.0_r2v", vidh(duration=3), None),
    ("vidH_1.0_r2v", vidh(duration=15), None),
    ("vidH_1.0_r2v", vidh(duration=2), "must be 3-15"),
    ("vidH_1.0_r2v", vidh(duration=16), "must be 3-15"),
    ("vidH_1.0_r2v", vidh(resolution="720P", ratio="9:21", watermark=False), None),
    ("vidH_1.0_r2v", vidh(resolution="480P"), "expected one of"),
    ("vidH_1.0_r2v", vidh(ratio="2:1"), "expected one of"),
    ("vidH_1.0_r2v", vidh(seed=0), None),
    ("vidH_1.0_r2v", vidh(seed=2147483647), None),
    ("vidH_1.0_r2v", vidh(seed=2147483648), "must be 0-2147483647"),
    ("vidH_1.0_r2v", vidh(seed=-1), "must be 0-2147483647"),
    ("vidH_1.0_r2v", vidh(prompt="p" * 5000), None),
    ("vidH_1.0_r2v", vidh(prompt="字" * 2500), None),
    ("vidH_1.0_r2v", {"media": [{"type": "reference_image", "url": URL}]}, "Field required"),
]  # fmt: skip

WARNED: list[Warned] = [
    ("vidH_1.0_r2v", vidh(prompt="p" * 5001), IneffectiveFieldWarning, "truncates"),
    ("vidH_1.0_r2v", vidh(prompt="字" * 2501), IneffectiveFieldWarning, "truncates"),
]  # fmt: skip

SLIPS: list[Sent] = [
    ("vidH_1.0_r2v", vidh(resolution="1080p"), "resolution", "1080P"),
]

test_vidh_rules, test_vidh_warnings, test_vidh_slips = table_tests(CASES, WARNED, SLIPS)
