"""One helper for every browser test: start a front-end, open a page, look at it.

:func:`serve` starts JupyterLab, Notebook 7, Voilà or marimo on a free
loopback port, serving a temporary copy of ``notebooks/`` (plus any extra
files a test writes there), in an isolated environment with no gateway
configured (the kernels use the embedded simulator). It waits until the server
answers, and stops it with its kernels (its own process group) afterwards.
:func:`open_page` gives a chromium page that records page errors and widget
console errors; :func:`check_page` asserts none happened.

Facts these rely on are in ``/work/shared/notes/jupyter-testing.md``:
``playwright install`` cannot download browsers here, so the system chromium
is launched by path; Jupyter servers run as root only with ``--allow-root``;
marimo renders anywidget front-ends inside a shadow root.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx
import jupyter_env  # tests/jupyter_env.py (tests/ is on pytest's pythonpath)
import pytest

REPO = Path(__file__).resolve().parents[2]
SCREENSHOTS = REPO / "docs" / "img"
CHROMIUM = Path(os.environ.get("GENWIDGETS_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--autoplay-policy=user-gesture-required",
]
SERVER_START_TIMEOUT_S = 90.0
KERNEL_DISPLAY_NAME = "Python 3 (ipykernel)"
RUN_ALL_TIMEOUT_MS = 150_000
#: Notebook 7 (7.6.5) itself throws this while loading its settings, before any
#: cell runs or any widget exists (seen opening a notebook committed clean).
NOTEBOOK7_STARTUP_ERROR = "Cannot read properties of undefined (reading 'schema')"
BROKEN_WIDGET_TEXTS = ("Error displaying widget", "model not found", "Could not create model")

Kind = Literal["lab", "notebook", "voila", "marimo"]

#: User settings that keep pop-ups out of the screenshots and the network alone.
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
}

#: Every <img> under ``root`` loaded (natural size); every <video>/<audio> has at
#: least its metadata (ready state >= 1). Looks into shadow roots (marimo).
MEDIA_STATE_JS = """
(selector) => {
  const roots = [document];
  const seen = [];
  while (roots.length) {
    const root = roots.pop();
    for (const el of root.querySelectorAll('*')) {
      if (el.shadowRoot) roots.push(el.shadowRoot);
    }
    seen.push(...root.querySelectorAll(selector));
  }
  const pending = [];
  const counts = {img: 0, video: 0, audio: 0};
  for (const area of seen) {
    for (const img of area.querySelectorAll('img')) {
      counts.img += 1;
      if (!(img.complete && img.naturalWidth > 0)) pending.push('img ' + img.src.slice(0, 80));
    }
    for (const tag of ['video', 'audio']) {
      for (const el of area.querySelectorAll(tag)) {
        counts[tag] += 1;
        if (el.readyState < 1) {
          const err = el.error ? ' error ' + el.error.code : '';
          pending.push(tag + ' ' + (el.currentSrc || el.src).slice(0, 80) + err);
        }
      }
    }
  }
  return {counts, pending};
}
"""


#: The rendered width of every task view's video (shadow roots included, as in
#: marimo): one width in every front-end (issue 20.13).
VIDEO_WIDTHS_JS = """
() => {
  const roots = [document];
  const widths = [];
  while (roots.length) {
    const root = roots.pop();
    for (const el of root.querySelectorAll('*')) {
      if (el.shadowRoot) roots.push(el.shadowRoot);
    }
    for (const v of root.querySelectorAll('.gw-task video')) {
      widths.push(Math.round(v.getBoundingClientRect().width));
    }
  }
  return widths;
}
"""
VIDEO_WIDTH = 320


def require_chromium() -> Path:
    """The chromium binary, or a loud skip saying why the browser tests did not run."""
    if not CHROMIUM.exists():
        reason = (
            f"!!! {CHROMIUM} is missing: the real-browser tests are SKIPPED. Install it "
            "with `apt-get install -y chromium` (tests/run.sh does this as root)."
        )
        warnings.warn(reason, stacklevel=2)
        print(f"\n{reason}", file=sys.stderr)
        pytest.skip(reason)
    return CHROMIUM


@contextlib.contextmanager
def launch_chromium() -> Iterator[Any]:
    """A headless chromium (Playwright's sync API)."""
    executable = require_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(
            executable_path=str(executable), headless=True, args=CHROMIUM_ARGS, timeout=60_000
        )
        try:
            yield chromium
        finally:
            chromium.close()


@dataclass
class Frontend:
    """A running front-end: where it is and how to reach a notebook in it."""

    kind: Kind
    url: str
    token: str
    root: Path
    log: Path

    def api(self, method: str, path: str) -> httpx.Response:
        return httpx.request(
            method,
            f"{self.url}{path}",
            headers={"Authorization": f"token {self.token}"},
            timeout=10,
        )

    def page_url(self, name: str = "") -> str:
        """The page that shows notebook ``name`` (marimo serves one notebook at ``/``)."""
        if self.kind == "lab":  # a clean workspace (``reset``), logged in by token
            return f"{self.url}/lab/tree/{name}?reset&token={self.token}"
        if self.kind == "notebook":
            return f"{self.url}/notebooks/{name}?token={self.token}"
        if self.kind == "voila":
            return f"{self.url}/voila/render/{name}"
        return f"{self.url}/"

    def delete_sessions(self) -> None:
        """End the kernels a previous test left (Jupyter servers only)."""
        for session in self.api("GET", "/api/sessions").json():
            self.api("DELETE", f"/api/sessions/{session['id']}")

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]


def _command(kind: Kind, port: int, token: str, workdir: Path, target: str | None) -> list[str]:
    python = sys.executable
    jupyter_common = [
        "--no-browser",
        "--ip",
        "127.0.0.1",
        f"--port={port}",
        f"--IdentityProvider.token={token}",
        "--allow-root",
        f"--ServerApp.root_dir={workdir}",
        "--ServerApp.port_retries=0",  # a taken port fails here (serve() picks another)
        "--KernelManager.transport=ipc",  # see serve(): no kernel port to lose
    ]
    if kind == "lab":
        return [
            python,
            "-m",
            "jupyterlab",
            *jupyter_common,
            "--LabApp.news_url=",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        ]
    if kind == "notebook":
        return [python, "-m", "notebook", *jupyter_common]
    if kind == "voila":
        return [
            python,
            "-m",
            "voila",
            "--no-browser",
            f"--port={port}",
            "--Voila.port_retries=0",
            "--Voila.ip=127.0.0.1",
            "--show_tracebacks=True",
            str(workdir),
        ]
    assert target is not None, "marimo serves one notebook: pass its file name"
    return [
        python,
        "-m",
        "marimo",
        "run",
        str(workdir / target),
        "--headless",
        "--port",
        str(port),
        "--host",
        "127.0.0.1",
        "--no-token",
    ]


def _ready_path(kind: Kind) -> str:
    return {"lab": "/api/status", "notebook": "/api/status", "voila": "/", "marimo": "/"}[kind]


@contextlib.contextmanager
def serve(
    kind: Kind,
    root: Path,
    *,
    target: str | None = None,
    extra: dict[str, str] | None = None,
    sim_speed: float | None = None,
) -> Iterator[Frontend]:
    """Start ``kind`` on a free loopback port over a copy of ``notebooks/`` under
    ``root`` (plus ``extra`` files: name -> text); stop it and its kernels after.
    Started again on the same ``root``, it serves what the last one left there
    (notebooks saved in the page included): a server restarted, kernels gone.
    ``sim_speed``: its kernels' embedded simulator runs that many times demo speed
    (``GENWIDGETS_SIM_SPEED``); unset, at demo speed."""
    require_chromium()
    workdir = root / "work"
    if not workdir.exists():
        shutil.copytree(jupyter_env.NOTEBOOKS, workdir)
    for name, text in (extra or {}).items():
        (workdir / name).write_text(text)
    env = jupyter_env.isolated_environ(root / "env", sim_speed=sim_speed)
    # Kernels talk over Unix sockets named after their connection files, not over TCP
    # ports that another test's server may take between being picked and bound; the
    # runtime folder is short because a socket's path has ~100 bytes.
    runtime = Path(tempfile.mkdtemp(prefix="gwr-", dir="/tmp"))
    env["JUPYTER_RUNTIME_DIR"] = str(runtime)
    for plugin, values in (LAB_SETTINGS if kind == "lab" else {}).items():
        path = Path(env["JUPYTER_CONFIG_DIR"]) / "lab" / "user-settings"
        path = path / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    token = secrets.token_hex(16)
    log = root / f"{kind}.log"

    def start(port: int) -> tuple[subprocess.Popen[bytes], Frontend] | None:
        # no port retries: a server that moved elsewhere would not be the test's
        with log.open("wb") as sink:
            process = subprocess.Popen(
                _command(kind, port, token, workdir, target),
                cwd=workdir,
                env=env,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        server = Frontend(kind, f"http://127.0.0.1:{port}", token, workdir, log)
        ready = lambda: server.api("GET", _ready_path(kind)).status_code == 200  # noqa: E731
        started = jupyter_env.server_started(process, ready, log, SERVER_START_TIMEOUT_S)
        return (process, server) if started else None

    process, server = jupyter_env.on_a_free_port(start, kind)
    try:
        yield server
    finally:
        jupyter_env.stop_group(process)
        shutil.rmtree(runtime, ignore_errors=True)


@dataclass
class Watched:
    """A page and what went wrong on it."""

    page: Any
    page_errors: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)


@contextlib.contextmanager
def open_page(browser: Any, server: Frontend, *, failure_name: str) -> Iterator[Watched]:
    """A fresh page that records page errors and console errors; on failure it
    leaves a screenshot beside the server log and says where both are."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(30_000)
    watched = Watched(page)
    page.on("pageerror", lambda exc: watched.page_errors.append(str(exc)))
    page.on(
        "console",
        lambda msg: watched.console_errors.append(msg.text) if msg.type == "error" else None,
    )
    try:
        yield watched
    except BaseException:
        shot = server.root.parent / failure_name
        page.screenshot(path=str(shot), full_page=True)
        print(f"failure screenshot: {shot}; server log: {server.log}")
        raise
    finally:
        page.close()


def check_page(watched: Watched, text: str) -> None:
    """No widget failed to display, the page raised nothing, no widget/model error."""
    assert [t for t in BROKEN_WIDGET_TEXTS if t.lower() in text.lower()] == []
    assert watched.page_errors == []
    widget_errors = [
        e for e in watched.console_errors if "widget" in e.lower() or "model" in e.lower()
    ]
    assert widget_errors == []


def wait_for_media(page: Any, selector: str, timeout_ms: int = 30_000) -> dict[str, Any]:
    """Wait until every image, video and audio under ``selector`` has loaded; return
    the counts (so the caller can require at least one of each)."""
    page.wait_for_function(
        f"(s) => ({MEDIA_STATE_JS})(s).pending.length === 0", arg=selector, timeout=timeout_ms
    )
    state: dict[str, Any] = page.evaluate(MEDIA_STATE_JS, selector)
    return state


def screenshot(page: Any, locator: Any | None, name: str) -> Path:
    """A screenshot for the README (``docs/img/<name>``), scrolled to ``locator``."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    if locator is not None:
        locator.scroll_into_view_if_needed()
    page.wait_for_timeout(300)  # let the scroll settle (a picture, not an assertion)
    path = SCREENSHOTS / name
    page.screenshot(path=str(path))
    return path


# --- JupyterLab and Notebook 7 ----------------------------------------------------


def wait_for_kernel_idle(page: Any, kind: str) -> None:
    """The kernel is really ready (the toolbar's indicator says idle too early):
    JupyterLab's status bar reads "<kernel> | Idle"; Notebook 7's kernel status
    fades out once the kernel has reported idle."""
    if kind == "lab":
        page.locator(
            ".jp-StatusBar-TextItem",
            has_text=re.compile(rf"{re.escape(KERNEL_DISPLAY_NAME)} \| Idle"),
        ).first.wait_for(timeout=60_000)
    else:
        page.locator(".jp-NotebookKernelStatus.jp-NotebookKernelStatus-fade").wait_for(
            state="attached", timeout=60_000
        )
        page.locator('.jp-Notebook-ExecutionIndicator[data-status="idle"]').first.wait_for(
            state="attached", timeout=60_000
        )


def run_all(page: Any) -> None:
    page.locator("li.lm-MenuBar-item", has_text="Run").first.click()
    page.locator("li.lm-Menu-item", has_text="Run All Cells").first.click()


def wait_until_all_cells_ran(page: Any, code_cells: int) -> None:
    """Every code cell shows an execution number and none is queued or running."""
    page.wait_for_function(
        """(n) => {
          const cells = document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt');
          const prompts = [...cells].map(p => p.textContent.trim());
          return prompts.length === n && prompts.every(t => /^\\[\\d+\\]:$/.test(t));
        }""",
        arg=code_cells,
        timeout=RUN_ALL_TIMEOUT_MS,
    )


def notebook_text(*cells: str) -> str:
    """A notebook of these code cells, for the default Python kernel."""
    import nbformat

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(cell) for cell in cells]
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": KERNEL_DISPLAY_NAME,
        "language": "python",
    }
    return str(nbformat.writes(notebook))
