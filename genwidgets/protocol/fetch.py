"""Fetching an output URL: the one rule for credentials and redirects.

The rule: **the API key goes only to the gateway's own origin** (scheme, host
and port of its base URL), never to another host, and a redirect never carries
it elsewhere. Outputs on the gateway itself (the simulator's ``/files/...``)
may need the key; outputs elsewhere (signed storage URLs) never get it.

Redirects are followed by hand, at most :data:`MAX_REDIRECTS` hops, so every
hop decides its own headers: a hop to a foreign origin loses every credential
header and ``auth``. Cookies follow the same rule: the jar keeps cookies set by the
gateway's origin only, and sends them back there only (a cookie jar matches hosts,
not ports, so another server on the same host would get them otherwise; a cookie
set by another origin met on a redirect is never kept). The blocking variant
is used where no gateway client is at hand (an ``Output`` made by hand, a plain
``download_outputs``); it never sends credentials nor cookies at all. Every body is
read within its caps and deadline (:mod:`.body`).
"""

from __future__ import annotations

import asyncio
import threading
import urllib.request
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from http.cookiejar import Cookie, CookieJar, DefaultCookiePolicy
from typing import Any, TypeVar
from urllib.parse import urlsplit

import httpx

from .._config import FETCH_CONNECT_TIMEOUT_S, FETCH_TIMEOUT_S, MAX_FETCH_BYTES
from .body import ACCEPT_ENCODING, Deadline, read_capped, within

__all__ = [
    "CREDENTIAL_HEADERS",
    "MAX_READ_BYTES",
    "MAX_REDIRECTS",
    "ORIGIN_BOUND_HEADERS",
    "fetch_async",
    "fetch_url",
    "http_client",
    "open_url_async",
    "run_apart",
    "same_origin",
]

T = TypeVar("T")

#: request headers that may carry a credential; sent only to the gateway's origin
CREDENTIAL_HEADERS = ("authorization", "proxy-authorization", "x-api-key", "api-key")
#: sent only to the gateway's origin too: what the gateway's cookie jar would add
ORIGIN_BOUND_HEADERS = (*CREDENTIAL_HEADERS, "cookie")
MAX_REDIRECTS = 10
DEFAULT_TIMEOUT = httpx.Timeout(FETCH_TIMEOUT_S, connect=FETCH_CONNECT_TIMEOUT_S)
#: The most an output read into memory may weigh (``Output.read``): the downloads' cap.
MAX_READ_BYTES = MAX_FETCH_BYTES


def _origin(url: str | httpx.URL) -> tuple[str, str, int | None]:
    parts = urlsplit(str(url))
    scheme = parts.scheme.lower()
    port = parts.port or {"http": 80, "https": 443}.get(scheme)
    return scheme, (parts.hostname or "").lower(), port


def same_origin(url: str | httpx.URL, base_url: str | None) -> bool:
    """Whether ``url`` has the scheme, host and port of ``base_url``."""
    return base_url is not None and _origin(url) == _origin(base_url)


def seconds(timeout: float | httpx.Timeout) -> float:
    """A timeout as one number of seconds (an ``httpx.Timeout``'s read timeout)."""
    if isinstance(timeout, httpx.Timeout):
        return timeout.read if timeout.read is not None else 60.0
    return float(timeout)


class _OriginCookies(DefaultCookiePolicy):
    """Cookies kept only from answers of one origin and sent only to it (none at all
    without an origin): docs/decisions.md#fetch-cookies."""

    def __init__(self, origin: str | None) -> None:
        super().__init__()
        self._origin = origin

    def set_ok(self, cookie: Cookie, request: urllib.request.Request) -> bool:
        return same_origin(request.get_full_url(), self._origin) and super().set_ok(cookie, request)

    def return_ok(self, cookie: Cookie, request: urllib.request.Request) -> bool:
        return same_origin(request.get_full_url(), self._origin) and super().return_ok(
            cookie, request
        )


def http_client(
    *,
    headers: httpx.Headers | None = None,
    timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
    transport: httpx.AsyncBaseTransport | None = None,
    trusted_origin: str | None = None,
) -> httpx.AsyncClient:
    """The one way an ``httpx.AsyncClient`` is made here: redirects by hand, only the
    encodings :mod:`.body` inflates, cookies of ``trusted_origin`` only."""
    read = seconds(timeout)
    merged = httpx.Headers({"Accept-Encoding": ACCEPT_ENCODING})
    merged.update(headers or {})
    return httpx.AsyncClient(
        headers=merged,
        timeout=timeout
        if isinstance(timeout, httpx.Timeout)
        else httpx.Timeout(read, connect=min(10.0, read)),
        transport=transport,
        follow_redirects=False,
        cookies=CookieJar(policy=_OriginCookies(trusted_origin)),
    )


def _next_url(response: httpx.Response) -> httpx.URL | None:
    if not response.is_redirect:
        return None
    location = response.headers.get("location")
    return response.request.url.join(location) if location else None


def _too_many(url: str) -> httpx.TooManyRedirects:
    return httpx.TooManyRedirects(f"more than {MAX_REDIRECTS} redirects from {url}")


@asynccontextmanager
async def open_url_async(
    http: httpx.AsyncClient, url: str, *, trusted_origin: str | None = None
) -> AsyncIterator[httpx.Response]:
    """Stream ``GET url`` with ``http``; credentials only on hops to ``trusted_origin``.

    Yields the final response (not yet read, status not checked).
    """
    target: httpx.URL = httpx.URL(url)
    for _hop in range(MAX_REDIRECTS + 1):
        request = http.build_request("GET", target)
        trusted = same_origin(target, trusted_origin)
        if not trusted:
            for name in ORIGIN_BOUND_HEADERS:
                request.headers.pop(name, None)
        response = await http.send(
            request,
            stream=True,
            follow_redirects=False,
            auth=httpx.USE_CLIENT_DEFAULT if trusted else None,
        )
        following = _next_url(response)
        if following is None:
            try:
                yield response
            finally:
                await response.aclose()
            return
        await response.aclose()
        target = following
    raise _too_many(url)


async def fetch_async(
    http: httpx.AsyncClient,
    url: str,
    *,
    trusted_origin: str | None = None,
    grace: float,
    max_bytes: int = MAX_READ_BYTES,
) -> bytes:
    """The bytes at ``url`` (an HTTP error raises), by :func:`open_url_async`'s rule,
    read within ``max_bytes`` and a deadline of ``grace`` seconds plus the transfer."""
    async with (
        within(Deadline(grace)) as watch,
        open_url_async(http, url, trusted_origin=trusted_origin) as response,
    ):
        response.raise_for_status()
        return await read_capped(response, max_bytes, watch)


def run_apart(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on a fresh event loop in a thread of its own and block for its
    outcome: how a blocking caller fetches (whatever loop its own thread runs, and on
    the engine thread too). ``coro`` must carry its own deadline."""
    outcome: list[tuple[bool, Any]] = []

    def main() -> None:
        try:
            outcome.append((True, asyncio.run(coro)))
        except BaseException as exc:  # handed to the caller below
            outcome.append((False, exc))

    thread = threading.Thread(target=main, name="genwidgets-fetch", daemon=True)
    thread.start()
    thread.join()
    ok, value = outcome[0]
    if not ok:
        raise value
    result: T = value
    return result


def fetch_url(
    url: str,
    *,
    timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
    max_bytes: int = MAX_READ_BYTES,
) -> bytes:
    """The bytes at ``url`` (no credential nor cookie sent; an HTTP error raises),
    within ``max_bytes`` and a deadline of ``timeout`` seconds plus the transfer."""

    async def fetch() -> bytes:
        async with http_client(timeout=timeout) as http:
            return await fetch_async(http, url, grace=seconds(timeout), max_bytes=max_bytes)

    return run_apart(fetch())
