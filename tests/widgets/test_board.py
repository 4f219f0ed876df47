"""The board (cards, differing parameters, filters, live updates, history) and sweeps
(counts, confirmation, limits, validation, bounded concurrency, imgM permutations)."""

from __future__ import annotations

import re
import sys
import threading
import time
from collections.abc import Iterator
from typing import Annotated, Any

import pytest
from pydantic import Field
from widgets.taskfakes import IMAGE_OUT, FakeClient, FakeJob, on_thread, wait_for

import genwidgets as gw
from genwidgets.catalog import BILLED, PROMPT_STRING, Endpoint, register, unregister
from genwidgets.errors import PayloadError, ServerError
from genwidgets.jobs.ledger import Ledger
from genwidgets.lab.plan import differing_params
from genwidgets.lab.sweep import plan_sweep
from genwidgets.widgets import board as board_module
from genwidgets.widgets._style import COLOURS
from genwidgets.widgets.board import ALL, Board
from genwidgets.widgets.sweep import Sweep, sweep
from genwidgets.widgets.ticker import TICKER


@pytest.fixture(autouse=True)
def _fast_ticker(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(TICKER, "period", 0.05)
    yield
    for view in list(TICKER._live):
        TICKER.remove(view)


@pytest.fixture
def catalog() -> Iterator[None]:
    """Two endpoints of our own, registered through the public extension point, so
    these tests do not depend on the families (the simulator tests use those)."""

    class TestVideo(Endpoint):
        prompt: str = Field(..., min_length=1, max_length=100)
        duration: Annotated[int | None, BILLED] = Field(None, ge=1, le=10)
        seed: int | None = Field(None, ge=0)

    class TestImagine(Endpoint):
        prompt: Annotated[str, PROMPT_STRING] = Field(..., min_length=1)

    register("test-video", kind="video", family="vidT", title="t", documented=False)(TestVideo)
    register("imgM-test-t2i", kind="image", family="imgM", title="t", documented=False)(TestImagine)
    yield
    unregister("test-video")
    unregister("imgM-test-t2i")


# --- differing parameters ------------------------------------------------------------


def test_differing_params_lists_only_keys_whose_values_differ() -> None:
    payloads = [
        {"prompt": "a kite", "seed": 1, "opts": {"a": 1, "b": 2}},
        {"prompt": "a kite", "seed": 2, "opts": {"b": 2, "a": 1}},
        {"prompt": "a kite", "seed": 2, "opts": {"a": 1, "b": 2}, "duration": 5},
    ]
    assert differing_params(payloads) == ["seed", "duration"]
    assert differing_params([{"x": 1}, {"x": 1}]) == []
    assert differing_params([{"x": None}, {}]) == ["x"]  # unset differs from null
    assert differing_params([None, {"x": 1}]) == ["x"]
    assert differing_params([]) == []


# --- the board --------------------------------------------------------------------------


class BoardClient(FakeClient):
    """The fake client with what the board reads of the public Client API:
    ``history(limit=...)``, ``ledger`` (none: grids in memory) and ``gateway_name``."""

    ledger = None
    gateway_name = "fake"

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.records: list[Any] = []
        self.history_limits: list[int | None] = []

    def history(
        self, endpoint: str | None = None, status: str | None = None, limit: int | None = None
    ) -> list[Any]:
        self.history_limits.append(limit)
        return list(self.records)


def make_client() -> tuple[BoardClient, list[FakeJob]]:
    client = BoardClient(embedded=True)
    jobs = [
        FakeJob("vidVq2-text2video", payload={"prompt": "kite", "seed": 1}, client=client),
        FakeJob("vidVq2-text2video", payload={"prompt": "kite", "seed": 2}, client=client),
        FakeJob("imgM-v8.1-t2i", payload={"prompt": "kite", "seed": 3}, client=client),
    ]
    for j in jobs:
        client.adopt(j)
    return client, jobs


def test_board_shows_every_job_with_the_parameters_that_differ() -> None:
    client, _ = make_client()
    view = Board(client)
    assert len(view.grid.children) == 3
    html = " ".join(card.value for card in view.grid.children)
    assert html.count("gw-card") == 3
    # within vidVq2 the seeds differ; the one imgM job has nothing to compare
    assert ">seed</span> = 1" in html and ">seed</span> = 2" in html
    assert ">seed</span> = 3" not in html
    assert ">prompt</span>" not in html  # the same everywhere: not shown
    assert "vidVq2-text2video" in html and "imgM-v8.1-t2i" in html
    assert "3 of 3 jobs" in view.count_html.value
    assert client.history_limits == [board_module.HISTORY_LIMIT]
    view.close()


def test_a_card_never_lists_a_field_its_endpoint_does_not_have() -> None:
    client = BoardClient()
    for payload in ({"prompt": "a"}, {"prompt": "a", "text": "stray"}):
        client.adopt(FakeJob("imgM-v8.1-t2i", payload=payload, client=client))
    client.adopt(FakeJob("speechM-02-turbo", payload={"text": "hi"}, client=client))
    client.adopt(FakeJob("speechM-02-turbo", payload={"text": "ho"}, client=client))
    view = Board(client)
    cards = {str(c.job.payload): c.value for c in view.grid.children}
    assert ">text</span> = stray" in cards[str({"prompt": "a", "text": "stray"})]
    assert "unset" not in cards[str({"prompt": "a"})]  # imgM has no text field
    assert ">text</span> = hi" in cards[str({"text": "hi"})]
    view.close()


def test_icons_are_inline_svg_not_emoji() -> None:
    client, _ = make_client()
    view = Board(client)
    html = " ".join(card.value for card in view.grid.children)
    assert html.count("<svg") == 3 and "gw-icon-video" in html and "gw-icon-image" in html
    assert not any(ord(ch) > 0x2500 for ch in html)
    view.close()


def test_board_filters_by_endpoint_and_status_and_recomputes_differences() -> None:
    client, jobs = make_client()
    jobs[0].finish([IMAGE_OUT])
    jobs[1].run()
    view = Board(client)
    assert set(view.endpoint_filter.options) == {ALL, "vidVq2-text2video", "imgM-v8.1-t2i"}
    view.endpoint_filter.value = "imgM-v8.1-t2i"
    assert [c.job for c in view.grid.children] == [jobs[2]]
    assert ">seed</span>" not in view.grid.children[0].value  # one job: nothing differs
    view.endpoint_filter.value = ALL
    view.status_filter.value = "done"
    assert [c.job for c in view.grid.children] == [jobs[0]]
    view.status_filter.value = "running"
    assert [c.job for c in view.grid.children] == [jobs[1]]
    assert "1 of 3 jobs" in view.count_html.value
    view.close()


def test_board_cards_update_live_with_a_thumbnail_and_pick_up_new_jobs() -> None:
    client, jobs = make_client()
    view = Board(client)
    card = next(c for c in view.grid.children if c.job is jobs[0])
    assert "<svg" in card.value  # no output yet: an icon
    on_thread(jobs[0].run)
    assert wait_for(lambda: "running" in card.value)
    on_thread(lambda: jobs[0].finish([IMAGE_OUT]))
    assert f'<img src="{IMAGE_OUT["url"]}"' in card.value
    assert "done" in card.value and COLOURS["done"] in card.value
    late = client.adopt(FakeJob("vidK-v3-turbo-t2v", payload={"prompt": "kite"}, client=client))
    assert wait_for(lambda: any(c.job is late for c in view.grid.children))
    assert "vidK-v3-turbo-t2v" in view.endpoint_filter.options
    view.close()
    assert view not in TICKER._live


def test_board_status_filter_follows_live_changes() -> None:
    client, jobs = make_client()
    view = Board(client)
    view.status_filter.value = "failed"
    assert view.grid.children == ()
    on_thread(lambda: jobs[2].finish(error="Runtime execution failed", error_type="runtime_error"))
    assert wait_for(lambda: [c.job for c in view.grid.children] == [jobs[2]])
    assert "Runtime execution failed" in view.grid.children[0].value
    view.close()


@pytest.mark.timeout(60, method="thread")  # a deadlock blocks signals: dump and fail
def test_board_survives_engine_updates_while_filters_change() -> None:
    # Cards write under their own lock and the board under its own: a card must
    # never call into the board while holding its lock (this would deadlock).
    client = FakeClient()
    jobs = [client.adopt(FakeJob(payload={"seed": i}, client=client)) for i in range(30)]
    view = Board(client)
    view.status_filter.value = "running"
    for card in view.cards.values():
        card._throttle.interval = 0.0  # every update writes: many chances to interleave
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible

    def engine() -> None:
        for round_ in range(30):
            for job in jobs:
                job.run() if round_ % 2 == 0 else job.queue(1)

    thread = threading.Thread(target=engine, daemon=True)
    try:
        thread.start()
        for i in range(60):
            view.status_filter.value = ["running", "queued", ALL][i % 3]
        thread.join(30)
    finally:
        sys.setswitchinterval(switch)
    assert not thread.is_alive(), "deadlock between a card and the board"
    for job in jobs:
        job.finish()
    view.status_filter.value = "done"
    assert wait_for(lambda: len(view.shown()) == 30)
    assert len(view.grid.children) == board_module.PAGE_SIZE  # the rest on the next page
    view.close()


def test_board_escapes_hostile_payload_values_and_endpoints() -> None:
    client = FakeClient()
    for seed in ("<script>alert(1)</script>", "x"):
        client.adopt(FakeJob("<b>ep</b>", payload={"seed": seed}, client=client))
    view = Board(client)
    html = " ".join(c.value for c in view.grid.children)
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "<b>ep</b>" not in html
    view.close()


def test_board_includes_the_jobs_the_clients_history_re_attaches() -> None:
    """``client.history()`` hands back re-attached Jobs (as the real client does), an
    earlier session's among them: they are job cards behind the "earlier" toggle."""
    client, jobs = make_client()
    old = FakeJob(
        "imgM-v8.1-t2i",
        request_id="old-1",
        payload={"prompt": "old", "seed": 9},
        client=client,
        submitted_at=100.0,
    )
    old.finish([IMAGE_OUT])
    old.finished_at = 112.5
    client.records = [old, jobs[0]]  # this session's own jobs come back too: one card each
    view = Board(client)
    assert len(view.grid.children) == 3  # this session's jobs only, by default
    assert view.earlier.description == "earlier sessions (1)"
    view.earlier.value = True
    assert len(view.grid.children) == 4
    shown = view.grid.children[-1].value
    assert "old-1" in shown and "12.5s" in shown and f'src="{IMAGE_OUT["url"]}"' in shown
    assert ">prompt</span> = old" in shown  # prompts now differ across the shown jobs
    view.close()


def test_board_defaults_to_the_default_client(monkeypatch: pytest.MonkeyPatch) -> None:
    client, _ = make_client()
    monkeypatch.setattr(board_module, "default_client", lambda: client)
    view = board_module.board()
    assert view.client is client
    view.close()


# --- sweeps -----------------------------------------------------------------------------


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
    """The bound itself is the batch sender's (tests/jobs/test_batch.py)."""
    client = FakeClient()
    jobs = sweep(
        "test-video", {"prompt": "k"}, vary={"seed": list(range(9))}, client=client, concurrency=3
    )
    assert len(jobs) == 9 and client.concurrency_asked == [3]
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
    assert "not created" in jobs.widget.cells[1].body.value
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


# --- the real catalog, client and simulator --------------------------------------------


def sim_stats(base_url: str) -> dict[str, int]:
    import httpx

    return dict(httpx.get(f"{base_url}/_sim/stats", timeout=10).json())


@pytest.mark.timeout(90)
def test_real_sweep_board_and_history_against_the_simulator(
    make_simulator: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import genwidgets as gw

    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path))
    sim = make_simulator()
    client = gw.Client(base_url=sim.base_url, api_key="sim-demo-key", download=False)
    try:
        with pytest.raises(PayloadError):
            sweep(
                "vidVq2-text2video",
                {"prompt": "kite"},
                vary={"duration": [5, 999]},
                client=client,
            )
        assert sim_stats(sim.base_url).get("create", 0) == 0  # nothing sent
        jobs = sweep(
            "imgM-v8.1-t2i",
            {"prompt": "x"},
            vary={"prompt": ["a {red, blue} kite", "a boat"]},
            client=client,
            concurrency=2,
        )
        assert jobs.plan.billed == [2, 1]
        assert len(jobs) == 2 and sim_stats(sim.base_url)["create"] == 2
        for job in jobs:
            job.result(timeout=30)
        for cell in jobs.widget.cells:
            card = cell.card
            assert card is not None
            assert wait_for(lambda card=card: "<img" in card.value)
        # A sweep is kept as a one-axis grid: one entry on the board, re-opened by id.
        view = Board(client)
        (entry,) = view.grid.children
        assert "· sweep" in entry.value and f"gw.load_grid(&#x27;{jobs.id}&#x27;)" in entry.value
        assert "prompt (2)" in entry.value and "2 of 2 sent" in entry.value
        assert f'src="{sim.base_url}/files/' in entry.value
        view.close()
    finally:
        client.close()
    # A later session on the same ledger sees those jobs and re-opens the sweep.
    later = gw.Client(base_url=sim.base_url, api_key="sim-demo-key", download=False)
    try:
        assert later.jobs == [] or all(j.done() for j in later.jobs)
        view = Board(later)
        ids = {str(c.job.request_id) for c in view.cards.values()}
        assert ids == {str(j.request_id) for j in jobs}
        view.close()
        again = gw.load_grid(jobs.id, client=later)
        assert [c.request_id for c in again.cells] == [str(j.request_id) for j in jobs]
        assert [c.x for c in again.cells] == ["prompt=a {red, blue} kite", "prompt=a boat"]
        assert all(c.done and not c.failed for c in again.cells)
        again.close()
    finally:
        later.close()


@pytest.mark.timeout(90)
def test_a_grid_is_one_entry_on_the_board(make_simulator: Any, tmp_path: Any) -> None:
    import genwidgets as gw

    sim = make_simulator()
    ledger = Ledger(tmp_path / "ledger.sqlite3")
    with gw.Client(ledger=ledger, base_url=sim.base_url, api_key="sim-demo-key") as client:
        grid = gw.grid(
            "genW2.5-t2i-preview", {"prompt": "a fox", "n": 1}, x=("seed", [1, 2, 3]), client=client
        )
        grid.wait(timeout=60)
        grid.rate(grid.cells[1], 4)
        single = client.submit("genW2.5-t2i-preview", {"prompt": "a lone fox"})
        single.result(timeout=60)
        view = Board(client)
        entries = [w.value for w in view.grid.children if "gw-grid-entry" in w.value]
        assert len(entries) == 1 and len(view.grid.children) == 2
        assert grid.id in entries[0] and "seed (3)" in entries[0] and "1 rated" in entries[0]
        assert "<img" in entries[0]  # the best-rated cell's image
        assert "1 of 1 jobs, 1 grids" in view.count_html.value
        # its lasting face: a table of the same, a thumbnail for the job and the grid
        table = board_module.board_table(view, board_module.LASTING_ROWS)["text/html"]
        assert table.count("<tr>") == 2 and table.count('class="gw-thumb"') == 2
        assert f"gw.load_grid(&#x27;{grid.id}&#x27;)" in table and single.request_id in table
        assert sim.base_url not in table  # no loopback URL: it dies with the kernel
        view.close()


def test_the_board_is_shown_with_its_lasting_table_kept_current(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import IPython.display
    from widgets.taskfakes import DisplayRecorder

    from genwidgets.widgets import faces

    display = DisplayRecorder()
    monkeypatch.setattr(IPython.display, "display", display)
    monkeypatch.setattr(faces, "in_kernel", lambda: True)
    monkeypatch.setattr(board_module, "in_kernel", lambda: True)
    client, jobs = make_client()
    view = Board(client)
    view._ipython_display_()
    [(live, _), (lasting, _)] = display.calls
    assert faces.WIDGET_VIEW_MIME in live and "gw-board-lasting" in lasting["text/html"]
    assert lasting["text/html"].count("<tr>") == 3 and "when last seen" in lasting["text/html"]
    on_thread(lambda: jobs[0].finish([IMAGE_OUT]))
    assert wait_for(lambda: ">done<" in display.handle.last_html(), timeout=10)
    view.close()


def test_board_shows_this_sessions_jobs_and_earlier_ones_behind_a_toggle() -> None:
    client, jobs = make_client()
    older = client.adopt(FakeJob("imgM-v8.1-t2i", payload={"seed": 7}, client=client))
    older.submitted_at = time.time() - 10 * 365 * 86400  # from the ledger of a past kernel
    view = Board(client)
    assert view.in_session(jobs[0]) and not view.in_session(older)
    assert {c.job for c in view.grid.children} == set(jobs)
    assert view.earlier.description == "earlier sessions (1)" and not view.earlier.disabled
    assert "3 of 3 jobs" in view.count_html.value
    view.earlier.value = True
    assert {c.job for c in view.grid.children} == {*jobs, older}
    assert "4 of 4 jobs" in view.count_html.value
    view.close()


def test_board_pages_its_cards() -> None:
    client = BoardClient()
    jobs = [client.adopt(FakeJob(payload={"seed": i}, client=client)) for i in range(30)]
    for i, job in enumerate(jobs):
        job.submitted_at = time.time() + i  # newest last: shown first
    view = Board(client)
    size = board_module.PAGE_SIZE
    assert [c.job for c in view.grid.children] == jobs[::-1][:size]
    assert view.pager.layout.display is None and view.page_html.value == "page 1 of 2"
    assert view.prev_button.disabled and not view.next_button.disabled
    view.next_button.click()
    assert [c.job for c in view.grid.children] == jobs[::-1][size:]
    assert view.next_button.disabled and view.page_html.value == "page 2 of 2"
    view.status_filter.value = "queued"  # a filter change starts again at page 1
    assert view.page == 0
    view.close()
    small = Board(make_client()[0])
    assert small.pager.layout.display == "none"  # one page: no pager
    small.close()


def test_cards_shrink_and_cut_long_values_with_a_tooltip() -> None:
    client = BoardClient()
    url = "https://example.test/" + "very-long-path-segment/" * 20 + "image.png"
    for value in (url, "short"):
        client.adopt(FakeJob("imgQ-edit-plus", payload={"images": [value]}, client=client))
    view = Board(client)
    layout = view.grid.layout
    assert "minmax(min(220px, 100%), 1fr)" in layout.grid_template_columns
    for card in view.grid.children:
        assert (card.layout.min_width, card.layout.overflow) == ("0", "hidden")
    html = " ".join(c.value for c in view.grid.children)
    rows = re.findall(r'<div class="gw-param" title="([^"]*)" style="([^"]*)">', html)
    assert len(rows) == 2
    for title, style in rows:
        assert "white-space:nowrap" in style and "text-overflow:ellipsis" in style
        assert "overflow:hidden" in style and title.startswith("images = ")
    assert any("very-long-path-segment/" * 5 in title for title, _ in rows)  # the tooltip
    request_id = r'class="gw-request-id" title="req-\d+" style="[^"]*text-overflow:ellipsis'
    assert re.search(request_id, html)
    view.close()


def test_a_sweep_whose_store_cannot_be_written_sends_nothing_and_can_be_sent_again(
    catalog: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from genwidgets.lab.store import GridStore

    client = FakeClient()
    jobs = sweep("test-video", {"prompt": "k"}, vary={"seed": list(range(12))}, client=client)
    locked = gw.LedgerError("the ledger /tmp/x.sqlite3 is locked by another process")

    def refuse(*args: Any, **kw: Any) -> None:
        raise locked

    with monkeypatch.context() as patch:
        patch.setattr(GridStore, "save_grid", refuse)
        with pytest.raises(gw.LedgerError):
            jobs.submit()
    button = jobs.widget.submit_button
    assert client.submitted == [] and not button.disabled
    assert button.description == "Submit 12 tasks"
    assert "nothing sent: LedgerError" in jobs.widget.progress_html.value
    jobs.submit()  # the lock is gone: the same sweep goes
    assert len(client.submitted) == 12 and len(jobs) == 12 and jobs.submitted
