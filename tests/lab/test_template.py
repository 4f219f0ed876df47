"""A batch's template: values typed by field (the grid's typing), whole values kept,
columns checked, unknown fields refused, and the payload of each row."""

from __future__ import annotations

from typing import Any

import pytest

from genwidgets.catalog import endpoint
from genwidgets.errors import PayloadError
from genwidgets.lab.template import build_template

T2I = endpoint("genW2.5-t2i-preview")
SPEECH = endpoint("speechM-02-turbo")
VIDEO = endpoint("vidVq2-text2video")


def payloads(template: Any, rows: list[dict[str, Any]], specs: Any = (T2I,)) -> list[Any]:
    columns = list(dict.fromkeys(k for r in rows for k in r))
    built = build_template(template, list(specs), columns)
    return [built.payload(row, i) for i, row in enumerate(rows)]


def test_format_strings_are_typed_by_their_field_and_whole_values_kept() -> None:
    rows = [{"text": "a fox", "seed": "7", "n": 2}, {"text": "snow", "seed": "8", "n": 1}]
    out = payloads({"prompt": "{text}, watercolor", "seed": "{seed}", "n": "{n}"}, rows)
    assert out[0] == ({"prompt": "a fox, watercolor", "seed": 7, "n": 2}, [])
    assert out[1][0]["seed"] == 8 and isinstance(out[1][0]["seed"], int)


def test_constants_row_number_and_dotted_fields() -> None:
    rows = [{"line": "hello", "speed": "1.5"}]
    out = payloads(
        {"text": "{line} ({row})", "voice_setting.speed": "{speed}", "aigc_watermark": "no"},
        rows,
        (SPEECH,),
    )
    payload, problems = out[0]
    assert problems == []
    assert payload["text"] == "hello (0)"
    assert payload["voice_setting"] == {"speed": 1.5}
    assert payload["aigc_watermark"] is False  # a string constant typed for a boolean field


def test_an_empty_cell_leaves_the_field_unset_and_embedded_ones_format_empty() -> None:
    rows = [{"text": "a fox"}, {"text": "snow", "time": "dawn", "seed": "3"}]
    out = payloads({"prompt": "{text} at {time}", "seed": "{seed}"}, rows)
    assert out[0] == ({"prompt": "a fox at "}, [])
    assert out[1] == ({"prompt": "snow at dawn", "seed": 3}, [])


def test_json_text_fills_a_list_field() -> None:
    media = '[{"type": "reference_image", "url": "https://example.org/a.png"}]'
    rows = [{"refs": media, "text": "x"}]
    out = payloads({"prompt": "{text}", "media": "{refs}"}, rows, (endpoint("vidH_1.0_r2v"),))
    assert out[0][0]["media"] == [{"type": "reference_image", "url": "https://example.org/a.png"}]


def test_a_value_that_is_not_the_fields_type_names_its_row_and_field() -> None:
    rows = [
        {"text": "a", "seed": "7"},
        {"text": "b", "seed": "seven"},
        {"text": "c", "seed": "1.5"},
    ]
    out = payloads({"prompt": "{text}", "seed": "{seed}"}, rows)
    assert out[0][1] == []
    assert out[1][1] == [
        {"loc": ("row 1", "seed"), "msg": "from column 'seed': 'seven' is not a number"}
    ]
    assert out[2][1][0]["msg"].endswith("'1.5' is not a whole number")


def test_without_a_template_the_columns_named_like_fields_are_the_payload() -> None:
    columns = ["prompt", "seed", "notes", "endpoint", "duration"]
    built = build_template(None, [T2I, VIDEO], columns)
    assert built.describe() == {"prompt": "{prompt}", "seed": "{seed}", "duration": "{duration}"}
    assert built.unused == ("notes",)
    assert built.payload({"prompt": "p", "seed": "3", "duration": "5", "notes": "n"}, 0) == (
        {"prompt": "p", "seed": 3, "duration": 5},
        [],
    )
    with pytest.raises(PayloadError, match=r"no column is named like a field of genW2\.5"):
        build_template(None, [T2I], ["text", "notes"])


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ({"prompt": "{txt}"}, "names no column 'txt'; the columns are text, seed"),
        ({"sed": "{seed}"}, "unknown field 'sed'; did you mean 'seed'?"),
        ({"prompt": "{text.upper}"}, "no attribute or index"),
        ({"prompt": "{0}"}, "a {} names a column"),
        ({"prompt": "{text"}, "is not a format string"),
        ({"endpoint": "x"}, "the endpoint comes from the endpoint argument or column"),
        ({"n": "many"}, "'many' is not a number"),
        ("prompt", "a template is a dict"),
    ],
)
def test_template_mistakes_are_refused_before_any_row(template: Any, expected: str) -> None:
    with pytest.raises(PayloadError, match=expected):
        build_template(template, [T2I], ["text", "seed"])


def test_every_template_problem_is_said_at_once() -> None:
    with pytest.raises(PayloadError) as info:
        build_template({"prompt": "{txt}", "sed": 1}, [T2I], ["text"])
    assert [e["loc"] for e in info.value.errors] == [("template", "prompt"), ("template", "sed")]


def test_a_field_only_another_endpoint_of_the_batch_has_is_typed_by_that_one() -> None:
    built = build_template({"prompt": "{t}", "duration": "{d}"}, [T2I, VIDEO], ["t", "d"])
    assert built.payload({"t": "x", "d": "10"}, 0)[0] == {"prompt": "x", "duration": 10}


def test_columns_named_like_fields_fill_what_the_template_leaves_out() -> None:
    """Issue 40.4: a template of constants no longer turns the columns off."""
    rows = [{"prompt": "a slow tide", "duration": "5", "note": "x"}]
    built = build_template({"duration": 2}, [VIDEO], ["prompt", "duration", "note"])
    payload, problems = built.payload(rows[0], 0)
    assert problems == []
    assert payload == {"duration": 2, "prompt": "a slow tide"}  # the template wins on duration
    assert built.filled == ("prompt",)
    assert built.unused == ("duration", "note")  # the template set duration: not read


def test_a_column_fills_no_field_the_template_sets_under_a_dotted_path() -> None:
    built = build_template(
        {"text": "{line}", "voice_setting.speed": 1.5},
        [SPEECH],
        ["line", "voice_setting", "text"],
    )
    assert built.filled == ()
    assert built.describe() == {"text": "{line}", "voice_setting.speed": 1.5}


def test_a_column_named_like_a_field_of_only_another_endpoint_fills_nothing() -> None:
    """An endpoint column's other endpoints take fields through the mapping table: a
    ``text`` column (speech's prompt) is not sent as a field of an image batch."""
    built = build_template({"prompt": "{text}"}, [T2I, SPEECH], ["text", "endpoint"])
    assert built.filled == ()
