"""An output made by hand (issue 32 point 7): no local copy read (only the jobs layer
vouches for one), a save written whole; its URL by a plain GET with no credential is
pinned in tests/protocol/test_fetch.py (the blocking paths)."""

from __future__ import annotations

import base64
from pathlib import Path

from genwidgets.protocol.output import Output


def test_an_output_made_by_hand_reads_its_record_not_a_file_at_its_path(tmp_path: Path) -> None:
    planted = tmp_path / "0.txt"
    planted.write_bytes(b"a file nobody vouched for")
    url = "data:text/plain;base64," + base64.b64encode(b"the record's").decode()
    output = Output.from_entry({"url": url, "content_type": "text/plain"})
    output.path = planted
    assert output.read() == b"the record's"  # made by hand: not the file planted at its path
    assert output.size() == len(b"the record's")  # what is in hand, not the file's size
    assert "saved at" not in repr(Output("text/plain", path=planted))


def test_a_save_by_hand_makes_its_folders_and_leaves_no_partial_file(tmp_path: Path) -> None:
    output = Output.from_entry({"content_type": "text/plain", "content": "hello"})
    target = output.save(tmp_path / "a" / "b" / "note")
    assert target == tmp_path / "a" / "b" / "note.txt" and target.read_bytes() == b"hello"
    assert [p.name for p in target.parent.iterdir()] == ["note.txt"]
