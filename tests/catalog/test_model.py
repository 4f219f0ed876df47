"""The base models' normalisations: None is unset, enumerations match case-insensitively,
a boolean is not a number."""

from __future__ import annotations

from typing import Any

import pytest

import genwidgets.catalog as catalog
from genwidgets.catalog.model import _shape
from genwidgets.errors import PayloadError


@pytest.mark.parametrize(
    ("endpoint_id", "payload", "loc"),
    [
        ("vidVq2-text2video", {"prompt": "x", "duration": True}, ("duration",)),
        ("speechM-02-turbo", {"text": "x", "voice_setting": {"pitch": False}},
         ("voice_setting", "pitch")),
        ("imgM-inpaint", {"jobId": "j", "imageNo": 0, "mask": {"url": "https://m"},
                          "area": {"width": 500, "height": 500, "points": [1, 2, 3, 4, 5, True]}},
         ("area", "points", 5)),
    ],
)  # fmt: skip
def test_a_boolean_is_not_a_number(
    endpoint_id: str, payload: dict[str, Any], loc: tuple[Any, ...]
) -> None:
    with pytest.raises(PayloadError) as info:
        catalog.validate(endpoint_id, payload)
    assert any(e["loc"] == loc and "boolean" in e["msg"] for e in info.value.errors)


def test_enumerations_match_case_insensitively_and_send_the_spec_spelling() -> None:
    body = catalog.payload_of("vidH_1.0_r2v", {
        "prompt": "x", "media": [{"type": "reference_image", "url": "https://x/a.png"}],
        "resolution": "720p",
    })  # fmt: skip
    assert body["resolution"] == "720P"
    assert catalog.payload_of("vidA-2-0", {
        "content": [{"type": "text", "text": "x"}], "resolution": "1080P",
    })["resolution"] == "1080p"  # fmt: skip


def test_shape_analysis_of_annotations() -> None:
    from typing import Literal

    assert _shape(int | None).numeric
    assert not _shape(bool | None).numeric
    assert not _shape(str).numeric
    assert _shape(Literal[1, 2]).int_choices == {1, 2}
    assert _shape(Literal["5", "10"]).str_choices == {"5", "10"}
    # inert: nothing to normalise, the value passes as given (free text, an object)
    assert _shape(str | None).inert and _shape(dict[str, Any] | None).inert
    assert not any(_shape(a).inert for a in (int | None, Literal["a"], Literal[1] | None))


def test_a_free_text_passes_as_given_beside_fields_that_normalise() -> None:
    body = catalog.payload_of("vidA-2-0", {
        "content": [{"type": "text", "text": " 1080P "}], "resolution": "1080P",
    })  # fmt: skip
    assert body["content"][0]["text"] == " 1080P " and body["resolution"] == "1080p"


@pytest.mark.parametrize(
    ("endpoint_id", "payload", "loc"),
    [
        ("genW2.5-t2i-preview", {"prompt": "   "}, ("prompt",)),
        ("vidVq2-text2video", {"prompt": "\n\t "}, ("prompt",)),
        ("speechM-02-turbo", {"text": "\u3000 "}, ("text",)),
        ("vidA-2-0", {"content": [{"type": "text", "text": "  "}]}, ("content", 0, "text")),
    ],
)
def test_a_required_text_of_only_spaces_is_refused_before_it_is_paid(
    endpoint_id: str, payload: dict[str, Any], loc: tuple[Any, ...]
) -> None:
    with pytest.raises(PayloadError) as info:
        catalog.validate(endpoint_id, payload)
    assert any(
        e["loc"] == loc and "only spaces or line breaks: it needs some text" in e["msg"]
        for e in info.value.errors
    ), info.value.errors


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("\u200b", "U+200B ZERO WIDTH SPACE"),
        ("\ufeff", "U+FEFF ZERO WIDTH NO-BREAK SPACE"),
        ("\u3164", "U+3164 HANGUL FILLER"),
        ("\u2800", "U+2800 BRAILLE PATTERN BLANK"),
        ("\u200b \u200d\n", "U+200D ZERO WIDTH JOINER"),
        ("\u2060\u00ad\ufe0f", "U+2060 WORD JOINER"),
    ],
)
def test_a_required_text_of_only_invisible_characters_is_refused_naming_them(
    text: str, named: str
) -> None:
    """What a bad copy-paste leaves shows nothing, like spaces: it is not paid for."""
    for endpoint_id, payload, loc in [
        ("genW2.5-t2i-preview", {"prompt": text}, ("prompt",)),
        ("speechM-02-turbo", {"text": text}, ("text",)),
    ]:
        with pytest.raises(PayloadError) as info:
            catalog.validate(endpoint_id, payload)
        assert [e["loc"] for e in info.value.errors] == [loc]
        message = info.value.errors[0]["msg"]
        assert "no visible character" in message and named in message, message
        assert message.endswith("it needs some text")


def test_a_text_with_one_visible_character_among_invisible_ones_passes() -> None:
    body = catalog.payload_of("genW2.5-t2i-preview", {"prompt": "\u200bfox\u200d\u3164"})
    assert body["prompt"] == "\u200bfox\u200d\u3164"


def test_spaces_around_a_text_and_a_blank_optional_text_pass_as_given() -> None:
    body = catalog.payload_of("genW2.5-t2i-preview", {"prompt": " a fox ", "negative_prompt": " "})
    assert body["prompt"] == " a fox " and body["negative_prompt"] == " "


#: every kind of whole-number field: a whole number, a choice of numbers, a choice of
#: digits, vidK's own check, nested (a CSV cell is always text: "5.0" is a float column)
WHOLE_FIELDS = [
    ("genW2.5-t2i-preview", {"prompt": "x"}, ("n",), "4", 4),
    ("vidVq1-text2video", {"prompt": "x"}, ("duration",), "5", 5),
    ("vidK-v1-6-multi-i2v", {"image_list": [{"image": "https://e.com/a.png"}]}, ("duration",),
     "10", "10"),
    ("vidK-v3-turbo-t2v", {"prompt": "x"}, ("duration",), "5", "5"),
    ("speechM-02-turbo", {"text": "x"}, ("audio_setting", "bitrate"), "128000", 128000),
]  # fmt: skip


def _with(base: dict[str, Any], loc: tuple[str, ...], value: Any) -> dict[str, Any]:
    return {**base, loc[0]: value} if len(loc) == 1 else {**base, loc[0]: {loc[1]: value}}


def _sent(body: dict[str, Any], loc: tuple[str, ...]) -> Any:
    return body[loc[0]] if len(loc) == 1 else body[loc[0]][loc[1]]


@pytest.mark.parametrize(("endpoint_id", "base", "loc", "digits", "sent"), WHOLE_FIELDS)
@pytest.mark.parametrize("spelling", ["{}", "{}.0", " {}.00 ", "0{}"])
def test_a_whole_number_written_as_text_is_that_number_in_every_whole_number_field(
    endpoint_id: str, base: dict[str, Any], loc: tuple[str, ...], digits: str, sent: Any,
    spelling: str,
) -> None:  # fmt: skip
    body = catalog.payload_of(endpoint_id, _with(base, loc, spelling.format(digits)))
    assert _sent(body, loc) == sent


@pytest.mark.parametrize(("endpoint_id", "base", "loc", "digits", "sent"), WHOLE_FIELDS)
@pytest.mark.parametrize("given", ["{}.5", "{}e0", "{}."])
def test_a_text_that_is_no_whole_number_is_refused_saying_what_is_allowed(
    endpoint_id: str, base: dict[str, Any], loc: tuple[str, ...], digits: str, sent: Any,
    given: str,
) -> None:  # fmt: skip
    text = given.format(digits)
    with pytest.raises(PayloadError) as info:
        catalog.validate(endpoint_id, _with(base, loc, text))
    [error] = info.value.errors
    assert error["loc"] == loc and error["msg"].startswith("expected ")
    assert error["msg"].endswith(f"; got {text!r}")
