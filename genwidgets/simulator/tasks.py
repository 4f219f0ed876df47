"""Tasks in memory and the scheduler that runs ``workers`` of them at once.

Run time is the kind's demo duration (or ``X-Sim-Duration``) over the speed in force
when the task starts. Its media is made in a worker thread meanwhile and completion
waits for it, so the files exist once ``COMPLETED`` is seen. A running task is one
coroutine sleeping on a loop timer: a status request only reads fields.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any

from .files import FileStore, StoredFile
from .inputs import InputTooLarge
from .outputs import produce
from .synth import MediaFile

log = logging.getLogger("genwidgets.simulator")

IN_QUEUE, IN_PROGRESS, COMPLETED = "IN_QUEUE", "IN_PROGRESS", "COMPLETED"
RUNTIME_ERROR = "Runtime execution failed"
CANCELLED_ERROR = "cancelled by user"


@dataclass
class Output:
    """One entry of ``outputs``: a stored file, and/or inline content."""

    file: StoredFile | None
    content_type: str
    file_name: str
    size: int
    inline: str | None = None
    encoding: str | None = None

    def body(self, base_url: str) -> dict[str, Any]:
        url = base_url + self.file.url_path if self.file is not None else None
        given = {"url": url, "content": self.inline, "encoding": self.encoding or None}
        entry = {"content_type": self.content_type, "file_name": self.file_name}
        return entry | {"file_size": self.size} | {k: v for k, v in given.items() if v is not None}


@dataclass
class Task:
    request_id: str
    endpoint: str
    kind: str
    key: str
    payload: dict[str, Any]
    seed: int
    base_seconds: float
    fails: bool
    base_url: str
    context: dict[str, Any] = field(default_factory=dict)
    status: str = IN_QUEUE
    created_at: float = field(default_factory=time.time)
    started_at: float | None = None
    #: seconds the task runs once started (set when it starts; the logs pace on it)
    run_seconds: float | None = None
    completed_at: float | None = None
    error: str | None = None
    error_type: str | None = None
    outputs: list[Output] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)
    runner: asyncio.Task[None] | None = field(default=None, repr=False)


class Scheduler:
    """Owns every task; starts queued ones as slots free up. Event-loop only."""

    def __init__(
        self,
        *,
        workers: Callable[[], int],
        speed: Callable[[], float],
        executor: Executor,
        files: FileStore,
        finish: Callable[[Task, float], list[MediaFile]],
    ) -> None:
        self.tasks: dict[str, Task] = {}
        self._queue: deque[Task] = deque()
        self._running: set[str] = set()
        self._workers = workers  # the config in force (PUT /_sim/config changes it)
        self._speed = speed
        self._executor = executor
        self._files = files
        self._finish = finish

    def submit(self, task: Task) -> None:
        self.tasks[task.request_id] = task
        self._queue.append(task)
        self._pump()

    def place(self, task: Task) -> int | None:
        """The task's 0-based place in the queue, or None when it is not queued."""
        return next((index for index, queued in enumerate(self._queue) if queued is task), None)

    def cancel(self, task: Task) -> bool:
        """End a live task as cancelled; False if it had already completed."""
        if task.status == COMPLETED:
            return False
        if task.status == IN_QUEUE:
            self._queue.remove(task)
        elif task.runner is not None:
            task.runner.cancel()
        self._complete(task, CANCELLED_ERROR, "cancelled")
        return True

    def shutdown(self) -> None:
        for task in list(self.tasks.values()):
            if task.runner is not None and not task.runner.done():
                task.runner.cancel()

    # ------------------------------------------------------------------ internals

    def _pump(self) -> None:
        while self._queue and len(self._running) < self._workers():
            task = self._queue.popleft()
            task.status, task.started_at = IN_PROGRESS, time.time()
            self._running.add(task.request_id)
            task.runner = asyncio.get_running_loop().create_task(self._run(task))

    def _complete(self, task: Task, error: str | None, error_type: str | None) -> None:
        task.status, task.completed_at = COMPLETED, time.time()
        task.error, task.error_type = error, error_type
        self._running.discard(task.request_id)
        self._pump()

    async def _run(self, task: Task) -> None:
        loop = asyncio.get_running_loop()
        run_seconds = task.run_seconds = task.base_seconds / self._speed()
        try:
            made = None if task.fails else loop.run_in_executor(self._executor, self._make, task)
            await asyncio.sleep(run_seconds)
            if made is None:
                self._complete(task, RUNTIME_ERROR, "runtime_error")
                return
            outputs, facts = await made
            if task.status == COMPLETED:  # cancelled while the media was being made
                self._drop(outputs)
                return
            task.facts = facts
            for made_file in self._finish(task, self._speed()):
                outputs.append(self._store(made_file))
            task.outputs = outputs
            self._complete(task, None, None)
        except asyncio.CancelledError:
            if made is not None:
                made.add_done_callback(self._drop_later)
            raise
        except InputTooLarge as exc:  # said, as a gateway says an input it cannot take
            why = exc.reason(task.endpoint, task.payload)
            self._complete(task, f"{RUNTIME_ERROR}: {why}", "runtime_error")
        except Exception:
            log.exception("simulated task %s (%s) failed", task.request_id, task.endpoint)
            if task.status != COMPLETED:
                self._complete(task, RUNTIME_ERROR, "runtime_error")

    def _make(self, task: Task) -> tuple[list[Output], dict[str, Any]]:
        """Worker thread: produce the media and write the files."""
        produced = produce(
            task.endpoint, task.kind, task.payload, task.seed, task.context, self._files
        )
        return [self._store(f) for f in produced.files], produced.facts

    def _store(self, made: MediaFile) -> Output:
        if made.hex_only:
            hexed = made.data.hex()
            return Output(None, made.content_type, made.name, len(made.data), hexed, "hex")
        stored = self._files.put(made.name, made.content_type, made.data)
        return Output(stored, made.content_type, stored.name, stored.size, inline=made.inline)

    def _drop(self, outputs: list[Output]) -> None:
        for out in outputs:
            if out.file is not None:
                self._files.discard(out.file)

    def _drop_later(self, future: asyncio.Future[tuple[list[Output], dict[str, Any]]]) -> None:
        if not future.cancelled() and future.exception() is None:
            self._drop(future.result()[0])
