"""One class gateway's settings and the state one server process holds."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..simulator.faults import RateLimiter
from .budgets import STALE_SENDING, longest_send, price_table
from .db import LOCK_WAIT, Database
from .fairshare import MAX_WAIT, FairGate
from .upstream import Upstream

__all__ = ["MAX_BODY", "ServeConfig", "ServeState"]

#: the largest create body read (spec section 8: 64 MB for the vidA endpoints)
MAX_BODY = 64 * 1024 * 1024


@dataclass
class ServeConfig:
    """How one class gateway runs: its upstream and store, its prices and fair share.

    ``max_running``: tasks a key may have unfinished at once (None: no cap; a key's own
    setting wins). ``rate``: requests per second per key, in this process (None: none).
    ``sweep_every``: how often unfinished tasks nobody polls are asked about upstream,
    so they settle (a failed one gives its reservation back) and free their key's place.
    """

    upstream: Upstream
    database: Database
    prices: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    max_running: int | None = 8
    rate: float | None = 20.0
    max_body: int = MAX_BODY
    #: seconds between two looks upstream at the tasks nobody polls (0: no sweep)
    sweep_every: float = 5.0
    #: creates a second sent upstream from this process, in turn by key (None: no cap)
    upstream_rate: float | None = None
    #: seconds a create waits for its turn before a 429
    queue_wait: float = MAX_WAIT
    #: a path every route sits under, as behind JupyterHub's proxy (``/services/class/``)
    prefix: str = ""

    def __post_init__(self) -> None:
        """Settings that would make the class unusable are refused, naming the setting: a
        negative cap refused every create, a negative rate every request after the first,
        and a create waiting longer than :data:`~.budgets.STALE_SENDING` is given up
        as dead while it may still become a task."""
        self.prices = price_table(self.prices)
        if self.max_running is not None and not (
            isinstance(self.max_running, int) and self.max_running >= 1
        ):
            raise ValueError(f"max_running is 1 or more (None: no cap), not {self.max_running}")
        for name in ("rate", "upstream_rate"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} is a number more than 0 (None: no cap), not {value}")
        for name in ("sweep_every", "queue_wait"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} is seconds, 0 or more, not {value}")
        # a create is sending while it waits its turn, the database's lock and upstream
        longest = self.queue_wait + LOCK_WAIT + self.upstream.timeout
        if longest >= STALE_SENDING:
            raise ValueError(
                f"the upstream timeout (--timeout, {self.upstream.timeout:g} s) and the wait "
                f"for a turn (queue_wait, {self.queue_wait:g} s) together must stay under "
                f"{STALE_SENDING - LOCK_WAIT:g} s: a create still being sent after "
                f"{STALE_SENDING:g} s is given up as one whose process stopped"
            )

    @property
    def longest_send(self) -> float:
        """Seconds a create may rightly be ``sending`` here (:func:`~.budgets.longest_send`)."""
        return longest_send(self.queue_wait, self.upstream.connect_timeout, self.upstream.timeout)

    @property
    def mount(self) -> str:
        """:attr:`prefix` as the path every route sits under: ``/services/class`` or ``""``."""
        return "/" + self.prefix.strip("/") if self.prefix.strip("/") else ""


class ServeState:
    """What one server process holds besides the database."""

    def __init__(self, config: ServeConfig) -> None:
        self.config = config
        self.limiter = RateLimiter(config.rate)
        self.gate = FairGate(config.upstream_rate, config.queue_wait)
