"""The teaching notebooks' runs, made once for every test that reads them."""

from __future__ import annotations

from collections.abc import Iterator

import jupyter_env  # tests/jupyter_env.py (tests/ is on pytest's pythonpath)
import pytest


@pytest.fixture(scope="session")
def lessons(tmp_path_factory: pytest.TempPathFactory) -> Iterator[jupyter_env.Lessons]:
    """Each lesson's first Run All, its second in the same kernel and one after a
    restart, all in one fresh home of its own with every user directory in a temporary
    folder and no gateway configured (``jupyter_env.isolated_kernel``), each run made
    when a test first asks for it (see ``jupyter_env.Lessons``)."""
    runs = jupyter_env.Lessons(tmp_path_factory.mktemp)
    yield runs
    runs.close()
