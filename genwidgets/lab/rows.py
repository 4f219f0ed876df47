"""The rows of a batch: a list of dicts, a CSV or JSONL file, or a pandas DataFrame,
each read into plain dicts with its columns in first-seen order and, for files, the
line of each row, so that every message names a row (and its line). Caps, encodings
and what is refused: docs/decisions.md#batch-rows.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import sys
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..catalog.checks import shown
from ..errors import PayloadError
from .problems import problem

__all__ = [
    "ACCEPTED_SOURCES",
    "MAX_FILE_BYTES",
    "MAX_ROWS",
    "SourceRows",
    "read_rows",
]

#: a rows file larger than this is refused before it is read
MAX_FILE_BYTES = 256 * 2**20
#: more rows than this is refused (split the file into several batches)
MAX_ROWS = 100_000
#: the longest value one CSV cell may hold (characters)
MAX_CELL_CHARS = 1_000_000
ACCEPTED_SOURCES = (
    "rows are a list of dicts, a path to a .csv file (a header row, then one row per "
    "task) or a .jsonl file (one JSON object per line), or a pandas DataFrame"
)
_CSV = (".csv",)
_JSONL = (".jsonl", ".ndjson")


@dataclass(frozen=True)
class SourceRows:
    """Rows read from a source: plain dicts with missing and empty values left out."""

    rows: list[dict[str, Any]]
    #: every column, in first-seen order
    columns: list[str]
    #: what the rows came from, for messages ("prompts.csv", "a list of 12 dicts")
    source: str
    #: a short name for a derived batch id (the file's stem, else "batch")
    stem: str
    #: the line of the file each row came from (None for in-memory rows)
    lines: list[int] | None = None
    #: a DataFrame's index labels, the rows' own names (None: rows are named by position)
    labels: list[int | str] | None = None

    def name(self, index: int) -> int | str:
        """Row ``index``'s name: its DataFrame index label, else its position."""
        return self.labels[index] if self.labels is not None else index

    def where(self, index: int) -> str:
        """Row ``index`` as messages name it: ``row 6``, ``row 'cat'``, or with its line
        in the file, ``row 5 (line 7)``."""
        name = self.name(index)
        said = f"row {name!r}" if isinstance(name, str) else f"row {name}"
        return f"{said} (line {self.lines[index]})" if self.lines is not None else said


def _bad(msg: str, *loc: str) -> PayloadError:
    return problem(loc or "rows", msg)


def _plain(value: Any) -> Any:
    """A value as plain Python: numpy scalars unwrapped, NaN (pandas' "empty") as None,
    empty strings as None (an empty CSV cell leaves the field unset)."""
    if type(value) is str:  # every CSV cell: the short way
        return value or None
    item = getattr(value, "item", None)
    if callable(item) and type(value).__module__.startswith("numpy"):
        value = item()
    nan = isinstance(value, float) and math.isnan(value)
    return None if nan or (isinstance(value, str) and not value) else value


def _kept(row: Mapping[str, Any]) -> dict[str, Any]:
    return {key: plain for key, value in row.items() if (plain := _plain(value)) is not None}


def _too_many(count: int, source: str) -> PayloadError:
    return _bad(f"{source} has {count} rows or more; a batch takes at most {MAX_ROWS}: split it")


def _from_dicts(rows: Sequence[Any]) -> SourceRows:
    if len(rows) > MAX_ROWS:
        raise _too_many(len(rows), "the list")
    problems = []
    kept = []
    for index, row in enumerate(rows):
        if not isinstance(row, Mapping):
            msg = f"a row is a dict of columns, not {type(row).__name__}"
        elif bad_keys := [k for k in row if not isinstance(k, str) or not k.strip()]:
            msg = f"column names are non-empty strings, not {bad_keys[0]!r}"
        else:
            kept.append(_kept(row))
            continue
        problems.append({"loc": (f"row {index}",), "msg": msg})
    if problems:
        raise PayloadError(problems)
    if not kept:
        raise _bad(f"the list of rows is empty; {ACCEPTED_SOURCES}")
    columns = list(dict.fromkeys(column for row in rows for column in row))
    return SourceRows(kept, columns, f"a list of {len(kept)} dicts", "batch")


def _from_dataframe(frame: Any) -> SourceRows:
    columns = list(frame.columns)
    if bad := [c for c in columns if not isinstance(c, str) or not c.strip()]:
        raise _bad(f"DataFrame column names are non-empty strings, not {bad[0]!r}", "columns")
    if twice := sorted({c for c in columns if columns.count(c) > 1}):
        raise _bad(f"the DataFrame names a column twice: {', '.join(twice)}", "columns")
    if len(frame) > MAX_ROWS:
        raise _too_many(len(frame), "the DataFrame")
    if len(frame) == 0:
        raise _bad("the DataFrame has no rows")
    rows = [_kept(r) for r in frame.to_dict(orient="records")]
    return SourceRows(
        rows, columns, f"a DataFrame of {len(rows)} rows", "batch", labels=_labels(frame)
    )


def _labels(frame: Any) -> list[int | str] | None:
    """A DataFrame's index as the rows' names, when it can name them: unique, each a
    whole number or a string, and not just the positions (docs/decisions.md#batch-rows)."""
    if not frame.index.is_unique:
        return None
    labels = [_plain(v) for v in frame.index]
    if not all(type(v) in (int, str) for v in labels):
        return None
    return None if labels == list(range(len(labels))) else labels


def _open_text(path: Path) -> str:
    """The file's text (UTF-8, a BOM dropped), refused past the size cap."""
    try:
        size = path.stat().st_size
        if not path.is_file():
            raise _bad(f"{path} is not a file; {ACCEPTED_SOURCES}")
        if size > MAX_FILE_BYTES:
            raise _bad(
                f"{path} is {size // 2**20} MiB; a rows file may be at most "
                f"{MAX_FILE_BYTES // 2**20} MiB: split it"
            )
        with open(path, "rb") as fh:  # bytes, capped: a file may grow after its stat
            data = fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise _bad(f"cannot read {path}: {exc.strerror or exc}") from None
    try:  # decoded whole, so that the byte a message names counts from the file's start
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _bad(
            f"{path} is not UTF-8 text (byte {exc.start}); save it as UTF-8 (CSV UTF-8)"
        ) from None
    if not text.strip():
        raise _bad(f"{path} is empty; {ACCEPTED_SOURCES}")
    return text


def _file_rows(
    path: Path,
    records: Iterable[tuple[int, dict[str, Any], str | None]],
    none: str,
    columns: list[str] | None = None,
) -> SourceRows:
    """The rows of a file's non-blank records, each (line, row, what is wrong with it or
    None): capped, every problem raised at once, ``none`` said when there is no row; the
    columns are ``columns`` (a header's), else the keys in first-seen order."""
    rows: list[dict[str, Any]] = []
    lines: list[int] = []
    keys: dict[str, None] = {}
    problems = []
    for line, row, wrong in records:
        if len(rows) >= MAX_ROWS:
            raise _too_many(MAX_ROWS, path.name)
        if wrong is not None:
            problems.append({"loc": (f"row {len(rows)}",), "msg": wrong})
        keys.update(dict.fromkeys(row))
        rows.append(_kept(row))
        lines.append(line)
    if problems:
        raise PayloadError(problems)
    if not rows:
        raise _bad(f"{path.name} {none}")
    return SourceRows(rows, columns or list(keys), path.name, path.stem, lines)


#: how a value may hold a double quote, said when a quote breaks a CSV file
_QUOTES = (
    "a value may start with a double quote only if the whole value is quoted and the "
    'quotes inside it are doubled ("""Hello,"" she said"); a quote inside an unquoted '
    'value (she said "hi") is kept as it is'
)


def _csv_trouble(name: str, began: int, line: int, exc: csv.Error) -> str:
    """What a ``csv.Error`` means, naming the line the broken record began on (a quote
    left open swallows every later line into one value: docs/decisions.md#batch-rows)."""
    said = str(exc)
    if said == "unexpected end of data":  # strict: a quoted value the file ends inside
        return (
            f"{name}: line {began}: a quote opened here is never closed (the value would "
            f"run to the end of the file); {_QUOTES}"
        )
    if "expected after" in said:  # strict: text after a quoted value's closing quote
        ends = "" if line == began else f" begins here and, on line {line},"
        return (
            f"{name}: line {began}: a quoted value{ends} ends at a quote followed by more "
            f"text, not a comma or the line's end; {_QUOTES}"
        )
    return f"{name}: line {began} does not read as CSV: {said}"


def _read_csv(path: Path) -> SourceRows:
    # strict: a quote left open or closed mid-value is refused, never read into the
    # values around it; a valid file reads the same as without it
    reader = csv.reader(io.StringIO(_open_text(path), newline=""), strict=True)
    began = 1  # the line the record being read begins on

    def numbered() -> Iterator[tuple[int, list[str]]]:
        nonlocal began
        for record in reader:
            yield reader.line_num, record
            began = reader.line_num + 1

    records = numbered()
    limit = csv.field_size_limit(MAX_CELL_CHARS)
    try:
        header = next(records, (0, []))[1]
        if not header or not any(h.strip() for h in header):
            raise _bad(f"{path.name} has no header row: the first line names the columns")
        names = [h.strip() for h in header]
        if empty := [str(i + 1) for i, h in enumerate(names) if not h]:
            raise _bad(f"{path.name}: column {', '.join(empty)} of the header has no name")
        if twice := sorted({n for n in names if names.count(n) > 1}):
            raise _bad(f"{path.name} names a column twice: {', '.join(twice)}")
        too_many = f"values for {len(names)} columns (quote a value that holds a comma)"
        rows = (
            (
                line,
                dict(zip(names, record, strict=False)),
                f"line {line} of {path.name} has {len(record)} {too_many}"
                if len(record) > len(names)
                else None,
            )
            for line, record in records
            if any(cell.strip() for cell in record)  # a blank line is no row
        )
        return _file_rows(path, rows, "has a header but no rows", names)
    except csv.Error as exc:
        raise _bad(_csv_trouble(path.name, began, reader.line_num, exc)) from None
    finally:
        csv.field_size_limit(limit)


class _KeyTwice(Exception):
    """A JSON object naming a key twice (json keeps the last value, silently)."""


class _Unreadable(str):
    """The text of a JSON number Python would not read as written: an integer longer than
    it reads (``sys.get_int_max_str_digits``, 4300 digits), a float past a float's range
    (``1e400``, or thousands of digits: ``inf``; ``1e-400``: ``0.0``), the extensions
    ``Infinity`` and ``-Infinity``, or ``NaN``; kept as text until the object holding it
    names its key."""


#: JSON's ``NaN`` extension: an object's value of NaN is an empty value (as pandas' NaN
#: is), left unset; in a list no field takes it
_NAN = _Unreadable("NaN")


class _Refused(Exception):
    """A key whose value is (or holds) an :class:`_Unreadable` number."""


def _json_int(text: str) -> int | _Unreadable:
    try:
        return int(text)
    except ValueError:  # past the digits Python reads: no field takes such a number
        return _Unreadable(text)


def _json_constant(name: str) -> _Unreadable:
    """``Infinity``, ``-Infinity`` (refused as ``1e400`` is) or ``NaN``, which Python's
    json reads as floats by default."""
    return _NAN if name == "NaN" else _Unreadable(name)


def _json_float(text: str) -> float | _Unreadable:
    """A JSON float as Python reads it, unless that is not the number written: ``inf``
    for one too large, ``0.0`` for one too small that is not zero."""
    number = float(text)
    written_zero = not text.lower().partition("e")[0].strip("-+0.")
    if math.isinf(number) or (number == 0 and not written_zero):
        return _Unreadable(text)
    return number


def _unreadable_in(value: Any) -> _Unreadable | None:
    """An :class:`_Unreadable` number in ``value`` or its list (an object's were met already)."""
    if isinstance(value, list):
        return next(filter(None, map(_unreadable_in, value)), None)
    return value if isinstance(value, _Unreadable) else None


def _refusal(key: str, number: _Unreadable) -> str:
    """What is wrong with a number Python would not read, shown as the catalog shows a
    huge number: its first digits and how many there are."""
    if number is _NAN:  # never an object's value: that one is unset (_keys_once)
        return (
            f"{shown(key)} holds NaN in a list: no field takes it there; write a number (NaN "
            "or null as a key's whole value leaves that field unset)"
        )
    digits = number.lstrip("-")
    sign = number[: len(number) - len(digits)]
    written = (
        f"the number {number}"
        if len(number) <= 24
        else f"a number of {sum(c.isdigit() for c in digits)} digits ({sign}{digits[:12]}…)"
    )
    if digits.isdigit():
        why = f"so long; a number in a rows file has at most {sys.get_int_max_str_digits()} digits"
    elif math.isinf(float(number)):
        why = "so large; a number in a rows file is at most about 1.8e308 in size"
    else:
        why = "so small (it reads as 0); a number in a rows file is 0 or at least 5e-324 in size"
    return f"{shown(key)} holds {written}: no field takes a number {why}"


def _keys_once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object as a dict, refused when it names a key twice (as a CSV header
    naming a column twice is) or holds a number Python would not read as written."""
    value = dict(pairs)
    if len(value) < len(pairs):
        counts = Counter(key for key, _ in pairs)
        raise _KeyTwice(", ".join(shown(key) for key, n in counts.items() if n > 1))
    for key, item in pairs:
        if item is _NAN:
            value[key] = None  # an empty value, as pandas' NaN and null are
        elif (number := _unreadable_in(item)) is not None:
            raise _Refused(_refusal(key, number))
    return value


def _json_row(text: str, where: str) -> tuple[dict[str, Any], str | None]:
    """One line of a JSONL file as a row, and what is wrong with it (None: nothing)."""
    try:
        value = json.loads(
            text,
            object_pairs_hook=_keys_once,
            parse_int=_json_int,
            parse_float=_json_float,
            parse_constant=_json_constant,
        )
    except _KeyTwice as exc:
        return {}, f"{where} names a key twice: {exc}; an object names each key once"
    except _Refused as exc:
        return {}, f"{where}: {exc}"
    except (ValueError, RecursionError) as exc:
        return {}, f"{where} is not JSON: {exc}"
    if not isinstance(value, dict):
        kind = "number" if isinstance(value, _Unreadable) else type(value).__name__
        return {}, f"{where} is a JSON {kind}, not an object of columns"
    return value, None


def _read_jsonl(path: Path) -> SourceRows:
    # lines end at "\n" only: JSON strings may hold U+2028, U+0085 and the other line
    # breaks str.splitlines() splits at; a "\r" before the "\n" is JSON whitespace
    records = (
        (number, *_json_row(line, f"line {number} of {path.name}"))
        for number, line in enumerate(_open_text(path).split("\n"), 1)
        if line.strip()
    )
    return _file_rows(path, records, "holds no JSON object")


def read_rows(rows: Any) -> SourceRows:
    """The rows of ``rows`` (see the module docstring); a PayloadError otherwise."""
    if isinstance(rows, (str, os.PathLike)):
        path = Path(rows).expanduser()
        suffix = path.suffix.lower()
        if suffix in _CSV:
            return _read_csv(path)
        if suffix in _JSONL:
            return _read_jsonl(path)
        raise _bad(f"{str(rows)[:80]!r} is not a .csv or .jsonl path; {ACCEPTED_SOURCES}")
    if type(rows).__module__.split(".")[0] == "pandas" and hasattr(rows, "to_dict"):
        return _from_dataframe(rows)
    if isinstance(rows, Sequence) and not isinstance(rows, (bytes, bytearray)):
        return _from_dicts(rows)
    raise _bad(f"rows cannot be a {type(rows).__name__}; {ACCEPTED_SOURCES}")
