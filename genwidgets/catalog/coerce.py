"""Small value types several families share, as reusable ``Annotated`` types:
:data:`Size` (``width*height``, any spelling normalised), :class:`SizeRule` (its
limits), :data:`SIZE_WITH_X`/:data:`SIZE_WITH_STAR` (a size enum's spelling) and
:data:`OneOrMany` (a single string given where a list is wanted) and :func:`refusing`
(a value the spec lists but this service does not offer)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from pydantic import BeforeValidator

from .checks import shown

SIZE = re.compile(r"\s*(\d+)\s*[*xX×]\s*(\d+)\s*")


def normalise_size(value: Any) -> Any:
    """``"1024x1024"`` or ``" 1024 * 1024 "`` → ``"1024*1024"``; anything else unchanged."""
    if isinstance(value, str):
        match = SIZE.fullmatch(value)
        if match:
            return f"{int(match.group(1))}*{int(match.group(2))}"
    return value


def parse_size(value: str) -> tuple[int, int]:
    """``"1280*720"`` → ``(1280, 720)``; a clear error for anything else."""
    match = SIZE.fullmatch(value)
    if not match:
        raise ValueError(f"must be width*height in pixels, e.g. 1280*1280; got {shown(value)}")
    return int(match.group(1)), int(match.group(2))


def one_to_list(value: Any) -> Any:
    """A single string where a list is wanted is an unambiguous slip: wrap it."""
    return [value] if isinstance(value, str) else value


def _spelled_with(sep: str) -> BeforeValidator:
    def spell(value: Any) -> Any:
        if isinstance(value, str) and SIZE.fullmatch(value):
            return str(normalise_size(value)).replace("*", sep)
        return value

    return BeforeValidator(spell)


def refusing(word: str, message: str) -> BeforeValidator:
    """Metadata refusing ``word`` (any case, spaces around) with ``message``: a value the
    spec lists that this service does not offer, refused before the type's own check."""

    def refuse(value: Any) -> Any:
        if isinstance(value, str) and value.strip().lower() == word:
            raise ValueError(message)
        return value

    return BeforeValidator(refuse)


SIZE_WITH_STAR = _spelled_with("*")
"""Metadata for a size enum the spec spells ``1280*720``: ``1280x720`` is accepted."""
SIZE_WITH_X = _spelled_with("x")
"""Metadata for a size enum the spec spells ``1024x1024``: ``1024*1024`` is accepted."""

Size = Annotated[str, BeforeValidator(normalise_size)]
"""A ``width*height`` size; ``1024x1024`` or `` 1024 * 1024 `` become ``1024*1024``."""


@dataclass(frozen=True)
class SizeRule:
    """AfterValidator: a :data:`Size` within limits (``None`` passes: not sent)."""

    min_side: int | None = None
    max_side: int | None = None
    min_pixels: int | None = None
    max_pixels: int | None = None
    min_aspect: float | None = None
    max_aspect: float | None = None
    pixels_text: str = ""  # how the spec writes the pixel range, e.g. "1280*1280 and 1440*1440"
    aspect_text: str = ""  # e.g. "1:4 and 4:1"

    def __call__(self, value: str | None) -> str | None:
        if value is None:
            return value
        width, height = parse_size(value)
        if self.min_side is not None and self.max_side is not None:
            for name, side in (("width", width), ("height", height)):
                if not self.min_side <= side <= self.max_side:
                    raise ValueError(
                        f"the {name} must be {self.min_side}-{self.max_side} px; got {side}"
                    )
        pixels = width * height
        low, high = self.min_pixels or 0, self.max_pixels or pixels
        if not low <= pixels <= high:
            raise ValueError(
                "the total pixels must be between "
                f"{self.pixels_text or f'{low} and {high}'}; got {value} ({pixels} pixels)"
            )
        lo_aspect, hi_aspect = self.min_aspect or 0.0, self.max_aspect or float("inf")
        if height == 0 or not lo_aspect <= width / height <= hi_aspect:
            raise ValueError(
                "the aspect ratio must be between "
                f"{self.aspect_text or f'{lo_aspect} and {hi_aspect}'}; got {value}"
            )
        return value


T = TypeVar("T")

OneOrMany = Annotated[list[T], BeforeValidator(one_to_list)]
"""A list field that also takes one string (wrapped: an unambiguous slip)."""
