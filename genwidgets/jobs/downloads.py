"""Keep the outputs of a finished task on disk, before their URLs expire.

Each output goes to ``<root>/<gateway>/<request_id>/<index><ext>`` (root defaults to
``GENWIDGETS_HOME/outputs``; ``<gateway>`` names the gateway, so two gateways' tasks of
one request id never share a folder), ``ext`` from the content type, never the URL
(spec 7, rule 5). Writes are atomic and size-checked, a file found in place is used
only when this output wrote it, reads are capped and on a deadline, the key goes only
to the gateway's origin, and one :class:`DownloadError` lists every failure:
docs/decisions.md#downloads and docs/decisions.md#outputs-by-gateway.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
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
from ..protocol.body import Deadline, Stopwatch, aiter_capped, iter_capped, within
from ..protocol.fetch import (
    DEFAULT_TIMEOUT,
    MAX_READ_BYTES,
    blocking_client,
    open_url,
    open_url_async,
    seconds,
)
from ..protocol.output import url_in_words
from ..protocol.records import Output, Result
from .output_files import holds_digest

__all__ = [
    "EXTENSIONS",
    "download_outputs",
    "download_outputs_async",
    "extension_for",
    "gateway_folder",
    "output_dir",
]

DEFAULT_MAX_BYTES = MAX_READ_BYTES  # the client's defaults live in _config.py

#: A folder name longer than this keeps its start and a digest of the whole
#: (file systems allow 255 bytes; a request id may be longer, or escape to 3 times its size).
MAX_NAME = 96


class _Failure(Exception):
    """Why one output failed (internal; collected into a DownloadError)."""


def _digest(text: str, n: int = 16) -> str:
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()[:n]


def _safe_name(text: str) -> str:
    """A folder name that cannot escape the root and that every file system takes,
    whatever the gateway sent: other characters escaped, a long name shortened with a
    digest of the whole (so two ids never share a folder)."""
    name = re.sub(r"[^A-Za-z0-9._-]", lambda m: f"%{ord(m.group()):02X}", text)
    name = name if name.strip(".") else name.replace(".", "%2E")
    if len(name) > MAX_NAME:
        name = f"{name[: MAX_NAME - 18]}~{_digest(text)}"
    return name


def gateway_folder(gateway: str) -> str:
    """The folder of one gateway's outputs: ``simulator``, or its host (and port) and a
    short digest of its whole address (two gateways on one host stay apart)."""
    if not gateway.startswith(("http://", "https://")):
        return _safe_name(gateway)
    parts = urlsplit(gateway)
    host = f"{parts.hostname or 'gateway'}{f'_{parts.port}' if parts.port else ''}"
    return f"{_safe_name(host)[:60]}-{_digest(gateway.rstrip('/'), 10)}"


def output_dir(
    request_id: str, root: str | os.PathLike[str] | None = None, *, gateway: str | None = None
) -> Path:
    """Where the outputs of one task go: ``<root>/<gateway>/<request_id>`` (without a
    gateway, ``<root>/<request_id>``, where outputs saved by hand have always gone)."""
    base = Path(root) if root is not None else home() / "outputs"
    if gateway is not None:
        base = base / gateway_folder(gateway)
    return base / _safe_name(request_id)


@dataclass
class _Item:
    """One output to save, and where (the extension follows the output's type,
    which an untyped output learns from its first bytes)."""

    output: Output
    index: int
    directory: Path
    expected_size: int | None

    @property
    def target(self) -> Path:
        return self.directory / f"{self.index}{extension_for(self.output.content_type)}"


def _already_saved(item: _Item) -> bool:
    """Whether this output itself wrote the file in place, unchanged since: a file
    anyone else left there (another gateway, another task) is never trusted."""
    output = item.output
    if output.sha256 is None or output.path != item.target:
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


class _CheckedOutput:
    """One output written whole (the one atomic writer, ``_files.AtomicFile``), checked
    as it comes: its size against ``max_bytes`` and the record, its sha256."""

    def __init__(self, item: _Item, max_bytes: int) -> None:
        self.item = item
        self.max_bytes = max_bytes
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
        if self.size > self.max_bytes:
            raise _Failure(f"larger than max_bytes={self.max_bytes}")
        self._file.write(chunk)
        self._sha256.update(chunk)

    def commit(self, *, wire_bytes: int | None = None, content_length: int | None = None) -> None:
        if content_length is not None and wire_bytes is not None and wire_bytes != content_length:
            raise _Failure(
                f"body cut short or overlong: Content-Length {content_length}, "
                f"received {wire_bytes} bytes"
            )
        expected = self.item.expected_size
        if expected is not None and self.size != expected:
            raise _Failure(f"size mismatch: the record says {expected} bytes, got {self.size}")
        self._file.commit()
        self.item.output.sha256 = self._sha256.hexdigest()

    def __exit__(self, *exc_info: object) -> None:
        self._file.discard()


def _write_bytes(item: _Item, data: bytes, max_bytes: int) -> None:
    with _CheckedOutput(item, max_bytes) as sink:
        sink.write(data)
        sink.commit()


def _content_length(response: httpx.Response, max_bytes: int, output: Output) -> int | None:
    """The declared length of a download (checked), once its answer is known good;
    an untyped output takes the type the server sends with the file."""
    if response.status_code >= 400:
        raise _Failure(f"HTTP {response.status_code} {response.reason_phrase}".rstrip())
    output.learn_type(response.headers.get("content-type"))
    raw = (response.headers.get("content-length") or "").strip()
    declared = int(raw) if raw.isdigit() and len(raw) < 20 else None
    if declared is not None and declared > max_bytes and "content-encoding" not in response.headers:
        raise _Failure(f"Content-Length {declared} is larger than max_bytes={max_bytes}")
    return declared


def _describe(exc: BaseException) -> str:
    if isinstance(exc, _Failure):
        return str(exc)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


#: a failure of one output, said and recorded, the others fetched all the same: a URL a
#: gateway gives may also be malformed (``ValueError``: a port of 99999, an odd host)
_EXPECTED = (_Failure, httpx.HTTPError, httpx.InvalidURL, OSError, ValueError)


class _Batch:
    """What the blocking and the async download share: the plan, the per-item
    bookkeeping and the final verdict; only fetching a URL differs between them."""

    def __init__(
        self,
        result: Result,
        root: str | os.PathLike[str] | None,
        max_bytes: int,
        on_saved: Callable[[int, Path], Any] | None,
        gateway: str | None = None,
    ) -> None:
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes <= 0:
            raise ValueError(f"max_bytes must be a positive int, not {max_bytes!r}")
        if not isinstance(result, Result):
            raise TypeError(f"download_outputs takes a Result, not {type(result).__name__}")
        if not result.request_id:
            raise ValueError(
                "this result has no request_id, so there is no directory to keep its outputs "
                "in; pass the Result of a task (job.result()), whose request_id is set"
            )
        self.request_id = result.request_id
        directory = output_dir(result.request_id, root, gateway=gateway)
        indexes = [o.index for o in result.outputs]
        if len(set(indexes)) != len(indexes):  # hand-made outputs: fall back to positions
            indexes = list(range(len(result.outputs)))
        self.items = [
            _Item(o, i, directory, int_or_none(o.raw.get("file_size"), minimum=0))
            for o, i in zip(result.outputs, indexes, strict=True)
        ]
        self.max_bytes = max_bytes
        self.on_saved = on_saved
        self.saved: list[Path] = []
        self.failures: list[tuple[_Item, BaseException]] = []

    @contextmanager
    def attempt(self, item: _Item) -> Iterator[None]:
        """Mark ``item`` saved when the block ends normally; an expected failure is
        kept for the final error, so the other outputs are still tried."""
        try:
            yield
            item.output.path = item.target
            self.saved.append(item.target)
            if self.on_saved is not None:
                self.on_saved(item.index, item.target)
        except _EXPECTED as exc:
            self.failures.append((item, exc))

    def url_to_fetch(self, item: _Item) -> str | None:
        """Save what needs no network (a file already in place, inline data); else the
        URL to download."""
        if _already_saved(item):
            return None
        data = _local_bytes(item.output)
        if data is not None:
            _write_bytes(item, data, self.max_bytes)
            return None
        return _remote_url(item.output)

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
        for item, exc in self.failures:
            where = f" from {url_in_words(item.output.url)}" if item.output.url else ""
            label = f"output {item.index} ({item.output.content_type})"
            lines.append(f"{label}{where}: {_describe(exc)}")
        error = DownloadError(
            f"could not save {len(self.failures)} of {len(self.items)} outputs of request_id "
            f"{self.request_id}: " + "; ".join(lines),
            request_id=self.request_id,
            failures=[(item.index, redact(_describe(exc))) for item, exc in self.failures],
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
) -> list[Path]:
    """Save every output of ``result`` (blocking); returns the local paths in order.

    ``fetch(url) -> bytes`` replaces the HTTP download (tests, custom transports);
    without it, URLs are streamed with ``httpx`` so a big file never sits in memory,
    each within ``timeout`` seconds plus 1 s per 32 KiB. ``gateway``: the gateway's
    name (its base URL), whose folder under ``root`` keeps the outputs.
    """
    batch = _Batch(result, root, max_bytes, on_saved, gateway)
    if fetch is not None:
        return batch.save_each(
            lambda item, url: _write_bytes(item, _fetched(fetch, url), max_bytes)
        )
    with blocking_client(timeout=timeout) as http:
        return batch.save_each(
            lambda item, url: _stream(http, item, url, max_bytes, seconds(timeout))
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
) -> list[Path]:
    """:func:`download_outputs` on an event loop.

    ``opener(url)`` streams one URL (a gateway's ``open_output``, which applies
    the credential rule); or ``client`` streams it with no credential sent. Each
    download ends within ``timeout`` seconds plus 1 s per 32 KiB received
    (docs/decisions.md#reading-answers), so a dripping file fails, never hangs.
    """
    if opener is None:
        if client is None:
            raise TypeError("download_outputs_async needs a client or an opener")
        opener = functools.partial(open_url_async, client)
    batch = _Batch(result, root, max_bytes, on_saved, gateway)
    for item in batch.items:
        with batch.attempt(item):
            url = batch.url_to_fetch(item)
            if url is not None:
                await _stream_async(opener, item, url, max_bytes, timeout)
    return batch.finish()


def _stream(http: httpx.Client, item: _Item, url: str, max_bytes: int, timeout: float) -> None:
    watch = Stopwatch(Deadline(timeout))
    with open_url(http, url, watch) as response:
        declared = _content_length(response, max_bytes, item.output)
        with _CheckedOutput(item, max_bytes) as sink:
            for chunk in iter_capped(response, max_bytes, watch):
                sink.write(chunk)
            sink.commit(
                wire_bytes=response.num_bytes_downloaded or sink.size, content_length=declared
            )


async def _stream_async(
    opener: Opener, item: _Item, url: str, max_bytes: int, timeout: float
) -> None:
    async with within(Deadline(timeout)) as watch, opener(url) as response:
        declared = _content_length(response, max_bytes, item.output)
        with _CheckedOutput(item, max_bytes) as sink:
            async for chunk in aiter_capped(response, max_bytes, watch):
                sink.write(chunk)
            sink.commit(
                wire_bytes=response.num_bytes_downloaded or sink.size, content_length=declared
            )
