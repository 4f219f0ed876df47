"""The request as a shell command (the form's Code view, the grid's lightbox): cURL with
the key and base URL read from the client's environment variables, long ``data:`` URLs
shortened: docs/decisions.md#the-request-as-curl.
"""

from __future__ import annotations

import json
import math
import os
import shlex
from collections.abc import Mapping
from typing import Any

from .._config import ENV_API_KEY, ENV_BASE_URL, shown_path
from ..catalog.checks import shown
from ..media.files import LocalMedia
from ..protocol.records import queue_url

__all__ = ["INLINE_SHOWN", "curl_code", "one_line"]

INLINE_SHOWN = 120
BASE_URL_VAR = f"${ENV_BASE_URL}"
API_KEY_VAR = f"${ENV_API_KEY}"


def _shortened(value: Any, found: list[int], left_out: list[str], loc: str = "") -> Any:
    """``value`` as the command's body writes it: long ``data:`` URLs shortened (counted
    in ``found``), and what the body cannot carry as the value (a form's refused upload,
    a local file the client would encode, bytes) written ``null``, each said in
    ``left_out``: its text (``"<upload 'a.svg'>"``) would be sent as if it were the value."""
    if isinstance(value, Mapping):
        return {
            k: _shortened(v, found, left_out, f"{loc}.{k}" if loc else str(k))
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [_shortened(v, found, left_out, f"{loc}.{i}") for i, v in enumerate(value)]
    if isinstance(value, str) and value.startswith("data:") and len(value) > INLINE_SHOWN:
        found.append(len(value))
        return value.split(",", 1)[0] + ",...(shortened)"
    if isinstance(value, LocalMedia):  # a form holds an upload its field refuses as one
        left_out.append(f"{loc} is null here: {value!r} is refused by its field (see the form)")
        return None
    if isinstance(value, os.PathLike):
        left_out.append(
            f"{loc} is null here: the file {shown_path(value)} is sent encoded for its field; "
            "put what gw.media.encode(path, endpoint, field) gives in its place"
        )
        return None
    unsendable = value is not None and not isinstance(value, (str, int, float))
    if unsendable or (isinstance(value, float) and not math.isfinite(value)):
        left_out.append(f"{loc} is null here: {shown(value)} is no JSON value")
        return None
    return value


def curl_code(endpoint: str, payload: Mapping[str, Any]) -> str:
    """The create request of ``payload`` to ``endpoint`` as a cURL command."""
    found: list[int] = []
    left_out: list[str] = []
    shortened = _shortened(dict(payload), found, left_out)
    body = json.dumps(shortened, indent=2, ensure_ascii=False, default=str)
    url = queue_url(BASE_URL_VAR, endpoint)
    lines = [
        f'curl -X POST "{url}" \\',
        f'  -H "Authorization: Bearer {API_KEY_VAR}" \\',
        '  -H "Content-Type: application/json" \\',
        f"  -d {shlex.quote(body)}",
    ]
    notes = [f"# {one_line(said, 160)}" for said in left_out]
    if found:
        notes.append(f"# {len(found)} inline file(s) shortened: put the data: URL back to send it")
    return "\n".join([*notes, *lines]) + "\n"


def one_line(text: str, limit: int = 80) -> str:
    """``text`` fit for a ``#`` comment, of Python or a shell: one line (a file name may
    hold a line break), cut at ``limit`` characters."""
    text = " ".join(text.splitlines())
    return text if len(text) <= limit else text[: limit - 1] + "…"
