"""The media input: a URL box and, unless the field takes URLs only, a file upload
that is encoded at once for the field's :class:`~genwidgets.catalog.MediaSpec`.

Uploaded media is encoded and checked by :mod:`genwidgets.media` and the FileUpload
is cleared at once: the encoded string lives in Python only, and the preview is a
thumbnail, so the file's bytes never become widget state.
"""

from __future__ import annotations

import contextlib
import io
import re
import warnings
from typing import Any

import ipywidgets as W

from .._formats import human_bytes
from ..catalog import MediaSpec
from ..errors import PayloadError
from ._style import ERROR_STYLE, HELP_STYLE, OK_STYLE, esc, layout
from .elements import BuildContext, Element, Quiet, is_unset
from .field_spec import UNSET, FieldSpec

__all__ = ["ENCODING_HELP", "MediaElement", "encode_media"]

_URL_RE = re.compile(r"^(https?://|asset://)", re.I)

ENCODING_HELP = {
    "data_url_lower": "public URL, asset://<id>, or a local file (sent as a data URL)",
    "data_url_mime": "public URL or a local file (sent as a data:<MIME>;base64 URL)",
    "raw_base64": "public URL or a local file (sent as raw base64, no data: prefix)",
    "url_only": "public http(s) URL only (the service fetches it)",
    "url_or_data": "URL or a local file (sent as a data URL)",
}


class MediaElement(Element):
    """A media input: a URL box and, unless the field takes URLs only, a FileUpload.

    An upload is encoded at once through :func:`genwidgets.media.encode_with` for this
    field's :class:`MediaSpec`, checked, previewed as a thumbnail, and the FileUpload
    is cleared: the encoded string stays in Python (``self.encoded``), never in a trait.
    """

    def __init__(self, spec: FieldSpec, ctx: BuildContext, media: MediaSpec) -> None:
        super().__init__(spec, ctx)
        self.media = media
        self.encoded: str | None = None
        self.file_info = ""
        self.check_problems: list[str] = []
        self.url = W.Text(
            placeholder=ENCODING_HELP.get(media.encoding, "URL"), layout=layout("wide")
        )
        self.url.observe(self._typed, "value")
        parts: list[W.Widget] = [self.url]
        self.upload: W.FileUpload | None = None
        self.preview = W.Image(format="png", layout=W.Layout(width="64px", display="none"))
        self.status = W.HTML()
        if media.encoding != "url_only":
            accept = ",".join(f".{f}" for f in media.formats) or f"{media.media}/*"
            self.upload = W.FileUpload(accept=accept, multiple=False, description="file…")
            self.upload.layout = layout("small")
            self.upload.observe(self._uploaded, "value")
            parts.append(self.upload)
        self.control = W.VBox(
            [W.HBox(parts, layout=layout("wide")), W.HBox([self.preview, self.status])]
        )
        self.control.layout = layout("wide")

    def _typed(self, _change: Any) -> None:
        if self.url.value:
            self._forget_file()
        self._changed()

    def _forget_file(self) -> None:
        self.encoded = None
        self.file_info = ""
        self.check_problems = []
        self.preview.layout.display = "none"
        self.preview.value = b""
        self.status.value = ""

    def _uploaded(self, change: Any) -> None:
        files = change["new"]
        if not files:
            return
        entry = files[0]
        data = bytes(entry["content"])
        name = str(entry.get("name", "upload"))
        # Drop the bytes from widget state at once; only the encoding is kept.
        self.upload.value = ()  # type: ignore[union-attr]
        self.load(data, name)

    def load(self, data: bytes, name: str = "upload") -> None:
        """Encode local bytes for this field (also what an upload does)."""
        with Quiet(self):
            self.url.value = ""
        self._forget_file()
        encoded, problems, info = encode_media(data, name, self.media, self.ctx.endpoint)
        self.encoded = encoded
        self.check_problems = problems
        self.file_info = info
        self._show_preview(data)
        self._render_status()
        self._changed()

    def _show_preview(self, data: bytes) -> None:
        if self.media.media != "image":
            return
        thumb = _thumbnail(data)
        if thumb:
            self.preview.value = thumb
            self.preview.layout.display = None

    def _render_status(self) -> None:
        lines = []
        if self.file_info:
            lines.append(f'<span style="{HELP_STYLE}">{esc(self.file_info)}</span>')
        if self.check_problems:
            lines += [f'<div style="{ERROR_STYLE}">✗ {esc(p)}</div>' for p in self.check_problems]
        elif self.encoded is not None:
            lines.append(f'<div style="{OK_STYLE}">✓ passes the checks for this field</div>')
        self.status.value = "".join(lines)

    def get(self) -> Any:
        if self.url.value:
            return self.url.value
        return self.encoded if self.encoded is not None else UNSET

    def set(self, value: Any) -> None:
        with Quiet(self):
            self._forget_file()
            if is_unset(value):
                self.url.value = ""
            elif isinstance(value, (bytes, bytearray, memoryview)):
                self.url.value = ""
                self.load(bytes(value))
            elif isinstance(value, str) and (_URL_RE.match(value) or len(value) < 200):
                self.url.value = value
            else:  # inline data given by code: kept in Python only
                self.url.value = ""
                self.encoded = str(value)
                self.file_info = f"inline data ({len(self.encoded):,} characters)"
                self._render_status()
        self._changed()


def _thumbnail(data: bytes, size: int = 96) -> bytes:
    try:
        from PIL import Image

        with Image.open(io.BytesIO(data)) as img:
            img.thumbnail((size, size))
            out = io.BytesIO()
            img.convert("RGBA").save(out, format="PNG")
            return out.getvalue()
    except Exception:  # not an image Pillow can read: no preview
        return b""


def encode_media(
    data: bytes, name: str, spec: MediaSpec, endpoint: str | None = None
) -> tuple[str | None, list[str], str]:
    """Encode and check local bytes for ``spec``: (encoding or None, problems, description).

    :func:`genwidgets.media.encode_with` checks every limit of the spec before it
    encodes; a file that fails is not encoded, and its problems are listed.
    """
    from .. import media as gw_media  # loads Pillow and PyAV: only an upload needs them

    info = f"{name} ({human_bytes(len(data))})"
    with contextlib.suppress(PayloadError, ValueError, OSError):  # encode_with says why
        info = f"{name}: {gw_media.inspect(data)}"
    encoded: str | None = None
    problems: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            encoded = gw_media.encode_with(data, spec, endpoint=endpoint)
        except PayloadError as exc:
            problems = [e["msg"] for e in exc.errors]
    notes = [str(w.message) for w in caught]
    if notes:
        info += " — " + "; ".join(notes)
    return encoded, list(dict.fromkeys(problems)), info

