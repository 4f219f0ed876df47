"""The package's worker threads: off the caller's thread, errors contained and said,
no pile-up, one kind of thread."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from widgets.taskfakes import wait_for

import genwidgets as gw
from genwidgets._workers import THREAD_NAME, Workers, wait_within
from genwidgets.lab.plan import plan_grid
from genwidgets.lab.run import GridRun
from genwidgets.simulator import SimulatorServer

T2I = "genW2.5-t2i-preview"
#: the name anyio gives the threads of its pool (starlette's ``run_in_threadpool``)
ANYIO_WORKER = "AnyIO worker thread"


def test_work_runs_on_a_daemon_worker_and_a_failure_is_logged_not_raised(caplog) -> None:  # type: ignore[no-untyped-def]
    background = Workers(2, idle=0.2, failed="a view update")
    seen: list[tuple[str, bool]] = []

    def fail() -> None:
        raise ValueError("broken thumbnail")

    background.submit(fail)
    background.submit(
        lambda: seen.append((threading.current_thread().name, threading.current_thread().daemon))
    )
    assert wait_for(lambda: background.pending == 0, timeout=30)
    assert seen == [(THREAD_NAME, True)]
    assert "a view update failed" in caplog.text


def test_a_stuck_job_does_not_stop_the_others_and_workers_are_capped() -> None:
    background = Workers(2, idle=0.2, failed="a view update")
    release = threading.Event()
    done: list[int] = []
    workers: set[int] = set()

    def hang() -> None:
        workers.add(threading.get_ident())
        release.wait(60)  # a download that hangs

    def work(i: int) -> None:
        workers.add(threading.get_ident())
        done.append(i)

    background.submit(hang)
    for i in range(5):
        background.submit(lambda i=i: work(i))
    assert wait_for(lambda: len(done) == 5, timeout=30)
    assert done == [0, 1, 2, 3, 4]
    assert len(workers) == 2
    release.set()
    assert wait_for(lambda: background.pending == 0, timeout=30)


def test_work_is_a_future_that_knows_its_thread_and_can_be_joined() -> None:
    workers = Workers(4, idle=0.2)
    named, release = threading.Event(), threading.Event()
    inside: list[bool] = []

    def body() -> bool:
        named.wait(30)  # ``work`` is assigned
        inside.append(work.on_this_thread)
        return release.wait(60)

    work = workers.submit(body)
    named.set()
    assert work.alive() and not work.join(0.05)  # still running: the join times out
    release.set()
    assert work.join(30) and not work.alive() and work.result() is True
    assert inside == [True] and not work.on_this_thread
    failing = workers.submit(lambda: 1 / 0)
    assert failing.join(30) and isinstance(failing.exception(), ZeroDivisionError)


def test_shutdown_with_cancel_futures_cancels_what_has_not_begun() -> None:
    workers = Workers(1, idle=0.2)
    release = threading.Event()
    first = workers.submit(release.wait, 60)
    assert wait_for(lambda: first.running(), timeout=30)
    queued = workers.submit(lambda: "never")
    workers.shutdown(cancel_futures=True)
    assert queued.cancelled() and workers.pending == 1  # only the one running is left
    release.set()
    assert first.join(30) and wait_for(lambda: workers.pending == 0, timeout=30)


@pytest.mark.slow
def test_a_ctrl_c_in_a_work_ends_its_thread_and_the_next_work_still_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A KeyboardInterrupt raised in a work (a listener's, a test's) ends that thread,
    as it should; the pool counts it gone, so the work submitted next gets a thread.
    It used to count the dead thread as free: the next work waited for ever."""
    pool = Workers(1, idle=30)
    ended: list[tuple[int | None, type[BaseException]]] = []
    monkeypatch.setattr(  # how the thread ends, heard here (not as a later test's warning)
        threading, "excepthook", lambda args: ended.append((args.thread.ident, args.exc_type))
    )

    def ctrl_c() -> None:
        raise KeyboardInterrupt

    first = pool.submit(ctrl_c)
    assert first.join(30) and isinstance(first.exception(), KeyboardInterrupt)
    assert wait_for(lambda: ended, timeout=30), "the thread the Ctrl-C ran on did not end"
    assert ended == [(first.ident, KeyboardInterrupt)]
    later = [pool.submit(lambda n=n: n) for n in range(3)]
    assert all(work.join(30) for work in later), "the work after the Ctrl-C never ran"
    assert [work.result() for work in later] == [0, 1, 2]


def test_the_package_starts_five_kinds_of_threads(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    make_simulator: Callable[..., SimulatorServer],
) -> None:
    """A batch, a grid and an async client on a simulator, their threads sampled as they
    run: every thread the package started is of one of the five kinds
    (docs/decisions.md#threads)."""
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path / "home"))
    # the threads themselves, not their idents: a thread that ends frees its ident for
    # the next one started (a new simulator's thread once took an idle worker's)
    before = set(threading.enumerate())
    seen: set[str] = set()
    told_on: set[str] = set()  # the threads the grid's run core told its views from
    sampling = threading.Event()

    def sample() -> None:
        while not sampling.wait(0.005):
            seen.update(t.name for t in threading.enumerate() if t not in before)

    sampler = threading.Thread(target=sample, name="the-test-sampler")
    sampler.start()
    try:
        sim = make_simulator()
        with gw.Client(sim.base_url, "sim-demo-key") as client:
            rows = [{"prompt": f"a fox {i}", "seed": i, "n": 1} for i in range(1, 4)]
            batch = gw.batch(T2I, rows, out=tmp_path / "o", client=client)
            batch.wait(timeout=120, progress="none")
            plan = plan_grid(T2I, {"prompt": "a hen", "n": 1}, ("seed", [1, 2]))
            run = GridRun(plan, client)
            run.listeners.append(lambda: told_on.add(threading.current_thread().name))
            run.submit(wait=False).wait(timeout=120)

            async def use_async() -> str:
                async with gw.AsyncClient(sim.base_url, "sim-demo-key") as aclient:
                    job = await aclient.submit(T2I, {"prompt": "an owl", "n": 1})
                    return (await job.result(60)).status

            assert asyncio.run(use_async()) == "COMPLETED"
        assert [r.status for r in batch.rows] == ["done"] * 3 and run.tally()[:2] == (2, 0)
    finally:
        sampling.set()
        sampler.join(30)
    seen.discard("the-test-sampler")
    kinds = {
        "engine": {n for n in seen if n == "genwidgets-engine"},
        "ledger writer": {n for n in seen if n.startswith("genwidgets-ledger-")},
        "workers": {n for n in seen if n == THREAD_NAME},
        "ticker": {n for n in seen if n == "genwidgets-ticker"},
        # a server's loop, and the threads starlette's own anyio pool runs its file
        # responses and the class gateway's database reads on
        "server": {
            n for n in seen if n in ("genwidgets-simulator", "genwidgets-serve", ANYIO_WORKER)
        },
    }
    others = seen - set().union(*kinds.values())
    assert not others, f"threads of no kind: {sorted(others)}"
    # the run core's work ran on workers: new ones, or ones an earlier test left idle
    assert kinds["server"] and THREAD_NAME in told_on, told_on


def test_a_cancel_that_comes_with_the_result_is_never_lost() -> None:
    """``asyncio.wait_for`` (Python 3.10, 3.11) returns a result that arrives together
    with a cancel and drops the cancel; ``wait_within`` keeps it (3.11 and later)."""

    async def scene() -> BaseException | object:
        ready: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        waiting = asyncio.ensure_future(wait_within(ready, 30))
        await asyncio.sleep(0)  # it waits now
        ready.set_result("made")
        waiting.cancel()  # in the same turn of the loop: a hung-up request
        try:
            return await waiting
        except asyncio.CancelledError as cancelled:
            return cancelled

    outcome = asyncio.run(scene())
    if sys.version_info >= (3, 11):
        assert isinstance(outcome, asyncio.CancelledError), outcome

    async def late() -> None:
        await wait_within(asyncio.sleep(30), 0.01)

    with pytest.raises(TimeoutError):
        asyncio.run(late())


def test_work_submitted_as_a_thread_takes_other_work_gets_a_thread_of_its_own() -> None:
    """A thread that has taken work is busy, though it has not begun it: work submitted
    then gets a thread of its own. Counted free, it once made a batch's sender wait
    behind its finisher, which waited for the sender (a CLI run hung for ever). Here the
    pool's thread is held right after taking the first work until the second is in.

    Held only once it has let the pool's lock go: Python 3.10+ traces the ``with`` line
    again as its block ends, still holding the lock, and a hold there kept the second
    ``submit`` out until the hold's 10 s ran out (the test's whole time)."""
    met, taken, second_in = threading.Event(), threading.Event(), threading.Event()
    first: list[Any] = []

    def hold_after_taking(frame: FrameType, event: str, _arg: Any) -> Any:
        if (
            event == "line"
            and first
            and frame.f_locals.get("work") is first[0]
            and not pool._lock._is_owned()  # type: ignore[attr-defined]  # Condition's own
        ):
            taken.set()
            second_in.wait(10)
        return hold_after_taking

    pool = Workers(4, idle=5)
    threading.settrace(hold_after_taking)
    try:  # the pool's threads start traced
        assert pool.submit(lambda: None).join(30)  # one thread, waiting for work again
        first.append(pool.submit(met.wait, 20))  # ends once the second has run
        assert taken.wait(30), "the pool's thread never took the first work"
        pool.submit(met.set)
        second_in.set()
        assert first[0].join(30) and first[0].result() is True, "the second work never ran"
    finally:
        threading.settrace(None)  # type: ignore[arg-type]
        second_in.set()
        met.set()


#: a pool of one thread, busy or idle in the parent when it forks; the child's work must
#: run there, and the parent's queued work must not (it is the parent's to do)
FORKS_A_POOL = """
import os, sys, threading
from genwidgets._workers import Workers
pool = Workers(1, idle=60)
ran = []
busy = threading.Event()
if sys.argv[1] == "busy":
    release = threading.Event()
    pool.submit(lambda: (busy.set(), release.wait(60)))
    pool.submit(lambda: ran.append("parent's queued work"))
else:
    pool.submit(busy.set)
assert busy.wait(30)
pid = os.fork()
if pid == 0:
    try:
        done = pool.submit(lambda: ran.append("child's work")).join(30)
        code = 0 if done and ran == ["child's work"] else 1
        print(done, ran, flush=True)
    finally:
        os._exit(code)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""


@pytest.mark.parametrize("at_fork", ["busy", "idle"])
def test_a_process_forked_from_a_pool_runs_its_own_work(at_fork: str) -> None:
    """A child inherits the pool's counts of running and idle threads but not the
    threads: its work waited for a thread it believed it had, for ever (a forked
    process's ledger keeper never ran, so its held writes were kept nowhere; review-21
    fault 3). The child starts afresh, without the parent's queued work."""
    child = subprocess.run(
        [sys.executable, "-c", FORKS_A_POOL, at_fork],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.returncode == 0, (child.stdout, child.stderr)
