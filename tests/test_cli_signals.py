"""The task commands in pipelines, as a shell runs them: a reader of their output that
leaves (``| head``), Ctrl-C and SIGTERM end them as an interruption, with a message (or
its JSON object) and a shell's exit status, never a traceback. ``cli.Stopping``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from loopback import LoopbackServer, OneTaskGateway

import genwidgets

pytestmark = pytest.mark.timeout(120)


class Queued(OneTaskGateway):
    """A gateway whose task ``r1`` is queued for ever; ``polled`` is set by each poll."""

    polled = threading.Event()

    def do_GET(self) -> None:
        Queued.polled.set()
        self.send_json({"status": "IN_QUEUE", "queue_position": 3, "request_id": "r1"})


@pytest.fixture
def queued(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """Task ``r1`` made and recorded in the ledger of a home in ``tmp_path``; the
    environment a command run as a child reaches that gateway and home with."""
    gateway = LoopbackServer(Queued)
    env = {
        **os.environ,
        "GENWIDGETS_HOME": str(tmp_path / "home"),
        "GENWIDGETS_BASE_URL": gateway.base,
        "GENWIDGETS_API_KEY": "k-queued",
    }
    for name in ("GENWIDGETS_HOME", "GENWIDGETS_BASE_URL", "GENWIDGETS_API_KEY"):
        monkeypatch.setenv(name, env[name])
    with genwidgets.Client() as client:
        client.submit("ep", {"prompt": "a heron"}, validate=False)
    Queued.polled.clear()  # from now on, only the command polls
    try:
        yield env
    finally:
        gateway.close()


def command(*argv: str) -> list[str]:
    return [sys.executable, "-m", "genwidgets.cli", *argv]


@pytest.mark.parametrize(
    ("stop", "code", "said"),
    [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "stopped by SIGTERM")],
)
@pytest.mark.parametrize(
    ("argv", "next_step"),
    [
        (("result", "r1", "--wait", "60"), "the task goes on: genwidgets result r1 --wait"),
        (("resume",), "the tasks go on: genwidgets resume waits for them again"),
    ],
)
def test_ctrl_c_or_sigterm_while_a_command_waits_says_so_as_one_json_object(
    queued: dict[str, str],
    stop: signal.Signals,
    code: int,
    said: str,
    argv: tuple[str, ...],
    next_step: str,
) -> None:
    """``result --wait`` and ``resume`` waiting on a queued task, stopped: exit 130 for
    Ctrl-C, 143 for SIGTERM, with one JSON object saying so and how to wait again, as
    ``batch`` says it (they gave a bare KeyboardInterrupt traceback and no JSON; SIGTERM
    ended them with nothing said)."""
    child = subprocess.Popen(
        command(*argv, "--json"), env=queued, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        assert Queued.polled.wait(60), "the command never polled its task"
        child.send_signal(stop)
        out, err = child.communicate(timeout=60)
    finally:
        child.kill()
    assert child.returncode == code, err
    assert b"Traceback" not in err, err
    assert b"job.result()" not in err, err  # the command's words only, not the library's
    record: dict[str, Any] = json.loads(out)  # one object, nothing else
    assert record["error"].startswith(f"{said}; {next_step}"), record
    assert record["command"] == argv[0]


def test_a_reader_that_leaves_ends_a_command_quietly_with_141(queued: dict[str, str]) -> None:
    """``genwidgets history | head -0``: the reader is gone before the first line. The
    command says nothing and exits 141, as a command SIGPIPE ends (it said
    ``genwidgets history: [Errno 32] Broken pipe`` and exited 1)."""
    child = subprocess.Popen(
        command("history"), env=queued, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()  # before the command has written anything
    err = child.stderr.read()
    assert child.wait(60) == 141
    assert err == b""
