"""The storage layer on SQLite and on a real PostgreSQL server: migrations and
transactions."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from genwidgets.errors import ServeError
from genwidgets.serve.db import MIGRATIONS, Database, Tx


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Database:
    if request.param == "sqlite":
        return Database(tmp_path / "class.db")
    return Database(request.getfixturevalue("postgres_url"))


def test_migrate_makes_the_schema_once_and_records_its_version(db: Database) -> None:
    newest = MIGRATIONS[-1][0]
    assert db.migrate() == newest
    assert db.migrate() == newest  # again: nothing re-made, no error
    versions = db.run(lambda tx: tx.rows("SELECT version FROM schema_version"), write=False)
    assert versions == [(n,) for n, _ in MIGRATIONS]
    tables = {"groups", "keys", "tasks"}
    for table in tables:
        assert db.run(lambda tx, t=table: tx.rows(f"SELECT COUNT(*) FROM {t}")) == [(0,)]
    db.close()


def test_concurrent_migrations_apply_each_version_once(db: Database) -> None:
    """Several servers starting at once on one database: one applies, the rest see it."""
    others = [Database(db.url) for _ in range(4)]
    errors: list[BaseException] = []

    def start(one: Database) -> None:
        try:
            one.migrate()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=start, args=(one,)) for one in others]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors
    versions = db.run(lambda tx: tx.rows("SELECT version FROM schema_version"), write=False)
    assert versions == [(n,) for n, _ in MIGRATIONS]
    for one in [*others, db]:
        one.close()


def test_a_failed_transaction_changes_nothing(db: Database) -> None:
    db.migrate()

    def work(tx: Tx) -> None:
        tx.run("INSERT INTO groups (name, created_at) VALUES (?, ?)", ("g", 1.0))
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        db.run(work)
    assert db.run(lambda tx: tx.rows("SELECT name FROM groups")) == []
    db.close()


def test_a_reading_transaction_reads_one_snapshot(db: Database) -> None:
    """The teacher's report reads keys, tasks and groups in one reading transaction: a
    write committed between two of its reads is not half seen (on PostgreSQL too, whose
    default level takes a new snapshot for each statement)."""
    db.migrate()
    other = Database(db.url)
    insert = "INSERT INTO groups (name, created_at) VALUES (?, ?)"
    with db.transaction(write=False) as tx:
        before = tx.rows("SELECT COUNT(*) FROM groups")
        other.run(lambda w: w.run(insert, ("landed-between", 1.0)))
        assert tx.rows("SELECT COUNT(*) FROM groups") == before
    assert db.run(lambda tx: tx.rows("SELECT COUNT(*) FROM groups"), write=False) == [(1,)]
    other.close()
    db.close()


def test_a_database_that_cannot_be_opened_is_a_storage_error(tmp_path: Path) -> None:
    (tmp_path / "dir.db").mkdir()
    with pytest.raises(ServeError, match=r"cannot open the database|failed") as failed:
        Database(tmp_path / "dir.db").migrate()
    assert failed.value.code == "STORAGE_UNAVAILABLE" and failed.value.status == 503
    with pytest.raises(ServeError, match="cannot open the database"):
        Database("postgresql://nobody@127.0.0.1:1/none").migrate()


def test_the_repr_hides_a_password() -> None:
    db = Database("postgresql://teacher:s3cret-pass@127.0.0.1:5432/class")
    assert "s3cret" not in repr(db) and "127.0.0.1:5432/class" in repr(db)
    assert sqlite3.sqlite_version  # SQLite is always there: the default store


def test_closing_while_another_thread_is_in_a_transaction_lets_it_end_then_closes(
    tmp_path: Path,
) -> None:
    """A server stopping closes its database while a sweep's thread is inside a
    transaction: the transaction ends as it would have (committed), and its connection
    is closed by its own thread after. Closed under it, the connection failed the
    transaction; closed during a call into SQLite, it crashed the process."""
    db = Database(tmp_path / "class.db")
    db.migrate()
    inside, closed = threading.Event(), threading.Event()
    outcome: list[object] = []

    def work(tx: Tx) -> int:
        tx.run("INSERT INTO groups (name, created_at) VALUES ('g', 0)")
        inside.set()
        assert closed.wait(30), "close() never came"
        return 1

    def sweep() -> None:
        try:
            outcome.append(db.run(work))
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=sweep)
    thread.start()
    assert inside.wait(30)
    db.close()  # the server stopping
    closed.set()
    thread.join(30)
    assert outcome == [1], outcome
    again = Database(tmp_path / "class.db")
    assert again.run(lambda tx: tx.rows("SELECT name FROM groups"), write=False) == [("g",)]
    again.close()


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://teacher:s3cretpw@[::1/class",
        "postgresql://teacher:s3cret pw@127.0.0.1/class",
        "postgresql://teacher:s3cret%20pw@[::1/class",
    ],
    ids=["ipv6-typo", "space", "percent-encoded"],
)
def test_a_postgresql_url_that_cannot_be_read_is_refused_without_its_password(url: str) -> None:
    """psycopg's message quotes the whole URL, or the password itself: the repr hid it,
    the text after it printed it on the teacher's terminal and in the service's log."""
    with pytest.raises(ServeError) as refused:
        Database(url).migrate()
    said = str(refused.value)
    assert "s3cret" not in said and "cannot open the database" in said, said


def test_a_password_given_as_a_query_parameter_is_never_shown() -> None:
    """libpq takes ``?password=``: the repr kept the query, and every storage error (the
    teacher's terminal, the service log) printed the password."""
    url = "postgresql://alice@127.0.0.1:1/class?password=S3cretPw&connect_timeout=5"
    db = Database(url)
    assert repr(db) == "<Database postgresql alice@127.0.0.1:1/class>"
    with pytest.raises(ServeError) as refused:
        db.migrate()
    assert "S3cretPw" not in str(refused.value) and "cannot open the database" in str(refused.value)


@pytest.mark.parametrize(
    ("url", "user"),
    [
        ("postgresql://postgres:postgres@127.0.0.1:5432/postgres", "postgres"),
        ("postgresql://alice:1@127.0.0.1:5432/class", "alice"),
    ],
    ids=["password-is-the-user-name", "short-password"],
)
def test_hiding_the_password_leaves_the_drivers_words_readable(
    url: str, user: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The password was replaced wherever its text stood: with the stock local setup
    (``postgres:postgres``) the teacher read that authentication failed for user "***",
    and a one-character password masked pieces of the host. The URL and ``password=``
    pairs are masked, not every match of the password's text."""
    psycopg = pytest.importorskip("psycopg")
    said = (
        'connection failed: connection to server at "127.0.0.1", port 5432 failed: FATAL:  '
        f'password authentication failed for user "{user}"'
    )

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise psycopg.OperationalError(f"{said}; tried {url} and 'password=secret99 host=x'")

    monkeypatch.setattr(psycopg, "connect", refuse)
    with pytest.raises(ServeError) as refused:
        Database(url).migrate()
    shown = str(refused.value)
    assert said in shown, shown
    assert url not in shown and "secret99" not in shown, shown
