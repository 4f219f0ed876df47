"""Shared pieces of the benchmarks: child simulators, percentiles, CPU time, isolation.

Every measurement talks to a simulator in a *child process* (its own
interpreter, so its CPU use never competes with the measured client for one
GIL), on loopback, at speed 1.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager

from genwidgets.protocol.serving import PARENT_ENV

REPO = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
DEMO_KEY = "sim-demo-key"
#: Enough simulator workers that no benchmark task ever queues.
SIM_WORKERS = 1000


def tests_on_path() -> None:
    """Make ``tests/`` importable: the browser steps drive pages with
    ``tests/browser/frontend.py`` and run lessons as ``tests/jupyter_env.py`` does."""
    tests = str(REPO / "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a child: the repo importable, unbuffered, no real gateway."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("GENWIDGETS_BASE_URL", "GENWIDGETS_API_KEY")
    }
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    env[PARENT_ENV] = str(os.getpid())  # a child simulator ends with this process
    env.update(extra or {})
    return env


@dataclass
class ChildSimulator:
    """A ``python -m genwidgets.simulator`` child process on a free loopback port."""

    process: subprocess.Popen[str]
    base_url: str

    @property
    def pid(self) -> int:
        return self.process.pid

    def stats(self) -> dict[str, int]:
        """Request counts by operation (``GET /_sim/stats``)."""
        response = httpx.get(f"{self.base_url}/_sim/stats", timeout=30.0)
        response.raise_for_status()
        counts: dict[str, int] = response.json()
        return counts


def start_simulator(
    workers: int = SIM_WORKERS, speed: float = 1.0, flags: Sequence[str] = ()
) -> ChildSimulator:
    """Start a child simulator (with more of its ``flags``) and return once it listens."""
    return _listening(_launch_simulator(workers, speed, flags))


def _launch_simulator(
    workers: int, speed: float = 1.0, flags: Sequence[str] = ()
) -> subprocess.Popen[str]:
    command = [PYTHON, "-m", "genwidgets.simulator", "--port", "0"]
    command += ["--speed", f"{speed:g}", "--workers", str(workers), *flags]
    return subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=child_env(),
        cwd=REPO,
    )


def _listening(process: subprocess.Popen[str]) -> ChildSimulator:
    """The simulator once it says where it listens (it prints that line first)."""
    assert process.stdout is not None
    line = process.stdout.readline()
    if " on http" not in line:
        process.kill()
        process.wait(10)
        raise RuntimeError(f"the child simulator did not start: {line!r}")
    return ChildSimulator(process, line.rsplit(" ", 1)[1].strip())


def stop_process(process: subprocess.Popen[str], timeout: float = 10.0) -> None:
    """Terminate a child we started (by its own handle), killing it if it lingers."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout)


@contextlib.contextmanager
def simulators(count: int, workers: int = SIM_WORKERS) -> Iterator[list[ChildSimulator]]:
    """``count`` child simulators, started at once (each takes most of a second to import
    what it needs; the polling step starts sixteen), stopped on exit."""
    launched: list[subprocess.Popen[str]] = []
    try:
        for _ in range(count):
            launched.append(_launch_simulator(workers))
        yield [_listening(process) for process in launched]
    finally:
        for process in launched:
            stop_process(process)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100), linear between closest ranks; NaN when empty."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def median(values: Sequence[float]) -> float:
    return percentile(values, 50.0)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used so far (from /proc; 0 if gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


class CpuMeter:
    """CPU share of some processes over a span of wall time (1.0 = one core)."""

    def __init__(self, pids: Mapping[str, int]) -> None:
        self.pids = dict(pids)
        self._start = {name: cpu_seconds(pid) for name, pid in self.pids.items()}
        self._t0 = time.monotonic()

    def shares(self) -> dict[str, float]:
        wall = max(time.monotonic() - self._t0, 1e-9)
        return {
            name: round((cpu_seconds(pid) - self._start[name]) / wall, 3)
            for name, pid in self.pids.items()
        }


def machine() -> dict[str, str | int]:
    """What the figures were measured on."""
    model = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    load = "unknown"
    with contextlib.suppress(OSError):
        load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    return {
        "nproc": os.cpu_count() or 0,
        "cpu_model": model,
        "python": sys.version.split()[0],
        "load_average_at_start": load,
    }


def isolated_dirs(root: Path) -> dict[str, str]:
    """Jupyter, IPython, XDG and genwidgets folders under ``root`` (nothing leaks home)."""
    names = {
        "IPYTHONDIR": "ipython",
        "JUPYTER_CONFIG_DIR": "jupyter/config",
        "JUPYTER_DATA_DIR": "jupyter/data",
        "JUPYTER_RUNTIME_DIR": "jupyter/runtime",
        "XDG_CONFIG_HOME": "xdg/config",
        "XDG_DATA_HOME": "xdg/data",
        "XDG_CACHE_HOME": "xdg/cache",
        "GENWIDGETS_HOME": "genwidgets-home",
        "MPLCONFIGDIR": "mpl",
    }
    env: dict[str, str] = {}
    for name, sub in names.items():
        folder = root / sub
        folder.mkdir(parents=True, exist_ok=True)
        env[name] = str(folder)
    env["JUPYTER_PATH"] = str(root / "prefix/share/jupyter")
    env["JUPYTER_PLATFORM_DIRS"] = "1"
    return env


KERNEL_NAME = "genwidgets-bench"


def install_kernel(root: Path, env: Mapping[str, str]) -> Path:
    """Register this interpreter as a kernel under ``root/prefix``; its kernels folder."""
    prefix = root / "prefix"
    subprocess.run(
        [PYTHON, "-m", "ipykernel", "install", "--prefix", str(prefix), "--name", KERNEL_NAME],
        check=True,
        capture_output=True,
        env=dict(env),
    )
    return prefix / "share/jupyter/kernels"


@contextlib.contextmanager
def kernel_manager(kernels: Path) -> Iterator[KernelManager]:
    """A manager for one kernel of :func:`install_kernel`'s ``kernels``, shut down at exit.

    Its channels are Unix sockets in a short private folder, not TCP ports: jupyter_client
    picks free ports, closes them and the kernel binds them a moment later, and with many
    kernels starting at once another takes one ("Address already in use", a kernel dead
    before its first reply). nbclient leaves a kernel it was given running, hence the
    shutdown here."""
    sockets = Path(tempfile.mkdtemp(prefix="gwk-", dir="/tmp"))
    manager = KernelManager(
        kernel_name=KERNEL_NAME,
        kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(kernels)]),
        transport="ipc",
        ip=str(sockets / "k"),
    )
    try:
        yield manager
    finally:
        if manager.has_kernel:
            manager.shutdown_kernel(now=True)
        shutil.rmtree(sockets, ignore_errors=True)


def fmt(value: Any, unit: str = "", digits: int = 2) -> str:
    """A figure for the report: floats to ``digits`` places, a missing one as ``n/a``."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if isinstance(value, float):
        return f"{value:.{digits}f}{unit}"
    return f"{value}{unit}"
