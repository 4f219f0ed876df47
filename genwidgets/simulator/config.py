"""The simulator's settings: who may call it, how fast it runs, which faults it injects.

Every value is checked when the config is made, so a bad value fails at once with
a message naming the allowed range (the CLI turns it into an argparse error).
The live switches (``LIVE_FIELDS``) can be changed on a running server with
``PUT /_sim/config``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from .._config import DEMO_KEY
from .dialects import check_dialect, dialect_from_env

#: Fields ``PUT /_sim/config`` may change on a running server.
LIVE_FIELDS = (
    "fail_rate",
    "error_rate",
    "create_error_rate",
    "rate_limit",
    "create_rate_limit",
    "latency",
    "speed",
)

MAX_SPEED = 1000.0
MAX_WORKERS = 1024
MAX_LATENCY = 60.0
PER_KEY = "> 0 requests per second per key (or None for no limit)"


def _ranged(name: str, allowed: str, within: Callable[[float], bool]) -> Callable[[Any], float]:
    """The check of a number setting: a finite number ``within`` its range, else a
    ValueError saying what is ``allowed``."""

    def check(value: Any) -> float:
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            raise ValueError(f"{name} must be a finite number, got {value!r}")
        if not within(float(value)):
            raise ValueError(f"{name} must be {allowed}, got {value!r}")
        return float(value)

    return check


def _or_none(check: Callable[[Any], float]) -> Callable[[Any], float | None]:
    """``check``, or None for no value (no limit)."""
    return lambda value: None if value is None else check(value)


check_speed = _ranged(
    "speed", f"> 0 and <= {MAX_SPEED:g} (2 = twice as fast)", lambda v: 0 < v <= MAX_SPEED
)


#: The embedded simulator's speed (the one a client with no address starts): a class
#: or a test suite may run its demo durations faster. docs/decisions.md#sim-speed.
ENV_SPEED = "GENWIDGETS_SIM_SPEED"


def speed_from_env() -> float:
    """The speed ``GENWIDGETS_SIM_SPEED`` names (1 when unset or empty); a value that
    is not a speed is refused, naming the setting."""
    text = os.environ.get(ENV_SPEED, "").strip()
    if not text:
        return 1.0
    try:
        return check_speed(float(text))
    except ValueError:
        raise ValueError(
            f"{ENV_SPEED} must be a number > 0 and <= {MAX_SPEED:g} (2 = twice as fast), "
            f"got {text[:40]!r}"
        ) from None


def check_workers(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_WORKERS:
        raise ValueError(f"workers must be an integer from 1 to {MAX_WORKERS}, got {value!r}")
    return value


#: The check of each setting that has a range (the CLI converts its flags, then checks them
#: by this table): a bad value is a ValueError naming what is allowed.
CHECKS: dict[str, Callable[[Any], Any]] = {
    "speed": check_speed,
    "workers": check_workers,
    **{
        name: _ranged(name, "a share between 0 and 1", lambda v: 0.0 <= v <= 1.0)
        for name in ("fail_rate", "error_rate", "create_error_rate")
    },
    **{
        name: _or_none(_ranged(name, PER_KEY, lambda v: v > 0))
        for name in ("rate_limit", "create_rate_limit")
    },
    "latency": _ranged(
        "latency", f"between 0 and {MAX_LATENCY:g} seconds", lambda v: 0.0 <= v <= MAX_LATENCY
    ),
    "dialect": check_dialect,
}


@dataclass(frozen=True)
class SimConfig:
    """How a simulator behaves.

    ``keys``: accepted API keys. ``restrict``: key -> endpoints that key may use
    (a key absent from it may use every endpoint). ``speed`` divides every
    simulated duration. ``workers``: tasks that run at once (the rest queue).
    ``fail_rate``: share of tasks that end ``COMPLETED`` with a runtime error.
    ``error_rate``: share of status/result requests answered 502/503.
    ``create_error_rate``: share of valid creates answered 500 before any task is
    made (a gateway on a bad day: to the client, an outcome unknown).
    ``rate_limit``: requests per second per key (None: unlimited).
    ``create_rate_limit``: create requests per second per key, on top of it (gateways
    limit creates apart from the rest, as replicate's 600 a minute).
    ``latency``: seconds added before every answer. ``seed``: seeds the dice
    of the fault switches, so a run is reproducible. ``dialect``: how the
    answers fill what the spec leaves open (:mod:`.dialects`; default from
    ``GENWIDGETS_SIM_DIALECT``, else ``spec``).
    """

    keys: tuple[str, ...] = (DEMO_KEY,)
    restrict: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    speed: float = 1.0
    workers: int = 4
    fail_rate: float = 0.0
    error_rate: float = 0.0
    create_error_rate: float = 0.0
    rate_limit: float | None = None
    create_rate_limit: float | None = None
    latency: float = 0.0
    seed: int = 0
    dialect: str = field(default_factory=dialect_from_env)

    def __post_init__(self) -> None:
        keys = (self.keys,) if isinstance(self.keys, str) else tuple(self.keys)
        if not keys or not all(isinstance(k, str) and k.strip() for k in keys):
            raise ValueError("keys must be one or more non-empty strings")
        object.__setattr__(self, "keys", keys)
        restrict: dict[str, tuple[str, ...]] = {}
        for key, allowed in dict(self.restrict).items():
            names = (allowed,) if isinstance(allowed, str) else tuple(allowed)
            if not names or not all(isinstance(n, str) and n for n in names):
                raise ValueError("restrict maps a key to one or more endpoint identifiers")
            restrict[key] = names
        object.__setattr__(self, "restrict", restrict)
        for name, check in CHECKS.items():
            object.__setattr__(self, name, check(getattr(self, name)))
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ValueError(f"seed must be an integer, got {self.seed!r}")

    def __repr__(self) -> str:
        # The keys are secrets on a shared machine: count them, never print them.
        shown = ", ".join(
            f"{f.name}={getattr(self, f.name)!r}"
            for f in fields(self)
            if f.name not in {"keys", "restrict"}
        )
        return f"SimConfig(keys=<{len(self.keys)}>, restricted=<{len(self.restrict)}>, {shown})"

    def with_live(self, changes: Mapping[str, Any]) -> SimConfig:
        """A copy with some live switches changed; unknown names are an error."""
        unknown = sorted(set(changes) - set(LIVE_FIELDS))
        if unknown:
            raise ValueError(
                f"unknown config field(s) {', '.join(unknown)}; allowed: {', '.join(LIVE_FIELDS)}"
            )
        return replace(self, **dict(changes))

    def live(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in LIVE_FIELDS} | {"workers": self.workers}
