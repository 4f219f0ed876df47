"""A batch's manifest in its output folder, written as it goes: ``manifest.jsonl`` one
flushed line per event of a row, ``manifest.csv`` the table of every row (formulas
made inert). docs/decisions.md#batch-files.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, TextIO

from .._config import redact
from .._files import write_atomically
from .._formats import spreadsheet_cell
from ..errors import words_of

__all__ = ["COLUMNS", "CSV_EVERY", "CSV_NAME", "JSONL_NAME", "Manifest", "read_manifest"]

JSONL_NAME = "manifest.jsonl"
CSV_NAME = "manifest.csv"
#: the CSV table is rewritten at most this often while the batch runs (seconds)
CSV_EVERY = 2.0
COLUMNS = (
    "row",
    "name",
    "line",
    "status",
    "endpoint",
    "request_id",
    "files",
    "error",
    "payload",
    "updated_at",
    "next",
)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return "; ".join(map(str, value))
    if isinstance(value, Mapping):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


class Manifest:
    """The two manifest files of one output folder; thread-safe. A write that fails (a
    read-only folder, a full disk) never raises: ``problem`` says why, and the next
    write tries again (the store and the ledger keep the truth meanwhile)."""

    def __init__(self, out: Path | None, batch_id: str) -> None:
        self.batch_id = batch_id
        #: a grid has no folder: nothing is written (its store and the ledger keep it)
        self.jsonl = out / JSONL_NAME if out is not None else None
        self.csv = out / CSV_NAME if out is not None else None
        self._lock = threading.Lock()
        self._table_lock = threading.Lock()
        self._file: TextIO | None = None
        self._csv_at = 0.0
        #: why the last write failed (None once one succeeds)
        self.problem: str | None = None

    def _failed(self, what: str, exc: OSError) -> None:
        self.problem = f"{what} not written: {words_of(exc)}"

    def event(self, record: Mapping[str, Any]) -> None:
        """Append one row's record (``row``, ``status``, ...) to the JSONL file."""
        if self.jsonl is None:
            return
        line = redact(
            json.dumps({"batch": self.batch_id, **record}, ensure_ascii=False, default=str)
        )
        with self._lock:
            try:
                if self._file is None:
                    self._file = open(self.jsonl, "a", encoding="utf-8")  # noqa: SIM115 - kept open; close() closes it
                self._file.write(line + "\n")
                self._file.flush()  # in the kernel's buffers: a killed process keeps it
            except OSError as exc:
                self._failed(JSONL_NAME, exc)
                if self._file is not None:
                    with contextlib.suppress(OSError):
                        self._file.close()
                self._file = None  # opened again by the next event

    def due(self) -> bool:
        """Whether the CSV table is due again (:data:`CSV_EVERY` seconds since the last)."""
        return time.monotonic() - self._csv_at >= CSV_EVERY

    def table(self, records: Iterable[Mapping[str, Any]], *, force: bool = False) -> bool:
        """Rewrite the CSV table from every row's record, unless it was written less
        than :data:`CSV_EVERY` seconds ago (``force`` writes anyway); True if written."""
        now = time.monotonic()
        if self.csv is None:
            return False
        with self._lock:
            if not force and now - self._csv_at < CSV_EVERY:
                return False
            self._csv_at = now
        table = io.StringIO()
        writer = csv.writer(table)
        writer.writerow(COLUMNS)
        writer.writerows(
            [spreadsheet_cell(redact(_cell(record.get(c)))) for c in COLUMNS] for record in records
        )
        with self._table_lock:  # two writers (the finisher, wait()) never interleave
            try:
                write_atomically(self.csv, table.getvalue().encode("utf-8"))
            except OSError as exc:
                self._failed(CSV_NAME, exc)
                return False
        self.problem = None
        return True

    def close(self) -> None:
        """Close the JSONL file (its batch is settled); the next event opens it again."""
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


def read_manifest(out: str | os.PathLike[str] | None) -> dict[int, dict[str, Any]]:
    """The last record of each row in a folder's ``manifest.jsonl`` (a torn last line,
    from a crash while writing it, is skipped); nothing for a run with no folder."""
    found: dict[int, dict[str, Any]] = {}
    if out is None or not (path := Path(out) / JSONL_NAME).exists():
        return found
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and isinstance(record.get("row"), int):
                found[record["row"]] = record
    return found
