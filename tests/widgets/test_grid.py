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


def test_a_viewed_grid_sends_only_the_cell_records_that_changed(
    make_simulator: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once a view said hello, a write sends the changed records as a message (the
    page merges them); the kernel's trait stays current and goes whole when the run
    ends (docs/decisions.md#grid-cell-patches)."""
    import time
    from typing import Any

    import genwidgets as gw

    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path))
    sim = make_simulator(keys=("k-grid",))  # type: ignore[operator]
    client = gw.Client(sim.base_url, "k-grid")
    try:
        grid = gw.grid(
            "genW2.5-t2i-preview",
            {"prompt": "a fox", "n": 1},
            x=("seed", "1-3"),
            y=("prompt_sr", ["fox", "cat"]),
            client=client,
            confirm_above=1,
        )
        wire: list[dict[str, Any]] = []  # every message to the page, as ipywidgets sends it
        grid._send = lambda msg, buffers=None: wire.append(msg)  # type: ignore[method-assign]
        grid.handle_message({"action": "thumbs"})  # what a new view asks first
        hello = [m["content"] for m in wire if m.get("method") == "custom"]
        assert not [c for c in hello if "cells" in c]  # the page has every record already
        grid.submit(wait=False)
        grid.wait(timeout=120)

        def whole() -> list[list[dict[str, Any]]]:
            updates = [m["state"] for m in wire if m.get("method") == "update"]
            return [u["cell_states"] for u in updates if "cell_states" in u]

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not whole():
            time.sleep(0.05)
        patches = [
            m["content"]["cells"]
            for m in wire[len(hello) :]
            if m.get("method") == "custom" and "cells" in m["content"]
        ]
        # every cell changed while it ran, and each change went as its own record
        assert patches and all(0 < len(p) <= 6 for p in patches)
        assert {s["index"] for p in patches for s in p} == set(range(6))
        # the trait went whole once: when the run ended, with every cell done
        [ended] = whole()
        assert [s["index"] for s in ended] == list(range(6))
        assert all(s["category"] == "done" for s in ended)
        # the kernel's own copy was current all along (it is what a new page gets)
        assert grid.cell_states == ended == grid.get_state()["cell_states"]
        # and each thumbnail went once
        thumbs = [
            i
            for m in wire
            if m.get("method") == "custom"
            for i, urls in m["content"].get("thumbs", {}).items()
            if urls
        ]
        assert sorted(thumbs) == [str(i) for i in range(6)]
        # a second view of the same page says what its page has: nothing is sent again
        before = len(wire)
        grid.handle_message({"action": "thumbs", "have": [str(i) for i in range(6)]})
        assert [m["content"] for m in wire[before:]] == [{"thumbs": {}}]
        grid.close()
    finally:
        client.close()


def test_an_unviewed_grid_sends_its_records_whole_only_at_the_ends_and_a_late_view_gets_the_rest(
    make_simulator: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No view yet (a page still loading, nbclient): the records stay in the kernel
    until the run ends; a view that says hello later is sent nothing twice."""
    import time
    from typing import Any

    import genwidgets as gw

    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path))
    sim = make_simulator(keys=("k-grid",))  # type: ignore[operator]
    client = gw.Client(sim.base_url, "k-grid")
    try:
        grid = gw.grid(
            "genW2.5-t2i-preview",
            {"prompt": "a fox", "n": 1},
            x=("seed", "1-3"),
            y=("prompt_sr", ["fox", "cat"]),
            client=client,
            confirm_above=1,
        )
        wire: list[dict[str, Any]] = []
        grid._send = lambda msg, buffers=None: wire.append(msg)  # type: ignore[method-assign]
        grid.submit(wait=False)
        grid.wait(timeout=120)

        def sent(key: str) -> list[Any]:
            updates = [m["state"] for m in wire if m.get("method") == "update"]
            return [u[key] for u in updates if key in u]

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (sent("cell_states") and sent("thumbs")):
            time.sleep(0.05)
        # one whole send, when the run ended (the first write was before submit)
        [ended] = sent("cell_states")
        assert all(s["category"] == "done" for s in ended)
        [thumbs] = sent("thumbs")
        assert sorted(thumbs) == [str(i) for i in range(6)]
        before = len(wire)
        grid.handle_message({"action": "thumbs"})  # a view, late
        answer = [m["content"] for m in wire[before:] if m.get("method") == "custom"]
        assert answer == [{"thumbs": {}}]  # its page's model holds them all already
        grid.close()
    finally:
        client.close()
