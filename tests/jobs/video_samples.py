"""Test videos made here (imported explicitly by the tests that need one)."""

from __future__ import annotations

import io
import random
from fractions import Fraction

import av
from PIL import Image


def busy_mp4(seconds: int = 8, width: int = 640, height: int = 360, fps: int = 12) -> bytes:
    """An H.264 MP4 of random blocks that change every frame, so it does not compress
    to nothing (a test of sizes needs a video that weighs what real ones do)."""
    rng = random.Random(7)
    buffer = io.BytesIO()
    with av.open(buffer, "w", format="mp4") as out:
        stream = out.add_stream("libx264", rate=fps)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        for index in range(fps * seconds):
            blocks = Image.new("RGB", (max(1, width // 8), max(1, height // 8)))
            blocks.putdata(
                [
                    tuple(rng.randrange(256) for _ in range(3))
                    for _ in range(blocks.width * blocks.height)
                ]
            )
            frame = av.VideoFrame.from_image(blocks.resize((width, height), Image.NEAREST))
            frame.pts, frame.time_base = index, Fraction(1, fps)
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return buffer.getvalue()
