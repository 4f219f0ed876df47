"""Value normalisers the families share."""

from __future__ import annotations

import pytest

from genwidgets.catalog.coerce import normalise_size, one_to_list, parse_size


def test_size_helpers() -> None:
    assert parse_size("1280*720") == (1280, 720)
    assert normalise_size(5) == 5
    assert normalise_size("12 x 34") == "12*34"
    with pytest.raises(ValueError, match="width\\*height"):
        parse_size("1280-720")


def test_one_string_becomes_a_list_and_anything_else_passes() -> None:
    assert one_to_list("a") == ["a"]
    assert one_to_list(["a"]) == ["a"]
    assert one_to_list(None) is None


def test_the_shared_size_and_list_types_serve_every_family() -> None:
    import genwidgets as gw

    sent = gw.validate("genW2.5-t2i-preview", {"prompt": "x", "size": "1280x1280"}).to_wire()
    assert sent["size"] == "1280*1280"
    assert (
        gw.validate(
            "genW2.6-r2v",
            {"prompt": "x", "reference_urls": ["https://a/b.png"], "size": "1280x720"},
        ).to_wire()["size"]
        == "1280*720"
    )
    assert gw.validate(
        "imgG-1.5-edit", {"prompt": "x", "images": "https://a/b.png", "size": "1024*1536"}
    ).to_wire() == {"prompt": "x", "images": ["https://a/b.png"], "size": "1024x1536"}
    with pytest.raises(gw.PayloadError, match="size: the width must be 512-2048 px; got 4000"):
        gw.validate(
            "imgQ-edit-plus", {"prompt": "x", "images": "https://a/b.png", "size": "4000*1024"}
        )
