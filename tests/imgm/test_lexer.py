"""The lexer jumps from one notable character to the next (braces, backslashes, what may
begin a URL): these pin what it marks where that jump could skip too much."""

from __future__ import annotations

import pytest

from genwidgets.imgm.lexer import scan_text, split_words

PLAIN, URL = 0, 1


def test_a_url_only_where_a_word_starts() -> None:
    """Mid-word, ``http://`` is text and its braces count; at a word start it is a URL,
    opaque to the end of the word (its braces too)."""
    mid = scan_text("xhttp://a{b,c}")
    assert mid.kind == [PLAIN] * 14
    assert mid.depth == [0] * 10 + [1, 1, 1, 0]

    text = "see https://h.example/{q} {x, y}"
    scan = scan_text(text)
    url = range(4, 4 + len("https://h.example/{q}"))
    assert [scan.kind[i] for i in url] == [URL] * len(url)
    assert [scan.depth[i] for i in url] == [0] * len(url)
    assert scan.depth[-5:] == [1, 1, 1, 1, 0] and not scan.errors
    assert split_words(text, scan) == ["see", "https://h.example/{q}", "{x, y}"]


def test_a_url_opening_a_permutation_keeps_its_depth() -> None:
    scan = scan_text("{http://a/{x}, b}")
    assert scan.kind[1:13] == [URL] * 12 and scan.kind[13:] == [PLAIN] * 4
    assert scan.depth == [0] + [1] * 15 + [0]


def test_nested_braces_and_a_trailing_backslash() -> None:
    assert scan_text("{a {b c} d}").depth == [0, 1, 1, 1, 2, 2, 2, 1, 1, 1, 0]
    trailing = scan_text("a\\")
    assert trailing.kind == [PLAIN, PLAIN] and not trailing.errors


@pytest.mark.parametrize("text", ["a\u3000b\x1cc", "  two\twords\n", "x {a b} y"])
def test_words_split_on_every_whitespace_outside_braces(text: str) -> None:
    words = split_words(text, scan_text(text))
    if "{" in text:
        assert words == ["x", "{a b}", "y"]
    else:
        assert words == text.split()
        assert all(not ch.isspace() for word in words for ch in word)


def test_brace_errors_name_their_characters() -> None:
    scan = scan_text("a } {b")
    assert [e["msg"] for e in scan.errors] == [
        "unbalanced braces: '}' at character 3 closes nothing",
        "unbalanced braces: '{' at character 5 is never closed",
    ]
