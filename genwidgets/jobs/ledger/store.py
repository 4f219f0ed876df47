"""The :class:`Ledger`: the facade that composes the ledger's pieces, each owning its
state (docs/decisions.md#ledger-pieces; writes and states: :mod:`genwidgets.jobs.ledger`).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import difflib
import json
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..._config import hide_userinfo, home, normal_base_url
from ..._formats import int_or_none
from ...errors import LedgerError
from ...protocol.records import TERMINAL_WORDS
from .file import MASKING, LedgerFile, Undecodable, raise_if_damaged
from .lease import HOST, Claim, Leases, left_to_other_kernels, left_to_their_keys, pid_alive
from .rows import (
    COLUMN_NAMES,
    COLUMNS,
    COPIES_PENDING_SQL,
    FAILED,
    FINISHED,
    MAX_LIMIT,
    NOT_ANOTHER_KEYS,
    NOT_CREATED,
    OK,
    OUTCOME_UNKNOWN,
    STATES,
    SUBMITTED,
    SUBMITTING,
    UNFINISHED,
    LedgerRow,
    copy_gone,
)
from .writer import Note, WriteQueue
from .writes import LedgerWrites

__all__ = ["LEDGER_FILE_NAME", "Ledger", "may_still_run"]

LEDGER_FILE_NAME = "ledger.sqlite3"
#: how long ``Ledger()`` waits for the file to open (a free file opens in milliseconds;
#: one that needs a lock to be created or migrated opens later, in the writer)
OPEN_WAIT = 1.0
#: what a flush or a close waits once a wait for the lock has run out (SQLite's busy
#: handler looks again every 0.1 s at most: a lock freed meanwhile is met)
AFTER_A_WAIT = 0.25
#: how long a read made on the engine's loop waits for queued writes (a free file
#: writes them in milliseconds; a busy one is not waited for at all)
QUICK_FLUSH = 0.1


def may_still_run(pid: int | None, host: str | None) -> bool:
    """Whether the process that kept a note in the pending file may still run (and
    record it at its next write): one of this host is known dead by its pid (it writes
    nothing more: the next open records its notes); another host's cannot be told."""
    return host != HOST or pid is None or pid_alive(pid)


def _process_of(note: dict[str, Any]) -> tuple[int | None, str | None]:
    """The pid and host a note names, each None when it names none of its type (a handle
    note need not carry them, and a stray writer's may be anything)."""
    host = note.get("host")
    return int_or_none(note.get("pid")), host if isinstance(host, str) else None


def _has_json_sql() -> bool:
    """Whether this SQLite has its JSON functions (built in since 3.38, an option
    before): without them, rows with copies pending are chosen in Python."""
    try:
        with contextlib.closing(sqlite3.connect(":memory:")) as conn:
            conn.execute("SELECT json_extract('{}', '$.a')")
    except sqlite3.Error:
        return False
    return True


#: the SQL that chooses rows with copies pending, or none (see :func:`_has_json_sql`)
_COPIES_PENDING_WHERE = f" AND {COPIES_PENDING_SQL}" if _has_json_sql() else ""
#: tags (or row ids) asked in one query (SQLite's limit on variables is 32,766)
TAGS_PER_QUERY = 500
log = logging.getLogger("genwidgets")


class Ledger:
    """The on-disk record of every task of every kernel on this machine: thread-safe,
    safe across processes, reopened after ``fork``; writes in order on a writer thread,
    reads that wait at most ``busy_timeout`` for them (docs/decisions.md#ledger-writer),
    then read on the file's readers' connection (WAL readers do not wait for a writer).
    A row that cannot be read (written by hand, by a foreign tool) is skipped with a log
    line; ``submitting`` rows nobody sends any more read as ``outcome_unknown``.

    The writes are its piece ``writes`` (:class:`~.writes.LedgerWrites`:
    ``ledger.writes.record_intent(...)`` and the other ``record_*``), read where they live.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        stale_after: float = 60.0,
        busy_timeout: float = 5.0,
        intent_wait: float = 0.25,
        lease_ttl: float = 120.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        for name, value in (
            ("stale_after", stale_after),
            ("busy_timeout", busy_timeout),
            ("lease_ttl", lease_ttl),
        ):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ValueError(f"{name} must be a positive number of seconds, not {value!r}")
        if isinstance(intent_wait, bool) or not isinstance(intent_wait, (int, float)):
            raise ValueError(f"intent_wait must be a number of seconds, not {intent_wait!r}")
        self._file = LedgerFile(
            Path(path) if path is not None else home() / LEDGER_FILE_NAME, float(busy_timeout)
        )
        self._leases = Leases(self._file, ttl=float(lease_ttl), clock=clock)
        self._queue = WriteQueue(
            self._file.open_for_writes,
            self._file.on_fault,
            name=f"genwidgets-ledger-{self._file.path.name}",
            idle=self._leases.heartbeat,
            idle_every=self._leases.ttl / 4,
            exit_wait=self._file.busy_timeout,
            left_behind=self._left_behind,
            moved=self._file.moved,
            recovered=self._file.recovered,
            keep_held=self._keep_held,
        )
        self.writes = LedgerWrites(
            self._file,
            self._queue,
            self._leases,
            intent_wait=max(0.0, float(intent_wait)),
            clock=clock,
        )
        self._stale_after = float(stale_after)
        self._clock = clock
        opened = self._queue.put(None)  # the writer opens (and checks) the file: no lock needed
        try:
            opened.result(timeout=min(OPEN_WAIT, self.busy_timeout))
        except concurrent.futures.TimeoutError:
            log.warning(
                "genwidgets: the ledger %s is busy (%s); rows are kept in order and written "
                "when it frees",
                self.path,
                f"this process is {MASKING}" if self._file.masking else "locked by another process",
            )
        except LedgerError:
            self._queue.stop(0.0)
            raise
        except sqlite3.Error:
            pass  # said by a LedgerWarning (delivered below)
        self._file.merge_pending(self._queue.put)
        self._file.deliver()

    def __repr__(self) -> str:
        return f"Ledger({str(self.path)!r})"

    def _placed(self, note: Note) -> Note:
        """``note`` with what places it without this process: its pid and host, and the
        row of an intent ticket already on disk (a handle's, a failed create's). A ticket
        with no row here yet comes with its intent's time and endpoint: another process
        may have recorded that intent from its own note (and removed that file), and
        finds the row by them (review-21: the paid task was in no row after ``kill -9``).
        A row of a create in flight comes with its whole intent: a damaged file set aside
        since took that row with it, and the next open makes the intent again from the
        note (review-29: the note named a row the fresh file never had, and was dropped)."""
        note.update(pid=os.getpid(), host=HOST)
        for placed in ("row", "failed"):
            if placed in note:
                note[placed] = self.writes.row_of(note[placed])
                intent = self.writes.intent_of(note[placed]) if note[placed] < 0 else None
                if intent is not None:
                    note["intent_at"], note["intent_endpoint"] = intent
                made = self.writes.in_flight(note[placed]) if note[placed] > 0 else None
                if made is not None:
                    note.update(made)
        return note

    def _left_behind(self, notes: list[Note], unwritten: int) -> None:
        """Writes not applied when the writer stopped: kept beside the file, and said."""
        self._file.left_behind([self._placed(note) for note in notes], unwritten)

    def _keep_held(self, notes: list[Note]) -> bool:
        """Writes held (a lock held elsewhere, a disk fault), kept beside the file as
        they are (copies: their tickets may still get rows), so a process killed before
        they are written loses no task (docs/decisions.md#ledger-left-behind); recording
        one twice changes nothing. False when they could not be kept (logged)."""
        why = self._file.keep_pending([self._placed(dict(note)) for note in notes])
        if why:
            log.info("genwidgets: could not keep held writes in %s: %s", self.path, why)
        return not why

    # ------------------------------------------------------------------ settings and health

    @property
    def path(self) -> Path:
        """The SQLite file."""
        return self._file.path

    @property
    def busy_timeout(self) -> float:
        """Seconds a read waits for queued writes, and SQLite for a lock held elsewhere."""
        return self._file.busy_timeout

    @property
    def stale_after(self) -> float:
        """Seconds after which a ``submitting`` row of another host is ``outcome_unknown``."""
        return self._stale_after

    @property
    def intent_wait(self) -> float:
        """Seconds ``writes.record_intent`` waits for its row before the create may leave."""
        return self.writes.intent_wait

    @property
    def lease_ttl(self) -> float:
        """Seconds a heartbeat keeps this ledger's leases alive (refreshed every quarter)."""
        return self._leases.ttl

    @property
    def journal_mode(self) -> str:
        """The file's journal mode (``wal`` wherever SQLite allows it)."""
        return self._file.journal_mode

    @property
    def set_aside(self) -> Path | None:
        """Where an unusable file found at ``path`` was moved (None if none was)."""
        return self._file.set_aside

    @property
    def links_set_aside(self) -> list[Path]:
        """Where links at the ledger's names that led out of its folder were moved."""
        return list(self._file.links_set_aside)

    @property
    def unwritable(self) -> str | None:
        """Why the file cannot be written (None while it can): writes are kept, in order,
        and written once it can be (docs/decisions.md#ledger-faults)."""
        return self._file.unwritable

    @property
    def dropped(self) -> int:
        """Writes given up because the file failed them (for another reason than a lock
        held elsewhere or a disk fault: those are kept and tried again)."""
        return self._file.dropped

    @property
    def pending(self) -> int:
        """Writes queued and not yet on disk (more than 0 while another process holds a lock)."""
        return self._queue.pending

    # ------------------------------------------------------------------ the file

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every write made so far is on disk (or given up); False on timeout.

        ``timeout`` defaults to what is left of ``busy_timeout`` since the writes began
        to be held (a lock held elsewhere): a history, then a close, wait once, not
        each its ``busy_timeout``. The warnings kept meanwhile are raised here, on the
        caller's thread.
        """
        done = self._queue.flush(self._patience() if timeout is None else timeout)
        self._file.deliver()
        return done

    def _patience(self) -> float:
        """What is left of ``busy_timeout`` since the writer's head write was held, or
        :data:`AFTER_A_WAIT` (at most ``busy_timeout``): a lock freed meanwhile is met
        within SQLite's polling, and the writes get through instead of being left."""
        left = self.busy_timeout - self._queue.held_for
        return max(left, min(self.busy_timeout, AFTER_A_WAIT))

    @property
    def locked_out(self) -> bool:
        """Whether the last read found the file locked by another process past
        ``busy_timeout``: reads then try without waiting, until one gets through."""
        return self._file.locked_out

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (``BEGIN IMMEDIATE``) on this ledger's file, for tables
        of other parts of genwidgets kept beside ``tasks`` (the prompt lab's grids).

        Runs on the caller's thread (it waits for a lock held elsewhere, up to
        ``busy_timeout``), after the ledger's own queued writes. Commits when the
        block ends, rolls back on an exception; sqlite3 errors become
        :class:`LedgerError` (a damaged file is then moved aside, as on a failed write
        of the ledger's own). After a refusal as read-only, the writer first opens the
        connections anew if the file may be written now (``LedgerFile.may_write_again``).
        """
        if self._file.refused_read_only:
            self._queue.put(None)  # only opens: the writer's own connection pins it too
        self.flush()
        with self._file.write(on_damage=self._check_on_writer) as conn:
            yield conn

    def _check_on_writer(self) -> None:
        """A transaction met a damaged file: the writer checks it and, damaged, moves it
        aside and starts a fresh one, as after a failed write of its own (the warning
        follows at once). On the writer's thread, so its connection never writes the old file."""
        with contextlib.suppress(Exception):  # what the check found is said by the warning
            self._queue.put(raise_if_damaged).result(timeout=self.busy_timeout)
        self._file.deliver()

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Rows of one read-only statement on this ledger's file (see :meth:`transaction`)."""
        return self._file.read(sql, params)

    def close(self) -> None:
        """Write what is queued (at most what is left of ``busy_timeout``, as
        :meth:`flush` waits: the rest is said and kept
        beside the file, docs/decisions.md#ledger-left-behind), give up this ledger's
        leases, and close its connections (they reopen on the next call)."""
        self.release()
        self._queue.stop(self._patience())
        self._file.close()
        self._file.deliver()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ reads

    def rows(
        self,
        gateway: str | None = None,
        *,
        endpoint: str | None = None,
        status: str | None = None,
        limit: int | None = None,
    ) -> list[LedgerRow]:
        """Rows, newest first.

        ``status`` matches a state (``submitting``, ``submitted``, ``not_created``,
        ``outcome_unknown``, ``finished``), ``unfinished`` (see the module
        docstring), ``ok`` / ``failed`` (finished tasks by outcome), or else the
        last gateway status name, case-insensitively (``COMPLETED``, ``IN_QUEUE``...).
        """
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
            raise TypeError(f"limit must be an int or None, not {limit!r}")
        if limit is not None and not 0 <= limit <= MAX_LIMIT:
            raise ValueError(
                f"limit must be a whole number from 0 to {MAX_LIMIT:,}, or None for every "
                f"row, not {limit:,}"
            )
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
                self._check_status_word(status.strip())
                clauses.append("upper(status) = upper(?)")
                params.append(status.strip())
        where = " AND ".join(f"({c})" for c in clauses) or "1"
        if not self.flush():
            self._say_behind(gateway)
        if limit is not None and wanted_state is None:
            return self._select(
                f"{where} ORDER BY id DESC LIMIT {limit}", tuple(params), wait=False
            )
        found = self._select(f"{where} ORDER BY id DESC", tuple(params), wait=False)
        if wanted_state is not None:
            found = [row for row in found if row.state == wanted_state]
        return found if limit is None else found[:limit]

    def left_pending(
        self, gateway: str | None = None
    ) -> list[tuple[str, str, float, int | None, str | None]]:
        """``(endpoint, request_id, created_at, pid, host)`` of the created tasks another
        process kept in the pending notes beside the file, of ``gateway`` when given
        (docs/decisions.md#ledger-left-behind): not in the file until a write gets
        through (a lock held elsewhere). That process may still run: it keeps its held
        writes as they are held, and records them itself once the lock frees."""
        mine = (HOST, os.getpid())  # this process's own held writes are said apart
        notes = [n for n in self._file.pending_handles() if (n.get("host"), n.get("pid")) != mine]
        if gateway is not None:
            notes = [n for n in notes if self._gateway_of(n) in (gateway, None)]
        found: dict[tuple[str, str], Note] = {}  # a note kept when held, again at exit
        for note in notes:
            found.setdefault((note["endpoint"], note["request_id"]), note)
        return [
            (endpoint, request_id, float(n["at"]), *_process_of(n))
            for (endpoint, request_id), n in found.items()
        ]

    def kept_aside(
        self, gateway: str | None = None
    ) -> list[tuple[str | None, str | None, float, int | None, str | None]]:
        """``(endpoint, request_id, at, pid, host)`` of the notes a merge could place on
        no row, moved beside the file (``LedgerFile.unplaced_path``), of ``gateway`` when
        given: never recorded, so listed as they are. A failed create's (outcome
        unknown, maybe paid) has no request id, and an endpoint only if it carried its
        intent (docs/decisions.md#ledger-left-behind)."""
        found: dict[tuple[Any, ...], tuple[str | None, str | None, float, Any, Any]] = {}
        for note in self._file.unplaced_notes():
            if gateway is not None and self._gateway_of(note) not in (gateway, None):
                continue
            endpoint = note.get("endpoint", note.get("intent_endpoint"))
            listed = (
                endpoint if isinstance(endpoint, str) else None,
                note.get("request_id"),
                float(note["at"]),
                *_process_of(note),
            )
            found.setdefault((*listed, note.get("failed")), listed)
        return list(found.values())

    def _gateway_of(self, note: Note) -> str | None:
        """The gateway of a handle note: its intent's note's, else its row's on disk
        (None when neither can be read: the note is listed, not hidden), named as the
        ledger files it once recorded: masked and made normal, however an older version
        spelt it (review-14: ``http://alice:s3cret@h``, ``HTTP://alice:***@h/``)."""
        named, row = note.get("gateway"), note.get("row")
        if named is None and isinstance(row, int) and row > 0:
            with contextlib.suppress(LedgerError):
                found = self._file.read("SELECT gateway FROM tasks WHERE id = ?", (row,))
                named = found[0][0] if found else None
        return None if named is None else normal_base_url(hide_userinfo(str(named)))

    def _say_behind(self, gateway: str | None) -> None:
        """``rows`` read while this process's writes still wait (a lock held elsewhere,
        a file that cannot be written): say so, and name the created tasks an earlier
        process left in the pending notes, which are not in the file yet either."""
        why = (
            f"cannot be written now ({self.unwritable})"
            if self.unwritable is not None
            else f"is busy: this process is {MASKING}"
            if self._file.masking
            else f"is locked by another process (more than {self.busy_timeout:g} s)"
        )
        message = (
            f"genwidgets: the task ledger {self.path} {why}: what is read there lacks the "
            f"{self.pending} write(s) still waiting in this process (written, in order, once "
            "it can be; a client's history() adds its own jobs of this session)."
        )
        held = self.left_pending(gateway)
        waiting = [f"{endpoint} {request_id}" for endpoint, request_id, *_ in held]
        if waiting:
            holders = (
                "another process keeps in {} (it may still be running: it records them at "
                "its next write, or the next open does)"
                if any(may_still_run(pid, host) for *_, pid, host in held)
                else "a process that has ended left in {} (the next open records them)"
            )
            message += (
                f" {len(waiting)} created task(s) "
                f"{holders.format(self._file.pending_path)} are not there yet either "
                "(endpoint request_id): "
                f"{', '.join(waiting[:20])}{' ...' if len(waiting) > 20 else ''}; follow "
                "one with client.job(endpoint, request_id)."
            )
        self._file.warn(message)

    def _check_status_word(self, word: str) -> None:
        """A ``status`` filter that is no state: a gateway's status word, known (the
        spec's, the terminal words) or one this ledger holds (a gateway's own, such as
        ``WARMING_UP``); else a ``ValueError`` naming what is allowed, with the closest
        as the catalog says an unknown endpoint's (a typo listed nothing, in silence)."""
        known = {"IN_QUEUE", "IN_PROGRESS", *TERMINAL_WORDS}
        if word.upper() in known:
            return
        self.flush()  # the statuses recorded so far
        said = "SELECT DISTINCT upper(status) FROM tasks WHERE status IS NOT NULL"
        held = {found for (found,) in self._file.read(said, ())}
        if word.upper() in held:
            return
        filters, words = sorted(STATES | {UNFINISHED, OK, FAILED}), sorted(known | held)
        spelt = {w.lower(): w for w in [*words, *filters]}  # a typo's case is no matter
        close = difflib.get_close_matches(word.lower(), list(spelt), n=1)
        hint = f"; did you mean {spelt[close[0]]!r}?" if close else "."
        raise ValueError(
            f"no task in the ledger has the status {word!r}{hint} A status is a state "
            f"({', '.join(filters)}) or a gateway's status word ({', '.join(words[:40])}), "
            "case ignored"
        )

    def get(self, gateway: str, request_id: str) -> LedgerRow | None:
        """The (newest) row of one task, or None."""
        found = self._select(
            "gateway = ? AND request_id = ? ORDER BY id DESC LIMIT 1", (gateway, request_id)
        )
        return found[0] if found else None

    def row(self, row_id: int) -> LedgerRow | None:
        """A row by its id (or the ticket ``writes.record_intent`` returned)."""
        found = self._select("id = ?", (self.writes.row_of(row_id),))
        return found[0] if found else None

    def with_copies_pending(
        self,
        gateway: str,
        *,
        fingerprint: str | None = None,
        request_id: str | None = None,
        removed: bool = False,
    ) -> list[LedgerRow]:
        """Finished tasks of ``gateway`` (or the one of ``request_id``) with outputs still
        to be copied (:attr:`LedgerRow.copies_pending`), newest first: the newest row of
        each task only, chosen in SQL (a ledger of many finished tasks costs no parse of
        theirs), less those another key than the one of ``fingerprint`` made (its URLs
        are for its own client to fetch) and those another live kernel still holds (its
        own download may be running). With ``removed``, also those a recorded copy of is
        gone from disk (:attr:`LedgerRow.copies_gone`): the disk is asked for each path
        of the rows chosen, so only when asked, never at each resume of a whole history
        (docs/decisions.md#copies-pending)."""
        others = sorted(self._leases.alive() - {self._leases.owner})
        where = (
            f"gateway = ? AND state = ? AND request_id IS NOT NULL AND {NOT_ANOTHER_KEYS} "
            "AND id = (SELECT max(id) FROM tasks AS newer WHERE newer.gateway = tasks.gateway "
            "AND newer.request_id = tasks.request_id)"
        )
        params: tuple[Any, ...] = (gateway, FINISHED, fingerprint, fingerprint)
        if request_id is not None:
            where += " AND request_id = ?"
            params += (request_id,)
        if others:
            where += f" AND (owner IS NULL OR owner NOT IN ({', '.join('?' * len(others))}))"
            params += tuple(others)
        # LIKE first: cheap, and every row written has this text where a path is missing
        found = self._select(
            f"{where} AND outputs LIKE ?{_COPIES_PENDING_WHERE}", (*params, '%"path": null%')
        )
        gone = self._copies_gone(where, params) if removed else []  # one stat a path
        gone = sorted(set(gone) - {row.id for row in found})
        for start in range(0, len(gone), TAGS_PER_QUERY):  # the whole outputs folder removed
            some = tuple(gone[start : start + TAGS_PER_QUERY])
            found += self._select(f"id IN ({', '.join('?' * len(some))})", some, wait=False)
        wanted = (row for row in found if row.copies_pending or (removed and row.copies_gone))
        return sorted(wanted, key=lambda row: -row.id)

    def _copies_gone(self, where: str, params: tuple[Any, ...]) -> list[int]:
        """The ids of the rows of ``where`` a local copy recorded of is gone from disk
        (``copy_gone``): only the paths are read (an output's whole record is parsed for
        those rows only); without SQLite's JSON functions, the rows holding a path."""
        self.flush()
        if not _COPIES_PENDING_WHERE:
            rows = self._select(f"{where} AND outputs LIKE ?", (*params, '%"path": "%'))
            return [row.id for row in rows if row.copies_gone]
        paths = self._file.read(
            "SELECT t.id, p.value FROM (SELECT id, outputs FROM tasks WHERE "
            f"{where} AND json_valid(outputs)) AS t, json_each(t.outputs) AS o, "
            "json_each(o.value) AS p WHERE o.type = 'object' AND p.key = 'path' "
            "AND p.type = 'text'",
            params,
        )
        return [row_id for row_id, path in paths if copy_gone({"path": path})]

    def tagged(self, tags: Sequence[str]) -> list[LedgerRow]:
        """The rows whose intent was written with one of ``tags`` (what each create was
        sent for: see ``writes.record_intent``), oldest first."""
        self.flush()
        # the held writes first: one applied after this look is on disk for the reads
        # below, so no intent falls between the two (docs/decisions.md#ledger-intent)
        notes = self._queue.notes()
        found: list[LedgerRow] = []
        for start in range(0, len(tags), TAGS_PER_QUERY):
            some = tuple(tags[start : start + TAGS_PER_QUERY])
            found += self._select(f"tag IN ({', '.join('?' * len(some))})", some, wait=False)
        found.sort(key=lambda row: row.id)
        return self._with_held(found, set(tags), notes) if notes else found

    def _with_held(
        self, found: list[LedgerRow], tags: set[str], notes: list[Note]
    ) -> list[LedgerRow]:
        """``found`` and what this process's held writes (``notes``: a lock, a full
        disk) say of them: its intents of ``tags`` not on disk yet, as rows with their
        ticket for id, and the handles and failures of theirs and of ``found``, matched
        by row id (a note names the ticket its create was given; the intent may be on
        disk since). A create that left with its intent held is then never read as
        never sent by a rerun in this process (docs/decisions.md#ledger-intent)."""
        row_of = self.writes.row_of
        on_disk = {row.id for row in found}
        handles = {row_of(n["row"]): n for n in notes if "row" in n and "request_id" in n}
        failed = {row_of(n["failed"]): n for n in notes if "failed" in n}

        def settled(row: LedgerRow) -> LedgerRow:
            row_id = row_of(row.id)  # a held intent's ticket: its row once applied
            if row.request_id is None and row_id in handles:
                made = handles[row_id]["request_id"]
                return dataclasses.replace(row, request_id=made, state=SUBMITTED)
            if row.request_id is None and row_id in failed:
                fail = failed[row_id]
                state = NOT_CREATED if fail["created_nothing"] else OUTCOME_UNKNOWN
                return dataclasses.replace(row, state=state, error=fail["error"])
            return row

        held = [
            LedgerRow(
                id=note["ticket"],
                gateway=note["gateway"],
                endpoint=note["endpoint"],
                request_id=None,
                state=SUBMITTING,
                status=None,
                queue_position=None,
                payload=json.loads(note["payload"]),
                submitted_at=note["at"],
                updated_at=note["at"],
                finished_at=None,
                ok=None,
                error=None,
                error_type=None,
                outputs=[],
                pid=os.getpid(),
                host=HOST,
                tag=note["tag"],
                key_fingerprint=note["key"],
            )
            for note in notes
            if "ticket" in note
            and note.get("tag") in tags
            and row_of(note["ticket"]) not in on_disk  # applied since the look at the notes
        ]
        return [settled(row) for row in found + held]

    def run_times(self, gateway: str, endpoint: str, *, limit: int = 500) -> list[tuple[Any, ...]]:
        """``(request_id, endpoint, payload, handle_at, running_at, done_at, finished_at,
        ok)`` of finished tasks, newest first, unparsed: the run-time model checks (and
        skips) each row itself, so one bad row never hides the others.

        Called on the engine's loop: it waits for queued writes only while the
        file is not busy (a lock held elsewhere makes it read what is on disk)."""
        if not self._queue.stalled:
            self._queue.flush(QUICK_FLUSH)
        return self._file.read(
            "SELECT request_id, endpoint, payload, handle_at, running_at, done_at, "
            "finished_at, ok FROM tasks "
            "WHERE gateway = ? AND endpoint = ? AND state = ? AND finished_at IS NOT NULL "
            "ORDER BY id DESC LIMIT ?",
            (gateway, endpoint, FINISHED, int(limit)),
        )

    def _select(self, where: str, params: tuple[Any, ...], *, wait: bool = True) -> list[LedgerRow]:
        """The readable rows of ``SELECT ... FROM tasks WHERE <where>``, after the writes
        queued so far (unless ``wait`` is False); a damaged one (written by hand, by a
        foreign tool) is skipped with a log line, so one bad row never stops a history
        or a poller; text that is not UTF-8 is read with U+FFFD in place of the bad
        bytes, also with a log line (the task is still shown and followed)."""
        if wait:
            self.flush()
        rows = []
        for values in self._file.read(f"SELECT {COLUMNS} FROM tasks WHERE {where}", params):
            bad = [
                n for n, v in zip(COLUMN_NAMES, values, strict=True) if isinstance(v, Undecodable)
            ]
            if bad:
                log.warning(
                    "genwidgets: ledger row %s of %s holds text that is not UTF-8 (%s): read "
                    "with U+FFFD in place of the bad bytes",
                    values[0],
                    self.path,
                    ", ".join(bad),
                )
            try:
                fields = dict(zip(COLUMN_NAMES, values, strict=True))
                fields["state"] = self._state(fields)
                fields["payload"] = json.loads(fields["payload"])
                fields["outputs"] = json.loads(fields["outputs"])
                fields["ok"] = None if fields["ok"] is None else bool(fields["ok"])
                rows.append(LedgerRow(**fields))
            except (ValueError, TypeError, KeyError) as exc:
                log.warning(
                    "genwidgets: skipped ledger row %s of %s: %s", values[0], self.path, exc
                )
        return rows

    def _state(self, fields: dict[str, Any]) -> str:
        """A row's state as read: ``submitting`` stays so only while its sender lives."""
        if fields["state"] != SUBMITTING or self.writes.sending(fields["id"]):
            return str(fields["state"])
        pid = fields["pid"]
        if fields["host"] == HOST and (pid == os.getpid() or not pid_alive(pid)):
            return OUTCOME_UNKNOWN
        if self._clock() - fields["submitted_at"] > self.stale_after:
            return OUTCOME_UNKNOWN
        return SUBMITTING

    # ------------------------------------------------------------------ leases

    @property
    def owner(self) -> str:
        """This ledger's owner name: the holder of its leases (``host:pid:random``)."""
        return self._leases.owner

    def hold(self, conn: sqlite3.Connection) -> str:
        """Take leases inside a write transaction of :meth:`transaction`, for rows of
        other tables only a live process may hold (a batch's reserved rows): this
        ledger's heartbeat is written there and goes on while it is open; returns
        :attr:`owner`."""
        return self._leases.hold(conn)

    def alive_owners(self) -> set[str]:
        """The owners that live: a fresh heartbeat and, on this host, a running process
        (a read; this ledger's own while it holds leases)."""
        return self._leases.alive()

    def without_held(
        self, gateway: str, rows: list[LedgerRow], *, fingerprint: str | None = None
    ) -> list[LedgerRow]:
        """``rows`` less the unfinished ones another live kernel polls, and those another
        key than the one of ``fingerprint`` made (each said in a warning): re-attaching
        them would poll each task twice and take its lease, or ask the gateway about a
        task it may hide from this key."""
        ours = [r for r in rows if not (r.unfinished and r.made_with_another_key(fingerprint))]
        if len(ours) < len(rows):
            left_to_their_keys(len(rows) - len(ours))
            rows = ours
        held = self._leases.held_elsewhere(gateway) if any(r.unfinished for r in rows) else set()
        if not held:
            return rows
        kept = [row for row in rows if row.request_id not in held]
        left_to_other_kernels(len(rows) - len(kept))
        return kept

    def claim_unfinished(
        self, gateway: str, *, force: bool = False, fingerprint: str | None = None
    ) -> tuple[list[LedgerRow], int]:
        """Take the lease of every unfinished task of ``gateway`` no live owner holds
        (all of them with ``force``); returns those rows, newest first, and how many
        were left to live owners. Tasks another key than the one of ``fingerprint`` made
        are never taken (a warning says how many). Waits for the ledger (the caller is
        ``resume()``). See :mod:`.lease`."""
        future = self._queue.put(self._leases.claim(gateway, force=force, fingerprint=fingerprint))
        try:
            taken: Claim = future.result(timeout=self.busy_timeout)
        except concurrent.futures.TimeoutError:  # the claim stays queued: leases follow
            self._file.warn(
                f"genwidgets: the task ledger {self.path} is locked by another process "
                f"(more than {self.busy_timeout:g} s): resume() re-attaches the unfinished "
                "tasks it reads there without waiting, and takes their leases once it frees"
            )
            return self._unclaimed(gateway, fingerprint)
        except sqlite3.Error:  # cannot be written: a LedgerWarning said so once
            self._file.deliver()
            return self._unclaimed(gateway, fingerprint)
        self._file.deliver()
        if taken.other_keys:
            left_to_their_keys(taken.other_keys)
        if not taken.taken:
            return [], taken.skipped
        marks = ", ".join("?" * len(taken.taken))
        return self._select(
            f"id IN ({marks}) ORDER BY id DESC", taken.taken, wait=False
        ), taken.skipped

    def _unclaimed(self, gateway: str, fingerprint: str | None) -> tuple[list[LedgerRow], int]:
        """``claim_unfinished`` when the claim cannot be written (now): the unfinished
        rows read, less those another live kernel polls and those another key made;
        re-attached in memory."""
        read = self._select(
            "gateway = ? AND state = ? AND request_id IS NOT NULL ORDER BY id DESC",
            (gateway, SUBMITTED),
            wait=False,
        )
        found = [row for row in read if not row.made_with_another_key(fingerprint)]
        if len(found) < len(read):
            left_to_their_keys(len(read) - len(found))
        held = self._leases.held_elsewhere(gateway) if found else set()
        kept = [row for row in found if row.request_id not in held]
        return kept, len(found) - len(kept)

    def release(self) -> None:
        """Give up the leases of this ledger's tasks (queued): another kernel's
        ``resume()`` takes them at once. The next task created takes a lease again."""
        give_up = self._leases.release()
        if give_up is not None:
            self._file.log_if_failed("the end of leases", self._queue.put(give_up))
