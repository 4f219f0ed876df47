"""The simulator's file store: a killed process's folder is removed by the next one."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from genwidgets.simulator import files
from genwidgets.simulator.files import ALIVE, PREFIX, FileStore, sweep_abandoned

pytestmark = pytest.mark.skipif(files.fcntl is None, reason="no flock: nothing is swept")

#: a child with a store in the temporary folder it is given: it prints the store's
#: folder, then waits for a line (or to be killed); it sweeps nothing itself, so only
#: the test's own sweeps remove a folder
CHILD = (
    "import sys, tempfile; from genwidgets.simulator import files; "
    "files._swept.add(tempfile.gettempdir()); s = files.FileStore(); "
    "s.put('a.png', 'image/png', b'x' * 100); print(s.root, flush=True); sys.stdin.readline()"
)


def child_store(tmp_path: Path) -> tuple[subprocess.Popen[str], Path]:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    assert child.stdout is not None
    root = Path(child.stdout.readline().strip())
    assert root.parent == tmp_path and (root / ALIVE).exists()
    return child, root


def test_a_killed_processs_folder_is_swept_and_a_living_ones_is_not(tmp_path: Path) -> None:
    killed, abandoned = child_store(tmp_path)
    living, kept = child_store(tmp_path)
    try:
        os.kill(killed.pid, signal.SIGKILL)  # no exit handler runs: the folder stays
        killed.wait(30)
        assert abandoned.exists()
        older = tmp_path / f"{PREFIX}older"  # no lock file: being made, or an older version
        older.mkdir()
        elsewhere = tmp_path / f"{PREFIX}elsewhere"  # a store of another host's process
        elsewhere.mkdir()
        (elsewhere / ALIVE).write_text("another-host")
        assert sweep_abandoned(tmp_path) == 1
        assert not abandoned.exists()
        assert kept.exists() and older.exists() and elsewhere.exists()
    finally:
        living.communicate("\n", timeout=30)  # it ends as it should: its folder goes
    assert not kept.exists()


def test_a_new_store_sweeps_its_temporary_folder_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    killed, abandoned = child_store(tmp_path)
    os.kill(killed.pid, signal.SIGKILL)
    killed.wait(30)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    monkeypatch.setattr(files, "_swept", set())
    store = FileStore()  # the sweep runs on the package's workers, off the caller
    try:
        deadline = time.monotonic() + 60
        while abandoned.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not abandoned.exists() and store.root.exists()
    finally:
        store.close()
    assert not store.root.exists()


def test_a_folder_that_cannot_be_locked_still_stores_and_is_never_swept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file system without locks (some network mounts) still runs the simulator."""

    def refuse(*_args: object) -> None:
        raise OSError(37, "No locks available")

    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    monkeypatch.setattr(files.fcntl, "flock", refuse)
    store = FileStore()
    try:
        assert store.put("a.png", "image/png", b"x").path.exists()
        assert not (store.root / ALIVE).exists()
        assert sweep_abandoned(tmp_path) == 0 and store.root.exists()
    finally:
        store.close()
    assert not store.root.exists()


def test_a_sweep_cut_short_is_finished_by_the_next(tmp_path: Path) -> None:
    """A folder's lock file goes last: a sweep whose process ended half way through a
    folder leaves one the next sweep still recognises."""
    killed, abandoned = child_store(tmp_path)
    os.kill(killed.pid, signal.SIGKILL)
    killed.wait(30)
    for child in abandoned.iterdir():  # what a sweep cut short leaves: all but the lock
        if child.name != ALIVE:
            shutil.rmtree(child)
    assert sweep_abandoned(tmp_path) == 1 and not abandoned.exists()
