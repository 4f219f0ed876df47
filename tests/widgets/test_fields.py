"""The field dispatch: each kind's element, its getter/setter pair and its bounds."""

from __future__ import annotations

import base64
import io
from typing import Annotated, Any, Literal

import ipywidgets as W
import pytest
from PIL import Image
from pydantic import BaseModel, Field

from genwidgets.catalog import BILLED, PROMPT_STRING, MediaSpec
from genwidgets.errors import PayloadError
from genwidgets.widgets import fields
from genwidgets.widgets.fields import (
    UNSET,
    BuildContext,
    ChoiceElement,
    FixedElement,
    ListElement,
    MediaElement,
    ModelElement,
    ModelUnionElement,
    NumberElement,
    PromptElement,
    TextElement,
    VidAContentElement,
    build_element,
    content_scenario,
    default_from_description,
    field_specs,
    kind_of,
)


class Voice(BaseModel):
    voice_id: str | None = Field(None, description="Voice ID.")
    speed: float | None = Field(None, ge=0.5, le=2, description="0.5-2, default 1.0.")
    pitch: int | None = Field(None, ge=-12, le=12, description="-12 to 12, default 0.")


class Weight(BaseModel):
    voice_id: str = Field(description="Voice.")
    weight: int = Field(ge=1, le=100, description="1-100.")


class TextPart(BaseModel):
    type: Literal["text"]
    text: str


class UrlPart(BaseModel):
    type: Literal["url"]
    url: str


class Sample(BaseModel):
    """A model with one field of every kind the dispatch knows."""

    prompt: str = Field(max_length=2000, description="Max 2000 characters.")
    name: str | None = Field(None, max_length=40, description="Short <b>name</b>.")
    count: int | None = Field(None, ge=1, le=10, description="1-10; default 4.")
    ratio: float | None = Field(None, ge=0.1, le=3.0)
    seed: int | None = Field(None, description="Any integer.")
    flag: bool | None = Field(None, description="Default false.")
    size: Literal["s", "m", "l"] | None = Field(None, description="Default `m`.")
    language: Literal["English", "French", "German", "Spanish", "Italian"] | None = None
    fixed: Literal["reference_image"]
    tags: list[str] | None = Field(None, min_length=1, max_length=3)
    weights: list[Weight] | None = Field(None, max_length=4)
    voice: Voice | None = None
    required_voice: Voice
    duration: int | str | None = Field(None, description="3-15 seconds or a string.")
    parts: list[TextPart | UrlPart] | None = None
    extra: Any = None
    cost: Annotated[int | None, BILLED] = Field(None, ge=1, le=4, description="default 1.")
    imgm_prompt: Annotated[str | None, PROMPT_STRING] = None


SPECS = {s.wire: s for s in field_specs(Sample)}
CTX = BuildContext(endpoint="sample")


def element(name: str) -> Any:
    return build_element(SPECS[name], CTX)


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
        ("imgm_prompt", "str", PromptElement),
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
    with pytest.raises(PayloadError, match=r"expected a whole number \(1 – 10\), got 2.5"):
        el.set(2.5)
    el.set(99)  # out of range is shown (validation will flag it), not clamped
    assert el.get() == 99


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
    remove = el._row_boxes[0].children[1]
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
    assert SPECS["cost"].billed
    assert "$</span>" in fields.label_html(SPECS["cost"])
    assert "$</span>" not in fields.label_html(SPECS["count"])


@pytest.mark.parametrize(
    ("text", "default"),
    [
        ("Seconds, 1-10, default 5.", "5"),
        ("Default `720p`.", "720p"),
        ("Default true. true: synchronized voice", "true"),
        ("default usually 100; common 0-1000", ""),
        ("Defaults of duration: not shown.", ""),
    ],
)
def test_documented_default_is_read_from_the_description(text: str, default: str) -> None:
    assert default_from_description(text) == default


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
    builder = fields.prompt_builder_class()
    assert builder is not None, "genwidgets.imgm.builder.PromptBuilder is missing"
    assert isinstance(el.control, builder) and el.builder is el.control
    assert "6 characters" in el.note.value  # "a hare"


def test_prompt_builder_is_made_only_when_shown() -> None:
    el = element("imgm_prompt")
    el.set("a cat")
    assert el._control is None and el.get() == "a cat"


def test_dispatch_table_covers_every_kind() -> None:
    kinds = {"str", "int", "float", "bool", "literal", "list", "model", "model_union", "union"}
    assert kinds | {"json"} == set(fields._CONSTRUCTORS)


def test_explicit_override_wins_over_inference() -> None:
    made: list[str] = []

    def factory(spec: fields.FieldSpec, ctx: BuildContext) -> fields.Element:
        made.append(spec.path)
        return TextElement(spec, ctx, long=True)

    fields.register_field("sample", "count", factory)
    try:
        el = element("count")
        assert made == ["count"] and isinstance(el, TextElement)
    finally:
        del fields._OVERRIDES[("sample", "count")]
    assert isinstance(element("count"), NumberElement)


# --- media ------------------------------------------------------------------------------


def form_png(width: int, height: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (200, 40, 40)).save(buffer, format="PNG")
    return buffer.getvalue()


VIDA_IMAGE = MediaSpec(
    media="image",
    encoding="data_url_lower",
    formats=("jpeg", "png", "webp"),
    min_side=300,
    max_side=6000,
    sides_exclusive=True,
    min_aspect=0.4,
    max_aspect=2.5,
    allow_asset=True,
)
VIDK_IMAGE = MediaSpec(media="image", encoding="raw_base64", formats=("jpeg", "png"), min_side=300)
URL_ONLY = MediaSpec(media="image", encoding="url_only", formats=("jpeg", "png"))


def media_element(spec: MediaSpec) -> MediaElement:
    field_spec = fields.FieldSpec(name="u", wire="u", path="u", annotation=str, required=True)
    return MediaElement(field_spec, CTX, spec)


def upload(el: MediaElement, data: bytes, name: str = "pic.png") -> None:
    import datetime

    assert el.upload is not None
    el.upload.value = (
        {
            "name": name,
            "type": "image/png",
            "size": len(data),
            "content": memoryview(data),
            "last_modified": datetime.datetime.now(datetime.timezone.utc),
        },
    )


def test_upload_is_encoded_as_a_lowercase_data_url_and_the_upload_cleared() -> None:
    el = media_element(VIDA_IMAGE)
    data = form_png(640, 480)
    upload(el, data)
    value = el.get()
    assert value == "data:image/png;base64," + base64.b64encode(data).decode()
    assert el.upload is not None and el.upload.value == ()  # bytes not kept in a trait
    assert el.url.value == ""  # the encoding lives in Python only
    assert "passes the checks" in el.status.value
    assert el.preview.value and len(el.preview.value) < len(data) + 1000
    assert el.preview.layout.display is None


def test_upload_for_a_raw_base64_field_has_no_prefix() -> None:
    el = media_element(VIDK_IMAGE)
    data = form_png(400, 400)
    upload(el, data)
    assert el.get() == base64.b64encode(data).decode()


def test_too_small_image_shows_the_check_failure_before_submit() -> None:
    el = media_element(VIDA_IMAGE)
    upload(el, form_png(100, 100), "tiny.png")
    assert el.get() is UNSET
    assert "✗" in el.status.value
    assert "300" in el.status.value


def test_url_only_field_has_no_upload_and_takes_a_url() -> None:
    el = media_element(URL_ONLY)
    assert el.upload is None
    el.set("https://x.test/a.png")
    assert el.get() == "https://x.test/a.png"


def test_typing_a_url_replaces_an_uploaded_file() -> None:
    el = media_element(VIDA_IMAGE)
    upload(el, form_png(640, 480))
    el.url.value = "asset://abc"
    assert el.get() == "asset://abc" and el.encoded is None


def test_inline_data_set_by_code_stays_out_of_widget_state() -> None:
    el = media_element(VIDA_IMAGE)
    data_url = "data:image/png;base64," + base64.b64encode(form_png(640, 480)).decode()
    el.set(data_url)
    assert el.get() == data_url
    assert el.url.value == ""
    assert "inline data" in el.status.value


# --- vidA content builder ---------------------------------------------------------------


def content_element() -> VidAContentElement:
    spec = fields.FieldSpec(
        name="content", wire="content", path="content", annotation=list, required=True
    )
    return VidAContentElement(spec, BuildContext(endpoint="vidA-2-0"))


IMG = {"type": "image_url", "image_url": {"url": "https://x.test/a.png"}}


@pytest.mark.parametrize(
    ("items", "scenario"),
    [
        ([{"type": "text", "text": "a"}], "text only"),
        ([{"type": "text", "text": "a"}, IMG], "first frame"),
        ([IMG | {"role": "first_frame"}], "first frame"),
        ([IMG | {"role": "first_frame"}, IMG | {"role": "last_frame"}], "first and last frame"),
        ([IMG | {"role": "reference_image"}] * 3, "reference images (3)"),
        (
            [IMG | {"role": "reference_image"}, {"type": "video_url", "video_url": {"url": "u"}}],
            "reference images (1) + video",
        ),
    ],
)
def test_content_scenario_names(items: list[dict[str, Any]], scenario: str) -> None:
    assert content_scenario(items) == scenario


def test_mixed_roles_are_named_as_not_a_scenario() -> None:
    text = content_scenario([IMG | {"role": "reference_image"}, IMG | {"role": "first_frame"}])
    assert "mixed roles" in text and "not a scenario" in text


def test_content_builder_round_trip_roles_and_scenario_line() -> None:
    el = content_element()
    assert [r.kind for r in el.rows] == ["text"]  # starts with a prompt row
    items = [
        {"type": "text", "text": "a kite at dawn"},
        {"type": "image_url", "image_url": {"url": "https://x.test/1.png"}, "role": "first_frame"},
        {"type": "image_url", "image_url": {"url": "https://x.test/2.png"}, "role": "last_frame"},
    ]
    el.set(items)
    assert el.get() == items
    assert "first and last frame" in el.scenario.value
    el.rows[2].role.value = "reference_image"  # type: ignore[union-attr]
    assert "mixed roles" in el.scenario.value
    roles = [v for _, v in el.rows[1].role.options]  # type: ignore[union-attr]
    assert roles == [None, "first_frame", "last_frame", "reference_image"]


def test_content_builder_add_remove_items_and_role_choices() -> None:
    el = content_element()
    video = el.add("video_url")
    audio = el.add("audio_url")
    assert [v for _, v in video.role.options] == [None, "reference_video"]  # type: ignore[union-attr]
    assert [v for _, v in audio.role.options] == [None, "reference_audio"]  # type: ignore[union-attr]
    audio.input.set("https://x.test/a.mp3")
    assert el.get() == [
        {"type": "video_url", "video_url": {}},
        {"type": "audio_url", "audio_url": {"url": "https://x.test/a.mp3"}},
    ]
    el.remove(video)
    assert [r.kind for r in el.rows] == ["text", "audio_url"]
    with pytest.raises(PayloadError, match="content item type"):
        el.add("hologram")


def test_content_builder_routes_item_errors_to_the_item() -> None:
    el = content_element()
    el.set([{"type": "text", "text": "x"}, IMG])
    target, rest = el.locate((1, "image_url", "image_url", "url"))
    assert target is el.rows[1].input and rest == ()
    target, _rest = el.locate(())
    assert target is el
