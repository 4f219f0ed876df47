"""Connects jobs to the ledger and the output downloads: nothing paid for is lost.

Called on the engine thread. Ledger and download failures are logged and
never stop polling or fail a job: the gateway's answer still reaches the user.
"""

from __future__ import annotations

import dataclasses
import logging
import sqlite3
import time
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._config import redact
from ..errors import DownloadError, GenwidgetsError, RequestNotFound
from ..protocol.records import Result, Status
from .downloads import Opener, download_outputs_async
from .ledger import Ledger
from .ledger.rows import COPY_FAILED_AT, COPY_RETRY_PAUSE
from .output_files import size_of

if TYPE_CHECKING:
    from .job import Job

log = logging.getLogger("genwidgets")
#: the ``error_type`` a task ended by the gateway's "not found" is recorded with: no
#: answer about the task, so asking for it again by its id asks the gateway again
GONE = "request_not_found"


class LedgerRecorder:
    """Writes every status change and result of a client's jobs, then saves the outputs."""

    def __init__(
        self,
        ledger: Ledger | None,
        gateway: str,
        *,
        opener: Opener | None = None,
        download: bool = True,
        root: Path | None = None,
        timeout: float = 60.0,
        fingerprint: str | None = None,
    ) -> None:
        """``opener(url)`` streams an output (the gateway's ``open_output``, which keeps
        the key to the gateway's own origin); without one, outputs are not downloaded.
        Outputs go to the gateway's own folder; each download ends within ``timeout``
        seconds plus its transfer (docs/decisions.md#reading-answers). ``fingerprint``:
        the client's key (``_config.Secret.fingerprint``), whose "not found" says nothing
        of a task another key made. ``ledger`` None: a ledger that could not be opened;
        the outputs are still saved (nothing paid for is lost for want of a ledger)."""
        self.ledger = ledger
        self.gateway = gateway
        self.fingerprint = fingerprint
        self.opener = opener
        self.download = download and opener is not None
        self.root = root
        self.timeout = timeout

    def __repr__(self) -> str:
        return f"LedgerRecorder({self.ledger!r}, gateway={self.gateway!r})"

    def _record(self, what: str, write: str, job: Job, *args: Any, **kwargs: Any) -> None:
        """The ledger's ``writes.<write>(gateway, request_id, ...)``: a failure is logged,
        never raised; nothing without a ledger."""
        if self.ledger is None:
            return
        try:
            getattr(self.ledger.writes, write)(self.gateway, job.request_id, *args, **kwargs)
        except (GenwidgetsError, sqlite3.Error, OSError) as exc:
            log.warning("genwidgets: could not record %s in the ledger: %s", what, redact(str(exc)))

    def on_status(self, job: Job, status: Status) -> None:
        self._record("a status", "record_status", job, status)

    def on_gone(self, job: Job, error: RequestNotFound) -> None:
        """The gateway no longer knows the task: record it as ended, so ``resume()``
        stops re-attaching it, with the error for the history; never over a result
        recorded before, nor for a task another key made (the gateway hides it from
        ours): docs/decisions.md#a-404-never-overwrites-an-end."""
        last = job.last_status.status if job.last_status else "UNKNOWN"
        gone = Result(
            status=last,
            error=f"the gateway no longer knows this task: {error.message}",
            error_type=GONE,
            endpoint=job.endpoint,
            request_id=job.request_id,
        )
        self._record(
            "a lost task",
            "record_result",
            job,
            gone,
            gone=True,
            fingerprint=self.fingerprint,
        )

    async def on_result(self, job: Job, result: Result) -> None:
        self._record("a result", "record_result", job, result, copied=self.download)
        await self.copy_outputs(job, result)

    async def copy_outputs(
        self, job: Job, result: Result, indexes: Collection[int] | None = None
    ) -> None:
        """Save the outputs of ``result`` (only those of ``indexes``: a recorded result's
        copies pending, docs/decisions.md#copies-pending; an output copied before is
        never fetched again) and record each path, or why not; the recorded end itself
        is never written here. An output whose copy failed less than
        :data:`COPY_RETRY_PAUSE` seconds ago is not asked for again yet."""
        if indexes is not None:
            now = time.time()
            result = dataclasses.replace(
                result,
                outputs=[
                    o
                    for o in result.outputs
                    if o.index in indexes and not _failed_within(o.raw, now, COPY_RETRY_PAUSE)
                ],
            )
        if not (self.download and self.opener is not None and result.outputs):
            return

        def saved(index: int, path: Path) -> None:
            written = next((o for o in result.outputs if o.path == path), None)
            self._record(
                "an output path",
                "record_output_path",
                job,
                index,
                path,
                sha256=written.sha256 if written is not None else None,
                size=size_of(path),
                content_type=written.content_type if written is not None else None,
            )

        try:
            await download_outputs_async(
                result,
                opener=self.opener,
                root=self.root,
                on_saved=saved,
                timeout=self.timeout,
                gateway=self.gateway,
            )
        except DownloadError as exc:
            log.warning("genwidgets: %s", redact(str(exc)))
            for index, reason in exc.failures:  # the result goes on; the ledger says which
                self._record(
                    "a failed download",
                    "record_output_path",
                    job,
                    index,
                    None,
                    error=reason,
                    expired=index in exc.expired,
                    capped=index in exc.capped,
                    other_bytes=index in exc.other_bytes,
                    paused=indexes is not None,  # a later copy: not asked again at once
                )
        except (GenwidgetsError, OSError) as exc:
            log.warning("genwidgets: %s", redact(str(exc)))


def _failed_within(record: Mapping[str, Any], now: float, seconds: float) -> bool:
    """Whether the ledger ``record`` of an output says its copy failed less than
    ``seconds`` ago (docs/decisions.md#copies-pending)."""
    failed = record.get(COPY_FAILED_AT)
    return isinstance(failed, (int, float)) and 0 <= now - failed < seconds
