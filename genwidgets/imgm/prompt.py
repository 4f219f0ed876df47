"""imgM prompt strings: parse, build, expand and validate ``--`` parameters.

For the imgM endpoints the parameters live *inside* the prompt string, so this
module is the one place that reads and writes them. The bar (see the peers
notes): never lose a parameter, keep URLs intact, and round-trip:
``Prompt.parse(str(Prompt.parse(s))) == Prompt.parse(s)`` for every accepted ``s``.

Layout: ``[image URLs] [text with ::weights] [--parameters]``.

Choices made where the spec is silent (documented here on purpose):

* **Two kinds of problems.** :meth:`Prompt.parse` raises :class:`PayloadError`
  only for *structural* problems, the ones that leave no faithful way to keep
  every token: unbalanced braces, permutations nested deeper than
  ``MAX_NESTING``, text after the parameters (including a value after a flag,
  or a second word after a one-word value), a malformed parameter name
  (``--ar=1:1``) and a parameter given twice (``--s 1 --stylize 2``).
  Everything else is kept and reported by :meth:`Prompt.validate` (hard errors)
  or :meth:`Prompt.warnings` (soft ones): unknown parameters (kept verbatim in
  their place under their lower-cased name, with a did-you-mean), out-of-range
  numbers, values of the wrong type, bad choices, more than ``MAX_PROMPTS``
  prompts. A widget can therefore show a half-typed prompt with its errors.
* **Permutations of parameters.** ``photo {, --tile}`` and ``a bird --{v 8.1,
  draft}`` vary parameters or their names. Such a permutation (a ``--name`` at
  a word start inside braces, or braces right after ``--``) starts the
  parameter part; it is kept whole as a :class:`Variation` under its own text
  in ``params``, with the plain words that follow it (so
  ``{red bird, blue --tile} bird`` stays one Variation, and its second
  expansion is reported). Only a one-word value may be one itself (``--ar
  {16:9, 1:1 --tile}``); anywhere else it is an entry of its own (a list value
  ending in a comma before it stays the raw string: ``--no a, {b, c --tile}``). Each
  expansion of such a prompt is a full prompt: :meth:`Prompt.errors` and
  :meth:`Prompt.warnings` check every expansion and name the one each problem
  comes from, and :meth:`Prompt.repeats` has one entry per expansion (a
  ``--repeat`` inside one option multiplies that option only).
* **Typed values.** Integers for integer parameters, numbers (``int`` or
  ``float``) for ``quality``/``iw``, ``"W:H"`` strings for ``ar``, a string for
  ``v``/``style``, ``True`` for flags, ``list[str]`` for ``no`` (split on
  unescaped commas, empty items dropped), ``list[Reference]`` for
  ``sref``/``cref``/``oref``. A value that is not of its parameter's type
  (``--seed abc``), a missing value (``--seed`` -> ``""``, or ``[]`` for list
  parameters) and **any value holding a permutation** (``--ar {16:9, 1:1}``)
  stay the raw string as typed; :meth:`Prompt.expand` resolves permutations and
  :meth:`Prompt.validate` checks every alternative. Unknown parameters hold
  their raw value, or ``True`` when they have none.
* **Names** are ASCII ``[A-Za-z][A-Za-z0-9_]*`` after ``--`` (or the em-dash
  ``—``), at the start of a word, matched case-insensitively. A ``--`` that is
  not followed by a letter (``cat -- dog``) or not at a word start
  (``well--known``) is ordinary text.
* **URLs** (``http://`` or ``https://`` at the start of a word) are opaque up to
  the next whitespace: their ``--``, ``::``, commas and braces mean nothing.
  Inside a permutation a URL also ends at a ``,`` or at a ``}`` it did not open.
  In ``--sref``/``--cref``/``--oref`` a trailing ``::<number>`` is the
  reference's weight (the service's syntax), even after a URL.
* **Escapes**: a backslash takes the next character literally: ``\\,`` is a
  comma that neither separates alternatives nor ``--no`` items, ``\\{`` and
  ``\\}`` are braces that make no permutation, ``\\\\`` is one backslash.
  ``str()`` keeps escapes as written; :meth:`Prompt.expand` (what is sent)
  resolves them, drops the spaces before an escaped comma (``pastel \\,
  yellow`` -> ``pastel, yellow``, as the documentation shows) and a lone final
  backslash, so no backslash is sent unless ``\\\\`` was written. URLs are
  opaque, escapes included.
* **The cap.** One permutation prompt makes at most ``MAX_PROMPTS`` (40)
  prompts: more is an error naming the count. Above ``CONFIRM_ABOVE`` (5) the
  builder shows the count prominently.
* **Weights.** ``::`` parts may carry any number (``::-.5``, ``::2.5``); their
  sum (``--no`` counting as one ``-0.5`` part) must be positive, or the error
  names the sum. ``::`` with ``--v 7`` or later is a warning: the multi-prompt
  documentation lists versions up to 6.1.
* **Whitespace** runs collapse to one space; alternatives are stripped.
* **Order and spelling.** A parsed prompt keeps the user's order and spelling
  (``--s 250`` stays ``--s``; the em-dash becomes ``--``). A Prompt built from
  ``params`` writes canonical names in the spec table's order (``PARAMETERS``).
  :meth:`Prompt.with_params` keeps existing parameters in place and appends new
  ones in table order. ``str()`` is therefore stable, and a fixpoint:
  ``str(parse(str(p))) == str(p)``.
* **Equality** compares images, text and the params mapping (not spelling or
  order), so ``--s 250`` equals ``--stylize 250``.
* ``--iw`` must be a number ``>= 0`` (the spec gives only its default);
  ``--sv`` a whole number; ``--cref``/``--oref`` values must be http(s) URLs;
  a prompt needs text or an image. More than ``MANY_JOBS`` billed jobs is a
  warning, since each expansion and each repeat is billed. ``--p``, ``--niji``
  and ``--video`` are Midjourney parameters the gateway's table lacks: kept,
  round-tripped, reported as unknown with what they are.
"""

from __future__ import annotations

import difflib
import itertools
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, NamedTuple

from ..errors import PayloadError

__all__ = [
    "ALIASES",
    "CONFIRM_ABOVE",
    "MANY_JOBS",
    "MAX_NESTING",
    "MAX_PROMPTS",
    "PARAMETERS",
    "Param",
    "Prompt",
    "PromptWarning",
    "Reference",
    "Segment",
    "Variation",
    "format_value",
    "permutation_spans",
]

MAX_NESTING = 20
"""Deepest permutation nesting accepted (keeps every walk bounded)."""

MANY_JOBS = 40
"""Above this many billed jobs, :meth:`Prompt.warnings` says so."""

MAX_PROMPTS = 40
"""One permutation prompt makes at most this many prompts (the service's cap)."""

CONFIRM_ABOVE = 5
"""Above this many prompts the service asks for confirmation; the builder says so loudly."""

_CHECK_LIMIT = 1000
"""At most this many alternatives of one value (or of the text) are checked."""


@dataclass(frozen=True)
class Param:
    """One row of the spec's "Prompt-string parameters" table."""

    name: str
    kind: str  # int | number | ratio | text | flag | list | refs
    meaning: str
    aliases: tuple[str, ...] = ()
    low: float | None = None
    high: float | None = None
    choices: tuple[Any, ...] = ()

    def describe(self) -> str:
        """What the parameter accepts, for error messages and widget tooltips."""
        if self.choices:
            return "one of " + ", ".join(_format_scalar(c) for c in self.choices)
        if self.kind == "int":
            if self.low is not None and self.high is not None:
                return f"a whole number {_format_scalar(self.low)}-{_format_scalar(self.high)}"
            return "a whole number"
        if self.kind == "number":
            return "a number >= 0" if self.low == 0 else "a number"
        return {
            "ratio": "whole numbers W:H such as 16:9",
            "text": "a value such as 8.1",
            "flag": "no value",
            "list": "comma-separated words",
            "refs": "references separated by spaces, each with an optional ::weight",
        }[self.kind]


_SPEEDS = ("relax", "fast", "turbo")
_FULL_MODEL_STYLES = ("raw",)

PARAMETERS: dict[str, Param] = {
    p.name: p
    for p in (
        Param("ar", "ratio", "aspect ratio", ("aspect",)),
        Param("v", "text", "model version", ("version",)),
        Param("iw", "number", "image weight", low=0),
        Param("draft", "flag", "draft mode"),
        Param("no", "list", "negative prompt"),
        Param("quality", "number", "render effort", ("q",), choices=(0.25, 0.5, 1, 2)),
        Param("repeat", "int", "repeat generation", ("r",), 1, 40),
        Param("seed", "int", "seed", (), 0, 4294967295),
        Param("stop", "int", "early stop percentage", (), 10, 100),
        Param("relax", "flag", "relaxed speed"),
        Param("fast", "flag", "fast speed"),
        Param("turbo", "flag", "turbo speed"),
        Param("stylize", "int", "stylization", ("s",), 0, 1000),
        Param("chaos", "int", "diversity", ("c",), 0, 100),
        Param("weird", "int", "weirdness", ("w",), 0, 3000),
        Param(
            "style",
            "text",
            "style mode",
            choices=("raw", "cute", "expressive", "original", "scenic"),
        ),
        Param("exp", "int", "creative style", (), 0, 100),
        Param("tile", "flag", "seamless pattern"),
        Param("sref", "refs", "style reference"),
        Param("sw", "int", "style reference weight", (), 0, 1000),
        Param("sv", "int", "style reference version"),
        Param("cref", "refs", "character reference"),
        Param("cw", "int", "character reference weight", (), 0, 100),
        Param("oref", "refs", "omni reference"),
        Param("ow", "int", "omni reference weight", (), 1, 1000),
    )
}
"""Canonical name -> its row, in the spec table's order (the output order)."""

ALIASES: dict[str, str] = {a: p.name for p in PARAMETERS.values() for a in p.aliases}
"""Alias -> canonical name (``aspect`` -> ``ar``, ``s`` -> ``stylize``, ...)."""

_ORDER = {name: i for i, name in enumerate(PARAMETERS)}
_ONE_WORD_KINDS = ("int", "number", "ratio", "text")
_WEIGHT_OF = {"sw": "sref", "sv": "sref", "cw": "cref", "ow": "oref"}

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_PARAM_WORD = re.compile(r"(?:--|—)[A-Za-z]")
_URL_START = re.compile(r"[Hh][Tt][Tt][Pp][Ss]?://\S")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")
_INT = re.compile(r"[+-]?[0-9]+")
_RATIO = re.compile(r"([0-9]+):([0-9]+)")
_MAX_DIGITS = 30


# --------------------------------------------------------------------------- values


@dataclass(frozen=True)
class Reference:
    """One ``--sref``/``--cref``/``--oref`` source: a URL, style code or ``random``.

    ``str()`` writes it back as typed: ``value`` or ``value::weight``.
    """

    value: str
    weight: int | float | None = None

    def __str__(self) -> str:
        if self.weight is None:
            return self.value
        return f"{self.value}::{_format_scalar(self.weight)}"


@dataclass(frozen=True)
class Variation:
    """A permutation that varies parameters (``{, --tile}``, ``--{v 8.1, draft}``).

    It stays as written, in its place among the parameters; each of its options
    makes a different prompt, so the prompt is checked and billed per expansion.
    ``str()`` writes it back as typed.
    """

    raw: str

    def __str__(self) -> str:
        return self.raw


class Segment(NamedTuple):
    """One part of a multi-prompt: its text and its ``::`` weight.

    ``weight`` is None when no number follows the ``::`` (the part counts as 1),
    a number when one does, or the raw string when the weight is a permutation
    (``::{1, 2}``). A NamedTuple, so it also unpacks as a ``(text, weight)`` pair.
    """

    text: str
    weight: int | float | str | None


class PromptWarning(str):
    """A soft problem: a plain string (so ``"2:1" in w`` works) with a ``loc``."""

    loc: tuple[str, ...]

    def __new__(cls, msg: str, loc: tuple[str, ...] = ()) -> PromptWarning:
        self = super().__new__(cls, msg)
        self.loc = loc
        return self


def _format_scalar(value: Any) -> str:
    """Numbers as plain decimals (never exponents), so they parse back the same."""
    if isinstance(value, bool):
        return "" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value} is not a finite number")
        if value.is_integer():
            return str(int(value))  # exact, so it parses back as an equal int
        return format(Decimal(repr(value)), "f")
    if isinstance(value, Reference):
        return str(value)
    return str(value)


def _to_number(text: str, *, integer: bool) -> int | float | None:
    """``text`` as a number, or None when it is not one we write back exactly."""
    if integer:
        if not _INT.fullmatch(text) or len(text) > _MAX_DIGITS:
            return None
        return int(text)
    if not _NUMBER.fullmatch(text) or len(text) > _MAX_DIGITS:
        return None
    if "." not in text:
        return int(text)
    number = float(text)
    return number if math.isfinite(number) else None


def _norm(text: str) -> str:
    return " ".join(text.split())


# --------------------------------------------------------------------------- scanning

_PLAIN, _URL, _ESCAPE = 0, 1, 2


class _Scan(NamedTuple):
    """Per character: its brace depth (braces carry their outer depth) and kind."""

    depth: list[int]
    kind: list[int]
    errors: list[dict[str, Any]]

    def structural(self, i: int) -> bool:
        return self.kind[i] == _PLAIN


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


def _scan(s: str, loc: tuple[str, ...] = ("text",)) -> _Scan:
    """Mark URLs, escapes and brace depths; collect brace errors."""
    depth = [0] * len(s)
    kind = [_PLAIN] * len(s)
    errors: list[dict[str, Any]] = []
    opened: list[int] = []
    i = 0
    while i < len(s):
        ch = s[i]
        at_word_start = i == 0 or s[i - 1].isspace() or (s[i - 1] in "{," and kind[i - 1] == _PLAIN)
        if at_word_start and _URL_START.match(s, i):
            end = _url_end(s, i, len(opened))
            for k in range(i, end):
                depth[k], kind[k] = len(opened), _URL
            i = end
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
                errors.append(
                    {
                        "loc": loc,
                        "msg": f"permutations nest deeper than {MAX_NESTING} levels "
                        f"(at character {i + 1})",
                    }
                )
        elif ch == "}":
            if opened:
                opened.pop()
                depth[i] = len(opened)
            else:
                errors.append(
                    {
                        "loc": loc,
                        "msg": f"unbalanced braces: '}}' at character {i + 1} closes nothing",
                    }
                )
        i += 1
    errors.extend(
        {"loc": loc, "msg": f"unbalanced braces: '{{' at character {o + 1} is never closed"}
        for o in opened
    )
    return _Scan(depth, kind, errors)


def _words(s: str, scan: _Scan) -> list[str]:
    """Split on whitespace outside braces (a permutation stays one word)."""
    words: list[str] = []
    start: int | None = None
    for i, ch in enumerate(s):
        if ch.isspace() and scan.depth[i] == 0:
            if start is not None:
                words.append(s[start:i])
                start = None
        elif start is None:
            start = i
    if start is not None:
        words.append(s[start:])
    return words


def permutation_spans(s: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each top-level ``{...}`` of a prompt string, in order.

    Read as :meth:`Prompt.parse` reads them: URLs are opaque and escaped braces
    are text. Raises PayloadError when the braces do not balance.
    """
    scan = _scan(s)
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


def _has_permutation(s: str) -> bool:
    scan = _scan(s)
    return any(ch == "{" and scan.structural(i) for i, ch in enumerate(s))


def _split_outside(s: str, sep: str) -> list[str]:
    """Split on ``sep`` where it is structural (outside URLs, braces and escapes)."""
    scan = _scan(s)
    parts: list[str] = []
    start = i = 0
    while i <= len(s) - len(sep):
        if s.startswith(sep, i) and all(
            scan.depth[k] == 0 and scan.structural(k) for k in range(i, i + len(sep))
        ):
            parts.append(s[start:i])
            i += len(sep)
            start = i
        else:
            i += 1
    parts.append(s[start:])
    return parts


# --------------------------------------------------------------------------- permutations


class _Group(NamedTuple):
    alternatives: list[list[Any]]  # each alternative: a sequence of str | _Group


def _tree(s: str, unescape: bool) -> list[Any]:
    """The permutation structure of ``s`` (which must have balanced braces).

    With ``unescape`` an escape gives its character alone (what is sent); without,
    the escape stays as written (what parses back to the same prompt).
    """
    scan = _scan(s)
    root: list[Any] = []
    stack: list[tuple[list[Any], _Group]] = []
    current = root
    i = 0
    while i < len(s):
        ch = s[i]
        if scan.kind[i] == _ESCAPE and ch == "\\":
            if unescape and s[i + 1] == ",":  # "pastel \, yellow" reads "pastel, yellow"
                while current and isinstance(current[-1], str) and current[-1].isspace():
                    current.pop()
            current.append(s[i + 1] if unescape else s[i : i + 2])
            i += 2
            continue
        if unescape and ch == "\\" and scan.structural(i):
            i += 1  # a lone backslash at the very end: never sent
            continue
        if scan.structural(i) and ch == "{":
            group = _Group([[]])
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
            current.append(ch)
        i += 1
    return root


def _count_sequence(sequence: list[Any]) -> int:
    total = 1
    for item in sequence:
        if isinstance(item, _Group):
            total *= sum(_count_sequence(alt) for alt in item.alternatives)
    return total


def _expand_sequence(sequence: list[Any]) -> Iterator[str]:
    options: list[Any] = []
    for item in sequence:
        if isinstance(item, _Group):
            options.append(_GroupOptions(item))
        else:
            options.append((item,))
    for combo in itertools.product(*options):
        yield "".join(combo)


class _GroupOptions:
    """The expansions of one group, re-iterable (itertools.product needs that)."""

    def __init__(self, group: _Group) -> None:
        self.group = group

    def __iter__(self) -> Iterator[str]:
        for alternative in self.group.alternatives:
            for text in _expand_sequence(alternative):
                yield text.strip()


def _expansions(s: str, unescape: bool = False) -> Iterator[str]:
    """Every prompt of ``s`` in order: as sent (``unescape``) or as source text."""
    for text in _expand_sequence(_tree(s, unescape)):
        yield _norm(text)


def _count(s: str) -> int:
    return _count_sequence(_tree(s, False))


# --------------------------------------------------------------------------- parsing


_Entry = tuple[str, str, Any]  # (spelling as typed, canonical key, value)


def _canonical(name: str) -> str:
    low = name.lower()
    return ALIASES.get(low, low)


def _key_of(name: Any, value: Any) -> str:
    """The params key of a value given by name: a Variation is keyed by its text."""
    return _norm(value.raw) if isinstance(value, Variation) else _canonical(str(name))


def _typed(key: str, raw: str) -> Any:
    """The typed value of ``--key raw`` (the raw string when it does not fit)."""
    param = PARAMETERS.get(key)
    if param is None:
        return raw or True
    if param.kind == "flag":
        return True
    if _has_permutation(raw):
        return raw
    if param.kind == "int":
        number = _to_number(raw, integer=True)
        return raw if number is None else number
    if param.kind == "number":
        number = _to_number(raw, integer=False)
        return raw if number is None else number
    if param.kind == "list":
        return [item for item in (_norm(p) for p in _split_outside(raw, ",")) if item]
    if param.kind == "refs":
        return [_reference(word) for word in raw.split()]
    return raw


def _reference(word: str) -> Reference:
    value, sep, weight = word.rpartition("::")
    number = _to_number(weight, integer=False) if sep and value else None
    return Reference(word) if number is None else Reference(value, number)


def _is_param_word(word: str) -> bool:
    return _PARAM_WORD.match(word) is not None


def _varies(s: str) -> bool:
    """Whether ``s`` has a permutation that varies parameters.

    That is a parameter at a word start inside braces (``{, --tile}``) or braces
    right after the dashes (``--{v 8.1, draft}``), outside URLs and escapes.
    """
    if "{" not in s:
        return False
    scan = _scan(s)
    if scan.errors:
        return False
    for i in range(len(s)):
        if not scan.structural(i) or s[i] not in "-—":
            continue
        before = s[i - 1] if i else " "
        at_word_start = before.isspace() or (before in "{," and scan.structural(i - 1))
        if not at_word_start:
            continue
        after = i + (1 if s[i] == "—" else 2)
        if s.startswith("--", i) or s[i] == "—":
            if after < len(s) and s[after] == "{" and scan.structural(after):
                return True
            if scan.depth[i] > 0 and _PARAM_WORD.match(s, i):
                return True
    return False


def _parse(s: Any) -> tuple[list[str], str, list[_Entry]]:
    """Split a prompt string into images, text and parameter entries."""
    if not isinstance(s, str):
        raise PayloadError([{"loc": (), "msg": f"a prompt is a str, got {type(s).__name__}"}])
    scan = _scan(s, ("text",))
    if scan.errors:
        raise PayloadError(scan.errors)
    errors: list[dict[str, Any]] = []
    words = _words(s, scan)
    varying = [_varies(w) for w in words]

    def starts_entry(i: int) -> bool:
        return varying[i] or _is_param_word(words[i])

    first_text = 0
    while first_text < len(words) and _URL_START.match(words[first_text]):
        first_text += 1
    images = words[:first_text]
    first_param = next((i for i in range(first_text, len(words)) if starts_entry(i)), len(words))
    text = _norm(" ".join(words[first_text:first_param]))

    entries: list[_Entry] = []
    seen: dict[str, str] = {}
    i = first_param
    while i < len(words):
        word = words[i]
        j = i + 1
        if varying[i]:  # a permutation of parameters: kept whole, with the words it holds
            j = next((k for k in range(j, len(words)) if starts_entry(k)), len(words))
            raw = _norm(" ".join(words[i:j]))
            i = j
            if raw in seen:
                errors.append({"loc": ("params",), "msg": f"{raw!r} is given twice; keep one"})
                continue
            seen[raw] = raw
            entries.append((raw, raw, Variation(raw)))
            continue
        spelling = word[1:] if word.startswith("—") else word[2:]
        key = _canonical(spelling)
        param = PARAMETERS.get(key)
        j = _values_end(words, varying, i, param)
        values = [_norm(w) for w in words[i + 1 : j]]
        i = j
        if not _NAME.fullmatch(spelling):
            errors.append(
                {
                    "loc": ("params",),
                    "msg": f"malformed parameter {word!r}: write --name value "
                    "(names are letters, digits and _)",
                }
            )
            continue
        if key in seen:
            errors.append(
                {
                    "loc": ("params", key),
                    "msg": f"--{key} is given twice (as --{seen[key]} and --{spelling}); keep one",
                }
            )
            continue
        seen[key] = spelling
        if param is not None and param.kind == "flag" and values:
            errors.append(_text_after(key, spelling, values, "takes no value"))
        elif param is not None and param.kind in _ONE_WORD_KINDS and len(values) > 1:
            errors.append(_text_after(key, spelling, values[1:], f"takes one value ({values[0]})"))
        raw = " ".join(values)
        if j < len(words) and varying[j] and _ends_with_separator(raw):
            entries.append((spelling, key, raw))  # "--no a, {b, c --tile}": the comma stays
        else:
            entries.append((spelling, key, _typed(key, raw)))
    if errors:
        raise PayloadError(errors)
    return images, text, entries


def _ends_with_separator(raw: str) -> bool:
    """Whether ``raw`` ends with a comma that separates items (not an escaped one)."""
    pieces = _split_outside(raw, ",")
    return len(pieces) > 1 and not pieces[-1].strip()


def _values_end(words: list[str], varying: list[bool], i: int, param: Param | None) -> int:
    """Where the value words of the parameter at ``i`` end: at the next ``--name``
    or at the next permutation of parameters, which is an entry of its own.

    Only a one-word value may be such a permutation itself (``--ar {16:9, 1:1
    --tile}``): after a list, reference or unknown parameter the permutation
    stays apart, so removing a parameter never lets it be read as another's value.
    """
    one_word = param is not None and param.kind in _ONE_WORD_KINDS
    j = i + 1
    while j < len(words) and not _is_param_word(words[j]):
        if varying[j] and not (one_word and j == i + 1):
            break
        j += 1
    return j


def _text_after(key: str, spelling: str, extra: list[str], why: str) -> dict[str, Any]:
    return {
        "loc": ("params", key),
        "msg": f"text after the parameters: {' '.join(extra)!r} (--{spelling} {why}); "
        "text goes before the first --parameter",
    }


def format_value(key: str, value: Any) -> str:
    """``value`` as written after ``--key`` ("" for a flag)."""
    if value is True:
        return ""
    try:
        if not isinstance(value, (list, tuple)):
            return _format_scalar(value)
        items = [_format_scalar(v) for v in value]
    except ValueError as exc:  # not finite, or an int too long to write in decimal
        raise PayloadError([{"loc": ("params", key), "msg": str(exc)}]) from None
    param = PARAMETERS.get(key)
    if param is None or param.kind != "list":
        return " ".join(items)
    return "".join(item + _item_separator(item) for item in items[:-1]) + "".join(items[-1:])


def _item_separator(item: str) -> str:
    """ ", " -- or " , " when the item ends in a URL or a backslash that would eat it."""
    kinds = _scan(item).kind
    return " , " if item.endswith("\\") or (kinds and kinds[-1] == _URL) else ", "


def _assemble(images: Sequence[str], text: str, entries: Sequence[_Entry]) -> str:
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


# --------------------------------------------------------------------------- the Prompt


class Prompt:
    """An imgM prompt: image URLs, text with ``::`` weights, and ``--`` parameters.

    ``Prompt.parse(s)`` reads a string; ``Prompt(text=..., params=..., images=...)``
    builds one (aliases allowed as keys; None or False leaves a parameter out).
    Both normalize through the same parser, so ``str()`` always parses back equal.
    """

    __slots__ = ("_entries", "_images", "_text")
    _images: tuple[str, ...]
    _text: str
    _entries: tuple[_Entry, ...]

    def __init__(
        self,
        text: str = "",
        params: Mapping[str, Any] | None = None,
        images: Sequence[str] | None = None,
    ) -> None:
        if not isinstance(text, str):
            raise PayloadError([{"loc": ("text",), "msg": "text must be a str"}])
        if isinstance(images, str) or not isinstance(images, (Sequence, type(None))):
            raise PayloadError([{"loc": ("images",), "msg": "images must be a list of URLs"}])
        changes: dict[str, Any] = {}
        for name, value in (params or {}).items():
            key = _key_of(name, value)
            if key in changes:
                raise PayloadError(
                    [{"loc": ("params", key), "msg": f"--{key} is given twice; keep one"}]
                )
            changes[key] = value
        entries = _merged([], changes)
        built = Prompt._rebuild([str(i) for i in images or ()], _norm(text), entries)
        self._images, self._text, self._entries = built._images, built._text, built._entries

    @classmethod
    def _make(cls, images: Sequence[str], text: str, entries: Sequence[_Entry]) -> Prompt:
        self = object.__new__(cls)
        self._images = tuple(images)
        self._text = text
        self._entries = tuple(entries)
        return self

    @classmethod
    def _rebuild(cls, images: Sequence[str], text: str, entries: Sequence[_Entry]) -> Prompt:
        """Write the parts as a string and parse it back, refusing anything lost."""
        errors: list[dict[str, Any]] = [
            {
                "loc": ("images", n),
                "msg": f"image {image!r} is not one http(s):// URL without spaces",
            }
            for n, image in enumerate(images)
            if not _URL_START.match(image) or any(c.isspace() for c in image)
        ]
        if errors:
            raise PayloadError(errors)
        for spelling, key, value in entries:
            if not isinstance(value, Variation) and not _NAME.fullmatch(spelling):
                errors.append({"loc": ("params", key), "msg": f"{key!r} is not a parameter name"})
        if errors:
            raise PayloadError(errors)
        parsed = cls.parse(_assemble(images, text, entries))
        if list(parsed._images) != list(images) or parsed._text != text:
            errors.append(
                {
                    "loc": ("text",),
                    "msg": "text must not start with an image URL or hold a --parameter: "
                    "pass those as images / params",
                }
            )
        wanted = [key for _, key, _ in entries]
        got = [key for _, key, _ in parsed._entries]
        if got != wanted:
            culprits = [key for key in wanted if key not in got]
            previous: tuple[str, ...] = ("text",)
            for key in got:
                if key in wanted:
                    previous = ("params", key)
                elif previous[-1] not in culprits:
                    culprits.append(previous[-1])
            errors.extend(
                {
                    "loc": ("text",) if key == "text" else ("params", key),
                    "msg": f"the value of --{key} would not survive in the prompt string "
                    "(it holds a --parameter)"
                    if key != "text"
                    else "text must not hold a --parameter: pass it in params",
                }
                for key in culprits
            )
        if errors:
            raise PayloadError(errors)
        return parsed

    # ---------------------------------------------------------------- reading

    @classmethod
    def parse(cls, s: str) -> Prompt:
        """Parse a prompt string; raises PayloadError for structural problems only."""
        images, text, entries = _parse(s)
        return cls._make(images, text, entries)

    @property
    def text(self) -> str:
        """The text between the images and the parameters (``::`` weights included)."""
        return self._text

    @property
    def images(self) -> list[str]:
        """The leading image URLs (a copy)."""
        return list(self._images)

    @property
    def params(self) -> dict[str, Any]:
        """Canonical name -> typed value, in output order (a copy)."""
        return {key: _copy(value) for _, key, value in self._entries}

    @property
    def segments(self) -> list[Segment]:
        """The text split on ``::`` (outside URLs and permutations) with weights."""
        return _segments(self._text)

    def __str__(self) -> str:
        return _assemble(self._images, self._text, self._entries)

    def __repr__(self) -> str:
        return f"Prompt.parse({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Prompt):
            return NotImplemented
        return (self._images, self._text, self.params) == (other._images, other._text, other.params)

    __hash__ = None  # type: ignore[assignment]  # values may be lists

    # ---------------------------------------------------------------- building

    def with_params(self, **changes: Any) -> Prompt:
        """A new Prompt with parameters set (aliases allowed); None or False removes one."""
        merged: dict[str, Any] = {}
        for name, value in changes.items():
            key = _key_of(name, value)
            if key in merged:
                raise PayloadError(
                    [{"loc": ("params", key), "msg": f"--{key} is given twice; keep one"}]
                )
            merged[key] = value
        return Prompt._rebuild(self._images, self._text, _merged(list(self._entries), merged))

    # ---------------------------------------------------------------- permutations

    def count(self) -> int:
        """How many prompts the permutations make (computed without expanding)."""
        return _count(str(self))

    def expand(self) -> list[str]:
        """Every prompt string the permutations make, in order, as sent (each is billed).

        Escapes are resolved: ``\\,`` gives ``,``, ``\\{`` gives ``{``, ``\\\\`` gives one
        backslash; no other backslash outside a URL is sent.
        """
        return list(_expansions(str(self), unescape=True))

    @property
    def varies_parameters(self) -> bool:
        """Whether a permutation varies parameters, so each expansion is checked apart."""
        return any(isinstance(v, Variation) for _, _, v in self._entries) or any(
            isinstance(v, str) and _varies(v) for _, _, v in self._entries
        )

    def _variants(self, limit: int = MAX_PROMPTS) -> list[tuple[str, Prompt | PayloadError]]:
        """The first ``limit`` expansions, each with its prompt or the error parsing raised.

        Escapes stay as written, so each one reads back as the prompt that is sent.
        """
        found: list[tuple[str, Prompt | PayloadError]] = []
        for source in itertools.islice(_expansions(str(self)), limit):
            try:
                found.append((source, Prompt.parse(source)))
            except PayloadError as error:
                found.append((source, error))
        return found

    def jobs(self) -> int:
        """Billed jobs: each expansion, times its ``--repeat``."""
        repeats = self.repeats()
        total = self.count()
        return total // len(repeats) * sum(repeats)

    def repeats(self) -> list[int]:
        """The ``--repeat`` of each alternative (``[1]`` without one; bad values count 1).

        When a permutation varies parameters, one entry per expansion, so a
        ``--repeat`` inside one option multiplies that option only.
        """
        if self.varies_parameters:
            count = self.count()
            if count > _CHECK_LIMIT:
                return [1]
            return [
                v.repeats()[0] if isinstance(v, Prompt) else 1 for _, v in self._variants(count)
            ]
        raw = next((v for _, k, v in self._entries if k == "repeat"), None)
        if raw is None:
            return [1]
        values = list(_expansions(raw)) if isinstance(raw, str) else [str(raw)]
        counts = []
        for value in values:
            number = _to_number(value, integer=True)
            counts.append(int(number) if number is not None and number >= 1 else 1)
        return counts

    # ---------------------------------------------------------------- checking

    def errors(self) -> list[dict[str, Any]]:
        """Every hard problem as ``{"loc", "msg"}`` (what validate() would raise)."""
        count = self.count()
        found: list[dict[str, Any]] = []
        if count > MAX_PROMPTS:
            found.append(
                {
                    "loc": ("text",),
                    "msg": f"this prompt makes {count} prompts; one permutation prompt makes "
                    f"at most {MAX_PROMPTS}: remove options or split it",
                }
            )
        if not self.varies_parameters:
            return found + _Checker(self).errors()
        problems = [
            (n, source, e["loc"], e["msg"])
            for n, (source, variant) in enumerate(self._variants(), 1)
            for e in (variant.errors if isinstance(variant, PayloadError) else variant.errors())
        ]
        return found + [{"loc": loc, "msg": msg} for loc, msg in _per_expansion(problems, count)]

    def warnings(self) -> list[PromptWarning]:
        """Soft problems: experimental ratios, other versions, orphan weights, cost."""
        if not self.varies_parameters:
            return _Checker(self).warnings()
        problems = [
            (n, source, w.loc, str(w))
            for n, (source, variant) in enumerate(self._variants(), 1)
            if isinstance(variant, Prompt)
            for w in variant.warnings()
        ]
        found = [PromptWarning(msg, loc) for loc, msg in _per_expansion(problems, self.count())]
        jobs = self.jobs()
        if jobs > MANY_JOBS:
            found.append(_cost_warning(jobs))
        return found

    def validate(self) -> Prompt:
        """Raise PayloadError listing every problem; return self when there is none."""
        problems = self.errors()
        if problems:
            raise PayloadError(problems)
        return self


def _per_expansion(
    problems: Sequence[tuple[int, str, tuple[Any, ...], str]], count: int
) -> list[tuple[tuple[Any, ...], str]]:
    """Each problem of the expansions once, naming the expansion(s) it comes from."""
    where: dict[tuple[tuple[Any, ...], str], list[tuple[int, str]]] = {}
    for n, source, loc, msg in problems:
        where.setdefault((tuple(loc), msg), []).append((n, source))
    found = []
    for (loc, msg), places in where.items():
        if len(places) == 1:
            n, source = places[0]
            found.append((loc, f"in prompt {n} of {count} ({source!r}): {msg}"))
        else:
            numbers = ", ".join(str(n) for n, _ in places)
            found.append((loc, f"in prompts {numbers} of {count} ({places[0][1]!r}, …): {msg}"))
    return found


def _copy(value: Any) -> Any:
    return list(value) if isinstance(value, list) else value


def _merged(entries: list[_Entry], changes: Mapping[str, Any]) -> list[_Entry]:
    """Apply changes: replace in place, drop None/False, append new in table order."""
    result: list[_Entry] = []
    for spelling, key, value in entries:
        if key not in changes:
            result.append((spelling, key, value))
        elif changes[key] is not None and changes[key] is not False:
            result.append((spelling, key, changes[key]))
    present = {key for _, key, _ in entries}
    new = [
        (key, key, value)
        for key, value in changes.items()
        if key not in present and value is not None and value is not False
    ]
    # Variations go first: after a list parameter they would be read as its value.
    new.sort(key=lambda e: -1 if isinstance(e[2], Variation) else _ORDER.get(e[1], len(_ORDER)))
    return result + new


def _segments(text: str) -> list[Segment]:
    pieces = _split_outside(text, "::")
    segments: list[Segment] = []
    current = pieces[0]
    for piece in pieces[1:]:
        weight, rest = _leading_weight(piece)
        segments.append(Segment(_norm(current), weight))
        current = rest
    if _norm(current) or not segments:
        segments.append(Segment(_norm(current), None))
    return [s for s in segments if s.text or s.weight is not None]


def _leading_weight(piece: str) -> tuple[int | float | str | None, str]:
    """The weight written right after a ``::`` and the text that follows it."""
    words = _words(piece, _scan(piece)) if piece and not piece[0].isspace() else []
    first = words[0] if words else ""
    rest = piece[len(first) :]
    number = _to_number(first, integer=False) if first else None
    if number is not None:
        return number, rest
    if first and _has_permutation(first):
        alternatives = list(itertools.islice(_expansions(first), _CHECK_LIMIT))
        if all(_to_number(a, integer=False) is not None for a in alternatives):
            return first, rest
    return None, piece


class _Checker:
    """Hard and soft rules of the spec's table, over every alternative of a value."""

    def __init__(self, prompt: Prompt) -> None:
        self.prompt = prompt
        self.spelling = {key: spelling for spelling, key, _ in prompt._entries}
        self.values = {key: value for _, key, value in prompt._entries}

    def alternatives(self, key: str) -> list[Any]:
        value = self.values[key]
        if isinstance(value, str) and _has_permutation(value):
            return [_typed(key, a) for a in itertools.islice(_expansions(value), _CHECK_LIMIT)]
        return [value]

    def errors(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []

        def add(loc: tuple[str, ...], msg: str) -> None:
            if {"loc": loc, "msg": msg} not in found:
                found.append({"loc": loc, "msg": msg})

        prompt = self.prompt
        if not prompt._text and not prompt._images:
            add(("text",), "the prompt needs text or an image URL")
        for key in self.values:
            param = PARAMETERS.get(key)
            shown = f"--{self.spelling[key]}"
            if param is None:
                add(("params", key), _unknown(shown, key))
                continue
            for value in self.alternatives(key):
                problem = _value_problem(param, value)
                if problem:
                    add(("params", key), f"{shown} {problem}")
        speeds = [f"--{self.spelling[k]}" for k in _SPEEDS if k in self.values]
        if len(speeds) > 1:
            add(
                ("params", "speed"),
                f"one speed at most: {' and '.join(speeds)} are both set "
                "(choose --relax, --fast or --turbo)",
            )
        has_no = "no" in self.values
        for text in itertools.islice(_expansions(prompt._text), _CHECK_LIMIT):
            segments = _segments(text)
            if not segments or (all(s.weight is None for s in segments) and not has_no):
                continue
            total = sum(s.weight if isinstance(s.weight, (int, float)) else 1 for s in segments) + (
                -0.5 if has_no else 0
            )
            if total <= 0:
                add(
                    ("text",),
                    f"the :: weights of {text!r} add up to {_format_scalar(float(total))}"
                    + (" (--no counts as one -0.5 part)" if has_no else "")
                    + "; their sum must be positive",
                )
        return found

    def warnings(self) -> list[PromptWarning]:
        found: list[PromptWarning] = []

        def add(loc: tuple[str, ...], msg: str) -> None:
            if msg not in found:
                found.append(PromptWarning(msg, loc))

        for key in self.values:
            shown = f"--{self.spelling[key]}"
            for value in self.alternatives(key):
                if key == "ar" and isinstance(value, str) and (m := _RATIO.fullmatch(value)):
                    w, h = int(m.group(1)), int(m.group(2))
                    if w and h and max(w / h, h / w) > 2:
                        add(("params", key), f"{shown} {value} is beyond 2:1: experimental")
                elif key == "v" and value != "8.1":
                    add(
                        ("params", key),
                        f"{shown} {format_value(key, value)}: the service uses --v 8.1",
                    )
                elif key == "style" and value in PARAMETERS["style"].choices[1:]:
                    add(
                        ("params", key),
                        f"{shown} {value} works on another model variant; the main model takes raw",
                    )
                elif key == "quality" and value == 2:
                    add(("params", key), f"{shown} 2 works on some versions only")
        for key, needs in _WEIGHT_OF.items():
            if key in self.values and needs not in self.values:
                add(("params", key), f"--{self.spelling[key]} has no effect without --{needs}")
        if "iw" in self.values and not self.prompt._images:
            add(("params", "iw"), f"--{self.spelling['iw']} has no effect without an image URL")
        self.weights_and_version(add)
        jobs = self.prompt.jobs()
        if jobs > MANY_JOBS:
            add(("params",), _cost_warning(jobs))
        return found

    def weights_and_version(self, add: Callable[[tuple[str, ...], str], None]) -> None:
        """Warn when ``::`` weights meet a ``--v`` the multi-prompt page does not list."""
        if "v" not in self.values or len(_split_outside(self.prompt._text, "::")) < 2:
            return
        for value in self.alternatives("v"):
            major = re.match(r"[0-9]+", str(value))
            if major and int(major.group()) >= 7:
                add(
                    ("params", "v"),
                    f"--{self.spelling['v']} {format_value('v', value)} with :: weights: the "
                    "multi-prompt documentation lists versions up to 6.1 only; the weights "
                    "may be ignored",
                )
                return


_OUTSIDE_THE_TABLE = {
    "p": "personalization",
    "personalize": "personalization",
    "niji": "the anime model",
    "video": "video from an image",
    "hd": "high definition video",
    "profile": "personalization profile",
    "raw": "raw mode (write --style raw)",
}
"""Midjourney parameters that the gateway's table does not list: named, not refused silently."""


def _unknown(shown: str, key: str) -> str:
    """Unknown parameter: what it is when we know, the closest names, and what is known."""
    names = [*PARAMETERS, *ALIASES]
    close = difflib.get_close_matches(key, names, n=3, cutoff=0.6)
    what = (
        f" ({_OUTSIDE_THE_TABLE[key]}, not in the gateway's table)"
        if key in _OUTSIDE_THE_TABLE
        else ""
    )
    hint = f"; did you mean {' or '.join('--' + c for c in close)}?" if close else ""
    known = ", ".join(f"--{n}" for n in names)
    return f"unknown parameter {shown}{what}, kept as written{hint}; known: {known}"


def _cost_warning(jobs: int) -> PromptWarning:
    return PromptWarning(f"{jobs} billed jobs: each expansion and repeat is billed", ("params",))


def _show(value: Any) -> str:
    return repr(value) if isinstance(value, str) else format_value("", value)


def _value_problem(param: Param, value: Any) -> str | None:
    """What is wrong with one (permutation-free) value, or None."""
    wants = param.describe()
    if value == "" or value == []:
        return f"needs a value: {wants}"
    if param.choices:
        return None if value in param.choices else f"takes {wants}; got {_show(value)}"
    if param.kind == "int":
        ok = isinstance(value, int) and not isinstance(value, bool)
        if ok and param.low is not None and param.high is not None:
            ok = param.low <= value <= param.high
        return None if ok else f"takes {wants}; got {_show(value)}"
    if param.kind == "number":
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        ok = ok and (param.low is None or value >= param.low)
        return None if ok else f"takes {wants}; got {_show(value)}"
    if param.kind == "ratio":
        m = _RATIO.fullmatch(value) if isinstance(value, str) else None
        if m is None or not int(m.group(1)) or not int(m.group(2)):
            return f"takes {wants} (whole numbers only, not 1.5:1); got {_show(value)}"
        return None
    if param.kind == "refs":
        if not isinstance(value, list):
            return f"takes {param.describe()}; got {_show(value)}"
        if param.name == "oref" and len(value) != 1:
            return f"takes exactly one image URL; got {len(value)}"
        if param.name in ("cref", "oref"):
            bad = [str(r) for r in value if not _URL_START.match(str(r.value))]
            if bad:
                return f"takes image URLs (http:// or https://); got {', '.join(bad)}"
    return None
