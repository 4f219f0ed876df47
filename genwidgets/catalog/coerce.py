"""Small value normalisers several families share: ``width*height`` sizes and a single
string given where a list is wanted."""

from __future__ import annotations

import re
from typing import Any

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
        raise ValueError(f"size must be width*height in pixels, e.g. 1280*1280; got {value!r}")
    return int(match.group(1)), int(match.group(2))


def one_to_list(value: Any) -> Any:
    """A single string where a list is wanted is an unambiguous slip: wrap it."""
    return [value] if isinstance(value, str) else value
