"""genwidgets' Jupyter server extension in a real ``jupyter server`` on loopback.

The server is configured the way the package installs it (the JSON file of
``jupyter-config/``, which a wheel puts in ``etc/jupyter/jupyter_server_config.d``),
with ``GENWIDGETS_HOME`` in a temporary folder holding outputs at several depths.
A request with the server's token gets a file; one without gets none; nothing
outside the outputs tree is reachable (``..``, an encoded ``..``, a symbolic link
out of the tree); only GET and HEAD answer; JavaScript is sandboxed.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jupyter_env  # tests/jupyter_env.py (tests/ is on pytest's pythonpath)
import pytest
import tomllib

from genwidgets import server_extension

pytestmark = pytest.mark.timeout(180)

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "jupyter-config" / "jupyter_server_config.d" / "genwidgets.json"
#: what the extension sets in the server for its kernels (docs/decisions.md#served-outputs)
ENV_OUTPUTS_URL = "GENWIDGETS_OUTPUTS_URL"
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32
START_LIMIT_S = 90.0


def test_the_package_installs_the_config_that_enables_the_extension() -> None:
    config = json.loads(CONFIG.read_text())
    assert config == {"ServerApp": {"jpserver_extensions": {"genwidgets.server_extension": True}}}
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    data_files = project["tool"]["setuptools"]["data-files"]
    assert data_files["etc/jupyter/jupyter_server_config.d"] == [str(CONFIG.relative_to(ROOT))]
    points = server_extension._jupyter_server_extension_points()
    assert points == [{"module": "genwidgets.server_extension"}]


def _quickstart_install() -> list[str]:
    """The pip step of the README's one quickstart command, as its arguments."""
    readme = (ROOT / "README.md").read_text()
    quickstart = readme.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    command = quickstart.split("```bash\n", 1)[1].split("\n```", 1)[0]
    steps = [shlex.split(step) for step in command.split("&&")]
    return next(s for s in steps if s[0].endswith("pip") and s[1] == "install")


@pytest.mark.slow
def test_the_quickstart_command_leaves_the_extension_enabled(tmp_path: Path) -> None:
    """Issue 40.8: an editable install skips data files, so saved notebooks' links went
    nowhere until the config was copied by hand. The quickstart installs a wheel, and a
    fresh environment holding what the wheel's data files install lists the extension
    enabled and valid (``jupyter server extension list``), with no other config."""
    step = _quickstart_install()
    assert not {"-e", "--editable"} & set(step), f"an editable install skips the config: {step}"
    prefix = tmp_path / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(prefix)], check=True, timeout=120
    )
    site = next(prefix.glob("lib/python*/site-packages"))
    shared = [p for p in sys.path if p.endswith("site-packages")]
    (site / "shared.pth").write_text("\n".join([str(ROOT), *shared]) + "\n")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    for target, sources in project["tool"]["setuptools"]["data-files"].items():
        (prefix / target).mkdir(parents=True, exist_ok=True)
        for source in sources:
            shutil.copy(ROOT / source, prefix / target)
    env = jupyter_env.isolated_environ(tmp_path / "env")
    listed = subprocess.run(
        [str(prefix / "bin" / "python"), "-m", "jupyter_server", "extension", "list"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    text = re.sub(r"\x1b\[[0-9;]*m", "", listed.stdout + listed.stderr)
    assert re.search(r"genwidgets\.server_extension\s+enabled", text), text
    assert re.search(r"genwidgets\.server_extension\s+OK", text), text


class Server:
    def __init__(self, url: str, token: str, home: Path, log: Path) -> None:
        self.url, self.token, self.home, self.log = url, token, home, log

    def get(self, path: str, *, token: bool = True, method: str = "GET") -> httpx.Response:
        headers = {"Authorization": f"token {self.token}"} if token else {}
        return httpx.request(
            method, f"{self.url}{path}", headers=headers, timeout=10, follow_redirects=False
        )


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("server-extension")
    env = jupyter_env.isolated_environ(root / "env")
    enabled = Path(env["JUPYTER_CONFIG_DIR"]) / "jupyter_server_config.d"
    enabled.mkdir(parents=True, exist_ok=True)
    shutil.copy(CONFIG, enabled / CONFIG.name)
    home = Path(env["GENWIDGETS_HOME"])
    deep = home / "outputs" / "sim-127.0.0.1" / "req-1"
    deep.mkdir(parents=True)
    (deep / "out-0.png").write_bytes(PNG)
    (home / "outputs" / "shallow.png").write_bytes(PNG)
    (home / "ledger.sqlite3").write_bytes(b"the ledger: never served")
    (home / "outputs" / "out-of-tree.png").symlink_to(home / "ledger.sqlite3")
    (home / "outputs" / "page.html").write_text("<script>alert(1)</script>")
    token = secrets.token_hex(16)
    work = root / "work"
    work.mkdir()
    log = root / "server.log"

    def start(port: int) -> tuple[subprocess.Popen[bytes], Server] | None:
        command = [
            sys.executable, "-m", "jupyter_server", "--no-browser", "--ip", "127.0.0.1",
            f"--port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
            "--allow-root", f"--ServerApp.root_dir={work}", "--ServerApp.base_url=/base/",
        ]  # fmt: skip
        with log.open("wb") as sink:
            process = subprocess.Popen(
                command, env=env, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True
            )
        running = Server(f"http://127.0.0.1:{port}", token, home, log)
        ready = lambda: running.get("/base/api/status").status_code == 200  # noqa: E731
        started = jupyter_env.server_started(process, ready, log, START_LIMIT_S)
        return (process, running) if started else None

    process, running = jupyter_env.on_a_free_port(start, "the Jupyter server")
    try:
        yield running
    finally:
        jupyter_env.stop_group(process)


@pytest.mark.slow
def test_a_kept_output_is_served_to_the_servers_user(server: Server) -> None:
    for path in ("sim-127.0.0.1/req-1/out-0.png", "shallow.png"):
        answer = server.get(f"/base/genwidgets/outputs/{path}")
        assert answer.status_code == 200, (path, answer.status_code)
        assert answer.content == PNG and answer.headers["content-type"] == "image/png"
        assert "sandbox" in answer.headers["content-security-policy"]
        assert answer.headers["x-content-type-options"] == "nosniff"
    assert "genwidgets: serving" in server.log.read_text()


def test_nobody_else_gets_it(server: Server) -> None:
    answer = server.get("/base/genwidgets/outputs/shallow.png", token=False)
    assert answer.status_code in (302, 403) and answer.content != PNG


@pytest.mark.parametrize(
    "path",
    [
        "../ledger.sqlite3",
        "%2e%2e/ledger.sqlite3",
        "..%2fledger.sqlite3",
        "sim-127.0.0.1/../../ledger.sqlite3",
        "out-of-tree.png",  # a symbolic link that leaves the tree
        "missing.png",
    ],
)
def test_nothing_outside_the_outputs_tree_is_reachable(server: Server, path: str) -> None:
    answer = server.get(f"/base/genwidgets/outputs/{path}")
    assert answer.status_code in (400, 403, 404), (path, answer.status_code)
    assert b"never served" not in answer.content


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH"])
def test_it_is_read_only(server: Server, method: str) -> None:
    answer = server.get("/base/genwidgets/outputs/shallow.png", method=method)
    assert answer.status_code in (403, 405), (method, answer.status_code)
    assert (server.home / "outputs" / "shallow.png").read_bytes() == PNG


def test_a_served_page_runs_no_script_in_the_servers_origin(server: Server) -> None:
    answer = server.get("/base/genwidgets/outputs/page.html")
    policy = answer.headers["content-security-policy"]
    assert "sandbox" in policy and "allow-same-origin" not in policy


@pytest.mark.slow
def test_the_server_hands_the_link_prefix_to_the_kernels_it_starts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path))
    monkeypatch.delenv(ENV_OUTPUTS_URL, raising=False)
    added: list[Any] = []

    class FakeApp:
        base_url = "/user/ada/"

        class web_app:
            @staticmethod
            def add_handlers(host: str, rules: list[Any]) -> None:
                added.extend(rules)

        class log:
            @staticmethod
            def info(*_args: Any) -> None:
                pass

    server_extension._load_jupyter_server_extension(FakeApp())
    [(pattern, _handler, options)] = added
    assert pattern == "/user/ada/genwidgets/outputs/(.*)"
    assert options == {"path": str(tmp_path / "outputs")}
    assert os.environ[ENV_OUTPUTS_URL] == "/user/ada/genwidgets/outputs/"
