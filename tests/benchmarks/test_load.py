"""The load script works (its figure is a benchmark, reported by benchmarks/run.py,
never asserted here: timings on these machines are noisy)."""

from __future__ import annotations

import pytest

from benchmarks.load import main, measure_status
from genwidgets.simulator import SimulatorServer

pytestmark = pytest.mark.timeout(60)


@pytest.mark.slow
def test_load_against_a_child_server_answers_every_request() -> None:
    result = measure_status(n=500, connections=4, max_seconds=20)
    assert result.ok == result.requests == 500
    assert result.per_second > 0


def test_load_script_against_a_running_server(
    simulator: SimulatorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--url", simulator.base_url, "--n", "200", "--connections", "2"]) == 0
    assert "200 status requests (200 answered 200)" in capsys.readouterr().out
