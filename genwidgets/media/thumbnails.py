"""Small pictures of saved outputs, made in the kernel and cached beside the file.

Grids and saved notebooks show many outputs at once, and a full output is heavy
(a 1440 px PNG weighs about 1 MB): a page of a hundred would load a hundred
of them. A thumbnail is at most ``max_side`` pixels on its long side, a JPEG (a
PNG when the picture has transparency), made once from the downloaded file (an
image, or a video's first frame) and kept beside it as
``<name>.thumb<max_side>.<ext>``; a later call reuses it unless the output is newer.

A picture of more than :data:`MAX_PIXELS` pixels is never decoded (a 20000 × 10000 PNG
weighs 190 KB and would take gigabytes): a JPEG is decoded at a reduced scale, anything
else gets no thumbnail, with a note in the log: docs/decisions.md#pixel-bombs.
"""

from __future__ import annotations

import base64
import io
import logging
import os
import struct
import warnings
from contextlib import ExitStack
from pathlib import Path
from typing import IO

from PIL import Image, UnidentifiedImageError

from .._files import is_fresh, write_atomically
from .files import canonical_format

__all__ = [
    "DEFAULT_SIDE",
    "MAX_PIXELS",
    "TooManyPixels",
    "data_url",
    "decoded",
    "first_frame",
    "thumbnail",
    "thumbnail_bytes",
]

DEFAULT_SIDE = 256
#: The most pixels decoded for one thumbnail (an 8K frame has 33 million).
MAX_PIXELS = 40_000_000
_JPEG_QUALITY = 82
log = logging.getLogger("genwidgets")


class TooManyPixels(Exception):
    """A picture (or frame) over :data:`MAX_PIXELS`: no thumbnail, never decoded. Its
    ``size`` in words, its sides and its format as a field names it (an MPO is jpeg);
    past Pillow's own cap the sides come from the header, unchecked by Pillow."""

    def __init__(
        self, what: str, size: str, sides: tuple[int, int] | None = None, fmt: str = ""
    ) -> None:
        self.size, self.sides, self.format = size, sides, fmt
        super().__init__(
            f"no thumbnail of {what}: {size}, more than the {MAX_PIXELS:,} pixels decoded for one"
        )


def _named(path: Path, max_side: int, ext: str) -> Path:
    return path.with_name(f"{path.name}.thumb{max_side}{ext}")


def _picture(source: Path | IO[bytes], max_side: int) -> Image.Image | None:
    """A picture's pixels, or a video's first frame (of a file); ``None`` when neither
    decodes, or past :data:`MAX_PIXELS` (said in the log)."""
    try:
        image = decoded(source, max_side)
        if image is None and isinstance(source, Path):
            image = first_frame(source)  # not a picture: maybe a video
    except TooManyPixels as exc:
        log.warning("genwidgets: %s", exc)
        return None
    return image


def first_frame(source: Path | IO[bytes]) -> Image.Image | None:
    """A video's first frame (of a file, or of bytes in a file object: a grid's sheet),
    or ``None`` when it is not a video PyAV can read; :class:`TooManyPixels` past the cap."""
    import av  # noqa: PLC0415 - a video is rare next to images; PyAV loads only for one

    what = str(source) if isinstance(source, Path) else "a video held in memory"
    try:
        with av.open(str(source) if isinstance(source, Path) else source) as container:
            for frame in container.decode(video=0):
                if frame.width * frame.height > MAX_PIXELS:
                    raise TooManyPixels(what, f"{frame.width} × {frame.height} pixels")
                image: Image.Image = frame.to_image()
                return image
    except (av.error.FFmpegError, ValueError, IndexError, OSError):
        return None
    return None


def decoded(source: str | Path | IO[bytes], max_side: int) -> Image.Image | None:
    """The pixels of a picture, at the smallest scale a JPEG allows for ``max_side``;
    ``None`` when it is not a picture; :class:`TooManyPixels` past the cap. Whatever
    decodes a picture it did not make (a sheet's tile) goes through here."""
    what = str(source) if isinstance(source, str | Path) else "an image held in memory"
    with warnings.catch_warnings():
        # the size is checked below, before any pixel is decoded
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        try:
            with Image.open(source) as image:
                stored = image.size  # what a message names, the draft's scale aside
                if image.format == "JPEG":
                    image.draft(None, (max_side, max_side))  # decodes at 1/2, 1/4 or 1/8
                width, height = image.size
                if width * height > MAX_PIXELS:
                    size = f"{stored[0]} × {stored[1]} pixels"
                    raise TooManyPixels(what, size, stored, canonical_format(image.format or ""))
                image.load()
                return image.copy()
        except Image.DecompressionBombError as exc:  # over Pillow's own cap: its header tells
            header = _header(source)
            if header is None:  # said in Pillow's words
                raise TooManyPixels(what, str(exc)) from exc
            (width, height), fmt = header
            raise TooManyPixels(what, f"{width} × {height} pixels", (width, height), fmt) from exc
        except (UnidentifiedImageError, OSError, ValueError, SyntaxError):
            return None


def _header(source: str | Path | IO[bytes]) -> tuple[tuple[int, int], str] | None:
    """The sides and format a picture's header states, read as ``Image.open`` reads it
    but without Pillow's decompression-bomb check, which refuses a picture past its own
    cap before saying its sides (so an endpoint's limit could not be checked). No pixel
    is decoded; ``None`` when no reader makes it out."""
    Image.init()  # every reader registered, as Image.open ends up doing
    with ExitStack() as stack:
        fp = stack.enter_context(open(source, "rb")) if isinstance(source, str | Path) else source
        fp.seek(0)
        prefix = fp.read(16)
        for name in Image.ID:
            factory, accept = Image.OPEN[name]
            accepted = accept is None or accept(prefix)
            if isinstance(accepted, str) or not accepted:
                continue
            fp.seek(0)
            try:
                image = factory(fp, "")
            except (SyntaxError, IndexError, TypeError, struct.error, OSError, ValueError):
                continue
            return image.size, canonical_format(image.format or name)
    return None


def _encode(image: Image.Image, max_side: int) -> tuple[bytes, str]:
    """The picture shrunk to ``max_side`` (never enlarged), as JPEG or, with alpha, PNG."""
    image = image.copy()
    image.thumbnail((max_side, max_side))
    buffer = io.BytesIO()
    if image.mode in ("RGBA", "LA") or (image.mode == "P" and "transparency" in image.info):
        image.save(buffer, format="PNG", optimize=True)
        return buffer.getvalue(), "image/png"
    image.convert("RGB").save(buffer, format="JPEG", quality=_JPEG_QUALITY, optimize=True)
    return buffer.getvalue(), "image/jpeg"


def thumbnail_bytes(data: bytes, max_side: int = DEFAULT_SIDE) -> tuple[bytes, str] | None:
    """A thumbnail of an image held in memory (inline content): bytes and MIME
    type, or ``None`` when the bytes are not a picture Pillow reads, or one of more
    than :data:`MAX_PIXELS` pixels (said in the log)."""
    image = _picture(io.BytesIO(data), max_side)
    return None if image is None else _encode(image, max_side)


def thumbnail(path: str | os.PathLike[str], max_side: int = DEFAULT_SIDE) -> Path | None:
    """The thumbnail file of a saved output (made on first use), or ``None`` when
    the file is neither a picture nor a video, cannot be read, or has more than
    :data:`MAX_PIXELS` pixels (said in the log).

    Written atomically next to the output (a temporary file, then a rename), so
    two kernels making the same thumbnail never leave half a file.
    """
    source = Path(path)
    for cached in (_named(source, max_side, ".jpg"), _named(source, max_side, ".png")):
        if is_fresh(cached, source):
            return cached
    image = _picture(source, max_side)
    if image is None:
        return None
    data, mime = _encode(image, max_side)
    target = _named(source, max_side, ".png" if mime == "image/png" else ".jpg")
    try:
        write_atomically(target, data)
    except OSError:
        return None
    return target


def data_url(path: str | os.PathLike[str]) -> str:
    """A thumbnail file (see :func:`thumbnail`) as a ``data:`` URL, for pages and
    saved notebooks that must show it with no server."""
    file = Path(path)
    mime = "image/png" if file.suffix == ".png" else "image/jpeg"
    return f"data:{mime};base64,{base64.b64encode(file.read_bytes()).decode('ascii')}"
