"""``genwidgets serve``'s commands: keys made, shown once, listed, revoked, rotated; a
roster in, keys and a handout out; groups; usage as JSON."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from serve_helpers import wait_for

from genwidgets.cli import main
from genwidgets.serve.db import Database
from genwidgets.serve.keys import find_key


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["serve", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_keys_add_list_rotate_revoke(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = ["--database", str(tmp_path / "class.db")]
    code, out, _ = run(
        capsys,
        *db,
        "keys",
        "add",
        "alice",
        "--budget",
        "5.00",
        "--images",
        "200",
        "--group",
        "class1",
        "--endpoints",
        "genW2.5-t2i-preview",
        "--expires",
        "2099-01-01",
        "--json",
    )
    assert code == 0
    token = json.loads(out)["key"]
    found = find_key(Database(tmp_path / "class.db"), token)
    assert found is not None and found.caps["money"] == 5_000_000 and found.group == "class1"
    assert found.endpoints == ("genW2.5-t2i-preview",) and found.expires_at
    code, out, _ = run(capsys, *db, "keys", "list", "--json")
    listed = json.loads(out)["keys"]
    assert [k["name"] for k in listed] == ["alice"] and token not in out
    assert listed[0]["caps"] == {"money": 5.0, "images": 200.0}
    code, out, _ = run(capsys, *db, "keys", "rotate", "alice", "--json")
    new = json.loads(out)["key"]
    assert new != token and find_key(Database(tmp_path / "class.db"), token) is None
    assert run(capsys, *db, "keys", "set", "alice", "--images", "300")[0] == 0
    code, out, _ = run(capsys, *db, "keys", "list", "--json")
    assert json.loads(out)["keys"][0]["caps"] == {"money": 5.0, "images": 300.0}
    assert run(capsys, *db, "keys", "set", "nobody", "--images", "3")[0] == 2
    assert run(capsys, *db, "keys", "revoke", "alice")[0] == 0
    code, _, err = run(capsys, *db, "keys", "revoke", "alice")
    assert code == 2 and "already revoked" in err
    code, _, err = run(capsys, *db, "keys", "add", "alice")
    assert code == 2 and "exists" in err


def test_a_roster_makes_keys_and_a_handout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    roster = tmp_path / "roster.csv"
    roster.write_text("name,email\nana,a@x\n=cmd(),b@x\n<b>bo</b>,c@x\n")
    out_dir = tmp_path / "keys"
    code, out, _ = run(
        capsys,
        "--database",
        str(tmp_path / "c.db"),
        "keys",
        "roster",
        str(roster),
        "--out",
        str(out_dir),
        "--group",
        "class1",
        "--tasks",
        "20",
        "--url",
        "http://class.example",
    )
    assert code == 0 and "3 keys made" in out
    rows = list(csv.DictReader((out_dir / "keys.csv").open()))
    assert (out_dir / "keys.csv").stat().st_mode & 0o077 == 0  # only the teacher reads it
    assert (out_dir / "handout.html").stat().st_mode & 0o077 == 0
    assert [r["name"] for r in rows] == ["ana", "'=cmd()", "<b>bo</b>"]
    page = (out_dir / "handout.html").read_text()
    assert all(r["key"] in page for r in rows) and "<b>bo</b>" not in page
    assert "&lt;b&gt;bo&lt;/b&gt;" in page and "http://class.example" in page
    db = Database(tmp_path / "c.db")
    assert all(find_key(db, r["key"]) is not None for r in rows)


def test_groups_and_usage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = ["--database", str(tmp_path / "class.db")]
    assert run(capsys, *db, "groups", "class1", "--images", "100", "--cache-seconds", "60")[0] == 0
    run(capsys, *db, "keys", "add", "bo", "--group", "class1")
    _code, out, _ = run(capsys, *db, "usage", "--json")
    report = json.loads(out)
    assert report["groups"] == [
        {"name": "class1", "cache_seconds": 60, "caps": {"images": 100.0}, "held": {}}
    ]
    assert report["keys"][0]["name"] == "bo" and report["keys"][0]["tasks"] == 0
    _code, out, _ = run(capsys, *db, "usage")
    assert out.startswith("name,group,revoked,tasks")


def test_serve_needs_an_upstream_and_takes_no_key_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _, err = run(capsys, "--database", str(tmp_path / "c.db"))
    assert code == 2 and "--upstream" in err
    monkeypatch.delenv("GENWIDGETS_UPSTREAM_KEY", raising=False)
    monkeypatch.delenv("GENWIDGETS_API_KEY", raising=False)
    code, _, err = run(
        capsys, "--database", str(tmp_path / "c.db"), "--upstream", "http://127.0.0.1:9"
    )
    assert code == 2 and "GENWIDGETS_UPSTREAM_KEY" in err
    with pytest.raises(SystemExit) as refused:  # there is no flag for the teacher's key
        main(["serve", "--upstream", "http://x", "--api-key=teacher-key"])
    assert refused.value.code == 2 and "unrecognized arguments" in capsys.readouterr().err


@pytest.mark.slow
def test_serve_over_the_embedded_simulator_in_its_own_process(
    tmp_path: Path, serve_processes: Callable[..., Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """``genwidgets serve --upstream simulator``: the way to try it, end to end."""
    database = str(tmp_path / "class.db")
    code = main(
        ["serve", "--database", database, "keys", "add", "alice", "--images", "2", "--json"]
    )
    assert code == 0
    token = json.loads(capsys.readouterr().out)["key"]
    started = serve_processes("simulator", database)
    with httpx.Client(
        base_url=started.base_url, timeout=60, headers={"Authorization": f"Bearer {token}"}
    ) as api:
        handle = api.post("/v1/queue/genW2.5-t2i-preview", json={"prompt": "x", "n": 2}).json()
        wait_for(
            lambda: api.get(handle["status_url"]).json()["status"] == "COMPLETED",
            what="the task through the child server",
        )
        refused = api.post("/v1/queue/genW2.5-t2i-preview", json={"prompt": "x", "n": 1})
    assert refused.status_code == 402
