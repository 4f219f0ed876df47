"""The catalog's table-driven tests, written once: a family's test module lists its rows
and takes its tests from :func:`table_tests` (the catalog's conftest lends :func:`check`
to the tests that check one payload by hand)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest

from genwidgets.catalog import payload_of, validate
from genwidgets.errors import PayloadError

#: endpoint, payload, and words of one of its errors (None: valid, and no warning at all)
Case = tuple[str, Mapping[str, Any], "str | None"]
#: endpoint, a valid payload, the warning's class and words
Warned = tuple[str, Mapping[str, Any], type[Warning], str]
#: endpoint, payload, a field and what the body sends for it (of that very type)
Sent = tuple[str, Mapping[str, Any], str, Any]


def check(endpoint_id: str, payload: Mapping[str, Any], error: str | None) -> None:
    """``error=None``: the payload validates with no warning at all. Otherwise a
    PayloadError is raised and one of its messages contains ``error``."""
    if error is None:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            validate(endpoint_id, payload)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(PayloadError) as info:
            validate(endpoint_id, payload)
    messages = [e["msg"] for e in info.value.errors]
    assert any(error in m for m in messages), messages


def table_tests(
    cases: Sequence[Case], warned: Sequence[Warned] = (), slips: Sequence[Sent] = ()
) -> tuple[Callable[..., None], Callable[..., None], Callable[..., None]]:
    """The three table tests of a family, each run once per row: its rules (``cases``),
    its advisory warnings (``warned``) and the slips it normalises (``slips``)."""

    @pytest.mark.parametrize(("endpoint_id", "payload", "error"), cases)
    def test_rules(endpoint_id: str, payload: Mapping[str, Any], error: str | None) -> None:
        check(endpoint_id, payload, error)

    @pytest.mark.parametrize(("endpoint_id", "payload", "category", "warning"), warned)
    def test_advisory_warnings(
        endpoint_id: str, payload: Mapping[str, Any], category: type[Warning], warning: str
    ) -> None:
        with pytest.warns(category, match=warning):
            validate(endpoint_id, payload)

    @pytest.mark.parametrize(("endpoint_id", "payload", "field", "sent"), slips)
    def test_slips_are_normalised(
        endpoint_id: str, payload: Mapping[str, Any], field: str, sent: Any
    ) -> None:
        body = payload_of(endpoint_id, payload)
        assert body[field] == sent and type(body[field]) is type(sent)

    return test_rules, test_advisory_warnings, test_slips_are_normalised
