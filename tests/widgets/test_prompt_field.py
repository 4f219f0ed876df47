"""The imgM prompt field: the PromptBuilder, bound both ways and made only when shown."""

from __future__ import annotations

from widgets.field_samples import element

from genwidgets.widgets.prompt_builder import PromptBuilder


def test_prompt_field_binds_the_prompt_builder_both_ways() -> None:
    el = element("imgm_prompt")
    el.set("a fox --ar 3:2")
    assert el.get() == "a fox --ar 3:2"
    _ = el.widget  # shown: the builder is made with the value in it
    assert el.control.value == "a fox --ar 3:2"
    el.control.value = "a fox --no snow"  # edited in the builder
    assert el.get() == "a fox --no snow"
    el.set("a hare")
    assert el.control.value == "a hare"
    assert isinstance(el.control, PromptBuilder) and el.builder is el.control
    assert "6 characters" in el.note.value  # "a hare"


def test_prompt_builder_is_made_only_when_shown() -> None:
    el = element("imgm_prompt")
    el.set("a cat")
    assert el.builder is None and el.get() == "a cat"
