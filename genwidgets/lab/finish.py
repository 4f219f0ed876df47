"""A batch's rows at their end, on its finisher thread: files written, failures said
by meaning, lost contact followed again, deadlines kept.
docs/decisions.md#batch-row-states.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from .._client import lost_contact
from ..errors import ClientClosed, GenwidgetsError, RequestNotFound
from .batch_store import CANCELLED, CREATED, DONE, FAILED, LEFT, PENDING, TIMED_OUT, UNKNOWN
from .outfiles import write_outputs

if TYPE_CHECKING:
    from pathlib import Path

    from ..protocol.records import Result
    from .batch_row import BatchRow
    from .row_book import RowBook

__all__ = ["CONTACT_PATIENCE", "check_deadlines", "finish_row", "follow_again", "write_files"]

#: with no ``timeout``, how long a row keeps following a task it lost contact with
CONTACT_PATIENCE = 900.0
#: the first wait before following a lost task again, doubled each time (seconds)
FOLLOW_BACKOFF = 2.0
FOLLOW_BACKOFF_MAX = 60.0


def finish_row(book: RowBook, row: BatchRow) -> None:
    """A row's task ended (or its following did): sort it by what ended it."""
    job = row.job
    if job is None or row.state not in (CREATED, LEFT, PENDING):
        return
    result = job.last_result
    error = ""
    if result is None and lost_contact(job):
        lost = job.exception()
        _lost_contact(book, row, f"{type(lost).__name__}: {lost}")
        return
    if result is None:
        try:
            result = job.result(timeout=0)
        except ClientClosed as exc:
            error = f"{type(exc).__name__}: {exc}"
            with book.lock:
                row.error = f"contact lost: its client was closed ({error}); the task may still run"
                book.update(row, UNKNOWN)
            return
        except Exception as exc:  # the gateway said the task is gone, or an odd end
            error = f"{type(exc).__name__}: {exc}"
            if isinstance(exc, RequestNotFound) and getattr(book.client, "embedded", False):
                error = (
                    "made by the embedded simulator of a process that has ended: it cannot "
                    "be resumed; retry_failed() (genwidgets batch --retry-failed) makes it "
                    "again, free on the simulator"
                )
    if result is not None and result.ok:
        _write(book, row, result)
        return
    if result is not None:
        kind = f"{result.error_type}: " if result.error_type else ""
        error = f"{kind}{result.error or result.status}"
    with book.lock:
        if row.timed_out:
            row.error = f"timed out after {book.timeout:g} s; cancelled at the gateway ({error})"
            book.update(row, TIMED_OUT)
        else:  # cancelled (by a deadline or a person) is not the gateway's failure
            cancelled = row.user_cancelled or (result is not None and result.status == "CANCELLED")
            row.error = error
            book.update(row, CANCELLED if cancelled else FAILED)


def _write(book: RowBook, row: BatchRow, result: Result) -> None:
    """A task done: its files into the batch's folder, or ``files pending`` (the task is
    paid and its outputs are kept: never created again for want of a folder). A grid
    has no folder: its outputs are the ledger's."""
    files: list[Path] = []
    if book.out is not None:
        try:
            files = write_outputs(
                book.out,
                row.planned.stem,
                list(result.outputs),
                own={p.name for p in row.files},
                batch=book.id,
                row=row.index,
                endpoint=row.endpoint,
                request_id=row.request_id,
                payload=row.payload,
            )
        except (OSError, GenwidgetsError, ValueError) as exc:
            with book.lock:
                row.error = (
                    f"done at the gateway; its files were not written: {type(exc).__name__}: {exc}"
                )
                book.update(row, PENDING)
            return
    with book.lock:
        row.files, row.error = files, None
        book.update(row, DONE)


def _lost_contact(book: RowBook, row: BatchRow, why: str) -> None:
    """Polling gave up without word of the task: follow it again after a backoff, until
    the row's deadline; then ``unknown``, its request id kept for a resume."""
    now = time.time()
    with book.lock:
        row.lost += 1
        if row.lost_since is None:
            row.lost_since = now
        if book.timeout is not None and row.created_at is not None:
            deadline = row.created_at + book.timeout
        else:
            deadline = row.lost_since + CONTACT_PATIENCE
        if now >= deadline:
            row.error = (
                f"contact lost ({why}); the task may still run or be done. Running the batch "
                "again re-attaches it (no new create)"
            )
            book.update(row, UNKNOWN)
            return
        wait = min(FOLLOW_BACKOFF * 2 ** (row.lost - 1), FOLLOW_BACKOFF_MAX)
        row.follow_at = min(now + wait, deadline)
        row.error = f"contact lost ({why}); following it again (no new create)"
    book.dirty = True  # the finisher tells the views


def follow_again(book: RowBook, row: BatchRow) -> None:
    """Re-attach a row whose task this process lost contact with (polled anew)."""
    assert row.request_id is not None
    try:
        job = book.client.job(row.endpoint, row.request_id)
    except GenwidgetsError as exc:  # the client is closed: the task may still run
        with book.lock:
            row.error = f"contact lost: {type(exc).__name__}: {exc}; the task may still run"
            book.update(row, UNKNOWN)
        return
    with book.lock:
        row.follow_at = None
        book.attach(row, job, created_at=row.created_at)


def write_files(book: RowBook, rows: list[BatchRow]) -> int:
    """Write the files of rows done whose files were not written; returns how many are
    done now. Their tasks are read back (the ledger keeps their outputs), never made."""
    written = 0
    for row in rows:
        if row.state != PENDING or row.request_id is None:
            continue
        if row.job is None:
            follow_again(book, row)
            if row.job is None:
                continue
        job = row.job
        if not job.done():
            continue  # polled again: the finisher writes it when its answer comes
        finish_row(book, row)
        written += row.state == DONE
    return written


def check_deadlines(book: RowBook) -> None:
    """Rows past ``timeout``: cancelled at the gateway, or left running and listed; rows
    whose lost task is due to be followed again are."""
    now = time.time()
    late = []
    due = []
    with book.lock:
        for row in book.rows:
            if row.follow_at is not None and row.follow_at <= now and row.state in (CREATED, LEFT):
                due.append(row)
                continue
            if (
                book.timeout is not None
                and row.state == CREATED
                and not row.timed_out
                and not row.lost  # out of contact: its deadline ends it as unknown instead
                and row.created_at is not None
                and now - row.created_at > book.timeout
                and row.job is not None
                and not row.job.done()
            ):
                row.timed_out = True
                if book.on_timeout == "leave":
                    row.error = f"still running after {book.timeout:g} s: left running"
                    book.update(row, LEFT)
                else:
                    late.append(row)
    for row in due:
        follow_again(book, row)
    for row in late:
        assert row.job is not None
        row.job.request_cancel()
