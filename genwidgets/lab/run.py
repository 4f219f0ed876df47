"""A grid at work: its cells, their jobs, ratings, and the store that keeps them.

:class:`GridRun` is the plain-Python half of ``gw.grid``: it sends each cell once,
records the grid and every request id as they arrive, keeps ratings, and re-opens a
stored grid without sending anything: docs/decisions.md#grid-run.
"""

from __future__ import annotations

import os
import secrets
import threading
import time
import warnings
from typing import TYPE_CHECKING, Any

from .._client import create_failure, lost_contact
from .._config import shown_path
from .._workers import RUNS
from ..errors import LedgerError, LedgerWarning, Unreachable
from ..jobs.fanout import valid_concurrency
from ..jobs.ledger import scrub_payload
from ..protocol.records import Output, is_terminal
from .axes import Axis
from .batch_send import CHUNK_ROUNDS, send_chunk
from .breaker import Pausable
from .cost import billed_words
from .plan import AXES, GridPlan, PlannedCell
from .resume import followed, ledger_verdicts
from .store import GridRecord, GridStore, restore_plan, store_for

if TYPE_CHECKING:
    from .._protocols import ClientLike, JobLike

__all__ = [
    "CONCURRENCY",
    "GridCell",
    "GridRun",
    "list_grids",
    "new_grid_id",
]

CONCURRENCY = 4


def new_grid_id() -> str:
    """A stable, sortable, readable id: ``g-YYYYMMDD-HHMMSS-xxxx``."""
    return time.strftime("g-%Y%m%d-%H%M%S-", time.gmtime()) + secrets.token_hex(2)


class GridCell:
    """One cell: axis values (as displayed), payload, job, rating and note."""

    def __init__(self, run: GridRun, planned: PlannedCell) -> None:
        self._run = run
        self.planned = planned
        self.index = planned.index
        self.payload = planned.payload
        self.job: JobLike | None = None
        self.request_id: str | None = None
        self.error: str | None = None  # a create that failed, as text (stored)
        self.exception: Exception | None = None  # ... and as raised (this session only)
        self.rating = 0
        self.note: str | None = None

    @property
    def endpoint(self) -> str:
        """Where this cell is sent (an endpoint axis sends each cell to its own)."""
        return self.planned.endpoint or self._run.endpoint

    @property
    def kind(self) -> str:
        """The kind of the cell's endpoint: image, video, speech, ..."""
        return self.planned.kind

    @property
    def billed(self) -> int:
        """Generations this cell bills."""
        return self.planned.billed

    @property
    def billed_words(self) -> str:
        """What the cell bills in its endpoint's unit: ``1 prompt (4 images)``, ``4 images``."""
        return billed_words(self.endpoint, self.billed)

    @property
    def dropped(self) -> tuple[str, ...]:
        """Payload fields the cell's endpoint has no field for (not sent)."""
        return self.planned.dropped

    @property
    def plan_note(self) -> str | None:
        """The fields the cell's endpoint has no place for (left out), if any."""
        return self.planned.plan_note

    @property
    def failed(self) -> bool:
        """Terminal without a usable result (a failed create, an error, a cancel); a
        task contact was lost with (:attr:`lost`) is not failed."""
        if self.error is not None:
            return True
        result = self.job.last_result if self.job is not None else None
        return self.done and not self.lost and (result is None or not result.ok)

    @property
    def trouble(self) -> str | None:
        """What went wrong, its meaning first: a create's own words ("not created: ...",
        "outcome unknown: ...") or "failed: " and the task's error; None when nothing did."""
        result = self.job.last_result if self.job is not None else None
        if self.error is None and result is not None and not result.ok:
            return f"failed: {result.error or result.status}"
        return self.error

    @property
    def lost(self) -> bool:
        """Its following gave up on faults of contact: the task may still run or be
        done, and :meth:`GridRun.submit` follows it again (no create)."""
        return self.job is not None and self.job.done() and lost_contact(self.job)

    @property
    def unsent(self) -> bool:
        """No create of it has left: no job, no failed create."""
        return self.job is None and self.error is None

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
        """Nothing more will happen to this cell (finished, failed, not created, or its
        create's outcome unknown: never sent again)."""
        if self.error is not None:
            return True
        return self.job is not None and self.job.done()

    def __repr__(self) -> str:
        values = ", ".join(f"{d}={self.value(d)!r}" for d in AXES if self._run.plan.shown(d))
        state = self.request_id or self.error or "not sent"
        return f"<GridCell {values} {state}{' ' + '*' * self.rating if self.rating else ''}>"


class GridRun(Pausable):
    """The cells of a planned grid, sent at most once, and what was judged of them."""

    def __init__(
        self,
        plan: GridPlan,
        client: ClientLike,
        *,
        grid_id: str | None = None,
        store: GridStore | None = None,
        concurrency: int = CONCURRENCY,
    ) -> None:
        super().__init__()
        self.plan = plan
        self.client = client
        self.concurrency = valid_concurrency(concurrency)
        self.id = grid_id or new_grid_id()
        self.store = store if store is not None else store_for(client)
        self.cells = [GridCell(self, c) for c in plan.cells]
        #: when the grid was planned (a re-opened one: when it was stored)
        self.created_at = time.time()
        self._stored = False
        self._sent = threading.Event()
        self.store.watch(self.id, self.refresh_ratings)

    @property
    def endpoint(self) -> str:
        return self.plan.endpoint

    @property
    def sent(self) -> bool:
        """True once every create has answered (or failed)."""
        return self._sent.is_set()

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
        with self.lock:
            self.plan = self.plan.swapped(a, b)
        self.changed()

    def axis(self, direction: str) -> Axis | None:
        return self.plan.shown(direction)

    # ------------------------------------------------------------------ sending

    def _store_grid(self) -> None:
        """Record the grid once (a second save changes nothing: two at once are fine)."""
        if not self._stored:
            self.store.save_grid(
                self.id,
                gateway=self.client.gateway_name,
                endpoint=self.endpoint,
                description=self.plan.describe(),
                payloads=[c.payload for c in self.cells],
            )
            self._stored = True

    def submit(self, *, wait: bool = True) -> GridRun:
        """Send every cell once: a second call follows again the cells contact was lost
        with, sends only the cells that wait (after a pause, an interrupt, or a grid
        re-opened with cells never sent) and does nothing more; ``wait`` returns when
        every create has answered (or the breaker paused the grid), else they go from a
        background thread."""
        lost = [(c, str(c.request_id)) for c in self.cells if c.lost]
        if lost:  # followed again (off the lock: this asks the engine), no create
            self._follow(lost)
            self.changed()
        if not self._begin(
            again=lambda: self.sent and any(c.unsent for c in self.cells),
            record=self._store_grid,
            clear=self._sent,
        ):
            return self
        self.changed()
        if wait:
            self._send_all()
        else:
            RUNS.submit(self._send_all)
        return self

    def _send_all(self) -> None:
        """Every cell not sent yet through the batch's chunk of creates, ``concurrency``
        at a time, a chunk as a batch sends (the breaker is heard between chunks)."""
        try:
            waiting = [c for c in self.cells if c.unsent]
            size = CHUNK_ROUNDS * self.concurrency
            for start in range(0, len(waiting), size):
                if self.stop.is_set():
                    break
                chunk = waiting[start : start + size]
                send_chunk(
                    self.client,
                    chunk,
                    tags=[self.tag(cell) for cell in chunk],
                    concurrency=self.concurrency,
                    hold=self.stop.is_set,
                    settle=self._sent_one,
                    unanswered=self._settle_lost,
                )
        finally:
            self._sent.set()
            self.changed()

    def tag(self, cell: GridCell) -> str:
        """What a cell's create is for, written with its intent in the ledger: a grid
        re-opened finds the cell's task by it when its store missed the request id."""
        return f"grid {self.id} cell {cell.index}"

    def _sent_one(self, cell: GridCell, outcome: JobLike | Exception) -> None:
        if isinstance(outcome, Unreachable) and self.stop.is_set():
            self.changed()  # held back by the pause: nothing sent, the cell waits
            return
        if isinstance(outcome, Exception):
            cell.exception = outcome
            cell.error = create_failure(outcome)
        else:
            self._attach(cell, outcome)
        why = self.breaker.saw(outcome)
        if why is not None and self.paused is None:
            waiting = sum(1 for c in self.cells if c.unsent)
            self.pause(
                f"{why}; {waiting} cell(s) not sent wait for grid.submit() (the Submit button)"
            )
        self._keep(cell)

    def _keep(self, cell: GridCell) -> None:
        """A cell's request id or failed create into the grid store (the task itself is
        in the ledger: a store that cannot write warns, and the grid goes on)."""
        try:
            self.store.set_request(self.id, cell.index, cell.request_id, cell.error)
        except LedgerError as exc:
            warnings.warn(
                f"grid {self.id}: cell {cell.index} ({cell.request_id or cell.error}) was not "
                f"written to the grid store ({exc}); the task is in client.history()",
                LedgerWarning,
                stacklevel=2,
            )
        self.changed()

    def _settle_lost(self, cells: list[GridCell]) -> None:
        """Cells whose create's answer was not seen (an interrupt; a store that missed
        it), as :func:`~.resume.ledger_verdicts` says: followed, left waiting for
        :meth:`submit`, or "outcome unknown" (never sent again)."""
        verdicts = ledger_verdicts(
            self.client,
            {self.tag(c): c.index for c in cells},
            dict.fromkeys((c.index for c in cells), self.created_at),
        )
        attach: list[tuple[GridCell, str]] = []
        for cell in cells:
            verdict = verdicts[cell.index]
            if verdict.kind == "follow":
                attach.append((cell, str(verdict.request_id)))
            elif verdict.kind == "unknown":
                cell.error = verdict.why
        self._follow(attach)
        for cell in cells:
            if not cell.unsent:
                self._keep(cell)

    def _attach(self, cell: GridCell, job: JobLike) -> None:
        cell.job, cell.request_id = job, str(job.request_id)
        job.add_update_callback(lambda _job: self.changed())
        job.add_done_callback(lambda _job: self.changed())

    def _follow(self, tasks: list[tuple[GridCell, str]]) -> None:
        """Attach each cell to its existing task (cell, request id): never a create."""
        jobs = followed(self.client, [(cell.endpoint, rid) for cell, rid in tasks])
        for (cell, _), job in zip(tasks, jobs, strict=True):
            self._attach(cell, job)

    def wait(self, timeout: float | None = None) -> GridRun:
        """Block until every sent cell is terminal; ``TaskTimeout`` (a TimeoutError)
        when ``timeout`` seconds pass first. Failed cells do not raise."""
        deadline = None if timeout is None else time.monotonic() + timeout
        if not self._started:
            raise RuntimeError(
                f"grid {self.id} was not sent (it needs confirmation): call grid.submit() first"
            )
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        if not self._sent.wait(remaining):
            raise TimeoutError(f"grid {self.id}: the creates did not all answer in {timeout} s")
        for cell in self.cells:
            if cell.job is None:
                continue
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                cell.job.result(timeout=remaining)
            except TimeoutError:
                raise
            except Exception:  # a failed task is shown in its cell; the grid goes on
                continue
        return self

    def cancel_all(self) -> int:
        """Ask the gateway to cancel every unfinished cell; returns how many."""
        pending = [c.job for c in self.cells if c.job is not None and not c.job.done()]
        for job in pending:
            job.request_cancel()
        self.changed()
        return len(pending)

    # ------------------------------------------------------------------ progress

    def counts(self) -> tuple[int, int, int]:
        """(done, failed, total): done counts terminal cells, failed among them."""
        done = sum(1 for c in self.cells if c.done)
        failed = sum(1 for c in self.cells if c.failed)
        return done, failed, len(self.cells)

    def to_go_on(self) -> tuple[int, int]:
        """(cells contact was lost with, cells never sent that no pause holds): what
        :meth:`submit` (a view's Go on) takes up again once the grid has sent."""
        lost = sum(1 for c in self.cells if c.lost)
        waiting = sum(1 for c in self.cells if c.unsent) if self.sent and self.paused is None else 0
        return lost, waiting

    def expected_finish(self) -> float | None:
        """The latest expected finish (seconds from now) of unfinished cells, when known."""
        found = [
            job.expected_finish for c in self.cells if (job := c.job) is not None and not job.done()
        ]
        known = [f for f in found if f is not None]
        return max(known) if known else None

    # ------------------------------------------------------------------ judging

    def rate(
        self, cell: GridCell | int, stars: int | None = None, note: str | None = None
    ) -> GridCell:
        """Set 1-5 stars (0 clears them) and/or a note ("" clears it); a field left None
        keeps what is stored, so stars and a note given apart (a browser's star click
        and its note field) never undo each other. Persisted in the grid store."""
        target = self.cells[cell] if isinstance(cell, int) else cell
        if target not in self.cells:
            raise ValueError("that cell is not one of this grid's cells")
        if stars is not None and (
            isinstance(stars, bool) or not isinstance(stars, int) or not 0 <= stars <= 5
        ):
            raise ValueError(f"stars must be a whole number 1-5 (0 clears), not {stars!r}")
        if note is not None and not isinstance(note, str):
            raise ValueError(f'a note is a string ("" clears it), not {type(note).__name__}')
        self._store_grid()
        target.rating, target.note = self.store.rate(self.id, target.index, stars, note)
        self.changed()
        return target

    def refresh_ratings(self) -> bool:
        """Read this grid's ratings back from the store (another view or kernel may
        have rated it); True when something changed."""
        stored = self.store.ratings(self.id)
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
        its shown path), request id, error and rating (exports; never the key)."""

        data = {"id": self.id, **self.plan.describe()}
        data["base_payload"] = scrub_payload(_paths_shown(self.plan.base_payload))
        data["per_endpoint"] = scrub_payload(_paths_shown(self.plan.per_endpoint))
        data["cells"] = [
            {
                "index": c.index,
                "endpoint": c.endpoint,
                "kind": c.kind,
                "billed": c.billed,
                "plan_note": c.plan_note,
                "x": c.x,
                "y": c.y,
                "z": c.z,
                "payload": scrub_payload(_paths_shown(c.payload)),
                "request_id": c.request_id,
                "error": c.error,
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
    def load(cls, grid_id: str, client: ClientLike) -> GridRun:
        """Re-open a stored grid: outputs from the ledger's local files, unfinished
        cells re-attached, nothing sent. Unknown id: KeyError with the nearest ids."""

        store = store_for(client)
        record = store.require(grid_id)
        plan = restore_plan(record.description, [c.payload for c in record.cells])
        run = cls(plan, client, grid_id=record.id, store=store)
        run.created_at = record.created_at
        run._started = run._stored = True
        run._sent.set()
        attach: list[tuple[GridCell, str]] = []
        for cell, stored in zip(run.cells, record.cells, strict=True):
            cell.rating, cell.note = stored.stars, stored.note
            cell.error = stored.error
            if stored.request_id:
                attach.append((cell, stored.request_id))
        run._follow(attach)
        lost = [c for c in run.cells if c.unsent]  # the store missed them: the ledger says
        if lost and client.ledger is not None:  # (a session's store in memory misses none)
            run._settle_lost(lost)
        return run


def list_grids(client: ClientLike) -> list[GridRecord]:
    """The grids stored for this client's gateway, newest first."""
    return store_for(client).grids(client.gateway_name)


def _paths_shown(value: Any) -> Any:
    """``value`` with each local path in it (a ``pathlib.Path`` payload value) as
    :func:`~genwidgets._config.shown_path` writes it: exports name no absolute path."""
    if isinstance(value, os.PathLike):
        return shown_path(value)
    if isinstance(value, dict):
        return {k: _paths_shown(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_paths_shown(v) for v in value]
    return value


def status_of(cell: GridCell) -> str:
    """A short status word of a cell (plain text, for exports)."""
    if cell.error is not None:
        # the words create_failure() began it with: what the failed create means
        return "outcome unknown" if cell.error.startswith("outcome unknown") else "not created"
    if cell.job is None:
        return "not sent (paused)" if cell.held else "not sent"
    if cell.lost:
        return "contact lost"
    result = cell.job.last_result
    if result is not None:
        return "done" if result.ok else "failed"
    status = cell.job.last_status
    return status.status if status is not None and not is_terminal(status.status) else "running"
