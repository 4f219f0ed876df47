"""Whole-or-nothing file writes."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from genwidgets._files import AtomicFile, create_beside, is_fresh, write_atomically


def test_a_file_is_written_whole_with_the_users_umask(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        target = write_atomically(tmp_path / "out.png", b"\x89PNG data")
    finally:
        os.umask(old)
    assert target.read_bytes() == b"\x89PNG data"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["out.png"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "out.png"
    target.write_bytes(b"old")

    def refuse(src: object, dst: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="disk full"):
        write_atomically(target, b"new")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.png"]


def test_missing_folders_are_made_only_when_asked(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "out.png"
    with pytest.raises(FileNotFoundError):
        write_atomically(target, b"data")
    assert not (tmp_path / "a").exists()
    assert write_atomically(target, b"data", parents=True).read_bytes() == b"data"
    assert [p.name for p in target.parent.iterdir()] == ["out.png"]


def test_temporary_names_beside_a_target_never_collide(tmp_path: Path) -> None:
    made = {create_beside(tmp_path / "x.mp4") for _ in range(50)}
    assert len(made) == 50
    assert all(p.parent == tmp_path and p.name.startswith(".x.mp4.") for p in made)


def test_a_derived_file_is_fresh_only_while_it_is_not_older_than_its_source(
    tmp_path: Path,
) -> None:
    source, derived = tmp_path / "0.mp4", tmp_path / "0.mp4.preview.mp4"
    assert not is_fresh(derived, source)
    source.write_bytes(b"v1")
    derived.write_bytes(b"p1")
    os.utime(source, (100, 100))
    os.utime(derived, (200, 200))
    assert is_fresh(derived, source)
    os.utime(source, (300, 300))
    assert not is_fresh(derived, source)


@pytest.mark.parametrize("durable", [False, True])
def test_a_file_written_in_pieces_appears_only_when_committed(
    tmp_path: Path, durable: bool
) -> None:
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")
    with pytest.raises(ValueError), AtomicFile(target, durable=durable) as out:
        out.write(b"half of")
        raise ValueError("refused midway")  # a size check, a cut-short body
    assert target.read_bytes() == b"old" and sorted(tmp_path.iterdir()) == [target]
    with AtomicFile(target, durable=durable) as out:
        out.write(b"new ")
        out.write(b"whole")
        assert target.read_bytes() == b"old"  # not yet
        out.commit()
    assert target.read_bytes() == b"new whole" and sorted(tmp_path.iterdir()) == [target]
