"""Shared fixtures: a real simulator over loopback HTTP.

- ``simulator``: one SimulatorServer for the whole session, at speed 20 (an image
  task runs 0.1 s, a video 0.3 s plus encoding), default keys (the demo key).
- ``make_simulator(**SimConfig kwargs)``: a fresh server per call (speed 20
  unless given), stopped when the test ends.
- ``gateway_env``: a fresh server set as the environment's gateway (``gw.Client()``,
  the command line), with a temporary ``GENWIDGETS_HOME``.
- ``known_key(key)``: make ``key`` one genwidgets hides wherever it writes, as a key
  given to a client is, in a set of known keys of the test's own.

Every test runs with ``GENWIDGETS_HOME`` in a temporary folder and without the
gateway variables, so nothing touches the user's ledger or a real gateway.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from genwidgets import _config  # the registry of known keys: known_key below, tests' one touch
from genwidgets._client import LIVE_CLIENTS  # the live clients: closed when a test leaves one
from genwidgets.simulator import SimConfig, SimulatorServer

TEST_SPEED = 20.0


def pytest_configure(config: pytest.Config) -> None:
    home = tempfile.mkdtemp(prefix="genwidgets-test-home-")
    config._genwidgets_home = home  # type: ignore[attr-defined]
    os.environ["GENWIDGETS_HOME"] = home
    for name in ("GENWIDGETS_BASE_URL", "GENWIDGETS_API_KEY"):
        os.environ.pop(name, None)
    # A suite started as a background job of a non-interactive shell (`cmd &`) inherits
    # Ctrl-C ignored, and so would the commands the tests start: the Ctrl-C tests would
    # fail for the shell's sake. Tests send real SIGINTs: give Python's handler back.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


#: The kinds of test that take longest, in the order their files are handed out.
LONGEST_FIRST = ("notebook", "browser", "slow")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files with the longest kinds of test first, each file's tests in their own order.
    The parallel runner (README "Tests") hands out whole files in this order: a long
    file handed out last would run on alone once every other file is done."""

    def rank(item: pytest.Item) -> int:
        found = [i for i, name in enumerate(LONGEST_FIRST) if item.get_closest_marker(name)]
        return min(found, default=len(LONGEST_FIRST))

    files: dict[str, int] = {}
    for item in items:
        path = str(item.path)
        files[path] = min(files.get(path, len(LONGEST_FIRST)), rank(item))
    order = {path: n for n, path in enumerate(files)}
    items.sort(key=lambda item: (files[str(item.path)], order[str(item.path)]))


#: files whose tests are handed out one parameter at a time, not as a whole file: each
#: teaching lesson's runs (its Run All, the second, the one after a restart) stay
#: together on one worker, and the lessons spread over the workers
SPLIT_BY_PARAMETER = ("tests/notebooks/test_notebooks.py",)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile``, each file of :data:`SPLIT_BY_PARAMETER` handed out by its
    tests' parameter: the eleven lessons, 70 % of the suite's longest file, used to run
    one after another on one worker (docs/decisions.md#parallel-files)."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class ByFileOrParameter(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            scope: str = super()._split_scope(nodeid)
            if scope in SPLIT_BY_PARAMETER and nodeid.endswith("]") and "[" in nodeid:
                return scope + "[" + nodeid.split("[", 1)[1]
            return scope

    return ByFileOrParameter(config, log)


def pytest_unconfigure(config: pytest.Config) -> None:
    home = getattr(config, "_genwidgets_home", None)
    if home:
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(autouse=True)
def no_client_outlives_its_test() -> Iterator[None]:
    """A client a test made and left open is closed when the test ends. Left live, it
    would be a later test's default client (``gw.batch(...)`` with no ``client=``): a
    failed test once left one, and four rows of another test went to its gateway,
    long stopped. Clients of wider fixtures are made before this one and kept."""
    before = weakref.WeakSet(client for client, _name, _key in LIVE_CLIENTS.payers())
    yield
    for client, _name, _key in LIVE_CLIENTS.payers():
        if client not in before:
            client.close()


@pytest.fixture(scope="session")
def simulator() -> Iterator[SimulatorServer]:
    with SimulatorServer(SimConfig(speed=TEST_SPEED), host="127.0.0.1", port=0) as sim:
        yield sim


@pytest.fixture
def make_simulator() -> Iterator[Callable[..., SimulatorServer]]:
    started: list[SimulatorServer] = []

    def factory(**config: Any) -> SimulatorServer:
        config.setdefault("speed", TEST_SPEED)
        sim = SimulatorServer(SimConfig(**config), host="127.0.0.1", port=0).start()
        started.append(sim)
        return sim

    yield factory
    for sim in started:
        sim.stop()


@pytest.fixture
def gateway_env(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, make_simulator: Callable[..., SimulatorServer]
) -> SimulatorServer:
    """A fresh simulator that ``gw.Client()`` and the command line reach from the
    environment, with the ledger in a temporary home."""
    sim = make_simulator()
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GENWIDGETS_BASE_URL", sim.base_url)
    monkeypatch.setenv("GENWIDGETS_API_KEY", "sim-demo-key")
    return sim


@pytest.fixture
def known_key(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], str]:
    """Make a key known, as a client's is from the line it arrives on, without making a
    client: the tests of the layers below the client check it is hidden there. The
    known keys are the test's own (those of earlier tests come back after it)."""
    monkeypatch.setattr(_config, "_known_secrets", set())

    def know(key: str) -> str:
        _config.remember_secret(key)
        return key

    return know
