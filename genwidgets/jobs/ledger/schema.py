"""The ledger's SQLite schema: created, migrated in place, or refused.

Schema versions live in a ``meta`` table (``application``, ``schema_version``).
A new file gets version 1 and then every migration, so old and new files take
the same path. A newer version is refused (upgrade genwidgets); a file that is
not a genwidgets ledger (another application's SQLite file, or not SQLite at
all) is refused as *replaceable*: the store moves it aside and starts afresh.

Other tables in the same file are left alone: the prompt lab keeps its own
there (see :meth:`genwidgets.jobs.ledger.Ledger.transaction`).
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from ..._config import hide_userinfo
from ...errors import LedgerError
from .rows import COPY_GIVEN_UP, FINISHED
from .writer import immediate, is_disk_fault

__all__ = [
    "APPLICATION",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "addresses_masked",
    "ensure_schema",
    "mask_addresses",
    "schema_is_current",
]

log = logging.getLogger("genwidgets")

SCHEMA_VERSION = 5
APPLICATION = "genwidgets-ledger"

SCHEMA_V1 = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE tasks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    gateway TEXT NOT NULL,
    endpoint TEXT NOT NULL,
    request_id TEXT,
    state TEXT NOT NULL,
    status TEXT,
    queue_position INTEGER,
    payload TEXT NOT NULL,
    status_url TEXT,
    response_url TEXT,
    cancel_url TEXT,
    pid INTEGER NOT NULL,
    host TEXT NOT NULL,
    submitted_at REAL NOT NULL,
    handle_at REAL,
    updated_at REAL NOT NULL,
    finished_at REAL,
    ok INTEGER,
    error TEXT,
    error_type TEXT,
    outputs TEXT NOT NULL DEFAULT '[]'
)""",
    "CREATE INDEX tasks_by_request ON tasks (gateway, request_id)",
    "CREATE INDEX tasks_by_state ON tasks (state)",
)


def _add_observed_times(conn: sqlite3.Connection) -> None:
    """Version 2: when a task was first seen running and first seen done."""
    conn.execute("ALTER TABLE tasks ADD COLUMN running_at REAL")
    conn.execute("ALTER TABLE tasks ADD COLUMN done_at REAL")


def _add_leases(conn: sqlite3.Connection) -> None:
    """Version 3: which client polls a task (``tasks.owner``), and whether it lives
    (``owners``: one row per live client, its heartbeat refreshed): see :mod:`.lease`."""
    conn.execute("ALTER TABLE tasks ADD COLUMN owner TEXT")
    conn.execute(
        "CREATE TABLE IF NOT EXISTS owners (owner TEXT PRIMARY KEY, host TEXT NOT NULL, "
        "pid INTEGER NOT NULL, heartbeat REAL NOT NULL)"
    )


def _add_tags(conn: sqlite3.Connection) -> None:
    """Version 4: what a create was sent for (``tasks.tag``, e.g. a batch's row and
    attempt), so a resume finds a row's task by its tag, not by its payload's text;
    ``meta.tags_since``: intents before it were written with no tag."""
    conn.execute("ALTER TABLE tasks ADD COLUMN tag TEXT")
    conn.execute("CREATE INDEX IF NOT EXISTS tasks_by_tag ON tasks (tag)")
    conn.execute(
        "INSERT OR REPLACE INTO meta (key, value) VALUES ('tags_since', ?)", (time.time(),)
    )


def _hide_userinfo(text: str | None) -> str | None:
    return None if text is None else hide_userinfo(text)


def _add_key_fingerprints(conn: sqlite3.Connection) -> None:
    """Version 5: which API key made a task (``tasks.key_fingerprint``, never the key:
    see ``_config.Secret.fingerprint``), so a client of another key sharing this home
    neither resumes the task nor takes its "not found" for the task's end. Older rows
    have none and are followed as before. Also a password in a stored gateway address
    is masked."""
    conn.execute("ALTER TABLE tasks ADD COLUMN key_fingerprint TEXT")
    # rows name the gateway as clients now do (docs/decisions.md#credentials-in-the-base-url)
    conn.create_function("hide_userinfo", 1, _hide_userinfo, deterministic=True)
    conn.execute(
        "UPDATE tasks SET gateway = hide_userinfo(gateway), status_url = "
        "hide_userinfo(status_url), response_url = hide_userinfo(response_url), "
        "cancel_url = hide_userinfo(cancel_url) WHERE instr(gateway || coalesce(status_url, "
        "'') || coalesce(response_url, '') || coalesce(cancel_url, ''), '@') > 0"
    )


#: ``meta`` key: since when results are recorded with the copies their client declined
#: marked (docs/decisions.md#copies-pending); the rows finished before were marked then
COPIES_MARKED_SINCE = "copies_marked_since"
#: why an output of a row finished before :data:`COPIES_MARKED_SINCE` is not copied
NOT_MARKED = (
    "recorded before declined copies were marked: its client may have been made with download=False"
)


def _mark_old_copies(conn: sqlite3.Connection) -> None:
    """Once per file: an output of a finished row written before declined copies were
    marked (``download=False``) may have been declined, so it is given up, unless its
    download was tried and failed (``download_error``: its client wanted it). Without
    this, the first resume after an upgrade downloaded every output ever declined."""
    rows = conn.execute(  # the bytes: what is not UTF-8 is written back as it was
        "SELECT id, CAST(outputs AS BLOB) FROM tasks WHERE state = ? AND outputs LIKE ?",
        (FINISHED, '%"path": null%'),
    ).fetchall()
    for row_id, raw in rows:
        try:  # surrogates, written back as their escapes (as ``writes._outputs_text``)
            outputs = json.loads(bytes(raw).decode("utf-8", errors="surrogateescape"))
        except ValueError:
            continue
        if not isinstance(outputs, list):
            continue
        marked = False
        for record in outputs:
            if not isinstance(record, dict) or record.get("path") or record.get(COPY_GIVEN_UP):
                continue
            if not record.get("download_error"):  # a download tried: its client wanted it
                record[COPY_GIVEN_UP] = NOT_MARKED
                marked = True
        if marked:
            conn.execute("UPDATE tasks SET outputs = ? WHERE id = ?", (json.dumps(outputs), row_id))
    conn.execute(
        "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (COPIES_MARKED_SINCE, time.time())
    )


#: ``meta`` key: since when the stored addresses hold no password, not even the tail
#: of one holding an ``@`` (docs/decisions.md#credentials-in-the-base-url)
ADDRESSES_MASKED_SINCE = "addresses_masked_since"
#: the columns that may hold a gateway's address: the gateway, a task's URLs, its error
_ADDRESS_COLUMNS = ("gateway", "status_url", "response_url", "cancel_url", "error")
#: ``meta`` key: since when the tables the lab keeps in the file hold no password either
#: (review-21: files marked masked by the key above before it still held them)
LAB_ADDRESSES_MASKED_SINCE = "lab_addresses_masked_since"
#: ``meta`` key, while masking: a lab table's value was masked, so the file is rewritten
#: before it is marked (kept with the change, so a rewrite a full disk put off is not lost)
LAB_REWRITE_DUE = "lab_addresses_rewrite_due"
#: the lab's tables and their columns that may hold a gateway's address: a batch's (a
#: grid's) gateway and a row's (a cell's) error, in the tables of this version and the
#: ``grids`` / ``grid_cells`` of an older one; each masked where the file has it
_LAB_ADDRESS_COLUMNS = (
    ("batches", "gateway"),
    ("batch_rows", "error"),
    ("grids", "gateway"),
    ("grid_cells", "error"),
)


#: ``meta`` key: the last row id whose addresses are masked, while masking is under way
ADDRESSES_MASKED_UPTO = "addresses_masked_upto"
#: rows masked in one transaction: a big old ledger is masked over short writes (each
#: committed, resumed where the last stopped), none outlasting ``busy_timeout``
MASK_CHUNK = 5000


def addresses_masked(conn: sqlite3.Connection, *, tasks_only: bool = False) -> bool:
    """Whether every stored address of the file is masked (a read: no lock needed);
    ``tasks_only``: those of ``tasks``."""
    keys = (
        (ADDRESSES_MASKED_SINCE,)
        if tasks_only
        else (ADDRESSES_MASKED_SINCE, LAB_ADDRESSES_MASKED_SINCE)
    )
    marks = ", ".join("?" * len(keys))
    found = conn.execute(f"SELECT count(*) FROM meta WHERE key IN ({marks})", keys)
    return bool(found.fetchone()[0] == len(keys))


def mask_addresses(conn: sqlite3.Connection) -> None:
    """Once per file: every stored address masked as clients now mask them. Rows of
    older versions kept a password (``http://alice:secret@host``), or, masked before a
    password's ``@`` was understood, its tail (``u:***@ss@host``). In transactions of
    :data:`MASK_CHUNK` rows, each committed with where it got to, so a process that
    stops midway (a short-lived one exits) leaves the next open less to do, and no
    more than a chunk is in memory; then the lab's tables (:func:`_mask_lab_tables`);
    then the file is rewritten (:func:`_rewrite`), and the ``meta`` keys are set once
    that is done. A file whose ``tasks`` were masked before the lab's tables were is
    rewritten only if those held an address to mask (:data:`LAB_REWRITE_DUE`)."""
    while not addresses_masked(conn):
        tasks_before = addresses_masked(conn, tasks_only=True)
        if not tasks_before:
            with immediate(conn):
                last_done = _mask_chunk(conn)
            if not last_done:
                continue
        _mask_lab_tables(conn)
        due = conn.execute("SELECT 1 FROM meta WHERE key = ?", (LAB_REWRITE_DUE,)).fetchone()
        if (due or not tasks_before) and not _rewrite(conn):
            return  # the disk is too full to rewrite it: the next open tries again
        with immediate(conn):
            conn.executemany(
                "DELETE FROM meta WHERE key = ?", [(ADDRESSES_MASKED_UPTO,), (LAB_REWRITE_DUE,)]
            )
            conn.executemany(
                "INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)",
                [
                    (key, time.time())
                    for key in (ADDRESSES_MASKED_SINCE, LAB_ADDRESSES_MASKED_SINCE)
                ],
            )


def _mask_lab_tables(conn: sqlite3.Connection) -> None:
    """The addresses in the lab's tables (:data:`_LAB_ADDRESS_COLUMNS`, those the file
    has) masked, in transactions of :data:`MASK_CHUNK` rows, each that changes one
    noting :data:`LAB_REWRITE_DUE`. Started over by a process that stops midway (a
    value masked stays so)."""
    tables = {
        name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    }
    for table, column in _LAB_ADDRESS_COLUMNS:
        if table not in tables:
            continue
        if column not in {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}:
            continue
        after = 0
        while True:
            with immediate(conn):
                found = conn.execute(
                    f"SELECT rowid, CAST({column} AS BLOB) FROM {table} WHERE rowid > ? "
                    f"AND instr({column}, '@') > 0 ORDER BY rowid LIMIT ?",
                    (after, MASK_CHUNK),
                ).fetchall()
                if found:  # the old text is zeroed, not left in a free part of its page
                    conn.execute("PRAGMA secure_delete = ON")
                changed = False
                for rowid, value in found:
                    masked = _masked(value)
                    if masked is not None:
                        conn.execute(
                            f"UPDATE {table} SET {column} = CAST(? AS TEXT) WHERE rowid = ?",
                            (masked, rowid),
                        )
                        changed = True
                if changed:
                    conn.execute(
                        "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                        (LAB_REWRITE_DUE, time.time()),
                    )
            if len(found) < MASK_CHUNK:
                break
            after = found[-1][0]


def _masked(value: bytes) -> bytes | None:
    """A stored value with the userinfo of any address in it hidden, or None when it
    holds none; read and written as bytes, so text that is not UTF-8 around an address
    is kept."""
    text = bytes(value).decode("utf-8", errors="surrogateescape")
    masked = hide_userinfo(text)
    return None if masked == text else masked.encode("utf-8", errors="surrogateescape")


def _rewrite(conn: sqlite3.Connection) -> bool:
    """``VACUUM``, then the write-ahead log emptied: the masked file rewritten page by
    page, so no piece of an old address is left in the unused part of a page, which
    ``secure_delete`` does not zero when a b-tree page is rebalanced (review-14: copies
    of the password stayed in the index's pages). Once per file; it reads and writes
    the whole file (a second or two per 100 MB), holding the write lock meanwhile,
    and needs free space for a copy. False when the disk is too full for it (logged);
    a busy file raises, as any write of the open does (the writer tries again)."""
    try:
        conn.execute("VACUUM")
    except sqlite3.OperationalError as exc:
        if not is_disk_fault(exc):
            raise
        log.warning(
            "genwidgets: the task ledger's old addresses are masked, but pieces of them "
            "may stay in unused space of the file until it is rewritten, which needs "
            "free disk space for a copy of it (%s); the next open tries again",
            exc,
        )
        return False
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # old pages, in the log
    return True


def _mask_chunk(conn: sqlite3.Connection) -> bool:
    """The next :data:`MASK_CHUNK` rows masked (inside the caller's transaction), read
    and written as bytes, so text that is not UTF-8 around an address is kept; True
    once the last rows are masked (the file is then rewritten, then marked)."""
    meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    if ADDRESSES_MASKED_SINCE in meta:  # another process finished meanwhile
        return False
    after = int(float(meta.get(ADDRESSES_MASKED_UPTO, 0)))
    last = conn.execute(
        "SELECT id FROM tasks WHERE id > ? ORDER BY id LIMIT 1 OFFSET ?", (after, MASK_CHUNK - 1)
    ).fetchone()
    upto = last[0] if last else conn.execute("SELECT coalesce(max(id), 0) FROM tasks").fetchone()[0]
    columns = ", ".join(f"CAST({name} AS BLOB)" for name in _ADDRESS_COLUMNS)
    has_at = " OR ".join(f"instr({name}, '@') > 0" for name in _ADDRESS_COLUMNS)
    found = conn.execute(
        f"SELECT id, {columns} FROM tasks WHERE id > ? AND id <= ? AND ({has_at})", (after, upto)
    ).fetchall()
    if found:  # the old text of a row is zeroed, not left in a free part of its page
        conn.execute("PRAGMA secure_delete = ON")
    for row_id, *values in found:
        for name, value in zip(_ADDRESS_COLUMNS, values, strict=True):
            masked = None if value is None else _masked(value)
            if masked is not None:
                conn.execute(
                    f"UPDATE tasks SET {name} = CAST(? AS TEXT) WHERE id = ?", (masked, row_id)
                )
    conn.execute(
        "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (ADDRESSES_MASKED_UPTO, upto)
    )
    return last is None


#: MIGRATIONS[n] upgrades a version-n file to version n+1 (inside one transaction)
MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {
    1: _add_observed_times,
    2: _add_leases,
    3: _add_tags,
    4: _add_key_fingerprints,
}


def schema_is_current(conn: sqlite3.Connection) -> bool:
    """Whether the file is already a ledger of this version: then opening it writes
    nothing, so a lock held by another process does not delay the open."""
    try:
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return False
        raise
    return (
        meta.get("application") == APPLICATION
        and meta.get("schema_version") == str(SCHEMA_VERSION)
        and COPIES_MARKED_SINCE in meta
    )


def ensure_schema(conn: sqlite3.Connection, path: Path) -> None:
    """Create, migrate or refuse; in one write transaction so kernels don't race
    (none when the file is already current: see :func:`schema_is_current`)."""
    if schema_is_current(conn):
        return
    with immediate(conn):
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not tables:
            for statement in SCHEMA_V1:  # not executescript: it would COMMIT first
                conn.execute(statement)
            conn.executemany(  # a new file holds no address to mask (nor to rewrite)
                "INSERT INTO meta (key, value) VALUES (?, ?)",
                [
                    ("application", APPLICATION),
                    ("schema_version", "1"),
                    (ADDRESSES_MASKED_SINCE, str(time.time())),
                    (LAB_ADDRESSES_MASKED_SINCE, str(time.time())),
                ],
            )
            tables = {"meta", "tasks"}
        _migrate_or_refuse(conn, tables, path)


def _migrate_or_refuse(conn: sqlite3.Connection, tables: set[str], path: Path) -> None:
    meta = dict(conn.execute("SELECT key, value FROM meta").fetchall()) if "meta" in tables else {}
    if meta.get("application") != APPLICATION:
        raise LedgerError(
            f"{path} is an SQLite file of something else (tables {sorted(tables)}), "
            "not a genwidgets ledger",
            replaceable=True,
        )
    raw_version = meta.get("schema_version", "")
    if not raw_version.isdigit():
        raise LedgerError(
            f"{path} has no readable schema version ({raw_version!r})", replaceable=True
        )
    version = int(raw_version)
    if version > SCHEMA_VERSION:
        raise LedgerError(
            f"the ledger {path} has schema version {version}, newer than this "
            f"genwidgets understands ({SCHEMA_VERSION}); upgrade genwidgets, or set "
            "GENWIDGETS_HOME to another directory to keep a separate ledger"
        )
    while version < SCHEMA_VERSION:
        if version not in MIGRATIONS:
            raise LedgerError(
                f"the ledger {path} has schema version {version}, which this "
                "genwidgets cannot migrate; move the file away to start a new ledger"
            )
        MIGRATIONS[version](conn)
        version += 1
        conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(version),))
    if COPIES_MARKED_SINCE not in meta:  # not a new schema version: older genwidgets reads it
        _mark_old_copies(conn)
    # the addresses (ADDRESSES_MASKED_SINCE) are masked after, by mask_addresses: in
    # short writes of their own, not in this one
