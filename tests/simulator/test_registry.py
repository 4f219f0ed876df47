"""The simulator's endpoints are the catalog's, looked up at each request."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pydantic import Field, field_validator

from genwidgets import catalog
from genwidgets.catalog import Endpoint, register
from genwidgets.simulator.registry import BASE_SECONDS, ENDPOINTS, payload_errors

LATE = "test-late-speech"


class LateSpeech(Endpoint):
    """Speech registered while the simulator runs."""

    text: str = Field(min_length=1, description="What to say.")

    @field_validator("text")
    @classmethod
    def _no_crash(cls, value: str) -> str:
        if value == "crash":
            raise TypeError("a validator that breaks")  # pydantic passes TypeError through
        return value


@pytest.fixture
def late() -> Iterator[None]:
    register(LATE, kind="speech", family="late", title="Late speech")(LateSpeech)
    yield
    catalog.unregister(LATE)


def test_every_kind_the_catalog_allows_has_a_run_time() -> None:
    assert set(BASE_SECONDS) == set(catalog.KINDS)


def test_the_table_is_the_catalog() -> None:
    assert list(ENDPOINTS) == [s.id for s in catalog.endpoints(documented_only=False)]
    assert len(ENDPOINTS) == len(list(ENDPOINTS))
    assert ENDPOINTS["asset-get"].kind == "asset" and "vidA-2.0" not in ENDPOINTS


def test_an_endpoint_registered_later_is_served_and_checked(late: None) -> None:
    assert ENDPOINTS[LATE].kind == "speech"
    assert payload_errors(LATE, {"text": "hello", "unknown": 1}) == []  # unknown fields pass
    errors = payload_errors(LATE, {"text": ""})
    assert [e["loc"] for e in errors] == [("text",)]
    assert payload_errors(LATE, {"text": "crash"}) == [
        {"loc": (), "msg": "the payload could not be checked: a validator that breaks"}
    ]


def test_an_unregistered_endpoint_is_gone_at_once(late: None) -> None:
    catalog.unregister(LATE)
    assert LATE not in ENDPOINTS
    register(LATE, kind="speech", family="late", title="Late speech")(LateSpeech)
    assert LATE in ENDPOINTS
