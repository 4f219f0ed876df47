"""The task ledger: every paid task on disk, so a kernel restart loses none of them.

One SQLite file (``GENWIDGETS_HOME/ledger.sqlite3``, standard library ``sqlite3``)
in WAL mode with a busy timeout, shared safely by several kernels at once. Writes
go through one writer thread (:mod:`.writer`), so a lock held by another process
delays only the ledger, never a poll or a submit (docs/decisions.md, "The ledger
and the engine"). The engine writes, in order:

1. :meth:`Ledger.record_intent` *before* the create request leaves (state
   ``submitting``; on disk when the file is free, queued ahead of every later
   write of the task when another process holds it);
2. :meth:`Ledger.record_handle` the moment the handle arrives (``submitted``),
   or :meth:`Ledger.record_create_failed` (``not_created`` when the request
   certainly created nothing, ``outcome_unknown`` when it may have);
3. :meth:`Ledger.record_status` on every status change;
4. :meth:`Ledger.record_result` with the final answer (``finished``), then
   :meth:`Ledger.record_output_path` for each local copy.

States of a row (``LedgerRow.state``)::

    submitting ──handle──▶ submitted ──result──▶ finished
        │
        ├──create failed, nothing created──▶ not_created
        └──create failed, maybe created / process died──▶ outcome_unknown

*Outcome unknown, never a silent gap.* A process that dies between sending
the create request and receiving the handle leaves its row ``submitting`` on
disk. Reads report such a row as ``outcome_unknown`` when

- it was written by a process on this host that is no longer alive (we store
  ``pid`` and host name; a row of our own pid that this process is not
  sending right now counts as dead, which covers pid reuse after a restart), or
- it is older than ``stale_after`` seconds (60 by default) — the only test
  possible for rows of another host, and a bound on pid reuse by others.

Rows this process is sending right now stay ``submitting`` however long the
request takes. The stored state is not rewritten by reads.

Other choices where the spec is silent:

- ``gateway`` is the client's base URL (the embedded simulator passes
  ``"simulator"``); rows are matched by ``(gateway, request_id)``, the newest
  row winning should a gateway ever reuse a request id.
- "Unfinished" means: has a request id and no final result recorded yet — so a
  task whose last status said ``COMPLETED`` but whose result was never fetched
  is still resumed.
- Payloads are stored scrubbed (:mod:`.scrub`): large inline data becomes its
  digest, credential-like keys are dropped, every text is redacted. There is no
  key parameter anywhere in the ledger.
- Inline output content (JSON records, hex audio) is kept when under 64 KiB.
- ``synchronous=NORMAL``: in WAL mode a crash of the process (SIGKILL, kernel
  restart) loses nothing committed; only a power cut may lose the last writes.
- WAL needs a local filesystem; where SQLite refuses it the ledger keeps the
  rollback journal (still safe, slower under contention).
- Schema versions live in a ``meta`` table (:mod:`.schema`); older files are
  migrated in place, newer files are refused with an error saying what to do.
- A file that cannot be a ledger (another application's SQLite file, not
  SQLite at all, or damaged: ``PRAGMA quick_check`` at open) is moved aside,
  kept as it was, named in a :class:`~genwidgets.errors.LedgerWarning` with its
  new path; a new ledger is
  started at the same place and recording goes on.

The package, by noun: :mod:`.scrub` (what is kept of a payload), :mod:`.rows`
(the row and its states), :mod:`.schema` (the file's tables and migrations),
:mod:`.writer` (the writer thread), :mod:`.writes` (the writes), :mod:`.file`
(the file's health: checked, set aside, said when unwritable), :mod:`.lease`
(one owner per task), :mod:`.store` (the :class:`Ledger`). Other parts read it through
:meth:`Ledger.rows` (with the observed times ``running_at``/``done_at``) and may
keep their own tables in the same file through :meth:`Ledger.transaction`.
"""

from .rows import (
    FAILED,
    FINISHED,
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
    "scrub_payload",
]
