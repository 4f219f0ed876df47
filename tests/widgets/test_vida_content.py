"""The vidA content builder: items, roles, the scenario line, errors routed to items."""

from __future__ import annotations

from typing import Any

import pytest

from genwidgets.errors import PayloadError
from genwidgets.widgets.elements import BuildContext
from genwidgets.widgets.field_spec import FieldSpec
from genwidgets.widgets.vida_content import VidAContentElement, content_scenario


def content_element() -> VidAContentElement:
    spec = FieldSpec(name="content", wire="content", path="content", annotation=list, required=True)
    return VidAContentElement(spec, BuildContext(endpoint="vidA-2-0"))


IMG = {"type": "image_url", "image_url": {"url": "https://x.test/a.png"}}


@pytest.mark.parametrize(
    ("items", "scenario"),
    [
        ([{"type": "text", "text": "a"}], "text only"),
        ([{"type": "text", "text": "a"}, IMG], "first frame"),
        ([IMG | {"role": "first_frame"}], "first frame"),
        ([IMG | {"role": "first_frame"}, IMG | {"role": "last_frame"}], "first and last frame"),
        ([IMG | {"role": "reference_image"}] * 3, "reference images (3)"),
        (
            [IMG | {"role": "reference_image"}, {"type": "video_url", "video_url": {"url": "u"}}],
            "reference images (1) + video",
        ),
    ],
)
def test_content_scenario_names(items: list[dict[str, Any]], scenario: str) -> None:
    assert content_scenario(items) == scenario


def test_mixed_roles_are_named_as_not_a_scenario() -> None:
    text = content_scenario([IMG | {"role": "reference_image"}, IMG | {"role": "first_frame"}])
    assert "mixed roles" in text and "not a scenario" in text


def test_content_builder_round_trip_roles_and_scenario_line() -> None:
    el = content_element()
    assert [r.kind for r in el.rows] == ["text"]  # starts with a prompt row
    items = [
        {"type": "text", "text": "a kite at dawn"},
        {"type": "image_url", "image_url": {"url": "https://x.test/1.png"}, "role": "first_frame"},
        {"type": "image_url", "image_url": {"url": "https://x.test/2.png"}, "role": "last_frame"},
    ]
    el.set(items)
    assert el.get() == items
    assert "first and last frame" in el.scenario.value
    el.rows[2].role.value = "reference_image"  # type: ignore[union-attr]
    assert "mixed roles" in el.scenario.value
    roles = [v for _, v in el.rows[1].role.options]  # type: ignore[union-attr]
    assert roles == [None, "first_frame", "last_frame", "reference_image"]


def test_content_builder_add_remove_items_and_role_choices() -> None:
    el = content_element()
    video = el.add("video_url")
    audio = el.add("audio_url")
    assert [v for _, v in video.role.options] == [None, "reference_video"]  # type: ignore[union-attr]
    assert [v for _, v in audio.role.options] == [None, "reference_audio"]  # type: ignore[union-attr]
    audio.input.set("https://x.test/a.mp3")
    assert el.get() == [
        {"type": "video_url", "video_url": {}},
        {"type": "audio_url", "audio_url": {"url": "https://x.test/a.mp3"}},
    ]
    el.remove_row(video)
    assert [r.kind for r in el.rows] == ["text", "audio_url"]
    said = r"content\.2\.type: expected one of 'text', .*'audio_url'; got 'hologram'"
    with pytest.raises(PayloadError, match=said):
        el.add("hologram")


@pytest.mark.slow
def test_content_builder_routes_item_errors_to_the_item() -> None:
    el = content_element()
    el.set([{"type": "text", "text": "x"}, IMG])
    target, rest = el.locate((1, "image_url", "image_url", "url"))
    assert target is el.rows[1].input and rest == ()
    target, _rest = el.locate(())
    assert target is el
