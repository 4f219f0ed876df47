"""Resuming a batch (or re-opening a grid): what its store, its manifest and the ledger
say of each row, before anything is sent. The table of stored states and what a re-run
does with each: docs/decisions.md#batch-resume.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ..jobs.ledger import NOT_CREATED
from .batch_store import (
    CREATED,
    DONE,
    ENDED,
    LEFT,
    PENDING,
    SENDING,
    UNKNOWN,
    WAITING,
    RowRecord,
)
from .manifest import read_manifest

if TYPE_CHECKING:
    from .._protocols import ClientLike, JobLike
    from ..jobs.ledger import LedgerRow
    from .batch_row import BatchRow
    from .row_book import RowBook

__all__ = [
    "Verdict",
    "attach_all",
    "ledger_verdicts",
    "reconcile",
    "restore",
    "show_as_stored",
]


@dataclass(frozen=True)
class Verdict:
    """What the ledger says of one create whose answer was not seen: ``follow`` its task
    (``request_id``), ``send`` it again (it certainly made nothing), or ``unknown``
    (``why``: never sent again)."""

    kind: Literal["follow", "send", "unknown"]
    request_id: str | None = None
    why: str | None = None


def ledger_verdicts(
    client: ClientLike, tags: Mapping[str, int], written_at: Mapping[int, float | None]
) -> dict[int, Verdict]:
    """Per index (tag → index), the ledger's verdict on its create. ``written_at``: when
    each was reserved or planned; one older than the ledger's tags (``meta.tags_since``)
    cannot be told apart. Grids and batches settle unanswered creates so, and only so."""
    ledger = client.ledger
    if ledger is None:  # nothing on disk to ask: a task may exist
        why = "outcome unknown: no ledger to say whether its create left"
        return {index: Verdict("unknown", why=why) for index in tags.values()}
    found: dict[int, list[LedgerRow]] = {}
    for record in ledger.tagged(list(tags)):
        found.setdefault(tags[str(record.tag)], []).append(record)
    untold = len(found) < len(tags)
    said = ledger.query("SELECT value FROM meta WHERE key = 'tags_since'") if untold else []
    since = float(said[0][0]) if said else 0.0
    return {i: _verdict(found.get(i, []), written_at.get(i), since) for i in tags.values()}


def _verdict(records: list[LedgerRow], written_at: float | None, since: float) -> Verdict:
    """The record that says most decides: a task made, else a create that may have left,
    else one that certainly made nothing."""
    made = next((r for r in records if r.request_id is not None), None)
    if made is not None:
        return Verdict("follow", request_id=made.request_id)
    left = [r.state for r in records if r.state != NOT_CREATED]
    if not records and (written_at or 0.0) < since:
        why = "written by an older genwidgets, whose ledger did not tag which create was this one"
    elif not left:
        return Verdict("send")  # its intent never reached disk, or it surely made nothing
    else:
        why = f"its create may have left and no answer was kept ({left[0]})"
    return Verdict(
        "unknown",
        why=f"outcome unknown: {why}; not sent again. Look for it with client.history() "
        "before retrying it by hand",
    )


def reconcile(book: RowBook, rows: Sequence[BatchRow]) -> None:
    """Settle rows reserved whose create's answer was not seen (see the module docstring)."""
    verdicts = ledger_verdicts(
        book.client, {book.tag(r): r.index for r in rows}, {r.index: r.reserved_at for r in rows}
    )
    attach: list[tuple[BatchRow, str]] = []
    for row in rows:
        verdict = verdicts[row.index]
        with book.lock:
            if verdict.kind == "follow":
                row.request_id = verdict.request_id
                attach.append((row, str(verdict.request_id)))
            elif verdict.kind == "send":
                book.update(row, WAITING, release=True)
            else:
                row.error = verdict.why
                book.update(row, UNKNOWN)
    attach_all(book, attach)


def attach_all(book: RowBook, rows: Sequence[tuple[BatchRow, str]]) -> None:
    """Follow existing tasks: finished ones from the ledger (their local files), others
    re-attached by id (polled, never created)."""
    finished: dict[str, JobLike] = {}
    for endpoint in dict.fromkeys(row.endpoint for row, _ in rows):
        for job in book.client.history(endpoint, status="finished"):
            finished[str(job.request_id)] = job
    jobs = [finished.get(rid) or book.client.job(row.endpoint, rid) for row, rid in rows]
    for (row, _), job in zip(rows, jobs, strict=True):
        keep = row.state if row.state == LEFT else CREATED
        with book.lock:
            book.attach(row, job, created_at=job.submitted_at)
            if row.state != keep:
                book.update(row, keep)


def _answered_in_manifest(
    book: RowBook, rows: Sequence[BatchRow]
) -> tuple[list[tuple[BatchRow, str]], list[BatchRow]]:
    """Reserved rows whose create's answer, for the attempt reserved, is the manifest's
    last line of the row (with its request id), and the rest. A killed process flushed
    that line at once; its store and ledger writes may still have been queued."""
    said = read_manifest(book.out)
    found: list[tuple[BatchRow, str]] = []
    rest: list[BatchRow] = []
    for row in rows:
        line = said.get(row.index, {})
        request_id = line.get("request_id")
        if line.get("batch") == book.id and line.get("attempt") == row.attempt and request_id:
            row.request_id = str(request_id)
            found.append((row, row.request_id))
        else:
            rest.append(row)
    return found, rest


def show_as_stored(book: RowBook, row: BatchRow, record: RowRecord | None) -> None:
    """A row another live process holds, shown here as the store has it (ended there:
    as it ended; still going there: ``unknown`` here) and never written by this one: the
    store and the manifest are that process's to write. Under the batch's lock."""
    row.planned.prepared = None
    row.ended_at = time.time()
    if record is not None and record.state in ENDED:
        _as_stored(book, row, record)
        return
    row.state = UNKNOWN
    row.request_id = record.request_id if record is not None else None
    there = record.state if record is not None else "gone"
    row.error = f"taken by another process sending this batch ({there} there)"


def _as_stored(book: RowBook, row: BatchRow, record: RowRecord) -> None:
    """A row as its record says: state, request id, error, files (in its run's folder;
    a grid has none)."""
    row.state, row.request_id, row.error = record.state, record.request_id, record.error
    row.files = [book.out / name for name in record.files] if book.out is not None else []


def restore(book: RowBook) -> None:
    """Load a stored batch's rows into ``batch`` (see the module docstring)."""
    records = {r.index: r for r in book.store.rows(book.id)}
    if not records:
        return
    book.stored = True
    reserved: list[BatchRow] = []
    attach: list[tuple[BatchRow, str]] = []
    # a row another live process holds is its own: sending it, or (a batch) writing its
    # files; a grid writes none, so a task another process follows is followed here too
    held = {SENDING, CREATED} if book.out is not None else {SENDING}
    going = {r.state for r in records.values()} & held
    tables = book.store.tables  # a reservation's owner is a ledger's (``RowRecord.owner``)
    others = tables.alive_owners() - {tables.owner} if going else set()
    with book.lock:
        book.spent = book.store.spent(book.id)
        for row in book.rows:
            record = records.get(row.index)
            if record is None:
                continue
            if record.state in held and record.owner in others:
                show_as_stored(book, row, record)  # a live process is sending it
                continue
            _as_stored(book, row, record)
            row.attempt, row.reserved_at = record.attempt, record.reserved_at
            if row.state == DONE and not all(p.exists() for p in row.files):
                row.state = CREATED  # a file went missing: written again from the task
            if row.state != WAITING:
                row.planned.prepared = None  # sent before: never sent from this plan again
            # unknown: contact was lost with it; a grid shows every task's outputs
            if row.request_id and (
                row.state in (CREATED, LEFT, PENDING, UNKNOWN) or book.out is None
            ):
                attach.append((row, row.request_id))
            elif row.state == SENDING:
                reserved.append(row)
    if reserved:
        answered, reserved = _answered_in_manifest(book, reserved)
        attach.extend(answered)
    if reserved:
        reconcile(book, reserved)
    attach_all(book, attach)
    book.flush()
