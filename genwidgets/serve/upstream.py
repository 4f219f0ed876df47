"""The one way out to the upstream gateway, with the teacher's key.

Only the teacher's ``Authorization`` and a JSON ``Content-Type`` go upstream: no header
of the student's request (their key among them) is passed on. What comes back is read
with a cap, and every answer is scrubbed of the teacher's key before it is sent on,
however upstream might have echoed it (:meth:`Upstream.scrub`):
docs/decisions.md#serve-keys-apart.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

import httpx

from .._config import Secret, redact
from ..errors import ServeError

__all__ = ["REDACTED", "KeyScrubber", "Upstream", "UpstreamAnswer", "guard_logs", "upstream_fault"]

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


def upstream_fault(why: str, *, sent: bool) -> ServeError:
    """No answer from upstream. ``sent``: whether the request may have reached it (a create
    then has an unknown outcome); ``why`` names the fault, never the key."""
    return ServeError(why, status=502, code="UPSTREAM_UNAVAILABLE", sent=sent)


@dataclass(frozen=True)
class UpstreamAnswer:
    status: int
    body: Any  # the parsed JSON, or None when not JSON
    retry_after: str | None


class Upstream:
    """An httpx client to ``base_url`` that signs every request with ``key`` (the
    teacher's; wrapped as a :class:`~genwidgets._config.Secret` on the line it arrives)."""

    def __init__(
        self,
        base_url: str,
        key: str | Secret,
        *,
        timeout: float = 30.0,
        connect_timeout: float = 5.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        wrapped = Secret.wrap(key)
        if wrapped is None:
            raise ValueError("the upstream gateway's key is empty")
        self._key = wrapped
        guard_logs()
        self._client = httpx.AsyncClient(
            base_url=self.base_url,
            timeout=httpx.Timeout(timeout, connect=connect_timeout, pool=timeout),
            limits=httpx.Limits(max_connections=64, max_keepalive_connections=32),
            follow_redirects=False,
            trust_env=False,
        )

    def __repr__(self) -> str:
        return f"<Upstream {self.base_url}>"

    def scrub(self, text: str) -> str:
        """``text`` with the teacher's key taken out wherever it appears."""
        key = self._key.reveal()
        return text.replace(key, REDACTED) if key and key in text else text

    async def send(self, method: str, path: str, body: bytes | None = None) -> UpstreamAnswer:
        headers = {"Authorization": f"Bearer {self._key.reveal()}", "Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        try:
            request = self._client.build_request(method, path, content=body, headers=headers)
            response = await self._client.send(request, stream=True)
        except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
            raise upstream_fault(
                f"cannot reach the upstream gateway ({type(exc).__name__})", sent=False
            ) from None
        except httpx.TimeoutException as exc:
            raise upstream_fault(
                f"the upstream gateway did not answer in time ({type(exc).__name__})", sent=True
            ) from None
        except httpx.HTTPError as exc:
            raise upstream_fault(
                f"the upstream connection failed ({type(exc).__name__})", sent=True
            ) from None
        try:
            raw = await self._read(response)
        except httpx.HTTPError as exc:
            raise upstream_fault(
                f"the upstream answer was cut ({type(exc).__name__})", sent=True
            ) from None
        finally:
            await response.aclose()
        try:
            parsed = json.loads(self.scrub(raw.decode("utf-8", "replace"))) if raw else None
        except ValueError:
            parsed = None
        return UpstreamAnswer(response.status_code, parsed, response.headers.get("retry-after"))

    @staticmethod
    async def _read(response: httpx.Response) -> bytes:
        chunks, size = [], 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > MAX_ANSWER:
                raise httpx.DecodingError(f"answer over {MAX_ANSWER} bytes")
            chunks.append(chunk)
        return b"".join(chunks)

    async def close(self) -> None:
        await self._client.aclose()
