"""imgG rules on both sides of every boundary."""

from __future__ import annotations

from typing import Any

from catalog_rules import Sent, Warned, table_tests

from genwidgets.catalog import IneffectiveFieldWarning, payload_of

URL = "https://example.com/a.png"


def imgg(**fields: Any) -> dict[str, Any]:
    return {"prompt": "make it blue", "images": [URL], **fields}


CASES: list[tuple[str, dict[str, Any], str | None]] = [
    ("imgG-1.5-edit", imgg(), None),
    ("imgG-1.5-edit", imgg(prompt="p" * 32000), None),
    ("imgG-1.5-edit", imgg(prompt="p" * 32001), "must have 1-32000 characters"),
    ("imgG-1.5-edit", imgg(images=[URL] * 16), None),
    ("imgG-1.5-edit", imgg(images=[URL] * 17), "must have 1-16 items"),
    ("imgG-1.5-edit", imgg(images=[]), "must have 1-16 items"),
    ("imgG-1.5-edit", imgg(images=["data:image/webp;base64,UklGRg=="]), None),
    ("imgG-1.5-edit", imgg(images=["data:image/gif;base64,R0lGOD=="]), "not accepted"),
    ("imgG-1.5-edit", imgg(images=["UklGRg=="]), "data:<MIME type>"),
    ("imgG-1.5-edit", {"prompt": "x"}, "Field required"),
    ("imgG-1.5-edit", imgg(n=1), None),
    ("imgG-1.5-edit", imgg(n=10), None),
    ("imgG-1.5-edit", imgg(n=0), "must be 1-10"),
    ("imgG-1.5-edit", imgg(n=11), "must be 1-10"),
    ("imgG-1.5-edit", imgg(output_compression=0, output_format="jpeg"), None),
    ("imgG-1.5-edit", imgg(output_compression=100, output_format="webp"), None),
    ("imgG-1.5-edit", imgg(output_compression=101, output_format="webp"), "must be 0-100"),
    ("imgG-1.5-edit", imgg(output_compression=-1, output_format="jpeg"), "must be 0-100"),
    ("imgG-1.5-edit", imgg(output_format="gif"), "expected one of"),
    ("imgG-1.5-edit", imgg(background="transparent", input_fidelity="high"), None),
    ("imgG-1.5-edit", imgg(background="clear"), "expected one of"),
    ("imgG-1.5-edit", imgg(quality="ultra"), "expected one of"),
    ("imgG-1.5-edit", imgg(size="1536x1024", quality="high", moderation="low"), None),
    ("imgG-1.5-edit", imgg(size="512x512"), "expected one of"),
    ("imgG-1.5-edit", imgg(mask={"file_id": "file-1"}), None),
    ("imgG-1.5-edit", imgg(mask={"image_url": URL}), None),
    ("imgG-1.5-edit", imgg(mask={}), "exactly one of file_id and image_url"),
    ("imgG-1.5-edit", imgg(mask={"file_id": "f", "image_url": URL}), "exactly one"),
    ("imgG-1.5-edit", imgg(mask={"image_url": "x" * 20_971_521}), "1-20971520 characters"),
    ("imgG-1.5-edit", imgg(user="u-1"), None),
]  # fmt: skip

WARNED: list[Warned] = [
    (
        "imgG-1.5-edit",
        imgg(output_compression=80),
        IneffectiveFieldWarning,
        "only applies to jpeg or webp",
    ),
    (
        "imgG-1.5-edit",
        imgg(output_compression=80, output_format="png"),
        IneffectiveFieldWarning,
        "output_format is png",
    ),
]

SLIPS: list[Sent] = [
    ("imgG-1.5-edit", imgg(size="1024*1536"), "size", "1024x1536"),
    ("imgG-1.5-edit", imgg(size="AUTO"), "size", "auto"),
]

test_imgg_rules, test_imgg_warnings, test_imgg_slips = table_tests(CASES, WARNED, SLIPS)


def test_a_single_image_string_is_wrapped_in_a_list() -> None:
    assert payload_of("imgG-1.5-edit", imgg(images=URL))["images"] == [URL]
