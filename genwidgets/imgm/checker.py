"""The checker: the hard and soft rules of the spec's table over every alternative of
a value, and the wording of problems found per expansion.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Sequence
from typing import Any

from .lexer import has_permutation, split_outside
from .params import (
    ALIASES,
    DASH_SLIP,
    MANY_JOBS,
    NOT_SLIPS,
    PARAMETERS,
    RATIO,
    SPEEDS,
    URL_START,
    WEIGHT_OF,
    Param,
    format_scalar,
    to_number,
)
from .parser import format_value, segments_of, typed_value
from .permutations import alternatives
from .values import PromptWarning

__all__ = ["Checker", "cost_warning", "dash_slips", "pasted_parameters", "per_expansion"]


def per_expansion(
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


def dash_slips(text: str) -> list[str]:
    """A warning for each word of ``text`` that names a parameter after dashes that are
    not ``--`` or ``—`` (``–ar 16:9``): the service reads it as prompt text."""
    found: dict[str, None] = {}  # in order, each once: {–r 2, –r 3} says –r once
    for slip in DASH_SLIP.finditer(text):
        name = slip["name"].lower()
        if slip["dashes"] not in NOT_SLIPS and (name in PARAMETERS or name in ALIASES):
            said = (
                f"{slip.group()} is prompt text, not the parameter --{name}: its dashes are "
                f"not two hyphens; write --{name}"
            )
            found[said] = None
    return list(found)


def pasted_parameters(text: str) -> dict[str, str]:
    """The imgM parameters ``text`` holds as pasted from an imgM prompt, each once in
    order: written word -> canonical name. Another model reads them as words, so the
    catalog warns; prose that only starts like one must not be told so.

    A word counts when imgM would read it (``--`` or an em dash at a word start, a known
    name, a whole word: not ``--no-nonsense``) and what follows it has its value's shape
    (:func:`_pasted_value`): ``--ar 16:9``, ``--seed 5 in the rain``, ``--tile`` or
    ``--no people`` last. Not Spanish dialogue (``—No tengo miedo —dijo``), a slogan
    (``--no limits-- in red``) or a title (``Say --No More``).
    """
    found: dict[str, str] = {}
    words = [w for w in DASH_SLIP.finditer(text) if w["dashes"] in ("--", "\u2014")]
    for n, word in enumerate(words):
        name = word["name"]
        param = PARAMETERS.get(ALIASES.get(name.lower(), name.lower()))
        after = text[word.end() : word.end() + 1]  # "" at the end
        whole = after.isspace() or after in _SENTENCE_END  # not --no-nonsense
        rest = text[word.end() : words[n + 1].start() if n + 1 < len(words) else None]
        if param is not None and whole and _pasted_value(param, name, word["dashes"], rest):
            found.setdefault(word.group(), param.name)
    return found


_LIST_WORD = re.compile(r"\w+(?:['-]\w+)*")
"""A word of a ``--no`` item as pasted (``people``, ``t-shirt``): not ``limits--`` or ``More'``."""

_SENTENCE_END = ".,;:!?)]}\"'\u2026"
"""What may end a value written in a sentence: ``--ar 16:9.``, ``--seed 5,``."""


def _pasted_value(param: Param, name: str, dashes: str, rest: str) -> bool:
    """Whether ``rest`` (the text after ``--name``, up to the next parameter's word) starts
    with what imgM takes there, so that ``--name value`` reads as pasted. A flag takes
    none of it and ``--no`` all of it; any other value is its first word, whatever prose
    follows (``--ar 16:9, photorealistic``), less the punctuation that ends a sentence.
    The word-like ones (a flag, ``--no``'s words) count only written as imgM's prompts
    write them, lowercase after two hyphens: an em dash before a word is how Spanish and
    Portuguese write dialogue (``—No sei — disse ela``)."""
    if param.kind in ("flag", "list"):
        if dashes != "--" or name != name.lower():
            return False
        rest = rest.strip().rstrip(_SENTENCE_END)
        if param.kind == "flag":
            return not rest
        words = rest.replace(",", " ").split()
        return bool(words) and all(_LIST_WORD.fullmatch(w) for w in words)
    value = next(iter(rest.split()), "").rstrip(_SENTENCE_END)
    if param.kind == "ratio":
        return RATIO.fullmatch(value) is not None
    if param.kind in ("int", "number"):
        return to_number(value, integer=param.kind == "int") is not None
    if param.kind == "refs":
        ref = value.partition("::")[0]
        return bool(URL_START.match(ref) or ref.isdigit() or ref == "random")
    if param.choices:  # --style raw
        return value in param.choices
    return to_number(value, integer=False) is not None  # --v 7, --v 8.1


class Checker:
    """Hard and soft rules of the spec's table, over every alternative of a value."""

    def __init__(
        self,
        images: Sequence[str],
        text: str,
        entries: Sequence[tuple[str, str, Any]],
        jobs: int,
    ) -> None:
        self.images, self.text, self.jobs = images, text, jobs
        self.spelling = {key: spelling for spelling, key, _ in entries}
        self.values = {key: value for _, key, value in entries}

    def alternatives(self, key: str) -> list[Any]:
        value = self.values[key]
        if isinstance(value, str) and has_permutation(value):
            return [typed_value(key, a) for a in alternatives(value)]
        return [value]

    def errors(self) -> list[dict[str, Any]]:
        return [{"loc": loc, "msg": msg} for loc, msg in dict.fromkeys(self._errors())]

    def warnings(self) -> list[PromptWarning]:
        found: dict[str, tuple[str, ...]] = {}
        for loc, msg in self._warnings():
            found.setdefault(msg, loc)  # each message once, where it was first found
        return [PromptWarning(msg, loc) for msg, loc in found.items()]

    def _errors(self) -> Iterator[tuple[tuple[str, ...], str]]:
        if not self.text and not self.images:
            yield ("text",), "the prompt needs text or an image URL"
        for key in self.values:
            param = PARAMETERS.get(key)
            shown = f"--{self.spelling[key]}"
            if param is None:
                yield ("params", key), _unknown(shown, key)
                continue
            for value in self.alternatives(key):
                problem = _value_problem(param, value)
                if problem:
                    yield ("params", key), f"{shown} {problem}"
        speeds = [f"--{self.spelling[k]}" for k in SPEEDS if k in self.values]
        if len(speeds) > 1:
            yield (
                ("params", "speed"),
                f"one speed at most: {' and '.join(speeds)} are both set "
                "(choose --relax, --fast or --turbo)",
            )
        has_no = "no" in self.values
        for text in alternatives(self.text):
            segments = segments_of(text)
            if not segments or (all(s.weight is None for s in segments) and not has_no):
                continue
            total = sum(s.weight if isinstance(s.weight, (int, float)) else 1 for s in segments) + (
                -0.5 if has_no else 0
            )
            if total <= 0:
                yield (
                    ("text",),
                    f"the :: weights of {text!r} add up to {format_scalar(float(total))}"
                    + (" (--no counts as one -0.5 part)" if has_no else "")
                    + "; their sum must be positive",
                )

    def _warnings(self) -> Iterator[tuple[tuple[str, ...], str]]:
        for key in self.values:
            shown = f"--{self.spelling[key]}"
            for value in self.alternatives(key):
                if key == "ar" and isinstance(value, str) and (m := RATIO.fullmatch(value)):
                    w, h = int(m.group(1)), int(m.group(2))
                    if w and h and max(w / h, h / w) > 2:
                        yield ("params", key), f"{shown} {value} is beyond 2:1: experimental"
                elif key == "v" and value != "8.1":
                    yield (
                        ("params", key),
                        f"{shown} {format_value(key, value)}: the service uses --v 8.1",
                    )
                elif key == "style" and value in PARAMETERS["style"].choices[1:]:
                    yield (
                        ("params", key),
                        f"{shown} {value} works on another model variant; the main model takes raw",
                    )
                elif key == "quality" and value == 2:
                    yield ("params", key), f"{shown} 2 works on some versions only"
        for key, needs in WEIGHT_OF.items():
            if key in self.values and needs not in self.values:
                yield ("params", key), f"--{self.spelling[key]} has no effect without --{needs}"
        if "iw" in self.values and not self.images:
            yield ("params", "iw"), f"--{self.spelling['iw']} has no effect without an image URL"
        for slip in dash_slips(self.text):
            yield ("text",), slip
        yield from self.weights_and_version()
        if self.jobs > MANY_JOBS:
            warning = cost_warning(self.jobs)
            yield warning.loc, warning

    def weights_and_version(self) -> Iterator[tuple[tuple[str, ...], str]]:
        """Warn when ``::`` weights meet a ``--v`` the multi-prompt page does not list."""
        if "v" not in self.values or len(split_outside(self.text, "::")) < 2:
            return
        for value in self.alternatives("v"):
            major = re.match(r"[0-9]+", str(value))
            if major and int(major.group()) >= 7:
                yield (
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


def cost_warning(jobs: int) -> PromptWarning:
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
    if param.kind in ("int", "number"):
        types = int if param.kind == "int" else (int, float)
        ok = isinstance(value, types) and not isinstance(value, bool)
        ok = ok and (param.low is None or value >= param.low)
        ok = ok and (param.high is None or value <= param.high)
        return None if ok else f"takes {wants}; got {_show(value)}"
    if param.kind == "ratio":
        m = RATIO.fullmatch(value) if isinstance(value, str) else None
        if m is None or not int(m.group(1)) or not int(m.group(2)):
            return f"takes {wants} (whole numbers only, not 1.5:1); got {_show(value)}"
        return None
    if param.kind == "refs":
        if not isinstance(value, list):
            return f"takes {param.describe()}; got {_show(value)}"
        if param.name == "oref" and len(value) != 1:
            return f"takes exactly one image URL; got {len(value)}"
        if param.name in ("cref", "oref"):
            bad = [str(r) for r in value if not URL_START.match(str(r.value))]
            if bad:
                return f"takes image URLs (http:// or https://); got {', '.join(bad)}"
    return None
