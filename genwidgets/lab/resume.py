"""Resuming a batch (or re-opening a grid): what its store, its manifest and the ledger
say of each row, before anything is sent. The table of stored states and what a re-run
does with each: docs/decisions.md#batch-resume.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .batch_store import CREATED, DONE, LEFT, PENDING, SENDING, UNKNOWN, WAITING
from .manifest import read_manifest

if TYPE_CHECKING:
    from .batch_row import BatchRow
    from .row_book import RowBook

__all__ = ["restore"]


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
                book.show_as_stored(row, record)  # a live process is sending it
                continue
            book.as_stored(row, record)
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
        book.reconcile(reserved)
    book.attach_all(attach)
    book.flush()
