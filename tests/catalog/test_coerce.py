"""Value normalisers the families share."""

from __future__ import annotations

import pytest

from genwidgets.catalog.coerce import normalise_size, one_to_list, parse_size


def test_size_helpers() -> None:
    assert parse_size("1280*720") == (1280, 720)
    assert normalise_size(5) == 5
    assert normalise_size("12 x 34") == "12*34"
    with pytest.raises(ValueError, match="width\\*height"):
        parse_size("1280-720")


def test_one_string_becomes_a_list_and_anything_else_passes() -> None:
    assert one_to_list("a") == ["a"]
    assert one_to_list(["a"]) == ["a"]
    assert one_to_list(None) is None
