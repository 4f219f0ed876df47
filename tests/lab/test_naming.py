"""File names of a batch: the default template, slugs, safe parts, empty values, the
extension and the later outputs of a row, and templates that cannot name a file."""

from __future__ import annotations

import pytest

from genwidgets.errors import PayloadError
from genwidgets.lab.naming import NameTemplate, file_name, safe_part, slug


def test_slugs_are_short_safe_ascii_and_drop_imgm_parameters() -> None:
    assert slug("A Red Fox, in the Snow!") == "a-red-fox-in-the-snow"
    assert slug("Café crème --ar 16:9 --seed 4") == "cafe-creme"
    assert slug("word " * 30) == "-".join(["word"] * 8)  # at most 40 characters, at a word
    assert slug("雪の中の狐") == "雪の中の狐"  # no ASCII form: the words themselves
    assert slug(None) == "" and slug("") == ""


def test_safe_parts_hold_no_separator_and_no_leading_dot() -> None:
    assert safe_part("../../etc/passwd") == "etc-passwd"
    assert safe_part("a/b\\c d") == "a-b-c-d"
    assert safe_part(None) == "" and safe_part(42) == "42"


def test_the_default_template_and_an_empty_seed() -> None:
    names = NameTemplate.parse(None, ["text"])
    stem = names.stem(3, {"text": "x"}, {"slug": "a-fox", "seed": 42})
    assert file_name(stem, ".png", 0, 1) == "00003-a-fox-42.png"
    bare = names.stem(12, {}, {"slug": "a-fox", "seed": None})
    assert file_name(bare, "mp4", 0, 1) == "00012-a-fox.mp4"


def test_later_outputs_of_a_row_and_the_output_placeholder() -> None:
    stem = NameTemplate.parse(None, []).stem(0, {}, {"slug": "kite", "seed": 1})
    assert [file_name(stem, ".png", k, 3) for k in range(3)] == [
        "00000-kite-1.png",
        "00000-kite-1-2.png",
        "00000-kite-1-3.png",
    ]
    own = NameTemplate.parse("{sku}_{output}.{ext}", ["sku"]).stem(0, {"sku": "AB/12"}, {})
    assert [file_name(own, "jpg", k, 2) for k in range(2)] == ["AB-12_1.jpg", "AB-12_2.jpg"]


def test_each_template_shows_its_own_names_in_one_process() -> None:
    """A template reads which names it shows once; another template, or a column named
    like a built-in, does not borrow them."""
    fields = {"slug": "a-fox", "seed": 7, "endpoint": "genW2.5-t2i-preview", "kind": "image"}
    by_kind = NameTemplate.parse("{kind}-{endpoint}-{row}.{ext}", [])
    default = NameTemplate.parse(None, [])
    assert by_kind.names == {"kind", "endpoint", "row", "ext"}
    assert file_name(by_kind.stem(1, {}, fields), "png", 0, 1) == "image-genW2.5-t2i-preview-1.png"
    assert file_name(default.stem(1, {}, fields), "png", 0, 1) == "00001-a-fox-7.png"
    own_seed = NameTemplate.parse("{text}-{seed}.{ext}", ["text", "seed"])
    stem = own_seed.stem(0, {"text": "a/b", "seed": "col"}, fields)
    assert file_name(stem, "png", 0, 1) == "a-b-7.png"  # the built-in seed wins, as ever


def test_separators_left_by_empty_values_are_tidied() -> None:
    names = NameTemplate.parse("{row}-{text}-{seed}--{slug}.{ext}", ["text"])
    assert file_name(names.stem(2, {}, {"slug": "", "seed": None}), "png", 0, 1) == "2.png"
    assert file_name(names.stem(2, {"text": "x"}, {"slug": "k", "seed": 1}), "png", 0, 1) == (
        "2-x-1-k.png"
    )
    bare = NameTemplate.parse("{text}-{ext}", ["text"]).stem(0, {"text": "x"}, {})
    assert file_name(bare, "png", 0, 1) == "x-png"  # the template's own dash, no dot: kept
    empty = NameTemplate.parse("{text}-{ext}", ["text"]).stem(0, {"text": ""}, {})
    assert file_name(empty, "png", 0, 1) == "png"
    assert file_name(bare, "png", 1, 2) == "x-2-png"  # a later output: before the separator


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("out/{row}.{ext}", "a file name, not a path"),
        ("{row}.png", "has no {ext}"),
        ("{colour}.{ext}", "names {colour}, which is neither a column nor one of"),
        ("{row.{ext}", "not a format string"),
        ("", "a non-empty string"),
    ],
)
def test_templates_that_cannot_name_a_file_are_refused(template: str, expected: str) -> None:
    with pytest.raises(PayloadError, match=expected):
        NameTemplate.parse(template, ["text"])


def test_a_value_that_does_not_format_names_its_row() -> None:
    names = NameTemplate.parse("{text:05d}.{ext}", ["text"])
    with pytest.raises(PayloadError) as info:
        names.stem(4, {"text": "abc"}, {})
    assert info.value.errors[0]["loc"] == ("row 4", "filenames")


def test_a_long_name_is_cut_to_fit_a_file_system() -> None:
    stem = NameTemplate.parse("{text}-{text}-{text}-{text}.{ext}", ["text"]).stem(
        0, {"text": "é" * 60}, {}
    )
    assert len(file_name(stem, "png", 0, 1).encode()) <= 210
    assert file_name(stem, "png", 0, 1).endswith(".png")


@pytest.mark.parametrize(
    "template",
    ["{text}:{row}.{ext}", "{text}?.{ext}", "a*b-{row}.{ext}", '"{text}".{ext}', "{text}|.{ext}",
     "<{text}>.{ext}", "{text}\t.{ext}"],
)  # fmt: skip
def test_a_template_with_a_character_windows_reserves_is_refused(template: str) -> None:
    with pytest.raises(PayloadError, match="no file system takes"):
        NameTemplate.parse(template, ["text"])


def test_a_name_ending_in_a_dot_or_a_space_loses_them() -> None:
    """Windows drops them, so ``x.png.`` would be ``x.png`` there, another row's name."""
    stem = NameTemplate.parse("{text}.{ext}. ", ["text"]).stem(0, {"text": "x"}, {})
    assert file_name(stem, "png", 0, 1) == "x.png"


def test_a_device_name_made_by_a_later_output_gets_its_safe_form() -> None:
    stem = NameTemplate.parse("COM{output}.{ext}", []).stem(0, {}, {})
    assert file_name(stem, "png", 0, 2) == "COM1_.png"
    assert file_name(stem, "png", 1, 2) == "COM2_.png"
