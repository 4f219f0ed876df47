"""vidP rules on both sides of every boundary."""

from __future__ import annotations

from typing import Any

from catalog_rules import Sent, table_tests

URL = "https://example.com/a.png"
B64 = "iVBORw0KGgo="


def vidp(**fields: Any) -> dict[str, Any]:
    return {"first_frame_image": URL, "last_frame_image": URL, **fields}


CASES: list[tuple[str, dict[str, Any], str | None]] = [
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
    ("vidP_v6_transition", vidp(duration=0.9), "must be 1-15"),
    ("vidP_v6_transition", vidp(duration=15.1), "must be 1-15"),
    ("vidP_v6_transition", vidp(quality="360p", generate_audio_switch=True), None),
    ("vidP_v6_transition", vidp(quality="4k"), "expected one of"),
    ("vidP_v6_transition", vidp(seed=2147483647), None),
    ("vidP_v6_transition", vidp(seed=2147483648), "must be 0-2147483647"),
]  # fmt: skip

SLIPS: list[Sent] = [
    ("vidP_v6_transition", vidp(duration=5), "duration", 5),
]

test_vidp_rules, _, test_vidp_slips = table_tests(CASES, slips=SLIPS)
