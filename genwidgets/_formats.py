"""Small, shared readings of values on the wire and on disk (the bottom layer).

One of each: a lenient integer, a byte count for people, a value as one short
line (labels, cards, summaries), a ``data:`` URL's
bytes, the MIME type ↔ file extension table, and text made inert for the surfaces
that would act on it: a terminal's text and a spreadsheet's cell (markup is
``_html``'s). Nothing here imports the rest of genwidgets, so every layer (the
simulator included) may use it.
"""

from __future__ import annotations

import base64
import binascii
import json
import mimetypes
import re
from typing import Any
from urllib.parse import unquote_to_bytes

__all__ = [
    "EXTENSIONS",
    "MIME_TYPES",
    "TERMINAL_CONTROLS",
    "DataURL",
    "decode_data_url",
    "extension_for",
    "human_bytes",
    "int_or_none",
    "json_nested_deeper",
    "mime_for",
    "short",
    "spreadsheet_cell",
    "terminal_text",
]


#: a JSON string, skipped whole (a bracket inside one is text), or a bracket
_JSON_STRUCTURE = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


def json_nested_deeper(data: bytes | str, limit: int) -> bool:
    """Whether JSON text opens more than ``limit`` arrays or objects at once, counted
    before it is parsed: the parser recurses once a level, and near the interpreter's
    limit whatever runs meanwhile (a finaliser the collector calls) fails too."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    depth = 0
    for token in _JSON_STRUCTURE.finditer(raw):
        if token.group() in (b"[", b"{"):
            depth += 1
            if depth > limit:
                return True
        elif token.group() in (b"]", b"}"):
            depth -= 1
    return False


def int_or_none(value: Any, *, minimum: int | None = None) -> int | None:
    """An integer read tolerantly, or None.

    Accepted: an int (not a bool), a float with no fractional part, a decimal
    string with an optional sign and spaces around. With ``minimum``, smaller
    values read as None (a negative file size is no size).
    """
    number: int | None = None
    if isinstance(value, bool):
        number = None
    elif isinstance(value, int):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and re.fullmatch(r"[+-]?\d+", value.strip()):
        number = int(value.strip())
    if number is not None and minimum is not None and number < minimum:
        return None
    return number


#: What a terminal acts on rather than shows (besides C0): DEL and every C1
#: control (ESC starts CSI, OSC 52 clipboard writes, titles, hidden links; BEL, CR, BS
#: rewrite what is seen), the bidi overrides, embeddings, isolates and marks that
#: reorder a line, and the Unicode line and paragraph separators.
_ACTED_ON_PAST_C0 = "\\x7f-\\x9f\\u061c\\u200e\\u200f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069"
#: every character a terminal acts on, in one line (newline and tab too)
TERMINAL_CONTROLS = re.compile(f"[\\x00-\\x1f{_ACTED_ON_PAST_C0}]")
_IN_LINES = re.compile(f"[\\x00-\\x08\\x0b-\\x1f{_ACTED_ON_PAST_C0}]")  # newline and tab kept


def _escaped(found: re.Match[str]) -> str:
    code = ord(found.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_text(text: str, *, lines: bool = False) -> str:
    """``text`` shown inert on a terminal or in a log: every character a terminal acts
    on (C0, DEL, C1, bidi controls, line separators) written as its escape (``\\x1b``,
    ``\\u202e``), so an escape sequence is shown, never run. ``lines=True`` keeps
    newlines and tabs (a text of several lines); else they are escaped too (one line).
    docs/decisions.md#inert-text."""
    return (_IN_LINES if lines else TERMINAL_CONTROLS).sub(_escaped, text)


#: What a spreadsheet reads as the start of a formula (OWASP, "CSV injection"): ``=``,
#: ``+``, ``-``, ``@``, and a tab or carriage return before them.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_cell(text: str) -> str:
    """``text`` as a CSV cell no spreadsheet runs: one that starts as a formula would
    gets a leading ``'``, which spreadsheets show as text. docs/decisions.md#inert-text."""
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def human_bytes(n: int, *, exact: bool = True) -> str:
    """``64 MB``, ``1.5 MB (1,572,864 bytes)``, ``900 bytes``: MB are MiB (2**20 bytes).
    ``exact=False`` leaves the byte count out (``1.5 MB``), for one-line summaries."""
    mib = 2**20
    if n and n % mib == 0:
        return f"{n // mib} MB"
    if n >= 10**5:
        return f"{n / mib:.1f} MB" + (f" ({n:,} bytes)" if exact else "")
    return f"{n:,} bytes"


def short(value: Any, limit: int = 80) -> str:
    """A value as one line of at most ``limit`` characters (labels, cards, summaries;
    not yet escaped). Data URLs and long strings are cut so a card never carries
    megabytes."""
    if isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
        except (TypeError, ValueError):
            text = str(value)
    text = " ".join(text.split())
    if text.startswith("data:") and "," in text:
        text = text.split(",", 1)[0] + ",…"
    return text if len(text) <= limit else text[: limit - 1] + "…"


class DataURL:
    """A parsed ``data:`` URL: its declared MIME type, parameters and decoded bytes."""

    __slots__ = ("base64", "data", "mime", "params")

    def __init__(self, mime: str, params: tuple[str, ...], base64: bool, data: bytes) -> None:
        self.mime = mime
        self.params = params
        self.base64 = base64
        self.data = data


def decode_data_url(url: str, *, strict: bool = False) -> DataURL:
    """Decode ``data:[<mime>][;param...][;base64],<data>`` (RFC 2397).

    Raises ``ValueError`` saying what is wrong: no comma, or Base64 that does not
    decode. ``strict`` refuses anything but the standard Base64 alphabet with its
    padding; the tolerant default adds missing padding, reads the URL-safe
    alphabet and skips stray characters. Whitespace inside is always allowed.
    """
    if url[:5].lower() != "data:":
        raise ValueError("a data URL starts with 'data:'")
    head, sep, payload = url[5:].partition(",")
    if not sep:
        raise ValueError("malformed data: URL (no comma before the data)")
    parts = [p.strip() for p in head.split(";")]
    mime = parts[0].lower()
    params = tuple(parts[1:])
    is_base64 = any(p.lower() == "base64" for p in params)
    if not is_base64:
        return DataURL(mime, params, False, unquote_to_bytes(payload))
    text = "".join(unquote_to_bytes(payload).decode("ascii", errors="replace").split())
    try:
        if strict:
            data = base64.b64decode(text, validate=True)
        else:  # tolerant: missing padding, the URL-safe alphabet
            text += "=" * (-len(text) % 4)
            url_safe = "-" in text or "_" in text
            data = base64.urlsafe_b64decode(text) if url_safe else base64.b64decode(text)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"undecodable Base64 in a data: URL ({exc})") from None
    return DataURL(mime, params, True, data)


#: the MIME type of each media format name (the catalog's and Pillow/PyAV's names)
MIME_TYPES: dict[str, str] = {
    "jpeg": "image/jpeg",
    "png": "image/png",
    "webp": "image/webp",
    "bmp": "image/bmp",
    "tiff": "image/tiff",
    "gif": "image/gif",
    "mp4": "video/mp4",
    "mov": "video/quicktime",
    "avi": "video/x-msvideo",
    "webm": "video/webm",
    "mkv": "video/x-matroska",
    "mp3": "audio/mpeg",
    "wav": "audio/wav",
    "m4a": "audio/mp4",
    "flac": "audio/flac",
    "ogg": "audio/ogg",
    "aac": "audio/aac",
    "json": "application/json",
    "txt": "text/plain",
}

#: the file extension of each content type we meet: each format's own (JPEG's is
#: ``.jpg``) and other spellings of the same types; others ask ``mimetypes``, then ``.bin``
EXTENSIONS: dict[str, str] = {
    **{mime: "." + fmt for fmt, mime in MIME_TYPES.items()},
    "image/jpeg": ".jpg",
    "image/jpg": ".jpg",
    "audio/mp3": ".mp3",
    "audio/x-wav": ".wav",
    "audio/wave": ".wav",
    "application/octet-stream": ".bin",
}
UNKNOWN_EXTENSION = ".bin"


def mime_for(fmt: str, kind: str = "application") -> str:
    """The MIME type of a format name (``png`` → ``image/png``); ``<kind>/<fmt>`` if unknown."""
    return MIME_TYPES.get(fmt, f"{kind}/{fmt}")


def extension_for(content_type: str) -> str:
    """``.png`` for ``image/png``…: decided by the content type alone, never by a URL."""
    mime = content_type.split(";")[0].strip().lower()
    if mime in EXTENSIONS:
        return EXTENSIONS[mime]
    guessed = mimetypes.guess_extension(mime, strict=False) if mime else None
    if guessed and re.fullmatch(r"\.[A-Za-z0-9]{1,8}", guessed):
        return guessed
    return UNKNOWN_EXTENSION
