"""How a batch's file was made, inside it: a PNG text chunk (pixels untouched), an MP4's
comment tag (streams copied), a sidecar for anything else; never the key."""

from __future__ import annotations

import io
import struct
import tracemalloc
import zlib
from pathlib import Path

import av
import numpy as np
import pytest
from PIL import Image

from genwidgets._config import Secret
from genwidgets.lab.provenance import (
    KEY as KEY_WORD,
)
from genwidgets.lab.provenance import (
    MAX_TEXT_BYTES,
    provenance,
    read_provenance,
    sidecar_of,
    write_sidecar,
    write_with_provenance,
)

KEY = "sk-live-0123456789abcdef"


def record(**payload: object) -> str:
    return provenance(
        batch="b1", row=3, endpoint="genW2.5-t2i-preview", request_id="r-1", payload=payload
    )


def png_bytes() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (16, 8), (200, 30, 40)).save(buffer, format="PNG")
    return buffer.getvalue()


def mp4_file(path: Path) -> Path:
    with av.open(str(path), "w", format="mp4") as out:
        stream = out.add_stream("mpeg4", rate=10)
        stream.width, stream.height, stream.pix_fmt = 32, 32, "yuv420p"
        for _ in range(5):
            frame = av.VideoFrame.from_ndarray(np.zeros((32, 32, 3), np.uint8), format="rgb24")
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return path


def test_a_png_gets_a_text_chunk_and_keeps_its_pixels(tmp_path: Path) -> None:
    source = png_bytes()
    target = tmp_path / "a.png"
    assert write_with_provenance(source, target, "image/png", record(prompt="a fox"))
    assert read_provenance(target) == {
        "batch": "b1",
        "row": 3,
        "endpoint": "genW2.5-t2i-preview",
        "request_id": "r-1",
        "payload": {"prompt": "a fox"},
    }
    with Image.open(target) as tagged, Image.open(io.BytesIO(source)) as plain:
        assert tagged.tobytes() == plain.tobytes()
        assert "genwidgets" in tagged.text  # Pillow reads the chunk as a PNG does
    assert not sidecar_of(target).exists()


def m4a_file(path: Path) -> Path:
    with av.open(str(path), "w", format="mp4") as out:
        stream = out.add_stream("aac", rate=22050)
        stream.layout = "mono"
        for i in range(5):
            frame = av.AudioFrame.from_ndarray(
                np.zeros((1, 1024), np.float32), format="fltp", layout="mono"
            )
            frame.sample_rate, frame.pts = 22050, i * 1024
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return path


def test_an_m4a_gets_its_comment_tag_too(tmp_path: Path) -> None:
    source = m4a_file(tmp_path / "in.m4a")
    target = tmp_path / "out.m4a"
    assert write_with_provenance(source.read_bytes(), target, "audio/mp4", record(text="hi"))
    assert read_provenance(target)["payload"] == {"text": "hi"}
    assert not list(tmp_path.glob("*.source"))  # the bytes' temporary copy is gone


def test_an_mp4_gets_its_comment_tag_with_the_streams_copied(tmp_path: Path) -> None:
    source = mp4_file(tmp_path / "in.mp4")
    target = tmp_path / "out.mp4"
    assert write_with_provenance(source, target, "video/mp4", record(prompt="a kite"))
    assert read_provenance(target)["payload"] == {"prompt": "a kite"}
    with av.open(str(source)) as a, av.open(str(target)) as b:
        assert [p.size for p in a.demux() if p.size] == [p.size for p in b.demux() if p.size]


@pytest.mark.parametrize(
    ("content_type", "data"),
    [
        ("audio/mpeg", b"ID3\x03fake mp3"),
        ("image/jpeg", b"\xff\xd8\xff fake"),
        ("video/mp4", b"broken"),
    ],
)
def test_other_files_and_unreadable_containers_get_a_sidecar(
    tmp_path: Path, content_type: str, data: bytes
) -> None:
    target = tmp_path / "clip.bin"
    inside = write_with_provenance(data, target, content_type, record(text="hi"))
    assert not inside and target.read_bytes() == data
    write_sidecar(target, record(text="hi"))
    assert read_provenance(target)["payload"] == {"text": "hi"}


def test_the_key_never_reaches_a_file(tmp_path: Path) -> None:
    """A client's key (known to the process) is scrubbed from the record, even when a
    payload carries it, as are credential-like keys and bearer tokens."""
    Secret(KEY)  # a client made with this key registers it
    text = record(prompt=f"echo {KEY}", api_key=KEY, headers={"Authorization": f"Bearer {KEY}"})
    target = tmp_path / "k.png"
    write_with_provenance(png_bytes(), target, "image/png", text)
    assert KEY.encode() not in target.read_bytes()
    assert KEY not in text


def _peak_while(action: object) -> tuple[object, int]:
    """What ``action()`` returns and the most memory Python allocated while it ran."""
    tracemalloc.start()
    try:
        result = action()  # type: ignore[operator]
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_large_file_holding_a_rows_name_is_never_read_whole(tmp_path: Path) -> None:
    """Naming a row reads the provenance of whatever holds its name: a 256 MiB file (sparse
    here) is looked into, not loaded; a PNG's pixels are skipped chunk by chunk."""
    other = tmp_path / "row-3.mp4"
    with other.open("wb") as file:
        file.truncate(256 * 2**20)
    found, peak = _peak_while(lambda: read_provenance(other))
    assert found is None and peak < 32 * 2**20
    tagged = tmp_path / "row-3.png"
    write_with_provenance(png_bytes(), tagged, "image/png", record(prompt="a fox"))
    data = tagged.read_bytes()
    with tagged.open("wb") as file:  # a 256 MiB chunk of pixels before the text chunk
        file.write(data[:33])
        file.write(struct.pack(">I", 256 * 2**20) + b"IDAT")
        file.seek(256 * 2**20 + 4, io.SEEK_CUR)
        file.write(data[33:])
    found, peak = _peak_while(lambda: read_provenance(tagged))
    assert found is not None and found["row"] == 3 and peak < 32 * 2**20


def test_a_compressed_text_chunk_is_inflated_only_up_to_its_cap(tmp_path: Path) -> None:
    head = KEY_WORD.encode() + b"\x00\x01\x00\x00\x00"
    bomb = zlib.compress(b"{" * 256 * 2**20, 9)  # 256 MiB from a quarter of a MiB
    chunk = struct.pack(">I", len(head + bomb)) + b"iTXt" + head + bomb + b"\x00" * 4
    data = png_bytes()
    path = tmp_path / "bomb.png"
    path.write_bytes(data[:33] + chunk + data[33:])
    found, peak = _peak_while(lambda: read_provenance(path))
    assert found is None and peak < 4 * MAX_TEXT_BYTES
    path.write_bytes(data[:33] + chunk[:20] + data[33:])  # a chunk cut short: not ours
    assert read_provenance(path) is None
