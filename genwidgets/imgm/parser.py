"""Reading a prompt string into images, text and typed ``--`` entries, and
writing entries back (``str()`` of a prompt).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from ..errors import PayloadError
from .lexer import Scan, has_permutation, scan_text, split_outside, split_words
from .params import (
    ALIASES,
    ONE_WORD_KINDS,
    PARAM_NAME,
    PARAM_WORD,
    PARAMETERS,
    URL_START,
    Param,
    collapse_spaces,
    format_scalar,
    to_number,
)
from .permutations import alternatives
from .values import Reference, Segment, Variation

__all__ = [
    "Entry",
    "assemble",
    "format_value",
    "key_of",
    "parse_parts",
    "segments_of",
    "typed_value",
    "varies",
]

# --------------------------------------------------------------------------- parsing


Entry = tuple[str, str, Any]  # (spelling as typed, canonical key, value)


def _canonical(name: str) -> str:
    low = name.lower()
    return ALIASES.get(low, low)


def key_of(name: Any, value: Any) -> str:
    """The params key of a value given by name: a Variation is keyed by its text."""
    return collapse_spaces(value.raw) if isinstance(value, Variation) else _canonical(str(name))


def typed_value(key: str, raw: str) -> Any:
    """The typed value of ``--key raw`` (the raw string when it does not fit)."""
    param = PARAMETERS.get(key)
    if param is None:
        return raw or True
    if param.kind == "flag":
        return True
    if has_permutation(raw):
        return raw
    if param.kind in ("int", "number"):
        number = to_number(raw, integer=param.kind == "int")
        return raw if number is None else number
    if param.kind == "list":
        return [item for item in (collapse_spaces(p) for p in split_outside(raw, ",")) if item]
    if param.kind == "refs":
        return [_reference(word) for word in raw.split()]
    return raw


def _reference(word: str) -> Reference:
    value, sep, weight = word.rpartition("::")
    number = to_number(weight, integer=False) if sep and value else None
    return Reference(word) if number is None else Reference(value, number)


def _is_param_word(word: str) -> bool:
    return PARAM_WORD.match(word) is not None


def varies(s: str) -> bool:
    """Whether ``s`` has a permutation that varies parameters.

    That is a parameter at a word start inside braces (``{, --tile}``) or braces
    right after the dashes (``--{v 8.1, draft}``), outside URLs and escapes.
    """
    if "{" not in s:
        return False
    scan = scan_text(s)
    if scan.errors:
        return False
    for i in range(len(s)):
        if not _dashes_at_word_start(s, i, scan):
            continue
        after = i + (1 if s[i] == "—" else 2)
        if after < len(s) and s[after] == "{" and scan.structural(after):
            return True
        if scan.depth[i] > 0 and PARAM_WORD.match(s, i):
            return True
    return False


def _dashes_at_word_start(s: str, i: int, scan: Scan) -> bool:
    """Whether ``--`` or an em-dash starts at ``i``, structural, at a word start (after
    a space, or a brace or comma of a permutation): where a parameter's name may follow."""
    if not scan.structural(i) or not (s.startswith("--", i) or s[i] == "—"):
        return False
    before = s[i - 1] if i else " "
    return before.isspace() or (before in "{," and scan.structural(i - 1))


def _dashes_read(raw: str) -> str:
    """``raw`` with each em-dash that the parser reads as ``--`` written ``--`` (before a
    parameter's name or a permutation of names): a permutation of parameters is then
    sent as each of its expansions is checked and billed, as a ``--name`` outside one
    is. Escaped dashes and those in URLs stay as typed."""
    if "—" not in raw:
        return raw
    scan = scan_text(raw)
    if scan.errors:
        return raw
    read = (
        "--"
        if ch == "—"
        and _dashes_at_word_start(raw, i, scan)
        and (PARAM_WORD.match(raw, i) or raw.startswith("{", i + 1))
        else ch
        for i, ch in enumerate(raw)
    )
    return "".join(read)


def parse_parts(s: Any) -> tuple[list[str], str, list[Entry]]:
    """Split a prompt string into images, text and parameter entries."""
    if not isinstance(s, str):
        raise PayloadError([{"loc": (), "msg": f"a prompt is a str, got {type(s).__name__}"}])
    scan = scan_text(s, ("text",))
    if scan.errors:
        raise PayloadError(scan.errors)
    errors: list[tuple[tuple[str, ...], str]] = []  # (loc, msg)
    words = split_words(s, scan)
    # per word, once (a long prompt has thousands): a permutation of parameters, or
    # the start of an entry (that, or a --name)
    varying = [("{" in w and varies(w)) for w in words]
    entry = [
        v or (w.startswith(("-", "—")) and _is_param_word(w))
        for w, v in zip(words, varying, strict=True)
    ]

    first_text = 0
    while first_text < len(words) and URL_START.match(words[first_text]):
        first_text += 1
    images = words[:first_text]
    first_param = next((i for i in range(first_text, len(words)) if entry[i]), len(words))
    text = collapse_spaces(" ".join(words[first_text:first_param]))

    entries: list[Entry] = []
    seen: dict[str, str] = {}
    i = first_param
    while i < len(words):
        word = words[i]
        j = i + 1
        if varying[i]:  # a permutation of parameters: kept whole, with the words it holds
            j = next((k for k in range(j, len(words)) if entry[k]), len(words))
            raw = _dashes_read(collapse_spaces(" ".join(words[i:j])))
            i = j
            if raw in seen:
                errors.append((("params",), f"{raw!r} is given twice; keep one"))
                continue
            seen[raw] = raw
            entries.append((raw, raw, Variation(raw)))
            continue
        spelling = word[1:] if word.startswith("—") else word[2:]
        key = _canonical(spelling)
        param = PARAMETERS.get(key)
        j = _values_end(words, varying, i, param)
        values = [_dashes_read(collapse_spaces(w)) for w in words[i + 1 : j]]
        i = j
        if not PARAM_NAME.fullmatch(spelling):
            why = "write --name value (names are letters, digits and _)"
            errors.append((("params",), f"malformed parameter {word!r}: {why}"))
            continue
        if key in seen:
            twice = f"--{key} is given twice (as --{seen[key]} and --{spelling}); keep one"
            errors.append((("params", key), twice))
            continue
        seen[key] = spelling
        if param is not None and param.kind == "flag" and values:
            errors.append(_text_after(key, spelling, values, "takes no value"))
        elif param is not None and param.kind in ONE_WORD_KINDS and len(values) > 1:
            errors.append(_text_after(key, spelling, values[1:], f"takes one value ({values[0]})"))
        raw = " ".join(values)
        if j < len(words) and varying[j] and _ends_with_separator(raw):
            entries.append((spelling, key, raw))  # "--no a, {b, c --tile}": the comma stays
        else:
            entries.append((spelling, key, typed_value(key, raw)))
    if errors:
        raise PayloadError([{"loc": loc, "msg": msg} for loc, msg in errors])
    return images, text, entries


def _ends_with_separator(raw: str) -> bool:
    """Whether ``raw`` ends with a comma that separates items (not an escaped one)."""
    pieces = split_outside(raw, ",")
    return len(pieces) > 1 and not pieces[-1].strip()


def _values_end(words: list[str], varying: list[bool], i: int, param: Param | None) -> int:
    """Where the value words of the parameter at ``i`` end: at the next ``--name``
    or at the next permutation of parameters, which is an entry of its own.

    Only a one-word value may be such a permutation itself (``--ar {16:9, 1:1
    --tile}``): after a list, reference or unknown parameter the permutation
    stays apart, so removing a parameter never lets it be read as another's value.
    """
    one_word = param is not None and param.kind in ONE_WORD_KINDS
    j = i + 1
    while j < len(words) and not _is_param_word(words[j]):
        if varying[j] and not (one_word and j == i + 1):
            break
        j += 1
    return j


def _text_after(key: str, spelling: str, extra: list[str], why: str) -> tuple[tuple[str, ...], str]:
    return (
        ("params", key),
        f"text after the parameters: {' '.join(extra)!r} (--{spelling} {why}); "
        "text goes before the first --parameter",
    )


def format_value(key: str, value: Any) -> str:
    """``value`` as written after ``--key`` ("" for a flag)."""
    if value is True:
        return ""
    try:
        if not isinstance(value, (list, tuple)):
            return format_scalar(value)
        items = [format_scalar(v) for v in value]
    except ValueError as exc:  # not finite, or an int too long to write in decimal
        raise PayloadError([{"loc": ("params", key), "msg": str(exc)}]) from None
    param = PARAMETERS.get(key)
    if param is None or param.kind != "list":
        return " ".join(items)
    written = items[:1]
    for before, item in itertools.pairwise(items):
        written.append(_item_separator(before, item) + item)
    return "".join(written)


def _item_separator(before: str, item: str) -> str:
    """``", "``; ``" ,"`` when the item before ends in a URL or a backslash that would
    eat the comma; no space when the next item starts with ``--`` (``x,--ar 16:9``
    is one list: with a space the ``--ar`` would be read as a parameter)."""
    ends_in_url = bool(before) and scan_text(before).in_url(len(before) - 1)
    comma = " ," if before.endswith("\\") or ends_in_url else ","
    return comma if PARAM_WORD.match(item) else comma + " "


def assemble(images: Sequence[str], text: str, entries: Sequence[Entry]) -> str:
    parts = [*images]
    if text:
        parts.append(text)
    for spelling, key, value in entries:
        if isinstance(value, Variation):
            parts.append(value.raw)
            continue
        formatted = format_value(key, value)
        parts.append(f"--{spelling} {formatted}" if formatted else f"--{spelling}")
    return " ".join(parts)


def segments_of(text: str) -> list[Segment]:
    pieces = split_outside(text, "::")
    segments: list[Segment] = []
    current = pieces[0]
    for piece in pieces[1:]:
        weight, rest = _leading_weight(piece)
        segments.append(Segment(collapse_spaces(current), weight))
        current = rest
    if collapse_spaces(current) or not segments:
        segments.append(Segment(collapse_spaces(current), None))
    return [s for s in segments if s.text or s.weight is not None]


def _leading_weight(piece: str) -> tuple[int | float | str | None, str]:
    """The weight written right after a ``::`` and the text that follows it."""
    words = split_words(piece, scan_text(piece)) if piece and not piece[0].isspace() else []
    first = words[0] if words else ""
    rest = piece[len(first) :]
    number = to_number(first, integer=False) if first else None
    if number is not None:
        return number, rest
    if first and all(to_number(a, integer=False) is not None for a in alternatives(first)):
        return first, rest  # a permutation of weights
    return None, piece
