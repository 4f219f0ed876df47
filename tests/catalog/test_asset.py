"""Asset operations: asset-get and the referenced creation operations."""

from __future__ import annotations

from typing import Any

import pytest
from catalog_rules import table_tests

CASES: list[tuple[str, dict[str, Any], str | None]] = [
    ("asset-get", {"Id": "asset-1"}, None),
    ("asset-get", {"Id": "asset-1", "ProjectName": "default"}, None),
    ("asset-get", {}, "Field required"),
    ("asset-get", {"Id": ""}, "at least 1 character"),
    ("asset-get", {"Id": 5}, "expected a text of at least 1 character; got 5"),
    ("asset-group-create", {"Name": "group"}, None),
    ("asset-group-create", {"ProjectName": "p"}, "Field required"),
    ("asset-create", {"GroupId": "g", "URL": "https://x/a.png", "AssetType": "Image"}, None),
    ("asset-create", {"GroupId": "g"}, "Field required"),
]

test_asset_rules, *_ = table_tests(CASES)


def test_did_you_mean_for_pascal_case_fields() -> None:
    from genwidgets.catalog import UnknownFieldWarning, validate

    with pytest.warns(UnknownFieldWarning, match="did you mean 'ProjectName'"):
        validate("asset-get", {"Id": "a", "projectname": "p"})
