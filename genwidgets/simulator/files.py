"""Output files on disk under unguessable tokens, like a CDN's signed URLs.

Files live in a private temporary directory removed when the server stops or its
process exits; memory stays flat however many tasks a class runs. A process killed
before it could remove its folder (a kernel shut down at once, ``kill -9``) leaves it,
and the next simulator started on the machine removes it: docs/decisions.md#sim-files.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import socket
import tempfile
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from .._workers import RUNS

try:
    import fcntl
except ImportError:  # Windows: folders of killed processes stay for the system to clear
    fcntl = None  # type: ignore[assignment]

_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]")
#: a store's folder in the temporary folder: this prefix, then random letters
PREFIX = "genwidgets-sim-"
#: the file in a store's folder its process holds locked while it lives
ALIVE = ".alive"
#: written in :data:`ALIVE`: a sweep removes only stores of its own host
HOST = socket.gethostname()
_swept: set[str] = set()
_sweeping = threading.Lock()


@dataclass(frozen=True)
class StoredFile:
    token: str
    name: str
    content_type: str
    size: int
    path: Path

    @property
    def url_path(self) -> str:
        return f"/files/{self.token}/{self.name}"


class FileStore:
    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix=PREFIX))
        self._files: dict[str, StoredFile] = {}
        self._alive = _hold(self.root)
        # The embedded server is never stopped explicitly: remove the files at exit.
        self._finalizer = weakref.finalize(self, _remove, str(self.root), self._alive)
        with _sweeping:  # once per process and folder, off the caller's thread
            first = str(self.root.parent) not in _swept
            _swept.add(str(self.root.parent))
        if first:
            RUNS.submit(sweep_abandoned, self.root.parent)

    def put(self, name: str, content_type: str, data: bytes) -> StoredFile:
        """Write ``data`` (any thread) and register it under a fresh token."""
        token = secrets.token_urlsafe(18)
        name = _SAFE_NAME.sub("_", name) or "file"
        folder = self.root / token
        folder.mkdir()
        path = folder / name
        path.write_bytes(data)
        stored = StoredFile(token, name, content_type, len(data), path)
        self._files[token] = stored
        return stored

    def get(self, token: str, name: str) -> StoredFile | None:
        stored = self._files.get(token)
        return stored if stored is not None and stored.name == name else None

    def discard(self, stored: StoredFile) -> None:
        self._files.pop(stored.token, None)
        shutil.rmtree(stored.path.parent, ignore_errors=True)

    def close(self) -> None:
        self._files.clear()
        self._finalizer()


def _hold(root: Path) -> IO[bytes] | None:
    """Lock ``root``'s :data:`ALIVE` for as long as this process lives (the system lets
    go of it when the process ends, however it ends). Locked under another name and
    then renamed, so no sweeper ever finds it unlocked."""
    if fcntl is None:
        return None
    staging = root / f"{ALIVE}.new"
    handle = staging.open("wb")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        handle.write(HOST.encode())  # locks may be this host's alone (a shared /tmp)
        handle.flush()
        os.replace(staging, root / ALIVE)
    except OSError:  # a file system without locks: the folder is never swept, as before
        handle.close()
        return None
    return handle


def _remove(root: str, alive: IO[bytes] | None) -> None:
    _clear(root)  # a process killed meanwhile leaves a folder the next sweep knows
    if alive is not None:
        alive.close()


def sweep_abandoned(folder: Path) -> int:
    """Remove from ``folder`` the stores of this user and host whose process has ended
    without removing them: their :data:`ALIVE` is no longer locked. A store whose
    process lives, one of another user or host and one without that file (being made,
    or of an older genwidgets) are left. Returns how many were removed."""
    if fcntl is None:
        return 0
    removed = 0
    try:
        with os.scandir(folder) as entries:
            found = [e for e in entries if e.name.startswith(PREFIX)]
    except OSError:  # a temporary folder this process cannot list: nothing to do
        return 0
    for entry in found:
        try:
            if not entry.is_dir(follow_symlinks=False):
                continue
            if entry.stat(follow_symlinks=False).st_uid != os.getuid():
                continue
            handle = open(os.path.join(entry.path, ALIVE), "rb")  # noqa: SIM115 - held below
        except OSError:
            continue
        with handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:  # its process lives
                continue
            if handle.read(256).decode(errors="replace") != HOST:
                continue
            _clear(entry.path)
            removed += 1
    return removed


def _clear(root: str) -> None:
    """Remove a store, its :data:`ALIVE` last: a removal cut short (its process ended)
    leaves a folder the next sweep finishes."""
    with contextlib.suppress(OSError), os.scandir(root) as entries:
        for child in entries:
            if child.name == ALIVE:
                continue
            if child.is_dir(follow_symlinks=False):
                shutil.rmtree(child.path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(child.path)
    shutil.rmtree(root, ignore_errors=True)
