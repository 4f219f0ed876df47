"""A cell run again closes the views its last run displayed (``faces.CellViews``), seen
in a real kernel driven as JupyterLab drives it: each request names its cell
(``cellId``, the same id on every Run All), and a model the kernel closed is no longer
saved (``tests/jupyter_env.py``). Review 33 fault 4: measured with nbclient, which sends
no cell id, Run All twice in one kernel doubled the live models (lesson 03: 72, then 143).
"""

from __future__ import annotations

import re
from pathlib import Path

import jupyter_env  # tests/jupyter_env.py (tests/ is on pytest's pythonpath)
import nbformat
import pytest

#: A task view, a form (and its task list) and a grid view: a job, a control, a run,
#: then a cell that counts the kernel's live widget models once the jobs have ended.
VIEWS = """\
import genwidgets as gw

client = gw.Client()
job = client.submit("imgM-v8.1-t2i", {"prompt": "a red kite"})
display(job)
display(gw.form("genW2.5-t2i-preview", client=client, prompt="a kite", n=1))
grid = gw.grid("imgM-v8.1-t2i", {"prompt": "a kite --seed {1, 2}"}, client=client)
grid
"""
COUNT = """\
from ipywidgets.widgets.widget import _instances

job.result(timeout=120)
grid.wait(timeout=120)
print("LIVE", len(_instances))
"""


@pytest.mark.slow
@pytest.mark.notebook
@pytest.mark.timeout(600)
def test_run_all_twice_in_one_kernel_keeps_the_live_models_of_one_run(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(VIEWS), nbformat.v4.new_code_cell(COUNT)]
    source = tmp_path / "twice.ipynb"
    nbformat.write(nb, source)
    workdir = tmp_path / "run"
    workdir.mkdir()
    with jupyter_env.isolated_kernel(tmp_path / "root", sim_speed=4) as kernel:
        runs = jupyter_env.run_all(source, workdir, kernel_name=kernel)
        try:
            once, _ = next(runs)
            twice, _ = next(runs)
        finally:
            runs.close()

    assert jupyter_env.error_outputs(twice) == []
    live = [int(n) for n in re.findall(r"^LIVE (\d+)$", jupyter_env.output_text(twice), re.M)]
    first_views = set(jupyter_env.widget_views(once))
    assert len(first_views) == 4 and len(live) == 2, (first_views, live)
    assert live[1] == live[0], f"live widget models after Run All 1 and 2: {live}"
    # saved after the second Run All: its own views' models, none of the first run's
    state = jupyter_env.widget_state(twice)
    assert first_views.isdisjoint(state)
    second_views = set(jupyter_env.widget_views(twice)) - first_views
    assert len(second_views) == 4 and second_views <= set(state)
    assert len(state) == live[1]
