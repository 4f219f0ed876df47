"""Permutations: the brace tree of a prompt string, counted as a product of group
sizes and expanded lazily, so no more expansions are made than are asked for.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterator
from functools import cached_property
from typing import Any, Literal

from .lexer import has_permutation, scan_text
from .params import MAX_PROMPTS, collapse_spaces

__all__ = [
    "KEPT_ESCAPES",
    "Mode",
    "alternatives",
    "count_prompts",
    "expansions",
    "plain_text",
    "say_count",
]

Mode = Literal["source", "sent", "plain"]
"""How an expansion writes escapes: ``source`` as typed (it parses back to the same
prompt), ``sent`` as the gateway gets it (escapes of :data:`KEPT_ESCAPES` stay, so the
gateway makes no second permutation of it; others, ``\\,`` included, are resolved), ``plain`` with
every escape resolved (labels a person reads)."""


KEPT_ESCAPES = frozenset("{}\\-—:")
"""Escaped characters that stay escaped in what is sent: unescaped, they would make
a permutation, a parameter or a weight at the gateway (every other escape, ``\\,``
included, is sent as its plain character)."""


class _Group:
    """A ``{...}``: its alternatives, each a sequence of str | _Group."""

    def __init__(self) -> None:
        self.alternatives: list[list[Any]] = [[]]

    @cached_property
    def size(self) -> int:
        """Its expansion count, computed once (a product of group sizes: nothing is
        expanded to count); read once the tree is built."""
        return sum(_size(alternative) for alternative in self.alternatives)


def _size(sequence: list[Any]) -> int:
    return math.prod(item.size for item in sequence if isinstance(item, _Group))


#: the characters that can shape the tree; text between them is taken as it is
_SHAPING = re.compile(r"[\\{},]")


def _tree(s: str, mode: Mode = "source") -> list[Any]:
    """The permutation structure of ``s`` (which must have balanced braces)."""
    scan = scan_text(s)
    root: list[Any] = []
    stack: list[tuple[list[Any], _Group]] = []
    current = root
    i = 0
    while i < len(s):
        found = _SHAPING.search(s, i)
        stop = len(s) if found is None else found.start()
        if stop > i:
            _add_text(current, s[i:stop])
            i = stop
            continue
        ch = s[i]
        if scan.escaped(i) and ch == "\\":
            comma = s[i + 1] == ","
            if mode != "source" and comma and stack and current and isinstance(current[-1], str):
                current[-1] = current[-1].rstrip()  # "{pastel \\, yellow}": "pastel, yellow"
            resolved = mode == "plain" or (mode == "sent" and s[i + 1] not in KEPT_ESCAPES)
            _add_text(current, s[i + 1] if resolved else s[i : i + 2])
            i += 2
            continue
        if mode != "source" and ch == "\\" and scan.structural(i):
            i += 1  # a lone backslash at the very end: never sent
            continue
        if scan.structural(i) and ch == "{":
            group = _Group()
            current.append(group)
            stack.append((current, group))
            current = group.alternatives[0]
        elif scan.structural(i) and ch == "}" and stack:
            current, _ = stack.pop()
        elif scan.structural(i) and ch == "," and stack:
            group = stack[-1][1]
            group.alternatives.append([])
            current = group.alternatives[-1]
        else:
            _add_text(current, ch)
        i += 1
    return root


def _add_text(sequence: list[Any], text: str) -> None:
    """``text`` joined to the run of text it follows (an expansion then walks a few
    pieces, not every character of an 8,192-character prompt)."""
    if sequence and isinstance(sequence[-1], str):
        sequence[-1] += text
    else:
        sequence.append(text)


def _nth(sequence: list[Any], k: int) -> str:
    """The ``k``-th expansion of ``sequence`` (the last group varies fastest, as
    ``itertools.product`` orders them), made without making the others."""
    picks: dict[int, int] = {}
    for item in reversed(sequence):
        if isinstance(item, _Group):
            k, picks[id(item)] = divmod(k, item.size)
    out: list[str] = []
    for item in sequence:
        if not isinstance(item, _Group):
            out.append(item)
            continue
        pick = picks[id(item)]
        for alternative in item.alternatives:
            size = _size(alternative)
            if pick < size:
                out.append(_nth(alternative, pick).strip())
                break
            pick -= size
    return "".join(out)


def expansions(s: str, mode: Mode = "source") -> Iterator[str]:
    """Every prompt of ``s`` in order, one at a time (take what you need with islice)."""
    tree = _tree(s, mode)
    total = _size(tree)
    k = 0
    while k < total:
        yield collapse_spaces(_nth(tree, k))
        k += 1


def alternatives(s: str) -> list[str]:
    """The prompts ``s`` makes, at most :data:`MAX_PROMPTS` (``[s]`` itself, untouched,
    when it has no permutation)."""
    return list(itertools.islice(expansions(s), MAX_PROMPTS)) if has_permutation(s) else [s]


def count_prompts(s: str) -> int:
    """How many prompts ``s`` makes: a product of group sizes, nothing expanded."""
    if "{" not in s:
        return 1  # no brace, no permutation: no scan needed
    return _size(_tree(s))


def say_count(n: int) -> str:
    """A count as text, even one too large to write out (``more than 10^4304``)."""
    digits = int(n.bit_length() * 0.30103)  # log10(2): never more than the real digits
    return str(n) if digits < 18 else f"more than 10^{digits - 1}"


def plain_text(s: str) -> str:
    """``s`` with every escape resolved, for people to read (a label, a caption):
    ``pastel\\, yellow`` reads ``pastel, yellow``. Its braces are text."""
    return collapse_spaces("".join(item for item in _tree(s, "plain") if isinstance(item, str)))
