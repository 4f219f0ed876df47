"""How ``genwidgets serve`` reads ``--database`` and ``--prices``, and what it says back:
never a database password (review-28, faults 3 and 4), never Python's own words for a
price table given where a file was expected (fault 7)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from genwidgets.cli import main
from genwidgets.errors import GenwidgetsError, ServeError
from genwidgets.serve.db import Database


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["serve", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def no_serving(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """``serve`` runs up to serving, then records the server's config instead."""
    from genwidgets.serve.server import ClassServer

    served: list[Any] = []

    def serve_forever(self: ClassServer, *args: Any, **kwargs: Any) -> None:
        served.append(self.config)

    monkeypatch.setattr(ClassServer, "serve_forever", serve_forever)
    monkeypatch.setenv("GENWIDGETS_UPSTREAM_KEY", "teacher-key")
    return served


# ---------------------------------------------------------------- fault 3: the repr


@pytest.mark.parametrize(
    "password",
    ["2024/Spring", "Spring/2024@x", "4711?Spring", "Spring#4711", "Spr@ng@4711"],
    ids=["slash-after-digits", "slash-and-at", "question-mark", "hash", "two-ats"],
)
def test_a_password_a_url_cannot_hold_unencoded_is_refused_without_showing_it(
    password: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A password pasted with a '/' (``2024/Spring``) ended the URL's host part there:
    the user was read as the host, the digits as the port, and the repr and every
    "cannot open the database" printed the password whole. Such a URL cannot be read
    one way (libpq reads it as host 'alice'): it is refused, saying how to write it,
    and nothing of it is shown."""
    url = f"postgresql://alice:{password}@127.0.0.1:1/class"
    with pytest.raises(GenwidgetsError) as refused:
        Database(url)
    said = str(refused.value)
    assert "percent-encode" in said and "%2F" in said, said
    assert "Spring" not in said and "4711" not in said and "Spr@" not in said, said
    code, out, err = run(capsys, "--database", url, "tasks")
    assert code == 2 and "percent-encode" in err, err
    assert "Spring" not in out + err and "Spr" not in out + err, err


@pytest.mark.parametrize(
    "password",
    ["Spr:ng:4711", "Spring%2F4711", "Spring%404711%3A", "Spring%25"],
    ids=["colons", "encoded-slash", "encoded-at-and-colon", "encoded-percent"],
)
def test_the_repr_is_built_from_the_urls_parts_and_never_holds_the_password(
    password: str,
) -> None:
    """The place is read from the URL's parts (user, host, port, database), the userinfo
    split off at its one '@' first: no text of the password, raw or decoded, in the
    repr or in the message of a database that cannot be opened."""
    db = Database(f"postgresql://alice:{password}@127.0.0.1:1/class")
    assert repr(db) == "<Database postgresql alice@127.0.0.1:1/class>"
    pytest.importorskip("psycopg")
    with pytest.raises(ServeError) as failed:
        db.migrate()
    said = str(failed.value)
    assert "cannot open the database <Database postgresql alice@127.0.0.1:1/class>" in said
    assert "Spr" not in said and "4711" not in said, said


def test_the_repr_names_the_place_given_in_the_query_never_its_password() -> None:
    db = Database("postgresql:///class?host=127.0.0.1&port=1&user=bob&password=Spring4711")
    assert repr(db) == "<Database postgresql bob@127.0.0.1:1/class>"
    db = Database("postgresql://[::1]:5432/class?sslmode=require")
    assert repr(db) == "<Database postgresql [::1]:5432/class>"


# ------------------------------------------- review-29 fault 4: an '@' in the query


@pytest.mark.parametrize(
    "query",
    ["application_name=ms.lee@lab", "sslmode=verify-full&sslrootcert=/home/j@school/root.crt"],
    ids=["application-name", "sslrootcert-path"],
)
def test_an_at_sign_in_a_query_value_is_taken_as_libpq_reads_it(
    query: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """An '@' in a query value (``application_name=ms.lee@lab``) is that value to libpq,
    yet the URL was refused, saying its password was wrongly written. It is taken: the
    userinfo is split off at the last '@' of the authority (up to the first '/', '?' or
    '#'), the repr names libpq's user, host and database, and a driver error masks the
    password (``Spr%zzing``, a bad percent-encoding libpq quotes whole)."""
    url = f"postgresql://alice:Spr%zzing@127.0.0.1:1/class?{query}"
    db = Database(url)
    assert repr(db) == "<Database postgresql alice@127.0.0.1:1/class>"
    psycopg = pytest.importorskip("psycopg")
    read = psycopg.conninfo.conninfo_to_dict(url.replace("%zz", "%25zz"))
    assert (read["user"], read["host"], read["dbname"]) == ("alice", "127.0.0.1", "class")
    with pytest.raises(ServeError) as failed:
        db.migrate()
    said = str(failed.value)
    assert "cannot open the database <Database postgresql alice@127.0.0.1:1/class>" in said
    assert "Spr" not in said and "zzing" not in said, said
    code, out, err = run(capsys, "--database", url, "tasks")
    assert code != 0 and "alice@127.0.0.1:1/class" in err, err
    assert "Spr" not in out + err and "zzing" not in out + err, err


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://127.0.0.1:1?application_name=ms.lee@lab",
        "postgresql://alice:2024/Spring?c=x@127.0.0.1:1/class",
        "postgresql://alice:2024/Spring#4711@127.0.0.1:1/class",
        "postgresql://alice:Spring?4711@127.0.0.1:1/class?application_name=ms.lee@lab",
    ],
    ids=["no-path-before-the-query", "slash-and-no-keyword", "slash-and-hash", "question-mark"],
)
def test_an_at_sign_libpq_and_a_url_parser_read_apart_is_refused(url: str) -> None:
    """Where libpq (its userinfo ends at the first '@' before any '/') and the URL's
    parts disagree, or the '@' may end a password holding a '/', the URL is refused
    without showing it, saying to percent-encode: ``postgresql://HOST?application_name=
    a@b`` is user ``HOST?application_name=a`` to libpq."""
    with pytest.raises(GenwidgetsError) as refused:
        Database(url)
    said = str(refused.value)
    assert "percent-encode" in said and "%40" in said, said
    assert "Spr" not in said and "4711" not in said and "ms.lee" not in said, said


# ---------------------------------------------------------------- fault 4: conninfo


CONNINFO = "host=127.0.0.1 port=5433 user=alice password=hunter2-secret dbname=class"


@pytest.mark.parametrize(
    "conninfo",
    [CONNINFO, "dbname=class password='hunter2 secret=x' host=127.0.0.1 port=5433 user=alice"],
    ids=["plain", "quoted-password"],
)
def test_a_libpq_conninfo_is_refused_naming_the_url_to_give_and_makes_no_file(
    conninfo: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    no_serving: list[Any],
) -> None:
    """A ``host=... password=... dbname=...`` string was taken as a SQLite file's name:
    the class was served on a new local file named with the password (each server its
    own budgets), and ``serve tasks`` printed it. It is refused, in words naming the
    forms taken and the URL to give instead, the password never shown."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(GenwidgetsError) as refused:
        Database(conninfo)
    said = str(refused.value)
    assert "postgresql://alice:PASSWORD@127.0.0.1:5433/class" in said, said
    assert "key=value" in said and "hunter2" not in said, said
    for command in (["--upstream", "simulator", "--port", "0"], ["tasks"], ["keys", "list"]):
        code, out, err = run(capsys, "--database", conninfo, *command)
        assert code == 2 and "postgresql://alice:PASSWORD@" in err, err
        assert "hunter2" not in out + err, err
    assert no_serving == [] and list(tmp_path.iterdir()) == []


def test_a_conninfo_is_refused_even_where_an_older_version_made_its_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file an older genwidgets made for a conninfo is named with the password:
    using it again kept the class on it; it is refused, saying the file is there."""
    monkeypatch.chdir(tmp_path)
    Database(tmp_path / CONNINFO).migrate()
    code, out, err = run(capsys, "--database", CONNINFO, "tasks")
    assert code == 2 and "key=value" in err and "delete it" in err, err
    assert "hunter2" not in out + err, err


@pytest.mark.parametrize(
    "text",
    ["copy=2 mode=ro", "secret=hunter2  realm='class one'", "my password=hunter2.db"],
    ids=["pairs", "pairs-quoted", "a-password-pair"],
)
def test_a_database_text_of_key_value_pairs_that_names_no_file_is_refused(
    text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A text wholly of ``word=value`` pairs (or holding a ``password=``) that is no file
    here is a connection string, no SQLite path anyone means: refused in words, the
    text not repeated (it may hold a password), naming the way to a file by that name
    (sqlite:///PATH), no file made. The same text naming a file that is there is that
    file."""
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "--database", text, "groups", "class")
    assert code == 2 and "SQLite file" in err and "postgresql://" in err, err
    assert "give it as sqlite:///PATH" in err, err
    assert text not in err and "hunter2" not in err and list(tmp_path.iterdir()) == []
    code, _, err = run(capsys, "--database", f"sqlite:///{text}", "groups", "class")
    assert code == 0 and (tmp_path / text).exists(), err
    assert Database(text).path == Path(text)
    code, _, err = run(capsys, "--database", text, "groups", "class")
    assert code == 0, err


@pytest.mark.parametrize(
    "text",
    ["runs lr=0.1.db", "class copy=2.db", "mode=ro user-list.db", "secret=hunter2"],
    ids=["equals-and-space", "equals-and-space-2", "a-word-not-a-pair", "one-pair"],
)
def test_a_new_sqlite_file_named_with_equals_and_a_space_is_that_file(
    text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new file whose name holds '=' and a space (``runs lr=0.1.db``) was refused as
    if it were a connection string, though the same name was taken once the file was
    there: a text that is not wholly ``word=value word=value`` pairs is a file's name
    (review-29, fault 5)."""
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "--database", text, "groups", "class")
    assert code == 0 and (tmp_path / text).is_file(), err
    assert Database(text).path == Path(text)


@pytest.mark.parametrize(
    ("text", "says", "not_said"),
    [
        ("mysql://alice:hunter2@127.0.0.1/class", "not a mysql:// URL", "lower case"),
        (
            "POSTGRESQL://alice:hunter2@127.0.0.1/class",
            "its scheme written in lower case (postgresql://)",
            "three slashes",
        ),
        ("sqlite://class.db", "three slashes: sqlite:///class.db", "lower case"),
        ("SQLite:///class.db", "in lower case: sqlite:///class.db", "three slashes:"),
    ],
    ids=["another-kind", "upper-case-scheme", "sqlite-two-slashes", "sqlite-upper-case"],
)
def test_a_url_of_another_form_is_refused_saying_what_is_wrong(
    text: str,
    says: str,
    not_said: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Any ``scheme://`` but postgresql://, postgres:// and sqlite:///PATH was a SQLite
    path: ``POSTGRESQL://alice:pw@host/db`` made the folders ``POSTGRESQL:/alice:pw@host``.
    The refusal says what is wrong: ``sqlite://class.db`` was told to write its scheme
    "in lower case", which it was; it lacks a slash (review-29, fault 5)."""
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "--database", text, "groups", "class")
    assert code == 2 and "sqlite:///PATH" in err and "postgresql://" in err, err
    assert says in err and not_said not in err, err
    assert "hunter2" not in out + err and list(tmp_path.iterdir()) == []
    assert Database(f"sqlite:///{tmp_path / 'a b=c.db'}").path == tmp_path / "a b=c.db"


# ---------------------------------------------------------------- fault 7: --prices

TABLE = {"genW2.5-t2i-preview": {"per_image": 0.04}}


def test_the_help_of_prices_says_it_takes_a_file_or_the_table(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    said = " ".join(capsys.readouterr().out.split())
    assert "--prices PRICES a JSON file of prices" in said, said


def test_a_price_table_given_inline_is_taken_as_the_same_table_in_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_serving: list[Any]
) -> None:
    """--help showed a table, and a teacher giving one inline was told Python's
    ``[Errno 2] No such file or directory: '{...}'``: a text starting with '{' is the
    table itself, checked as a file's is."""
    database = ["--database", str(tmp_path / "c.db"), "--upstream", "http://127.0.0.1:9"]
    code, _, err = run(capsys, *database, "--prices", json.dumps(TABLE))
    assert code == 0, err
    assert [config.prices for config in no_serving] == [TABLE]
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps(TABLE))
    code, _, err = run(capsys, *database, "--prices", str(prices))
    assert code == 0 and no_serving[-1].prices == TABLE, err


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ("missing.json", "--prices missing.json: cannot read it (No such file or directory)"),
        (".", "--prices .: cannot read it"),
        ('{"genW2.5-t2i-preview": {"per_image": 0.04}', "--prices: not JSON"),
        ('{"genW2.5-t2i-preview": {"per_second": 1}}', "bills only per_task, per_image"),
    ],
    ids=["no-such-file", "a-folder", "inline-not-json", "inline-wrong-unit"],
)
def test_a_price_table_that_cannot_be_read_is_refused_in_words(
    given: str,
    says: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    no_serving: list[Any],
) -> None:
    monkeypatch.chdir(tmp_path)
    database = ["--database", str(tmp_path / "c.db"), "--upstream", "http://127.0.0.1:9"]
    code, _, err = run(capsys, *database, "--prices", given)
    assert code == 2 and says in err, err
    assert "Errno" not in err and "Traceback" not in err and no_serving == [], err
    if not given.startswith("{"):
        assert "a JSON file of prices" in err, err


DEEP = 15_000


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ('{"a": ' * DEEP + "1" + "}" * DEEP, "nested too deeply"),
        ("[" * DEEP + "]" * DEEP, "nested too deeply"),
        ("[1, 2]", "a JSON array, where a table is expected"),
        (' \ufeff [{"genW2.5-t2i-preview": {}}]', "a JSON array, where a table is expected"),
    ],
    ids=["nested-table", "nested-array", "array", "array-after-a-bom"],
)
def test_an_inline_price_text_is_read_as_json_and_refused_in_words(
    given: str,
    says: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    no_serving: list[Any],
) -> None:
    """Deep nesting gave a bare RecursionError traceback; a JSON array (or anything after
    a BOM) was read as a file's name, "No such file" (review-31 fault 7). Inline JSON is
    any text starting with '{' or '[' after an optional BOM and blanks; an array is no
    table, said so."""
    monkeypatch.chdir(tmp_path)
    database = ["--database", str(tmp_path / "c.db"), "--upstream", "http://127.0.0.1:9"]
    code, _, err = run(capsys, *database, "--prices", given)
    assert code == 2 and says in err and "--prices:" in err, err
    assert "No such file" not in err and "Traceback" not in err and no_serving == [], err
    assert '{"ENDPOINT": {"per_image": 0.04}}' in err and len(err) < 500, err


def test_a_price_table_after_a_bom_is_that_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_serving: list[Any]
) -> None:
    """A table starting with a BOM, inline or in a file (a Windows editor's), is the table:
    inline it was taken as a file's name, in a file it was "not JSON"."""
    database = ["--database", str(tmp_path / "c.db"), "--upstream", "http://127.0.0.1:9"]
    code, _, err = run(capsys, *database, "--prices", "\ufeff" + json.dumps(TABLE))
    assert code == 0, err
    prices = tmp_path / "prices.json"
    prices.write_text("\ufeff" + json.dumps(TABLE), encoding="utf-8")
    code, _, err = run(capsys, *database, "--prices", str(prices))
    assert code == 0, err
    assert [config.prices for config in no_serving] == [TABLE, TABLE]


# ------------------------------------------- review-30 fault 2: a PostgreSQL URL mistyped


@pytest.mark.parametrize(
    "text",
    [
        "postgresql:/alice:S3cretPw@db.school.example/class",
        "postgresql:alice:S3cretPw@db.school.example/class",
        "Postgres:/alice:S3cretPw@db.school.example/class",
        " postgresql://alice:S3cretPw@db.school.example/class",
        "postgresql://alice:S3cretPw@db.school.example/class ",
        "sqlite:/alice:S3cretPw@class.db",
        "alice:S3cretPw@db.school.example/class",
    ],
    ids=[
        "one-slash",
        "no-slash",
        "postgres-any-case",
        "space-before",
        "space-after",
        "sqlite-one-slash",
        "no-scheme",
    ],
)
@pytest.mark.parametrize("command", [("tasks",), ("keys", "add", "bob")])
def test_a_postgresql_url_mistyped_is_refused_never_shown_and_makes_no_file(
    text: str,
    command: tuple[str, ...],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A PostgreSQL URL one slash short, with no slashes, or with a space before it was
    a SQLite path: ``keys add`` made the folders ``postgresql:/alice:PW@host`` and a
    class file of its own, and ``tasks`` printed the password in "no class database at
    ..." (review-30, fault 2). Any ``postgres:``/``postgresql:``/``sqlite:`` that is not
    a URL --database takes, a space at either end, or an '@' after a ':' naming no file
    here, is refused in words that never repeat it, and nothing is made."""
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "--database", text, *command)
    assert code == 2 and "postgresql://" in err and "sqlite:///PATH" in err, err
    assert "S3cretPw" not in out + err and "alice" not in out + err, err
    assert list(tmp_path.iterdir()) == []


def test_a_file_whose_name_holds_a_colon_and_an_at_sign_is_taken_once_it_is_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A text with an '@' after a ':' is refused only while it names no file here: a
    file so named, made through ``sqlite:///PATH``, is that file."""
    monkeypatch.chdir(tmp_path)
    name = "runs:2024@home.db"
    code, _, err = run(capsys, "--database", f"sqlite:///{name}", "groups", "class")
    assert code == 0 and (tmp_path / name).is_file(), err
    code, _, err = run(capsys, "--database", name, "groups", "class")
    assert code == 0, err


@pytest.mark.parametrize(
    "query",
    ["password=S3cretPw", "mode=ro&password=S3cretPw", "mode=rw", "S3cretPw", "mode=ro?S3cretPw"],
    ids=["password", "mode-and-password", "another-mode", "a-bare-word", "two-queries"],
)
@pytest.mark.parametrize("command", [("keys", "add", "bob"), ("tasks",)], ids=["keys", "tasks"])
def test_a_sqlite_url_with_a_query_it_does_not_take_is_refused_unrepeated(
    query: str,
    command: tuple[str, ...],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``sqlite:///x?password=...`` made a file named with the password, and ``tasks``
    printed it in "no class database at" (review-31 fault 6). A sqlite:/// URL takes only
    ``?mode=ro`` after its path: any other query is refused, saying so, its text (and
    the parameters' values) not shown, no file made."""
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "--database", f"sqlite:///x?{query}", *command)
    assert code == 2 and "?mode=ro" in err, err
    assert "S3cret" not in out + err and "mode=rw" not in err, err
    assert list(tmp_path.iterdir()) == []
    code, _, err = run(capsys, "--database", "sqlite:///x?mode=ro", "tasks")
    assert code == 2 and "no class database at x:" in err, err  # the one query taken
