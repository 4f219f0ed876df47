"""The prompt benchmark runs and reports every prompt and step (no speed asserted:
figures are not tests)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import prompt  # noqa: E402


@pytest.mark.timeout(300)
def test_every_long_prompt_is_measured_on_every_step() -> None:
    measured = prompt.run_prompt(runs=1)
    assert set(measured["prompts"]) == set(prompt.PROMPTS)
    assert all(len(text) <= prompt.LIMIT for text in prompt.PROMPTS.values())
    for steps in measured["prompts"].values():
        assert list(steps) == list(prompt.STEPS)
        assert all(ms > 0 for ms in steps.values())
    slowest = measured["prompts"][measured["slowest_prompt"]][measured["slowest_step"]]
    assert (
        measured["slowest_ms"]
        == slowest
        == max(ms for steps in measured["prompts"].values() for ms in steps.values())
    )
