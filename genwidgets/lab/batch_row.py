"""One row of a batch at work: what was sent, where it stands, what came back.

``batch.rows[i]`` is a :class:`BatchRow`: ``.index``, ``.payload`` (as sent),
``.status``, ``.request_id``, ``.files``, ``.error`` (and ``.job`` while this process
follows its task). Its stored ``state`` is one of :mod:`.batch_store`'s; ``status`` is
the word people read, with a created task's queue or run shown.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._config import shown_path
from .batch_store import CREATED, DONE, ENDED, FAILED, LEFT, PENDING, UNKNOWN, WAITING

if TYPE_CHECKING:
    from .._protocols import JobLike
    from ..protocol.records import Status
    from .batch_plan import PlannedRow

__all__ = ["STATUSES", "BatchRow"]

#: the stored states said otherwise in ``row.status`` (every other is its own word)
_WORDS = {PENDING: "files pending", LEFT: "left running"}
#: the statuses of rows that have ended (nothing more happens to them in this run)
ENDED_STATUSES = tuple(_WORDS.get(state, state) for state in ENDED)
#: every ``row.status``, in the order a view counts them
STATUSES = ("done", "running", "queued", "sending", "waiting", "contact lost", *ENDED_STATUSES[1:])
#: what happens next to a row of each status, in words (the view, the manifest, the CLI)
NEXT = {
    "waiting": "sent when the batch runs",
    "sending": "its create is on its way",
    "queued": "followed until it ends",
    "running": "followed until it ends",
    "done": "",
    "files pending": "its outputs are kept: running the batch again or batch.write_files() "
    "writes its files, with no new create",
    "failed": "batch.retry_failed() (genwidgets batch --retry-failed) sends it again: a new "
    "create, billed",
    "cancelled": "cancelled by you: not sent again",
    "timed out": "cancelled at the gateway past its timeout: not sent again",
    "unknown": "its create may have made a task: never sent again; look for it with "
    "client.history()",
    "contact lost": "its task exists: running the batch again re-attaches it, with no new create",
    "left running": "left running at the gateway: running the batch again re-attaches it",
}
#: what happens next to a row another live process holds (shown here as ``unknown``, or
#: as it ended there)
NEXT_ELSEWHERE = (
    "another process is sending it: running the batch again after that process ends "
    "settles it (its task re-attached, or sent if it never left)"
)
#: ... and one that failed there: that process may retry it
NEXT_HELD_FAILED = (
    "held by another process, which may retry it: batch.retry_failed() takes it here once "
    "that process has ended"
)


@dataclass(eq=False, repr=False, slots=True)
class BatchRow:
    """One row: see the module docstring (compared by identity)."""

    planned: PlannedRow
    state: str = WAITING
    attempt: int = 0
    request_id: str | None = None
    error: str | None = None
    #: a failed create as raised (this session only; ``error`` is its stored words)
    exception: Exception | None = None
    files: list[Path] = field(default_factory=list)
    job: JobLike | None = None
    created_at: float | None = None
    ended_at: float | None = None
    reserved_at: float | None = None
    timed_out: bool = False
    user_cancelled: bool = False
    #: when its cancel was asked (a deadline's or a person's): its grace counts from then
    cancel_asked_at: float | None = None
    #: the last status heard of its task when its deadline's cancel was asked: a fresh
    #: answer since says contact holds
    word_at_cancel: Status | None = None
    #: the gateway took its task's cancel in this session (answered, not on its way): a
    #: job following the task again does not ask it again
    cancel_taken: bool = False
    rate_limited: int = 0
    #: times contact with its task was lost in a row, and when to follow it again
    lost: int = 0
    lost_since: float | None = None
    follow_at: float | None = None
    #: held by another live process sending the batch: shown here, never changed here
    elsewhere: bool = False
    #: the state the store held when this process last wrote or read the row: a stored
    #: state unlike it was written by another process (``Batch.reread_touched``)
    synced: str | None = None

    index = property(lambda self: self.planned.index)
    #: its own name: a DataFrame's index label, else its position (``index``)
    name = property(lambda self: self.planned.name)
    #: the line of the rows file it came from (None for in-memory rows)
    line = property(lambda self: self.planned.line)
    endpoint = property(lambda self: self.planned.endpoint)
    kind = property(lambda self: self.planned.kind)
    units = property(lambda self: self.planned.units)
    #: the payload as sent (after the endpoint column's mapping and validation)
    payload = property(lambda self: self.planned.payload)
    plan_note = property(lambda self: self.planned.plan_note)

    @property
    def status(self) -> str:
        """The word people read: one of :data:`STATUSES`, a created task's queue or run
        shown (the table of them: docs/decisions.md#batch-row-states)."""
        if self.state != CREATED:
            return _WORDS.get(self.state, self.state)
        if self.follow_at is not None:
            return "contact lost"
        job = self.job
        status = job.last_status if job is not None else None
        if status is None:
            return "queued" if job is None or job.queue_position is not None else "running"
        return "queued" if status.status == "IN_QUEUE" else "running"

    @property
    def next_step(self) -> str:
        """What happens next to this row, in words ("" when nothing does)."""
        if self.follow_at is not None:
            return "followed again with backoff until its deadline, then listed unknown"
        if self.elsewhere:  # held there, or ended there (that process may retry it)
            if self.state == FAILED:
                return NEXT_HELD_FAILED
            return "" if self.state == DONE else NEXT_ELSEWHERE
        if self.state == UNKNOWN and self.request_id:
            return NEXT["contact lost"]
        return NEXT.get(self.status, "")

    @property
    def ended(self) -> bool:
        """Nothing more will happen to this row in this batch."""
        return self.state in ENDED

    def file_names(self, out: Path | None) -> list[str]:
        """The row's files as a manifest and ``batch.dataframe()`` name them: relative to
        the batch's ``out`` (``out / name`` opens one), any other by the one rule of shown
        paths (docs/decisions.md#shown-paths)."""
        return [
            str(p.relative_to(out)) if out and p.is_relative_to(out) else shown_path(p)
            for p in self.files
        ]

    def record(self, out: Path | None) -> dict[str, Any]:
        """What the manifest says of this row (file names relative to ``out``)."""
        return {
            "row": self.index,
            "name": self.name,
            "line": self.line,
            "status": self.status if self.state != CREATED else "created",
            "endpoint": self.endpoint,
            "request_id": self.request_id,
            "attempt": self.attempt,
            "files": self.file_names(out),
            "error": self.error,
            "payload": self.payload,
            "updated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "next": self.next_step,
        }

    def __repr__(self) -> str:
        what = self.request_id or self.error or ""
        files = f" {len(self.files)} file(s)" if self.files else ""
        named = f"{self.index} ({self.name!r})" if self.name != self.index else f"{self.index}"
        return f"<BatchRow {named} {self.endpoint} {self.status} {what}{files}>".replace("  ", " ")
