"""Fetching an output URL: the one rule for credentials and redirects.

The rule: **the API key goes only to the gateway's own origin** (scheme, host
and port of its base URL), never to another host, and a redirect never carries
it elsewhere. Outputs on the gateway itself (the simulator's ``/files/...``)
may need the key; outputs elsewhere (signed storage URLs) never get it.

Redirects are followed by hand, at most :data:`MAX_REDIRECTS` hops, so every
hop decides its own headers: a hop to a foreign origin loses every credential
header and ``auth``. Cookies follow the same rule: a cookie the gateway set goes
back to the gateway's origin only (a cookie jar matches hosts, not ports, so
another server on the same host would get it otherwise). The blocking variant
is used where no gateway client is at hand (an ``Output`` made by hand, a plain
``download_outputs``); it never sends credentials nor cookies at all.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from urllib.parse import urlsplit

import httpx

__all__ = [
    "CREDENTIAL_HEADERS",
    "MAX_REDIRECTS",
    "ORIGIN_BOUND_HEADERS",
    "fetch_url",
    "open_url",
    "open_url_async",
    "same_origin",
]

#: request headers that may carry a credential; sent only to the gateway's origin
CREDENTIAL_HEADERS = ("authorization", "proxy-authorization", "x-api-key", "api-key")
#: sent only to the gateway's origin too: what the gateway's cookie jar would add
ORIGIN_BOUND_HEADERS = (*CREDENTIAL_HEADERS, "cookie")
MAX_REDIRECTS = 10
DEFAULT_TIMEOUT = httpx.Timeout(60.0, connect=10.0)


def _origin(url: str | httpx.URL) -> tuple[str, str, int | None]:
    parts = urlsplit(str(url))
    scheme = parts.scheme.lower()
    port = parts.port or {"http": 80, "https": 443}.get(scheme)
    return scheme, (parts.hostname or "").lower(), port


def same_origin(url: str | httpx.URL, base_url: str | None) -> bool:
    """Whether ``url`` has the scheme, host and port of ``base_url``."""
    return base_url is not None and _origin(url) == _origin(base_url)


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


@contextmanager
def open_url(
    url: str, *, timeout: float | httpx.Timeout = DEFAULT_TIMEOUT
) -> Iterator[httpx.Response]:
    """Stream ``GET url`` with a fresh client that sends no credential and no cookie
    (redirects followed by hand, so a cookie set by one hop never reaches the next)."""
    target: httpx.URL = httpx.URL(url)
    with httpx.Client(timeout=timeout, follow_redirects=False) as http:
        for _hop in range(MAX_REDIRECTS + 1):
            http.cookies.clear()
            response = http.send(http.build_request("GET", target), stream=True)
            following = _next_url(response)
            if following is None:
                try:
                    yield response
                finally:
                    response.close()
                return
            response.close()
            target = following
    raise _too_many(url)


def fetch_url(url: str, *, timeout: float | httpx.Timeout = DEFAULT_TIMEOUT) -> bytes:
    """The bytes at ``url`` (no credentials sent; an HTTP error raises)."""
    with open_url(url, timeout=timeout) as response:
        response.raise_for_status()
        return response.read()
