"""``genwidgets --help`` / ``--version`` and ``simulate --help``, as a user types them."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

import genwidgets
from genwidgets.cli import main

pytestmark = pytest.mark.timeout(60)

#: reST a terminal would print raw: ``code``, :mod:`x`, :class:`x`...
REST = re.compile(r"``|:[a-z]+:`")


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "genwidgets.cli", *argv],
        capture_output=True,
        text=True,
        timeout=50,
        check=False,
    )


def test_help_is_plain_text_with_the_commands_and_an_example() -> None:
    done = _run("--help")
    assert done.returncode == 0, done.stderr
    assert not REST.search(done.stdout), done.stdout
    assert "simulate" in done.stdout and "--version" in done.stdout
    assert "genwidgets simulate --help" in done.stdout  # where the flags are


def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"genwidgets {genwidgets.__version__}"


@pytest.mark.parametrize(
    ("flag", "default"),
    [
        ("--host", "127.0.0.1"),
        ("--port", "8765"),
        ("--speed", "1.0"),
        ("--workers", "4"),
        ("--fail-rate", "0.0"),
        ("--latency", "0.0"),
        ("--seed", "0"),
        ("--rate-limit", "no limit"),
    ],
)
def test_simulate_help_shows_each_default(
    flag: str, default: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main(["simulate", "--help"])
    text = capsys.readouterr().out
    assert not REST.search(text)
    # argparse wraps lines: read the flag's entry up to the next flag
    entry = text.split(f"  {flag} ", 1)[1].split("\n  --", 1)[0]
    assert f"(default: {default})" in " ".join(entry.split())


def test_simulate_help_shows_no_empty_default(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["simulate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "(default: None)" not in text and "(default: [])" not in text
