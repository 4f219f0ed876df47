"""The request as a shell command (the form's Code view, the grid's lightbox): cURL with
the key and base URL read from the client's environment variables, long ``data:`` URLs
shortened: docs/decisions.md#the-request-as-curl.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from typing import Any

from .._config import ENV_API_KEY, ENV_BASE_URL
from ..protocol.records import queue_url

__all__ = ["INLINE_SHOWN", "curl_code"]

INLINE_SHOWN = 120
BASE_URL_VAR = f"${ENV_BASE_URL}"
API_KEY_VAR = f"${ENV_API_KEY}"


def _shortened(value: Any, found: list[int]) -> Any:
    if isinstance(value, Mapping):
        return {k: _shortened(v, found) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_shortened(v, found) for v in value]
    if isinstance(value, str) and value.startswith("data:") and len(value) > INLINE_SHOWN:
        found.append(len(value))
        return value.split(",", 1)[0] + ",...(shortened)"
    return value


def curl_code(endpoint: str, payload: Mapping[str, Any]) -> str:
    """The create request of ``payload`` to ``endpoint`` as a cURL command."""
    found: list[int] = []
    body = json.dumps(_shortened(dict(payload), found), indent=2, ensure_ascii=False, default=str)
    url = queue_url(BASE_URL_VAR, endpoint)
    lines = [
        f'curl -X POST "{url}" \\',
        f'  -H "Authorization: Bearer {API_KEY_VAR}" \\',
        '  -H "Content-Type: application/json" \\',
        f"  -d {shlex.quote(body)}",
    ]
    if found:
        note = f"# {len(found)} inline file(s) shortened: put the data: URL back to send it"
        lines.insert(0, note)
    return "\n".join(lines) + "\n"
