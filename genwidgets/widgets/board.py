"""The board of a session's jobs and grids.

``gw.board(client)`` shows every job of the session as a card (:mod:`.cards`) and each
grid as one entry, updated live with the task view's throttle; jobs and grids of
earlier sessions come from the ledger, behind a toggle. With no client given it asks
:func:`~genwidgets._client.default_client`. Displayed, it is a view's two faces
(:mod:`.faces`): the live board, and a table of the jobs and grids it shows (with
thumbnails) that a saved notebook keeps. What "this session" is, paging and card
layout: docs/decisions.md#forms-board-outputs-and-the-command-line.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ipywidgets

from .._client import default_client
from ..lab.batch_store import GridStore, store_for
from . import markup
from ._style import MUTED_STYLE, format_elapsed
from .cards import (
    CARD_LAYOUT,
    CardData,
    GridEntry,
    JobCard,
    grid_entry_html,
    params_by_endpoint,
    thumbnail,
)
from .faces import TwoFaced
from .task import job_look
from .ticker import TICKER, Throttle

if TYPE_CHECKING:
    from .._protocols import ClientLike, JobLike

log = logging.getLogger(__name__)

__all__ = ["Board", "board"]

ALL = "(all)"
STATUS_FILTERS = ("queued", "running", "done", "failed", "cancelled")
#: Ledger entries a board loads (newest first).
HISTORY_LIMIT = 200
#: Stored grids a board lists (newest first).
GRID_LIMIT = 50
#: ``min(220px, 100%)``: one column on a narrow output, never a clipped last column.
GRID_LAYOUT = {
    "grid_template_columns": "repeat(auto-fill, minmax(min(220px, 100%), 1fr))",
    "grid_gap": "8px",
    "width": "100%",
}
#: Cards on one page of the board; the rest are behind its page buttons.
PAGE_SIZE = 24
#: Rows of the board's lasting face (its table), newest first.
LASTING_ROWS = 200


def process_started() -> float | None:
    """When this Python process started (epoch seconds), from ``/proc`` where there is
    one: the board's "this session" (docs/decisions.md#forms-board-outputs-and-the-command-line)."""
    try:
        stat = Path("/proc/self/stat").read_text()
        ticks = int(stat.rsplit(")", 1)[1].split()[19])  # field 22: starttime, in clock ticks
        boot = next(
            float(line.split()[1])
            for line in Path("/proc/stat").read_text().splitlines()
            if line.startswith("btime ")
        )
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration, AttributeError):
        return None


class Board(TwoFaced, ipywidgets.VBox):
    """The jobs of a client's session as cards, and its grids as one entry each,
    filterable by endpoint and status, :data:`PAGE_SIZE` to a page. Jobs and grids of
    earlier sessions (the ledger's) are behind the "earlier" toggle."""

    def __init__(self, client: ClientLike) -> None:
        self.client = client
        self._lock = threading.RLock()
        #: every job the board knows (this session's and the ledger's), by request id
        self.jobs: dict[str, JobLike] = {}
        #: the live cards, made for the jobs a page shows (a card per ledger job would
        #: put every one into the notebook's widget state, docs/decisions.md#board-weight)
        self.cards: dict[str, JobCard] = {}
        #: the categories of the jobs in scope as last written (a job without a card
        #: that changes category may enter or leave the status filter)
        self._categories: dict[str, str] = {}
        self.grid_entries: dict[str, tuple[GridEntry, ipywidgets.HTML]] = {}
        # Before the ledger is read, the client's jobs are all this session's: where
        # /proc cannot say when the process started, the oldest of them bounds it.
        started = process_started()
        if started is None:
            times = [j.submitted_at for j in self._client_jobs() if j.submitted_at]
            started = min([time.time(), *times])
        self.session_started = started
        self.page = 0
        auto = {"width": "auto"}
        line = {"align_items": "center", "grid_gap": "8px"}
        self.endpoint_filter = ipywidgets.Dropdown(
            options=[ALL], value=ALL, description="endpoint", layout=auto
        )
        self.status_filter = ipywidgets.Dropdown(
            options=[ALL, *STATUS_FILTERS], value=ALL, description="status", layout=auto
        )
        self.earlier = ipywidgets.ToggleButton(
            value=False,
            description="earlier sessions",
            tooltip="also show the jobs and grids of earlier sessions (from the ledger)",
            icon="history",
            layout=auto,
        )
        self.count_html = ipywidgets.HTML()
        self.refresh_button = ipywidgets.Button(description="Refresh", icon="refresh", layout=auto)
        self.prev_button = ipywidgets.Button(
            icon="chevron-left", tooltip="newer cards", layout=auto
        )
        self.next_button = ipywidgets.Button(
            icon="chevron-right", tooltip="older cards", layout=auto
        )
        self.page_html = ipywidgets.HTML()
        self.pager = ipywidgets.HBox(
            [self.prev_button, self.page_html, self.next_button], layout={**line, "display": "none"}
        )
        self.grid = ipywidgets.GridBox(layout=ipywidgets.Layout(**GRID_LAYOUT))
        self._throttle = Throttle(self._write)
        controls = ipywidgets.HBox(
            [
                self.endpoint_filter,
                self.status_filter,
                self.earlier,
                self.refresh_button,
                self.count_html,
            ],
            layout={**line, "flex_flow": "row wrap"},
        )
        badge = ipywidgets.HTML(markup.SIMULATED_BADGE if client.embedded else "")
        super().__init__(
            [ipywidgets.HBox([controls, badge], layout={"flex_flow": "row wrap"}), self.grid,
             self.pager]
        )  # fmt: skip
        self.add_class("gw-board")
        for control in (self.endpoint_filter, self.status_filter, self.earlier):
            control.observe(self._filters_changed, "value")
        self.refresh_button.on_click(lambda _b: self.refresh())
        self.prev_button.on_click(lambda _b: self.turn(-1))
        self.next_button.on_click(lambda _b: self.turn(+1))
        self.refresh()
        TICKER.add(self)

    def _ipython_display_(self) -> None:
        """Both faces: the board (live), then the table of what it shows."""
        self._show_faces(self._lasting, interval=2.0)

    def _lasting(self, media: str) -> dict[str, str]:
        return board_table(self, LASTING_ROWS)

    def _client_jobs(self) -> list[JobLike]:
        return list(self.client.jobs)

    def _filters_changed(self, _change: Any = None) -> None:
        self.page = 0
        self._throttle.request(force=True)

    def turn(self, pages: int) -> None:
        """Show the page ``pages`` after (or before, negative) the current one."""
        self.page = max(0, self.page + pages)
        self._throttle.request(force=True)

    def refresh(self, *, history: bool = True) -> None:
        """Pick up new jobs (and, with ``history``, the ledger's jobs and grids), then redraw."""
        with self._lock:
            for job in [*self._client_jobs(), *(self._history() if history else ())]:
                self.jobs.setdefault(str(job.request_id), job)
            if history:
                self._load_grids()
        self._throttle.request(force=True)

    def _card(self, key: str) -> JobCard:
        """The live card of a job a page shows (made the first time)."""
        card = self.cards.get(key)
        if card is None:
            card = self.cards[key] = JobCard(self.jobs[key], on_change=self._on_card_change)
        return card

    def _history(self) -> list[JobLike]:
        """``client.history()``: its re-attached Jobs become job cards like any other."""
        try:
            return list(self.client.history(limit=HISTORY_LIMIT))
        except Exception:  # the ledger is optional: a broken one hides nothing else
            log.warning("genwidgets: the board could not read the history", exc_info=True)
            return []

    def _load_grids(self) -> None:
        """The stored grids of the client's gateway (newest :data:`GRID_LIMIT`)."""
        try:
            records = store_for(self.client, GridStore).grids(self.client.gateway_name)[:GRID_LIMIT]
        except Exception:  # the store is optional: a broken one hides nothing else
            log.warning("genwidgets: the board could not read the grids", exc_info=True)
            return
        for record in records:
            widget = self.grid_entries.get(record.id, (None, None))[1]
            self.grid_entries[record.id] = (
                GridEntry(record),
                widget or ipywidgets.HTML(layout=ipywidgets.Layout(**CARD_LAYOUT)),
            )

    def tick(self) -> None:
        """The shared ticker's call: look for jobs submitted since the last look, and
        for jobs in scope that changed category (the status filter, the lasting face)."""
        if any(str(j.request_id) not in self.jobs for j in self._client_jobs()):
            self.refresh(history=False)
            return
        with self._lock:
            live, _ = self._scope()
            changed = any(self._categories.get(k) != job_look(j).category for k, j in live)
        if changed:
            self._throttle.request()

    def _on_card_change(self, _card: JobCard) -> None:
        # A card changed category: the status filter may now hide or show it.
        if self.status_filter.value != ALL:
            self._throttle.request()
        self._refresh_face()

    # --- what is shown ------------------------------------------------------------------
    def in_session(self, job: JobLike) -> bool:
        """Submitted (or re-attached by hand) since this session started."""
        return (job.submitted_at or 0.0) >= self.session_started

    def _scope(self, everything: bool = False) -> tuple[list[tuple[str, JobLike]], list[Any]]:
        """The jobs (request id, job) and grid entries in scope (this session, or all
        with "earlier" or ``everything``), before the endpoint and status filters; grid
        cells left out."""
        in_grids = {c.request_id for e, _ in self.grid_entries.values() for c in e.record.cells}
        everything = everything or bool(self.earlier.value)
        live = [
            (key, job)
            for key, job in self.jobs.items()
            if key not in in_grids and (everything or self.in_session(job))
        ]
        grids = [
            (e, w)
            for e, w in self.grid_entries.values()
            if everything or e.record.created_at >= self.session_started
        ]
        return live, grids

    def _filtered(
        self, live: list[tuple[str, JobLike]], grids: list[Any]
    ) -> tuple[list[tuple[str, JobLike]], list[Any]]:
        """Of :meth:`_scope`'s jobs (newest first) and grids, those that pass the filters."""
        live = [(k, j) for k, j in live if self._passes(str(j.endpoint), job_look(j).category)]
        live.sort(key=lambda item: item[1].submitted_at or 0.0, reverse=True)
        return live, [(e, w) for e, w in grids if self._passes(e.endpoint, e.category(self.jobs))]

    def earlier_count(self) -> int:
        """Jobs and grids of earlier sessions (shown only with the "earlier" toggle)."""
        with self._lock:
            live, grids = self._scope(everything=True)
            jobs = sum(not self.in_session(job) for _, job in live)
            return jobs + sum(e.record.created_at < self.session_started for e, _ in grids)

    def shown(self) -> list[CardData]:
        """The job cards in scope that pass the filters (every page), newest first."""
        with self._lock:
            live, _ = self._filtered(*self._scope())
            return [CardData.of_job(job) for _, job in live]

    def _passes(self, endpoint: str, category: str) -> bool:
        wanted_endpoint, status = self.endpoint_filter.value, self.status_filter.value
        return (wanted_endpoint == ALL or endpoint == wanted_endpoint) and (
            status == ALL or category == status
        )

    def close(self) -> None:
        TICKER.remove(self)
        for card in self.cards.values():
            card.close()
        super().close()

    def count_words(self) -> str:
        """What the board shows, in the words both faces use: ``3 grids``, ``2 jobs,
        1 grid``, ``2 of 5 jobs`` (filtered), ``no jobs or grids yet``."""
        with self._lock:
            live, grids = self._scope()
            shown, grids_shown = self._filtered(live, grids)
        return count_words(len(shown), len(live), len(grids_shown))

    def _write(self) -> None:
        with self._lock:
            live, grids = self._scope()
            self._categories = {key: job_look(job).category for key, job in live}
            endpoints = sorted({str(j.endpoint) for _, j in live} | {e.endpoint for e, _ in grids})
            options = [ALL, *endpoints]
            if list(self.endpoint_filter.options) != options:
                current = self.endpoint_filter.value
                self.endpoint_filter.options = options
                self.endpoint_filter.value = current if current in options else ALL
            live, grids = self._filtered(live, grids)
            params = params_by_endpoint([(str(j.endpoint), j.payload) for _, j in live])
            items = [*grids, *live]
            pages = max(1, -(-len(items) // PAGE_SIZE))
            self.page = min(self.page, pages - 1)
            visible = items[self.page * PAGE_SIZE : (self.page + 1) * PAGE_SIZE]
            # only the cards on the page are made and drawn
            self.grid.children = [self._drawn(item, params) for item in visible]
            self.pager.layout.display = None if pages > 1 else "none"
            self.prev_button.disabled = self.page == 0
            self.next_button.disabled = self.page >= pages - 1
            self.page_html.value = f"page {self.page + 1} of {pages}"
            earlier = self.earlier_count()
            self.earlier.description = f"earlier sessions ({earlier})"
            self.earlier.disabled = earlier == 0 and not self.earlier.value
            self.count_html.value = markup.span(self.count_words(), MUTED_STYLE)
        self._refresh_face()

    def _drawn(self, item: tuple[Any, Any], params: Mapping[str, list[str]]) -> ipywidgets.Widget:
        """A page's entry, drawn: a grid's (entry, widget) or a job's (key, job)."""
        first, second = item
        if isinstance(first, GridEntry):
            second.value = grid_entry_html(first, self.jobs)
            return second
        card = self._card(first)
        card.set_params(params.get(str(second.endpoint), []))
        return card

    def grids_shown(self) -> list[GridEntry]:
        """The grid entries in scope that pass the filters."""
        with self._lock:
            return [e for e, _ in self._filtered(*self._scope())[1]]


def count_words(jobs: int, total: int, grids: int) -> str:
    """``3 grids``, ``2 jobs, 1 grid``, ``2 of 5 jobs``: a count of none is left out."""
    parts = []
    if total:
        noun = "job" if total == 1 else "jobs"
        parts.append(f"{jobs} {noun}" if jobs == total else f"{jobs} of {total} {noun}")
    if grids:
        parts.append(f"{grids} grid{'s' if grids != 1 else ''}")
    return ", ".join(parts) or "no jobs or grids yet"


def board_table(board: Board, limit: int) -> dict[str, str]:
    """The board's lasting face: its grids, then its jobs (newest first, at most
    ``limit``), one row each with a thumbnail, status, elapsed time and request id."""
    jobs = board.shown()[:limit]
    rows = [
        markup.board_row(
            thumbnail(entry.best_outputs(board.jobs), "grid", row=True),
            markup.join([markup.bold(entry.record.endpoint), " grid"]),
            f"{entry.record.sent} of {len(entry.record.cells)} sent · {entry.record.rated} rated",
            "",
            markup.code(f"gw.load_grid({entry.record.id!r})"),
        )
        for entry in board.grids_shown()
    ]
    rows += [
        markup.board_row(
            thumbnail(data.outputs, row=True),
            markup.bold(data.endpoint),
            markup.status_badge(data.look),
            format_elapsed(data.elapsed),
            markup.selectable(data.request_id),
        )
        for data in jobs
    ]
    words = board.count_words()
    lines = [f"board: {words}"]
    lines += [f"  {d.endpoint} {d.request_id} {d.look.word}" for d in jobs]
    return {
        "text/html": markup.board_face(words, board.client.embedded, rows),
        "text/plain": "\n".join(lines),
    }


def board(client: ClientLike | None = None) -> Board:
    """A board of every job and grid of ``client``'s session (default: the most
    recent client of the process, or a new one)."""
    return Board(client if client is not None else default_client())
