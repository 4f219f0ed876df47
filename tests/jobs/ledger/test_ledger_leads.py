"""The ledger's pending notes merged at scale, and the leads of an earlier review
(ledgermend6): a merge of thousands of notes keeps what each note records, in work
linear in the notes; a row id handed to a create names its own intent's row, never
another's, when two intents share a clock's tick and when the file is set aside under
a create in flight."""

from __future__ import annotations

import json
import logging
import os
import random
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from reliability.harness import damage_root_page, wait_until

import genwidgets
from genwidgets.errors import LedgerWarning
from genwidgets.jobs.ledger import Ledger
from genwidgets.jobs.ledger.file import merge_notes
from genwidgets.protocol.records import Handle

ENDPOINT = "asset-get"
GATEWAY = "http://gw"
#: the processes whose notes share one pending file: two hosts, the same pid on both,
#: every process numbering its tickets from -1
PROCESSES = [("host-a", 100), ("host-a", 200), ("host-b", 100), ("host-b", 300)]
#: what becomes of an intent, by its ticket (see :func:`_scenario`)
KINDS = ("handle", "twice", "never", "unknown", "merged before", "task known", "bare")


def _intent(host: str, pid: int, ticket: int) -> dict[str, Any]:
    at = 1_000_000.0 + pid + ticket / 8  # two processes may share a time, not a process
    return {
        "ticket": ticket,
        "gateway": "http://gw",
        "endpoint": ENDPOINT,
        "payload": json.dumps({"n": ticket}),
        "tag": None,
        "at": at,
        "key": None,
        "pid": pid,
        "host": host,
    }


def _handle(intent: dict[str, Any], request_id: str, *, by_time: bool = False) -> dict[str, Any]:
    note = {
        "row": intent["ticket"],
        "request_id": request_id,
        "endpoint": ENDPOINT,
        "at": intent["at"] + 1,
        "status_url": None,
        "response_url": None,
        "cancel_url": None,
        "pid": intent["pid"],
        "host": intent["host"],
    }
    if by_time:  # its intent's note was merged (and its file removed) before
        note.update(intent_at=intent["at"], intent_endpoint=ENDPOINT)
    return note


def _failed(intent: dict[str, Any], nothing: bool) -> dict[str, Any]:
    return {
        "failed": intent["ticket"],
        "error": f"refused {intent['ticket']}",
        "created_nothing": nothing,
        "at": intent["at"] + 1,
        "pid": intent["pid"],
        "host": intent["host"],
    }


def _scenario(
    per_process: int, seed: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[tuple[str, int, int], tuple[Any, ...]]]:
    """The notes an earlier merge recorded, the notes of the pending file (each process's
    in its order, the processes interleaved), and what each intent's row must hold:
    (rows, request_id, state, error)."""
    earlier: list[dict[str, Any]] = []
    streams: list[list[dict[str, Any]]] = []
    expected: dict[tuple[str, int, int], tuple[Any, ...]] = {}
    for host, pid in PROCESSES:
        stream: list[dict[str, Any]] = []
        for n in range(1, per_process + 1):
            ticket = -n
            intent = _intent(host, pid, ticket)
            paid = f"{host}-{pid}-{n}"
            kind = KINDS[n % len(KINDS)]
            if kind == "handle":  # its intent, then its handle: a paid task on its row
                stream += [intent, _handle(intent, paid)]
                expected[(host, pid, ticket)] = (1, paid, "submitted", None)
            elif kind == "twice":  # kept as held, then again at exit: one row, one task
                stream += [intent, _handle(intent, paid), dict(intent), _handle(intent, paid)]
                expected[(host, pid, ticket)] = (1, paid, "submitted", None)
            elif kind in ("never", "unknown"):
                stream += [intent, _failed(intent, kind == "never")]
                state = "not_created" if kind == "never" else "outcome_unknown"
                expected[(host, pid, ticket)] = (1, None, state, f"refused {ticket}")
            elif kind == "merged before":  # found by its time: still one row
                earlier.append(intent)
                stream.append(_handle(intent, paid, by_time=True))
                expected[(host, pid, ticket)] = (1, paid, "submitted", None)
            elif kind == "task known":  # another row holds the task: this one stays bare
                attached = _intent(host, pid, ticket - 10**6)
                earlier += [attached, _handle(attached, paid)]
                stream += [intent, _handle(intent, paid)]
                expected[(host, pid, ticket)] = (1, None, "submitting", None)
            else:  # an intent alone: its process went before the create's end
                stream.append(intent)
                expected[(host, pid, ticket)] = (1, None, "submitting", None)
        streams.append(stream)
    rng, notes = random.Random(seed), []
    while any(streams):
        stream = rng.choice([s for s in streams if s])
        notes.append(stream.pop(0))
    return earlier, notes, expected


def _rows(path: Path) -> dict[tuple[str, int, int], list[tuple[Any, ...]]]:
    """The rows of the scenario's intents by (host, pid, ticket)."""
    found: dict[tuple[str, int, int], list[tuple[Any, ...]]] = {}
    with sqlite3.connect(path) as conn:
        for host, pid, payload, request_id, state, error in conn.execute(
            "SELECT host, pid, payload, request_id, state, error FROM tasks ORDER BY id"
        ):
            ticket = json.loads(payload)["n"]
            found.setdefault((host, pid, ticket), []).append((request_id, state, error))
    return found


def test_a_pending_file_of_thousands_of_notes_merges_as_each_note_says(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Four processes' notes in one pending file (their tickets the same numbers), some
    kept twice, some whose intent an earlier merge recorded, some whose task another
    row holds: each intent gets one row, each paid task the row of its own intent, each
    failure its own row, and the file is removed once written."""
    path = tmp_path / "ledger.sqlite3"
    earlier, notes, expected = _scenario(per_process=700, seed=6)
    assert len(notes) > 3000
    with Ledger(path) as ledger, ledger.transaction() as conn:
        merge_notes(earlier)(conn)
    pending = path.with_name(path.name + ".pending.jsonl")
    pending.write_text("".join(json.dumps(note) + "\n" for note in notes))
    with caplog.at_level(logging.INFO, logger="genwidgets"), Ledger(path) as ledger:
        assert ledger.flush(60)
    rows = _rows(path)
    for key, (count, request_id, state, error) in expected.items():
        assert rows.get(key, [])[:count] == [(request_id, state, error)], key
        assert len(rows[key]) == count, key
    handles = sum(1 for want in expected.values() if want[1] is not None)
    failures = sum(1 for want in expected.values() if want[3] is not None)
    said = [r.getMessage() for r in caplog.records if "recorded" in r.getMessage()]
    assert said and said[0].startswith(f"genwidgets: recorded {handles + failures} task(s)")
    assert not pending.exists()


def _merge_steps(notes: list[dict[str, Any]], tmp_path: Path) -> int:
    """SQLite's virtual-machine steps (in thousands) a merge of ``notes`` takes on a
    fresh ledger: the work done in the file, counted, never timed."""
    path = tmp_path / f"steps-{len(notes)}.sqlite3"
    Ledger(path).close()
    steps = 0

    def step() -> int:
        nonlocal steps
        steps += 1
        return 0

    with Ledger(path) as ledger, ledger.transaction() as conn:
        conn.set_progress_handler(step, 1000)
        try:
            merge_notes(notes)(conn)
        finally:
            conn.set_progress_handler(None, 0)
    return steps


def test_a_merge_does_not_look_through_the_table_once_per_note(tmp_path: Path) -> None:
    """Four times the notes, four times the work in the file (not sixteen): a pending
    file of thousands of held creates (a long lock, a read-only home) is merged at the
    next open without one scan of the table per note."""
    _, small, _ = _scenario(per_process=150, seed=1)
    _, large, _ = _scenario(per_process=600, seed=1)
    ratio = _merge_steps(large, tmp_path) / max(1, _merge_steps(small, tmp_path))
    assert ratio < 8, f"4x the notes took {ratio:.1f}x the steps"


def test_two_held_creates_of_one_instant_each_keep_their_paid_task(tmp_path: Path) -> None:
    """Two creates whose intents a lock held, made within one tick of a coarse clock
    (Windows' ``time.time()`` before Python 3.13 ticks every 15.6 ms): their intents'
    notes were kept beside the file, and once the lock freed the second intent took
    the first's row as "recorded from its note" (an intent is named by its process,
    time and endpoint), so the second paid task's handle replaced the first's on that
    row: the first task was in no row. Each create has its own row, each task its own."""
    path = tmp_path / "ledger.sqlite3"
    Ledger(path).close()
    pending = path.with_name(path.name + ".pending.jsonl")
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process's lock
    try:
        with Ledger(path, busy_timeout=0.2, intent_wait=0, clock=lambda: 1_000_000.0) as led:
            tickets = [
                led.writes.record_intent(gateway=GATEWAY, endpoint=ENDPOINT, payload={"n": n})
                for n in (1, 2)
            ]
            wait_until(
                lambda: pending.exists() and pending.read_text().count('"ticket"') == 2,
                30,
                "both intents kept beside the file",
            )
            holder.execute("ROLLBACK")  # the lock frees
            for n, ticket in zip((1, 2), tickets, strict=True):
                led.writes.record_handle(
                    ticket, Handle.from_body(ENDPOINT, {"request_id": f"paid-{n}"}, GATEWAY)
                )
            assert led.flush(30)
    finally:
        holder.close()
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT payload, request_id FROM tasks ORDER BY id").fetchall()
    assert sorted((json.loads(p)["n"], r) for p, r in rows) == [(1, "paid-1"), (2, "paid-2")]


def test_a_pending_file_keeps_two_intents_of_one_instant_apart(tmp_path: Path) -> None:
    """The notes a process left at exit, two of its creates made within one tick of a
    coarse clock: merged, each intent is its own row and each handle reaches its own
    (the second intent was read as the first's copy, and its paid task was dropped)."""
    path = tmp_path / "ledger.sqlite3"
    Ledger(path).close()
    pending = path.with_name(path.name + ".pending.jsonl")
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        led = Ledger(path, busy_timeout=0.2, intent_wait=0, clock=lambda: 1_000_000.0)
        for n in (1, 2):
            ticket = led.writes.record_intent(gateway=GATEWAY, endpoint=ENDPOINT, payload={"n": n})
            led.writes.record_handle(
                ticket, Handle.from_body(ENDPOINT, {"request_id": f"paid-{n}"}, GATEWAY)
            )
        with pytest.warns(LedgerWarning, match="NOT recorded"):
            led.close()  # the lock outlasts the wait: the notes are left behind
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert pending.exists()
    with Ledger(path) as fresh:
        assert fresh.flush(30)
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT payload, request_id FROM tasks ORDER BY id").fetchall()
    assert sorted((json.loads(p)["n"], r) for p, r in rows) == [(1, "paid-1"), (2, "paid-2")]


def test_a_create_in_flight_when_its_ledger_is_set_aside_keeps_its_paid_task(
    tmp_path: Path,
) -> None:
    """A damaged ledger moved aside while a create was in flight: the fresh file numbered
    its rows from 1 again, so the create's row id (1, of the file set aside) named the
    next create's row there; the first paid task's handle landed on it, the second's
    replaced it, and the first task was in no row. Each task now reaches a row of its own
    intent (made again in the fresh file), never another create's."""
    path = tmp_path / "ledger.sqlite3"
    with Ledger(path, intent_wait=30) as led:
        first = led.writes.record_intent(gateway=GATEWAY, endpoint=ENDPOINT, payload={"n": 1})
        assert first > 0 and led.flush(30)
        damage_root_page(path, "tasks")  # under the open ledger, its create in flight
        with pytest.warns(LedgerWarning, match="is damaged .* moved to"):
            second = led.writes.record_intent(gateway=GATEWAY, endpoint=ENDPOINT, payload={"n": 2})
        assert led.set_aside is not None
        for n, row in ((1, first), (2, second)):
            led.writes.record_handle(
                row, Handle.from_body(ENDPOINT, {"request_id": f"paid-{n}"}, GATEWAY)
            ).result(timeout=30)
        assert led.flush(30)
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT payload, request_id, state FROM tasks").fetchall()
    assert sorted((json.loads(p)["n"], r, s) for p, r, s in rows) == [
        (1, "paid-1", "submitted"),
        (2, "paid-2", "submitted"),
    ]


@pytest.mark.parametrize("outcome", ["paid", "unknown"])
def test_a_create_whose_own_outcome_write_finds_its_ledger_damaged_keeps_its_row(
    tmp_path: Path, outcome: str
) -> None:
    """The create in flight's own outcome write (its handle, or "outcome unknown": sent,
    no answer, maybe paid) is the write that finds the file damaged: the file is set
    aside and the write tried again in a fresh one, but the failed first try had
    forgotten the create's intent, so the retry found "no ledger row 1" and the task was
    in no row of any file (review-29). The retry makes its intent again there."""
    path = tmp_path / "ledger.sqlite3"
    with (
        pytest.warns(LedgerWarning, match="is damaged .* moved to"),
        Ledger(path, intent_wait=30) as led,
    ):
        first = led.writes.record_intent(gateway=GATEWAY, endpoint=ENDPOINT, payload={"n": 1})
        assert first > 0 and led.flush(30)
        damage_root_page(path, "tasks")  # under the open ledger, its create in flight
        if outcome == "paid":
            written = led.writes.record_handle(
                first, Handle.from_body(ENDPOINT, {"request_id": "paid-1"}, GATEWAY)
            )
        else:
            written = led.writes.record_create_failed(
                first, "sent, no answer: a task may exist", created_nothing=False
            )
        written.result(timeout=30)
        assert led.flush(30) and led.set_aside is not None
        assert not led.writes.sending(first)  # settled once its outcome is written
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT payload, request_id, state FROM tasks").fetchall()
    want = ("paid-1", "submitted") if outcome == "paid" else (None, "outcome_unknown")
    assert [(json.loads(p)["n"], r, s) for p, r, s in rows] == [(1, *want)]


#: a kernel whose ledger is set aside under its create in flight (row 1), then held by a
#: lock past ``busy_timeout``: the create's handle is kept beside the file as a note, and
#: the kernel waits to be killed
SETS_ASIDE = textwrap.dedent(
    """
    import sqlite3, sys, warnings
    from pathlib import Path
    from reliability.harness import damage_root_page
    from genwidgets.jobs.ledger import Ledger
    from genwidgets.protocol.records import Handle
    warnings.simplefilter("ignore")
    path = Path(sys.argv[1])
    led = Ledger(path, intent_wait=30, busy_timeout=0.2)
    first = led.writes.record_intent(gateway="http://gw", endpoint="asset-get", payload={"n": 1})
    assert led.flush(30)  # a ticket if its open's own writes held the file past 0.2 s
    first = led.writes.row_of(first)
    assert first == 1
    damage_root_page(path, "tasks")  # the disk fails, its create in flight
    led.writes.record_intent(gateway="http://gw", endpoint="asset-get", payload={"n": 2})
    assert led.flush(30) and led.set_aside is not None
    """
)
SETS_ASIDE_THEN_KEEPS_A_HANDLE = SETS_ASIDE + textwrap.dedent(
    """
    other = sqlite3.connect(path, isolation_level=None)  # a lock held past busy_timeout
    other.execute("BEGIN EXCLUSIVE")
    led.writes.record_handle(first, Handle.from_body("asset-get", {"request_id": "paid-1"}, "http://gw"))
    print("answered", flush=True)
    sys.stdin.readline()
    """
)


@pytest.mark.timeout(120)
def test_a_handle_kept_as_a_note_after_its_ledger_was_set_aside_survives_kill_9(
    tmp_path: Path,
) -> None:
    """A create in flight when its damaged ledger was set aside; its handle, held by a
    lock, kept beside the file as a note naming row 1 (of the file set aside), and the
    kernel killed. The next open found no row 1 in the fresh file (it numbers past it),
    merged nothing and removed the pending file: the paid task was in no row (review-29).
    The note carries its intent, made again with the task on it."""
    path = tmp_path / "ledger.sqlite3"
    pending = path.with_name(path.name + ".pending.jsonl")
    here = [str(Path(genwidgets.__file__).parents[1]), str(Path(__file__).parents[2])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(here)}
    kernel = subprocess.Popen(
        [sys.executable, "-c", SETS_ASIDE_THEN_KEEPS_A_HANDLE, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert kernel.stdout is not None
    try:
        assert kernel.stdout.readline() == "answered\n"
        wait_until(
            lambda: pending.exists() and "paid-1" in pending.read_text(), 60, "the handle kept"
        )
        kernel.kill()  # SIGKILL: its writes never reach the file
        kernel.wait(30)
    finally:
        if kernel.poll() is None:
            kernel.kill()
        kernel.communicate(timeout=30)
    with Ledger(path) as fresh:
        assert fresh.flush(30)
        rows = sorted((r.payload["n"], r.request_id, r.state) for r in fresh.rows())
    assert rows == [(1, "paid-1", "submitted"), (2, None, "outcome_unknown")]
    assert not pending.exists()  # merged, so removed


SETS_ASIDE_THEN_ANSWERS_WHEN_TOLD = SETS_ASIDE + textwrap.dedent(
    """
    outcome = sys.argv[2]
    print("set aside", flush=True)
    sys.stdin.readline()  # the test holds a lock now
    if outcome == "handle":
        led.writes.record_handle(first, Handle.from_body("asset-get", {"request_id": "paid-1"}, "http://gw"))
    else:
        led.writes.record_create_failed(first, "no answer", created_nothing=False)
    print("answered", flush=True)
    sys.stdin.readline()  # the lock freed
    print("flushed", led.flush(60), flush=True)
    led.close()
    """
)


@pytest.mark.timeout(180)
@pytest.mark.parametrize(
    ("outcome", "expected"),
    [("handle", ("paid-1", "submitted")), ("failed", (None, "outcome_unknown"))],
)
def test_a_held_outcome_finds_the_intent_another_open_made_again_from_its_note(
    tmp_path: Path, outcome: str, expected: tuple[str | None, str]
) -> None:
    """A create in flight when its damaged ledger was set aside; its outcome held by a
    lock and kept as a note carrying its intent; another process's open merged that
    note (the intent made again, the outcome on it) before the held write landed. The
    held write made the intent again a second time: one paid task on two rows
    (review-30). The merge runs here inside the lock, so the order is always that one."""
    path = tmp_path / "ledger.sqlite3"
    pending = path.with_name(path.name + ".pending.jsonl")
    here = [str(Path(genwidgets.__file__).parents[1]), str(Path(__file__).parents[2])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(here)}
    kernel = subprocess.Popen(
        [sys.executable, "-c", SETS_ASIDE_THEN_ANSWERS_WHEN_TOLD, str(path), outcome],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert kernel.stdin is not None and kernel.stdout is not None
    try:
        assert kernel.stdout.readline() == "set aside\n"
        other = sqlite3.connect(path, isolation_level=None, timeout=30)
        other.execute("BEGIN EXCLUSIVE")  # held past the kernel's busy_timeout
        kernel.stdin.write("\n")
        kernel.stdin.flush()
        assert kernel.stdout.readline() == "answered\n"
        wait_until(
            lambda: pending.exists() and '"intent_payload"' in pending.read_text(), 60, "kept"
        )
        notes = [json.loads(line) for line in pending.read_text().splitlines()]
        assert merge_notes(notes)(other) == 1  # another open's merge, first
        other.execute("COMMIT")
        other.close()
        kernel.stdin.write("\n")
        kernel.stdin.flush()
        assert kernel.stdout.readline() == "flushed True\n"
    finally:
        if kernel.poll() is None:
            kernel.kill()
        kernel.communicate(timeout=30)
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT payload, request_id, state FROM tasks").fetchall()
    assert sorted((json.loads(p)["n"], *rest) for p, *rest in rows) == [
        (1, *expected),
        (2, None, "submitting"),
    ]


def test_a_note_naming_a_row_the_ledger_does_not_have_is_never_dropped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Notes naming rows of a file set aside since: a create of unknown outcome (maybe
    paid) carrying its intent gets that intent made again with its outcome; a handle
    carrying too little to make its row keeps the pending file, and a warning says so
    (both were merged into nothing and the file removed: the tasks in no row)."""
    path = tmp_path / "ledger.sqlite3"
    Ledger(path).close()
    where = {"pid": 4242, "host": "another-host"}
    carried = {
        "intent_at": 1_000_000.0,
        "intent_endpoint": ENDPOINT,
        "intent_gateway": GATEWAY,
        "intent_payload": json.dumps({"n": 1}),
        "intent_tag": None,
        "intent_key": None,
    }
    unknown = {"failed": 7, "error": "no answer", "created_nothing": False, "at": 1_000_001.0}
    bare = {"row": 8, "request_id": "paid-8", "endpoint": ENDPOINT, "at": 1_000_002.0}
    notes = [{**unknown, **carried, **where}, {**bare, **where}]
    pending = path.with_name(path.name + ".pending.jsonl")
    pending.write_text("".join(json.dumps(note) + "\n" for note in notes))
    with caplog.at_level(logging.INFO, logger="genwidgets"), Ledger(path) as led:
        assert led.flush(30)
        wait_until(lambda: any("paid-8" in r.getMessage() for r in caplog.records), 30, "said")
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT payload, state, error, pid, host FROM tasks").fetchall()
    assert [(json.loads(p), *rest) for p, *rest in rows] == [
        ({"n": 1}, "outcome_unknown", "no answer", 4242, "another-host")
    ]
    assert "paid-8" in path.with_name(path.name + ".unplaced.jsonl").read_text()


def test_a_note_placed_on_no_row_is_kept_aside_once_and_listed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Notes placed on no row (a handle and a maybe-paid failed create naming a row this
    file lacks, carrying no intent: as written before ledgermend7) kept the pending file
    for ever: warned at every open, later notes never cleared (review-30). They are moved
    once to a kept file beside the ledger, said in one warning, listed, never merged."""
    path = tmp_path / "ledger.sqlite3"
    Ledger(path).close()
    where = {"pid": 4242, "host": "another-host"}
    bare = {"row": 8, "request_id": "paid-8", "endpoint": ENDPOINT, "at": 1_000_002.0}
    bare.update(status_url=None, response_url=None, cancel_url=None)
    unknown = {"failed": 9, "error": "no answer", "created_nothing": False, "at": 1_000_003.0}
    pending = path.with_name(path.name + ".pending.jsonl")
    kept = path.with_name(path.name + ".unplaced.jsonl")
    pending.write_text(
        json.dumps({**bare, **where}) + "\n" + json.dumps({**unknown, **where}) + "\n"
    )

    def said() -> list[str]:
        return [r.getMessage() for r in caplog.records if "kept aside" in r.getMessage()]

    with caplog.at_level(logging.WARNING, logger="genwidgets"):
        with Ledger(path) as led:
            assert led.flush(30)
            wait_until(lambda: not pending.exists() and said(), 30, "the notes moved, said")
        with Ledger(path) as led:
            assert led.flush(30)
            listed = [(e, rid, pid, host) for e, rid, _at, pid, host in led.kept_aside()]
    assert len(said()) == 1 and str(kept) in said()[0] and "paid-8" in said()[0]
    assert not pending.exists()
    assert listed == [
        (ENDPOINT, "paid-8", 4242, "another-host"),
        (None, None, 4242, "another-host"),
    ]
    assert [json.loads(line).get("request_id") for line in kept.read_text().splitlines()] == [
        "paid-8",
        None,
    ]


def test_notes_with_odd_times_or_no_process_are_listed_by_history_and_its_json(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Notes a stray writer or a damaged disk left with a time no clock shows (NaN, inf,
    1e300, JSON reads them all) and a handle naming no process: `genwidgets history`
    failed at every run ("Invalid value NaN"), `--json` listed none of the paid tasks a
    terminal sees, and the text said "process None on None" (review-31). Each is kept,
    its time unknown, and listed in both."""
    from genwidgets.cli import main

    home = tmp_path / "home"
    path = home / "ledger.sqlite3"
    Ledger(path).close()
    notes = [
        {"row": 8, "request_id": "paid-nan", "endpoint": ENDPOINT, "at": float("nan")},
        {"row": 9, "request_id": "paid-huge", "endpoint": ENDPOINT, "at": 1e300},
        {"row": 10, "request_id": "paid-old", "endpoint": ENDPOINT, "at": 1_000_000.0},
        {"failed": 11, "error": "no answer", "created_nothing": False, "at": float("inf")}
        | {"pid": 4242, "host": "another-host"},
    ]
    pending = path.with_name(path.name + ".pending.jsonl")
    pending.write_text("".join(json.dumps(note) + "\n" for note in notes))
    monkeypatch.setenv("GENWIDGETS_HOME", str(home))
    monkeypatch.setenv("GENWIDGETS_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("GENWIDGETS_API_KEY", "key-of-no-gateway")
    with caplog.at_level(logging.WARNING, logger="genwidgets"):
        assert main(["history"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4 and all(" kept aside " in line for line in lines), lines
    assert "None" not in "".join(lines) and "an earlier process" in lines[0]
    assert [line.startswith("(time unknown) ") for line in lines] == [True, True, False, True]
    assert "process 4242 on another-host" in lines[3] and "maybe paid" in lines[3]
    assert sum("no readable time" in r.getMessage() for r in caplog.records) == 3
    assert main(["history", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(r["request_id"], r["state"]) for r in listed] == [
        ("paid-nan", "kept_aside"),
        ("paid-huge", "kept_aside"),
        ("paid-old", "kept_aside"),
        (None, "kept_aside"),
    ]
    assert [r["submitted_at"] for r in listed] == [None, None, "1970-01-12T13:46:40Z", None]
    assert (listed[3]["pid"], listed[3]["host"]) == (4242, "another-host")
    assert main(["history", "--status", "COMPLETED", "--json"]) == 0  # no status word
    assert json.loads(capsys.readouterr().out) == []


def test_a_handle_note_naming_its_process_in_odd_types_is_listed_with_none(
    tmp_path: Path,
) -> None:
    """A handle note need not carry its pid and host, and a stray writer's may be of any
    type: the ledger lists the note with neither rather than hand a command a pid that is
    text (asking whether process "x" lives raised)."""
    path = tmp_path / "ledger.sqlite3"
    Ledger(path).close()
    odd = {"row": 8, "request_id": "paid-8", "endpoint": ENDPOINT, "at": 1_000_002.0}
    odd.update(pid="4242", host=7)
    path.with_name(path.name + ".pending.jsonl").write_text(json.dumps(odd) + "\n")
    with Ledger(path) as led:
        assert led.flush(30)
        wait_until(lambda: bool(led.kept_aside()), 30, "the note kept aside")
        assert [(rid, pid, host) for _e, rid, _at, pid, host in led.kept_aside()] == [
            ("paid-8", 4242, None)  # a pid in digits is a pid; a host that is no text is none
        ]


def test_a_full_disk_cutting_the_move_of_unplaced_notes_leaves_their_file_whole(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Notes placed on no row are appended to the kept file beside the ledger; an append
    a full disk stops partway is cut back to the size before it, as the pending notes'
    is: the kept file ends at a line's end, its earlier notes intact, and the notes stay
    pending, moved whole by the next open (a torn line was left there, and the next
    note glued onto it was lost)."""
    from genwidgets.jobs.ledger import file

    path = tmp_path / "ledger.sqlite3"
    Ledger(path).close()
    where = {"pid": 4242, "host": "another-host"}
    earlier = {"row": 7, "request_id": "paid-7", "endpoint": ENDPOINT, "at": 1_000_001.0}
    bare = {"row": 8, "request_id": "paid-8", "endpoint": ENDPOINT, "at": 1_000_002.0}
    pending = path.with_name(path.name + ".pending.jsonl")
    kept = path.with_name(path.name + ".unplaced.jsonl")
    kept.write_text(json.dumps({**earlier, **where}) + "\n")
    before = kept.read_bytes()
    pending.write_text(json.dumps({**bare, **where}) + "\n")
    real_write, cut = os.write, []

    def full_disk(fd: int, data: bytes) -> int:
        if os.fstat(fd).st_ino != kept.stat().st_ino:
            return real_write(fd, data)
        if not cut:  # half of it lands, then the disk is full
            cut.append(real_write(fd, bytes(data)[: len(data) // 2]))
            return cut[0]
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(file.os, "write", full_disk)
    with caplog.at_level(logging.WARNING, logger="genwidgets"), Ledger(path) as led:
        assert led.flush(30)
        wait_until(lambda: any("kept aside" in r.getMessage() for r in caplog.records), 30, "said")
    monkeypatch.undo()
    assert cut and cut[0] > 0  # the append was torn
    assert kept.read_bytes() == before  # cut back to its earlier notes, at a line's end
    assert "paid-8" in pending.read_text()  # kept for the next open
    with Ledger(path) as led:
        assert led.flush(30)
        wait_until(lambda: not pending.exists(), 30, "the notes moved")
    assert [json.loads(line)["request_id"] for line in kept.read_text().splitlines()] == [
        "paid-7",
        "paid-8",
    ]
