"""imgM prompts: the :class:`Prompt` language (parse, build, expand, validate).

Plain Python below the widgets (the builder widget is
:class:`genwidgets.widgets.prompt_builder.PromptBuilder`). One noun per module:
``params`` (the spec's table), ``lexer``, ``permutations``, ``values``, ``parser``,
``checker`` and ``prompt`` (the :class:`Prompt` value). This ``__all__`` is the public
API; each module's ``__all__`` is what the other modules of the package may use, and
a name with an underscore stays in its module: docs/decisions.md#package-internal-names.
"""

from __future__ import annotations

from .lexer import permutation_spans
from .params import ALIASES, CONFIRM_ABOVE, MANY_JOBS, MAX_NESTING, MAX_PROMPTS, PARAMETERS, Param
from .parser import format_value
from .permutations import plain_text, say_count
from .prompt import Prompt
from .values import PromptWarning, Reference, Segment, Variation

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
    "plain_text",
    "say_count",
]
