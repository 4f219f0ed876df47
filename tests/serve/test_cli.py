"""``genwidgets serve``'s commands: keys made, shown once, listed, revoked, rotated; a
roster in, keys and a handout out; groups; usage as JSON."""

from __future__ import annotations

import csv
import json
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from serve_helpers import wait_for

from genwidgets.cli import main
from genwidgets.serve.budgets import tasks_of
from genwidgets.serve.db import Database
from genwidgets.serve.keys import add_key, find_key


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["serve", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_keys_add_list_rotate_revoke(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = ["--database", str(tmp_path / "class.db")]
    assert run(capsys, *db, "groups", "class1")[0] == 0
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


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--max-running", "0"], "max running is 1 or more, not 0"),
        (["--max-running", "-3"], "max running is 1 or more, not -3"),
        (["--images", "inf"], "at most 1,000,000,000,000, not inf (images)"),
        (["--budget", "1e13"], "at most 1,000,000,000,000, not 1e+13 (money)"),
        (["--endpoints", "genW2.5-t2i-previw"], "did you mean 'genW2.5-t2i-preview'"),
        (["--endpoints", "genW2.5-t2i-preview, "], "an endpoint is empty"),
        (["--expires", "2020-01-01"], "--expires 2020-01-01 is past"),
        (["--expires", "tomorrow"], "--expires 'tomorrow' is not a date or time"),
        (["--tasks", "0.5"], "a cap on tasks is a whole number, not 0.5"),
    ],
)
def test_a_key_that_could_never_work_is_refused_saying_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], says: str
) -> None:
    """Keys add and keys set refuse, in one line, what would make a key unusable (it can
    never create, or may not use the endpoint meant) or cannot be stored."""
    db = ["--database", str(tmp_path / "class.db")]
    assert run(capsys, *db, "keys", "add", "ok", "--images", "5")[0] == 0
    for command in (["keys", "add", "new", "--images", "5"], ["keys", "set", "ok"]):
        code, _, err = run(capsys, *db, *command, *args)
        assert code == 2 and says in err and "Traceback" not in err
    code, out, _ = run(capsys, *db, "keys", "list", "--json")
    assert [k["name"] for k in json.loads(out)["keys"]] == ["ok"]


def test_keys_set_changes_a_keys_options_and_keys_list_shows_its_running_cap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = ["--database", str(tmp_path / "class.db")]
    assert run(capsys, *db, "keys", "add", "ok", "--images", "5")[0] == 0
    assert "max running as serve" in run(capsys, *db, "keys", "list")[1]
    change = ["--max-running", "4", "--endpoints", "genW2.5-t2i-preview", "--expires", "2099-01-01"]
    assert run(capsys, *db, "keys", "set", "ok", *change)[0] == 0
    assert "max running 4" in run(capsys, *db, "keys", "list")[1]
    [key] = json.loads(run(capsys, *db, "keys", "list", "--json")[1])["keys"]
    assert key["max_running"] == 4 and key["endpoints"] == ["genW2.5-t2i-preview"]
    assert key["expires_at"] and key["caps"] == {"images": 5.0}


def test_a_roster_makes_keys_and_a_handout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    roster = tmp_path / "roster.csv"
    roster.write_text("name,email\nana,a@x\n=cmd(),b@x\n<b>bo</b>,c@x\n")
    out_dir = tmp_path / "keys"
    assert run(capsys, "--database", str(tmp_path / "c.db"), "groups", "class1")[0] == 0
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


def test_a_roster_that_cannot_be_written_whole_makes_no_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A key whose token was never shown is a key the teacher must rotate: a roster whose
    files are there already, or with a name taken, makes none of its keys."""
    db = ["--database", str(tmp_path / "c.db")]
    first, second = tmp_path / "first.csv", tmp_path / "second.csv"
    first.write_text("name\nana\nbo\n")
    second.write_text("name\ncy\ndee\n")
    out_dir = str(tmp_path / "keys")
    assert run(capsys, *db, "keys", "roster", str(first), "--out", out_dir)[0] == 0
    written = (tmp_path / "keys" / "keys.csv").read_bytes()
    code, _, err = run(capsys, *db, "keys", "roster", str(second), "--out", out_dir)
    assert code == 2 and "keys.csv" in err
    assert (tmp_path / "keys" / "keys.csv").read_bytes() == written  # never written over
    taken = tmp_path / "taken.csv"
    taken.write_text("name\neve\nana\nfay\n")
    code, _, err = run(capsys, *db, "keys", "roster", str(taken), "--out", str(tmp_path / "t"))
    assert code == 2 and "'ana' exists" in err
    assert list((tmp_path / "t").iterdir()) == []  # no file left half made
    _code, out, _ = run(capsys, *db, "keys", "list", "--json")
    assert sorted(k["name"] for k in json.loads(out)["keys"]) == ["ana", "bo"]
    code, out, _ = run(capsys, *db, "keys", "roster", str(second), "--out", str(tmp_path / "k2"))
    assert code == 0 and "2 keys made" in out  # the same roster, once it can be written


def test_a_group_changed_again_keeps_what_is_not_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = ["--database", str(tmp_path / "class.db")]

    def group() -> dict[str, Any]:
        report = json.loads(run(capsys, *db, "usage", "--json")[1])
        found: dict[str, Any] = report["groups"][0]
        return found

    assert run(capsys, *db, "groups", "class1", "--images", "60", "--tasks", "40")[0] == 0
    assert run(capsys, *db, "groups", "class1", "--cache-seconds", "3600")[0] == 0
    assert group()["caps"] == {"tasks": 40.0, "images": 60.0}
    assert group()["cache_seconds"] == 3600
    assert run(capsys, *db, "groups", "class1", "--images", "80")[0] == 0
    assert group()["caps"] == {"tasks": 40.0, "images": 80.0}
    assert group()["cache_seconds"] == 3600
    assert run(capsys, *db, "groups", "class1", "--cache-seconds", "0")[0] == 0
    assert group()["cache_seconds"] == 0


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


@pytest.mark.slow
def test_creates_waiting_their_turn_when_serve_stops_are_given_back(
    tmp_path: Path,
    upstream_sim: Any,
    serve_processes: Callable[..., Any],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Ctrl-C (SIGTERM) while creates wait their turn for upstream (``--upstream-rate``):
    none of them was sent, so none stays reserved or holds its key's place."""
    database = str(tmp_path / "class.db")
    assert main(["serve", "--database", database, "keys", "add", "cy", "--json"]) == 0
    token = json.loads(capsys.readouterr().out)["key"]
    started = serve_processes(upstream_sim.base_url, database, "--upstream-rate", "0.05")
    answers: list[int | str] = []

    def create() -> None:
        with httpx.Client(base_url=started.base_url, timeout=60) as api:
            try:
                answer = api.post(
                    "/v1/queue/genW2.5-t2i-preview",
                    json={"prompt": "x", "n": 1},
                    headers={"Authorization": f"Bearer {token}"},
                )
                answers.append(answer.status_code)
            except httpx.HTTPError as exc:  # the server stopped under it
                answers.append(type(exc).__name__)

    senders = [threading.Thread(target=create) for _ in range(4)]
    for sender in senders:
        sender.start()
    db = Database(database)
    wait_for(  # one sent at once, three waiting their turn (twenty seconds apart)
        lambda: len(tasks_of(db, state="sending")) == 3 and len(tasks_of(db)) == 4,
        what="three creates waiting their turn",
    )
    started.process.send_signal(signal.SIGTERM)
    started.process.wait(60)  # uvicorn ends by the signal it stopped for, after its shutdown
    for sender in senders:
        sender.join(60)
    states = sorted(t["state"] for t in tasks_of(db))
    assert states == ["not_sent"] * 3 + ["open"] and len(answers) == 4
    assert upstream_sim.state.stats["create"] == 1
    code = main(["serve", "--database", database, "usage", "--json"])
    held = json.loads(capsys.readouterr().out)["keys"][0]["held"]
    assert code == 0 and held == {"tasks": 1.0, "images": 1.0}
    db.close()


@pytest.mark.slow
def test_serve_stopped_while_upstream_has_a_create_answers_an_outcome_unknown(
    tmp_path: Path,
    upstream_sim: Any,
    serve_processes: Callable[..., Any],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """SIGTERM while upstream takes its time with a create: the student gets the gateway's
    error shape naming the task (it may exist), the teacher one line, no traceback, and
    the task is ``unknown`` (still reserved, no running place held)."""
    database = str(tmp_path / "class.db")
    assert main(["serve", "--database", database, "keys", "add", "cy", "--json"]) == 0
    token = json.loads(capsys.readouterr().out)["key"]
    upstream_sim.state.reconfigure({"latency": 30.0})
    started = serve_processes(upstream_sim.base_url, database)
    answers: list[httpx.Response] = []

    def create() -> None:
        with httpx.Client(base_url=started.base_url, timeout=60) as api:
            answers.append(
                api.post(
                    "/v1/queue/genW2.5-t2i-preview",
                    json={"prompt": "x", "n": 1},
                    headers={"Authorization": f"Bearer {token}"},
                )
            )

    sender = threading.Thread(target=create)
    sender.start()
    db = Database(database)
    wait_for(lambda: tasks_of(db, state="sending"), what="the create to be sent")
    started.process.send_signal(signal.SIGTERM)
    started.process.wait(60)
    sender.join(60)
    [task] = tasks_of(db)
    db.close()
    [answer] = answers
    assert answer.status_code == 503
    error = answer.json()["error"]
    assert error["code"] == "SERVER_STOPPING" and task["id"] in error["message"]
    assert "may exist" in error["message"]
    assert task["state"] == "unknown"
    log = started.log.read_text()
    assert "Traceback" not in log and f"create {task['id']} by cy: outcome unknown" in log


def test_a_roster_saved_by_excel_or_without_names_is_read_or_refused_plainly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Excel's "CSV UTF-8" (a BOM) and a ``Name`` header are read; a roster with no name
    column or no name makes nothing and writes nothing, saying why; a second run into
    the same folder says the file is there."""
    db = ["--database", str(tmp_path / "class.db")]
    rosters = {
        "excel.csv": b"\xef\xbb\xbfName,email\r\nAnn,a@x\r\nBen,b@x\r\n",
        "emails.csv": b"student,email\nAnn,a@x\n",
        "empty.csv": b"name,email\n,a@x\n",
    }
    for file, data in rosters.items():
        (tmp_path / file).write_bytes(data)
    for file, says in (
        ("emails.csv", "no 'name' column (its columns: 'student', 'email')"),
        ("empty.csv", "no name under its 'name' column"),
    ):
        out = tmp_path / file.replace(".csv", "")
        code, _, err = run(capsys, *db, "keys", "roster", str(tmp_path / file), "--out", str(out))
        assert code == 2 and says in err and not out.exists()
    out = tmp_path / "keys"
    code, said, _ = run(
        capsys, *db, "keys", "roster", str(tmp_path / "excel.csv"), "--out", str(out)
    )
    assert code == 0 and said.startswith("2 keys made")
    with open(out / "keys.csv", newline="") as handle:
        assert [row["name"] for row in csv.DictReader(handle)] == ["Ann", "Ben"]
    code, _, err = run(
        capsys, *db, "keys", "roster", str(tmp_path / "excel.csv"), "--out", str(out)
    )
    assert code == 2 and f"{out / 'keys.csv'} exists" in err and "Errno" not in err


def test_settling_not_made_never_overwrites_a_task_the_sweep_settled_meanwhile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``tasks --settle ID --not-made`` read the task unknown, then released it from any
    state: a sweep that settled it ``done`` in between (upstream made it) was overwritten
    and its charge given back. It is released only if still unknown, and says so."""
    from genwidgets.serve import budgets

    database = str(tmp_path / "class.db")
    db = Database(database)
    db.migrate()
    add_key(db, "alice", {"tasks": 5})
    amounts = budgets.charge_of("genW2.5-t2i-preview", {"prompt": "x", "n": 1}, {})
    task_id = budgets.reserve(db, "alice", "genW2.5-t2i-preview", amounts).task_id
    budgets.move(db, task_id, "unknown", error="timeout")
    release = budgets.release

    def swept_first(*args: Any, **kwargs: Any) -> bool:  # upstream's answer came first
        budgets.move(db, task_id, "done", source=("unknown",))
        return release(*args, **kwargs)

    monkeypatch.setattr(budgets, "release", swept_first)
    code, _, err = run(capsys, "--database", database, "tasks", "--settle", task_id, "--not-made")
    assert code != 0 and f"task {task_id!r} is done, not unknown" in err
    [task] = tasks_of(db)
    assert (task["state"], task["charged"]) == ("done", True)
    db.close()


def test_a_typo_in_group_is_refused_naming_the_groups(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--group clas1`` made a new group with no caps, so the key spent outside its
    class's cap unseen. A group not made yet is refused, naming the groups and how to
    make one, with no key, group or roster file made."""
    db = ["--database", str(tmp_path / "class.db")]
    assert run(capsys, *db, "groups", "class1", "--images", "10")[0] == 0
    roster = tmp_path / "roster.csv"
    roster.write_text("name\nana\n")
    out_dir = tmp_path / "keys"
    for command in (
        ["keys", "add", "alice", "--group", "clas1"],
        ["keys", "roster", str(roster), "--out", str(out_dir), "--group", "clas1"],
    ):
        code, _, err = run(capsys, *db, *command)
        assert code == 2 and "no group named 'clas1'" in err, err
        assert "class1" in err and "genwidgets serve groups clas1" in err
    report = json.loads(run(capsys, *db, "usage", "--json")[1])
    assert report["keys"] == [] and [g["name"] for g in report["groups"]] == ["class1"]
    assert not list(out_dir.glob("*"))


def test_a_group_with_a_negative_cache_window_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``groups class1 --cache-seconds -5`` was accepted (a window that never answers)."""
    db = ["--database", str(tmp_path / "class.db")]
    code, _, err = run(capsys, *db, "groups", "class1", "--cache-seconds", "-5")
    assert code == 2 and "--cache-seconds is 0 (off) or more, not -5" in err
    assert json.loads(run(capsys, *db, "usage", "--json")[1])["groups"] == []


@pytest.mark.parametrize(
    ("table", "says"),
    [
        ({"genW2.5-t2i-preview": {"per_imag": 0.04}}, "per_imag: not one of per_task"),
        ({"genW2.5-t2i-preview": 0.04}, "a dict of prices"),
        ({"genW2.5-t2i-preview": {"per_image": "0.04"}}, "a price 0 or more"),
        ({"genW2.5-t2i-preview": {"per_image": -0.04}}, "a price 0 or more, not -0.04"),
        ({"genW2.5-t2i-previw": {"per_image": 0.04}}, "genW2.5-t2i-preview"),
        ([0.04], "a JSON array, where a table is expected"),
        (
            {"genW2.5-t2i-preview": {"per_second": 0.5}},
            "per_second: genW2.5-t2i-preview bills only per_task, per_image",
        ),
        ({"genW2.5-t2i-preview": {}}, "prices none of the units it bills (per_task, per_image)"),
    ],
    ids=[
        "misspelt-unit",
        "number",
        "text",
        "negative",
        "misspelt-endpoint",
        "list",
        "unit-never-billed-there",
        "empty-entry",
    ],
)
def test_a_price_table_a_batch_would_refuse_is_refused_before_serving(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    table: Any,
    says: str,
) -> None:
    """``--prices`` was passed on unchecked: a misspelt unit cost nothing (a money cap
    never bit), a number where a table belongs made every create a 500. It is checked as
    a batch's ``prices=`` is, and refused naming the problem before anything is served."""
    from genwidgets.serve.server import ClassServer

    def served(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a class gateway was served with this price table")

    monkeypatch.setattr(ClassServer, "serve_forever", served)
    monkeypatch.setenv("GENWIDGETS_UPSTREAM_KEY", "teacher-key")
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps(table))
    database = ["--database", str(tmp_path / "c.db")]
    code, _, err = run(
        capsys, *database, "--upstream", "http://127.0.0.1:9", "--prices", str(prices)
    )
    assert code == 2 and "--prices" in err and says in err, err


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--timeout", "0"], "--timeout"),
        (["--timeout", "-5"], "--timeout"),
        (["--timeout", "nan"], "--timeout"),
        (["--timeout", "inf"], "--timeout"),
        (["--timeout", "3600"], "--timeout, 3600 s"),
        (["--max-running", "-1"], "--max-running"),
        (["--rate", "-1"], "--rate"),
        (["--upstream-rate", "-0.5"], "--upstream-rate"),
        (["--rate", "nan"], "--rate"),
    ],
)
def test_a_serve_setting_that_would_make_the_class_unusable_is_refused_at_start(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    flags: list[str],
    says: str,
) -> None:
    """``--timeout 0`` (read as "no timeout", as its neighbours' 0 is "no cap") made every
    create upstream, then called it unknown: no student got a result. ``--max-running
    -1`` refused every create, ``--rate -1`` every request after the first, for ever. A
    timeout past the 10 minutes after which a create still sending is given up as dead
    would hand students tasks the class had given up. Each is refused, naming its flag."""
    from genwidgets.serve.server import ClassServer

    def served(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a class gateway was served with these settings")

    monkeypatch.setattr(ClassServer, "serve_forever", served)
    monkeypatch.setenv("GENWIDGETS_UPSTREAM_KEY", "teacher-key")
    database = ["--database", str(tmp_path / "c.db")]
    try:  # refused by its flag's type (argparse), or by the settings together
        code, _, err = run(capsys, *database, "--upstream", "http://127.0.0.1:9", *flags)
    except SystemExit as refused:
        code, err = refused.code, capsys.readouterr().err
    assert code == 2 and says in err, err


@pytest.mark.parametrize(
    "settings",
    [
        {"max_running": -1},
        {"max_running": 0},
        {"rate": -1.0},
        {"rate": float("nan")},
        {"upstream_rate": 0.0},
        {"queue_wait": -1.0},
        {"queue_wait": 3600.0},
        {"sweep_every": float("inf")},
    ],
)
def test_the_same_settings_are_refused_by_the_api(tmp_path: Path, settings: dict[str, Any]) -> None:
    from genwidgets.serve import ServeConfig, Upstream

    upstream = Upstream("http://127.0.0.1:9", "teacher-key")
    with pytest.raises(ValueError) as refused:
        ServeConfig(upstream=upstream, database=Database(tmp_path / "c.db"), **settings)
    assert next(iter(settings)) in str(refused.value)
    for timeout in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="timeout"):
            Upstream("http://127.0.0.1:9", "teacher-key", timeout=timeout)


@pytest.mark.parametrize(
    "command",
    [
        ["hold"],
        ["usage"],
        ["tasks"],
        ["keys", "list"],
        ["keys", "revoke", "alice"],
        ["keys", "rotate", "alice"],
        ["keys", "set", "alice", "--images", "3"],
    ],
)
def test_a_teachers_command_pointed_at_no_class_database_makes_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    """``serve hold`` from another folder (the default database is relative) made an
    empty database there and said "not held back"; a typo the same. A command that
    reads or changes the class's keys and tasks refuses a database that is not there,
    naming it, and makes nothing."""
    missing = tmp_path / "class" / "genwidgets-clas.db"
    code, _, err = run(capsys, "--database", str(missing), *command)
    assert code == 2 and f"no class database at {missing}" in err, err
    assert not missing.exists() and not missing.parent.exists()


def test_settling_a_task_that_is_not_unknown_says_what_it_is_waiting_for(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """After kill -9 mid-create, ``--settle`` of the ``sending`` task said a sweep or a
    poll had settled it, when nothing had: it says it is still being sent, or its
    process stopped mid-send, and when it can be settled."""
    from genwidgets.serve import budgets

    database = tmp_path / "class.db"
    db = Database(database)
    db.migrate()
    add_key(db, "alice", {})
    amounts = budgets.charge_of("genW2.5-t2i-preview", {"prompt": "x", "n": 1}, {})
    sending = budgets.reserve(db, "alice", "genW2.5-t2i-preview", amounts).task_id
    opened = budgets.reserve(db, "alice", "genW2.5-t2i-preview", amounts).task_id
    budgets.move(db, opened, "open", upstream_id="u1")
    db.close()
    base = ["--database", str(database), "tasks", "--made", "--settle"]
    code, _, err = run(capsys, *base, sending)
    assert code == 2 and "still being sent" in err and "10 minutes" in err, err
    code, _, err = run(capsys, *base, opened)
    assert code == 2 and "upstream has it" in err, err


def test_a_create_left_sending_past_its_time_is_settled_without_a_server(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """After kill -9 mid-create with no server running again (the class is over), the
    settle of a create ``sending`` for 20 minutes was refused for ever: only a running
    server's sweep gives it up. The teacher's command gives it up itself; a younger one
    is refused saying how many minutes are left."""
    from genwidgets.serve import budgets

    database = tmp_path / "class.db"
    db = Database(database)
    db.migrate()
    add_key(db, "alice", {"tasks": 10})
    amounts = budgets.charge_of("genW2.5-t2i-preview", {"prompt": "x", "n": 1}, {})
    old = time.time() - 1200
    stale = budgets.reserve(db, "alice", "genW2.5-t2i-preview", amounts, now=old).task_id
    young = time.time() - 300
    recent = budgets.reserve(db, "alice", "genW2.5-t2i-preview", amounts, now=young).task_id
    db.close()
    base = ["--database", str(database), "tasks", "--not-made", "--settle"]
    code, out, err = run(capsys, *base, stale)
    assert code == 0 and "settled" in out, err
    code, _, err = run(capsys, *base, recent)
    assert code == 2 and "in 5 minutes" in err, err
    db = Database(database)
    assert (
        budgets.task_state(db, stale) == "not_made" and budgets.task_state(db, recent) == "sending"
    )
    db.close()


def test_a_settle_refused_reads_the_task_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``tasks --settle`` of a task that is not unknown read it three times: its state to
    decide, its state again and its age to say why. The settle is tried under the
    task's lock (it moves only an unknown task) and the refusal read once, state and
    age together; it says the same."""
    from genwidgets.serve import budgets
    from genwidgets.serve.db import Tx

    database = tmp_path / "class.db"
    db = Database(database)
    db.migrate()
    add_key(db, "alice", {})
    amounts = budgets.charge_of("genW2.5-t2i-preview", {"prompt": "x", "n": 1}, {})
    sending = budgets.reserve(db, "alice", "genW2.5-t2i-preview", amounts).task_id
    db.close()
    reads: list[str] = []
    rows = Tx.rows

    def counted(tx: Tx, text: str, params: Any = ()) -> list[tuple[Any, ...]]:
        if text.startswith("SELECT") and "FROM tasks WHERE id = ?" in text:
            reads.append(text)  # the release's read, under the task's lock, is its write's
        return rows(tx, text, params)

    monkeypatch.setattr(Tx, "rows", counted)
    for made in ("--made", "--not-made"):
        reads.clear()
        code, _, err = run(capsys, "--database", str(database), "tasks", made, "--settle", sending)
        assert code == 2 and "still being sent" in err and "in 10 minutes" in err, err
        assert len([text for text in reads if "{lock}" not in text]) == 1, reads
