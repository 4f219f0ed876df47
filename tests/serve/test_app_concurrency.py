"""Budgets that hold exactly under load: thirty keys sending creates at once at their
budget's edge, through one server on SQLite and through two and three server processes
on one PostgreSQL database; what the simulator made equals what was charged."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from serve_helpers import Class

from genwidgets.serve.db import Database
from genwidgets.serve.keys import add_group, add_key
from genwidgets.serve.usage import usage
from genwidgets.simulator import SimulatorServer

IMAGE = "genW2.5-t2i-preview"
STUDENTS = 30
TRIES = 5  # creates each student sends at once: 150 in all
KEY_IMAGES = 5  # each create bills 2 images: 2 creates fit a key, the third is over
GROUP_IMAGES = 100  # 50 creates fit the group: fewer than the keys' 60, so both caps bite


def _class_of(db: Database) -> list[tuple[str, str]]:
    add_group(db, "class1", {"images": GROUP_IMAGES})
    return [
        (f"s{i:02}", add_key(db, f"s{i:02}", {"images": KEY_IMAGES}, group="class1"))
        for i in range(STUDENTS)
    ]


def _storm(bases: Sequence[str], students: list[tuple[str, str]]) -> list[tuple[str, int, str]]:
    """Every student's creates at once, spread over the servers; (name, status, code)."""
    jobs = [
        (name, token, bases[(i + t) % len(bases)])
        for i, (name, token) in enumerate(students)
        for t in range(TRIES)
    ]

    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        return [(n, status, error.get("code", "")) for n, status, error in pool.map(_create, jobs)]


def _create(job: tuple[str, str, str], images: int = 2) -> tuple[str, int, dict[str, Any]]:
    """One student's create of ``images`` images: (name, status, the error object)."""
    name, token, base = job
    answer = httpx.post(
        f"{base}/v1/queue/{IMAGE}",
        json={"prompt": name, "n": images},
        headers={"Authorization": f"Bearer {token}"},
        timeout=120,
    )
    body = answer.json()
    error = body.get("error") if isinstance(body, dict) else None
    return name, answer.status_code, error if isinstance(error, dict) else {}


def _check(outcomes: list[tuple[str, int, str]], db: Database, sim: SimulatorServer) -> None:
    unexpected = [o for o in outcomes if o[1] not in (200, 402)]
    assert not unexpected, unexpected
    sent = Counter(name for name, status, _ in outcomes if status == 200)
    assert sum(sent.values()) == GROUP_IMAGES // 2  # the group's cap, exactly: 50 creates
    assert max(sent.values()) <= KEY_IMAGES // 2  # no key past its own: 2 creates each
    report = usage(db)
    for key in report["keys"]:
        assert key["held"].get("images", 0) == 2 * sent[key["name"]]
        assert key["held"].get("images", 0) <= KEY_IMAGES
    assert report["groups"][0]["held"]["images"] == GROUP_IMAGES
    assert sim.state.stats["created"] == sum(sent.values())  # upstream made what was charged
    refused = [o for o in outcomes if o[1] == 402]
    assert refused and all(code == "BUDGET_EXCEEDED" for _, _, code in refused)


@pytest.mark.slow
def test_thirty_keys_at_once_through_one_server(make_class: Callable[..., Class]) -> None:
    klass = make_class(max_running=None, rate=None)
    students = _class_of(klass.db)
    _check(_storm([klass.server.base_url], students), klass.db, klass.sim)


@pytest.mark.slow
@pytest.mark.parametrize("servers", [2, 3])
def test_thirty_keys_through_several_processes_on_one_postgresql(
    servers: int,
    postgres_url: str,
    upstream_sim: SimulatorServer,
    serve_processes: Callable[..., Any],
) -> None:
    db = Database(postgres_url)
    db.migrate()
    students = _class_of(db)
    started = [
        serve_processes(upstream_sim.base_url, postgres_url, "--max-running", "0", "--rate", "0")
        for _ in range(servers)
    ]
    outcomes = _storm([p.base_url for p in started], students)
    _check(outcomes, db, upstream_sim)
    db.close()


@pytest.mark.slow
def test_a_keys_concurrency_cap_holds_across_processes_on_one_postgresql(
    postgres_url: str, upstream_sim: SimulatorServer, serve_processes: Callable[..., Any]
) -> None:
    """Ten keys each send eight creates at once, spread over two server processes, with
    ``--max-running 3`` and tasks that run for minutes: each key gets exactly three
    upstream, whichever process took them (the reservation counts the key's unfinished
    tasks in the database, under the key row's lock), and the rest are 429s saying so."""
    upstream_sim.state.reconfigure({"speed": 0.01})  # an image runs for minutes
    db = Database(postgres_url)
    db.migrate()
    students = [(f"k{i}", add_key(db, f"k{i}", {})) for i in range(10)]
    started = [
        serve_processes(upstream_sim.base_url, postgres_url, "--max-running", "3", "--rate", "0")
        for _ in range(2)
    ]
    jobs = [
        (name, token, started[(i + t) % 2].base_url)
        for i, (name, token) in enumerate(students)
        for t in range(8)
    ]

    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        outcomes = [
            (n, status, str(error.get("message", "")))
            for n, status, error in pool.map(lambda job: _create(job, 1), jobs)
        ]
    sent = Counter(name for name, status, _ in outcomes if status == 200)
    assert sent == Counter({name: 3 for name, _ in students}), outcomes
    refused = [o for o in outcomes if o[1] != 200]
    assert all(s == 429 and "at most 3 at once" in m for _, s, m in refused), refused
    assert upstream_sim.state.stats["created"] == 30
    live = db.run(
        lambda tx: tx.rows(
            "SELECT key_name, COUNT(*) FROM tasks WHERE state = 'open' GROUP BY key_name"
        )
    )
    assert sorted(count for _, count in live) == [3] * 10
    db.close()


@pytest.mark.slow
def test_two_processes_sweeps_never_claim_the_same_task_on_postgresql(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under READ COMMITTED a claim's SELECT did not see another process's uncommitted
    stamps, and its UPDATE waited for them and wrote anyway: two sweeps took the same
    tasks and both asked upstream about them. Here A has read the due tasks and waits,
    its transaction open, while B claims; B now skips what A has taken."""
    import threading
    import time

    from genwidgets.serve import sweep
    from genwidgets.serve.db import Tx

    setup = Database(postgres_url)
    setup.migrate()
    add_key(setup, "alice", {})
    now = time.time()
    for i in range(5):
        setup.run(
            lambda tx, i=i: tx.run(
                "INSERT INTO tasks (id, key_name, endpoint, upstream_id, state, charged, "
                "created_at) VALUES (?, 'alice', ?, ?, 'open', 1, ?)",
                (f"t{i}", IMAGE, f"u{i}", now - 100),
            )
        )
    first, second = Database(postgres_url), Database(postgres_url)
    real_rows = Tx.rows
    a_read, b_done = threading.Event(), threading.Event()

    def rows(self: Tx, text: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        found = real_rows(self, text, params)
        if "checked_at IS NULL" in text and threading.current_thread().name == "A":
            a_read.set()
            b_done.wait(60)  # B claims while A's transaction is open
        return found

    monkeypatch.setattr(Tx, "rows", rows)
    got: dict[str, list[tuple[Any, ...]]] = {}
    a = threading.Thread(target=lambda: got.update(A=sweep.claim(first, 5.0)), name="A")
    a.start()
    assert a_read.wait(60)
    b = threading.Thread(target=lambda: got.update(B=sweep.claim(second, 5.0)), name="B")
    b.start()
    b.join(60)
    b_done.set()
    a.join(60)
    for db in (first, second, setup):
        db.close()
    taken_a, taken_b = {r[0] for r in got["A"]}, {r[0] for r in got["B"]}
    assert taken_a | taken_b == {f"t{i}" for i in range(5)} and not taken_a & taken_b
