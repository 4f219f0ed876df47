"""schemathesis, an independent API fuzzer, against the simulator from its own
``/openapi.json`` (issue 21, point 8).

Bounded: the fuzzing phase with a fixed number of examples per operation (a few
hundred requests in all), a request timeout and a subprocess timeout, so a hang
fails the run rather than stalling CI. (``--max-time`` is not a bound: fuzzing
repeats until it is spent.) It fails on any 5xx and any answer whose status,
content type, headers or body contradict the document.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from genwidgets.simulator import DEMO_KEY, SimulatorServer

pytestmark = pytest.mark.timeout(300)

CHECKS = (
    "not_a_server_error,status_code_conformance,content_type_conformance,"
    "response_headers_conformance,response_schema_conformance"
)
EXAMPLES_PER_OPERATION = 12


def _schemathesis() -> str:
    beside = Path(sys.executable).with_name("st")
    found = str(beside) if beside.exists() else shutil.which("st")
    assert found, "schemathesis is not installed: it is in the 'test' extra of pyproject.toml"
    return found


@pytest.mark.slow
def test_the_simulator_answers_as_its_document_says(
    make_simulator: Callable[..., SimulatorServer], tmp_path: Path
) -> None:
    sim = make_simulator(speed=1000.0)
    command = [
        _schemathesis(),
        "run",
        f"{sim.base_url}/openapi.json",
        "--header",
        f"Authorization: Bearer {DEMO_KEY}",
        "--checks",
        CHECKS,
        "--phases",
        "examples,fuzzing",
        "--max-examples",
        str(EXAMPLES_PER_OPERATION),
        "--seed",
        "21",
        "--request-timeout",
        "30",
        "--workers",
        "1",
        "--report-dir",
        str(tmp_path),
    ]
    run = subprocess.run(
        command, capture_output=True, text=True, timeout=280, check=False, cwd=tmp_path
    )
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-4000:]
    counts = re.search(r"(\d+) generated, (\d+) passed", output)
    assert counts is not None, output[-2000:]
    generated, passed = map(int, counts.groups())
    assert generated == passed and generated >= 150, output[-2000:]
    print(f"schemathesis: {generated} generated, {passed} passed")  # for the closing note
