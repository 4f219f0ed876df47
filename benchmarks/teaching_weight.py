"""Teaching notebooks' weight: each lesson's ``.ipynb`` executed with widget state.

A teacher publishes a lesson executed (nbconvert, Jupyter Book, mkdocs-jupyter, a
course repository), its widget state stored so that the task views show. Each
``notebooks/*.ipynb`` is executed once with nbclient (``store_widget_state=True``)
in a fresh kernel and a fresh ``GENWIDGETS_HOME`` (a first run: the embedded
simulator, no history), two at a time, the test harness's settle cell last so that
every job's final view is saved as a browser would have it; the saved file is
weighed with :func:`notebook_weight.anatomy` (also as JupyterLab saves it by default,
without widget state). The goal, 1.5 MB for the heaviest, is issue 40's: GitHub's
notebook preview fails near 2.6 MB. Alone: ``python -m benchmarks.teaching_weight``.
"""

from __future__ import annotations

import concurrent.futures
import json
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import nbformat

from . import _common as common
from . import notebook_weight
from .polling_report import table

#: The teaching notebooks (notebooks/*.ipynb).
TEACHING = tuple(sorted((common.REPO / "notebooks").glob("*.ipynb")))


def weigh(path: Path, workdir: Path) -> dict[str, int]:
    """One lesson executed with widget state and saved: its anatomy. The settle cell
    (tests/jupyter_env.py, the one way the tests run a lesson) is dropped before saving."""
    common.tests_on_path()
    import jupyter_env

    notebook = nbformat.read(path, as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell(jupyter_env.SETTLE_CELL))
    root = workdir / path.stem
    notebook_weight.execute(notebook, root, timeout=int(jupyter_env.SETTLE_LIMIT_S + 60))
    notebook.cells = [c for c in notebook.cells if c.source != jupyter_env.SETTLE_CELL]
    saved = root / path.name
    nbformat.write(notebook, saved)
    return notebook_weight.anatomy(saved)


def run_teaching_weight(paths: Sequence[Path] = TEACHING) -> dict[str, Any]:
    """Each lesson's anatomy by name; ``teaching_nb_max_bytes`` the heaviest's file
    size (None when no lesson ran)."""
    with (
        tempfile.TemporaryDirectory(prefix="gw-bench-teaching-") as tmp,
        concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool,
    ):
        futures = {path.stem: pool.submit(weigh, path, Path(tmp)) for path in paths}
        sizes = {name: future.result() for name, future in futures.items()}
    heaviest = max(sizes, key=lambda name: sizes[name]["file"], default=None)
    return {
        "notebooks": sizes,
        "heaviest": heaviest,
        "teaching_nb_max_bytes": sizes[heaviest]["file"] if heaviest else None,
    }


def section(t: dict[str, Any]) -> list[str]:
    """The report's section: a row per lesson."""
    rows = [
        [
            f"`{name}`",
            f"**{n['file'] / 1e6:.2f} MB**",
            f"{n['file_default_save'] / 1e6:.2f} MB",
            f"{n['widget_state'] / 1e6:.2f} MB ({n['widget_models']})",
            f"{n['outputs'] / 1e6:.2f} MB",
        ]
        for name, n in t["notebooks"].items()
    ]
    header = ["notebook", "with widget state", "default save", "widget state (models)", "outputs"]
    return [
        "## 10. Teaching notebooks' weight",
        "",
        "Each `notebooks/*.ipynb` executed once with nbclient (`store_widget_state=True`) in a "
        "fresh kernel and `GENWIDGETS_HOME` (the embedded simulator, no history), its jobs "
        "waited for, saved and weighed; also as JupyterLab saves it by default (no widget "
        f"state). Heaviest: `{t['heaviest']}`.",
        "",
        *table(header, rows),
        "",
    ]


if __name__ == "__main__":
    print(json.dumps(run_teaching_weight(), indent=2))
