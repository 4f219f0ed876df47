"""imgM prompts of the longest allowed size (8,192 characters): parsed, counted,
validated through the catalog and shown by the prompt builder widget.

The prompts are the ones that hung before: a 2**1638-prompt permutation, a
``--repeat`` over 2**25 permutations, plain long text, and many permutations
of words or parameters. Each step is timed in this process after one warm-up
run (imports and caches paid), median of ``runs``; the figure is the slowest
median (the goal, "well under a second" for each, is in ``goals.py``).

Run alone: ``python -m benchmarks.prompt``.
"""

from __future__ import annotations

import contextlib
import json
import time
import warnings
from collections.abc import Callable
from typing import Any

from . import _common as common

LIMIT = 8192
PROMPTS = {
    "2**1638 permutations": "{a,b}" * 1638,
    "--repeat over 2**25": "cat --repeat " + "{1,2}" * 25,
    "long text and parameters": ("a kite over the sea " * 400)[:8000] + " --ar 16:9 --chaos 50",
    "40 prompts": "x {1,2,3,4,5} {a,b,c,d,e,f,g,h} " + "word " * 1500,
    "40 parameter permutations": "word " * 1500
    + "{"
    + ", ".join(f"--chaos {i}" for i in range(40))
    + "}",
}
#: what each step is, for the report
STEPS = {
    "parse_count_ms": "Prompt.parse(text).count()",
    "errors_ms": "Prompt.parse(text).errors()",
    "validate_ms": 'gw.validate("imgM-v8.1-t2i", {"prompt": text})',
    "builder_ms": "PromptBuilder(value=text)",
}


def _time(step: Callable[[], Any], runs: int) -> float:
    step()  # warm-up
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        step()
        times.append((time.perf_counter() - start) * 1000)
    return common.median(times)


def _steps(text: str) -> dict[str, Callable[[], object]]:
    """The steps of :data:`STEPS` on ``text``."""
    import genwidgets as gw
    from genwidgets.imgm import Prompt
    from genwidgets.widgets.prompt_builder import PromptBuilder

    def validate() -> None:
        # refused over the cap: what matters is that it answers
        with warnings.catch_warnings(), contextlib.suppress(gw.PayloadError):
            warnings.simplefilter("ignore")
            gw.validate("imgM-v8.1-t2i", {"prompt": text})

    return {
        "parse_count_ms": lambda: Prompt.parse(text).count(),
        "errors_ms": lambda: Prompt.parse(text).errors(),
        "validate_ms": validate,
        "builder_ms": lambda: PromptBuilder(value=text),
    }


def run_prompt(runs: int = 5) -> dict[str, Any]:
    """Median ms per prompt and step (:data:`STEPS`), and the slowest of them."""
    results: dict[str, dict[str, float]] = {}
    for name, text in PROMPTS.items():
        assert len(text) <= LIMIT, name
        steps = _steps(text)
        results[name] = {step: round(_time(steps[step], runs), 2) for step in STEPS}
    slowest = max(
        (ms, name, step) for name, steps_ms in results.items() for step, ms in steps_ms.items()
    )
    return {
        "runs": runs,
        "prompts": results,
        "slowest_ms": slowest[0],
        "slowest_prompt": slowest[1],
        "slowest_step": slowest[2],
    }


if __name__ == "__main__":
    measured = run_prompt()
    for name, steps_ms in measured["prompts"].items():
        shown = ", ".join(f"{step} {ms:.1f}" for step, ms in steps_ms.items())
        print(f"{name}: {shown}")
    print(json.dumps({"prompt_slowest_ms": measured["slowest_ms"]}))
