"""validate(): every problem in one PayloadError, unknown fields warned about and sent."""

from __future__ import annotations

import subprocess
import sys
import warnings
from types import MappingProxyType
from typing import Any

import pytest

import genwidgets as gw
import genwidgets.catalog as catalog
from genwidgets.catalog import UnknownFieldWarning
from genwidgets.errors import PayloadError


def test_unknown_field_warns_with_did_you_mean() -> None:
    with pytest.warns(UnknownFieldWarning, match="did you mean 'duration'"):
        catalog.validate("vidA-2-0", {"content": [{"type": "text", "text": "x"}], "durations": 5})
    with pytest.warns(UnknownFieldWarning, match="did you mean 'remixPrompt'"):
        catalog.validate("imgM_pan", {"jobId": "j", "imageNo": 0, "direction": 1, "scale": 2,
                                      "remix_prompt": "x"})  # fmt: skip


def test_unknown_fields_are_sent_as_is() -> None:
    with pytest.warns(UnknownFieldWarning):
        body = catalog.payload_of("vidK-v1-6-multi-i2v", {
            "image_list": [{"image": "https://x/a.png"}], "watermark": True,
            "external_task_id": "t1",
        })  # fmt: skip
    assert body["watermark"] is True and body["external_task_id"] == "t1"


def test_payload_excludes_unset_and_none_fields() -> None:
    body = catalog.payload_of("vidVq2-text2video", {"prompt": "a kite", "duration": None})
    assert body == {"prompt": "a kite"}
    nested = catalog.payload_of(
        "speechM-02-turbo", {"text": "hi", "voice_setting": {"voice_id": "v", "speed": None}}
    )
    assert nested == {"text": "hi", "voice_setting": {"voice_id": "v"}}


def test_payload_uses_wire_names() -> None:
    body = catalog.payload_of("vidVq2-text2video", {"prompt": "x", "payload": "pass-through"})
    assert body == {"prompt": "x", "payload": "pass-through"}
    model = catalog.validate("vidVq2-text2video", {"prompt": "x", "payload": "p"})
    assert model.payload == "p"  # a wire field named payload is a plain field now
    assert model.to_wire() == {"prompt": "x", "payload": "p"}


def test_webhook_fields_are_payload_errors() -> None:
    with pytest.raises(PayloadError, match="webhook"):
        catalog.validate("vidH_1.0_r2v", {"prompt": "x", "media": [], "webhook_url": "http://h"})


@pytest.mark.parametrize(
    ("payload", "where", "says"),
    [
        ({"prompt": range(10**18)}, ("prompt",), "a range is not JSON data"),
        ({"prompt": "x", "images": [b"\x89PNG"]}, ("images", 0), "gw.media.encode"),
        ({"prompt": "x", "meta": {1: "a"}}, ("meta",), "keys must be strings"),
        ({"prompt": {"a", "b"}}, ("prompt",), "a set is not JSON data"),
        (
            {"prompt": "x", "meta": MappingProxyType({"é": [b"x"]})},
            ("meta", "é", 0),
            "bytes is not JSON data",
        ),
    ],
)
def test_values_json_cannot_carry_are_refused_before_validation(
    payload: dict[str, Any], where: tuple[Any, ...], says: str
) -> None:
    # sent as JSON: anything else is refused at once (and a huge range is never iterated)
    with pytest.raises(PayloadError) as info:
        catalog.validate("vidVq2-text2video", payload)
    assert info.value.errors[0]["loc"] == where and says in info.value.errors[0]["msg"]


@pytest.mark.parametrize("validate", [True, False])
def test_any_text_a_user_can_type_is_a_payload_error_never_an_encoding_error(
    validate: bool,
) -> None:
    from genwidgets.protocol.prepared import prepare

    for payload, loc in [
        ({"prompt": "a\ud800b"}, ("prompt",)),
        ({"prompt": "x", "neg\udfff": "y"}, ()),
        ({"prompt": "x", "extra": ["ok", {"deep": "\udc80"}]}, ("extra", 1, "deep")),
    ]:
        with pytest.raises(gw.PayloadError, match="lone surrogate") as info:
            prepare("genW2.5-t2i-preview", payload, validate=validate)
        assert info.value.errors[0]["loc"] == loc
    assert prepare("genW2.5-t2i-preview", {"prompt": "an emoji 🐦 and é"}).body


def test_warning_filters_silence_unknown_fields_on_every_path() -> None:
    from genwidgets.protocol.prepared import prepare

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", category=gw.UnknownFieldWarning)
        gw.validate("vidVq2-text2video", {"prompt": "x", "durration": 5})
        prepare("vidVq2-text2video", {"prompt": "x", "durration": 5})
    assert caught == []
    with pytest.warns(gw.UnknownFieldWarning, match="did you mean 'duration'"):
        prepare("vidVq2-text2video", {"prompt": "x", "durration": 5})


@pytest.mark.slow
def test_python_w_ignore_silences_unknown_fields() -> None:
    code = (
        "from genwidgets.protocol.prepared import prepare\n"
        "prepare('vidVq2-text2video', {'prompt': 'x', 'durration': 5})\n"
        "print('sent')\n"
    )
    loud = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "UnknownFieldWarning" in loud.stderr and "durration" in loud.stderr
    quiet = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", code], capture_output=True, text=True, timeout=120
    )
    assert quiet.returncode == 0 and quiet.stdout.strip() == "sent"
    assert quiet.stderr == ""


@pytest.mark.parametrize("endpoint", ["genW2.5-t2i-preview", "vidVq2-text2video"])
def test_a_misspelled_required_field_is_named_with_the_field_it_means(endpoint: str) -> None:
    """Issue 40.6: ``promt`` is said, not only ``prompt: Field required``."""
    with pytest.raises(PayloadError) as caught:
        catalog.validate(endpoint, {"promt": "a fox"})
    assert caught.value.errors == [
        {
            "loc": ("prompt",),
            "msg": "Field required; the unknown field 'promt' is probably 'prompt', misspelled",
        }
    ]


def test_a_required_field_left_out_with_no_look_alike_says_only_required() -> None:
    with pytest.raises(PayloadError) as caught:
        catalog.validate("genW2.5-t2i-preview", {"seed": 3, "watermark_text": "x"})
    assert caught.value.errors == [{"loc": ("prompt",), "msg": "Field required"}]


@pytest.mark.parametrize("endpoint", ["genW2.5-t2i-preview", "vidVq2-text2video"])
def test_an_empty_text_is_called_empty(endpoint: str) -> None:
    """Issue 40.10: an empty prompt reads "empty", not a character count alone."""
    with pytest.raises(PayloadError) as caught:
        catalog.validate(endpoint, {"prompt": ""})
    assert caught.value.errors[0]["msg"].startswith("is empty; ")
