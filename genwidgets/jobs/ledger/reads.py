"""The ledger's reads: rows back from the file, each with its derived state.

A read waits (at most ``busy_timeout``) for the writes queued before it, then reads
on the file keeper's own connection: WAL readers do not wait for a writer. A row
that cannot be read (written by hand, by a foreign tool) is skipped with a log line.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Sequence
from typing import Any

from .file import LedgerFile
from .lease import HOST, pid_alive
from .rows import (
    COLUMN_NAMES,
    COLUMNS,
    FAILED,
    FINISHED,
    OK,
    OUTCOME_UNKNOWN,
    STATES,
    SUBMITTED,
    SUBMITTING,
    UNFINISHED,
    LedgerRow,
)
from .writer import WriteQueue
from .writes import LedgerWrites

#: tags asked in one query (SQLite's limit on variables is 32,766)
TAGS_PER_QUERY = 500

__all__ = ["QUICK_FLUSH", "Reader"]

#: how long a read made on the engine's loop waits for queued writes (a free file
#: writes them in milliseconds; a busy one is not waited for at all)
QUICK_FLUSH = 0.1
log = logging.getLogger("genwidgets")


class Reader:
    """The reads of one :class:`~genwidgets.jobs.ledger.Ledger`: rows newest first, with
    ``submitting`` rows nobody sends any more read as ``outcome_unknown``."""

    def __init__(
        self,
        file: LedgerFile,
        queue: WriteQueue,
        recorder: LedgerWrites,
        *,
        stale_after: float,
        clock: Callable[[], float],
    ) -> None:
        self._file = file
        self._queue = queue
        self._recorder = recorder
        #: seconds after which a ``submitting`` row of another host is ``outcome_unknown``
        self.stale_after = stale_after
        self._clock = clock

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every write made so far is on disk (or given up); False on timeout.
        The warnings kept meanwhile are raised here, on the caller's thread."""
        done = self._queue.flush(self._file.busy_timeout if timeout is None else timeout)
        self._file.deliver()
        return done

    def _derived_state(self, state: str, row_id: int, pid: int, host: str, at: float) -> str:
        if state != SUBMITTING:
            return state
        if self._recorder.sending(row_id):
            return SUBMITTING
        if host == HOST and (pid == os.getpid() or not pid_alive(pid)):
            return OUTCOME_UNKNOWN
        if self._clock() - at > self.stale_after:
            return OUTCOME_UNKNOWN
        return SUBMITTING

    def _readable(self, found: list[tuple[Any, ...]]) -> list[LedgerRow]:
        """The rows that can be read; a damaged one (written by hand, by a foreign tool)
        is skipped with a log line, so one bad row never stops a history or a poller."""
        rows = []
        for values in found:
            try:
                rows.append(self._row(values))
            except (ValueError, TypeError, KeyError) as exc:
                log.warning(
                    "genwidgets: skipped ledger row %s of %s: %s", values[0], self._file.path, exc
                )
        return rows

    def _row(self, values: tuple[Any, ...]) -> LedgerRow:
        fields = dict(zip(COLUMN_NAMES, values, strict=True))
        fields["state"] = self._derived_state(
            fields["state"], fields["id"], fields["pid"], fields["host"], fields["submitted_at"]
        )
        fields["payload"] = json.loads(fields["payload"])
        fields["outputs"] = json.loads(fields["outputs"])
        fields["ok"] = None if fields["ok"] is None else bool(fields["ok"])
        return LedgerRow(**fields)

    def rows(
        self,
        gateway: str | None = None,
        *,
        endpoint: str | None = None,
        status: str | None = None,
        limit: int | None = None,
    ) -> list[LedgerRow]:
        """Rows, newest first (the filters: :meth:`~genwidgets.jobs.ledger.Ledger.rows`)."""
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
            raise TypeError(f"limit must be an int or None, not {limit!r}")
        if limit is not None and limit < 0:
            raise ValueError(f"limit must be 0 or more, not {limit}")
        if status is not None and not isinstance(status, str):
            raise TypeError(f"status must be a string or None, not {status!r}")
        clauses: list[str] = []
        params: list[Any] = []
        for column, value in (("gateway", gateway), ("endpoint", endpoint)):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        wanted_state: str | None = None
        if status is not None:
            name = status.strip().lower()
            if name == UNFINISHED:
                clauses.append("state = ? AND request_id IS NOT NULL")
                params.append(SUBMITTED)
            elif name in (SUBMITTING, OUTCOME_UNKNOWN):
                clauses.append("state IN (?, ?)")
                params += [SUBMITTING, OUTCOME_UNKNOWN]
                wanted_state = name
            elif name in STATES:
                clauses.append("state = ?")
                params.append(name)
            elif name in (OK, FAILED):
                clauses.append("state = ? AND ok = ?")
                params += [FINISHED, int(name == OK)]
            else:
                clauses.append("upper(status) = upper(?)")
                params.append(status.strip())
        self.flush()
        sql = f"SELECT {COLUMNS} FROM tasks"
        if clauses:
            sql += " WHERE " + " AND ".join(f"({c})" for c in clauses)
        sql += " ORDER BY id DESC"
        if limit is not None and wanted_state is None:
            sql += f" LIMIT {limit}"
        found = self._readable(self._file.read(sql, tuple(params)))
        if wanted_state is not None:
            found = [row for row in found if row.state == wanted_state]
            if limit is not None:
                found = found[:limit]
        return found

    def get(self, gateway: str, request_id: str) -> LedgerRow | None:
        """The (newest) row of one task, or None."""
        self.flush()
        found = self._file.read(
            f"SELECT {COLUMNS} FROM tasks WHERE gateway = ? AND request_id = ? "
            "ORDER BY id DESC LIMIT 1",
            (gateway, request_id),
        )
        readable = self._readable(found)
        return readable[0] if readable else None

    def row(self, row_id: int) -> LedgerRow | None:
        """A row by its id or intent ticket."""
        self.flush()
        found = self._file.read(
            f"SELECT {COLUMNS} FROM tasks WHERE id = ?", (self._recorder.row_of(row_id),)
        )
        readable = self._readable(found)
        return readable[0] if readable else None

    def by_ids(self, row_ids: tuple[int, ...]) -> list[LedgerRow]:
        """The rows of ``row_ids`` (say, those a claim took), newest first; no wait."""
        marks = ", ".join("?" * len(row_ids))
        found = self._file.read(
            f"SELECT {COLUMNS} FROM tasks WHERE id IN ({marks}) ORDER BY id DESC", row_ids
        )
        return self._readable(found)

    def tagged(self, tags: Sequence[str]) -> list[LedgerRow]:
        """The rows whose intent was written with one of ``tags``, oldest first."""
        self.flush()
        found: list[LedgerRow] = []
        for start in range(0, len(tags), TAGS_PER_QUERY):
            some = tuple(tags[start : start + TAGS_PER_QUERY])
            marks = ", ".join("?" * len(some))
            found += self._readable(
                self._file.read(
                    f"SELECT {COLUMNS} FROM tasks WHERE tag IN ({marks}) ORDER BY id", some
                )
            )
        return sorted(found, key=lambda row: row.id)

    def run_times(self, gateway: str, endpoint: str, *, limit: int) -> list[tuple[Any, ...]]:
        """The run-time model's rows, unparsed; waits for queued writes only while the
        file is not busy (it is called on the engine's loop)."""
        if not self._queue.stalled:
            self._queue.flush(QUICK_FLUSH)
        return self._file.read(
            "SELECT request_id, endpoint, payload, handle_at, running_at, done_at, "
            "finished_at, ok FROM tasks "
            "WHERE gateway = ? AND endpoint = ? AND state = ? AND finished_at IS NOT NULL "
            "ORDER BY id DESC LIMIT ?",
            (gateway, endpoint, FINISHED, int(limit)),
        )
