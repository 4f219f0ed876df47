"""A ledger row: one task as the ledger knows it, and the names of its states.

States of a row (``LedgerRow.state``)::

    submitting ──handle──▶ submitted ──result──▶ finished
        │
        ├──create failed, nothing created──▶ not_created
        └──create failed, maybe created / process died──▶ outcome_unknown

Times are Unix seconds: ``submitted_at`` (intent written), ``handle_at`` (task
created), ``running_at`` (first status seen that is neither ``IN_QUEUE`` nor
terminal), ``done_at`` (first terminal status or result seen), ``finished_at``
(final result recorded). ``running_at``/``done_at`` are what a run-time model
learns from; they are None when not observed (a task that went from the queue
to done between two polls has no ``running_at``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from ..._config import home
from ..._formats import int_or_none
from ...protocol.records import Handle, Output, OutputSource, Result
from ..output_files import holds_digest, named_by

__all__ = [
    "COLUMNS",
    "COLUMN_NAMES",
    "CONTENT_WHOLE",
    "COPIES_PENDING_SQL",
    "COPY_FAILED_AT",
    "COPY_GIVEN_UP",
    "COPY_RETRY_PAUSE",
    "COPY_TRIED_AT",
    "COPY_TRIES",
    "COPY_TRY_INTERVAL",
    "FAILED",
    "FINISHED",
    "MAX_COPY_TRIES",
    "MAX_LIMIT",
    "NOT_ANOTHER_KEYS",
    "NOT_CREATED",
    "OK",
    "OUTCOME_UNKNOWN",
    "STATES",
    "SUBMITTED",
    "SUBMITTING",
    "UNFINISHED",
    "LedgerRow",
    "copy_gone",
    "restored_result",
]

SUBMITTING = "submitting"
SUBMITTED = "submitted"
NOT_CREATED = "not_created"
OUTCOME_UNKNOWN = "outcome_unknown"
FINISHED = "finished"
STATES = frozenset({SUBMITTING, SUBMITTED, NOT_CREATED, OUTCOME_UNKNOWN, FINISHED})
#: the most rows one read returns (``Ledger.rows``, ``client.history``, ``genwidgets
#: history --limit``): SQLite refused a larger LIMIT as "datatype mismatch"
MAX_LIMIT = 1_000_000
#: status filters that are not states nor gateway status names
UNFINISHED = "unfinished"
OK = "ok"
FAILED = "failed"
#: Tries of one output's local copy before it is given up: the download at the task's end
#: and then one per ``resume()`` or ``result()`` asking again (each with the download's
#: own tries within it); an expired URL gives up at once (docs/decisions.md#copies-pending).
MAX_COPY_TRIES = 5
#: Seconds within which failed copies of one output count as one try: five calls of
#: ``result()`` in a loop during a short outage do not give a copy up for good.
COPY_TRY_INTERVAL = 600.0
#: Seconds after a failed copy of one output in which no copy asks for it again: a loop
#: asking ``client.job(...)`` once a second costs no requests while the host is down.
COPY_RETRY_PAUSE = 60.0
#: an output record's keys: copies tried and failed, when the last counted one ran, why
#: no more are tried, and whether its inline content was stored as the gateway sent it
COPY_TRIES, COPY_TRIED_AT, COPY_GIVEN_UP = "copy_tries", "copy_tried_at", "copy_given_up"
#: and when its copy last failed (counted as a try or not)
COPY_FAILED_AT = "copy_failed_at"
CONTENT_WHOLE = "content_whole"

#: SQL: the row was not made with another key than the one of the fingerprint given
#: twice as parameters (see :meth:`LedgerRow.made_with_another_key`)
NOT_ANOTHER_KEYS = "(key_fingerprint IS NULL OR ? IS NULL OR key_fingerprint = ?)"


#: the Python types a field's annotation names (an int is a float too, a bool neither)
_TYPES: dict[str, tuple[type, ...]] = {
    "float": (int, float),
    "int": (int,),
    "str": (str,),
    "bool": (bool,),
    "dict[str, Any]": (dict,),
    "list[dict[str, Any]]": (list,),
}


@dataclass(frozen=True)
class LedgerRow:
    """One task as the ledger knows it. ``state`` is derived (see the module docstring)."""

    id: int
    gateway: str
    endpoint: str
    request_id: str | None
    state: str
    status: str | None
    queue_position: int | None
    payload: dict[str, Any] = field(repr=False)
    submitted_at: float
    updated_at: float
    finished_at: float | None
    ok: bool | None
    error: str | None
    error_type: str | None
    outputs: list[dict[str, Any]] = field(repr=False)
    status_url: str | None = None
    response_url: str | None = None
    cancel_url: str | None = None
    pid: int | None = None
    host: str | None = None
    handle_at: float | None = None
    #: first seen running (a status other than IN_QUEUE, before the end), if seen
    running_at: float | None = None
    #: first seen terminal (a terminal status or the result), if seen
    done_at: float | None = None
    #: what the create was sent for (a batch's row and attempt, a grid's cell), if said
    tag: str | None = None
    #: which API key made the task (``_config.Secret.fingerprint``), None in older rows
    key_fingerprint: str | None = None

    def __post_init__(self) -> None:
        """A field of another type than its annotation says (a row edited by hand or
        written by another tool: ``submitted_at = 'yesterday'``) raises ``TypeError``,
        so the reader skips that row with a log line and every other row still shows."""
        for spec in fields(self):
            value = getattr(self, spec.name)
            kind, _, optional = str(spec.type).partition(" | ")
            wanted = _TYPES.get(kind)
            if wanted is None or (value is None and optional == "None"):
                continue
            if not isinstance(value, wanted) or (isinstance(value, bool) and bool not in wanted):
                raise TypeError(f"{spec.name} is {value!r}, not {str(spec.type)!r}")
        # an item of outputs that is no object (a foreign tool's "note"): the row is skipped
        if not all(isinstance(o, dict) for o in self.outputs):
            raise TypeError(f"outputs holds an item that is no object: {self.outputs!r:.200}")

    @property
    def unfinished(self) -> bool:
        """Created on the gateway, final result not recorded yet: worth resuming."""
        return self.request_id is not None and self.state == SUBMITTED

    @property
    def copies_pending(self) -> list[int]:
        """Indexes of the outputs of a finished task that were never copied and are still
        to be (their download failed, or never ran: the kernel died first); ``resume()``
        and ``result()`` copy them. A copy removed since is not one: :attr:`copies_gone`
        (docs/decisions.md#copies-pending)."""
        return self._to_copy(lambda o: not o.get("path"))

    @property
    def copies_gone(self) -> list[int]:
        """Indexes of the outputs whose local copy was recorded and is no longer there
        (removed to free space, the home moved) and whose source lives: copied again only
        when this task is asked for (``client.job``, ``genwidgets result ID``,
        ``resume(recopy=True)``), never by a plain resume, which would undo a removal the
        user meant (docs/decisions.md#copies-pending)."""
        return self._to_copy(copy_gone)

    def _to_copy(self, missing: Callable[[Mapping[str, Any]], bool]) -> list[int]:
        """Indexes of a finished task's outputs ``missing`` says have no copy, that are
        not given up and still have a source (:func:`_copyable`)."""
        if self.state != FINISHED or self.request_id is None:
            return []
        return [
            int_or_none(o.get("index"), minimum=0) or 0
            for o in self.outputs
            if missing(o) and not o.get(COPY_GIVEN_UP) and _copyable(o)
        ]

    @property
    def copies_given_up(self) -> dict[int, str]:
        """Outputs with no local copy (none made, or removed since) that will not be
        tried again, by index: why (an expired URL, :data:`MAX_COPY_TRIES` tries failed,
        a URL that now serves other bytes than the copy recorded)."""
        return {
            int_or_none(o.get("index"), minimum=0) or 0: str(o[COPY_GIVEN_UP])
            for o in self.outputs
            if (not o.get("path") or copy_gone(o)) and o.get(COPY_GIVEN_UP)
        }

    def made_with_another_key(self, fingerprint: str | None) -> bool:
        """Whether a key other than the one of ``fingerprint`` made this task: the gateway
        may not show it to that key (a class gateway answers 404), so such a client
        neither resumes it nor takes a 404 for its end. A row or a client without a
        fingerprint (an older row, no key) is not known to be another key's."""
        return (
            None not in (self.key_fingerprint, fingerprint) and self.key_fingerprint != fingerprint
        )

    def handle(self, base_url: str | None = None) -> Handle | None:
        """The task handle to re-attach with: the URLs the gateway gave, as stored.

        A URL the row lacks (a task re-attached by id), or whose credentials were
        masked when stored (``http://alice:***@...``), takes the documented shape on
        ``base_url`` (default: the row's gateway). None when no task id was ever received.
        """
        if self.request_id is None:
            return None

        def stored(url: str | None) -> str | None:
            return None if url is None or "***@" in url else url

        return Handle.documented(
            base_url or self.gateway,
            self.endpoint,
            self.request_id,
            status_url=stored(self.status_url),
            response_url=stored(self.response_url),
            cancel_url=stored(self.cancel_url),
            queue_position=self.queue_position,
        )

    def result(self, source: OutputSource | None = None) -> Result | None:
        """The recorded final result (None while unfinished), through
        :func:`restored_result`; ``source`` reads output URLs."""
        if self.request_id is None or self.state != FINISHED:
            return None
        return restored_result(
            endpoint=self.endpoint,
            request_id=self.request_id,
            status=self.status or ("COMPLETED" if self.ok is not None else self.state),
            error=self.error if self.ok is False else None,
            error_type=self.error_type,
            outputs=self.outputs,
            source=source,
            base_url=self.gateway,  # an old row's relative URL: the gateway's, never a page's
        )


def copy_gone(record: Mapping[str, Any]) -> bool:
    """Whether the local copy an output record names is no longer on disk. A file
    changed since (edited, its type learned) is still the user's copy: never replaced."""
    path = record.get("path")
    return isinstance(path, str) and bool(path) and not os.path.exists(path)  # fast: many


def _copyable(record: Mapping[str, Any]) -> bool:
    """Whether an output record still has a source of its bytes: an http(s) or data URL
    the ledger kept whole, or inline content stored as the gateway sent it (marked
    :data:`CONTENT_WHOLE`; a scrubbed or digest-only form is not the output). The same
    rule as :data:`COPIES_PENDING_SQL`."""
    url = record.get("url")
    if isinstance(url, str) and url[:8].lower().startswith(("http://", "https://", "data:")):
        return True
    return record.get("content") is not None and record.get(CONTENT_WHOLE) is True


#: SQL: a task's ``outputs`` hold a copy pending (:attr:`LedgerRow.copies_pending`, the
#: same rule: no path, not given up, a source kept whole); a malformed column holds none
COPIES_PENDING_SQL = (
    "CASE WHEN json_valid(outputs) THEN EXISTS (SELECT 1 FROM json_each(outputs) AS o "
    # CASE: json_extract of an item that is no object (a string) would raise
    "WHERE CASE WHEN o.type = 'object' THEN json_extract(o.value, '$.path') IS NULL "
    f"AND json_extract(o.value, '$.{COPY_GIVEN_UP}') IS NULL "
    "AND (json_extract(o.value, '$.url') LIKE 'http://%' "
    "OR json_extract(o.value, '$.url') LIKE 'https://%' "
    "OR json_extract(o.value, '$.url') LIKE 'data:%' "
    f"OR (json_extract(o.value, '$.content') IS NOT NULL "
    f"AND json_extract(o.value, '$.{CONTENT_WHOLE}') = 1)) ELSE 0 END) ELSE 0 END"
)


#: the columns of ``tasks`` a row is read from, in :class:`LedgerRow` order
COLUMN_NAMES = tuple(f.name for f in fields(LedgerRow))
COLUMNS = ", ".join(COLUMN_NAMES)


def restored_result(
    *,
    endpoint: str,
    request_id: str,
    status: str,
    error: Any,
    error_type: str | None,
    outputs: Sequence[Mapping[str, Any]],
    source: OutputSource | None = None,
    base_url: str | None = None,
) -> Result:
    """A finished task's result as the ledger stored it: each output keeps the URL
    and the local copy recorded, and reads as :attr:`Output.restored`. A local
    copy outside the outputs folder, or without the recorded size and SHA-256, is not
    this output's: it is left out (docs/decisions.md#a-shared-home). ``source`` reads
    the copies and URLs (none: a URL by a plain GET under the address rule of the
    gateway at ``base_url``, which named it: ``output_files.named_by``). Here, not
    on ``Result``: the protocol describes answers, the jobs layer keeps them
    (docs/decisions.md#records-describe-answers)."""
    source = source if source is not None else named_by(base_url)
    restored = []
    for position, record in enumerate(outputs):
        index = int_or_none(record.get("index"), minimum=0)
        output = Output.from_entry(
            {**record, "from_ledger": True},
            position if index is None else index,
            source,
            base_url,
        )
        output.path = _recorded_copy(record)
        digest = record.get("sha256")
        output.sha256 = digest if isinstance(digest, str) and output.path else None
        restored.append(output)
    return Result(
        status=status,
        error=error,
        error_type=error_type,
        outputs=restored,
        raw={"from_ledger": True},
        endpoint=endpoint,
        request_id=request_id,
    )


def _recorded_copy(record: Mapping[str, Any]) -> Path | None:
    """The local copy a ledger record names, when it is one genwidgets wrote: inside
    ``GENWIDGETS_HOME/outputs`` (links followed), with the recorded size and SHA-256.
    Anything else is not trusted: the output reads its URL or shows as unavailable,
    and no face embeds it (docs/decisions.md#a-shared-home)."""
    path = record.get("path")
    size = int_or_none(record.get("size"), minimum=0)
    digest = record.get("sha256")
    if not isinstance(path, str) or not path or size is None or not isinstance(digest, str):
        return None
    try:
        found = Path(path).resolve(strict=True)
        found.relative_to((home() / "outputs").resolve())
        if not found.is_file() or found.stat().st_size != size:
            return None
    except (OSError, ValueError, RuntimeError):
        return None
    return found if holds_digest(found, digest) else None
