"""Soft findings: warnings a user sees, or that a collector gathers instead."""

from __future__ import annotations

import warnings

import pytest

from genwidgets.catalog import (
    DeprecatedFieldWarning,
    IneffectiveFieldWarning,
    collect_warnings,
    validate,
)


def test_warnings_are_user_warnings_not_deprecation_warnings() -> None:
    assert issubclass(DeprecatedFieldWarning, UserWarning)
    assert not issubclass(DeprecatedFieldWarning, DeprecationWarning)


def test_collected_findings_are_not_warned() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with collect_warnings() as found:
            validate("vidVq2-text2video", {"prompt": "x", "off_peak": True})
    assert [category for _, category in found] == [IneffectiveFieldWarning]
    with pytest.warns(IneffectiveFieldWarning, match="currently unavailable"):
        validate("vidVq2-text2video", {"prompt": "x", "off_peak": True})
