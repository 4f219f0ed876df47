"""The jobs layer's output source (issue 32 point 7): the local copy genwidgets wrote is
read only while it holds the bytes written (issue 29 point 2), a URL goes through the
fetcher it was given, a save is written whole."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from genwidgets.errors import GenwidgetsWarning
from genwidgets.jobs.ledger.rows import restored_result
from genwidgets.jobs.output_files import OutputFiles
from genwidgets.protocol.output import Output


def test_a_local_copy_changed_since_it_was_written_is_not_used(tmp_path: Path) -> None:
    copy = tmp_path / "0.png"
    copy.write_bytes(b"ours")
    asked: list[str] = []

    def fetch(url: str, max_bytes: int) -> bytes:
        asked.append(url)
        return b"from the url"

    def written() -> Output:
        return Output(
            "image/png",
            url="https://cdn.example/0.png",
            path=copy,
            sha256=hashlib.sha256(b"ours").hexdigest(),
            _source=OutputFiles(fetch),
        )

    assert written().read() == b"ours" and asked == []
    copy.write_bytes(b"planted")
    with pytest.warns(GenwidgetsWarning, match="not the copy of output 0"):
        assert written().read() == b"from the url"
    assert asked == ["https://cdn.example/0.png"]


def test_a_missing_copy_has_no_size_and_the_url_is_read(tmp_path: Path) -> None:
    files = OutputFiles(lambda url, cap: b"fetched " + url.encode())
    output = Output.from_entry(
        {"url": "https://cdn.example/1.png", "content_type": "image/png"}, source=files
    )
    output.path = tmp_path / "gone.png"
    assert files.local_copy(output) is None and files.local_size(output) is None
    assert output.read() == b"fetched https://cdn.example/1.png"
    (tmp_path / "gone.png").write_bytes(b"12345")
    assert files.local_size(output) == 5


def test_a_save_makes_its_folders_and_replaces_a_file_whole(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "er" / "out.png"
    OutputFiles().write(target, b"first")
    OutputFiles().write(target, b"second")
    assert target.read_bytes() == b"second"
    assert [p.name for p in target.parent.iterdir()] == ["out.png"]


def test_a_result_read_back_from_the_ledger_reads_its_kept_copy() -> None:
    home = Path(os.environ["GENWIDGETS_HOME"])  # the tests' (conftest.py)
    copy = home / "outputs" / "simulator" / "r-1" / "0.png"  # only there is it trusted
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.write_bytes(b"kept bytes")
    result = restored_result(
        endpoint="e",
        request_id="r-1",
        status="COMPLETED",
        error=None,
        error_type=None,
        outputs=[
            {
                "content_type": "image/png",
                "url": "https://cdn.example/expired.png",
                "path": str(copy),
                "size": len(b"kept bytes"),
                "sha256": hashlib.sha256(b"kept bytes").hexdigest(),
            }
        ],
    )
    (output,) = result.outputs
    # none given, its source is the plain OutputFiles: it reads the kept copy, the
    # size before the bytes (an output made by hand reads none: test_hand_made.py)
    assert output.size() == len(b"kept bytes")
    assert output.read() == b"kept bytes" and output.restored
