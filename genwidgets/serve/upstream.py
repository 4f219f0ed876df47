"""The one way out to the upstream gateway, with the teacher's key.

Only the teacher's ``Authorization`` and a JSON ``Content-Type`` go upstream: no header
of the student's request (their key among them) is passed on. What comes back is read
with a cap, and every answer is scrubbed of the teacher's key before it is sent on,
however upstream might have echoed it (:meth:`Upstream.scrub`):
docs/decisions.md#serve-keys-apart.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from .._config import Secret, hide_userinfo, redact
from .._formats import json_nested_deeper
from ..errors import ServeError, UpstreamFault
from ..protocol.body import MAX_DEPTH, Answer, redact_json
from ..protocol.http import is_refusal, parse_retry_after, says_task_unknown
from .http1 import Http1Pool

__all__ = ["REDACTED", "KeyScrubber", "Upstream", "UpstreamAnswer", "guard_logs"]

REDACTED = "[redacted]"
#: the most of an upstream answer read (a status or a result body is small)
MAX_ANSWER = 8 * 1024 * 1024


#: loggers whose records could carry a header or a body: scrubbed of every known key
SCRUBBED_LOGGERS = (
    "httpx",
    "httpcore",
    "httpcore.http11",
    "httpcore.connection",
    "uvicorn.error",
    "genwidgets.serve",
)


class KeyScrubber(logging.Filter):
    """Rewrites each record's text without any key the process knows (:func:`redact`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        clean = redact(text)
        if clean != text:
            record.msg, record.args = clean, None
        return True


def guard_logs() -> None:
    """Scrub the loggers that see upstream traffic, and keep httpcore's header traces (its
    DEBUG records) off: they would hold the teacher's Authorization header."""
    for name in SCRUBBED_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, KeyScrubber) for f in logger.filters):
            logger.addFilter(KeyScrubber())
    core = logging.getLogger("httpcore")
    if core.level < logging.INFO:
        core.setLevel(logging.INFO)


@dataclass(frozen=True)
class UpstreamAnswer:
    status: int
    body: Any  # the parsed JSON, or None when not JSON
    retry_after: float | None  # seconds, as its Retry-After says
    #: upstream's own word that it does not know the task, by the client's rule
    #: (:func:`~..protocol.http.says_task_unknown`); a proxy's 404 page is not one
    task_unknown: bool = False
    #: an error answer by the client's rule (:func:`~..protocol.http.is_refusal`): a status
    #: of 400 or more, or the spec's error shape under any status (a 200 refusing a create)
    refused: bool = False


def _header_key(key: Secret | None) -> Secret:
    """The teacher's key as it can be sent: without the whitespace around it (a key file
    saved with Windows line ends keeps a ``\r`` the shell does not strip), and refused,
    saying which character and where but never the key, if it still holds one no
    Authorization header may carry: sent, every request would fail, and the HTTP
    library's message quotes the whole header."""
    text = key.reveal() if key is not None else ""
    clean = text.strip()
    if not clean:
        raise ValueError("the upstream gateway's key is empty")
    for place, char in enumerate(clean, 1):
        if not "!" <= char <= "~":
            what = (
                "a space"
                if char == " "
                else ("a control character" if char.isascii() else "a character beyond ASCII")
            )
            raise ValueError(
                f"the upstream gateway's key holds {what} (U+{ord(char):04X}) at its "
                f"character {place} of {len(clean)}: no HTTP header can carry it; check "
                "the key as it was copied (the key itself is not shown)"
            )
    assert key is not None
    return key if clean == text else Secret(clean)


def _no_number(constant: str) -> None:
    """``NaN``, ``Infinity`` and ``-Infinity`` in upstream's JSON read as null: Python
    reads them, but no JSON answer may carry them (Starlette refuses to write them, so
    each answer holding one, a paid result among them, was a 500)."""
    return None


def _finite(number: str) -> float | None:
    """A JSON number as a float, or null when it is too large for one (``1e999`` is valid
    JSON, read as ``inf``: as :func:`_no_number`, a finished task's answer was a 500)."""
    value = float(number)
    return value if math.isfinite(value) else None


#: seconds upstream's answer is waited for, and its connect (``--timeout``'s default)
TIMEOUT, CONNECT_TIMEOUT = 30.0, 5.0


class Upstream:
    """Keep-alive connections to ``base_url`` (:class:`~.http1.Http1Pool`) that sign every
    request with ``key`` (the teacher's; wrapped as a :class:`~genwidgets._config.Secret`
    on the line it arrives)."""

    def __init__(
        self,
        base_url: str,
        key: str | Secret,
        *,
        timeout: float = TIMEOUT,
        connect_timeout: float = CONNECT_TIMEOUT,
    ) -> None:
        if not (math.isfinite(timeout) and timeout > 0):
            raise ValueError(f"the upstream timeout is seconds more than 0, not {timeout}")
        if not (math.isfinite(connect_timeout) and connect_timeout > 0):
            raise ValueError(f"the connect timeout is seconds more than 0, not {connect_timeout}")
        if "@" in urlsplit(base_url).netloc:  # never sent: shown, it would leak
            raise ValueError(
                f"the upstream gateway's URL {hide_userinfo(base_url)} holds credentials, "
                f"which are never sent (the teacher's key signs every request, from "
                "GENWIDGETS_UPSTREAM_KEY): give the URL without them"
            )
        self.base_url = base_url.rstrip("/")
        self.timeout, self.connect_timeout = timeout, connect_timeout
        self._key = _header_key(Secret.wrap(key))
        guard_logs()
        self._pool = Http1Pool(
            self.base_url,
            timeout=timeout,
            connect_timeout=connect_timeout,
            ssl_context=httpx.create_ssl_context() if self.base_url.startswith("https:") else None,
        )

    def __repr__(self) -> str:
        return f"<Upstream {self.base_url}>"

    def scrub(self, text: str) -> str:
        """``text`` with the teacher's key taken out wherever it appears."""
        key = self._key.reveal()
        return text.replace(key, REDACTED) if key and key in text else text

    async def send(self, method: str, path: str, body: bytes | None = None) -> UpstreamAnswer:
        headers = [
            ("Authorization", f"Bearer {self._key.reveal()}"),
            ("Accept", "application/json"),
        ]
        if body is not None:
            headers.append(("Content-Type", "application/json"))
        try:
            answer = await self._pool.request(method, path, headers, body, max_body=MAX_ANSWER)
        except UpstreamFault as fault:  # no answer; it names the fault, never the key
            # sent: the request may have reached upstream (a create's outcome is unknown)
            raise ServeError(
                self.scrub(str(fault)), status=502, code="UPSTREAM_UNAVAILABLE", sent=fault.sent
            ) from None
        raw, parsed = answer.body, None
        if raw and not json_nested_deeper(raw, MAX_DEPTH):  # a deeper one: no answer read
            with contextlib.suppress(ValueError):  # and once parsed: "\u0055P..." is the key too
                text = self.scrub(raw.decode("utf-8", "replace"))
                parsed = redact_json(
                    json.loads(text, parse_constant=_no_number, parse_float=_finite)
                )
        wait = parse_retry_after({"retry-after": answer.header(b"retry-after") or ""})
        # read as a student's client reads it: whether it says the task is gone, whether
        # it is a refusal (the spec shows no status for its errors)
        read = Answer(answer.status, httpx.Headers(), url=httpx.URL(path), content=raw)
        return UpstreamAnswer(
            answer.status, parsed, wait, says_task_unknown(read), is_refusal(read)
        )

    async def close(self) -> None:
        await self._pool.close()
