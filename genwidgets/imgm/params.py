"""The spec's table of prompt-string parameters, and how their scalar values are
read and written (plain decimals, never exponents, so they parse back the same).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

__all__ = [
    "ALIASES",
    "CONFIRM_ABOVE",
    "MANY_JOBS",
    "MAX_NESTING",
    "MAX_PROMPTS",
    "ONE_WORD_KINDS",
    "PARAMETERS",
    "PARAM_NAME",
    "PARAM_WORD",
    "RATIO",
    "SPEEDS",
    "TABLE_ORDER",
    "URL_START",
    "WEIGHT_OF",
    "Param",
    "collapse_spaces",
    "format_scalar",
    "to_number",
]

MAX_NESTING = 20
"""Deepest permutation nesting accepted (keeps every walk bounded)."""

MANY_JOBS = 40
"""Above this many billed jobs, :meth:`Prompt.warnings` says so."""

MAX_PROMPTS = 40
"""One permutation prompt makes at most this many prompts (the service's cap)."""

CONFIRM_ABOVE = 5
"""Above this many prompts the service asks for confirmation; the builder says so loudly."""


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
            return "one of " + ", ".join(format_scalar(c) for c in self.choices)
        if self.kind == "int":
            if self.low is not None and self.high is not None:
                return f"a whole number {format_scalar(self.low)}-{format_scalar(self.high)}"
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


SPEEDS = ("relax", "fast", "turbo")

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

TABLE_ORDER = {name: i for i, name in enumerate(PARAMETERS)}
ONE_WORD_KINDS = ("int", "number", "ratio", "text")
WEIGHT_OF = {"sw": "sref", "sv": "sref", "cw": "cref", "ow": "oref"}

PARAM_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
PARAM_WORD = re.compile(r"(?:--|—)[A-Za-z]")
#: a word that starts like a parameter but with other dashes (an en dash or a minus sign
#: that autocorrect made of ``--``, ``——``, ``—-``): prompt text, which a warning names;
#: a word starts after a space, or a brace or comma of a permutation (``{–r 2, –r 3}``)
DASH_SLIP = re.compile(
    r"(?<![^\s{,])(?P<dashes>[-\u2010-\u2014\u2212\ufe63\uff0d]+)(?P<name>[A-Za-z][A-Za-z0-9_]*)"
)
#: the dashes :data:`PARAM_WORD` reads, and one hyphen (``-ar`` may be meant as text)
NOT_SLIPS = ("--", "\u2014", "-")
URL_START = re.compile(r"[Hh][Tt][Tt][Pp][Ss]?://\S")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")
_INT = re.compile(r"[+-]?[0-9]+")
RATIO = re.compile(r"([0-9]+):([0-9]+)")
_MAX_DIGITS = 30


def format_scalar(value: Any) -> str:
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
    return str(value)  # a Reference writes itself


def to_number(text: str, *, integer: bool) -> int | float | None:
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


def collapse_spaces(text: str) -> str:
    """Runs of whitespace as one space, none at either end."""
    return " ".join(text.split())
