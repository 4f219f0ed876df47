"""The simulator at its edges (issue 22 point 8): bodies it cannot read are a 400 at any
depth, and a simulator started as a child ends with its parent and stops on SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable

import httpx
import pytest

from genwidgets.protocol.serving import PARENT_ENV, child_of_this_process
from genwidgets.simulator import DEMO_KEY, SimulatorServer
from reliability.harness import wait_until

pytestmark = pytest.mark.reliability


@pytest.mark.parametrize("depth", [900, 100_000])
@pytest.mark.parametrize(
    ("method", "path"),
    [("PUT", "/_sim/config"), ("POST", "/v1/queue/asset-get")],
)
def test_a_body_nested_at_any_depth_is_a_400_never_a_500(
    make_simulator: Callable[..., SimulatorServer], method: str, path: str, depth: int
) -> None:
    sim = make_simulator()
    body = '{"a":' * depth + "1" + "}" * depth
    answer = httpx.request(
        method,
        sim.base_url + path,
        content=body,
        headers={"Authorization": f"Bearer {DEMO_KEY}", "Content-Type": "application/json"},
        timeout=60,
    )
    # too deep to read: 400; readable but invalid (a payload deeper than the spec allows): 422
    assert answer.status_code == (400 if depth > 10_000 else answer.status_code), answer.text
    assert answer.status_code in (400, 422), answer.text
    assert "detail" in answer.json()
    assert httpx.get(sim.base_url + "/", timeout=30).status_code == 200  # still serving


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


PARENT = textwrap.dedent(
    """
    import subprocess, sys, time
    from genwidgets.protocol.serving import child_of_this_process
    child = subprocess.Popen(
        [sys.executable, "-m", "genwidgets.simulator", "--port", "0", "--workers", "64"],
        stdout=subprocess.PIPE, text=True, env=child_of_this_process(),
    )
    print(child.stdout.readline().strip(), flush=True)
    print(child.pid, flush=True)
    time.sleep(120)
    """
)


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_a_child_simulator_ends_when_its_parent_is_killed() -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True, env=dict(os.environ)
    )
    assert parent.stdout is not None
    announced = parent.stdout.readline()
    assert " on http" in announced, announced
    child = int(parent.stdout.readline())
    url = announced.rsplit(" ", 1)[1].strip()
    try:
        assert httpx.get(url + "/", timeout=30).status_code == 200
        parent.send_signal(signal.SIGKILL)  # no chance to clean up
        parent.wait(30)
        # the orphan is re-parented; it notices and stops (reaped by init)
        wait_until(lambda: not _alive(child), 30, "the orphaned simulator to stop")
    finally:
        parent.stdout.close()
        if _alive(child):
            os.kill(child, signal.SIGKILL)


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_a_child_simulator_with_an_open_connection_stops_on_sigterm() -> None:
    env = child_of_this_process()
    assert env[PARENT_ENV] == str(os.getpid())
    child = subprocess.Popen(
        [sys.executable, "-m", "genwidgets.simulator", "--port", "0", "--workers", "1024"],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert child.stdout is not None
    try:
        url = child.stdout.readline().rsplit(" ", 1)[1].strip()
        with httpx.Client(timeout=30) as keep_alive:  # a connection left open, as a client does
            assert keep_alive.get(url + "/").status_code == 200
            child.send_signal(signal.SIGTERM)
            # uvicorn stops, then re-raises the signal it caught: ended by SIGTERM
            assert child.wait(30) in (0, -signal.SIGTERM)
    finally:
        child.stdout.close()
        if child.poll() is None:
            child.kill()
            child.wait(30)
