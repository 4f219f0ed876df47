"""The ledger's file keeper: opened checked, moved aside when damaged, said when it
cannot be written, read on a connection of its own.

One :class:`LedgerFile` per :class:`~genwidgets.jobs.ledger.Ledger`, which owns
everything about the file: the readers' connection, the writer's opening and faults,
and the warnings about them, kept until the user's thread can be told. Every failure
mode of the file and what the ledger does about it is a table in docs/reliability.md.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import logging
import os
import sqlite3
import stat
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

try:
    import fcntl
except ImportError:  # Windows: appenders are not serialised (a process's notes are one write)
    fcntl = None  # type: ignore[assignment]

from ..._config import ENV_HOME, hide_userinfo, redact
from ...errors import LedgerError, LedgerWarning
from .rows import NOT_CREATED, OUTCOME_UNKNOWN, SUBMITTED, SUBMITTING
from .schema import addresses_masked, ensure_schema, mask_addresses
from .writer import (
    FAULT_PAUSE,
    STALL,
    FaultAction,
    LeftBehind,
    Note,
    Op,
    immediate,
    is_busy,
    is_disk_fault,
)

T = TypeVar("T")

__all__ = [
    "UNKNOWN_TIME",
    "LedgerFile",
    "Undecodable",
    "damage",
    "merge_notes",
    "quick_check",
    "raise_if_damaged",
]

log = logging.getLogger("genwidgets")
#: what the writer does while :attr:`LedgerFile.masking`, as said when it is waited for
MASKING = "masking the addresses an older genwidgets stored, once per file (resumed if cut short)"
_CORRUPT_CODES = {11, 26}  # SQLITE_CORRUPT, SQLITE_NOTADB
_CANTOPEN = 14  # SQLITE_CANTOPEN: too many open files, a folder made unreadable
_READONLY = 8  # SQLITE_READONLY: the file, or the connection that opened it, is read-only
_HERE = os.path.dirname(__file__)
#: the names SQLite gives the ledger's file and its journals
_COMPANIONS = ("", "-wal", "-shm", "-journal")
#: beside the ledger: the notes of writes a process could not apply before it ended
PENDING_SUFFIX = ".pending.jsonl"
#: beside the ledger: the notes a merge could place on no row, moved there once, kept
#: (never merged again, never removed) for `genwidgets history` to list
UNPLACED_SUFFIX = ".unplaced.jsonl"
#: how long an append waits for another appender's ``flock`` on the pending notes before
#: it appends without it: a holder stopped mid-append (Ctrl-Z, a hung NFS lock) must
#: never keep a close or an exit waiting for ever (docs/decisions.md#ledger-left-behind)
PENDING_LOCK_WAIT = 3.0
#: seconds between two checks that the path still leads to the file the writer has open
MOVED_CHECK_EVERY = 1.0


class Undecodable(str):
    """Text of the file that was not UTF-8 (a bad sector, a stray write), read with
    U+FFFD in place of each bad byte: whoever reads a row can tell and say it."""


def _text(value: bytes) -> str:
    """The connections' text factory: UTF-8, or :class:`Undecodable` when it is not
    (sqlite3's own decoding raises, and one bad value stopped every read of the table)."""
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return Undecodable(value.decode("utf-8", errors="replace"))


def _real(path: Path) -> Path:
    """``path`` with every link followed (as far as they lead, for a dangling one)."""
    return Path(os.path.realpath(path))


def damage(exc: BaseException) -> str:
    """The damage an sqlite3 error reports (malformed, not a database), or ""."""
    code = getattr(exc, "sqlite_errorcode", None)
    text = str(exc)
    if (code is not None and code & 0xFF in _CORRUPT_CODES) or "malformed" in text:
        return text
    return text if "not a database" in text else ""


def read_only(exc: BaseException) -> bool:
    """Whether an sqlite3 error is SQLITE_READONLY ("attempt to write a readonly
    database"): the file, or only the connection that opened it so, cannot be written."""
    code = getattr(exc, "sqlite_errorcode", None)
    return (code is not None and code & 0xFF == _READONLY) or "readonly database" in str(exc)


def _refused() -> sqlite3.OperationalError:
    """SQLite's refusal of a write to a read-only file, in its words (:func:`read_only`)."""
    return sqlite3.OperationalError("attempt to write a readonly database")


def quick_check(conn: sqlite3.Connection) -> str:
    """``PRAGMA quick_check``: "" when the file is sound, else what it found."""
    found = [str(r[0]) for r in conn.execute("PRAGMA quick_check").fetchall()]
    return "" if found == ["ok"] else "; ".join(found[:3])


def raise_if_damaged(conn: sqlite3.Connection) -> None:
    """A write for the writer thread that only checks the file: damage found becomes the
    error the writer hands to :meth:`LedgerFile.on_fault` (which moves the file aside)."""
    problem = quick_check(conn)
    if problem:
        raise sqlite3.DatabaseError(f"database disk image is malformed ({problem})")


def _of_process(note: Note, ticket: int) -> tuple[Any, Any, int]:
    """A ticket (or row id) of ``note``'s process as it names an intent in a pending
    file: with that process's host and pid, since every process numbers from -1."""
    return note.get("host"), note.get("pid"), ticket


def _append_lines(fd: int, data: bytes, cut_back: bool) -> None:
    """Append ``data`` (whole lines) to the file open as ``fd``, synced, leaving it at a
    line's end, so later lines are never glued onto a torn one (and skipped): a line
    torn earlier (a process killed mid-append) is ended first, and an append that fails
    partway (a full disk) is cut back to the size before it when ``cut_back`` (under the
    file's lock: unlocked, the bytes past that size may be another's too). Raises
    OSError."""
    size = os.fstat(fd).st_size
    os.lseek(fd, max(0, size - 1), os.SEEK_SET)
    if size and os.read(fd, 1) != b"\n":
        data = b"\n" + data
    try:
        done = 0
        while done < len(data):
            done += os.write(fd, data[done:])
        os.fsync(fd)
    except OSError:
        if cut_back:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)
        raise


def _unchanged(now: os.stat_result, seen: os.stat_result) -> bool:
    """Whether a file stat'ed ``now`` is the one ``seen``, nothing added to it."""
    fields = ("st_dev", "st_ino", "st_size", "st_mtime_ns")
    return all(getattr(now, name) == getattr(seen, name) for name in fields)


def merge_notes(
    notes: list[Note], unplaced: list[Note] | None = None
) -> Callable[[sqlite3.Connection], int]:
    """The write recording ``notes`` a process left in the pending file: an intent not
    on disk becomes its row (read as ``outcome_unknown`` once its process is gone), a
    handle makes its row ``submitted`` (resume() follows it), a failed create makes its
    row ``not_created`` or ``outcome_unknown`` as its process knew it. A note already on
    disk (the same intent, a task already known) changes nothing; returns the tasks
    recorded. Intents are found by :func:`_of_process`: two processes' held creates
    in one file (both ticket -1) each get their paid task on their own row. The file is
    read once (:class:`_OnDisk`): a pending file of thousands of notes merges in time
    linear in the notes and rows, not one scan of the table per note.

    A handle's or failed create's note whose row is not here (its file was set aside
    since) makes its intent again from what it carries of it (``intent_*``, see
    ``LedgerWrites.in_flight``); one that carries too little is appended to ``unplaced``,
    and its pending file is kept (review-29: dropped, a paid task was in no row)."""

    def merge(conn: sqlite3.Connection) -> int:
        rows: dict[tuple[Any, Any, int], int] = {}  # an intent's _of_process -> its row here
        on_disk = _OnDisk(conn, notes)
        if unplaced is not None:
            unplaced.clear()  # this try's alone: a try the writer makes again starts anew

        def row_of(note: Note, placed: int) -> int | None:
            """The row here of a handle's or failed create's ``placed``: a row id on
            disk, or a ticket of its process (no row has a negative id), found by the
            intent's note in these notes, else by what the note says of its intent
            (``intent_at``, ``intent_endpoint``): an earlier merge may have recorded
            that intent's note and removed its file. A note carrying its whole intent
            (its row's create was in flight) is placed by it alone, made again when it is
            not here: the row id may be of a file set aside. None: in no row here."""
            found = rows.get(_of_process(note, placed))
            at, endpoint = note.get("intent_at"), note.get("intent_endpoint")
            if (
                found is None
                and isinstance(at, (int, float))
                and not isinstance(at, bool)
                and isinstance(endpoint, str)
            ):
                found = on_disk.intent_row(note.get("host"), note.get("pid"), at, endpoint)
                if found is None and _carries_intent(note):
                    intent = (note["host"], note["pid"], at, endpoint)
                    found = on_disk.inserted(intent, _insert_intent(conn, _intent_of(note)))
            if found is None and (placed < 0 or _carries_intent(note)):
                return None
            return placed if found is None else found

        def not_placed(note: Note) -> None:
            if unplaced is not None:
                unplaced.append(note)

        recorded = 0
        for note in notes:
            if "ticket" in note:
                intent = (note["host"], note["pid"], note["at"], note["endpoint"])
                found = on_disk.intent_row(*intent)
                if found is None:
                    found = on_disk.inserted(intent, _insert_intent(conn, note))
                rows[_of_process(note, note["ticket"])] = found
            elif "row" in note and not on_disk.known(note["request_id"], note["endpoint"]):
                urls = [  # a file written before URLs were masked in notes: masked here
                    hide_userinfo(url) if isinstance(url, str) else None
                    for url in (note.get(n) for n in ("status_url", "response_url", "cancel_url"))
                ]
                row = row_of(note, note["row"])
                if row is None:
                    not_placed(note)
                    continue
                changed = conn.execute(
                    "UPDATE tasks SET request_id = ?, state = ?, status_url = ?, "
                    "response_url = ?, cancel_url = ?, handle_at = ?, updated_at = ? "
                    "WHERE id = ? AND endpoint = ? AND request_id IS NULL",
                    (
                        note["request_id"],
                        SUBMITTED,
                        *urls,
                        note["at"],
                        note["at"],
                        row,
                        note["endpoint"],
                    ),
                ).rowcount
                if changed:
                    on_disk.recorded(note["request_id"], note["endpoint"])
                else:
                    not_placed(note)  # its row is gone or holds another task
                recorded += changed
            elif "failed" in note:  # only the row of an intent of the note's own process
                nothing, at = note["created_nothing"], note["at"]
                failed = row_of(note, note["failed"])
                if failed is None:
                    if not nothing:  # maybe paid: never dropped (one made nothing: nothing lost)
                        not_placed(note)
                    continue
                changed = conn.execute(
                    "UPDATE tasks SET state = ?, error = ?, updated_at = ?, finished_at = ? "
                    "WHERE id = ? AND request_id IS NULL AND state = ? AND pid = ? AND host = ?",
                    (
                        NOT_CREATED if nothing else OUTCOME_UNKNOWN,
                        note["error"],
                        at,
                        at if nothing else None,
                        failed,
                        SUBMITTING,
                        note["pid"],
                        note["host"],
                    ),
                ).rowcount
                if not (changed or nothing) and not on_disk.of_process(failed, note):
                    not_placed(note)  # maybe paid, and no row of its create here
                recorded += changed
        return recorded

    return merge


class _OnDisk:
    """What a merge of ``notes`` looks up in the file, read in one pass and kept up to
    date by the merge's own writes: the intents of the notes' processes by (host, pid,
    ``submitted_at``, endpoint), each the lowest row id as a scan in id order finds it,
    the process of each row of those processes, and the (request id, endpoint) of the
    notes' tasks already known. Text is compared
    as SQLite compares it, as UTF-8 bytes (a stored value that is not UTF-8 equals no
    note's). One look of the table per note made a pending file of thousands of notes
    quadratic (ledgermend6)."""

    def __init__(self, conn: sqlite3.Connection, notes: list[Note]) -> None:
        self._conn = conn
        processes: set[tuple[bytes, int]] = set()
        for note in notes:
            host, pid = note.get("host"), note.get("pid")
            if isinstance(host, str) and isinstance(pid, int):
                processes.add((_utf8(host), pid))
        request_ids = {_utf8(note["request_id"]) for note in notes if "row" in note}
        self._intents: dict[tuple[bytes, int, Any, bytes], int] = {}
        self._tasks: set[tuple[bytes, bytes]] = set()
        self._processes: dict[int, tuple[bytes, int]] = {}  # row id -> its host, pid
        if not processes and not request_ids:
            return
        text = "CASE WHEN typeof({0}) = 'text' THEN CAST({0} AS BLOB) END"
        columns = ", ".join(text.format(name) for name in ("host", "endpoint", "request_id"))
        for row_id, pid, at, host, endpoint, request_id in conn.execute(
            f"SELECT id, pid, submitted_at, {columns} FROM tasks ORDER BY id"
        ):
            if (host, pid) in processes:
                self._processes[int(row_id)] = (host, pid)
            if endpoint is None:
                continue
            if (host, pid) in processes and at is not None:
                self._intents.setdefault((host, pid, at, endpoint), int(row_id))
            if request_id in request_ids:
                self._tasks.add((request_id, endpoint))

    def intent_row(self, host: Any, pid: Any, at: float, endpoint: str) -> int | None:
        """:func:`intent_row_on_disk` answered from what was read: the row of the intent a
        process made at ``at`` on ``endpoint``, if it is on disk. A note naming its
        process otherwise than genwidgets writes it (no host, a pid that is no integer)
        is asked of the file itself, as SQLite compares such values."""
        if not (isinstance(host, str) and isinstance(pid, int)):
            return intent_row_on_disk(self._conn, host, pid, at, endpoint)
        return self._intents.get((_utf8(host), pid, at, _utf8(endpoint)))

    def inserted(self, intent: tuple[str, int, float, str], row_id: int) -> int:
        """An intent's row the merge inserted (its note's host, pid, time and endpoint),
        found by the notes after it."""
        host, pid, at, endpoint = intent
        self._processes[row_id] = (_utf8(host), pid)
        return self._intents.setdefault((_utf8(host), pid, at, _utf8(endpoint)), row_id)

    def of_process(self, row: int, note: Note) -> bool:
        """Whether row ``row`` is here and of the process of ``note``, a failed create's
        (its host and pid are a text and an integer: ``_NOTE_FIELDS``)."""
        return self._processes.get(row) == (_utf8(note["host"]), note["pid"])

    def known(self, request_id: str, endpoint: str) -> bool:
        """Whether a row holds the task ``request_id`` of ``endpoint`` already."""
        return (_utf8(request_id), _utf8(endpoint)) in self._tasks

    def recorded(self, request_id: str, endpoint: str) -> None:
        """The merge gave a row the task ``request_id`` of ``endpoint``."""
        self._tasks.add((_utf8(request_id), _utf8(endpoint)))


def _utf8(text: str) -> bytes:
    """``text`` as SQLite holds it (a lone surrogate, which SQLite refuses, kept
    unequal to any stored text)."""
    return text.encode("utf-8", "surrogatepass")


def intent_row_on_disk(
    conn: sqlite3.Connection, host: Any, pid: Any, at: float, endpoint: str
) -> int | None:
    """The row of the intent a process (``host``, ``pid``) made at ``at`` on
    ``endpoint``, if it is on disk: how a note's intent is known in any process."""
    found = conn.execute(
        "SELECT id FROM tasks WHERE host = ? AND pid = ? AND submitted_at = ? AND endpoint = ?",
        (host, pid, at, endpoint),
    ).fetchone()
    return None if found is None else int(found[0])


def _carries_intent(note: Note) -> bool:
    """Whether a handle's or failed create's note carries its whole intent (its row's
    create was in flight when it was kept: ``LedgerWrites.in_flight``)."""
    return (
        isinstance(note.get("intent_gateway"), str)
        and isinstance(note.get("intent_payload"), str)
        and isinstance(note.get("host"), str)
        and isinstance(note.get("pid"), int)
    )


def _intent_of(note: Note) -> Note:
    """The intent note a handle's or failed create's note carries (see :func:`_carries_intent`)."""
    tag = note.get("intent_tag")
    return {
        "gateway": note["intent_gateway"],
        "endpoint": note["intent_endpoint"],
        "payload": note["intent_payload"],
        "pid": note["pid"],
        "host": note["host"],
        "at": note["intent_at"],
        "tag": tag if isinstance(tag, str) else None,
        "key": note.get("intent_key"),
    }


def _insert_intent(conn: sqlite3.Connection, note: Note) -> int:
    """The row of an intent note, as ``record_intent`` writes it, in its process's name."""
    values = [note[name] for name in ("gateway", "endpoint", "payload", "pid", "host", "at")]
    values[0] = hide_userinfo(values[0])
    key = note.get("key")  # the fingerprint of the key that sent it (never the key)
    cursor = conn.execute(
        "INSERT INTO tasks (gateway, endpoint, payload, pid, host, submitted_at, "
        "updated_at, tag, state, key_fingerprint) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (*values, note["at"], note.get("tag"), SUBMITTING, key if isinstance(key, str) else None),
    )
    return int(cursor.lastrowid or 0)


#: the fields of each kind of note and their types (a pending file is read back as data)
_NOTE_FIELDS: dict[str, dict[str, type | tuple[type, ...]]] = {
    "ticket": {
        "ticket": int,
        "gateway": str,
        "endpoint": str,
        "payload": str,
        "pid": int,
        "host": str,
        "at": (int, float),
    },
    "row": {"row": int, "request_id": str, "endpoint": str, "at": (int, float)},
    "failed": {
        "failed": int,
        "error": str,
        "created_nothing": bool,
        "at": (int, float),
        "pid": int,
        "host": str,
    },
}


#: the log line of a line of a pending file that is not a note
_SKIPPED = "genwidgets: skipped a line of a ledger's pending file: %.80s"
#: the log line of a note whose time is no time (kept, its time unknown)
_TIME_UNREADABLE = "genwidgets: a ledger's pending note has no readable time (%.20r): kept"
#: the time of a note whose own was no time (:data:`_TIME_UNREADABLE`); the latest time a
#: note may carry (the last second of the year 9999, the most any clock here shows)
UNKNOWN_TIME, LATEST_TIME = 0.0, 253_402_300_799.0


def _notes(data: bytes) -> list[Note]:
    """The notes of a pending file's bytes. Each line is decoded alone: one that is not
    UTF-8 (stale disk bytes past a crash's torn append) is skipped, logged, as a line
    that is not a note is (review-21: decoded whole, the file raised at every open)."""
    notes: list[Note] = []
    for raw in data.splitlines():
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            log.warning(_SKIPPED, raw.decode("utf-8", errors="replace"))
            continue
        note = _note(line)
        if note is not None:
            notes.append(note)
    return notes


def _note(line: str) -> Note | None:
    """One line of a pending file as a note, or None when it is not one (logged)."""
    try:
        note = json.loads(line)
    except ValueError:
        note = None
    for kind, wanted in _NOTE_FIELDS.items():
        if (
            isinstance(note, dict)
            and kind in note
            and all(isinstance(note.get(name), types) for name, types in wanted.items())
            and not isinstance(note["at"], bool)
        ):
            if not 0 <= note["at"] <= LATEST_TIME:  # NaN, inf, 1e300: SQLite keeps NaN as
                # NULL and no clock reads it; the note still names its task, kept
                log.warning(_TIME_UNREADABLE, note["at"])
                note["at"] = UNKNOWN_TIME
            return note
    log.warning(_SKIPPED, line)
    return None


def _callers_level() -> int:
    """The ``stacklevel``, for the function that asks, of the first frame outside the
    ledger (and ``contextlib``): a warning names the line of whoever called the ledger,
    however its pieces call each other."""
    frame = sys._getframe(1)  # noqa: SLF001 - CPython's frame access, documented; the function that asks: stacklevel 1
    level = 1
    while frame.f_back is not None and (
        os.path.dirname(frame.f_code.co_filename) == _HERE
        or frame.f_code.co_filename == contextlib.__file__  # ``with ledger.transaction()``
    ):
        frame = frame.f_back
        level += 1
    return level


class LedgerFile:
    """The ledger's file: its path, the readers' connection, the writer's opening, a
    damaged file moved aside, an unwritable one said once, and the warnings kept for
    the user's thread."""

    def __init__(self, path: Path, busy_timeout: float) -> None:
        self.path = path
        self.busy_timeout = busy_timeout
        self._lock = threading.RLock()  # the readers' connection
        self._conn: sqlite3.Connection | None = None
        self._conn_pid = 0
        self._reopen_reads = False
        #: a write was refused as read-only: every connection of this process is opened
        #: anew once the file may be written, not before (see :meth:`may_write_again`)
        self._refused_read_only = False
        self._abandoned: list[sqlite3.Connection] = []
        #: the journal mode the writer's connection got (``wal`` where SQLite allows)
        self.journal_mode = ""
        #: where an unusable file found at ``path`` was moved (None if none was)
        self.set_aside: Path | None = None
        #: a read found the file locked by another process past ``busy_timeout``: the
        #: next reads try without waiting, until one gets through (a history waits once)
        self.locked_out = False
        #: why the file cannot be written (None while it can): writes are kept meanwhile
        self.unwritable: str | None = None
        #: the writer is masking the addresses of an older version's file, in short
        #: writes of this process's own: a wait for it is no lock held elsewhere
        self.masking = False
        #: writes given up because the file failed them for another reason than a busy
        #: file or a disk fault
        self.dropped = 0
        #: the highest row id this process's writer was handed (an intent's): a fresh
        #: file started after a damaged one was set aside numbers its rows above it, so a
        #: create in flight names no row there, never another's (see :meth:`_number_above`)
        self.ids_from = 0
        #: the file was checked for damage when the disk fault keeping writes appeared:
        #: the retries until it is written again do not check it again (each check reads
        #: the whole file, every second while a disk stays full)
        self._checked_at_fault = False
        self._notices: list[str] = []
        self._notices_lock = threading.Lock()
        #: (st_dev, st_ino) of the file the writer opened, and when the path was checked
        self._opened: tuple[int, int] | None = None
        self._checked_at = 0.0
        self.path.parent.mkdir(parents=True, exist_ok=True)
        #: links at the ledger's names that led out of its folder, each moved to
        self.links_set_aside: list[Path] = []
        self._guard_links()
        self._warn_if_others_write()

    # ------------------------------------------------------------------ a shared home

    def _guard_links(self) -> None:
        """Move aside a symbolic link at the ledger's name (or its journal's) that does
        not lead to a file inside the ledger's folder: SQLite would write a database at
        the link's target, wherever it is (docs/decisions.md#a-shared-home)."""
        folder = _real(self.path.parent)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        for suffix in _COMPANIONS:
            link = self.path.with_name(self.path.name + suffix)
            if not link.is_symlink():
                continue
            target = _real(link)
            if target.is_file() and target.parent == folder:
                continue  # a link within the folder: the file is still the home's
            aside = link.with_name(f"{link.name}.link-{stamp}-{os.getpid()}")
            try:
                os.replace(link, aside)  # renames the link itself, never its target
            except OSError as exc:  # never write through it: no ledger rather than that
                raise LedgerError(
                    f"{link} is a symbolic link out of {folder} and could not be moved "
                    f"aside ({exc}); remove it, or set {ENV_HOME} to a folder of your own"
                ) from exc
            self.links_set_aside.append(aside)
            where = "nothing" if not target.exists() else str(target)
            message = (
                f"genwidgets: {link} was a symbolic link to {where}, outside the ledger's "
                f"folder {folder}; a task ledger is never written through a link out of "
                f"its folder. The link was moved to {aside} (its target untouched) and a "
                f"new file is used at {link}."
            )
            self._notice(message)

    def _warn_if_others_write(self) -> None:
        """Say (once, at open) when other users may write the ledger or its folder."""
        open_to_all: list[tuple[Path, int]] = []
        for place in (self.path.parent, self.path):
            try:
                mode = place.stat().st_mode
            except OSError:
                continue
            if mode & stat.S_IWOTH:
                open_to_all.append((place, stat.S_IMODE(mode)))
        if open_to_all:
            shown = " and ".join(f"{place} (mode {mode:04o})" for place, mode in open_to_all)
            names = " ".join(str(place) for place, _ in open_to_all)
            message = (
                f"genwidgets: {shown} can be written by every user of this machine, so "
                "anyone may change or replace the task ledger and the outputs kept beside "
                f"it. Fix: chmod o-w {names} (or chmod 700 the folder), or set {ENV_HOME} "
                "to a folder of your own."
            )
            self._notice(message)

    # ------------------------------------------------------------------ the readers' side

    def _connection(self) -> sqlite3.Connection:
        """The readers' connection (the writer has its own); call with ``_lock`` held."""
        if self._conn is not None and self._conn_pid == os.getpid() and not self._reopen_reads:
            return self._conn
        if self._conn is not None and self._conn_pid != os.getpid():
            self._abandoned.append(self._conn)  # inherited across fork: never touch it again
        elif self._conn is not None:
            self._conn.close()
        self._conn, self._reopen_reads = None, False
        self._conn, self._conn_pid = self._connect(), os.getpid()
        return self._conn

    def _connect(self) -> sqlite3.Connection:
        """A new connection to the file (autocommit, usable from any thread)."""
        try:
            conn = sqlite3.connect(
                self.path, timeout=self.busy_timeout, isolation_level=None, check_same_thread=False
            )
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
            conn.text_factory = _text
            return conn
        except sqlite3.Error as exc:
            raise LedgerError(f"cannot open the ledger {self.path}: {exc}") from exc

    def read(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Rows of one statement on the readers' connection; sqlite3 errors become
        :class:`LedgerError`. A file locked past ``busy_timeout`` is waited for once
        (see :attr:`locked_out`). A table missing while the file cannot be written is none
        read: the schema is among the writes kept (a new home on a full disk), and the
        reads say the rest (docs/decisions.md#ledger-behind)."""
        with self._lock:
            conn = self._connection()
            patient = not self.locked_out
            try:
                if not patient:  # waited once already: try, never wait again
                    conn.execute("PRAGMA busy_timeout = 0")
                found = conn.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                if self.unwritable is not None and "no such table" in str(exc):
                    return []
                if is_busy(exc):
                    self.locked_out = True
                    raise LedgerError(
                        f"the ledger {self.path} is locked by another process (reads waited "
                        f"{self.busy_timeout:g} s once, and try without waiting until it "
                        "frees); try again once that process is done with it"
                    ) from exc
                raise LedgerError(f"cannot read the ledger {self.path}: {exc}") from exc
            finally:
                if not patient:
                    with contextlib.suppress(sqlite3.Error):
                        conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
            self.locked_out = False
            return found

    @contextmanager
    def write(self, on_damage: Callable[[], None]) -> Iterator[sqlite3.Connection]:
        """A write transaction (``BEGIN IMMEDIATE``) on the readers' connection, on the
        caller's thread; ``on_damage`` runs when SQLite says the file is damaged (the
        writer thread then checks it: its connection must never write the old file). A
        lock held elsewhere past ``busy_timeout`` is said so, with what to do. A
        refusal as read-only is noted: the writer opens the connections anew once the
        file may be written (:meth:`may_write_again`; the caller asks it first)."""
        with self._lock:
            try:
                with immediate(self._connection()) as conn:
                    yield conn
            except sqlite3.Error as exc:
                if damage(exc):
                    on_damage()
                elif read_only(exc):
                    self._refused_read_only = True
                elif is_busy(exc):  # as the reads and a batch's store say it (review-21)
                    raise LedgerError(
                        f"another process holds the ledger {self.path} past the "
                        f"{self.busy_timeout:g} s wait for it; this change was not saved: "
                        "do it again once it frees"
                    ) from exc
                raise LedgerError(f"cannot write the ledger {self.path}: {exc}") from exc

    @property
    def refused_read_only(self) -> bool:
        """A write was refused as read-only, and the connections are not opened anew yet."""
        return self._refused_read_only

    def may_write_again(self) -> bool:
        """After a write refused as read-only, whether the file and its journals may be
        written now (``os.access``); then the readers' connection is closed, and the
        writer, which asks (on its thread), opens its own anew. One connection of this
        process opened read-only keeps SQLite's shared state of the file read-only for
        every later one, and defers the close of each refused one: a read-only home
        written again refused the kept writes for ever, and each retry kept a descriptor
        (review-21). So nothing is opened again before, and everything together then."""
        if not self._refused_read_only:
            return False
        journals = [self.path.with_name(self.path.name + suffix) for suffix in ("-wal", "-shm")]
        # a journal not there is made in the folder: that must be writable then
        places = [self.path, *(name if name.exists() else self.path.parent for name in journals)]
        if not all(os.access(place, os.W_OK) for place in places):
            return False
        if not self._lock.acquire(timeout=STALL):  # a long read or transaction: next try
            return False
        try:
            self._refused_read_only = False
            self.close()
        finally:
            self._lock.release()
        return True

    def close(self) -> None:
        """Close the readers' connection (the next read opens it again)."""
        with self._lock:
            if self._conn is not None and self._conn_pid == os.getpid():
                self._conn.close()
            self._conn = None

    # ------------------------------------------------------------------ the writer's side

    def open_for_writes(self) -> sqlite3.Connection:
        """The writer's connection: checked, schema current, WAL; runs on the writer thread.

        A busy file raises the raw sqlite3 error (the writer retries); a damaged or
        foreign file is moved aside and a new one started.
        """
        if self._refused_read_only and not self.may_write_again():
            raise _refused()  # nothing opened: a connection refused so keeps a descriptor
        try:
            return self._open_checked()
        except LedgerError as exc:
            if not exc.replaceable:
                raise
            self._set_aside(exc)
            return self._open_checked()

    def _open_checked(self) -> sqlite3.Connection:
        conn = self._connect()
        try:
            problem = "" if self._checked_at_fault else quick_check(conn)
            if problem:
                raise LedgerError(
                    f"{self.path} is damaged (integrity check: {problem})", replaceable=True
                )
            ensure_schema(conn, self.path)  # first: a file that is not ours stays untouched
            if not addresses_masked(conn):  # an older version's file: its own long write
                self.masking = True
                try:
                    mask_addresses(conn)
                finally:
                    self.masking = False
            self._number_above(conn)
            mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
            if str(mode).lower() != "wal":
                mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            self.journal_mode = str(mode)
            conn.execute("PRAGMA synchronous = NORMAL")
            with contextlib.suppress(OSError):  # unknown: the path is then never checked
                found = os.stat(self.path)
                self._opened, self._checked_at = (found.st_dev, found.st_ino), time.monotonic()
        except sqlite3.OperationalError as exc:
            conn.close()
            if is_busy(exc) or is_disk_fault(exc):  # a full disk fails the check
                raise  # the writer waits (busy), or keeps the writes till it can write
            raise LedgerError(f"cannot open the ledger {self.path}: {exc}") from exc
        except sqlite3.DatabaseError as exc:  # not a database, malformed
            conn.close()
            raise LedgerError(
                f"{self.path} is not a usable genwidgets ledger ({exc})", replaceable=True
            ) from exc
        except BaseException:
            conn.close()
            raise
        return conn

    def _number_above(self, conn: sqlite3.Connection) -> None:
        """Start the file's row ids past :attr:`ids_from` (written only when they would
        start below: a fresh file after a damaged one was set aside under this process's
        creates in flight). Numbered from 1 again, a create's row id of the file set aside
        named another create's row there, and its paid task's handle replaced that one's
        (ledgermend6)."""
        if not self.ids_from:
            return
        found = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'tasks'").fetchone()
        if found is not None and found[0] >= self.ids_from:
            return
        with immediate(conn):
            conn.execute("DELETE FROM sqlite_sequence WHERE name = 'tasks'")
            conn.execute(
                "INSERT INTO sqlite_sequence (name, seq) VALUES ('tasks', "
                "max(?, (SELECT coalesce(max(id), 0) FROM tasks)))",
                (self.ids_from,),
            )

    def _set_aside(self, why: LedgerError) -> None:
        """Move an unusable file (and its WAL companions) aside, keeping it, and say where."""
        stamp = time.strftime("%Y%m%d-%H%M%S")
        aside = self.path.with_name(f"{self.path.name}.unusable-{stamp}-{os.getpid()}")
        for suffix in ("", "-wal", "-shm"):
            source = self.path.with_name(self.path.name + suffix)
            if source.exists():
                os.replace(source, aside.with_name(aside.name + suffix))
        self.set_aside = aside
        self._reopen_reads = True
        self._notice(
            f"genwidgets: {redact(str(why))}. It was moved to {aside} (kept as it was) and a "
            f"new task ledger was started at {self.path}; recording goes on."
        )

    def moved(self, conn: sqlite3.Connection) -> bool:
        """Whether the path no longer leads to the file ``conn`` has open (the home
        removed, the file deleted or replaced), checked at most every
        :data:`MOVED_CHECK_EVERY` s, on the writer thread. True: the writer opens the
        path anew. What ``conn`` still reads is copied first (a deleted file is written
        back at the path) and a warning says where (docs/decisions.md#ledger-moved).
        True as well once a file that refused a write as read-only may be written
        (:meth:`may_write_again`): ``conn`` was opened read-only."""
        if self.may_write_again():
            return True
        now = time.monotonic()
        if self._opened is None or now - self._checked_at < MOVED_CHECK_EVERY:
            return False
        self._checked_at = now
        try:
            found = os.stat(self.path)
        except FileNotFoundError:
            gone = True
        except OSError:
            return False  # unknown (a folder not searchable): the writes say the rest
        else:
            gone = False
            if (found.st_dev, found.st_ino) == self._opened:
                return False
        stamp = time.strftime("%Y%m%d-%H%M%S")
        copy = self.path.with_name(f"{self.path.name}.detached-{stamp}-{os.getpid()}")
        what = "removed" if gone else "replaced by another file"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with contextlib.closing(sqlite3.connect(copy)) as target:
                conn.backup(target)
                target.execute("PRAGMA journal_mode = DELETE")  # one file, no companions
        except (OSError, sqlite3.Error) as exc:
            self._opened = None  # said once; the open file goes on: its rows are this one's
            self._notice(
                f"genwidgets: the task ledger {self.path} was {what} while this process had "
                f"it open, and what it held could not be copied ({redact(str(exc))}): "
                "this process records on in the file it has open, which no later process "
                "will read; follow its tasks now (client.history())"
            )
            return False
        written_back = False
        with contextlib.suppress(OSError):  # another process started one: keep the copy
            if gone:
                os.link(copy, self.path)  # never over a file another process started
                os.unlink(copy)
                written_back = True
        self._opened, self._reopen_reads = None, True
        if written_back:
            where = f"it was written back at {self.path} from the file still open"
        else:  # the file at the path is another process's: this one's row ids are not its
            where = (
                f"this process records on in a copy of its file, {copy} (open it with "
                f"gw.Client(ledger=gw.Ledger({str(copy)!r})) to follow its tasks)"
            )
            self.path = copy
        self._notice(
            f"genwidgets: the task ledger was {what} while this process had it open; {where}."
        )
        return True

    # ------------------------------------------------------------------ writes left behind

    @property
    def pending_path(self) -> Path:
        """Beside the ledger: the notes of writes a process could not apply before it
        stopped (docs/decisions.md#ledger-left-behind)."""
        return self.path.with_name(self.path.name + PENDING_SUFFIX)

    @property
    def unplaced_path(self) -> Path:
        """Beside the ledger: the notes a merge placed on no row, moved out of
        :attr:`pending_path` once (docs/decisions.md#ledger-left-behind)."""
        return self.path.with_name(self.path.name + UNPLACED_SUFFIX)

    def unplaced_notes(self) -> list[Note]:
        """The notes in :attr:`unplaced_path` (none: [])."""
        try:
            return _notes(self.unplaced_path.read_bytes())
        except OSError:
            return []

    def _keep_unplaced(self, notes: list[Note], locked: bool) -> None:
        """Append ``notes`` to :attr:`unplaced_path` (:func:`_append_lines`), mode 0600
        (payloads); only under the pending file's lock (``locked``: taken, not merely
        unavailable), so two merges never move the same notes twice. Raises OSError:
        the pending file stays."""
        data = "".join(json.dumps(note) + "\n" for note in notes).encode("utf-8")
        fd = os.open(self.unplaced_path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            _append_lines(fd, data, cut_back=locked)
        finally:
            os.close(fd)

    def keep_pending(self, notes: list[Note]) -> str:
        """Append ``notes`` to :attr:`pending_path`, synced (mode 0600: it holds
        payloads); "" once on disk, else why not. The file is left ending at a line's
        end (:func:`_append_lines`, cut back under its lock)."""
        try:
            data = "".join(json.dumps(note) + "\n" for note in notes).encode("utf-8")
            fd, locked = self._open_pending()
        except (OSError, TypeError, ValueError) as exc:
            return str(exc)
        try:
            _append_lines(fd, data, cut_back=bool(locked))
        except OSError as exc:
            return str(exc)
        finally:
            os.close(fd)  # releases the lock
        return ""

    def _open_pending(self) -> tuple[int, bool | None]:
        """The pending file opened to append and its lock (:meth:`_lock_pending`); opened
        again (twice at most) when a merge removed it between the open and the lock:
        notes appended to the removed file would be lost with it."""
        otherwise = "its notes are appended without waiting longer"
        fd = os.open(self.pending_path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
        locked = self._lock_pending(fd, otherwise)
        for _ in range(2):
            if not locked or self._is_pending(fd):
                break
            os.close(fd)
            fd = os.open(self.pending_path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
            locked = self._lock_pending(fd, otherwise)
        return fd, locked

    def _is_pending(self, fd: int) -> bool:
        """Whether :attr:`pending_path` still leads to the file open as ``fd``."""
        try:
            opened, there = os.fstat(fd), self.pending_path.stat()
        except OSError:
            return False
        return (opened.st_dev, opened.st_ino) == (there.st_dev, there.st_ino)

    def _lock_pending(self, fd: int, otherwise: str) -> bool | None:
        """Take the pending file's ``flock`` (two appenders: one after the other, and a
        merge removes the file only between appends), tried for
        :data:`PENDING_LOCK_WAIT`; False: not taken (a holder stopped mid-append, a hung
        lock: ``otherwise`` is done, and logged), None: no locks here. An append without
        it is whole lines still, as a torn last line is ended first."""
        if fcntl is None:
            return None
        deadline = time.monotonic() + PENDING_LOCK_WAIT
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    log.warning(
                        "genwidgets: another process held %s for %g s; %s",
                        self.pending_path,
                        PENDING_LOCK_WAIT,
                        otherwise,
                    )
                    return False
                time.sleep(0.05)
            except OSError:  # no locks here (some network file systems)
                return None

    def left_behind(self, notes: list[Note], unwritten: int) -> None:
        """Writes still queued when the writer stopped or the process ends (a lock held
        elsewhere outlasted the wait): kept in :attr:`pending_path` and said, naming the
        tasks whose handle is not on disk, so none is lost silently."""
        tasks = [f"{note['endpoint']} {note['request_id']}" for note in notes if "row" in note]
        why = self.keep_pending(notes) if notes else ""
        cause = (
            f"it could not be written: {self.unwritable}"
            if self.unwritable is not None
            else f"this process was still {MASKING}"
            if self.masking
            else "another process held its lock"
        )
        message = (
            f"genwidgets: {unwritten} write(s) could not reach the task ledger {self.path} "
            f"before the writer stopped ({cause})."
        )
        if tasks:
            message += (
                f" These created (paid) tasks are NOT recorded there (endpoint request_id): "
                f"{', '.join(tasks)}; follow one with client.job(endpoint, request_id)."
            )
        if notes and not why:
            message += (
                f" What they record was kept in {self.pending_path}: the next genwidgets "
                "to open this ledger writes it there (then resume() follows them)."
            )
        elif notes:
            message += f" It could not be kept in {self.pending_path} either ({why})."
        others = unwritten - len(notes)
        if others > 0:  # writes with no note lose nothing a later process needs
            message += (
                f" {others} of them recorded statuses, results or leases (resume() polls "
                "those tasks again)"
            )
            if self.pending_path.exists():
                message += (
                    f" or the notes another process kept in {self.pending_path} (still "
                    "there, for the next open)"
                )
            message += "."
        self.warn(message)

    def pending_handles(self) -> list[Note]:
        """The handle notes in :attr:`pending_path`: created tasks a process kept there
        (it may still run: it keeps them as they are held), not in the file until a
        write records them. Each with the ``gateway`` of its intent's note when that is
        there too (its intent was held as well), or of the intent it carries."""
        try:
            notes = _notes(self.pending_path.read_bytes())
        except OSError:
            return []
        gateways = {_of_process(n, n["ticket"]): n.get("gateway") for n in notes if "ticket" in n}
        handles = [note for note in notes if "row" in note]
        for note in handles:
            found = gateways.get(_of_process(note, note["row"]), note.get("intent_gateway"))
            if isinstance(found, str):  # its intent's note's, or the intent it carries
                note.setdefault("gateway", found)
        return handles

    def merge_pending(self, put: Callable[[Op], concurrent.futures.Future[int]]) -> None:
        """Queue the write recording the notes another process left in
        :attr:`pending_path`; the file is removed once they are written, and only if
        nobody added to it meanwhile: checked and removed under the appenders' lock,
        so an append is before the check or in a new file. Recording a note twice
        changes nothing, so a file left (this process stopped before the write, two
        processes read it, an appender held the lock past :data:`PENDING_LOCK_WAIT`)
        is simply recorded again by the next open: never claimed, never orphaned."""
        try:
            seen = self.pending_path.stat()
            notes = _notes(self.pending_path.read_bytes())
        except OSError:
            return  # none (the usual case), or unreadable: left where it is

        unplaced: list[Note] = []

        def written(future: concurrent.futures.Future[int]) -> None:
            if future.exception() is not None:
                log.warning(
                    "genwidgets: could not record the writes left in %s (kept for the next "
                    "open): %s",
                    self.pending_path,
                    future.exception(),
                )
                return
            log.info(
                "genwidgets: recorded %d task(s) left in %s by an earlier process",
                future.result(),
                self.pending_path,
            )
            try:  # for writing, as appenders open it: some network locks need that
                fd = os.open(self.pending_path, os.O_RDWR)
            except OSError:
                return  # removed already (another process recorded it too)
            try:
                # appended to since: merged again, whole, at the next open
                locked = self._lock_pending(fd, "the notes are left for the next open")
                if locked is False or not _unchanged(self.pending_path.stat(), seen):
                    if unplaced:
                        self._said_unplaced(unplaced, f"kept in {self.pending_path} for now")
                    return
                if unplaced:  # moved once, never removed: a task it names is in no row here
                    self._keep_unplaced(unplaced, locked=bool(locked))
                self.pending_path.unlink()
            except OSError as exc:
                if unplaced:
                    self._said_unplaced(unplaced, f"kept in {self.pending_path} ({exc})")
                return  # left for the next open, which records it again (no change)
            finally:
                os.close(fd)  # releases the lock
            if unplaced:
                self._said_unplaced(unplaced, f"moved to {self.unplaced_path}, kept there")

        put(merge_notes(notes, unplaced)).add_done_callback(written)

    def _said_unplaced(self, unplaced: list[Note], where: str) -> None:
        """The one warning naming the notes a merge placed on no row, and where they are."""
        tasks = ", ".join(
            str(n.get("request_id") or f"a create of unknown outcome, row {n.get('failed', '?')}")
            for n in unplaced
        )
        log.warning(
            "genwidgets: %d note(s) left by an earlier process name a row this ledger does "
            "not have and too little of their create to make it again (%s): %s; "
            "`genwidgets history` lists them as kept aside, not placed",
            len(unplaced),
            redact(tasks),
            where,
        )

    def on_fault(self, exc: sqlite3.Error) -> FaultAction:
        """A write failed for a reason other than a busy file (writer thread).

        A damaged file (the error says so, or ``PRAGMA quick_check`` finds a
        problem) is moved aside and the write retried in a fresh file; a file
        that cannot be written is said once (a :class:`LedgerWarning`) and the
        write given up, or kept on a disk fault (checked when it appears, not at
        each retry).
        """
        if read_only(exc):  # the connections are opened anew only once it may be written
            self._refused_read_only = True
        # a file opened before that cannot be opened again (the writer hands that over
        # only then: too many open files) is kept as a disk fault's writes are
        reopen = getattr(exc, "sqlite_errorcode", None) == _CANTOPEN
        problem = damage(exc) or ("" if self._checked_at_fault or reopen else self._check_file())
        if problem:
            self._set_aside(LedgerError(f"{self.path} is damaged ({problem})"))
            return "retry"
        if is_disk_fault(exc) or reopen:  # as a lock held elsewhere: kept, tried again
            self._checked_at_fault = True
            if self.unwritable is None:
                self.unwritable = redact(str(exc))
                kept = (
                    f"The created tasks are also kept in {self.pending_path} as they come "
                    "(unless that disk is full too), for the next genwidgets to record if "
                    "this process ends first, and each is named in a warning at exit."
                )
                if not os.access(self.pending_path.parent, os.W_OK):  # a read-only home
                    kept = (
                        "Its folder cannot be written either, so nothing is kept beside it: "
                        "if this process ends first, each created task is named in a "
                        "warning at exit."
                    )
                self._notice(
                    f"genwidgets: the task ledger {self.path} cannot be written now "
                    f"({self.unwritable}). New tasks, their statuses and results are kept in "
                    "this process, in order, and written there as soon as it can be written "
                    f"(tried every {FAULT_PAUSE:g} s and at each new write); keep this kernel "
                    f"running until then. Free disk space or make the file writable. {kept}"
                )
            return "keep"
        self._checked_at_fault = False  # another fault: the next is checked again
        self.dropped += 1
        if self.unwritable is None:
            self.unwritable = redact(str(exc))
            self._notice(
                f"genwidgets: the task ledger {self.path} cannot be written ({self.unwritable}). "
                "New tasks, their statuses, results and saved output paths are NOT being kept: "
                "they will not survive a kernel restart, and resume()/history() will not know "
                f"them. Make the file writable (or free disk space), or set {ENV_HOME} to a "
                "writable folder and restart the kernel."
            )
        return "give_up"

    def recovered(self) -> None:
        """The writes kept while the file could not be written reached it (writer thread):
        said, since a warning said they were kept."""
        self._checked_at_fault = False  # a later fault is checked when it appears
        if self.unwritable is not None:
            self.unwritable = None
            self._notice(
                f"genwidgets: the task ledger {self.path} can be written again: the tasks, "
                "statuses and results kept meanwhile were written there, in order."
            )

    def _check_file(self) -> str:
        """``PRAGMA quick_check`` on a fresh connection: a problem, or "" when fine/unknown."""
        try:
            with contextlib.closing(self._connect()) as conn:
                return quick_check(conn)
        except LedgerError:  # could not even connect: unknown
            return ""
        except sqlite3.Error as exc:
            return damage(exc)

    def log_if_failed(
        self, what: str, future: concurrent.futures.Future[T]
    ) -> concurrent.futures.Future[T]:
        """Log (once it ends) a background write that failed; the warning says the rest.
        Returns ``future``."""

        def done(f: concurrent.futures.Future[Any]) -> None:
            exc = f.exception()
            if exc is not None:  # once the file is known unwritable, the warning said it all
                said = self.unwritable is not None or isinstance(exc, LeftBehind)
                level = logging.DEBUG if said else logging.WARNING
                log.log(level, "genwidgets: could not record %s in the ledger: %s", what, exc)

        future.add_done_callback(done)
        return future

    # ------------------------------------------------------------------ notices

    def _notice(self, message: str) -> None:
        """Keep a warning for the user's thread: one raised on the writer thread
        would reach no notebook cell (see :meth:`deliver`)."""
        with self._notices_lock:
            self._notices.append(message)

    def warn(self, message: str) -> None:
        """Raise ``message`` as a :class:`LedgerWarning` now, on the calling thread, at
        the line that called the ledger."""
        warnings.warn(message, LedgerWarning, stacklevel=_callers_level())

    def deliver(self) -> None:
        """Raise the kept warnings as :class:`LedgerWarning` on the calling thread, at
        the line that called the ledger."""
        with self._notices_lock:
            notices, self._notices = self._notices, []
        for message in notices:
            warnings.warn(message, LedgerWarning, stacklevel=_callers_level())
