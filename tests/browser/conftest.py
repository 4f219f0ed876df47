"""A real browser: Debian's chromium driven by Playwright, and a JupyterLab server.

Facts these fixtures rely on are in ``/work/shared/notes/jupyter-testing.md``:
``playwright install`` cannot download browsers here, so the system chromium is
launched by path; JupyterLab runs as root only with ``--allow-root``.

The browser tests skip only when chromium is missing (``tests/run.sh`` installs
it when it can), and they say so loudly.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import jupyter_env  # tests/jupyter_env.py (tests/ is on pytest's pythonpath)
import pytest

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
SERVER_START_TIMEOUT_S = 60.0


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


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """A headless chromium (Playwright's sync API), closed at module end."""
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
class LabServer:
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

    def notebook_url(self, name: str) -> str:
        """The notebook in a clean workspace (``reset``), logged in by token."""
        return f"{self.url}/lab/tree/{name}?reset&token={self.token}"

    def delete_sessions(self) -> None:
        for session in self.api("GET", "/api/sessions").json():
            self.api("DELETE", f"/api/sessions/{session['id']}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop the server and its kernels (its own process group), bounded in time."""
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


#: User settings that keep pop-ups out of the screenshots and the network alone.
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
}


def quiet_lab_settings(settings_dir: Path) -> None:
    for plugin, values in LAB_SETTINGS.items():
        path = settings_dir / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    """JupyterLab on a free loopback port, serving a temporary copy of notebooks/,
    with no gateway configured (the kernels use the embedded simulator)."""
    require_chromium()
    root = tmp_path_factory.mktemp("lab")
    workdir = root / "work"
    shutil.copytree(jupyter_env.NOTEBOOKS, workdir)
    env = jupyter_env.isolated_environ(root / "env")
    quiet_lab_settings(Path(env["JUPYTER_CONFIG_DIR"]) / "lab" / "user-settings")
    port, token = free_port(), secrets.token_hex(16)
    log = root / "jupyter-lab.log"
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ip",
        "127.0.0.1",
        f"--port={port}",
        f"--IdentityProvider.token={token}",
        "--allow-root",
        f"--ServerApp.root_dir={workdir}",
        "--LabApp.news_url=",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    with log.open("wb") as sink:
        process = subprocess.Popen(
            command,
            cwd=workdir,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    server = LabServer(f"http://127.0.0.1:{port}", token, workdir, log)
    try:
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while True:
            if process.poll() is not None:
                pytest.fail(f"jupyter lab exited early:\n{log.read_text()[-3000:]}")
            try:
                if server.api("GET", "/api/status").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"jupyter lab did not start in time:\n{log.read_text()[-3000:]}")
            time.sleep(0.25)
        yield server
    finally:
        _stop(process)
