"""Every teaching notebook, executed with widget state (as JupyterLab saves it) in a
home that already has history, stays light enough to publish as it is.

Issue 40: ``07_prompt_tuning`` weighed 2.30 MB executed with widget state and 4.19 MB
executed again in the same home (the board's state held a card per ledger job, each
with a full-size image); GitHub's notebook preview fails near 2.6 MB. Each notebook is
weighed as saved by its Run All after a kernel restart (``lessons.restarted``, the run
of the test that runs lessons again): its home holds what its two Run Alls before left
(for ``07``: grids, rated cells, the ledger's jobs with their files, on the board).
"""

from __future__ import annotations

from pathlib import Path

import jupyter_env  # tests/jupyter_env.py (tests/ is on pytest's pythonpath)
import pytest

#: What a teaching notebook may weigh executed with widget state (issue 40).
MAX_SAVED_BYTES = 1_500_000
#: A hang guard for one notebook on a busy machine, not a time budget.
HANG_GUARD_S = 900
NOTEBOOKS = jupyter_env.notebook_paths()


@pytest.mark.notebook
@pytest.mark.timeout(3 * HANG_GUARD_S)  # it may make the lesson's three runs
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_notebook_saved_with_widget_state_stays_within_the_bound(
    path: Path, lessons: jupyter_env.Lessons
) -> None:
    run = lessons.restarted(path)
    size = (run.workdir / path.name).stat().st_size
    assert size <= MAX_SAVED_BYTES, (
        f"{path.name} weighs {size / 1e6:.2f} MB executed with widget state in a home with "
        f"history (at most {MAX_SAVED_BYTES / 1e6:.1f} MB)"
    )
