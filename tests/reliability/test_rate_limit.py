"""429s: a refused create is recorded and resubmittable; a refused result never stalls a job."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

import genwidgets as gw
from genwidgets.errors import RateLimited
from genwidgets.jobs.ledger import FINISHED, NOT_CREATED
from genwidgets.simulator import DEMO_KEY, SimulatorServer
from reliability.harness import TallyingTransport, genwidgets_home

pytestmark = pytest.mark.reliability

ASSET = ("asset-get", {"Id": "asset-demo"})


@pytest.mark.timeout(60)
def test_a_create_refused_by_the_rate_limit_is_recorded_as_not_created_and_can_be_resubmitted(
    tmp_path: Path, make_simulator: Callable[..., SimulatorServer]
) -> None:
    sim = make_simulator(rate_limit=1.0)
    with genwidgets_home(tmp_path):
        client = gw.Client(sim.base_url, DEMO_KEY, max_retries=0)
        first = client.submit(*ASSET)
        with pytest.raises(RateLimited) as refused:
            client.submit(*ASSET)
        assert refused.value.retry_after is not None and refused.value.retry_after >= 1
        assert "asset-get" in str(refused.value)
        assert client.ledger is not None
        rejected = client.ledger.rows(client.gateway_name)[0]
        assert (rejected.state, rejected.request_id) == (NOT_CREATED, None)
        assert "HTTP 429" in (rejected.error or "")  # in words, no class name
        assert len(sim.state.scheduler.tasks) == 1  # the refusal created nothing

        # the burst ends; the user resubmits
        httpx.put(f"{sim.base_url}/_sim/config", json={"rate_limit": None}).raise_for_status()
        second = client.submit(*ASSET)
        assert first.result(timeout=30).ok and second.result(timeout=30).ok
        assert set(sim.state.scheduler.tasks) == {first.request_id, second.request_id}
        states = sorted(row.state for row in client.ledger.rows(client.gateway_name))
        assert states == [FINISHED, FINISHED, NOT_CREATED]
        client.close()


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_a_completed_task_whose_result_fetch_is_rate_limited_still_finishes(
    tmp_path: Path, make_simulator: Callable[..., SimulatorServer]
) -> None:
    """A gateway allowing one request a second, a client told not to retry.

    Once the status says COMPLETED, the result is the only thing left to ask for.
    Going back to the status after each refused result fetch spends the one token
    of every second on a question already answered, and the job never ends.
    """
    sim = make_simulator(rate_limit=1.0)
    tally = TallyingTransport()
    with genwidgets_home(tmp_path):
        client = gw.Client(sim.base_url, DEMO_KEY, max_retries=0, transport=tally)
        job = client.submit(*ASSET)
        try:
            result = job.result(timeout=15)  # a job that never ends raises TaskTimeout
        finally:
            client.close()
    assert result.ok, result.error
    # after the first COMPLETED status, no more status requests are needed
    assert tally.count(("status",), (200,)) <= 2, sorted(tally.answers.items())
