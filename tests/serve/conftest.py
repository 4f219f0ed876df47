"""Fixtures of the class gateway's tests: a teacher's simulator upstream, a class server
over it on SQLite, a throwaway PostgreSQL cluster, and server processes.

PostgreSQL: Debian's server (tests/run.sh installs it), a cluster made by ``initdb`` in
a temporary folder for this session (as the ``postgres`` user when we are root: root
cannot run it), on a free loopback port, stopped and removed at the end. Where it cannot
be installed the PostgreSQL tests skip, saying so loudly.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jupyter_env  # tests/jupyter_env.py (tests/ is on pytest's pythonpath)
import pytest
from serve_helpers import TEACHER_KEY, Class

from genwidgets.serve import ClassServer, Database, ServeConfig, Upstream
from genwidgets.simulator import SimConfig, SimulatorServer

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def upstream_sim() -> Iterator[SimulatorServer]:
    """A simulator that accepts only the teacher's key (speed 20: an image in 0.1 s)."""
    with SimulatorServer(SimConfig(speed=20.0, keys=(TEACHER_KEY,), workers=8), port=0) as sim:
        yield sim


@pytest.fixture
def make_class(tmp_path: Path, upstream_sim: SimulatorServer) -> Iterator[Callable[..., Class]]:
    started: list[ClassServer] = []

    def factory(database: str | None = None, **config: Any) -> Class:
        db = Database(database or tmp_path / f"class-{len(started)}.db")
        db.migrate()
        upstream = Upstream(upstream_sim.base_url, TEACHER_KEY, timeout=config.pop("timeout", 30.0))
        server = ClassServer(ServeConfig(upstream=upstream, database=db, **config)).start()
        started.append(server)
        return Class(server, db, upstream_sim)

    yield factory
    for server in started:
        server.stop()


# --------------------------------------------------------------------------- PostgreSQL


def _postgres_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[str]:
    """The URL of a throwaway PostgreSQL server's ``postgres`` database."""
    bindir = _postgres_bin()
    if bindir is None:
        pytest.skip(
            "!!! PostgreSQL is not installed (tests/run.sh installs Debian's postgresql as "
            "root): the PostgreSQL tests of the class gateway are SKIPPED"
        )
    as_root = os.geteuid() == 0
    folder = Path(tempfile.mkdtemp(prefix="genwidgets-pg-"))
    data = folder / "data"
    prefix: list[str] = []
    if as_root:
        user = pwd.getpwnam("postgres")
        os.chown(folder, user.pw_uid, user.pw_gid)
        prefix = ["runuser", "-u", "postgres", "--"]
    run = lambda *cmd: subprocess.run(  # noqa: E731
        [*prefix, *cmd], check=True, capture_output=True, text=True, timeout=120
    )
    run(str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync")
    log = folder / "log"

    def start(port: int) -> int | None:
        options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        options += " -c max_connections=300"
        command = [str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(log)]
        try:
            run(*command, "-w", "-t", "60", "start")
        except subprocess.CalledProcessError:
            if "already in use" not in log.read_text(errors="replace"):
                raise
            return None
        return port

    port = jupyter_env.on_a_free_port(start, "PostgreSQL")
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            [*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
            capture_output=True,
            timeout=60,
        )
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def postgres_url(postgres_cluster: str) -> str:
    """A fresh, empty database on the session's cluster, for one test."""
    import psycopg

    name = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(postgres_cluster, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return postgres_cluster.rpartition("/")[0] + "/" + name


# --------------------------------------------------------------------------- processes


@dataclass
class ServerProcess:
    process: subprocess.Popen[str]
    base_url: str
    log: Path


@pytest.fixture
def serve_processes(tmp_path: Path) -> Iterator[Callable[..., ServerProcess]]:
    """``start(upstream_url, database)``: a ``genwidgets serve`` process on a free port."""
    started: list[ServerProcess] = []

    def start(upstream: str, database: str, *extra: str) -> ServerProcess:
        log = tmp_path / f"serve-{len(started)}.log"
        env = {
            **os.environ,
            "GENWIDGETS_UPSTREAM_KEY": TEACHER_KEY,
            "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        }
        code = "import sys; from genwidgets.cli import main; sys.exit(main())"
        args = [
            sys.executable,
            "-c",
            code,
            "serve",
            "--upstream",
            upstream,
            "--database",
            database,
            "--port",
            "0",
            *extra,
        ]
        with open(log, "w") as err:
            process = subprocess.Popen(
                args,
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                env=env,
                stdin=subprocess.DEVNULL,
            )
        assert process.stdout is not None
        line = process.stdout.readline()  # "genwidgets serve: URL -> upstream", or EOF
        assert line.startswith("genwidgets serve: "), f"no server: {line!r} {log.read_text()}"
        found = ServerProcess(process, line.split()[2], log)
        started.append(found)
        return found

    yield start
    for found in started:
        found.process.terminate()
    for found in started:
        try:
            found.process.wait(30)
        except subprocess.TimeoutExpired:
            found.process.kill()
