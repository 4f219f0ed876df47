"""Media fields: what one accepts (its :class:`MediaSpec`, a marker that checks the strings
it annotates) and the check of a media string's *form* only (URL, data URL, raw base64,
``asset://``), without any I/O but one: a rejected string that names an
existing local file says to pass a ``pathlib.Path``. :mod:`genwidgets.media` checks the
file itself (format, size, sides, duration).
"""

from __future__ import annotations

import math
import re
import reprlib
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import GetCoreSchemaHandler
from pydantic.fields import FieldInfo
from pydantic_core import CoreSchema, core_schema

from .introspect import is_container, item_types, strip_optional
from .markers import MB

Encoding = Literal[
    "data_url_lower",  # data:image/<lowercase format>;base64,... (vidA), or URL, or asset://
    "data_url_mime",  # data:<MIME type>;base64,... (vidH, vidV, imgQ, imgG), or URL
    "raw_base64",  # base64 with no prefix (vidK), or URL
    "url_only",  # public http(s) URL only (vidP)
    "url_or_data",  # URL or any data URL (masks, speech), or raw base64 where stated
]


@dataclass(frozen=True)
class MediaSpec:
    """What a media field accepts, from the spec's table. Limits are inclusive
    unless ``*_exclusive`` is set; ``None`` means the spec states none."""

    media: Literal["image", "video", "audio"]
    encoding: Encoding
    formats: tuple[str, ...] = ()  # lowercase: "jpeg", "png", "webp", "mp4", ...
    max_bytes: int | None = None
    min_side: int | None = None  # each of width and height at least this
    max_side: int | None = None
    min_short_side: int | None = None
    sides_exclusive: bool = False  # vidA: strictly between 300 and 6000
    min_aspect: float | None = None  # width / height
    max_aspect: float | None = None
    aspect_exclusive: bool = False
    min_seconds: float | None = None
    max_seconds: float | None = None
    allow_asset: bool = False  # asset://<id> accepted
    raw_base64_ok: bool = False  # url_or_data: bare base64 too (the imgM mask)
    max_decoded: int | None = None  # inline data's decoded cap, when tighter (vidV)
    note: str = ""

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        """A string field it annotates is checked for the form the spec allows
        (:class:`MediaCheck`); a list it annotates is left to its items' own."""
        schema = handler(source)
        if is_container(strip_optional(source)[0]):
            return schema
        return core_schema.no_info_after_validator_function(MediaCheck(self), schema)


def media_specs(info: FieldInfo) -> list[MediaSpec]:
    """Every MediaSpec of a field, its own first, then its items' (no repeats): a list
    of media strings says its spec once, on its items (``list[Annotated[str, SPEC]]``)."""
    items = (m for _, meta in item_types(info.annotation) for m in meta)
    return list(dict.fromkeys(m for m in (*info.metadata, *items) if isinstance(m, MediaSpec)))


def media_spec(info: FieldInfo) -> MediaSpec | None:
    """The field's :class:`MediaSpec`: its own, else its items'; ``None`` for no media."""
    return next(iter(media_specs(info)), None)


_MIME_TYPES: dict[str, tuple[str, ...]] = {
    "jpeg": ("image/jpeg", "image/jpg", "image/pjpeg"),
    "png": ("image/png",),
    "webp": ("image/webp",),
    "bmp": ("image/bmp", "image/x-ms-bmp"),
    "tiff": ("image/tiff",),
    "gif": ("image/gif",),
    "mp4": ("video/mp4",),
    "mov": ("video/quicktime", "video/mov"),
    "avi": ("video/x-msvideo", "video/avi", "video/msvideo"),
    "mp3": ("audio/mpeg", "audio/mp3"),
    "wav": ("audio/wav", "audio/x-wav", "audio/wave"),
    "m4a": ("audio/mp4", "audio/x-m4a", "audio/m4a"),
}
_LOWER_FORMAT_WORDS: dict[str, tuple[str, ...]] = {"jpeg": ("jpeg", "jpg")}
_HTTP_URL = re.compile(r"https?://\S+", re.IGNORECASE)
_DATA_HEADER = re.compile(r"data:([^;,]*)((?:;[^;,]*)*),", re.IGNORECASE)
_BASE64 = re.compile(r"[A-Za-z0-9+/]+={0,2}")


def preview(value: str, limit: int = 40) -> str:
    """A short, safe rendering of a possibly huge string for an error message."""
    if len(value) <= limit:
        return repr(value)
    return f"{value[:limit]!r}… ({len(value)} characters)"


class _Shown(reprlib.Repr):
    """``repr`` cut short: a few items of a list or a dict, 40 characters of a text or
    a number (a number of thousands of digits is never written out: past 4300 digits
    Python refuses to)."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel, self.maxlist, self.maxdict, self.maxtuple = 2, 4, 4, 4
        self.maxstring = self.maxother = 40

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() <= 128:
            return repr(x)
        digits = math.floor(math.log10(abs(x))) + 1
        digits -= abs(x) < 10 ** (digits - 1)  # the float's log10 rounds 10**400 - 1 up
        return f"{'-' if x < 0 else ''}{abs(x) // 10 ** (digits - 12)}… ({digits} digits)"


_SHOWN = _Shown()


def shown(value: Any) -> str:
    """Any value a user gave, as an error message shows it: short (:func:`preview` for a
    text) and inert (``repr`` escapes control characters)."""
    return preview(value) if isinstance(value, str) else _SHOWN.repr(value)


#: set while a server checks a payload sent from another machine
_SENT_FROM_ELSEWHERE: ContextVar[bool] = ContextVar("genwidgets_sent_from_elsewhere", default=False)


@contextmanager
def sent_from_elsewhere() -> Iterator[None]:
    """Check payloads as a server does (the class gateway, the simulator): whether a string
    names a file of this machine is not the sender's to learn (a probe of its disk), so
    no error says it."""
    token = _SENT_FROM_ELSEWHERE.set(True)
    try:
        yield
    finally:
        _SENT_FROM_ELSEWHERE.reset(token)


def _names_a_file(value: str) -> bool:
    """Whether a rejected string names an existing local file (one ``stat``, on the error
    path only): then the error says how to send that file. Never for a payload sent from
    elsewhere (:func:`sent_from_elsewhere`)."""
    if len(value) > 4096 or "\0" in value or _SENT_FROM_ELSEWHERE.get():
        return False
    try:
        return Path(value).expanduser().is_file()
    except (OSError, ValueError, RuntimeError):
        return False


def _mb(n: float) -> str:
    return f"{n / MB:.1f} MB"


@dataclass(frozen=True)
class MediaCheck:
    """AfterValidator: the string has the form its :class:`MediaSpec` allows (a field's
    spec runs it: ``Annotated[str, SPEC]``).

    The spec's ``raw_base64_ok`` lets a ``url_or_data`` field take bare base64 too (the
    imgM mask: "URL or Base64 data"); its ``max_decoded`` caps the decoded size of inline
    data where the spec states a tighter limit for base64 than for files (vidV).
    """

    spec: MediaSpec

    def __call__(self, value: str | None) -> str | None:
        if value is None:
            return value
        if not value:
            raise ValueError(f"empty; expected {self.expected()}")
        if _HTTP_URL.fullmatch(value):
            return value
        head = value[:8].lower()
        if head.startswith("asset://"):
            return self._asset(value)
        if head.startswith("data:"):
            return self._data_url(value)
        takes_base64 = self.spec.encoding == "raw_base64" or self.spec.raw_base64_ok
        if takes_base64 and _BASE64.fullmatch(value):
            self._check_size(len(value))
            return value
        if _names_a_file(value):
            raise ValueError(
                f"{preview(value)} is a local file, and a string is not read as one: pass "
                f"pathlib.Path({value!r}) to have it checked and encoded for this field, or "
                "gw.media.encode(path, endpoint, field)"
            )
        raise ValueError(f"expected {self.expected()}; got {preview(value)}{self.hint()}")

    def expected(self) -> str:
        spec = self.spec
        formats = ", ".join(spec.formats)
        if spec.encoding == "data_url_lower":
            words = [w for f in spec.formats for w in _LOWER_FORMAT_WORDS.get(f, (f,))]
            text = (
                "a public http(s) URL, or data:image/<lowercase format>;base64,<data> "
                f"(format one of {', '.join(words)})"
            )
        elif spec.encoding == "data_url_mime":
            mimes = ", ".join(m for f in spec.formats for m in _MIME_TYPES.get(f, ())[:1])
            text = "a public http(s) URL, or data:<MIME type>;base64,<data>" + (
                f" with MIME type {mimes}" if mimes else ""
            )
        elif spec.encoding == "raw_base64":
            text = "a public http(s) URL, or raw base64 with no data: prefix" + (
                f" ({formats})" if formats else ""
            )
        elif spec.encoding == "url_only":
            text = "a public http(s) URL" + (f" ({formats})" if formats else "")
        else:
            text = "a public http(s) URL, or data:<MIME type>;base64,<data>"
            if self.spec.raw_base64_ok:
                text += ", or raw base64"
        if spec.allow_asset:
            text += ", or asset://<ASSET_ID>"
        return text

    def hint(self) -> str:
        if self.spec.encoding == "url_only":
            return " (the service fetches the file itself: upload a local file and pass its URL)"
        return " (gw.media encodes a local file the way this field wants)"

    def _asset(self, value: str) -> str:
        if not self.spec.allow_asset:
            raise ValueError(f"asset:// IDs are not accepted here; expected {self.expected()}")
        if not value.startswith("asset://"):
            raise ValueError(
                f"write the asset scheme in lowercase: asset://<ASSET_ID>, not {preview(value)}"
            )
        if len(value) == len("asset://"):
            raise ValueError("asset:// needs an asset ID after it: asset://<ASSET_ID>")
        return value

    def _data_url(self, value: str) -> str:
        spec = self.spec
        if spec.encoding == "raw_base64":
            raise ValueError(
                "this field needs raw base64 without a 'data:...;base64,' prefix (or a URL); "
                "strip the prefix, or let gw.media encode the file"
            )
        if spec.encoding == "url_only":
            raise ValueError(
                f"inline data is not accepted here; expected {self.expected()}{self.hint()}"
            )
        match = _DATA_HEADER.match(value)
        if not match or ";base64" not in match.group(2).lower():
            raise ValueError(
                f"a data URL must read data:<type>;base64,<data>; got {preview(value)}"
            )
        mime = match.group(1)
        body = value[match.end() :]
        if not body:
            raise ValueError("the data URL carries no data after 'base64,'")
        if spec.encoding == "data_url_lower":
            self._lowercase_format(value, mime)
        else:
            self._mime(mime)
        self._check_size(len(body))
        return value

    def _lowercase_format(self, value: str, mime: str) -> None:
        header = value[: value.index(",") + 1]
        if header != header.lower():
            raise ValueError(
                "the data URL must be lowercase, data:image/<lowercase format>;base64,"
                f" (e.g. {header.lower()}); got {header}"
            )
        if not mime.startswith("image/"):
            raise ValueError(
                f"expected an image data URL data:image/<format>;base64,; got {header}"
            )
        word = mime[len("image/") :]
        allowed = [w for f in self.spec.formats for w in _LOWER_FORMAT_WORDS.get(f, (f,))]
        if allowed and word not in allowed:
            raise ValueError(
                f"image format {word!r} is not accepted; allowed: {', '.join(allowed)}"
            )

    def _mime(self, mime: str) -> None:
        mime = mime.lower()
        kind = self.spec.media
        if not mime.startswith(f"{kind}/"):
            raise ValueError(
                f"expected a {kind} data URL (data:{kind}/...;base64,); got data:{mime}"
            )
        allowed = [m for f in self.spec.formats for m in _MIME_TYPES.get(f, ())]
        if allowed and mime not in allowed:
            raise ValueError(f"MIME type {mime} is not accepted; allowed: {', '.join(allowed)}")

    def _check_size(self, encoded_length: int) -> None:
        limits = [n for n in (self.spec.max_bytes, self.spec.max_decoded) if n is not None]
        if not limits:
            return
        decoded = encoded_length * 3 // 4
        if decoded > min(limits):
            raise ValueError(
                f"the inline data decodes to about {_mb(decoded)}; the limit is {_mb(min(limits))}"
            )
