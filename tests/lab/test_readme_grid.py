"""The README's prompt-lab example, run as written against the simulator: the
generations it bills are counted with the service's defaults, and a grid that
bills more than ``confirm_above`` sends nothing before it is confirmed."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import genwidgets as gw
from genwidgets.simulator import SimulatorServer

pytestmark = pytest.mark.timeout(120)
README = Path(__file__).resolve().parents[2] / "README.md"


def readme_grid_call() -> str:
    """The first statement of the README's prompt-lab snippet (``grid = gw.grid(...)``)."""
    section = README.read_text().split("### Prompt lab", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    lines = code.group(1).splitlines()
    end = next(i for i, line in enumerate(lines) if line.rstrip().endswith("))"))
    return "\n".join(lines[: end + 1])


def creates(sim: SimulatorServer) -> int:
    return int(httpx.get(f"{sim.base_url}/_sim/stats", timeout=10).json().get("create", 0))


@pytest.fixture
def client(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, simulator: SimulatorServer
) -> Iterator[gw.Client]:
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path))
    made = gw.Client(base_url=simulator.base_url, api_key="sim-demo-key")
    yield made
    made.close()


def run(call: str, client: gw.Client) -> Any:
    namespace: dict[str, Any] = {"gw": gw}
    exec(call.replace("))", "), client=client)", 1), {**namespace, "client": client}, namespace)
    return namespace["grid"]


def test_the_readme_grid_bills_one_image_per_cell_and_is_sent(
    client: gw.Client, simulator: SimulatorServer
) -> None:
    call = readme_grid_call()
    assert '"n": 1' in call
    before = creates(simulator)
    grid = run(call, client)
    assert grid.plan.tasks == 6 and grid.plan.billed_total == 6
    deadline = time.monotonic() + 60
    while creates(simulator) - before < 6 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert creates(simulator) - before == 6


@pytest.mark.slow
def test_the_readme_grid_without_n_asks_first_nothing_sent_before_confirmation(
    client: gw.Client, simulator: SimulatorServer
) -> None:
    call = readme_grid_call().replace(', "n": 1', "")
    assert '"n"' not in call
    before = creates(simulator)
    grid = run(call, client)
    assert grid.plan.tasks == 6
    assert grid.plan.billed_total == 24  # genW2.5-t2i-preview makes 4 images unless told
    assert "24 billed images" in grid.plan.summary() and "n = 4 (default)" in grid.plan.summary()
    assert creates(simulator) == before
    grid.submit()
    deadline = time.monotonic() + 60
    while creates(simulator) - before < 6 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert creates(simulator) - before == 6
