"""The grid weight's notebooks and page hooks match the grid as it is, and a machine
without a browser gets a reason, not a crash. No browser runs here (the benchmark
itself does: ``python benchmarks/run.py``)."""

from __future__ import annotations

import ast
import inspect
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import _common as common  # noqa: E402
from benchmarks import grid_weight  # noqa: E402


@pytest.mark.parametrize("arm", grid_weight.ARMS)
@pytest.mark.parametrize("wait", [True, False])
def test_each_arm_is_a_notebook_of_valid_python(arm: str, wait: bool) -> None:
    notebook = grid_weight.notebook_for(arm, wait=wait)
    assert len(notebook.cells) == (2 if wait else 1)
    for cell in notebook.cells:
        ast.parse(cell.source)
    setup = notebook.cells[0].source
    assert f'"{grid_weight.ENDPOINT}"' in setup and f'"size": "{grid_weight.SIZE}"' in setup


def test_the_full_image_arm_patches_what_the_grid_module_has() -> None:
    """The full arm (full run only) rebinds two of the grid module's functions: renamed
    ones would make its notebook fail in the lead's run, not here."""
    from genwidgets.widgets import grid

    patched = re.findall(r"_grid\.(\w+) =", grid_weight.PATCHES["full"])
    assert patched == ["_output_record", "_thumb"]
    assert all(callable(getattr(grid, name, None)) for name in patched)
    assert "full" in inspect.signature(grid._output_record).parameters


def test_every_class_the_page_waits_for_is_one_the_grid_view_makes() -> None:
    script = (REPO / "genwidgets" / "widgets" / "static" / "grid.js").read_text()
    source = inspect.getsource(grid_weight)
    classes = set(re.findall(r"\.(gw-grid[-a-z]*)", source))
    assert {"gw-grid", "gw-grid-cell", "gw-grid-thumb", "gw-grid-progress"} <= classes
    for name in classes:
        assert f'"{name}"' in script, name


def test_without_chromium_nothing_runs_and_the_reason_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    common.tests_on_path()
    from browser import frontend

    absent = tmp_path / "chromium"
    monkeypatch.setattr(frontend, "CHROMIUM", absent)

    def no_page(arm: str, root: Path) -> dict[str, int]:
        raise AssertionError("a page was opened without a browser")

    monkeypatch.setattr(grid_weight, "page_bytes", no_page)
    found = grid_weight.run_grid_weight(("thumbnails",))
    assert found["arms"] == {} and found["grid_bytes"] is None
    assert found["not_measured"] == f"{absent} is missing (apt-get install chromium)"
