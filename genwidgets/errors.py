"""The one exception tree, as in httpx; why: docs/decisions.md#client-api-and-the-error-tree::
    GenwidgetsError
    ├── PayloadError (also ValueError)      .errors: [{"loc": ("field", ...), "msg": str}]
    ├── GatewayError                        an answer came; .status_code .code .detail .request_id
    │   ├── Unauthorized                    UNAUTHORIZED / missing bearer token
    │   ├── RateLimited                     RATE_LIMIT_EXCEEDED, .retry_after (seconds or None)
    │   ├── ModelNotAllowed                 "Model not allowed for this user"
    │   ├── EndpointNotFound                "App not found: <endpoint>"
    │   ├── WebhookNotSupported             "webhook not supported"
    │   ├── NotSupported                    sync path / SSE stream
    │   ├── RequestNotFound                 404 "Request not found"
    │   ├── RuntimeFailed                   "Runtime execution failed"
    │   └── ServerError                     5xx, or a broken answer to status/result/cancel
    │       └── ResultMissing               said ended; its result answers 404 (billed)
    ├── NoAnswer                            no (readable) answer came: do not retry it blindly
    │   ├── Unreachable                     nothing was sent (connect failed): safe to try again
    │   ├── OutcomeUnknown                  create sent, answer lost: a task may exist
    │   └── ClientClosed                    the client is closed; a task may run (.never_sent: none)
    ├── AmbiguousClient                     live clients of several gateways: pass client=
    ├── BudgetExceeded                      a batch's plan bills more than its budget allows
    ├── TaskFailed                          COMPLETED with error; .result
    ├── TaskTimeout (also TimeoutError)     .job
    ├── DownloadError                       outputs not saved; .failures [(index, reason)]
    ├── LedgerError                         the task ledger file cannot be used
    │   └── NotRecorded                     a batch's create not sent: the home cannot record it
    ├── SimulatorStartError (also RuntimeError)   the local simulator did not start
    └── ServeError                          the class gateway refused or failed; .status .code
    GenwidgetsWarning (UserWarning)
    ├── UnknownFieldWarning                 a field the endpoint does not know, sent as is
    ├── IneffectiveFieldWarning             a field the service ignores in this combination
    ├── DeprecatedFieldWarning              a field the spec marks deprecated
    ├── MediaWarning                        media sent but unwise (large Base64, unchecked)
    └── LedgerWarning                       the ledger is off, or a damaged file was set aside
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from ._config import hide_userinfo, redact
from ._formats import terminal_text

__all__ = [
    "AmbiguousClient",
    "BudgetExceeded",
    "ClientClosed",
    "DeprecatedFieldWarning",
    "DownloadError",
    "EndpointNotFound",
    "GatewayError",
    "GenwidgetsError",
    "GenwidgetsWarning",
    "IneffectiveFieldWarning",
    "LedgerError",
    "LedgerWarning",
    "MediaWarning",
    "ModelNotAllowed",
    "NoAnswer",
    "NotRecorded",
    "NotSupported",
    "OutcomeUnknown",
    "PayloadError",
    "RateLimited",
    "RequestNotFound",
    "ResultMissing",
    "RuntimeFailed",
    "ServeError",
    "ServerError",
    "SimulatorStartError",
    "TaskFailed",
    "TaskTimeout",
    "Unauthorized",
    "UnknownFieldWarning",
    "Unreachable",
    "WebhookNotSupported",
]


def _where(endpoint: str | None, request_id: str | None) -> str:
    parts = []
    if endpoint:
        parts.append(f"endpoint {endpoint}")
    if request_id:
        parts.append(f"request_id {request_id}")
    return f" [{', '.join(parts)}]" if parts else ""


def _shown(text: str) -> str:
    """A text an error keeps: redacted, and inert on a terminal in one line (a newline
    shown as its escape), for a gateway may put the key, an escape sequence or a line
    that reads as ours ("done") anywhere (docs/decisions.md#inert-text)."""
    return terminal_text(hide_userinfo(redact(text)))


def words_of(exc: BaseException) -> str:
    """A failure in words for a batch row, its manifest and a command's lines, never a
    Python class name (``OutcomeUnknown: ...``): ours say it in their message (a
    transport's failure in ``protocol.body.failure_words``' words, a gateway's answer as
    it came); an OS error by its reason and path; any other by its text. Inert on a
    terminal, as every error's message (docs/decisions.md#batch-row-states)."""
    if isinstance(exc, GenwidgetsError):
        return str(exc)
    if isinstance(exc, OSError) and exc.strerror:
        where = f" ({exc.filename})" if exc.filename else ""
        return _shown(f"{exc.strerror}{where}")
    return _shown(str(exc) or "no detail")


class GenwidgetsError(Exception):
    """Base class of every error genwidgets raises on purpose. Its message is inert on
    a terminal, whatever text it was built from (docs/decisions.md#inert-text)."""

    #: a refusal (nothing was done; its words say why and what to do) shows in a notebook
    #: as its words alone, no traceback through internals: :attr:`_render_traceback_`
    refusal = False

    def __str__(self) -> str:
        return terminal_text(super().__str__(), lines=True)

    @property
    def _render_traceback_(self) -> Callable[[], list[str]]:
        """IPython's hook for how an exception shows: a refusal's class name and words
        (and notes), no frames. Absent (``hasattr`` is False) on other errors, whose
        traceback shows as usual; a script's traceback never asks it
        (docs/decisions.md#refusals-in-words)."""
        if not self.refusal:
            raise AttributeError("_render_traceback_")
        return self._words

    def _words(self) -> list[str]:
        lines = f"{type(self).__name__}: {self}".splitlines()
        return lines + [str(note) for note in getattr(self, "__notes__", ())]


class PayloadError(GenwidgetsError, ValueError):
    """A payload (or prompt) breaks a rule of the spec; nothing was sent.

    ``errors`` is a list of ``{"loc": tuple, "msg": str}``, one per problem, so a
    form can put each message beside its field.
    """

    refusal = True

    def __init__(
        self,
        errors: Iterable[Mapping[str, Any]] | str,
        *,
        endpoint: str | None = None,
    ) -> None:
        if isinstance(errors, str):
            errors = [{"loc": (), "msg": errors}]
        self.errors: list[dict[str, Any]] = [
            {"loc": tuple(e.get("loc", ())), "msg": str(e.get("msg", ""))} for e in errors
        ]
        self.endpoint = endpoint
        super().__init__(self._render())

    def _render(self) -> str:
        head = f"invalid payload for {self.endpoint}" if self.endpoint else "invalid input"
        n = len(self.errors)
        lines = [f"{head}: {n} problem{'s' if n != 1 else ''}"]
        for e in self.errors:
            loc = ".".join(str(p) for p in e["loc"]) or "(payload)"
            lines.append(f"  - {loc}: {e['msg']}")
        return "\n".join(lines)

    def messages_for(self, loc: Sequence[Any]) -> list[str]:
        """Messages whose location starts with ``loc`` (used by forms)."""
        prefix = tuple(loc)
        return [e["msg"] for e in self.errors if e["loc"][: len(prefix)] == prefix]


class GatewayError(GenwidgetsError):
    """The gateway answered with an error (or an answer we cannot read)."""

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        code: str | None = None,
        detail: str | None = None,
        request_id: str | None = None,
        endpoint: str | None = None,
    ) -> None:
        # a gateway may echo the key anywhere: every text kept here is redacted
        # (docs/decisions.md#echoed-keys)
        self.message = message = _shown(message)
        self.status_code = status_code
        self.code = _shown(code) if code is not None else None
        self.detail = _shown(detail) if detail is not None else None
        self.request_id = request_id
        self.endpoint = endpoint
        http = f"HTTP {status_code}: " if status_code else ""
        super().__init__(f"{http}{message}{_where(endpoint, request_id)}")


class Unauthorized(GatewayError):
    """Missing or rejected bearer token (``UNAUTHORIZED``)."""


class RateLimited(GatewayError):
    """``RATE_LIMIT_EXCEEDED``; ``retry_after`` is the wait in seconds, if known."""

    def __init__(self, message: str, *, retry_after: float | None = None, **kw: Any) -> None:
        self.retry_after = retry_after
        if retry_after is not None and retry_after >= 0:  # nan is no wait to say
            # words a person reads: 1e308 was 309 digits, inf "inf s"
            wait = f"{retry_after:.1f} s" if retry_after <= 86_400 else "more than a day"
            message = f"{message} (retry after {wait})"
        super().__init__(message, **kw)


class ModelNotAllowed(GatewayError):
    """``Model not allowed for this user``: the key may not use this endpoint."""


class EndpointNotFound(GatewayError):
    """``App not found: <endpoint>``: no such endpoint identifier."""


class WebhookNotSupported(GatewayError):
    """``webhook not supported``: webhook information was sent."""


class NotSupported(GatewayError):
    """The synchronous path or the SSE status stream, which the service does not offer."""


class RequestNotFound(GatewayError):
    """404 ``Request not found``: unknown request_id, wrong endpoint, or no access."""


class RuntimeFailed(GatewayError):
    """``Runtime execution failed``."""


class ServerError(GatewayError):
    """A 5xx, or an unreadable or broken-off answer, to a status, result or cancel
    request, after the allowed retries. Never raised for a create (a task may exist
    then: :class:`OutcomeUnknown`), so retrying on it never pays twice."""


class ResultMissing(ServerError):
    """A task's status said it ended (not failed), and its result address answers 404
    (results purged, a replica that lost them): the gateway answered, and the task
    billed; its outputs cannot be read. Asked again as contact is, never "gone"."""


class NoAnswer(GenwidgetsError):
    """No (readable) answer came to a request, so what happened at the gateway is
    not known from an answer. Catch a subclass, not this: only :class:`Unreachable`
    is safe to retry."""

    def __init__(
        self,
        message: str,
        *,
        endpoint: str | None = None,
        request_id: str | None = None,
        status_code: int | None = None,
    ) -> None:
        self.message = message = _shown(message)
        self.endpoint = endpoint
        self.request_id = request_id
        self.status_code = status_code
        super().__init__(f"{message}{_where(endpoint, request_id)}")


class Unreachable(NoAnswer):
    """The gateway could not be reached (connection refused, DNS failure, connect
    timeout), after the allowed retries: nothing was sent, so nothing was created.
    Safe to try again."""


class OutcomeUnknown(NoAnswer):
    """A create-task request was sent but no readable answer arrived: a task may exist.

    Never retried (a retry could create, and bill, a second task); look in
    ``client.history()`` or ``client.ledger.rows(status="outcome_unknown")``.
    """


class ClientClosed(NoAnswer):
    """The client was closed: its jobs stopped being polled, and no request is sent.

    The task itself may still run (and bill) at the gateway; re-attach from a new
    client with ``client.job(endpoint, request_id)`` or ``client.resume()``.
    ``never_sent``: the error of a create stopped before it left (waiting its turn or
    at the rate gate when the client closed or the process exited): no task was made
    and nothing paid; ``again`` says how to send it again.
    """

    def __init__(
        self,
        *,
        endpoint: str | None = None,
        request_id: str | None = None,
        never_sent: bool = False,
        again: str = "send it again from a new client (gw.Client())",
    ) -> None:
        self.never_sent = never_sent
        if never_sent:
            said = (
                "the client closed before this create was sent: nothing was sent, no task "
                f"made, nothing paid; {again}"
            )
        elif request_id is not None:
            said = (
                "the client is closed: nothing more is sent or polled, but a task may still "
                f"run at the gateway; re-attach with gw.Client().job({endpoint!r}, "
                f"{request_id!r})"
            )
        else:
            said = (
                "the client is closed: nothing more is sent or polled, but a task may still "
                "run at the gateway; make a new client (gw.Client()); client.resume() "
                "re-attaches unfinished tasks"
            )
        super().__init__(said, endpoint=endpoint, request_id=request_id)


class AmbiguousClient(GenwidgetsError):
    """A widget was given no ``client=`` while live clients of different gateways (or
    keys) exist: which one pays is not guessed. ``clients`` names them."""

    def __init__(self, clients: Sequence[str]) -> None:
        self.clients = list(clients)
        super().__init__(
            f"{len(self.clients)} live clients pay at different gateways or with different "
            f"keys ({', '.join(self.clients)}): pass client=... to say which one to use, "
            "or close the others"
        )


class BudgetExceeded(GenwidgetsError):
    """A batch's plan bills more of a kind (images, video seconds, money...) than its
    ``budget=`` allows, counting what the budget has already spent; nothing was sent.
    ``kind``, ``cap``, ``planned`` and ``spent`` say by how much."""

    refusal = True

    def __init__(
        self, message: str, *, kind: str, cap: float, planned: float, spent: float = 0.0
    ) -> None:
        self.kind = kind
        self.cap = cap
        self.planned = planned
        self.spent = spent
        super().__init__(message)


class TaskSeen(Protocol):
    """What an error reads of a task: which endpoint, which request. A ``Job``, an
    ``AsyncJob`` and a ``Result`` all fit; a ``Protocol`` so that the error tree names
    no higher layer (docs/decisions.md#the-error-tree-names-no-higher-layer)."""

    @property
    def endpoint(self) -> str | None: ...

    @property
    def request_id(self) -> str | None: ...


class WaitedTask(TaskSeen, Protocol):
    """What :class:`TaskTimeout` hands back: a ``Job`` (or an ``AsyncJob``, whose two
    methods are awaited) to wait on again or to cancel."""

    def result(self, timeout: float | None = None) -> Any: ...

    def cancel(self) -> Any: ...


class FailedAnswer(TaskSeen, Protocol):
    """What :class:`TaskFailed` reads of a ``Result``: the task's own error."""

    @property
    def error(self) -> Any: ...

    @property
    def error_type(self) -> str | None: ...


class TaskFailed(GenwidgetsError):
    """The task reached a terminal status with an error; ``result`` holds it."""

    def __init__(self, result: FailedAnswer) -> None:
        self.result = result
        kind = f" ({result.error_type})" if result.error_type else ""
        super().__init__(
            _shown(f"task failed{kind}: {result.error}{_where(result.endpoint, result.request_id)}")
        )


class TaskTimeout(GenwidgetsError, TimeoutError):
    """A wait ran out; the task itself goes on (``job`` can be awaited or cancelled),
    unless the wait asked the gateway to cancel it (``cancelled``)."""

    def __init__(self, job: WaitedTask, timeout: float, *, cancelled: bool = False) -> None:
        self.job = job
        self.timeout = timeout
        #: the wait asked the gateway to cancel the task (``cancel_on_timeout=True``)
        self.cancelled = cancelled
        where = _where(job.endpoint, job.request_id)
        last = getattr(job, "last_status", None)  # a Job's last status seen, if any
        if cancelled:
            text = f"no result within {timeout:g} s; the gateway was asked to cancel it{where}."
        elif getattr(job, "cancel_kept", False):  # a Job's cancel not taken, sent again
            text = (
                f"no result within {timeout:g} s; the task is still alive{where}, and the "
                f"gateway did not take its cancel ({getattr(job, 'cancel_error', '')}): "
                "the job sends it again until the gateway takes it."
            )
        elif getattr(last, "done", False):
            text = (
                f"no result within {timeout:g} s, though the task has ended "
                f"({getattr(last, 'status', '')}){where}: its result is on its way (fetched, "
                "then its outputs saved). Wait again with job.result()."
            )
        else:
            text = (
                f"no result within {timeout:g} s; the task is still alive{where}. "
                "Wait again with job.result(), or stop it with job.cancel()."
            )
        super().__init__(text)


class DownloadError(GenwidgetsError):
    """One or more outputs could not be saved. ``failures``: ``[(index, reason), ...]``;
    ``expired``: the indexes whose URL the file host said is gone (HTTP 403, 404, 410),
    which no later try will find; ``capped``: those over a cap, which no later try keeps;
    ``other_bytes``: those whose URL now serves other bytes than the copy recorded."""

    def __init__(
        self,
        message: str,
        *,
        request_id: str | None,
        failures: list[tuple[int, str]],
        expired: Sequence[int] = (),
        capped: Sequence[int] = (),
        other_bytes: Sequence[int] = (),
    ) -> None:
        super().__init__(_shown(message))
        self.request_id = request_id
        self.failures = failures
        self.expired = tuple(expired)
        self.capped = tuple(capped)
        self.other_bytes = tuple(other_bytes)


class LedgerError(GenwidgetsError):
    """The ledger file cannot be used (unknown schema, not a database, locked too long).

    ``replaceable`` is True when the file holds nothing a genwidgets ledger could
    read (another application's SQLite file, or not SQLite at all): the ledger
    then moves it aside and starts a new one. ``refusal`` is True when it refused a
    write whose words say that nothing was sent and what to do.
    """

    def __init__(self, message: str, *, replaceable: bool = False, refusal: bool = False) -> None:
        super().__init__(message)
        self.replaceable = replaceable
        self.refusal = refusal


class NotRecorded(LedgerError):
    """A create of a batch or a grid (a tagged create) was not sent: the ledger could
    neither write its intent nor keep it beside the file (a full disk), and a rerun
    reads "no intent" as "never sent". No task was made, nothing was paid; running it
    again once the home can be written sends it (docs/decisions.md#ledger-intent)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, refusal=True)


class SimulatorStartError(GenwidgetsError, RuntimeError):
    """The simulator could not start (port in use, bad host, startup failure)."""


class ServeError(GenwidgetsError):
    """The class gateway (``genwidgets serve``) refused a request or failed: a key command,
    its database, its start, its upstream. ``status`` and ``code`` are its answer in the
    gateway's error shape (``code`` None: a ``detail`` answer), ``retry_after`` its
    ``Retry-After``; ``sent``: whether a request may have reached upstream."""

    def __init__(
        self,
        message: str,
        *,
        status: int = 500,
        code: str | None = None,
        retry_after: float | None = None,
        sent: bool = False,
    ) -> None:
        super().__init__(message)
        self.message, self.status, self.code = message, status, code
        self.retry_after, self.sent = retry_after, sent


# --------------------------------------------------------------------------- signals
# A signal between our own modules, outside the tree and ``__all__``: it is caught and
# turned into one of the errors above before a caller can see it.


class UpstreamFault(Exception):
    """No answer from the class gateway's upstream. ``sent``: whether the request may
    have reached it (a create then stays reserved: its outcome is unknown)."""

    def __init__(self, why: str, *, sent: bool) -> None:
        super().__init__(why)
        self.sent = sent


# --------------------------------------------------------------------------- warnings


class GenwidgetsWarning(UserWarning):
    """Base class of every warning genwidgets emits: filter them all with this one."""


class UnknownFieldWarning(GenwidgetsWarning):
    """A field the endpoint's model does not know; it is sent as is."""


class IneffectiveFieldWarning(GenwidgetsWarning):
    """A valid field that the service will ignore or truncate, as the spec says."""


class DeprecatedFieldWarning(GenwidgetsWarning):
    """A field the spec calls soon deprecated.

    A warning of its own rather than ``DeprecationWarning``: Python hides the latter in
    notebooks by default, and it is meant for the library's own API, not the service's.
    """


class MediaWarning(GenwidgetsWarning):
    """Media that will be sent but probably should not be (large Base64, unchecked limits)."""


class LedgerWarning(GenwidgetsWarning):
    """The task ledger is off, or a damaged ledger file was moved aside and a new one started."""
