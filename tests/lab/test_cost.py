"""What one task bills, per kind, with the service's defaults (``billed_units``)."""

from __future__ import annotations

from genwidgets.catalog import endpoint
from genwidgets.lab.cost import UNITS, billed_units


def test_images_prompts_seconds_characters_and_tasks() -> None:
    assert billed_units(endpoint("genW2.5-t2i-preview"), {"prompt": "a"}) == {
        "tasks": 1,
        "images": 4,  # n left out: the service makes 4
    }
    assert billed_units(endpoint("genW2.5-t2i-preview"), {"prompt": "a", "n": 2})["images"] == 2
    imgm = endpoint("imgM-v8.1-t2i")
    assert billed_units(imgm, {"prompt": "a {red, blue} fox --repeat 2"}) == {
        "tasks": 1,
        "prompts": 4,
    }
    video = endpoint("vidVq2-text2video")
    assert billed_units(video, {"prompt": "a"}) == {"tasks": 1, "video_seconds": 5.0}
    assert billed_units(video, {"prompt": "a", "duration": 8})["video_seconds"] == 8.0
    speech = endpoint("speechM-02-turbo")
    assert billed_units(speech, {"text": "hello there"}) == {"tasks": 1, "speech_characters": 11}
    assert billed_units(endpoint("asset-get"), {"asset_id": "x"}) == {"tasks": 1}
    assert set(UNITS) >= {"tasks", "images", "prompts", "video_seconds", "speech_characters"}


def test_seconds_the_payload_cannot_say_are_unknown() -> None:
    vida = endpoint("vidA-2-0")
    content = [{"type": "text", "text": "a kite"}]
    assert billed_units(vida, {"content": content, "duration": -1})["video_seconds"] is None
    assert billed_units(vida, {"content": content})["video_seconds"] == 5.0
    lips = endpoint("vidK-lip-sync")
    assert billed_units(lips, {})["video_seconds"] is None  # no duration field
