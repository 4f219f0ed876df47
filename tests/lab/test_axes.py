"""Axes: value lists and range strings typed by the catalog, dotted paths,
prompt search and replace, and every kind of bad axis refused before sending."""

from __future__ import annotations

from typing import Any

import pytest

from genwidgets.errors import PayloadError
from genwidgets.lab.axes import ACCEPTED_FORMS, make_axis, parse_values
from genwidgets.lab.plan import plan_grid
from genwidgets.lab.sweep import plan_sweep

T2I = "genW2.5-t2i-preview"
SPEECH = "speechM-02-turbo"


def axis(field: str, values: Any, endpoint: str = T2I, payload: Any = None) -> Any:
    from genwidgets.catalog import endpoint as catalog_endpoint

    base = payload if payload is not None else {"prompt": "a fox in the snow"}
    return make_axis((field, values), endpoint, [catalog_endpoint(endpoint).model], base)


@pytest.mark.parametrize(
    ("text", "kind", "expected"),
    [
        ("1-5", int, [1, 2, 3, 4, 5]),
        ("1-10 (+3)", int, [1, 4, 7, 10]),
        ("10-1 (-4)", int, [10, 6, 2]),
        ("5-3", int, [5, 4, 3]),
        ("0.5-2 [4]", float, [0.5, 1.0, 1.5, 2.0]),
        ("1-5", float, [1.0, 2.0, 3.0, 4.0, 5.0]),
        ("1, 3-5, 9", int, [1, 3, 4, 5, 9]),
        ('a fox, "a fox, oil painting"', str, ["a fox", "a fox, oil painting"]),
        ("1-5", str, ["1-5"]),  # a string field keeps the text
        ("true, off", bool, [True, False]),
    ],
)
def test_range_strings_expand_to_the_fields_type(
    text: str, kind: type, expected: list[Any]
) -> None:
    values = parse_values(text, kind)
    assert values == expected
    assert all(type(v) is kind for v in values)


def test_a_whole_number_is_read_exactly_and_one_too_long_is_left_to_the_catalog() -> None:
    # a float keeps 15 digits: 2**53 + 1 was read 2**53; 5000 digits "not a finite number"
    assert parse_values("9007199254740993, 07.0", int) == [9007199254740993, 7]
    with pytest.raises(PayloadError) as info:
        plan_grid("genW2.5-t2i-preview", {"prompt": "a fox"}, ("seed", "1" * 5000))
    [error] = info.value.errors
    assert "expected a whole number 0-2147483647; got '1111" in error["msg"]
    assert error["msg"].endswith("… (5000 characters)")


def test_the_catalog_model_decides_the_type() -> None:
    assert axis("seed", "1-3").values == (1, 2, 3)
    assert axis("seed", "1-3").values[0].__class__ is int
    speed = axis("voice_setting.speed", "0.5-2 [4]", SPEECH, {"text": "hello"})
    assert speed.values == (0.5, 1.0, 1.5, 2.0)
    assert axis("prompt", "a fox, a cat").values == ("a fox", "a cat")


def test_a_dotted_path_sets_the_nested_field_only() -> None:
    speed = axis("voice_setting.speed", [1.0], SPEECH, {"text": "hi"})
    payload: dict[str, Any] = {"text": "hi", "voice_setting": {"voice_id": "v1"}}
    speed.apply(payload, 1.5)
    assert payload == {"text": "hi", "voice_setting": {"voice_id": "v1", "speed": 1.5}}


def test_prompt_sr_replaces_the_first_value_everywhere_in_the_prompt_fields() -> None:
    base = {"prompt": "a fox, fox fur", "negative_prompt": "no fox"}
    sr = axis("prompt_sr", ["fox", "cat"], payload=base)
    assert sr.targets == ("prompt", "negative_prompt")
    payload = dict(base)
    sr.apply(payload, "cat")
    assert payload == {"prompt": "a cat, cat fur", "negative_prompt": "no cat"}


@pytest.mark.parametrize(
    ("field", "values", "words"),
    [
        ("sede", [1, 2], ["unknown field 'sede'", "did you mean 'seed'"]),
        ("voice_setting.sped", [1.0], ["unknown field 'sped'", "did you mean 'speed'"]),
        ("seed", [1, 1], ["given twice"]),
        ("seed", [7, 7.0], ["the value 7.0 is given twice"]),  # one payload, paid twice
        ("seed", [7, " 7"], ["the value ' 7' is given twice"]),
        ("seed", [], ["no values", "accepted forms"]),
        ("seed", "1-x", ["does not parse", "accepted forms"]),
        ("seed", "abc", ["not a number", "accepted forms"]),
        ("seed", "1-100000", ["at most 400"]),
        ("seed", "1-2 [4]", ["repeats whole numbers"]),
        ("seed", {"a": 1}, ["list or a string"]),
        ("prompt_sr", ["wolf", "cat"], ["'wolf'", "not in the prompt"]),
    ],
)
def test_bad_axes_are_clear_payload_errors(field: str, values: Any, words: list[str]) -> None:
    endpoint = SPEECH if field.startswith("voice_setting") else T2I
    payload = {"text": "hi"} if endpoint == SPEECH else None
    with pytest.raises(PayloadError) as caught:
        axis(field, values, endpoint, payload)
    message = str(caught.value)
    for word in words:
        assert word in message


def test_a_seed_axis_on_an_endpoint_that_reads_its_seed_in_the_prompt_says_how() -> None:
    """imgM takes "--seed N" in its prompt: a seed axis (or a sweep's vary) was refused
    as an unknown field with no word of what works."""
    base = {"prompt": "a fox --ar 1:1"}
    with pytest.raises(PayloadError) as caught:
        axis("seed", [1, 2], "imgM-v8.1-t2i", base)
    said = str(caught.value)
    assert "unknown field 'seed'" in said and 'a group "--seed {1, 2}" in the prompt' in said
    with pytest.raises(PayloadError, match=r'vary=\{"prompt": \["a fox --seed 1"'):
        plan_sweep("imgM-v8.1-t2i", base, vary={"seed": [1, 2]})
    with pytest.raises(PayloadError) as caught:
        axis(
            "seed", [1, 2], "vidA-2-0", {"content": [{"type": "text", "text": "a fox"}]}
        )  # no seed at all
    assert "in the prompt" not in str(caught.value)


def test_an_axis_that_is_not_a_pair_shows_the_accepted_forms() -> None:
    with pytest.raises(PayloadError, match="an axis is"):
        axis("seed", [1])  # fine
        make_axis("seed", T2I, None, {})
    assert "1-10 (+3)" in ACCEPTED_FORMS


BIG = {f"key{i}": "v" * 50 for i in range(100)}  # 6000 characters as a repr
LONG = "w" * 5000


@pytest.mark.parametrize(
    "x",
    [
        BIG,  # an axis given as a dict
        ("seed", "1-2" + " " * 5000 + "[4]"),
        ("seed", "x" * 5000),
        ("prompt_extend", LONG),
        ("prompt_sr", [LONG]),
        ("prompt_sr", ["fox", LONG, LONG]),
        (LONG, [1, 2]),  # an unknown field
        ("a.." + LONG, [1, 2]),  # no field name
    ],
)
def test_an_axis_error_shows_a_short_excerpt_of_what_was_given(x: Any) -> None:
    """What was given is shown as the catalog shows a value (``checks.shown``): its
    start and its length, never thousands of characters."""
    with pytest.raises(PayloadError) as caught:
        plan_grid(T2I, {"prompt": "a fox"}, x=x)
    message = str(caught.value)
    assert len(message) < 800, message[:300]
    assert "… (" in message or "..." in message


NINES = "9" * 400  # no float holds it: float() reads it as infinity


@pytest.mark.parametrize(
    ("values", "words"),
    [
        ("1-" + NINES, "is too large: no field takes a number above about 1.8e308"),
        ("0.5-" + NINES + " [4]", "is too large"),
        ("1-5 (+" + NINES + ")", "is too large"),
        ("1-" + "9" * 5000, "has too many digits; at most 4300"),
        ("1-5 (+0." + "0" * 5000 + "1)", "has too many digits"),
        ("1-5 [" + "9" * 5000 + "]", "must ask for 1 to 400 values"),
        ("1-" + "9" * 300, "makes over a billion values; at most 400 per axis"),
    ],
)
def test_a_range_bound_no_field_takes_is_refused_on_the_axis(values: str, words: str) -> None:
    """A range's numbers are read exactly: one beyond any float (309 digits) or too long
    for Python is refused on the axis in a few words, never a bare OverflowError, nor a
    count of 300 digits read from a float."""
    with pytest.raises(PayloadError) as caught:
        plan_grid(T2I, {"prompt": "a fox"}, x=("seed", values))
    [error] = caught.value.errors
    assert error["loc"] == ("axis", "seed")
    assert words in error["msg"]
    assert len(error["msg"]) < 200, error["msg"]


def test_a_range_reads_its_bounds_exactly() -> None:
    """A float keeps 15 digits: a 17-digit range read as floats repeated its numbers."""
    assert parse_values("10000000000000001-10000000000000003", int) == [
        10000000000000001,
        10000000000000002,
        10000000000000003,
    ]
    assert parse_values("0.1-0.3 (+0.1)", float) == [0.1, 0.2, 0.3]
    assert parse_values("1-5 [0004]", int) == [1, 2, 4, 5]


def test_the_same_field_on_two_axes_is_refused() -> None:
    with pytest.raises(PayloadError, match="same field is on two axes"):
        plan_grid(T2I, {"prompt": "a fox"}, x=("seed", [1, 2]), y=("seed", [3, 4]))


def test_a_permutation_groups_options_send_escaped_and_read_plain() -> None:
    import genwidgets as gw
    from genwidgets.imgm import Prompt
    from genwidgets.lab.plan import permutation_axes

    prompt = "a {red, pastel \\, yellow, \\{x\\}} bird"
    [axis] = permutation_axes(gw.endpoint("imgM-v8.1-t2i"), {"prompt": prompt})
    assert axis.shown_values == ("red", "pastel, yellow", "{x}")
    for value in axis.values:  # each cell sends exactly one prompt
        payload = {"prompt": prompt}
        axis.apply(payload, value)
        assert Prompt.parse(payload["prompt"]).count() == 1
