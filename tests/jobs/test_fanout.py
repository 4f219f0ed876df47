"""The one batch sender: a semaphore on the engine, outcomes in order, each heard
on the caller's thread, an interrupt that says which items never started."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from widgets.taskfakes import wait_for

from genwidgets.jobs.engine import get_engine
from genwidgets.jobs.fanout import Leaving, run_each, valid_concurrency


def wait_until(predicate: Callable[[], bool]) -> bool:
    return wait_for(predicate, timeout=30.0)


class Gate:
    """Works that count themselves in flight and wait until the test opens the gate."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.peak = 0
        self.started: set[int] = set()
        self.finished: set[int] = set()  # ended by themselves, not cancelled
        self.opened = threading.Event()

    def work(self, index: int, fail: bool = False) -> Callable[[Leaving], Awaitable[int]]:
        async def run(leaving: Leaving) -> int:
            leaving.leave()  # on the wire at once, till the gate opens
            self.started.add(index)
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            try:
                while not self.opened.is_set():
                    await asyncio.sleep(0.005)
                self.finished.add(index)
                if fail:
                    raise ValueError(f"item {index} failed")
                return index * 10
            finally:
                self.in_flight -= 1

        return run


def test_at_most_concurrency_run_at_once_and_outcomes_keep_their_order() -> None:
    gate = Gate()
    heard: list[tuple[int, Any, int]] = []
    caller = threading.get_ident()
    result: list[Any] = []
    worker = threading.Thread(
        target=lambda: result.extend(
            run_each(
                get_engine(),
                [gate.work(i, fail=(i == 3)) for i in range(7)],
                concurrency=2,
                on_each=lambda i, o: heard.append((i, o, threading.get_ident())),
            )
        )
    )
    worker.start()
    assert wait_until(lambda: gate.in_flight == 2)  # two started; the others wait their turn
    assert gate.started <= {0, 1, 2, 3, 4, 5, 6} and len(gate.started) == 2
    gate.opened.set()
    worker.join(timeout=60)
    assert not worker.is_alive()
    assert gate.peak == 2
    assert result[:3] == [0, 10, 20] and result[4:] == [40, 50, 60]
    assert isinstance(result[3], ValueError) and "item 3 failed" in str(result[3])
    assert sorted(i for i, _, _ in heard) == list(range(7))  # each heard once
    assert {t for _, _, t in heard} == {worker.ident}  # on the thread that called
    assert caller != worker.ident


def test_an_exception_from_on_each_cancels_the_rest_and_begins_no_other() -> None:
    gate = Gate()

    def stop(index: int, outcome: Any) -> None:
        raise RuntimeError(f"stop after {index}")

    works = [gate.work(0)] + [gate.work(i) for i in range(1, 5)]
    gate.opened.set()  # item 0 ends at once; later ones would too, but the stop comes first

    async def forever(leaving: Leaving) -> int:
        leaving.leave()
        gate.started.add(1)
        await asyncio.Event().wait()
        return 0

    works[1] = forever  # item 1 never ends by itself: what follows waits behind it
    with pytest.raises(RuntimeError, match="stop after"):
        run_each(get_engine(), works, concurrency=1, on_each=stop)
    # one slot, item 1 stuck in it: the last ones never got theirs, and never will
    assert 0 in gate.started <= {0, 1}  # item 1 may have taken the slot before the stop


def test_a_stop_lets_the_works_in_flight_end_within_the_grace_and_begins_no_other() -> None:
    """A stop (Ctrl-C, an error from ``on_each``) with creates in flight: they are let
    end (their answers name paid tasks), at most ``answer_grace`` seconds; the items
    waiting for their turn never begin. Before, what was in flight was cancelled."""
    gate = Gate()

    async def at_once(leaving: Leaving) -> int:
        gate.started.add(0)
        gate.finished.add(0)
        return 0

    def stop(index: int, outcome: Any) -> None:
        gate.opened.set()  # the works in flight answer from now on, after the stop
        raise RuntimeError(f"stop after {index}")

    works = [at_once] + [gate.work(i) for i in range(1, 6)]
    with pytest.raises(RuntimeError, match="stop after 0"):
        run_each(
            get_engine(),
            works,
            concurrency=3,
            on_each=stop,
            answer_grace=60,
        )
    assert {1, 2} <= gate.started and 5 not in gate.started  # two in flight; the last waited
    assert gate.finished == gate.started  # every work begun ended by itself


def test_nothing_to_send_is_an_empty_list() -> None:
    assert run_each(get_engine(), [], concurrency=3) == []


@pytest.mark.parametrize("bad", [0, -2, 1.5, True, None, "3", 1001, 10**20])
def test_a_concurrency_that_is_not_a_whole_number_from_1_to_1000_is_refused(bad: Any) -> None:
    with pytest.raises(ValueError, match=r"whole number 1 or more, at most 1000, not"):
        valid_concurrency(bad)
    with pytest.raises(ValueError, match="concurrency"):
        run_each(get_engine(), [Gate().work(0)], concurrency=bad)


def test_a_batch_from_the_engine_thread_is_refused_with_a_reason() -> None:
    engine = get_engine()

    async def inside() -> str:
        try:
            run_each(engine, [Gate().work(0)], concurrency=1)
        except RuntimeError as exc:
            return str(exc)
        return "no error"

    message = engine.run(inside(), timeout=30)
    assert "engine thread" in message and "job callback" in message


def test_answers_queued_as_the_batch_ends_are_drained_not_taken_for_a_failure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The race a busy machine met: the caller's wait for an answer runs out just as the
    last answers are queued and the batch ends. Those answers are delivered (every
    answer is queued before the batch is done), not "the batch ended before every item
    answered"."""
    import queue as queue_module

    from genwidgets.jobs import fanout as batch_module

    class LateQueue(queue_module.SimpleQueue):  # type: ignore[type-arg]
        """Its first wait runs out after the batch ended, with the answers queued."""

        waited = False

        def get(self, block: bool = True, timeout: float | None = None) -> Any:
            if not LateQueue.waited:
                LateQueue.waited = True
                assert wait_until(lambda: self.qsize() == 3)  # every answer is in
                raise queue_module.Empty
            return super().get(block, timeout)

    monkeypatch.setattr(batch_module.queue, "SimpleQueue", LateQueue)

    async def answer(index: int) -> int:
        return index

    works = [lambda _leaving, i=i: answer(i) for i in range(3)]
    assert run_each(get_engine(), works, concurrency=3) == [0, 1, 2]
    assert LateQueue.waited


def test_a_halted_batch_lets_the_works_on_the_wire_answer_past_any_grace() -> None:
    """``halt`` (an AsyncClient's cancelled call: nobody waits on this thread) cuts no
    work on the wire, even with no grace: a create's answer names a paid task. Before,
    they were cut after ``answer_grace`` and their request ids were lost. The work that
    took its slot but never left is cancelled; the gate opens only after that, so a cut
    would have come first."""
    gate = Gate()
    halt = threading.Event()
    not_left: set[int] = set()

    async def waits_to_leave(leaving: Leaving) -> int:
        try:
            while True:
                await asyncio.sleep(0.005)
        except asyncio.CancelledError:
            not_left.add(2)
            raise

    raised: list[BaseException] = []

    def send() -> None:
        try:
            run_each(
                get_engine(),
                [gate.work(0), gate.work(1), waits_to_leave],
                concurrency=3,
                answer_grace=0.0,
                halt=halt,
            )
        except BaseException as exc:
            raised.append(exc)

    worker = threading.Thread(target=send)
    worker.start()
    assert wait_until(lambda: gate.in_flight == 2)
    halt.set()
    assert wait_until(lambda: not_left == {2})  # the batch stopped: what waited never left
    gate.opened.set()
    worker.join(timeout=60)
    assert not worker.is_alive()
    assert gate.finished == {0, 1}  # both answered: not cut
    assert len(raised) == 1 and isinstance(raised[0], concurrent.futures.CancelledError)


def test_no_on_each_once_the_halt_is_set_even_for_an_answer_already_on_its_way() -> None:
    """The caller is cancelled as an answer comes: work 1 sets ``halt`` and answers once
    ``on_each`` heard work 0, so its outcome reaches the waiting thread after the halt,
    and ``on_each`` is not called for it. Before, the halt was read only before each
    wait for an answer, not after."""
    halt = threading.Event()
    heard: list[int] = []

    async def answers(leaving: Leaving) -> int:
        leaving.leave()
        return 0

    async def halts_then_answers(leaving: Leaving) -> int:
        leaving.leave()
        while not heard:
            await asyncio.sleep(0.005)
        halt.set()
        return 1

    with pytest.raises(concurrent.futures.CancelledError):
        run_each(
            get_engine(),
            [answers, halts_then_answers],
            concurrency=2,
            on_each=lambda i, o: heard.append(i),
            halt=halt,
        )
    assert heard == [0]
