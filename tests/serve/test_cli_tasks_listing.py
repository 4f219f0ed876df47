"""``genwidgets serve tasks`` as a listing reads and never writes: a teacher inspecting
changes no state, and a read-only database (a file, a replica) lists. A create left
``sending`` past its time is shown "stale (would be given up)"; the commands that
change state give it up (docs/decisions.md#serve-reservations)."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import pytest

from genwidgets.cli import main
from genwidgets.serve import budgets
from genwidgets.serve.db import Database
from genwidgets.serve.keys import add_key

IMAGE = "genW2.5-t2i-preview"
STALE = "stale (would be given up)"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["serve", *args])
    out, err = capsys.readouterr()
    return code, out, err


def a_class(db: Database) -> tuple[str, str, str]:
    """A key's three tasks: a create ``sending`` for 20 minutes (its process stopped
    mid-send), one sending for 1 minute, one open: their ids."""
    db.migrate()
    add_key(db, "alice", {"tasks": 10})
    amounts = budgets.charge_of(IMAGE, {"prompt": "x", "n": 1}, {})
    stale = budgets.reserve(db, "alice", IMAGE, amounts, now=time.time() - 1200).task_id
    recent = budgets.reserve(db, "alice", IMAGE, amounts, now=time.time() - 60).task_id
    opened = budgets.reserve(db, "alice", IMAGE, amounts).task_id
    budgets.move(db, opened, "open", upstream_id="u1")
    db.close()
    return stale, recent, opened


def fingerprint(path: Path) -> dict[str, str]:
    """The bytes of the database file and of its write-ahead log, as a digest each (a
    reader may leave an empty log behind: nothing written)."""
    files = [path, path.with_name(path.name + "-wal")]
    found = {f.name: f.read_bytes() for f in files if f.exists()}
    return {name: hashlib.sha256(data).hexdigest() for name, data in found.items() if data}


def test_listing_tasks_writes_nothing_and_shows_a_stale_create_as_such(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The listing gave up stale ``sending`` creates first (a write): a teacher looking
    changed the class's state. It shows them as they would be taken, and the file's
    bytes and its data version are as they were; ``--settle`` still gives one up."""
    database = tmp_path / "class.db"
    stale, recent, opened = a_class(Database(database))
    watcher = Database(database)  # its data version moves when another connection writes
    before = watcher.run(lambda tx: tx.one("PRAGMA data_version"), write=False)
    bytes_before = fingerprint(database)
    code, out, err = run(capsys, "--database", str(database), "tasks")
    assert code == 0, err
    lines = {line.split("\t")[0]: line.split("\t")[-1] for line in out.splitlines()}
    assert lines == {stale: STALE, recent: "sending", opened: "open"}, out
    code, out, err = run(capsys, "--database", str(database), "tasks", "--json")
    assert code == 0, err
    listed = {t["id"]: (t["state"], t["stale"]) for t in json.loads(out)["tasks"]}
    assert listed == {stale: ("sending", True), recent: ("sending", False), opened: ("open", False)}
    code, out, err = run(capsys, "--database", str(database), "tasks", "--state", "unknown")
    assert code == 0 and out.split("\t")[0] == stale and STALE in out, out
    after = watcher.run(lambda tx: tx.one("PRAGMA data_version"), write=False)
    assert after == before and fingerprint(database) == bytes_before
    assert budgets.task_state(watcher, stale) == "sending"
    watcher.close()
    code, out, err = run(
        capsys, "--database", str(database), "tasks", "--settle", stale, "--not-made"
    )
    assert code == 0 and "settled" in out, err
    db = Database(database)
    assert [budgets.task_state(db, t) for t in (stale, recent)] == ["not_made", "sending"]
    db.close()


def test_a_read_only_database_file_lists_its_tasks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A copy of the class's file opened read-only (``?mode=ro``: as root, a file's
    mode bits do not stop a write) lists, unchanged; a settle on it says it cannot
    write, and changes nothing."""
    database = tmp_path / "class.db"
    stale, recent, opened = a_class(Database(database))
    database.chmod(0o444)
    bytes_before = fingerprint(database)
    url = f"sqlite:///{database}?mode=ro"
    code, out, err = run(capsys, "--database", url, "tasks")
    assert code == 0, err
    assert {line.split("\t")[0] for line in out.splitlines()} == {stale, recent, opened}
    assert STALE in out
    code, out, err = run(capsys, "--database", url, "tasks", "--settle", stale, "--made")
    assert code == 2 and "read" in err.lower(), err
    assert fingerprint(database) == bytes_before


def test_a_read_only_postgresql_database_lists_its_tasks(
    postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A PostgreSQL database that takes no write (a replica; here every transaction
    read-only by default) lists, its stale create shown as such."""
    import psycopg

    stale, recent, opened = a_class(Database(postgres_url))
    name = postgres_url.rpartition("/")[2]
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"ALTER DATABASE {name} SET default_transaction_read_only = on")
    code, out, err = run(capsys, "--database", postgres_url, "tasks")
    assert code == 0, err
    lines = {line.split("\t")[0]: line.split("\t")[-1] for line in out.splitlines()}
    assert lines == {stale: STALE, recent: "sending", opened: "open"}, out


def _unopenable(tmp_path: Path) -> Path:
    """The class's file (in WAL mode, as the server writes it) whose ``-shm`` file SQLite
    cannot make: a link to nowhere, as it cannot on a read-only folder."""
    database = tmp_path / "class.db"
    a_class(Database(database))
    database.with_name("class.db-shm").symlink_to(tmp_path / "nowhere" / "shm")
    return database


def test_a_read_only_database_that_cannot_be_opened_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A class file SQLite cannot open read-only (its folder read-only: SQLite cannot
    make the ``-shm`` file a file in WAL mode needs) was said to hold "no class schema
    of version 6" (another file, or an older genwidgets'): a file this version wrote
    (review-31 fault 5). It says the file cannot be opened, in SQLite's words, exit 2;
    and, its folder not writable, why."""
    database = _unopenable(tmp_path)
    url = f"sqlite:///{database}?mode=ro"
    code, out, err = run(capsys, "--database", url, "tasks")
    assert code == 2 and not out, out
    assert "cannot be opened" in err and "unable to open database file" in err, err
    assert "schema" not in err and "Traceback" not in err, err
    writable = __import__("os").access

    def folder_read_only(path: object, mode: int, **kwargs: object) -> bool:
        return Path(str(path)) != tmp_path and writable(path, mode, **kwargs)

    monkeypatch.setattr("genwidgets.serve.db.os.access", folder_read_only)
    code, out, err = run(capsys, "--database", url, "tasks")
    assert code == 2 and "folder" in err and "WAL" in err and "copy" in err, err


def test_a_folder_given_as_a_read_only_database_is_not_said_to_lack_a_schema(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder named as the read-only file cannot be opened: said so, not "no class
    schema"."""
    code, _out, err = run(capsys, "--database", f"sqlite:///{tmp_path}?mode=ro", "tasks")
    assert code == 2 and "cannot be opened" in err and "folder" in err, err
    assert "schema" not in err, err
