"""Resuming a batch: what its store, its manifest and the ledger say of each row, before
anything is sent.

A row another live process is sending is left to it. A row whose task exists is
re-attached (its result from the ledger when finished, else polled), never created
again; a reserved row is looked up in the manifest, then in the ledger by the tag its
create's intent was written with: a create that may have left is ``unknown`` (listed,
never resent), and only one that certainly made nothing is sent again. The table of
stored states and what a re-run does with each: docs/decisions.md#batch-resume.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

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

__all__ = ["followed", "found_by_tag", "reconcile", "restore", "show_as_stored", "tags_since"]


def found_by_tag(client: ClientLike, tags: Mapping[str, int]) -> dict[int, LedgerRow]:
    """The ledger's record that says most of each create written with one of ``tags``
    (tag → the row's or cell's index): a task made, else a create whose outcome is
    unknown, else one that certainly made nothing. Grids and batches find their tasks so."""
    ledger = client.ledger
    if ledger is None or not tags:
        return {}
    found: dict[int, list[LedgerRow]] = {}
    for record in ledger.tagged(list(tags)):
        found.setdefault(tags[str(record.tag)], []).append(record)
    return {
        index: next((r for r in records if r.request_id is not None), None)
        or next((r for r in records if r.state != NOT_CREATED), records[0])
        for index, records in found.items()
    }


def followed(client: ClientLike, tasks: Sequence[tuple[str, str]]) -> list[JobLike]:
    """A job for each existing task (endpoint, request id): a finished one from the
    ledger (its local files), others re-attached by id (polled, never created)."""
    finished: dict[str, JobLike] = {}
    for endpoint in dict.fromkeys(endpoint for endpoint, _ in tasks):
        for job in client.history(endpoint, status="finished"):
            finished[str(job.request_id)] = job
    return [finished.get(rid) or client.job(endpoint, rid) for endpoint, rid in tasks]


def tags_since(client: ClientLike) -> float | None:
    """When the client's ledger began writing tags (intents before it carry none);
    None without a ledger."""
    ledger = client.ledger
    if ledger is None:
        return None
    said = ledger.query("SELECT value FROM meta WHERE key = 'tags_since'")
    return float(said[0][0]) if said else 0.0


def reconcile(book: RowBook, rows: Sequence[BatchRow]) -> None:
    """Settle rows reserved whose create's answer was not seen (see the module docstring)."""
    ledger = book.client.ledger
    attach: list[tuple[BatchRow, str]] = []
    with book.lock:
        if ledger is None:  # nothing on disk to ask: a task may exist
            for row in rows:
                row.error = "outcome unknown: no ledger to say whether its create left"
                book.update(row, UNKNOWN)
            return
    records = found_by_tag(book.client, {book.tag(r): r.index for r in rows})
    tagged_since = (tags_since(book.client) or 0.0) if len(records) < len(rows) else 0.0
    for row in rows:
        record = records.get(row.index)
        with book.lock:
            if record is None and (row.reserved_at or 0.0) < tagged_since:
                row.error = (
                    "outcome unknown: reserved by an older genwidgets, whose ledger "
                    "did not say which create was this row's; not sent again. Look for "
                    "it with client.history() before retrying it by hand"
                )
                book.update(row, UNKNOWN)
            elif record is None:
                book.update(row, WAITING, release=True)  # its intent never reached disk
            elif record.request_id is not None:
                row.request_id = record.request_id
                attach.append((row, record.request_id))
            elif record.state == NOT_CREATED:
                book.update(row, WAITING, release=True)
            else:
                row.error = (
                    f"outcome unknown: its create went out and no answer was kept "
                    f"({record.state}); not sent again. Look for it with "
                    "client.history() before retrying it by hand"
                )
                book.update(row, UNKNOWN)
    _attach_all(book, attach)


def _attach_all(book: RowBook, rows: Sequence[tuple[BatchRow, str]]) -> None:
    """Follow existing tasks: finished ones from the ledger (their local files), others
    re-attached by id (polled, never created)."""
    jobs = followed(book.client, [(row.endpoint, request_id) for row, request_id in rows])
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
        row.state, row.request_id, row.error = record.state, record.request_id, record.error
        row.files = [book.out / name for name in record.files]
        return
    row.state = UNKNOWN
    row.request_id = record.request_id if record is not None else None
    there = record.state if record is not None else "gone"
    row.error = f"taken by another process sending this batch ({there} there)"


def restore(book: RowBook) -> None:
    """Load a stored batch's rows into ``batch`` (see the module docstring)."""
    records = {r.index: r for r in book.store.rows(book.id)}
    if not records:
        return
    book.stored = True
    reserved: list[BatchRow] = []
    attach: list[tuple[BatchRow, str]] = []
    going = {r.state for r in records.values()} & {SENDING, CREATED}
    tables = book.store.tables  # a reservation's owner is a ledger's (``RowRecord.owner``)
    others = tables.alive_owners() - {tables.owner} if going else set()
    with book.lock:
        book.spent = book.store.spent(book.id)
        for row in book.rows:
            record = records.get(row.index)
            if record is None:
                continue
            if record.state in (SENDING, CREATED) and record.owner in others:
                show_as_stored(book, row, record)  # a live process is sending it
                continue
            row.state, row.attempt = record.state, record.attempt
            row.request_id, row.error = record.request_id, record.error
            row.files = [book.out / name for name in record.files]
            row.reserved_at = record.reserved_at
            if row.state == DONE and not all(p.exists() for p in row.files):
                row.state = CREATED  # a file went missing: written again from the task
            if row.state != WAITING:
                row.planned.prepared = None  # sent before: never sent from this plan again
            if row.state in (CREATED, LEFT, PENDING, UNKNOWN) and row.request_id:
                attach.append((row, row.request_id))  # unknown: contact was lost with it
            elif row.state == SENDING:
                reserved.append(row)
    if reserved:
        answered, reserved = _answered_in_manifest(book, reserved)
        attach.extend(answered)
    if reserved:
        reconcile(book, reserved)
    _attach_all(book, attach)
    book.flush()
