"""The ledger's file in a shared home (issue 39 point 3): a link at its name that leads
out of its folder is moved aside, never written through; a folder or file every user
may write is said in a warning that names the fix."""

from __future__ import annotations

import os
import sqlite3
import warnings
from pathlib import Path

import pytest

from genwidgets.errors import LedgerWarning
from genwidgets.jobs.ledger import Ledger


def _open(path: Path) -> Ledger:
    ledger = Ledger(path)
    ledger.writes.record_intent(gateway="simulator", endpoint="e", payload={})
    ledger.close()
    return ledger


@pytest.mark.parametrize("target_kind", ["dangling", "empty file"])
def test_a_ledger_link_out_of_the_home_is_moved_aside_and_its_target_untouched(
    tmp_path: Path, target_kind: str
) -> None:
    home, elsewhere = tmp_path / "home", tmp_path / "victim"
    home.mkdir(mode=0o700)
    elsewhere.mkdir(mode=0o700)
    target = elsewhere / "notes.txt"
    if target_kind == "empty file":
        target.write_bytes(b"")
    link = home / "ledger.sqlite3"
    link.symlink_to(target)
    (home / "ledger.sqlite3-wal").symlink_to(elsewhere / "journal")
    with pytest.warns(LedgerWarning, match="symbolic link") as said:
        ledger = _open(link)
    assert not link.is_symlink() and link.is_file()  # a ledger of its own, in the home
    assert sqlite3.connect(link).execute("SELECT count(*) FROM tasks").fetchone() == (1,)
    assert target.exists() == (target_kind == "empty file")
    assert not target.exists() or target.read_bytes() == b""  # never written through
    assert not (elsewhere / "journal").exists()
    assert sorted(p.name.split(".link-")[0] for p in ledger.links_set_aside) == [
        "ledger.sqlite3",
        "ledger.sqlite3-wal",
    ]
    assert all(p.is_symlink() for p in ledger.links_set_aside)  # kept as they were
    assert any(str(home) in str(w.message) and "moved to" in str(w.message) for w in said)


def test_a_link_to_a_ledger_inside_the_home_is_followed(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    _open(home / "real.sqlite3")
    (home / "ledger.sqlite3").symlink_to("real.sqlite3")
    ledger = _open(home / "ledger.sqlite3")
    assert ledger.links_set_aside == []
    assert (home / "ledger.sqlite3").is_symlink()
    assert sqlite3.connect(home / "real.sqlite3").execute(
        "SELECT count(*) FROM tasks"
    ).fetchone() == (2,)


@pytest.mark.parametrize("loose", ["folder", "file"])
def test_a_ledger_others_may_write_is_said_with_the_fix(tmp_path: Path, loose: str) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    path = home / "ledger.sqlite3"
    _open(path)
    (home if loose == "folder" else path).chmod(0o777 if loose == "folder" else 0o666)
    with pytest.warns(LedgerWarning, match="can be written by every user") as said:
        _open(path)
    text = str(said[0].message)
    assert "chmod o-w" in text and "GENWIDGETS_HOME" in text
    assert ("0777" if loose == "folder" else "0666") in text


def test_a_private_home_opens_without_a_word(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    with warnings.catch_warnings():
        warnings.simplefilter("error", LedgerWarning)
        _open(home / "ledger.sqlite3")
        os.chmod(home / "ledger.sqlite3", 0o664)  # the group may write: not every user
        _open(home / "ledger.sqlite3")
