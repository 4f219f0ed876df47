"""Test videos made here (imported explicitly by the tests that need one)."""

from __future__ import annotations

import functools
import io
import random
from fractions import Fraction

import av
from PIL import Image


@functools.cache
def busy_mp4(seconds: int = 8, width: int = 640, height: int = 360, fps: int = 12) -> bytes:
    """An H.264 MP4 of random blocks that change every frame, so it does not compress
    to nothing (a test of sizes needs a video that weighs what real ones do). Made once
    a session for each shape (the same seed makes the same bytes), encoded with x264's
    fastest preset: the sample's own encoding is not what a test is about."""
    rng = random.Random(7)
    buffer = io.BytesIO()
    blocks_size = (max(1, width // 8), max(1, height // 8))
    with av.open(buffer, "w", format="mp4") as out:
        stream = out.add_stream("libx264", rate=fps)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.options = {"preset": "ultrafast"}
        for index in range(fps * seconds):
            blocks = Image.frombytes(
                "RGB", blocks_size, rng.randbytes(3 * blocks_size[0] * blocks_size[1])
            )
            frame = av.VideoFrame.from_image(blocks.resize((width, height), Image.NEAREST))
            frame.pts, frame.time_base = index, Fraction(1, fps)
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return buffer.getvalue()
