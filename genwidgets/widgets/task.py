"""The live view of one task: what a displayed :class:`~genwidgets.Job` shows.

Threads. Job callbacks run on the engine's background thread (DESIGN decision
1), so the view keeps moving while other cells run or block. Three rules keep
that safe and cheap:

- **One writer.** Every trait write of a view happens in its ``_write`` method,
  called only through a :class:`Throttle`, which holds the view's lock. The
  state written is read from the job *at write time*, so skipped updates lose
  nothing: the next write shows the latest state.
- **At most ~10 writes a second per view.** An update that comes sooner than
  :data:`MIN_INTERVAL` after the last write marks the view dirty and asks the
  shared :class:`Ticker` to flush it when the interval is over. The terminal
  update is always written at once.
- **One ticker thread for every live view.** Elapsed time moves once a second;
  a daemon thread per view would be 200 threads for 200 jobs, so one shared
  thread ticks every registered view and flushes pending writes, and exits as
  soon as no view is live (it is started again on demand).

Outputs. The widget carries live state only (DESIGN decision 3). On
completion :func:`display_job` updates a separate ``display_id`` output with
the final status and the rendered outputs as plain HTML/text display data
(:func:`genwidgets.widgets.render.to_mimebundle`), which survives saving,
VS Code, GitHub and nbconvert. That update runs on the engine thread, so it
never downloads anything (``fetch=False``): media go by URL or by bytes the
process already has (see :mod:`genwidgets.widgets.render`). It is sent
before the job's future completes, and every kernel message of a view is
sent as from a plain thread (:func:`as_current_request`), so a notebook run
by nbclient keeps the final status and outputs.

Progress. ipywidgets has no indeterminate progress bar; the view draws an HTML
bar with a CSS animation (:func:`genwidgets.widgets._style.progress_bar_html`)
that moves in the browser with no kernel messages.
"""

from __future__ import annotations

import contextvars
import logging
import math
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import ipywidgets
from ipywidgets.widgets.widget_string import HTMLStyle  # not exported at the top level

from ._style import (
    COLOURS,
    SIMULATED_BADGE,
    StatusLook,
    error_html,
    esc,
    format_elapsed,
    look_of,
    progress_bar_html,
    status_badge,
)
from .render import to_mimebundle

if TYPE_CHECKING:
    from ..jobs.job import Job

__all__ = ["MIN_INTERVAL", "TICK_PERIOD", "TaskView", "Throttle", "Ticker", "display_job"]

log = logging.getLogger(__name__)

#: Shortest time between two writes of one view (about 10 writes a second).
MIN_INTERVAL = 0.1
#: Period of the shared elapsed-time tick.
TICK_PERIOD = 1.0


class Tickable(Protocol):
    def tick(self) -> None: ...


class Ticker:
    """One daemon thread that ticks every live view once per period and flushes
    throttled writes when they fall due; it exits when nothing is live."""

    def __init__(self, period: float = TICK_PERIOD) -> None:
        self.period = period
        self._cond = threading.Condition()
        self._live: set[Tickable] = set()
        self._due: dict[Throttle, float] = {}
        self._thread: threading.Thread | None = None
        self._next_tick = 0.0

    def add(self, view: Tickable) -> None:
        with self._cond:
            self._live.add(view)
            self._ensure_running()

    def remove(self, view: Tickable) -> None:
        with self._cond:
            self._live.discard(view)
            self._cond.notify()

    def flush_at(self, throttle: Throttle, when: float) -> None:
        """Ask for ``throttle.flush()`` at monotonic time ``when``."""
        with self._cond:
            self._due[throttle] = min(when, self._due.get(throttle, math.inf))
            self._ensure_running()
            self._cond.notify()

    @property
    def live_count(self) -> int:
        with self._cond:
            return len(self._live)

    @property
    def running(self) -> bool:
        with self._cond:
            return self._thread is not None

    def _ensure_running(self) -> None:
        if self._thread is None:
            self._next_tick = time.monotonic() + self.period
            self._thread = threading.Thread(target=self._run, name="genwidgets-ticker", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    if not self._live and not self._due:
                        self._thread = None
                        return
                    now = time.monotonic()
                    next_due = min(self._due.values(), default=math.inf)
                    wake = min(next_due, self._next_tick if self._live else math.inf)
                    if now >= wake:
                        break
                    self._cond.wait(wake - now)
                flush = [t for t, at in self._due.items() if at <= now]
                for t in flush:
                    del self._due[t]
                tick: list[Tickable] = []
                if self._live and now >= self._next_tick:
                    tick = list(self._live)
                    self._next_tick = now + self.period
            for throttle in flush:
                _guarded(throttle.flush)
            for view in tick:
                _guarded(view.tick)


def _guarded(fn: Callable[[], Any]) -> None:
    """Run a view callback; never let it raise into the engine or ticker thread."""
    try:
        fn()
    except Exception:
        log.exception("genwidgets: a view update failed")


def as_current_request(fn: Callable[[], Any]) -> Any:
    """Run ``fn`` in an empty :mod:`contextvars` context, so the kernel messages it
    sends (widget updates, display updates) are labelled with the request the
    kernel is handling *now*, as from a plain thread.

    Why: ipykernel 7 keeps the parent header in context variables. The engine's
    polling task was created from the cell that submitted the job and carries a
    copy of that cell's context, so without this every update would be labelled
    with that old cell, and nbclient (which keeps only the running cell's
    messages) would drop the final status and outputs from the saved notebook.
    In an empty context ipykernel falls back to its current shell request.
    """
    return contextvars.Context().run(fn)


#: The process-wide ticker shared by task views, boards and sweeps.
TICKER = Ticker()


def stop_following(view: Tickable, removers: list[Callable[[], Any]]) -> None:
    """Take a job's view off the ticker and drop its job callbacks (a failing remover
    is contained, so the others still run)."""
    TICKER.remove(view)
    for remove in removers:
        _guarded(remove)
    removers.clear()


class Throttle:
    """Coalesce write requests: at most one ``write()`` per ``interval``.

    ``request()`` writes at once when the last write is old enough (or when
    forced), else marks the state dirty and has the ticker flush it when the
    interval is over. ``write`` runs under :attr:`lock`, so it is the single
    writer of its view.
    """

    def __init__(
        self,
        write: Callable[[], None],
        *,
        interval: float = MIN_INTERVAL,
        ticker: Ticker | None = None,
    ) -> None:
        self.lock = threading.RLock()
        self._write = write
        self.interval = interval
        self._ticker = ticker or TICKER
        self._last = -math.inf
        self._dirty = False
        self.writes = 0

    def request(self, *, force: bool = False) -> None:
        with self.lock:
            now = time.monotonic()
            if force or now - self._last >= self.interval:
                self._write_now(now)
            elif not self._dirty:
                self._dirty = True
                self._ticker.flush_at(self, self._last + self.interval)

    def flush(self) -> None:
        with self.lock:
            if self._dirty:
                self._write_now(time.monotonic())

    @property
    def dirty(self) -> bool:
        return self._dirty

    def _write_now(self, now: float) -> None:
        self._dirty = False
        self._last = now
        self.writes += 1
        as_current_request(self._write)


def job_look(job: Job) -> StatusLook:
    """The look of a job; a job that ended with an exception instead of a result
    (polling gave up, the task vanished) shows as failed with that exception."""
    look = look_of(job.last_status, job.last_result)
    if look.terminal or job.last_result is not None or not job.done():
        return look
    try:
        job.result(timeout=0)
    except Exception as exc:
        return StatusLook(
            "failed",
            "failed",
            look.raw,
            True,
            str(exc) or type(exc).__name__,
            type(exc).__name__,
        )
    return look


def queue_position(job: Job) -> int | None:
    status = job.last_status
    if status is not None:
        return status.queue_position
    return getattr(job, "queue_position", None)


def _embedded(job: Job) -> bool:
    client = getattr(job, "client", None)
    return bool(getattr(client, "embedded", False))


_SHARED: dict[str, ipywidgets.Widget] = {}
_SHARED_LOCK = threading.Lock()


def _shared_parts() -> dict[str, ipywidgets.Widget]:
    """Layouts and styles shared by every task view of the kernel.

    Each widget otherwise brings its own Layout and Style models, every trait
    written out, into the saved widget state: about 1 KB each. Shared, they are
    saved once per notebook. None of them is ever mutated; a view changes its
    button's look by pointing it at another shared layout. Made on first use (in
    the kernel) and again if something closed them.
    """
    with _SHARED_LOCK:
        if not _SHARED or any(getattr(w, "comm", None) is None for w in _SHARED.values()):
            _SHARED.update(
                plain=ipywidgets.Layout(),
                html=HTMLStyle(),
                button=ipywidgets.Layout(width="auto"),
                hidden=ipywidgets.Layout(display="none"),
                button_style=ipywidgets.ButtonStyle(),
                top=ipywidgets.Layout(justify_content="space-between", align_items="center"),
                view=ipywidgets.Layout(max_width="720px"),
            )
        return _SHARED


class TaskView(ipywidgets.VBox):
    """The live view of a job: coloured status word, queue position, elapsed
    time, an indeterminate bar, a Cancel button, the request_id, and on failure
    the error and error_type in red; "simulated" for the embedded simulator.

    The Cancel button calls ``job.request_cancel()`` (never blocks the kernel),
    is disabled after one click and reads "cancel requested" until the status
    says the task ended. Everything shown is HTML-escaped.
    """

    def __init__(self, job: Job, **kwargs: Any) -> None:
        self.job = job
        self._throttle = Throttle(self._write)
        self._cancel_clicked = False
        self._cancel_error: str | None = None
        self._finished = False
        self._removers: list[Callable[[], Any]] = []

        # Few widgets on purpose: every widget adds models (its own, a layout, a
        # style) to the saved widget state. One line for status, queue, elapsed
        # and badge; one block for bar, request_id and errors; the Cancel button.
        self._badge = SIMULATED_BADGE if _embedded(job) else ""
        self._request_id = (
            f'<span style="color:#6b7280">{esc(job.endpoint)}</span> '
            '<span style="color:#6b7280">request_id</span> '
            f'<code class="gw-request-id" style="user-select:all">{esc(job.request_id)}</code>'
        )
        shared = _shared_parts()
        self.line_html = ipywidgets.HTML(layout=shared["plain"], style=shared["html"])
        self.detail_html = ipywidgets.HTML(layout=shared["plain"], style=shared["html"])
        self.cancel_button = ipywidgets.Button(
            description="Cancel",
            tooltip="ask the gateway to cancel this task",
            icon="stop",
            layout=shared["button"],
            style=shared["button_style"],
        )
        self.cancel_button.on_click(self._on_cancel_click)
        top = ipywidgets.HBox([self.line_html, self.cancel_button], layout=shared["top"])
        kwargs.setdefault("layout", shared["view"])
        super().__init__(children=[top, self.detail_html], **kwargs)
        self.add_class("gw-task-view")
        self._throttle.request(force=True)
        if not job_look(job).terminal:
            self._removers.append(job.add_update_callback(self._on_update))
            TICKER.add(self)
            job.add_done_callback(self._on_done)
        else:
            self._finish()

    # -- inputs (any thread) -------------------------------------------------

    def _on_update(self, job: Job) -> None:
        _guarded(lambda: self._throttle.request(force=job_look(self.job).terminal))

    def _on_done(self, job: Job) -> None:
        _guarded(lambda: self._throttle.request(force=True))
        self._finish()

    def tick(self) -> None:
        """The shared ticker's call: move the elapsed time."""
        self._throttle.request()

    def _on_cancel_click(self, _button: ipywidgets.Button) -> None:
        with self._throttle.lock:
            if self._cancel_clicked or self._finished:
                return
            self._cancel_clicked = True
        try:
            self.job.request_cancel()
        except Exception as exc:
            self._cancel_error = f"cancel failed: {exc}"
        self._throttle.request(force=True)

    def _finish(self) -> None:
        self._finished = True
        stop_following(self, self._removers)

    def close(self) -> None:
        self._finish()
        super().close()

    # -- the one writer ------------------------------------------------------

    @property
    def writes(self) -> int:
        """How many times the view was written (for tests and diagnostics)."""
        return self._throttle.writes

    def _write(self) -> None:
        job = self.job
        look = job_look(job)
        position = queue_position(job) if look.category == "queued" and not look.terminal else None
        queue = (
            f'<span class="gw-queue">queue position {esc(position)}</span>'
            if position is not None
            else ""
        )
        elapsed = f'<span class="gw-elapsed">{esc(format_elapsed(job.elapsed))}</span>'
        self.line_html.value = (
            '<div style="display:flex;gap:12px;align-items:center">'
            f"{status_badge(look)}{queue}{elapsed}{self._badge}</div>"
        )
        errors = error_html(look)
        if self._cancel_error:
            errors += (
                f'<div class="gw-error" style="color:{COLOURS["failed"]}">'
                f"{esc(self._cancel_error)}</div>"
            )
        self.detail_html.value = f"{progress_bar_html(look)}<div>{self._request_id}</div>{errors}"
        button = self.cancel_button
        if look.terminal:
            button.disabled = True
            button.description = "cancelled" if look.cancelled else "finished"
            button.layout = _shared_parts()["hidden"]
        elif self._cancel_clicked or bool(getattr(job, "cancel_requested", False)):
            button.disabled = True
            button.description = "cancel requested"
        else:
            button.disabled = False
            button.description = "Cancel"


# --- display ----------------------------------------------------------------


def in_kernel() -> bool:
    """True inside a Jupyter kernel (where widgets can be shown)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def plain_status(job: Job) -> str:
    """One line of plain text: endpoint, request_id, status, queue, elapsed, error."""
    look = job_look(job)
    parts = [str(job.endpoint), str(job.request_id), look.word]
    position = queue_position(job)
    if look.category == "queued" and not look.terminal and position is not None:
        parts.append(f"(queue position {position})")
    parts.append(format_elapsed(job.elapsed))
    if look.error or look.error_type:
        parts.append(f"- {look.error}" + (f" ({look.error_type})" if look.error_type else ""))
    if _embedded(job):
        parts.append("[simulated]")
    return " ".join(p for p in parts if p)


def final_bundle(job: Job) -> dict[str, str]:
    """The display data written on completion: final status line + outputs."""
    look = job_look(job)
    header = (
        '<div class="gw-final" style="display:flex;gap:12px;align-items:baseline">'
        f"{status_badge(look)} <span>{esc(job.endpoint)}</span> "
        f'<code style="user-select:all">{esc(job.request_id)}</code> '
        f"<span>{esc(format_elapsed(job.elapsed))}</span>"
        f"{' ' + SIMULATED_BADGE if _embedded(job) else ''}</div>"
    )
    result = job.last_result
    text = plain_status(job)
    if result is None:
        body = error_html(look) or '<div style="color:#6b7280">no result was received</div>'
        return {"text/html": header + body, "text/plain": text}
    bundle = to_mimebundle(result, fetch=False)
    return {
        "text/html": header + bundle["text/html"],
        "text/plain": text + "\n" + bundle["text/plain"],
    }


def placeholder_bundle(job: Job) -> dict[str, str]:
    """What the outputs' ``display_id`` shows until the task ends."""
    text = f"outputs of {job.endpoint} {job.request_id} appear here when the task ends"
    return {
        "text/html": f'<div class="gw-placeholder" style="color:#6b7280">{esc(text)}</div>',
        "text/plain": text,
    }


class _FinalOutput:
    """Writes the final status and outputs into the display_id output, once.

    It writes from the update callback that first sees ``job.last_result``: the
    job sets its result and notifies *before* it completes its future, so the
    output is published before a ``job.result()`` in a later cell returns, and
    lands in that cell's messages (nbclient saves it; a browser shows it either
    way). The done callback is the fallback (a job that ended with an exception).
    """

    def __init__(self, job: Job, write: Callable[[dict[str, Any]], Any]) -> None:
        self.job = job
        self.write = write
        self._lock = threading.Lock()
        self._published = False
        self._remove: Callable[[], Any] | None = None

    def watch(self) -> None:
        self._remove = self.job.add_update_callback(self._on_update)
        self.job.add_done_callback(lambda _job: self.publish())

    def _on_update(self, job: Job) -> None:
        if job.last_result is not None:
            self.publish()

    def publish(self) -> None:
        with self._lock:
            if self._published:
                return
            self._published = True
        if self._remove is not None:
            _guarded(self._remove)
        bundle = final_bundle(self.job)
        _guarded(lambda: as_current_request(lambda: self.write(bundle)))
        _REPUBLISH.add(lambda: self.write(bundle))


class _Republisher:
    """Writes each final output once more at the end of the next cell.

    The engine thread publishes a final output the moment the task ends. If that
    moment falls between two cells, the message carries the label of a cell that
    has already finished, and a headless runner (nbclient) drops it from the
    saved notebook. IPython's ``post_run_cell`` runs on the main thread with the
    label of the cell that just ran, so writing the same bundle again there
    always lands. Writing it twice is harmless: the update is idempotent.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: list[Callable[[], Any]] = []
        self._installed = False

    def add(self, write: Callable[[], Any]) -> None:
        with self._lock:
            if not self._installed:
                self._installed = self._install()
            if self._installed:  # with no shell there is no next cell to write in
                self._pending.append(write)

    def _install(self) -> bool:
        try:
            from IPython import get_ipython
        except ImportError:
            return False
        shell = get_ipython()
        if shell is None:
            return False
        shell.events.register("post_run_cell", self.flush)
        return True

    def flush(self, *_args: Any) -> None:
        with self._lock:
            pending, self._pending = self._pending, []
        for write in pending:
            _guarded(write)


_REPUBLISH = _Republisher()


def display_job(job: Job) -> TaskView | str:
    """Show a job: the live :class:`TaskView`, then a ``display_id`` output that
    the engine thread fills with the final status and outputs on completion.

    Outside a Jupyter kernel, print and return a one-line plain-text status.
    """
    if not in_kernel():
        line = plain_status(job)
        print(line)
        return line
    from IPython import display as ipd

    view = TaskView(job)
    ipd.display(view)
    handle = ipd.display(placeholder_bundle(job), raw=True, display_id=True)
    if handle is not None:
        _FinalOutput(job, lambda bundle: handle.update(bundle, raw=True)).watch()
    return view


def display_job_into(job: Job, output: Any) -> TaskView:
    """Show a job inside an ``ipywidgets.Output`` (a form's result area).

    A display handle would not do there: its update comes from the engine thread
    after the ``with output:`` block has ended, so no cell and no Output widget
    would receive it. The final outputs replace a placeholder in the widget's
    ``outputs`` trait instead, a comm message that works from any thread.
    """
    view = TaskView(job)
    output.append_display_data(view)
    output.outputs = (*output.outputs, _display_data(placeholder_bundle(job)))
    slot = len(output.outputs) - 1

    def write(bundle: dict[str, Any]) -> None:
        outputs = list(output.outputs)
        if slot < len(outputs):
            outputs[slot] = _display_data(bundle)
        else:  # the user cleared the area meanwhile
            outputs.append(_display_data(bundle))
        if tuple(outputs) == tuple(output.outputs):
            output.send_state("outputs")  # a repeat write (see _Republisher) must still go out
        else:
            output.outputs = tuple(outputs)

    _FinalOutput(job, write).watch()
    return view


def _display_data(bundle: dict[str, Any]) -> dict[str, Any]:
    return {"output_type": "display_data", "data": bundle, "metadata": {}}
