"""Writing a row's outputs: named, tagged, never over another file; a folder that cannot
be written, or holds another batch, refused before anything is sent."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image

from genwidgets.errors import PayloadError
from genwidgets.lab.naming import NameTemplate
from genwidgets.lab.outfiles import check_out, write_outputs
from genwidgets.lab.provenance import read_provenance
from genwidgets.protocol.records import Output


def png(colour: tuple[int, int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (4, 4), colour).save(buffer, format="PNG")
    return buffer.getvalue()


def outputs(*items: tuple[str, bytes]) -> list[Output]:
    return [
        Output(content_type=ct, raw={}, index=i, _cache=data) for i, (ct, data) in enumerate(items)
    ]


def write(
    out: Path, items: list[Output], own: frozenset[str] = frozenset(), request_id: str = "r-7"
) -> list[Path]:
    stem = NameTemplate.parse(None, []).stem(7, {}, {"slug": "a-fox", "seed": 3})
    return write_outputs(
        out,
        stem,
        items,
        own=own,
        batch="b",
        row=7,
        endpoint="genW2.5-t2i-preview",
        request_id=request_id,
        payload={"prompt": "a fox", "seed": 3},
    )


def test_outputs_are_named_tagged_and_sidecars_written_where_needed(tmp_path: Path) -> None:
    paths = write(tmp_path, outputs(("image/png", png((1, 2, 3))), ("audio/mpeg", b"ID3 x")))
    assert [p.name for p in paths] == ["00007-a-fox-3.png", "00007-a-fox-3-2.mp3"]
    assert read_provenance(paths[0])["request_id"] == "r-7"
    assert (tmp_path / "00007-a-fox-3-2.mp3.json").exists()
    assert read_provenance(paths[1])["row"] == 7
    assert not list(tmp_path.glob(".*part"))


def test_another_files_name_is_never_overwritten_and_a_rows_own_file_is(tmp_path: Path) -> None:
    stranger = tmp_path / "00007-a-fox-3.png"
    stranger.write_bytes(b"not ours")
    first = write(tmp_path, outputs(("image/png", png((9, 9, 9)))))
    assert first[0].name == "00007-a-fox-3~2.png" and stranger.read_bytes() == b"not ours"
    again = write(
        tmp_path, outputs(("image/png", png((8, 8, 8)))), own=frozenset({"00007-a-fox-3~2.png"})
    )
    assert again[0].name == "00007-a-fox-3~2.png"  # its own earlier file: replaced
    assert stranger.read_bytes() == b"not ours"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "00007-a-fox-3.png",
        "00007-a-fox-3~2.png",
    ]


def test_another_tasks_file_of_the_same_row_is_never_overwritten(tmp_path: Path) -> None:
    """The same batch and row sent again by another ledger (a fresh GENWIDGETS_HOME) is
    another task: its output never replaces the first task's paid one."""
    (first,) = write(tmp_path, outputs(("image/png", png((1, 1, 1)))), request_id="r-7")
    kept = first.read_bytes()
    (second,) = write(tmp_path, outputs(("image/png", png((2, 2, 2)))), request_id="r-8")
    assert second.name == "00007-a-fox-3~2.png" and first.read_bytes() == kept
    assert read_provenance(second)["request_id"] == "r-8"


def test_a_folder_holding_this_batch_sent_by_another_ledger_is_refused(tmp_path: Path) -> None:
    """Rows of this batch already sent, which this ledger does not know: sending them
    again pays twice, so nothing is sent; rows never sent are no obstacle."""
    (tmp_path / "manifest.jsonl").write_text(
        '{"batch": "b", "row": 0, "request_id": null}\n'
        '{"batch": "b", "row": 1, "request_id": "r-1"}\n'
    )
    with pytest.raises(PayloadError, match=r"holds 1 row\(s\) of batch 'b' already sent"):
        check_out(tmp_path, "b", known=False)
    check_out(tmp_path, "b")  # this ledger's own batch: resumed
    (tmp_path / "manifest.jsonl").write_text('{"batch": "b", "row": 0, "request_id": null}\n')
    check_out(tmp_path, "b", known=False)


def test_a_folder_that_cannot_be_written_is_refused(tmp_path: Path) -> None:
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    with pytest.raises(PayloadError, match=r"cannot write into .*give out= a folder you can write"):
        check_out(blocker / "out", "b", known=False)  # a new batch: another folder will do
    check_out(tmp_path / "new" / "out", "b")  # made on the way
    assert (tmp_path / "new" / "out").is_dir()


def test_a_folder_holding_another_batch_is_refused(tmp_path: Path) -> None:
    (tmp_path / "manifest.jsonl").write_text('{"batch": "older", "row": 0}\n')
    with pytest.raises(PayloadError, match="holds the files of batch 'older'"):
        check_out(tmp_path, "newer")
    check_out(tmp_path, "older")  # its own folder: resumed


def test_a_file_whose_sidecar_a_crash_cut_short_is_taken_back_when_its_bytes_match(
    tmp_path: Path,
) -> None:
    """A process killed between a sound's file and its provenance sidecar: the resumed
    row writes the same bytes again under its own name (no ``~2``), sidecar and all; a
    stranger's file of other bytes under the name is still never touched."""
    sound = outputs(("audio/mpeg", b"ID3 the same sound"))
    (first,) = write(tmp_path, sound)
    Path(f"{first}.json").unlink()  # killed before the sidecar was written
    (tmp_path / f".{first.name}.json.0123456789ab.part").write_bytes(b"")  # its beginning
    assert read_provenance(first) is None
    (again,) = write(tmp_path, sound)
    assert again == first and read_provenance(again)["request_id"] == "r-7"
    assert sorted(p.name for p in tmp_path.iterdir()) == [first.name, f"{first.name}.json"]
    Path(f"{first}.json").unlink()
    (other,) = write(tmp_path, outputs(("audio/mpeg", b"ID3 another sound")))
    assert other.name == "00007-a-fox-3~2.mp3" and first.read_bytes() == b"ID3 the same sound"


def test_a_stored_batchs_folder_that_cannot_be_written_is_to_be_made_writable_not_changed(
    tmp_path: Path,
) -> None:
    """A stored batch writes only into its own folder: refused there, it was told to give
    out= a folder it can write, which the next run refused as not its folder (and "another
    id" would create and bill every row again). It is told to make the folder writable and
    run the batch again (review-20 fault 5); a new batch may still choose another."""
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    with pytest.raises(PayloadError) as refused:
        check_out(blocker / "out", "b", known=True)
    said = str(refused.value)
    assert f"batch 'b' writes its files into {blocker / 'out'}" in said, said
    assert "make it writable (or free space there) and run the batch again" in said
    assert "another folder" not in said and "a folder you can write" not in said
