"""Permutations are counted as a product of group sizes and made one at a time:
no method of a prompt makes more than the cap's worth of expansions, however
many the prompt describes (speed: ``benchmarks/prompt.py``)."""

from __future__ import annotations

import pytest

import genwidgets as gw
from genwidgets.imgm import MAX_PROMPTS, Prompt, plain_text, say_count

HUGE = "{a,b}" * 14300  # 2**14300 prompts: far more digits than int() may print


@pytest.mark.timeout(60)
def test_a_huge_count_is_counted_and_refused_with_its_size() -> None:
    p = Prompt.parse(HUGE)
    assert p.count() == 2**14300
    errors = p.errors()
    assert len(errors) == 1
    assert "more than 10^" in errors[0]["msg"] and f"at most {MAX_PROMPTS}" in errors[0]["msg"]
    with pytest.raises(gw.PayloadError, match="more than 10\\^"):
        p.expand()


@pytest.mark.timeout(60)
def test_repeats_over_a_huge_permutation_are_never_expanded() -> None:
    p = Prompt.parse("cat --repeat " + "{1,2}" * 25)
    assert p.count() == 2**25
    assert p.jobs() == 2**25  # above the cap nothing is sent: each prompt counts once
    assert p.repeats() == [1]
    assert p.warnings() == []
    with pytest.raises(gw.PayloadError, match="makes 33554432 prompts"):
        p.validate()


@pytest.mark.timeout(60)
def test_expanding_above_the_cap_is_an_error_not_a_wait() -> None:
    p = Prompt.parse("{a,b} " * 24)
    with pytest.raises(gw.PayloadError, match="makes 16777216 prompts"):
        p.expand()


def test_expansions_come_in_product_order_with_nested_groups() -> None:
    p = Prompt.parse("A {sculpture, painting} of a {seagull {on a pier, on a beach}, poodle}")
    assert p.count() == 6
    assert p.expand() == [
        "A sculpture of a seagull on a pier",
        "A sculpture of a seagull on a beach",
        "A sculpture of a poodle",
        "A painting of a seagull on a pier",
        "A painting of a seagull on a beach",
        "A painting of a poodle",
    ]


def test_at_the_cap_every_expansion_is_made() -> None:
    p = Prompt.parse("x {1,2,3,4,5} {a,b,c,d,e,f,g,h}")
    assert p.count() == MAX_PROMPTS == len(set(p.expand()))


def test_plain_text_resolves_every_escape_for_people() -> None:
    assert plain_text("a pastel\\, yellow \\{bird\\}") == "a pastel, yellow {bird}"


@pytest.mark.parametrize(
    ("n", "text"), [(40, "40"), (10**17, str(10**17)), (2**100, "more than 10^29")]
)
def test_say_count_writes_any_count(n: int, text: str) -> None:
    assert say_count(n) == text
