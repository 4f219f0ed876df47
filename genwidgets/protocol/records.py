"""The records of the queue protocol (spec 2.1-2.4), read tolerantly.

The spec promises a few fields and shows neither their types nor the rest; real
gateways fill the open parts differently. Status words are one table
(:data:`TERMINAL_WORDS`), outputs are never dropped in silence
(:data:`FALLBACK_OUTPUT_KEYS`), and an untyped output learns its type from its bytes:
docs/decisions.md#gateways-and-their-dialects and docs/decisions.md#records. Every
value a record keeps is clamped or refused here (docs/decisions.md#hostile-values).
"""

from __future__ import annotations

import json
import re
import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any
from urllib.parse import quote

from pydantic import Field, PlainValidator, ValidationInfo, field_validator

from .._config import hide_userinfo, redact, shown_path
from .._formats import human_bytes, json_nested_deeper, terminal_text
from ..errors import GenwidgetsWarning, TaskFailed
from .body import MAX_DEPTH
from .output import UNTYPED, Output, OutputSource
from .values import (
    Position,
    Reading,
    RequestId,
    Text,
    Word,
    error_text_of,
    follow_up_url,
    position_of,
    request_id_of,
    word_of,
)

__all__ = [
    "COMPLETED",
    "FALLBACK_OUTPUT_KEYS",
    "TERMINAL_WORDS",
    "UNTYPED",
    "Handle",
    "Output",
    "OutputSource",
    "Result",
    "Status",
    "is_failure",
    "is_terminal",
    "log_line",
    "queue_url",
    "readable",
    "says_cancelled",
]

COMPLETED = "COMPLETED"
#: Every status word that ends a task, upper-cased -> whether it means failure.
#: ``COMPLETED`` is the spec's; the others are the terminal words of other queues
#: (fal, Replicate, Celery-like and cloud job APIs). A word not here is not
#: terminal: the task is polled on, within the bounded waits of the client.
TERMINAL_WORDS: Mapping[str, bool] = {
    "COMPLETED": False,
    "SUCCEEDED": False,
    "SUCCESS": False,
    "FAILED": True,
    "FAILURE": True,
    "ERROR": True,
    "CANCELLED": True,
    "CANCELED": True,
    "ABORTED": True,
    "TIMEOUT": True,
    "EXPIRED": True,
}
FAILURE_STATUSES = frozenset(word for word, failed in TERMINAL_WORDS.items() if failed)

#: Where a result without ``outputs`` may keep its files, looked at in this order:
#: lists of entries, or single entry objects (fal's ``images``/``video``/``audio``,
#: Replicate's ``output``), or bare URL strings.
FALLBACK_OUTPUT_KEYS = ("images", "videos", "audio", "files", "output", "image", "video")


def is_terminal(status: str | None) -> bool:
    return status is not None and status.upper() in TERMINAL_WORDS


def is_failure(status: str | None) -> bool:
    """Whether ``status`` is a terminal word that means the task did not succeed."""
    return status is not None and status.upper() in FAILURE_STATUSES


#: fields of a task's answer: a body with one is a task's, never a refusal
_TASK_FIELDS = ("status", "status_url", "response_url")


def says_rate_limited(status: int, body: Any) -> bool:
    """Whether an answer is a rate limit, by one rule for the client and the class
    gateway: a 429, or an error answer whose code is ``RATE_LIMIT_EXCEEDED`` under any
    status (the spec shows its codes, not their statuses: the simulator's replicate
    dialect answers it 503, a gateway may refuse a create with a 200). Under a status
    below 400 only the spec's error shape, without a task's field, is an error answer."""
    if status == 429:
        return True
    if not isinstance(body, Mapping):
        return False
    error = body.get("error")
    code = error.get("code") if isinstance(error, Mapping) else None
    if status < 400 and (not isinstance(code, str) or any(f in body for f in _TASK_FIELDS)):
        return False
    return (code or body.get("code")) == "RATE_LIMIT_EXCEEDED"


def says_cancelled(status: str | None, error_type: str | None) -> bool:
    """A task's end saying it was cancelled: the spec names no state for it, so a
    CANCELLED (or CANCELED) status, or ``error_type`` "cancelled"."""
    return (status or "").upper() in ("CANCELLED", "CANCELED") or (
        error_type or ""
    ).lower() == "cancelled"


def readable(value: Any, keys: Sequence[str]) -> str | None:
    """A value fit for a message: a string as it is, an object's first of ``keys``
    (recursively), else its JSON text; never a Python repr."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        for key in keys:
            inner = value.get(key)
            if inner not in (None, "", {}, []):
                return readable(inner, keys)
    try:
        return json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)
    except (TypeError, ValueError):
        return str(value)


def says_nothing(value: Any) -> bool:
    """Whether a gateway's ``error`` says there is none, in one of the ways gateways
    write "none": null, false, 0, NaN, "", "null", "none", {}, [], or an object or list
    of those (``{"code": null, "message": null}``)."""
    if value is None or value is False or value == 0 or value != value:  # NaN
        return True
    if isinstance(value, str):
        return value.strip().lower() in ("", "null", "none")
    if isinstance(value, Mapping):
        return all(says_nothing(v) for v in value.values())
    if isinstance(value, list):
        return all(says_nothing(v) for v in value)
    return False


ERROR_TEXT_KEYS = ("message", "detail", "msg", "error", "description")
ERROR_TYPE_KEYS = ("type", "code", "name")


def log_line(entry: Any) -> str:
    """One entry of :attr:`Status.logs` as a line of text (a dict's ``message``), inert
    on a terminal (docs/decisions.md#inert-text)."""
    return terminal_text(readable(entry, ("message", "msg", "text", "line")) or "")


#: an endpoint id as a queue address carries it: names of letters, digits, ``.``, ``_``,
#: ``-`` (and ``~``), joined by ``/`` (other gateways' ids hold slashes: ``owner/model``)
_ENDPOINT_ID = re.compile(r"[A-Za-z0-9._~-]+(?:/[A-Za-z0-9._~-]+)*")


def queue_url(base_url: str, endpoint: str, request_id: str | None = None) -> str:
    """The documented queue address (spec 2.1): of an endpoint, or of one of its tasks
    (the request id percent-encoded, so no id can reach another path). An endpoint id
    that would leave ``/v1/queue`` or break the address is a ValueError."""
    if not _ENDPOINT_ID.fullmatch(endpoint) or {".", ".."} & set(endpoint.split("/")):
        raise ValueError(
            f"the endpoint id {terminal_text(repr(endpoint)[:120])} cannot be sent: an id "
            "is names of letters, digits, '.', '_' and '-', joined by '/' (not '.' or "
            "'..'), e.g. genW2.5-t2i-preview"
        )
    root = f"{base_url.rstrip('/')}/v1/queue/{endpoint}"
    if request_id is None:
        return root
    segment = quote(request_id, safe="")
    return f"{root}/requests/{segment.replace('.', '%2E') if not segment.strip('.') else segment}"


def logs_of(value: Any) -> list[Any]:
    """``logs`` of a body as a list: a list as it is, a growing string as its lines."""
    if value is None:
        return []
    if isinstance(value, list):
        return list(value)
    if isinstance(value, str):
        return [line for line in value.splitlines() if line.strip()]
    return [value]


class _HandleReading(Reading):
    """A create's answer (spec 2.1): follow-up URLs read against the ``base_url`` of
    the context (:func:`follow_up_url`)."""

    what = "the task handle"
    request_id: RequestId = Field(None, validate_default=True)
    status_url: str | None = None
    response_url: str | None = None
    cancel_url: str | None = None
    queue_position: Position = None

    @field_validator("status_url", "response_url", "cancel_url", mode="plain")
    @classmethod
    def _on_gateway(cls, value: Any, info: ValidationInfo) -> str | None:
        return follow_up_url(value, (info.context or {})["base_url"])


class _StatusReading(Reading):
    what = "the status answer"
    status: Word = None
    queue_position: Position = None
    request_id: Text = None
    logs: Annotated[list[Any], PlainValidator(logs_of)] = Field(default_factory=list)


class _ResultReading(Reading):
    """A result (spec 2.2): an object ``error`` as text (:func:`readable`), ``outputs``
    as a list, None when absent (:data:`FALLBACK_OUTPUT_KEYS` are looked at)."""

    what = "the result"
    status: Word = None
    error: Annotated[
        str | None,
        PlainValidator(
            lambda v: None if says_nothing(v) else error_text_of(readable(v, ERROR_TEXT_KEYS))
        ),
    ] = None
    error_type: Annotated[
        str | None,
        PlainValidator(
            lambda v: None if says_nothing(v) else word_of(readable(v, ERROR_TYPE_KEYS))
        ),
    ] = None
    request_id: Text = None
    outputs: Annotated[
        list[Any] | None, PlainValidator(lambda v: v if v is None or isinstance(v, list) else [v])
    ] = None


@dataclass(frozen=True)
class Handle:
    """The task handle of spec 2.1."""

    endpoint: str
    request_id: str
    status_url: str
    response_url: str
    cancel_url: str
    queue_position: int | None
    raw: Mapping[str, Any] = field(repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "queue_position", position_of(self.queue_position))

    def __repr__(self) -> str:
        """Its addresses with any password in them masked (a base URL may carry one)."""
        urls = ", ".join(
            f"{name}={hide_userinfo(redact(getattr(self, name)))!r}"
            for name in ("status_url", "response_url", "cancel_url")
        )
        return (
            f"Handle(endpoint={self.endpoint!r}, request_id={self.request_id!r}, {urls}, "
            f"queue_position={self.queue_position!r})"
        )

    @classmethod
    def documented(
        cls,
        base_url: str,
        endpoint: str,
        request_id: str,
        *,
        status_url: str | None = None,
        response_url: str | None = None,
        cancel_url: str | None = None,
        queue_position: int | None = None,
        raw: Mapping[str, Any] | None = None,
    ) -> Handle:
        """A handle whose missing URLs take the documented shape on ``base_url``;
        a ``ValueError`` for a request id no URL can carry (:func:`request_id_of`)."""
        request_id = request_id_of(request_id)
        given = (status_url, response_url, cancel_url)
        # the gateway's own addresses need no documented one (nor its endpoint id checked)
        root = "" if all(given) else queue_url(base_url, endpoint, request_id)
        return cls(
            endpoint=endpoint,
            request_id=request_id,
            status_url=status_url or f"{root}/status",
            response_url=response_url or f"{root}/response",
            cancel_url=cancel_url or f"{root}/cancel",
            queue_position=queue_position,
            raw=dict(raw or {}),
        )

    @classmethod
    def from_body(cls, endpoint: str, body: Mapping[str, Any], base_url: str) -> Handle:
        """Read a create-task answer; fill URLs of the documented shape if absent (or
        unusable); a ``ValueError`` when it names no usable request id."""
        answer = _HandleReading.read(body, base_url=base_url)
        return cls.documented(base_url, endpoint, raw=body, **dict(answer))


@dataclass(frozen=True)
class Status:
    """A status answer (spec 2.2). ``status`` is verbatim; ``done`` is terminality."""

    status: str
    queue_position: int | None = None
    raw: Mapping[str, Any] = field(repr=False, default_factory=dict)
    endpoint: str | None = None
    request_id: str | None = None
    #: what the body's ``logs`` held, any shape kept (``[]`` when none)
    logs: list[Any] = field(default_factory=list, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "queue_position", position_of(self.queue_position))

    @property
    def done(self) -> bool:
        return is_terminal(self.status)

    @property
    def latest_log(self) -> str | None:
        """The last log line as text, or None when the gateway sent no logs."""
        return log_line(self.logs[-1]) if self.logs else None

    @classmethod
    def from_body(
        cls, body: Mapping[str, Any], *, endpoint: str | None = None, request_id: str | None = None
    ) -> Status:
        answer = _StatusReading.read(body)
        return cls(
            status=answer.status or "UNKNOWN",
            queue_position=answer.queue_position,
            raw=dict(body),
            endpoint=endpoint,
            request_id=request_id or answer.request_id,
            logs=answer.logs,
        )


@dataclass(frozen=True)
class Result:
    """A terminal answer of the result address (spec 2.2)."""

    status: str
    error: Any = None
    error_type: str | None = None
    outputs: list[Output] = field(default_factory=list)
    raw: Mapping[str, Any] = field(repr=False, default_factory=dict)
    endpoint: str | None = None
    request_id: str | None = None

    @property
    def ok(self) -> bool:
        return TERMINAL_WORDS.get(self.status.upper()) is False and not self.error

    def __repr__(self) -> str:
        """``<Result COMPLETED genW2.5-t2i-preview 7f3a…: 4 images, 3.1 MB, saved in
        ~/.genwidgets/outputs/7f3a…>``, or the error: docs/decisions.md#short-reprs."""
        head = " ".join(str(p) for p in (self.status, self.endpoint, self.request_id) if p)
        if not self.ok:
            error = redact(str(self.error if self.error is not None else "no error text"))
            kind = f" ({self.error_type})" if self.error_type else ""
            return terminal_text(f"<Result {head}: failed: {error[:200]}{kind}>")
        return terminal_text(f"<Result {head}: {_outputs_summary(self.outputs)}>")

    @property
    def done(self) -> bool:
        return is_terminal(self.status)

    @property
    def logs(self) -> list[Any]:
        """The ``logs`` the result body carries, read like :attr:`Status.logs`."""
        return logs_of(self.raw.get("logs"))

    def raise_for_error(self) -> Result:
        """Raise :class:`TaskFailed` if the task failed; return self otherwise."""
        if not self.ok:
            raise TaskFailed(self)
        return self

    @property
    def asset(self) -> dict[str, Any] | None:
        """The asset record of an ``asset-get`` result (spec 2.3), parsed."""
        inline = [out.inline() for out in self.outputs if out.kind == "json"]
        candidates: list[Any] = [d.decode("utf-8", errors="replace") for d in inline if d]
        candidates += [self.raw.get(k) for k in ("content", "result", "output", "asset")]
        for c in candidates:
            record = _as_record(c)
            if record is not None and ("Id" in record or "Status" in record):
                return record
        return None

    @classmethod
    def from_body(
        cls,
        body: Mapping[str, Any],
        *,
        endpoint: str | None = None,
        request_id: str | None = None,
        source: OutputSource | None = None,
        base_url: str | None = None,
    ) -> Result:
        """Read a result answer; its outputs read through ``source`` (the jobs layer's;
        none: made by hand), relative output URLs resolve against ``base_url``."""
        answer = _ResultReading.read(body)
        entries = _fallback_outputs(body) if answer.outputs is None else answer.outputs
        status = answer.status or COMPLETED
        failed = status.upper() in FAILURE_STATUSES and not answer.error
        return cls(
            status=status,
            error=status.lower() if failed else answer.error,
            error_type=answer.error_type,
            outputs=[Output.from_entry(e, i, source, base_url) for i, e in enumerate(entries)],
            raw=dict(body),
            endpoint=endpoint,
            request_id=request_id or answer.request_id,
        )


def _outputs_summary(outputs: Sequence[Output]) -> str:
    """``4 images, 3.1 MB, saved in ~/.genwidgets/outputs/7f3a``: counts by kind,
    the bytes known, the folder of the local copies."""
    if not outputs:
        return "no outputs"
    kinds = Counter(output.kind for output in outputs)
    parts = [
        f"{n} {kind}{'s' if n != 1 and kind in ('image', 'video') else ''}"
        for kind, n in kinds.items()
    ]
    sizes = [s for s in (o.size() for o in outputs) if s is not None]
    if sizes:
        parts.append(human_bytes(sum(sizes), exact=False))
    folders = {o.path.parent for o in outputs if o.path is not None and o.size() is not None}
    if len(folders) == 1:
        parts.append(f"saved in {shown_path(folders.pop())}")
    elif folders:
        parts.append(f"saved in {len(folders)} folders")
    return ", ".join(parts)


def _as_record(value: Any) -> dict[str, Any] | None:
    while isinstance(value, str):  # JSON text, or a JSON string holding JSON
        if json_nested_deeper(value, MAX_DEPTH):  # never handed to the parser
            return None
        try:
            value = json.loads(value)
        except ValueError:
            return None
    return dict(value) if isinstance(value, Mapping) else None


def _usable(entry: Any) -> bool:
    """An entry that can become an output: a URL string, or an object with a URL or
    inline content."""
    if isinstance(entry, str):
        return entry.startswith(("http://", "https://", "data:"))
    return isinstance(entry, Mapping) and any(
        entry.get(k) for k in ("url", "file_url", "uri", "content")
    )


def _entries(value: Any) -> list[Any]:
    items = value if isinstance(value, list) else [value]
    return [item for item in items if _usable(item)]


def _urls_in(value: Any, found: list[str], limit: int = 5) -> None:
    if len(found) >= limit:
        return
    if isinstance(value, str) and value.startswith(("http://", "https://")):
        found.append(value.split("?")[0])
    elif isinstance(value, Mapping):
        for inner in value.values():
            _urls_in(inner, found, limit)
    elif isinstance(value, list):
        for inner in value:
            _urls_in(inner, found, limit)


def _fallback_outputs(body: Mapping[str, Any]) -> list[Any]:
    """The outputs of a result that has no ``outputs`` key: the entries under every
    one of :data:`FALLBACK_OUTPUT_KEYS` that holds usable ones (fal puts images and
    a video under different keys), with a warning naming them; or a warning naming
    the URLs the body holds when none is usable."""
    taken: list[Any] = []
    used: list[str] = []
    for key in FALLBACK_OUTPUT_KEYS:
        entries = _entries(body.get(key)) if key in body else []
        if entries:
            taken += entries
            used.append(repr(key))
    if taken:
        warnings.warn(
            f"the result has no 'outputs'; took {len(taken)} output(s) from its "
            f"{', '.join(used)} field{'s' if len(used) > 1 else ''}",
            GenwidgetsWarning,
            stacklevel=3,
        )
        return taken
    urls: list[str] = []
    _urls_in(
        {
            k: v
            for k, v in body.items()
            if k not in ("status_url", "response_url", "cancel_url", "urls")
        },
        urls,
    )
    if urls:
        warnings.warn(
            "the result has no 'outputs' and no known output field, but holds URLs: "
            + ", ".join(redact(u) for u in urls),
            GenwidgetsWarning,
            stacklevel=3,
        )
    return []
