"""A kernel of this virtual environment, registered in a throwaway Jupyter setup."""

from __future__ import annotations

from collections.abc import Iterator

import jupyter_env  # tests/jupyter_env.py (tests/ is on pytest's pythonpath)
import pytest


@pytest.fixture(scope="module")
def jupyter_kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A kernel with no gateway configured and every user directory in a temporary
    folder (see ``jupyter_env.isolated_kernel``)."""
    with jupyter_env.isolated_kernel(tmp_path_factory.mktemp("jupyter")) as name:
        yield name
