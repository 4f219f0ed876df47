"""Short, small, silent previews of saved videos, for faces that outlive the kernel.

A saved notebook, a contact sheet or an exported page must still *play* a video
once the kernel, the simulator's port and the gateway's signed URL are gone, and
must not weigh what the video weighs. A preview is the video's first seconds,
scaled down, at a low frame rate, re-encoded as H.264 in MP4 (it plays in every
browser) with no sound, tried on a ladder of smaller settings until it fits in
``max_bytes``. It is made once from the downloaded file and cached beside it as
``<name>.preview<max_bytes>.mp4``; a video that gives none is remembered by an empty
``<name>.preview<max_bytes>.none``. Decoding is bounded in frames and in time, whatever
the video's timestamps say. docs/decisions.md#video-previews.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from .._files import is_fresh, write_atomically

__all__ = ["PREVIEW_BUDGET", "Rung", "preview", "preview_bytes"]

#: Bytes one video's preview may weigh in a saved notebook or an export.
PREVIEW_BUDGET = 300_000
#: A source larger than this (pixels per frame) is not decoded for a preview.
MAX_SOURCE_PIXELS = 4096 * 4096
#: The fastest source a rung decodes its seconds of: a rung decodes at most
#: ``seconds x MAX_SOURCE_FPS`` frames, so a video whose timestamps barely advance
#: (10 us a frame never reach 6 s) is not decoded whole.
MAX_SOURCE_FPS = 240
#: Seconds of wall time one video's preview may take, all rungs together.
PREVIEW_SECONDS = 20.0


@dataclass(frozen=True)
class Rung:
    """One try: the preview's longer side, frames a second, seconds kept, x264 CRF."""

    side: int
    fps: int
    seconds: float
    crf: int


#: From the best preview to the smallest; the first that fits the budget wins.
LADDER = (
    Rung(320, 8, 6.0, 30),
    Rung(240, 6, 5.0, 34),
    Rung(160, 5, 4.0, 38),
    Rung(120, 4, 3.0, 44),
)


def _size(width: int, height: int, side: int) -> tuple[int, int]:
    """Fit ``width`` × ``height`` in ``side`` (never enlarged), both even (yuv420p)."""
    scale = min(1.0, side / max(width, height))
    return max(2, round(width * scale / 2) * 2), max(2, round(height * scale / 2) * 2)


class _NotNow(Exception):
    """A rung failed for this machine's sake (a full disk, no memory, its time budget
    run out mid-rung on a busy machine), not the source's: no preview now, and none
    remembered (the next display tries again)."""


def _encode(
    source: Path, rung: Rung, clock: Callable[[], float], until: float
) -> bytes | None:
    """The preview at one rung, or ``None`` (the source gives none). Written through a
    temporary file beside the source: ``faststart`` (the index first, so a page plays
    before it has every byte) rewrites the file, which an in-memory buffer cannot do.
    Decoding stops at the rung's seconds, at ``seconds x MAX_SOURCE_FPS`` frames, or
    once ``clock()`` passes ``until``: then :class:`_NotNow`, since the frames made by
    then are a cut clip, not the rung's preview (kept, it was shown for good)."""
    import av  # noqa: PLC0415 - PyAV loads only when a video is previewed

    try:
        with (
            tempfile.NamedTemporaryFile(
                prefix=".preview-", suffix=".mp4", dir=source.parent
            ) as scratch,
            av.open(str(source)) as container,
        ):
            if not container.streams.video:
                return None
            stream = container.streams.video[0]
            width, height = stream.codec_context.width, stream.codec_context.height
            if not width or not height or width * height > MAX_SOURCE_PIXELS:
                return None
            size = _size(width, height, rung.side)
            with av.open(
                scratch.name, "w", format="mp4", options={"movflags": "+faststart"}
            ) as out:
                video = out.add_stream("libx264", rate=rung.fps)
                video.width, video.height = size
                video.pix_fmt = "yuv420p"
                video.options = {"crf": str(rung.crf), "preset": "medium", "tune": "fastdecode"}
                video.codec_context.time_base = Fraction(1, rung.fps)
                kept = 0
                most = int(rung.seconds * MAX_SOURCE_FPS)
                for decoded, frame in enumerate(container.decode(stream), 1):
                    at = float(frame.time) if frame.time is not None else kept / rung.fps
                    if at > rung.seconds or decoded > most:
                        break
                    if clock() > until:
                        raise _NotNow("out of time")
                    if at + 1e-6 < kept / rung.fps:  # thin to the preview's frame rate
                        continue
                    small = frame.reformat(width=size[0], height=size[1], format="yuv420p")
                    small.pts = kept
                    small.time_base = Fraction(1, rung.fps)
                    kept += 1
                    for packet in video.encode(small):
                        out.mux(packet)
                for packet in video.encode():
                    out.mux(packet)
                if kept < 2:  # a still picture (ffmpeg reads a PNG as one frame)
                    return None
            return Path(scratch.name).read_bytes()
    except (av.error.FFmpegError, ValueError, IndexError):  # the source's own fault
        return None
    except (OSError, MemoryError) as exc:  # this machine's (a full disk): not the source's
        raise _NotNow from exc


def preview_bytes(
    path: str | os.PathLike[str],
    max_bytes: int = PREVIEW_BUDGET,
    *,
    clock: Callable[[], float] = time.monotonic,
) -> bytes | None:
    """The preview of a saved video as MP4 bytes, at most ``max_bytes``; ``None``
    when the file is not a video PyAV can read or no rung of the ladder fits."""
    cached = preview(path, max_bytes, clock=clock)
    return cached.read_bytes() if cached is not None else None


def preview(
    path: str | os.PathLike[str],
    max_bytes: int = PREVIEW_BUDGET,
    *,
    clock: Callable[[], float] = time.monotonic,
) -> Path | None:
    """The preview file beside a saved video (made on first use, reused while the
    video is older), or ``None`` (see :func:`preview_bytes`). Written atomically,
    so two kernels previewing one video never leave half a file. A video that gave
    none is not decoded again while it is unchanged (an empty ``.none`` beside it):
    every display of its face asked again. The ladder stops at a rung the source
    gives nothing at (a smaller one would not either) and after :data:`PREVIEW_SECONDS`
    on ``clock``; a ladder cut by that budget (mid-rung too: its clip is cut short) or
    by a fault of this machine's (a full disk, no memory) gives None and writes
    nothing: the next display tries again."""
    source = Path(path)
    target = source.with_name(f"{source.name}.preview{max_bytes}.mp4")
    if is_fresh(target, source):
        return target
    none = source.with_name(f"{source.name}.preview{max_bytes}.none")
    if is_fresh(none, source):
        return None
    until = clock() + PREVIEW_SECONDS
    made = None
    out_of_time = False
    for rung in LADDER:
        try:
            data = _encode(source, rung, clock, until)
        except _NotNow:
            return None
        if data is not None and len(data) <= max_bytes:
            made = data
            break
        out_of_time = clock() > until  # read once: what stops the ladder decides below
        if data is None or out_of_time:
            break
    try:
        if made is not None:
            return write_atomically(target, made)
        if source.is_file() and not out_of_time:  # out of time: tried at the next display
            write_atomically(none, b"")
    except OSError:
        pass
    return None
