"""The source of an output made by hand: the one place such an output reads and writes.

Every output the library makes (a job's results, the ledger's, ``render(path)``'s) is
handed the jobs layer's source, ``jobs/output_files.OutputFiles``. An output built by
hand (``Output.from_entry``, ``Result.from_body``, its fields) has none, and gets this
one: no local copy (only the jobs layer vouches for a file at ``path``), its URL read
with a plain GET that sends no credential nor cookie (:func:`.fetch.fetch_url`, what
any URL given by a person gets), a save by the one atomic writer
(docs/decisions.md#records-describe-answers).
"""

from __future__ import annotations

from pathlib import Path

from .._files import write_atomically
from .fetch import fetch_url

__all__ = ["HAND_MADE", "HandMade"]


class HandMade:
    """An :class:`~.output.OutputSource` with no local copy and no credential."""

    def local_copy(self, output: object) -> None:
        return None

    def local_size(self, output: object) -> None:
        return None

    def fetch(self, url: str, max_bytes: int) -> bytes:
        return fetch_url(url, max_bytes=max_bytes)

    def write(self, target: Path, data: bytes) -> None:
        write_atomically(target, data, parents=True)

    def __repr__(self) -> str:
        return "HAND_MADE"


#: The source of every output that was handed none.
HAND_MADE = HandMade()
