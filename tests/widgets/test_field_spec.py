"""What a form reads from a model field: documented defaults, limits, markers, item specs."""

from __future__ import annotations

from typing import Annotated

import pytest
from pydantic import BaseModel, Field
from widgets.field_samples import Sample

from genwidgets.catalog import MediaSpec
from genwidgets.widgets.field_spec import default_from_description, field_specs, item_spec


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
