"""Helpers for the catalog's table-driven rule tests."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from genwidgets.catalog import validate
from genwidgets.errors import PayloadError

Check = Callable[[str, Mapping[str, Any], "str | None"], None]


def _check(endpoint_id: str, payload: Mapping[str, Any], error: str | None) -> None:
    """``error=None``: the payload validates with no warning at all. Otherwise a
    PayloadError is raised and one of its messages contains ``error``."""
    if error is None:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            validate(endpoint_id, payload)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(PayloadError) as info:
            validate(endpoint_id, payload)
    messages = [e["msg"] for e in info.value.errors]
    assert any(error in m for m in messages), messages


@pytest.fixture
def check() -> Check:
    return _check
