"""An output's bytes beyond its record, as the jobs layer keeps and fetches them.

The protocol layer describes an output; this is the
:class:`~genwidgets.protocol.output.OutputSource` the jobs layer hands every output it
makes (a job's results, the ledger's, ``render(path)``'s): the local copy genwidgets
wrote, used only while it holds the bytes written (docs/decisions.md#outputs-by-gateway);
a URL through the fetcher it is given (the gateway's credential rule for a client's
outputs); a save by the one atomic writer (docs/decisions.md#records-describe-answers).
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._files import write_atomically
from ..errors import GenwidgetsWarning
from ..protocol.body import CHUNK
from ..protocol.fetch import fetch_url
from ..protocol.hand_made import HAND_MADE
from ..protocol.output import Output
from .engine import Engine

if TYPE_CHECKING:
    from ..protocol.http import Gateway

__all__ = ["Fetcher", "OutputFiles", "gateway_outputs", "holds_digest", "named_by", "size_of"]

#: Reads one URL whole, at most its second argument's bytes (within a deadline); an HTTP
#: error or a body over that cap raises.
Fetcher = Callable[[str, int], bytes]


def holds_digest(path: Path, sha256: str) -> bool:
    """Whether the file at ``path`` holds the bytes whose SHA-256 (hex) is ``sha256``,
    read by blocks (a video is never held whole); False when it cannot be read. The
    one check that a file is the copy genwidgets wrote: a download finding its file in
    place, a ledger row's recorded copy (docs/decisions.md#a-shared-home)."""
    found = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(CHUNK), b""):
                found.update(block)
    except OSError:
        return False
    return found.hexdigest() == sha256


def size_of(path: Any) -> int | None:
    """The size of the file at ``path`` in bytes; None when it cannot be read."""
    try:
        return int(path.stat().st_size)
    except (OSError, AttributeError):
        return None


class OutputFiles:
    """The local copy at ``output.path`` (refused, with a warning, when its bytes are
    not those whose SHA-256 the output keeps), a URL through ``fetch`` (by default a
    plain GET that sends no credential), a save written whole."""

    def __init__(self, fetch: Fetcher = HAND_MADE.fetch) -> None:
        self._fetch = fetch

    def __repr__(self) -> str:
        return f"OutputFiles({getattr(self._fetch, '__qualname__', 'fetch')})"

    def local_copy(self, output: Output) -> bytes | None:
        path = output.path
        if path is None or not path.exists():
            return None
        data = path.read_bytes()
        if output.sha256 is not None and hashlib.sha256(data).hexdigest() != output.sha256:
            warnings.warn(
                f"the file {path} is not the copy of output {output.index} genwidgets "
                "saved (its bytes changed), so it is not used",
                GenwidgetsWarning,
                stacklevel=3,  # the caller of Output.read
            )
            return None
        return data

    def local_size(self, output: Output) -> int | None:
        return size_of(output.path)

    def fetch(self, url: str, max_bytes: int) -> bytes:
        return self._fetch(url, max_bytes)

    def write(self, target: Path, data: bytes) -> None:
        write_atomically(target, data, parents=True)


def named_by(gateway: str | None) -> OutputFiles:
    """The source of outputs a gateway named, read with no client of it (the ledger's
    rows): a plain GET that carries no credential, under that gateway's address rule
    (an internal address refused while the gateway's is public:
    docs/decisions.md#fetch-addresses)."""

    def fetch(url: str, max_bytes: int) -> bytes:
        return fetch_url(url, max_bytes=max_bytes, gateway=gateway)

    return OutputFiles(fetch)


def gateway_outputs(engine: Engine, gateway: Gateway) -> OutputFiles:
    """The source of a client's outputs, read from any thread: a URL through the
    gateway (its credential rule) on the engine; on the engine thread itself, a plain
    GET that carries no credential (awaiting the engine there would deadlock), under
    the gateway's address rule."""

    def fetch(url: str, max_bytes: int) -> bytes:
        if engine.in_engine_thread:
            return fetch_url(
                url, max_bytes=max_bytes, gateway=gateway.base_url, address=gateway.address
            )
        return engine.run(gateway.fetch(url, max_bytes))

    return OutputFiles(fetch)
