"""The one lookup of per-endpoint behaviour in the simulator: an endpoint's own row,
else its family's (as the catalog names it), else the default. So an endpoint that
behaves differently is one table row, and a plain endpoint needs none.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from .registry import ENDPOINTS

T = TypeVar("T")


def family_of(endpoint: str) -> str:
    """The endpoint's family in the catalog (``""`` for an endpoint it does not know)."""
    spec = ENDPOINTS.get(endpoint)
    return spec.family if spec is not None else ""


def rule_for(
    endpoint: str, by_endpoint: Mapping[str, T], by_family: Mapping[str, T], default: T
) -> T:
    """The endpoint's row, else its family's row, else ``default``."""
    if endpoint in by_endpoint:
        return by_endpoint[endpoint]
    return by_family.get(family_of(endpoint), default)
