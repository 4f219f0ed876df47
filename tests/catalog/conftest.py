"""The catalog tests' fixture: :func:`catalog_rules.check`, for a test that checks one
payload by hand (the table-driven tests are :func:`catalog_rules.table_tests`')."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest
from catalog_rules import check as _check

Check = Callable[[str, Mapping[str, Any], "str | None"], None]


@pytest.fixture
def check() -> Check:
    return _check
