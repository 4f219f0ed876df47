"""``gw.batch``'s live view (anywidget) and its lasting face.

The batch itself is plain Python (:mod:`genwidgets.lab.batch`); this module draws its
:class:`~genwidgets.lab.progress.Snapshot` with ``static/batch.js`` (counts, spend, time
left, the latest thumbnails, the Submit, Cancel all and Retry failed buttons), and its
lasting face (:func:`static_copy`): docs/decisions.md#batch-view.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import traitlets

from .._config import shown_path
from ..lab import batch as lab_batch
from ..lab.batch import Batch
from ..lab.batch_open import batch as batch  # gw.batch: the same function, here so that
from ..lab.batch_open import batches as batches  # importing it installs the live view
from ..lab.batch_row import BatchRow
from ..lab.progress import Snapshot
from . import markup
from .faces import CommandView, answers, in_kernel, static_module
from .lasting import thumbnail_src
from .ticker import MIN_INTERVAL, Throttle

__all__ = ["BatchView", "batch", "batches", "static_copy"]

#: the latest ended rows shown as thumbnails
THUMBS = 8
THUMB_SIDE = 128
#: a big batch writes its head at most this often (seconds)
WRITE_INTERVAL = 0.5
_COUNTED = ("done", "running", "queued", "failed")


def _counts(snap: Snapshot) -> dict[str, int]:
    """The counts a batch shows, in :data:`_COUNTED`'s order (queued: waiting or sent)."""
    return {k: snap.queued if k == "queued" else snap.count(k) for k in _COUNTED}


def _thumb(row: BatchRow) -> str:
    """A data URL of the row's first picture (a video's first frame), or "": made from
    the ledger's copy of the output (cached beside it, as grids do), so nothing but the
    batch's own files lands in its folder."""
    result = row.job.last_result if row.job is not None else None
    try:
        return thumbnail_src(result.outputs if result is not None else (), THUMB_SIDE) or ""
    except Exception:  # an odd file: no picture, the row still counts
        return ""


def _head(batch: Batch, snap: Snapshot) -> dict[str, Any]:
    return {
        "id": batch.id,
        "endpoint": batch.endpoint,
        "summary": batch.plan.summary(),
        "out": shown_path(batch.out),
        "simulated": bool(getattr(batch.client, "embedded", False)),
        "total": snap.total,
        "counts": _counts(snap),
        "others": {
            k: snap.count(k)
            for k in ("files pending", "cancelled", "timed out", "unknown", "left running")
            if snap.count(k)
        },
        "spent": snap.spent_text(),
        "rate": snap.rate,
        "eta": snap.eta,
        "line": snap.line(),
        "stopped": snap.stopped,
        "started": snap.started,
        "finished": snap.finished,
        # a paused batch goes on when asked: its Submit button is the ask
        "needs_confirmation": (batch.needs_confirmation and not snap.started) or snap.paused,
        "can_retry": snap.failed > 0,
        "error": snap.problem,
    }


class BatchView(CommandView):
    """The live view of one batch (see the module docstring)."""

    _esm = static_module("faces.js", "ask.js", "batch.js")
    _css = static_module("batch.css")
    head = traitlets.Dict().tag(sync=True)
    #: the latest ended rows: [{"row", "status", "label", "src"}], newest first
    thumbs: traitlets.List[dict[str, Any]] = traitlets.List().tag(sync=True)

    def __init__(self, batch: Batch) -> None:
        super().__init__()
        self.batch = batch
        self._made: dict[int, str] = {}
        self._throttle = Throttle(self._write, interval=max(MIN_INTERVAL, WRITE_INTERVAL))
        self.add_class("gw-batch")
        batch.listeners.append(self._on_change)
        self._throttle.request(force=True)

    def _on_change(self) -> None:
        # called on the batch's finisher thread (never the engine's): the throttle writes
        self._throttle.request()

    # The buttons: anywidget commands (asked by ``static/ask.js``), each
    # answered with {"ok": true} or {"error": ...} the page shows
    # (docs/decisions.md#view-commands).

    @answers
    def _ask_submit(self, _msg: dict[str, Any]) -> None:
        self._after_ask(self.batch.submit)

    @answers
    def _ask_cancel(self, _msg: dict[str, Any]) -> dict[str, Any]:
        return {"asked": self._after_ask(self.batch.cancel)}

    @answers
    def _ask_retry(self, _msg: dict[str, Any]) -> None:
        self._after_ask(self.batch.retry_failed)

    def _after_ask(self, act: Callable[[], Any]) -> Any:
        try:
            return act()
        finally:
            self._throttle.request(force=True)

    def _latest(self) -> list[dict[str, Any]]:
        ended = [r for r in self.batch.rows if r.ended_at is not None and r.ended]
        ended.sort(key=lambda r: r.ended_at or 0.0, reverse=True)
        shown = []
        for row in ended[:THUMBS]:
            if row.index not in self._made:
                self._made[row.index] = _thumb(row) if row.files else ""
            shown.append(
                {
                    "row": row.name,
                    "status": row.status,
                    "label": row.files[0].name if row.files else (row.error or row.status),
                    "src": self._made[row.index],
                }
            )
        return shown

    def _write(self) -> None:
        snap = self.batch.snapshot()
        self.thumbs = self._latest()  # first: a head that counts a row finds its picture
        self.head = _head(self.batch, snap)
        self._refresh_face(force=snap.finished)  # rewritten later, never waited for

    def close(self) -> None:
        if self._on_change in self.batch.listeners:
            self.batch.listeners.remove(self._on_change)
        super().close()

    # ------------------------------------------------------------------ display

    def display(self) -> None:
        """Both faces: this live view, then its lasting face (:mod:`.faces`)."""
        self._show_faces(self._lasting, interval=1.0)

    def _lasting(self, _media: str) -> dict[str, str]:
        return static_copy(self.batch, self._latest())


def static_copy(batch: Batch, thumbs: list[dict[str, Any]]) -> dict[str, str]:
    """The batch as plain HTML (and text): what a saved notebook keeps of it."""
    snap = batch.snapshot()
    html = markup.batch_face(
        batch_id=batch.id,
        endpoint=batch.endpoint,
        simulated=getattr(batch.client, "embedded", False),
        counts=_counts(snap),
        total=snap.total,
        line=snap.line(),
        out=shown_path(batch.out),
        pictures=(
            (t.get("src") or "", t["label"])
            for t in thumbs
            if t.get("src", "").startswith("data:image/") or not t.get("src")
        ),
        side=THUMB_SIDE,
    )
    return {"text/html": html, "text/plain": snap.line()}


def show(batch: Batch) -> None:
    """Draw a batch where it is displayed: its live view in a kernel, its line elsewhere."""
    if not in_kernel():
        print(repr(batch))
        return
    BatchView(batch).display()


lab_batch.display_hook = show
