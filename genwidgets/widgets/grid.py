"""``gw.grid``: the prompt lab's X/Y/Z grid as a widget (anywidget).

The plan, the sending, the ratings and the store are plain Python in
:mod:`genwidgets.lab`; this module draws them with ``widgets/static/grid.js`` and
``grid.css``. Displayed, a grid is a view's two faces (:mod:`.faces`): the live grid,
which stays live (rate, note, recall, enlarge) for as long as the kernel, and its
contact sheet (:mod:`.grid_sheet`), rewritten as it changes. Its traits, messages and
choices: docs/decisions.md#grid-view.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ipywidgets
import traitlets

from .._client import default_client
from .._formats import short
from ..lab.code import curl_code
from ..lab.cost import CONFIRM_ABOVE, billed_unit, needs_confirmation, not_sent_line
from ..lab.export import margins, save_png
from ..lab.plan import AXES, GridPlan, plan_grid
from ..lab.run import GridCell, GridRun, list_grids, status_of
from ..protocol.records import Output
from .faces import BACKGROUND, Asked, CommandView, answers, in_kernel, static_module
from .form import form, python_code
from .grid_sheet import (
    CELL_OUTPUTS,
    VideoEmbed,
    contact_sheet,
    in_doubt_words,
    left_out,
    save_html,
    state_words,
)
from .lasting import picture_src
from .render import source_of
from .task import job_look
from .ticker import MIN_INTERVAL, TICKER, Throttle

if TYPE_CHECKING:
    from .._protocols import ClientLike

__all__ = ["Grid", "grid", "grids", "load_grid"]

SWAPS = (("x", "y"), ("y", "z"), ("x", "z"))


THUMB_SIDE = 256
#: the write interval per cell of a grid (a 100-cell grid writes once a second)
WRITE_SECONDS_PER_CELL = 0.01
#: how often a displayed, finished grid reads its ratings again from the store (another
#: kernel may rate it; one indexed query): docs/decisions.md#grid-ratings
RATINGS_EVERY = 5.0
_PICTURED = ("image", "video")


def _thumb(output: Output, *, network: bool = False) -> str | None:
    """A data URL of the output's thumbnail, made in the kernel from the bytes at hand
    (:func:`~.lasting.picture_src`) and, with ``network``, from an image's downloaded
    bytes. A write never passes ``network``: see :meth:`Grid._fetch_thumbs`."""
    if not (network and _needs_network(output)):
        return picture_src(output, THUMB_SIDE)
    try:
        return picture_src(output, THUMB_SIDE, output.read())
    except Exception:  # a dead URL: the cell says no picture
        return None


def _drawn_thumbs(outputs: list[Output], *, network: bool = False) -> list[str]:
    """The thumbnails a cell draws: its first output's, as one-item list (an imgM cell
    shows its first of four images and a "4" badge; the lightbox asks for them all)."""
    first = outputs[:1]
    return [_thumb(o, network=network) or "" if o.kind in _PICTURED else "" for o in first]


def _needs_network(output: Output) -> bool:
    """Whether an image's bytes can only come from its URL (no copy, nothing inline)."""
    has_copy = output.path is not None and output.path.exists()
    in_hand = output.inline() is not None or (output.url or "").startswith("data:")
    return output.kind == "image" and not has_copy and not in_hand and bool(output.url)


def _output_record(output: Output, *, full: bool = False) -> dict[str, Any]:
    """What the browser gets of one output. In a cell an image or video is only
    its kind (the thumbnail travels apart, once); the full file (``src``) goes
    when the lightbox asks."""
    if output.kind in _PICTURED and not full:
        return {"kind": output.kind, "src": ""}
    source = source_of(output)
    record: dict[str, Any] = {"kind": output.kind, "src": source.href or ""}
    if output.kind in ("json", "text") and source.data is not None:
        record["text"] = short(source.data.decode("utf-8", "replace"), 2000)
    return record


class Grid(CommandView):
    """A grid of tasks that vary along x (columns), y (rows) and z (tabs); see
    the module docstring and ``gw.grid``."""

    _esm = static_module("faces.js", "ask.js", "grid.js")
    _css = static_module("grid.css")
    head = traitlets.Dict().tag(sync=True)
    cell_states: traitlets.List[dict[str, Any]] = traitlets.List().tag(sync=True)

    def __init__(self, run: GridRun, *, needs_confirmation: bool = False) -> None:
        super().__init__()
        self.run = run
        self.needs_confirmation = needs_confirmation
        self._outputs: dict[int, list[dict[str, Any]]] = {}
        self._thumbs: dict[int, list[str]] = {}
        self._unsent: dict[int, list[str]] = {}
        #: a front-end view said hello: thumbnails go to it as messages, never as a
        #: trait, so no saved widget state holds them (docs/decisions.md#grid-thumbs)
        self._viewed = False
        #: the cell records as last written: a view that said hello gets only the
        #: records that changed, as messages (see :meth:`_send_cells`)
        self._states: list[dict[str, Any]] | None = None
        #: the records as last sent whole (what every page's model has at least)
        self._whole: list[dict[str, Any]] = []
        self._quiet_cells = False
        #: where the recall buttons open forms (shown under the grid in Jupyter)
        self.recall_area: ipywidgets.Output | None = None
        # a write sends the head and the changed cell records: a big grid writes
        # less often, so its live updates cost about the same bytes per second
        self._throttle = Throttle(
            self._write, interval=max(MIN_INTERVAL, len(run.cells) * WRITE_SECONDS_PER_CELL)
        )
        self._live = False
        #: when a displayed, finished grid next reads its ratings (:meth:`tick`), and
        #: whether a read is under way (one at a time, off the ticker's thread)
        self._ratings_due = 0.0
        self._reading = False
        self.add_class("gw-grid")
        run.listeners.append(self._on_change)
        self._throttle.request(force=True)

    # ------------------------------------------------------------------ the API

    id = property(lambda self: self.run.id)
    endpoint = property(lambda self: self.run.endpoint)

    @property
    def thumbs(self) -> dict[str, list[str]]:
        """Cell index -> the thumbnail (a data URL; "" for none) of its first output,
        as made in the kernel so far; views get them as messages."""
        with self._throttle.lock:
            return {str(i): list(urls) for i, urls in self._thumbs.items()}

    #: what the grid sends: cells, axes, the locked seed, counts and billing
    plan = property(lambda self: self.run.plan)
    #: (len(z) or 1, len(y) or 1, len(x)) as displayed
    shape = property(lambda self: self.run.plan.shape)
    #: every cell (GridCell: .x .y .z .payload .job .rating .note), in sending order
    cells = property(lambda self: self.run.cells)

    def cell(self, *, x: Any = None, y: Any = None, z: Any = None) -> GridCell:
        return self.run.cell(x=x, y=y, z=z)

    def submit(self, *, wait: bool = True) -> Grid:
        """Send the grid (the Submit button's action); a second call (Go on) follows
        again the cells contact was lost with and sends the cells that wait (after a
        pause or an interrupt), each once."""
        self.run.submit(wait=wait)
        return self

    def wait(self, timeout: float | None = None) -> Grid:
        """Block until every cell is terminal (TimeoutError after ``timeout`` s)."""
        self.run.wait(timeout)
        self._throttle.request(force=True)
        return self

    def rate(
        self, cell: GridCell | int, stars: int | None = None, note: str | None = None
    ) -> GridCell:
        """1-5 stars (0 clears) and/or a note ("" clears) for a cell; a field left None
        keeps what the cell has. Persisted."""
        rated = self.run.rate(cell, stars, note)
        self._throttle.request(force=True)
        self._refresh_face()  # a sheet shown already gets the new stars
        return rated

    def scores(self, direction: str = "x") -> list[dict[str, Any]]:
        """Per value of the ``direction`` axis ("x", "y" or "z"): mean stars, rated,
        failed and cells, best first (also drawn as the grid's margins)."""
        return self._rated().scores(direction)

    def swap(self, a: str, b: str) -> Grid:
        """Re-lay the grid (e.g. ``swap("x", "y")``); no new tasks."""
        self.run.swap(a, b)
        self._throttle.request(force=True)
        self._refresh_face()
        return self

    def retry_failed(self, *, wait: bool = True) -> int:
        """Send the failed cells again: those the gateway failed or whose create made
        nothing (a gateway away when the grid was sent), each a new create, billed; never
        a cell whose outcome is unknown. Returns how many."""
        sent = self.run.retry_failed()
        if wait and sent:
            self.run.wait(None)
        self._throttle.request(force=True)
        return sent

    def cancel_all(self) -> int:
        """Cancel every unfinished task of the grid; returns how many were asked."""
        return self.run.cancel()

    def form(self, cell: GridCell | int) -> Any:
        """The endpoint's form pre-filled with that cell's payload (tweak, submit);
        ``cell`` is a cell or its number, 0 to n-1 (never counted from the end)."""
        target = cell if isinstance(cell, GridCell) else self.run.cells[self._number(cell)]
        return form(self.endpoint, client=self.run.client, **target.payload)

    def save_png(self, path: str | Path) -> Path:
        return save_png(self._rated(), path)

    def save_html(self, path: str | Path, *, video: VideoEmbed = "preview") -> Path:
        """One page that opens offline; each video as ``video`` (see :func:`save_html`)."""
        return save_html(self._rated(), path, video=video)

    def describe(self) -> dict[str, Any]:
        return self._rated().describe()

    def _rated(self) -> GridRun:
        """The run with the ratings made meanwhile in another view or kernel: what is
        exported or scored says what the store says."""
        if self.run.refresh_ratings():
            self._throttle.request(force=True)
        return self.run

    def __repr__(self) -> str:
        z, y, x = self.shape
        return f"<Grid {self.id} {self.endpoint}: {x}×{y}×{z}, {state_words(self.run)}>"

    # ------------------------------------------------------------------ display

    def _ipython_display_(self) -> None:
        """Both faces, the area where recalled forms open under the live grid:
        docs/decisions.md#grid-view."""
        if not in_kernel():
            print(repr(self))
            return
        self._rated()
        if self.recall_area is None:
            self.recall_area = ipywidgets.Output()
        live = ipywidgets.VBox([self, self.recall_area])
        self._show_faces(self._sheet, interval=max(1.0, 2 * self._throttle.interval), live=live)
        TICKER.add(self)  # its ratings are read again while it is shown (:meth:`tick`)

    def _sheet(self, media: str) -> dict[str, str]:
        """The lasting face; a finished grid's with the ratings the store holds now
        (another kernel may have rated it), read once per face written."""
        if self._finished():
            self.run.refresh_ratings()
        return contact_sheet(self.run, media, waiting=self.needs_confirmation)

    # ------------------------------------------------------------------ the page's asks
    # anywidget commands (asked by ``static/ask.js``), each answered with
    # {"ok": true, ...} or {"error": ...} the page shows (docs/decisions.md#view-commands)

    def _number(self, index: Any, name: str = "cell") -> int:
        """``index`` if it is a cell number, 0 to n-1; else an IndexError saying what
        is allowed (-1 is no cell: a typo must not take the last one)."""
        total = len(self.run.cells)
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < total:
            raise IndexError(f"{name} must be a cell number 0-{total - 1}, not {index!r}")
        return index

    def _cell_index(self, msg: Mapping[str, Any]) -> int:
        try:
            return self._number(msg.get("index"), "index")
        except IndexError as exc:
            raise Asked(str(exc)) from None

    @answers
    def _ask_rate(self, msg: dict[str, Any]) -> dict[str, Any]:
        """A star's click sends ``stars`` alone, the note's ``change`` ``note`` alone
        (null or "" clears it); the store merges them per field."""
        note = (msg["note"] or "") if "note" in msg else None
        cell = self.rate(self._cell_index(msg), msg.get("stars"), note)
        return {"stars": cell.rating, "note": cell.note}

    @answers
    def _ask_submit(self, _msg: dict[str, Any]) -> None:
        self.submit(wait=False)

    @answers
    def _ask_cancel(self, _msg: dict[str, Any]) -> dict[str, Any]:
        return {"asked": self.cancel_all()}

    @answers
    def _ask_swap(self, msg: dict[str, Any]) -> None:
        self.swap(str(msg.get("a")), str(msg.get("b")))  # refused by name unless two axes

    @answers
    def _ask_recall(self, msg: dict[str, Any]) -> None:
        recalled = self.form(self._cell_index(msg))
        if self.recall_area is None:
            self.recall_area = ipywidgets.Output()
        # the form's widget alone: the recall area is itself live only (and a
        # display there would not reach the cell's outputs)
        data = recalled._repr_mimebundle_()
        entry = {"output_type": "display_data", "data": data, "metadata": {}}
        self.recall_area.outputs = (entry,)

    @answers
    def _ask_full(self, msg: dict[str, Any]) -> dict[str, Any]:
        """The lightbox: a cell's full outputs (the first :data:`CELL_OUTPUTS`, as a
        saved page; ``more`` says how many others) and the request's code."""
        cell = self.run.cells[self._cell_index(msg)]
        outputs = [_output_record(o, full=True) for o in cell.outputs[:CELL_OUTPUTS]]
        code = {
            "python": python_code(cell.endpoint, cell.payload),
            "curl": curl_code(cell.endpoint, cell.payload),
        }
        return {"outputs": outputs, "more": left_out(cell), "code": code}

    @answers
    def _ask_thumbs(self, msg: dict[str, Any]) -> dict[str, Any]:
        """A new view's hello: the thumbnails so far but those its page ``have``, and
        the cell records written since the last whole send; later ones come as
        messages to every view."""
        self._viewed = True
        self._unsent = {}  # first: each one made from now on is sent again, not lost
        made = {str(i): urls for i, urls in self._thumbs.items()}
        known = {str(i) for i in msg.get("have") or ()}  # another view's, this page
        answer: dict[str, Any] = {"thumbs": {i: u for i, u in made.items() if i not in known}}
        if self._states is not None and self._states != self._whole:
            answer["cells"] = self._states  # written since the last whole send
        return answer

    # ------------------------------------------------------------------ writing

    def _on_change(self) -> None:
        finished = self._finished()
        if not self._live and self.run.started and not finished:
            self._live = True
            TICKER.add(self)
        self._throttle.request()
        if finished:  # a rating from another view or kernel; not each poll
            self._refresh_face()

    def _finished(self) -> bool:
        """Every cell has ended: from then on its sheet follows each change (not while
        it runs: docs/decisions.md#grid-view)."""
        done, _failed, total = self.run.tally()
        return bool(self.run.started and self.run.sent and done == total)

    def tick(self) -> None:
        """While it runs: a write (its elapsed time). Once finished and shown: its ratings
        read again every :data:`RATINGS_EVERY` seconds, off the ticker's thread (a
        rating made in another kernel reaches both faces); no longer shown: off the ticker."""
        if not self._finished():
            self._throttle.request()
            return
        if self._faces is None or not self._faces.shown:
            if not self._live:
                TICKER.remove(self)
            return
        now = time.monotonic()
        if self._reading or now < self._ratings_due:
            return
        self._ratings_due, self._reading = now + RATINGS_EVERY, True

        def read() -> None:
            try:
                self._rated()
            finally:
                self._reading = False

        BACKGROUND.submit(read)

    def close(self) -> None:
        TICKER.remove(self)
        if self._on_change in self.run.listeners:
            self.run.listeners.remove(self._on_change)
        super().close()

    def _axis_state(self, direction: str) -> dict[str, Any] | None:
        axis = self.run.plan.shown(direction)
        if axis is None:
            return None
        return {"label": axis.label, "values": [short(v, 60) for v in axis.shown_values]}

    def _cell_state(self, cell: GridCell) -> dict[str, Any]:
        t, r, c = cell.place
        job = cell.job
        category, status, error = "queued", "not sent", cell.error
        if cell.error is not None:
            category, status = "failed", status_of(cell)
        elif cell.forgotten:  # the gateway no longer knows it: it may have billed
            status, error = status_of(cell), cell.row.error
        elif cell.lost:  # followed again with backoff, or given up on: never failed
            category, status, error = "queued", "contact lost", cell.row.error
        elif job is not None:
            look = job_look(job)
            category, status = look.category, look.word
            error = error or look.error
        elif self.run.started:  # "sending" only while this run sends it
            status = "sending" if cell.unsent and self.run.sending else status_of(cell)
        outputs = self._outputs.get(cell.index)
        if outputs is None:
            # at most CELL_OUTPUTS, as the page and the lightbox: the state holds a record
            # per output, and a result may list thousands; `outputs_total` counts them all
            outputs = [_output_record(o) for o in cell.outputs[:CELL_OUTPUTS]]
            if cell.done:
                self._outputs[cell.index] = outputs
                made = _drawn_thumbs(cell.outputs)
                self._thumbs[cell.index] = self._unsent[cell.index] = made
                if any(_needs_network(o) for o in cell.outputs[:1]):
                    self._fetch_thumbs(cell)
        return {
            "index": cell.index,
            "t": t,
            "r": r,
            "c": c,
            "label": " · ".join(
                f"{a.label} = {short(cell.value(d), 40)}"
                for d in ("z", "y", "x")
                if (a := self.run.plan.shown(d)) is not None
            ),
            "category": category,
            "status": status,
            "error": error,
            "outputs": outputs,
            "outputs_total": len(cell.outputs),
            "request_id": cell.request_id,
            "payload": json.loads(json.dumps(cell.payload, default=str)),  # as the page gets it
            "endpoint": cell.endpoint,
            "kind": cell.kind,
            # "1 prompt (4 images)": read after "billed"
            "billed": billed_unit(cell.endpoint).amount(cell.billed),
            "plan_note": cell.plan_note,
            "stars": cell.rating,
            "note": cell.note,
        }

    def _fetch_thumbs(self, cell: GridCell) -> None:
        """Thumbnails only a download can make, made on a background worker that holds
        no lock, shown from the next write on: docs/decisions.md#no-waits-under-locks."""
        outputs = list(cell.outputs)

        def make() -> None:
            made = _drawn_thumbs(outputs, network=True)
            with self._throttle.lock:
                self._thumbs[cell.index] = self._unsent[cell.index] = made
            self._throttle.request()

        BACKGROUND.submit(make)

    def _margins(self) -> dict[str, list[dict[str, Any]]]:
        """Scores per displayed axis (x: a row under the columns, y: a column
        beside the rows), in the axis's own order (the exports draw the same)."""
        return {
            d: [{k: v for k, v in r.items() if k != "value"} for r in rows]
            for d, rows in margins(self.run).items()
        }

    def _send_cells(self, states: list[dict[str, Any]], *, whole: bool) -> None:
        """Keep ``cell_states`` current in the kernel; send it whole or the records that
        changed, as docs/decisions.md#grid-cell-patches says."""
        previous = self._states
        self._states = states
        loud = whole or previous is None or len(previous) != len(states)
        self._quiet_cells = True  # the trait is current in the kernel either way
        try:
            self.cell_states = states
        finally:
            self._quiet_cells = False
        if loud:
            self._whole = states
            self.send_state("cell_states")
        if loud or previous is None or not self._viewed:
            return
        changed = [new for new, old in zip(states, previous, strict=True) if new != old]
        if changed:
            self.send({"cells": changed})

    def send_state(self, key: Any = None) -> None:
        """As ipywidgets', but a quiet ``cell_states`` change stays in the kernel
        (see :meth:`_send_cells`)."""
        if getattr(self, "_quiet_cells", False):
            keys = {key} if isinstance(key, str) else set(key or ())
            if keys == {"cell_states"}:
                return
            if "cell_states" in keys:
                key = sorted(keys - {"cell_states"})
        super().send_state(key)

    def _write(self) -> None:
        run = self.run
        done, failed, total = run.tally()
        progress = f"{done} of {total} done" if run.started else "nothing sent yet"
        if failed:
            progress += f" ({failed} failed)"
        progress += in_doubt_words(run)
        if run.left_note is not None:  # why this grid was not planned anew
            progress = f"{run.left_note}. {progress}"
        lost, stuck = run.to_go_on()
        if lost:
            progress += f"; {lost} contact lost (Go on follows them again, no new create)"
        if stuck:
            progress += f"; {stuck} not sent (Go on sends them, each once)"
        if run.paused is not None:
            progress += f"; paused: {run.paused}"
        expected = run.expected_finish()
        finished = self._finished()
        present = {d for d in AXES if run.plan.shown(d) is not None}
        self.head = {
            "id": run.id,
            "endpoint": run.endpoint,
            "summary": run.plan.summary(),
            "simulated": bool(run.client.embedded),
            "tasks": run.plan.tasks,
            "needs_confirmation": self.needs_confirmation,
            "started": run.started,
            "paused": run.paused is not None,
            "resumable": bool(lost or stuck),
            "finished": finished,
            "progress": progress,
            "expected_finish_at": None if expected is None else time.time() + expected,
            **{d: self._axis_state(d) for d in AXES},
            "swaps": [[a, b] for a, b in SWAPS if a in present and b in present],
            "scores": self._margins(),
        }
        self._send_cells([self._cell_state(c) for c in run.cells], whole=finished and self._live)
        if self._unsent and self._viewed:  # else the hello carries them
            fresh, self._unsent = self._unsent, {}
            self.send({"thumbs": {str(i): urls for i, urls in fresh.items()}})
        if finished and self._live:
            self._live = False
            if self._faces is None or not self._faces.shown:  # else it reads ratings
                TICKER.remove(self)
            self._refresh_face(force=True)


def grid(
    endpoint: str,
    payload: Mapping[str, Any],
    x: Any = None,
    y: Any = None,
    z: Any = None,
    client: ClientLike | None = None,
    confirm_above: int = CONFIRM_ABOVE,
    per_endpoint: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    new: bool = False,
) -> Grid:
    """Plan, count, validate and (unless confirmation is needed) send an X/Y/Z grid.

    ``x``/``y``/``z`` are ``(field, values)`` axes (see :mod:`genwidgets.lab.axes`);
    with none given, an imgM prompt's permutation groups become the axes.
    ``("endpoint", [ids])`` sends each cell to its own endpoint, the payload
    mapped per endpoint (:mod:`genwidgets.lab.mapping`); ``per_endpoint={id:
    {...}}`` gives the fields one of them needs and the payload lacks.
    Nothing is sent when any cell fails validation (a PayloadError names the
    cell's axis values and the field), over 400 cells, or above
    ``confirm_above`` billed generations until ``grid.submit()``.
    The same grid left unfinished by a kernel that ended (killed mid-grid, then
    the cell run again) is re-opened, not paid again: its cells sent are
    followed, only those never sent are sent, and the view says so;
    ``new=True`` plans a new grid anyway (docs/decisions.md#grid-left-unfinished).
    """
    needs_confirmation(0, confirm_above)  # a bad value is refused before planning
    chosen = client if client is not None else default_client()

    def planned(seed: int | None = None) -> GridPlan:
        return plan_grid(
            endpoint, payload, x, y, z, seed=seed, prepare=chosen.prepare, per_endpoint=per_endpoint
        )

    plan = planned()
    run = None if new else GridRun.reopen_left(plan, chosen, planned)
    if run is None:
        run = GridRun(plan, chosen)
        waits = needs_confirmation(plan.billed_total, confirm_above)
        view = Grid(run, needs_confirmation=waits)
    else:
        unsent = [c for c in run.cells if c.unsent]
        waits = not unsent or needs_confirmation(sum(c.billed for c in unsent), confirm_above)
        then = "wait for .submit() (above confirm_above)" if waits else "are sent now"
        run.left_note = (
            f"{run.left_note}; "
            + (f"the {len(unsent)} never sent {then}; " if unsent else "")
            + "gw.grid(..., new=True) plans a new grid and pays for every cell"
        )
        print(run.left_note)
        view = Grid(run, needs_confirmation=not run.started)
        if waits and not all(c.done for c in run.cells):
            view._on_change()  # noqa: SLF001 - as load_grid: the view follows what runs
    if not waits:
        try:
            view.submit(wait=True)
        except KeyboardInterrupt as stopped:  # the view is not returned: say how to go on
            note = (
                f"grid {run.id} was interrupted while its cells were sent: "
                f"gw.load_grid({run.id!r}) re-opens it (the cells sent are followed) and "
                "its .submit() sends the cells that never left, each once; running this "
                "cell again plans a new grid and pays again for every cell"
            )
            if sys.version_info >= (3, 11):
                stopped.add_note(note)
            else:  # no notes on exceptions before 3.11
                print(note, file=sys.stderr)
            raise
    elif not in_kernel() and run.left_note is None:
        print(not_sent_line(plan.summary(), confirm_above, "call .submit() on the returned grid"))
    return view


#: ``gw.grids()``: the grids (and sweeps) kept, newest first (the lab's own listing)
grids = list_grids


def load_grid(grid_id: str, client: ClientLike | None = None) -> Grid:
    """Re-open a stored grid after a restart: outputs from the local files,
    unfinished cells re-attached, nothing re-sent (one never sent offers its Submit
    button, as when it was planned). An unknown id is a KeyError naming it and the
    nearest stored ids."""
    run = GridRun.load(grid_id, client if client is not None else default_client())
    view = Grid(run, needs_confirmation=not run.started)  # never sent: its Submit button
    if not all(c.done for c in run.cells):
        view._on_change()  # noqa: SLF001 - load_grid is Grid's own opener, in its module
    return view
