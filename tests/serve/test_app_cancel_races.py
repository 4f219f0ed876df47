"""Two cancels of one task through the class gateway at once, their order forced: a
cancel upstream accepted holds whichever request sent it, and one that failed undoes
nothing another took (docs/decisions.md#serve-reservations). On SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest
from loopback import LoopbackServer, OneTaskGateway
from serve_helpers import TEACHER_KEY

from genwidgets.errors import ServeError
from genwidgets.serve import ClassServer, Database, ServeConfig, Upstream, budgets
from genwidgets.serve import db as db_module
from genwidgets.serve.budgets import tasks_of
from genwidgets.serve.keys import add_key
from genwidgets.serve.sweep import claim, give_up_sending
from genwidgets.serve.usage import usage

IMAGE = "genW2.5-t2i-preview"
ONE = {"prompt": "a red fox", "n": 1}
#: generous: the machine is shared and noisy
DEADLINE = 120.0
LIMITED = json.dumps({"error": {"code": "RATE_LIMIT_EXCEEDED", "message": "Rate limit"}})


class HeldFirstCancel(OneTaskGateway):
    """Upstream of one task: its first cancel waits for ``release`` and then answers
    ``first`` (the replicate dialect's rate limit under a 503: a refusal); every later
    cancel is accepted. Its status says the task runs until a cancel was accepted, then
    that it ended as ``ended`` says."""

    first = (503, LIMITED.encode())
    ended: dict[str, Any] = {}
    arrived = threading.Event()
    release = threading.Event()
    lock = threading.Lock()
    puts = 0
    accepted = False

    def do_GET(self) -> None:
        cls = type(self)
        if cls.accepted:
            self.send_json({"request_id": "r1", "status": "COMPLETED", **cls.ended})
        else:
            self.send_json({"request_id": "r1", "status": "IN_PROGRESS"})

    def do_PUT(self) -> None:
        cls = type(self)
        with cls.lock:
            number, cls.puts = cls.puts, cls.puts + 1
        if number == 0:
            cls.arrived.set()
            cls.release.wait(DEADLINE)
            status, body = cls.first
        else:
            cls.accepted = True
            status, body = 200, b'{"status": "CANCELLATION_REQUESTED"}'
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class FirstCancelNeverLeaves(Upstream):
    """The loopback upstream, but the first cancel is held until ``release`` and then
    never leaves (no connection: ``sent`` False), as an unreachable upstream's."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cancels = 0

    async def send(self, method: str, path: str, body: bytes | None = None) -> Any:
        if method == "PUT":
            self.cancels += 1
            if self.cancels == 1:
                HeldFirstCancel.arrived.set()
                await asyncio.to_thread(HeldFirstCancel.release.wait, DEADLINE)
                raise ServeError(
                    "cannot reach upstream", status=502, code="UPSTREAM_UNAVAILABLE", sent=False
                )
            HeldFirstCancel.puts += 1  # the first, never seen there: this one is accepted
        return await super().send(method, path, body)


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Database:
    if request.param == "sqlite":
        db = Database(tmp_path / "class.db")
    else:
        db = Database(request.getfixturevalue("postgres_url"))
    db.migrate()
    return db


@pytest.fixture
def upstream_server() -> Iterator[LoopbackServer]:
    HeldFirstCancel.arrived, HeldFirstCancel.release = threading.Event(), threading.Event()
    HeldFirstCancel.puts, HeldFirstCancel.accepted = 0, False
    HeldFirstCancel.first = (503, LIMITED.encode())
    HeldFirstCancel.ended = {"error": "cancelled by user", "error_type": "cancelled"}
    server = LoopbackServer(HeldFirstCancel)
    yield server
    HeldFirstCancel.release.set()
    server.close()


def spent(db: Database, name: str) -> dict[str, float]:
    found: dict[str, float] = next(k for k in usage(db)["keys"] if k["name"] == name)["spent"]
    return found


def states(db: Database) -> list[str]:
    return [t["state"] for t in tasks_of(db)]


@pytest.mark.slow
@pytest.mark.parametrize("first", ["refused", "never left"])
@pytest.mark.parametrize("ended", ["cancelled", "failed"])
def test_a_cancel_taken_upstream_holds_when_an_earlier_one_fails(
    database: Database, upstream_server: LoopbackServer, first: str, ended: str
) -> None:
    """Two cancels of one task at once: the first moved it to ``cancelling`` and was
    then refused (a 503 rate limit) or never left, after the second, sent meanwhile, was
    accepted upstream. The first undid its move: the task was ``open`` again, and
    upstream's cancelled end was given back as a failure (a failure upstream heard in
    between too). Upstream took a cancel: the task stays being cancelled, and its end,
    whatever upstream says, is ``cancelled``, charged."""
    db = database
    if ended == "failed":
        HeldFirstCancel.ended = {"error": "GPU out of memory", "error_type": "internal"}
    kind = FirstCancelNeverLeaves if first == "never left" else Upstream
    upstream = kind(upstream_server.base, TEACHER_KEY)
    token = add_key(db, "alice", {"tasks": 5})
    config = ServeConfig(upstream=upstream, database=db, sweep_every=0)
    headers = {"Authorization": f"Bearer {token}"}
    with ClassServer(config) as server:
        with httpx.Client(base_url=server.base_url, headers=headers, timeout=DEADLINE) as api:
            handle = api.post(f"/v1/queue/{IMAGE}", json=ONE).json()
        answers: list[httpx.Response] = []

        def cancel() -> None:
            with httpx.Client(headers=headers, timeout=DEADLINE) as own:
                answers.append(own.put(handle["cancel_url"]))

        earlier = threading.Thread(target=cancel, daemon=True)
        earlier.start()
        try:
            assert HeldFirstCancel.arrived.wait(DEADLINE), "the first cancel never went out"
            assert states(db) == ["cancelling"]
            with httpx.Client(headers=headers, timeout=DEADLINE) as api:
                taken = api.put(handle["cancel_url"])
                assert taken.status_code == 200, taken.text
                if ended == "failed":  # upstream's failure heard while the first is away
                    failed = api.get(handle["status_url"]).json()
                    assert failed["error"] == "GPU out of memory", failed
                    assert states(db) == ["cancelled"]
        finally:
            HeldFirstCancel.release.set()
            earlier.join(DEADLINE)
        assert not earlier.is_alive() and len(answers) == 1
        assert answers[0].status_code in (429, 502), answers[0].text
        assert states(db) == ["cancelling" if ended == "cancelled" else "cancelled"]
        with httpx.Client(headers=headers, timeout=DEADLINE) as api:
            status = api.get(handle["status_url"]).json()
        assert status["status"] == "COMPLETED", status
    assert HeldFirstCancel.puts == 2
    assert states(db) == ["cancelled"]
    assert spent(db, "alice") == {"tasks": 1.0, "images": 1.0}


def test_only_the_last_cancel_in_flight_none_taken_puts_the_task_back(
    database: Database,
) -> None:
    """The rule without a server: two cancels forwarded; the first failing leaves the
    task being cancelled while the second is out; the second failing too puts it back
    as the first found it. Had either been taken, it stays asked whatever the other."""
    db = database
    add_key(db, "alice", {"tasks": 5})
    amounts = budgets.charge_of(IMAGE, ONE, {})
    for taken in (None, "first", "second"):
        task_id = budgets.reserve(db, "alice", IMAGE, amounts).task_id
        budgets.move(db, task_id, "unknown", error="upstream answered 502")
        ways = [budgets.ask_cancel(db, task_id) for _ in range(2)]
        assert ways == ["forward", "forward"]
        first = budgets.cancel_answered(db, task_id, taken=taken == "first")
        assert not first and budgets.task_state(db, task_id) == "cancelling"
        second = budgets.cancel_answered(db, task_id, taken=taken == "second")
        assert second is (taken is None)
        assert budgets.task_state(db, task_id) == ("unknown" if taken is None else "cancelling")


# ------------------------- review-30 fault 3: a cancel in flight when its server was killed


def _restarted(db: Database) -> Database:
    """The server killed and started again: its connections gone, the schema read anew."""
    db.close()
    again = Database(db.url)
    again.migrate()
    return again


def _settle_stale(db: Database, now: float) -> None:
    """What a sweep (or ``serve tasks --settle``) does with no upstream, at ``now``."""
    db.run(partial(give_up_sending, now=now))


def _cancel_counts(db: Database, task: str) -> tuple[Any, ...]:
    found = db.run(
        lambda tx: tx.one(
            "SELECT state, cancels_out, cancel_taken FROM tasks WHERE id = ?", (task,)
        ),
        write=False,
    )
    assert found is not None
    return found


def test_a_cancel_left_in_flight_by_a_killed_server_is_no_longer_counted_once_stale(
    database: Database,
) -> None:
    """A server killed between forwarding a cancel and its answer left the count in flight
    for good: a later cancel that never left was told another was sent, and the task
    stayed ``cancelling`` with a cancel counted out (review-30, fault 3). A cancel in
    flight longer than a create may be ``sending``
    (:data:`~genwidgets.serve.budgets.STALE_SENDING`) is not in flight: the next cancel
    counts only itself, and the sweep ends a count whose cancels are all stale. Such a
    cancel may have been taken (review-31 fault 1): the task stays being cancelled."""
    db = database
    add_key(db, "alice", {"tasks": 5})
    amounts = budgets.charge_of(IMAGE, ONE, {})
    task = budgets.reserve(db, "alice", IMAGE, amounts).task_id
    budgets.move(db, task, "unknown", error="upstream answered 502")
    assert budgets.ask_cancel(db, task) == "forward"
    db = _restarted(db)  # its answer never came
    later = time.time() + budgets.STALE_SENDING + 60
    assert budgets.ask_cancel(db, task, now=later) == "forward"
    assert _cancel_counts(db, task) == ("cancelling", 1, budgets.MAYBE_TAKEN)
    assert not budgets.cancel_answered(db, task, taken=False, now=later)  # it never left
    assert _cancel_counts(db, task) == ("cancelling", 0, budgets.MAYBE_TAKEN)

    other = budgets.reserve(db, "alice", IMAGE, amounts).task_id
    budgets.move(db, other, "open", upstream_id="up-1")
    assert budgets.ask_cancel(db, other) == "forward"
    db = _restarted(db)
    _settle_stale(db, time.time())  # still in flight as far as anyone knows: kept
    assert _cancel_counts(db, other) == ("cancelling", 1, 0)
    _settle_stale(db, time.time() + budgets.STALE_SENDING + 60)
    assert _cancel_counts(db, other) == ("cancelling", 0, budgets.MAYBE_TAKEN)


def test_a_task_failed_upstream_while_its_killed_servers_cancel_was_out_is_given_back(
    database: Database,
) -> None:
    """A task upstream failed (not its cancel word) while a cancel a killed server sent
    was out was settled ``cancelled`` and charged, and never given back: the cancel's
    answer that would have found it failed never came. Once the cancel is stale the sweep
    ends it ``failed`` and gives its cost back; one taken upstream keeps it charged."""
    db = database
    add_key(db, "alice", {"tasks": 5})
    amounts = budgets.charge_of(IMAGE, ONE, {})
    failed = {"request_id": "r1", "status": "FAILED", "error": "the model crashed"}
    task = budgets.reserve(db, "alice", IMAGE, amounts).task_id
    budgets.move(db, task, "open", upstream_id="up-1")
    assert budgets.ask_cancel(db, task) == "forward"
    db = _restarted(db)
    assert budgets.settle(db, task, failed)
    assert budgets.task_state(db, task) == "cancelled" and spent(db, "alice")["tasks"] == 1
    _settle_stale(db, time.time() + budgets.STALE_SENDING + 60)
    assert budgets.task_state(db, task) == "failed" and not spent(db, "alice").get("tasks")

    kept = budgets.reserve(db, "alice", IMAGE, amounts).task_id
    budgets.move(db, kept, "open", upstream_id="up-2")
    budgets.ask_cancel(db, kept)
    budgets.ask_cancel(db, kept)
    assert not budgets.cancel_answered(db, kept, taken=True)  # the other's answer: lost
    db = _restarted(db)
    assert budgets.settle(db, kept, failed)
    _settle_stale(db, time.time() + budgets.STALE_SENDING + 60)
    assert budgets.task_state(db, kept) == "cancelled" and spent(db, "alice")["tasks"] == 1


def test_a_task_an_older_version_left_cancelling_holds_its_cancel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task the schema-4 version left ``cancelling`` migrates with no cancel counted
    and no state to go back to: a cancel then refused told the student another was sent.
    That version's cancel was taken (accepted, a 5xx, no answer): a refused cancel now
    leaves the task being cancelled, and says an earlier one may have been applied."""
    task = _schema_4_cancelling(tmp_path / "class.db", monkeypatch)
    db = Database(tmp_path / "class.db")
    db.migrate()
    assert budgets.ask_cancel(db, task) == "forward"
    assert not budgets.cancel_answered(db, task, taken=False)  # refused: the first holds
    assert _cancel_counts(db, task) == ("cancelling", 0, budgets.TAKEN)


# ------------- review-31 faults 1 and 2: a cancel whose answer never came may have been taken

CANCELLED = {
    "request_id": "r1",
    "status": "COMPLETED",
    "error": "cancelled by user",
    "error_type": "cancelled",
}
#: upstream's end of a task, by its word, and what the task is then settled as
ENDS = {
    "cancelled": (CANCELLED, "cancelled", 1.0),
    "completed": ({"request_id": "r1", "status": "COMPLETED"}, "done", 1.0),
    "failed": ({"request_id": "r1", "status": "FAILED", "error": "the model crashed"}, "failed", 0),
}


def _swept(db: Database, now: float) -> list[str]:
    """What the sweep's claim does at ``now`` (stale sends and cancels first); the ids."""
    return [row[0] for row in claim(db, 0.0, now)]


@pytest.mark.parametrize("end", list(ENDS))
def test_a_cancel_cut_off_by_a_killed_server_is_settled_by_upstreams_word(
    database: Database, end: str
) -> None:
    """A cancel forwarded (upstream applied and billed it) and its server killed -9 before
    the answer: after ``STALE_SENDING`` the sweep took the cut-off cancel as answered, not
    taken, put the task back ``open``, then upstream's "cancelled" was settled ``failed``
    and given back, its error "cancelled by user" (review-31 fault 1). A stale cancel may
    have been taken: the task stays being cancelled, and upstream's word settles it."""
    db = database
    add_key(db, "alice", {"tasks": 5})
    task = budgets.reserve(db, "alice", IMAGE, budgets.charge_of(IMAGE, ONE, {})).task_id
    budgets.move(db, task, "open", upstream_id="up-1")
    assert budgets.ask_cancel(db, task) == "forward"
    db = _restarted(db)  # killed -9: its answer never came
    later = time.time() + budgets.STALE_SENDING + 60
    assert _swept(db, later) == [task]
    assert budgets.task_state(db, task) == "cancelling"
    body, state, charged = ENDS[end]
    assert budgets.settle(db, task, body)
    (found,) = tasks_of(db)
    assert (found["state"], spent(db, "alice").get("tasks", 0)) == (state, charged)
    assert state == "failed" or found["charged"]
    assert found["error"] != "cancelled by user" or state == "cancelled"


def test_a_later_cancel_refused_leaves_a_cut_off_cancel_standing(database: Database) -> None:
    """A later cancel that never left (or was refused) no longer puts back a task whose
    cut-off cancel may have been taken: upstream's "cancelled" then is a cancel, charged."""
    db = database
    add_key(db, "alice", {"tasks": 5})
    task = budgets.reserve(db, "alice", IMAGE, budgets.charge_of(IMAGE, ONE, {})).task_id
    budgets.move(db, task, "open", upstream_id="up-1")
    assert budgets.ask_cancel(db, task) == "forward"
    db = _restarted(db)
    later = time.time() + budgets.STALE_SENDING + 60
    assert budgets.ask_cancel(db, task, now=later) == "forward"
    assert not budgets.cancel_answered(db, task, taken=False, now=later)  # it never left
    assert budgets.task_state(db, task) == "cancelling"
    assert budgets.settle(db, task, CANCELLED)
    assert budgets.task_state(db, task) == "cancelled" and spent(db, "alice")["tasks"] == 1


def test_upstreams_cancel_word_on_an_open_task_is_a_cancel_never_a_failure(
    database: Database,
) -> None:
    """Upstream ends a task nobody here asked to cancel (its cancel refused, the teacher
    cancelling it upstream) with its cancel word: ``cancelled``, charged as any cancelled
    task, never ``failed`` with "cancelled by user" as its error."""
    db = database
    add_key(db, "alice", {"tasks": 5})
    task = budgets.reserve(db, "alice", IMAGE, budgets.charge_of(IMAGE, ONE, {})).task_id
    budgets.move(db, task, "open", upstream_id="up-1")
    assert budgets.settle(db, task, CANCELLED)
    (found,) = tasks_of(db)
    assert (found["state"], found["charged"]) == ("cancelled", True)
    assert spent(db, "alice")["tasks"] == 1


def _schema_4_cancelling(path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A class file at schema 4 holding a task its server left ``cancelling``, as that
    version did once upstream accepted its cancel (a refusal put the task back)."""
    monkeypatch.setattr(db_module, "MIGRATIONS", db_module.MIGRATIONS[:4])
    old = Database(path)
    assert old.migrate() == 4
    add_key(old, "alice", {"tasks": 5})
    task = budgets.reserve(old, "alice", IMAGE, budgets.charge_of(IMAGE, ONE, {})).task_id
    old.run(
        lambda tx: tx.run(
            "UPDATE tasks SET state = 'cancelling', upstream_id = 'up-1' WHERE id = ?", (task,)
        )
    )
    old.close()
    monkeypatch.undo()
    return task


@pytest.mark.parametrize("end", list(ENDS))
def test_a_cancel_accepted_under_schema_4_holds_after_the_upgrade(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, end: str
) -> None:
    """A task the schema-4 version left ``cancelling`` (upstream accepted its cancel) was
    migrated as asked by a stale cancel not taken: the new server's first sweep made it
    ``unknown``, and upstream's "cancelled" was settled ``failed`` and given back
    (review-31 fault 2). Its cancel was taken: upstream's word settles it, a cancel
    charged."""
    task = _schema_4_cancelling(tmp_path / "class.db", monkeypatch)
    db = Database(tmp_path / "class.db")
    assert db.migrate() == db_module.MIGRATIONS[-1][0]
    assert _swept(db, time.time()) == [task]
    assert budgets.task_state(db, task) == "cancelling"
    body, state, charged = ENDS[end]
    if end == "failed":  # a failure while a taken cancel is out: a cancel, charged
        state, charged = "cancelled", 1.0
    assert budgets.settle(db, task, body)
    assert budgets.task_state(db, task) == state
    assert spent(db, "alice").get("tasks", 0) == charged
