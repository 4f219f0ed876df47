"""Two kernels share one ledger; one is killed mid-run and the other resumes its tasks
(issue 22 acceptance): 0 lost, 0 duplicate creates, 0 tasks polled by two owners."""

from __future__ import annotations

import signal
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

import genwidgets as gw
from genwidgets.errors import LedgerWarning
from genwidgets.simulator import DEMO_KEY, SimulatorServer
from reliability.harness import genwidgets_home, read_until, start_client_process, wait_until

pytestmark = pytest.mark.reliability

TASKS = 30


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_killed_kernels_tasks_are_taken_over_once_and_never_polled_twice(
    tmp_path: Path, make_simulator: Callable[..., SimulatorServer]
) -> None:
    sim = make_simulator(speed=1.0, workers=TASKS)
    kernel_a = start_client_process(tmp_path, sim.base_url, TASKS, duration="10")
    try:
        created = read_until(kernel_a.stdout, "polling", timeout=60)
        assert len(created) == TASKS
        with genwidgets_home(tmp_path):
            kernel_b = gw.Client(sim.base_url, DEMO_KEY)
        try:
            # kernel A lives and polls: B's resume() leaves every task to it, and says so
            for _ in range(3):
                with pytest.warns(LedgerWarning, match=f"{TASKS} unfinished task"):
                    assert kernel_b.resume() == []
            wait_until(lambda: sim.state.stats["status"] >= TASKS, 30, "kernel A to poll")
            assert kernel_b.request_counts.get("status", 0) == 0  # B polled nothing
            states = {i: sim.state.scheduler.tasks[i].status for i in created}
            assert "COMPLETED" not in states.values(), states  # mid-run
        finally:
            kernel_a.send_signal(signal.SIGKILL)
            kernel_a.wait(30)
            kernel_a.stdout.close()
            kernel_a.stderr.close()
        assert kernel_a.returncode == -signal.SIGKILL

        # A is gone: its leases are free, B takes every task at once (no ttl to wait out)
        jobs = kernel_b.resume()
        assert sorted(job.request_id for job in jobs) == sorted(created)
        assert kernel_b.resume() == jobs  # again: the same jobs, nothing polled twice
        results = [job.result(timeout=90) for job in jobs]
        assert all(r.ok for r in results), [r.error for r in results]
        assert kernel_b.ledger is not None
        assert kernel_b.ledger.flush(60)
        owners = sqlite3.connect(kernel_b.ledger.path)
        held = owners.execute("SELECT DISTINCT owner FROM tasks").fetchall()
        owners.close()
        assert len(held) == 1 and str(held[0][0]).split(":")[1] != str(kernel_a.pid)
        rows = kernel_b.ledger.rows(kernel_b.gateway_name)
        kernel_b.close()
    finally:
        if kernel_a.poll() is None:
            kernel_a.kill()
            kernel_a.wait(30)
    # 0 lost: every task finished on disk; 0 duplicate creates: the gateway saw 30 tasks
    assert sorted((r.request_id, r.state, r.ok) for r in rows) == sorted(
        (i, "finished", True) for i in created
    )
    assert sorted(sim.state.scheduler.tasks) == sorted(created)
    assert sim.state.stats["create"] == TASKS
