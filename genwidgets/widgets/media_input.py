"""The media input: a URL box and, unless the field takes URLs only, a file upload
that is encoded at once for the field's :class:`~genwidgets.catalog.MediaSpec`.

Uploaded media is encoded and checked by :mod:`genwidgets.media` and the FileUpload
is cleared at once: the encoded string lives in Python only, and the preview is a
thumbnail, so the file's bytes never become widget state. An upload the field refuses
is held in Python as the value (a :class:`~genwidgets.media.files.LocalMedia`), so the
form's validation refuses it where it sits, as it refuses a typed path: never left out.

A local path typed in the box (``/data/meadow.png``, ``~/x.jpg``, ``file://...``) is
the field's value as a :class:`pathlib.Path`: the form's validation and its submit
encode it by the field's rule (:func:`genwidgets.media.encode_paths`, the one
mechanism), a missing file reads "no such file", and an image shows a thumbnail.
Inline data set by code shows a thumbnail or its type and size, never an empty box.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from urllib.request import url2pathname

import ipywidgets as W

from .. import media as gw_media
from .._formats import decode_data_url, human_bytes
from ..catalog import MediaSpec
from ..errors import PayloadError
from ..media.files import LocalMedia
from ..media.thumbnails import thumbnail_bytes
from . import markup
from ._style import HELP_STYLE, OK_STYLE, layout
from .elements import BuildContext, Element, checked, is_unset, refuse_non_json, shape_error
from .field_spec import UNSET, FieldSpec

__all__ = ["ENCODING_HELP", "MediaElement", "encode_media", "local_path"]

_URL_RE = re.compile(r"^(https?://|asset://)", re.I)
_NOT_A_PATH = re.compile(r"^(https?://|asset://|data:)", re.I)
#: Shaped like a path even when no such file exists: ~/x, ./x, ../x, C:\x, or x.ext.
_PATH_SHAPE = re.compile(r"^(~|\.{1,2}[/\\]|[A-Za-z]:[/\\])|\.[A-Za-z0-9]{1,5}$")
#: Inline data decoded for a thumbnail at most this long (characters of Base64).
PREVIEW_CHARS = 64 * 2**20

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
    One the field refuses is held (``self.refused``): the form says why beside it.
    """

    def __init__(self, spec: FieldSpec, ctx: BuildContext, media: MediaSpec) -> None:
        super().__init__(spec, ctx)
        self.media = media
        self.encoded: str | None = None
        #: an upload the field refuses: the value, so that validation says why
        self.refused: LocalMedia | None = None
        self.file_info = ""
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
        #: the local file the box names, sent encoded (see the module docstring)
        self.path: Path | None = None

    def _typed(self, _change: Any) -> None:
        if self.url.value or self.path is not None:
            self._forget_file()
        self.path = local_path(self.url.value)
        if self.path is not None:
            self._show_file(self.path)
        self._changed()

    def _forget_file(self) -> None:
        self.encoded = None
        self.refused = None
        self.path = None
        self.file_info = ""
        self.preview.layout.display = "none"
        self.preview.value = b""
        self.status.value = ""
        self.url.placeholder = ENCODING_HELP.get(self.media.encoding, "URL")

    def _show_file(self, path: Path) -> None:
        """A typed path: thumbnail and what the file is. Its problems ("no such file",
        a rule it breaks) come from the form's validation, beside the field."""
        if not _is_file(path):
            return
        encoded, info = encode_media(path, path.name, self.media, self.ctx.endpoint)
        self.file_info = info
        self._show_thumbnail(path)
        # its problems are shown by the form, from the same check
        self._render_status("✓ a local file: checked, and sent encoded for this field", encoded)

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
        """Encode local bytes for this field (also what an upload does). Bytes it refuses
        are held as the value: the form's validation says why, at this row's place."""
        with self.quiet():
            self.url.value = ""
        self._forget_file()
        encoded, info = encode_media(data, name, self.media, self.ctx.endpoint)
        self.encoded = encoded
        if encoded is None:
            self.refused = LocalMedia(f"upload {name!r}", data=data)
        self.file_info = info
        self._show_thumbnail(data)
        self._render_status("✓ passes the checks for this field", encoded)
        self._changed()

    def _show_thumbnail(self, data: bytes | Path) -> None:
        """An image's thumbnail under the box (none when Pillow cannot read it)."""
        if self.media.media != "image":
            return
        try:
            made = thumbnail_bytes(data.read_bytes() if isinstance(data, Path) else data, 96)
        except OSError:
            made = None
        if made is not None:
            self.preview.value, self.preview.format = made[0], made[1].split("/")[1]
            self.preview.layout.display = None

    def _render_status(self, ok: str = "", encoded: str | None = None) -> None:
        """What the file is, and ``ok`` once it is encoded (its problems are the form's
        validation's, said beside the field)."""
        self.status.value = markup.join(
            [
                markup.span(self.file_info, HELP_STYLE) if self.file_info else None,
                markup.div(ok, OK_STYLE) if ok and encoded is not None else None,
            ]
        )

    def get(self) -> Any:
        if self.path is not None:
            return self.path
        if self.url.value:
            return self.url.value
        if self.refused is not None:
            return self.refused
        return self.encoded if self.encoded is not None else UNSET

    def set(self, value: Any) -> None:
        local = (str, bytes, bytearray, memoryview, os.PathLike, LocalMedia)
        if not (is_unset(value) or isinstance(value, local)):
            refuse_non_json(self.spec, value)  # an image, an object: how to encode it
            raise shape_error(self, value)  # a number, a dict: never its text
        with self.quiet():
            self._forget_file()
            if is_unset(value):
                self.url.value = ""
            elif isinstance(value, (bytes, bytearray, memoryview)):
                self.load(bytes(value))  # empties the box
            elif isinstance(value, LocalMedia):  # a refused upload given back (form.set undone)
                self.url.value = ""
                self.refused = value
                self.file_info = repr(value).strip("<>")
                self._show_thumbnail(value.read())
                self._render_status()
            elif isinstance(value, os.PathLike) or (
                isinstance(value, str)
                and (_URL_RE.match(value) or len(value) < 200 or local_path(value) is not None)
            ):  # a URL or a path (however long) goes in the box, as if typed
                text = os.fspath(value)
                self.url.value = text
                self.path = Path(text) if isinstance(value, os.PathLike) else local_path(text)
                if self.path is not None:
                    self._show_file(self.path)
            else:  # inline data given by code: kept in Python only
                self.url.value = ""
                self.encoded = str(value)
                self._show_inline(self.encoded)
        self._changed()

    def _show_inline(self, text: str) -> None:
        """Inline data is not an empty box: its thumbnail, or its type and size."""
        data = _inline_bytes(text)
        what = f"{len(text):,} characters"
        if data is not None:
            what = human_bytes(len(data))
            with contextlib.suppress(PayloadError, ValueError, OSError):
                what = str(gw_media.inspect(data))
            self._show_thumbnail(data)
        self.file_info = f"inline data: {what}"
        self.url.placeholder = f"inline data ({what}); type a URL or path to replace it"
        # not "passes the checks": only the form's validation checks data set by code
        self._render_status()


def local_path(text: str) -> Path | None:
    """The local file a typed text names, or None: a ``file://`` URL, an existing file, or
    a text shaped like a path (``~/x``, ``./x``, ``x.png``). URLs, data URLs and other
    text (raw Base64 has no dot and names no file) are not paths."""
    text = text.strip()
    if not text or len(text) > 4096 or "\0" in text or _NOT_A_PATH.match(text):
        return None
    if text.lower().startswith("file://"):
        return Path(url2pathname(urlsplit(text).path))
    path = Path(text).expanduser()
    return path if _is_file(path) or _PATH_SHAPE.search(text) else None


def _is_file(path: Path) -> bool:
    try:
        return path.expanduser().is_file()
    except (OSError, ValueError, RuntimeError):
        return False


def _inline_bytes(text: str) -> bytes | None:
    """The bytes of a data URL or raw Base64 (None when it is neither, or too long)."""
    if len(text) > PREVIEW_CHARS:
        return None
    try:
        if text.startswith("data:"):
            return decode_data_url(text).data
        return base64.b64decode("".join(text.split()), validate=True)
    except (ValueError, binascii.Error):
        return None


def encode_media(
    data: bytes | Path, name: str, spec: MediaSpec, endpoint: str | None = None
) -> tuple[str | None, str]:
    """Encode and check local bytes or a file for ``spec``: (encoding or None, description).

    :func:`genwidgets.media.encode_with` checks every limit of the spec before it
    encodes; a file that fails is not encoded (the form's validation, checking it again
    where it sits, says why). A file's encoding is remembered
    (:func:`genwidgets.media.encode_file`): the form's validation of the same path then
    costs nothing.
    """
    size = data.stat().st_size if isinstance(data, Path) else len(data)
    info = f"{name} ({human_bytes(size)})"
    with contextlib.suppress(PayloadError, ValueError, OSError):  # encode_with says why
        info = f"{name}: {gw_media.inspect(data)}"
    if isinstance(data, Path):
        found = checked(lambda: gw_media.encode_file(data, spec, endpoint=endpoint))
    else:
        found = checked(lambda: gw_media.encode_with(data, spec, endpoint=endpoint))
    encoded, _errors, notes = found
    if notes:
        info += " — " + "; ".join(notes)
    return encoded, info
