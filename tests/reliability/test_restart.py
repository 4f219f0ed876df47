"""The simulator killed and restarted mid-run: known tasks finish, forgotten ones fail fast."""

from __future__ import annotations

from pathlib import Path

import pytest

import genwidgets as gw
from genwidgets.errors import RequestNotFound
from genwidgets.jobs import job as job_module
from genwidgets.jobs.job import Job
from genwidgets.jobs.ledger import FINISHED
from genwidgets.simulator import DEMO_KEY, SimConfig, SimulatorServer
from reliability.harness import (
    RestartableSimulator,
    TallyingTransport,
    genwidgets_home,
    wait_until,
)

pytestmark = pytest.mark.reliability

TASKS = 6
#: X-Sim-Duration at speed 10: each task runs 3 s, so the restart lands mid-run.
DURATION = "30"
#: Forgotten tasks: 404 is believed after 3 s (NOT_FOUND_GRACE_S); a generous bound for
#: polling backoff left over from the downtime on a loaded machine (a CI run beside a busy
#: core took over 12 s): what it tells apart is a task ended by the 404 from one polled on
#: until its caller gives up.
FORGOTTEN_WITHIN_S = 40.0


def _submit_and_watch(client: gw.Client) -> list[Job]:
    jobs = [
        client.submit(
            "speechM-02-turbo", {"text": f"restart {i}"}, headers={"X-Sim-Duration": DURATION}
        )
        for i in range(TASKS)
    ]
    wait_until(lambda: all(job.last_status is not None for job in jobs), 15, "a first poll")
    assert not any(job.done() for job in jobs)
    return jobs


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_jobs_finish_when_the_gateway_restarts_keeping_its_tasks(tmp_path: Path) -> None:
    tally = TallyingTransport()
    with genwidgets_home(tmp_path), RestartableSimulator(SimConfig(speed=10, workers=TASKS)) as sim:
        client = gw.Client(sim.base_url, DEMO_KEY, transport=tally)
        jobs = _submit_and_watch(client)
        sim.kill()
        wait_until(  # polls meet a closed port meanwhile
            lambda: tally.transport_errors["status"] + tally.transport_errors["result"] > 0,
            30,
            "a poll to meet the closed port",
        )
        sim.start()
        results = [job.result(timeout=45) for job in jobs]
        assert client.ledger is not None
        rows = client.ledger.rows(client.gateway_name)
        client.close()
    assert all(r.ok for r in results), [r.error for r in results]
    assert tally.transport_errors["status"] + tally.transport_errors["result"] > 0  # really down
    assert sorted(sim.state.scheduler.tasks) == sorted(job.request_id for job in jobs)
    assert sorted((row.request_id, row.state) for row in rows) == sorted(
        (job.request_id, FINISHED) for job in jobs
    )


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_jobs_a_restarted_gateway_forgot_end_with_request_not_found_quickly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a 404 in a task's first minute may mean "not visible yet" (jobs.job.NOT_VISIBLE_FOR,
    # its own test in test_client.py): shortened here, where the gateway did forget them
    monkeypatch.setattr(job_module, "NOT_VISIBLE_FOR", 1.0)
    config = SimConfig(speed=10, workers=TASKS)
    with genwidgets_home(tmp_path):
        first = SimulatorServer(config, host="127.0.0.1", port=0).start()
        # closed however the test ends: a live client left behind would be the default
        # that a later test's gw.batch(...) picks
        with gw.Client(first.base_url, DEMO_KEY) as client:
            try:
                jobs = _submit_and_watch(client)
            finally:
                first.stop()
            fresh = SimulatorServer(config, host="127.0.0.1", port=first.port).start()
            try:
                for job in jobs:  # each ends with RequestNotFound, not TaskTimeout
                    with pytest.raises(RequestNotFound) as forgotten:
                        job.result(timeout=FORGOTTEN_WITHIN_S)
                    assert forgotten.value.request_id == job.request_id
                    assert job.request_id in str(forgotten.value)
                    assert "speechM-02-turbo" in str(forgotten.value)
                client.close()

                # the ledger recorded them as ended: a new session does not re-attach them,
                # and its history says what happened
                with gw.Client(fresh.base_url, DEMO_KEY) as resumed_client:
                    assert resumed_client.resume() == []
                    history = resumed_client.history()
                    ids = sorted(j.request_id for j in jobs)
                    assert sorted(j.request_id for j in history) == ids
                    for job in history:
                        res = job.result(timeout=1)
                        assert not res.ok and res.error_type == "request_not_found"
                assert fresh.state.scheduler.tasks == {}  # nothing was re-created
            finally:
                fresh.stop()
