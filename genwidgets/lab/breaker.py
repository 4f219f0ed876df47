"""The breaker: creates failing in a row in a way that may have billed pause a run (a
batch's, a grid's: :class:`~.row_book.RowBook`) until it is asked to go on
(docs/decisions.md#circuit-breaker)."""

from __future__ import annotations

from .._client import created_nothing
from ..errors import OutcomeUnknown, ServerError, Unreachable

__all__ = ["BREAKER_AFTER", "Breaker", "may_have_billed"]

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
    the run pauses until asked to go on (docs/decisions.md#circuit-breaker)."""

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
