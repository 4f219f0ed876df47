"""A batch's rows at their end: files written, failures said, deadlines kept.

Run on the batch's finisher thread (never the engine's): :func:`finish_row` writes an
ended row's outputs into the batch's folder (:mod:`.outfiles`) or says why it failed;
:func:`check_deadlines` cancels (or leaves and lists) rows past the batch's ``timeout``.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ..errors import GenwidgetsError
from .batch_store import CANCELLED, CREATED, DONE, FAILED, LEFT
from .outfiles import write_outputs

if TYPE_CHECKING:
    from .batch_row import BatchRow, RunningBatch

__all__ = ["check_deadlines", "finish_row"]


def finish_row(batch: RunningBatch, row: BatchRow) -> None:
    """A row's task ended: write its files (done), or say why it failed."""
    job = row.job
    if job is None or row.state not in (CREATED, LEFT):
        return
    result = job.last_result
    if result is None:
        try:
            result = job.result(timeout=0)
        except Exception as exc:  # the task ended without a result (gone, client closed)
            result = None
            error = f"{type(exc).__name__}: {exc}"
    if result is not None and result.ok:
        try:
            files = write_outputs(
                batch.out,
                row.planned.stem,
                list(result.outputs),
                own={p.name for p in row.files},
                batch=batch.id,
                row=row.index,
                endpoint=row.endpoint,
                request_id=row.request_id,
                payload=row.payload,
            )
        except (OSError, GenwidgetsError, ValueError) as exc:
            with batch._lock:
                row.error = f"its files were not written: {type(exc).__name__}: {exc}"
                batch._update(row, FAILED)
            return
        with batch._lock:
            row.files, row.error = files, None
            batch._update(row, DONE)
        return
    if result is not None:
        kind = f"{result.error_type}: " if result.error_type else ""
        error = f"{kind}{result.error or result.status}"
    with batch._lock:
        if row.timed_out:
            row.error = f"timed out after {batch.timeout:g} s; cancelled at the gateway ({error})"
            batch._update(row, FAILED)
        elif row.user_cancelled:
            row.error = error
            batch._update(row, CANCELLED)
        else:
            row.error = error
            batch._update(row, FAILED)


def check_deadlines(batch: RunningBatch) -> None:
    """Rows past ``timeout``: cancelled at the gateway, or left running and listed."""
    if batch.timeout is None:
        return
    now = time.time()
    late = []
    with batch._lock:
        for row in batch.rows:
            if (
                row.state == CREATED
                and not row.timed_out
                and row.created_at is not None
                and now - row.created_at > batch.timeout
                and row.job is not None
                and not row.job.done()
            ):
                row.timed_out = True
                if batch.on_timeout == "leave":
                    row.error = f"still running after {batch.timeout:g} s: left running"
                    batch._update(row, LEFT)
                else:
                    late.append(row)
    for row in late:
        assert row.job is not None
        row.job.request_cancel()
