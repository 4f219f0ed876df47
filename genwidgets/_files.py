"""Files written whole or not at all (the bottom layer).

Outputs, thumbnails and previews are read by other kernels and processes while
they are written; a reader must never meet half a file. One way: write a new
file beside the target, then rename it into place. Nothing here imports the rest
of genwidgets.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import IO

__all__ = ["AtomicFile", "create_beside", "is_fresh", "write_atomically"]


def create_beside(target: Path) -> Path:
    """A new empty file next to ``target``, mode 0666 less the umask (as ``open()``
    makes; ``mkstemp`` would give 0600), with a name no other writer holds."""
    for _ in range(100):
        tmp = target.with_name(f".{target.name}.{secrets.token_hex(6)}.part")
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:
            continue
        return tmp
    raise FileExistsError(f"no free temporary name beside {target}")


class AtomicFile:
    """The one atomic writer: a new file beside ``target``, written in pieces, renamed
    into place by :meth:`commit`. Leaving the ``with`` block without a commit (an
    error, a refusal) removes it and leaves ``target`` as it was. ``durable``: sync
    the data to disk before the rename (downloads, which a crash must not cut short)."""

    def __init__(self, target: Path, *, durable: bool = False) -> None:
        self.target = target
        self.durable = durable
        self.tmp = create_beside(target)
        self._handle: IO[bytes] = open(self.tmp, "wb")  # noqa: SIM115 (closed by commit or exit)

    def __enter__(self) -> AtomicFile:
        return self

    def write(self, data: bytes) -> None:
        self._handle.write(data)

    def commit(self) -> None:
        if self.durable:
            self._handle.flush()
            os.fsync(self._handle.fileno())
        self._handle.close()
        os.replace(self.tmp, self.target)

    def discard(self) -> None:
        """Close and remove the new file (nothing left once committed)."""
        if not self._handle.closed:
            self._handle.close()
        self.tmp.unlink(missing_ok=True)

    def __exit__(self, *exc_info: object) -> None:
        self.discard()


def write_atomically(target: Path, data: bytes, *, parents: bool = False) -> Path:
    """Write ``data`` to ``target`` whole (a file beside it, then a rename); an
    ``OSError`` leaves ``target`` as it was and no temporary file behind.
    ``parents``: make the missing folders above ``target`` first (a save to any path)."""
    if parents:
        target.parent.mkdir(parents=True, exist_ok=True)
    with AtomicFile(target) as out:
        out.write(data)
        out.commit()
    return target


def is_fresh(derived: Path, source: Path) -> bool:
    """Whether a file made from ``source`` (a thumbnail, a preview) exists and is
    not older than it, so it can be used again."""
    try:
        return derived.stat().st_mtime >= source.stat().st_mtime
    except OSError:
        return False
