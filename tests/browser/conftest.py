"""Fixtures of the browser tests: one chromium per module (see :mod:`frontend`).

The servers are module-scoped fixtures of each test file (one server per
front-end per session), started through :func:`frontend.serve`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from browser.frontend import launch_chromium


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """A headless chromium (Playwright's sync API), closed at module end."""
    with launch_chromium() as chromium:
        yield chromium
