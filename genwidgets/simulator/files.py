"""Output files on disk under unguessable tokens, like a CDN's signed URLs.

Files live in a private temporary directory removed when the server stops;
memory stays flat however many tasks a class runs.
"""

from __future__ import annotations

import re
import secrets
import shutil
import tempfile
import weakref
from dataclasses import dataclass
from pathlib import Path

_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]")


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
        self.root = Path(tempfile.mkdtemp(prefix="genwidgets-sim-"))
        self._files: dict[str, StoredFile] = {}
        # The embedded server is never stopped explicitly: remove the files at exit.
        self._finalizer = weakref.finalize(self, shutil.rmtree, str(self.root), True)

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
