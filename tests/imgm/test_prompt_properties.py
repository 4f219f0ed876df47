"""Properties of Prompt, checked with hypothesis.

* every prompt of the grammar below parses, and ``parse(str(parse(s))) == parse(s)``;
* parsing arbitrary text raises nothing but PayloadError, and round-trips when it
  succeeds;
* no ``--name`` token is ever silently dropped (parameters inside braces stay
  in the prompt's text);
* ``count()`` equals ``len(expand())`` and ``str()`` is a fixpoint;
* each expansion sent is one prompt, and its only backslashes (outside URLs)
  escape a brace, dash, colon or backslash;
* lists that touch ``--`` (``--no x,--ar 16:9``) and glued parameters round-trip.

The grammar includes permutations of parameters (``{, --tile}``,
``--{v 8.1, draft}``) and escapes (``\\,``, ``\\{``, ``\\}``, ``\\\\``).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import genwidgets as gw
from genwidgets.imgm import MAX_PROMPTS, Prompt
from genwidgets.imgm.permutations import KEPT_ESCAPES

# The spec's table, written out here so the tests do not trust the module's own copy.
ALIASES = {
    "aspect": "ar",
    "version": "v",
    "q": "quality",
    "r": "repeat",
    "s": "stylize",
    "c": "chaos",
    "w": "weird",
}
FLAGS = ["draft", "relax", "fast", "turbo", "tile"]
ONE_WORD = ["ar", "v", "iw", "quality", "repeat", "seed", "stop", "stylize", "chaos"]
ONE_WORD += ["weird", "style", "exp", "sw", "sv", "cw", "ow"]
REFS = ["sref", "cref", "oref"]
CANONICAL = [*ONE_WORD, *FLAGS, "no", *REFS]
SPELLINGS = {name: [name] + [a for a, c in ALIASES.items() if c == name] for name in CANONICAL}
URL = re.compile(r"https?://\S+", re.IGNORECASE)
NAME_TOKEN = re.compile(r"(?<!\S)(?:--|—)([A-Za-z][A-Za-z0-9_]*)")

PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ------------------------------------------------------------------ the grammar

plain_word = st.text(alphabet="abcxyzABC0123é", min_size=1, max_size=6)
odd_word = st.sampled_from(
    ["well--known", "a-b", "x:y", "1.5", "(ok)", "--", "—", "ü", "a\\b", "\\{x\\}", "a\\\\b", "\\,"]
)
word = st.one_of(plain_word, plain_word, odd_word)


def urls(chars: str) -> st.SearchStrategy[str]:
    return st.builds(
        lambda scheme, host, path: f"{scheme}://{host}.com/{path}",
        st.sampled_from(["http", "https", "HTTPS"]),
        st.text(alphabet="abc", min_size=1, max_size=4),
        st.lists(st.sampled_from([*chars, "--", "::", "::2", "—"]), max_size=8).map("".join),
    )


url = urls("abz09./-_:,{}?=&%~")
# Inside a permutation a URL ends at "," or at a "}" it did not open (documented),
# so the URLs the grammar puts there hold neither.
url_in_permutation = urls("abz09./-_:?=&%~")

number = st.one_of(
    st.integers(-5, 3000).map(str),
    st.sampled_from(["0.25", ".5", "-.5", "2.", "1.50", "+3", "007", "-0"]),
)


def permutation(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    alternative = st.one_of(inner, st.just(""), inner.map(lambda s: s + "\\, more"))
    return st.lists(alternative, min_size=1, max_size=3).map(lambda a: "{" + ", ".join(a) + "}")


phrase = st.recursive(
    st.lists(word, min_size=1, max_size=3).map(" ".join),
    lambda inner: st.one_of(
        st.tuples(inner, permutation(inner)).map(" ".join),
        st.tuples(inner, url_in_permutation).map(" ".join),
    ),
    max_leaves=6,
)


@st.composite
def text(draw: st.DrawFn) -> str:
    parts = draw(st.lists(phrase, min_size=0, max_size=3))
    out = ""
    for i, part in enumerate(parts):
        if i:
            out += draw(st.sampled_from(["::", "::" + draw(number), ":: "])) + " "
        out += part
    return out


def value_for(name: str) -> st.SearchStrategy[str]:
    one = st.one_of(
        number,
        st.sampled_from(["16:9", "1:1", "3:1", "1.5:1", "8.1", "raw", "cute", "abc", "0:1"]),
    )
    if name in FLAGS:
        return st.just("")
    if name in ONE_WORD:
        return st.one_of(one, url, permutation(one | url_in_permutation))
    if name == "no":
        # items that touch "--": a parameter glued after a comma, a value glued to one
        touching = st.sampled_from(
            ["x,--ar 16:9", "y,—tile", "x--y", "y,16:9--ar 16:9--seed 5", "z,--", "a,--b"]
        )
        item = st.one_of(plain_word, url, st.just("salt\\, pepper"), touching)
        comma = st.sampled_from([", ", ",", " , "])
        items = st.tuples(st.lists(item, min_size=0, max_size=3), comma).map(
            lambda t: t[1].join(t[0])
        )
        return st.one_of(items, permutation(plain_word))

    def ref(link: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.tuples(st.one_of(link, plain_word, st.just("random")), st.none() | number).map(
            lambda r: r[0] if r[1] is None else f"{r[0]}::{r[1]}"
        )

    refs = st.lists(ref(url), min_size=0, max_size=3).map(" ".join)
    return st.one_of(refs, permutation(ref(url_in_permutation)))


@st.composite
def parameters(draw: st.DrawFn) -> list[tuple[str, str, str]]:
    names = draw(st.lists(st.sampled_from(CANONICAL), unique=True, max_size=6))
    out = []
    for name in names:
        spelling = draw(st.sampled_from(SPELLINGS[name]))
        spelling = spelling.upper() if draw(st.booleans()) and len(spelling) < 3 else spelling
        out.append((draw(st.sampled_from(["--", "—"])), spelling, draw(value_for(name))))
    if draw(st.booleans()):
        out.append(("--", draw(st.sampled_from(["foo", "niji", "x_1"])), draw(word | st.just(""))))
    return out


def parameter_tokens() -> st.SearchStrategy[str]:
    """One ``--name [value]`` as it would be written inside braces."""
    return st.one_of(
        st.sampled_from(FLAGS).map(lambda n: f"--{n}"),
        st.tuples(st.sampled_from(ONE_WORD), st.sampled_from(["1", "16:9", "8.1", "x"])).map(
            lambda t: f"--{t[0]} {t[1]}"
        ),
        st.sampled_from(["—tile", "--no a\\, b", "--p", "--niji 6", "--r 2", "--repeat 3"]),
    )


varying = st.one_of(
    # {, --tile} and {--ar 1:1, --s 5}: options that are (or hold) parameters
    st.lists(st.one_of(parameter_tokens(), st.just(""), plain_word), min_size=1, max_size=3)
    .filter(lambda options: any(o.startswith(("--", "—")) for o in options))
    .map(lambda options: "{" + ", ".join(options) + "}"),
    # --{v 8.1, draft}: the names vary
    st.lists(parameter_tokens().map(lambda t: t.lstrip("-—")), min_size=1, max_size=3).map(
        lambda names: "--{" + ", ".join(names) + "}"
    ),
)


@st.composite
def prompt_strings(draw: st.DrawFn, glue: bool = False) -> str:
    images = draw(st.lists(url, max_size=2))
    body = draw(text())
    params = draw(parameters())
    parts = [*images, body] + [f"{dash}{name} {value}".strip() for dash, name, value in params]
    for group in draw(st.lists(varying, unique=True, max_size=2)):  # twice is an error
        parts.insert(draw(st.integers(len(images) + 1, len(parts))), group)
    spaces = st.sampled_from([" ", "  ", "\t", "\n "] + (["", ","] if glue else []))
    return "".join(p + draw(spaces) for p in parts if p)


# ------------------------------------------------------------------ helpers


def canonical(name: str) -> str:
    low = name.lower()
    return ALIASES.get(low, low)


def assert_round_trip(p: Prompt) -> None:
    again = Prompt.parse(str(p))
    assert again == p
    assert str(again) == str(p)


def assert_no_name_dropped(s: str, p: Prompt) -> None:
    written = str(p)
    for name in NAME_TOKEN.findall(s):
        if canonical(name) in p.params:
            continue
        # a parameter inside a permutation stays written where it was
        assert re.search(rf"(?:--|—){re.escape(name)}(?![A-Za-z0-9_])", written), (name, s)
        assert p.varies_parameters or any(
            isinstance(v, str) and name in v for v in p.params.values()
        ), (name, s, p.params)


def assert_sent_without_stray_backslashes(p: Prompt) -> None:
    """What is sent is one prompt each (the gateway expands braces itself), and
    outside URLs (opaque) a backslash is sent only to escape a character that
    would mean something there (a brace, a dash, a colon, a backslash)."""
    if p.count() > MAX_PROMPTS:
        return
    for sent, source in zip(p.expand(), p.expand("source"), strict=True):
        try:
            assert Prompt.parse(sent).count() == 1, (str(p), sent)
        except gw.PayloadError:  # an expansion that cannot be read is refused as written
            with pytest.raises(gw.PayloadError):
                Prompt.parse(source)
        escapes = re.findall(r"\\(.?)", URL.sub("", sent), flags=re.DOTALL)
        assert all(ch and ch in KEPT_ESCAPES for ch in escapes), (str(p), sent)


def assert_checks_raise_only_payload_errors(p: Prompt) -> None:
    try:
        p.validate()
    except gw.PayloadError as error:
        assert error.errors and all(e["msg"] for e in error.errors)
    assert all(isinstance(w, str) for w in p.warnings())
    assert isinstance(p.segments, list)
    count = p.count()
    assert count >= 1
    if count <= MAX_PROMPTS:
        assert len(p.expand()) == count
        assert p.jobs() >= count
    else:  # nothing above the cap is ever made: the count and an error
        with pytest.raises(gw.PayloadError, match=f"makes {count} prompts"):
            p.expand()


# ------------------------------------------------------------------ properties


@pytest.mark.slow
@PROPERTY
@given(prompt_strings())
def test_grammar_prompts_parse_and_round_trip(s: str) -> None:
    p = Prompt.parse(s)
    assert_round_trip(p)
    assert_no_name_dropped(s, p)
    assert_checks_raise_only_payload_errors(p)
    assert_sent_without_stray_backslashes(p)


@pytest.mark.slow
@PROPERTY
@given(prompt_strings())
def test_rebuilding_from_parts_gives_the_same_prompt(s: str) -> None:
    p = Prompt.parse(s)
    rebuilt = Prompt(text=p.text, params=p.params, images=p.images)
    assert rebuilt == p
    assert_round_trip(rebuilt)


@pytest.mark.slow
@PROPERTY
@given(prompt_strings(glue=True))
def test_glued_parameters_parse_or_refuse_and_round_trip(s: str) -> None:
    """Parts glued on (``16:9--ar 1:1``, ``x,--ar 16:9``): read or refused, never
    written back as something else."""
    try:
        p = Prompt.parse(s)
    except gw.PayloadError as error:
        assert error.errors
        return
    assert_round_trip(p)
    assert_no_name_dropped(s, p)
    assert_checks_raise_only_payload_errors(p)
    assert_sent_without_stray_backslashes(p)


@pytest.mark.parametrize(
    "s", ["cat --no x,--ar 16:9", "--no x, y,--ar 16:9--ar 16:9--seed 5", "a --no b ,—tile"]
)
def test_a_list_touching_dashes_round_trips(s: str) -> None:
    p = Prompt.parse(s)
    assert_round_trip(p)
    assert "ar" not in p.params and "tile" not in p.params  # they are items of --no


structural = st.sampled_from(
    ["--", "—", "::", "{", "}", ",", "\\,", " ", "http://", "https://a.", "ar", "s", "no"]
)
noisy_text = st.lists(st.one_of(structural, st.text(max_size=3)), max_size=25).map("".join)


@pytest.mark.slow
@PROPERTY
@given(st.one_of(noisy_text, st.text()))
def test_arbitrary_text_raises_only_payload_error_and_drops_nothing(s: str) -> None:
    try:
        p = Prompt.parse(s)
    except gw.PayloadError as error:
        assert error.errors
        return
    assert_round_trip(p)
    assert_no_name_dropped(s, p)
    assert_checks_raise_only_payload_errors(p)


@pytest.mark.slow
@PROPERTY
@given(prompt_strings(), st.dictionaries(st.sampled_from(CANONICAL), st.none() | st.just(1)))
def test_with_params_round_trips_or_refuses(s: str, changes: dict[str, Any]) -> None:
    p = Prompt.parse(s)
    try:
        q = p.with_params(**changes)
    except gw.PayloadError:
        assert any(v is not None for v in changes.values())
        return
    assert_round_trip(q)
    for name, value in changes.items():
        assert (name in q.params) == (value is not None)


@pytest.mark.parametrize("depth", [1, 5, 20])
def test_nesting_within_the_limit_counts_exactly(depth: int) -> None:
    s = "x " + "{a, " * depth + "b" + "}" * depth
    p = Prompt.parse(s)
    assert p.count() == depth + 1 == len(p.expand())


def test_nesting_beyond_the_limit_is_a_payload_error() -> None:
    with pytest.raises(gw.PayloadError, match="nest deeper"):
        Prompt.parse("{" * 500 + "}" * 500)
