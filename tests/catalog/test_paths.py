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
