"""One produced file of a result: its type, where its bytes are, and reading them.

An output is interpreted by ``content_type``, never by its URL; an untyped one learns
its type from its bytes. Its bytes come from the local copy genwidgets wrote (and only
that copy: docs/decisions.md#outputs-by-gateway), inline content, or a download within
caps and a deadline; what :meth:`Output.read` keeps in memory shares one budget. The
output only describes: its local copy, its download and its save are its
:class:`OutputSource`'s, which the jobs layer hands every output it makes
(docs/decisions.md#records-describe-answers).
"""

from __future__ import annotations

import base64
import functools
import json
import os
import threading
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Protocol

import httpx
from pydantic import AliasChoices, Field, PlainValidator, model_validator

from .._config import redact, shown_path
from .._formats import TERMINAL_CONTROLS, decode_data_url, extension_for, human_bytes, terminal_text
from ..errors import DownloadError
from ..media.files import sniff
from .body import failure_words
from .fetch import MAX_READ_BYTES
from .hand_made import HAND_MADE
from .values import MAX_CONTENT_TYPE, Reading, Text, resolve_output_url, str_or_none

__all__ = [
    "CACHE_BUDGET",
    "CACHE_ONE",
    "UNTYPED",
    "Output",
    "OutputSource",
    "ReadBudget",
    "cache_budget",
    "url_in_words",
]

UNTYPED = "application/octet-stream"


def url_in_words(url: str) -> str:
    """A URL fit for a message: no query string (signatures), no known key; any text a
    gateway gave, a malformed URL too."""
    if url.startswith("data:"):
        return f"a data: URL ({len(url)} characters)"
    head, _, query = url.split("#")[0].partition("?")
    return redact(head + ("?…" if query else ""))


#: What every output's :meth:`Output.read` cache holds at most together, and one alone.
CACHE_BUDGET = 64 * 2**20
CACHE_ONE = 16 * 2**20


class OutputSource(Protocol):
    """Where an output's bytes are besides its record: the disk and the network work
    an :class:`Output` asks for and never does itself. The jobs layer's
    ``jobs/output_files.OutputFiles`` is the one the library hands every output it
    makes; an output made by hand has :data:`~.hand_made.HAND_MADE`."""

    def local_copy(self, output: Output) -> bytes | None:
        """The bytes of the copy genwidgets wrote at ``output.path``; None when there is
        none, or when the file there no longer holds the bytes written."""
        ...

    def local_size(self, output: Output) -> int | None:
        """The size of the file at ``output.path``, None when there is none."""
        ...

    def fetch(self, url: str, max_bytes: int) -> bytes:
        """The bytes at ``url``, at most ``max_bytes`` of them, within a deadline; an
        ``httpx.HTTPError`` or an ``OSError`` when they cannot be read (a body over
        ``max_bytes`` included; the output names itself in the error)."""
        ...

    def write(self, target: Path, data: bytes) -> None:
        """``data`` written to ``target`` whole or not at all, its folder made if needed."""
        ...


def _content_type(value: Any) -> str | None:
    """A record's content type, or None (untyped) when it is blank, too long or holds a
    character a terminal acts on (no media type has one: an escape sequence shown in a
    repr or a console face would run; docs/decisions.md#inert-text)."""
    text = str_or_none(value)
    if text is None or len(text) > MAX_CONTENT_TYPE or TERMINAL_CONTROLS.search(text):
        return None
    return text.strip() or None


class _OutputEntry(Reading):
    """An output entry as an object, each field under any of its dialects' names.
    A false value (null, ``""``) counts as absent: a gateway that writes every field
    may send ``"url": null`` beside its ``file_url``."""

    what = "an output entry"
    content_type: Annotated[str | None, PlainValidator(_content_type)] = Field(
        None, validation_alias=AliasChoices("content_type", "mime_type")
    )
    url: Text = Field(None, validation_alias=AliasChoices("url", "file_url", "uri"))

    @model_validator(mode="before")
    @classmethod
    def _given(cls, entry: Mapping[str, Any]) -> dict[str, Any]:
        return {key: value for key, value in entry.items() if value}


class _CacheBudget:
    """The bytes every :class:`Output` keeps from :meth:`Output.read`, together at most
    ``budget`` (the oldest let go first) and one alone at most ``one``; an output that
    is collected gives its share back."""

    def __init__(self, budget: int, one: int) -> None:
        self.budget, self.one, self.held = budget, one, 0
        self._kept: dict[int, tuple[weakref.ref[Output], int]] = {}  # oldest first
        self._lock = threading.RLock()  # a collected output's callback may come in mid-call

    def keep(self, output: Output, data: bytes) -> None:
        if len(data) > self.one:
            return
        with self._lock:
            self._drop(id(output))
            while self._kept and self.held + len(data) > self.budget:
                key = next(iter(self._kept))
                other = self._kept[key][0]()
                self._drop(key)
                if other is not None:
                    other._cache = None  # noqa: SLF001 - the budget is this module's own: it drops an Output's memory copy
            ref = weakref.ref(output, functools.partial(self._collected, id(output)))
            self._kept[id(output)] = (ref, len(data))
            self.held += len(data)
            output._cache = data  # noqa: SLF001 - the budget is this module's own: it keeps an Output's memory copy

    def _drop(self, key: int) -> None:
        found = self._kept.pop(key, None)
        if found is not None:
            self.held -= found[1]

    def _collected(self, key: int, gone: weakref.ref[Output]) -> None:
        with self._lock:
            found = self._kept.get(key)
            if found is not None and found[0] is gone:
                self._drop(key)


#: The one cache budget of every output read in this process.
cache_budget = _CacheBudget(CACHE_BUDGET, CACHE_ONE)


@dataclass
class Output:
    """One produced file. Interpret it by ``content_type``, never by the URL."""

    content_type: str
    url: str | None = None
    raw: Mapping[str, Any] = field(repr=False, default_factory=dict)
    #: the local copy, once downloaded (the jobs layer sets it, and reads it through
    #: the output's source)
    path: Path | None = None
    index: int = 0
    #: where the local copy, the download and a save go (None: :data:`HAND_MADE`)
    _source: OutputSource | None = field(default=None, repr=False, compare=False)
    _cache: bytes | None = field(default=None, repr=False, compare=False)
    #: False while the record gave no ``content_type`` and the bytes have not told it
    typed: bool = field(default=True, compare=False)
    #: the SHA-256 (hex) of the local copy genwidgets wrote at ``path``: a file there
    #: with other bytes is not this output's (docs/decisions.md#outputs-by-gateway)
    sha256: str | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_entry(
        cls,
        entry: Any,
        index: int = 0,
        source: OutputSource | None = None,
        base_url: str | None = None,
    ) -> Output:
        """One entry of a result's outputs, read through ``source`` (the jobs layer's;
        none: :data:`HAND_MADE`); a relative URL is resolved against the gateway's
        ``base_url`` (docs/decisions.md#hostile-values)."""
        if isinstance(entry, str):  # a bare URL: an untyped entry
            entry = {"url": resolve_output_url(entry, base_url)}
        elif not isinstance(entry, Mapping):
            return cls(
                content_type="application/json",
                raw={"value": entry},
                index=index,
                _cache=json.dumps(entry).encode(),
            )
        found = _OutputEntry.read(entry)
        return cls(
            content_type=found.content_type or UNTYPED,
            url=resolve_output_url(found.url, base_url),
            raw=dict(entry),
            index=index,
            _source=source,
            typed=found.content_type is not None,
        )

    def learn_type(self, served: str | None = None, head: bytes = b"") -> None:
        """Type an untyped output from what its download showed: the ``Content-Type``
        the server ``served`` with the file, failing that the magic bytes of ``head``.
        A typed output keeps its record's type."""
        if self.typed:
            return
        mime = (served or "").split(";")[0].strip().lower()
        if mime and mime != UNTYPED and "/" in mime and not TERMINAL_CONTROLS.search(mime):
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
        """Inline content carried in the record itself (hex/base64/text), if any. Never
        raises: a lone surrogate a gateway escaped into JSON text is kept as its escape
        (``\\ud800``), a value JSON cannot write as its ``str``
        (docs/decisions.md#inline-content)."""
        content = self.raw.get("content")
        if content is None:
            return None
        if isinstance(content, bytes | bytearray | memoryview):  # an output made by hand
            return bytes(content)
        if not isinstance(content, str):
            try:
                return json.dumps(content, default=str).encode()
            except (TypeError, ValueError):  # keys JSON cannot write, a value holding itself
                return repr(content).encode("utf-8", "backslashreplace")
        encoding = str(self.raw.get("encoding") or "").lower()
        try:
            if encoding == "hex":
                return bytes.fromhex(content)
            if encoding == "base64":
                return base64.b64decode(content, validate=True)
        except ValueError:  # binascii.Error too: not what it says it is, kept as text
            pass
        return content.encode("utf-8", "backslashreplace")

    def in_hand(self) -> bytes | None:
        """The bytes held with no disk or network read: those read earlier (kept in
        memory) or the record's inline content; ``None`` when neither is there."""
        return self._cache if self._cache is not None else self.inline()

    def _kept_by(self) -> OutputSource:
        """What reads this output's local copy and URL and writes its saves."""
        return self._source if self._source is not None else HAND_MADE

    def read(self, max_bytes: int = MAX_READ_BYTES) -> bytes:
        """The output's bytes: the local copy, inline content, or a download (within
        its caps and deadline; a body over ``max_bytes`` stops being read there and is
        a :class:`DownloadError`). Kept in memory while the process-wide budget allows
        (:data:`CACHE_BUDGET`)."""
        if self._cache is not None:
            return self._cache
        data = self._kept_by().local_copy(self)
        if data is None:
            data = self.inline()
        if data is None:
            if not self.url:
                raise ValueError("this output has neither a URL nor inline content")
            if self.url.startswith("data:"):
                data = decode_data_url(self.url).data
            else:
                data = self._download(self.url, max_bytes)
        self.learn_type(None, data)
        cache_budget.keep(self, data)
        return data

    def size(self) -> int | None:
        """Bytes known without a download: the local copy's or those in hand."""
        if self._cache is not None:
            return len(self._cache)
        return self._kept_by().local_size(self)

    def __repr__(self) -> str:
        """``<Output image/png 1.2 MB, saved at ~/.genwidgets/outputs/…/image_0.png>``:
        what it is and where, never an absolute path (docs/decisions.md#short-reprs)."""
        size = self.size()
        parts = [self.content_type + (f" {human_bytes(size, exact=False)}" if size else "")]
        if self.path is not None and size is not None:
            parts.append(f"saved at {shown_path(self.path)}")
        elif self.url and not self.url.startswith("data:"):
            parts.append(f"at {_short_url(self.url)}")
        elif self.url or "content" in self.raw:
            parts.append("inline")
        return terminal_text(f"<Output {', '.join(parts)}>")

    def _download(self, url: str, max_bytes: int) -> bytes:
        """The bytes at ``url``; a failure (an HTTP error, a body over its cap, a
        drip past its deadline) is a :class:`DownloadError` naming it."""
        try:
            return self._kept_by().fetch(url, max_bytes)
        except (httpx.HTTPError, httpx.InvalidURL, OSError, ValueError) as exc:  # a bad URL too
            if isinstance(exc, httpx.HTTPStatusError):  # its text repeats the URL, query and all
                answer = exc.response
                reason = f"HTTP {answer.status_code} {answer.reason_phrase}".rstrip()
            else:
                reason = failure_words(exc)
            reason = redact(reason)
            raise DownloadError(
                f"could not read output {self.index} ({self.content_type}) from "
                f"{url_in_words(url)}: {reason}",
                request_id=None,
                failures=[(self.index, reason)],
            ) from exc

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the bytes to ``path`` atomically (temporary file, then rename).

        A path without an extension gets the content type's (``out-0`` → ``out-0.mp4``),
        a folder (one that exists, or a path ending in ``/``) gets ``output-<index>`` and
        that extension inside it, and the file is created with the user's umask, as
        ``open()`` would: docs/decisions.md#forms-board-outputs-and-the-command-line. A
        file that cannot be written is an ``OSError`` naming ``path``, not the temporary
        file beside it.
        """
        given = os.fspath(path)
        if not given.strip():
            raise ValueError("Output.save needs a file name or a folder, not an empty path")
        target = Path(given)
        if given.endswith(("/", os.sep)) or target.is_dir():
            target = target / f"output-{self.index}"
        if not target.suffix:
            target = target.with_name(target.name + extension_for(self.content_type))
        data = self.read()
        try:
            self._kept_by().write(target, data)
        except OSError as exc:
            said = f"{exc.strerror or exc}: cannot save output {self.index} as {target}"
            raise (type(exc)(exc.errno, said) if exc.errno else type(exc)(said)) from None
        return target

    def text(self) -> str:
        return self.read().decode("utf-8", errors="replace")

    def json(self) -> Any:
        return json.loads(self.read())


class ReadBudget:
    """The reads one view or export makes from a gateway (a face, a page, a contact
    sheet): at most ``reads``, each begun before one deadline ``seconds`` from now (a
    read ends within its own download deadline), none after one failed (an expired URL
    or a gateway away: the next would fail too, each after its timeout). A result can
    list thousands of outputs: without it they were read one after another."""

    def __init__(self, reads: int, seconds: float) -> None:
        self.reads, self.seconds, self.left = reads, seconds, reads
        self.deadline = time.monotonic() + seconds
        self.failed = False

    @staticmethod
    def asks_gateway(output: Output) -> bool:
        """Whether reading ``output`` downloads it, a read the budget counts: no local
        copy, no bytes in hand, a URL that is not a ``data:`` one."""
        url = output.url or ""
        held = output.size() is not None or output.inline() is not None
        return not held and bool(url) and not url.startswith("data:")

    def refused(self) -> str | None:
        """Why no more reads are made; None while one may be."""
        if self.failed:
            return "a read from the gateway failed before it: no more are made"
        if self.left <= 0:
            return f"at most {self.reads} outputs are read from the gateway"
        if time.monotonic() >= self.deadline:
            return f"outputs are read from the gateway for at most {self.seconds:g} s"
        return None

    def read(self, output: Output, max_bytes: int) -> bytes:
        """The output's bytes, one read of the budget (ask :meth:`refused` first)."""
        self.left -= 1
        try:
            return output.read(max_bytes)
        except Exception:
            self.failed = True
            raise


def _short_url(url: str, limit: int = 80) -> str:
    """A URL as a repr shows it: no query (signed URLs carry long tokens), at most
    ``limit`` characters."""
    bare = terminal_text(redact(url.split("?", 1)[0].split("#", 1)[0]))
    return bare if len(bare) <= limit else bare[: limit - 1] + "…"
