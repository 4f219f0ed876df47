"""Scenarios of the fault suite, shared by the tests and by ``report.py``.

Each scenario drives a real :class:`genwidgets.Client` against a simulator on
127.0.0.1, counts what the simulator injected and what the client made of it,
and returns its figures with a list of ``problems``: every broken promise
(a lost task, a duplicate create, a ledger row that disagrees) in words. The
tests assert ``problems == []`` and the report prints the figures, so both
read the same numbers.

Ground truth comes from three independent places: the simulator's own task
store (what was really created and how each task ended), a counting transport
under the client (every answer by operation and HTTP status, i.e. the faults
the client met), and the ledger on disk.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import uvicorn

import genwidgets as gw
from genwidgets.errors import GatewayError, RateLimited, TaskTimeout
from genwidgets.jobs.job import Job
from genwidgets.jobs.ledger import FINISHED, NOT_CREATED, LedgerRow
from genwidgets.protocol.records import Result
from genwidgets.simulator import DEMO_KEY, SimConfig, SimulatorServer
from genwidgets.simulator.app import SimState, create_app

#: where genwidgets keeps its ledger and outputs (README)
ENV_HOME = "GENWIDGETS_HOME"

#: The cheapest endpoints to run by the thousand. ``asset-get`` answers a JSON record
#: (inline, and as a file); every ``FILE_EVERY``-th task is ``speechM-02-turbo``, whose
#: MP3 output is downloaded from its URL. (The simulator spends about 25 ms of CPU on an
#: MP3 and 80 ms on an image's PNG: a thousand of those would measure the encoder.)
CHEAP_ENDPOINT = "asset-get"
FILE_ENDPOINT = "speechM-02-turbo"
FILE_EVERY = 10
#: Answers that are injected faults when the simulator sends them on status/result.
FAULT_CODES = frozenset({429, 502, 503})


@contextlib.contextmanager
def genwidgets_home(path: Path) -> Iterator[Path]:
    """Point ``GENWIDGETS_HOME`` (ledger and downloaded outputs) at ``path`` for a while."""
    previous = os.environ.get(ENV_HOME)
    os.environ[ENV_HOME] = str(path)
    try:
        yield path
    finally:
        if previous is None:
            os.environ.pop(ENV_HOME, None)
        else:
            os.environ[ENV_HOME] = previous


def cheap_task(index: int) -> tuple[str, dict[str, Any]]:
    """The endpoint and payload of task number ``index`` of a load run."""
    if index % FILE_EVERY == 0:
        return FILE_ENDPOINT, {"text": f"task {index}"}
    return CHEAP_ENDPOINT, {"Id": "asset-demo"}


def operation_of(method: str, path: str) -> str:
    """Which queue operation a request is (create, status, result, cancel, files)."""
    if path.startswith("/files/"):
        return "files"
    if method == "POST" and path.startswith("/v1/queue/"):
        return "create"
    tail = path.rstrip("/").rsplit("/", 1)[-1]
    return {"status": "status", "response": "result", "cancel": "cancel"}.get(tail, "other")


def request_id_of(path: str) -> str | None:
    """The request id in ``/v1/queue/{endpoint}/requests/{id}/...``, if any."""
    parts = path.split("/")
    if "requests" in parts:
        at = parts.index("requests") + 1
        return parts[at] if at < len(parts) else None
    return None


class TallyingTransport(httpx.AsyncBaseTransport):
    """The client's transport, counting every answer by operation and HTTP status.

    It sees exactly what the client sees, so its counts are the faults the client
    met (the simulator counts requests, not the answers it faked). Runs on the
    engine thread only.
    """

    def __init__(self) -> None:
        self._inner = httpx.AsyncHTTPTransport()
        self.answers: Counter[tuple[str, int]] = Counter()
        self.transport_errors: Counter[str] = Counter()
        #: request ids whose status/result requests met at least one injected fault
        self.faulted: set[str] = set()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        op = operation_of(request.method, request.url.path)
        try:
            response = await self._inner.handle_async_request(request)
        except httpx.TransportError:
            self.transport_errors[op] += 1
            raise
        self.answers[(op, response.status_code)] += 1
        request_id = request_id_of(request.url.path)
        if response.status_code in FAULT_CODES and request_id is not None:
            self.faulted.add(request_id)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()

    def count(self, ops: tuple[str, ...], codes: frozenset[int] | tuple[int, ...]) -> int:
        return sum(n for (op, code), n in self.answers.items() if op in ops and code in codes)


class RateLimitBursts:
    """Bursts of 429: the simulator's rate limit switched on live (``PUT /_sim/config``)
    for ``length`` seconds every ``period`` seconds, in a thread, while the block runs."""

    def __init__(self, base_url: str, *, rate: float, period: float, length: float) -> None:
        if not 0 < length < period:
            raise ValueError("a burst must be shorter than its period")
        self.base_url, self.rate, self.period, self.length = base_url, rate, period, length
        self.bursts = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rate-limit-bursts", daemon=True)

    def _switch(self, http: httpx.Client, rate: float | None) -> None:
        http.put(f"{self.base_url}/_sim/config", json={"rate_limit": rate}).raise_for_status()

    def _run(self) -> None:
        with httpx.Client(timeout=10.0) as http:
            while not self._stop.wait(self.period - self.length):
                self._switch(http, self.rate)
                self.bursts += 1
                self._stop.wait(self.length)
                self._switch(http, None)

    def __enter__(self) -> RateLimitBursts:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(15)
        with httpx.Client(timeout=10.0) as http:
            self._switch(http, None)


# --------------------------------------------------------------------------- 1. load


@dataclass
class LoadFigures:
    """What a fault-load run did; ``problems`` lists every broken promise."""

    tasks: int
    wall_seconds: float = 0.0
    created_on_gateway: int = 0
    create_requests: int = 0
    gateway_create_requests: int = 0
    rejected_resubmitted: int = 0
    not_created_rows: int = 0
    answers_5xx: dict[int, int] = field(default_factory=dict)
    answers_429: dict[str, int] = field(default_factory=dict)
    rate_limit_bursts: int = 0
    runtime_failures: int = 0
    completed_ok: int = 0
    failed_with_request_id: int = 0
    gateway_errors: list[str] = field(default_factory=list)
    met_a_fault: int = 0
    recovered: int = 0
    lost: int = 0
    duplicated_creates: int = 0
    ledger_rows: int = 0
    outputs_on_disk: int = 0
    requests: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def faults_injected(self) -> int:
        return (
            sum(self.answers_5xx.values())
            + sum(self.answers_429.values())
            + (self.runtime_failures)
        )


def _submit_until_accepted(
    client: gw.Client, index: int, duration: str, rejected: list[int], lock: threading.Lock
) -> Job:
    """Submit one task; a create refused by the rate limit (after the client's own
    retries) is the user's to resubmit, and is counted."""
    while True:
        try:
            endpoint, payload = cheap_task(index)
            return client.submit(endpoint, payload, headers={"X-Sim-Duration": duration})
        except RateLimited as exc:
            with lock:
                rejected.append(index)
            time.sleep(min(exc.retry_after or 1.0, 5.0))


def run_fault_load(
    tasks: int,
    home: Path,
    *,
    error_rate: float = 0.1,
    fail_rate: float = 0.05,
    burst_rate: float = 5.0,
    burst_period: float = 5.0,
    burst_length: float = 2.5,
    speed: float = 100.0,
    duration: str = "50",
    workers: int = 256,
    submitters: int = 8,
    deadline: float = 180.0,
    seed: int = 7,
) -> LoadFigures:
    """``tasks`` tasks through one client with 5xx on polls, 429 bursts and runtime failures.

    ``duration`` (X-Sim-Duration, before ``speed``) keeps each task alive for a few
    polls; ``deadline`` bounds the whole run, so a hang shows up as lost tasks.
    """
    figures = LoadFigures(tasks=tasks)
    config = SimConfig(
        speed=speed, workers=workers, error_rate=error_rate, fail_rate=fail_rate, seed=seed
    )
    rejected: list[int] = []
    lock = threading.Lock()
    outcomes: dict[str, Result | BaseException] = {}
    with genwidgets_home(home), SimulatorServer(config, host="127.0.0.1", port=0) as sim:
        tally = TallyingTransport()
        # The status budget (50/s by default) is measured in benchmarks/; here it would
        # only stretch a fault test of 1000 short tasks, so it is set well above need.
        client = gw.Client(
            sim.base_url, DEMO_KEY, transport=tally, max_in_flight=32, max_status_rate=1000
        )
        started = time.monotonic()
        submit_errors: list[BaseException] = []
        jobs: list[Job] = []
        with (
            RateLimitBursts(
                sim.base_url, rate=burst_rate, period=burst_period, length=burst_length
            ) as bursts,
            ThreadPoolExecutor(submitters, thread_name_prefix="submitter") as pool,
        ):
            pending: list[Future[Job]] = [
                pool.submit(_submit_until_accepted, client, i, duration, rejected, lock)
                for i in range(tasks)
            ]
            for future in pending:
                try:
                    jobs.append(future.result(timeout=max(0.1, deadline)))
                except Exception as exc:  # a create that failed otherwise: counted as lost
                    submit_errors.append(exc)
            for job in jobs:
                remaining = max(0.1, deadline - (time.monotonic() - started))
                try:
                    outcomes[job.request_id] = job.result(timeout=remaining)
                except (GatewayError, TaskTimeout) as exc:
                    outcomes[job.request_id] = exc
        figures.wall_seconds = time.monotonic() - started
        figures.rate_limit_bursts = bursts.bursts
        gateway_tasks = dict(sim.state.scheduler.tasks)
        gateway_stats = httpx.get(f"{sim.base_url}/_sim/stats", timeout=10).json()
        rows = client.ledger.rows(client.gateway_name) if client.ledger else []
        figures.requests = client.request_counts
        client.close()

    figures.created_on_gateway = len(gateway_tasks)
    figures.create_requests = figures.requests["create"]
    figures.gateway_create_requests = int(gateway_stats["create"])
    figures.rejected_resubmitted = len(rejected)
    figures.answers_5xx = {
        code: tally.count(("status", "result"), (code,)) for code in (500, 502, 503, 504)
    }
    figures.answers_5xx = {k: v for k, v in figures.answers_5xx.items() if v}
    figures.answers_429 = {
        op: tally.count((op,), (429,)) for op in ("create", "status", "result", "files")
    }
    figures.runtime_failures = sum(
        1 for t in gateway_tasks.values() if t.error_type == "runtime_error"
    )
    _account(figures, jobs, outcomes, submit_errors, gateway_tasks, tally, rows)
    return figures


def _account(
    figures: LoadFigures,
    jobs: list[Job],
    outcomes: dict[str, Result | BaseException],
    submit_errors: list[BaseException],
    gateway_tasks: dict[str, Any],
    tally: TallyingTransport,
    rows: list[LedgerRow],
) -> None:
    """Every task accounted for, no duplicate, and a ledger that agrees."""
    problems = figures.problems
    for exc in submit_errors:
        problems.append(f"a submit failed with {type(exc).__name__}: {exc}")
    job_ids = [job.request_id for job in jobs]
    if len(set(job_ids)) != len(job_ids):
        problems.append("two jobs share a request_id")
    figures.lost = figures.tasks - len(jobs)
    for request_id, outcome in outcomes.items():
        if isinstance(outcome, Result):
            if outcome.request_id != request_id:
                problems.append(f"result of {request_id} carries {outcome.request_id}")
                figures.lost += 1
            elif outcome.ok:
                figures.completed_ok += 1
            else:
                figures.failed_with_request_id += 1
        elif isinstance(outcome, GatewayError) and outcome.request_id == request_id:
            figures.failed_with_request_id += 1
            figures.gateway_errors.append(f"{type(outcome).__name__}: {outcome}")
        else:
            figures.lost += 1
            problems.append(f"task {request_id} ended without an outcome: {outcome!r}")
    if figures.lost:
        problems.append(f"{figures.lost} task(s) lost")

    gateway_ids = set(gateway_tasks)
    figures.duplicated_creates = max(0, figures.created_on_gateway - len(set(job_ids)))
    if gateway_ids != set(job_ids):
        problems.append(
            f"the gateway holds {len(gateway_ids)} tasks, the client {len(set(job_ids))} jobs; "
            f"{len(gateway_ids - set(job_ids))} created but not handed to the user"
        )
    if figures.created_on_gateway != figures.tasks:
        problems.append(
            f"{figures.created_on_gateway} tasks created on the gateway for {figures.tasks} asked"
        )
    refused_creates = tally.count(("create",), (429,))
    if figures.create_requests - refused_creates != figures.tasks:
        problems.append(
            f"{figures.create_requests} create requests, {refused_creates} refused with 429: "
            f"that is not one accepted create per task"
        )
    if figures.create_requests != figures.gateway_create_requests:
        problems.append(
            f"the client sent {figures.create_requests} creates, the gateway counted "
            f"{figures.gateway_create_requests}"
        )
    failed_on_gateway = {i for i, t in gateway_tasks.items() if t.error_type == "runtime_error"}
    failed_seen = {
        i for i, o in outcomes.items() if isinstance(o, Result) and o.error_type == "runtime_error"
    }
    if failed_on_gateway != failed_seen:
        problems.append(
            f"{len(failed_on_gateway)} runtime failures on the gateway, {len(failed_seen)} "
            "reported to the user"
        )
    finished = {i for i, o in outcomes.items() if isinstance(o, Result | GatewayError)}
    figures.met_a_fault = len(tally.faulted & set(job_ids))
    figures.recovered = len(tally.faulted & finished)
    _check_ledger(figures, outcomes, rows)


def _check_ledger(
    figures: LoadFigures, outcomes: dict[str, Result | BaseException], rows: list[LedgerRow]
) -> None:
    problems = figures.problems
    with_id = [r for r in rows if r.request_id is not None]
    without_id = [r for r in rows if r.request_id is None]
    figures.ledger_rows = len(with_id)
    figures.not_created_rows = sum(1 for r in without_id if r.state == NOT_CREATED)
    ids = [r.request_id for r in with_id]
    if len(ids) != len(set(ids)):
        problems.append("the ledger has two rows for one request_id")
    if set(ids) != set(outcomes):
        problems.append(f"the ledger has {len(set(ids))} tasks, the client {len(outcomes)}")
    stray = [r for r in without_id if r.state != NOT_CREATED]
    if stray:
        problems.append(f"{len(stray)} ledger row(s) without a task in state {stray[0].state}")
    if figures.not_created_rows != figures.rejected_resubmitted:
        problems.append(
            f"{figures.rejected_resubmitted} creates refused by the rate limit, but "
            f"{figures.not_created_rows} ledger rows say not_created"
        )
    for row in with_id:
        outcome = outcomes.get(row.request_id or "")
        if isinstance(outcome, Result):
            if row.state != FINISHED or row.ok != outcome.ok:
                problems.append(
                    f"ledger row of {row.request_id}: state {row.state}, ok {row.ok}; "
                    f"the result says ok={outcome.ok}"
                )
            elif outcome.ok:
                figures.outputs_on_disk += _outputs_on_disk(row, problems)
        elif row.state == FINISHED:
            problems.append(f"ledger row of {row.request_id} finished, but the job raised")


def _outputs_on_disk(row: LedgerRow, problems: list[str]) -> int:
    saved = 0
    for record in row.outputs:
        path = Path(record["path"]) if record.get("path") else None
        if path is None or not path.is_file():
            problems.append(f"output {record.get('index')} of {row.request_id} is not on disk")
        elif record.get("file_size") not in (None, path.stat().st_size):
            problems.append(f"output {path} has {path.stat().st_size} bytes, not the record's")
        else:
            saved += 1
    return saved


# --------------------------------------------------------------------------- 2. restart


class RestartableSimulator:
    """A simulator whose HTTP front can be killed and restarted on the same port while
    its task store and running tasks live on (a gateway restart that keeps its state).

    :class:`SimulatorServer` cannot do this: ``stop()`` closes its ``SimState`` and
    ``start()`` makes a fresh one, and its serving loop cancels every running task on
    the way out. Here the app runs on an event loop of its own that outlives each
    uvicorn server, so the tasks go on running while the front is down.
    """

    def __init__(self, config: SimConfig) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()
        self.app, self.state = create_app(config)
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        self.port = probe.getsockname()[1]
        probe.close()
        self._server: uvicorn.Server | None = None
        self._serving: Future[None] | None = None
        self.restarts = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def sim_state(self) -> SimState:
        return self.state

    def start(self, timeout: float = 15.0) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", self.port))
        sock.listen(256)
        config = uvicorn.Config(
            self.app, log_level="warning", access_log=False, lifespan="off",
            timeout_graceful_shutdown=1,
        )  # fmt: skip
        self._server = uvicorn.Server(config)
        self._serving = asyncio.run_coroutine_threadsafe(
            self._server.serve(sockets=[sock]), self.loop
        )
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if self._serving.done() or time.monotonic() > deadline:
                raise RuntimeError(f"the simulator front did not start on {self.base_url}")
            time.sleep(0.01)

    def kill(self) -> None:
        """Stop answering at once (open connections are dropped); tasks keep running."""
        if self._server is None or self._serving is None:
            return
        self._server.should_exit = True
        self._server.force_exit = True
        self._serving.result(timeout=15)
        self._server = self._serving = None

    def restart(self) -> None:
        self.kill()
        self.start()
        self.restarts += 1

    def close(self) -> None:
        self.kill()
        done = threading.Event()

        def shut() -> None:
            self.state.close()
            done.set()

        self.loop.call_soon_threadsafe(shut)
        done.wait(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)

    def __enter__(self) -> RestartableSimulator:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def wait_until(condition: Any, timeout: float, what: str, step: float = 0.05) -> None:
    """Poll ``condition()`` until true; fail with ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(step)


def damage_root_page(path: Path, table: str) -> None:
    """Overwrite the root page of ``table`` in the ledger file ``path`` with garbage
    (after a checkpoint, so the page is in the file), as a failing disk might."""
    con = sqlite3.connect(path)
    page_size = con.execute("PRAGMA page_size").fetchone()[0]
    (root,) = con.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    with path.open("r+b") as f:
        f.seek((root - 1) * page_size)
        f.write(b"\xa5" * page_size)


# --------------------------------------------------------------------------- 3. kill


#: The client process that is SIGKILLed: submits, prints its request ids, then polls.
CLIENT_SCRIPT = """\
import sys

import genwidgets as gw

base_url, key, count, duration = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
client = gw.Client(base_url, key)
jobs = [
    client.submit(
        "speechM-02-turbo",
        {"text": f"killed client task {i}"},
        headers={"X-Sim-Duration": duration},
    )
    for i in range(count)
]
for job in jobs:
    print(job.request_id, flush=True)
print("polling", flush=True)
for job in jobs:
    job.result()
print("finished", flush=True)
"""


def start_client_process(home: Path, base_url: str, count: int, duration: str) -> Any:
    """Run :data:`CLIENT_SCRIPT` in a child Python with ``GENWIDGETS_HOME`` = ``home``."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("GENWIDGETS_")}
    env[ENV_HOME] = str(home)
    return subprocess.Popen(
        [sys.executable, "-c", CLIENT_SCRIPT, base_url, DEMO_KEY, str(count), duration],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def read_until(stream: Any, marker: str, timeout: float) -> list[str]:
    """Lines of a child's stdout up to ``marker`` (excluded), or an error after ``timeout``.

    A thread does the reading: ``select`` on a buffered text stream would miss lines
    already pulled into Python's buffer.
    """
    import queue

    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        for line in iter(stream.readline, ""):
            lines.put(line.strip())
            if line.strip() == marker:
                return
        lines.put("")  # end of output

    threading.Thread(target=pump, name="child-stdout", daemon=True).start()
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while True:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise AssertionError(
                f"no {marker!r} from the child within {timeout:g} s: {seen}"
            ) from None
        if line == marker:
            return seen
        if not line:
            raise AssertionError(f"the child ended before {marker!r}: {seen}")
        seen.append(line)
