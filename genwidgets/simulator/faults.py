"""Fault injection: the rate limit and the seeded dice of ``fail_rate``/``error_rate``.

Both dice come from ``random.Random(seed)`` (one stream per switch), so a test
run with the same seed and the same request order sees the same faults.
"""

from __future__ import annotations

import random
import time


class RateLimiter:
    """A token bucket per key: ``rate`` requests per second, bursts up to ``rate``.

    :meth:`take` answers ``None`` when the request may pass, else the seconds after which
    a token will be there again (a ``Retry-After`` says them in whole seconds, at least
    1; ``retry-after-ms`` to the millisecond).
    """

    def __init__(self, rate: float | None) -> None:
        self.rate = rate
        self._buckets: dict[str, tuple[float, float]] = {}  # key -> its tokens, when counted

    def take(self, key: str, now: float | None = None) -> float | None:
        """None when the request may pass (a token taken), else the seconds until a
        token is there again."""
        if self.rate is None:
            return None
        now = time.monotonic() if now is None else now
        capacity = max(1.0, self.rate)
        tokens, stamp = self._buckets.get(key, (capacity, now))
        tokens = min(capacity, tokens + (now - stamp) * self.rate)
        taken = tokens >= 1.0
        self._buckets[key] = (tokens - 1.0 if taken else tokens, now)
        return None if taken else (1.0 - tokens) / self.rate


class Dice:
    """Seeded coin flips for the fault switches."""

    def __init__(self, seed: int) -> None:
        self._fail = random.Random(f"fail-{seed}")
        self._error = random.Random(f"error-{seed}")
        self._misc = random.Random(f"misc-{seed}")

    def task_fails(self, rate: float) -> bool:
        return rate > 0 and self._fail.random() < rate

    def transient_error(self, rate: float) -> int | None:
        """502 or 503 for that share of status/result requests, else None."""
        if rate <= 0 or self._error.random() >= rate:
            return None
        return 502 if self._error.random() < 0.5 else 503

    def create_error(self, rate: float) -> bool:
        """Whether a valid create is answered 500 (``create_error_rate``)."""
        return rate > 0 and self._error.random() < rate

    def seed(self) -> int:
        """A seed for a task whose payload names none (the spec: random)."""
        return self._misc.randrange(1, 2**31)
