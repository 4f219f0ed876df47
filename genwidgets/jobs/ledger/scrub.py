"""What the ledger keeps of a payload, an error and an output: safe to leave on disk.

Data URLs and Base64 strings of :data:`LARGE_STRING` characters or more become
``<data:image/png;base64 sha256=… bytes=…>`` / ``<base64 sha256=… bytes=…>``
(digest and size of the *decoded* bytes), any other string over
:data:`MAX_TEXT` becomes ``<text sha256=… bytes=…>``, credential-like keys
(``Authorization``, ``X-API-Key``, ``api_key``) are dropped, a local path
(``pathlib.Path``) becomes its shown path (docs/decisions.md#shown-paths), and every
stored text goes through :func:`genwidgets._config.redact`. There is no key parameter
anywhere here.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import re
from collections.abc import Mapping
from typing import Any

from ..._config import redact, shown_path
from ..._formats import decode_data_url, int_or_none
from ...protocol.records import Output
from ..output_files import size_of
from .rows import CONTENT_WHOLE

__all__ = [
    "CREDENTIAL_KEYS",
    "LARGE_STRING",
    "MAX_ERROR",
    "MAX_INLINE_CONTENT",
    "MAX_TEXT",
    "digest",
    "error_text",
    "output_record",
    "scrub_payload",
    "scrub_text",
    "scrub_value",
]

#: strings this long (characters) are checked for being data URLs / base64
LARGE_STRING = 1024
#: any string longer than this is replaced by its digest
MAX_TEXT = 64 * 1024
#: inline output content longer than this (characters) is replaced by its digest
MAX_INLINE_CONTENT = 64 * 1024
#: error texts are cut to this many characters
MAX_ERROR = 16 * 1024
#: key names (lower case, without "-", "_" and spaces) dropped from stored payloads
CREDENTIAL_KEYS = frozenset({"authorization", "proxyauthorization", "xapikey", "apikey"})

_BASE64_TEXT = re.compile(r"[A-Za-z0-9+/\-_\r\n]+={0,2}")


def digest(data: bytes) -> str:
    """``sha256=<hex> bytes=<n>``: what identifies bytes we do not keep."""
    return f"sha256={hashlib.sha256(data).hexdigest()} bytes={len(data)}"


def _decode_base64(text: str) -> bytes | None:
    compact = re.sub(r"[\r\n]", "", text)
    compact += "=" * (-len(compact) % 4)
    try:
        if "-" in compact or "_" in compact:
            return base64.urlsafe_b64decode(compact)
        return base64.b64decode(compact, validate=True)
    except (ValueError, binascii.Error):
        return None


def scrub_text(text: str) -> str:
    """A string as stored: large inline data replaced by its digest, keys redacted."""
    if len(text) >= LARGE_STRING:
        if text[:5].lower() == "data:" and "," in text:
            head, _, body = text[5:].partition(",")
            label = redact(head[:200])
            try:
                decoded = decode_data_url(text).data
            except ValueError:
                return f"<data:{label} undecodable {digest(body.encode())}>"
            return f"<data:{label} {digest(decoded)}>"
        if _BASE64_TEXT.fullmatch(text):
            raw = _decode_base64(text)
            if raw is not None:
                return f"<base64 {digest(raw)}>"
        if len(text) > MAX_TEXT:
            return f"<text {digest(text.encode('utf-8', errors='surrogatepass'))}>"
    return redact(text)


def _is_credential_key(key: Any) -> bool:
    normal = re.sub(r"[-_\s]", "", str(key)).lower()
    return normal in CREDENTIAL_KEYS


def scrub_value(value: Any) -> Any:
    """Any JSON-like value as stored (see :func:`scrub_text`); credential keys dropped."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        return scrub_text(value)
    if isinstance(value, Mapping):
        return {
            redact(str(k)): scrub_value(v) for k, v in value.items() if not _is_credential_key(k)
        }
    if isinstance(value, (list, tuple, set, frozenset)):
        return [scrub_value(v) for v in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"<bytes {digest(bytes(value))}>"
    if isinstance(value, os.PathLike):  # a local file, as shown: docs/decisions.md#shown-paths
        return scrub_text(shown_path(value))
    return scrub_text(str(value))


def scrub_payload(payload: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON-ready copy of ``payload`` safe to keep on disk (see the module docstring)."""
    if not isinstance(payload, Mapping):
        raise TypeError(f"a payload must be a mapping (a dict), not {type(payload).__name__}")
    scrubbed: dict[str, Any] = scrub_value(payload)
    return scrubbed


def error_text(error: Any) -> str | None:
    """An error (text or JSON) as stored: scrubbed, redacted, cut at :data:`MAX_ERROR`."""
    if error is None:
        return None
    text = scrub_text(error) if isinstance(error, str) else json.dumps(scrub_value(error))
    text = redact(text)
    if len(text) > MAX_ERROR:
        text = text[:MAX_ERROR] + f"… (cut, {len(text)} characters)"
    return text


def output_record(output: Output) -> dict[str, Any]:
    """What we keep of one output: enough to find, check and re-read it later."""
    record: dict[str, Any] = {
        "index": output.index,
        "content_type": redact(output.content_type),
        "url": scrub_text(output.url) if output.url else None,
        "path": str(output.path) if output.path is not None else None,
        "file_name": scrub_value(output.raw.get("file_name")),
        "file_size": int_or_none(output.raw.get("file_size"), minimum=0),
    }
    if output.path is not None and output.sha256 is not None:  # what genwidgets wrote there
        record.update(sha256=output.sha256, size=size_of(output.path))
    content = output.raw.get("content")
    if content is not None:
        encoding = output.raw.get("encoding")
        scrubbed = content if isinstance(content, str) else scrub_value(content)
        text = content if isinstance(content, str) else json.dumps(scrubbed)
        if len(text) <= MAX_INLINE_CONTENT:
            record["content"] = redact(text)
            record["encoding"] = scrub_value(encoding)
            # stored as sent (nothing scrubbed or redacted): a later copy may be made
            # from it (docs/decisions.md#copies-pending)
            record[CONTENT_WHOLE] = scrubbed == content and record["content"] == text
        else:
            inline = output.inline() or b""
            record["content"] = f"<{encoding or 'inline'} {digest(inline)}>"
            record["encoding"] = None
    return record
