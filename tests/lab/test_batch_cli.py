"""``genwidgets batch``: the plan and its confirmation (refused without --yes when stdin
is not a terminal), the exit status, --json, and a process killed half way then run
again: no row created twice, every file once."""

from __future__ import annotations

import csv
import io
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from loopback import LoopbackServer, OneTaskGateway

import genwidgets as gw
from genwidgets import _client
from genwidgets._config import shown_path
from genwidgets.cli import build_parser
from genwidgets.errors import LedgerError
from genwidgets.jobs.ledger import LEDGER_FILE_NAME, Ledger
from genwidgets.lab.batch_cli import run_batch
from genwidgets.lab.manifest import read_manifest
from genwidgets.simulator import SimulatorServer

T2I = "genW2.5-t2i-preview"
KEY = "sim-demo-key"
pytestmark = pytest.mark.timeout(300)


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def rows_file(tmp_path: Path, count: int) -> Path:
    path = tmp_path / "shots.csv"
    path.write_text("text,seed\n" + "".join(f"a heron {i},{i + 1}\n" for i in range(count)))
    return path


def run(
    args: list[str], stdin: io.StringIO | None = None, *, redirected: bool = False
) -> tuple[int, str, str]:
    """The command; a ``Terminal`` stdin: typed at a terminal, which its stdout and stderr
    are too (``redirected``: stdout is a file, ``> log.txt``)."""
    at_a_terminal = isinstance(stdin, Terminal)
    out = Terminal() if at_a_terminal and not redirected else io.StringIO()
    err = Terminal() if at_a_terminal else io.StringIO()
    parsed = build_parser().parse_args(["batch", *args])
    code = run_batch(parsed, stdin=stdin or io.StringIO(""), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def run_on(
    gateway: LoopbackServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    *extra: str,
    rows: int = 1,
) -> tuple[int, str, str]:
    """The command sending ``rows`` rows (one image each, ``--yes``) to ``gateway``,
    reached from the environment as a user's would be, with a home in ``tmp_path``."""
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GENWIDGETS_BASE_URL", gateway.base)
    monkeypatch.setenv("GENWIDGETS_API_KEY", "key-of-a-loopback-gateway")
    return run(
        [str(rows_file(tmp_path, rows)), "--endpoint", T2I, "--set", "prompt={text}",
         "--set", "n=1", "--out", str(tmp_path / "o"), "--yes", *extra]
    )  # fmt: skip


def stats(sim: SimulatorServer) -> dict[str, Any]:
    return dict(httpx.get(f"{sim.base_url}/_sim/stats", timeout=10).json())


def test_without_yes_and_without_a_terminal_it_refuses_and_sends_nothing(
    gateway_env: SimulatorServer, tmp_path: Path
) -> None:
    common = [str(rows_file(tmp_path, 3)), "--endpoint", T2I, "--set", "prompt={text}"]
    code, out, err = run([*common, "--out", str(tmp_path / "o")])
    assert code == 2 and "stdin is not a terminal" in err and "pass --yes" in err
    assert "3 tasks" in out  # the plan was shown
    code, _, err = run([*common, "--out", str(tmp_path / "o")], stdin=Terminal("n\n"))
    assert code == 2 and "not confirmed" in err
    assert stats(gateway_env)["create"] == 0


def test_at_a_terminal_with_stdout_redirected_the_question_and_plan_go_to_stderr(
    gateway_env: SimulatorServer, tmp_path: Path
) -> None:
    """Review 23, fault 3: ``genwidgets batch ... > log.txt`` at a terminal wrote the
    question (and the plan) into the file, and waited with no deadline for an answer
    nobody was asked. Now they go to stderr, the terminal; with neither stdout nor stderr
    a terminal, the command refuses to ask, as without one, and names --yes."""
    common = [str(rows_file(tmp_path, 2)), "--endpoint", T2I, "--set", "prompt={text}"]
    common += ["--out", str(tmp_path / "o")]
    code, out, err = run(common, stdin=Terminal("n\n"), redirected=True)
    assert code == 2 and "Send 2 row(s)? [y/N]" in err and "Send" not in out
    assert "2 tasks" in err and "2 tasks" in out  # the plan: seen, and in the log
    assert "not confirmed" in err
    out, err = io.StringIO(), io.StringIO()  # no terminal shows anything
    parsed = build_parser().parse_args(["batch", *common])
    code = run_batch(parsed, stdin=Terminal(""), stdout=out, stderr=err)
    assert code == 2 and "pass --yes" in err.getvalue() and "[y/N]" not in out.getvalue()
    assert stats(gateway_env)["create"] == 0


def test_a_plan_not_confirmed_records_nothing_and_makes_no_folder(
    gateway_env: SimulatorServer, tmp_path: Path
) -> None:
    """Refused for want of --yes, or answered no: the --out folder is not made and the
    batch is not bound to it, so the command with --out corrected is not refused."""
    common = [str(rows_file(tmp_path, 2)), "--endpoint", T2I, "--set", "prompt={text}"]
    typo, meant = tmp_path / "shtos", tmp_path / "shots"
    code, out, err = run([*common, "--out", str(typo)])
    assert code == 2 and "pass --yes" in err
    code, _, err = run([*common, "--out", str(typo)], stdin=Terminal("n\n"))
    assert code == 2 and "not confirmed" in err
    assert not typo.exists()
    code, _, err = run([*common, "--out", str(meant)], stdin=Terminal("n\n"))
    assert code == 2 and "not confirmed" in err and "writes into" not in err
    # still refused before the question: a folder holding this batch's rows another
    # ledger sent, and (once confirmed) a folder that cannot be made
    meant.mkdir()
    sent = {"batch": out.split()[1], "row": 0, "request_id": "r-1"}
    (meant / "manifest.jsonl").write_text(json.dumps(sent) + "\n")
    code, out, err = run([*common, "--out", str(meant)], stdin=Terminal("y\n"))
    assert code == 2 and "by another ledger" in err and "Send" not in out
    (tmp_path / "afile").write_text("")
    code, out, err = run([*common, "--out", str(tmp_path / "afile" / "o")], stdin=Terminal("y\n"))
    assert code == 2 and "refused, nothing sent: " in err and "cannot write into" in err
    assert stats(gateway_env)["create"] == 0


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--set", "n=4", "--set", "n=1"], "--set gives n twice (n=4, then n=1)"),
        (["--budget", "images=9", "--budget", "images=1"], "--budget gives images twice"),
        (
            ["--budget", "money=1", "--price", f"{T2I}:per_image=0.5"] * 2,
            "--budget gives money twice",
        ),
        (
            ["--price", f"{T2I}:per_image=0.5", "--price", f"{T2I}:per_image=0.05"],
            f"--price gives {T2I}:per_image twice (",
        ),
    ],
    ids=["set", "budget", "money", "price"],
)
def test_a_field_budget_or_price_given_twice_is_refused(
    tmp_path: Path, flags: list[str], said: str
) -> None:
    """The last of two values kept silently would send (and bill) what was not meant."""
    common = [str(rows_file(tmp_path, 1)), "--endpoint", T2I, "--set", "prompt={text}"]
    code, out, err = run([*common, *flags, "--out", str(tmp_path / "o"), "--yes"])
    assert code == 2 and out == "" and said in err and "give it once" in err
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_confirmed_on_a_terminal_or_with_yes_it_sends_and_exits_0(
    gateway_env: SimulatorServer, tmp_path: Path
) -> None:
    common = [str(rows_file(tmp_path, 2)), "--endpoint", T2I, "--set", "prompt={text}"]
    common += ["--set", "seed={seed}", "--set", "n=1", "--out", str(tmp_path / "o")]
    code, out, _ = run(common, stdin=Terminal("y\n"))
    assert code == 0 and "Send 2 row(s)? [y/N]" in out and "manifest:" in out
    assert "simulated" not in out  # a gateway of its own
    assert str(tmp_path) not in out  # its words show paths as shown paths (issue 39.7)
    code, out, _ = run([*common, "--yes", "--json"])  # the same command: resumed, nothing sent
    report = json.loads(out.strip().splitlines()[-1])
    assert report["out"] == str(tmp_path / "o")  # a script's value: whole
    assert code == 0 and report["counts"] == {"done": 2} and report["not_done"] == []
    assert report["spent"] == report["reserved"] == {"tasks": 2.0, "images": 2.0}
    assert stats(gateway_env)["created"] == 2
    assert sorted(p.name for p in (tmp_path / "o").glob("*.png")) == [
        "00000-a-heron-0-1.png",
        "00001-a-heron-1-2.png",
    ]


def test_bad_input_is_refused_with_exit_2_naming_the_row(
    gateway_env: SimulatorServer, tmp_path: Path
) -> None:
    path = rows_file(tmp_path, 2)
    path.write_text("text,seed\na,1\nb,two\n")
    code, _, err = run(
        [str(path), "--endpoint", T2I, "--set", "prompt={text}", "--set", "seed={seed}",
         "--out", str(tmp_path / "o"), "--yes"]
    )  # fmt: skip
    assert code == 2 and "row 1 (line 3).seed" in err and "'two' is not a number" in err
    path.write_text("text\na\nb\n")  # a seed column would fill the seed the template leaves out
    code, _, err = run(
        [str(path), "--endpoint", T2I, "--set", "prompt={text}", "--budget", "images=1",
         "--out", str(tmp_path / "o"), "--yes"]
    )  # fmt: skip
    assert code == 2 and "the budget allows 1" in err
    assert stats(gateway_env)["create"] == 0


def test_with_json_a_refusal_is_one_json_object_on_stdout(
    gateway_env: SimulatorServer, tmp_path: Path
) -> None:
    path = rows_file(tmp_path, 2)
    path.write_text("text,seed\na,1\nb,two\n")
    common = [str(path), "--endpoint", T2I, "--set", "prompt={text}", "--json"]
    code, out, err = run([*common, "--set", "seed={seed}", "--out", str(tmp_path / "o"), "--yes"])
    found = json.loads(out)  # the whole of stdout: one object
    assert code == 2 and err == ""
    assert found["command"] == "batch" and found["error_type"] == "PayloadError"
    assert found["error"].startswith("refused, nothing sent: ")
    assert [p["loc"] for p in found["problems"]] == [["row 1 (line 3)", "seed"]]
    path.write_text("text\na\nb\n")
    code, out, err = run([*common, "--out", str(tmp_path / "o")])  # no --yes, no terminal
    found = json.loads(out)
    assert code == 2 and err == "" and found["to_send"] == 2 and "pass --yes" in found["error"]
    assert found["id"].startswith("shots-")  # the batch a script would run again
    code, out, err = run([*common, "--out", str(tmp_path / "o")], stdin=Terminal("n\n"))
    assert code == 2 and json.loads(out)["error"] == "not confirmed, nothing sent"
    assert "Send 2 row(s)? [y/N]" in err  # the question beside stdout's JSON, not in it
    assert stats(gateway_env)["create"] == 0


def test_a_ledger_another_process_holds_sends_nothing_and_says_to_run_it_again(
    gateway_env: SimulatorServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A backup or an sqlite3 shell holding the ledger past the wait: the command's one
    line (or --json object) and ``gw.batch``'s error say so and what to do, not a traceback."""

    class Impatient(Ledger):  # the client's own ledger waits 0.2 s, not 5, for the file
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **{"busy_timeout": 0.2, **kwargs})

    monkeypatch.setattr(_client, "Ledger", Impatient)
    path = Path(os.environ["GENWIDGETS_HOME"]) / LEDGER_FILE_NAME
    with Ledger(path):
        pass  # the file made, as by any earlier command
    common = [str(rows_file(tmp_path, 2)), "--endpoint", T2I, "--set", "prompt={text}"]
    common += ["--out", str(tmp_path / "o"), "--yes"]
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        code, out, err = run(common)
        assert code == 1 and err.count("\n") == 1, err
        assert err.startswith("genwidgets batch: not sent: another process ")
        # the ledger named as every message names a home's file (docs/decisions.md#shown-paths)
        assert f"holds the ledger {shown_path(path)}" in err and "run it again once it frees" in err
        code, out, err = run([*common, "--json"])
        found = json.loads(out)
        assert code == 1 and err == "" and found["error_type"] == "LedgerError"
        assert found["error"].startswith("not sent: another process ")
        with gw.Client() as client, pytest.raises(LedgerError) as caught:
            gw.batch(T2I, [{"prompt": "a"}], out=tmp_path / "p", client=client)
        assert "nothing was sent: run it again once it frees" in str(caught.value)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert stats(gateway_env)["create"] == 0


@pytest.mark.slow
def test_a_home_that_cannot_record_the_batch_is_refused_in_the_commands_words(
    gateway_env: SimulatorServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A home no ledger can be made in (under a file, so even root cannot): nothing is
    sent, exit 2 (the person must change something), and the advice is the command's,
    not a notebook's ("restart the kernel" read as a fault to report: review-34)."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("GENWIDGETS_HOME", str(blocker / "home"))
    common = [str(rows_file(tmp_path, 2)), "--endpoint", T2I, "--set", "prompt={text}"]
    common += ["--out", str(tmp_path / "o"), "--yes"]
    with pytest.warns(gw.LedgerWarning, match="ledger is off"):
        code, out, err = run(common)
    assert code == 2 and "Traceback" not in out, err
    assert err.startswith("genwidgets batch: batch ") and "GENWIDGETS_HOME cannot be written" in err
    assert "could not be opened when this command started" in err
    assert err.rstrip().endswith("and run the same command again"), err
    assert "kernel" not in err and "submit()" not in err and "Traceback" not in err
    with pytest.warns(gw.LedgerWarning, match="ledger is off"):
        code, out, err = run([*common, "--json"])
    found = json.loads(out)
    assert code == 2 and found["error_type"] == "NotRecorded", found
    assert found["error"].endswith("run the same command again")
    assert stats(gateway_env)["create"] == 0


def test_failed_rows_exit_1_and_are_listed(gateway_env: SimulatorServer, tmp_path: Path) -> None:
    httpx.put(f"{gateway_env.base_url}/_sim/config", json={"fail_rate": 1.0}, timeout=10)
    code, out, _ = run(
        [str(rows_file(tmp_path, 2)), "--endpoint", T2I, "--set", "prompt={text}",
         "--set", "n=1", "--out", str(tmp_path / "o"), "--yes"]
    )  # fmt: skip
    assert code == 1 and "row 0 (line 2) failed:" in out and "Runtime execution failed" in out


class GoesSilent(OneTaskGateway):
    """A gateway that takes the create, then loses contact: every poll and cancel gets a
    503, until the 10th poll (much later than a command bounded by its --timeout should
    wait), from which on the task is COMPLETED (a gateway that came back)."""

    creates = polls = 0

    def do_POST(self) -> None:
        type(self).creates += 1
        super().do_POST()

    def do_GET(self) -> None:
        type(self).polls += 1
        if self.polls < 10:
            self.send_json({"detail": "upstream unavailable"}, code=503)
        else:
            self.send_json({"request_id": "r1", "status": "COMPLETED", "outputs": []})

    def do_PUT(self) -> None:
        self.send_json({"detail": "upstream unavailable"}, code=503)


def test_a_timeout_with_contact_lost_ends_the_row_unknown_and_the_command_soon_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--timeout`` bounds the command: a row whose task goes silent is asked to cancel
    at its deadline and, with no word of it since, ends ``unknown`` (its request id kept
    for a rerun) a few seconds later; it waited about 40 s (the cancel's grace, then the
    poller's own retries), long past the deadline the user gave."""
    GoesSilent.creates = GoesSilent.polls = 0
    gateway = LoopbackServer(GoesSilent)
    try:
        code, out, _ = run_on(gateway, tmp_path, monkeypatch, "--timeout", "1")
        polls = GoesSilent.polls
    finally:
        gateway.close()
    assert code == 1 and GoesSilent.creates == 1
    assert "row 0 (line 2) unknown: timed out after 1 s; no word of its task" in out
    assert "and its cancel failed (HTTP 503" in out  # its 503s, no class name (review 32)
    [row] = read_manifest(tmp_path / "o").values()
    assert row["status"] == "unknown" and row["request_id"] == "r1"
    assert polls < 8  # it exited long before the gateway came back (its 10th poll)


def child_command(
    sim: SimulatorServer, tmp_path: Path, count: int, concurrency: int
) -> tuple[list[str], dict[str, str], Path]:
    """``genwidgets batch`` over ``count`` rows as a child process runs it: its command,
    its environment (the simulator, a home of its own) and its output folder."""
    env = {
        **os.environ,
        "GENWIDGETS_HOME": str(tmp_path / "home"),
        "GENWIDGETS_BASE_URL": sim.base_url,
        "GENWIDGETS_API_KEY": KEY,
    }
    out = tmp_path / "o"
    command = [sys.executable, "-m", "genwidgets.cli", "batch", str(rows_file(tmp_path, count)),
               "--endpoint", T2I, "--set", "prompt={text}", "--set", "seed={seed}",
               "--set", "n=1", "--out", str(out), "--yes",
               "--concurrency", str(concurrency)]  # fmt: skip
    return command, env, out


def started(command: list[str], env: dict[str, str], out: Path, lines: int) -> Any:
    """The command in a child process, once its manifest holds ``lines`` rows (bounded)."""
    child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(read_manifest(out)) < lines and child.poll() is None:
        time.sleep(0.05)
    if len(read_manifest(out)) < lines:
        child.kill()
        _, err = child.communicate(30)
        raise AssertionError(f"the batch wrote under {lines} manifest rows: {err!r}")
    return child


def run_to_the_end(
    command: list[str], env: dict[str, str], sim: SimulatorServer, out: Path, count: int
) -> tuple[list[dict[str, Any]], dict[int, dict[str, Any]]]:
    """The same command once more, to its end: the simulator made no row's payload
    twice and every row is done or listed unknown; the simulator's tasks and the
    manifest's last line of each row."""
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode in (0, 1), done.stderr
    tasks = httpx.get(f"{sim.base_url}/_sim/tasks", timeout=10).json()
    digests = [t["payload_sha256"] for t in tasks]
    assert len(digests) == len(set(digests))  # no row's payload was created twice
    last = read_manifest(out)
    assert sorted(last) == list(range(count)), done.stdout + done.stderr
    assert {r["status"] for r in last.values()} <= {"done", "unknown"}, done.stdout
    return tasks, last


@pytest.mark.slow
def test_killed_half_way_then_run_again_creates_no_row_twice(
    make_simulator: Callable[..., SimulatorServer], tmp_path: Path
) -> None:
    """The command in a child process, killed with SIGKILL once some rows are created,
    then the same command to the end: the simulator made each row's task once (rows
    lost in flight are listed as unknown, never resent) and every file is there once."""
    sim = make_simulator(create_rate_limit=4)
    count = 24
    command, env, out = child_command(sim, tmp_path, count, concurrency=2)
    child = started(command, env, out, count // 3)
    child.send_signal(signal.SIGKILL)
    child.wait(30)
    _, last = run_to_the_end(command, env, sim, out, count)
    done_rows = [r for r in last.values() if r["status"] == "done"]
    assert len(done_rows) >= count - 4  # at most a chunk (two rounds of 2) is unknown
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert len(pngs) == len(done_rows) and not any("~" in name for name in pngs)


@pytest.mark.slow
def test_two_processes_running_one_batch_together_make_each_row_once(
    make_simulator: Callable[..., SimulatorServer], tmp_path: Path
) -> None:
    """The same command started again in a second process while the first sends: the
    second leaves the rows the first holds (reserved, some not yet sent), takes the rows
    still waiting, and the two make each row's task once; the shared record ends with
    every row done and its file there once."""
    sim = make_simulator(create_rate_limit=2)
    count = 16
    command, env, out = child_command(sim, tmp_path, count, concurrency=4)
    first = started(command, env, out, 2)  # it sends
    try:
        second = subprocess.run(command, env=env, capture_output=True, text=True, timeout=240)
        assert first.wait(240) in (0, 1)
    finally:
        if first.poll() is None:
            first.kill()
    assert second.returncode in (0, 1), second.stderr  # rows the first held: not done here
    # a row the live first process held was its own, not a lost create of a dead one
    assert "no answer was kept" not in second.stdout, second.stdout
    tasks = httpx.get(f"{sim.base_url}/_sim/tasks", timeout=10).json()
    digests = [t["payload_sha256"] for t in tasks]
    assert len(digests) == len(set(digests)) == count  # each row made once, by one of them
    last = read_manifest(out)
    assert sorted(last) == list(range(count))
    assert {r["status"] for r in last.values()} == {"done"}, second.stdout
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert pngs == sorted(name for r in last.values() for name in r["files"])


@pytest.mark.slow
def test_retry_failed_sends_again_only_the_rows_the_gateway_failed(
    gateway_env: SimulatorServer, tmp_path: Path
) -> None:
    httpx.put(f"{gateway_env.base_url}/_sim/config", json={"fail_rate": 1.0}, timeout=10)
    common = [str(rows_file(tmp_path, 3)), "--endpoint", T2I, "--set", "prompt={text}"]
    common += ["--set", "seed={seed}", "--set", "n=1", "--out", str(tmp_path / "o"), "--yes"]
    code, out, _ = run(common)
    assert code == 1 and out.count(" failed: ") == 3
    assert "--retry-failed" in out  # each failed row says what sends it again
    httpx.put(f"{gateway_env.base_url}/_sim/config", json={"fail_rate": 0.0}, timeout=10)
    code, out, _ = run(common)  # the same command: failed rows stay failed, nothing sent
    assert code == 1 and stats(gateway_env)["created"] == 3
    code, out, _ = run([*common, "--retry-failed"])
    assert code == 0, out
    assert stats(gateway_env)["created"] == 6
    assert len(list((tmp_path / "o").glob("*.png"))) == 3


def csv_statuses(out: Path) -> dict[int, str]:
    with open(out / "manifest.csv", encoding="utf-8", newline="") as fh:
        return {int(r["row"]): r["status"] for r in csv.DictReader(fh)}


@pytest.mark.slow
def test_killed_at_many_moments_then_run_to_the_end_pays_each_row_once(
    make_simulator: Callable[..., SimulatorServer], tmp_path: Path
) -> None:
    """SIGKILL at eight seeded moments of one batch (each a fresh process resuming the
    last), then the same command to its end: the simulator made no row twice, every row
    is done or listed, its file there once, and the CSV says what the JSONL says the
    moment the command exits."""
    sim = make_simulator(create_rate_limit=10)
    count = 60
    command, env, out = child_command(sim, tmp_path, count, concurrency=3)
    dice = random.Random(38)
    for _ in range(8):
        child = subprocess.Popen(
            command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + dice.uniform(0.8, 3.0)  # import and plan, then some
        while time.monotonic() < deadline and child.poll() is None:
            time.sleep(0.02)
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    tasks, last = run_to_the_end(command, env, sim, out, count)
    assert csv_statuses(out) == {i: r["status"] for i, r in last.items()}
    done_rows = [r for r in last.values() if r["status"] == "done"]
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert pngs == sorted(name for r in done_rows for name in r["files"])
    assert not any("~" in name for name in pngs)
    assert len(tasks) >= len(done_rows)  # rows listed unknown may have made a task


@pytest.mark.slow
def test_a_set_value_leaves_the_columns_named_like_fields_on(
    gateway_env: SimulatorServer, tmp_path: Path
) -> None:
    """Issue 40.4: ``--set duration=2`` with a ``prompt`` column sends the column."""
    path = tmp_path / "clips.csv"
    path.write_text("prompt\na slow tide\na fast river\n")
    code, out, err = run(
        [str(path), "--endpoint", "vidVq2-text2video", "--set", "duration=2",
         "--out", str(tmp_path / "o"), "--yes", "--json"]
    )  # fmt: skip
    assert code == 0, (out, err)
    assert "Field required" not in out + err
    manifest = read_manifest(tmp_path / "o")
    sent = [manifest[i]["payload"] for i in sorted(manifest)]
    assert sent == [
        {"prompt": "a slow tide", "duration": 2},
        {"prompt": "a fast river", "duration": 2},
    ]


@pytest.mark.slow
def test_ctrl_c_with_the_embedded_simulator_then_the_same_command_then_retry_failed(
    tmp_path: Path,
) -> None:
    """Issue 40.3: no gateway configured, so the command runs the embedded simulator,
    which ends with it. Ctrl-C says so; the same command again finds the interrupted
    rows' tasks gone and says why (once, each id once); --retry-failed makes them."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GENWIDGETS_")}
    env["GENWIDGETS_HOME"] = str(tmp_path / "home")
    out = tmp_path / "o"
    command = [sys.executable, "-m", "genwidgets.cli", "batch", str(rows_file(tmp_path, 8)),
               "--endpoint", T2I, "--set", "prompt={text}", "--set", "seed={seed}",
               "--set", "n=1", "--out", str(out), "--yes", "--concurrency", "2"]  # fmt: skip
    child = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and child.poll() is None:
        if any(r["status"] == "created" for r in read_manifest(out).values()):
            break
        time.sleep(0.05)
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=60)
    assert child.returncode == 130, err
    assert b"embedded simulator ends with this command" in err and b"--retry-failed" in err
    again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=240)
    assert again.returncode == 1, again.stdout + again.stderr
    # a forgotten export must not pass for the real gateway
    assert "simulated: neither GENWIDGETS_BASE_URL nor" in again.stdout
    gone = [line for line in again.stdout.splitlines() if "embedded simulator of a" in line]
    assert gone, again.stdout
    for line in gone:
        assert "cannot be resumed" in line and "--retry-failed" in line
        assert line.count("[") == 1  # its request id, once
        # review 23, fault 11: not "free on the simulator" and "a new create, billed"
        assert "billed" not in line and line.count("--retry-failed") == 1
    last = read_manifest(out)
    assert {r["status"] for r in last.values()} <= {"done", "failed", "unknown"}
    retried = subprocess.run(
        [*command, "--retry-failed"], env=env, capture_output=True, text=True, timeout=240
    )
    last = read_manifest(out)
    assert {r["status"] for r in last.values()} <= {"done", "unknown"}, retried.stdout
    assert retried.returncode in (0, 1), retried.stderr
    pngs = sorted(p.name for p in out.glob("*.png"))
    done = [r for r in last.values() if r["status"] == "done"]
    assert pngs == sorted(name for r in done for name in r["files"])


def sending(sim: SimulatorServer, child: subprocess.Popen[str], out: Path) -> None:
    """Once the batch in ``child`` has created a row (bounded)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and child.poll() is None:
        if any(r["status"] == "created" for r in read_manifest(out).values()):
            return
        time.sleep(0.05)
    raise AssertionError(f"the batch created no row: {child.poll()}")


def every_task_made_is_recorded(sim: SimulatorServer, env: dict[str, str]) -> None:
    """The ledger knows each task the simulator made by its request id (none lost in
    flight, so a re-run re-attaches it)."""
    made = {t["request_id"] for t in httpx.get(f"{sim.base_url}/_sim/tasks", timeout=10).json()}
    history = subprocess.run(
        [sys.executable, "-m", "genwidgets.cli", "history", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert made and made <= {r["request_id"] for r in json.loads(history.stdout)}


@pytest.mark.slow
def test_sigterm_stops_a_batch_as_ctrl_c_does_saying_so_in_its_json(
    make_simulator: Callable[..., SimulatorServer], tmp_path: Path
) -> None:
    """SIGTERM (``timeout``, systemd, ``docker stop``) while rows are sent: the batch stops
    as on Ctrl-C, its one JSON object says so, exit 143; every task made is recorded
    (it died with an empty stdout, its ledger writes still queued)."""
    sim = make_simulator(speed=0.01)  # no task ends while the test runs
    command, env, out = child_command(sim, tmp_path, 8, concurrency=2)
    child = subprocess.Popen(
        [*command, "--json"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        sending(sim, child, out)
        child.send_signal(signal.SIGTERM)
        stdout, stderr = child.communicate(timeout=90)
    finally:
        child.kill()
    assert child.returncode == 143, stderr
    said = json.loads(stdout)  # one object, nothing else
    assert said["error"].startswith("stopped by SIGTERM; tasks already created go on"), said
    assert said["command"] == "batch" and said["id"]
    every_task_made_is_recorded(sim, env)


@pytest.mark.slow
def test_a_reader_that_leaves_stops_a_batch_as_ctrl_c_does_without_a_traceback(
    make_simulator: Callable[..., SimulatorServer], tmp_path: Path
) -> None:
    """``genwidgets batch ... | head -1``: the reader leaves after the first line, once
    rows are sent. The batch stops as on Ctrl-C at its next line (creates in flight
    answer, rows recorded), says so on stderr and exits 141, as a command SIGPIPE ends;
    it died with a BrokenPipeError traceback, exit 1, creates in flight cut."""
    sim = make_simulator(speed=0.01)
    command, env, out = child_command(sim, tmp_path, 8, concurrency=2)
    child = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert child.stdout is not None and child.stderr is not None
    try:
        assert child.stdout.readline().startswith("batch ")  # `head -1`: one line
        sending(sim, child, out)
        child.stdout.close()  # gone: the batch's next line finds no reader
        err = child.stderr.read()
        assert child.wait(90) == 141, err
    finally:
        child.kill()
    assert "Traceback" not in err, err
    assert "its output's reader left; tasks already created go on" in err
    every_task_made_is_recorded(sim, env)


def test_a_grown_rows_file_into_the_same_folder_is_told_flags_that_work(
    gateway_env: SimulatorServer, tmp_path: Path
) -> None:
    """Explorer (pipes) defect 7: a rows file grown by a row, run again into the same
    ``--out``, was told "give out= another folder, or id='rows-...' to resume that
    batch"; following it with ``--id`` was refused again (that batch's rows differ).
    The command says its flags, and the advice it gives is one that works."""
    rows = rows_file(tmp_path, 1)
    argv = [str(rows), "--endpoint", T2I, "--set", "prompt={text}", "--set", "n=1", "--yes"]
    assert run([*argv, "--out", str(tmp_path / "o")])[0] == 0
    with rows.open("a") as more:
        more.write("a heron again,9\n")
    code, _, err = run([*argv, "--out", str(tmp_path / "o")])
    assert code == 2
    assert "; give --out another folder for these rows (batch 'shots-" in err
    assert "resumes in this one only from the rows and --set it was planned with)" in err
    assert "out=" not in err and "id=" not in err
    code, out, _ = run([*argv, "--out", str(tmp_path / "o"), "--json"])  # its JSON too
    [problem] = json.loads(out)["problems"]
    assert problem["msg"].endswith("it was planned with)") and "out=" not in problem["msg"]
    code, out, err = run([*argv, "--out", str(tmp_path / "o2")])  # the advice, followed
    assert code == 0, err


class CreateFails(OneTaskGateway):
    """A gateway whose create answers 500: a task may exist (its outcome unknown)."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_json({"detail": "upstream failed"}, code=500)


def test_a_row_whose_create_may_have_made_a_task_names_the_commands_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Explorer (pipes) defect 7: the command's row line said "look for it with
    client.history()", Python's spelling of ``genwidgets history``."""
    gateway = LoopbackServer(CreateFails)
    try:
        code, out, _ = run_on(gateway, tmp_path, monkeypatch)
    finally:
        gateway.close()
    assert code == 1 and "row 0 (line 2) unknown: " in out
    assert "look for it with genwidgets history" in out and "client.history()" not in out


def test_batch_json_gives_the_commands_advice_as_its_text_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review 11, fault 7: ``--json`` kept the Python advice the text line rewrote
    (``"next": "... client.history()"``): a script read Python words."""
    gateway = LoopbackServer(CreateFails)
    try:
        code, out, _ = run_on(gateway, tmp_path, monkeypatch, "--json")
    finally:
        gateway.close()
    [row] = json.loads(out)["not_done"]
    assert code == 1 and row["status"] == "unknown"
    assert row["next"].endswith("look for it with genwidgets history"), row["next"]
    assert "client.history()" not in out


@pytest.mark.parametrize("name", ["id=", "out= rows.csv"])
def test_a_rows_file_name_is_said_as_the_user_gave_it(name: str, tmp_path: Path) -> None:
    """Review 11, fault 3: the command's flag words rewrote a user's file name too: a
    rows file named ``id=`` was said as ``'--id '``."""
    argv = [str(tmp_path / name), "--endpoint", T2I, "--set", "prompt={text}"]
    code, _, err = run([*argv, "--out", str(tmp_path / "o")])
    assert code == 2 and f"{tmp_path / name}" in err, err


def test_a_paused_batch_says_to_run_the_command_again_not_batch_submit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Explorer (pipes) defect 7: a batch paused by creates that kept failing said
    "Nothing more is sent until batch.submit() (the view's Submit or Go on, ...)"."""
    gateway = LoopbackServer(OneTaskGateway)
    gateway.close()  # its port refuses from now on
    code, out, _ = run_on(gateway, tmp_path, monkeypatch)
    assert code == 1 and "Nothing more is sent until the same command is run again" in out
    assert "submit()" not in out


def test_the_progress_lines_of_a_paused_batch_use_the_commands_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every line the command prints, its progress lines too, says the command's words,
    not "batch.submit() (the view's Submit ...)"; and rows a pause keeps from being sent
    are "waiting (not sent)", not "queued" (review-20 fault 3)."""
    gateway = LoopbackServer(OneTaskGateway)
    gateway.close()  # its port refuses from now on
    code, out, _ = run_on(gateway, tmp_path, monkeypatch, rows=8)
    progress = capsys.readouterr().out  # the progress lines go to the process's stdout
    assert code == 1 and "paused" in out
    lines = [line for line in progress.splitlines() if line.startswith("batch ")]
    assert lines, progress
    assert all("submit()" not in line and "the view's" not in line for line in lines), lines
    assert "Nothing more is sent until the same command is run again" in lines[-1]
    assert "8 waiting (not sent)" in lines[-1] and "queued" not in lines[-1], lines[-1]


def test_an_out_folder_whose_path_is_not_utf_8_is_refused_not_a_traceback(
    tmp_path: Path,
) -> None:
    """Review 23, fault 5: ``--out`` under a folder whose name is not UTF-8 (byte 0xff, a
    lone surrogate to Python) ended the command in a bare traceback: the batch's record
    cannot keep such a path. It is refused, exit 2, nothing sent."""
    common = [str(rows_file(tmp_path, 1)), "--endpoint", T2I, "--set", "prompt={text}"]
    code, out, err = run([*common, "--out", str(tmp_path / "shots\udcff"), "--yes"])
    assert code == 2 and out == "" and "is not UTF-8" in err and "nothing sent" in err
    assert not (tmp_path / "shots\udcff").exists()


@pytest.mark.slow
def test_an_out_path_of_bytes_not_utf_8_on_the_command_line_is_refused_up_front(
    tmp_path: Path,
) -> None:
    """clifold, item 4: ``--out`` as bytes a shell passes that are not UTF-8
    (``os.fsencode``: byte 0xe9 of a Latin-1 ``café``, a folder above the batch's) is
    refused before anything is planned or made, exit 2, in words on a strict UTF-8
    stderr, not a late failure of the batch's store or manifest: the batch command
    already refused it (review 23, fault 5), in a real process too; it named the folder
    by its last name alone (``--out shots``), not the name that is not UTF-8."""
    out = os.fsencode(tmp_path) + b"/caf\xe9/shots"
    rows = rows_file(tmp_path, 1)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GENWIDGETS_")}
    env |= {"GENWIDGETS_HOME": str(tmp_path / "home"), "PYTHONIOENCODING": "utf-8:strict"}
    argv = ["batch", str(rows), "--endpoint", T2I, "--set", "prompt={text}", "--yes"]
    done = subprocess.run(
        [sys.executable, "-m", "genwidgets.cli", *map(os.fsencode, argv), b"--out", out],
        env=env,
        cwd=Path(gw.__file__).parents[1],
        capture_output=True,
        timeout=50,
        check=False,
    )
    err = done.stderr.decode()
    assert done.returncode == 2, err
    assert "is not UTF-8 (the name caf\\udce9)" in err and "nothing sent" in err, err
    assert "Traceback" not in err and done.stdout == b""
    assert not os.path.exists(os.fsencode(tmp_path) + b"/caf\xe9")


def test_an_unknown_endpoint_is_said_in_the_commands_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Review 23, fault 9: "(gw.endpoints() lists them)", Python's words, and the command
    listed no endpoint. Its help lists them, and the refusal says so."""
    common = [str(rows_file(tmp_path, 1)), "--endpoint", "genW2.5-t2i", "--set", "prompt={text}"]
    code, _, err = run([*common, "--out", str(tmp_path / "o"), "--yes"])
    assert code == 2 and "did you mean 'genW2.5-t2i-preview'?" in err
    assert "gw." not in err and "(genwidgets batch --help lists them)" in err
    with pytest.raises(SystemExit):
        build_parser().parse_args(["batch", "--help"])
    assert T2I in capsys.readouterr().out
