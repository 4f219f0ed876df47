"""The goal table is data: its text is derived, and a ratio against a baseline that
missed its interval is "not evidence", whatever the ratio says. Synthetic figures only:
no benchmark runs here."""

from __future__ import annotations

import copy
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import figures, goals, polling  # noqa: E402
from benchmarks.goals import GOALS, MET, MISSED, NOT_EVIDENCE, judge, judge_all  # noqa: E402

RATIO_GOALS = [g for g in GOALS if g.baseline]


def _fixed(interval: float, achieved: float | None = None) -> dict[str, Any]:
    return {"mean_achieved_interval_s": interval if achieved is None else achieved}


def _goal(key: str) -> goals.Goal:
    """A goal of the table whose "why" text (which reads the full figures) is a stub."""
    return replace(next(g for g in GOALS if g.key == key), why=lambda r, g: f"why {g.key}")


def test_every_goal_names_a_headline_key_a_known_op_and_unit() -> None:
    for goal in GOALS:
        assert goal.key in figures.JSON_KEYS, goal.name
        assert goal.op in goals.OPS and goal.unit in goals.UNITS, goal.name
        if isinstance(goal.target, str):
            assert goal.target in goals.RELATIVE, goal.name
    assert len({g.name for g in GOALS}) == len(GOALS)
    # every ratio against a fixed poller says which poller, so its interval can be checked
    ratios = [g for g in GOALS if g.key.startswith("requests_ratio_vs_")]
    assert ratios and all(polling.interval_of(g.baseline) is not None for g in ratios)


@pytest.mark.parametrize(
    ("key", "text"),
    [
        ("requests_ratio_vs_0_1s", ">= 6x fewer"),
        ("requests_ratio_vs_0_5s", ">= 1.25x fewer"),
        ("p95_notice_s", "<= 1.5 s"),
        ("nb_bytes_per_video", "<= 300 KB"),
        ("nb_playable_videos", "= videos saved"),
        ("live_jobs_10k_completed", "= jobs submitted"),
        ("status_rate_10k", "within 10 % of the budget"),
        ("imports_ipywidgets", "= no"),
        ("prompt_slowest_ms", "<= 250 ms"),
        ("grid_page_bytes", "<= 3 MB"),
    ],
)
def test_the_target_text_is_derived_from_the_data(key: str, text: str) -> None:
    goal = next(g for g in GOALS if g.key == key)
    assert goal.target_text() == text


def test_changing_a_target_changes_its_text_and_its_verdict(passing: dict[str, Any]) -> None:
    results = passing
    goal = next(g for g in GOALS if g.key == "sim_status_rps")
    assert judge(goal, results).status == MET
    stricter = replace(goal, target=5000)
    assert stricter.target_text() == ">= 5000/s"
    verdict = judge(stricter, results)
    assert verdict.status == MISSED
    assert verdict.measured == "4415.0/s"
    assert "get_status" in verdict.reason  # the goal's own why text, with what would fix it


def test_figures_that_meet_every_goal_are_all_met(passing: dict[str, Any]) -> None:
    verdicts = judge_all(passing)
    assert [v.status for v in verdicts] == [MET] * len(GOALS)
    assert all(v.reason == "" for v in verdicts)


def test_units_scale_the_figure_and_the_target_alike(passing: dict[str, Any]) -> None:
    results = passing
    goal = _goal("nb_bytes_per_video")
    assert judge(goal, results).measured == "194.3 KB"
    results["notebook_weight"]["nb_bytes_per_video"] = 300 * 1024 + 1
    assert judge(goal, results).status == MISSED


def test_every_saved_video_must_play_from_the_notebook(passing: dict[str, Any]) -> None:
    goal = _goal("nb_playable_videos")
    assert judge(goal, passing).status == MET
    passing["notebook_weight"]["nb_playable_videos"] = 9  # one kept only a poster
    assert judge(goal, passing).status == MISSED


def test_a_relative_target_reads_the_other_figure_of_the_run(passing: dict[str, Any]) -> None:
    results = passing
    rate = _goal("status_rate_10k")
    assert judge(rate, results).measured == "49.8/s (the budget: 50.0/s)"
    results["scale"]["status_rate"] = 44.0  # 12 % under the budget
    assert judge(rate, results).status == MISSED


@pytest.mark.parametrize("goal", RATIO_GOALS, ids=lambda g: g.key)
def test_a_ratio_against_a_baseline_that_missed_its_interval_is_not_evidence(
    goal: Any, passing: dict[str, Any]
) -> None:
    results = passing
    assert judge(goal, results).status == MET
    nominal = polling.interval_of(goal.baseline)
    assert nominal is not None
    slow = copy.deepcopy(results)
    # the quiet-machine run of the issue: 0.558 s between polls for a 0.5 s poller
    slow["polling"]["schedules"][goal.baseline] = _fixed(nominal, nominal * 1.116)
    verdict = judge(goal, slow)
    assert verdict.status == NOT_EVIDENCE  # the ratio still meets its target: not MET
    assert "not evidence" in verdict.measured and "+11.6%" in verdict.measured
    assert goal.baseline in verdict.reason and "2%" in verdict.reason


def test_a_baseline_within_two_percent_keeps_the_ratio_as_evidence(passing: dict[str, Any]) -> None:
    results = passing
    goal = next(g for g in GOALS if g.key == "requests_ratio_vs_0_5s")
    results["polling"]["schedules"]["fixed 0.5 s"] = _fixed(0.5, 0.509)
    assert judge(goal, results).status == MET
    results["polling"]["schedules"]["fixed 0.5 s"] = _fixed(0.5, 0.511)
    assert judge(goal, results).status == NOT_EVIDENCE


def test_a_baseline_whose_sample_count_left_the_paper_is_not_evidence(
    passing: dict[str, Any],
) -> None:
    """A fixed poller's whole-set figure is on paper: its measured sample must agree."""
    goal = next(g for g in GOALS if g.key == "requests_ratio_vs_0_1s_short_warm")
    sample = passing["polling"]["schedules"]["fixed 0.1 s short"]
    sample |= {"model_poll_requests_per_task": 36.0, "poll_requests_per_task": 35.8}
    assert judge(goal, passing).status == MET  # -0.6 %: within 1 %
    sample["poll_requests_per_task"] = 35.0  # -2.8 %: the poller lost polls somewhere
    verdict = judge(goal, passing)
    assert verdict.status == NOT_EVIDENCE
    # the note says which of the two was off: here the count, not the interval
    assert "kept its interval (+0.0%)" in verdict.measured and "-2.8% polls" in verdict.measured


def test_the_mixed_share_and_the_wall_time_are_judged_in_their_units(
    passing: dict[str, Any],
) -> None:
    share = _goal("mixed_share_within_target")
    assert share.target_text() == ">= 95 %"
    assert judge(share, passing).measured == "97.5 %"
    passing["polling"]["mixed_share_within_target"] = 0.94
    assert judge(share, passing).status == MISSED
    wall = _goal("wall_s")
    assert (wall.target_text(), judge(wall, passing).measured) == ("<= 15 min", "13.0 min")
    passing["seconds"]["total"] = 901.0
    assert judge(wall, passing).status == MISSED


def test_a_baseline_that_did_not_run_or_never_polled_twice_is_not_evidence(
    passing: dict[str, Any],
) -> None:
    goal = next(g for g in GOALS if g.key == "requests_ratio_vs_0_1s")
    results = passing
    results["polling"]["schedules"]["fixed 0.1 s"] = {"mean_achieved_interval_s": None}
    assert judge(goal, results).status == NOT_EVIDENCE
    del results["polling"]["schedules"]["fixed 0.1 s"]
    assert judge(goal, results).status == NOT_EVIDENCE


def test_goals_without_a_baseline_ignore_the_pollers_intervals(passing: dict[str, Any]) -> None:
    results = passing
    for name, schedule in results["polling"]["schedules"].items():
        schedule["mean_achieved_interval_s"] = 2 * (polling.interval_of(name) or 0.0)
    statuses = {v.goal.key: v.status for v in judge_all(results)}
    assert statuses["p95_notice_s"] == MET
    assert statuses["requests_ratio_vs_0_5s"] == NOT_EVIDENCE


def test_a_slow_prompt_step_is_missed_and_named(passing: dict[str, Any]) -> None:
    goal = next(g for g in GOALS if g.key == "prompt_slowest_ms")
    assert judge(goal, passing).measured == "54.5 ms"
    passing["prompt"]["slowest_ms"] = 251.0
    verdict = judge(goal, passing)
    assert verdict.status == MISSED
    assert "PromptBuilder(value=text) on the '40 prompts' prompt: 251.0 ms" in verdict.reason


def test_the_grid_bytes_are_judged_in_mb_with_the_full_arm_beside_them(
    passing: dict[str, Any],
) -> None:
    goal = next(g for g in GOALS if g.key == "grid_page_bytes")
    assert judge(goal, passing).measured == "1.99 MB"
    passing["grid_weight"]["grid_bytes"] = 3_000_001
    verdict = judge(goal, passing)
    assert verdict.status == MISSED and verdict.measured == "3.00 MB"
    assert "1.40 MB over the kernel's websocket" in verdict.reason
    assert "Every cell's full image instead: 9.37 MB" in verdict.reason


@pytest.mark.parametrize(
    ("grid", "reason"),
    [
        (None, "this plan ran no grid arm"),
        (
            {"arms": {}, "grid_bytes": None, "not_measured": "/usr/bin/chromium is missing"},
            "Not measured: /usr/bin/chromium is missing.",
        ),
        (
            {"arms": {"full": {}}, "grid_bytes": None, "not_measured": ""},
            "without its thumbnails arm",
        ),
    ],
)
def test_a_grid_weight_not_measured_is_missed_with_the_reason(
    passing: dict[str, Any], grid: dict[str, Any] | None, reason: str
) -> None:
    if grid is None:
        del passing["grid_weight"]
    else:
        passing["grid_weight"] = grid
    assert figures.headline(passing)["grid_page_bytes"] is None
    verdict = judge(next(g for g in GOALS if g.key == "grid_page_bytes"), passing)
    assert (verdict.status, verdict.measured) == (MISSED, "n/a")
    assert reason in verdict.reason


def test_a_heavy_notebook_names_where_its_bytes_go(passing: dict[str, Any]) -> None:
    from genwidgets.widgets.task import TaskView

    def variant(per_video: int, state: int, outputs: int, playable: int) -> dict[str, int]:
        return {
            "bytes_per_video": per_video,
            "default_save_bytes_per_video": per_video - state,
            "playable_videos": playable,
            "widget_state_bytes_per_video": state,
            "widget_models_per_video": 2,
            "output_bytes_per_video": outputs,
        }

    passing["notebook_weight"] |= {
        "nb_bytes_per_video": 324_300,
        "variants": {
            "ours": variant(324_300, 16_900, 306_800, 10),
            "embedded": variant(374_000, 373_000, 300, 0),
        },
    }
    goal = next(g for g in GOALS if g.key == "nb_bytes_per_video")
    verdict = judge(goal, passing)
    code = (len(TaskView._esm.encode()) + len(TaskView._css.encode())) / 1024
    assert verdict.status == MISSED
    assert "gained 316.7 KB (300.2 KB saved as JupyterLab saves by default" in verdict.reason
    assert "16.5 KB of widget state (2 widget models per task view" in verdict.reason
    assert f"{code:.1f} KB for the task view) and 299.6 KB of display outputs" in verdict.reason
    assert "10 of 10 videos play from the notebook" in verdict.reason
    assert "365.2 KB per video in the same run" in verdict.reason
    assert "ledger off" not in verdict.reason and "posters only" not in verdict.reason
    passing["notebook_weight"]["variants"]["ours_posters"] = variant(30_000, 16_900, 13_000, 0)
    passing["notebook_weight"]["variants"]["ours_no_ledger"] = variant(12_200, 10_300, 1_300, 0)
    reason = judge(goal, passing).reason
    assert "With posters only: 29.3 KB per video, 0 playable." in reason
    assert "ledger off (no local copy, so nothing to keep) the gain is 11.9 KB" in reason
