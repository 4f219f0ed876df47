"""The one contract of a Job and of a Client for everything above the client.

Forms, the task view, the board, grids, sweeps and the grid store code against
these typed ``Protocol``s rather than the concrete classes, so a test double or
another client fits without ``getattr`` probing. :class:`genwidgets.jobs.job.Job`
and :class:`genwidgets._client.Client` satisfy them (mypy checks it in ``_client``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .jobs.ledger import Ledger
    from .protocol.prepared import PreparedRequest
    from .protocol.records import Result, Status

__all__ = ["ClientLike", "JobLike"]


class JobLike(Protocol):
    """One task as a view sees it: identity, last known state, waits and callbacks."""

    @property
    def endpoint(self) -> str: ...

    @property
    def request_id(self) -> str: ...

    @property
    def queue_position(self) -> int | None: ...

    @property
    def elapsed(self) -> float: ...

    @property
    def status_text(self) -> str: ...

    @property
    def expected_finish(self) -> float | None: ...  # seconds from now, from the schedule

    @property
    def simulated(self) -> bool: ...  # runs on the embedded simulator

    payload: dict[str, Any] | None
    submitted_at: float
    finished_at: float | None
    last_status: Status | None
    last_result: Result | None
    cancel_requested: bool
    cancel_error: BaseException | None  # why the last cancel asked was not sent

    def done(self) -> bool: ...

    def result(
        self, timeout: float | None = None, *, cancel_on_timeout: bool = False
    ) -> Result: ...

    def exception(self) -> BaseException | None: ...  # why it ended without a result

    def status(self, *, retries: int | None = None) -> Status: ...  # asked of the gateway now

    def cancel(self) -> None: ...

    def request_cancel(self) -> None: ...

    def add_done_callback(self, fn: Callable[[Any], Any]) -> None: ...

    def add_update_callback(self, fn: Callable[[Any], Any]) -> Callable[[], None]: ...

    # The order at the end is part of the contract: the update callbacks see the final
    # state before ``done()`` turns true and ``result()`` returns, so a view that
    # rewrites itself on the last update is drawn before a waiting cell ends.


class ClientLike(Protocol):
    """A client as everything above it uses it (forms, the task view, the board, grids,
    sweeps, the grid store): the one-trip submit, re-attaching, its jobs, history, ledger."""

    @property
    def embedded(self) -> bool: ...

    @property
    def base_url(self) -> str: ...

    @property
    def gateway_name(self) -> str: ...  # how the ledger names the gateway

    @property
    def jobs(self) -> Sequence[JobLike]: ...  # newest first

    @property
    def ledger(self) -> Ledger | None: ...

    def prepare(
        self, endpoint: str, payload: Mapping[str, Any], *, validate: bool = True
    ) -> PreparedRequest: ...

    def send(
        self, prepared: PreparedRequest, *, headers: Mapping[str, str] | None = None
    ) -> JobLike: ...

    def send_many(
        self,
        requests: Sequence[PreparedRequest],
        *,
        concurrency: int = 4,
        on_sent: Callable[[int, Any], object] | None = None,
        hold: Callable[[], bool] | None = None,
        tags: Sequence[str | None] | None = None,
        on_answer: Callable[[int, Any], object] | None = None,
    ) -> Sequence[JobLike | Exception]: ...  # the one batch sender (grids, sweeps)

    def submit(
        self,
        endpoint: str,
        payload: Mapping[str, Any],
        *,
        validate: bool = True,
        headers: Mapping[str, str] | None = None,
    ) -> JobLike: ...

    def job(self, endpoint: str, request_id: str) -> JobLike: ...  # re-attach, never creates

    def history(
        self,
        endpoint: str | None = None,
        status: str | None = None,
        limit: int | None = None,
    ) -> Sequence[JobLike]: ...  # newest first
