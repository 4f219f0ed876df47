"""What a media file is: local bytes, a path, a PIL image or a URL, read from its headers.

:func:`inspect` tells its kind, format, size and duration (Pillow for images, PyAV for
video and audio, magic numbers when PyAV is missing); nothing here fetches a URL or
knows an endpoint's rules, which live in :mod:`genwidgets.media`.
"""

from __future__ import annotations

import base64
import binascii
import io
import os
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias
from urllib.parse import urlsplit
from urllib.request import url2pathname

from .._formats import decode_data_url, human_bytes, mime_for
from ..errors import PayloadError

if TYPE_CHECKING:
    from PIL.Image import Image as PILImage

Source: TypeAlias = (
    "str | os.PathLike[str] | bytes | bytearray | memoryview | PILImage | LocalMedia"
)


# --- formats -----------------------------------------------------------------------------

_ALIASES = {"jpg": "jpeg", "tif": "tiff", "mpo": "jpeg", "qt": "mov", "quicktime": "mov"}


def canonical_format(fmt: str) -> str:
    fmt = fmt.strip().lower()
    return _ALIASES.get(fmt, fmt)


# --- what a media file is ------------------------------------------------------------------


@dataclass(frozen=True)
class MediaInfo:
    """What :func:`inspect` read from a file's headers (nothing is fully decoded)."""

    kind: str  # "image", "video" or "audio"
    format: str  # lowercase: "png", "jpeg", "mp4", "mov", "mp3", ...
    mime: str
    width: int | None = None
    height: int | None = None
    seconds: float | None = None
    size_bytes: int | None = None
    frameless: bool = False  # a video stream with no frame in it (its container is empty)

    def __str__(self) -> str:
        parts = [f"{self.format} {self.kind}" + (" with no frame" if self.frameless else "")]
        if self.width is not None and self.height is not None:
            parts.append(f"{self.width}x{self.height} px")
        if self.seconds is not None:
            parts.append(f"{self.seconds:.2f} s")
        if self.size_bytes is not None:
            parts.append(human_bytes(self.size_bytes))
        return ", ".join(parts)


@dataclass(repr=False)
class LocalMedia:
    """Media we hold: a path (read lazily) or bytes, plus where it came from. A form holds
    an upload its field refuses as one, a payload's value that validation refuses as it
    does a ``Path`` (:func:`genwidgets.media.encode_paths`)."""

    what: str  # for messages: "file 'a.png'", "bytes", "PIL image", "data URL", "Base64 text"
    path: Path | None = None
    data: bytes | None = None

    def __repr__(self) -> str:
        """What it is and its size, never its bytes (a form's JSON and Code views)."""
        size = f", {human_bytes(len(self.data))}" if self.data is not None else ""
        return f"<{self.what}{size}>"

    def read(self) -> bytes:
        if self.data is None:
            assert self.path is not None
            self.data = self.path.read_bytes()
        return self.data

    def size(self) -> int:
        if self.data is not None:
            return len(self.data)
        assert self.path is not None
        return self.path.stat().st_size

    def head(self, n: int = 64) -> bytes:
        if self.data is not None:
            return self.data[:n]
        assert self.path is not None
        with self.path.open("rb") as fh:
            return fh.read(n)


@dataclass(frozen=True)
class RemoteMedia:
    """A URL we pass through untouched (scheme lowercased)."""

    url: str
    scheme: str  # "http", "https" or "asset"


_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
_BASE64_TEXT = re.compile(r"^[A-Za-z0-9+/\s]+={0,2}\s*$")


def _is_pil(obj: object) -> bool:
    try:
        from PIL import Image  # noqa: PLC0415 - Pillow loads only for local media
    except ImportError:  # pragma: no cover - Pillow is a dependency
        return False
    return isinstance(obj, Image.Image)


def _parse_data_url(url: str) -> tuple[str, bytes]:
    """``data:<mime>;base64,<data>`` → (declared mime, decoded bytes)."""
    try:
        parsed = decode_data_url(url, strict=True)
    except ValueError as exc:
        if "Base64" in str(exc):
            raise PayloadError("the data URL's payload is not valid Base64") from None
        raise PayloadError("a data URL reads data:<MIME type>;base64,<data>") from None
    if not parsed.base64:
        raise PayloadError(
            f"data URL {url[:40]!r}... is not Base64; media data URLs read "
            "data:<MIME type>;base64,<data>"
        )
    return parsed.mime, parsed.data


def resolve_source(source: object, *, pil_formats: Sequence[str] = ()) -> LocalMedia | RemoteMedia:
    """Tell a URL from local media and load nothing yet (paths are read lazily)."""
    if isinstance(source, LocalMedia):
        return source
    if isinstance(source, (bytes, bytearray, memoryview)):
        return LocalMedia("bytes", data=bytes(source))
    if _is_pil(source):
        return LocalMedia("PIL image", data=_pil_bytes(source, pil_formats))
    if isinstance(source, os.PathLike):
        return _local_path(Path(os.fspath(source)))
    if not isinstance(source, str):
        raise PayloadError(
            f"cannot use a {type(source).__name__} as media; pass a file path (str or Path), "
            "bytes, a PIL image, or a URL (http(s)://, asset://<id>, data:...)"
        )
    text = source.strip()
    scheme_match = _SCHEME.match(text)
    scheme = scheme_match.group(1).lower() if scheme_match else ""
    if scheme == "data":
        return LocalMedia("data URL", data=_parse_data_url(text)[1])
    if scheme in ("http", "https", "asset") and text[len(scheme) + 1 :].startswith("//"):
        return RemoteMedia(scheme + text[len(scheme) :], scheme)
    if scheme == "file":
        return _local_path(Path(url2pathname(urlsplit(text).path)))
    if scheme_match and "://" in text and len(scheme) > 1:
        raise PayloadError(
            f"URL scheme {scheme!r} is not accepted; media URLs are http(s)://, asset://<id> "
            "or data:<MIME type>;base64,<data>"
        )
    if _exists(source):
        return _local_path(Path(source).expanduser())
    data = _maybe_base64_media(text)
    if data is not None:
        return LocalMedia("Base64 text", data=data)
    if scheme in ("http", "https", "asset"):
        raise PayloadError(f"{source[:80]!r} is not a URL: write {scheme}://...")
    raise PayloadError(
        f"no such file: {source[:200]!r} (nor a URL: http(s)://, asset://<id>, data:...)"
    )


def _exists(name: str) -> bool:
    """Whether ``name`` is an existing path; long Base64 text is not (and must not raise)."""
    if len(name) > 4096 or "\0" in name:
        return False
    try:
        return Path(name).expanduser().exists()
    except (OSError, ValueError, RuntimeError):
        return False


def _local_path(path: Path) -> LocalMedia:
    if not path.exists():
        raise PayloadError(f"no such file: {str(path)!r}")
    if not path.is_file():
        raise PayloadError(f"{str(path)!r} is not a file")
    return LocalMedia(f"file {path.name!r}", path=path)


def _maybe_base64_media(text: str) -> bytes | None:
    """Raw Base64 text of recognisable media, or None (then it was a missing path)."""
    compact = "".join(text.split())
    if len(compact) < 16 or len(compact) % 4 or not _BASE64_TEXT.match(text):
        return None
    try:
        data = base64.b64decode(compact, validate=True)
    except (binascii.Error, ValueError):
        return None
    return data if sniff(data[:64]) is not None else None


def _pil_bytes(image: Any, formats: Sequence[str]) -> bytes:
    """Save a PIL image in a format the field takes: PNG when allowed (lossless)."""
    from PIL import Image  # noqa: PLC0415 - Pillow loads only for local media

    Image.init()  # registers every writer, so Image.SAVE is complete
    wanted = [canonical_format(f) for f in formats] or ["png"]
    writable = [f for f in wanted if f.upper() in Image.SAVE]
    fmt = "png" if "png" in wanted else (writable[0] if writable else "png")
    if fmt == "jpeg" and image.mode not in ("RGB", "L", "CMYK"):
        image = image.convert("RGB")
    buf = io.BytesIO()
    image.save(buf, format=fmt.upper())
    return buf.getvalue()


# Magic numbers: enough to tell media kinds apart without a decoder.
_MAGIC = {
    b"\xff\xd8\xff": ("image", "jpeg"),
    b"ID3": ("audio", "mp3"),
    b"fLaC": ("audio", "flac"),
    b"OggS": ("audio", "ogg"),
    b"\x89PNG\r\n\x1a\n": ("image", "png"),
    b"GIF87a": ("image", "gif"),
    b"GIF89a": ("image", "gif"),
    b"BM": ("image", "bmp"),
    b"II*\x00": ("image", "tiff"),
    b"MM\x00*": ("image", "tiff"),
}
_RIFF = {b"WAVE": ("audio", "wav"), b"AVI ": ("video", "avi"), b"WEBP": ("image", "webp")}
_BRANDS = {b"qt  ": ("video", "mov"), b"M4A ": ("audio", "m4a"), b"M4B ": ("audio", "m4a")}


def sniff(head: bytes) -> tuple[str, str] | None:
    """(kind, format) from the first bytes, or None when not recognised."""
    if head[4:8] == b"ftyp":  # the ISO family: its brand tells
        return _BRANDS.get(head[8:12], ("video", "mp4"))
    if head[4:8] in (b"moov", b"mdat", b"wide", b"free"):
        return "video", "mov"
    if head[:4] == b"RIFF" and head[8:12] in _RIFF:
        return _RIFF[head[8:12]]
    if head[:4] == b"\x1a\x45\xdf\xa3":
        return "video", "webm" if b"webm" in head else "mkv"
    found = next((v for magic, v in _MAGIC.items() if head.startswith(magic)), None)
    if found is None and len(head) > 1 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0:
        return "audio", "mp3"  # an MPEG audio frame's sync bits
    return found


_PILLOW_NOT_IMAGES = {"mpeg"}  # Pillow identifies MPEG-1 video streams; PyAV reads them


def _image_info(local: LocalMedia) -> MediaInfo | None:
    """Header-only read with Pillow (Image.open parses the header; load() is never called)."""
    from PIL import Image, UnidentifiedImageError  # noqa: PLC0415 - Pillow loads only for local media

    fp: Any = local.path if local.data is None else io.BytesIO(local.data)
    with warnings.catch_warnings():
        # We never decode pixels, so a "decompression bomb" size is just a size to check.
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        try:
            with Image.open(fp) as image:
                fmt = canonical_format(image.format or "")
                if fmt in _PILLOW_NOT_IMAGES:
                    return None
                width, height = image.size
        except UnidentifiedImageError:
            return None
        except Image.DecompressionBombError as exc:
            raise PayloadError(f"{local.what}: {exc}") from None
        except (OSError, SyntaxError, ValueError):
            return None
    return MediaInfo("image", fmt, mime_for(fmt, "image"), width, height, None, local.size())


def _av_info(local: LocalMedia) -> MediaInfo | None:
    """Container metadata with PyAV: streams, size and duration; no frame is decoded here."""
    import av  # noqa: PLC0415 - PyAV loads only for local audio and video
    import av.error  # noqa: PLC0415 - PyAV loads only for local audio and video

    source: Any = str(local.path) if local.data is None else io.BytesIO(local.data)
    try:
        with av.open(source, metadata_errors="ignore") as container:
            demuxer = container.format.name
            videos = [s for s in container.streams.video if not _is_cover_art(s)]
            audios = list(container.streams.audio)
            seconds = _seconds(container, videos or audios)
            # a stream PyAV has no decoder for has no codec context: its size is unknown
            codec = videos[0].codec_context if videos else None
            width = codec.width if codec is not None else None
            height = codec.height if codec is not None else None
            frameless = bool(videos) and not _has_a_packet(container, videos)
    except (av.error.FFmpegError, OSError, ValueError, EOFError):
        return None
    _refuse_unread_image(local, demuxer)
    if not videos and not audios:
        return None
    kind = "video" if videos else "audio"
    sniffed = sniff(local.head())
    fmt = _format_from_demuxer(demuxer, kind, sniffed)
    return MediaInfo(
        kind, fmt, mime_for(fmt, kind), width, height, seconds, local.size(), frameless
    )


# How far the search for a video's first frame data goes: a probe answers a header
# question, so a file is never demuxed whole (a video packet behind a long run of small
# audio packets, or no video packet at all, read every byte on every validation).
_FIRST_PACKET_SEARCH_PACKETS = 1000
_FIRST_PACKET_SEARCH_BYTES = 8 * 1024 * 1024


def _has_a_packet(container: Any, videos: Sequence[Any]) -> bool:
    """Whether one of the ``videos`` streams holds a frame's data: packets are demuxed
    (read, never decoded) until one of theirs has data. An mp4 written with no frame
    still has a video track; no field takes it. Empty packets are skipped (an mp4 may
    hold a zero-size sample, a dropped frame). A stream whose data is not found within
    the search caps, or that cannot be demuxed, is not called empty: the service judges it."""
    import av.error  # noqa: PLC0415 - PyAV loads only for local audio and video

    wanted = {stream.index for stream in videos}
    try:
        for count, packet in enumerate(container.demux()):
            if packet.stream.index in wanted and packet.size > 0:
                return True
            at = packet.pos if packet.pos is not None else -1
            if count >= _FIRST_PACKET_SEARCH_PACKETS or at >= _FIRST_PACKET_SEARCH_BYTES:
                return True
    except (av.error.FFmpegError, OSError, ValueError, EOFError):
        return True
    return False


def _refuse_unread_image(local: LocalMedia, demuxer: str) -> None:
    """An image FFmpeg names (its ``svg_pipe``, ``qoi_pipe``... demuxers) that Pillow
    could not read is refused: no field takes it, and it is no video (an SVG's stream
    has no decoder, so no size: it was a bare AttributeError). A format Pillow reads
    (a PNG cut short) is said to be damaged, not a format that is not taken."""
    if not (demuxer.endswith("_pipe") or demuxer in ("image2", "image2pipe")):
        return
    from PIL import Image  # noqa: PLC0415 - Pillow loads only for local media

    fmt = canonical_format(demuxer.removesuffix("_pipe"))
    if fmt in ("image2", "image2pipe"):  # FFmpeg's images by file name: the suffix tells
        suffix = local.path.suffix.lstrip(".") if local.path else ""
        fmt = canonical_format(suffix) or "unknown"
    Image.init()  # registers every reader, so Image.OPEN is complete
    if fmt.upper() in Image.OPEN:
        raise PayloadError(f"this {fmt} image is damaged or cut short: Pillow cannot read it")
    raise PayloadError(f"image format is {fmt}, which is not taken (Pillow cannot read it)")


def _is_cover_art(stream: Any) -> bool:
    """An mp3/m4a cover picture shows up as a video stream; it does not make a video."""
    import av.stream  # noqa: PLC0415 - PyAV loads only for local audio and video

    flags = getattr(av.stream, "Disposition", None)
    if flags is None:  # older PyAV: no disposition flags to read
        return False
    return bool(int(getattr(stream, "disposition", 0)) & int(flags.attached_pic))


def _seconds(container: Any, streams: Sequence[Any]) -> float | None:
    if container.duration is not None and container.duration > 0:
        return float(container.duration / 1_000_000)
    for stream in streams:
        if stream.duration is not None and stream.time_base is not None:
            return float(stream.duration * stream.time_base)
    return None


def _format_from_demuxer(demuxer: str, kind: str, sniffed: tuple[str, str] | None) -> str:
    names = demuxer.split(",")
    if "mp4" in names or "mov" in names:  # one demuxer for the ISO family: use the brand
        fmt = sniffed[1] if sniffed else "mp4"
        if fmt == "mp4" and kind == "audio":
            return "m4a"
        return fmt
    if "matroska" in names or "webm" in names:
        return sniffed[1] if sniffed else "mkv"
    return canonical_format(names[0])


def local_info(local: LocalMedia) -> MediaInfo:
    info = _image_info(local)
    if info is not None:
        return info
    try:
        info = _av_info(local)
    except ImportError:  # no PyAV: the magic numbers tell the kind
        av_missing = True
    else:
        av_missing = False
        if info is not None:
            return info
    sniffed = sniff(local.head())
    if sniffed is None or sniffed[0] == "image":
        raise PayloadError(
            f"cannot tell what {local.what} is: not an image Pillow can read"
            + ("" if av_missing else " nor a video or audio file PyAV can open")
        )
    kind, fmt = sniffed
    if not av_missing:
        raise PayloadError(f"{local.what} looks like {fmt} {kind} but PyAV cannot read it")
    return MediaInfo(kind, fmt, mime_for(fmt, kind), None, None, None, local.size())


def inspect(source: Source) -> MediaInfo:
    """Kind, format, size and duration of local media, from its headers (a video's
    first packets are read too, at most 1,000 or 8 MiB, never decoded, to see a frame).

    Takes a path, bytes, a PIL image, a data URL or raw Base64 text; an http(s) or
    asset URL is not fetched, so it cannot be inspected (a :class:`PayloadError`).
    """
    resolved = resolve_source(source)
    if isinstance(resolved, RemoteMedia):
        raise PayloadError(
            f"cannot inspect {resolved.url[:80]!r}: URLs are never fetched here "
            "(no network I/O); download the file and inspect the local copy"
        )
    return local_info(resolved)
