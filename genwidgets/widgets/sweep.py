"""``gw.sweep``: every combination of some varied fields, sent as a flat list of cards.

Planning (expansion, counting, billing, validation) is the grid's
(:func:`genwidgets.lab.plan.plan_sweep`); this module sends and shows. Billed counts,
confirmation, the returned :class:`Sweep` and concurrency: docs/decisions.md#sweep.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import ipywidgets

from ..lab.plan import SweepPlan, plan_sweep, short
from ..lab.run import default_client
from ._style import COLOURS, SIMULATED_BADGE, esc
from .board import GRID_LAYOUT
from .cards import JobCard
from .durable import in_kernel

if TYPE_CHECKING:
    from ..jobs.job import Job

__all__ = ["Sweep", "SweepCell", "SweepView", "sweep"]


def _label(values: Mapping[str, Any]) -> str:
    return " · ".join(f"{k}={short(v, 40)}" for k, v in values.items())


class SweepCell(ipywidgets.VBox):
    """One combination of a sweep: its label, then its job's card (or its error)."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.body = ipywidgets.HTML(
            f'<div class="gw-label" style="font-weight:600">{esc(label)}</div>'
            '<div style="color:#6b7280">not sent</div>'
        )
        self.card: JobCard | None = None
        super().__init__([self.body], layout=ipywidgets.Layout(border="1px solid #e5e7eb"))

    def attach(self, job: Job) -> None:
        self.card = JobCard(job, label=self.label, outputs=True)
        self.children = [self.card]

    def fail(self, exc: BaseException) -> None:
        self.body.value = (
            f'<div class="gw-label" style="font-weight:600">{esc(self.label)}</div>'
            f'<div class="gw-error" style="color:{COLOURS["failed"]}">not created: '
            f"{esc(type(exc).__name__)}: {esc(exc)}</div>"
        )


class SweepView(ipywidgets.VBox):
    """The sweep's widget: what it sends and bills, the Submit button when a
    confirmation is needed, then a grid of cells labelled by the varied values."""

    def __init__(self, plan: SweepPlan, *, needs_confirmation: bool, simulated: bool) -> None:
        self.summary_html = ipywidgets.HTML(
            f'<div class="gw-sweep-summary">{esc(plan.summary())}'
            f"{' ' + SIMULATED_BADGE if simulated else ''}</div>"
        )
        self.submit_button = ipywidgets.Button(
            description=f"Submit {plan.tasks} task{'s' if plan.tasks != 1 else ''}",
            button_style="warning",
            tooltip="nothing is sent until you click",
            layout={"width": "auto", "display": "" if needs_confirmation else "none"},
            disabled=not needs_confirmation,
        )
        self.progress_html = ipywidgets.HTML(
            '<span style="color:#6b7280">waiting for confirmation: nothing sent yet</span>'
            if needs_confirmation
            else ""
        )
        self.cells = [SweepCell(_label(values)) for values in plan.labels]
        self.grid = ipywidgets.GridBox(self.cells, layout=ipywidgets.Layout(**GRID_LAYOUT))
        super().__init__(
            [
                self.summary_html,
                ipywidgets.HBox([self.submit_button, self.progress_html]),
                self.grid,
            ]
        )
        self.add_class("gw-sweep")


class Sweep(list["Job"]):
    """The Jobs of a sweep, in combination order (see the module docstring)."""

    def __init__(
        self,
        plan: SweepPlan,
        client: Any,
        *,
        concurrency: int,
        needs_confirmation: bool,
    ) -> None:
        super().__init__()
        self.plan = plan
        self.endpoint = plan.endpoint
        self.payloads = plan.payloads
        self.labels = plan.labels
        self.client = client
        self.concurrency = concurrency
        self.errors: dict[int, BaseException] = {}
        self.jobs_by_index: dict[int, Job] = {}
        self._lock = threading.Lock()
        self._started = False
        self._submitted = threading.Event()
        self.widget = SweepView(
            plan,
            needs_confirmation=needs_confirmation,
            simulated=bool(client.embedded),
        )
        self.widget.submit_button.on_click(lambda _b: self.submit(wait=False))

    @property
    def submitted(self) -> bool:
        """True once every create has answered (or failed)."""
        return self._submitted.is_set()

    def wait_submitted(self, timeout: float | None = None) -> bool:
        return self._submitted.wait(timeout)

    def submit(self, *, wait: bool = True) -> Sweep:
        """Send the tasks (the button's action); a second call does nothing."""
        with self._lock:
            if self._started:
                return self
            self._started = True
        button = self.widget.submit_button
        button.disabled = True
        button.description = "submitting"
        if wait:
            self._run()
        else:
            threading.Thread(target=self._run, name="genwidgets-sweep", daemon=True).start()
        return self

    def _create(self, index: int) -> None:
        cell = self.widget.cells[index]
        try:
            job = self.client.submit(self.endpoint, self.payloads[index])
        except Exception as exc:  # one failed create must not hide the others
            with self._lock:
                self.errors[index] = exc
            cell.fail(exc)
        else:
            with self._lock:
                self.jobs_by_index[index] = job
            cell.attach(job)
        self._progress()

    def _progress(self) -> None:
        with self._lock:
            done, failed = len(self.jobs_by_index), len(self.errors)
        total = self.plan.tasks
        text = f"created {done} of {total}"
        if failed:
            text += f", {failed} failed"
        self.widget.progress_html.value = f"<span>{esc(text)}</span>"

    def _run(self) -> None:
        try:
            self._progress()
            with ThreadPoolExecutor(
                max_workers=self.concurrency, thread_name_prefix="genwidgets-sweep"
            ) as pool:
                list(pool.map(self._create, range(self.plan.tasks)))
            with self._lock:
                self.extend(self.jobs_by_index[i] for i in sorted(self.jobs_by_index))
            self.widget.submit_button.description = "submitted"
        finally:
            self._submitted.set()

    def __repr__(self) -> str:
        state = f"{len(self)} submitted" if self.submitted else "not sent"
        if self.errors:
            state += f", {len(self.errors)} failed"
        return f"<Sweep {self.endpoint}: {self.plan.tasks} tasks, {state}>"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


def sweep(
    endpoint: str,
    base_payload: Mapping[str, Any],
    vary: Mapping[str, Sequence[Any]],
    *,
    client: Any = None,
    max_jobs: int = 50,
    concurrency: int = 4,
    confirm_above: int = 10,
    confirm: bool = False,
) -> Sweep:
    """Submit every combination of ``vary`` over ``base_payload``; see the module
    docstring for counting, confirmation and the return value."""
    if not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be a positive integer, not {concurrency!r}")
    if not isinstance(max_jobs, int) or max_jobs < 1:
        raise ValueError(f"max_jobs must be a positive integer, not {max_jobs!r}")
    plan = plan_sweep(endpoint, base_payload, vary, max_jobs=max_jobs)
    needs_confirmation = plan.billed_total > confirm_above and not confirm
    result = Sweep(
        plan,
        client if client is not None else default_client(),
        concurrency=concurrency,
        needs_confirmation=needs_confirmation,
    )
    if in_kernel():
        from IPython import display as ipd

        ipd.display(result.widget)
    else:
        line = plan.summary()
        if needs_confirmation:
            line += (
                f" - above confirm_above={confirm_above}: nothing sent; "
                "call .submit() on the returned sweep or pass confirm=True"
            )
        print(line)
    if not needs_confirmation:
        result.submit(wait=True)
    return result
