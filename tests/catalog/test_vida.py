"""vidA rules on both sides of every boundary."""

from __future__ import annotations

from typing import Any

import pytest
from catalog_rules import table_tests

from genwidgets.catalog import payload_of, validate
from genwidgets.catalog.markers import MB
from genwidgets.errors import PayloadError

URL = "https://example.com/a.png"
PNG = "data:image/png;base64,iVBORw0KGgo="


def text(t: str = "a red kite") -> dict[str, Any]:
    return {"type": "text", "text": t}


def image(url: str = URL, role: str | None = None) -> dict[str, Any]:
    item: dict[str, Any] = {"type": "image_url", "image_url": {"url": url}}
    if role is not None:
        item["role"] = role
    return item


def video(url: str = "https://example.com/v.mp4", role: str | None = None) -> dict[str, Any]:
    item: dict[str, Any] = {"type": "video_url", "video_url": {"url": url}}
    if role is not None:
        item["role"] = role
    return item


def audio() -> dict[str, Any]:
    return {"type": "audio_url", "audio_url": {"url": "https://example.com/a.mp3"}}


def body(*items: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"content": list(items), **fields}


CASES: list[tuple[str, dict[str, Any], str | None]] = [
    # content presence and combinations
    ("vidA-2-0", body(), "at least 1 item"),
    ("vidA-2-0", {}, "Field required"),
    ("vidA-2-0", body(text()), None),
    ("vidA-2-0", body(image()), None),
    ("vidA-2-0", body(text(), video()), None),
    ("vidA-2-0", body(text(), image(), audio()), None),
    ("vidA-2-0", body(text(), image(), video()), None),
    ("vidA-2-0", body(text(), video(), audio()), None),
    ("vidA-2-0", body(text(), image(), video(), audio()), None),
    ("vidA-2-0", body(audio()), "audio needs at least one reference image or video"),
    ("vidA-2-0", body(text(), audio()), "audio needs at least one reference image or video"),
    ("vidA-2-0", body({"type": "text"}), "needs its text field"),
    ("vidA-2-0", body({"type": "image_url"}), "needs its image_url field"),
    ("vidA-2-0", body({"type": "text", "text": "x", "image_url": {"url": URL}}), "carries no"),
    ("vidA-2-0", body({"type": "gif", "text": "x"}), "expected one of"),
    ("vidA-2-0", body(text("")), "at least 1 character"),
    # image scenarios and roles
    ("vidA-2-0", body(image(role="first_frame")), None),
    ("vidA-2-0", body(image(role="last_frame")), "needs a first_frame image"),
    ("vidA-2-0", body(image(role="first_frame"), image(role="last_frame")), None),
    ("vidA-2-0", body(image(role="last_frame"), image(role="first_frame")), None),
    ("vidA-2-0", body(image(), image(role="last_frame")), "first_frame and the other role"),
    ("vidA-2-0", body(image(role="first_frame"), image(role="first_frame")), "last_frame"),
    ("vidA-2-0", body(image(), image()), "first-and-last-frame"),
    ("vidA-2-0", body(*[image(role="reference_image")] * 1), None),
    ("vidA-2-0", body(*[image(role="reference_image")] * 9), None),
    ("vidA-2-0", body(*[image(role="reference_image")] * 10), "1-9 are allowed"),
    ("vidA-2-0", body(image(role="reference_image"), image()), "mutually exclusive"),
    ("vidA-2-0", body(image(role="reference_image"), image(role="first_frame")), "exclusive"),
    ("vidA-2-0", body(image(role="first_frame"), image(role="last_frame"), image()), "3 images"),
    ("vidA-2-0", body(image(role="reference_video")), "does not fit a image_url item"),
    ("vidA-2-0", body(image(), video(role="reference_video")), None),
    ("vidA-2-0", body(image(), video(role="reference_image")), "does not fit"),
    ("vidA-2-0", body(image(), {**audio(), "role": "reference_audio"}), None),
    ("vidA-2-0", body(text(), {"type": "text", "text": "x", "role": "first_frame"}), "no role"),
    # image url forms
    ("vidA-2-0", body(image(PNG)), None),
    ("vidA-2-0", body(image("data:image/jpeg;base64,/9j/4AAQ")), None),
    ("vidA-2-0", body(image("data:image/jpg;base64,/9j/4AAQ")), None),
    ("vidA-2-0", body(image("data:image/PNG;base64,iVBORw0KGgo=")), "must be lowercase"),
    ("vidA-2-0", body(image("DATA:image/png;base64,iVBORw0KGgo=")), "must be lowercase"),
    ("vidA-2-0", body(image("data:image/svg;base64,AAAA")), "'svg' is not accepted"),
    ("vidA-2-0", body(image("data:video/mp4;base64,AAAA")), "expected an image data URL"),
    ("vidA-2-0", body(image("data:image/png,AAAA")), "data:<type>;base64,<data>"),
    ("vidA-2-0", body(image("data:image/png;base64,")), "no data after"),
    ("vidA-2-0", body(image("asset://asset-123")), None),
    ("vidA-2-0", body(image("asset://")), "needs an asset ID"),
    ("vidA-2-0", body(image("ASSET://x")), "lowercase"),
    ("vidA-2-0", body(image("iVBORw0KGgo=")), "data:image/<lowercase format>"),
    ("vidA-2-0", body(image("/home/me/cat.png")), "gw.media"),
    ("vidA-2-0", body(image("")), "empty"),
    ("vidA-2-0", body(video("asset://v1")), None),
    ("vidA-2-0", body(video("data:video/mp4;base64,AAAA")), None),
    ("vidA-2-0", body(video("data:image/png;base64,AAAA")), "expected a video data URL"),
    ("vidA-2-0", body(video("clip.mp4")), "asset://<ASSET_ID>"),
    # resolution per variant
    ("vidA-2-0", body(text(), resolution="1080p"), None),
    ("vidA-2-0", body(text(), resolution="480p"), None),
    ("vidA-2-0-fast", body(text(), resolution="720p"), None),
    ("vidA-2-0-fast", body(text(), resolution="480p"), None),
    ("vidA-2-0-fast", body(text(), resolution="1080p"), "only available on vidA-2-0"),
    ("vidA-2-0-fast", body(text(), resolution="1080P"), "only available on vidA-2-0"),
    ("vidA-2-0", body(text(), resolution="4k"), "expected one of"),
    # duration 4-15 or -1
    ("vidA-2-0", body(text(), duration=4), None),
    ("vidA-2-0", body(text(), duration=15), None),
    ("vidA-2-0", body(text(), duration=-1), None),
    ("vidA-2-0", body(text(), duration=3), "4-15 seconds, or -1"),
    ("vidA-2-0", body(text(), duration=16), "4-15 seconds, or -1"),
    ("vidA-2-0", body(text(), duration=0), "4-15 seconds, or -1"),
    ("vidA-2-0", body(text(), duration=-2), "4-15 seconds, or -1"),
    ("vidA-2-0", body(text(), duration=5.5), "expected a whole number"),
    ("vidA-2-0-fast", body(text(), duration=3), "4-15 seconds, or -1"),
    # ratio, generate_audio
    ("vidA-2-0", body(text(), ratio="21:9"), None),
    ("vidA-2-0", body(text(), ratio="adaptive"), None),
    ("vidA-2-0", body(text(), ratio="2:1"), "expected one of"),
    ("vidA-2-0", body(text(), generate_audio=False), None),
    ("vidA-2-0", body(text(), generate_audio="maybe"), "expected true or false; got"),
]

test_vida_rules, *_ = table_tests(CASES)


def test_the_body_cap_is_not_the_catalogs(check: Any) -> None:
    # The 64 MB request-body cap is checked once, by the client, in bytes of the exact
    # body it sends: the model checks each image (under 30 MB), not their sum.
    chunk = "A" * (29 * MB)
    items = [image(f"data:image/png;base64,{chunk}", "reference_image") for _ in range(3)]
    check("vidA-2-0", body(*items), None)


def test_image_over_30_mb_inline_is_rejected(check: Any) -> None:
    big = "A" * (41 * MB)  # decodes to about 30.75 MB
    check("vidA-2-0", body(image(f"data:image/png;base64,{big}")), "the limit is 30.0 MB")


def test_error_paths_point_into_the_content_item() -> None:
    with pytest.raises(PayloadError) as info:
        validate("vidA-2-0", body(text(), image("data:image/PNG;base64,AAAA")))
    assert info.value.errors[0]["loc"] == ("content", 1, "image_url", "url")


def test_payload_sends_exactly_what_was_set() -> None:
    sent = payload_of("vidA-2-0", body(image(role="first_frame"), duration=-1))
    assert sent == {"content": [image(role="first_frame")], "duration": -1}
