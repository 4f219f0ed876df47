"""The teaching notebooks' weight step: it executes lessons with widget state, weighs
them, names the heaviest, reports a row per lesson and judges it against 1.5 MB.
Tiny lessons written here stand for notebooks/ (the benchmark weighs those)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import figures, teaching_weight  # noqa: E402
from benchmarks.goals import GOALS, MET, MISSED, judge  # noqa: E402

SHOWS_A_JOB = """\
import genwidgets as gw
job = gw.Client().submit("genW2.5-t2i-preview", {"prompt": "a fox", "n": 1},
                         headers={"X-Sim-Duration": "0.2"})
job"""


def _lesson(folder: Path, name: str, source: str) -> Path:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source)]
    path = folder / f"{name}.ipynb"
    nbformat.write(notebook, path)
    return path


def test_the_teaching_notebooks_are_the_lessons() -> None:
    names = [path.name for path in teaching_weight.TEACHING]
    assert names == sorted(p.name for p in (REPO / "notebooks").glob("*.ipynb"))
    assert "07_prompt_tuning.ipynb" in names


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_each_lesson_is_executed_with_widget_state_and_the_heaviest_named(
    tmp_path: Path,
) -> None:
    lessons = tmp_path / "lessons"
    lessons.mkdir()
    paths = [_lesson(lessons, "a_job", SHOWS_A_JOB), _lesson(lessons, "b_sum", "1 + 1")]
    found = teaching_weight.run_teaching_weight(paths)
    sizes = found["notebooks"]
    assert set(sizes) == {"a_job", "b_sum"}
    assert found["heaviest"] == "a_job"
    assert found["teaching_nb_max_bytes"] == sizes["a_job"]["file"]
    # the task view's state is in the file, and more than the bare sum's
    assert sizes["a_job"]["widget_models"] >= 1 and sizes["b_sum"]["widget_models"] == 0
    assert sizes["a_job"]["file"] > sizes["a_job"]["file_default_save"]
    assert sizes["a_job"]["file"] > sizes["b_sum"]["file"]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_saved_lesson_has_its_final_view_and_not_the_settle_cell(tmp_path: Path) -> None:
    path = _lesson(tmp_path, "a_job", SHOWS_A_JOB)
    teaching_weight.weigh(path, tmp_path / "run")
    saved = nbformat.read(tmp_path / "run" / "a_job" / "a_job.ipynb", as_version=4)
    assert [cell.source for cell in saved.cells] == [SHOWS_A_JOB]
    assert "COMPLETED" in nbformat.writes(saved)  # the job's final view was saved


def test_the_report_has_a_row_per_lesson(passing: dict[str, Any]) -> None:
    lines = teaching_weight.section(passing["teaching_weight"])
    assert "| `07_prompt_tuning` | **1.40 MB** | 0.70 MB | 0.70 MB (12) | 0.47 MB |" in lines
    assert any(line.startswith("| `00_quickstart` | **0.40 MB** |") for line in lines)
    assert "Heaviest: `07_prompt_tuning`." in lines[2]


def test_the_heaviest_lesson_is_judged_against_one_and_a_half_mb(
    passing: dict[str, Any],
) -> None:
    goal = next(g for g in GOALS if g.key == "teaching_nb_max_bytes")
    assert goal.target_text() == "<= 1.5 MB"
    assert judge(goal, passing).status == MET
    lesson = passing["teaching_weight"]["notebooks"]["07_prompt_tuning"]
    lesson["file"] = passing["teaching_weight"]["teaching_nb_max_bytes"] = 2_860_000
    verdict = judge(goal, passing)
    assert (verdict.status, verdict.measured) == (MISSED, "2.86 MB")
    assert "07_prompt_tuning 2.86 MB (0.70 MB of widget state" in verdict.reason
    assert "00_quickstart" not in verdict.reason
    del passing["teaching_weight"]
    assert figures.headline(passing)["teaching_nb_max_bytes"] is None
    assert "Plan.teaching is empty" in judge(goal, passing).reason
