"""The documented imgM prompt language, one test per documented example.

Permutations of parameters, escapes, the 40-prompt cap, ``::`` weights,
weighted references and parameters outside the gateway's table (see
``shared/notes/prompt-lab.md``, "The imgM prompt language").
"""

from __future__ import annotations

import pytest

import genwidgets as gw
from genwidgets.imgm import MAX_PROMPTS, Prompt, Reference, Segment, Variation


def parse(s: str) -> Prompt:
    return Prompt.parse(s)


def messages(p: Prompt) -> list[str]:
    return [e["msg"] for e in p.errors()]


def assert_round_trip(p: Prompt) -> None:
    again = parse(str(p))
    assert again == p
    assert str(again) == str(p)


# ------------------------------------------------------------------ permutations


@pytest.mark.parametrize(
    ("s", "expected"),
    [
        ("a bird --{v 5, niji}", ["a bird --v 5", "a bird --niji"]),
        ("a bird --ar {3:2, 1:1}", ["a bird --ar 3:2", "a bird --ar 1:1"]),
        (
            "A {sculpture, painting} of a {seagull {on a pier, on a beach}, poodle}",
            [
                "A sculpture of a seagull on a pier",
                "A sculpture of a seagull on a beach",
                "A sculpture of a poodle",
                "A painting of a seagull on a pier",
                "A painting of a seagull on a beach",
                "A painting of a poodle",
            ],
        ),
        ("photo {, --tile}", ["photo", "photo --tile"]),
        ("a bird --{v 8.1, draft}", ["a bird --v 8.1", "a bird --draft"]),
        ("cat --ar 16:9 {, --tile}", ["cat --ar 16:9", "cat --ar 16:9 --tile"]),
        ("cat --ar {16:9, 1:1 --tile}", ["cat --ar 16:9", "cat --ar 1:1 --tile"]),
    ],
)
def test_documented_permutations_expand(s: str, expected: list[str]) -> None:
    p = parse(s)
    assert p.expand() == expected
    assert p.count() == len(expected)
    assert_round_trip(p)


def test_a_permutation_of_parameters_is_kept_in_its_place() -> None:
    p = parse("photo {, --tile} --ar 16:9")
    assert p.text == "photo"
    assert p.params == {"{, --tile}": Variation("{, --tile}"), "ar": "16:9"}
    assert str(p) == "photo {, --tile} --ar 16:9"
    assert p.varies_parameters
    assert not parse("photo {a, b} --ar {1:1, 2:1}").varies_parameters


def test_a_prompt_with_parameters_inside_braces_is_no_longer_refused() -> None:
    p = parse("{cat --ar 1:1, dog}")
    assert p.expand() == ["cat --ar 1:1", "dog"]
    assert p.errors() == []


def test_every_expansion_is_validated_and_named() -> None:
    p = parse("a bird --{v 8.1, seed abc}")
    found = messages(p)
    assert len(found) == 1
    assert "in prompt 2 of 2 ('a bird --seed abc')" in found[0]
    assert "0-4294967295" in found[0]
    with pytest.raises(gw.PayloadError, match="a bird --seed abc"):
        p.validate()
    parse("a bird --{v 8.1, draft}").validate()


def test_an_expansion_that_does_not_parse_is_reported_with_it() -> None:
    p = parse("{red bird, blue --tile} bird")
    found = messages(p)
    assert any("'blue --tile bird'" in m and "text after the parameters" in m for m in found)


def test_warnings_come_from_every_expansion() -> None:
    warnings = parse("a bird --{v 5, v 8.1}").warnings()
    assert any("in prompt 1 of 2" in w and "8.1" in w for w in warnings)
    assert not any("in prompt 2" in w for w in warnings)


def test_a_repeat_inside_one_option_multiplies_that_option_only() -> None:
    p = parse("cat {, --r 3}")
    assert p.repeats() == [1, 3]
    assert (p.count(), p.jobs()) == (2, 4)
    assert parse("cat {a, b} {, --repeat 2}").jobs() == 1 + 2 + 1 + 2
    assert parse("cat --{r 2, tile} --ar 1:1").jobs() == 3


# ------------------------------------------------------------------ escapes


def test_documented_escaped_comma() -> None:
    p = parse("a {red, pastel \\, yellow} bird")
    assert p.expand() == ["a red bird", "a pastel, yellow bird"]
    assert_round_trip(p)


@pytest.mark.parametrize(
    ("s", "plain", "sent"),
    [
        ("a \\{red, blue\\} bird", ["a {red, blue} bird"], ["a \\{red, blue\\} bird"]),
        ("a {x\\,y, z}", ["a x,y", "a z"], ["a x,y", "a z"]),
        ("salt\\, pepper", ["salt, pepper"], ["salt, pepper"]),
        (
            "a back\\\\slash {x, y}",
            ["a back\\slash x", "a back\\slash y"],
            ["a back\\\\slash x", "a back\\\\slash y"],
        ),
        ("a {\\{1\\}, 2}", ["a {1}", "a 2"], ["a \\{1\\}", "a 2"]),
        ("end\\", ["end"], ["end"]),
        ("https://a.com/x\\y.png cat", ["https://a.com/x\\y.png cat"], None),
    ],
)
def test_an_expansion_is_one_prompt_to_send_and_reads_plain(
    s: str, plain: list[str], sent: list[str] | None
) -> None:
    p = parse(s)
    assert p.expand("plain") == plain
    assert p.expand() == (sent or plain)
    # the gateway expands braces itself: what is sent must make exactly one prompt
    assert all(parse(e).count() == 1 for e in p.expand())
    assert p.count() == len(plain)
    assert_round_trip(p)


def test_escaped_braces_make_no_permutation() -> None:
    p = parse("a \\{red, blue\\} bird --ar 1:1")
    assert p.count() == 1
    assert p.text == "a \\{red, blue\\} bird"
    assert str(p) == "a \\{red, blue\\} bird --ar 1:1"


# ------------------------------------------------------------------ the cap


def test_more_than_forty_prompts_is_an_error_naming_the_count() -> None:
    p = parse("cat {a, b, c, d, e, f, g} {1, 2, 3, 4, 5, 6}")
    assert p.count() == 42
    with pytest.raises(gw.PayloadError) as info:
        p.validate()
    assert any(
        "42 prompts" in m and f"at most {MAX_PROMPTS}" in m
        for m in info.value.messages_for(("text",))
    )
    parse("cat {a, b, c, d, e, f, g, h} {1, 2, 3, 4, 5}").validate()  # exactly 40


def test_the_cap_counts_parameter_permutations_too() -> None:
    p = parse("cat {a, b, c, d, e, f, g} --{ar 1:1, ar 2:1, tile, draft, fast, relax}")
    assert p.count() == 42
    assert any("42 prompts" in m for m in messages(p))


# ------------------------------------------------------------------ weights


def test_documented_weights() -> None:
    assert parse("hot::2 dog").segments == [Segment("hot", 2), Segment("dog", None)]
    assert parse("cup::2 cake").segments == [Segment("cup", 2), Segment("cake", None)]
    assert parse("cup::4 cake::2").segments == [Segment("cup", 4), Segment("cake", 2)]
    assert parse("still life::1 fruit::-.5").segments[1] == Segment("fruit", -0.5)
    parse("still life::1 fruit::-.5").validate()


def test_weights_must_sum_positive_and_the_error_names_the_sum() -> None:
    found = messages(parse("cat::1 dog::-1.5"))
    assert any("add up to -0.5" in m and "positive" in m for m in found)
    # --no red is the same as red::-.5
    assert any("add up to 0" in m for m in messages(parse("cat::.5 --no red")))
    parse("cat::.6 --no red").validate()


def test_weights_with_a_version_after_6_1_are_a_warning() -> None:
    assert any("up to 6.1" in w for w in parse("hot::2 dog --v 7").warnings())
    assert any("up to 6.1" in w for w in parse("hot:: dog --v 8.1").warnings())
    assert not any("up to 6.1" in w for w in parse("hot::2 dog --v 6.1").warnings())
    assert not any("up to 6.1" in w for w in parse("hot dog --v 8.1").warnings())


def test_no_takes_a_spaced_list() -> None:
    p = parse("a garden --no item1, item2, item3 --ar 1:1")
    assert p.params == {"no": ["item1", "item2", "item3"], "ar": "1:1"}
    assert str(p) == "a garden --no item1, item2, item3 --ar 1:1"


# ------------------------------------------------------------------ references


def test_documented_weighted_style_references() -> None:
    p = parse("a cat --sref https://a.com/1.png::2 https://a.com/2.png::1 random")
    assert p.params["sref"] == [
        Reference("https://a.com/1.png", 2),
        Reference("https://a.com/2.png", 1),
        Reference("random"),
    ]
    assert_round_trip(p)
    p.validate()
    parse("a cat --sref random").validate()


def test_oref_takes_exactly_one_image() -> None:
    parse("a cat --oref https://a.com/1.png").validate()
    found = messages(parse("a cat --oref https://a.com/1.png https://a.com/2.png"))
    assert any("exactly one" in m for m in found)


# ------------------------------------------------------------------ outside the table


@pytest.mark.parametrize(
    "s",
    [
        "a cat --p",
        "a cat --p abc123",
        "a cat --p abc123 def456 --ar 1:1",
        "a cat --niji 6 --ar 1:1",
        "a cat --video --ar 1:1",
        "a cat --ar 1:1 --p x --s 10",
    ],
)
def test_unknown_parameters_stay_verbatim_in_place(s: str) -> None:
    p = parse(s)
    assert str(p) == s
    assert_round_trip(p)
    unknown = [k for k in p.params if k in ("p", "niji", "video")]
    assert unknown
    for key in unknown:
        problems = [e["msg"] for e in p.errors() if e["loc"] == ("params", key)]
        assert problems and "unknown parameter" in problems[0] and "kept as written" in problems[0]


def test_unknown_parameters_suggest_the_closest_name() -> None:
    found = messages(parse("cat --stylise 50 --chaoss 5"))
    assert any("--stylise" in m and "did you mean --stylize" in m for m in found)
    assert any("--chaoss" in m and "did you mean --chaos" in m for m in found)


def test_a_parameter_permutation_after_a_list_stays_its_own_entry() -> None:
    p = parse("cat --no dogs {, --tile} --seed 1")
    assert p.params["no"] == ["dogs"]
    assert "{, --tile}" in p.params
    q = parse("cat --seed 1 --no {, --tile}").with_params(seed=None)  # nothing is absorbed
    assert str(q) == "cat --no {, --tile}"
    kept = parse("cat --no a, {b, c --tile}")
    assert kept.params["no"] == "a,"  # the comma before the permutation stays
    assert kept.expand() == ["cat --no a, b", "cat --no a, c --tile"]
    assert_round_trip(kept)


def test_a_problem_of_several_expansions_is_listed_once_with_them() -> None:
    p = parse("a {cat, dog} --{v 7, draft}")
    warnings = [w for w in p.warnings() if "8.1" in w]
    assert len(warnings) == 1
    assert "in prompts 1, 3 of 4" in warnings[0]


def test_permutation_spans_are_read_like_the_parser() -> None:
    from genwidgets.imgm import permutation_spans

    s = "a {red, {dark, light} blue} \\{not\\} https://x.com/{y} kite --ar {1:1, 2:1}"
    spans = permutation_spans(s)
    assert [s[a:b] for a, b in spans] == ["{red, {dark, light} blue}", "{1:1, 2:1}"]
    with pytest.raises(gw.PayloadError, match="never closed"):
        permutation_spans("a {b")
