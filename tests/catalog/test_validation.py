"""validate(): every problem in one PayloadError, unknown fields warned about and sent."""

from __future__ import annotations

import datetime
import re
import subprocess
import sys
import warnings
from types import MappingProxyType
from typing import Any, Literal

import pytest
from pydantic import BaseModel

import genwidgets as gw
import genwidgets.catalog as catalog
from genwidgets.catalog import UnknownFieldWarning
from genwidgets.catalog.introspect import is_container, models_in, strip_optional
from genwidgets.errors import PayloadError
from genwidgets.simulator import DEMO_KEY, SimulatorServer


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


_INPAINT = {"jobId": "j", "imageNo": 0, "mask": {"url": "https://example.com/m.png"}}


@pytest.mark.parametrize("bad", [float("inf"), float("-inf"), float("nan")])
@pytest.mark.parametrize(
    ("payload", "where", "says"),
    [
        (  # a Number list states no range: the item is named, and what it may be
            lambda bad: {
                **_INPAINT,
                "area": {"width": 500, "height": 500, "points": [0, 0, bad, 0, 5, 5]},
            },
            ("area", "points", 2),
            "must be a finite number; got ",
        ),
        (
            lambda bad: {**_INPAINT, "mask": {"areas": [{"points": [0, 0, 9, 0, 5, bad]}]}},
            ("mask", "areas", 0, "points", 5),
            "must be a finite number; got ",
        ),
    ],
)
def test_inf_and_nan_are_refused_at_validation_naming_the_field_and_range(
    bad: float, payload: Any, where: tuple[Any, ...], says: str
) -> None:
    with pytest.raises(PayloadError) as info:
        catalog.validate("imgM-inpaint", payload(bad))
    [error] = info.value.errors
    assert error["loc"] == where
    assert error["msg"] == f"{says}{bad} (JSON has no inf or nan)"


@pytest.mark.parametrize(("given", "read_as"), [("inf", "inf"), ("nan", "nan"), ("1e999", "inf")])
def test_inf_or_nan_written_as_text_in_a_number_list_is_refused_at_validation_naming_the_item(
    given: str, read_as: str
) -> None:
    """pydantic reads the text as a float: the model held inf, refused only by the encoder
    at send with no place named (review-7 fault 8)."""
    area = {"width": 500, "height": 500, "points": [0, 0, given, 0, 5, 5]}
    with pytest.raises(PayloadError) as info:
        catalog.validate("imgM-inpaint", {**_INPAINT, "area": area})
    assert info.value.errors == [
        {
            "loc": ("area", "points", 2),
            "msg": f"must be a finite number; got {given!r}, read as {read_as} "
            "(JSON has no inf or nan)",
        }
    ]


def test_many_inf_and_nan_do_not_stop_the_scan_for_values_json_cannot_carry() -> None:
    """Twenty NaNs (a wide row of empty cells) ended the scan: a generator after them went
    to pydantic, which consumed it (review-7 fault 4). It is refused untouched."""
    taken: list[int] = []

    def numbers() -> Any:
        for i in range(1000):
            taken.append(i)
            yield i

    empty_cells = {f"col{i}": float("nan") for i in range(25)}
    area = {"width": 500, "height": 500, "points": numbers()}
    with pytest.raises(PayloadError) as info:
        catalog.validate("imgM-inpaint", {**_INPAINT, "area": area, **empty_cells})
    said = {e["loc"]: e["msg"] for e in info.value.errors}
    assert said[("area", "points")].startswith("a generator is not JSON data")
    assert taken == []


def test_inf_in_a_ranged_number_is_said_with_its_range_and_an_unknown_fields_not_sent_as_null() -> (
    None
):
    pan = {"jobId": "j", "imageNo": 0, "direction": 1, "scale": float("inf")}
    with pytest.raises(PayloadError) as info:
        catalog.validate("imgM_pan", pan)
    assert info.value.errors == [
        {
            "loc": ("scale",),
            "msg": "must be 1.1-3; got inf",
        }
    ]
    with pytest.raises(PayloadError) as info:  # pydantic would have written it as null
        catalog.validate("imgM_pan", {**pan, "scale": 2, "extra": float("nan")})
    assert info.value.errors[0]["loc"] == ("extra",)


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


def said_while(call: Any) -> list[str]:
    """The warnings ``call()`` gives."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [str(w.message) for w in caught]


def test_imgm_parameters_in_another_endpoints_prompt_are_warned_about() -> None:
    """``--ar 16:9 --seed 5`` pasted from an imgM prompt is paid for and read as words
    by every other model: a warning (not a refusal: a prompt may say "--") names them
    and the endpoint's own fields that do their work, on every path a payload takes."""
    genw = {"prompt": "a red kite --ar 16:9 --seed 5 --no people", "n": 1}
    with pytest.warns(gw.IneffectiveFieldWarning) as found:
        body = catalog.payload_of("genW2.5-t2i-preview", genw)
    assert body["prompt"] == genw["prompt"]  # sent as given
    assert [str(w.message) for w in found] == [
        "prompt: --ar, --seed and --no are imgM parameters: genW2.5-t2i-preview has no such "
        "settings and reads them as words; set its fields size (for --ar), seed (for --seed), "
        "negative_prompt (for --no) instead"
    ]
    vidv = {"prompt": "a kite \u2014ar 16:9 --v 7", "duration": 5}
    assert said_while(lambda: gw.validate("vidVq2-text2video", vidv)) == [
        "prompt: \u2014ar and --v are imgM parameters: vidVq2-text2video has no such settings "
        "and reads them as words; set its field aspect_ratio (for \u2014ar) instead"
    ]
    assert gw.form("vidVq2-text2video", **vidv).warnings == said_while(
        lambda: gw.validate("vidVq2-text2video", vidv)
    )
    vida = {"content": [{"type": "text", "text": "a kite --tile"}]}
    assert said_while(lambda: gw.validate("vidA-2-0", vida)) == [
        "content.0.text: --tile is an imgM parameter: vidA-2-0 has no such settings and "
        "reads it as words"
    ]


@pytest.mark.parametrize(
    ("endpoint", "payload"),
    [
        ("genW2.5-t2i-preview", {"prompt": "cat -- dog, well--known, a --no-nonsense --arc"}),
        ("genW2.5-t2i-preview", {"prompt": "a kite --", "size": "1280*1280", "seed": 5}),
        ("imgM-v8.1-t2i", {"prompt": "a red kite --ar 16:9 --seed 5"}),
        # an em dash before a word is how Spanish and Portuguese write dialogue
        ("genW2.5-t2i-preview", {"prompt": "Globo de texto: —No tengo miedo —dijo el niño."}),
        ("vidVq2-text2video", {"prompt": "a dog \u2014no leash\u2014 running, a \u2014Relax sign"}),
        # "--" then a parameter's name, but not what imgM takes after it
        ("genW2.5-t2i-preview", {"prompt": "a poster with the slogan --no limits-- in red"}),
        ("genW2.5-t2i-preview", {"prompt": "a book titled 'Kids Say --No More'"}),
        ("vidVq2-text2video", {"prompt": "help text: --seed N sets the seed, --style too"}),
        ("vidVq2-text2video", {"prompt": "a --tile floor, a haiku --style"}),
        # words to be spoken, not a prompt
        ("speechM-02-turbo", {"text": "\u2014No sei \u2014 disse ela."}),
        ("speechM-02-turbo", {"text": "Type a red kite --ar 16:9 --seed 5 --no people"}),
    ],
)
def test_prompts_without_pasted_imgm_parameters_are_not_warned_about(
    endpoint: str, payload: dict[str, Any]
) -> None:
    """Only what reads as pasted from an imgM prompt is named (a known name after ``--``,
    then a value of its shape); prose that starts like it is not told it is a parameter."""
    assert said_while(lambda: gw.validate(endpoint, payload)) == []


@pytest.mark.parametrize(
    ("prompt", "named"),
    [
        ("a kite --no red cars, people --tile", "--no and --tile are"),
        ("a kite --sref https://x.example/a.png::2 random --sw 100", "--sref and --sw are"),
        ("a kite \u2014seed 5 --style raw --q 0.5", "\u2014seed, --style and --q are"),
    ],
)
def test_pasted_imgm_parameters_of_every_shape_are_named(prompt: str, named: str) -> None:
    said = said_while(lambda: gw.validate("vidVq2-text2video", {"prompt": prompt}))
    assert len(said) == 1 and said[0].startswith(f"prompt: {named} imgM parameters")


@pytest.mark.parametrize(
    ("prompt", "named"),
    [
        ("a red fox in snow --ar 16:9.", "--ar"),
        ("a red fox in snow --ar 16:9, photorealistic", "--ar"),
        ("a red fox --seed 5 in the rain", "--seed"),
        ("a red fox \u2014q 0.5; soft light", "\u2014q"),
        ("a red fox --style raw, in the rain", "--style"),
        ("a red fox --sref https://x.example/a.png, in blue", "--sref"),
        ("a red fox, seamless --tile.", "--tile"),
        ("a red fox --no people.", "--no"),
    ],
)
def test_a_pasted_imgm_parameter_followed_by_prose_is_named(prompt: str, named: str) -> None:
    """A value is its first word, less a sentence's punctuation, whatever follows it: the
    whole text up to the next ``--word`` was taken as the value, so ``--ar 16:9.`` or
    ``--seed 5 in the rain`` went unwarned and the other model read them as words
    (review-3 fault 3)."""
    said = said_while(lambda: gw.validate("genW2.5-t2i-preview", {"prompt": prompt}))
    assert len(said) == 1 and said[0].startswith(f"prompt: {named} is an imgM parameter"), said


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


# --- every error in the user's terms --------------------------------------------------


def _models(model: type[BaseModel], seen: set[type[BaseModel]]) -> None:
    if model not in seen:
        seen.add(model)
        for field in catalog.fields_of(model):
            for inner in models_in(field.info.annotation):
                _models(inner, seen)


def _paths(model: type[BaseModel], prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every field's place in a payload, nested ones too (an item of a list at 0)."""
    found = []
    for field in catalog.fields_of(model):
        path = (*prefix, field.wire)
        found.append(path)
        bare = strip_optional(field.info.annotation)[0]
        for inner in models_in(field.info.annotation):
            found.extend(_paths(inner, (*path, 0) if is_container(bare) else path))
    return found


def _nested(path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    for part in reversed(path[1:]):
        value = [value] if isinstance(part, int) else {part: value}
    return {path[0]: value}


ALL_MODELS: set[type[BaseModel]] = set()
for _spec in catalog.endpoints(documented_only=False):
    _models(_spec.model, ALL_MODELS)
#: what no message may hold: our classes' names, pydantic's words, Python's advice
INTERNAL = re.compile(
    r"\b(?:" + "|".join(sorted(m.__name__ for m in ALL_MODELS)) + r"|SizeRule|MediaSpec|"
    r"MediaCheck|Input should|valid dictionary|instance of|pydantic|function-(?:after|before)|"
    r"lax-or-strict|set_int_max_str_digits|Value error|Field required;? \w+ \w+ \w+ should)\b"
)
FIELD_PLACES = [(spec.id, path) for spec in catalog.endpoints() for path in _paths(spec.model)]
WRONG = ["four", 4.5, [1], {"a": 1}, 10**5000, "7" * 5000, True]


def test_the_places_cover_every_documented_endpoint() -> None:
    assert len({endpoint for endpoint, _ in FIELD_PLACES}) == 20
    assert ("speechM-02-turbo", ("voice_setting", "speed")) in FIELD_PLACES
    assert ("vidH_1.0_r2v", ("media", 0, "url")) in FIELD_PLACES
    assert len(ALL_MODELS) > 30


@pytest.mark.parametrize(("endpoint", "path"), FIELD_PLACES)
def test_a_wrong_value_in_any_field_is_said_in_the_users_terms(
    endpoint: str, path: tuple[Any, ...]
) -> None:
    """Every field of the 20 endpoints, given a value of each wrong kind: each message
    names its place by the payload's own names and positions (never a union member
    pydantic adds, such as ``scale.float``), says what was given, cut short and inert,
    and what is allowed, with no class name and none of pydantic's or Python's words."""
    names = {str(p) for place in FIELD_PLACES for p in place[1]}
    for wrong in WRONG:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                catalog.validate(endpoint, _nested(path, wrong))
                continue
            except PayloadError as exc:
                errors = exc.errors
        for error in errors:
            msg, loc = error["msg"], error["loc"]
            assert INTERNAL.search(msg) is None, (endpoint, loc, msg)
            assert all(isinstance(p, int) or p in names for p in loc), (endpoint, loc)
            assert len(msg) <= 700 and "7" * 41 not in msg, (endpoint, loc, msg)  # cut short
            if loc == path and not isinstance(wrong, bool | dict):  # a dict: its content
                assert "got" in msg or "empty" in msg, (endpoint, loc, msg)


@pytest.mark.parametrize(
    ("endpoint", "payload", "where", "said"),
    [
        ("genW2.5-t2i-preview", {"prompt": "x", "n": "four"}, ("n",),
         "expected a whole number 1-4; got 'four'"),
        ("genW2.5-t2i-preview", {"prompt": "x", "seed": 10**400}, ("seed",),
         "must be 0-2147483647; got 100000000000… (401 digits)"),
        ("genW2.5-t2i-preview", {"prompt": "x", "n": 10**5000}, ("n",),
         "must be 1-4; got 100000000000… (5001 digits)"),
        ("genW2.5-t2i-preview", {"prompt": "x", "seed": "7" * 5000}, ("seed",),
         "expected a whole number 0-2147483647; got '7777777777777777777777777777777777777777'"
         "… (5000 characters)"),
        ("imgM_pan", {"jobId": "j", "imageNo": 0, "direction": 0, "scale": "four"}, ("scale",),
         "expected a number 1.1-3; got 'four'"),
        ("imgM_pan", {"jobId": "j", "imageNo": 0, "direction": 9, "scale": 2}, ("direction",),
         "expected one of 0, 1, 2, 3; got 9"),
        ("vidH_1.0_r2v", {"prompt": "x", "media": ["https://e.com/a.png"]}, ("media", 0),
         "expected an object (dict) with the fields type (required), url (required); "
         "got 'https://e.com/a.png'"),
        ("speechM-02-turbo", {"text": "hi", "voice_setting": "calm"}, ("voice_setting",),
         "expected an object (dict) with the fields voice_id, speed, vol, pitch, emotion, "
         "text_normalization, latex_read; got 'calm'"),
        ("speechM-02-turbo", {"text": "hi", "voice_modify": {"pitch": -101}},
         ("voice_modify", "pitch"), "must be from -100 to 100; got -101"),
        ("vidK-v1-6-multi-i2v", {"image_list": "https://e.com/a.png"}, ("image_list",),
         "expected a list of 1-4 items, each an object (dict) with the fields image "
         "(required); got 'https://e.com/a.png'"),
        ("vidK-v3-turbo-t2v", {"prompt": "x", "duration": [5]}, ("duration",),
         "expected whole seconds 3-15 (e.g. 5, '5' or 5.0); got [5]"),
        ("vidK-lip-sync", {"session_id": "s", "face_choose": [{"face_id": "f", "audio_id": "a",
         "sound_insert_time": -5}]}, ("face_choose", 0, "sound_insert_time"),
         "must be 0 or more; got -5"),
        ("vidA-2-0", {"content": [{"type": "text", "text": "x"}], "generate_audio": "maybe"},
         ("generate_audio",), "expected true or false; got 'maybe'"),
        ("vidVq1-text2video", {"prompt": "x", "resolution": "720p"}, ("resolution",),
         "expected only '1080p'; got '720p'"),
        ("imgM-inpaint", {"jobId": "j", "imageNo": 0, "mask": {"url": "https://e.com/m.png"},
         "area": {"width": 500, "height": 500, "points": [0, 0, "x", 1, 2, 3]}},
         ("area", "points", 2), "expected a number; got 'x'"),
        ("vidK-v1-6-multi-i2v", {"image_list": [{"image": "https://e.com/a.png"}],
         "negative_prompt": "n" * 2501}, ("negative_prompt",),
         "must have at most 2500 characters; got 2501"),
        ("asset-get", {"Id": 5}, ("Id",), "expected a text of at least 1 character; got 5"),
        ("genW2.5-t2i-preview", {"prompt": "x", "size": "\x1b[31m" + "x" * 99}, ("size",),
         "must be width*height in pixels, e.g. 1280*1280; got "
         "'\\x1b[31m" + "x" * 35 + "'… (104 characters)"),
    ],
)  # fmt: skip
def test_a_type_error_says_the_field_what_was_given_and_what_is_allowed(
    endpoint: str, payload: dict[str, Any], where: tuple[Any, ...], said: str
) -> None:
    with pytest.raises(PayloadError) as caught:
        catalog.validate(endpoint, payload)
    assert {"loc": where, "msg": said} in caught.value.errors, caught.value.errors


def test_a_type_error_is_refused_before_sending_by_a_client(
    simulator: SimulatorServer,
) -> None:
    """What ``submit`` says is the catalog's message, and nothing is created (paid)."""
    created = simulator.state.stats["created"]
    client = gw.Client(simulator.base_url, DEMO_KEY)
    try:
        with pytest.raises(gw.PayloadError) as caught:
            client.submit("genW2.5-t2i-preview", {"prompt": "a kite", "n": "four"})
        with pytest.raises(gw.PayloadError, match="voice_setting: expected an object"):
            client.submit("speechM-02-turbo", {"text": "hi", "voice_setting": "calm"})
    finally:
        client.close()
    assert caught.value.errors == [
        {"loc": ("n",), "msg": "expected a whole number 1-4; got 'four'"}
    ]
    assert "n: expected a whole number 1-4; got 'four'" in str(caught.value)
    assert simulator.state.stats["created"] == created


def test_an_endpoint_registered_at_run_time_is_said_in_the_users_terms_too() -> None:
    """Types no documented endpoint uses still get words, never a class name."""

    @catalog.register("my-odd-endpoint", kind="image", title="Odd")
    class MyOddEndpoint(catalog.Endpoint):
        flag: Literal[True] | None = None
        meta: dict[str, int] | None = None
        when: datetime.date | None = None

    try:
        with pytest.raises(PayloadError) as caught:
            catalog.validate("my-odd-endpoint", {"flag": "no", "meta": [1], "when": "soon"})
    finally:
        catalog.unregister("my-odd-endpoint")
    assert caught.value.errors == [
        {"loc": ("flag",), "msg": "expected only true; got 'no'"},
        {"loc": ("meta",), "msg": "expected an object (dict); got [1]"},
        {"loc": ("when",), "msg": "expected a date such as 2026-01-31; got 'soon'"},
    ]
    assert "MyOddEndpoint" not in str(caught.value)


def test_a_field_named_in_another_case_is_named_with_the_field_it_means() -> None:
    """``id`` for the asset's ``Id``: too short for difflib, yet plainly meant."""
    with pytest.raises(PayloadError) as caught:
        catalog.validate("asset-get", {"id": "abc"})
    assert caught.value.errors == [
        {
            "loc": ("Id",),
            "msg": "Field required; the unknown field 'id' is probably 'Id', misspelled",
        }
    ]
    with pytest.warns(UnknownFieldWarning, match="did you mean 'ProjectName'"):
        catalog.validate("asset-get", {"Id": "abc", "projectname": "p"})
