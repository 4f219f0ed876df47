"""Reservations: exact against the key's and the group's caps, under threads, on SQLite
and on PostgreSQL; released for failed tasks, kept for cancelled and unknown ones."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from genwidgets.errors import ServeError
from genwidgets.protocol.records import Result
from genwidgets.serve import budgets
from genwidgets.serve.budgets import (
    ask_cancel,
    charge_of,
    forgotten,
    heard,
    move,
    release,
    reserve,
    resolve_unknown,
    settle,
    tasks_of,
    unanswered,
)
from genwidgets.serve.db import SCALE, Database
from genwidgets.serve.keys import add_group, add_key, list_keys


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    url = (
        tmp_path / "class.db"
        if request.param == "sqlite"
        else request.getfixturevalue("postgres_url")
    )
    found = Database(url)
    found.migrate()
    yield found
    found.close()


IMAGE = "genW2.5-t2i-preview"


def held(db: Database, name: str) -> dict[str, int]:
    return next(k.held for k in list_keys(db) if k.name == name)


def test_the_charge_is_what_the_catalog_bills_and_the_price_table_prices() -> None:
    prices = {IMAGE: {"per_image": 0.04, "per_task": 0.01}}
    amounts = charge_of(IMAGE, {"prompt": "a cat"}, prices)
    assert amounts["images"] == 4_000_000  # the service's default n is 4
    assert amounts["money"] == 170_000  # 4 x 0.04 + 0.01
    assert charge_of("vidA-2-0-fast", {"content": [], "duration": -1}, {})["video_seconds"] is None


def test_a_key_at_its_cap_is_refused_saying_what_is_left(db: Database) -> None:
    add_key(db, "alice", {"images": 5})
    amounts = charge_of(IMAGE, {"prompt": "a cat", "n": 2}, {})
    reserve(db, "alice", IMAGE, amounts)
    reserve(db, "alice", IMAGE, amounts)
    with pytest.raises(ServeError) as refused:
        reserve(db, "alice", IMAGE, amounts)
    assert refused.value.status == 402 and refused.value.code == "BUDGET_EXCEEDED"
    assert "your key has 1 of 5 left" in refused.value.message
    assert held(db, "alice")["images"] == 4_000_000


def test_the_group_cap_holds_across_its_keys(db: Database) -> None:
    add_group(db, "class1", {"tasks": 3})
    for name in ("a", "b"):
        add_key(db, name, {}, group="class1")
    amounts = charge_of(IMAGE, {"prompt": "x", "n": 1}, {})
    reserve(db, "a", IMAGE, amounts)
    reserve(db, "b", IMAGE, amounts)
    reserve(db, "a", IMAGE, amounts)
    with pytest.raises(ServeError, match="the group class1 has 0 of 3 left"):
        reserve(db, "b", IMAGE, amounts)


@pytest.mark.slow
def test_concurrent_reservations_never_pass_a_cap(db: Database) -> None:
    """20 threads race 5 creates each for keys of 7 images and a group of 60: exactly the
    caps are reserved, never one task more."""
    add_group(db, "class1", {"images": 60})
    names = [f"s{i}" for i in range(20)]
    for name in names:
        add_key(db, name, {"images": 7}, group="class1")
    amounts = charge_of(IMAGE, {"prompt": "x", "n": 2}, {})
    granted: list[str] = []
    errors: list[BaseException] = []

    def student(name: str) -> None:
        for _ in range(5):
            try:
                reserve(db, name, IMAGE, amounts)
                granted.append(name)
            except ServeError:
                pass
            except BaseException as exc:
                errors.append(exc)

    threads = [threading.Thread(target=student, args=(n,)) for n in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors
    assert len(granted) == 30  # the group's 60 images, 2 a create
    assert all(granted.count(n) <= 3 for n in names)  # 3 x 2 = 6 of a key's 7
    total = sum(held(db, n)["images"] for n in names)
    assert total == 60_000_000


def test_settlement_rules(db: Database) -> None:
    add_key(db, "alice", {"tasks": 10})
    amounts = charge_of(IMAGE, {"prompt": "x", "n": 1}, {})
    ids = [reserve(db, "alice", IMAGE, amounts).task_id for _ in range(5)]
    for task_id in ids[:4]:
        move(db, task_id, "open", upstream_id="up-" + task_id)
    failed = {"status": "COMPLETED", "error": "boom"}
    assert settle(db, ids[0], {"status": "COMPLETED"})  # done
    move(db, ids[1], "cancelling", source=("open",))
    assert settle(db, ids[1], failed)  # cancelled
    assert not settle(db, ids[2], {"status": "IN_PROGRESS"})  # not ended
    assert settle(db, ids[2], failed)
    assert not settle(db, ids[2], failed)  # twice: given back once
    assert release(db, ids[3], "refused") is True
    assert release(db, ids[3], "refused") is False
    move(db, ids[4], "unknown", error="timeout")
    # done, cancelled and unknown stay charged; failed and refused gave back
    assert held(db, "alice")["tasks"] == 3_000_000
    states = {t["id"]: t["state"] for t in tasks_of(db)}
    assert [states[i] for i in ids] == ["done", "cancelled", "failed", "refused", "unknown"]


@pytest.mark.parametrize("error", [{}, False, [], 0, "null", {"code": None, "message": None}])
def test_an_error_that_says_there_is_none_settles_the_task_done(db: Database, error: Any) -> None:
    """Upstream ends a task ``COMPLETED`` with an ``error`` that says there is none: the
    student's client reads it a success with its outputs, so the task is done and stays
    charged (it was failed and given back: outputs made for nothing)."""
    add_key(db, "alice", {"tasks": 10})
    task_id = reserve(db, "alice", IMAGE, charge_of(IMAGE, {"prompt": "x"}, {})).task_id
    move(db, task_id, "open", upstream_id="up-1")
    made = [{"url": "https://cdn.example/x.png", "content_type": "image/png"}]
    body = {"status": "COMPLETED", "error": error, "outputs": made}
    assert Result.from_body(body).ok
    assert settle(db, task_id, body)
    assert [t["state"] for t in tasks_of(db)] == ["done"]
    assert held(db, "alice")["tasks"] == 1_000_000


def test_a_task_cancelled_alone_is_never_cancelled_upstream_by_a_second_cancel(
    db: Database,
) -> None:
    """The sent task's cancel, while a classmate's demo-cache answer follows it, ends it
    alone; a second cancel finds it ended and is not forwarded (it was, and ended the
    classmate's task). So does the classmate's. A cancel asked again while
    ``cancelling`` is forwarded again."""
    add_group(db, "demo", {}, cache_seconds=600)
    for name in ("first", "other"):
        add_key(db, name, {"tasks": 3}, group="demo")
    amounts = charge_of(IMAGE, {"prompt": "x"}, {})
    sent = reserve(db, "first", IMAGE, amounts, cache_key="seeded").task_id
    move(db, sent, "open", upstream_id="up-1")
    follows = reserve(db, "other", IMAGE, amounts, cache_key="seeded")
    assert follows.cached
    assert [ask_cancel(db, sent) for _ in range(2)] == ["alone", "ended"]
    assert [ask_cancel(db, follows.task_id) for _ in range(2)] == ["alone", "ended"]
    lone = reserve(db, "first", IMAGE, amounts).task_id
    move(db, lone, "open", upstream_id="up-2")
    assert [ask_cancel(db, lone) for _ in range(2)] == ["forward", "forward"]
    states = {t["id"]: (t["state"], t["charged"]) for t in tasks_of(db)}
    assert states[sent] == ("cancelled", True) and states[lone] == ("cancelling", True)
    assert states[follows.task_id] == ("cancelled", False)


def test_a_cancel_that_comes_while_a_poll_is_away_keeps_the_task_charged(db: Database) -> None:
    """A status poll reads the task open, a cancel is accepted upstream meanwhile, and
    the poll's answer says the task ended with an error: it was cancelled at the
    student's word, so it stays charged (it was given back as failed)."""
    add_key(db, "alice", {"tasks": 10})
    task_id = reserve(db, "alice", IMAGE, charge_of(IMAGE, {"prompt": "x"}, {})).task_id
    move(db, task_id, "open", upstream_id="up-1")
    # the poll read it open; the cancel moves it while the poll waits on upstream
    move(db, task_id, "cancelling", source=("open",))
    assert settle(db, task_id, {"status": "COMPLETED", "error": "cancelled"})
    assert [t["state"] for t in tasks_of(db)] == ["cancelled"]
    assert held(db, "alice")["tasks"] == 1_000_000


def test_a_task_upstream_forgot_is_unknown_or_ended_by_what_it_was(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Upstream's 404 for a task made a moment ago means nothing yet; later, an open task
    is ``unknown`` (reserved, no longer holding a place), known again when upstream
    answers for it, and a task being cancelled is ``cancelled``, still charged."""
    add_key(db, "alice", {"tasks": 10})
    amounts = charge_of(IMAGE, {"prompt": "x"}, {})
    going, stopping = (reserve(db, "alice", IMAGE, amounts).task_id for _ in range(2))
    for task_id in (going, stopping):
        move(db, task_id, "open", upstream_id="up-" + task_id)
    move(db, stopping, "cancelling", source=("open",))
    assert not forgotten(db, going)  # made a moment ago: it may not show yet
    monkeypatch.setattr(budgets, "GONE_AFTER", 0.0)
    assert forgotten(db, going) and forgotten(db, stopping)
    states = {t["id"]: t["state"] for t in tasks_of(db)}
    assert (states[going], states[stopping]) == ("unknown", "cancelled")
    assert held(db, "alice")["tasks"] == 2_000_000
    assert not forgotten(db, stopping)  # ended: nothing more
    assert not settle(db, going, {"status": "IN_PROGRESS"}, seen="unknown")  # known again
    assert [t["error"] for t in tasks_of(db, state="open")] == [None]
    assert settle(db, going, {"status": "COMPLETED", "error": "boom"})
    assert held(db, "alice")["tasks"] == 1_000_000  # failed: given back


def test_a_task_answered_nothing_but_404s_for_lost_after_is_unknown(db: Database) -> None:
    """404s and 410s that are not upstream's word settle nothing one by one; a task
    answered nothing else for ``LOST_AFTER`` seconds is ``unknown`` (still reserved, its
    running place free), a status answer between starts the stretch anew, and a task
    already ``unknown`` stays as it is."""
    import time

    add_key(db, "alice", {"tasks": 10})
    amounts = charge_of(IMAGE, {"prompt": "x"}, {})
    task_id = reserve(db, "alice", IMAGE, amounts).task_id
    move(db, task_id, "open", upstream_id="up-1")
    start = time.time() + budgets.GONE_AFTER  # old enough to be believed gone
    assert not unanswered(db, task_id, now=start)
    assert not unanswered(db, task_id, now=start + budgets.LOST_AFTER - 1)
    heard(db, task_id)  # upstream answered for it: the stretch is over
    assert not unanswered(db, task_id, now=start + budgets.LOST_AFTER)
    assert [t["state"] for t in tasks_of(db)] == ["open"]
    assert unanswered(db, task_id, now=start + 2 * budgets.LOST_AFTER)
    [task] = tasks_of(db)
    assert task["state"] == "unknown" and task["error"] == budgets.LOST
    assert held(db, "alice")["tasks"] == 1_000_000
    assert not unanswered(db, task_id, now=start + 3 * budgets.LOST_AFTER)


def test_an_uncountable_cost_is_refused_only_where_capped(db: Database) -> None:
    add_key(db, "capped", {"video_seconds": 60})
    add_key(db, "free", {"images": 10})
    amounts = charge_of("vidA-2-0-fast", {"content": [], "duration": -1}, {})
    with pytest.raises(ServeError, match="explicit"):
        reserve(db, "capped", "vidA-2-0-fast", amounts)
    reserve(db, "free", "vidA-2-0-fast", amounts)
    with pytest.raises(ServeError, match="no price"):
        add_key(db, "money", {"money": 1})
        reserve(db, "money", IMAGE, charge_of(IMAGE, {"prompt": "x"}, {}))


def test_a_revoked_key_and_a_closed_endpoint_are_refused_in_the_reservation(db: Database) -> None:
    from genwidgets.serve.keys import revoke_key

    add_key(db, "eve", {}, endpoints=["speechM-02-turbo"])
    amounts = charge_of(IMAGE, {"prompt": "x"}, {})
    with pytest.raises(ServeError, match="Model not allowed"):
        reserve(db, "eve", IMAGE, amounts)
    revoke_key(db, "eve")
    with pytest.raises(ServeError, match="revoked"):
        reserve(db, "eve", "speechM-02-turbo", charge_of("speechM-02-turbo", {"text": "hi"}, {}))


def test_the_teacher_settles_an_unknown_create(db: Database) -> None:
    add_key(db, "alice", {"tasks": 5})
    amounts = charge_of(IMAGE, {"prompt": "x", "n": 1}, {})
    made, lost, fine = (reserve(db, "alice", IMAGE, amounts).task_id for _ in range(3))
    move(db, made, "unknown", error="timeout")
    move(db, lost, "unknown", error="timeout")
    move(db, fine, "open", upstream_id="up-1")
    assert {t["id"] for t in tasks_of(db, state="unknown")} == {made, lost}
    assert resolve_unknown(db, made, made=True) is True
    assert resolve_unknown(db, lost, made=False) is True
    assert resolve_unknown(db, fine, made=False) is False  # not unknown: untouched
    assert resolve_unknown(db, lost, made=True) is False  # settled once
    assert held(db, "alice")["tasks"] == 2_000_000  # made and fine stay, lost gave back


def test_a_create_left_sending_by_a_stopped_process_becomes_unknown(db: Database) -> None:
    """A server that stopped between reserving and upstream's answer leaves a row sending:
    the sweep makes it unknown (still reserved, no longer one of the key's running)."""
    import time

    from genwidgets.serve.sweep import STALE_SENDING, claim

    add_key(db, "alice", {"tasks": 5}, max_running=1)
    amounts = charge_of(IMAGE, {"prompt": "x", "n": 1}, {})
    old = reserve(db, "alice", IMAGE, amounts, now=time.time() - STALE_SENDING - 1).task_id
    with pytest.raises(ServeError, match="at most 1 at once"):
        reserve(db, "alice", IMAGE, amounts)
    claim(db, 5.0)
    assert [t["id"] for t in tasks_of(db, state="unknown")] == [old]
    reserve(db, "alice", IMAGE, amounts)  # its running place is free
    assert held(db, "alice")["tasks"] == 2_000_000  # the unknown one stays reserved


def test_the_sweep_reaches_a_task_never_looked_at_while_many_are_due(db: Database) -> None:
    """PostgreSQL sorts NULL last: with a batch's worth of looked-at tasks due at every
    sweep, a new task (``checked_at`` NULL) was never claimed there, as SQLite (NULL
    first) did at once. Never-looked-at tasks come first on both."""
    import time

    from genwidgets.serve.sweep import BATCH, claim

    add_key(db, "alice", {})
    now = time.time()
    columns = "id, key_name, endpoint, upstream_id, state, charged, created_at, checked_at"

    def fill(tx: Any) -> None:
        for i in range(BATCH + 5):
            tx.run(
                f"INSERT INTO tasks ({columns}) VALUES (?, 'alice', ?, ?, 'open', 1, ?, ?)",
                (f"old{i}", IMAGE, f"u{i}", now - 120, now - 60 - i),
            )
        tx.run(
            f"INSERT INTO tasks ({columns}) VALUES ('new', 'alice', ?, 'n', 'open', 1, ?, NULL)",
            (IMAGE, now - 30),
        )

    db.run(fill)
    assert "new" in [row[0] for row in claim(db, 5.0, now)]


def test_the_sweep_reaches_a_task_it_looked_at_while_new_ones_keep_coming(db: Database) -> None:
    """Never-looked-at tasks came first: while a class made a batch's worth of creates
    per sweep, a task the sweep had looked at once was never asked about again (an
    unpolled task that ended kept its running place). Both kinds get their turn."""
    from genwidgets.serve.sweep import BATCH, claim

    add_key(db, "alice", {})
    amounts = charge_of(IMAGE, {"prompt": "x", "n": 1}, {})
    start, every = 2_000_000_000.0, 5.0

    def opened(now: float) -> str:
        task_id = reserve(db, "alice", IMAGE, amounts, now=now).task_id
        move(db, task_id, "open", upstream_id=f"up-{task_id}")
        return task_id

    looked_at = opened(start)
    assert [row[0] for row in claim(db, every, start)] == [looked_at]
    stamp = "UPDATE tasks SET checked_at = ? WHERE id = ?"  # its ask went at once
    db.run(lambda tx: tx.run(stamp, (start, looked_at)))
    claimed: list[str] = []
    for sweep in range(1, 4):
        now = start + sweep * every
        new = [opened(now - 0.01 * (i + 1)) for i in range(BATCH)]
        claimed = [row[0] for row in claim(db, every, now)]
        if looked_at in claimed:
            break
    assert looked_at in claimed
    assert set(new) & set(claimed)  # and new ones are still reached


def test_upstreams_hold_on_creates_is_the_classs_and_the_teacher_clears_it(
    db: Database,
) -> None:
    """Upstream's rate limit on creates held back only the process that met it, in its
    memory, until a restart. It is kept in the database: another process (another
    handle) sees it, a shorter one never shortens it, and clearing it ends it for all."""
    from genwidgets.serve.budgets import clear_hold, hold_creates, holding_creates

    other, now = Database(db.url), time.time()
    try:
        assert holding_creates(other) == 0.0
        hold_creates(db, 600.0, now=now)
        hold_creates(other, 5.0, now=now)
        assert holding_creates(other, now=now + 100) == pytest.approx(500.0)
        assert holding_creates(db, now=now + 700) == 0.0  # it ends by itself too
        assert clear_hold(other) > 0 and holding_creates(db) == 0.0
    finally:
        other.close()


@pytest.mark.parametrize(
    ("said", "stored"),
    [("bad\x00input", "bad\\x00input"), ("bad \ud800 input", "bad \\ud800 input")],
    ids=["nul", "lone-surrogate"],
)
def test_a_failed_tasks_error_no_database_can_hold_is_stored_escaped(
    db: Database, said: str, stored: str
) -> None:
    """Upstream's error is stored as it wrote it: one holding a NUL (PostgreSQL refuses
    it) or a lone surrogate (neither database encodes it) made every settle of the task
    fail, so it stayed open, its cost reserved for ever. Those characters are stored as
    escapes, the task fails and gives its reservation back."""
    add_key(db, "alice", {"tasks": 5})
    task_id = reserve(db, "alice", IMAGE, charge_of(IMAGE, {"prompt": "x", "n": 1}, {})).task_id
    move(db, task_id, "open", upstream_id="up-1")
    assert settle(db, task_id, {"status": "COMPLETED", "error": said}, seen="open")
    [task] = tasks_of(db)
    assert (task["state"], task["error"]) == ("failed", stored)
    assert held(db, "alice")["tasks"] == 0


def test_clearing_the_hold_never_deletes_a_newer_one(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``serve hold --clear`` read the hold and deleted whatever was there: a longer hold
    another process's 429 wrote in between was deleted unseen, and the teacher told the
    old one's seconds. Only the hold read is deleted (the write is forced in just before
    the delete)."""
    from genwidgets.serve.budgets import clear_hold, hold_creates, holding_creates
    from genwidgets.serve.db import Tx

    now = time.time()
    hold_creates(db, 5.0, now=now)
    real_run = Tx.run

    def upstream_429_first(tx: Tx, text: str, params: Any = ()) -> int:
        if text.startswith("DELETE FROM holds"):  # another process's 429 lands now
            real_run(tx, "UPDATE holds SET until = ? WHERE name = 'creates'", (now + 600,))
        return real_run(tx, text, params)

    monkeypatch.setattr(Tx, "run", upstream_429_first)
    assert clear_hold(db) <= 5.0
    monkeypatch.undo()
    assert holding_creates(db, now=now) == pytest.approx(600.0)


def test_held_back_creates_are_told_upstreams_latest_wait(db: Database) -> None:
    """A 3600-s quota held creates 600 s (the ceiling) and told students 3600 s; when the
    hold ended, upstream said 5 s, yet held-back students were still told the stale
    3600 s (the told wait was only ever lengthened). Upstream's latest word is told."""
    from genwidgets.serve.budgets import TOLD, hold_creates, holding_creates

    now = time.time()
    hold_creates(db, 600.0, now=now, told=3600.0)
    assert holding_creates(db, now=now, what=TOLD) == pytest.approx(3600.0)
    later = now + 601.0  # the hold is over: upstream is asked again and says 5 s
    hold_creates(db, 5.0, now=later, told=5.0)
    told = holding_creates(db, now=later, what=TOLD)
    assert max(holding_creates(db, now=later), told) == pytest.approx(5.0)
    hold_creates(db, 600.0, now=later, told=1200.0)  # and a longer word is told again
    assert holding_creates(db, now=later, what=TOLD) == pytest.approx(1200.0)


def test_a_sweep_claims_a_task_once_and_takes_it_for_the_sweeps_length(db: Database) -> None:
    """Every pass of a sweep stamped its tasks with the sweep's start, then with its
    claim time: a task still queued behind the sweep's few asks at once looked due to
    another process's sweep, which asked about it again meanwhile. A claim takes a task
    until the sweep's deadline (stamped ``SWEEP_SECONDS`` ahead; its ask stamps it again
    when sent), and a sweep's later passes skip what it took (``not_since``)."""
    from genwidgets.serve.sweep import SWEEP_SECONDS, claim

    add_key(db, "alice", {})
    amounts = charge_of(IMAGE, {"prompt": "x", "n": 1}, {})
    task_id = reserve(db, "alice", IMAGE, amounts).task_id
    move(db, task_id, "open", upstream_id="up-1")
    started = time.time()
    assert [row[0] for row in claim(db, 5.0, started + 20)] == [task_id]
    assert claim(db, 5.0, started + 40, not_since=started) == []  # the same sweep
    assert claim(db, 5.0, started + 26) == []  # another process's, its ask still queued
    after = started + 20 + SWEEP_SECONDS + 5.1  # that sweep has ended, its asks too
    assert [row[0] for row in claim(db, 5.0, after)] == [task_id]  # the next one


def test_a_place_held_by_a_create_stuck_sending_says_when_it_frees(db: Database) -> None:
    """After kill -9 mid-create the key's one place is held by a ``sending`` create for up
    to 10 minutes (then ``unknown``): the student was told "1 tasks running" with
    ``Retry-After: 1``, and their client retried every second. The 429 says why and
    how long."""
    add_key(db, "alice", {}, max_running=1)
    amounts = charge_of(IMAGE, {"prompt": "x", "n": 1}, {})
    then = time.time()
    reserve(db, "alice", IMAGE, amounts, now=then)
    with pytest.raises(ServeError) as refused:
        reserve(db, "alice", IMAGE, amounts, now=then + 300)
    assert refused.value.status == 429
    assert refused.value.retry_after is not None and 250 <= refused.value.retry_after <= 300
    assert "stopped mid-send" in refused.value.message
    with pytest.raises(ServeError) as soon:  # a create just sent: its answer comes soon
        reserve(db, "alice", IMAGE, amounts, now=then + 5)
    assert soon.value.retry_after == 1.0


def test_a_create_within_this_configurations_longest_send_is_not_called_stopped(
    db: Database,
) -> None:
    """With ``--timeout 300`` (accepted) a create may rightly send for about 400 s, but
    one 150 s in was said to be held by a server that may have stopped, and its student
    told to wait 450 s: the 2-minute mark was the defaults' longest send. It is the
    configuration's."""
    from genwidgets.serve import ServeConfig, Upstream

    config = ServeConfig(
        upstream=Upstream("http://127.0.0.1:9", "teacher-key", timeout=300),
        database=db,
        max_running=1,
    )
    assert config.longest_send >= 30 + 60 + 300
    add_key(db, "alice", {})
    amounts = charge_of(IMAGE, {"prompt": "x", "n": 1}, {})
    then = time.time()
    reserve(db, "alice", IMAGE, amounts, max_running=1, now=then)

    def another_create(at: float) -> Any:
        """alice's next create, ``at`` seconds after the first, under this configuration."""
        long_sending = config.longest_send
        return reserve(
            db, "alice", IMAGE, amounts, max_running=1, long_sending=long_sending, now=then + at
        )

    with pytest.raises(ServeError) as sending:
        another_create(150)
    assert sending.value.retry_after == 1.0 and "stopped" not in sending.value.message
    with pytest.raises(ServeError) as stuck:  # past this configuration's longest send
        another_create(config.longest_send + 10)
    assert "stopped mid-send" in stuck.value.message


class _Counted:
    """A transaction's statements, counted as they run (the reads of ``tasks``)."""

    def __init__(self, tx: Any) -> None:
        self.tx, self.reads = tx, 0

    def _counted(self, text: str) -> None:
        self.reads += text.lstrip().startswith("SELECT") and " FROM tasks " in text

    def run(self, text: str, params: Any = ()) -> int:
        return int(self.tx.run(text, params))

    def rows(self, text: str, params: Any = ()) -> list[tuple[Any, ...]]:
        self._counted(text)
        return list(self.tx.rows(text, params))

    def one(self, text: str, params: Any = ()) -> tuple[Any, ...] | None:
        self._counted(text)
        return self.tx.one(text, params)  # type: ignore[no-any-return]


def test_cancels_left_stale_are_ended_from_one_read_of_the_tasks(db: Database) -> None:
    """The sweep's end of stale cancels read the tasks, then each task again under its
    lock: one read, locked, finds them and their rows. Their counts end, their cancels
    may have been taken (all stay being cancelled); one asked again meanwhile (its stamp
    fresh) is kept in flight."""
    add_key(db, "alice", {})
    amounts = charge_of(IMAGE, {"prompt": "x", "n": 1}, {})
    then = time.time()
    stale = []
    for n in range(3):
        task = reserve(db, "alice", IMAGE, amounts).task_id
        move(db, task, "open", upstream_id=f"up-{n}")
        ask_cancel(db, task, now=then)
        stale.append(task)
    later = then + budgets.STALE_SENDING + 60
    ask_cancel(db, stale[2], now=later)  # asked again: in flight, fresh
    counted: list[_Counted] = []

    def work(tx: Any) -> None:
        counted.append(_Counted(tx))
        budgets.end_stale_cancels(counted[0], later)  # type: ignore[arg-type]

    db.run(work)
    assert counted[0].reads == 1
    found = db.run(
        lambda tx: tx.rows("SELECT id, state, cancels_out, cancel_taken FROM tasks"), write=False
    )
    rows = {row[0]: row[1:] for row in found}
    assert [rows[task] for task in stale] == [
        ("cancelling", 0, budgets.MAYBE_TAKEN),
        ("cancelling", 0, budgets.MAYBE_TAKEN),
        ("cancelling", 1, budgets.MAYBE_TAKEN),  # its first cancel's answer never came
    ]


def test_a_cancel_says_only_whether_to_forward_and_the_task_shows_the_rest(
    db: Database,
) -> None:
    """``ask_cancel`` answered the state it moved the task from too, which no caller
    read: its way only; the task's state and its key's balance show what it did. Two
    cancels forwarded and both answered unsent put it back as the first found it."""
    add_key(db, "alice", {})
    amounts = charge_of(IMAGE, {"prompt": "x", "n": 1}, {})
    task = reserve(db, "alice", IMAGE, amounts).task_id
    move(db, task, "open", upstream_id="up-1")
    assert [ask_cancel(db, task) for _ in range(2)] == ["forward", "forward"]
    assert budgets.task_state(db, task) == "cancelling" and held(db, "alice")["tasks"] == SCALE
    assert not budgets.cancel_answered(db, task, taken=False)  # the other still out
    assert budgets.cancel_answered(db, task, taken=False)
    assert budgets.task_state(db, task) == "open" and held(db, "alice")["tasks"] == SCALE


def test_the_default_longest_send_is_the_default_configurations(db: Database) -> None:
    """``reserve`` without the server's longest send took 120 s, restated by hand, where
    the default configuration's is 125 s (its turn, the database's lock, the connect and
    upstream's answer): a create 123 s in was said to have lost its server. One number."""
    from genwidgets.serve import ServeConfig, Upstream

    config = ServeConfig(upstream=Upstream("http://127.0.0.1:9", "teacher-key"), database=db)
    add_key(db, "alice", {}, max_running=1)
    amounts = charge_of(IMAGE, {"prompt": "x", "n": 1}, {})
    then = time.time()
    reserve(db, "alice", IMAGE, amounts, now=then)
    for at, stopped in ((config.longest_send - 2, False), (config.longest_send + 2, True)):
        with pytest.raises(ServeError) as refused:
            reserve(db, "alice", IMAGE, amounts, now=then + at)
        assert ("stopped mid-send" in refused.value.message) is stopped, (at, refused.value)
