"""The records of the queue protocol (spec 2.1-2.4), read tolerantly.

The spec promises a few fields and shows neither their types nor the rest; real
gateways fill the open parts differently. Status words are one table
(:data:`TERMINAL_WORDS`), outputs are never dropped in silence
(:data:`FALLBACK_OUTPUT_KEYS`), and an untyped output learns its type from its bytes:
docs/decisions.md#gateways-and-their-dialects and docs/decisions.md#records.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import secrets
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._config import redact
from .._formats import decode_data_url, extension_for, int_or_none
from ..errors import GenwidgetsWarning, TaskFailed
from ..media.files import sniff
from .fetch import fetch_url

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
SUCCESS_STATUSES = frozenset(word for word, failed in TERMINAL_WORDS.items() if not failed)
TERMINAL_STATUSES = frozenset(TERMINAL_WORDS)

#: Where a result without ``outputs`` may keep its files, looked at in this order:
#: lists of entries, or single entry objects (fal's ``images``/``video``/``audio``,
#: Replicate's ``output``), or bare URL strings.
FALLBACK_OUTPUT_KEYS = ("images", "videos", "audio", "files", "output", "image", "video")
UNTYPED = "application/octet-stream"


def is_terminal(status: str | None) -> bool:
    return status is not None and status.upper() in TERMINAL_STATUSES


def is_failure(status: str | None) -> bool:
    """Whether ``status`` is a terminal word that means the task did not succeed."""
    return status is not None and status.upper() in FAILURE_STATUSES


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


ERROR_TEXT_KEYS = ("message", "detail", "msg", "error", "description")
ERROR_TYPE_KEYS = ("type", "code", "name")


def log_line(entry: Any) -> str:
    """One entry of :attr:`Status.logs` as a line of text (a dict's ``message``)."""
    return readable(entry, ("message", "msg", "text", "line")) or ""


def _str_or_none(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)


def queue_url(base_url: str, endpoint: str, request_id: str | None = None) -> str:
    """The documented queue address (spec 2.1): of an endpoint, or of one of its tasks."""
    root = f"{base_url.rstrip('/')}/v1/queue/{endpoint}"
    return root if request_id is None else f"{root}/requests/{request_id}"


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
        """A handle whose missing URLs take the documented shape on ``base_url``."""
        root = queue_url(base_url, endpoint, request_id)
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
        """Read a create-task answer; fill URLs of the documented shape if absent."""
        request_id = _str_or_none(body.get("request_id"))
        if not request_id:
            raise ValueError("the task handle has no request_id")
        return cls.documented(
            base_url,
            endpoint,
            request_id,
            status_url=_str_or_none(body.get("status_url")),
            response_url=_str_or_none(body.get("response_url")),
            cancel_url=_str_or_none(body.get("cancel_url")),
            queue_position=int_or_none(body.get("queue_position")),
            raw=body,
        )


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
        return cls(
            status=_str_or_none(body.get("status")) or "UNKNOWN",
            queue_position=int_or_none(body.get("queue_position")),
            raw=dict(body),
            endpoint=endpoint,
            request_id=request_id or _str_or_none(body.get("request_id")),
            logs=logs_of(body.get("logs")),
        )


def logs_of(value: Any) -> list[Any]:
    """``logs`` of a body as a list: a list as it is, a growing string as its lines."""
    if value is None:
        return []
    if isinstance(value, list):
        return list(value)
    if isinstance(value, str):
        return [line for line in value.splitlines() if line.strip()]
    return [value]


Fetcher = Callable[[str], bytes]


@dataclass
class Output:
    """One produced file. Interpret it by ``content_type``, never by the URL."""

    content_type: str
    url: str | None = None
    raw: Mapping[str, Any] = field(repr=False, default_factory=dict)
    #: the local copy, once downloaded (the ledger sets it)
    path: Path | None = None
    index: int = 0
    _fetch: Fetcher | None = field(default=None, repr=False, compare=False)
    _cache: bytes | None = field(default=None, repr=False, compare=False)
    #: False while the record gave no ``content_type`` and the bytes have not told it
    typed: bool = field(default=True, compare=False)

    @classmethod
    def from_entry(cls, entry: Any, index: int = 0, fetch: Fetcher | None = None) -> Output:
        if isinstance(entry, str):
            return cls(
                content_type=UNTYPED,
                url=entry,
                raw={"url": entry},
                index=index,
                _fetch=fetch,
                typed=False,
            )
        if not isinstance(entry, Mapping):
            return cls(
                content_type="application/json",
                raw={"value": entry},
                index=index,
                _cache=json.dumps(entry).encode(),
            )
        content_type = _str_or_none(entry.get("content_type") or entry.get("mime_type"))
        url = _str_or_none(entry.get("url") or entry.get("file_url") or entry.get("uri"))
        return cls(
            content_type=(content_type or UNTYPED).strip() or UNTYPED,
            url=url,
            raw=dict(entry),
            index=index,
            _fetch=fetch,
            typed=bool(content_type and content_type.strip()),
        )

    def learn_type(self, served: str | None = None, head: bytes = b"") -> None:
        """Type an untyped output from what its download showed: the ``Content-Type``
        the server ``served`` with the file, failing that the magic bytes of ``head``.
        A typed output keeps its record's type."""
        if self.typed:
            return
        mime = (served or "").split(";")[0].strip().lower()
        if mime and mime != UNTYPED and "/" in mime:
            self.content_type, self.typed = mime, True
            return
        sniffed = sniff(head[:64]) if head else None
        if sniffed is not None:
            kind, fmt = sniffed
            self.content_type, self.typed = f"{kind}/{fmt}", True

    @property
    def restored(self) -> bool:
        """Read back from the ledger of an earlier session (its URL has likely expired)."""
        return bool(self.raw.get("from_ledger"))

    @property
    def kind(self) -> str:
        """``image``, ``video``, ``audio``, ``json``, ``text`` or ``binary``."""
        ct = self.content_type.split(";")[0].strip().lower()
        major = ct.split("/")[0]
        if major in {"image", "video", "audio"}:
            return major
        if ct == "application/json" or ct.endswith("+json"):
            return "json"
        if major == "text":
            return "text"
        return "binary"

    def inline(self) -> bytes | None:
        """Inline content carried in the record itself (hex/base64/text), if any."""
        content = self.raw.get("content")
        if content is None:
            return None
        if not isinstance(content, str):
            return json.dumps(content).encode()
        encoding = str(self.raw.get("encoding") or "").lower()
        try:
            if encoding == "hex":
                return bytes.fromhex(content)
            if encoding == "base64":
                return base64.b64decode(content, validate=True)
        except (ValueError, binascii.Error):
            return content.encode()
        return content.encode()

    def read(self) -> bytes:
        """The output's bytes: the local copy, inline content, or a download."""
        if self._cache is not None:
            return self._cache
        if self.path is not None and self.path.exists():
            return self.path.read_bytes()
        data = self.inline()
        if data is None:
            if not self.url:
                raise ValueError("this output has neither a URL nor inline content")
            if self.url.startswith("data:"):
                data = decode_data_url(self.url).data
            else:
                data = (self._fetch or fetch_url)(self.url)
        self.learn_type(None, data)
        self._cache = data
        return data

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the bytes to ``path`` atomically (temporary file, then rename).

        A path without an extension gets the content type's (``out-0`` → ``out-0.mp4``),
        and the file is created with the user's umask, as ``open()`` would:
        docs/decisions.md#forms-board-outputs-and-the-command-line.
        """
        target = Path(path)
        if not target.suffix:
            target = target.with_name(target.name + extension_for(self.content_type))
        target.parent.mkdir(parents=True, exist_ok=True)
        data = self.read()
        tmp = _create_beside(target)
        try:
            with open(tmp, "wb") as fh:
                fh.write(data)
            os.replace(tmp, target)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        return target

    def text(self) -> str:
        return self.read().decode("utf-8", errors="replace")

    def json(self) -> Any:
        return json.loads(self.read())


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
        return self.status.upper() in SUCCESS_STATUSES and not self.error

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
        candidates: list[Any] = []
        for out in self.outputs:
            if out.kind == "json":
                data = out.inline()
                if data is not None:
                    candidates.append(data.decode("utf-8", errors="replace"))
        candidates += [self.raw.get(k) for k in ("content", "result", "output", "asset")]
        for c in candidates:
            record = _as_record(c)
            if record is not None and ("Id" in record or "Status" in record):
                return record
        return None

    @classmethod
    def from_ledger(
        cls,
        *,
        endpoint: str,
        request_id: str,
        status: str,
        error: Any,
        error_type: str | None,
        outputs: Sequence[Mapping[str, Any]],
        fetch: Fetcher | None = None,
    ) -> Result:
        """A finished task's result as the ledger stored it: each output keeps the URL
        and the local copy recorded, and reads as :attr:`Output.restored`."""
        restored = []
        for position, record in enumerate(outputs):
            index = int_or_none(record.get("index"), minimum=0)
            output = Output.from_entry(
                {**record, "from_ledger": True}, position if index is None else index, fetch
            )
            path = record.get("path")
            output.path = Path(path) if isinstance(path, str) and path else None
            restored.append(output)
        return cls(
            status=status,
            error=error,
            error_type=error_type,
            outputs=restored,
            raw={"from_ledger": True},
            endpoint=endpoint,
            request_id=request_id,
        )

    @classmethod
    def from_body(
        cls,
        body: Mapping[str, Any],
        *,
        endpoint: str | None = None,
        request_id: str | None = None,
        fetch: Fetcher | None = None,
    ) -> Result:
        raw_outputs = body.get("outputs")
        if raw_outputs is None:
            raw_outputs = _fallback_outputs(body)
        elif not isinstance(raw_outputs, list):
            raw_outputs = [raw_outputs]
        status = _str_or_none(body.get("status")) or COMPLETED
        error = readable(body.get("error"), ERROR_TEXT_KEYS)
        if status.upper() in FAILURE_STATUSES and not error:
            error = status.lower()
        return cls(
            status=status,
            error=error,
            error_type=readable(body.get("error_type"), ERROR_TYPE_KEYS),
            outputs=[Output.from_entry(e, i, fetch) for i, e in enumerate(raw_outputs)],
            raw=dict(body),
            endpoint=endpoint,
            request_id=request_id or _str_or_none(body.get("request_id")),
        )


def _as_record(value: Any) -> dict[str, Any] | None:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return None
        if isinstance(parsed, str):  # a JSON string holding JSON
            return _as_record(parsed)
        return dict(parsed) if isinstance(parsed, Mapping) else None
    return None


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
def _create_beside(target: Path) -> Path:
    """A new empty file next to ``target``, mode 0666 less the umask (``mkstemp`` gives 0600)."""
    for _ in range(100):
        tmp = target.with_name(f".{target.name}.{secrets.token_hex(6)}.part")
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:
            continue
        return tmp
    raise FileExistsError(f"no free temporary name beside {target}")


#: the one way to start a file that is moved into place when whole (batches use it too)
create_beside = _create_beside
