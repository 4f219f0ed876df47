"""Settings from the environment, and the one place that knows how to hide the key.

``GENWIDGETS_BASE_URL``, ``GENWIDGETS_API_KEY`` and ``GENWIDGETS_HOME`` are read
when a client is made, ``GENWIDGETS_SAVED_MEDIA`` when a view is displayed (never at
import time), so a notebook can set them late.
"""

from __future__ import annotations

import getpass
import hashlib
import hmac
import ipaddress
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

ENV_BASE_URL = "GENWIDGETS_BASE_URL"
ENV_API_KEY = "GENWIDGETS_API_KEY"
ENV_HOME = "GENWIDGETS_HOME"
#: What a saved notebook keeps of each video: ``posters``, ``previews`` or ``full``.
ENV_SAVED_MEDIA = "GENWIDGETS_SAVED_MEDIA"
#: Set by genwidgets' Jupyter server extension in the server, so the kernels it starts
#: inherit it: the URL path where that server serves ``GENWIDGETS_HOME/outputs``.
ENV_OUTPUTS_URL = "GENWIDGETS_OUTPUTS_URL"
#: The choices of ``GENWIDGETS_SAVED_MEDIA``, from the lightest; previews by default.
SAVED_MEDIA = ("posters", "previews", "full")
DEFAULT_SAVED_MEDIA = "previews"

# --- the client's defaults: one home, as httpx's _config.py. The client, its gateway,
# the async client, fetches and downloads read them here:
# docs/decisions.md#one-home-for-the-clients-defaults
#: Seconds one request to the gateway may take.
DEFAULT_TIMEOUT_S = 30.0
#: Retries of a request that may be retried (never a create whose answer was lost).
DEFAULT_MAX_RETRIES = 2
#: Requests of one client in flight at once (and the async client's waiting threads).
DEFAULT_MAX_IN_FLIGHT = 16
#: Fetching a file (an output, an input given by URL) may take longer than a request.
FETCH_TIMEOUT_S = 60.0
FETCH_CONNECT_TIMEOUT_S = 10.0
#: The most a file fetched into memory or saved may weigh.
MAX_FETCH_BYTES = 2 * 2**30

#: The key the simulator accepts by default; documented, not a secret.
DEMO_KEY = "sim-demo-key"

_known_secrets: set[str] = set()


class Secret:
    """An API key that never shows itself: its repr and str are ``'***'``.

    A key is wrapped on the first line that receives it, so a verbose traceback
    (``%xmode Verbose`` prints every frame's locals) or a debugger shows the wrapper,
    never the string; only the line that builds the Authorization header reads it
    (:meth:`reveal`): docs/decisions.md#the-key-is-a-secret-from-its-first-line.
    """

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value
        remember_secret(value)

    @classmethod
    def wrap(cls, value: str | Secret | None) -> Secret | None:
        """``value`` as a Secret (None and "" stay None; a Secret stays itself)."""
        if isinstance(value, Secret) or value is None:
            return value
        return cls(value) if value else None

    def reveal(self) -> str:
        return self._value

    def fingerprint(self) -> str:
        """Which key this is, for the ledger (the key itself is never stored): 12 hex
        digits of an HMAC-SHA256 of the key under a fixed label, which cannot give the
        key back (docs/decisions.md#key-fingerprints)."""
        digest = hmac.new(b"genwidgets key fingerprint", self._value.encode(), hashlib.sha256)
        return digest.hexdigest()[:12]

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __reduce__(self) -> str | tuple[object, ...]:
        raise TypeError("an API key is not pickled")


_session_key: Secret | None = None


def login(api_key: str | None = None) -> None:
    """Ask for the key with ``getpass`` (or take it) and keep it in memory only.

    Clients made afterwards without an explicit key use it. It is never written
    anywhere; restart the kernel to forget it.
    """
    key = Secret.wrap(
        (api_key if api_key is not None else getpass.getpass("Gateway API key: ")).strip()
    )
    api_key = None  # the raw string leaves this frame at once (verbose tracebacks)
    if key is None:
        raise ValueError("no key entered")
    global _session_key  # in memory for this process only
    _session_key = key


#: each relative ``GENWIDGETS_HOME`` as first resolved: a ``%cd`` later must not move
#: the outputs away from their ledger
_RESOLVED_HOMES: dict[str, Path] = {}


def home() -> Path:
    """Where the ledger and downloaded outputs live (``~/.genwidgets`` by default), as
    an absolute path; a relative ``GENWIDGETS_HOME`` is read against the folder the
    process was in when it was first used."""
    raw = os.environ.get(ENV_HOME)
    if not raw:
        return Path.home() / ".genwidgets"
    return _RESOLVED_HOMES.setdefault(raw, Path(raw).expanduser().absolute())


def saved_media() -> str:
    """What lasting faces keep of each video (``GENWIDGETS_SAVED_MEDIA``): a poster
    frame only, a short preview that plays (the default), or the full file
    (docs/decisions.md#saved-media). Anything else is a ValueError naming the choices."""
    raw = os.environ.get(ENV_SAVED_MEDIA, "").strip().lower()
    if not raw:
        return DEFAULT_SAVED_MEDIA
    if raw not in SAVED_MEDIA:
        choices = ", ".join(SAVED_MEDIA)
        raise ValueError(
            f"{ENV_SAVED_MEDIA}={raw!r} is not a choice: use one of {choices} "
            f"(unset means {DEFAULT_SAVED_MEDIA})"
        )
    return raw


def served_url(path: str | os.PathLike[str]) -> str | None:
    """The URL path (from the server's root, base URL included) at which the Jupyter
    server that started this kernel serves a kept output file, or ``None``: no
    server with genwidgets' extension started the kernel (``GENWIDGETS_OUTPUTS_URL``
    unset), or the file is not under ``GENWIDGETS_HOME/outputs``
    (docs/decisions.md#served-outputs)."""
    prefix = os.environ.get(ENV_OUTPUTS_URL, "")
    if not prefix.startswith("/"):
        return None
    try:
        relative = Path(path).resolve().relative_to((home() / "outputs").resolve())
    except (ValueError, OSError):
        return None
    return prefix.rstrip("/") + "/" + quote(relative.as_posix())


def shown_path(path: str | os.PathLike[str]) -> str:
    """A local path as people and saved notebooks see it: under the genwidgets home
    as ``~/.genwidgets/...`` (``$GENWIDGETS_HOME/...`` when that is set elsewhere),
    under the user's home as ``~/...``, under the working folder relative to it,
    else the file name alone. Never the absolute path of the machine that made it:
    a notebook or an export is shared (docs/decisions.md#shown-paths)."""
    target = Path(path).expanduser()
    try:
        target = target.resolve()
    except OSError:
        target = target.absolute()
    user = Path.home()
    default = user / ".genwidgets"
    roots = [
        (home(), "~/.genwidgets" if home() == default else f"${ENV_HOME}"),
        (user, "~"),
        (Path.cwd(), ""),
    ]
    found: list[tuple[int, str]] = []
    for root, label in roots:
        try:
            base = root.expanduser().resolve()
            relative = target.relative_to(base)
        except (ValueError, OSError):
            continue
        if base.parent != base:  # never relative to the filesystem's root
            shown = f"{label}/{relative.as_posix()}" if label else relative.as_posix()
            found.append((len(base.parts), shown))
    # the deepest root wins: the genwidgets home over the user's, a project over both
    return max(found)[1] if found else target.name


def shown_url(url: str) -> str:
    """A URL as people and saved notebooks see it: a loopback one (the embedded
    simulator's, a local gateway's) names a port of this machine that means nothing
    elsewhere and dies with its server, so it shows as ``<a file of a gateway on this
    machine: name>``; any other URL as it is (docs/decisions.md#shown-paths)."""
    if not is_loopback(url):
        return url
    name = urlsplit(url).path.rstrip("/").rsplit("/", 1)[-1]
    return f"<a file of a gateway on this machine{': ' + name if name else ''}>"


def remember_secret(key: str | None) -> None:
    """Register a key so :func:`redact` can scrub it from any text we emit."""
    if key and len(key) >= 4:
        _known_secrets.add(key)


def redact(text: str) -> str:
    """Remove every known key and any bearer token from ``text``."""
    for secret in _known_secrets:
        if secret in text:
            text = text.replace(secret, "***")
    return re.sub(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{8,}", r"\1***", text)


#: the userinfo of a URL (``scheme://user:password@``), which may hold credentials: up
#: to the last ``@`` before the host (a password may hold an ``@``), as URL parsers split
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)([^/?#\s]*)@")


def _masked_userinfo(found: re.Match[str]) -> str:
    user, has_password, _password = found.group(2).partition(":")
    return f"{found.group(1)}{user + ':***' if has_password else '***'}@"


def hide_userinfo(text: str) -> str:
    """``text`` with the credentials of each URL's userinfo masked, for what is shown or
    stored, never sent: ``http://alice:***@host`` (a user name alone may be a token:
    ``http://***@host``); docs/decisions.md#credentials-in-the-base-url."""
    return _USERINFO.sub(_masked_userinfo, text)


def is_loopback_host(host: str | None) -> bool:
    """Whether ``host`` names this machine without a DNS lookup (no rebinding): a name
    that only starts like an address of it (``127.example.com``) is another machine."""
    if not host:
        return False
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def is_loopback(url: str) -> bool:
    """Whether ``url``'s host is this machine (see :func:`is_loopback_host`)."""
    return is_loopback_host(urlsplit(url).hostname)


#: the port an http(s) URL names when it names none
DEFAULT_PORTS = {"http": 80, "https": 443}


def normal_base_url(url: str) -> str:
    """A gateway's address as one text however it was typed: the scheme and host in
    lower case, the scheme's own port and a trailing ``/`` left out. Only spellings of
    one origin become one: ``localhost`` and ``127.0.0.1`` stay two hosts (a name may
    lead elsewhere), and the path is kept. What is not an http(s) URL with a host is
    left as given (less a trailing ``/``), for the checks that refuse it to name it."""
    url = url.rstrip("/")
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:  # a port that is not one, a ``[`` never closed
        return url
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not host:
        return url
    userinfo = parts.netloc.rpartition("@")[0]
    netloc = (f"{userinfo}@" if "@" in parts.netloc else "") + (
        f"[{host}]" if ":" in host else host
    )
    netloc += f":{port}" if port is not None and port != DEFAULT_PORTS[scheme] else ""
    return urlunsplit((scheme, netloc, parts.path, parts.query, parts.fragment))


@dataclass(frozen=True)
class Settings:
    """What a client is built from. ``api_key`` is excluded from the repr."""

    base_url: str | None
    api_key: Secret | None = field(repr=False)
    embedded: bool


def resolve(base_url: str | None, api_key: str | Secret | None) -> Settings:
    """Decide the gateway: explicit arguments, then the environment, then the simulator.

    With neither a URL nor a key anywhere, the embedded simulator is used (so a
    first notebook runs with no account, and every widget says "simulated"). A
    key with no URL is an error rather than a guess:
    we never send a real key to a host the user did not name.
    """
    api_key = Secret.wrap(api_key) or Secret.wrap(os.environ.get(ENV_API_KEY)) or _session_key
    given = "base_url" if base_url else ENV_BASE_URL
    base_url = base_url or os.environ.get(ENV_BASE_URL) or None
    if base_url is None and api_key is None:
        return Settings(base_url=None, api_key=None, embedded=True)
    if base_url is None:
        raise ValueError(
            f"an API key is configured but no gateway address: set {ENV_BASE_URL} "
            "or pass base_url=... (with neither, the embedded simulator is used)"
        )
    _check_base_url(base_url, given)
    return Settings(base_url=normal_base_url(base_url), api_key=api_key, embedded=False)


def _check_base_url(url: str, given: str) -> None:
    """Refuse, naming the setting, an address no request could be sent to (an unclosed
    ``[``, a port out of range, another scheme, no host): said at once, not as a bare
    parser error or a create "sent" whose outcome is unknown."""
    try:
        parts = urlsplit(url)
        fits = parts.scheme.lower() in DEFAULT_PORTS and bool(parts.hostname)
        parts.port  # noqa: B018 - raises for a port that is not one
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(
            f"{given} {hide_userinfo(url)!r} is not a gateway address: expected "
            "http(s)://host[:port][/path], e.g. https://gateway.example.com or "
            "http://127.0.0.1:8765 (an IPv6 host in brackets: https://[::1]:8443)"
        )
