"""Students' keys and their groups: minted, listed, revoked, rotated, looked up.

A key is ``gwc_`` and 43 characters of ``secrets.token_urlsafe(32)`` (256 random bits).
It is shown once, when made or rotated; the database keeps its SHA-256, which a lookup
finds by index. A fast hash is enough here because nobody can guess 256 random bits,
unlike a password: docs/decisions.md#serve-keys. Amounts are stored in millionths
(:data:`~.db.SCALE`) and given and shown in plain units.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

from ..catalog import endpoint as catalog_endpoint
from ..errors import EndpointNotFound, ServeError
from .db import CAPS, CAPS_HELD, KINDS, MARKS, SCALE, Database, Tx, caps_and_held

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "KEY_FIELDS",
    "KeyOptions",
    "KeyRecord",
    "add_group",
    "add_key",
    "add_keys",
    "caps_shown",
    "find_key",
    "hash_token",
    "key_error",
    "keys_where",
    "list_keys",
    "revoke_key",
    "rotate_key",
    "set_caps",
    "to_stored",
    "to_units",
]

PREFIX = "gwc_"
#: a key's columns in the order :meth:`KeyRecord.from_row` reads them
KEY_FIELDS = [
    "name",
    "group_name",
    "endpoints",
    "expires_at",
    "revoked_at",
    "admin",
    "max_running",
    *CAPS_HELD.split(", "),
]
_KEY_SELECT = f"SELECT {', '.join(KEY_FIELDS)} FROM keys"


def key_error(message: str) -> ServeError:
    """A key or group command that cannot be done (a name taken, unknown, a bad cap)."""
    return ServeError(message, status=400, code="KEY_COMMAND")


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def to_stored(amount: float | None) -> int | None:
    """A plain amount (5.00, 200) as whole millionths; None stays None (no cap)."""
    return None if amount is None else round(amount * SCALE)


def to_units(stored: int | None) -> float | None:
    return None if stored is None else stored / SCALE


def caps_shown(caps: Mapping[str, int | None], held: Mapping[str, int]) -> dict[str, Any]:
    """A key's or a group's caps and held amounts in plain units, as ``keys list`` and
    ``usage`` show them: only the kinds capped, only the kinds held."""
    return {
        "caps": {k: to_units(v) for k, v in caps.items() if v is not None},
        "held": {k: to_units(v) for k, v in held.items() if v},
    }


@dataclass(frozen=True)
class KeyRecord:
    """One key as stored (never its token): its caps and what it holds, in millionths."""

    name: str
    group: str | None
    endpoints: tuple[str, ...] | None
    expires_at: float | None
    revoked_at: float | None
    admin: bool
    max_running: int | None
    caps: dict[str, int | None] = field(default_factory=dict)
    held: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> KeyRecord:
        caps, held = caps_and_held(row[7:])
        endpoints = tuple(row[2].split(",")) if row[2] else None
        return cls(row[0], row[1], endpoints, row[3], row[4], bool(row[5]), row[6], caps, held)

    def refusal(self, now: float | None = None) -> str | None:
        """Why this key may not be used now, or None."""
        if self.revoked_at is not None:
            return "this key was revoked; ask your teacher for a new one"
        if self.expires_at is not None and (now or time.time()) >= self.expires_at:
            return "this key has expired; ask your teacher for a new one"
        return None

    def describe(self) -> dict[str, Any]:
        """What ``keys list`` and ``usage`` show: plain amounts, never a token."""
        return {
            "name": self.name,
            "group": self.group,
            "endpoints": list(self.endpoints) if self.endpoints else None,
            "expires_at": self.expires_at,
            "revoked": self.revoked_at is not None,
            "admin": self.admin,
            "max_running": self.max_running,
            **caps_shown(self.caps, self.held),
        }


#: the largest cap of any kind: in millionths it stays well within the database's 64-bit
#: integers (9.2e18), held amounts added to it included
MAX_CAP = 10**12


#: kinds counted in whole units: a cap of half a task is no cap a teacher means
COUNTED = ("tasks", "images", "prompts", "speech_characters")


def _check_caps(caps: Mapping[str, float | None]) -> dict[str, int | None]:
    stored: dict[str, int | None] = {}
    for kind in KINDS:
        value = caps.get(kind)
        if value is not None and not value >= 0:
            raise key_error(f"a cap is 0 or more, not {value!r} ({kind})")
        if value is not None and not value <= MAX_CAP:  # inf too
            raise key_error(f"a cap is at most {MAX_CAP:,}, not {value:g} ({kind})")
        if value is not None and kind in COUNTED and value != int(value):
            raise key_error(f"a cap on {kind.replace('_', ' ')} is a whole number, not {value:g}")
        stored[kind] = to_stored(value)
    unknown = sorted(set(caps) - set(KINDS))
    if unknown:
        raise key_error(f"unknown cap(s) {', '.join(unknown)}; allowed: {', '.join(KINDS)}")
    return stored


def _check_options(endpoints: Sequence[str] | None, max_running: int | None) -> None:
    """Refuse a key's option that would make it unusable from the start: an endpoint the
    catalog does not know (naming the closest), a running cap below 1 (leave it out for
    the server's ``--max-running``). An expiry already past is the command's to refuse
    (a script may make an expired key on purpose, to see what a student sees)."""
    for name in endpoints or ():
        if not name:
            raise key_error("an endpoint is empty: name them separated by commas, none empty")
        try:
            catalog_endpoint(name)
        except EndpointNotFound as exc:
            raise key_error(f"an endpoint it may use is unknown: {exc}") from None
    if max_running is not None and max_running < 1:
        raise key_error(
            f"a key's max running is 1 or more, not {max_running} (leave it out: the "
            "server's --max-running applies)"
        )


def _mint() -> str:
    return PREFIX + secrets.token_urlsafe(32)


def add_group(
    db: Database, name: str, caps: Mapping[str, float | None], *, cache_seconds: int | None = None
) -> None:
    """Make the group ``name``, or change what is given of an existing one: the caps that
    ``caps`` names and the demo-cache window (the rest stays, as ``keys set`` keeps a
    key's other caps)."""
    stored = _check_caps(caps)
    if cache_seconds is not None and cache_seconds < 0:
        raise key_error(f"--cache-seconds is 0 (off) or more, not {cache_seconds}")
    given = [f"cap_{k}" for k in KINDS if caps.get(k) is not None]
    given += ["cache_seconds"] if cache_seconds is not None else []
    sets = ", ".join(f"{c} = excluded.{c}" for c in given)
    change = f"DO UPDATE SET {sets}" if given else "DO NOTHING"
    sql = (
        f"INSERT INTO groups (name, created_at, cache_seconds, {CAPS}) VALUES (?, ?, ?, {MARKS}) "
        f"ON CONFLICT (name) {change}"
    )
    values = (name, time.time(), cache_seconds or 0, *(stored[k] for k in KINDS))
    db.run(lambda tx: tx.run(sql, values))


def _known_group(tx: Tx, name: str) -> None:
    """Refuse a group not made yet, naming those that are: a typo in ``--group`` made a
    new group with no caps, and its keys spent outside the class's cap unseen."""
    if tx.one("SELECT name FROM groups WHERE name = ?", (name,)) is not None:
        return
    known = [str(row[0]) for row in tx.rows("SELECT name FROM groups ORDER BY name")]
    raise key_error(
        f"no group named {name!r} (the groups are: {', '.join(known) or 'none yet'}); "
        f"make it first with: genwidgets serve groups {name} --budget ..."
    )


class KeyOptions(TypedDict, total=False):
    """What a key is made with besides its name and caps (see :func:`add_keys`)."""

    group: str | None
    endpoints: Sequence[str] | None
    expires_at: float | None
    admin: bool
    max_running: int | None


def add_key(
    db: Database, name: str, caps: Mapping[str, float | None], **options: Unpack[KeyOptions]
) -> str:
    """Make the key ``name``; its token, which is shown once and never stored."""
    return add_keys(db, [name], caps, **options)[0][1]


def add_keys(
    db: Database,
    names: Sequence[str],
    caps: Mapping[str, float | None],
    *,
    group: str | None = None,
    endpoints: Sequence[str] | None = None,
    expires_at: float | None = None,
    admin: bool = False,
    max_running: int | None = None,
    then: Callable[[list[tuple[str, str]]], None] | None = None,
) -> list[tuple[str, str]]:
    """Make a key for each of ``names`` in one transaction: (name, token) each, the token
    shown once and never stored. ``then(made)`` runs before the commit (again if the
    transaction is tried again), so a roster's tokens are written or no key is made."""
    for name in names:
        if not name or not name.strip() or len(name) > 100:
            raise key_error(f"a key's name is 1 to 100 characters, not {name!r}")
    stored = _check_caps(caps)
    _check_options(endpoints, max_running)

    def work(tx: Tx) -> list[tuple[str, str]]:
        if group is not None:
            _known_group(tx, group)
        made = []
        for name in names:
            if tx.one("SELECT name FROM keys WHERE name = ?", (name,)):
                raise key_error(f"a key named {name!r} exists; rotate or revoke it instead")
            token = _mint()
            tx.run(
                "INSERT INTO keys (name, token_hash, group_name, endpoints, expires_at, admin, "
                f"max_running, created_at, {CAPS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, {MARKS})",
                (
                    name,
                    hash_token(token),
                    group,
                    ",".join(endpoints) if endpoints else None,
                    expires_at,
                    int(admin),
                    max_running,
                    time.time(),
                    *(stored[k] for k in KINDS),
                ),
            )
            made.append((name, token))
        if then is not None:
            then(made)
        return made

    return db.run(work)


def keys_where(tx: Tx, clause: str, params: Sequence[Any] = ()) -> list[KeyRecord]:
    """The keys a clause picks (``WHERE ...``, ``ORDER BY ...``): every read of keys."""
    return [KeyRecord.from_row(row) for row in tx.rows(f"{_KEY_SELECT} {clause}", params)]


def find_key(db: Database, token: str) -> KeyRecord | None:
    """The key whose token this is (revoked and expired ones too), or None."""
    if not token.startswith(PREFIX):
        return None
    where = ("WHERE token_hash = ?", (hash_token(token),))
    found = db.run(lambda tx: keys_where(tx, *where), write=False)
    return found[0] if found else None


def list_keys(db: Database) -> list[KeyRecord]:
    return db.run(lambda tx: keys_where(tx, "ORDER BY name"), write=False)


def _update_key(db: Database, sql: str, params: Sequence[Any], missing: str) -> None:
    """Run an ``UPDATE keys`` statement; ``missing`` is the error when it changed no row."""
    if not db.run(lambda tx: tx.run(sql, params)):
        raise key_error(missing)


def revoke_key(db: Database, name: str) -> None:
    """Revoke ``name`` at once: its next request, a create already waiting too, is refused."""
    _update_key(
        db,
        "UPDATE keys SET revoked_at = ? WHERE name = ? AND revoked_at IS NULL",
        (time.time(), name),
        f"no key named {name!r} that is not already revoked",
    )


def rotate_key(db: Database, name: str) -> str:
    """A new token for ``name`` (its budget and tasks stay); the old one stops working. A
    revoked key is usable again with its new token: rotating is how a leaked key is
    replaced (docs/decisions.md#serve-keys)."""
    token = _mint()
    _update_key(
        db,
        "UPDATE keys SET token_hash = ?, revoked_at = NULL WHERE name = ?",
        (hash_token(token), name),
        f"no key named {name!r}",
    )
    return token


def set_caps(
    db: Database,
    name: str,
    caps: Mapping[str, float | None],
    *,
    endpoints: Sequence[str] | None = None,
    expires_at: float | None = None,
    max_running: int | None = None,
) -> None:
    """Change the caps of the key ``name`` that ``caps`` names (a raised or lowered budget),
    and the options given (its endpoints, expiry, running cap); the others stay. What it
    already holds stays held: a cap lowered below it refuses the key's next create."""
    stored = _check_caps(caps)
    _check_options(endpoints, max_running)
    options: dict[str, Any] = {"endpoints": ",".join(endpoints) if endpoints else None}
    options |= {"expires_at": expires_at, "max_running": max_running}
    given: dict[str, Any] = {f"cap_{k}": stored[k] for k in KINDS if caps.get(k) is not None}
    given |= {column: value for column, value in options.items() if value is not None}
    if not given:
        raise key_error(
            "say what to set (--budget, --images, ..., --endpoints, --expires, --max-running)"
        )
    sets = ", ".join(f"{column} = ?" for column in given)
    params = (*given.values(), name)
    _update_key(db, f"UPDATE keys SET {sets} WHERE name = ?", params, f"no key named {name!r}")
