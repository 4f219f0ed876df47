"""pyproject's extras: the ``frontends`` extra the README names, and ``test`` covering it."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]


def _extras() -> dict[str, list[str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras: dict[str, list[str]] = project["optional-dependencies"]
    return extras


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0].lower() for r in requirements}


def test_frontends_extra_installs_every_front_end_the_readme_lists() -> None:
    assert _names(_extras()["frontends"]) == {"jupyterlab", "notebook", "voila", "marimo"}


def test_test_extra_installs_the_front_ends_too() -> None:
    extras = _extras()
    assert _names(extras["frontends"]) <= _names(extras["test"])


def test_readme_says_where_the_front_ends_come_from() -> None:
    readme = (ROOT / "README.md").read_text()
    quickstart = readme.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    where = readme.split("## Where it runs", 1)[1].split("\n## ", 1)[0]
    for section in (quickstart, where):
        assert 'pip install ".[frontends]"' in section  # a wheel: the server extension on


def test_test_extra_installs_the_serve_extra_too() -> None:
    """The class gateway's PostgreSQL tests need its driver wherever the tests run."""
    extras = _extras()
    assert _names(extras["serve"]) == {"psycopg"}
    assert _names(extras["serve"]) <= _names(extras["test"])
