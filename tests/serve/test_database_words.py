"""How ``genwidgets serve`` reads ``--database`` and ``--prices``, and what it says back:
never a database password (review-28, faults 3 and 4), never Python's own words for a
price table given where a file was expected (fault 7)."""

from __future__ import annotations

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
