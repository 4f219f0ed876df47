"""A kernel of this virtual environment, registered in a throwaway Jupyter setup."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

#: Test modules here and in tests/browser import the helper under this name
#: (``--import-mode=importlib`` gives test folders no package to import from).
HELPER_MODULE = "genwidgets_test_jupyter_env"


def _load_jupyter_env() -> ModuleType:
    """Load the sibling helper by path and register it in ``sys.modules``."""
    if HELPER_MODULE in sys.modules:
        return sys.modules[HELPER_MODULE]
    path = Path(__file__).with_name("jupyter_env.py")
    spec = importlib.util.spec_from_file_location(HELPER_MODULE, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


jupyter_env = _load_jupyter_env()


@pytest.fixture(scope="module")
def jupyter_kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A kernel with no gateway configured and every user directory in a temporary
    folder (see ``jupyter_env.isolated_kernel``)."""
    with jupyter_env.isolated_kernel(tmp_path_factory.mktemp("jupyter")) as name:
        yield name
