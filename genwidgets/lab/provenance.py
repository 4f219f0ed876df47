"""How a batch's file was made, written inside it (a PNG's ``iTXt`` chunk, an MP4's or
M4A's ``comment`` tag) or beside it (``<name>.json``), and read back by
:func:`read_provenance`: docs/decisions.md#batch-files.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import struct
import zlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from .._config import redact
from .._files import write_atomically
from ..jobs.ledger import scrub_payload

__all__ = ["KEY", "provenance", "read_provenance", "sidecar_of", "write_with_provenance"]

#: the PNG text chunk's keyword, and the top-level key of every provenance record
KEY = "genwidgets"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
#: the most text read from one PNG chunk or sidecar (a grid's description of a thousand
#: cells is about a megabyte): a larger one is not ours, and is not read
MAX_TEXT_BYTES = 16 * 2**20
#: content types remuxed with a ``comment`` tag, and the container PyAV writes them as
_CONTAINERS = {
    "video/mp4": "mp4",
    "audio/mp4": "mp4",
    "audio/x-m4a": "mp4",
    "video/quicktime": "mov",
}


def provenance(
    *, batch: str, row: int, endpoint: str, request_id: str | None, payload: Mapping[str, Any]
) -> str:
    """The record as JSON text: scrubbed as the ledger scrubs, every text redacted."""
    record = {
        KEY: {
            "batch": batch,
            "row": row,
            "endpoint": endpoint,
            "request_id": request_id,
            "payload": scrub_payload(payload),
        }
    }
    return redact(json.dumps(record, ensure_ascii=False, default=str))


def sidecar_of(path: Path) -> Path:
    return path.with_name(path.name + ".json")


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _png_chunks(data: bytes) -> Iterator[tuple[int, bytes, bytes]]:
    """Each chunk of a PNG after its signature: (where it starts, its type, its data)."""
    position = len(PNG_SIGNATURE)
    while position + 8 <= len(data):
        (length,) = struct.unpack(">I", data[position : position + 4])
        start = position + 8
        yield position, data[position + 4 : start], data[start : start + length]
        position += 12 + length


def _png_with_text(data: bytes, text: str) -> bytes | None:
    """``data`` with an iTXt chunk before IEND; None when it is not a readable PNG."""
    if not data.startswith(PNG_SIGNATURE):
        return None
    for position, kind, _body in _png_chunks(data):
        if kind == b"IEND":
            # keyword, then 0 ends it, not compressed, method 0, no language, no translation
            body = KEY.encode("latin-1") + b"\x00" * 5 + text.encode()
            return data[:position] + _png_chunk(b"iTXt", body) + data[position:]
    return None


def _remux(source: Path | bytes, target: Path, container: str, text: str) -> bool:
    """Copy ``source``'s streams (a file, or its bytes) into ``target`` with a ``comment``
    tag; False when PyAV cannot (the caller writes a sidecar instead)."""
    readable = io.BytesIO(source) if isinstance(source, bytes) else str(source)
    try:
        import av  # noqa: PLC0415 - PyAV loads FFmpeg's libraries; only MP4/M4A files need it

        with av.open(readable) as inp, av.open(str(target), "w", format=container) as out:
            out.metadata["comment"] = text
            streams = {s.index: out.add_stream_from_template(s) for s in inp.streams}
            for packet in inp.demux():
                if packet.dts is None:
                    continue
                packet.stream = streams[packet.stream.index]
                out.mux(packet)
    except Exception:  # an odd file: the sidecar says the same
        target.unlink(missing_ok=True)
        return False
    return True


def write_with_provenance(source: Path | bytes, target: Path, content_type: str, text: str) -> bool:
    """Write the output (a file or its bytes) to ``target`` with ``text`` inside it;
    True when it went inside, False when the caller is to write a sidecar. ``target`` is
    the caller's temporary file (moved into place when whole), overwritten here."""
    mime = content_type.split(";")[0].strip().lower()
    if mime == "image/png":
        data = source if isinstance(source, bytes) else source.read_bytes()
        tagged = _png_with_text(data, text)
        if tagged is not None:
            target.write_bytes(tagged)
            return True
    elif mime in _CONTAINERS and _remux(source, target, _CONTAINERS[mime], text):
        return True
    if isinstance(source, bytes):
        target.write_bytes(source)
    else:
        shutil.copyfile(source, target)
    return False


def write_sidecar(target: Path, text: str) -> Path:
    """The sidecar of ``target``, written atomically."""
    return write_atomically(sidecar_of(target), text.encode("utf-8"))


def read_provenance(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The provenance record of a batch's file: from its PNG chunk, its container's
    comment, or its sidecar; None when it carries none. Nothing is read whole: a row's
    name may be held by any file, of any size."""
    target = Path(path)
    sidecar = sidecar_of(target)
    if sidecar.exists():
        with sidecar.open("rb") as file:
            data = file.read(MAX_TEXT_BYTES + 1)
        return _record(data.decode("utf-8", "replace")) if len(data) <= MAX_TEXT_BYTES else None
    if target.is_file():
        with target.open("rb") as file:
            if file.read(len(PNG_SIGNATURE)) == PNG_SIGNATURE:
                text = png_text(file, KEY)
                return _record(text) if text is not None else None
    try:
        import av  # noqa: PLC0415 - PyAV loads FFmpeg's libraries; only MP4/M4A files need it

        with av.open(str(target)) as container:
            return _record(container.metadata.get("comment", ""))
    except Exception:
        return None


def png_text(source: bytes | IO[bytes], key: str) -> str | None:
    """The text of a PNG's iTXt chunk named ``key`` (compressed or not: a grid's sheet
    compresses its description), or None. Read chunk by chunk from the signature (or
    from just past it): the pixels are skipped, and no text past
    :data:`MAX_TEXT_BYTES` is read or inflated."""
    stream = io.BytesIO(source) if isinstance(source, bytes) else source
    if stream.tell() == 0 and stream.read(len(PNG_SIGNATURE)) != PNG_SIGNATURE:
        return None
    head = key.encode("latin-1") + b"\x00"
    while len(header := stream.read(8)) == 8 and header[4:].isalpha():
        (length,) = struct.unpack(">I", header[:4])
        if header[4:] != b"iTXt" or length > MAX_TEXT_BYTES:
            stream.seek(length + 4, io.SEEK_CUR)  # its data and its CRC
            continue
        body = stream.read(length)
        stream.seek(4, io.SEEK_CUR)
        if body.startswith(head) and body.count(b"\x00", len(head) + 2) >= 2:
            _language, _translated_key, text = body[len(head) + 2 :].split(b"\x00", 2)
            if body[len(head)] == 1:  # compressed: inflated up to the cap, never past it
                inflater = zlib.decompressobj()
                try:
                    text = inflater.decompress(text, MAX_TEXT_BYTES)
                except zlib.error:
                    return None
                if inflater.unconsumed_tail:
                    return None
            return text.decode("utf-8", "replace")
    return None


def _record(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    found = value.get(KEY) if isinstance(value, dict) else None
    return found if isinstance(found, dict) else None
