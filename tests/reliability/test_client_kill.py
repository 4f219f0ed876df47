"""A client process SIGKILLed mid-poll, or mid-create: the ledger loses nothing."""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path

import pytest

import genwidgets as gw
from genwidgets.jobs.downloads import gateway_folder
from genwidgets.jobs.ledger import FINISHED, OUTCOME_UNKNOWN, SUBMITTING, Ledger
from genwidgets.simulator import DEMO_KEY, SimulatorServer
from reliability.harness import genwidgets_home, read_until, start_client_process, wait_until

pytestmark = pytest.mark.reliability

TASKS = 5


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_new_process_resumes_every_task_of_a_killed_one(
    tmp_path: Path, make_simulator: Callable[..., SimulatorServer]
) -> None:
    sim = make_simulator(speed=1.0, workers=TASKS)
    child = start_client_process(tmp_path, sim.base_url, TASKS, duration="8")
    try:
        request_ids = read_until(child.stdout, "polling", timeout=60)
        assert len(request_ids) == TASKS
        # mid-poll: the child has asked for statuses, and no task has finished yet
        wait_until(lambda: sim.state.stats["status"] >= TASKS, 15, "the child to poll")
        states = {i: sim.state.scheduler.tasks[i].status for i in request_ids}
        assert "COMPLETED" not in states.values(), states
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(10)
        child.stdout.close()
        child.stderr.close()
    assert child.returncode == -signal.SIGKILL

    with genwidgets_home(tmp_path):
        client = gw.Client(sim.base_url, DEMO_KEY)
        jobs = client.resume()
        assert sorted(job.request_id for job in jobs) == sorted(request_ids)
        results = [job.result(timeout=60) for job in jobs]
        assert client.ledger is not None
        rows = client.ledger.rows(client.gateway_name)
        client.close()
    assert all(r.ok for r in results), [r.error for r in results]
    for result in results:
        saved = result.outputs[0].path
        assert saved is not None and saved.is_file()
        folder = gateway_folder(sim.base_url)  # docs/decisions.md#outputs-by-gateway
        assert saved.parent == tmp_path / "outputs" / folder / str(result.request_id)
    assert sorted(sim.state.scheduler.tasks) == sorted(request_ids)  # resuming created nothing
    assert sorted((r.request_id, r.state) for r in rows) == sorted(
        (i, FINISHED) for i in request_ids
    )


@pytest.mark.timeout(90)
def test_a_kill_between_intent_and_handle_leaves_an_outcome_unknown_row(
    tmp_path: Path, make_simulator: Callable[..., SimulatorServer]
) -> None:
    sim = make_simulator(latency=30.0)  # the create answer is still on its way when we kill
    child = start_client_process(tmp_path, sim.base_url, 1, duration="1")
    ledger_file = tmp_path / "ledger.sqlite3"
    try:
        wait_until(ledger_file.exists, 60, "the child's ledger")
        ledger = Ledger(ledger_file)
        wait_until(lambda: bool(ledger.rows()), 30, "the child's intent row")
        (row,) = ledger.rows()
        assert (row.state, row.request_id, row.pid) == (SUBMITTING, None, child.pid)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(10)
        child.stdout.close()
        child.stderr.close()
    assert child.returncode == -signal.SIGKILL

    (row,) = ledger.rows()
    assert (row.state, row.request_id) == (OUTCOME_UNKNOWN, None)
    assert row.endpoint == "speechM-02-turbo"
    assert ledger.rows(status="outcome_unknown") == [row]
    with genwidgets_home(tmp_path):
        client = gw.Client(sim.base_url, DEMO_KEY)
        assert client.resume() == []  # no request id to poll: reported, not resumed
        assert client.ledger is not None
        assert [r.id for r in client.ledger.rows(status="outcome_unknown")] == [row.id]
        client.close()
    ledger.close()
