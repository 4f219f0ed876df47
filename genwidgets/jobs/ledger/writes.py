"""The ledger's writes, in the order of the engine's calls (a mixin of the Ledger).

Every write is a small function queued to the writer thread (:mod:`.writer`);
the callers get a future and never wait for the file, except
:meth:`Recording.record_intent` (at most ``intent_wait``) and
:meth:`Recording.claim_unfinished` (``resume()``, which must know its rows).
"""

from __future__ import annotations

import concurrent.futures
import itertools
import json
import logging
import os
import sqlite3
import threading
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..._config import redact
from ...errors import LedgerError, LedgerWarning
from ...protocol.records import Handle, Result, Status
from .lease import HOST, Claim, Owner, alive_owners, claim, heartbeat, pid_alive
from .rows import COLUMNS, FINISHED, NOT_CREATED, OUTCOME_UNKNOWN, SUBMITTED, SUBMITTING, LedgerRow
from .scrub import error_text, output_record, scrub_payload
from .writer import Op

__all__ = ["Recording", "in_flight", "in_flight_lock"]

log = logging.getLogger("genwidgets")

#: row ids this process is sending right now, per ledger file (shared by Ledger instances)
in_flight: dict[str, set[int]] = {}
in_flight_lock = threading.Lock()
_tickets = itertools.count(1)  # intent tickets (negated), unique in this process


def _done(value: Any) -> concurrent.futures.Future[Any]:
    future: concurrent.futures.Future[Any] = concurrent.futures.Future()
    future.set_result(value)
    return future


def _latest_outputs(
    conn: sqlite3.Connection, gateway: str, request_id: str
) -> tuple[int, list[dict[str, Any]]] | None:
    """The id and outputs of the newest row recorded for a task, or None."""
    found = conn.execute(
        "SELECT id, outputs FROM tasks WHERE id = "
        "(SELECT max(id) FROM tasks WHERE gateway = ? AND request_id = ?)",
        (gateway, request_id),
    ).fetchone()
    if found is None:
        return None
    row_id, outputs = found
    return row_id, json.loads(outputs)


def left_to_other_kernels(count: int, stacklevel: int = 4) -> None:
    """One warning: ``count`` unfinished tasks were left to the live kernel polling them
    (``stacklevel`` points at the user's call of ``history()`` or ``resume()``)."""
    warnings.warn(
        f"genwidgets: {count} unfinished task(s) are being polled by another live kernel "
        "and were left to it; resume(force=True) takes them anyway.",
        LedgerWarning,
        stacklevel=stacklevel,
    )


class Recording:
    """The ``record_*`` writes and the lease claim of :class:`~genwidgets.jobs.ledger.Ledger`."""

    path: Path
    intent_wait: float
    lease_ttl: float
    _key: str
    _ids: dict[int, int]
    _owner: Owner
    _leasing: bool
    _last_status: dict[tuple[str, str], tuple[str, int | None]]
    _clock: Callable[[], float]

    if TYPE_CHECKING:  # provided by the Ledger

        def _put(self, op: Op | None) -> concurrent.futures.Future[Any]: ...
        def _deliver(self) -> None: ...
        def _stalled(self) -> bool: ...
        def _quietly(self, what: str, future: concurrent.futures.Future[Any]) -> None: ...
        def _read(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]: ...
        def _readable(self, found: list[tuple[Any, ...]]) -> list[LedgerRow]: ...

    # ------------------------------------------------------------------ in flight

    def _in_flight(self) -> set[int]:
        return in_flight.setdefault(self._key, set())

    def _settle(self, row_id: int) -> None:
        with in_flight_lock:
            self._in_flight().discard(row_id)

    # ------------------------------------------------------------------ writes

    def _row_of(self, row_id: int) -> int:
        """The row id of an intent ticket (see :meth:`record_intent`), or ``row_id`` itself."""
        return self._ids.get(row_id, row_id) if row_id < 0 else row_id

    def record_intent(self, *, gateway: str, endpoint: str, payload: Mapping[str, Any]) -> int:
        """Write the intent before the create request leaves; returns the row id.

        Waits up to ``intent_wait`` seconds for the row to be on disk (a few
        milliseconds normally), and not at all while the writer is stalled on a
        busy file. If the file is busy (locked by another process) the row stays
        queued, ahead of every later write of this task, and a negative ticket
        standing for the row is returned: every method taking a row id accepts it.
        See docs/decisions.md#the-ledger-and-the-engine.
        """
        for name, value in (("gateway", gateway), ("endpoint", endpoint)):
            if not isinstance(value, str) or not value:
                raise ValueError(f"{name} must be a non-empty string, not {value!r}")
        stored = json.dumps(scrub_payload(payload))
        now = self._clock()
        with in_flight_lock:
            ticket = -next(_tickets)

        def insert(conn: sqlite3.Connection) -> int:
            cursor = conn.execute(
                "INSERT INTO tasks (gateway, endpoint, state, payload, pid, host, "
                "submitted_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (gateway, endpoint, SUBMITTING, stored, os.getpid(), HOST, now, now),
            )
            row_id = cursor.lastrowid
            assert row_id is not None
            self._ids[ticket] = row_id
            with in_flight_lock:
                self._in_flight().add(row_id)
            return row_id

        writer_stalled = self._stalled()
        future = self._put(insert)
        try:
            row_id: int = future.result(timeout=0.0 if writer_stalled else self.intent_wait)
        except concurrent.futures.TimeoutError:
            self._quietly("a task intent", future)
            return ticket
        except sqlite3.Error:  # given up: the file cannot be written, a LedgerWarning says so
            self._deliver()
            return ticket
        self._deliver()
        return row_id

    def record_handle(self, row_id: int, handle: Handle) -> concurrent.futures.Future[None]:
        """The create request answered with a task handle: the task exists, and this
        ledger holds its lease (see :mod:`.lease`). Queued; returns the write's future."""
        now = self._clock()
        owner = self._owner.name
        self._leasing = True

        def update(conn: sqlite3.Connection) -> None:
            row = self._row_of(row_id)
            try:
                changed = conn.execute(
                    "UPDATE tasks SET request_id = ?, state = ?, status_url = ?, "
                    "response_url = ?, cancel_url = ?, queue_position = ?, handle_at = ?, "
                    "updated_at = ?, owner = ? WHERE id = ?",
                    (
                        handle.request_id,
                        SUBMITTED,
                        redact(handle.status_url),
                        redact(handle.response_url),
                        redact(handle.cancel_url),
                        handle.queue_position,
                        now,
                        now,
                        owner,
                        row,
                    ),
                ).rowcount
                if not changed:
                    raise LedgerError(f"no ledger row {row} in {self.path}")
                heartbeat(conn, owner, now)
            finally:
                self._settle(row)

        future = self._put(update)
        self._quietly("the task handle", future)
        return future

    def record_create_failed(
        self, row_id: int, error: str, *, created_nothing: bool
    ) -> concurrent.futures.Future[None]:
        """The create request failed: ``not_created`` if certain, else ``outcome_unknown``."""
        now = self._clock()
        state = NOT_CREATED if created_nothing else OUTCOME_UNKNOWN
        text = error_text(error)

        def update(conn: sqlite3.Connection) -> None:
            row = self._row_of(row_id)
            try:
                changed = conn.execute(
                    "UPDATE tasks SET state = ?, error = ?, updated_at = ?, finished_at = ? "
                    "WHERE id = ? AND request_id IS NULL",
                    (state, text, now, now if created_nothing else None, row),
                ).rowcount
                if not changed:
                    exists = conn.execute("SELECT 1 FROM tasks WHERE id = ?", (row,))
                    if exists.fetchone() is None:
                        raise LedgerError(f"no ledger row {row} in {self.path}")
            finally:
                self._settle(row)

        future = self._put(update)
        self._quietly("the failed create", future)
        return future

    def record_attach(
        self,
        gateway: str,
        handle: Handle,
        *,
        payload: Mapping[str, Any] | None = None,
    ) -> concurrent.futures.Future[int]:
        """Make sure a task re-attached by request id has a row, leased by this ledger;
        the future holds the row id."""
        now = self._clock()
        owner = self._owner.name
        stored = json.dumps(scrub_payload(payload or {}))
        self._leasing = True

        def upsert(conn: sqlite3.Connection) -> int:
            heartbeat(conn, owner, now)
            found = conn.execute(
                "SELECT max(id) FROM tasks WHERE gateway = ? AND request_id = ?",
                (gateway, handle.request_id),
            ).fetchone()[0]
            if found is not None:
                conn.execute(
                    "UPDATE tasks SET owner = ? WHERE id = ? AND state = ?",
                    (owner, found, SUBMITTED),
                )
                return int(found)
            cursor = conn.execute(
                "INSERT INTO tasks (gateway, endpoint, request_id, state, queue_position, "
                "payload, status_url, response_url, cancel_url, pid, host, submitted_at, "
                "handle_at, updated_at, owner) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    gateway,
                    handle.endpoint,
                    handle.request_id,
                    SUBMITTED,
                    handle.queue_position,
                    stored,
                    redact(handle.status_url),
                    redact(handle.response_url),
                    redact(handle.cancel_url),
                    os.getpid(),
                    HOST,
                    now,
                    now,
                    now,
                    owner,
                ),
            )
            assert cursor.lastrowid is not None
            return cursor.lastrowid

        future = self._put(upsert)
        self._quietly("the re-attached task", future)
        return future

    def record_status(
        self, gateway: str, request_id: str, status: Status
    ) -> concurrent.futures.Future[bool]:
        """Note a status change; repeated equal statuses write nothing.

        Queued; the future holds whether a row changed (False for an unknown task,
        a repeat, or a task whose final result is already recorded).
        """
        key = (gateway, request_id)
        seen = (status.status, status.queue_position)
        if self._last_status.get(key) == seen:
            return _done(False)
        self._last_status[key] = seen
        now = self._clock()
        name = status.status.upper()
        running = now if name != "IN_QUEUE" and not status.done else None
        done = now if status.done else None

        def update(conn: sqlite3.Connection) -> bool:
            return bool(
                conn.execute(
                    "UPDATE tasks SET status = ?, queue_position = ?, updated_at = ?, "
                    "running_at = coalesce(running_at, ?), done_at = coalesce(done_at, ?) "
                    "WHERE id = (SELECT max(id) FROM tasks WHERE gateway = ? AND "
                    "request_id = ?) AND finished_at IS NULL "
                    "AND (status IS NOT ? OR queue_position IS NOT ?)",
                    (
                        redact(status.status),
                        status.queue_position,
                        now,
                        running,
                        done,
                        gateway,
                        request_id,
                        redact(status.status),
                        status.queue_position,
                    ),
                ).rowcount
            )

        future = self._put(update)
        self._quietly("a status", future)
        return future

    def record_result(
        self, gateway: str, request_id: str, result: Result
    ) -> concurrent.futures.Future[bool]:
        """Store the final answer; local paths already recorded are kept. Queued; the
        future holds whether the task had a row."""
        outputs = [output_record(o) for o in result.outputs]
        now = self._clock()
        self._last_status.pop((gateway, request_id), None)

        def update(conn: sqlite3.Connection) -> bool:
            found = _latest_outputs(conn, gateway, request_id)
            if found is None:
                return False
            row_id, old_outputs = found
            known = {o.get("index"): o for o in old_outputs}
            for record in outputs:
                earlier = known.get(record["index"], {})
                if record["path"] is None and earlier.get("path"):
                    record.update({k: earlier.get(k) for k in ("path", "sha256", "size")})
            conn.execute(
                "UPDATE tasks SET state = ?, status = ?, queue_position = NULL, ok = ?, "
                "error = ?, error_type = ?, outputs = ?, finished_at = ?, updated_at = ?, "
                "done_at = coalesce(done_at, finished_at, ?) WHERE id = ?",
                (
                    FINISHED,
                    redact(result.status),
                    int(result.ok),
                    error_text(result.error),
                    error_text(result.error_type),
                    json.dumps(outputs),
                    now,
                    now,
                    now,
                    row_id,
                ),
            )
            return True

        future = self._put(update)
        self._quietly("a result", future)
        return future

    def record_output_path(
        self,
        gateway: str,
        request_id: str,
        index: int,
        path: str | os.PathLike[str] | None,
        *,
        sha256: str | None = None,
        size: int | None = None,
        error: str | None = None,
    ) -> concurrent.futures.Future[bool]:
        """Remember where output ``index`` was saved locally, with the SHA-256 and size
        of what was written there (a file found changed is not used again:
        docs/decisions.md#outputs-by-gateway); or, with no ``path``, why it could not
        be saved (``error``). Queued; the future holds whether the task had a row."""
        local = str(Path(path).absolute()) if path is not None else None
        kept: dict[str, Any] = {"path": local, "sha256": sha256, "size": size}
        if local is None:
            kept["download_error"] = error_text(error or "not saved")
        now = self._clock()

        def update(conn: sqlite3.Connection) -> bool:
            found = _latest_outputs(conn, gateway, request_id)
            if found is None:
                return False
            row_id, outputs = found
            for record in outputs:
                if record.get("index") == index:
                    record.update(kept)
                    if local is not None:
                        record.pop("download_error", None)
                    break
            else:
                outputs.append({"index": index, **kept})
                outputs.sort(key=lambda o: o.get("index", 0))
            conn.execute(
                "UPDATE tasks SET outputs = ?, updated_at = ? WHERE id = ?",
                (json.dumps(outputs), now, row_id),
            )
            return True

        future = self._put(update)
        self._quietly("an output path", future)
        return future

    # ------------------------------------------------------------------ leases

    def held_elsewhere(self, gateway: str) -> set[str]:
        """Request ids of unfinished tasks of ``gateway`` that another live owner
        leases: a read, nothing is claimed (``history()`` leaves them to it)."""
        me = self._owner.name
        owners = [
            row for row in self._read("SELECT owner, host, pid, heartbeat FROM owners")
            if row[0] != me
        ]
        alive = alive_owners(owners, self._clock(), self.lease_ttl, pid_alive)
        if not alive:
            return set()
        found = self._read(
            "SELECT request_id, owner FROM tasks WHERE gateway = ? AND state = ? "
            "AND request_id IS NOT NULL AND owner IS NOT NULL",
            (gateway, SUBMITTED),
        )
        return {request_id for request_id, owner in found if owner in alive}

    def without_held(self, gateway: str, rows: list[LedgerRow]) -> list[LedgerRow]:
        """``rows`` less the unfinished ones another live kernel polls (said in a
        warning): re-attaching them would poll each task twice and take its lease."""
        held = self.held_elsewhere(gateway) if any(row.unfinished for row in rows) else set()
        if not held:
            return rows
        kept = [row for row in rows if row.request_id not in held]
        left_to_other_kernels(len(rows) - len(kept))
        return kept

    def claim_unfinished(self, gateway: str, *, force: bool = False) -> tuple[list[LedgerRow], int]:
        """Take the lease of every unfinished task of ``gateway`` no live owner holds
        (all of them with ``force``); returns those rows, newest first, and how many
        were left to live owners. Waits for the ledger (the caller is ``resume()``).
        See :mod:`.lease`."""
        owner, now = self._owner.name, self._clock()
        self._leasing = True
        future = self._put(
            lambda conn: claim(
                conn,
                gateway,
                owner,
                now=now,
                ttl=self.lease_ttl,
                force=force,
                pid_alive=pid_alive,
            )
        )
        try:
            taken: Claim = future.result()
        except sqlite3.Error as exc:
            self._deliver()
            raise LedgerError(f"cannot write the ledger {self.path}: {redact(str(exc))}") from exc
        self._deliver()
        if not taken.taken:
            return [], taken.skipped
        marks = ", ".join("?" * len(taken.taken))
        found = self._read(
            f"SELECT {COLUMNS} FROM tasks WHERE id IN ({marks}) ORDER BY id DESC", taken.taken
        )
        return self._readable(found), taken.skipped
