"""The ledger's file: opened checked, moved aside when damaged, said when it cannot be written.

A mixin of :class:`~genwidgets.jobs.ledger.Ledger` (its file-keeping half), so
the store stays one noun. Every failure mode of the file and what the ledger
does about it is a table in docs/reliability.md.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
import warnings
from pathlib import Path

from ..._config import ENV_HOME, redact
from ...errors import LedgerError, LedgerWarning
from .schema import ensure_schema
from .writer import FaultAction, is_busy

__all__ = ["FileKeeping"]

_CORRUPT_CODES = {11, 26}  # SQLITE_CORRUPT, SQLITE_NOTADB


def _damage(exc: BaseException) -> str:
    """The damage an sqlite3 error reports (malformed, not a database), or ""."""
    code = getattr(exc, "sqlite_errorcode", None)
    text = str(exc)
    if (code is not None and code & 0xFF in _CORRUPT_CODES) or "malformed" in text:
        return text
    return text if "not a database" in text else ""


def _quick_check(conn: sqlite3.Connection) -> str:
    """``PRAGMA quick_check``: "" when the file is sound, else what it found."""
    found = [str(r[0]) for r in conn.execute("PRAGMA quick_check").fetchall()]
    return "" if found == ["ok"] else "; ".join(found[:3])


class FileKeeping:
    """Opening, checking, setting aside and the warnings about the ledger's file."""

    path: Path
    busy_timeout: float
    journal_mode: str
    set_aside: Path | None
    unwritable: str | None
    dropped: int
    _conn: sqlite3.Connection | None
    _conn_pid: int
    _reopen_reads: bool
    _abandoned: list[sqlite3.Connection]
    _notices: list[str]
    _notices_lock: threading.Lock

    def _connection(self) -> sqlite3.Connection:
        """The readers' connection (the writer has its own)."""
        if self._conn is not None and self._conn_pid == os.getpid() and not self._reopen_reads:
            return self._conn
        if self._conn is not None and self._conn_pid != os.getpid():
            self._abandoned.append(self._conn)  # inherited across fork: never touch it again
        elif self._conn is not None:
            self._conn.close()
        self._conn, self._reopen_reads = None, False
        try:
            conn = sqlite3.connect(
                self.path, timeout=self.busy_timeout, isolation_level=None, check_same_thread=False
            )
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
        except sqlite3.Error as exc:
            raise LedgerError(f"cannot open the ledger {self.path}: {exc}") from exc
        self._conn, self._conn_pid = conn, os.getpid()
        return conn

    def _open_for_writes(self) -> sqlite3.Connection:
        """The writer's connection: checked, schema current, WAL; runs on the writer thread.

        A busy file raises the raw sqlite3 error (the writer retries); a damaged or
        foreign file is moved aside and a new one started.
        """
        try:
            return self._open_checked()
        except LedgerError as exc:
            if not exc.replaceable:
                raise
            self._set_aside(exc)
            return self._open_checked()

    def _open_checked(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(
                self.path, timeout=self.busy_timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise LedgerError(f"cannot open the ledger {self.path}: {exc}") from exc
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
            problem = _quick_check(conn)
            if problem:
                raise LedgerError(
                    f"{self.path} is damaged (integrity check: {problem})", replaceable=True
                )
            ensure_schema(conn, self.path)  # first: a file that is not ours stays untouched
            mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
            if str(mode).lower() != "wal":
                mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            self.journal_mode = str(mode)
            conn.execute("PRAGMA synchronous = NORMAL")
        except sqlite3.OperationalError as exc:
            conn.close()
            if is_busy(exc) or "readonly" in str(exc) or "read-only" in str(exc):
                raise  # the writer waits (busy) or says the file cannot be written
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

    def _on_fault(self, exc: sqlite3.Error) -> FaultAction:
        """A write failed for a reason other than a busy file (writer thread).

        A damaged file (the error says so, or ``PRAGMA quick_check`` finds a
        problem) is moved aside and the write retried in a fresh file; a file
        that cannot be written is said once (a :class:`LedgerWarning`) and the
        write given up.
        """
        problem = _damage(exc) or self._check_file()
        if problem:
            self._set_aside(LedgerError(f"{self.path} is damaged ({problem})"))
            return "retry"
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

    def _check_file(self) -> str:
        """``PRAGMA quick_check`` on a fresh connection: a problem, or "" when fine/unknown."""
        try:
            conn = sqlite3.connect(self.path, timeout=self.busy_timeout)
        except sqlite3.Error:
            return ""
        try:
            return _quick_check(conn)
        except sqlite3.Error as exc:
            return _damage(exc)
        finally:
            conn.close()

    # ------------------------------------------------------------------ notices

    def _notice(self, message: str) -> None:
        """Keep a warning for the user's thread: one raised on the writer thread
        would reach no notebook cell (see :meth:`_deliver`)."""
        with self._notices_lock:
            self._notices.append(message)

    def _deliver(self) -> None:
        """Raise the kept warnings as :class:`LedgerWarning` on the calling thread."""
        with self._notices_lock:
            notices, self._notices = self._notices, []
        for message in notices:
            warnings.warn(message, LedgerWarning, stacklevel=3)
