"""Fixtures of the first-hour suite: a fresh, isolated kernel setup per module
(no gateway configured: the embedded simulator answers) and one chromium."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import jupyter_env  # tests/jupyter_env.py (tests/ is on pytest's pythonpath)
import pytest


@pytest.fixture(scope="module")
def jupyter_kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A kernel of this virtual environment with every user directory in a temporary
    folder, its embedded simulator at the lessons' speed (the browser tests, which click
    while a task runs, keep demo speed); nbclient starts a fresh one for each notebook
    it runs."""
    root = tmp_path_factory.mktemp("jupyter")
    with jupyter_env.isolated_kernel(root, sim_speed=jupyter_env.LESSON_SIM_SPEED) as name:
        yield name


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """A headless chromium (Playwright's sync API), closed at module end."""
    from browser.frontend import launch_chromium

    with launch_chromium() as chromium:
        yield chromium
