"""Fetching an output URL: the one rule for credentials and redirects.

The rule: **the API key goes only to the gateway's own origin** (scheme, host and port
of its base URL), never to another host, and a redirect never carries it elsewhere;
cookies follow it. httpx follows the redirects and two event hooks (:class:`_OriginRule`)
keep the rule on every hop. The blocking client (:func:`blocking_client`, where no gateway
client is at hand) sends no credential nor cookie at all. Every body is read within its
caps and deadline (:mod:`.body`). And a gateway reached at a public address may not lead
the client, by an output URL, a redirect or its own name rebound, into this machine or its
private network (:class:`InternalAddress`). Why: docs/decisions.md#fetch-redirects,
docs/decisions.md#fetch-cookies and docs/decisions.md#fetch-addresses.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import socket
import urllib.request
from collections.abc import AsyncIterator
from contextlib import AbstractContextManager, asynccontextmanager
from dataclasses import dataclass
from http.cookiejar import Cookie, CookieJar, DefaultCookiePolicy
from typing import Any
from urllib.parse import urlsplit

import httpx

from .._config import FETCH_CONNECT_TIMEOUT_S, FETCH_TIMEOUT_S, MAX_FETCH_BYTES
from .body import ACCEPT_ENCODING, Deadline, Stopwatch, gathered, iter_capped, read_capped, within

__all__ = [
    "MAX_READ_BYTES",
    "MAX_REDIRECTS",
    "ORIGIN_BOUND_HEADERS",
    "STAY_HOME",
    "GatewayAddress",
    "InternalAddress",
    "blocking_client",
    "fetch_async",
    "fetch_url",
    "http_client",
    "is_internal",
    "open_url",
    "open_url_async",
    "origin_text",
    "same_origin",
]

#: request headers that may carry a credential, sent only to the gateway's origin (and
#: every header a client made here is given: :func:`http_client`)
ORIGIN_BOUND_HEADERS = ("authorization", "proxy-authorization", "x-api-key", "api-key", "cookie")
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


def origin_text(url: str) -> str:
    """The origin of ``url`` as text, for messages: ``https://host:port``."""
    parts = httpx.URL(url)
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{parts.host}{port}"


def seconds(timeout: float | httpx.Timeout) -> float:
    """A timeout as one number of seconds (an ``httpx.Timeout``'s read timeout)."""
    if isinstance(timeout, httpx.Timeout):
        return timeout.read if timeout.read is not None else 60.0
    return float(timeout)


class _OriginCookies(DefaultCookiePolicy):
    """Cookies kept only from answers of one origin (none at all without an origin).
    Which go out is the request hook's to say: httpx copies the jar into one of the
    default policy for each request (docs/decisions.md#fetch-cookies)."""

    def __init__(self, origin: str | None) -> None:
        super().__init__()
        self._origin = origin

    def set_ok(self, cookie: Cookie, request: urllib.request.Request) -> bool:
        return same_origin(request.get_full_url(), self._origin) and super().set_ok(cookie, request)


#: A request extension: this request, and the redirects httpx follows from it, stay on
#: the trusted origin; its value makes the error a redirect elsewhere raises, from the
#: redirect's status code and where it leads.
STAY_HOME = "genwidgets.stay_home"
#: A request extension: the :class:`~.body.Stopwatch` each hop's answer is checked against.
STOPWATCH = "genwidgets.stopwatch"


#: Where a remote gateway may not lead the client: this machine (loopback, "this
#: network"), its link (a cloud's metadata service at 169.254.169.254), private and
#: shared (carrier-grade NAT) IPv4 networks, unique-local and link-local IPv6.
INTERNAL_NETWORKS = tuple(
    ipaddress.ip_network(net)
    for net in (
        "0.0.0.0/8",
        "10.0.0.0/8",
        "100.64.0.0/10",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.168.0.0/16",
        "::/128",
        "::1/128",
        "fc00::/7",
        "fe80::/10",
    )
)


def is_internal(address: str) -> bool:
    """Whether the IP ``address`` is in :data:`INTERNAL_NETWORKS` (an IPv4 address
    mapped into IPv6 as its IPv4); False for anything that is no IP. The one place the
    class of an address is decided: tests replace it to have a loopback address stand
    for a public one (tests/protocol/test_fetch.py)."""
    try:
        ip = ipaddress.ip_address(address.split("%")[0])  # fe80::1%eth0: its zone aside
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return any(ip in net for net in INTERNAL_NETWORKS if net.version == ip.version)


class InternalAddress(httpx.RequestError):
    """A request refused: it reached an address of this machine or its private network
    while the gateway's own is public, led there by the gateway (an output URL, a
    redirect) or by its own name, rebound. ``sent``: False when refused as its
    connection was made (nothing went out), True when refused on its answer."""

    def __init__(self, message: str, *, request: httpx.Request, sent: bool) -> None:
        super().__init__(message, request=request)
        self.sent = sent


@dataclass
class GatewayAddress:
    """Whether a gateway's own address is internal (None: not known yet), shared by the
    clients of one gateway (its polls' and its creates'): a name rebound between their
    first requests must not be learnt anew as the gateway's."""

    internal: bool | None = None


def _peer(stream: Any) -> str | None:
    """The IP address a connection (an httpcore network stream) reached, if known."""
    found = stream.get_extra_info("server_addr") if stream is not None else None
    return str(found[0]) if isinstance(found, tuple) and found else None


class _Unread(httpx.ByteStream):
    """A redirect's body, closed unread: httpx reads each hop's body whole, with no cap."""

    def __init__(self, stream: httpx.SyncByteStream | httpx.AsyncByteStream) -> None:
        super().__init__(b"")
        self._unread = stream

    def close(self) -> None:
        if isinstance(self._unread, httpx.SyncByteStream):
            self._unread.close()

    async def aclose(self) -> None:
        if isinstance(self._unread, httpx.AsyncByteStream):
            await self._unread.aclose()


class _OriginRule:
    """The event hooks that keep the rule on every hop httpx follows: off ``origin``
    (None: everywhere) a request loses the headers in ``bound``; a redirect's body is
    not read; a :data:`STAY_HOME` request is not followed away; each hop's answer is
    checked against the request's :data:`STOPWATCH`. With an origin (a gateway's
    client), no request (the gateway's own included) may reach an internal address
    while the gateway's is public: checked as its connection is made (before anything
    is sent) and on its answer (a connection kept from before)."""

    def __init__(
        self,
        origin: str | None,
        bound: tuple[str, ...] = ORIGIN_BOUND_HEADERS,
        gateway: GatewayAddress | None = None,
    ) -> None:
        self.origin, self.bound = origin, bound
        #: the class of the gateway's own address: the one its connections reached,
        #: else its host's
        self.gateway = gateway or GatewayAddress()

    def request(self, request: httpx.Request) -> None:
        if not same_origin(request.url, self.origin):
            for name in self.bound:
                request.headers.pop(name, None)

    def response(self, response: httpx.Response) -> None:
        peer = _peer(response.extensions.get("network_stream"))
        self._check_peer(response.request, peer, sent=True)
        extensions = response.request.extensions
        if STOPWATCH in extensions:
            extensions[STOPWATCH].progress(0)
        if not response.has_redirect_location:
            return
        away = extensions.get(STAY_HOME)
        if away is not None:
            try:
                target = response.request.url.join(response.headers["location"])
            except httpx.InvalidURL:
                raise away(response.status_code, "an address that is not a URL") from None
            if not same_origin(target, self.origin):
                raise away(response.status_code, origin_text(str(target)))
        response.stream = _Unread(response.stream)

    def _check_peer(self, request: httpx.Request, peer: str | None, *, sent: bool) -> None:
        """Refuse a connection to an internal address while the gateway's is public,
        the gateway's own origin included (its name rebound: DNS rebinding); else learn
        the gateway's class from its own connections (the last one's: a public one
        makes it public, and internal ones are refused from then on)."""
        if self.origin is None or peer is None:
            return
        home = same_origin(request.url, self.origin)
        if self.gateway.internal is False and is_internal(peer):
            gateway = origin_text(self.origin)
            if home:
                message = (
                    f"refused to reach the gateway ({gateway}) at {peer}, an address of "
                    "this machine or its private network: it was reached at a public "
                    "address before, so its name leading there now is taken for a DNS "
                    "rebinding; a gateway once reached at a public address is reached "
                    "only at public ones (make a new client if it really moved)"
                )
            else:
                message = (
                    f"refused to fetch {origin_text(str(request.url))}: it is at {peer}, "
                    "an address of this machine or its private network, and the gateway "
                    f"({gateway}) is not; a remote gateway's outputs and redirects may "
                    "not lead there"
                )
            raise InternalAddress(message, request=request, sent=sent)
        if home:
            self.gateway.internal = is_internal(peer)

    async def _acheck_peer(self, request: httpx.Request, peer: str | None, *, sent: bool) -> None:
        """:meth:`_check_peer`, the gateway's class looked up first when it matters and
        no connection to the gateway told it yet (a ledger's output read on a new client)."""
        if self._must_learn(request, peer):
            await self._learn_gateway()
        self._check_peer(request, peer, sent=sent)

    def _must_learn(self, request: httpx.Request, peer: str | None) -> bool:
        """Whether the gateway's class decides ``request`` (off its origin, at an
        internal ``peer``) and no connection to the gateway told it yet."""
        if self.origin is None or self.gateway.internal is not None or peer is None:
            return False
        return not same_origin(request.url, self.origin) and is_internal(peer)

    def _host_to_look_up(self) -> str | None:
        """The gateway's host name to look up, or None when there is none to: an address
        is learnt at once, and behind a proxy every connection reaches the proxy, whose
        address then decides."""
        host = urlsplit(self.origin or "").hostname or ""
        try:
            self._learn([ipaddress.ip_address(host).compressed])
        except ValueError:
            return None if urllib.request.getproxies() else host
        return None

    def _learn(self, addresses: list[str]) -> None:
        """The gateway's class from its host's addresses (any internal one makes it
        internal: a name for this machine, a class server)."""
        self.gateway.internal = any(is_internal(address) for address in addresses)

    async def _learn_gateway(self) -> None:
        """The gateway's class, its host name looked up on the loop."""
        host = self._host_to_look_up()
        if host is None:
            return
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, None)
        except OSError:
            return  # unknown: the gateway's first connection will tell
        self._learn([str(info[4][0]) for info in infos])

    def _learn_gateway_now(self) -> None:
        """:meth:`_learn_gateway` for a blocking fetch (``socket.getaddrinfo``)."""
        host = self._host_to_look_up()
        if host is None:
            return
        try:
            infos = socket.getaddrinfo(host, None)
        except OSError:
            return
        self._learn([str(info[4][0]) for info in infos])

    def _on_connect_now(self, event: str, info: dict[str, Any], hop: httpx.Request) -> None:
        """:meth:`_on_connect` for a blocking fetch."""
        if event == "connection.connect_tcp.complete":
            stream = info["return_value"]
            peer = _peer(stream)
            try:
                if self._must_learn(hop, peer):
                    self._learn_gateway_now()
                self._check_peer(hop, peer, sent=False)
            except InternalAddress:
                stream.close()
                raise

    def brequest(self, request: httpx.Request) -> None:
        """:meth:`request` for a blocking client, checking each connection as it is made."""
        self.request(request)
        if self.origin is not None and self.gateway.internal is not True:
            request.extensions["trace"] = functools.partial(self._on_connect_now, hop=request)

    def bresponse(self, response: httpx.Response) -> None:
        """:meth:`response` for a blocking client (a connection kept from before)."""
        if self._must_learn(response.request, _peer(response.extensions.get("network_stream"))):
            self._learn_gateway_now()
        self.response(response)

    async def _on_connect(self, event: str, info: dict[str, Any], hop: httpx.Request) -> None:
        """httpcore's ``trace`` of a request: a connection just made to an internal
        address is closed before the request is sent on it."""
        if event == "connection.connect_tcp.complete":
            stream = info["return_value"]
            try:
                await self._acheck_peer(hop, _peer(stream), sent=False)
            except InternalAddress:
                await stream.aclose()
                raise

    async def arequest(self, request: httpx.Request) -> None:
        self.request(request)
        if self.origin is not None and self.gateway.internal is not True:
            request.extensions["trace"] = functools.partial(self._on_connect, hop=request)

    async def aresponse(self, response: httpx.Response) -> None:
        peer = _peer(response.extensions.get("network_stream"))
        await self._acheck_peer(response.request, peer, sent=True)
        self.response(response)


def _options(
    headers: httpx.Headers | None, timeout: float | httpx.Timeout, trusted_origin: str | None
) -> dict[str, Any]:
    """What every client made here shares: httpx follows redirects, only the encodings
    :mod:`.body` inflates are asked for, cookies of ``trusted_origin`` only."""
    read = seconds(timeout)
    merged = httpx.Headers({"Accept-Encoding": ACCEPT_ENCODING})
    merged.update(headers or {})
    return dict(
        headers=merged,
        timeout=timeout
        if isinstance(timeout, httpx.Timeout)
        else httpx.Timeout(read, connect=min(10.0, read)),
        follow_redirects=True,
        max_redirects=MAX_REDIRECTS,
        cookies=CookieJar(policy=_OriginCookies(trusted_origin)),
    )


def http_client(
    *,
    headers: httpx.Headers | None = None,
    timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
    transport: httpx.AsyncBaseTransport | None = None,
    trusted_origin: str | None = None,
    keep_alive: bool = True,
    gateway: GatewayAddress | None = None,
) -> httpx.AsyncClient:
    """The one way an ``httpx.AsyncClient`` is made here: every header it is given
    (the key, a caller's extra headers) goes only to ``trusted_origin``.
    ``keep_alive=False``: each request on a new connection, closed after its answer.
    ``gateway``: what is known of the gateway's address, shared with its other clients."""
    bound = (*ORIGIN_BOUND_HEADERS, *(name.lower() for name in (headers or {})))
    rule = _OriginRule(trusted_origin, bound, gateway)
    return httpx.AsyncClient(
        transport=transport,
        event_hooks={"request": [rule.arequest], "response": [rule.aresponse]},
        limits=httpx.Limits() if keep_alive else httpx.Limits(max_keepalive_connections=0),
        **_options(headers, timeout, trusted_origin),
    )


def blocking_client(
    *,
    timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
    gateway: str | None = None,
    address: GatewayAddress | None = None,
) -> httpx.Client:
    """The ``httpx.Client`` of the blocking fetches: no credential, no cookie, anywhere.
    ``gateway``: the base URL of the gateway that named what is fetched (``address``:
    what is known of its address): no internal address is reached while its is public,
    as its own clients refuse (docs/decisions.md#fetch-addresses)."""
    web = gateway is not None and gateway[:8].lower().startswith(("http://", "https://"))
    origin = gateway if web else None
    rule = _OriginRule(origin, ORIGIN_BOUND_HEADERS, address)
    return httpx.Client(
        event_hooks={"request": [rule.brequest], "response": [rule.bresponse]},
        **_options(None, timeout, None),
    )


@asynccontextmanager
async def open_url_async(
    http: httpx.AsyncClient, url: str, *, trusted_origin: str | None = None
) -> AsyncIterator[httpx.Response]:
    """Stream ``GET url`` with ``http``; credentials only to ``trusted_origin``: on
    the first hop by this rule, on the hops httpx follows by the client's own hooks
    (a caller's client: no hop has them, the first lost them).

    Yields the final response (not yet read, status not checked).
    """
    request = http.build_request("GET", url)
    trusted = same_origin(url, trusted_origin)
    _OriginRule(trusted_origin).request(request)
    response = await http.send(
        request,
        stream=True,
        follow_redirects=True,
        auth=httpx.USE_CLIENT_DEFAULT if trusted else None,
    )
    try:
        yield response
    finally:
        await response.aclose()


def open_url(
    http: httpx.Client, url: str, watch: Stopwatch
) -> AbstractContextManager[httpx.Response]:
    """Stream ``GET url`` with a :func:`blocking_client`, every hop's answer within
    ``watch``'s deadline: the final response (not yet read, status not checked)."""
    return http.stream("GET", url, extensions={STOPWATCH: watch})


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


def fetch_url(
    url: str,
    *,
    timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
    max_bytes: int = MAX_READ_BYTES,
    gateway: str | None = None,
    address: GatewayAddress | None = None,
) -> bytes:
    """The bytes at ``url`` (no credential nor cookie sent; an HTTP error raises),
    within ``max_bytes`` and a deadline of ``timeout`` seconds plus the transfer;
    ``gateway`` and ``address``: the rule of the gateway that named it
    (:func:`blocking_client`)."""
    watch = Stopwatch(Deadline(seconds(timeout)))
    client = blocking_client(timeout=timeout, gateway=gateway, address=address)
    with client as http, open_url(http, url, watch) as response:
        response.raise_for_status()
        return gathered(iter_capped(response, max_bytes, watch))
