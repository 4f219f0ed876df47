"""A grid at work: a :class:`GridRun` is the run core a batch is (its cells are its
rows), with its layout, its ratings, and re-opening: docs/decisions.md#grid-run.
"""

from __future__ import annotations

import logging
import operator
import secrets
import sqlite3
import time
from typing import TYPE_CHECKING, Any

from .._client import default_client
from ..catalog.checks import shown
from ..errors import LedgerError, PayloadError
from ..jobs.fanout import valid_concurrency
from ..jobs.ledger import scrub_payload
from ..protocol.records import Output, is_terminal
from .batch import FORGOTTEN, TICK, Batch
from .batch_store import (
    CANCELLED,
    DONE,
    ENDED,
    FAILED,
    SENDING,
    TIMED_OUT,
    UNKNOWN,
    WAITING,
    GridRecord,
    GridStore,
    RowRecord,
    store_for,
)
from .plan import AXES, GridPlan, PlannedCell
from .progress import Mode

if TYPE_CHECKING:
    from collections.abc import Callable

    from .._protocols import ClientLike
    from .batch_row import BatchRow

__all__ = [
    "CONCURRENCY",
    "GridCell",
    "GridRun",
    "list_grids",
    "new_grid_id",
]

CONCURRENCY = 4

log = logging.getLogger("genwidgets")


def new_grid_id() -> str:
    """A stable, sortable, readable id: ``g-YYYYMMDD-HHMMSS-xxxx``."""
    return time.strftime("g-%Y%m%d-%H%M%S-", time.gmtime()) + secrets.token_hex(2)


class GridCell:
    """One cell: its row in the run core (task, state), its axis values as displayed,
    and what was judged of it (rating and note)."""

    def __init__(self, run: GridRun, row: BatchRow) -> None:
        self._run = run
        self.row = row
        self.planned: PlannedCell = row.planned  # type: ignore[assignment]  # a grid's row
        self.index = row.index
        self.payload = row.payload
        self.rating = 0
        self.note: str | None = None

    job = property(lambda self: self.row.job)
    request_id = property(lambda self: self.row.request_id)
    #: a failed create as raised (this session only; :attr:`error` is its words)
    exception = property(lambda self: self.row.exception)
    #: where this cell is sent (an endpoint axis sends each cell to its own)
    endpoint = property(lambda self: self.planned.endpoint)
    #: the kind of the cell's endpoint: image, video, speech, ...
    kind = property(lambda self: self.planned.kind)
    #: generations this cell bills
    billed = property(lambda self: self.planned.billed)
    #: payload fields the cell's endpoint has no field for (not sent)
    dropped = property(lambda self: self.planned.dropped)
    plan_note = property(lambda self: self.planned.plan_note)

    @property
    def error(self) -> str | None:
        """A create that failed, in its own words ("not created: ...", "outcome
        unknown: ..."); None once a task exists, while another kernel sends it, or while
        it waits to be sent (a create given back: "not sent: ..." is why, no failure)."""
        row = self.row
        ended = row.request_id is None and not row.elsewhere and row.state != WAITING
        return row.error if ended else None

    @property
    def elsewhere(self) -> bool:
        """Another kernel was sending it when this one last read the store: neither failed
        nor done; :meth:`GridRun.follow_elsewhere` takes its task up once it exists."""
        return self.row.elsewhere

    @property
    def failed(self) -> bool:
        """Ended without a usable result (a failed create, a task failed or cancelled);
        a task contact was lost with (:attr:`lost`) is not failed."""
        return self.error is not None or self.row.state in (FAILED, CANCELLED, TIMED_OUT)

    @property
    def in_doubt(self) -> bool:
        """Its create's outcome is unknown, or the gateway no longer knows its task
        (:attr:`forgotten`): a task may exist (and bill); never sent again, so neither
        failed nor done well."""
        return self.forgotten or (
            self.error is not None and self.error.startswith("outcome unknown")
        )

    @property
    def forgotten(self) -> bool:
        """Its task was made (a request id) and the gateway then answered 404 for it (a
        restart, a result past its retention): it may have run and billed, so it is never
        failed nor sent again (docs/decisions.md#batch-row-states)."""
        row = self.row
        return (
            row.state == UNKNOWN
            and row.request_id is not None
            and not row.elsewhere
            and (row.error or "").startswith(FORGOTTEN)
        )

    @property
    def trouble(self) -> str | None:
        """What went wrong, its meaning first: a create's own words ("not created: ...",
        "outcome unknown: ..."), "failed: " and the task's error, or a cancelled or timed-out
        task's own words (a person or a deadline stopped it, not the gateway); None when
        nothing did."""
        state = self.row.state
        if self.forgotten:
            return self.row.error
        if self.error is not None or not self.failed:
            return self.error
        if state == FAILED:
            return f"failed: {self.row.error}"
        return self.row.error or state

    @property
    def lost(self) -> bool:
        """This process lost contact with its task: it may still run or be done, and
        :meth:`GridRun.submit` follows it again (no create)."""
        row = self.row
        return (
            row.request_id is not None
            and not row.elsewhere
            and (row.lost > 0 or row.state == UNKNOWN)
            and not self.forgotten
        )

    @property
    def unsent(self) -> bool:
        """No create of it has left."""
        return self.row.state == WAITING

    @property
    def held(self) -> bool:
        """Not sent because the breaker paused its grid (the next submit() sends it)."""
        return self.unsent and self._run.paused is not None

    def value(self, direction: str) -> Any:
        """The value of the axis displayed along ``direction`` ("x", "y" or "z")."""
        return self.planned.values.get(self._run.plan.layout[direction])

    x = property(lambda self: self.value("x"))
    y = property(lambda self: self.value("y"))
    z = property(lambda self: self.value("z"))

    @property
    def place(self) -> tuple[int, int, int]:
        """(tab, row, column) as displayed."""
        return self._run.plan.place(self.planned)

    @property
    def outputs(self) -> list[Output]:
        result = self.job.last_result if self.job is not None else None
        return list(result.outputs) if result is not None else []

    @property
    def done(self) -> bool:
        """Nothing more will happen to this cell (finished, failed, not created, its
        create's outcome unknown, or contact lost with its task); not while another
        kernel sends it."""
        return self.row.ended and not self.row.elsewhere

    def __repr__(self) -> str:
        values = ", ".join(f"{d}={self.value(d)!r}" for d in AXES if self._run.plan.shown(d))
        state = self.request_id or self.error or ("elsewhere" if self.elsewhere else "not sent")
        return f"<GridCell {values} {state}{' ' + '*' * self.rating if self.rating else ''}>"


class GridRun(Batch):
    """A planned grid on the run core: its cells sent at most once, followed, and what
    was judged of them. No folder (the ledger keeps outputs), no budget, each create
    tagged as grids always were (a re-opened grid finds by it a cell's task its store
    missed)."""

    noun = "grid"
    unit = "cell"
    wait_progress: Mode = "none"  # its view shows it
    plan: GridPlan  # type: ignore[assignment]  # the core's plan: a grid's, not a batch's
    out: None  # type: ignore[assignment]  # a grid has no folder
    store: GridStore

    def __init__(
        self,
        plan: GridPlan,
        client: ClientLike,
        *,
        grid_id: str | None = None,
        store: GridStore | None = None,
        concurrency: int = CONCURRENCY,
    ) -> None:
        super().__init__(
            plan,
            client,
            batch_id=grid_id or new_grid_id(),
            out=None,
            store=store if store is not None else store_for(client, GridStore),
            concurrency=valid_concurrency(concurrency),
        )
        self.cells = [GridCell(self, row) for row in self.rows]
        #: a grid a kernel that ended left unfinished, re-opened by :meth:`reopen_left`:
        #: its words (the view says them); None for any other grid
        self.left_note: str | None = None
        #: when the grid was planned (a re-opened one: when it was stored)
        self.created_at = time.time()
        self.store.watch(self.id, self.refresh_ratings)

    def tag(self, row: BatchRow) -> str:
        again = f" attempt {row.attempt}" if row.attempt > 1 else ""
        return f"grid {self.id} cell {row.index}{again}"

    @property
    def sent(self) -> bool:
        """True once every create has answered (or failed), or sending stopped."""
        return self.started and not self.sending

    # ------------------------------------------------------------------ layout

    def cell(self, *, x: Any = None, y: Any = None, z: Any = None) -> GridCell:
        """The cell with these displayed axis values (omit axes the grid lacks)."""
        wanted = {"x": x, "y": y, "z": z}
        for cell in self.cells:
            if all(self.plan.shown(d) is None or cell.value(d) == wanted[d] for d in AXES):
                return cell
        shown = {d: list(a.values) for d in AXES if (a := self.plan.shown(d)) is not None}
        raise KeyError(f"no cell at x={x!r}, y={y!r}, z={z!r}; the axes are {shown}")

    def swap(self, a: str, b: str) -> None:
        """Re-lay the grid: swap two displayed axes; no task is sent."""
        self.plan = self.plan.swapped(a, b)
        self.changed()

    # ------------------------------------------------------------------ sending

    def submit(self, *, wait: bool = True) -> GridRun:
        """Send every cell once: a second call follows again the cells contact was lost
        with and sends only the cells that wait (after a pause, a cancel, an interrupt,
        or a grid re-opened with cells never sent). ``wait`` returns when every create
        has answered (or the breaker paused the grid); else they go from the core's
        sender (docs/decisions.md#grid-run)."""
        self.follow_elsewhere()
        try:  # a Ctrl-C heard from the sender's start on: it may come before the join
            super().submit()
            if wait:
                self.join_sender()
        except KeyboardInterrupt:
            self.interrupt()
            raise
        if wait:
            self.changed()  # the views hear that every create answered, before it returns
        return self

    def wait(
        self,
        timeout: float | None = None,
        *,
        progress: Mode | None = None,
        words: Callable[[str], str] | None = None,
    ) -> GridRun:
        """:meth:`Batch.wait`, the cells another kernel is sending waited for too: read
        again from the store until it has sent them (each then followed here) or is gone."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while held := self.follow_elsewhere():
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(
                    f"grid {self.id}: {held} of its cells were still being sent in another "
                    f"kernel after {timeout:g} s; they go on there (wait again)"
                )
            time.sleep(TICK)
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        super().wait(remaining, progress=progress, words=words)
        return self

    def show_as_stored(self, row: BatchRow, record: RowRecord | None) -> None:
        """A batch's row ended in another process is that process's; a grid's cell shows
        its task's outputs, so one with a task this run does not follow stays held
        until :meth:`follow_elsewhere` takes it up (a re-read at a final write ended it
        here with no outputs, and it was never followed)."""
        super().show_as_stored(row, record)
        if record is not None and record.state in ENDED:  # ended there: held only untaken
            row.elsewhere = row.request_id is not None and row.job is None

    def follow_elsewhere(self) -> int:
        """The cells another kernel was sending when this one opened the grid, and, while
        this run does not send, the cells it has never sent (another kernel may send them
        since: it sends in chunks), read again from the store (they showed "not created",
        failed, or "not sent", forever): one with a task now is followed here, no create,
        as a re-opened grid follows it; one another live kernel reserved is held as being
        sent there; one ended there without a task shows as it ended; one given back
        there unsent (``waiting``) is this kernel's to send at :meth:`submit`; one whose
        kernel went away before its answer is settled from the ledger by its tag
        (:meth:`Batch.reconcile`). Returns how many another live kernel is still sending."""

        def ours(row: BatchRow) -> bool:  # under the lock: what to read again
            return row.elsewhere or (row.state == WAITING and not self.sending)

        with self.lock:
            held = [row for row in self.rows if ours(row)]
        if not held or not self.stored:
            return 0
        stored = {r.index: r for r in self.store.rows(self.id, [r.index for r in held])}
        tables = self.store.tables
        alive = tables.alive_owners() - {tables.owner}
        follow: list[BatchRow] = []
        settle: list[BatchRow] = []
        sending, given_back, taken = 0, False, False
        with self.lock:
            for row in held:
                record = stored.get(row.index)
                if record is None or not ours(row):  # this run sent it meanwhile
                    continue
                if not row.elsewhere:  # never sent here: untouched while it still waits,
                    # or while this process's own reservation of it is settling
                    if record.state == WAITING or (
                        record.state == SENDING and record.owner == tables.owner
                    ):
                        continue
                    taken = True
                if record.state == SENDING and record.owner in alive:  # a live kernel sends it
                    row.elsewhere = True
                    sending += 1
                    continue
                self.as_stored(row, record)
                row.elsewhere = False
                row.attempt, row.reserved_at = record.attempt, record.reserved_at
                if record.request_id is not None:
                    follow.append(row)
                elif record.state == SENDING:
                    settle.append(row)
                elif record.state == WAITING:  # given back there (a rate limit, a pause)
                    given_back = True
            if taken:  # sent by another kernel: this grid has been sent
                self.started = True
        if settle:
            self.reconcile(settle)
        if settle or given_back or taken:
            with self.lock:  # one that never left is this kernel's: submit() sends it, as
                # on re-opening (with no stop, submit() sent nothing and wait() never ended)
                if self.waiting() and not self.sending and self.stopped is None:
                    self.stopped = f"re-opened: {self.unit}s never sent wait for submit()"
        if follow:
            self.attach_all(follow)
        if follow or settle or given_back or taken:
            self._ensure_finisher()
            self.changed()
        return sending

    # ------------------------------------------------------------------ progress

    def tally(self) -> tuple[int, int, int]:
        """(done, failed, total): done counts terminal cells, failed among them (not the
        cells whose create's outcome is unknown: :meth:`in_doubt`)."""
        done = sum(1 for c in self.cells if c.done)
        failed = sum(1 for c in self.cells if c.failed and not c.in_doubt)
        return done, failed, len(self.cells)

    def in_doubt(self) -> int:
        """How many cells' creates have an unknown outcome (their tasks may exist)."""
        return sum(1 for c in self.cells if c.in_doubt)

    def to_go_on(self) -> tuple[int, int]:
        """(cells contact was lost with, cells never sent that no pause holds): what
        :meth:`submit` (a view's Go on) takes up again once the grid has sent."""
        lost = sum(1 for c in self.cells if c.lost and c.job is not None)
        waiting = sum(1 for c in self.cells if c.unsent) if self.sent and self.paused is None else 0
        return lost, waiting

    def expected_finish(self) -> float | None:
        """The latest expected finish (seconds from now) of unfinished cells, when known."""
        found = [
            job.expected_finish for c in self.cells if (job := c.job) is not None and not job.done()
        ]
        return max((f for f in found if f is not None), default=None)

    # ------------------------------------------------------------------ judging

    def rate(
        self, cell: GridCell | int, stars: int | None = None, note: str | None = None
    ) -> GridCell:
        """Set 1-5 stars (0 clears them) and/or a note ("" clears it); a field left None
        keeps what is stored, so stars and a note given apart (a browser's star click
        and its note field) never undo each other. Persisted in the grid store."""
        total = len(self.cells)
        number = whole_number(cell)  # NumPy's np.argmax of scores, a DataFrame's index
        if number is not None and 0 <= number < total:
            target = self.cells[number]  # a negative index rated a cell counted from the end
        elif isinstance(cell, GridCell) and cell in self.cells:
            target = cell
        else:
            raise ValueError(
                f"rate a cell number 0-{total - 1} or one of this grid's cells, not {shown(cell)}"
            )
        if stars is not None and (
            isinstance(stars, bool) or not isinstance(stars, int) or not 0 <= stars <= 5
        ):
            raise ValueError(f"stars must be a whole number 1-5 (0 clears), not {stars!r}")
        if note is not None and not isinstance(note, str):
            raise ValueError(f'a note is a string ("" clears it), not {type(note).__name__}')
        self.store_batch()
        target.rating, target.note = self.store.rate(self.id, target.index, stars, note)
        self.changed()
        return target

    def refresh_ratings(self) -> bool:
        """Read this grid's ratings back from the store (another view or kernel may
        have rated it), and the cells another kernel was sending (:meth:`follow_elsewhere`);
        True when a rating changed. A store that cannot be read now (locked past its wait,
        damaged) changes nothing: what this run holds is shown and exported, and the reason
        is logged."""
        try:
            self.follow_elsewhere()
            stored = self.store.ratings(self.id)
        except (LedgerError, sqlite3.Error, OSError) as exc:
            log.warning("genwidgets: grid %s: ratings not read again: %s", self.id, exc)
            return False
        changed = False
        for cell in self.cells:
            stars, note = stored.get(cell.index, (0, None))
            if (stars, note) != (cell.rating, cell.note):
                cell.rating, cell.note, changed = stars, note, True
        if changed:
            self.changed()
        return changed

    def scores(self, direction: str = "x") -> list[dict[str, Any]]:
        """Per value of the axis shown along ``direction``: mean stars of its rated
        cells, how many were rated, how many failed, how many cells; best first
        (rated values by mean, then unrated ones, each in axis order)."""
        axis = self.plan.shown(direction) if direction in AXES else None
        if direction not in AXES:
            raise ValueError(f"scores along one of {AXES}, not {direction!r}")
        if axis is None:
            raise ValueError(f"this grid has no {direction} axis")
        rows = []
        for value in axis.values:
            group = [c for c in self.cells if c.value(direction) == value]
            stars = [c.rating for c in group if c.rating]
            rows.append(
                {
                    "value": value,
                    "mean": round(sum(stars) / len(stars), 2) if stars else None,
                    "rated": len(stars),
                    "failed": sum(1 for c in group if c.failed),
                    "cells": len(group),
                }
            )
        return sorted(rows, key=lambda r: (r["mean"] is None, -(r["mean"] or 0)))

    def describe(self) -> dict[str, Any]:
        """What ran: the plan's description plus each cell's payload (a local file as
        its shown path), request id, status, trouble (a failed create's words, a failed
        task's "failed: ...", a cancelled or timed-out one's own) and rating (exports;
        never the key)."""

        data = {"id": self.id, **self.plan.describe()}
        data["cells"] = [
            {
                **{k: getattr(c, k) for k in ("index", "endpoint", "kind", "billed", "plan_note")},
                **{d: c.value(d) for d in ("x", "y", "z")},
                "payload": scrub_payload(c.payload),
                "request_id": c.request_id,
                "status": status_of(c),
                "error": c.trouble,
                "stars": c.rating,
                "note": c.note,
            }
            for c in self.cells
        ]
        data["scores"] = {
            d: self.scores(d) for d in ("x", "y", "z") if self.plan.shown(d) is not None
        }
        return data

    # ------------------------------------------------------------------ re-opening

    @classmethod
    def reopen_left(
        cls,
        plan: GridPlan,
        client: ClientLike,
        replan: Callable[[int], GridPlan] | None = None,
    ) -> GridRun | None:
        """The grid of this plan that a kernel which ended left unfinished (killed
        mid-grid), re-opened as :meth:`load` does, or None: the same gateway, endpoint(s)
        and plan digest; a plan whose seed was drawn matches one stored with its own
        drawn seed when ``replan(seed)`` (the same call with that seed) has its digest.
        Its :attr:`left_note` says so (docs/decisions.md#grid-left-unfinished)."""
        store = store_for(client, GridStore)
        for record in store.left_unfinished(client.gateway_name, plan.endpoint):
            same = record.digest == plan.digest
            seed = record.description.get("seed")
            if not same and replan is not None and plan.seed is not None and seed is not None:
                try:
                    same = replan(int(seed)).digest == record.digest
                except (PayloadError, TypeError, ValueError):
                    same = False
            if not same:
                continue
            run = cls.load(record.id, client)
            # counted once loaded: a cell the killed kernel reserved whose create never
            # left (no intent in the ledger) is given back there, unsent
            sent = sum(not cell.unsent for cell in run.cells)
            run.left_note = (
                f"re-opened grid {record.id} left unfinished by a kernel that ended: {sent} "
                f"of {record.rows} were sent (none is created again)"
            )
            return run
        return None

    @classmethod
    def load(cls, grid_id: str, client: ClientLike) -> GridRun:
        """Re-open a stored grid: outputs from the ledger's local files, unfinished
        cells re-attached, nothing sent. Unknown id: KeyError with the nearest ids."""

        store = store_for(client, GridStore)
        record = store.require(grid_id)
        plan = GridPlan.restore(record.description, [c.payload for c in record.cells])
        run = cls(plan, client, grid_id=record.id, store=store)
        run.created_at = record.created_at
        for cell, stored in zip(run.cells, record.cells, strict=True):
            cell.rating, cell.note = stored.stars, stored.note
        run.restore()
        run.reopened()
        return run


def list_grids(client: ClientLike | None = None) -> list[GridRecord]:
    """``gw.grids()``: the grids (and sweeps) kept for the client's gateway (default: the
    latest client), newest first, from the ledger's file; ``load_grid(record.id)``
    re-opens one."""
    chosen = client if client is not None else default_client()
    return store_for(chosen, GridStore).grids(chosen.gateway_name)


def whole_number(value: object) -> int | None:
    """An integer of any kind (``operator.index``: int, NumPy's), never a bool; None
    for anything else."""
    if isinstance(value, bool):
        return None
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        return None


def status_of(cell: GridCell) -> str:
    """A short status word of a cell (plain text, for exports)."""
    if cell.elsewhere:
        return "being sent in another kernel"
    if cell.error is not None:
        # the words create_failure() began it with: what the failed create means
        return "outcome unknown" if cell.in_doubt else "not created"
    if cell.unsent:
        return "not sent (paused)" if cell.held else "not sent"
    if cell.forgotten:
        return "outcome unknown"
    if cell.lost:
        return "contact lost"
    if cell.row.state == DONE:
        return "done"
    if cell.failed:  # the batch's own words: cancelled (by a person), timed out, failed
        return cell.row.state
    status = cell.job.last_status if cell.job is not None else None
    return status.status if status is not None and not is_terminal(status.status) else "running"
