"""Keep the outputs of a finished task on disk, before their URLs expire.

Each output goes to ``<root>/<gateway>/<request_id>/<index><ext>`` (root defaults to
``GENWIDGETS_HOME/outputs``; ``<gateway>`` names the gateway, so two gateways' tasks of
one request id never share a folder), ``ext`` from the content type, never the URL
(spec 7, rule 5). Writes are atomic and size-checked, a file found in place is used
only when this output wrote it, reads are capped and on a deadline, a transient failure
is tried again within it, a result's outputs are capped in number and bytes, the key
goes only to the gateway's origin, and one :class:`DownloadError` lists every failure:
docs/decisions.md#downloads and docs/decisions.md#outputs-by-gateway.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import itertools
import logging
import os
import re
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractAsyncContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from .._config import FETCH_TIMEOUT_S, home, redact
from .._files import AtomicFile
from .._formats import EXTENSIONS, decode_data_url, extension_for, int_or_none
from ..errors import DownloadError
from ..imgm import MAX_PROMPTS
from ..protocol.body import (
    MIN_RATE,
    Deadline,
    Stopwatch,
    aiter_capped,
    failure_words,
    iter_capped,
    outlasted,
    within,
)
from ..protocol.fetch import (
    DEFAULT_TIMEOUT,
    MAX_READ_BYTES,
    blocking_client,
    open_url,
    open_url_async,
    origin_text,
    same_origin,
    seconds,
)
from ..protocol.http import backoff_delay, parse_retry_after
from ..protocol.output import url_in_words
from ..protocol.records import Output, Result
from .output_files import holds_digest, size_of

__all__ = [
    "DOWNLOAD_TRIES",
    "EXPIRED_STATUSES",
    "EXTENSIONS",
    "MAX_OUTPUTS",
    "MAX_RESULT_BYTES",
    "download_outputs",
    "download_outputs_async",
    "extension_for",
    "gateway_folder",
    "output_dir",
    "safe_name",
]

log = logging.getLogger("genwidgets")

DEFAULT_MAX_BYTES = MAX_READ_BYTES  # the client's defaults live in _config.py
#: The most outputs of one result downloaded: imgM's largest task (its 40 prompts, a
#: grid of 4 pictures each); the catalog's largest ``n`` is 10. Those past it are
#: listed as not downloaded (docs/decisions.md#downloads).
MAX_OUTPUTS = 4 * MAX_PROMPTS
#: The most bytes one result's downloads add up to: two outputs of the largest size.
MAX_RESULT_BYTES = 2 * MAX_READ_BYTES
#: Tries of one download that meets a transient failure (a 5xx, 408, 429, a connection
#: that broke or timed out), all within the download's deadline.
DOWNLOAD_TRIES = 3
#: The longest ``Retry-After`` a download waits for; a longer one ends its tries.
MAX_RETRY_AFTER_S = 8.0
#: One result's downloads together end within this many times one download's ``timeout``
#: (plus 1 s per 32 KiB they received): ``job.result()`` waits for them, and 160 outputs
#: each just in time held it 160 timeouts. The rest are copies pending
#: (docs/decisions.md#downloads).
RESULT_TIMEOUTS = 2

#: A folder name longer than this keeps its start and a digest of the whole
#: (file systems allow 255 bytes; a request id may be longer, or escape to 3 times its size).
MAX_NAME = 96


class _Failure(Exception):
    """Why one output failed (internal; collected into a DownloadError)."""


class _Transient(_Failure):
    """An HTTP answer another try may not meet (5xx, 408, 429); ``retry_after``: the
    seconds the server asked to wait, if it said."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class _OverCap(_Failure):
    """An output over a cap (``max_bytes``, ``max_outputs``, ``max_total_bytes``): no
    later copy keeps it either, so its copy is given up at once
    (docs/decisions.md#copies-pending)."""


class _OtherBytes(_Failure):
    """The URL of a copy the ledger recorded, removed since, now serves other bytes (an id
    reused by a restarted simulator or class gateway, a replaced CDN object): they are
    not this task's output, so the copy is given up at once, the old record kept
    (docs/decisions.md#copies-pending)."""


class _Expired(_Failure):
    """The file host says the URL is gone (HTTP 403, 404, 410): a signed URL past its
    time. No later try finds it (docs/decisions.md#copies-pending); ``status``: which."""

    def __init__(self, message: str, status: int, *, json_body: bool = True) -> None:
        super().__init__(message)
        self.status = status
        self.json_body = json_body


#: the answers of a file host that mean the URL has expired
EXPIRED_STATUSES = frozenset({403, 404, 410})


def _expired(exc: BaseException, url: str | None, gateway: str | None) -> bool:
    """Whether ``exc`` (or the failure of the last try it sums up) is an expired URL.
    From the gateway's own origin (``url`` there; ``gateway`` its address) a 403 is not:
    the key was refused there (revoked, a proxy's page), a fault of contact a later try
    with a good key gets past; nor is a 404 or 410 whose body is not the gateway's JSON
    (a proxy's HTML page during a deploy): only the gateway's word means gone."""
    found = exc if isinstance(exc, _Expired) else exc.__cause__
    if not isinstance(found, _Expired):
        return False
    if url is None or not same_origin(url, gateway):
        return True
    return found.status != 403 and found.json_body


def _over_cap(exc: BaseException) -> bool:
    """Whether ``exc`` (or the failure of the last try it sums up) is an output over a cap."""
    return isinstance(exc, _OverCap) or isinstance(exc.__cause__, _OverCap)


def _other_bytes(exc: BaseException) -> bool:
    """Whether ``exc`` (or the failure of the last try it sums up) is a URL that now
    serves other bytes than the copy the ledger recorded."""
    return isinstance(exc, _OtherBytes) or isinstance(exc.__cause__, _OtherBytes)


#: Transport failures worth another try: a connection refused, reset or cut short, a
#: timeout (not a body refused for its size or its total deadline: those would recur).
_TRANSIENT_TRANSPORT = (httpx.NetworkError, httpx.TimeoutException, httpx.RemoteProtocolError)


def _host_down(exc: BaseException) -> bool:
    """Whether ``exc`` (or the failure of the last try it sums up) says the file host gave
    no answer in time: no connection, a connect or read timeout, an answer past its
    deadline. Its other outputs are then not waited on, one deadline each."""
    return any(
        isinstance(found, (httpx.TimeoutException, httpx.ConnectError)) or outlasted(found)
        for found in (exc, exc.__cause__)
        if found is not None
    )


def _digest(text: str, n: int = 16) -> str:
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()[:n]


def _escaped(char: str) -> str:
    """``%XX`` for each UTF-8 byte of ``char``: one-to-one, where a code point's hex of
    varying width was not (U+1F60 then ``0``, and U+1F600, were both ``%1F600``). ASCII
    keeps the escape it had (docs/decisions.md#outputs-by-gateway)."""
    return "".join(f"%{byte:02X}" for byte in char.encode("utf-8", errors="surrogatepass"))


def safe_name(text: str) -> str:
    """A folder name that cannot escape the root and that every file system takes,
    whatever the gateway sent: other characters escaped (percent-encoded UTF-8), a long
    name shortened with a digest of the whole (so two ids never share a folder)."""
    name = re.sub(r"[^A-Za-z0-9._-]", lambda m: _escaped(m.group()), text)
    name = name if name.strip(".") else name.replace(".", "%2E")
    if len(name) > MAX_NAME:
        name = f"{name[: MAX_NAME - 18]}~{_digest(text)}"
    return name


def gateway_folder(gateway: str) -> str:
    """The folder of one gateway's outputs: ``simulator``, or its host (and port) and a
    short digest of its whole address (two gateways on one host stay apart)."""
    if not gateway.startswith(("http://", "https://")):
        return safe_name(gateway)
    parts = urlsplit(gateway)
    host = f"{parts.hostname or 'gateway'}{f'_{parts.port}' if parts.port else ''}"
    return f"{safe_name(host)[:60]}-{_digest(gateway.rstrip('/'), 10)}"


def output_dir(
    request_id: str, root: str | os.PathLike[str] | None = None, *, gateway: str | None = None
) -> Path:
    """Where the outputs of one task go: ``<root>/<gateway>/<request_id>`` (without a
    gateway, ``<root>/<request_id>``, where outputs saved by hand have always gone)."""
    base = Path(root) if root is not None else home() / "outputs"
    if gateway is not None:
        base = base / gateway_folder(gateway)
    return base / safe_name(request_id)


@dataclass
class _Item:
    """One output to save, and where (the extension follows the output's type,
    which an untyped output learns from its first bytes)."""

    output: Output
    index: int
    directory: Path
    expected_size: int | None
    request_id: str

    @property
    def target(self) -> Path:
        return self.directory / f"{self.index}{extension_for(self.output.content_type)}"


def _already_saved(item: _Item) -> bool:
    """Whether this output itself wrote the file in place, unchanged since: a file
    anyone else left there (another gateway, another task) is never trusted."""
    output = item.output
    if output.sha256 is None or output.path is None:
        return False
    if output.path.resolve() != item.target.resolve():  # a home reached by a link too
        return False
    return holds_digest(item.target, output.sha256)


def _local_bytes(output: Output) -> bytes | None:
    """Content carried by the record itself (inline or a data: URL), if any."""
    inline = output.inline()
    if inline is not None:
        return inline
    url = output.url or ""
    if url[:5].lower() == "data:":
        try:
            return decode_data_url(url).data
        except ValueError as exc:
            raise _Failure(str(exc)) from None
    return None


def _remote_url(output: Output) -> str:
    """The output's URL, checked before any connection: a gateway's URL may be no URL
    at all (an odd host, a port of 99999, which the connection itself would meet as an
    OverflowError inside a task group)."""
    if not output.url:
        raise _Failure("the record has neither a URL nor inline content")
    try:
        parts = urlsplit(output.url)
        parts.port  # noqa: B018 - read for its check: a port out of 0-65535 raises
        httpx.URL(output.url)
    except (ValueError, httpx.InvalidURL) as exc:
        raise _Failure(f"not a URL that can be fetched ({exc})") from None
    if parts.scheme.lower() not in ("http", "https"):
        scheme = parts.scheme.lower()
        raise _Failure(f"unsupported URL scheme {scheme!r} (allowed: http, https, data)")
    return output.url


@dataclass(frozen=True)
class _Cap:
    """The most bytes one output may have, and the limit it comes from, in words."""

    bytes: int
    words: str


class _CheckedOutput:
    """One output written whole (the one atomic writer, ``_files.AtomicFile``), checked
    as it comes: its size against its cap and the record, its sha256. The file is named
    at the commit, once its bytes have told an untyped output's type."""

    def __init__(self, item: _Item, cap: _Cap) -> None:
        self.item = item
        self.cap = cap
        self.size = 0
        item.directory.mkdir(parents=True, exist_ok=True)
        self._file = AtomicFile(item.target, durable=True)
        self._sha256 = hashlib.sha256()

    def __enter__(self) -> _CheckedOutput:
        return self

    def write(self, chunk: bytes) -> None:
        if self.size == 0 and chunk:
            self.item.output.learn_type(None, chunk)
        self.size += len(chunk)
        if self.size > self.cap.bytes:
            raise _OverCap(f"larger than {self.cap.words}")
        self._file.write(chunk)
        self._sha256.update(chunk)

    def commit(self, *, wire_bytes: int | None = None, content_length: int | None = None) -> None:
        if content_length is not None and wire_bytes is not None and wire_bytes != content_length:
            raise _Failure(
                f"body cut short or overlong: Content-Length {content_length}, "
                f"received {wire_bytes} bytes"
            )
        digest = self._sha256.hexdigest()
        self._same_as_recorded(digest)
        expected = self.item.expected_size
        if expected is not None and self.size != expected:
            self._size_differs(expected, digest)
        self._file.target = self.item.target  # the type the bytes told names the file
        self._file.commit()
        self.item.output.sha256 = digest

    def _same_as_recorded(self, digest: str) -> None:
        """A copy the ledger recorded and that was removed since (its record holds the
        path and the sha256 of it) is fetched again only as the same bytes: other bytes
        at its URL are never recorded as this task's output, in silence (review-5 fault
        4). A copy never made has no digest of the ledger's to check."""
        raw = self.item.output.raw
        recorded, path = raw.get("sha256"), raw.get("path")
        if raw.get("from_ledger") is not True or not (isinstance(path, str) and path):
            return
        if isinstance(recorded, str) and recorded.strip().lower() != digest:
            raise _OtherBytes(
                f"the URL now serves other bytes than the local copy removed since "
                f"(sha256 {digest[:12]}..., the ledger recorded {recorded.strip()[:12]}...): "
                "not taken as this task's output; the record of that copy is kept"
            )

    def _size_differs(self, expected: int, digest: str) -> None:
        """The record's ``file_size`` is not the size served: the bytes are kept (the
        transfer checked out; a CDN may re-encode, a record count in other units) and it
        is said, unless the record's own ``sha256`` disagrees with them too."""
        said = f"the record says {expected} bytes, the server sent {self.size}"
        given = self.item.output.raw.get("sha256")
        if isinstance(given, str) and given.strip().lower() != digest:
            raise _Failure(f"size mismatch: {said}, and its sha256 is not theirs")
        log.warning(
            "genwidgets: output %s of request_id %s: %s; kept (the ledger keeps both sizes)",
            self.item.index,
            self.item.request_id,
            said,
        )

    def __exit__(self, *exc_info: object) -> None:
        self._file.discard()


def _write_bytes(item: _Item, data: bytes, cap: _Cap) -> None:
    with _CheckedOutput(item, cap) as sink:
        sink.write(data)
        sink.commit()


def _content_length(response: httpx.Response, cap: _Cap, output: Output) -> int | None:
    """The declared length of a download (checked), once its answer is known good;
    an untyped output takes the type the server sends with the file."""
    status = response.status_code
    if status >= 400:
        said = f"HTTP {status} {response.reason_phrase}".rstrip()
        if status >= 500 or status in (408, 429):
            raise _Transient(said, parse_retry_after(response.headers))
        if status in EXPIRED_STATUSES:
            kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
            raise _Expired(
                f"{said}: the file host no longer serves this URL (an expired link)",
                status,
                json_body=kind == "application/json" or kind.endswith("+json"),
            )
        raise _Failure(said)
    output.learn_type(response.headers.get("content-type"))
    raw = (response.headers.get("content-length") or "").strip()
    declared = int(raw) if raw.isdigit() and len(raw) < 20 else None
    if declared is not None and declared > cap.bytes and "content-encoding" not in response.headers:
        raise _OverCap(f"Content-Length {declared} is larger than {cap.words}")
    return declared


class _Tries:
    """The tries of one download: a transient failure is tried again while tries
    (:data:`DOWNLOAD_TRIES`) and the download's one deadline of ``timeout`` seconds
    last; each try gets what is left of it, and its words say ``said`` (the timeout as
    set: what is left of it differs per output, and alike failures were never grouped)."""

    def __init__(self, timeout: float, said: float | None = None) -> None:
        self.timeout = timeout
        self.said = timeout if said is None else said
        self.started = time.monotonic()
        self.made = 0

    def deadline(self) -> Deadline:
        self.made += 1
        return Deadline(self.timeout - (time.monotonic() - self.started), said=self.said)

    def wait_after(self, exc: BaseException) -> float:
        """The seconds to wait before the next try after ``exc``; raises when there is
        none (not transient, tries used up, a ``Retry-After`` over
        :data:`MAX_RETRY_AFTER_S`, the deadline passed)."""
        transient = isinstance(exc, (_Transient, *_TRANSIENT_TRANSPORT))
        asked = exc.retry_after if isinstance(exc, _Transient) else None
        wait = backoff_delay(self.made - 1) if asked is None else asked
        in_time = time.monotonic() - self.started + wait < self.timeout
        if transient and self.made < DOWNLOAD_TRIES and wait <= MAX_RETRY_AFTER_S and in_time:
            return wait
        if self.made == 1:
            raise exc
        raise _Failure(f"{_describe(exc)} ({self.made} tries)") from exc


def _label(item: _Item) -> str:
    """``output 2 (image/png) from https://cdn/…``: which output, in a message."""
    where = f" from {url_in_words(item.output.url)}" if item.output.url else ""
    return f"output {item.index} ({item.output.content_type}){where}"


def _describe(exc: BaseException) -> str:
    return str(exc) if isinstance(exc, _Failure) else failure_words(exc)


#: a failure of one output, said and recorded, the others fetched all the same: a URL a
#: gateway gives may also be malformed (``ValueError``: a port of 99999, an odd host)
_EXPECTED = (_Failure, httpx.HTTPError, httpx.InvalidURL, OSError, ValueError)


class _Batch:
    """What the blocking and the async download share: the plan, the per-item
    bookkeeping, the caps and the final verdict; only fetching a URL differs."""

    def __init__(
        self,
        result: Result,
        root: str | os.PathLike[str] | None,
        max_bytes: int,
        on_saved: Callable[[int, Path], Any] | None,
        gateway: str | None = None,
        max_outputs: int = MAX_OUTPUTS,
        max_total_bytes: int = MAX_RESULT_BYTES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        for name, value in (
            ("max_bytes", max_bytes),
            ("max_outputs", max_outputs),
            ("max_total_bytes", max_total_bytes),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive int, not {value!r}")
        if not isinstance(result, Result):
            raise TypeError(f"download_outputs takes a Result, not {type(result).__name__}")
        if not result.request_id:
            raise ValueError(
                "this result has no request_id, so there is no directory to keep its outputs "
                "in; pass the Result of a task (job.result()), whose request_id is set"
            )
        self.request_id = result.request_id
        self.gateway = gateway
        directory = output_dir(result.request_id, root, gateway=gateway)
        indexes = [o.index for o in result.outputs]
        if len(set(indexes)) != len(indexes):  # hand-made outputs: fall back to positions
            indexes = list(range(len(result.outputs)))
        self.items = [
            _Item(o, i, directory, int_or_none(o.raw.get("file_size"), minimum=0), self.request_id)
            for o, i in zip(result.outputs, indexes, strict=True)
        ]
        self.max_bytes = max_bytes
        self.max_outputs = max_outputs
        self.max_total_bytes = max_total_bytes
        self.bytes_left = max_total_bytes
        self.on_saved = on_saved
        self.saved: list[Path] = []
        self.failures: list[tuple[_Item, BaseException]] = []
        self.clock = clock
        self.started = clock()
        #: the origins of file hosts that gave an output no answer in time
        self.down: set[str] = set()

    @contextmanager
    def attempt(self, item: _Item) -> Iterator[None]:
        """Mark ``item`` saved when the block ends normally; an expected failure is
        kept for the final error, so the other outputs are still tried."""
        try:
            yield
            item.output.path = item.target
            self.saved.append(item.target)
            self.bytes_left -= size_of(item.target) or 0
            if self.on_saved is not None:
                self.on_saved(item.index, item.target)
        except _EXPECTED as exc:
            self.failures.append((item, exc))
            if item.output.url and _host_down(exc):
                self.down.add(origin_text(item.output.url))

    def cap(self) -> _Cap:
        """The most bytes the next output may have: ``max_bytes``, or what is left of
        ``max_total_bytes`` for the result."""
        if self.bytes_left < self.max_bytes:
            return _Cap(
                self.bytes_left,
                f"the {self.bytes_left} bytes left of max_total_bytes={self.max_total_bytes} "
                "for one result's outputs",
            )
        return _Cap(self.max_bytes, f"max_bytes={self.max_bytes}")

    def url_to_fetch(self, item: _Item) -> str | None:
        """Save what needs no network (a file already in place, inline data); else the
        URL to download. An output past the caps is not downloaded, and says why."""
        if len(self.saved) + len(self.failures) >= self.max_outputs:
            raise _OverCap(
                f"not downloaded: the result lists {len(self.items)} outputs, and at most "
                f"max_outputs={self.max_outputs} are downloaded for one result "
                "(read it with output.read() while its URL lives)"
            )
        if _already_saved(item):
            return None
        if self.bytes_left <= 0:
            raise _OverCap(
                f"not downloaded: the outputs before it used max_total_bytes="
                f"{self.max_total_bytes} of one result (read it with output.read() while "
                "its URL lives)"
            )
        data = _local_bytes(item.output)
        if data is not None:
            _write_bytes(item, data, self.cap())
            return None
        url = _remote_url(item.output)
        if origin_text(url) in self.down:
            raise _Failure(
                f"not tried: {origin_text(url)} gave an output before it no answer in time "
                "(read it with output.read() once the host answers)"
            )
        return url

    def time_for(self, timeout: float) -> float:
        """The seconds the next download may take: ``timeout``, within what is left of the
        result's one deadline (:data:`RESULT_TIMEOUTS`); none left is a failure."""
        received = self.max_total_bytes - self.bytes_left
        left = RESULT_TIMEOUTS * timeout + received / MIN_RATE - (self.clock() - self.started)
        if left <= 0:
            raise _Failure(
                f"not tried: the downloads of this result took their deadline "
                f"({RESULT_TIMEOUTS} x {timeout:g} s, plus 1 s per {MIN_RATE // 1024} KiB "
                "received); read it with output.read() while its URL lives"
            )
        return min(timeout, left)

    def save_each(self, save: Callable[[_Item, str], object]) -> list[Path]:
        """Save every item, ``save(item, url)`` the ones that need the network (blocking)."""
        for item in self.items:
            with self.attempt(item):
                url = self.url_to_fetch(item)
                if url is not None:
                    save(item, url)
        return self.finish()

    def finish(self) -> list[Path]:
        """The saved paths, or one :class:`DownloadError` naming every failure."""
        if not self.failures:
            return self.saved
        lines = []
        for reason, same in itertools.groupby(self.failures, key=lambda f: _describe(f[1])):
            items = [item for item, _ in same]
            if len(items) > 2:  # outputs past a cap: one line, not hundreds
                first, last = items[0].index, items[-1].index
                lines.append(f"{len(items)} outputs, {first} to {last}: {reason}")
            else:
                lines.extend(f"{_label(item)}: {reason}" for item in items)
        error = DownloadError(
            f"could not save {len(self.failures)} of {len(self.items)} outputs of request_id "
            f"{self.request_id}: " + "; ".join(lines),
            request_id=self.request_id,
            failures=[(item.index, redact(_describe(exc))) for item, exc in self.failures],
            expired=[
                item.index
                for item, exc in self.failures
                if _expired(exc, item.output.url, self.gateway)
            ],
            capped=[item.index for item, exc in self.failures if _over_cap(exc)],
            other_bytes=[item.index for item, exc in self.failures if _other_bytes(exc)],
        )
        raise error from self.failures[0][1]


def download_outputs(
    result: Result,
    *,
    root: str | os.PathLike[str] | None = None,
    fetch: Callable[[str], bytes] | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
    on_saved: Callable[[int, Path], Any] | None = None,
    gateway: str | None = None,
    max_outputs: int = MAX_OUTPUTS,
    max_total_bytes: int = MAX_RESULT_BYTES,
) -> list[Path]:
    """Save every output of ``result`` (blocking); returns the local paths in order.

    ``fetch(url) -> bytes`` replaces the HTTP download (tests, custom transports);
    without it, URLs are streamed with ``httpx`` so a big file never sits in memory,
    each within ``timeout`` seconds plus 1 s per 32 KiB, a transient failure tried
    again (:data:`DOWNLOAD_TRIES`). ``gateway``: the gateway's name (its base URL),
    whose folder under ``root`` keeps the outputs. At most ``max_outputs`` outputs and
    ``max_total_bytes`` bytes of one result are saved; the others are failures.
    """
    batch = _Batch(result, root, max_bytes, on_saved, gateway, max_outputs, max_total_bytes)
    if fetch is not None:
        return batch.save_each(
            lambda item, url: _write_bytes(item, _fetched(fetch, url), batch.cap())
        )
    with blocking_client(timeout=timeout) as http:
        return batch.save_each(
            lambda item, url: _stream(
                http, item, url, batch.cap(), batch.time_for(seconds(timeout)), seconds(timeout)
            )
        )


def _fetched(fetch: Callable[[str], bytes], url: str) -> bytes:
    try:
        return fetch(url)
    except Exception as exc:
        raise _Failure(f"fetch failed: {_describe(exc)}") from exc


Opener = Callable[[str], AbstractAsyncContextManager[httpx.Response]]


async def download_outputs_async(
    result: Result,
    *,
    client: httpx.AsyncClient | None = None,
    opener: Opener | None = None,
    root: str | os.PathLike[str] | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    on_saved: Callable[[int, Path], Any] | None = None,
    timeout: float = FETCH_TIMEOUT_S,
    gateway: str | None = None,
    max_outputs: int = MAX_OUTPUTS,
    max_total_bytes: int = MAX_RESULT_BYTES,
    clock: Callable[[], float] = time.monotonic,
) -> list[Path]:
    """:func:`download_outputs` on an event loop.

    ``opener(url)`` streams one URL (a gateway's ``open_output``, which applies
    the credential rule); or ``client`` streams it with no credential sent. Each
    download ends within ``timeout`` seconds plus 1 s per 32 KiB received
    (docs/decisions.md#reading-answers), its tries included, so a dripping file
    fails, never hangs; all of them within :data:`RESULT_TIMEOUTS` timeouts (plus the
    same time for their bytes) on ``clock``, and none waited on at a host that gave an
    output no answer in time.
    """
    if opener is None:
        if client is None:
            raise TypeError("download_outputs_async needs a client or an opener")
        opener = functools.partial(open_url_async, client)
    batch = _Batch(
        result, root, max_bytes, on_saved, gateway, max_outputs, max_total_bytes, clock
    )
    for item in batch.items:
        with batch.attempt(item):
            url = batch.url_to_fetch(item)
            if url is not None:
                await _stream_async(
                    opener, item, url, batch.cap(), batch.time_for(timeout), timeout
                )
    return batch.finish()


def _stream(
    http: httpx.Client, item: _Item, url: str, cap: _Cap, timeout: float, said: float
) -> None:
    """Download ``url`` into ``item``'s file, tried again by :class:`_Tries`."""
    tries = _Tries(timeout, said)
    while True:
        try:
            return _stream_once(http, item, url, cap, Stopwatch(tries.deadline()))
        except _EXPECTED as exc:
            time.sleep(tries.wait_after(exc))


def _stream_once(http: httpx.Client, item: _Item, url: str, cap: _Cap, watch: Stopwatch) -> None:
    with open_url(http, url, watch) as response:
        declared = _content_length(response, cap, item.output)
        with _CheckedOutput(item, cap) as sink:
            for chunk in iter_capped(response, cap.bytes, watch):
                sink.write(chunk)
            sink.commit(
                wire_bytes=response.num_bytes_downloaded or sink.size, content_length=declared
            )


async def _stream_async(
    opener: Opener, item: _Item, url: str, cap: _Cap, timeout: float, said: float
) -> None:
    """:func:`_stream` on an event loop."""
    tries = _Tries(timeout, said)
    while True:
        try:
            return await _stream_once_async(opener, item, url, cap, tries.deadline())
        except _EXPECTED as exc:
            await asyncio.sleep(tries.wait_after(exc))


async def _stream_once_async(
    opener: Opener, item: _Item, url: str, cap: _Cap, deadline: Deadline
) -> None:
    async with within(deadline) as watch, opener(url) as response:
        declared = _content_length(response, cap, item.output)
        with _CheckedOutput(item, cap) as sink:
            async for chunk in aiter_capped(response, cap.bytes, watch):
                sink.write(chunk)
            sink.commit(
                wire_bytes=response.num_bytes_downloaded or sink.size, content_length=declared
            )
