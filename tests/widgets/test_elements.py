"""The scalar elements: text, numbers, choices, fixed values; their getter/setter pair."""

from __future__ import annotations

import ipywidgets as W
import pytest
from widgets.field_samples import SPECS, element

from genwidgets.errors import PayloadError
from genwidgets.widgets.field_spec import UNSET


def test_observe_fires_on_user_change_and_on_set() -> None:
    el = element("count")
    calls: list[int] = []
    el.observe(lambda: calls.append(1))
    el.number.value = 3  # a user typing a number ticks "send"
    assert el.send.value is True and el.get() == 3
    el.set(5)
    assert len(calls) >= 2 and el.get() == 5


def test_text_area_counts_characters_against_the_limit() -> None:
    el = element("prompt")
    assert isinstance(el.control, W.Textarea)
    el.set("x" * 123)
    assert "123 / 2000" in el.note.value
    short = element("name")
    assert isinstance(short.control, W.Text) and not isinstance(short.control, W.Textarea)


def test_help_text_is_escaped_and_default_is_a_placeholder() -> None:
    el = element("name")
    _ = el.widget
    assert "&lt;b&gt;name&lt;/b&gt;" in el.note.value and "<b>name" not in el.note.value
    assert "default: 4" in element("count").placeholder()
    assert "1 – 10" in element("count").placeholder()


def test_unparseable_number_text_is_passed_on_for_validation() -> None:
    el = element("seed")
    el.control.value = "12x"
    assert el.get() == "12x"


def test_bounded_number_refuses_values_a_box_cannot_show() -> None:
    el = element("count")
    with pytest.raises(PayloadError, match=r"count: expected a whole number 1-10; got 2.5$"):
        el.set(2.5)
    el.set(99)  # out of range is shown (validation will flag it), not clamped
    assert el.get() == 99


def test_a_number_past_a_floats_range_is_the_typed_error() -> None:
    el = element("count")
    said = r"count: expected a whole number 1-10; got 100000000000… \(401 digits\)$"
    with pytest.raises(PayloadError, match=said):
        el.set(10**400)  # float() overflows: was an OverflowError
    with pytest.raises(PayloadError, match=r"got 100000000000… \(5001 digits\)$"):
        el.set(10**5000)  # past the digits an int may print
    assert el.get() is UNSET  # nothing was set


@pytest.mark.parametrize("name", ["name", "size", "duration"])
def test_bytes_given_to_a_box_are_the_catalogs_typed_error(name: str) -> None:
    el = element(name)  # a text, a choice, a union parsed from text
    with pytest.raises(PayloadError, match=r"a bytes is not JSON data .*gw\.media\.encode"):
        el.set(b"a kite")  # was shown as "b'a kite'" (and a raw TypeError in the form)
    assert el.get() is UNSET


def test_tri_state_bool_has_an_unset_entry_first() -> None:
    el = element("flag")
    labels = [label for label, _ in el.control.options]
    assert labels[0] == "(default: false)"
    assert [v for _, v in el.control.options][1:] == [True, False]
    assert el.get() is UNSET
    el.control.value = False
    assert el.get() is False


def test_literal_dropdown_default_entry_and_toggle_for_short_options() -> None:
    size = element("size")
    assert isinstance(size.control, W.ToggleButtons)
    assert size.control.options[0] == ("(default: m)", UNSET)
    language = element("language")
    assert isinstance(language.control, W.Dropdown)
    assert language.control.options[0] == ("(default)", UNSET)
    assert language.get() is UNSET


def test_a_value_not_offered_is_kept_and_marked() -> None:
    el = element("size")
    el.set("xl")
    assert el.get() == "xl"
    assert any(label == "xl (not allowed)" for label, _ in el._options)


def test_required_single_literal_is_fixed_and_always_sent() -> None:
    el = element("fixed")
    assert el.get() == "reference_image"
    el.set(UNSET)
    assert el.get() == "reference_image"


def test_union_text_is_parsed_by_its_members() -> None:
    el = element("duration")
    el.control.value = "10"
    assert el.get() == 10
    el.control.value = "ten"
    assert el.get() == "ten"


def test_a_value_set_by_code_keeps_its_type_until_edited() -> None:
    el = element("duration")  # int | str
    el.set("7")
    assert el.get() == "7"
    el.control.value = "8"  # typed: parsed by the union's members
    assert el.get() == 8


def test_billed_field_label_has_the_badge() -> None:
    def label(name: str) -> str:  # the HTML beside the control, as the form shows it
        return str(element(name).widget.children[0].children[0].value)

    assert SPECS["cost"].billed
    assert "$</span>" in label("cost")
    assert "$</span>" not in label("count")
