"""The first hour in real kernels: what a new user types, cell by cell, in a fresh
kernel (nbclient), with what each cell shows asserted.

- the probe of issue 20: a job from a form, displayed as a cell's last line, is
  two outputs: the live task view, and its lasting face, final once the task ended;
- every Python snippet of the README, statement by statement;
- the lines of the public API contract (``DESIGN.md``) that exist today.

Each notebook runs in its own fresh kernel with no gateway configured (the
embedded simulator answers) and every user directory in a temporary folder.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import jupyter_env  # tests/jupyter_env.py (tests/ is on pytest's pythonpath)
import nbformat
import psutil
import pytest
from widgets.taskfakes import wait_for

pytestmark = [pytest.mark.notebook, pytest.mark.timeout(600)]

README = jupyter_env.REPO / "README.md"
WIDGET = jupyter_env.WIDGET_VIEW_MIME
Messages = list[tuple[int, str, dict[str, Any]]]


def run_cells(
    cells: list[str], workdir: Path, kernel: str, name: str = "cells.ipynb"
) -> tuple[nbformat.NotebookNode, Messages]:
    """Run ``cells`` in a fresh kernel; the saved notebook and its display messages."""
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(cell) for cell in cells]
    source = workdir / f"source-{name}"
    nbformat.write(notebook, source)
    run = workdir / "run"
    run.mkdir(exist_ok=True)
    messages: Messages = []
    saved, _ = jupyter_env.execute(
        source, run, kernel_name=kernel, cell_timeout=300, messages=messages
    )
    assert jupyter_env.error_outputs(saved) == []
    return saved, messages


def statements(code: str) -> list[str]:
    """A snippet cut into its top-level statements (what a user runs one at a time)."""
    lines = code.splitlines()
    tree = ast.parse(code)
    cells = []
    for node in tree.body:
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        assert node.end_lineno is not None
        cells.append("\n".join(lines[first - 1 : node.end_lineno]))
    return cells


def html_of(output: dict[str, Any]) -> str:
    return str(output.get("data", {}).get("text/html", ""))


def assert_job_cell(index: int, saved: nbformat.NotebookNode, messages: Messages) -> str:
    """Cell ``index`` displayed a job as its two faces: the live view (the widget, and
    an empty text), then the lasting face under a display id, rewritten once the task
    ended (status done, image thumbnails embedded) and never turned into anything
    else. Returns the lasting face's saved HTML."""
    shown = [c for cell, kind, c in messages if cell == index and kind == "display_data"]
    assert len(shown) >= 2, f"cell {index} showed {len(shown)} outputs"
    live, lasting = shown[-2:]
    assert set(live["data"]) == {WIDGET, "text/plain"} and live["data"]["text/plain"] == ""
    assert "gw-lasting" in lasting["data"]["text/html"] and WIDGET not in lasting["data"]
    display_id = lasting["transient"]["display_id"]
    updates = [
        content
        for _cell, kind, content in messages
        if kind == "update_display_data" and content["transient"]["display_id"] == display_id
    ]
    assert all(set(u["data"]) == {"text/html", "text/plain"} for u in updates)
    kept = [o for o in saved.cells[index].outputs if o.get("output_type") == "display_data"]
    assert [WIDGET in o["data"] for o in kept[-2:]] == [True, False]  # the live face stays
    html = html_of(kept[-1])
    assert 'class="gw-status gw-status-done"' in html and "gw-placeholder" not in html
    return html


# --- the probe ---------------------------------------------------------------------


def test_a_job_from_a_form_draws_its_view_then_its_lasting_face(
    jupyter_kernel: str, tmp_path: Path
) -> None:
    saved, messages = run_cells(
        [
            "import genwidgets as gw",
            "f = gw.form('genW2.5-t2i-preview'); f.set(prompt='a lighthouse', n=1); "
            "job = f.submit(); job",
            "job.result(timeout=120).ok",
        ],
        tmp_path,
        jupyter_kernel,
    )
    html = assert_job_cell(1, saved, messages)
    assert html.count('class="gw-thumb" src="data:image/') == 1
    assert "<Job " not in str(saved.cells[1].outputs)  # never the text line of issue 20.1
    assert saved.cells[2].outputs[0]["data"]["text/plain"] == "True"


@pytest.mark.parametrize("shown_where_sent", [False, True], ids=["kept", "shown too"])
def test_a_form_submitted_in_code_keeps_its_task_in_the_saved_notebook(
    jupyter_kernel: str, tmp_path: Path, shown_where_sent: bool
) -> None:
    """Issue 39 point 8: ``f = gw.form(...)`` shown in one cell, ``f.submit()`` in a
    later one (``00_quickstart``, where the job is the cell's last line too), run
    headless: the form's task list, saved with the form's cell, holds the task ended,
    as JupyterLab saves it (``tests/firsthour/test_reopened.py``)."""
    saved, _messages = run_cells(
        [
            "import genwidgets as gw\n"
            "f = gw.form('genW2.5-t2i-preview', prompt='a lighthouse', n=1)\nf",
            "job = f.submit()" + ("\njob" if shown_where_sent else ""),
            "job.result(timeout=120).request_id",
        ],
        tmp_path,
        jupyter_kernel,
    )
    request_id = saved.cells[2].outputs[0]["data"]["text/plain"].strip("'")
    faces = [html_of(o) for o in saved.cells[0].outputs if "gw-lasting" in html_of(o)]
    assert len(faces) == 2  # the form's, then its task list's
    assert "a form needs its kernel" in faces[0] and request_id not in faces[0]
    assert request_id in faces[1] and 'class="gw-status gw-status-done"' in faces[1]
    assert "gw-placeholder" not in faces[1]
    assert faces[1].count('class="gw-thumb" src="data:image/') == 1
    sent = [html_of(o) for o in saved.cells[1].outputs if "gw-lasting" in html_of(o)]
    if shown_where_sent:  # a second view of the one task, ended too
        assert len(sent) == 1 and request_id in sent[0] and "gw-status-done" in sent[0]
    else:
        assert saved.cells[1].outputs == []  # nothing shown where it was sent


def test_a_job_imported_from_anywhere_draws_its_view(jupyter_kernel: str, tmp_path: Path) -> None:
    """``client.job`` (re-attach) and a Job made before ``gw.Job`` was ever looked up."""
    saved, messages = run_cells(
        [
            "from genwidgets import _client\n"
            "client = _client.Client()\n"
            "job = client.submit('genW2.5-t2i-preview', {'prompt': 'a lighthouse', 'n': 1})\n"
            "job.result(timeout=120).ok",
            "again = client.job('genW2.5-t2i-preview', job.request_id)\nagain",
        ],
        tmp_path,
        jupyter_kernel,
    )
    html = assert_job_cell(1, saved, messages)
    assert "gw-thumb" in html


def test_a_kernel_ends_with_its_run(jupyter_kernel: str, tmp_path: Path) -> None:
    """The harness shuts down each kernel it starts: a suite that left them running had
    forty idle kernels by its middle, and crawled."""
    saved, _ = run_cells(["import os\nos.getpid()"], tmp_path, jupyter_kernel)
    pid = int(saved.cells[0].outputs[0]["data"]["text/plain"])

    def ended() -> bool:
        try:
            return bool(psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
        except psutil.NoSuchProcess:
            return True

    assert wait_for(ended, timeout=60), f"kernel {pid} still runs"


# --- the README ----------------------------------------------------------------------

#: What the README's prose gives every snippet (a notebook that imported genwidgets)
#: and one snippet in particular (its first line -> code run before it).
GIVEN_ALWAYS = "import genwidgets as gw"
GIVEN = {
    "client = gw.Client(notice_target=1.5, max_status_rate=50)": (
        'payload = {"content": [{"type": "text", "text": "a red kite"}], "duration": 5}'
    ),
    # the batch snippet's rows: the catalogue its comment describes (sku,item,seed)
    "batch = gw.batch(": (
        "import csv\n"
        'with open("catalogue.csv", "w", newline="") as fh:\n'
        '    csv.writer(fh).writerows([["sku", "item", "seed"]]'
        ' + [[f"A{i}", f"item {i}", i] for i in range(1, 6)])'
    ),
}
#: What a snippet's cells must show (its first line -> texts of its outputs).
SHOWS = {
    "import genwidgets as gw\n\nclient = gw.Client()": ("video/mp4",),
    "from typing import Annotated": ("MyTextToImage", "COMPLETED"),
}


def readme_snippets() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_the_readme_has_python_snippets() -> None:
    assert len(readme_snippets()) >= 3


@pytest.mark.parametrize("index", range(len(readme_snippets())))
def test_every_readme_snippet_runs_statement_by_statement(
    index: int, jupyter_kernel: str, tmp_path: Path
) -> None:
    code = readme_snippets()[index]
    given = [GIVEN_ALWAYS] + [g for first, g in GIVEN.items() if code.startswith(first)]
    saved, _ = run_cells(given + statements(code), tmp_path, jupyter_kernel)
    text = jupyter_env.output_text(saved)
    for first, texts in SHOWS.items():
        if code.startswith(first):
            assert [t for t in texts if t not in text] == []
    assert "Error displaying" not in text and "Traceback" not in text


# --- the public API contract -------------------------------------------------------

#: DESIGN.md's "Public API" lines that exist today, as cells (one kernel, in order),
#: each with a text its output must contain ("" where the line shows nothing).
CONTRACT = [
    ("import genwidgets as gw", ""),
    ("client = gw.Client(base_url=None, api_key=None, timeout=30.0, max_retries=2)", ""),
    (
        'job = client.submit("vidVq2-text2video", {"prompt": "a red kite", "duration": 2})',
        "",
    ),
    (
        "job.endpoint, job.request_id, job.status_url, job.response_url, job.cancel_url, "
        "job.queue_position",
        "vidVq2-text2video",
    ),
    (
        "st = job.status()\n(type(st).__name__, type(st.status).__name__, type(st.done).__name__,"
        " type(st.raw).__name__)",
        "('Status', 'str', 'bool', 'dict')",
    ),
    ("job", ""),  # the live task view: asserted below
    (
        "res = job.result(timeout=600)\nres.raise_for_error()\n"
        "(type(res).__name__, res.ok, res.error, res.error_type, len(res.outputs) > 0)",
        "('Result', True, None, None, True)",
    ),
    (
        "out = res.outputs[0]\n(out.content_type, out.url.startswith('http'), "
        "len(out.read()) > 0, out.save('kite.mp4').name)",
        "('video/mp4', True, True, 'kite.mp4')",
    ),
    ("job.done(), job.cancel() is None or True", "(True, True)"),
    ("seen = []\njob.add_done_callback(seen.append)\nlen(seen)", "1"),
    ("(await job).ok", "True"),
    ('client.job("vidVq2-text2video", job.request_id)', ""),  # a re-attached job's view
    (
        'client.run("genW2.5-t2i-preview", {"prompt": "a lighthouse", "n": 1}, timeout=None).ok',
        "True",
    ),
    (
        "async with gw.AsyncClient() as aclient:\n"
        '    ajob = await aclient.submit("genW2.5-t2i-preview", {"prompt": "a kite", "n": 1})\n'
        "    aresult = await ajob\naresult.ok",
        "True",
    ),
    (
        "async with gw.AsyncClient() as aclient:\n"
        '    ajob = await aclient.submit("genW2.5-t2i-preview", {"prompt": "a kite", "n": 1})\n'
        "    st2 = await ajob.status()\n"
        "    res2 = await ajob.result(timeout=600)\n"
        "    await ajob.cancel()\n"
        "(type(ajob).__name__, type(st2.logs).__name__, res2.ok)",
        "('AsyncJob', 'list', True)",
    ),
    ('gw.openapi()["openapi"][:3]', "'3.1'"),
    ('type(gw.validate("genW2.5-t2i-preview", {"prompt": "a lighthouse"})).__name__', ""),
    (
        "specs = gw.endpoints()\n"
        "all(isinstance(s, gw.EndpointSpec) for s in specs), len(specs) > 10",
        "(True, True)",
    ),
    ('form = gw.form("genW2.5-t2i-preview", client=None, prompt="a fox")\nform.value', "a fox"),
    ('form.set(prompt="a lighthouse", n=1)\nform.value["prompt"]', "a lighthouse"),
    ("type(form.submit()).__name__", "Job"),
    (
        "from genwidgets.imgm import Prompt\n"
        'p = Prompt.parse("a {red, blue} kite --ar 16:9")\n'
        "str(p), p.params, p.expand(), p.count(), p.validate()",
        "a red kite",
    ),
    ("gw.render(res)", ""),  # asserted below: its two faces
    ("type(gw.board(client)).__name__", "Board"),
    (
        'sw = gw.sweep("genW2.5-t2i-preview", {"prompt": "a kite", "n": 1}, '
        'vary={"seed": [1, 2]}, client=client)\ntype(sw).__name__',
        "Sweep",
    ),
    (
        'grid = gw.grid("genW2.5-t2i-preview", {"prompt": "a fox", "n": 1}, x=("seed", [1, 2]),'
        " y=None, z=None, client=None, confirm_above=10)\n"
        "grid.submit(); grid.wait(120); grid.shape, len(grid.cells)",
        "((1, 1, 2), 2)",
    ),
    (
        "cell = grid.cell(x=2)\ngrid.rate(cell, 4, note='calm')\n"
        "grid.swap('x', 'y'); type(grid.form(cell)).__name__",
        "EndpointForm",
    ),
    (
        "grid.save_png('sheet.png').name, grid.save_html('grid.html').name",
        "('sheet.png', 'grid.html')",
    ),
    ("grid", ""),  # a finished grid: asserted below, its contact sheet
    (
        "rows = grid.scores('y')\n"
        "[(r['rated'], r['failed']) for r in rows if r['rated']], "
        "any(row['stars'] == 4 for row in gw.scores(endpoint='genW2.5-t2i-preview'))",
        "([(1, 0)], True)",
    ),
    (
        'compared = gw.grid("genW2.5-t2i-preview", {"prompt": "a fox", "n": 1}, '
        'x=("endpoint", ["genW2.5-t2i-preview", "imgQ-edit-plus"]), y=("seed", [1]), '
        'per_endpoint={"imgQ-edit-plus": {"images": ["https://example.com/a.png"]}}, '
        "confirm_above=1)\n"  # above it: counted and shown, nothing sent
        "sorted(c.endpoint for c in compared.cells), "
        "compared.cells[0].payload['seed'] == 1",
        "(['genW2.5-t2i-preview', 'imgQ-edit-plus'], True)",
    ),
    (
        "[g.id for g in gw.grids(client=None)].count(grid.id), "
        "gw.load_grid(grid.id, client=None).id == grid.id",
        "(1, True)",
    ),
    (
        "polled = gw.Client(notice_target=1.5, max_status_rate=50)\n"
        'later = polled.submit("genW2.5-t2i-preview", {"prompt": "a kite", "n": 1})\n'
        "later.expected_finish is None or later.expected_finish >= 0",
        "True",
    ),
]


def test_the_public_api_contract_line_by_line(jupyter_kernel: str, tmp_path: Path) -> None:
    cells = [code for code, _ in CONTRACT]
    saved, messages = run_cells(cells, tmp_path, jupyter_kernel, "contract.ipynb")
    for index, (code, expected) in enumerate(CONTRACT):
        shown = "\n".join(
            str(o.get("data", {}).get("text/plain", "")) + html_of(o)
            for o in saved.cells[index].outputs
        )
        assert expected in shown, f"cell {index} ({code!r}) shows {shown[:300]!r}"
    assert_job_cell(cells.index("job"), saved, messages)  # a video: no thumbnail, a poster
    assert_job_cell(cells.index('client.job("vidVq2-text2video", job.request_id)'), saved, messages)
    live, rendered = saved.cells[cells.index("gw.render(res)")].outputs
    assert WIDGET in live["data"] and WIDGET not in rendered["data"]
    assert "<video controls" in html_of(rendered) and "data:video/mp4;base64," in html_of(rendered)
    live, sheet = saved.cells[cells.index("grid")].outputs
    assert WIDGET in live["data"] and "gw-grid-sheet" in html_of(sheet)  # still a live grid
    assert html_of(sheet).count('class="gw-thumb"') == 2 and 'title="4 of 5"' in html_of(sheet)
