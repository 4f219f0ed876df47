"""imgM prompts: the :class:`Prompt` language (parse, build, expand, validate).

Plain Python below the widgets: the builder widget that edits a prompt is
:class:`genwidgets.widgets.prompt_builder.PromptBuilder`.
"""

from __future__ import annotations

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

__all__ = [
    "ALIASES",
    "MAX_PROMPTS",
    "PARAMETERS",
    "Param",
    "Prompt",
    "PromptWarning",
    "Reference",
    "Segment",
    "Variation",
]

