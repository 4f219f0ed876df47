"""What a form reads from a model field: documented defaults, limits, markers, item specs."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field
from widgets.field_samples import Sample

from genwidgets.catalog import MediaSpec, ServiceDefault
from genwidgets.widgets.field_spec import field_specs, item_spec


def test_the_default_shown_is_the_service_default_marker_never_prose() -> None:
    class Prose(BaseModel):
        said: int | None = Field(None, description="Seconds, default 5.")
        marked: Annotated[bool | None, ServiceDefault(True)] = Field(None, description="On.")
        real: str = "x"

    specs = {s.wire: s for s in field_specs(Prose)}
    assert specs["said"].default_text == ""  # prose is documentation, not a value
    assert specs["marked"].default_text == "true"
    assert specs["real"].default_text == "x" and specs["real"].default == "x"


def test_every_catalog_default_reaches_the_form() -> None:
    import genwidgets as gw

    specs = {s.wire: s for s in field_specs(gw.endpoint("genW2.5-t2i-preview").model)}
    assert specs["n"].default_text == "4" and specs["n"].billed
    assert specs["prompt_extend"].default_text == "true"
    assert specs["size"].default_text == "1280*1280"


def test_specs_read_limits_markers_and_defaults_once_per_model() -> None:
    specs = {s.wire: s for s in field_specs(Sample)}
    assert field_specs(Sample) is field_specs(Sample)  # cached: a second form reads nothing
    assert (specs["count"].ge, specs["count"].le, specs["count"].bounded) == (1, 10, True)
    assert specs["count"].default_text == "4" and specs["count"].limits_text() == "1 – 10"
    assert specs["seed"].annotation is int and not specs["seed"].bounded
    assert specs["cost"].billed and specs["imgm_prompt"].prompt
    assert specs["prompt"].required and not specs["name"].required


def test_list_items_take_the_lists_media_marker() -> None:
    image = MediaSpec(media="image", encoding="url_or_data")

    class M(BaseModel):
        images: Annotated[list[str], image] = Field(min_length=1)

    (parent,) = field_specs(M)
    item = item_spec(parent)
    assert item.path == "images[]" and item.media is image and item.required
    assert item.annotation is str and item.wire == ""
