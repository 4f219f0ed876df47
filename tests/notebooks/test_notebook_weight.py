"""Every teaching notebook, executed with widget state (as JupyterLab saves it) in a
home that already has history, stays light enough to publish as it is.

Issue 40: ``07_prompt_tuning`` weighed 2.30 MB executed with widget state and 4.19 MB
executed again in the same home (the board's state held a card per ledger job, each
with a full-size image); GitHub's notebook preview fails near 2.6 MB. The home of this
module's kernel gets its history from a first run of ``07`` (grids, rated cells, jobs),
then each notebook is executed once more and weighed.
"""

from __future__ import annotations

from pathlib import Path

import jupyter_env  # tests/jupyter_env.py (tests/ is on pytest's pythonpath)
import pytest

#: What a teaching notebook may weigh executed with widget state (issue 40).
MAX_SAVED_BYTES = 1_500_000
#: A hang guard for one notebook on a busy machine, not a time budget.
HANG_GUARD_S = 900
HISTORY_MAKER = jupyter_env.NOTEBOOKS / "07_prompt_tuning.ipynb"

NOTEBOOKS = jupyter_env.notebook_paths()


@pytest.fixture(scope="module")
def home_with_history(jupyter_kernel: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The module's kernel, its ``GENWIDGETS_HOME`` holding what a first run of ``07``
    left: grids, ratings and the ledger's jobs with their files."""
    jupyter_env.execute(HISTORY_MAKER, tmp_path_factory.mktemp("first-run"),
                        kernel_name=jupyter_kernel)  # fmt: skip
    return jupyter_kernel


@pytest.mark.notebook
@pytest.mark.timeout(HANG_GUARD_S)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_notebook_saved_with_widget_state_stays_within_the_bound(
    path: Path, home_with_history: str, tmp_path: Path
) -> None:
    jupyter_env.execute(path, tmp_path, kernel_name=home_with_history)
    size = (tmp_path / path.name).stat().st_size
    assert size <= MAX_SAVED_BYTES, (
        f"{path.name} weighs {size / 1e6:.2f} MB executed with widget state in a home with "
        f"history (at most {MAX_SAVED_BYTES / 1e6:.1f} MB)"
    )
