"""Video previews: small, short, playable, cached, and None for what is not a video."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import av
import pytest
from jobs.video_samples import busy_mp4
from PIL import Image

from genwidgets.jobs import previews
from genwidgets.jobs.previews import (
    LADDER,
    MAX_SOURCE_FPS,
    PREVIEW_BUDGET,
    PREVIEW_SECONDS,
    preview,
    preview_bytes,
)


def _video(path: Path, *, width: int = 640, height: int = 360, seconds: int = 8) -> Path:
    """A busy test video (random blocks every frame, so it does not compress to nothing)."""
    path.write_bytes(busy_mp4(seconds, width, height))
    return path


def _probe(data_path: Path) -> tuple[int, int, int, float]:
    with av.open(str(data_path)) as container:
        stream = container.streams.video[0]
        frames = sum(1 for _ in container.decode(stream))
        assert not container.streams.audio
        return (
            stream.codec_context.width,
            stream.codec_context.height,
            frames,
            float(container.duration or 0) / 1e6,
        )


@pytest.mark.slow
def test_a_preview_is_short_small_scaled_down_and_decodes(tmp_path: Path) -> None:
    source = _video(tmp_path / "0.mp4")
    made = preview(source)
    assert made is not None and made.parent == source.parent
    assert made.stat().st_size <= PREVIEW_BUDGET < source.stat().st_size
    width, height, frames, seconds = _probe(made)
    assert max(width, height) <= LADDER[0].side and width % 2 == 0 and height % 2 == 0
    assert abs(width / height - 640 / 360) < 0.05
    assert 0 < frames <= LADDER[0].fps * (LADDER[0].seconds + 1)
    assert seconds <= LADDER[0].seconds + 1


@pytest.mark.slow
def test_a_tight_budget_walks_down_the_ladder_or_gives_none(tmp_path: Path) -> None:
    # three seconds: every rung encodes at most the source's frames, and walking the
    # ladder is the subject here, not how much of the video a rung keeps
    source = _video(tmp_path / "0.mp4", seconds=3)
    roomy = preview_bytes(source)
    assert roomy is not None
    tight = preview_bytes(source, max_bytes=len(roomy) - 1)
    assert tight is not None and len(tight) < len(roomy)
    assert preview_bytes(source, max_bytes=100) is None


@pytest.mark.slow
def test_a_preview_is_made_once_and_made_again_for_a_newer_video(tmp_path: Path) -> None:
    source = _video(tmp_path / "0.mp4", seconds=2)
    first = preview(source)
    assert first is not None
    stamp = first.stat().st_mtime_ns
    assert preview(source) == first and first.stat().st_mtime_ns == stamp
    _video(source, seconds=3)
    again = preview(source)
    assert again == first and again.stat().st_mtime_ns >= stamp
    assert not list(tmp_path.glob(".preview-*"))  # no scratch left behind


def test_what_is_not_a_video_has_no_preview(tmp_path: Path) -> None:
    picture = tmp_path / "0.png"
    Image.new("RGB", (64, 64), "red").save(picture)
    junk = tmp_path / "1.mp4"
    junk.write_bytes(b"\x00\x00\x00\x18ftypmp42" + b"garbage" * 100)
    assert preview(picture) is None
    assert preview(junk) is None
    assert preview(tmp_path / "missing.mp4") is None


def _tiny_steps(path: Path, frames: int) -> Path:
    """A video whose timestamps advance 10 us a frame: it never reaches a rung's seconds."""
    with av.open(str(path), "w", format="mp4") as out:
        stream = out.add_stream("libx264", rate=25)
        stream.width, stream.height, stream.pix_fmt = 64, 64, "yuv420p"
        stream.options = {"preset": "ultrafast"}
        stream.codec_context.time_base = Fraction(1, 100_000)
        picture = Image.new("RGB", (64, 64), "teal")
        for index in range(frames):
            frame = av.VideoFrame.from_image(picture)
            frame.pts, frame.time_base = index, Fraction(1, 100_000)
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return path


def test_a_video_whose_timestamps_barely_advance_is_decoded_a_bounded_amount_once(
    tmp_path: Path,
) -> None:
    """A rung stopped decoding only at its seconds: a video whose timestamps advance
    10 us a frame was decoded whole, once per rung, to give no preview, and again at
    every display of its face (a 2 GiB one: hours). A rung decodes at most its seconds
    at ``MAX_SOURCE_FPS``, the ladder stops at a rung the source gives nothing at, and
    a video that gave none is remembered while it is unchanged."""
    most = int(LADDER[0].seconds * MAX_SOURCE_FPS)
    source = _tiny_steps(tmp_path / "0.mp4", frames=most + 300)
    asked = [0]

    def clock() -> float:  # asked once a frame decoded: counts them
        asked[0] += 1
        return 0.0

    assert preview(source, clock=clock) is None
    first = asked[0]
    assert 0 < first <= most + 5  # one rung, its frames capped (not 4 x the whole video)
    assert preview(source, clock=clock) is None and preview_bytes(source, clock=clock) is None
    assert asked[0] == first  # remembered: not decoded again
    assert not list(tmp_path.glob(".preview-*"))


def test_a_preview_stops_at_its_time_budget(tmp_path: Path) -> None:
    """However its frames come, a preview takes at most ``PREVIEW_SECONDS`` of wall time."""
    source = _video(tmp_path / "0.mp4", width=64, height=64, seconds=2)
    times = iter([0.0])

    def clock() -> float:  # the start, then long past the budget
        return next(times, 10 * PREVIEW_SECONDS)

    assert preview(source, clock=clock) is None


def test_a_preview_that_ran_out_of_time_or_met_a_disk_fault_is_tried_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review 27, fault 4: a ladder stopped by its wall-clock budget (a busy machine), or
    a scratch file on a full disk, was remembered as "this video gives none" (an empty
    ``.none``): no display of its face tried again while the video was unchanged. Only
    the source's own fault is remembered; the next display makes the preview."""
    source = _video(tmp_path / "0.mp4", width=64, height=48, seconds=2)
    readings = iter(range(0, 10_000, 30))  # every reading 30 s past the one before

    def busy() -> float:
        return float(next(readings))

    assert preview(source, clock=busy) is None

    def disk_full(*_args: object, **_kw: object) -> object:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(previews.tempfile, "NamedTemporaryFile", disk_full)
    assert preview(source) is None
    monkeypatch.undo()
    made = preview(source)
    assert made is not None and made.stat().st_size > 0
