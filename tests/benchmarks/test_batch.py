"""The batch benchmark's arithmetic: the sustained rate over the middle of the creates,
and each goal judged from its figure (the run itself: tests/benchmarks/test_run.py)."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.batch import _sustained, _tenths, judge  # noqa: E402


def test_the_sustained_rate_leaves_out_the_ramps() -> None:
    steady = [i / 10 for i in range(100)]  # ten a second
    ramps = [-30.0, -20.0, *steady, 50.0, 60.0]  # a slow start and a slow end
    assert _sustained(steady) == 10.0
    assert abs((_sustained(ramps) or 0) - 10.0) < 1.0
    assert _sustained([1.0, 2.0]) is None


def test_the_timeline_shows_where_a_run_lost_its_rate() -> None:
    slow_start = [i / 2 for i in range(10)] + [5 + i / 10 for i in range(90)]  # 2/s, then 10/s
    timeline = _tenths(slow_start, start=-1.5)
    assert timeline["first_create_after_s"] == 1.5
    assert timeline["rates_by_tenth"][0] == 2.0
    assert timeline["rates_by_tenth"][1:] == [10.0] * 9
    assert _tenths([1.0, 2.0]) == {}


def test_each_goal_is_met_missed_or_not_measured() -> None:
    figures = {
        "rows": 10,
        "create_rate_share": 0.96,
        "kb_per_row": 25.0,
        "duplicate_creates": 0,
        "plan_s": None,
        "manifest_rows": 10,
        "ledger_tasks": 9,
        "rows_done": 9,
        "rows_other": 0,
        "files_once": True,
    }
    verdicts = judge({**figures, "capacity": 20.0, "limit": 10.0})
    assert verdicts["create_rate_share"] is True and verdicts["kb_per_row"] is False
    assert verdicts["duplicate_creates"] is True and verdicts["plan_s"] is None
    assert verdicts["manifest_and_ledger_hold_all"] and verdicts["every_row_done_or_listed"]
    assert verdicts["every_file_once"] is True
    assert judge({**figures, "suffixed_files": 1})["every_file_once"] is False  # a row's ~2


def test_a_limit_the_machine_cannot_reach_makes_the_share_no_evidence() -> None:
    figures = {"rows": 1, "create_rate_share": 0.75, "capacity": 9.3, "limit": 10.0}
    assert judge(figures)["create_rate_share"] is None


def test_the_report_says_each_batch_figure_and_its_verdict() -> None:
    from benchmarks.batch import section

    figures = {
        "rows": 10_000, "plan_s": 1.41, "capacity": 25.1, "limit": 10.0,
        "create_rates": [10.0, 9.99], "create_rate_share": 0.999, "creates_sent": 19_857,
        "tasks_made": 9_990, "duplicate_creates": 0, "rows_done": 9_990, "rows_unknown": 10,
        "rows_other": 0, "manifest_rows": 10_000, "ledger_tasks": 9_990, "files_once": True,
        "kb_per_row": 15.38,
    }  # fmt: skip
    text = "\n".join(section(figures))
    assert "99.9%" in text and ">= 95 %: met" in text and "MISSED" not in text
    assert "19857 / 9990" in text and "<= 20 KB: met" in text
    slow = "\n".join(section({**figures, "capacity": 8.0, "create_rate_share": 0.8}))
    assert ">= 95 %: not evidence" in slow  # the machine paced it, not the batch
    heavy = "\n".join(section({**figures, "kb_per_row": 31.0, "duplicate_creates": 2}))
    assert "<= 20 KB: MISSED" in heavy and "0: MISSED" in heavy
    tiny = "\n".join(section({**figures, "capacity": None, "create_rates": [None, 4.0]}))
    assert "n/a, 4 /" in tiny and "not measured" in tiny  # a small run measures less
