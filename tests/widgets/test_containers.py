"""Lists with add/remove rows, nested sub-forms and unions of models."""

from __future__ import annotations

import ipywidgets as W
from pydantic import BaseModel, Field
from widgets.field_samples import CTX, UrlPart, Voice, element

from genwidgets.widgets.containers import ListElement, ModelElement, ModelUnionElement
from genwidgets.widgets.dispatch import build_element
from genwidgets.widgets.field_spec import UNSET, field_specs


def test_list_rows_add_remove_and_count_bounds() -> None:
    el = element("tags")
    assert el.rows == [] and el.get() is UNSET  # optional: starts empty, not sent
    for i in range(3):
        row = el.add_row()
        row.set(f"t{i}")
    assert el.get() == ["t0", "t1", "t2"]
    assert el.add_button.disabled  # max 3
    el.remove_row(el.rows[0])
    assert el.get() == ["t1", "t2"]
    assert not el.add_button.disabled


def test_required_list_starts_with_its_minimum_and_keeps_it() -> None:
    class M(BaseModel):
        images: list[str] = Field(min_length=1, max_length=2)

    el = build_element(field_specs(M)[0], CTX)
    assert isinstance(el, ListElement)
    assert len(el.rows) == 1
    remove = el.rows_box.children[0].children[1]
    assert remove.disabled
    el.remove_row(el.rows[0])
    assert len(el.rows) == 1
    assert el.get() is UNSET  # an empty required list: omitted, validation says "required"


def test_unset_rows_are_left_out_and_errors_map_back_to_their_row() -> None:
    el = element("tags")
    a, _b, c = el.add_row(), el.add_row(), el.add_row()
    a.set("x")
    c.set("z")
    assert el.get() == ["x", "z"]
    target, rest = el.locate((1,))
    assert target is c and rest == ()


def test_list_of_models_rows_are_sub_forms() -> None:
    el = element("weights")
    row = el.add_row()
    assert isinstance(row, ModelElement)
    row.set({"voice_id": "v", "weight": 5})
    assert el.get() == [{"voice_id": "v", "weight": 5}]
    target, _rest = el.locate((0, "weight"))
    assert target is row.children["weight"]


def test_nested_sub_form_is_built_on_open_and_locates_errors() -> None:
    el = element("voice")
    assert isinstance(el.control, W.Accordion)
    assert el.children == {}  # folded and not built yet: cheap
    el.control.selected_index = 0
    assert set(el.children) == {"voice_id", "speed", "pitch"}
    assert el.get() is UNSET
    el.children["pitch"].set(4)
    assert el.get() == {"pitch": 4}
    target, _ = el.locate(("speed",))
    assert target is el.children["speed"]
    target.show_errors(["Input should be less than or equal to 2"])
    assert "less than or equal to 2" in target.note.value


def test_required_sub_form_is_open_and_untouched_is_not_sent() -> None:
    el = element("required_voice")
    assert isinstance(el.control, W.VBox) and set(el.children) == {"voice_id", "speed", "pitch"}
    assert el.get() is UNSET  # validation then says "Field required" beside it


def test_unknown_nested_keys_are_kept() -> None:
    el = element("voice")
    el.set({"pitch": 1, "secret_sauce": 3})
    assert el.get() == {"pitch": 1, "secret_sauce": 3}


def test_union_of_models_picks_the_variant_by_tag() -> None:
    el = element("parts")
    row = el.add_row({"type": "url", "url": "https://x.test"})
    assert isinstance(row, ModelUnionElement)
    assert row.choice.value is UrlPart
    target, _ = el.locate((0, "url", "url"))  # pydantic puts the tag in the location
    assert target is row.current.children["url"]


def test_a_sub_form_set_from_a_model_tells_its_observers_once() -> None:
    el = element("voice")
    calls: list[int] = []
    el.observe(lambda: calls.append(1))
    el.set(Voice(pitch=3))
    assert el.get() == {"pitch": 3} and calls == [1]
    el.set({"pitch": 4})
    assert calls == [1, 1]
