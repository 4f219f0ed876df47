"""HTML safety: the one place text, URLs, content types and JSON are made safe for a page.

The widgets write HTML with :func:`tag`, which escapes every text and attribute value
by one rule (:func:`esc`) and returns :class:`Html`, markup already safe, which it
never escapes again: so text cannot reach a page unescaped, nor markup escaped twice.
Every URL goes through :func:`url_kind`, every content type through :func:`safe_mime`
and JSON in a ``<script>`` through :func:`json_script`, so "hostile outputs are
harmless" is checked in one module. It is in the base layer so the lab, below the
widgets, uses the same rules: docs/decisions.md#html-safety.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal

__all__ = [
    "SAFE_DATA_MIME",
    "Html",
    "UrlKind",
    "esc",
    "join",
    "json_script",
    "safe_mime",
    "tag",
    "url_kind",
]


class Html(str):
    """Markup that is safe as it is: what :func:`tag`, :func:`esc` and :func:`join`
    return. Build one by hand only from a constant of this package (a ``<style>``'s
    CSS), never from data: anything else reaches a page through :func:`esc`."""

    __slots__ = ()


def esc(value: Any) -> Html:
    """HTML-escape anything (quotes included), so it is safe in text and attributes;
    :class:`Html` is already safe and comes back as it is (never escaped twice)."""
    if isinstance(value, Html):
        return value
    return Html(html.escape(value if isinstance(value, str) else str(value), quote=True))


_NAME = re.compile(r"^[a-z][a-z0-9-]*$")
_ATTRIBUTE = re.compile(r"^[a-zA-Z][a-zA-Z0-9-]*$")  # SVG's are camelCase (viewBox)
#: Elements with no content and no end tag.
_VOID = frozenset({"br", "hr", "img", "input", "meta", "source", "wbr"})
#: Elements that run or load a document: a face never writes one.
_ACTIVE = frozenset({"script", "iframe", "object", "embed", "frame", "base", "form"})
#: Attributes holding a URL: written only when :func:`url_kind` accepts it.
_URL_ATTRIBUTES = frozenset({"href", "src", "poster"})


def join(children: Iterable[Any], sep: str = "") -> Html:
    """Children side by side: :class:`Html` as it is, ``None`` and ``False`` left out,
    anything else escaped (``sep`` is a constant, escaped as text too)."""
    return Html(
        esc(sep).join(esc(c) for c in children if c is not None and c is not False and c != "")
    )


def tag(name: str, attrs: Mapping[str, Any] | None = None, *children: Any) -> Html:
    """``<name attr="value">children</name>``: each value escaped and double-quoted in
    the order given (``None`` or ``False`` leaves it out, ``True`` writes it bare, a
    ``href``, ``src`` or ``poster`` :func:`url_kind` refuses is left out), the children
    joined by :func:`join`. Names are the caller's constants: no script, no ``on*``."""
    if not _NAME.match(name) or name in _ACTIVE:
        raise ValueError(f"{name!r} is not a tag name a face may write: lowercase, not active")
    parts = [name]
    for key, value in (attrs or {}).items():
        if not _ATTRIBUTE.match(key) or key.lower().startswith("on"):
            raise ValueError(f"{key!r} is not an attribute name: letters, digits, '-', no on*")
        if value is None or value is False:
            continue
        if key in _URL_ATTRIBUTES and url_kind(value) is None:
            continue  # a URL that could carry script, or no URL: no link rather than a hole
        parts.append(key if value is True else f'{key}="{esc(value)}"')
    head = " ".join(parts)
    if name in _VOID:
        if children:
            raise ValueError(f"<{name}> has no content")
        return Html(f"<{head}>")
    return Html(f"<{head}>{join(children)}</{name}>")


#: What ``<``, ``>`` and ``&`` become in JSON text: the same string to a JSON parser,
#: and no ``</script>`` or ``<!--`` for the HTML parser to act on.
_JSON_IN_SCRIPT = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


def json_script(text: str) -> str:
    """JSON text made safe inside ``<script type="application/json">``.

    In valid JSON these three characters occur only inside strings, where their
    ``\\u`` escapes read back as the same characters."""
    return text.translate(_JSON_IN_SCRIPT)


# --- content types ----------------------------------------------------------

_MIME = re.compile(r"^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$")


def safe_mime(content_type: str | None) -> str | None:
    """The bare MIME type (lowercase, no parameters) if it is a well-formed token
    pair, else ``None``: quotes, markup or spaces in a content type make it
    untrustworthy, and such an output is shown as escaped text only."""
    if not content_type:
        return None
    bare = content_type.split(";", 1)[0].strip().lower()
    return bare if _MIME.match(bare) else None


#: Media types a browser may receive as ``data:`` URLs or Blobs (no SVG, no HTML:
#: both can carry script when opened as a document).
SAFE_DATA_MIME: frozenset[str] = frozenset(
    {
        "image/png",
        "image/jpeg",
        "image/gif",
        "image/webp",
        "image/bmp",
        "image/avif",
        "video/mp4",
        "video/webm",
        "video/ogg",
        "video/quicktime",
        "audio/mpeg",
        "audio/mp3",
        "audio/wav",
        "audio/x-wav",
        "audio/wave",
        "audio/ogg",
        "audio/webm",
        "audio/aac",
        "audio/flac",
        "audio/mp4",
        "audio/x-m4a",
        "application/octet-stream",
        "application/json",
        "text/plain",
        "text/csv",
    }
)

# --- URLs ---------------------------------------------------------------------

_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*):")
# Browsers drop tabs/newlines inside URLs ("java\tscript:"), so any control
# character or whitespace makes a URL untrustworthy; quotes and angle brackets
# are never needed in the URLs a gateway returns.
_FORBIDDEN_IN_URL = re.compile(r"[\x00-\x20\x7f\"'<>`\\]")
_DATA_HEAD = re.compile(r"^data:([a-z0-9.+/-]+)(;[a-z0-9=._+-]+)*,", re.IGNORECASE)

UrlKind = Literal["http", "data", "relative"]


def url_kind(url: str | None) -> UrlKind | None:
    """Classify a URL as ``http`` (http/https with a host), ``data`` (a data URL
    of a :data:`SAFE_DATA_MIME` type) or ``relative`` (no scheme); ``None`` for
    anything else, which must not be used: ``javascript:``, ``vbscript:``,
    ``file:``, a data URL of HTML/SVG, or a URL with quotes, markup or spaces."""
    if not url or not isinstance(url, str) or len(url) > 200_000_000:
        return None
    if _FORBIDDEN_IN_URL.search(url):
        return None
    match = _SCHEME.match(url)
    if match is None:
        return "relative"
    scheme = match.group(1).lower()
    if scheme in {"http", "https"}:
        rest = url[match.end() :]
        return "http" if rest.startswith("//") and len(rest) > 2 else None
    if scheme == "data":
        head = _DATA_HEAD.match(url)
        if head and head.group(1).lower() in SAFE_DATA_MIME:
            return "data"
    return None
