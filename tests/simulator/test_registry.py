"""The simulator's endpoints are the catalog's, looked up at each request; per-endpoint
behaviour is one lookup: the endpoint's row, else its family's (read from the catalog,
so an endpoint registered at run time joins its family), else none."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import Field, field_validator

from genwidgets import catalog
from genwidgets.catalog import Endpoint, register, unregister
from genwidgets.simulator import registry
from genwidgets.simulator.registry import (
    BASE_SECONDS,
    ENDPOINTS,
    family_of,
    payload_errors,
    rule_for,
)

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


LATE_VIDA = "test-rules-late-vida"
SIMULATOR = Path(registry.__file__).parent
#: A comparison of an endpoint id with a literal: what the tables replace.
ID_BRANCH = re.compile(
    r"endpoint\s*(?:==|!=)\s*[\"']|endpoint\.startswith\(|endpoint\s+(?:not\s+)?in\s+\(\s*[\"']"
)


@pytest.fixture
def late_vida() -> Iterator[str]:
    @register(LATE_VIDA, kind="video", family="vidA", title="A vidA endpoint added at run time")
    class LateVida(Endpoint):
        prompt: str | None = None

    yield LATE_VIDA
    unregister(LATE_VIDA)


def test_the_family_is_the_catalogs() -> None:
    assert family_of("vidA-2-0-fast") == "vidA"
    assert family_of("vidP_v6_transition") == "vidP"
    assert family_of("no-such-endpoint") == ""


def test_an_endpoint_row_beats_its_family_row_which_beats_the_default(late_vida: str) -> None:
    by_endpoint = {"vidA-2-0": "own"}
    by_family = {"vidA": "family"}
    assert rule_for("vidA-2-0", by_endpoint, by_family, "default") == "own"
    assert rule_for("vidA-2-0-fast", by_endpoint, by_family, "default") == "family"
    assert rule_for(late_vida, by_endpoint, by_family, "default") == "family"
    assert rule_for("vidK-v3-turbo-t2v", by_endpoint, by_family, "default") == "default"
    assert rule_for("no-such-endpoint", by_endpoint, by_family, "default") == "default"


def test_a_falsy_row_is_still_the_endpoints_row() -> None:
    assert rule_for("vidA-2-0", {"vidA-2-0": 0}, {"vidA": 1}, 2) == 0


def test_no_simulator_module_branches_on_an_endpoint_id() -> None:
    found = [
        f"{path.name}:{number}: {line.strip()}"
        for path in sorted(SIMULATOR.glob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if ID_BRANCH.search(line)
    ]
    assert found == []


@pytest.mark.parametrize(
    "line",
    [
        'if endpoint == "vidK-lip-sync":',
        'elif task.endpoint != "asset-get":',
        'if endpoint.startswith("vidA-"):',
        'if v8 and endpoint in ("imgM-inpaint", "imgM_pan"):',
    ],
)
def test_the_scan_sees_the_branches_it_forbids(line: str) -> None:
    assert ID_BRANCH.search(line)
