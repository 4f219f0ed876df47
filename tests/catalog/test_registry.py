"""The registry: looking endpoints up, and adding one at run time."""

from __future__ import annotations

import pytest

import genwidgets.catalog as catalog
from genwidgets.errors import PayloadError


def test_unknown_endpoint_is_a_payload_error_with_a_suggestion() -> None:
    with pytest.raises(PayloadError, match="did you mean 'vidA-2-0'"):
        catalog.validate("vidA-2.0", {})
