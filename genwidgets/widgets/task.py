"""The view of one task: what a displayed :class:`~genwidgets.Job` shows.

:class:`TaskView` is an anywidget (ES module and CSS in ``widgets/static/``, no build,
no CDN): its state is traits written through the shared :class:`Throttle`, and the
browser ticks the clock itself. Displayed, it is a view's two faces
(:mod:`.faces`): the live view, live for as long as the kernel, and its lasting face
(status line, request id, outputs as :mod:`.lasting` keeps them), rewritten when the
task ends: docs/decisions.md#task-outputs.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from typing import Any

import ipywidgets
import traitlets

from .._client import CONTACT_LOST_NEXT, lost_contact
from .._palette import COLOURS
from .._protocols import JobLike
from ..errors import ClientClosed
from ..jobs.job import kept_cancel
from ..protocol.records import Result, log_line
from . import markup
from ._style import MUTED_STYLE, StatusLook, format_elapsed, layout, look_of
from .faces import (
    BACKGROUND,
    REPUBLISH,
    CommandView,
    Faces,
    answers,
    in_kernel,
    live_container,
    static_module,
    widget_bundle,
)
from .lasting import (
    FACE_OUTPUTS,
    hold_media,
    left_out_html,
    needs_holding,
    plain_text,
    result_html,
    within_text_budget,
)
from .render import live_entry
from .ticker import Throttle, guarded, stop_following

__all__ = ["TaskList", "TaskView", "display_job", "lasting_face"]

log = logging.getLogger(__name__)

#: Seconds between two rewrites of a task's lasting face while it runs (its status word
#: changed); its end is written at once.
FACE_INTERVAL = 1.0


def job_look(job: JobLike) -> StatusLook:
    """The look of a job; a job that ended with an exception instead of a result shows
    it: "contact lost" when polling gave up on faults of contact, "not followed" when
    its client closed (the task may still run: never called failed; the error says how
    to follow it again), else failed (the task vanished)."""
    look = look_of(job.last_status, job.last_result)
    if look.terminal or job.last_result is not None or not job.done():
        return look
    exc = job.exception()
    if exc is None:
        return look
    said, kind = str(exc) or type(exc).__name__, type(exc).__name__
    if lost_contact(job):
        said = f"{said}. {CONTACT_LOST_NEXT}"
        return StatusLook("contact lost", "queued", look.raw, True, said, kind)
    if isinstance(exc, ClientClosed):
        return StatusLook("not followed", "queued", look.raw, True, said, kind)
    return StatusLook("failed", "failed", look.raw, True, said, kind)


def result_entries(result: Result | None, *, posters: bool = True) -> list[dict[str, Any]]:
    """The ``outputs`` trait of a result: one entry per output (see
    :func:`~genwidgets.widgets.render.live_entry`), or the asset record of a
    result that has no outputs, as an escaped table."""
    if result is None:
        return []
    # within the text budget: the saved widget state keeps these too
    shown = result.outputs[:FACE_OUTPUTS]  # the others counted
    drawn = ((output, live_entry(output, poster=posters)) for output in shown)
    entries, listing = within_text_budget(drawn, lambda entry: entry["html"])
    for block in (listing, left_out_html(len(result.outputs))):
        if block is not None:
            entries.append({"kind": "listed", "html": block, "caption": ""})
    if not entries and result.ok and result.asset is not None:
        entries.append({"kind": "json", "html": markup.table_html(result.asset)})
    return entries


class TaskView(CommandView):
    """The live view of a job: coloured status word, queue position, elapsed
    time (ticking in the browser), "about N s left" when the polling schedule
    expects an end, an indeterminate bar, a Cancel button, the request_id, on
    failure the error and error_type in red, "simulated" for the embedded
    simulator, and the outputs once the task ends.

    The Cancel button calls ``job.request_cancel()`` (never blocks the kernel),
    is disabled after one click and reads "cancel requested" until the status
    says the task ended. Text goes to the browser as text (``textContent``);
    the only HTML, that of non-media outputs, is escaped by the renderer.
    """

    _esm = static_module("faces.js", "ask.js", "task_view.js")
    _css = static_module("task_view.css")

    endpoint = traitlets.Unicode("").tag(sync=True)
    request_id = traitlets.Unicode("").tag(sync=True)
    status = traitlets.Unicode("submitted").tag(sync=True)
    category = traitlets.Unicode("queued").tag(sync=True)
    status_raw = traitlets.Unicode("").tag(sync=True)
    #: The one palette (``_palette.COLOURS``), as CSS variables ``--gw-<category>``.
    palette = traitlets.Dict(COLOURS).tag(sync=True)
    terminal = traitlets.Bool(False).tag(sync=True)
    queue_position = traitlets.Int(None, allow_none=True).tag(sync=True)
    #: Epoch seconds the job was submitted: the browser's clock counts from it.
    start_time = traitlets.Float(0.0).tag(sync=True)
    #: Seconds taken, final once ``terminal`` (while running, the browser counts).
    elapsed = traitlets.Float(0.0).tag(sync=True)
    #: Epoch seconds the task is expected to end (``job.expected_finish`` from now), or None.
    expected_finish_at = traitlets.Float(None, allow_none=True).tag(sync=True)
    error = traitlets.Unicode("").tag(sync=True)
    error_type = traitlets.Unicode("").tag(sync=True)
    simulated = traitlets.Bool(False).tag(sync=True)
    cancel_requested = traitlets.Bool(False).tag(sync=True)
    cancel_error = traitlets.Unicode("").tag(sync=True)
    outputs = traitlets.List(traitlets.Dict()).tag(sync=True)
    #: The gateway's logs (``Status.logs``): the latest line while running, the last
    #: few once finished (kept in the saved view).
    logs = traitlets.List(traitlets.Unicode()).tag(sync=True)

    def __init__(
        self, job: JobLike, *, posters: bool = True, faces: Faces | None = None, **kwargs: Any
    ) -> None:
        """``posters=False``: videos carry no poster frame in the view's state, for a
        view displayed with its lasting face (which has the poster): the saved widget
        state would only repeat it (about 5 KB a video). ``faces``: the lasting face
        this view is shown in when it is another view's (a :class:`TaskList`'s)."""
        # Set first: close() (also run by Widget.__del__) needs them even when
        # a job that lacks part of the JobLike protocol makes the next line fail.
        self._finished = False
        self._posters = posters
        self._removers: list[Callable[[], Any]] = []
        super().__init__(
            endpoint=str(job.endpoint),
            request_id=str(job.request_id),
            start_time=float(job.submitted_at),
            simulated=job.simulated,
            **{"layout": layout("plain"), **kwargs},
        )
        self.job = job
        self._faces = faces
        done = job.done()  # one reading: a job ending meanwhile is followed to its end
        #: how far the job's end had come when its lasting face was last written
        #: (:func:`end_stage`): the live face never shows more (docs/decisions.md#two-faces)
        self._face_stage = 2 if done else end_stage(job)
        #: the status word the lasting face was last asked to show while the job runs
        self._face_word = job_look(job).word
        self._throttle = Throttle(self._write)
        self._cancel_clicked = False
        self._kept_said = False  # cancel_error says a kept cancel
        self._shown_result: Result | None = None
        self._resend_pending = False
        self.add_class("gw-task-view")
        self._throttle.request(force=True)
        if not done:  # a status that ended may come before its result: follow it
            self._removers.append(job.add_update_callback(self._on_update))
            job.add_done_callback(self._on_done)
        else:
            self._finish()
            self._hold_media()

    # -- inputs (any thread) -------------------------------------------------

    def _on_update(self, job: JobLike) -> None:
        stage = end_stage(job)
        if stage:
            # Asked here, before the job's future completes (the JobLike contract:
            # update callbacks first), so a cell waiting on job.result() waits for it.
            self._lasting_then_live(stage)
        elif (word := job_look(job).word) != self._face_word:
            # a notebook saved while it runs says what it was doing, not "submitted"
            # (at most once per FACE_INTERVAL: a few words a task)
            self._face_word = word
            guarded(self._refresh_face)
        guarded(self._throttle.request)

    def _on_done(self, job: JobLike) -> None:
        self._lasting_then_live(2)
        self._finish()
        self._hold_media()

    def _hold_media(self) -> None:
        """Media its lasting face could show nothing of (no local copy) read once on a
        background worker while their server answers, then the face written again with
        them (:func:`~.lasting.hold_media`)."""
        result = self.job.last_result
        outputs = list(result.outputs) if result is not None else []
        if needs_holding(outputs):

            def hold() -> None:
                if hold_media(outputs):
                    self._refresh_face(force=True)

            BACKGROUND.submit(hold)

    def _lasting_then_live(self, stage: int) -> None:
        """Ask the lasting face to show the job's end at ``stage``, then the live face
        (:meth:`_face_at`); at once when the lasting face cannot be asked."""
        then = functools.partial(self._face_at, stage)
        try:
            self._refresh_face(force=True, then=then)
        except Exception:  # the live face still ends
            log.exception("genwidgets: the lasting face of %s could not be asked", self.request_id)
            then()

    def _face_at(self, stage: int) -> None:
        """The lasting face was written with the job's end at ``stage``: the live face
        may now show as much."""
        self._face_stage = max(self._face_stage, stage)
        guarded(lambda: self._throttle.request(force=True))

    def _ipython_display_(self) -> None:
        """Both faces (:mod:`.faces`): this live view, then its lasting face, which
        is rewritten when the task ends. Outside a kernel, one line of text."""
        self._show_faces(
            lambda media: lasting_face(self.job, media),
            interval=FACE_INTERVAL,
            plain=lambda: plain_status(self.job),
        )

    @answers
    def _ask_cancel(self, _msg: dict[str, Any]) -> None:
        """The Cancel button (an anywidget command, docs/decisions.md#view-commands);
        a failure to ask is shown by ``cancel_error``."""
        self.click_cancel()

    def click_cancel(self) -> None:
        """What the Cancel button does (the page invokes ``_ask_cancel``; tests call this)."""
        with self._throttle.lock:
            if self._cancel_clicked or self._finished:
                return
            self._cancel_clicked, self.cancel_error = True, ""
        try:
            self.job.request_cancel()
        except Exception as exc:
            with self._throttle.lock:
                self.cancel_error = f"cancel failed: {exc}"
        self._throttle.request(force=True)

    def _finish(self) -> None:
        self._finished = True
        stop_following(self, self._removers)

    def tick(self) -> None:
        """Nothing moves with time in the kernel: the browser runs the clock."""

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
        if end_stage(job) > self._face_stage:
            return  # its lasting face first: :meth:`_face_at` writes this after it
        look = job_look(job)
        expected = job.expected_finish
        with self.hold_sync():  # one comm message per write
            self.status = look.word
            self.category = look.category
            self.status_raw = look.raw
            self.queue_position = (
                job.queue_position if look.category == "queued" and not look.terminal else None
            )
            self.elapsed = float(job.elapsed)
            self.expected_finish_at = (
                None if expected is None or look.terminal else time.time() + float(expected)
            )
            self.error = look.error or ""
            self.error_type = look.error_type or ""
            self.cancel_requested = self._cancel_state(job)
            result = job.last_result
            if result is not None and result is not self._shown_result:
                # Once per result: a terminal status may come before the result is fetched.
                self._shown_result = result
                self.outputs = result_entries(result, posters=self._posters)
            self.logs = log_tail(job, look.terminal)
            self.terminal = look.terminal
        if look.terminal and not self._resend_pending:
            # The engine thread may write this between two cells, labelled with a
            # finished cell: a headless runner (nbclient) then drops it from the
            # saved widget state. Send the whole state again at the end of the
            # next cell, as the lasting face is (see faces.Republisher).
            self._resend_pending = True
            REPUBLISH.add(self._resend_state)

    def _cancel_state(self, job: JobLike) -> bool:
        """Whether the Cancel button is spent; ``cancel_error`` says a cancel refused (the
        button may be pressed again), or kept because the gateway did not take it (the
        job sends it again; pressing the button sends it at once), and clears once sent."""
        kept = kept_cancel_words(job)
        if kept:
            self._cancel_clicked, self._kept_said = False, True
            ended = job.done() or job.last_result is not None
            self.cancel_error = kept if ended else f"{kept} (Cancel sends it now)"
            return False
        failed = getattr(job, "cancel_error", None)
        refused_later = self._kept_said and not job.cancel_requested  # sent again, refused
        if failed is not None and (self._cancel_clicked or refused_later):
            self._cancel_clicked = self._kept_said = False
            self.cancel_error = f"cancel failed: {failed}"
        elif self._kept_said:
            self._kept_said, self.cancel_error = False, ""  # the kept cancel was taken
        return self._cancel_clicked or bool(job.cancel_requested)

    def _resend_state(self) -> None:
        with self._throttle.lock:
            self._resend_pending = False
            self.send_state()


def kept_cancel_words(job: JobLike) -> str:
    """What a view says of a job's kept cancel ("" for none, docs/decisions.md#cancel-kept):
    why the gateway has not taken it, then what becomes of it: sent again while the job
    runs; moot once the task has ended; else never delivered, and the task may still
    run (the job stopped following it)."""
    kept = kept_cancel(job)
    if kept is None:
        return ""
    said = f"cancel {kept[0]}: {kept[1]}"
    if job.last_result is not None:
        return f"{said}; the task ended first"
    if job.done():
        return f"{said}; the task may still run: follow it again (client.job) to cancel it"
    return f"{said}; it is sent again until the gateway takes it"


def end_stage(job: JobLike) -> int:
    """How far a job's end has come: 0 running, 1 its status ended (its result may still
    be on its way), 2 its result (or why it has none) in hand. A result counts as soon
    as the job has it, before its future completes: the end of a cell waiting on
    ``job.result()`` then waits for the face that shows it."""
    if job.done() or job.last_result is not None:
        return 2
    return int(job_look(job).terminal)


LOG_LINES_KEPT = 5


def log_tail(job: JobLike, terminal: bool) -> list[str]:
    """The log lines a view shows: the latest while running, the last few at the end."""
    logs = getattr(getattr(job, "last_status", None), "logs", None) or []
    return [log_line(entry) for entry in logs[-(LOG_LINES_KEPT if terminal else 1) :]]


# --- the lasting face -------------------------------------------------------------


def plain_status(job: JobLike) -> str:
    """One line of plain text: endpoint, request_id, status, queue, elapsed, error."""
    look = job_look(job)
    parts = [str(job.endpoint), str(job.request_id), look.word]
    position = job.queue_position
    if look.category == "queued" and not look.terminal and position is not None:
        parts.append(f"(queue position {position})")
    parts.append(format_elapsed(job.elapsed))
    if look.error or look.error_type:
        parts.append(f"- {look.error}" + (f" ({look.error_type})" if look.error_type else ""))
    if job.simulated:
        parts.append("[simulated]")
    return " ".join(p for p in parts if p)


def lasting_face(job: JobLike, media: str | None = None) -> dict[str, str]:
    """A task's lasting face: its status line, request id and elapsed time, then (once
    it has ended) its error or its outputs as :mod:`.lasting` keeps them; before that,
    what it was doing when last seen."""
    look = job_look(job)
    header = markup.task_face(
        look,
        endpoint=job.endpoint,
        request_id=job.request_id,
        elapsed=format_elapsed(job.elapsed),
        simulated=job.simulated,
    )
    text = plain_status(job)
    result = job.last_result
    if not look.terminal or (result is None and not job.done()):
        note = (
            f"{look.word} when last seen: its outputs show here once the task has ended "
            "(run the cell again, or client.resume() re-attaches after a restart)"
        )
        html = markup.join([header, markup.box("gw-placeholder", note, style=MUTED_STYLE)])
        return {"text/html": html, "text/plain": f"{text}\n{note}"}
    if result is None:
        body = markup.error_html(look) or markup.div("no result was received", MUTED_STYLE)
        return {"text/html": markup.join([header, body]), "text/plain": text}
    return {
        "text/html": markup.join([header, result_html(result, media=media)]),
        # the status line already says a failure's error: only the outputs follow it
        "text/plain": f"{text}\n{plain_text(result.outputs)}" if result.ok else text,
    }


def display_job(job: JobLike) -> TaskView | str:
    """Show a job: its :class:`TaskView` and the view's lasting face (see
    :meth:`TaskView._ipython_display_`). Outside a Jupyter kernel, print and return a
    one-line plain-text status."""
    if not in_kernel():
        line = plain_status(job)
        print(line)
        return line
    view = TaskView(job, posters=False)  # the lasting face carries the poster
    view._ipython_display_()
    return view


class TaskList:
    """The tasks a form submitted, shown under the form as their own output: a live
    box of their :class:`TaskView` s and one lasting face holding each one's, so a
    saved notebook keeps them (a form itself is a live-only control). Until it is
    displayed, tasks go to ``fallback`` (the form's own output area) instead."""

    def __init__(self, fallback: Any) -> None:
        self.jobs: list[JobLike] = []
        self.box = ipywidgets.VBox()
        self.fallback = fallback
        self.faces = Faces(self._lasting, interval=FACE_INTERVAL)
        self.live = live_container(self.box, self.faces)

    def _lasting(self, media: str) -> dict[str, str]:
        faces = [lasting_face(job, media) for job in list(self.jobs)]
        return {
            "text/html": markup.spaced(face["text/html"] for face in faces),
            "text/plain": "\n".join(f["text/plain"] for f in faces),
        }

    def show(self) -> None:
        """Display the two faces (under the form, in the cell that shows it)."""
        self.faces.show(self.live)

    def add(self, job: JobLike) -> TaskView:
        self.jobs.append(job)
        if self.faces.shown:  # the view rewrites this lasting face as it ends
            view = TaskView(job, posters=False, faces=self.faces)
            self.box.children = (*self.box.children, view)
            self.faces.refresh(force=True)
        else:  # never displayed on its own: inside the form's output area
            view = TaskView(job, posters=False)
            data, metadata = widget_bundle(view)
            entry = {"output_type": "display_data", "data": data, "metadata": metadata}
            self.fallback.outputs = (*self.fallback.outputs, entry)
        return view
