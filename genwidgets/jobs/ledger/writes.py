"""The ledger's writes, in the order of the engine's calls: the :class:`LedgerWrites`.

Every write is a small function queued to the writer thread (:mod:`.writer`);
the callers get a future and never wait for the file, except
:meth:`LedgerWrites.record_intent` (at most ``intent_wait``). The recorder owns what the
writes need to remember: the intent tickets, the last status of each task, and which
rows this process is sending right now.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import json
import math
import os
import sqlite3
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..._config import hide_userinfo, normal_base_url, redact
from ..._formats import int_or_none
from ...errors import LedgerError, NotRecorded
from ...protocol.records import Handle, Result, Status
from .file import PENDING_LOCK_WAIT, LedgerFile, intent_row_on_disk
from .lease import HOST, Leases, heartbeat, pid_alive
from .rows import (
    COPY_FAILED_AT,
    COPY_GIVEN_UP,
    COPY_TRIED_AT,
    COPY_TRIES,
    COPY_TRY_INTERVAL,
    FINISHED,
    MAX_COPY_TRIES,
    NOT_ANOTHER_KEYS,
    NOT_CREATED,
    OUTCOME_UNKNOWN,
    SUBMITTED,
    SUBMITTING,
    copy_gone,
)
from .scrub import error_text, output_record, scrub_payload
from .writer import Note, WriteQueue

__all__ = ["SENDING", "LedgerWrites"]


#: The creates this process is sending right now, as (ledger file, row id): per file,
#: not per :class:`LedgerWrites`, so that a second ``Ledger`` of the same file in this
#: process does not take a row its sibling sends for a lost task. Owner:
#: :class:`LedgerWrites`, the only writer (a row joins when its intent is on disk and
#: leaves when the create's outcome is recorded); readers: ``LedgerWrites.sending`` (the
#: reader's row states); tests may discard a row to play a process that stopped sending
#: (docs/decisions.md#who-owns-the-process-wide-state). A set's add, discard and ``in``
#: are atomic, so it needs no lock.
SENDING: set[tuple[str, int]] = set()
#: intent tickets (negated), unique in this process (``next`` on a count is atomic)
_TICKETS = itertools.count(1)
#: seconds a tagged create waits, past ``intent_wait``, for its intent to be safe (on
#: disk, or its note kept beside the file) before it is refused: the keeper's start
#: (``STALL``), the pending file's lock (``PENDING_LOCK_WAIT``) and one fsync
KEEP_WAIT = PENDING_LOCK_WAIT + 2.0


#: the time of this process's latest intent, and the lock of its step (see _intent_time)
_latest_intent = [0.0]
_intent_lock = threading.Lock()
#: seconds a clock may go back (an NTP step) and intents still be stamped after the
#: latest: past that, the clock's own time, as it says
INTENT_CLOCK_BACK = 1.0


def _intent_time(now: float) -> float:
    """``now`` as an intent's time: later than this process's latest intent's, by a
    float's least step when the clock has not moved (a coarse clock: Windows'
    ``time.time()`` before Python 3.13 ticks every 15.6 ms). An intent is named in every
    process by its host, pid, time and endpoint (the pending notes, another process's
    merge): two held creates of one tick were one intent there, and the second paid task's
    handle replaced the first's on its row (ledgermend6)."""
    with _intent_lock:
        latest = _latest_intent[0]
        if latest - INTENT_CLOCK_BACK < now <= latest:
            now = math.nextafter(latest, math.inf)
        _latest_intent[0] = now
    return now


def _new_intent_lock() -> None:
    """A forked child's lock of :func:`_intent_time` (a thread of the parent may have
    held it at the fork: no thread of the child would ever release it)."""
    global _intent_lock
    _intent_lock = threading.Lock()


if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(after_in_child=_new_intent_lock)


def _done(value: Any) -> concurrent.futures.Future[Any]:
    future: concurrent.futures.Future[Any] = concurrent.futures.Future()
    future.set_result(value)
    return future


def _insert(
    conn: sqlite3.Connection,
    gateway: str,
    endpoint: str,
    payload: str,
    now: float,
    tag: str | None = None,
    fingerprint: str | None = None,
) -> int:
    """A new ``submitting`` row of this process (an intent) made with the key of
    ``fingerprint``; returns its id."""
    cursor = conn.execute(
        "INSERT INTO tasks (gateway, endpoint, state, payload, pid, host, "
        "submitted_at, updated_at, tag, key_fingerprint) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (gateway, endpoint, SUBMITTING, payload, os.getpid(), HOST, now, now, tag, fingerprint),
    )
    assert cursor.lastrowid is not None
    return cursor.lastrowid


def _set_handle(conn: sqlite3.Connection, row: int, handle: Handle, now: float, owner: str) -> bool:
    """Row ``row`` now has a task (``submitted``), leased by ``owner``; False: no such row."""
    return bool(
        conn.execute(
            "UPDATE tasks SET request_id = ?, state = ?, status_url = ?, response_url = ?, "
            "cancel_url = ?, queue_position = ?, handle_at = ?, updated_at = ?, owner = ? "
            "WHERE id = ?",
            (
                handle.request_id,
                SUBMITTED,
                hide_userinfo(redact(handle.status_url)),
                hide_userinfo(redact(handle.response_url)),
                hide_userinfo(redact(handle.cancel_url)),
                handle.queue_position,
                now,
                now,
                owner,
                row,
            ),
        ).rowcount
    )


def _latest_outputs(
    conn: sqlite3.Connection, gateway: str, request_id: str
) -> tuple[int, list[dict[str, Any]]] | None:
    """The id and outputs of the newest row recorded for a task, or None. Read as the
    file's bytes: any that are not UTF-8 (a stray write) become surrogates, which
    :func:`_outputs_text` writes back as their JSON escapes: the same bytes again under
    ``os.fsencode`` (the connection's text factory would put U+FFFD in their place, on
    disk, for good)."""
    found = conn.execute(
        "SELECT id, CAST(outputs AS BLOB) FROM tasks WHERE id = "
        "(SELECT max(id) FROM tasks WHERE gateway = ? AND request_id = ?)",
        (gateway, request_id),
    ).fetchone()
    if found is None:
        return None
    row_id, outputs = found
    return row_id, json.loads(bytes(outputs).decode("utf-8", errors="surrogateescape"))


def _outputs_text(outputs: list[dict[str, Any]]) -> str:
    """``outputs`` as a row keeps them: JSON in ASCII, every surrogate as its escape.
    Never as raw bytes: a surrogate may be a path's (a home under a folder whose name is
    not UTF-8) or an escape already in the row, and raw it would read back as U+FFFD,
    naming no file (docs/decisions.md#ledger-rows)."""
    return json.dumps(outputs)


#: why the outputs of a client made with ``download=False`` are not copied later
NOT_ASKED = "declined: its client was made with download=False"


class LedgerWrites:
    """The ``record_*`` writes of one :class:`~genwidgets.jobs.ledger.Ledger` (its
    ``writes``), queued on its :class:`~.writer.WriteQueue` in the order they are made."""

    def __init__(
        self,
        file: LedgerFile,
        queue: WriteQueue,
        leases: Leases,
        *,
        intent_wait: float,
        clock: Callable[[], float],
    ) -> None:
        self._file = file
        self._queue = queue
        self._leases = leases
        #: how long ``record_intent`` waits for its row to be on disk before the
        #: create may leave anyway (the row follows when the ledger frees)
        self.intent_wait = intent_wait
        self._clock = clock
        self._key = str(file.path.resolve())
        self._ids: dict[int, int] = {}  # intent ticket -> row id
        #: the note of each intent until its create's outcome is recorded, by its ticket
        #: (its time and endpoint name it in any process, for the notes of its handle or
        #: failure: :meth:`intent_of`) and, once on disk, by its row (what makes it again
        #: in a fresh file: :meth:`_made_again`, :meth:`in_flight`)
        self._intents: dict[int, Note] = {}
        #: rows of this process (``submitted_at``, endpoint -> id) up to ``_looked_upto``,
        #: for its kept intents another process may have recorded (see :meth:`_recorded`)
        self._recorded_rows: dict[tuple[float, str], int] = {}
        self._looked_upto = 0
        self._last_status: dict[tuple[str, str], tuple[str, int | None]] = {}

    # ------------------------------------------------------------------ in flight

    def _settle(self, row_id: int) -> None:
        SENDING.discard((self._key, row_id))
        intent = self._intents.pop(row_id, None)
        if intent is not None:
            self._intents.pop(intent["ticket"], None)

    def _in_flight(self, row: int) -> Note | None:
        """The intent note of the create this process is sending on row ``row``, if any."""
        return self._intents.get(row) if row > 0 else None

    def _settled_when_ended(self, ticket: int) -> Callable[[bool], None]:
        """What settles the create of ``ticket`` (an intent ticket or row id) once its
        outcome write has ended for good (``WriteQueue.put``'s ``ended``). Not at the end
        of a try: the try that finds the file damaged is made again in a fresh file,
        where only the intent kept in flight makes the create's row again; settled by
        that first try, the paid task was in no row (review-29)."""
        return lambda _applied: self._settle(self.row_of(ticket))

    def _made_again(self, conn: sqlite3.Connection, row: int) -> int | None:
        """The row of a create in flight made again from its intent, row ``row`` not in
        the file (its caller found so: a damaged file set aside since, its fresh one
        numbering past it, ``LedgerFile.ids_from``), so its outcome lands on its own
        intent; None when no create of this process's is in flight on it. Made only
        once: the intent another process's open made again from the kept note
        (``merge_notes``, by the same host, pid, time and endpoint) is the one used, else
        one paid task was on two rows (review-30)."""
        made = self._in_flight(row)
        if made is None:
            return None
        at, endpoint = made["at"], made["endpoint"]
        found = intent_row_on_disk(conn, HOST, os.getpid(), at, endpoint)
        if found is not None:
            return found
        values = [made[name] for name in ("gateway", "endpoint", "payload", "at", "tag", "key")]
        return _insert(conn, *values)

    def in_flight(self, row: int) -> dict[str, Any] | None:
        """The intent of the create in flight on row ``row``, as a handle's or failed
        create's note carries it (None: none of this process's is): a pending note
        whose row went with a damaged file set aside makes its intent again from it
        (``file.merge_notes``)."""
        made = self._in_flight(row)
        if made is None:
            return None
        note = {f"intent_{name}": made[name] for name in ("at", "endpoint", "payload", "tag")}
        note.update(intent_gateway=hide_userinfo(made["gateway"]), intent_key=made["key"])
        return note

    def sending(self, row_id: int) -> bool:
        """Whether this process is sending the create of row ``row_id`` right now."""
        return (self._key, row_id) in SENDING

    # ------------------------------------------------------------------ writes

    def row_of(self, row_id: int) -> int:
        """The row id of an intent ticket (see :meth:`record_intent`), or ``row_id`` itself."""
        return self._ids.get(row_id, row_id) if row_id < 0 else row_id

    def intent_of(self, ticket: int) -> tuple[float, str] | None:
        """The ``submitted_at`` and endpoint of the intent of ``ticket`` (None: no ticket
        of this ledger): a handle's note whose intent has no row here yet names it so,
        as another process may have recorded that intent's note already."""
        intent = self._intents.get(ticket) if ticket < 0 else None
        return None if intent is None else (intent["at"], intent["endpoint"])

    def record_intent(
        self,
        *,
        gateway: str,
        endpoint: str,
        payload: Mapping[str, Any],
        tag: str | None = None,
        fingerprint: str | None = None,
    ) -> int:
        """Write the intent before the create request leaves; returns the row id.
        ``tag`` says what the create is for (a batch's row and attempt, a grid's cell:
        each finds its task by it, docs/decisions.md#batch-resume); ``fingerprint``,
        which key sends it (docs/decisions.md#key-fingerprints).

        Waits up to ``intent_wait`` seconds for the row to be on disk (a few
        milliseconds normally), and not at all while the writer is stalled on a
        busy file. If the file is busy (locked by another process) the row stays
        queued, ahead of every later write of this task, and a negative ticket
        standing for the row is returned: every method taking a row id accepts it.
        See docs/decisions.md#the-ledger-and-the-engine.
        """
        ticket, future, patience, _note = self._queue_intent(
            gateway, endpoint, payload, tag, fingerprint
        )
        try:
            row_id: int = future.result(timeout=patience)
        except concurrent.futures.TimeoutError:
            self._file.log_if_failed("a task intent", future)
            return ticket
        except sqlite3.Error:  # given up: the file cannot be written, a LedgerWarning says so
            self._file.deliver()
            return ticket
        self._file.deliver()
        return row_id

    async def record_intent_as_it_leaves(
        self,
        *,
        gateway: str,
        endpoint: str,
        payload: Mapping[str, Any],
        tag: str | None = None,
        fingerprint: str | None = None,
    ) -> int:
        """:meth:`record_intent` on the engine's loop, awaited (never blocking the loop)
        by a create about to leave: a create that never starts leaves no intent, so a
        process killed with creates waiting for their turn leaves them known never sent
        (docs/decisions.md#one-batch-sender). Cancelled while it waits, the row is
        recorded as creating nothing. Its warnings reach the next caller of the ledger.

        A tagged create (a batch's row, a grid's cell) returns only once its intent is
        safe from a kill: on disk, or its note kept beside the file (a lock, a disk
        fault); else, within :data:`KEEP_WAIT`, it raises :class:`NotRecorded` and its row
        is recorded as creating nothing, since a rerun reads "no intent" as "never sent"
        (docs/decisions.md#ledger-intent). An untagged one may leave before."""
        ticket, future, patience, note = self._queue_intent(
            gateway, endpoint, payload, tag, fingerprint
        )
        written = asyncio.wrap_future(future)
        # its end is read here or logged by the file, never left for asyncio to complain of
        written.add_done_callback(lambda done: done.cancelled() or done.exception())
        try:  # wait() never cancels the write: it stays queued, ahead of the task's others
            await asyncio.wait({written}, timeout=patience)
            # the write's own future: its asyncio wrapper is told one loop step later
            landed = future.done() and future.exception() is None
            if tag is not None and not landed and not await self._until_safe(note, future):
                raise self._not_recorded(ticket, future)
        except asyncio.CancelledError:
            never = "never sent: stopped before it left"
            self.record_create_failed(ticket, never, created_nothing=True)
            raise
        if not future.done():
            self._file.log_if_failed("a task intent", future)
            return ticket
        if isinstance(future.exception(), sqlite3.Error):  # given up, a LedgerWarning says so
            return ticket
        return future.result()

    async def _until_safe(self, note: Note, written: concurrent.futures.Future[int]) -> bool:
        """Whether the write of ``note`` (its future ``written``) was applied or its note
        kept beside the file within :data:`KEEP_WAIT` (False: neither can be done now, a
        full disk)."""
        safe = asyncio.wrap_future(self._queue.safe(note, written))
        await asyncio.wait({safe}, timeout=KEEP_WAIT)
        return safe.done() and safe.result()

    def _not_recorded(self, ticket: int, written: concurrent.futures.Future[int]) -> NotRecorded:
        """The error of a tagged create refused for want of a safe intent; its row (if
        it ever reaches the file, with the notes kept later) is recorded as creating
        nothing. The reason given is only one known: a fault, a lock seen, else none."""
        fault = written.exception() if written.done() else None
        if self._file.unwritable:
            why = self._file.unwritable
        elif fault is not None:
            why = redact(str(fault))
        elif self._queue.stalled:
            why = "locked by another process"
        else:
            why = f"not written within {KEEP_WAIT:g} s, though no lock or disk fault was seen"
        said = (
            f"not sent: the home cannot record it (the task ledger {self._file.path}: {why}; "
            f"nor could its intent be kept in {self._file.pending_path}), and a batch's or a "
            "grid's create leaves only once its intent is kept, so that a rerun knows it was "
            "sent. No task was made, nothing was paid; free disk space (or end the lock) "
            "and run it again to send it"
        )
        self.record_create_failed(ticket, said, created_nothing=True)
        return NotRecorded(said)

    def _queue_intent(
        self,
        gateway: str,
        endpoint: str,
        payload: Mapping[str, Any],
        tag: str | None,
        fingerprint: str | None,
    ) -> tuple[int, concurrent.futures.Future[int], float, Note]:
        """An intent's insert queued: its ticket, its future, how long a create may wait
        for it (not at all while the writer is stalled on a busy file), and its note."""
        for name, value in (("gateway", gateway), ("endpoint", endpoint)):
            if not isinstance(value, str) or not value:
                raise ValueError(f"{name} must be a non-empty string, not {value!r}")
        stored = json.dumps(scrub_payload(payload))
        now = _intent_time(self._clock())
        ticket = -next(_TICKETS)
        note = {"ticket": ticket, "gateway": gateway, "endpoint": endpoint, "payload": stored}
        note.update(tag=tag, at=now, key=fingerprint)
        self._intents[ticket] = note

        def insert(conn: sqlite3.Connection) -> int:
            # held and kept beside the file, it may be there already: another process
            # records kept notes as this one's (docs/decisions.md#ledger-left-behind)
            found = self._queue.kept(note) and self._recorded(conn, now, endpoint)
            row_id = found or _insert(conn, gateway, endpoint, stored, now, tag, fingerprint)
            self._ids[ticket] = row_id
            SENDING.add((self._key, row_id))
            self._intents[row_id] = note
            self._file.ids_from = max(self._file.ids_from, row_id)
            return int(row_id)

        writer_stalled = self._queue.stalled
        future = self._queue.put(insert, note=note)
        return ticket, future, 0.0 if writer_stalled else self.intent_wait, note

    def _recorded(self, conn: sqlite3.Connection, at: float, endpoint: str) -> int | None:
        """The row of this process's intent made at ``at`` on ``endpoint``, if another
        process recorded it from the kept notes. Each row is looked at once (ids only
        grow: AUTOINCREMENT), so a batch of held intents drains in linear time, not one
        scan of the table each. On the writer's thread only."""
        for row_id, submitted_at, row_endpoint in conn.execute(
            "SELECT id, submitted_at, endpoint FROM tasks WHERE id > ? AND host = ? AND pid = ?",
            (self._looked_upto, HOST, os.getpid()),
        ):
            self._recorded_rows[(submitted_at, row_endpoint)] = row_id
        (self._looked_upto,) = conn.execute("SELECT coalesce(max(id), 0) FROM tasks").fetchone()
        return self._recorded_rows.get((at, endpoint))

    def record_handle(self, row_id: int, handle: Handle) -> concurrent.futures.Future[None]:
        """The create request answered with a task handle: the task exists, and this
        ledger holds its lease (see :mod:`.lease`). Queued; returns the write's future."""
        now = self._clock()
        owner = self._leases.take()

        def update(conn: sqlite3.Connection) -> None:
            row = self.row_of(row_id)
            if not _set_handle(conn, row, handle, now, owner):
                again = self._made_again(conn, row)
                if again is None or not _set_handle(conn, again, handle, now, owner):
                    raise LedgerError(f"no ledger row {row} in {self._file.path}")
            heartbeat(conn, owner, now)

        urls = ("status_url", "response_url", "cancel_url")  # as _set_handle keeps them
        note: dict[str, Any] = {name: hide_userinfo(redact(getattr(handle, name))) for name in urls}
        note.update(row=row_id, request_id=handle.request_id, endpoint=handle.endpoint, at=now)
        written = self._queue.put(update, note, ended=self._settled_when_ended(row_id))
        return self._file.log_if_failed("the task handle", written)

    def record_gateway_name(self, gateway: str) -> concurrent.futures.Future[int] | None:
        """Rows that name ``gateway`` (a normal address: ``_config.normal_base_url``)
        spelt another way, as recorded before addresses were made normal (an upper-case
        host, ``:443``), renamed ``gateway``, so ``history()`` and ``resume()`` see them.
        A row another live process still writes keeps its name: one it leases (as
        :meth:`Leases.held_elsewhere` tells), a finished one too (its copies are
        recorded after), and a create it is sending: a process of an older version
        spells the address so and finds its rows by that name to record their statuses
        and results. A later client renames them once it has stopped. The write is
        queued only when there are some (the future of the rows renamed)."""
        names = self._file.read("SELECT DISTINCT gateway FROM tasks", ())
        spelt = [name for (name,) in names if name != gateway and normal_base_url(name) == gateway]
        if not spelt:
            return None

        def rename(conn: sqlite3.Connection) -> int:
            others = self._leases.alive(conn) - {self._leases.owner}

            def sending(host: str, pid: int) -> bool:
                if host == HOST:
                    return pid != os.getpid() and pid_alive(pid)
                return any(owner.startswith(f"{host}:{pid}:") for owner in others)

            marks = ", ".join("?" * len(spelt))
            found = conn.execute(
                f"SELECT id, owner, state, host, pid FROM tasks WHERE gateway IN ({marks})", spelt
            ).fetchall()
            free = [
                (gateway, row)
                for row, owner, state, host, pid in found
                if owner not in others and not (state == SUBMITTING and sending(host, pid))
            ]
            conn.executemany("UPDATE tasks SET gateway = ? WHERE id = ?", free)
            return len(free)

        return self._file.log_if_failed("the gateway's name", self._queue.put(rename))

    def record_create_failed(
        self, row_id: int, error: str, *, created_nothing: bool
    ) -> concurrent.futures.Future[None]:
        """The create request failed: ``not_created`` if certain, else ``outcome_unknown``.
        Queued; returns the write's future."""
        now = self._clock()
        state = NOT_CREATED if created_nothing else OUTCOME_UNKNOWN
        text = error_text(error)

        def update(conn: sqlite3.Connection) -> None:
            row = self.row_of(row_id)
            ended = "UPDATE tasks SET state = ?, error = ?, updated_at = ?, finished_at = ? "
            values = (state, text, now, now if created_nothing else None)
            changed = conn.execute(
                ended + "WHERE id = ? AND request_id IS NULL", (*values, row)
            ).rowcount
            if changed or conn.execute("SELECT 1 FROM tasks WHERE id = ?", (row,)).fetchone():
                return  # recorded, or its row holds a task already
            again = self._made_again(conn, row)
            if again is None:
                raise LedgerError(f"no ledger row {row} in {self._file.path}")
            conn.execute(ended + "WHERE id = ?", (*values, again))

        # kept in the pending file if a lock keeps it out at exit: merged, a create known
        # to have made nothing reads "not created", not "outcome unknown"
        note = {"failed": row_id, "error": text, "created_nothing": created_nothing, "at": now}
        written = self._queue.put(update, note, ended=self._settled_when_ended(row_id))
        return self._file.log_if_failed("the failed create", written)

    def record_attach(
        self,
        gateway: str,
        handle: Handle,
        *,
        payload: Mapping[str, Any] | None = None,
        fingerprint: str | None = None,
    ) -> concurrent.futures.Future[int]:
        """Make sure a task re-attached by request id has a row (inserted when missing,
        as made with the key of ``fingerprint``), leased by this ledger unless another
        key made it (its own key's client may resume it); the future holds the row id."""
        now = self._clock()
        owner = self._leases.take()
        stored = json.dumps(scrub_payload(payload or {}))

        def upsert(conn: sqlite3.Connection) -> int:
            heartbeat(conn, owner, now)
            found = conn.execute(
                "SELECT max(id) FROM tasks WHERE gateway = ? AND request_id = ?",
                (gateway, handle.request_id),
            ).fetchone()[0]
            if found is not None:
                conn.execute(
                    f"UPDATE tasks SET owner = ? WHERE id = ? AND state = ? AND {NOT_ANOTHER_KEYS}",
                    (owner, found, SUBMITTED, fingerprint, fingerprint),
                )
                return int(found)
            row = _insert(conn, gateway, handle.endpoint, stored, now, fingerprint=fingerprint)
            _set_handle(conn, row, handle, now, owner)
            return row

        return self._file.log_if_failed("the re-attached task", self._queue.put(upsert))

    def forget_attach(self, gateway: str, request_id: str) -> concurrent.futures.Future[bool]:
        """Remove the row :meth:`record_attach` made for an id its gateway never answered
        for (a typo's 404, no answer): an ask records no task that may not exist. Only a
        row an attach made (no payload, no tag); the future holds whether one went."""

        def delete(conn: sqlite3.Connection) -> bool:
            return bool(
                conn.execute(
                    "DELETE FROM tasks WHERE id = (SELECT max(id) FROM tasks WHERE gateway = ? "
                    "AND request_id = ?) AND payload = '{}' AND tag IS NULL",
                    (gateway, request_id),
                ).rowcount
            )

        return self._file.log_if_failed("forgetting a re-attached id", self._queue.put(delete))

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

        return self._file.log_if_failed("a status", self._queue.put(update))

    def record_result(
        self,
        gateway: str,
        request_id: str,
        result: Result,
        *,
        gone: bool = False,
        fingerprint: str | None = None,
        copied: bool = True,
    ) -> concurrent.futures.Future[bool]:
        """Store the final answer; local paths already recorded are kept. Queued; the
        future holds whether the row was written. ``copied`` False: its client copies no
        outputs (``download=False``), so none is a copy pending for a later client either
        (docs/decisions.md#copies-pending).

        ``gone``: ``result`` only says the gateway answered "not found" to the client of
        the key of ``fingerprint``. That is no answer about the task, so it never replaces
        a result recorded before (a new simulator, or a gateway past its retention, forgot
        a finished task), nor ends a task another key made (the gateway hides it from this
        key): docs/decisions.md#a-404-never-overwrites-an-end."""
        outputs = [output_record(o) for o in result.outputs]
        for record in outputs:
            if not copied and record["path"] is None:
                record[COPY_GIVEN_UP] = NOT_ASKED
        now = self._clock()
        self._last_status.pop((gateway, request_id), None)
        only_if = f" AND finished_at IS NULL AND {NOT_ANOTHER_KEYS}" if gone else ""
        guards = (fingerprint, fingerprint) if gone else ()

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
            written = conn.execute(
                "UPDATE tasks SET state = ?, status = ?, queue_position = NULL, ok = ?, "
                "error = ?, error_type = ?, outputs = ?, finished_at = ?, "
                "updated_at = ?, "
                f"done_at = coalesce(done_at, finished_at, ?) WHERE id = ?{only_if}",
                (
                    FINISHED,
                    redact(result.status),
                    int(result.ok),
                    error_text(result.error),
                    error_text(result.error_type),
                    _outputs_text(outputs),
                    now,
                    now,
                    now,
                    row_id,
                    *guards,
                ),
            ).rowcount
            return bool(written)

        return self._file.log_if_failed("a result", self._queue.put(update))

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
        expired: bool = False,
        capped: bool = False,
        paused: bool = False,
        other_bytes: bool = False,
        content_type: str | None = None,
    ) -> concurrent.futures.Future[bool]:
        """Queue where output ``index`` was saved (its path, SHA-256, size and the
        ``content_type`` its download learned), or why it was not; the future holds
        whether the task had a row. A failure never replaces a path recorded (another
        copier's, an earlier try's). A failed copy counts a try, at most one per
        :data:`COPY_TRY_INTERVAL`; an ``expired`` URL, an output over a cap (``capped``:
        each copy would start its caps afresh), or the last of :data:`MAX_COPY_TRIES`,
        gives the copy up, with why; ``paused``: a later copy failed, so none asks for
        this output again within ``COPY_RETRY_PAUSE``. A failed copy of a file removed
        since keeps the record of that copy (its path, sha256 and size); ``other_bytes``
        (its URL now serves other bytes) gives it up (docs/decisions.md#copies-pending)."""
        local = str(Path(path).absolute()) if path is not None else None
        kept: dict[str, Any] = {"path": local, "sha256": sha256, "size": size}
        if local is None:
            kept["download_error"] = error_text(error or "not saved")
            if paused:
                kept[COPY_FAILED_AT] = self._clock()
        elif content_type is not None:
            kept["content_type"] = redact(content_type)
        now = self._clock()

        def tried(record: dict[str, Any]) -> None:
            """One more failed try of ``record``'s copy, unless one was counted less than
            :data:`COPY_TRY_INTERVAL` ago; given up when it is the last."""
            tries = int_or_none(record.get(COPY_TRIES), minimum=0) or 0
            last = record.get(COPY_TRIED_AT)
            if not (isinstance(last, (int, float)) and 0 <= now - last < COPY_TRY_INTERVAL):
                tries += 1
                record[COPY_TRIES], record[COPY_TRIED_AT] = tries, now
            if other_bytes:
                record[COPY_GIVEN_UP] = kept["download_error"]  # it says the URL serves other bytes
            elif expired:
                record[COPY_GIVEN_UP] = f"URL expired: {kept['download_error']}"
            elif capped:
                record[COPY_GIVEN_UP] = f"over a cap: {kept['download_error']}"
            elif tries >= MAX_COPY_TRIES:
                record[COPY_GIVEN_UP] = f"{tries} tries failed, the last: {kept['download_error']}"

        def update(conn: sqlite3.Connection) -> bool:
            found = _latest_outputs(conn, gateway, request_id)
            if found is None:
                return False
            row_id, outputs = found
            for record in outputs:
                if record.get("index") == index:
                    if local is None and record.get("path") and not copy_gone(record):
                        return True  # copied meanwhile (another copier): kept
                    removed = local is None and record.get("path")  # the copy's record stays
                    copy = ("path", "sha256", "size") if removed else ()
                    record.update({k: v for k, v in kept.items() if k not in copy})
                    break
            else:
                record = {"index": index, **kept}
                outputs.append(record)
                outputs.sort(key=lambda o: o.get("index", 0))
            if local is None:
                tried(record)
            else:
                record.pop("download_error", None)
                record.pop(COPY_FAILED_AT, None)
                record.pop(COPY_GIVEN_UP, None)
            conn.execute(
                "UPDATE tasks SET outputs = ?, updated_at = ? WHERE id = ?",
                (_outputs_text(outputs), now, row_id),
            )
            return True

        return self._file.log_if_failed("an output path", self._queue.put(update))
