"""imgM prompts: the :class:`Prompt` model, and the :class:`PromptBuilder` widget.

``from genwidgets.imgm import Prompt`` never imports ipywidgets: the widget
module loads on first access to ``PromptBuilder`` (PEP 562).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .prompt import (
    ALIASES,
    MAX_PROMPTS,
    PARAMETERS,
    Param,
    Prompt,
    PromptWarning,
    Reference,
    Segment,
    Variation,
)

if TYPE_CHECKING:
    from .builder import PromptBuilder

__all__ = [
    "ALIASES",
    "MAX_PROMPTS",
    "PARAMETERS",
    "Param",
    "Prompt",
    "PromptBuilder",
    "PromptWarning",
    "Reference",
    "Segment",
    "Variation",
]


def __getattr__(name: str) -> Any:
    if name == "PromptBuilder":
        from .builder import PromptBuilder

        globals()[name] = PromptBuilder
        return PromptBuilder
    raise AttributeError(f"module 'genwidgets.imgm' has no attribute {name!r}")
