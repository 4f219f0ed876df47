"""A client learns run times from its own jobs and from its ledger (issue 14), end to end.

Against the loopback simulator; waits are bounded, nothing asserts a duration.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from widgets.taskfakes import wait_for

import genwidgets as gw
from genwidgets.jobs import runtime
from genwidgets.jobs.ledger import Ledger
from genwidgets.jobs.planning import PLANNER
from genwidgets.simulator import SimulatorServer

KEY = "sim-demo-key"
WARM = 24  # more than the ~20 tasks a key needs


def run_batch(client: gw.Client, count: int, seconds: float) -> list[gw.Job]:
    jobs = [
        client.submit("asset-get", {"Id": "asset-demo"}, headers={"X-Sim-Duration": f"{seconds}"})
        for _ in range(count)
    ]
    for job in jobs:
        assert job.result(timeout=120).ok
    return jobs


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_expected_finish_appears_once_the_client_has_seen_enough_tasks(
    make_simulator: Callable[..., SimulatorServer],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    planned_on: list[str] = []
    plan_polls = runtime.plan_polls

    def noted(*args: Any, **kwargs: Any) -> runtime.Plan:
        planned_on.append(threading.current_thread().name)
        return plan_polls(*args, **kwargs)

    monkeypatch.setattr(runtime, "plan_polls", noted)
    # at speed 20, 40 s of X-Sim-Duration is 2 s here; a worker for every task of the
    # batch, so the batch takes one run time, not one per four tasks (what is learnt is
    # the run time, not the queue's wait)
    simulator = make_simulator(workers=WARM + 1)
    with Ledger(tmp_path / "ledger.sqlite3") as ledger:
        client = gw.Client(simulator.base_url, KEY, ledger=ledger, download=False)
        try:
            cold = client.submit(
                "asset-get", {"Id": "asset-demo"}, headers={"X-Sim-Duration": "40"}
            )
            assert cold.expected_finish is None  # nothing learnt yet
            cold.result(timeout=120)
            run_batch(client, WARM, 40)
            # Seen running, the tasks were polled at their result address (more result
            # requests than results), and the ledger still has the poll times the
            # model learns from: the status of each result body was recorded.
            assert client.request_counts["result"] > WARM + 1
            rows = ledger.run_times(client.gateway_name, "asset-get", limit=100)
            assert len(rows) == WARM + 1
            assert all(row[5] is not None for row in rows)  # done_at: seen COMPLETED
            # running_at: seen running (a task that went from the queue straight to
            # COMPLETED between two polls has none)
            assert sum(row[4] is not None for row in rows) > len(rows) // 2
            job = client.submit("asset-get", {"Id": "asset-demo"}, headers={"X-Sim-Duration": "40"})
            left = job.expected_finish
            assert left is not None and 0 < left < 10
            job.result(timeout=120)
            assert job.expected_finish is None  # done
        finally:
            client.close()
        # A new client (a restarted kernel) knows the run times from the ledger at once.
        again = gw.Client(simulator.base_url, KEY, ledger=ledger, download=False)
        try:
            job = again.submit("asset-get", {"Id": "asset-demo"}, headers={"X-Sim-Duration": "40"})
            assert job.expected_finish is not None
            assert job.result(timeout=120).ok
        finally:
            again.close()
    # the learnt keys' poll plans were made on a worker, off the engine's loop (issue 42)
    assert wait_for(lambda: bool(planned_on), timeout=60)
    worker = PLANNER.submit(lambda: threading.current_thread().name).result(30)
    assert set(planned_on) == {worker}


@pytest.mark.parametrize(
    ("argument", "value", "error"),
    [
        ("notice_target", 0, ValueError),
        ("notice_target", "1.5", TypeError),
        ("max_status_rate", 0, ValueError),
        ("max_status_rate", float("nan"), ValueError),
    ],
)
def test_bad_schedule_arguments_are_refused_before_anything_is_sent(
    argument: str, value: object, error: type[Exception]
) -> None:
    with pytest.raises(error, match=argument):
        gw.Client("http://127.0.0.1:9", KEY, ledger=False, **{argument: value})  # type: ignore[arg-type]
