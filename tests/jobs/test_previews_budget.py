"""A video preview cut by its time budget mid-rung is not kept (review 28, fault 5)."""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path

import av
from jobs.video_samples import busy_mp4

from genwidgets.jobs.previews import PREVIEW_SECONDS, preview, preview_bytes


def _frames(path: Path) -> int:
    with av.open(str(path)) as container:
        return sum(1 for _ in container.decode(container.streams.video[0]))


def _kept_beside(source: Path) -> list[str]:
    return sorted(p.name for p in source.parent.glob(f"{source.name}.preview*"))


def test_a_preview_cut_by_its_time_budget_mid_rung_is_not_kept_and_made_whole_next(
    tmp_path: Path,
) -> None:
    """Review 28, fault 5: when the clock ran out inside a rung's decoding after a few
    frames, the short clip was the rung's preview, written as the video's preview and
    reused by every later display while the video was unchanged (7 frames of 48). A cut
    preview is not written (nor remembered as none): the next display makes it whole."""
    source = tmp_path / "clip.mp4"
    source.write_bytes(busy_mp4(2, 64, 48))
    readings = itertools.count(0.0, PREVIEW_SECONDS / 10)  # a busy machine: a tenth a read

    def busy() -> float:
        return next(readings)

    assert preview(source, clock=busy) is None  # cut: none this time
    assert _kept_beside(source) == []
    assert preview_bytes(source, clock=busy) is None and _kept_beside(source) == []
    assert not list(tmp_path.glob(".preview-*"))  # no scratch file left either

    whole_dir = tmp_path / "idle"
    whole_dir.mkdir()
    whole = preview(shutil.copy(source, whole_dir / "clip.mp4"))
    assert whole is not None
    made = preview(source)  # the next display, the machine idle now
    assert made is not None and _frames(made) == _frames(whole) > 2
