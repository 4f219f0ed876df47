"""Sweeps (``gw.sweep``): counts, confirmation, limits, validation, bounded
concurrency, imgM permutations, a store that cannot be written."""

from __future__ import annotations

from typing import Any

import pytest
from widgets.taskfakes import IMAGE_OUT, FakeClient, FakeJob, on_thread

import genwidgets as gw
from genwidgets.errors import PayloadError, ServerError
from genwidgets.lab.sweep import plan_sweep
from genwidgets.protocol.records import Result
from genwidgets.widgets.cards import CardData, card_html
from genwidgets.widgets.lasting import FACE_OUTPUTS
from genwidgets.widgets.sweep import Sweep, sweep

pytestmark = pytest.mark.usefixtures("fast_ticker")


def test_sweep_submits_the_product_in_order_with_labels(catalog: None) -> None:
    client = FakeClient()
    jobs = sweep(
        "test-video",
        {"prompt": "kite", "duration": 5},
        vary={"seed": [1, 2, 3], "prompt": ["kite", "boat"]},
        client=client,
    )
    assert isinstance(jobs, Sweep) and jobs.submitted
    assert len(jobs) == 6 and len(client.submitted) == 6
    assert [j.payload for j in jobs] == [
        {"prompt": p, "duration": 5, "seed": s} for s in (1, 2, 3) for p in ("kite", "boat")
    ]
    assert jobs.labels[1] == {"seed": 1, "prompt": "boat"}
    assert [c.label for c in jobs.widget.cells][:2] == [
        "seed=1 · prompt=kite",
        "seed=1 · prompt=boat",
    ]
    assert all(c.card is not None for c in jobs.widget.cells)
    assert "6 tasks" in jobs.widget.summary_html.value
    assert "duration = 5" in jobs.widget.summary_html.value  # what it bills
    assert jobs.widget.submit_button.layout.display == "none"  # no confirmation needed


def test_sweep_above_the_threshold_sends_nothing_until_the_click(catalog: None) -> None:
    client = FakeClient()
    jobs = sweep(
        "test-video",
        {"prompt": "kite"},
        vary={"seed": list(range(6)), "duration": [5, 10]},
        client=client,
        confirm_above=10,
    )
    assert client.submitted == [] and len(jobs) == 0 and not jobs.submitted
    button = jobs.widget.submit_button
    assert button.description == "Submit 12 tasks" and not button.disabled
    assert "nothing sent" in jobs.widget.progress_html.value
    assert "duration = 5, 10" in jobs.widget.summary_html.value
    button.click()
    button.click()  # a double click submits once
    assert jobs.wait_submitted(10)
    assert len(client.submitted) == 12 and len(jobs) == 12
    assert button.disabled
    assert "created 12 of 12" in jobs.widget.progress_html.value


@pytest.mark.slow
def test_sweep_confirm_true_submits_at_once(catalog: None) -> None:
    client = FakeClient()
    jobs = sweep(
        "test-video", {"prompt": "k"}, vary={"seed": list(range(12))}, client=client, confirm=True
    )
    assert len(jobs) == 12 and len(client.submitted) == 12


def test_sweep_over_max_jobs_is_a_payload_error_naming_both_numbers(catalog: None) -> None:
    client = FakeClient()
    with pytest.raises(PayloadError, match=r"60 tasks.*max_jobs=50"):
        sweep(
            "test-video",
            {"prompt": "k"},
            vary={"seed": range(20), "duration": [1, 2, 3]},
            client=client,
        )
    assert client.submitted == []


def test_sweep_reports_every_invalid_payload_before_sending(catalog: None) -> None:
    client = FakeClient()
    with pytest.raises(PayloadError) as info:
        sweep(
            "test-video",
            {"prompt": "k"},
            vary={"duration": [5, 0, 99], "seed": [1, -1]},
            client=client,
        )
    where = [(e["loc"], e["msg"].split(":")[0]) for e in info.value.errors]
    assert (("duration",), "in the cell duration=0 · seed=1") in where
    assert (("seed",), "in the cell duration=99 · seed=-1") in where
    assert len(info.value.errors) == 7  # 2 bad durations × 2 seeds + 3 bad seeds
    assert client.submitted == []


@pytest.mark.parametrize("vary", [{}, {"seed": []}, {"prompt": "abc"}])
def test_sweep_needs_lists_of_values(catalog: None, vary: dict[str, Any]) -> None:
    with pytest.raises(PayloadError, match="vary"):
        plan_sweep("test-video", {"prompt": "k"}, vary)


def test_sweep_sends_through_the_clients_one_batch_sender(catalog: None) -> None:
    """The bound itself is the batch sender's (tests/jobs/test_fanout.py)."""
    client = FakeClient()
    jobs = sweep(
        "test-video", {"prompt": "k"}, vary={"seed": list(range(9))}, client=client, concurrency=3
    )
    # in chunks of two rounds (the breaker is heard between them), each bound to 3
    assert len(jobs) == 9 and client.concurrency_asked == [3, 3]
    assert jobs.run.concurrency == 3 and jobs.id == jobs.run.id
    assert repr(jobs) == f"<Sweep {jobs.id} test-video: 9 tasks, 9 submitted>"


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "4"])
def test_sweep_refuses_a_concurrency_that_is_not_a_positive_whole_number(
    catalog: None, bad: Any
) -> None:
    client = FakeClient()
    with pytest.raises(ValueError, match="concurrency must be a whole number 1 or more"):
        sweep("test-video", {"prompt": "k"}, vary={"seed": [1]}, client=client, concurrency=bad)
    with pytest.raises(ValueError, match="confirm_above must be a whole number"):
        sweep("test-video", {"prompt": "k"}, vary={"seed": [1]}, client=client, confirm_above=-1)
    assert client.submitted == []


def test_a_failed_create_shows_in_its_cell_and_the_others_go_on(catalog: None) -> None:
    def fail_on(payload: Any) -> BaseException | None:
        return (
            ServerError("Runtime execution failed", status_code=500)
            if payload["seed"] == 2
            else None
        )

    client = FakeClient(fail_on=fail_on)
    jobs = sweep("test-video", {"prompt": "k"}, vary={"seed": [1, 2, 3]}, client=client)
    assert [(j.payload or {})["seed"] for j in jobs] == [1, 3]
    assert list(jobs.errors) == [1] and isinstance(jobs.errors[1], ServerError)
    # a 500 answering a create may come after the task was made: never "not created"
    assert "outcome unknown" in jobs.widget.cells[1].body.value
    assert "not created" not in jobs.widget.cells[1].body.value
    assert "1 failed" in jobs.widget.progress_html.value
    assert "1 failed" in repr(jobs)


def test_imgm_permutations_and_repeats_multiply_the_billed_count(catalog: None) -> None:
    plan = plan_sweep(
        "imgM-test-t2i", {}, {"prompt": ["a {red, blue} cat", "a {big, small} {dog, fox} --r 2"]}
    )
    assert plan.tasks == 2 and plan.billed == [2, 8] and plan.billed_total == 10
    client = FakeClient()
    jobs = sweep(
        "imgM-test-t2i",
        {},
        vary={"prompt": ["a {red, blue} cat", "a {big, small} {dog, fox} --r 2"]},
        client=client,
        confirm_above=4,
    )
    assert client.submitted == []  # 2 tasks, but 10 billed generations: confirm first
    assert "10 billed prompts (40 images)" in jobs.widget.summary_html.value
    assert jobs.widget.submit_button.description == "Submit 2 tasks"
    jobs.submit()
    assert [j.payload["prompt"] for j in jobs] == [  # creates run in parallel; jobs keep order
        "a {red, blue} cat",
        "a {big, small} {dog, fox} --r 2",
    ]
    with pytest.raises(PayloadError, match=r"billed as 10 generations.*max_jobs=8"):
        plan_sweep(
            "imgM-test-t2i",
            {},
            {"prompt": ["a {red, blue} cat", "a {big, small} {dog, fox} --r 2"]},
            max_jobs=8,
        )


def test_imgm_prompt_structure_errors_are_reported_before_sending(catalog: None) -> None:
    with pytest.raises(PayloadError) as info:
        plan_sweep("imgM-test-t2i", {}, {"prompt": ["ok", "a {red, blue cat"]})
    assert any("in the cell prompt=a {red, blue cat" in e["msg"] for e in info.value.errors)


def test_sweep_outside_jupyter_says_how_to_confirm(
    catalog: None, capsys: pytest.CaptureFixture[str]
) -> None:
    sweep("test-video", {"prompt": "k"}, vary={"seed": list(range(11))}, client=FakeClient())
    out = capsys.readouterr().out
    assert "11 tasks" in out and "confirm=True" in out and "nothing sent" in out


def test_sweep_cells_show_outputs_when_jobs_finish(catalog: None) -> None:
    client = FakeClient()
    jobs = sweep("test-video", {"prompt": "k"}, vary={"seed": [1, 2]}, client=client)
    first = jobs[0]
    assert isinstance(first, FakeJob)
    on_thread(lambda: first.finish([IMAGE_OUT, {**IMAGE_OUT, "url": "https://cdn.example/2.png"}]))
    card = jobs.widget.cells[0].card
    assert card is not None
    assert card.value.count("<img") == 2 and "seed=1" in card.value


def test_a_sweep_whose_store_cannot_be_written_sends_nothing_and_can_be_sent_again(
    catalog: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from genwidgets.lab import GridStore

    client = FakeClient()
    jobs = sweep("test-video", {"prompt": "k"}, vary={"seed": list(range(12))}, client=client)
    locked = gw.LedgerError("the ledger /tmp/x.sqlite3 is locked by another process")

    def refuse(*args: Any, **kw: Any) -> None:
        raise locked

    with monkeypatch.context() as patch:
        patch.setattr(GridStore, "save_batch", refuse)
        with pytest.raises(gw.LedgerError):
            jobs.submit()
    button = jobs.widget.submit_button
    assert client.submitted == [] and not button.disabled
    assert button.description == "Submit 12 tasks"
    assert "nothing sent: LedgerError" in jobs.widget.progress_html.value
    jobs.submit()  # the lock is gone: the same sweep goes
    assert len(client.submitted) == 12 and len(jobs) == 12 and jobs.submitted


def test_creates_failing_in_a_row_pause_the_sweep_and_its_button_goes_on(
    catalog: None,
) -> None:
    """Every create a 500: the first chunk's cells fail ("outcome unknown"), the rest
    are never sent; the button says "go on", and a submit() sends only those, each once."""
    down = True
    posted: list[int] = []

    def fail_on(payload: Any) -> BaseException | None:
        posted.append(payload["seed"])
        return ServerError("Runtime execution failed", status_code=500) if down else None

    client = FakeClient(fail_on=fail_on)
    seeds = list(range(1, 13))
    jobs = sweep(
        "test-video", {"prompt": "k"}, vary={"seed": seeds}, client=client, confirm_above=100
    )
    assert jobs.run.paused is not None and len(jobs.errors) == 8  # one chunk: 2 x 4
    assert posted == seeds[:8] and len(jobs) == 0
    assert "paused" in jobs.widget.progress_html.value
    button = jobs.widget.submit_button
    assert button.description == "go on" and not button.disabled
    down = False
    jobs.submit(wait=True)
    assert jobs.run.paused is None and posted == seeds  # the 4 held, once each
    assert sorted((j.payload or {})["seed"] for j in jobs) == seeds[8:]  # each once
    assert button.description == "submitted" and button.disabled


def test_a_sweep_cells_card_lays_out_at_most_face_outputs_and_counts_the_rest(
    catalog: None,
) -> None:
    """Review 27, fault 5: every face laid out at most ``FACE_OUTPUTS`` outputs but a
    sweep cell's card (``JobCard(outputs=True)``), which laid out all of a result's:
    10,000 outputs were ~1.2 MB of widget state a cell and 10,000 image requests."""
    total = FACE_OUTPUTS + 40
    result = Result.from_body(
        {
            "status": "COMPLETED",
            "outputs": [
                {"url": f"https://cdn.example/{i}.png", "content_type": "image/png"}
                for i in range(total)
            ],
        },
        endpoint="test-video",
        request_id="r1",
    )
    job = FakeJob("test-video", request_id="r1")
    job.last_result = result
    html = str(card_html(CardData.of_job(job), outputs=True))
    assert html.count("cdn.example/") == FACE_OUTPUTS
    assert "40 more outputs not shown" in html
