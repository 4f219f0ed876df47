"""Markers: the service's defaults are values in the model, each one a value its
field accepts, and the one place a default lives (no prose copy in descriptions)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from pydantic import BaseModel, Field, TypeAdapter

import genwidgets as gw
from genwidgets.catalog import NO_DEFAULT, is_generations, payload_of, service_default
from genwidgets.catalog.introspect import leaves, limits_of
from genwidgets.errors import PayloadError


def _fields(model: type[BaseModel]) -> list[tuple[type[BaseModel], str, Any]]:
    found = []
    for name, info in model.model_fields.items():
        found.append((model, name, info))
        for leaf in leaves(info.annotation):
            if isinstance(leaf, type) and issubclass(leaf, BaseModel):
                found.extend(_fields(leaf))
    return found


ALL_FIELDS = [
    (spec.id, model, name, info)
    for spec in gw.endpoints(documented_only=False)
    for model, name, info in _fields(spec.model)
]
DEFAULTED = [f for f in ALL_FIELDS if service_default(f[3]) is not NO_DEFAULT]


def test_the_documented_defaults_are_values_in_the_model() -> None:
    found = {(e, n): service_default(i) for e, _, n, i in DEFAULTED}
    assert found[("genW2.5-t2i-preview", "n")] == 4
    assert found[("vidVq2-text2video", "duration")] == 5
    assert found[("vidA-2-0", "resolution")] == "720p"
    assert found[("genW2.5-t2i-preview", "prompt_extend")] is True
    assert len(DEFAULTED) >= 60


@pytest.mark.parametrize(("endpoint", "model", "name", "info"), DEFAULTED)
def test_each_service_default_is_a_value_its_field_accepts(
    endpoint: str, model: type[BaseModel], name: str, info: Any
) -> None:
    value = service_default(info)
    checked = TypeAdapter(info.annotation).validate_python(value)
    assert checked == value, (endpoint, name)
    low = next((m.ge for m in info.metadata if hasattr(m, "ge")), None)
    high = next((m.le for m in info.metadata if hasattr(m, "le")), None)
    assert low is None or value >= low
    assert high is None or value <= high


SEEDS = [f for f in ALL_FIELDS if f[2] == "seed"]


@pytest.mark.parametrize(("endpoint", "model", "name", "info"), SEEDS)
def test_every_seed_is_bounded_whole_and_never_negative(
    endpoint: str, model: type[BaseModel], name: str, info: Any
) -> None:
    """A seed past any range (-1, 2**63, 10**400) is refused before it is sent; where
    the spec states no range (vidV) a 32-bit unsigned one applies."""
    limits = limits_of(info.metadata)
    assert limits.ge == 0 and limits.le in (2**31 - 1, 2**32 - 1), (endpoint, limits)


def test_the_seeds_without_a_range_in_the_spec_share_one() -> None:
    unstated = {e: limits_of(i.metadata).le for e, _, _, i in SEEDS if e.startswith("vidVq")}
    assert unstated == {"vidVq2-text2video": 2**32 - 1, "vidVq1-text2video": 2**32 - 1}
    assert len(SEEDS) >= 7


@pytest.mark.parametrize(("endpoint", "model", "name", "info"), ALL_FIELDS)
def test_no_description_restates_a_default_as_prose(
    endpoint: str, model: type[BaseModel], name: str, info: Any
) -> None:
    prose = re.search(r"\bDefault(?:s to|:| is)?\s+`?[\w.*:]+`?[.;]", info.description or "")
    assert prose is None or prose.group(0) in {"Default null.", "Default not shown."}, (
        endpoint,
        name,
        info.description,
    )


def _restated_range(info: Any) -> bool:
    """Whether the description writes both bounds of the field's own ``ge``/``le``."""
    limits = limits_of(info.metadata)
    low = limits.ge if limits.ge is not None else limits.gt
    high = limits.le if limits.le is not None else limits.lt
    if low is None or high is None:
        return False
    words = set(re.findall(r"\d+(?:\.\d+)?", info.description or ""))  # "0-3": 0 and 3

    def written(bound: float) -> bool:
        return bool({str(abs(bound)), f"{abs(bound):g}"} & words)

    return written(low) and written(high)


def test_no_description_restates_a_range_its_constraints_hold() -> None:
    """The form shows the range from ``ge``/``le``; a number written again in the text
    is a second home that drifts (docs/decisions.md#one-home)."""
    restated = [(e, n, i.description) for e, _, n, i in ALL_FIELDS if _restated_range(i)]
    assert restated == []
    assert _restated_range(Field(None, ge=0, le=3, description="One of 0-3."))
    assert not _restated_range(Field(None, ge=0, le=3, description="Which image."))


def test_the_generations_field_is_marked_where_a_task_makes_several_outputs() -> None:
    marked = {e for e, _, n, i in ALL_FIELDS if is_generations(i)}
    assert marked == {"genW2.5-t2i-preview", "imgG-1.5-edit", "imgQ-edit-plus"}
    spec = gw.endpoint("genW2.5-t2i-preview")
    assert spec.generations({"prompt": "x"}) == 4  # the service's default
    assert spec.generations({"prompt": "x", "n": 1}) == 1
    assert gw.endpoint("vidVq2-text2video").generations({"prompt": "x"}) == 1


def test_a_whole_float_counts_its_generations_as_the_number_it_is() -> None:
    """A batch row from pandas or CSV gives ``n`` as 2.0, which pydantic reads as 2: its
    plan and budget count two images, not one (a cap compared with half the cost)."""
    spec = gw.endpoint("genW2.5-t2i-preview")
    assert spec.generations({"prompt": "x", "n": 2.0}) == 2
    assert spec.generations({"prompt": "x", "n": 2.5}) == 1  # refused by the check anyway


@pytest.mark.parametrize("text", ["4", "4.0", " 4 ", "+4", "04", "\t4\n"])
def test_a_generations_field_given_as_text_counts_what_it_sends(text: str) -> None:
    """A CSV cell or a form box gives ``n`` as ``"4"``: the check sends 4, so 4 are
    billed, never 1 (a grid's confirmation would compare a quarter of its cost)."""
    spec = gw.endpoint("genW2.5-t2i-preview")
    payload = {"prompt": "x", "n": text}
    assert payload_of(spec.id, payload)["n"] == 4
    assert spec.generations(payload) == 4


@pytest.mark.parametrize("text", ["4.5", "4e0", "4_0", "four", ""])
def test_generations_text_the_check_refuses_counts_one(text: str) -> None:
    """Text that is no whole number is refused before anything is sent: it counts 1."""
    spec = gw.endpoint("genW2.5-t2i-preview")
    with pytest.raises(PayloadError):
        payload_of(spec.id, {"prompt": "x", "n": text})
    assert spec.generations({"prompt": "x", "n": text}) == 1
