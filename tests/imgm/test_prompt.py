"""Prompt: parsing, building, permutations and the rules of the spec's table."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

import genwidgets as gw
from genwidgets.imgm import Prompt, Reference, Segment


def parse(s: str) -> Prompt:
    return Prompt.parse(s)


def error_messages(p: Prompt) -> list[str]:
    with pytest.raises(gw.PayloadError) as info:
        p.validate()
    return [e["msg"] for e in info.value.errors]


def locs(error: gw.PayloadError) -> list[tuple[Any, ...]]:
    return [e["loc"] for e in error.errors]


# ------------------------------------------------------------------ the midjargon failures


def test_no_list_then_another_parameter_keeps_both() -> None:
    p = parse("cat --no cars, trees --ar 16:9")
    assert p.text == "cat"
    assert p.params == {"no": ["cars", "trees"], "ar": "16:9"}
    assert parse(str(p)) == p


def test_url_with_weight_like_suffix_stays_intact() -> None:
    p = parse("https://x.com/a::2.png cat")
    assert p.images == ["https://x.com/a::2.png"]
    assert p.text == "cat"
    assert p.segments == [Segment("cat", None)]
    assert str(p) == "https://x.com/a::2.png cat"


@pytest.mark.parametrize(
    "s",
    [
        "cat --no cars, trees --ar 16:9",
        "https://x.com/a::2.png cat",
        "https://a.com/b--c,{d}.png https://e.com/f.jpg a {red, blue{ish, y}} cat::2 dog::-.5"
        " --ar {16:9, 1:1} --s 250 --sref https://a.com/x.png::2 123 random --r 2",
        "hot:: dog --v 8.1 --q .5 --iw 1.5 --tile --fast --style raw --sw 50 --sv 4",
        "a \\, b {x\\, y, z} --no a\\, b, c",
    ],
)
def test_round_trip_examples(s: str) -> None:
    p = parse(s)
    assert parse(str(p)) == p
    assert str(parse(str(p))) == str(p)


# ------------------------------------------------------------------ layout and typed values


def test_layout_images_text_params() -> None:
    p = parse("https://a.com/1.png  http://b.com/2.webp   a red   kite --ar 3:2 --seed 7")
    assert p.images == ["https://a.com/1.png", "http://b.com/2.webp"]
    assert p.text == "a red kite"
    assert p.params == {"ar": "3:2", "seed": 7}


def test_typed_values() -> None:
    p = parse(
        "x --ar 16:9 --v 8.1 --iw 0.5 --draft --no a, b ,c --q 0.25 --r 3 --seed 42 --stop 50"
        " --relax --s 250 --c 10 --w 1000 --style raw --exp 20 --tile --sref u1::2 code random"
        " --sw 200 --sv 6 --cref https://c.com/x.png --cw 0 --oref https://o.com/y.png::3 --ow 400"
    )
    assert p.params == {
        "ar": "16:9",
        "v": "8.1",
        "iw": 0.5,
        "draft": True,
        "no": ["a", "b", "c"],
        "quality": 0.25,
        "repeat": 3,
        "seed": 42,
        "stop": 50,
        "relax": True,
        "stylize": 250,
        "chaos": 10,
        "weird": 1000,
        "style": "raw",
        "exp": 20,
        "tile": True,
        "sref": [Reference("u1", 2), Reference("code"), Reference("random")],
        "sw": 200,
        "sv": 6,
        "cref": [Reference("https://c.com/x.png")],
        "cw": 0,
        "oref": [Reference("https://o.com/y.png", 3)],
        "ow": 400,
    }
    assert isinstance(p.params["seed"], int) and not isinstance(p.params["seed"], bool)
    assert isinstance(p.params["v"], str)
    p.validate()


@pytest.mark.parametrize(
    ("alias", "canonical", "value", "typed"),
    [
        ("aspect", "ar", "4:3", "4:3"),
        ("version", "v", "8.1", "8.1"),
        ("q", "quality", "2", 2),
        ("r", "repeat", "4", 4),
        ("s", "stylize", "300", 300),
        ("c", "chaos", "5", 5),
        ("w", "weird", "9", 9),
        ("AR", "ar", "1:1", "1:1"),
    ],
)
def test_aliases_parse_to_canonical_and_keep_spelling(
    alias: str, canonical: str, value: str, typed: Any
) -> None:
    p = parse(f"cat --{alias} {value}")
    assert p.params == {canonical: typed}
    assert str(p) == f"cat --{alias} {value}"
    assert p == Prompt(text="cat", params={canonical: typed})


def test_em_dash_is_accepted_as_double_dash() -> None:
    p = parse("cat —ar 16:9 —no dogs")
    assert p.params == {"ar": "16:9", "no": ["dogs"]}
    assert str(p) == "cat --ar 16:9 --no dogs"


def test_other_dashes_before_a_parameters_name_are_text_with_a_warning() -> None:
    p = parse("cat \u2013ar 16:9 \u2014\u2014no dogs well\u2013known \u2013 bird \u2013fluffy -s x")
    assert p.params == {}
    said = [str(w) for w in p.warnings()]
    assert [s.split(" is prompt text")[0] for s in parse("a \u2014-ar 1 ---seed 2").warnings()] == [
        "\u2014-ar",
        "---seed",
    ]
    assert said == [
        "\u2013ar is prompt text, not the parameter --ar: its dashes are not two hyphens; "
        "write --ar",
        "\u2014\u2014no is prompt text, not the parameter --no: its dashes are not two "
        "hyphens; write --no",
    ]


def test_dashes_that_are_not_parameters_stay_text() -> None:
    p = parse("well--known cat -- dog — bird")
    assert p.text == "well--known cat -- dog — bird"
    assert p.params == {}


def test_urls_keep_dashes_commas_braces_and_colons() -> None:
    url = "https://x.com/a--ar,{b}::3.png?q=1,2"
    p = parse(f"{url} cat --sref {url} --cref {url}")
    assert p.images == [url]
    assert p.params["sref"] == [Reference(url)]
    assert p.params["cref"] == [Reference(url)]
    assert p.count() == 1
    assert parse(str(p)) == p


def test_url_inside_text_keeps_its_double_colon() -> None:
    p = parse("a cat https://x.com/a::2 sitting::3 dog")
    assert p.segments == [Segment("a cat https://x.com/a::2 sitting", 3), Segment("dog", None)]


def test_reference_weights_and_str() -> None:
    p = parse("cat --sref https://a.com/s.png::2 1234::0.5 random")
    assert p.params["sref"] == [
        Reference("https://a.com/s.png", 2),
        Reference("1234", 0.5),
        Reference("random"),
    ]
    assert [str(r) for r in p.params["sref"]] == ["https://a.com/s.png::2", "1234::0.5", "random"]


def test_segments_with_weights() -> None:
    p = parse("space:: ship::2.5 fruit::-.5 rest")
    assert p.segments == [
        Segment("space", None),
        Segment("ship", 2.5),
        Segment("fruit", -0.5),
        Segment("rest", None),
    ]
    text, weight = p.segments[1]
    assert (text, weight) == ("ship", 2.5)


# ------------------------------------------------------------------ structural errors (parse)


@pytest.mark.parametrize(
    ("s", "loc", "words"),
    [
        ("a {b, c", ("text",), ["never closed"]),
        ("a b}, c", ("text",), ["closes nothing"]),
        ("cat --ar 16:9 dog", ("params", "ar"), ["text after the parameters", "dog"]),
        ("cat --tile big", ("params", "tile"), ["takes no value", "big"]),
        ("cat --s 100 --stylize 200", ("params", "stylize"), ["twice", "--s", "--stylize"]),
        ("cat --ar 1:1 --aspect 2:1", ("params", "ar"), ["twice"]),
        ("cat --seed 1 --seed 2", ("params", "seed"), ["twice"]),
        ("cat --ar=16:9", ("params",), ["malformed", "--ar=16:9"]),
    ],
)
def test_structural_errors_raise_from_parse(s: str, loc: tuple[str, ...], words: list[str]) -> None:
    with pytest.raises(gw.PayloadError) as info:
        parse(s)
    assert loc in locs(info.value)
    message = str(info.value)
    for word in words:
        assert word in message


def test_parse_reports_every_structural_problem_at_once() -> None:
    with pytest.raises(gw.PayloadError) as info:
        parse("cat --tile x --s 1 --s 2 --ar 1:1 y")
    assert set(locs(info.value)) == {("params", "tile"), ("params", "stylize"), ("params", "ar")}


def test_parse_rejects_non_strings_with_payload_error() -> None:
    with pytest.raises(gw.PayloadError):
        Prompt.parse(None)  # type: ignore[arg-type]


# ------------------------------------------------------------------ validate and warnings


@pytest.mark.parametrize(
    ("s", "key", "fragment"),
    [
        ("cat --seed -1", "seed", "0-4294967295"),
        ("cat --seed 4294967296", "seed", "0-4294967295"),
        ("cat --seed abc", "seed", "'abc'"),
        ("cat --seed", "seed", "needs a value"),
        ("cat --stop 9", "stop", "10-100"),
        ("cat --stop 101", "stop", "10-100"),
        ("cat --repeat 0", "repeat", "1-40"),
        ("cat --r 41", "repeat", "1-40"),
        ("cat --chaos 101", "chaos", "0-100"),
        ("cat --weird 3001", "weird", "0-3000"),
        ("cat --stylize 1001", "stylize", "0-1000"),
        ("cat --stylize 1.5", "stylize", "whole number"),
        ("cat --exp 101", "exp", "0-100"),
        ("cat --cw 101", "cw", "0-100"),
        ("cat --ow 0", "ow", "1-1000"),
        ("cat --ow 1001", "ow", "1-1000"),
        ("cat --sw 1001", "sw", "0-1000"),
        ("cat --quality 0.75", "quality", "0.25, 0.5, 1, 2"),
        ("cat --style anime", "style", "raw, cute, expressive, original, scenic"),
        ("cat --ar 1.5:1", "ar", "whole numbers"),
        ("cat --ar 16x9", "ar", "whole numbers"),
        ("cat --ar 0:1", "ar", "whole numbers"),
        ("cat --oref https://a.com/1.png https://a.com/2.png", "oref", "exactly one"),
        ("cat --oref", "oref", "needs a value"),
        ("cat --oref notaurl", "oref", "URL"),
        ("cat --cref notaurl", "cref", "URL"),
        ("cat --iw -1", "iw", ">= 0"),
        ("cat --no", "no", "needs a value"),
        ("cat --foo 3", "foo", "unknown parameter --foo"),
        ("cat --stylise 3", "stylise", "did you mean --stylize"),
        ("cat --ar {16:9, 1.5:1}", "ar", "1.5:1"),
    ],
)
def test_validate_errors_name_the_parameter(s: str, key: str, fragment: str) -> None:
    p = parse(s)
    with pytest.raises(gw.PayloadError) as info:
        p.validate()
    mine = info.value.messages_for(("params", key))
    assert mine, info.value.errors
    assert any(fragment in m for m in mine), mine


@pytest.mark.parametrize(
    "s",
    [
        "cat --seed 0",
        "cat --seed 4294967295",
        "cat --stop 10 --r 40 --chaos 100 --weird 3000 --s 0 --exp 100 --cw 100",
        "cat --ow 1000 --oref https://a.com/x.png --sw 1000 --sref x",
        "cat --ow 1 --oref https://a.com/x.png --sw 0 --sref x",
        "cat --q 0.5",
        "cat --ar 139:100",
        "cat --ar {16:9, 1:1}",
    ],
)
def test_validate_accepts_the_edges(s: str) -> None:
    assert parse(s).validate() == parse(s)


def test_validate_lists_every_problem() -> None:
    p = parse("cat --seed abc --stop 5 --fast --turbo --foo --oref a b")
    with pytest.raises(gw.PayloadError) as info:
        p.validate()
    assert set(locs(info.value)) == {
        ("params", "seed"),
        ("params", "stop"),
        ("params", "speed"),
        ("params", "foo"),
        ("params", "oref"),
    }


def test_one_speed_at_most() -> None:
    for s in ("cat --relax", "cat --fast", "cat --turbo"):
        parse(s).validate()
    messages = error_messages(parse("cat --relax --turbo"))
    assert any("--relax" in m and "--turbo" in m for m in messages)


def test_weights_sum_must_be_positive_with_no_as_minus_half() -> None:
    parse("cat::1 dog::-0.5").validate()
    assert any("sum must be positive" in m for m in error_messages(parse("cat::1 dog::-1")))
    parse("cat::1 --no dog").validate()
    messages = error_messages(parse("cat::0.5 --no dog"))
    assert any("-0.5" in m for m in messages)
    parse("cat::0.6 --no dog").validate()


def test_weights_checked_in_every_permutation() -> None:
    p = parse("cat::{1, -2} dog::-0.5")
    assert p.segments[0] == Segment("cat", "{1, -2}")
    messages = error_messages(p)
    assert any("'cat::-2 dog::-.5'" in m or "cat::-2" in m for m in messages)


def test_empty_prompt_is_an_error() -> None:
    assert any("text or an image" in m for m in error_messages(parse("--ar 1:1")))
    parse("https://a.com/x.png").validate()


@pytest.mark.parametrize(
    ("s", "fragment"),
    [
        ("cat --ar 3:1", "experimental"),
        ("cat --ar 1:3", "experimental"),
        ("cat --v 7", "8.1"),
        ("cat --sw 100", "--sref"),
        ("cat --cw 100", "--cref"),
        ("cat --ow 100", "--oref"),
        ("cat --iw 2", "image"),
        ("cat --style cute", "variant"),
        ("cat {a, b, c, d, e} {f, g, h, i, j} --r 2", "50 billed jobs"),
    ],
)
def test_warnings(s: str, fragment: str) -> None:
    p = parse(s)
    warnings = p.warnings()
    assert any(fragment in w for w in warnings), warnings
    assert all(isinstance(w.loc, tuple) for w in warnings)


def test_no_warnings_for_a_plain_prompt() -> None:
    p = parse("https://a.com/x.png cat --ar 2:1 --v 8.1 --iw 2 --sref x --sw 10 --style raw")
    assert p.warnings() == []
    p.validate()


# ------------------------------------------------------------------ permutations and cost


@pytest.mark.parametrize(
    ("s", "expected"),
    [
        ("a {b, c} d", ["a b d", "a c d"]),
        ("{a, b} {c, d}", ["a c", "a d", "b c", "b d"]),
        ("x {a, b {c, d}}", ["x a", "x b c", "x b d"]),
        ("a {b\\, c, d}", ["a b, c", "a d"]),
        ("cat{, s}", ["cat", "cats"]),
        ("cat --ar {16:9, 1:1}", ["cat --ar 16:9", "cat --ar 1:1"]),
        (
            "{red, blue} cat --no {dogs, mice}",
            ["red cat --no dogs", "red cat --no mice", "blue cat --no dogs", "blue cat --no mice"],
        ),
    ],
)
def test_expand_and_count(s: str, expected: list[str]) -> None:
    p = parse(s)
    assert p.expand() == expected
    assert p.count() == len(expected)


def test_count_without_expanding_is_the_product() -> None:
    groups = " ".join("{a, b, c}" for _ in range(12))
    p = parse(f"cat {groups} --ar {{1:1, 2:1}}")
    assert p.count() == 3**12 * 2


def test_jobs_multiply_by_repeat() -> None:
    p = parse("cat {a, b, c} --r 2")
    assert (p.count(), p.jobs()) == (3, 6)
    assert parse("cat {a, b} --repeat {1, 3}").jobs() == 2 + 6
    assert parse("cat").jobs() == 1


def test_permutation_values_stay_raw_until_expanded() -> None:
    p = parse("cat --ar {16:9, 1:1} --chaos {0, 50} --no {a, b}")
    assert p.params == {"ar": "{16:9, 1:1}", "chaos": "{0, 50}", "no": "{a, b}"}
    expanded = [Prompt.parse(e).params["chaos"] for e in p.expand()]
    assert expanded == [0, 0, 50, 50, 0, 0, 50, 50]  # the first group varies slowest


def test_literal_comma_does_not_split_no_items() -> None:
    p = parse("cat --no salt\\, pepper, sugar")
    assert p.params["no"] == ["salt\\, pepper", "sugar"]


# ------------------------------------------------------------------ building


def test_built_prompt_writes_canonical_names_in_table_order() -> None:
    p = Prompt(
        text="cat", params={"stylize": 250, "aspect": "16:9", "tile": True, "no": ["a", "b"]}
    )
    assert str(p) == "cat --ar 16:9 --no a, b --stylize 250 --tile"
    assert p.params == {"ar": "16:9", "no": ["a", "b"], "stylize": 250, "tile": True}


def test_built_prompt_with_images_and_references() -> None:
    p = Prompt(
        text="a {red, blue} kite::2",
        images=["https://a.com/x.png"],
        params={
            "sref": [Reference("https://s.com/y.png", 2), "random"],
            "oref": "https://o.com/z.png",
        },
    )
    assert str(p) == (
        "https://a.com/x.png a {red, blue} kite::2 --sref https://s.com/y.png::2 random"
        " --oref https://o.com/z.png"
    )
    assert p.params["oref"] == [Reference("https://o.com/z.png")]
    assert parse(str(p)) == p


@pytest.mark.parametrize(
    ("kwargs", "loc"),
    [
        ({"text": "cat --ar 1:1"}, ("text",)),
        ({"text": "https://a.com/x.png cat"}, ("text",)),
        ({"text": "cat {a"}, ("text",)),
        ({"text": "cat", "images": ["not a url"]}, ("images", 0)),
        ({"text": "cat", "images": "https://a.com/x.png"}, ("images",)),
        ({"text": "cat", "params": {"ar": "16:9 dog"}}, ("params", "ar")),
        ({"text": "cat", "params": {"tile": "yes"}}, ("params", "tile")),
        ({"text": "cat", "params": {"s": 1, "stylize": 2}}, ("params", "stylize")),
        ({"text": "cat", "params": {"no": "a --seed 3"}}, ("params", "no")),
        ({"text": "cat", "params": {"iw": float("nan")}}, ("params", "iw")),
    ],
)
def test_building_refuses_what_would_not_survive(
    kwargs: dict[str, Any], loc: tuple[Any, ...]
) -> None:
    with pytest.raises(gw.PayloadError) as info:
        Prompt(**kwargs)
    assert loc in locs(info.value)


@pytest.mark.parametrize(
    ("params", "said"),
    [
        ({"no": ["{red, blue}"]}, "'{red, blue}' holds braces, which would make a permutation"),
        ({"no": ["red, blue"]}, "'red, blue' holds a comma, which separates items"),
        ({"sref": ["https://x.test/my file.png"]}, "holds a space, which separates references"),
        ({"cref": [Reference("https://x.test/a b.png", 2)]}, "holds a space"),
    ],
)
def test_building_refuses_list_items_that_would_read_back_changed(
    params: dict[str, Any], said: str
) -> None:
    """An item of a list is one item: ``no=["{red, blue}"]`` was written as a permutation
    (2 prompts billed), ``no=["red, blue"]`` as two items, a URL with a space as two
    references. Each is refused, naming the item and why."""
    with pytest.raises(gw.PayloadError) as info:
        Prompt("a cat", params)
    (key,) = params
    assert locs(info.value) == [("params", key)]
    assert said in info.value.errors[0]["msg"]


def test_escaped_list_items_read_back_as_given() -> None:
    """What the refusals advise reads back as the items given, one prompt billed;
    spaces collapse and blank items go, as in the text."""
    given = {"no": ["\\{red\\, blue\\}", "salt\\, pepper", "  a   b ", ""]}
    p = Prompt("a cat", given)
    assert p.params == {"no": ["\\{red\\, blue\\}", "salt\\, pepper", "a b"]}
    assert p.count() == 1
    assert Prompt("a cat", {"no": "red, {a, b}"}).count() == 2  # one string: text as typed


def test_with_params_keeps_spelling_and_order_and_removes_with_none() -> None:
    p = parse("cat --s 100 --ar 1:1 --tile")
    q = p.with_params(stylize=200, chaos=5, ar=None, tile=False, seed=9)
    assert str(q) == "cat --s 200 --seed 9 --chaos 5"
    assert str(p) == "cat --s 100 --ar 1:1 --tile"  # unchanged
    assert p.with_params(s=300).params["stylize"] == 300
    with pytest.raises(gw.PayloadError):
        p.with_params(s=1, stylize=2)


def test_equality_ignores_spelling_and_order() -> None:
    assert parse("cat --s 250 --ar 1:1") == parse("cat --ar 1:1 --stylize 250")
    assert parse("cat --s 250") != parse("cat --s 251")
    assert parse("cat") != "cat"


def test_numbers_are_written_without_exponents() -> None:
    p = Prompt(text="cat", params={"iw": 0.0000001, "quality": 2.0})
    assert str(p) == "cat --iw 0.0000001 --quality 2"
    assert parse(str(p)) == p


def test_importing_prompt_does_not_import_ipywidgets() -> None:
    code = (
        "import sys; from genwidgets.imgm import Prompt; Prompt.parse('a --ar 1:1');"
        " assert 'ipywidgets' not in sys.modules, 'ipywidgets imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
