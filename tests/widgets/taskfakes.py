"""Fakes for the task view, board and sweep tests (imported explicitly, not a conftest).

``FakeJob`` follows the Job API views use (``genwidgets._protocols.JobLike``: the
attributes and methods a view may use); the test drives it with ``queue``/``run``/``finish``/
``crash``, optionally from another thread to play the engine thread.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from genwidgets.catalog import validate as catalog_validate
from genwidgets.protocol.records import Result, Status

_ids = itertools.count(1)


@dataclass(frozen=True)
class FakePrepared:
    """What ``FakeClient.prepare`` returns: the request, unchecked."""

    endpoint: str
    payload: dict[str, Any]
    validate: bool = True


def send_in_turn(
    send: Callable[[Any], Any],
    requests: Sequence[Any],
    on_sent: Callable[[int, Any], object] | None,
    on_answer: Callable[[int, Any], object] | None = None,
) -> list[Any]:
    """``send_many`` of the fakes: each request in order on this thread, a failure
    returned in its place, ``on_answer`` told before ``on_sent`` (the real bound is
    tested in tests/jobs/test_fanout.py)."""
    outcomes: list[Any] = []
    for index, prepared in enumerate(requests):
        try:
            outcome = send(prepared)
        except Exception as exc:
            outcome = exc
        outcomes.append(outcome)
        if on_answer is not None:
            on_answer(index, outcome)
        if on_sent is not None:
            on_sent(index, outcome)
    return outcomes


class FakeClient:
    """The client contract with nothing behind it: ``jobs`` (newest first), ``prepare``,
    ``send``/``submit``/``send_many`` that record what they were given."""

    ledger = None
    gateway_name = "fake"

    def __init__(
        self,
        *,
        embedded: bool = True,
        create_delay: float = 0.0,
        fail_on: Callable[[Mapping[str, Any]], BaseException | None] | None = None,
    ) -> None:
        self.embedded = embedded
        self.base_url = "http://127.0.0.1:9"
        self._jobs: list[FakeJob] = []
        self.create_delay = create_delay
        self.fail_on = fail_on
        self.submitted: list[tuple[str, dict[str, Any], bool]] = []
        self.concurrency_asked: list[int] = []
        self._lock = threading.Lock()

    @property
    def jobs(self) -> list[FakeJob]:
        return sorted(self._jobs, key=lambda j: j.submitted_at, reverse=True)

    def adopt(self, job: FakeJob) -> FakeJob:
        self._jobs.append(job)
        return job

    def prepare(
        self, endpoint: str, payload: Mapping[str, Any], *, validate: bool = True
    ) -> FakePrepared:
        """Validated through the catalog, as the real client's ``prepare``."""
        if validate:
            catalog_validate(endpoint, payload)
        return FakePrepared(endpoint, dict(payload), validate)

    def send(self, prepared: FakePrepared, *, headers: Any = None) -> FakeJob:
        time.sleep(self.create_delay)
        error = self.fail_on(prepared.payload) if self.fail_on else None
        if error is not None:
            raise error
        with self._lock:
            self.submitted.append((prepared.endpoint, prepared.payload, prepared.validate))
        return self.adopt(FakeJob(prepared.endpoint, payload=prepared.payload, client=self))

    def submit(
        self, endpoint: str, payload: Mapping[str, Any], *, validate: bool = True
    ) -> FakeJob:
        return self.send(self.prepare(endpoint, payload, validate=validate))

    def send_many(
        self,
        requests: Sequence[FakePrepared],
        *,
        concurrency: int = 4,
        on_sent: Callable[[int, Any], object] | None = None,
        hold: Callable[[], bool] | None = None,
        tags: Sequence[str | None] | None = None,
        on_answer: Callable[[int, Any], object] | None = None,
    ) -> list[Any]:
        self.concurrency_asked.append(concurrency)
        return send_in_turn(self.send, requests, on_sent, on_answer)


class FakeJob:
    """A job whose state the test sets; callbacks run in the caller's thread."""

    def __init__(
        self,
        endpoint: str = "vidVq2-text2video",
        *,
        request_id: str | None = None,
        payload: Mapping[str, Any] | None = None,
        client: FakeClient | None = None,
        queue_position: int | None = 2,
        submitted_at: float | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.request_id = request_id or f"req-{next(_ids):04d}"
        self.payload = dict(payload) if payload is not None else {"prompt": "a red kite"}
        self.client = client if client is not None else FakeClient()
        self._queue_position = queue_position
        self.submitted_at = submitted_at if submitted_at is not None else time.time()
        self.finished_at: float | None = None
        self.last_status: Status | None = None
        self.last_result: Result | None = None
        self.cancel_requested = False
        self.cancel_error: BaseException | None = None
        self.cancel_calls = 0
        self.expected_finish: float | None = None
        self._exception: BaseException | None = None
        self._done = threading.Event()
        self._update_callbacks: list[Callable[[Any], Any]] = []
        self._done_callbacks: list[Callable[[Any], Any]] = []
        self._lock = threading.Lock()

    # -- the API a view uses -------------------------------------------------
    @property
    def simulated(self) -> bool:
        return bool(self.client.embedded)

    @property
    def queue_position(self) -> int | None:
        if self.last_status is not None:
            return self.last_status.queue_position
        return self._queue_position

    @property
    def elapsed(self) -> float:
        return (self.finished_at or time.time()) - self.submitted_at

    def done(self) -> bool:
        return self._done.is_set()

    def result(self, timeout: float | None = None) -> Result:
        if not self._done.wait(timeout):
            raise TimeoutError("not done")
        if self._exception is not None:
            raise self._exception
        assert self.last_result is not None
        return self.last_result

    def exception(self) -> BaseException | None:
        return self._exception if self._done.is_set() else None

    def request_cancel(self) -> None:
        self.cancel_calls += 1
        self.cancel_requested = True

    def add_update_callback(self, fn: Callable[[Any], Any]) -> Callable[[], None]:
        with self._lock:
            self._update_callbacks.append(fn)

        def remove() -> None:
            with self._lock:
                if fn in self._update_callbacks:
                    self._update_callbacks.remove(fn)

        return remove

    def add_done_callback(self, fn: Callable[[Any], Any]) -> None:
        with self._lock:
            if not self._done.is_set():
                self._done_callbacks.append(fn)
                return
        fn(self)

    @property
    def update_callback_count(self) -> int:
        with self._lock:
            return len(self._update_callbacks)

    # -- what the test (playing the engine) does ---------------------------------
    def _notify(self) -> None:
        with self._lock:
            callbacks = list(self._update_callbacks)
        for fn in callbacks:
            fn(self)

    def set_status(self, status: str, queue_position: int | None = None, **raw: Any) -> None:
        body = {"status": status, "queue_position": queue_position, **raw}
        self.last_status = Status.from_body(body, request_id=self.request_id)
        self._notify()

    def queue(self, position: int | None = 2) -> None:
        self.set_status("IN_QUEUE", position)

    def run(self) -> None:
        self.set_status("IN_PROGRESS")

    def finish(
        self,
        outputs: list[Any] | None = None,
        *,
        error: Any = None,
        error_type: str | None = None,
        status: str = "COMPLETED",
    ) -> None:
        body = {
            "request_id": self.request_id,
            "status": status,
            "error": error,
            "error_type": error_type,
            "outputs": outputs or [],
        }
        self.last_status = Status.from_body(body)
        self.finished_at = time.time()
        self.last_result = Result.from_body(body, endpoint=self.endpoint)
        self._notify()
        self._complete()

    def crash(self, exc: BaseException) -> None:
        self.finished_at = time.time()
        self._exception = exc
        self._notify()
        self._complete()

    def _complete(self) -> None:
        with self._lock:
            self._done.set()
            callbacks, self._done_callbacks = self._done_callbacks, []
        for fn in callbacks:
            fn(self)


IMAGE_OUT = {
    "url": "https://cdn.example/files/tok/out-0.png",
    "content_type": "image/png",
    "file_name": "out-0.png",
    "file_size": 1234,
}


def wait_for(predicate: Callable[[], bool], timeout: float = 30.0) -> bool:
    """Poll ``predicate`` until it holds or ``timeout`` passes; return its last value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


def on_thread(fn: Callable[[], Any]) -> None:
    """Run ``fn`` on another thread (the engine's role) and wait for it."""
    errors: list[BaseException] = []

    def target() -> None:
        try:
            fn()
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=target)
    thread.start()
    thread.join(10)
    if errors:
        raise errors[0]


class RecordingHandle:
    """A display handle that records its updates and the thread of each."""

    def __init__(self) -> None:
        self.updates: list[tuple[Any, dict[str, Any]]] = []
        self.threads: list[str] = []

    def update(self, obj: Any, **kwargs: Any) -> None:
        self.updates.append((obj, kwargs))
        self.threads.append(threading.current_thread().name)

    def last_html(self) -> str:
        return str(self.updates[-1][0]["text/html"]) if self.updates else ""

    def htmls(self) -> list[str]:
        return [str(data["text/html"]) for data, _ in self.updates]

    def ended(self) -> bool:
        """The last write is a finished task's face (not the placeholder)."""
        html = self.last_html()
        return "gw-final" in html and "gw-placeholder" not in html


class DisplayRecorder:
    """``IPython.display.display`` recorded: each call's data and arguments, and a
    :class:`RecordingHandle` for each display given a ``display_id``."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, dict[str, Any]]] = []
        self.handles: list[RecordingHandle] = []

    @property
    def handle(self) -> RecordingHandle:
        return self.handles[0]

    def __call__(self, obj: Any, **kwargs: Any) -> RecordingHandle | None:
        self.calls.append((obj, kwargs))
        if not kwargs.get("display_id"):
            return None
        self.handles.append(RecordingHandle())
        return self.handles[-1]


class ForecastJob:
    """A job that is still running and knows roughly when it will finish."""

    def __init__(self, n: int) -> None:
        self.request_id = f"req-{n}"
        self.endpoint = "genW2.5-t2i-preview"
        self.payload: dict[str, Any] = {}
        self.last_status = None
        self.last_result = None
        self.queue_position = None
        self.expected_finish = 12.0 + n

    def done(self) -> bool:
        return False

    def add_update_callback(self, fn: Any) -> Callable[[], None]:
        return lambda: None

    def add_done_callback(self, fn: Any) -> None:
        return None


class ForecastClient:
    """prepare/send of the public Client API, sending nothing anywhere."""

    embedded = True
    ledger = None
    gateway_name = "forecast"

    def __init__(self) -> None:
        self.sent: list[Any] = []

    def prepare(self, endpoint: str, payload: Any) -> Any:
        return (endpoint, dict(payload))

    def send(self, prepared: Any) -> ForecastJob:
        self.sent.append(prepared)
        return ForecastJob(len(self.sent))

    def send_many(
        self,
        requests: Any,
        *,
        concurrency: int = 4,
        on_sent: Any = None,
        hold: Any = None,
        tags: Any = None,
        on_answer: Any = None,
    ) -> list[Any]:
        return send_in_turn(self.send, requests, on_sent, on_answer)


def ask(view: Any, name: str, msg: Any = None) -> Any:
    """What a page's ask of ``name`` gets back: the ask goes in as the page sends it
    (anywidget's command envelope, ``static/faces.js``) through anywidget's own command
    dispatch, and the reply is taken off the wire (every other message goes on)."""
    asked = f"test-{next(_ids)}"
    replies: list[Any] = []
    own = vars(view).get("send")  # a test's own recorder stays in place
    forward = view.send

    def send(content: Any, buffers: Any = None) -> None:
        if isinstance(content, dict) and content.get("id") == asked:
            assert content["kind"] == "anywidget-command-response"
            replies.append(content["response"])
        else:
            forward(content, buffers)

    view.send = send
    try:
        envelope = {"id": asked, "kind": "anywidget-command", "name": name, "msg": msg or {}}
        view._handle_custom_msg(envelope, [])
    finally:
        if own is None:
            del view.send
        else:
            view.send = own
    [reply] = replies  # one answer, every time: never silence
    return reply
