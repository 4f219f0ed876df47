"""``genwidgets simulate`` / ``python -m genwidgets.simulator``: flags and a real run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Any

import httpx
import pytest

from genwidgets.cli import build_parser, main
from genwidgets.simulator import cli as simulator_cli
from genwidgets.simulator.cli import config_from

pytestmark = pytest.mark.timeout(60)


def _config(*argv: str) -> Any:
    return config_from(build_parser().parse_args(["simulate", *argv]))


def test_defaults_and_every_flag() -> None:
    default = _config()
    assert default.keys == ("sim-demo-key",) and default.speed == 1.0 and default.workers == 4
    cfg = _config(
        "--key",
        "a",
        "--key",
        "b",
        "--restrict",
        "b=asset-get,vidVq2-text2video",
        "--speed",
        "2",
        "--workers",
        "3",
        "--fail-rate",
        "0.1",
        "--error-rate",
        "0.2",
        "--rate-limit",
        "5",
        "--latency",
        "0.05",
        "--seed",
        "9",
    )
    assert cfg.keys == ("a", "b")
    assert cfg.restrict == {"b": ("asset-get", "vidVq2-text2video")}
    assert (cfg.speed, cfg.workers, cfg.fail_rate, cfg.error_rate) == (2.0, 3, 0.1, 0.2)
    assert (cfg.rate_limit, cfg.latency, cfg.seed) == (5.0, 0.05, 9)
    args = build_parser().parse_args(["simulate", "--host", "0.0.0.0", "--port", "9000"])
    assert (args.host, args.port) == ("0.0.0.0", 9000)


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--speed", "0"], "speed must be a finite number > 0"),
        (["--speed", "fast"], "speed must be a finite number"),
        (["--workers", "many"], "from 1 to"),
        (["--workers", "0"], "from 1 to"),
        (["--fail-rate", "2"], "between 0 and 1"),
        (["--error-rate", "-1"], "between 0 and 1"),
        (["--rate-limit", "0"], "rate_limit must be > 0"),
        (["--latency", "-2"], "latency must be between 0"),
        (["--port", "70000"], "0 to 65535"),
        (["--restrict", "nokey"], "KEY=ENDPOINT"),
        (["--restrict", "sim-demo-key=vidZ"], "unknown endpoint"),
    ],
)
def test_bad_values_are_argparse_errors_naming_the_range(
    argv: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["simulate", *argv])
    assert exit_info.value.code == 2
    assert words in capsys.readouterr().err


def test_the_simulator_module_takes_the_same_flags(capsys: pytest.CaptureFixture[str]) -> None:
    args = simulator_cli.build_parser().parse_args(["--speed", "3", "--key", "k"])
    assert config_from(args).speed == 3.0 and config_from(args).keys == ("k",)
    with pytest.raises(SystemExit) as exit_info:
        simulator_cli.main(["--workers", "0"])
    assert exit_info.value.code == 2 and "from 1 to" in capsys.readouterr().err


def test_restrict_needs_a_given_key(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["simulate", "--key", "a", "--restrict", "b=asset-get"])
    assert "--restrict names a key" in capsys.readouterr().err


@pytest.mark.slow
def test_module_runs_a_server_that_answers() -> None:
    # --port 0: the system picks a free port and the first line names it (a port picked
    # here and bound there could be taken in between by another test's server)
    child = subprocess.Popen(
        [sys.executable, "-m", "genwidgets.simulator", "--port", "0", "--speed", "50"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert child.stdout is not None
        first = child.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:(\d+)", first)
        assert found is not None and found[1] != "0", first
        port = int(found[1])
        key_line = "".join(child.stdout.readline() for _ in range(2))
        assert "sim-demo-key" in key_line
        reply = httpx.post(
            f"http://127.0.0.1:{port}/v1/queue/asset-get",
            json={"Id": "asset-demo"},
            headers={"Authorization": "Bearer sim-demo-key"},
            timeout=10,
        )
        assert reply.status_code == 200 and reply.json()["request_id"]
    finally:
        child.terminate()
        child.wait(10)
    assert child.returncode is not None
