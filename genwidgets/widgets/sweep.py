"""``gw.sweep``: every combination of some varied fields, sent as a flat list of cards.

Planning is :func:`genwidgets.lab.sweep.plan_sweep`; sending and keeping are a
one-axis grid's (:class:`~genwidgets.lab.run.GridRun`); this module shows, as a view's
two faces (:mod:`.faces`): the live cards, and a contact sheet of the combinations
that a saved notebook keeps. Billed counts, confirmation, the returned :class:`Sweep`
and concurrency: docs/decisions.md#sweep.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import ipywidgets

from .._client import create_failure, default_client
from .._palette import PALETTE
from ..jobs.fanout import valid_concurrency
from ..lab.cost import CONFIRM_ABOVE, needs_confirmation, not_sent_line
from ..lab.run import GridRun
from ..lab.sweep import MAX_JOBS, SweepPlan, combination_label, plan_sweep
from . import markup
from ._style import MUTED_STYLE
from .board import GRID_LAYOUT
from .cards import JobCard
from .faces import TwoFaced, in_kernel
from .grid_sheet import contact_sheet

if TYPE_CHECKING:
    from .._protocols import ClientLike, JobLike

__all__ = ["Sweep", "SweepCell", "SweepView", "sweep"]


class SweepCell(ipywidgets.VBox):
    """One combination of a sweep: its label, then its job's card (or its error)."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.body = ipywidgets.HTML(markup.sweep_label(label, markup.div("not sent", MUTED_STYLE)))
        self.card: JobCard | None = None
        super().__init__(
            [self.body], layout=ipywidgets.Layout(border=f"1px solid {PALETTE['border']}")
        )

    def attach(self, job: JobLike) -> None:
        self.card = JobCard(job, label=self.label, outputs=True)
        self.children = [self.card]

    def fail(self, exc: BaseException) -> None:
        self.body.value = markup.sweep_label(self.label, markup.failure(create_failure(exc)))


class SweepView(ipywidgets.VBox):
    """The sweep's widget: what it sends and bills, the Submit button when a
    confirmation is needed, then a grid of cells labelled by the varied values."""

    def __init__(self, plan: SweepPlan, *, needs_confirmation: bool, simulated: bool) -> None:
        self.summary_html = ipywidgets.HTML(
            markup.box("gw-sweep-summary", plan.summary(), markup.simulated_badge(simulated))
        )
        self.submit_words = f"Submit {plan.tasks} task{'s' if plan.tasks != 1 else ''}"
        self.submit_button = ipywidgets.Button(
            description=self.submit_words,
            button_style="warning",
            tooltip="nothing is sent until you click",
            layout={"width": "auto", "display": "" if needs_confirmation else "none"},
            disabled=not needs_confirmation,
        )
        waiting = markup.span("waiting for confirmation: nothing sent yet", MUTED_STYLE)
        self.progress_html = ipywidgets.HTML(waiting if needs_confirmation else "")
        self.cells = [SweepCell(combination_label(values)) for values in plan.labels]
        self.grid = ipywidgets.GridBox(self.cells, layout=ipywidgets.Layout(**GRID_LAYOUT))
        buttons = ipywidgets.HBox([self.submit_button, self.progress_html])
        super().__init__([self.summary_html, buttons, self.grid])
        self.add_class("gw-sweep")


class Sweep(TwoFaced, list["JobLike"]):
    """The Jobs of a sweep, in combination order (see the module docstring).

    Sent, kept and re-opened as a one-axis grid (:meth:`SweepPlan.as_grid`): its
    :class:`GridRun` is ``.run`` and ``gw.load_grid(sweep.id)`` shows it again."""

    def __init__(
        self, plan: SweepPlan, client: ClientLike, *, concurrency: int, needs_confirmation: bool
    ) -> None:
        super().__init__()
        self.plan = plan
        self.endpoint = plan.endpoint
        self.payloads = plan.payloads
        self.labels = plan.labels
        self.client = client
        self.run = GridRun(plan.as_grid(), client, concurrency=concurrency)
        self.id = self.run.id
        self.concurrency = self.run.concurrency
        self.errors: dict[int, BaseException] = {}
        self.jobs_by_index: dict[int, JobLike] = {}
        self._lock = threading.Lock()
        self._submitted = threading.Event()
        simulated = bool(client.embedded)
        self.widget = SweepView(plan, needs_confirmation=needs_confirmation, simulated=simulated)
        self.widget.submit_button.on_click(lambda _b: self.submit(wait=False))
        self.needs_confirmation = needs_confirmation
        self.run.listeners.append(self._on_change)

    @property
    def submitted(self) -> bool:
        """True once every create has answered (or failed)."""
        return self._submitted.is_set()

    def wait_submitted(self, timeout: float | None = None) -> bool:
        return self._submitted.wait(timeout)

    def submit(self, *, wait: bool = True) -> Sweep:
        """Send the tasks (the button's action); a second call does nothing, but after
        the breaker paused the sweep it sends the cells that wait."""
        if self.run.started and self.run.paused is None:
            return self
        self._submitted.clear()
        button = self.widget.submit_button
        button.disabled = True
        button.description = "submitting"
        self._progress()
        try:
            self.run.submit(wait=wait)
        except Exception as exc:  # e.g. the grid store is locked: nothing was sent
            button.disabled = False
            button.description = self.widget.submit_words
            self.widget.progress_html.value = markup.failure(
                f"nothing sent: {type(exc).__name__}: {exc}", element="span"
            )
            raise
        return self

    def show(self) -> None:
        """Display both faces: the cards (live), then the contact sheet (outside a
        kernel, its repr)."""
        sheet = functools.partial(contact_sheet, self.run, waiting=self.needs_confirmation)
        self._show_faces(sheet, interval=max(1.0, 0.02 * len(self.run.cells)), live=self.widget)

    _ipython_display_ = show

    def _on_change(self) -> None:
        """A cell was sent or a job moved: the sheet, new cards and errors, then, once
        every create has answered, the list itself."""
        done, _failed, total = self.run.tally()
        if self.run.sent and done == total:
            self._refresh_face()  # once it has ended (a sheet of many cells is heavy)
        with self._lock:
            if self._submitted.is_set():
                return
            fresh = [c for c in self.run.cells if c.index not in self.jobs_by_index]
            for cell in fresh:
                if cell.job is not None:
                    self.jobs_by_index[cell.index] = cell.job
                    self.widget.cells[cell.index].attach(cell.job)
                elif cell.exception is not None and cell.index not in self.errors:
                    self.errors[cell.index] = cell.exception
                    self.widget.cells[cell.index].fail(cell.exception)
            finished = self.run.sent
            if finished:  # (after a pause, the jobs not listed yet)
                listed = {id(job) for job in self}
                fresh_jobs = [self.jobs_by_index[i] for i in sorted(self.jobs_by_index)]
                self.extend(job for job in fresh_jobs if id(job) not in listed)
                paused = self.run.paused is not None
                button = self.widget.submit_button
                button.description = "go on" if paused else "submitted"
                button.disabled = not paused
                if paused:
                    button.layout.display = ""
        self._progress()
        if finished:
            self._submitted.set()

    def _progress(self) -> None:
        done, failed = len(self.jobs_by_index), len(self.errors)
        text = f"created {done} of {self.plan.tasks}"
        if failed:
            text += f", {failed} failed"
        if self.run.paused is not None:
            text += f"; paused: {self.run.paused}"
        self.widget.progress_html.value = markup.span(text)

    def __repr__(self) -> str:
        state = f"{len(self)} submitted" if self.submitted else "not sent"
        if self.errors:
            state += f", {len(self.errors)} failed"
        return f"<Sweep {self.id} {self.endpoint}: {self.plan.tasks} tasks, {state}>"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


def sweep(
    endpoint: str,
    base_payload: Mapping[str, Any],
    vary: Mapping[str, Sequence[Any]],
    *,
    client: ClientLike | None = None,
    max_jobs: int = MAX_JOBS,
    concurrency: int = 4,
    confirm_above: int = CONFIRM_ABOVE,
    confirm: bool = False,
) -> Sweep:
    """Submit every combination of ``vary`` over ``base_payload``; see the module
    docstring for counting, confirmation and the return value."""
    valid_concurrency(concurrency)
    if isinstance(max_jobs, bool) or not isinstance(max_jobs, int) or max_jobs < 1:
        raise ValueError(f"max_jobs must be a whole number 1 or more, not {max_jobs!r}")
    needs_confirmation(0, confirm_above)  # a bad value is refused before planning
    chosen = client if client is not None else default_client()
    plan = plan_sweep(endpoint, base_payload, vary, max_jobs=max_jobs, prepare=chosen.prepare)
    waits = needs_confirmation(plan.billed_total, confirm_above) and not confirm
    result = Sweep(plan, chosen, concurrency=concurrency, needs_confirmation=waits)
    how = "call .submit() on the returned sweep or pass confirm=True"
    if in_kernel():
        result.show()
    else:
        print(not_sent_line(plan.summary(), confirm_above, how) if waits else plan.summary())
    if not waits:
        result.submit(wait=True)
    return result
