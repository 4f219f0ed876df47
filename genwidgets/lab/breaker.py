"""The breaker: creates failing in a row in a way that may have billed pause a run (a
batch's, a grid's) until it is asked to go on (docs/decisions.md#circuit-breaker)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from .._client import created_nothing
from ..errors import OutcomeUnknown, ServerError, Unreachable

__all__ = ["BREAKER_AFTER", "Breaker", "Pausable", "may_have_billed"]

log = logging.getLogger("genwidgets")

#: creates failing in a row in a way that may have billed (a 5xx, no answer, no
#: contact) before the run pauses (docs/decisions.md#circuit-breaker)
BREAKER_AFTER = 5


def may_have_billed(failure: Exception) -> bool:
    """Whether a failed create counts toward the breaker: a 5xx, no answer, no contact
    (the gateway is in trouble, so the next create may bill for nothing too)."""
    return isinstance(failure, (OutcomeUnknown, ServerError, Unreachable)) or not (
        created_nothing(failure)
    )


class Breaker:
    """Creates failing in a row in a way that may have billed: at :data:`BREAKER_AFTER`
    the run pauses until asked to go on. A batch and a grid each hold one
    (docs/decisions.md#circuit-breaker)."""

    def __init__(self) -> None:
        self.count = 0

    def saw(self, outcome: object) -> str | None:
        """A create's outcome: a task made ends the run, a failure that may have billed
        adds to it (a refusal, the row's own problem, does neither); why to pause once
        the run is long enough, else None."""
        if not isinstance(outcome, Exception):
            self.count = 0
            return None
        if not may_have_billed(outcome):
            return None
        self.count += 1
        if self.count < BREAKER_AFTER:
            return None
        return (
            f"{self.count} creates in a row failed in a way that may have billed "
            f"(the last: {type(outcome).__name__}: {outcome})"
        )


class Pausable:
    """What a batch and a grid share around their sending: whether their plan was sent
    (``started``), why sending paused, the event that holds every create back, the lock
    a change is made under, and the listeners (views) told of changes."""

    _started = False
    id: str

    def __init__(self) -> None:
        #: held while the run changes; never while waiting on the engine
        self.lock = threading.RLock()
        #: told of each change (views); one that raises is logged, never stops the run
        self.listeners: list[Callable[[], None]] = []
        #: why sending paused; set, nothing more is sent until it is asked to go on
        self.paused: str | None = None
        #: set: no create leaves (a pause, a cancel, an interrupt)
        self.stop = threading.Event()
        #: counts creates failing in a row that may have billed
        self.breaker = Breaker()

    @property
    def started(self) -> bool:
        return self._started

    def _begin(
        self,
        *,
        record: Callable[[], None],
        clear: threading.Event,
        again: Callable[[], bool] | None = None,
    ) -> bool:
        """Start sending (False: nothing to); again only after a pause, or when
        ``again()`` says so under the lock. A pause ends here, ``clear`` (the last
        sending's end) is cleared, and ``record`` stores the run: when it raises,
        nothing was sent and a later submit() may try again."""
        with self.lock:
            if self._started and not (again() if again else self.paused is not None):
                return False
            if self._started:  # asked to go on: a pause or a stop ends here
                self.go_on()
            self._started = True
            clear.clear()
        try:
            record()
        except BaseException:
            with self.lock:
                self._started = False
            raise
        return True

    def changed(self) -> None:
        """Tell the listeners, each guarded: a broken view never stops a run."""
        for listener in list(self.listeners):
            try:
                listener()
            except Exception:
                log.exception("genwidgets: a listener of %s failed", self.id)

    def pause(self, why: str) -> None:
        """Stop sending (under the lock): creates in flight answer, nothing more leaves
        until the run is asked to go on. A second pause keeps the first one's words."""
        if self.paused is None:
            self.paused = why
            self.stop.set()

    def go_on(self) -> None:
        """Asked to send again (under the run's lock): the pause ends here."""
        self.paused = None
        self.breaker.count = 0
        self.stop.clear()
