"""The simulator's settings: who may call it, how fast it runs, which faults it injects.

Every value is checked (by pydantic, strictly: a number is a finite number, never a
boolean or a text) when the config is made, so a bad value fails at once with a
message naming the allowed range (the CLI turns it into an argparse error).
The live switches (``LIVE_FIELDS``) can be changed on a running server with
``PUT /_sim/config``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from .._config import DEMO_KEY
from .dialects import DIALECTS, check_dialect, dialect_from_env

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
SHARE = "a share between 0 and 1"
PER_KEY = "> 0 requests per second per key (or None for no limit)"

#: What each setting allows, as a refusal of a bad value says it.
ALLOWED = {
    "keys": "one or more non-empty strings",
    "restrict": "a map of a key to one or more endpoint identifiers",
    "speed": f"a finite number > 0 and <= {MAX_SPEED:g} (2 = twice as fast)",
    "workers": f"an integer from 1 to {MAX_WORKERS}",
    "fail_rate": SHARE,
    "error_rate": SHARE,
    "create_error_rate": SHARE,
    "rate_limit": PER_KEY,
    "create_rate_limit": PER_KEY,
    "latency": f"between 0 and {MAX_LATENCY:g} seconds",
    "seed": "an integer",
    "dialect": f"one of {', '.join(DIALECTS)}",
}


#: One name (a string) or several, as a tuple.
Names = Annotated[
    tuple[Annotated[str, Field(min_length=1, pattern=r"\S")], ...],
    Field(min_length=1),
    BeforeValidator(lambda value: (value,) if isinstance(value, str) else tuple(value)),
]
Share = Annotated[float, Field(ge=0.0, le=1.0)]
PerKey = Annotated[float, Field(gt=0.0)] | None


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
        return SimConfig(speed=float(text)).speed
    except ValueError:
        raise ValueError(
            f"{ENV_SPEED} must be a number > 0 and <= {MAX_SPEED:g} (2 = twice as fast), "
            f"got {text[:40]!r}"
        ) from None


class SimConfig(BaseModel):
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

    model_config = ConfigDict(frozen=True, strict=True, allow_inf_nan=False, validate_default=True)

    # The keys are secrets on a shared machine: a repr never shows them.
    keys: Names = Field(default=(DEMO_KEY,), repr=False)
    restrict: Mapping[str, Names] = Field(default_factory=dict, repr=False)
    speed: Annotated[float, Field(gt=0.0, le=MAX_SPEED)] = 1.0
    workers: Annotated[int, Field(ge=1, le=MAX_WORKERS)] = 4
    fail_rate: Share = 0.0
    error_rate: Share = 0.0
    create_error_rate: Share = 0.0
    rate_limit: PerKey = None
    create_rate_limit: PerKey = None
    latency: Annotated[float, Field(ge=0.0, le=MAX_LATENCY)] = 0.0
    seed: int = 0
    dialect: Annotated[str, BeforeValidator(check_dialect)] = Field(
        default_factory=dialect_from_env
    )

    def __init__(self, **values: Any) -> None:
        try:
            super().__init__(**values)
        except ValidationError as exc:  # the first problem, said as the table says it
            error = exc.errors()[0]
            name = str(error["loc"][0])
            given = values.get(name, error["input"])
            raise ValueError(f"{name} must be {ALLOWED[name]}, got {given!r}") from None

    def with_live(self, changes: Mapping[str, Any]) -> SimConfig:
        """A copy with some live switches changed; unknown names are an error."""
        unknown = sorted(set(changes) - set(LIVE_FIELDS))
        if unknown:
            raise ValueError(
                f"unknown config field(s) {', '.join(unknown)}; allowed: {', '.join(LIVE_FIELDS)}"
            )
        return SimConfig(**{**self.__dict__, **changes})

    def live(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in LIVE_FIELDS} | {"workers": self.workers}
