"""The report says, next to each ratio, when its baseline missed its interval; synthetic
figures only (the tiny end-to-end run is in test_run.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import polling_report, prompt, report  # noqa: E402
from benchmarks.goals import judge_all  # noqa: E402


def test_the_goals_table_writes_each_target_from_the_table(passing: dict[str, Any]) -> None:
    verdicts = judge_all(passing)
    text = "\n".join(report.goals_section(verdicts))
    for v in verdicts:
        assert f"| {v.goal.name} | {v.goal.target_text()} | {v.measured} | met |" in text
    assert "Not evidence" not in text and "Missed" not in text


def test_a_baseline_that_missed_its_interval_is_named_in_the_goals_and_the_figures(
    passing: dict[str, Any],
) -> None:
    results = passing
    results["polling"]["schedules"]["fixed 0.5 s"]["mean_achieved_interval_s"] = 0.558
    text = "\n".join(report.goals_section(judge_all(results)))
    row = next(
        line
        for line in text.splitlines()
        if line.startswith("| 20 s set, no history: poll requests vs fixed 0.5")
    )
    assert row.endswith("| not evidence |")
    assert "1.41x, not evidence: the fixed 0.5 s poller polled every 0.558 s (+11.6%" in row
    assert "**Not evidence: 20 s set, no history: poll requests vs fixed 0.5 s.**" in text
    assert "**Not evidence: 20 s set, warm: poll requests vs fixed 0.5 s.**" in text
    assert "poll requests vs fixed 0.1 s.**" not in text  # its poller kept time

    evidence = polling_report.evidence(results["polling"])
    assert "Not evidence in this run:** ratios against fixed 0.5 s," in evidence
    assert "fixed 0.1 s" not in evidence.split("Not evidence")[1]
    assert polling_report.achieved("fixed 0.5 s", {"mean_achieved_interval_s": 0.558}) == (
        "0.558 s (+11.6%, **missed**)"
    )
    assert polling_report.achieved("fixed 1 s", {"mean_achieved_interval_s": 1.013}) == (
        "1.013 s (+1.3%, kept)"
    )
    assert polling_report.achieved("genwidgets", {"mean_achieved_interval_s": None}) == "n/a"


def test_every_kept_interval_is_said_so(passing: dict[str, Any]) -> None:
    assert polling_report.evidence(passing["polling"]).endswith("every fixed poller did.")


def test_the_prompt_section_has_a_row_per_prompt_and_a_column_per_step(
    passing: dict[str, Any],
) -> None:
    passing["prompt"]["prompts"]["40 prompts"] = {
        step: float(i) for i, step in enumerate(prompt.STEPS, 1)
    }
    lines = report.prompt_section(passing["prompt"])
    assert "| prompt | " + " | ".join(prompt.STEPS) + " |" in lines
    assert "| 40 prompts | 1.0 ms | 2.0 ms | 3.0 ms | 4.0 ms |" in lines
    assert "Slowest: **54.5 ms** (builder_ms, 40 prompts)." in lines[2]


def test_the_grid_section_has_a_row_per_arm_or_says_why_it_is_empty(
    passing: dict[str, Any],
) -> None:
    grid = passing["grid_weight"]
    lines = report.grid_section(grid)
    assert (
        "| thumbnails | **1.99 MB** | 1.40 MB | 0.59 MB (2) | 3.00 MB | 2.50 MB | 60 s |" in lines
    )
    assert any(line.startswith("| full | **9.37 MB** |") for line in lines)
    assert "`genW2.5-t2i-preview`, size 1440*1440" in lines[2]

    grid |= {"arms": {}, "grid_bytes": None, "not_measured": "/usr/bin/chromium is missing"}
    lines = report.grid_section(grid)
    assert "Not measured: /usr/bin/chromium is missing." in lines
    assert not any(line.startswith("| arm |") for line in lines)
