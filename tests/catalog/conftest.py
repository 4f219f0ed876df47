"""Helpers for the catalog's table-driven rule tests."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from genwidgets.catalog import payload_of, validate
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


Warns = Callable[[str, Mapping[str, Any], "type[Warning]", str], None]
Sends = Callable[[str, Mapping[str, Any], str, Any], None]


def _warns(
    endpoint_id: str, payload: Mapping[str, Any], category: type[Warning], match: str
) -> None:
    """The payload is valid and draws a warning of ``category`` matching ``match``."""
    with pytest.warns(category, match=match):
        validate(endpoint_id, payload)


def _sends(endpoint_id: str, payload: Mapping[str, Any], field: str, sent: Any) -> None:
    """The body sends ``field`` as ``sent``, of the same type (``5`` is not ``"5"``)."""
    body = payload_of(endpoint_id, payload)
    assert body[field] == sent and type(body[field]) is type(sent)


@pytest.fixture
def warns() -> Warns:
    return _warns


@pytest.fixture
def sends() -> Sends:
    return _sends
