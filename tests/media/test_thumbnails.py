"""Thumbnails of saved outputs: small, cached beside the file, remade when it changes."""

from __future__ import annotations

import io
import os
from pathlib import Path

import av
import pytest
from PIL import Image

from genwidgets.media import thumbnails
from genwidgets.media.thumbnails import data_url, thumbnail, thumbnail_bytes


def _png(path: Path, size: tuple[int, int], mode: str = "RGB") -> Path:
    Image.new(mode, size, (200, 40, 40, 128) if mode == "RGBA" else (200, 40, 40)).save(path)
    return path


def test_a_large_image_gets_a_jpeg_of_at_most_256_px_beside_it(tmp_path: Path) -> None:
    source = _png(tmp_path / "0.png", (1440, 720))
    thumb = thumbnail(source)
    assert thumb is not None and thumb.parent == tmp_path
    assert thumb.name == "0.png.thumb256.jpg"
    with Image.open(thumb) as image:
        assert image.format == "JPEG" and image.size == (256, 128)
    assert thumb.stat().st_size < source.stat().st_size
    assert not list(tmp_path.glob("*.part"))


def test_the_cached_thumbnail_is_reused_and_remade_when_the_output_is_newer(
    tmp_path: Path,
) -> None:
    source = _png(tmp_path / "0.png", (600, 600))
    first = thumbnail(source)
    assert first is not None
    os.utime(first, (1_000_000_000, 2_000_000_000))  # the thumbnail looks newer than the source
    os.utime(source, (1_000_000_000, 1_500_000_000))
    before = first.read_bytes()
    first.write_bytes(b"kept")  # a reused thumbnail is not rewritten
    os.utime(first, (1_000_000_000, 2_000_000_000))
    assert thumbnail(source) == first and first.read_bytes() == b"kept"
    os.utime(source, (1_000_000_000, 2_500_000_000))  # the output changed since
    again = thumbnail(source)
    assert again == first and again.read_bytes() != b"kept" and again.read_bytes()[:2] == before[:2]


def test_transparency_keeps_png_and_small_images_are_not_enlarged(tmp_path: Path) -> None:
    thumb = thumbnail(_png(tmp_path / "a.png", (100, 50), "RGBA"))
    assert thumb is not None and thumb.suffix == ".png"
    with Image.open(thumb) as image:
        assert image.size == (100, 50) and image.mode == "RGBA"


def test_a_video_gets_its_first_frame(tmp_path: Path) -> None:
    path = tmp_path / "0.mp4"
    with av.open(str(path), "w") as container:
        stream = container.add_stream("libx264", rate=8)
        stream.width, stream.height, stream.pix_fmt = 640, 360, "yuv420p"
        for _ in range(4):
            frame = av.VideoFrame.from_image(Image.new("RGB", (640, 360), (10, 200, 10)))
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    thumb = thumbnail(path)
    assert thumb is not None
    with Image.open(thumb) as image:
        assert image.size == (256, 144)
        red, green, blue = image.convert("RGB").getpixel((128, 72))
        assert green > 150 and red < 80 and blue < 80


@pytest.mark.parametrize("content", [b"not a picture", b"ID3\x03\x00\x00\x00"])
def test_what_is_not_a_picture_has_no_thumbnail(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "0.bin"
    path.write_bytes(content)
    assert thumbnail(path) is None
    assert thumbnail_bytes(content) is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["0.bin"]


def test_inline_bytes_and_data_urls(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    Image.new("RGB", (1000, 500)).save(buffer, format="PNG")
    made = thumbnail_bytes(buffer.getvalue())
    assert made is not None
    data, mime = made
    assert mime == "image/jpeg"
    with Image.open(io.BytesIO(data)) as image:
        assert image.size == (256, 128)
    thumb = thumbnail(_png(tmp_path / "0.png", (300, 300)))
    assert thumb is not None
    assert data_url(thumb).startswith("data:image/jpeg;base64,/9j/")


@pytest.mark.slow
def test_a_pixel_bomb_gets_no_thumbnail_and_a_note_never_a_decoding(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 29 point 5: 20000 x 10000 pixels in a few KB (Pillow's own cap raises on it)."""
    bomb = tmp_path / "0.png"
    Image.new("1", (20000, 10000)).save(bomb)
    assert bomb.stat().st_size < 200_000
    with caplog.at_level("WARNING", logger="genwidgets"):
        assert thumbnail(bomb) is None
        assert thumbnail_bytes(bomb.read_bytes()) is None
    notes = [r.getMessage() for r in caplog.records]
    assert len(notes) == 2 and all("no thumbnail of" in n for n in notes), notes
    assert str(bomb) in notes[0] and "an image held in memory" in notes[1]
    assert not list(tmp_path.glob("*.thumb*"))


def test_a_picture_over_the_cap_below_pillows_is_skipped_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(thumbnails, "MAX_PIXELS", 1000 * 1000)
    source = _png(tmp_path / "0.png", (1200, 1000))
    with caplog.at_level("WARNING", logger="genwidgets"):
        assert thumbnail(source) is None
    assert "1200 × 1000 pixels" in caplog.text


def test_a_large_jpeg_is_decoded_at_a_reduced_scale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(thumbnails, "MAX_PIXELS", 1000 * 1000)
    source = tmp_path / "0.jpg"
    Image.new("RGB", (3200, 1600), (10, 120, 200)).save(source, quality=60)
    thumb = thumbnail(source)  # 5 MP over the cap, but drafted at 1/8: 400 x 200
    assert thumb is not None
    with Image.open(thumb) as image:
        assert image.size == (256, 128)
