"""The small values a parsed prompt holds: a reference with its weight, a
permutation of parameters kept as written, a weighted text part, a soft warning.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from .params import format_scalar

__all__ = ["PromptWarning", "Reference", "Segment", "Variation"]

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
        return f"{self.value}::{format_scalar(self.weight)}"


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
