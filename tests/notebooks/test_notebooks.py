"""Every teaching notebook runs top to bottom with no key and shows what it teaches.

Each notebook is executed headless with nbclient (widget state stored) in a
kernel that has no gateway configured, so the embedded simulator answers. The
saved notebook must then hold no error, every displayed widget's model, the
widgets and media kinds the notebook is about, and task views that reached a
terminal state (their final outputs written as ordinary display outputs).
"""

from __future__ import annotations

import ast
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

import httpx
import jupyter_env  # tests/jupyter_env.py (tests/ is on pytest's pythonpath)
import nbformat
import pytest

import genwidgets
from genwidgets.simulator import DEMO_KEY

#: A hang guard for one notebook, generous for a busy machine. The two-minute goal
#: of issue 8 is a timing goal: it belongs in benchmarks/, not in a test.
HANG_GUARD_S = 900
#: What a teaching notebook may weigh executed with widget state (issue 40).
MAX_SAVED_BYTES = 1_500_000


@dataclass(frozen=True)
class Expect:
    """What the saved notebook must show.

    ``widgets``: labels of :func:`jupyter_env.widget_labels` (model names such as
    ``Image``, DOM classes such as ``gw-task-view``, captions such as
    ``button:Submit``). ``media``: kinds shown as display outputs or widgets.
    ``task_views``: at least this many, every one terminal. ``texts``: snippets
    the outputs must contain (the lesson happened, not just "no error").
    ``shown_paths``: no output names a folder of the machine that ran it (the run's
    temporary folders, its genwidgets home): paths show relative or ``~/...``.
    """

    widgets: frozenset[str] = frozenset()
    media: frozenset[str] = frozenset()
    task_views: int = 0
    texts: tuple[str, ...] = ()
    shown_paths: bool = False


def expect(
    widgets: tuple[str, ...] = (),
    media: tuple[str, ...] = (),
    task_views: int = 0,
    texts: tuple[str, ...] = (),
    shown_paths: bool = False,
) -> Expect:
    return Expect(frozenset(widgets), frozenset(media), task_views, texts, shown_paths)


FORM = ("button:Submit", "gw-task-view")

EXPECTED: dict[str, Expect] = {
    "00_quickstart": expect(
        widgets=(*FORM, "Button"),
        media=("image", "video", "audio"),
        task_views=3,
        texts=("simulated", "done"),
    ),
    "01_queue_protocol": expect(
        widgets=("gw-task-view",),
        media=("video",),
        task_views=1,
        texts=(
            "IN_PROGRESS",
            "COMPLETED",
            "Authorization Bearer token is required",
            "RATE_LIMIT_EXCEEDED",
            "App not found: no-such-endpoint",
            "Model not allowed for this user",
            "webhook not supported",
            "SSE streaming not supported",
            "Not Found",
            "Runtime execution failed",
            "Request not found",
            "202",
        ),
    ),
    "02_images": expect(
        widgets=(*FORM,),
        media=("image",),
        task_views=3,
        texts=("imgG-1.5-edit", "imgQ-edit-plus"),
    ),
    "03_imgm_prompts": expect(
        widgets=("gw-task-view",),
        media=("image",),
        task_views=2,
        texts=("imgM-v8.1-i2i", "imgM_pan", "imgM-inpaint"),
    ),
    "04_video": expect(
        widgets=("gw-task-view",),
        media=("video",),
        task_views=4,
        texts=("vidA-2-0-fast", "vidK-v3-turbo-t2v"),
    ),
    "05_speech": expect(
        widgets=("gw-task-view",),
        media=("audio",),
        task_views=2,
        # the subtitled task has a second output, its cues printed with their times
        texts=(
            "speechM-02-turbo",
            "'audio/mpeg', 'application/json'",
            " s  One sentence at a time.",
        ),
    ),
    "06_assets_and_chains": expect(
        widgets=("gw-task-view",),
        media=("video",),
        task_views=3,
        # the subject element is made, then used: its video finished ok
        texts=("Active", "face_id", "element_id:", "vidK-v3-turbo-t2v ok ['video/mp4']"),
    ),
    "07_prompt_tuning": expect(
        widgets=("gw-grid", "gw-board", "button:Submit"),
        media=("image",),
        texts=(
            "a red kite over the sea --ar 1:1 --seed 7",
            "billing fields: n = 1",
            "duration=99",
            "warm light, calm sea",
            "the sheet says: genW2.5-t2i-preview axes ['seed', 'prompt_sr']",
            "ratings kept: [(2, 'at dawn', 5)",
            "creates sent by the new client: 0",
            "score imgM-v8.1-t2i 4.5 2 rated, 0 failed",
            "exported with margins: imgM-v8.1-t2i",
        ),
    ),
    "08_errors_limits_costs": expect(
        widgets=("gw-task-view",),
        texts=("RateLimited", "Retry-After", "cancelled", "Runtime execution failed"),
        task_views=2,
    ),
    "09_batch": expect(
        widgets=("gw-batch",),
        media=("image",),
        texts=(
            "MUG-01-a-blue-ceramic-mug-product-photo-on-a.png",
            '"request_id"',
            "row,name,line,status,endpoint,request_id,files",
            "creates sent by the re-run: 0",
            "waits for submit: True",
            "imgM-v8.1-t2i {'prompt': 'a lighthouse at dawn --seed 4'}",
            "BudgetExceeded - the plan bills 24 images; the budget allows 12",
            "row 1 (line 3).seed",
            "timed out after 0.5 s; cancelled",
            "exit status 0",
            "out $GENWIDGETS_HOME/lessons/09_batch/shots>",
        ),
        shown_paths=True,
    ),
    "10_class_gateway": expect(
        widgets=("gw-task-view",),
        media=("image",),
        task_views=1,
        texts=(
            "shown once, stored hashed",
            "BUDGET_EXCEEDED",
            "your key has 1 of 3 left",
            "Request not found",
            "upstream creates: 1",
        ),
    ),
}

NOTEBOOKS = jupyter_env.notebook_paths()


def test_the_ten_notebooks_exist_and_each_has_expectations() -> None:
    names = {p.stem for p in NOTEBOOKS}
    assert names == set(EXPECTED), (
        f"notebooks without expectations: {sorted(names - set(EXPECTED))}; "
        f"expected notebooks missing: {sorted(set(EXPECTED) - names)}"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_notebook_is_clean(path: Path) -> None:
    """Committed without outputs, execution counts or widget state, and with no key."""
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert jupyter_env.has_outputs(nb) == [], "strip outputs and execution counts"
    assert "widgets" not in nb.metadata, "strip the saved widget state"
    assert nb.metadata.get("kernelspec", {}).get("name") == "python3"
    text = path.read_text()
    assert DEMO_KEY not in text, "use genwidgets.simulator.DEMO_KEY, never the literal key"
    assert not re.search(r"(?i)bearer\s+[a-z0-9_-]{6,}", text), "a literal bearer token"
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# ")


def imported_names(source: str) -> list[tuple[str, str | None]]:
    """(module, name) of each import in a cell's code (``name`` None for ``import x``);
    IPython's ``%magic`` and ``!shell`` lines are left out."""
    code = "\n".join(
        line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))
    )
    found: list[tuple[str, str | None]] = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            found += [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found += [(node.module, alias.name) for alias in node.names]
    return found


def private_uses(source: str) -> list[str]:
    """Every genwidgets name a notebook's cell reaches that is not public: a module
    that is not the facade or one of its public subpackages, a name outside that
    module's ``__all__``, an underscore attribute of ``gw``."""
    import importlib

    subpackages = set(dir(genwidgets)) - set(genwidgets.__all__)  # dir(gw): names, subpackages
    public = {"genwidgets", *(f"genwidgets.{name}" for name in subpackages if name[0] != "_")}
    found = [f"gw.{name}" for name in re.findall(r"\bgw\.(_\w+)", source)]
    for module, name in imported_names(source):
        if module.split(".")[0] != "genwidgets":
            continue
        if module not in public:
            found.append(module if name is None else f"{module}.{name}")
        elif name is not None and name not in importlib.import_module(module).__all__:
            found.append(f"{module}.{name}")
    return found


def test_the_public_name_check_sees_private_ones() -> None:
    assert private_uses("from genwidgets._config import DEMO_KEY") == [
        "genwidgets._config.DEMO_KEY"
    ]
    assert private_uses("from genwidgets.lab.export import read_png_description") == [
        "genwidgets.lab.export.read_png_description"
    ]
    assert private_uses("%time x = gw._LAZY\nimport genwidgets.jobs") == [
        "gw._LAZY",
        "genwidgets.jobs",
    ]
    assert private_uses("from genwidgets.simulator import _embedded") == [
        "genwidgets.simulator._embedded"
    ]
    assert private_uses("from genwidgets.simulator import DEMO_KEY\nimport genwidgets as gw") == []


MARIMO = sorted(NOTEBOOKS[0].parent.glob("marimo_*.py"))


@pytest.mark.parametrize("path", [*NOTEBOOKS, *MARIMO], ids=lambda p: p.stem)
def test_notebooks_use_public_names_only(path: Path) -> None:
    """What a learner copies from a lesson keeps working: nothing private is used."""
    if path.suffix == ".py":  # a marimo notebook is a Python file
        cells = [path.read_text(encoding="utf-8")]
    else:
        nb = nbformat.read(path, as_version=4)
        cells = [cell.source for cell in nb.cells if cell.cell_type == "code"]
    used = [u for source in cells for u in private_uses(source)]
    assert used == [], f"make these public (documented) or do without them: {used}"


@pytest.mark.notebook
@pytest.mark.timeout(HANG_GUARD_S)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem, scope="module")
def test_notebook_runs_top_to_bottom(
    path: Path, lessons: jupyter_env.Lessons, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The first Run All in a fresh kernel and a fresh home (``lessons.first``)."""
    want = EXPECTED[path.stem]
    run = lessons.first(path)
    nb = run.notebook

    assert jupyter_env.error_outputs(nb) == []
    # files go to a temporary folder or GENWIDGETS_HOME, never beside the notebook
    assert run.beside == [path.name]

    state = jupyter_env.widget_state(nb)
    shown = jupyter_env.widget_views(nb)
    assert [m for m in shown if m not in state] == [], "displayed widgets missing from state"
    assert want.widgets <= jupyter_env.widget_labels(state)

    media = jupyter_env.media_kinds(nb)
    assert want.media <= media["outputs"] | media["widgets"], media

    views = jupyter_env.task_views(state)
    assert len(views) >= want.task_views
    assert [v for v in views if not v.terminal] == []

    text = jupyter_env.output_text(nb)
    assert "gw-placeholder" not in text, "a task's final outputs were never written"
    if want.shown_paths:  # every run folder, the kernel's home included, is under it
        assert str(tmp_path_factory.getbasetemp()) not in text
    assert [t for t in want.texts if t not in text] == []
    assert DEMO_KEY not in text and DEMO_KEY not in json.dumps(state)


@pytest.mark.notebook
@pytest.mark.timeout(3 * HANG_GUARD_S)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem, scope="module")
def test_notebook_runs_again_in_the_same_home(path: Path, lessons: jupyter_env.Lessons) -> None:
    """A class re-runs its lessons: Run All twice in a row in one kernel, then once
    more after a kernel restart, all in one fresh ``GENWIDGETS_HOME`` (issue 40.2).
    Each run must end with no error, and files still go only to that home. The first
    Run All is the top-to-bottom test's (``lessons``): the saved ``twice`` holds both."""
    twice, restarted = lessons.again(path), lessons.restarted(path)
    for folder, run in (("twice", twice), ("restarted", restarted)):
        assert jupyter_env.error_outputs(run.notebook) == [], folder
        assert run.beside == [path.name], folder


@pytest.mark.notebook
@pytest.mark.timeout(3 * HANG_GUARD_S)  # it may make the lesson's three runs
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem, scope="module")
def test_a_notebook_saved_with_widget_state_stays_within_the_bound(
    path: Path, lessons: jupyter_env.Lessons
) -> None:
    """Every lesson, executed with widget state (as JupyterLab saves it) in a home that
    already has history, stays light enough to publish as it is. Issue 40: ``07``
    weighed 2.30 MB, and 4.19 MB run again in the same home (a card per ledger job, each
    with a full-size image); GitHub's preview fails near 2.6 MB. Weighed as saved by the
    Run All after a restart (``lessons.restarted``): its home holds what the two Run Alls
    before left (for ``07``: grids, rated cells, the ledger's jobs with their files).
    Also weighed as saved after the second Run All in one kernel (its outputs and the
    models still live, as JupyterLab saves it: review 33 found 03 at 2.45 MB when the
    first run's views stayed open)."""
    run = lessons.restarted(path)
    size = (run.workdir / path.name).stat().st_size
    assert size <= MAX_SAVED_BYTES, (
        f"{path.name} weighs {size / 1e6:.2f} MB executed with widget state in a home with "
        f"history (at most {MAX_SAVED_BYTES / 1e6:.1f} MB)"
    )
    second = nbformat.from_dict(dict(lessons.again(path).notebook))
    second.cells = second.cells[len(second.cells) // 2 :]  # the second Run All's cells
    size = len(nbformat.writes(second).encode())
    assert size <= MAX_SAVED_BYTES, (
        f"{path.name} weighs {size / 1e6:.2f} MB saved after Run All twice in one kernel "
        f"(at most {MAX_SAVED_BYTES / 1e6:.1f} MB)"
    )


@pytest.mark.notebook
@pytest.mark.timeout(HANG_GUARD_S)
def test_the_protocol_lesson_runs_where_a_real_gateway_is_set_up(tmp_path: Path) -> None:
    """Lesson 00 says to export GENWIDGETS_BASE_URL and GENWIDGETS_API_KEY; lesson 01's
    by-hand cells then sent the simulator's key to that gateway, were refused, and the
    lesson died (KeyError 'response_url'). It teaches on the local simulator always."""
    from genwidgets.simulator import SimConfig, SimulatorServer

    gateway = SimulatorServer(SimConfig(keys=("a-real-key",)), host="127.0.0.1", port=0).start()
    try:
        with jupyter_env.isolated_kernel(tmp_path / "root") as kernel:
            os.environ["GENWIDGETS_BASE_URL"] = gateway.base_url
            os.environ["GENWIDGETS_API_KEY"] = "a-real-key"
            path = jupyter_env.notebook_paths()[1]
            assert path.stem == "01_queue_protocol"
            (tmp_path / "run").mkdir()
            nb, _ = jupyter_env.execute(path, tmp_path / "run", kernel_name=kernel)
        assert jupyter_env.error_outputs(nb) == []
        assert "COMPLETED" in jupyter_env.output_text(nb)
        assert httpx.get(f"{gateway.base_url}/_sim/stats", timeout=10).json()["created"] == 0
    finally:
        gateway.stop()
