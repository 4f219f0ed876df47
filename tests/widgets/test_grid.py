"""The grid view against gateways whose output URLs expired: nothing freezes.

The scenarios run in a child process (``expired_gateway.py``) with a deadline, so
a deadlock fails the test instead of hanging the suite
(docs/decisions.md#no-waits-under-locks).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CHILD = Path(__file__).with_name("expired_gateway.py")
#: generous: each scenario takes a few seconds; a deadlock never ends
DEADLINE = 240


def _run(scenario: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GENWIDGETS_HOME": str(tmp_path)}
    try:
        return subprocess.run(
            [sys.executable, str(CHILD), scenario],
            capture_output=True,
            text=True,
            timeout=DEADLINE,
            env=env,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{scenario} hung past {DEADLINE} s:\n{exc.stderr!r}")


def test_a_write_holding_the_lock_never_meets_an_engine_callback_waiting_for_it(
    tmp_path: Path,
) -> None:
    done = _run("held_write_meets_engine_callback", tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("ok")


def test_a_grid_whose_image_urls_expired_finishes_waits_and_closes(tmp_path: Path) -> None:
    done = _run("expired_grid", tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("ok")


def test_thumbnails_only_a_download_can_make_arrive_from_the_background(
    make_simulator: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no local copies (no ledger), a finished cell's image thumbnail is
    downloaded off the write path, and the grid shows it once it is made."""
    import time

    import genwidgets as gw

    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path))
    sim = make_simulator(keys=("k-grid",))  # type: ignore[operator]
    client = gw.Client(sim.base_url, "k-grid", ledger=False)
    try:
        grid = gw.grid(
            "genW2.5-t2i-preview", {"prompt": "a fox", "n": 1}, x=("seed", [1, 2]), client=client
        )
        grid.wait(timeout=120)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            states = grid.cell_states
            if grid.thumbs and all(
                urls and urls[0].startswith("data:image/") for urls in grid.thumbs.values()
            ):
                break
            time.sleep(0.05)
        assert sorted(grid.thumbs) == ["0", "1"], states
        assert all(urls[0].startswith("data:image/") for urls in grid.thumbs.values())
        assert all(c.outputs[0].path is None for c in grid.cells)  # made from the URL
    finally:
        client.close()
