"""The board: cards, differing parameters, filters, live updates, history (a sweep and a
grid as they show on it)."""

from __future__ import annotations

import re
import sys
import threading
import time
from typing import Any

import pytest
from widgets.taskfakes import IMAGE_OUT, FakeClient, FakeJob, on_thread, wait_for

import genwidgets as gw
from genwidgets._palette import COLOURS
from genwidgets.errors import PayloadError
from genwidgets.jobs.ledger import Ledger
from genwidgets.lab.plan import differing_params
from genwidgets.widgets import board as board_module
from genwidgets.widgets.board import ALL, Board
from genwidgets.widgets.sweep import sweep
from genwidgets.widgets.ticker import TICKER

pytestmark = pytest.mark.usefixtures("fast_ticker")


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


def test_a_card_shown_after_its_status_ended_but_before_its_result_still_gets_it() -> None:
    # A sweep's card shows outputs: a task whose status said COMPLETED before the card
    # was made still has its result on the way, so the card follows it there.
    from genwidgets.widgets.cards import JobCard

    job = FakeJob("imgM-v8.1-t2i")
    job.set_status("COMPLETED")
    card = JobCard(job, label="seed 1", outputs=True)
    assert "<img" not in card.value
    on_thread(lambda: job.finish([IMAGE_OUT]))
    assert wait_for(lambda: IMAGE_OUT["url"] in card.value)
    assert job.update_callback_count == 0 and card not in TICKER.live


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
    assert "3 jobs" in view.count_html.value
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
    assert view not in TICKER.live


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


# --- the real catalog, client and simulator --------------------------------------------


def sim_stats(base_url: str) -> dict[str, int]:
    import httpx

    return dict(httpx.get(f"{base_url}/_sim/stats", timeout=10).json())


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_real_sweep_board_and_history_against_the_simulator(
    make_simulator: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:

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
        ids = set(view.jobs)  # known, from the ledger; no card: not this session
        assert ids == {str(j.request_id) for j in jobs}
        view.close()
        again = gw.load_grid(jobs.id, client=later)
        assert [c.request_id for c in again.cells] == [str(j.request_id) for j in jobs]
        assert [c.x for c in again.cells] == ["prompt=a {red, blue} kite", "prompt=a boat"]
        assert all(c.done and not c.failed for c in again.cells)
        again.close()
    finally:
        later.close()


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_a_grid_is_one_entry_on_the_board(make_simulator: Any, tmp_path: Any) -> None:

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
        assert "1 job, 1 grid<" in view.count_html.value
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
    assert "3 jobs" in view.count_html.value
    view.earlier.value = True
    assert {c.job for c in view.grid.children} == {*jobs, older}
    assert "4 jobs" in view.count_html.value
    view.close()


def test_a_board_makes_cards_only_for_what_its_page_shows_and_both_faces_agree() -> None:
    """Issue 40: a card per ledger job, each with its picture, went into the notebook's
    widget state while the board showed none of them ("0 of 0 jobs, 3 grids")."""
    client, jobs = make_client()
    for i in range(40):  # the ledger of past kernels
        older = client.adopt(FakeJob("imgM-v8.1-t2i", payload={"seed": i}, client=client))
        older.submitted_at = time.time() - 86400 - i
    view = Board(client)
    assert len(view.jobs) == 43 and set(view.cards) == {str(j.request_id) for j in jobs}
    assert view.count_html.value.endswith(">3 jobs</span>")
    table = board_module.board_table(view, board_module.LASTING_ROWS)
    assert "· 3 jobs when last seen" in table["text/html"] and table["text/plain"].startswith(
        "board: 3 jobs\n"
    )
    view.status_filter.value = "done"
    assert ">0 of 3 jobs<" in view.count_html.value and view.grid.children == ()
    on_thread(lambda: jobs[1].finish([IMAGE_OUT]))  # a job without a card enters the filter
    assert wait_for(lambda: [c.job for c in view.grid.children] == [jobs[1]], timeout=10)
    assert ">1 of 3 jobs<" in view.count_html.value
    view.status_filter.value = ALL
    view.earlier.value = True  # the ledger's jobs: a page of cards, no more
    assert len(view.cards) == board_module.PAGE_SIZE
    view.close()


def test_count_words() -> None:
    assert board_module.count_words(0, 0, 3) == "3 grids"
    assert board_module.count_words(1, 1, 1) == "1 job, 1 grid"
    assert board_module.count_words(2, 5, 0) == "2 of 5 jobs"
    assert board_module.count_words(0, 0, 0) == "no jobs or grids yet"


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_an_imgm_grid_entry_names_its_axes_and_cards_carry_thumbnails(
    make_simulator: Any, tmp_path: Any
) -> None:
    sim = make_simulator()
    ledger = Ledger(tmp_path / "ledger.sqlite3")
    with gw.Client(ledger=ledger, base_url=sim.base_url, api_key="sim-demo-key") as client:
        grid = gw.grid("imgM-v8.1-t2i", {"prompt": "a {red, blue} kite --ar {1:1, 16:9}"},
                       client=client)  # fmt: skip
        grid.wait(timeout=60)
        grid.rate(grid.cells[0], 5)
        single = client.submit("genW2.5-t2i-preview", {"prompt": "a lone fox", "size": "1440*1440"})
        single.result(timeout=60)
        view = Board(client)
        entry, card = (w.value for w in view.grid.children)
        # as the live grid labels its columns (x) and rows (y), not "prompt{2} (2)"
        assert "prompt {1:1, 16:9} (2) × prompt {red, blue} (2)" in entry
        assert "prompt{" not in entry
        full = max(o.path.stat().st_size for o in single.result().outputs if o.path)
        for html in (entry, card):
            (src,) = re.findall(r'<img src="([^"]+)"', html)
            assert src.startswith("data:image/") and len(src) < min(full, 60_000), len(src)
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
