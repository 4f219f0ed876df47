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

__all__ = ["create_beside", "is_fresh", "write_atomically"]


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


def write_atomically(target: Path, data: bytes) -> Path:
    """Write ``data`` to ``target`` whole (a file beside it, then a rename); an
    ``OSError`` leaves ``target`` as it was and no temporary file behind."""
    tmp = create_beside(target)
    try:
        with open(tmp, "wb") as handle:
            handle.write(data)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target


def is_fresh(derived: Path, source: Path) -> bool:
    """Whether a file made from ``source`` (a thumbnail, a preview) exists and is
    not older than it, so it can be used again."""
    try:
        return derived.stat().st_mtime >= source.stat().st_mtime
    except OSError:
        return False
