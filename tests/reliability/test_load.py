"""A thousand tasks through one client under every fault switch: nothing lost, nothing doubled."""

from __future__ import annotations

from pathlib import Path

import pytest

from reliability.harness import run_fault_load

pytestmark = pytest.mark.reliability

TASKS = 1000


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_a_thousand_tasks_under_faults_are_all_accounted_for(tmp_path: Path) -> None:
    # 429 bursts of 1 s every 5 s (the report's are 2.5 s): each still meets creates,
    # polls and fetches, and a run spends less of its time throttled to 5 requests a second
    figures = run_fault_load(TASKS, tmp_path, deadline=180.0, burst_length=1.0)

    assert figures.problems == []
    # every task accounted for, each exactly once
    assert figures.lost == 0
    assert figures.completed_ok + figures.failed_with_request_id == TASKS
    assert figures.duplicated_creates == 0
    assert figures.created_on_gateway == TASKS
    assert figures.create_requests == figures.gateway_create_requests
    # the faults really happened, and were survived
    assert sum(figures.answers_5xx.values()) >= TASKS // 20
    assert figures.rate_limit_bursts >= 1
    assert figures.answers_429["status"] + figures.answers_429["result"] > 0
    assert figures.runtime_failures >= TASKS // 50
    assert figures.failed_with_request_id >= figures.runtime_failures
    assert figures.recovered == figures.met_a_fault > 0
    # the ledger: one row per created task with its final state, and a not_created
    # row for each create the rate limit refused (which the harness resubmitted)
    assert figures.ledger_rows == TASKS
    assert figures.not_created_rows == figures.rejected_resubmitted
    assert figures.outputs_on_disk == figures.completed_ok
