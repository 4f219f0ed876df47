"""imgG, imgQ and genW2.5 rules on both sides of every boundary."""

from __future__ import annotations

from typing import Any

import pytest

from genwidgets.catalog import payload_of, validate
from genwidgets.catalog.image import normalise_size, parse_size
from genwidgets.catalog.vida import IneffectiveFieldWarning

URL = "https://example.com/a.png"


def imgg(**fields: Any) -> dict[str, Any]:
    return {"prompt": "make it blue", "images": [URL], **fields}


def imgq(**fields: Any) -> dict[str, Any]:
    return {"prompt": "merge them", "images": [URL], **fields}


def genw(**fields: Any) -> dict[str, Any]:
    return {"prompt": "a lighthouse", **fields}


CASES: list[tuple[str, dict[str, Any], str | None]] = [
    # imgG-1.5-edit
    ("imgG-1.5-edit", imgg(), None),
    ("imgG-1.5-edit", imgg(prompt="p" * 32000), None),
    ("imgG-1.5-edit", imgg(prompt="p" * 32001), "at most 32000"),
    ("imgG-1.5-edit", imgg(images=[URL] * 16), None),
    ("imgG-1.5-edit", imgg(images=[URL] * 17), "at most 16"),
    ("imgG-1.5-edit", imgg(images=[]), "at least 1 item"),
    ("imgG-1.5-edit", imgg(images=["data:image/webp;base64,UklGRg=="]), None),
    ("imgG-1.5-edit", imgg(images=["data:image/gif;base64,R0lGOD=="]), "not accepted"),
    ("imgG-1.5-edit", imgg(images=["UklGRg=="]), "data:<MIME type>"),
    ("imgG-1.5-edit", {"prompt": "x"}, "Field required"),
    ("imgG-1.5-edit", imgg(n=1), None),
    ("imgG-1.5-edit", imgg(n=10), None),
    ("imgG-1.5-edit", imgg(n=0), "greater than or equal to 1"),
    ("imgG-1.5-edit", imgg(n=11), "less than or equal to 10"),
    ("imgG-1.5-edit", imgg(output_compression=0, output_format="jpeg"), None),
    ("imgG-1.5-edit", imgg(output_compression=100, output_format="webp"), None),
    ("imgG-1.5-edit", imgg(output_compression=101, output_format="webp"), "less than or equal"),
    ("imgG-1.5-edit", imgg(output_compression=-1, output_format="jpeg"), "greater than or equal"),
    ("imgG-1.5-edit", imgg(output_format="gif"), "Input should be"),
    ("imgG-1.5-edit", imgg(background="transparent", input_fidelity="high"), None),
    ("imgG-1.5-edit", imgg(background="clear"), "Input should be"),
    ("imgG-1.5-edit", imgg(quality="ultra"), "Input should be"),
    ("imgG-1.5-edit", imgg(size="1536x1024", quality="high", moderation="low"), None),
    ("imgG-1.5-edit", imgg(size="512x512"), "Input should be"),
    ("imgG-1.5-edit", imgg(mask={"file_id": "file-1"}), None),
    ("imgG-1.5-edit", imgg(mask={"image_url": URL}), None),
    ("imgG-1.5-edit", imgg(mask={}), "exactly one of file_id and image_url"),
    ("imgG-1.5-edit", imgg(mask={"file_id": "f", "image_url": URL}), "exactly one"),
    ("imgG-1.5-edit", imgg(mask={"image_url": "x" * 20_971_521}), "at most 20971520"),
    ("imgG-1.5-edit", imgg(user="u-1"), None),
    # imgQ-edit-plus
    ("imgQ-edit-plus", imgq(), None),
    ("imgQ-edit-plus", imgq(images=[URL] * 3), None),
    ("imgQ-edit-plus", imgq(images=[URL] * 4), "at most 3"),
    ("imgQ-edit-plus", imgq(images=[]), "at least 1 item"),
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
    ("imgQ-edit-plus", imgq(n=7), "less than or equal to 6"),
    ("imgQ-edit-plus", imgq(n=0), "greater than or equal to 1"),
    ("imgQ-edit-plus", imgq(seed=0), None),
    ("imgQ-edit-plus", imgq(seed=2147483647), None),
    ("imgQ-edit-plus", imgq(seed=2147483648), "less than or equal to 2147483647"),
    ("imgQ-edit-plus", imgq(seed=-1), "greater than or equal to 0"),
    ("imgQ-edit-plus", imgq(prompt_extend=False, watermark=True), None),
    ("imgQ-edit-plus", imgq(negative_prompt="n" * 500), None),
    ("imgQ-edit-plus", {"images": [URL]}, "Field required"),
    # genW2.5-t2i-preview
    ("genW2.5-t2i-preview", genw(), None),
    ("genW2.5-t2i-preview", genw(size="1280*1280"), None),
    ("genW2.5-t2i-preview", genw(size="1440*1440"), None),
    ("genW2.5-t2i-preview", genw(size="1279*1280"), "total pixels must be between"),
    ("genW2.5-t2i-preview", genw(size="1441*1440"), "total pixels must be between"),
    ("genW2.5-t2i-preview", genw(size="2560*640"), None),  # 4:1, 1638400 pixels
    ("genW2.5-t2i-preview", genw(size="640*2560"), None),  # 1:4
    ("genW2.5-t2i-preview", genw(size="2880*700"), "aspect ratio must be between 1:4 and 4:1"),
    ("genW2.5-t2i-preview", genw(size="700*2880"), "aspect ratio"),
    ("genW2.5-t2i-preview", genw(size="1280:1280"), "width*height"),
    ("genW2.5-t2i-preview", genw(n=1), None),
    ("genW2.5-t2i-preview", genw(n=4), None),
    ("genW2.5-t2i-preview", genw(n=5), "less than or equal to 4"),
    ("genW2.5-t2i-preview", genw(n=0), "greater than or equal to 1"),
    ("genW2.5-t2i-preview", genw(seed=2147483648), "less than or equal"),
    ("genW2.5-t2i-preview", genw(prompt="p" * 2000, negative_prompt="n" * 500), None),
    ("genW2.5-t2i-preview", {}, "Field required"),
]


@pytest.mark.parametrize(("endpoint_id", "payload", "error"), CASES)
def test_image_rules(
    check: Any, endpoint_id: str, payload: dict[str, Any], error: str | None
) -> None:
    check(endpoint_id, payload, error)


@pytest.mark.parametrize(
    ("endpoint_id", "payload", "warning"),
    [
        ("imgG-1.5-edit", imgg(output_compression=80), "only applies to jpeg or webp"),
        ("imgG-1.5-edit", imgg(output_compression=80, output_format="png"), "output_format is png"),
        ("imgQ-edit-plus", imgq(negative_prompt="n" * 501), "truncates it to 500"),
        ("genW2.5-t2i-preview", genw(prompt="p" * 2001), "truncates it to 2000"),
        ("genW2.5-t2i-preview", genw(negative_prompt="n" * 501), "truncates it to 500"),
    ],
)
def test_advisory_warnings(endpoint_id: str, payload: dict[str, Any], warning: str) -> None:
    with pytest.warns(IneffectiveFieldWarning, match=warning):
        validate(endpoint_id, payload)


@pytest.mark.parametrize(
    ("endpoint_id", "given", "sent"),
    [
        ("imgQ-edit-plus", "1024x1024", "1024*1024"),
        ("imgQ-edit-plus", " 1024 * 768 ", "1024*768"),
        ("genW2.5-t2i-preview", "1280X1280", "1280*1280"),
        ("imgG-1.5-edit", "1024*1536", "1024x1536"),
        ("imgG-1.5-edit", "AUTO", "auto"),
    ],
)
def test_size_spellings_are_normalised(endpoint_id: str, given: str, sent: str) -> None:
    base = {"imgQ-edit-plus": imgq(), "genW2.5-t2i-preview": genw(), "imgG-1.5-edit": imgg()}
    assert payload_of(endpoint_id, {**base[endpoint_id], "size": given})["size"] == sent


def test_a_single_image_string_is_wrapped_in_a_list() -> None:
    assert payload_of("imgG-1.5-edit", imgg(images=URL))["images"] == [URL]
    assert payload_of("imgQ-edit-plus", imgq(images=URL))["images"] == [URL]


def test_size_helpers() -> None:
    assert parse_size("1280*720") == (1280, 720)
    assert normalise_size(5) == 5
    assert normalise_size("12 x 34") == "12*34"
    with pytest.raises(ValueError, match="width\\*height"):
        parse_size("1280-720")
