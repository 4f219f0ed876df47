"""The lexer: which characters of a prompt string are URLs, escapes or braces (and
at which depth), and the splits that respect them (words, separators, spans).
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from ..errors import PayloadError
from .params import MAX_NESTING, URL_START

__all__ = [
    "Scan",
    "has_permutation",
    "permutation_spans",
    "scan_text",
    "split_outside",
    "split_words",
]

# --------------------------------------------------------------------------- scanning

_PLAIN, _URL, _ESCAPE = 0, 1, 2


class Scan(NamedTuple):
    """Per character: its brace depth (braces carry their outer depth) and kind."""

    depth: list[int]
    kind: list[int]
    errors: list[dict[str, Any]]

    def structural(self, i: int) -> bool:
        """Whether character ``i`` is plain text, so a brace, comma or ``::`` there counts."""
        return self.kind[i] == _PLAIN

    def in_url(self, i: int) -> bool:
        """Whether character ``i`` belongs to a URL (opaque: nothing in it is structure)."""
        return self.kind[i] == _URL

    def escaped(self, i: int) -> bool:
        """Whether character ``i`` is a backslash escape or the character it escapes."""
        return self.kind[i] == _ESCAPE


def _url_end(s: str, start: int, depth: int) -> int:
    end = start
    own_braces = 0
    while end < len(s) and not s[end].isspace():
        ch = s[end]
        if depth > 0:
            if ch == "," and s[end - 1] != "\\":
                break
            if ch == "{":
                own_braces += 1
            elif ch == "}":
                if own_braces == 0:
                    break
                own_braces -= 1
        end += 1
    return end


#: where a character of a prompt can mean more than itself: a brace, a backslash, or
#: (looked at, not consumed) what may begin a URL; text between them is plain
_NOTABLE = re.compile(r"[{}\\]|(?=" + URL_START.pattern + ")")


def scan_text(s: str, loc: tuple[str, ...] = ("text",)) -> Scan:
    """Mark URLs, escapes and brace depths; collect brace errors.

    Jumps from one notable character to the next (an 8,192-character prompt of plain
    words has none), so a long prompt costs its braces, not its length."""
    depth = [0] * len(s)
    kind = [_PLAIN] * len(s)
    problems: list[str] = []
    opened: list[int] = []
    i = 0
    while True:
        found = _NOTABLE.search(s, i)
        stop = len(s) if found is None else found.start()
        if opened and stop > i:  # plain text inside braces
            depth[i:stop] = [len(opened)] * (stop - i)
        if found is None:
            break
        i = stop
        ch = s[i]
        if ch not in "{}\\":  # maybe a URL: one only where a word starts
            at_word_start = (
                i == 0 or s[i - 1].isspace() or (s[i - 1] in "{," and kind[i - 1] == _PLAIN)
            )
            if at_word_start:
                end = _url_end(s, i, len(opened))
                for k in range(i, end):
                    depth[k], kind[k] = len(opened), _URL
                i = end
            else:
                depth[i] = len(opened)
                i += 1
            continue
        depth[i] = len(opened)
        if ch == "\\" and i + 1 < len(s):  # \, \{ \} \\ (and \x): the next character, literally
            depth[i + 1] = len(opened)
            kind[i] = kind[i + 1] = _ESCAPE
            i += 2
            continue
        if ch == "{":
            opened.append(i)
            if len(opened) == MAX_NESTING + 1:
                problems.append(
                    f"permutations nest deeper than {MAX_NESTING} levels (at character {i + 1})"
                )
        elif ch == "}":
            if opened:
                opened.pop()
                depth[i] = len(opened)
            else:
                problems.append(f"unbalanced braces: '}}' at character {i + 1} closes nothing")
        i += 1
    problems += [f"unbalanced braces: '{{' at character {o + 1} is never closed" for o in opened]
    return Scan(depth, kind, [{"loc": loc, "msg": msg} for msg in problems])


def split_words(s: str, scan: Scan) -> list[str]:
    """Split on whitespace outside braces (a permutation stays one word)."""
    if not any(scan.depth):  # no braces: whitespace splits as str.split() does
        return s.split()
    words: list[str] = []
    start = 0
    for run in re.finditer(r"\S+", s):  # a run after whitespace inside braces joins the word
        if words and scan.depth[run.start() - 1] > 0:
            words[-1] = s[start : run.end()]
        else:
            words.append(run.group())
            start = run.start()
    return words


def permutation_spans(s: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each top-level ``{...}`` of a prompt string, in order.

    Read as :meth:`Prompt.parse` reads them: URLs are opaque and escaped braces
    are text. Raises PayloadError when the braces do not balance.
    """
    scan = scan_text(s)
    if scan.errors:
        raise PayloadError(scan.errors)
    spans: list[tuple[int, int]] = []
    start = 0
    for i, ch in enumerate(s):
        if scan.structural(i) and scan.depth[i] == 0:
            if ch == "{":
                start = i
            elif ch == "}":
                spans.append((start, i + 1))
    return spans


def has_permutation(s: str) -> bool:
    if "{" not in s:
        return False
    scan = scan_text(s)
    return any(ch == "{" and scan.structural(i) for i, ch in enumerate(s))


def split_outside(s: str, sep: str) -> list[str]:
    """Split on ``sep`` where it is structural (outside URLs, braces and escapes)."""
    if sep not in s:
        return [s]  # nothing to split: no scan needed
    scan = scan_text(s)
    parts: list[str] = []
    start = 0
    # each place sep starts, overlapping ones too: a\:::b splits at its second ::
    for found in re.finditer(f"(?={re.escape(sep)})", s):
        i = found.start()
        outside = range(i, i + len(sep))
        if i >= start and all(scan.depth[k] == 0 and scan.structural(k) for k in outside):
            parts.append(s[start:i])
            start = i + len(sep)
    parts.append(s[start:])
    return parts
