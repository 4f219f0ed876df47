"""The dispatch: one ordered table picks each field's element; overrides win."""

from __future__ import annotations

from typing import Any

import pytest
from widgets.field_samples import SPECS, element

from genwidgets.widgets import dispatch
from genwidgets.widgets.containers import ListElement, ModelElement
from genwidgets.widgets.dispatch import BuildContext, Element, kind_of
from genwidgets.widgets.elements import ChoiceElement, FixedElement, NumberElement, TextElement
from genwidgets.widgets.field_spec import UNSET, FieldSpec
from genwidgets.widgets.prompt_field import PromptElement


@pytest.mark.parametrize(
    ("name", "kind", "cls"),
    [
        ("prompt", "str", TextElement),
        ("name", "str", TextElement),
        ("count", "int", NumberElement),
        ("ratio", "float", NumberElement),
        ("seed", "int", TextElement),
        ("flag", "bool", ChoiceElement),
        ("size", "literal", ChoiceElement),
        ("language", "literal", ChoiceElement),
        ("fixed", "literal", FixedElement),
        ("tags", "list", ListElement),
        ("voice", "model", ModelElement),
        ("duration", "union", TextElement),
        ("extra", "json", TextElement),
        ("imgm_prompt", "prompt", PromptElement),  # the PROMPT_STRING marker's entry
    ],
)
def test_dispatch_picks_the_element_for_each_kind(name: str, kind: str, cls: type) -> None:
    assert kind_of(SPECS[name]) == kind
    assert type(element(name)) is cls


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("prompt", "a red kite"),
        ("name", "kite"),
        ("count", 7),
        ("ratio", 1.5),
        ("seed", 123456789012),
        ("flag", False),
        ("flag", True),
        ("size", "l"),
        ("language", "German"),
        ("tags", ["a", "b"]),
        ("weights", [{"voice_id": "v1", "weight": 30}, {"voice_id": "v2", "weight": 70}]),
        ("voice", {"voice_id": "alto", "speed": 1.25, "pitch": -3}),
        ("duration", 7),
        ("duration", "auto"),
        ("parts", [{"type": "text", "text": "hi"}, {"type": "url", "url": "https://x.test/a"}]),
        ("extra", {"k": [1, 2]}),
        ("imgm_prompt", "a cat --ar 16:9 --v 8.1"),
    ],
)
def test_get_set_unset_round_trip(name: str, value: Any) -> None:
    el = element(name)
    assert el.get() is UNSET
    el.set(value)
    assert el.get() == value
    assert type(el.get()) is type(value)
    el.set(UNSET)
    assert el.get() is UNSET
    el.set(value)
    el.set(None)  # None also means "not sent"
    assert el.get() is UNSET


def test_dispatch_table_covers_every_kind() -> None:
    kinds = {"str", "int", "float", "bool", "literal", "list", "model", "model_union", "union"}
    markers = {"vida_content", "media", "prompt"}  # entries narrower than a type: first
    names = [kind.name for kind in dispatch.FIELD_KINDS]
    assert kinds | {"json"} | markers == set(names) and len(names) == len(set(names))
    assert names[-1] == "json"  # the fallback is tried last
    assert names.index("media") < names.index("str") and names.index("prompt") < names.index("str")


def test_a_new_field_kind_is_one_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Adding a kind touches the table only: no separate key function or if-chain."""
    made: list[str] = []

    def colour(spec: FieldSpec, ctx: BuildContext) -> Element:
        made.append(spec.path)
        return TextElement(spec, ctx)

    entry = dispatch.FieldKind("colour", lambda s: s.wire == "name", colour)
    monkeypatch.setattr(dispatch, "FIELD_KINDS", (entry, *dispatch.FIELD_KINDS))
    assert kind_of(SPECS["name"]) == "colour"
    assert isinstance(element("name"), TextElement) and made == ["name"]
    assert kind_of(SPECS["count"]) == "int"


def test_explicit_override_wins_over_inference() -> None:
    made: list[str] = []

    def factory(spec: FieldSpec, ctx: BuildContext) -> Element:
        made.append(spec.path)
        return TextElement(spec, ctx, long=True)

    dispatch.register_field("sample", "count", factory)
    try:
        el = element("count")
        assert made == ["count"] and isinstance(el, TextElement)
    finally:
        dispatch.unregister_field("sample", "count")
    assert isinstance(element("count"), NumberElement)
