"""Per-endpoint behaviour is one lookup: the endpoint's row, else its family's (read
from the catalog, so an endpoint registered at run time joins its family), else none."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from genwidgets.catalog import Endpoint, register, unregister
from genwidgets.simulator import rules
from genwidgets.simulator.rules import family_of, rule_for

LATE = "test-rules-late-vida"
SIMULATOR = Path(rules.__file__).parent
#: A comparison of an endpoint id with a literal: what the tables replace.
ID_BRANCH = re.compile(
    r"endpoint\s*(?:==|!=)\s*[\"']|endpoint\.startswith\(|endpoint\s+(?:not\s+)?in\s+\(\s*[\"']"
)


@pytest.fixture
def late_vida() -> Iterator[str]:
    @register(LATE, kind="video", family="vidA", title="A vidA endpoint added at run time")
    class LateVida(Endpoint):
        prompt: str | None = None

    yield LATE
    unregister(LATE)


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
