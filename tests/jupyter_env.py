"""Run notebooks the way a student's fresh machine would, and read what they saved.

Shared by the nbclient tests (this folder) and the browser tests (``tests/browser``,
which load this file by path: ``--import-mode=importlib`` gives test folders no
package to import from).

Isolation: every Jupyter, IPython, XDG and genwidgets directory points into a
temporary folder, and ``GENWIDGETS_BASE_URL`` / ``GENWIDGETS_API_KEY`` are removed,
so a kernel started from here uses the embedded simulator and writes nothing into
the home directory.
"""

from __future__ import annotations

import contextlib
import copy as copy_module
import itertools
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx
import nbformat

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"
KERNEL_NAME = "genwidgets-test"
KERNEL_DISPLAY_NAME = "genwidgets (test)"
GATEWAY_VARIABLES = ("GENWIDGETS_BASE_URL", "GENWIDGETS_API_KEY")
SIM_SPEED_VARIABLE = "GENWIDGETS_SIM_SPEED"
#: The lessons' embedded simulator runs at four times its demo speed: every cell, view
#: and check is the same, the waits on its tasks a quarter (docs/decisions.md#sim-speed)
LESSON_SIM_SPEED = 4.0
WIDGET_STATE_MIME = "application/vnd.jupyter.widget-state+json"
WIDGET_VIEW_MIME = "application/vnd.jupyter.widget-view+json"

#: Environment variable -> folder under the temporary root.
_ISOLATED_DIRS = {
    "HOME": "home",
    "IPYTHONDIR": "ipython",
    "JUPYTER_CONFIG_DIR": "jupyter/config",
    "JUPYTER_DATA_DIR": "jupyter/data",
    "JUPYTER_RUNTIME_DIR": "jupyter/runtime",
    "XDG_CONFIG_HOME": "xdg/config",
    "XDG_DATA_HOME": "xdg/data",
    "XDG_CACHE_HOME": "xdg/cache",
    "XDG_STATE_HOME": "xdg/state",
    "XDG_RUNTIME_DIR": "xdg/runtime",
    "GENWIDGETS_HOME": "genwidgets-home",
}

#: The longest the harness waits for the notebook's jobs to end (a hang guard, not a
#: budget: timing goals live in benchmarks/).
SETTLE_LIMIT_S = 300.0

#: Appended to every executed copy: nbclient keeps only the messages of the cell it
#: is running, so updates that the engine thread sends after the last cell ended
#: would be lost from the saved file (a browser receives them). This cell waits,
#: in the kernel, until every job has ended: a job notifies its views (the terminal
#: write is forced, not throttled) before its future completes, and the views
#: republish their final outputs when this cell ends, so all of it lands here. A
#: job still running at the limit fails the cell, saying so.
SETTLE_CELL = f"""\
# test harness: wait until every job has ended, so its final view is saved
import gc as _gc
import time as _time

from genwidgets.jobs.job import Job as _Job

_deadline = _time.monotonic() + {SETTLE_LIMIT_S}
_jobs = [o for o in _gc.get_objects() if isinstance(o, _Job)]
for _job in _jobs:
    try:
        _job.result(timeout=max(0.0, _deadline - _time.monotonic()))
    except Exception:
        pass  # ended with an error (it has ended), or still running: reported below
_running = [_job for _job in _jobs if not _job.done()]
assert not _running, f"still running after {SETTLE_LIMIT_S:.0f} s: {{_running}}"
"""


def isolated_environ(
    root: Path, base: Mapping[str, str] | None = None, *, sim_speed: float | None = None
) -> dict[str, str]:
    """A copy of ``base`` (``os.environ``) with every user directory under ``root``
    and no gateway configured (so the embedded simulator is used, ``sim_speed`` times
    its demo speed when given: ``GENWIDGETS_SIM_SPEED``)."""
    env = {k: v for k, v in (base or os.environ).items() if k not in GATEWAY_VARIABLES}
    env.pop(SIM_SPEED_VARIABLE, None)
    if sim_speed is not None:
        env[SIM_SPEED_VARIABLE] = str(sim_speed)
    for name, sub in _ISOLATED_DIRS.items():
        folder = root / sub
        folder.mkdir(parents=True, exist_ok=True)
        env[name] = str(folder)
    (root / "xdg/runtime").chmod(0o700)
    env["JUPYTER_PATH"] = str(root / "kernel-prefix/share/jupyter")
    env["JUPYTER_PLATFORM_DIRS"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def register_kernel(root: Path, env: Mapping[str, str]) -> str:
    """Register this virtual environment's Python as a kernel under ``root`` and
    return its name (found through ``JUPYTER_PATH`` of :func:`isolated_environ`)."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "ipykernel",
            "install",
            "--prefix",
            str(root / "kernel-prefix"),
            "--name",
            KERNEL_NAME,
            "--display-name",
            KERNEL_DISPLAY_NAME,
        ],
        env=dict(env),
        check=True,
        capture_output=True,
        timeout=60,
    )
    return KERNEL_NAME


@contextlib.contextmanager
def isolated_kernel(root: Path, *, sim_speed: float | None = None) -> Iterator[str]:
    """Within: this process has the isolated environment of :func:`isolated_environ`
    (nbclient finds the kernel spec through it and the kernel inherits it) and a
    registered kernel, whose name is yielded. The environment is restored after."""
    env = isolated_environ(root, sim_speed=sim_speed)
    saved = dict(os.environ)
    try:
        os.environ.clear()
        os.environ.update(env)
        yield register_kernel(root, env)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def free_port() -> int:
    """A loopback port free now: a server given it binds it a moment later, and another
    process may take it in between (:func:`on_a_free_port` starts it again)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


T = TypeVar("T")


def on_a_free_port(start: Callable[[int], T | None], what: str, attempts: int = 3) -> T:
    """What ``start(port)`` started on a port picked free: it returns None when the
    server found its port taken (bound by another process between being picked and
    bound, "already in use"), and is called again with another, ``attempts`` times at
    most. A server must not move to another port itself: the test would not know it."""
    for _attempt in range(attempts):
        started = start(free_port())
        if started is not None:
            return started
    raise AssertionError(f"{what} found its port taken {attempts} times")


def server_started(
    process: subprocess.Popen[bytes], answers: Callable[[], bool], log: Path, limit: float
) -> bool:
    """Wait until the server ``process`` started ``answers()`` (True), or it exited
    because its port was taken (False, for :func:`on_a_free_port`). Any other exit, or
    no answer within ``limit`` seconds (the server is stopped), fails with its log."""
    deadline = time.monotonic() + limit
    while True:
        said = log.read_text(errors="replace")[-3000:]
        if process.poll() is not None:
            assert "already in use" in said.lower(), f"the server exited early:\n{said}"
            return False
        try:
            if answers():
                return True
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            stop_group(process)
            raise AssertionError(f"the server did not start in {limit:g} s:\n{said}")
        time.sleep(0.25)


def stop_group(process: subprocess.Popen[bytes]) -> None:
    """Stop a server and its children (its own process group), bounded in time."""
    if process.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def notebook_paths() -> list[Path]:
    return sorted(NOTEBOOKS.glob("*.ipynb"))


def execute(
    source: Path,
    workdir: Path,
    *,
    kernel_name: str = KERNEL_NAME,
    cell_timeout: float = 120,
    store_widget_state: bool = True,
    messages: list[tuple[int, str, dict[str, Any]]] | None = None,
) -> tuple[nbformat.NotebookNode, float]:
    """Execute a copy of ``source`` in ``workdir`` (widget state stored unless
    ``store_widget_state`` is false, as JupyterLab saves by default); return the
    executed notebook (also written to ``workdir``, without the harness's settle
    cell) and the seconds it took. ``messages`` collects each display message
    (cell index, ``display_data`` / ``update_display_data``, content).

    Errors raise ``nbclient.exceptions.CellExecutionError`` at the failing cell,
    with its traceback: a teaching notebook must never stop Run All.
    """
    runs = run_all(
        source,
        workdir,
        kernel_name=kernel_name,
        cell_timeout=cell_timeout,
        store_widget_state=store_widget_state,
        messages=messages,
    )
    try:
        return next(runs)
    finally:
        runs.close()


def run_all(
    source: Path,
    workdir: Path,
    *,
    kernel_name: str = KERNEL_NAME,
    cell_timeout: float = 120,
    store_widget_state: bool = True,
    messages: list[tuple[int, str, dict[str, Any]]] | None = None,
) -> Iterator[tuple[nbformat.NotebookNode, float]]:
    """Run All of ``source`` in one kernel, once per ``next()``, as a class re-runs a
    lesson: the kernel starts at the first ``next()`` (in this process's environment, so
    inside :func:`isolated_kernel`) in ``workdir`` and stays up until the generator is
    closed. Each ``next()`` appends the cells again (ids kept unique) and the settle
    cell, runs them and yields the notebook saved then (every Run All so far, widget
    state as at its end, written to ``workdir``) and that Run All's seconds. Each cell
    is run as JupyterLab runs it: named by its lesson's id, and the models the kernel
    closed are not saved. Errors raise as in :func:`execute`."""
    from jupyter_client.manager import AsyncKernelManager
    from nbclient import NotebookClient

    #: each cell's id as the kernel is told it: the lesson's id on every Run All
    lab_ids: dict[str, str] = {}

    class Recording(NotebookClient):  # type: ignore[misc]
        """nbclient as JupyterLab runs a cell: the request names the cell (``cellId``, the
        same id on every Run All), and a model the kernel closed is no longer saved (the
        widget manager drops it); nbclient alone does neither."""

        running: str | None = None

        def process_message(self, msg: dict[str, Any], cell: Any, cell_index: int) -> Any:
            kind = msg.get("msg_type", "")
            if messages is not None and kind in ("display_data", "update_display_data"):
                messages.append((cell_index, kind, msg["content"]))
            if kind == "comm_close":
                self.widget_state.pop(msg["content"]["comm_id"], None)
                self.widget_buffers.pop(msg["content"]["comm_id"], None)
            return super().process_message(msg, cell, cell_index)

        def execute_cell(self, cell: Any, *args: Any, **kwargs: Any) -> Any:
            self.running = lab_ids.get(cell.get("id", ""))
            return super().execute_cell(cell, *args, **kwargs)

        def execute_request(self, code: str, **content: Any) -> str:
            """``kc.execute`` with the running cell's id in the request's metadata."""
            content = {"silent": False, "user_expressions": {}, "allow_stdin": False, **content}
            msg = self.kc.session.msg(
                "execute_request",
                {"code": code, **content},
                metadata={"cellId": self.running} if self.running else {},
            )
            self.kc.shell_channel.send(msg)
            return str(msg["header"]["msg_id"])

    nb = nbformat.read(source, as_version=4)
    lesson, nb.cells = nb.cells, []
    # The kernel's channels are Unix sockets in a short private folder, not TCP ports:
    # jupyter_client picks free ports, closes them and the kernel binds them later, and
    # in between another test's server can take one ("Address already in use", the
    # kernel dies before replying). A socket's path has ~100 bytes, hence /tmp.
    sockets = Path(tempfile.mkdtemp(prefix="gwk-", dir="/tmp"))
    manager = AsyncKernelManager(kernel_name=kernel_name, transport="ipc", ip=str(sockets / "k"))
    client = Recording(
        nb,
        km=manager,
        kernel_name=kernel_name,
        timeout=int(cell_timeout),
        timeout_func=lambda cell: (
            int(SETTLE_LIMIT_S + 60) if cell.source == SETTLE_CELL else int(cell_timeout)
        ),
        store_widget_state=store_widget_state,
        resources={"metadata": {"path": str(workdir)}},
    )
    with contextlib.ExitStack() as cleanup:
        cleanup.callback(shutil.rmtree, sockets, ignore_errors=True)
        # given a manager, nbclient leaves its kernel running unless told to clean up
        cleanup.enter_context(client.setup_kernel(cleanup_kc=True))
        client.kc.execute = client.execute_request
        info = client.wait_for_reply(client.kc.kernel_info())
        nb.metadata["language_info"] = info["content"]["language_info"]
        for run in itertools.count():
            first = len(nb.cells)
            again = [_again(cell, run) for cell in lesson]
            pairs = zip(again, lesson, strict=True)
            lab_ids.update((copy["id"], cell["id"]) for copy, cell in pairs if "id" in cell)
            nb.cells += again
            nb.cells.append(nbformat.v4.new_code_cell(SETTLE_CELL))
            started = time.monotonic()
            for index in range(first, len(nb.cells)):
                cell = nb.cells[index]
                client.execute_cell(cell, index, execution_count=client.code_cells_executed + 1)
            elapsed = time.monotonic() - started
            client.set_widgets_metadata()
            saved = nbformat.from_dict(copy_module.deepcopy(dict(nb)))
            saved.cells = [c for c in saved.cells if c.source != SETTLE_CELL]
            nbformat.write(saved, workdir / source.name)
            yield saved, elapsed


def _again(cell: nbformat.NotebookNode, run: int) -> nbformat.NotebookNode:
    """A copy of ``cell`` for Run All number ``run`` (from 0), its id kept unique."""
    copy = nbformat.from_dict(copy_module.deepcopy(dict(cell)))
    if run and "id" in copy:
        copy["id"] = f"{copy['id']}-run{run}"[:64]
    return copy


# --- one run of each lesson, shared by the tests ---------------------------


@dataclass
class Run:
    """One Run All: the notebook saved after it, its seconds, the folder the kernel ran
    in, and what that folder held right after it (a later run cannot change it)."""

    notebook: nbformat.NotebookNode
    seconds: float
    workdir: Path
    beside: list[str]


class Lessons:
    """Each teaching notebook's runs, each made once, on demand, for every test that
    reads it: ``first`` (Run All in a fresh kernel and a fresh home of its own),
    ``again`` (Run All once more in that kernel) and ``restarted`` (Run All in a new
    kernel on that home, whether or not the two runs before it passed). A failed run
    raises again for each test that asks for it (``again`` too when ``first`` failed:
    its own first Run All). At most one kernel stays up: the first run's, until its second
    run is made or another lesson starts (asked for later, a lesson whose first kernel
    is gone gets a new home and both runs again)."""

    def __init__(self, folders: Callable[[str], Path]) -> None:
        self._folders = folders
        self._made: dict[tuple[str, str], Run | BaseException] = {}
        self._home: dict[str, Path] = {}
        self._open: tuple[str, Iterator[tuple[nbformat.NotebookNode, float]], Path] | None = None

    def first(self, source: Path) -> Run:
        return self._get(source, "first")

    def again(self, source: Path) -> Run:
        return self._get(source, "again")

    def restarted(self, source: Path) -> Run:
        return self._get(source, "restarted")

    def close(self) -> None:
        if self._open:
            self._open[1].close()
            self._open = None

    def _get(self, source: Path, stage: str) -> Run:
        if (source.stem, stage) not in self._made:
            try:
                self._made[(source.stem, stage)] = self._make(source, stage)
            except Exception as error:
                self._made[(source.stem, stage)] = error
        made = self._made[(source.stem, stage)]
        if isinstance(made, BaseException):
            raise made
        return made

    def _make(self, source: Path, stage: str) -> Run:
        stem = source.stem
        if stage == "first":
            self.close()
            home = self._home[stem] = self._folders(f"{stem}-home")
            workdir = self._folders(f"{stem}-run")
            with isolated_kernel(home, sim_speed=LESSON_SIM_SPEED) as kernel:
                runs = run_all(source, workdir, kernel_name=kernel)
                made = _run(source, workdir, next(runs))
            self._open = (stem, runs, workdir)
            return made
        if stage == "again":
            if not (self._open and self._open[0] == stem):
                if not isinstance(self._made.get((stem, "first")), BaseException):
                    self._made.pop((stem, "first"), None)  # its kernel is gone: anew
                self.first(source)  # raises the first run's error, if it failed
            assert self._open is not None
            _stem, runs, workdir = self._open
            try:
                return _run(source, workdir, next(runs))
            finally:
                self.close()
        with contextlib.suppress(Exception):  # the failure is the again test's to report;
            self.again(source)  # the home keeps what ran, and the restart follows
        workdir = self._folders(f"{stem}-restarted")
        with isolated_kernel(self._home[stem], sim_speed=LESSON_SIM_SPEED) as kernel:
            return _run(source, workdir, execute(source, workdir, kernel_name=kernel))


def _run(source: Path, workdir: Path, made: tuple[nbformat.NotebookNode, float]) -> Run:
    return Run(made[0], made[1], workdir, sorted(p.name for p in workdir.iterdir()))


# --- reading a saved notebook ----------------------------------------------


def outputs(nb: nbformat.NotebookNode) -> Iterator[dict[str, Any]]:
    for cell in nb.cells:
        if cell.cell_type == "code":
            yield from cell.get("outputs", [])


def error_outputs(nb: nbformat.NotebookNode) -> list[str]:
    """Error outputs, and stderr that carries a traceback or a logged failure."""
    found = []
    for out in outputs(nb):
        if out["output_type"] == "error":
            found.append(f"{out['ename']}: {out['evalue']}")
        elif out["output_type"] == "stream" and out.get("name") == "stderr":
            text = out.get("text", "")
            if "Traceback" in text or "genwidgets:" in text or "Exception" in text:
                found.append(text)
    return found


def output_text(nb: nbformat.NotebookNode) -> str:
    """Every text the outputs show (streams, plain text and HTML), joined. A cell's
    consecutive pieces of one stream are one text, as a front-end shows them: a busy
    kernel may send one ``print`` in two messages, saved as two outputs."""
    parts = []
    stream: tuple[int, str] | None = None  # (cell, stream name) of the last part
    for index, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
            here = (index, out.get("name", "")) if out["output_type"] == "stream" else None
            if here is not None and here == stream:
                parts[-1] += out.get("text", "")
            else:
                parts.extend(_texts(out))
            stream = here
    return "\n".join(parts)


def _texts(out: dict[str, Any]) -> list[str]:
    if out["output_type"] == "stream":
        return [out.get("text", "")]
    if out["output_type"] == "error":
        return [out.get("evalue", "")]
    data = out.get("data", {})
    return [str(data.get(m, "")) for m in ("text/plain", "text/html")]


def widget_state(nb: nbformat.NotebookNode) -> dict[str, dict[str, Any]]:
    """model_id -> {"model_name", "model_module", "state"} as saved, or {}."""
    saved = nb.metadata.get("widgets", {}).get(WIDGET_STATE_MIME, {})
    return dict(saved.get("state", {}))


def widget_views(nb: nbformat.NotebookNode) -> list[str]:
    """Model ids of every widget the outputs display."""
    return [
        out["data"][WIDGET_VIEW_MIME]["model_id"]
        for out in outputs(nb)
        if WIDGET_VIEW_MIME in out.get("data", {})
    ]


def _children(model: Mapping[str, Any]) -> list[str]:
    refs = model["state"].get("children", [])
    return [r.removeprefix("IPY_MODEL_") for r in refs if isinstance(r, str)]


def descendants(state: Mapping[str, Mapping[str, Any]], model_id: str) -> list[str]:
    seen: list[str] = []
    todo = [model_id]
    while todo:
        current = todo.pop()
        if current in seen or current not in state:
            continue
        seen.append(current)
        todo.extend(_children(state[current]))
    return seen


def widget_labels(state: Mapping[str, Mapping[str, Any]]) -> set[str]:
    """Model names without "Model" (``Button``, ``Image``), DOM classes
    (``gw-task-view``) and button captions (``button:Submit``) in the saved state."""
    labels: set[str] = set()
    for model in state.values():
        labels.add(model["model_name"].removesuffix("Model"))
        labels.update(model["state"].get("_dom_classes", []))
        if model["model_name"] == "ButtonModel":
            labels.add(f"button:{model['state'].get('description', '')}")
    return labels


_STATUS = re.compile(r'class="gw-status gw-status-(\w+)"[^>]*>([^<]*)<')


@dataclass
class SavedTaskView:
    model_id: str
    category: str
    word: str
    html: str = field(repr=False)

    @property
    def terminal(self) -> bool:
        return self.category in {"done", "failed", "cancelled"}


def task_views(state: Mapping[str, Mapping[str, Any]]) -> list[SavedTaskView]:
    """The saved task views and the status each shows."""
    views = []
    for model_id, model in state.items():
        if "gw-task-view" not in model["state"].get("_dom_classes", []):
            continue
        if "category" in model["state"]:  # the anywidget task view: status as traits
            saved = model["state"]
            views.append(SavedTaskView(model_id, saved["category"], saved.get("status", ""), ""))
            continue
        html = "".join(
            str(state[m]["state"].get("value", ""))
            for m in descendants(state, model_id)
            if state[m]["model_name"] == "HTMLModel"
        )
        match = _STATUS.search(html)
        category, word = match.groups() if match else ("missing", "")
        views.append(SavedTaskView(model_id, category, word, html))
    return views


_MEDIA_TAGS = {"image": r"<img\b", "video": r"<video\b", "audio": r"<audio\b"}
_MEDIA_MODELS = {"image": "ImageModel", "video": "VideoModel", "audio": "AudioModel"}


def _tags(html: str) -> set[str]:
    return {kind for kind, tag in _MEDIA_TAGS.items() if re.search(tag, html)}


def media_kinds(nb: nbformat.NotebookNode) -> dict[str, set[str]]:
    """Which media kinds the notebook shows: as display outputs, and in widgets
    (Image/Video/Audio models, or tags inside HTML widgets such as the sweep grid)."""
    shown: set[str] = set()
    for out in outputs(nb):
        data = out.get("data", {})
        shown |= _tags(str(data.get("text/html", "")))
        if any(m.startswith("image/") for m in data):
            shown.add("image")
    in_widgets: set[str] = set()
    for model in widget_state(nb).values():
        in_widgets |= {k for k, name in _MEDIA_MODELS.items() if model["model_name"] == name}
        if model["model_name"] == "HTMLModel":
            in_widgets |= _tags(str(model["state"].get("value", "")))
        for entry in model["state"].get("outputs", []):  # the anywidget task view's outputs
            if isinstance(entry, dict) and entry.get("kind") in _MEDIA_TAGS:
                in_widgets.add(entry["kind"])
    return {"outputs": shown, "widgets": in_widgets}


def has_outputs(nb: nbformat.NotebookNode) -> list[int]:
    """Indices of code cells that carry outputs or an execution count."""
    return [
        i
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code" and (cell.get("outputs") or cell.get("execution_count"))
    ]
