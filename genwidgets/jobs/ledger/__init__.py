"""The task ledger: every paid task on disk, so a kernel restart loses none of them.

One SQLite file (``GENWIDGETS_HOME/ledger.sqlite3``) in WAL mode, shared by several
kernels; one writer thread (:mod:`.writer`) applies the engine's writes in order: intent
before the create leaves, handle or failure, statuses, result, output paths. A row that
cannot be known is ``outcome_unknown``, never a silent gap. The package by noun:
:mod:`.scrub`, :mod:`.rows`, :mod:`.schema`, :mod:`.writer`, and the pieces the
:class:`Ledger` (:mod:`.store`, which reads the rows itself) composes, each owning its
state: :mod:`.file`, :mod:`.writes`, :mod:`.lease`. Row states and the choices:
docs/decisions.md#ledger-rows, docs/decisions.md#ledger-writer and
docs/decisions.md#ledger-pieces.
"""

from .lease import left_to_other_kernels
from .rows import (
    FAILED,
    FINISHED,
    MAX_COPY_TRIES,
    MAX_LIMIT,
    NOT_CREATED,
    OK,
    OUTCOME_UNKNOWN,
    STATES,
    SUBMITTED,
    SUBMITTING,
    UNFINISHED,
    LedgerRow,
)
from .schema import SCHEMA_VERSION
from .scrub import scrub_payload
from .store import LEDGER_FILE_NAME, Ledger

__all__ = [
    "FAILED",
    "FINISHED",
    "LEDGER_FILE_NAME",
    "MAX_COPY_TRIES",
    "MAX_LIMIT",
    "NOT_CREATED",
    "OK",
    "OUTCOME_UNKNOWN",
    "SCHEMA_VERSION",
    "STATES",
    "SUBMITTED",
    "SUBMITTING",
    "UNFINISHED",
    "Ledger",
    "LedgerRow",
    "left_to_other_kernels",
    "scrub_payload",
]
