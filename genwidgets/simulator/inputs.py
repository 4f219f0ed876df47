"""The input media a task names, read so that an edit can start from its source.

Read: ``data:`` URLs, raw base64, the simulator's own output files (by their
unguessable token, whatever host the URL names) and loopback URLs (a teacher's local
file server). Nothing else is fetched, the simulator never reaches the internet: any
other URL reads as None (the output falls back to shapes from the seed), as does every
failure. A fetch has a short timeout, follows no redirect (one could lead off the
machine) and stops at ``MAX_INPUT_BYTES``.
"""

from __future__ import annotations

import base64
import binascii
import io
import re
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

import httpx
from PIL import Image

from .._config import is_loopback_host
from .._formats import decode_data_url, mime_for
from ..catalog import endpoint as catalog_endpoint
from ..catalog import media_spec_at
from ..errors import EndpointNotFound
from ..media.checks import info_problems
from ..media.files import MediaInfo
from ..media.thumbnails import MAX_PIXELS, TooManyPixels, decoded
from .files import FileStore

MAX_INPUT_BYTES = 32 * 2**20
"""Inputs above this size are ignored (the spec's media limits are below it)."""

FETCH_TIMEOUT = 2.0
"""Seconds for one loopback fetch, connect to last byte."""

_OWN_FILE = re.compile(r"/files/([A-Za-z0-9_-]+)/([^/]+)")


class Inputs:
    """Reads input references for one producer call (worker thread)."""

    def __init__(self, files: FileStore | None = None) -> None:
        self.files = files

    def read(self, ref: object) -> bytes | None:
        """The bytes ``ref`` names, or None when it is not ours to read."""
        if not isinstance(ref, str) or not ref:
            return None
        if ref.startswith(("http://", "https://")):
            return self._own_file(ref) or self._loopback(ref)
        if ref.startswith("asset://") or len(ref) > MAX_INPUT_BYTES * 4 // 3 + 256:
            return None
        try:
            if ref[:5].lower() == "data:":
                return decode_data_url(ref).data or None
            return base64.b64decode(ref, validate=False) or None  # bare base64
        except (binascii.Error, ValueError):
            return None

    def image(self, ref: object) -> Image.Image | None:
        """The image ``ref`` names, decoded to RGB as the thumbnails decode (within their
        pixel cap: docs/decisions.md#pixel-bombs), or None. A picture past the cap is
        :class:`InputTooLarge`: the task fails saying so, its input never silently ignored."""
        data = self.read(ref)
        try:
            image = decoded(io.BytesIO(data), 8192) if data is not None else None
        except TooManyPixels as exc:
            assert data is not None
            raise InputTooLarge(str(ref), exc, len(data)) from None
        except Exception:  # Pillow failing in its own way on a damaged file
            return None
        return image.convert("RGB") if image is not None else None

    def _own_file(self, url: str) -> bytes | None:
        match = _OWN_FILE.fullmatch(urlsplit(url).path)
        if self.files is None or match is None:
            return None
        stored = self.files.get(match.group(1), unquote(match.group(2)))
        if stored is None or stored.size > MAX_INPUT_BYTES:
            return None
        try:
            return stored.path.read_bytes()
        except OSError:
            return None

    def _loopback(self, url: str) -> bytes | None:
        try:
            host = urlsplit(url).hostname
        except ValueError:
            return None
        if not is_loopback_host(host):
            return None
        try:
            with (
                httpx.Client(timeout=FETCH_TIMEOUT, follow_redirects=False, trust_env=False) as c,
                c.stream("GET", url) as reply,
            ):
                if reply.status_code != 200:
                    return None
                body = bytearray()
                deadline = time.monotonic() + FETCH_TIMEOUT
                for chunk in reply.iter_bytes():
                    body += chunk
                    if len(body) > MAX_INPUT_BYTES or time.monotonic() > deadline:
                        return None
                return bytes(body)
        except (httpx.HTTPError, ValueError):
            return None


class InputTooLarge(Exception):
    """An input picture of more pixels than the simulator decodes: its task fails,
    naming the field and the limit (docs/decisions.md#pixel-bombs)."""

    def __init__(self, ref: str, picture: TooManyPixels, size_bytes: int) -> None:
        super().__init__(picture.size)
        self.ref, self.picture, self.size_bytes = ref, picture, size_bytes

    def reason(self, endpoint: str, payload: Mapping[str, Any]) -> str:
        """``<field>: <what is wrong>``: the endpoint's own limit when the picture breaks
        it (a real gateway refuses it too), else the simulator's decoder cap."""
        loc = _place_of(payload, self.ref)
        where = ".".join(map(str, loc)) if loc else "an input picture"
        problems = self._spec_problems(endpoint, loc) if loc else []
        if problems:
            return f"{where}: {'; '.join(problems)}"
        return (
            f"{where}: the picture is {self.picture.size}; the simulator decodes input "
            f"pictures of at most {MAX_PIXELS:,} pixels (the service may take it: send a "
            "smaller one to the simulator)"
        )

    def _spec_problems(self, endpoint: str, loc: tuple[str | int, ...]) -> list[str]:
        if self.picture.sides is None:
            return []
        try:
            spec = media_spec_at(catalog_endpoint(endpoint).model, loc)
        except EndpointNotFound:
            return []
        if spec is None:
            return []
        fmt = self.picture.format
        width, height = self.picture.sides
        info = MediaInfo("image", fmt, mime_for(fmt, "image"), width, height, None, self.size_bytes)
        return info_problems(info, spec, endpoint)


def _place_of(payload: Mapping[str, Any], ref: str) -> tuple[str | int, ...]:
    """Where ``ref`` stands in ``payload`` (the first place), or ``()``."""
    stack: list[tuple[tuple[str | int, ...], Any]] = [((), payload)]
    while stack:
        loc, value = stack.pop(0)
        if value == ref and isinstance(value, str):
            return loc
        if isinstance(value, Mapping):
            stack.extend(((*loc, str(k)), v) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend(((*loc, i), v) for i, v in enumerate(value))
    return ()
