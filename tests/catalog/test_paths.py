"""Walking a model along a payload path."""

from __future__ import annotations

import genwidgets.catalog as catalog
from genwidgets.catalog import field_info_at, media_spec_at


def test_fields_without_media_have_no_media_spec() -> None:
    model = catalog.endpoint("vidA-2-0").model
    assert media_spec_at(model, ("duration",)) is None
    assert media_spec_at(model, ("content", 0, "text")) is None
    assert media_spec_at(model, ("nonexistent", 0)) is None
    assert field_info_at(model, ()) is None


def test_a_list_of_media_strings_has_its_items_spec() -> None:
    """A list says its spec once, on its items: the field's spec is theirs."""
    from genwidgets.catalog.vidv import VIDV_IMAGE

    info = catalog.endpoint("vidV-create-subjects").field("images")
    assert info is not None
    assert catalog.media_spec(info) is VIDV_IMAGE
    assert catalog.media_specs(info) == [VIDV_IMAGE]
    assert (
        media_spec_at(catalog.endpoint("vidV-create-subjects").model, ("images", 0)) is VIDV_IMAGE
    )
