"""Leases: one owner polls a task, so two kernels never poll (and pay attention to) the same one.

An owner is one :class:`~genwidgets.jobs.ledger.Ledger` object of one process
(``host:pid:random``), alive while its heartbeat is younger than ``ttl`` and, on this host,
while its process runs (a zombie is dead). :class:`Leases` is one ledger's lease keeper: its
owner, whether it holds leases, and the writes that take, refresh and give them up. The
design: docs/decisions.md#ledger-leases and docs/decisions.md#a-zombie-owner-is-dead.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import uuid
import warnings
from collections.abc import Callable
from dataclasses import dataclass

from ...errors import LedgerWarning
from .file import LedgerFile
from .rows import NOT_ANOTHER_KEYS, SUBMITTED
from .writer import Op

__all__ = [
    "HOST",
    "Claim",
    "Leases",
    "heartbeat",
    "left_to_other_kernels",
    "left_to_their_keys",
    "pid_alive",
]

HOST = socket.gethostname()


def pid_alive(pid: int) -> bool:
    """Whether a process of this host still runs; unknown counts as alive. A zombie
    (killed, not yet reaped by its parent) answers ``kill(pid, 0)`` but runs no
    more, so it is dead: docs/decisions.md#a-zombie-owner-is-dead."""
    if pid <= 0:
        return False
    if os.name == "nt":  # os.kill(pid, 0) would terminate it there
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: there, but someone else's
        pass
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    """Whether ``/proc/<pid>/stat`` says Z (zombie) or X (dead); False where there
    is no ``/proc`` (macOS, the BSDs), so ``kill(pid, 0)``'s answer stands there."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            line = stat.read(4096)
    except OSError:  # no /proc, or the process went meanwhile (then kill says so next)
        return False
    # "pid (comm) S ...": comm may hold spaces and parentheses, the state follows the last ")"
    state = line.rpartition(b")")[2].split(maxsplit=1)[:1]
    return state in ([b"Z"], [b"X"])


@dataclass(frozen=True)
class Claim:
    """What :meth:`Ledger.claim_unfinished` took: row ids, how many it left to live
    owners, and how many to the clients of the key that made them."""

    taken: tuple[int, ...]
    skipped: int
    other_keys: int = 0


def heartbeat(conn: sqlite3.Connection, owner: str, now: float) -> None:
    """Say this owner lives (inside a write transaction)."""
    conn.execute(
        "INSERT INTO owners (owner, host, pid, heartbeat) VALUES (?, ?, ?, ?) "
        "ON CONFLICT(owner) DO UPDATE SET heartbeat = excluded.heartbeat",
        (owner, HOST, os.getpid(), now),
    )


def left_to_other_kernels(count: int, stacklevel: int = 4) -> None:
    """One warning: ``count`` unfinished tasks were left to the live kernel polling them
    (``stacklevel`` points at the user's call of ``history()`` or ``resume()``)."""
    warnings.warn(
        f"genwidgets: {count} unfinished task(s) are being polled by another live process "
        "(a kernel, a command) and were left to it; resume(force=True), or the command "
        "genwidgets resume --force, takes them anyway.",
        LedgerWarning,
        stacklevel=stacklevel,
    )


def left_to_their_keys(count: int, stacklevel: int = 4) -> None:
    """One warning: ``count`` unfinished tasks were made with another API key than this
    client's, and were left to a client of that key (``stacklevel`` as above)."""
    warnings.warn(
        f"genwidgets: {count} unfinished task(s) in this ledger were created with another "
        "API key than this client's and were left alone: the gateway may not show them to "
        "this key (a 'not found' would not mean they are gone). A client made with the key "
        "that created them resumes them.",
        LedgerWarning,
        stacklevel=stacklevel,
    )


class Leases:
    """One ledger's lease keeper: its owner (a new one after ``fork``), whether it holds
    leases now, and the writes (for the writer thread) that take, refresh and give them up."""

    def __init__(self, file: LedgerFile, *, ttl: float, clock: Callable[[], float]) -> None:
        self._file = file
        #: seconds a heartbeat keeps an owner alive
        self.ttl = ttl
        self._clock = clock
        self._owner = (0, "")  # (pid, name)
        self._holding = False

    @property
    def owner(self) -> str:
        """This ledger's owner name (``host:pid:random``), new in a forked child."""
        if self._owner[0] != os.getpid():
            self._owner = (os.getpid(), f"{HOST}:{os.getpid()}:{uuid.uuid4().hex[:12]}")
        return self._owner[1]

    def take(self) -> str:
        """This ledger takes leases from now on (a created, re-attached or resumed task):
        its owner name, for the write that takes one; the heartbeat starts."""
        self._holding = True
        return self.owner

    def hold(self, conn: sqlite3.Connection) -> str:
        """Take leases inside the caller's write transaction ``conn``: this ledger's
        heartbeat is written there and goes on; returns its owner name."""
        owner = self.take()
        heartbeat(conn, owner, self._clock())
        return owner

    def alive(self, conn: sqlite3.Connection | None = None) -> set[str]:
        """Every owner that lives (a fresh heartbeat and, on this host, a running
        process; this ledger's too, while it holds leases): read on ``conn`` (inside a
        write) or on the file's readers' connection."""
        sql = "SELECT owner, host, pid, heartbeat FROM owners"
        owners = self._file.read(sql) if conn is None else conn.execute(sql).fetchall()
        now = self._clock()
        return {
            owner
            for owner, host, pid, beat in owners
            if now - beat <= self.ttl and (host != HOST or pid_alive(pid))
        }

    def heartbeat(self) -> Op | None:
        """The writer's idle work: the heartbeat of this ledger's leases, if it holds any."""
        if not self._holding:
            return None
        owner, now = self.owner, self._clock()
        return lambda conn: heartbeat(conn, owner, now)

    def release(self) -> Op | None:
        """The write giving up every lease of this ledger (None when it holds none)."""
        if not self._holding:
            return None
        self._holding = False
        owner = self.owner

        def give_up(conn: sqlite3.Connection) -> None:
            conn.execute("UPDATE tasks SET owner = NULL WHERE owner = ?", (owner,))
            conn.execute("DELETE FROM owners WHERE owner = ?", (owner,))

        return give_up

    def claim(self, gateway: str, *, force: bool, fingerprint: str | None = None) -> Op:
        """The write taking the unfinished tasks of ``gateway`` no live owner holds (all
        of them with ``force``), except those another key than the one of ``fingerprint``
        made (never taken, even with ``force``); it returns a :class:`Claim`."""
        owner, now = self.take(), self._clock()

        def take(conn: sqlite3.Connection) -> Claim:
            heartbeat(conn, owner, now)
            alive = self.alive(conn)
            taken: list[int] = []
            skipped = 0
            unfinished = "gateway = ? AND state = ? AND request_id IS NOT NULL"
            (everyone,) = conn.execute(
                f"SELECT count(*) FROM tasks WHERE {unfinished}", (gateway, SUBMITTED)
            ).fetchone()
            for row_id, current in conn.execute(
                f"SELECT id, owner FROM tasks WHERE {unfinished} AND {NOT_ANOTHER_KEYS} "
                "ORDER BY id DESC",
                (gateway, SUBMITTED, fingerprint, fingerprint),
            ).fetchall():
                if current is None or current == owner or current not in alive or force:
                    taken.append(row_id)
                else:
                    skipped += 1
            conn.executemany("UPDATE tasks SET owner = ? WHERE id = ?", [(owner, i) for i in taken])
            # owners that stopped own nothing any more: forget them (a live one may hold
            # what the ledger does not see, a batch's reserved rows)
            conn.executemany(
                "DELETE FROM owners WHERE owner = ? AND owner NOT IN (SELECT DISTINCT owner "
                "FROM tasks WHERE owner IS NOT NULL AND state = ?)",
                [
                    (stopped, SUBMITTED)
                    for (stopped,) in conn.execute("SELECT owner FROM owners").fetchall()
                    if stopped not in alive and stopped != owner
                ],
            )
            return Claim(tuple(taken), skipped, everyone - len(taken) - skipped)

        return take

    def held_elsewhere(self, gateway: str) -> set[str]:
        """Request ids of unfinished tasks of ``gateway`` that another live owner
        leases: a read, nothing is claimed."""
        alive = self.alive() - {self.owner}
        if not alive:
            return set()
        found = self._file.read(
            "SELECT request_id, owner FROM tasks WHERE gateway = ? AND state = ? "
            "AND request_id IS NOT NULL AND owner IS NOT NULL",
            (gateway, SUBMITTED),
        )
        return {request_id for request_id, owner in found if owner in alive}
