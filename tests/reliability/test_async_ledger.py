"""The AsyncClient's tasks are paid for too: they must reach the ledger like the Client's."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

import genwidgets as gw
from genwidgets.jobs.ledger import FINISHED
from genwidgets.simulator import DEMO_KEY, SimulatorServer
from reliability.harness import genwidgets_home

pytestmark = pytest.mark.reliability


@pytest.mark.timeout(60)
def test_a_task_submitted_through_the_async_client_is_in_the_ledger_and_resumable(
    tmp_path: Path, make_simulator: Callable[..., SimulatorServer]
) -> None:
    sim = make_simulator()

    async def submit_and_wait() -> tuple[str, bool]:
        async with gw.AsyncClient(sim.base_url, DEMO_KEY) as client:
            job = await client.submit("asset-get", {"Id": "asset-demo"})
            result = await job.result(timeout=30)
            return job.request_id, result.ok

    with genwidgets_home(tmp_path):
        request_id, ok = asyncio.run(submit_and_wait())
        later = gw.Client(sim.base_url, DEMO_KEY)  # a later session reads the same ledger
        history = later.history()
        later.close()
    assert ok
    assert [(job.request_id, job.done()) for job in history] == [(request_id, True)]
    assert later.ledger is not None
    (row,) = later.ledger.rows()
    assert (row.request_id, row.state, row.ok) == (request_id, FINISHED, True)
