"""Media inputs: a local file, bytes, a PIL image or a URL → what an endpoint field wants.

Each media field of the catalog carries a :class:`~genwidgets.catalog.MediaSpec`
(its encoding and the limits the spec states). This module finds that spec by
walking the endpoint's pydantic model, checks the media against it *before*
anything is sent (money is spent when a task is created), and encodes it::

    gw.media.encode("cat.png", "vidA-2-0", "content.image_url.url")
    # -> "data:image/png;base64,iVBOR..."
    gw.media.encode(img, "vidK-v1-6-multi-i2v", "image_list.image")   # raw Base64
    gw.media.encode("https://x.test/a.jpg", "vidP_v6_transition", "first_frame_image")

Encodings (``MediaSpec.encoding``):

- ``data_url_lower``: ``data:image/<lowercase format>;base64,...`` (vidA);
- ``data_url_mime``: ``data:<MIME type>;base64,...`` (vidH, vidV, imgQ, imgG);
- ``raw_base64``: Base64 with no prefix (vidK);
- ``url_only``: a public http(s) URL; the service downloads the file itself (vidP);
- ``url_or_data``: a URL or a data URL with the MIME type.

Every encoding also takes an http(s) URL; ``asset://<id>`` only where
``allow_asset``. URLs are never fetched (no network I/O here): they are passed
through once their scheme is allowed for the field.

Choices where the spec is silent:

- Data URLs and raw Base64 given as input are decoded, checked like a file and
  re-encoded, so the prefix always names the true format in the field's form
  (``data:image/PNG;base64`` → ``data:image/png;base64`` for vidA, the prefix is
  stripped for raw-Base64 fields). A non-URL string that is not an existing file
  but is valid Base64 of a recognisable image, video or audio is taken as raw
  Base64.
- ``file://`` URLs are local files.
- A PIL image is saved as PNG (lossless) when the field takes PNG, else in the
  first listed format Pillow can write.
- Width and height are the stored ones (EXIF orientation and video rotation
  metadata are not applied).
- ISO media files are told apart by their ``ftyp`` brand: ``qt`` → mov,
  ``M4A``/``M4B`` or audio only → m4a, anything else → mp4. ``jpg`` = ``jpeg``,
  ``tif`` = ``tiff``.
- ``max_bytes`` is inclusive, like every limit of :class:`MediaSpec`; the body cap
  is 64 MiB of JSON (compact separators, UTF-8, as httpx sends it).
- Without PyAV, video and audio formats come from magic numbers and durations
  and video sizes are not checked (a :class:`MediaWarning` says so).
- In a payload, a :class:`pathlib.Path` (any ``os.PathLike``) is a local file:
  :func:`encode_paths` encodes it by its field's rule, for ``gw.validate``,
  ``prepare``/``submit`` and the forms alike. A plain string stays a string (a
  typo must not read a file): the catalog's error says to pass a ``Path``.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import os
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias
from urllib.parse import urlsplit
from urllib.request import url2pathname

from ._formats import decode_data_url, human_bytes, mime_for
from .catalog import MediaSpec, fields_along, media_fields_of, media_specs
from .catalog import endpoint as catalog_endpoint
from .catalog import validate as catalog_validate
from .errors import MediaWarning, PayloadError

if TYPE_CHECKING:
    from PIL.Image import Image as PILImage

__all__ = [
    "BASE64_WARN_BYTES",
    "BODY_LIMIT_BYTES",
    "MediaInfo",
    "check",
    "check_body_size",
    "encode",
    "encode_body",
    "encode_file",
    "encode_paths",
    "encode_with",
    "inspect",
    "media_fields",
    "spec_for",
]

BODY_LIMIT_BYTES = 64 * 2**20
"""The largest request body the spec states (vidA): 64 MB."""

BASE64_WARN_BYTES = 4 * 2**20
"""A data URL or Base64 string longer than this draws a :class:`MediaWarning`:
the spec says large files must not be sent as Base64."""

Source: TypeAlias = "str | os.PathLike[str] | bytes | bytearray | memoryview | PILImage"
FieldPath: TypeAlias = "str | Sequence[str | int]"


# --- formats -----------------------------------------------------------------------------

_ALIASES = {"jpg": "jpeg", "tif": "tiff", "mpo": "jpeg", "qt": "mov", "quicktime": "mov"}


def _canonical(fmt: str) -> str:
    fmt = fmt.strip().lower()
    return _ALIASES.get(fmt, fmt)


def _mime_of(fmt: str, kind: str) -> str:
    return mime_for(fmt, kind)


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

    def __str__(self) -> str:
        parts = [f"{self.format} {self.kind}"]
        if self.width is not None and self.height is not None:
            parts.append(f"{self.width}x{self.height} px")
        if self.seconds is not None:
            parts.append(f"{self.seconds:.2f} s")
        if self.size_bytes is not None:
            parts.append(human_bytes(self.size_bytes))
        return ", ".join(parts)


@dataclass
class _Local:
    """Media we hold: a path (read lazily) or bytes, plus where it came from."""

    what: str  # for messages: "file 'a.png'", "bytes", "PIL image", "data URL", "Base64 text"
    path: Path | None = None
    data: bytes | None = None

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
class _Remote:
    """A URL we pass through untouched (scheme lowercased)."""

    url: str
    scheme: str  # "http", "https" or "asset"


_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
_DATA_URL = re.compile(r"^data:([^,;]*)((?:;[^,;]*)*),(.*)$", re.DOTALL | re.IGNORECASE)
_BASE64_TEXT = re.compile(r"^[A-Za-z0-9+/\s]+={0,2}\s*$")


def _is_pil(obj: object) -> bool:
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover - Pillow is a dependency
        return False
    return isinstance(obj, Image.Image)


def _decode_base64(text: str, what: str) -> bytes:
    try:
        return base64.b64decode("".join(text.split()), validate=True)
    except (binascii.Error, ValueError):
        raise PayloadError(f"{what} is not valid Base64") from None


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


def _resolve(source: object, *, pil_formats: Sequence[str] = ()) -> _Local | _Remote:
    """Tell a URL from local media and load nothing yet (paths are read lazily)."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return _Local("bytes", data=bytes(source))
    if _is_pil(source):
        return _Local("PIL image", data=_pil_bytes(source, pil_formats))
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
        return _Local("data URL", data=_parse_data_url(text)[1])
    if scheme in ("http", "https", "asset") and text[len(scheme) + 1 :].startswith("//"):
        return _Remote(scheme + text[len(scheme) :], scheme)
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
        return _Local("Base64 text", data=data)
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


def _local_path(path: Path) -> _Local:
    if not path.exists():
        raise PayloadError(f"no such file: {str(path)!r}")
    if not path.is_file():
        raise PayloadError(f"{str(path)!r} is not a file")
    return _Local(f"file {path.name!r}", path=path)


def _maybe_base64_media(text: str) -> bytes | None:
    """Raw Base64 text of recognisable media, or None (then it was a missing path)."""
    compact = "".join(text.split())
    if len(compact) < 16 or len(compact) % 4 or not _BASE64_TEXT.match(text):
        return None
    try:
        data = base64.b64decode(compact, validate=True)
    except (binascii.Error, ValueError):
        return None
    return data if _sniff(data[:64]) is not None else None


def _pil_bytes(image: Any, formats: Sequence[str]) -> bytes:
    """Save a PIL image in a format the field takes: PNG when allowed (lossless)."""
    from PIL import Image

    Image.init()  # registers every writer, so Image.SAVE is complete
    wanted = [_canonical(f) for f in formats] or ["png"]
    writable = [f for f in wanted if f.upper() in Image.SAVE]
    fmt = "png" if "png" in wanted else (writable[0] if writable else "png")
    if fmt == "jpeg" and image.mode not in ("RGB", "L", "CMYK"):
        image = image.convert("RGB")
    buf = io.BytesIO()
    image.save(buf, format=fmt.upper())
    return buf.getvalue()


# Magic numbers: enough to tell media kinds apart without a decoder.
def _sniff(head: bytes) -> tuple[str, str] | None:
    """(kind, format) from the first bytes, or None when not recognised."""
    if head[4:8] == b"ftyp":
        brand = head[8:12]
        if brand == b"qt  ":
            return "video", "mov"
        if brand in (b"M4A ", b"M4B "):
            return "audio", "m4a"
        return "video", "mp4"
    if head[4:8] in (b"moov", b"mdat", b"wide", b"free"):
        return "video", "mov"
    if head[:4] == b"RIFF":
        if head[8:12] == b"WAVE":
            return "audio", "wav"
        if head[8:12] == b"AVI ":
            return "video", "avi"
        if head[8:12] == b"WEBP":
            return "image", "webp"
    if head[:3] == b"\xff\xd8\xff":
        return "image", "jpeg"
    if head[:3] == b"ID3" or (len(head) > 1 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0):
        return "audio", "mp3"
    if head[:4] == b"fLaC":
        return "audio", "flac"
    if head[:4] == b"OggS":
        return "audio", "ogg"
    if head[:4] == b"\x1a\x45\xdf\xa3":
        return "video", "webm" if b"webm" in head else "mkv"
    if head[:8] == b"\x89PNG\r\n\x1a\n":
        return "image", "png"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "image", "gif"
    if head[:2] == b"BM":
        return "image", "bmp"
    if head[:4] in (b"II*\x00", b"MM\x00*"):
        return "image", "tiff"
    return None


_PILLOW_NOT_IMAGES = {"mpeg"}  # Pillow identifies MPEG-1 video streams; PyAV reads them


def _image_info(local: _Local) -> MediaInfo | None:
    """Header-only read with Pillow (Image.open parses the header; load() is never called)."""
    from PIL import Image, UnidentifiedImageError

    fp: Any = local.path if local.data is None else io.BytesIO(local.data)
    with warnings.catch_warnings():
        # We never decode pixels, so a "decompression bomb" size is just a size to check.
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        try:
            with Image.open(fp) as image:
                fmt = _canonical(image.format or "")
                if fmt in _PILLOW_NOT_IMAGES:
                    return None
                width, height = image.size
        except UnidentifiedImageError:
            return None
        except Image.DecompressionBombError as exc:
            raise PayloadError(f"{local.what}: {exc}") from None
        except (OSError, SyntaxError, ValueError):
            return None
    return MediaInfo("image", fmt, _mime_of(fmt, "image"), width, height, None, local.size())


def _av_info(local: _Local) -> MediaInfo | None:
    """Container metadata with PyAV: streams, size and duration; no frame is decoded here."""
    import av
    import av.error

    source: Any = str(local.path) if local.data is None else io.BytesIO(local.data)
    try:
        with av.open(source, metadata_errors="ignore") as container:
            videos = [s for s in container.streams.video if not _is_cover_art(s)]
            audios = list(container.streams.audio)
            seconds = _seconds(container, videos or audios)
            width = videos[0].codec_context.width if videos else None
            height = videos[0].codec_context.height if videos else None
            demuxer = container.format.name
    except (av.error.FFmpegError, OSError, ValueError, EOFError):
        return None
    if not videos and not audios:
        return None
    kind = "video" if videos else "audio"
    sniffed = _sniff(local.head())
    fmt = _format_from_demuxer(demuxer, kind, sniffed)
    return MediaInfo(kind, fmt, _mime_of(fmt, kind), width, height, seconds, local.size())


def _is_cover_art(stream: Any) -> bool:
    """An mp3/m4a cover picture shows up as a video stream; it does not make a video."""
    import av.stream

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
    return _canonical(names[0])


def _local_info(local: _Local) -> MediaInfo:
    info = _image_info(local)
    if info is not None:
        return info
    try:
        import av  # noqa: F401
    except ImportError:
        av_missing = True
    else:
        av_missing = False
        info = _av_info(local)
        if info is not None:
            return info
    sniffed = _sniff(local.head())
    if sniffed is None or sniffed[0] == "image":
        raise PayloadError(
            f"cannot tell what {local.what} is: not an image Pillow can read"
            + ("" if av_missing else " nor a video or audio file PyAV can open")
        )
    kind, fmt = sniffed
    if not av_missing:
        raise PayloadError(f"{local.what} looks like {fmt} {kind} but PyAV cannot read it")
    return MediaInfo(kind, fmt, _mime_of(fmt, kind), None, None, None, local.size())


def inspect(source: Source) -> MediaInfo:
    """Kind, format, size and duration of local media, from headers only.

    Takes a path, bytes, a PIL image, a data URL or raw Base64 text; an http(s) or
    asset URL is not fetched, so it cannot be inspected (a :class:`PayloadError`).
    """
    resolved = _resolve(source)
    if isinstance(resolved, _Remote):
        raise PayloadError(
            f"cannot inspect {resolved.url[:80]!r}: URLs are never fetched here "
            "(no network I/O); download the file and inspect the local copy"
        )
    return _local_info(resolved)


# --- checks ---------------------------------------------------------------------------------


def _number(x: float) -> str:
    return f"{x:.6g}"


def _range_phrase(lo: float | None, hi: float | None, exclusive: bool, unit: str) -> str:
    if lo is not None and hi is not None:
        if exclusive:
            return f"strictly between {_number(lo)} and {_number(hi)}{unit}"
        return f"from {_number(lo)} to {_number(hi)}{unit}"
    if lo is not None:
        return f"{'more than' if exclusive else 'at least'} {_number(lo)}{unit}"
    assert hi is not None
    return f"{'less than' if exclusive else 'at most'} {_number(hi)}{unit}"


def _outside(value: float, lo: float | None, hi: float | None, exclusive: bool) -> bool:
    if exclusive:
        return (lo is not None and value <= lo) or (hi is not None and value >= hi)
    return (lo is not None and value < lo) or (hi is not None and value > hi)


def _info_problems(info: MediaInfo, spec: MediaSpec, who: str) -> list[str]:
    """Every limit of ``spec`` that ``info`` breaks, each naming the limit and the value."""
    if info.kind != spec.media:
        return [f"this is {info.format} {info.kind}; {who} takes {spec.media} here"]
    problems: list[str] = []
    allowed = [_canonical(f) for f in spec.formats]
    if allowed and info.format not in allowed:
        problems.append(
            f"{info.kind} format is {info.format}; {who} takes {', '.join(dict.fromkeys(allowed))}"
        )
    w, h = info.width, info.height
    if w is not None and h is not None:
        size = f"{info.kind} is {w}x{h} px"
        lo, hi = spec.min_side, spec.max_side
        if (lo is not None or hi is not None) and (
            _outside(w, lo, hi, spec.sides_exclusive) or _outside(h, lo, hi, spec.sides_exclusive)
        ):
            problems.append(
                f"{size}; {who} needs width and height "
                f"{_range_phrase(lo, hi, spec.sides_exclusive, ' px')}"
            )
        if spec.min_short_side is not None and min(w, h) < spec.min_short_side:
            problems.append(
                f"{size} (short side {min(w, h)} px); {who} needs a short side of at least "
                f"{spec.min_short_side} px"
            )
        lo_a, hi_a = spec.min_aspect, spec.max_aspect
        if (lo_a is not None or hi_a is not None) and h > 0:
            ratio = w / h
            if _outside(ratio, lo_a, hi_a, spec.aspect_exclusive):
                problems.append(
                    f"{info.kind} aspect ratio (width/height) is {_number(ratio)} ({w}x{h} px); "
                    f"{who} needs it {_range_phrase(lo_a, hi_a, spec.aspect_exclusive, '')}"
                )
    elif spec.min_side or spec.max_side or spec.min_short_side or spec.min_aspect:
        _warn_unchecked(f"the {info.kind}'s width and height", who)
    too_big = spec.max_bytes is not None and (info.size_bytes or 0) > spec.max_bytes
    if too_big:
        problems.append(
            f"{info.kind} file is {human_bytes(info.size_bytes or 0)}; "
            f"{who} takes at most {human_bytes(spec.max_bytes or 0)}"
        )
    if spec.min_seconds is not None or spec.max_seconds is not None:
        if info.seconds is None:
            _warn_unchecked(f"the {info.kind}'s duration", who)
        elif _outside(info.seconds, spec.min_seconds, spec.max_seconds, False):
            problems.append(
                f"{info.kind} is {info.seconds:.2f} s long; {who} needs "
                f"{_range_phrase(spec.min_seconds, spec.max_seconds, False, ' s')}"
            )
    return problems


def _warn_unchecked(what: str, who: str) -> None:
    warnings.warn(
        f"could not read {what} (is PyAV installed?); {who}'s limit on it is not checked",
        MediaWarning,
        stacklevel=4,
    )


def _accepts(spec: MediaSpec) -> str:
    """What the field takes, in words (for error messages)."""
    forms = {
        "data_url_lower": f"data:{spec.media}/<lowercase format>;base64,<data>",
        "data_url_mime": "data:<MIME type>;base64,<data>",
        "raw_base64": "raw Base64 with no data: prefix",
        "url_only": "",
        "url_or_data": "a data URL",
    }
    parts = ["a public http(s) URL"]
    if forms[spec.encoding]:
        parts.append(forms[spec.encoding])
    if spec.allow_asset:
        parts.append("asset://<id>")
    return ", ".join(parts[:-1]) + " or " + parts[-1] if len(parts) > 1 else parts[0] + " only"


def _remote_problems(remote: _Remote, spec: MediaSpec, who: str) -> list[str]:
    rest = remote.url[len(remote.scheme) + 3 :]
    if remote.scheme == "asset":
        if not spec.allow_asset:
            return [f"{who} does not accept asset:// ids here; it takes {_accepts(spec)}"]
        if not rest.strip() or "/" in rest or rest != rest.strip():
            return [f"{remote.url!r} is not an asset id; write asset://<ASSET_ID>"]
        return []
    if not urlsplit(remote.url).hostname:
        return [f"{remote.url!r} has no host; write {remote.scheme}://host/path"]
    return []


def _url_only_problem(what: str, spec: MediaSpec, who: str) -> str:
    return (
        f"{who} takes only public http(s) URLs here, not {what}: the service downloads the "
        "file itself (and uploads it upstream), so local files and Base64 data cannot be "
        f"sent. Upload the {spec.media} somewhere public and pass its https:// URL"
        + (" or an asset://<id>" if spec.allow_asset else "")
    )


def check(
    source_or_info: Source | MediaInfo, spec: MediaSpec, *, endpoint: str | None = None
) -> list[str]:
    """Every rule of ``spec`` the media breaks, as readable messages (empty when fine).

    URLs are checked for their scheme only (never fetched); ``endpoint`` names the
    endpoint in the messages.
    """
    who = endpoint or "this field"
    if isinstance(source_or_info, MediaInfo):
        return _info_problems(source_or_info, spec, who)
    resolved = _resolve(source_or_info, pil_formats=spec.formats)
    if isinstance(resolved, _Remote):
        return _remote_problems(resolved, spec, who)
    if spec.encoding == "url_only":
        return [_url_only_problem(resolved.what, spec, who)]
    return _info_problems(_local_info(resolved), spec, who)


def encode_body(payload: Mapping[str, Any], *, endpoint: str | None = None) -> bytes:
    """The JSON body a create request carries: compact, UTF-8, no NaN (as httpx sends JSON).

    Raises :class:`PayloadError` when the payload cannot be written as JSON.
    """
    try:
        text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise PayloadError(
            f"the payload cannot be sent as JSON: {exc}", endpoint=endpoint
        ) from None
    return text.encode("utf-8")


def check_body_size(
    payload: Mapping[str, Any] | bytes,
    limit: int = BODY_LIMIT_BYTES,
    *,
    endpoint: str | None = None,
) -> int:
    """Raise :class:`PayloadError` when the JSON body would exceed ``limit`` bytes.

    ``payload`` is the body itself (bytes, measured as is) or a payload (encoded
    with :func:`encode_body` first). Returns the body's size in bytes. The spec
    caps request bodies at 64 MB and says large files must not be sent as Base64.
    """
    body = payload if isinstance(payload, bytes) else encode_body(payload, endpoint=endpoint)
    size = len(body)
    if size > limit:
        raise PayloadError(
            [
                {
                    "loc": (),
                    "msg": f"request body is {human_bytes(size)} as JSON; the service takes "
                    f"at most {human_bytes(limit)}. Send large files as public URLs "
                    "(or asset:// ids where allowed) instead of Base64",
                }
            ],
            endpoint=endpoint,
        )
    return size


# --- encoding -------------------------------------------------------------------------------


def encode_with(
    source: Source,
    spec: MediaSpec,
    *,
    endpoint: str | None = None,
    loc: Sequence[str | int] = (),
) -> str:
    """``source`` in the form ``spec`` wants, after checking every limit it states.

    Raises :class:`PayloadError` listing all problems at ``loc``; warns
    (:class:`MediaWarning`) when the Base64 text is large.
    """
    who = endpoint or "this field"
    where = tuple(loc)

    def fail(problems: Sequence[str]) -> PayloadError:
        return PayloadError([{"loc": where, "msg": m} for m in problems], endpoint=endpoint)

    try:
        resolved = _resolve(source, pil_formats=spec.formats)
    except PayloadError as exc:
        raise fail([e["msg"] for e in exc.errors]) from None
    if isinstance(resolved, _Remote):
        problems = _remote_problems(resolved, spec, who)
        if problems:
            raise fail(problems)
        return resolved.url
    if spec.encoding == "url_only":
        raise fail([_url_only_problem(resolved.what, spec, who)])
    try:
        info = _local_info(resolved)
    except PayloadError as exc:
        raise fail([e["msg"] for e in exc.errors]) from None
    problems = _info_problems(info, spec, who)
    if problems:
        raise fail(problems)
    text = base64.b64encode(resolved.read()).decode("ascii")
    if spec.encoding == "raw_base64":
        encoded = text
    elif spec.encoding == "data_url_lower":
        encoded = f"data:{info.kind}/{info.format};base64,{text}"
    else:
        encoded = f"data:{info.mime};base64,{text}"
    if len(encoded) > BASE64_WARN_BYTES:
        field = ".".join(str(p) for p in where) or "media"
        warnings.warn(
            f"{who} {field}: sending {human_bytes(info.size_bytes or 0)} as "
            f"{human_bytes(len(encoded))} of Base64; the spec says large files must not be "
            "sent as Base64 (request bodies are capped at 64 MB): pass a public https URL"
            + (" or an asset://<id>" if spec.allow_asset else "")
            + " instead",
            MediaWarning,
            stacklevel=2,
        )
    return encoded


# --- finding a field's MediaSpec ------------------------------------------------------------


def media_fields(endpoint: str) -> dict[str, MediaSpec]:
    """Every media field of ``endpoint``: dotted path (list indices left out) → MediaSpec."""
    return media_fields_of(catalog_endpoint(endpoint).model)


def _parts(field: FieldPath) -> list[str | int]:
    raw = field.split(".") if isinstance(field, str) else list(field)
    parts: list[str | int] = []
    for p in raw:
        if isinstance(p, int) or (isinstance(p, str) and p.strip().isdigit()):
            parts.append(int(p))
        elif isinstance(p, str) and p.strip("[]").isdigit():
            parts.append(int(p.strip("[]")))
        else:
            parts.extend(re.findall(r"[^\[\]]+", str(p)))  # "image_list[0]" → image_list, 0
    return [int(p) if isinstance(p, str) and p.isdigit() else p for p in parts]


def spec_for(endpoint: str, field: FieldPath) -> MediaSpec:
    """The MediaSpec of ``field`` in ``endpoint``'s model (dotted path or tuple; list
    indices optional). A field that is not a media field is a :class:`PayloadError`
    naming the endpoint's media fields."""
    model = catalog_endpoint(endpoint).model
    parts = _parts(field)
    names = [p for p in parts if isinstance(p, str)]
    loc = tuple(parts)

    def not_media(why: str) -> PayloadError:
        known = ", ".join(media_fields(endpoint)) or "none"
        return PayloadError(
            [{"loc": loc, "msg": f"{why}; the media fields of {endpoint} are: {known}"}],
            endpoint=endpoint,
        )

    if not names:
        raise not_media("no field given")
    reached = fields_along(model, names)
    where = ".".join(names[: len(reached) + 1])
    if len(reached) < len(names):
        raise not_media(f"{where!r} is not a field of {endpoint}")
    specs = [s for info in reached[-1] for s in media_specs(info)]
    if not specs:
        raise not_media(f"{where!r} is not a media field")
    return specs[0]


def encode(source: Source, endpoint: str, field: FieldPath) -> str:
    """``source`` encoded the way ``endpoint``'s ``field`` wants it, after its checks.

    ``field`` is a dotted path or tuple through the payload model, list indices
    optional: ``"content.image_url.url"``, ``("media", "url")``, ``"image_list.image"``.
    """
    spec = spec_for(endpoint, field)
    return encode_with(source, spec, endpoint=endpoint, loc=tuple(_parts(field)))


# --- pathlib.Path values in a payload -------------------------------------------------------

#: Encodings of files by (path, mtime, size, spec): a form re-validates on every keystroke.
_ENCODED: dict[tuple[str, int, int, MediaSpec, str], str] = {}
_ENCODED_KEEP = 8


def encode_file(
    path: str | os.PathLike[str],
    spec: MediaSpec,
    *,
    endpoint: str | None = None,
    loc: Sequence[str | int] = (),
) -> str:
    """:func:`encode_with` for a local file, remembered by (path, mtime, size, spec)."""
    path = Path(os.fspath(path)).expanduser()
    try:
        stat = path.stat()
        key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size, spec, endpoint or "")
    except (OSError, RuntimeError):
        key = None  # encode_with says what is wrong ("no such file")
    if key is not None and key in _ENCODED:
        return _ENCODED[key]
    encoded = encode_with(path, spec, endpoint=endpoint, loc=loc)
    if key is not None:
        if len(_ENCODED) >= _ENCODED_KEEP:
            _ENCODED.pop(next(iter(_ENCODED)))
        _ENCODED[key] = encoded
    return encoded


def _has_path(value: Any) -> bool:
    if isinstance(value, os.PathLike):
        return True
    if isinstance(value, Mapping):
        return any(_has_path(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_has_path(v) for v in value)
    return False


def encode_paths(endpoint: str, payload: Mapping[str, Any]) -> Mapping[str, Any]:
    """``payload`` with every ``pathlib.Path`` encoded for the media field it sits in.

    The one way a local file enters a payload (``gw.validate``, ``prepare``/``submit``,
    forms): checked and encoded like :func:`encode`. A missing file, a file that breaks
    the field's rules, or a Path in a field that takes no media is a
    :class:`PayloadError` at its location. Without a Path, ``payload`` is returned as is.
    """
    if not isinstance(payload, Mapping) or not _has_path(payload):
        return payload
    errors: list[dict[str, Any]] = []

    def replace(value: Any, loc: tuple[str | int, ...]) -> Any:
        if isinstance(value, os.PathLike):
            try:
                return encode_file(value, spec_for(endpoint, loc), endpoint=endpoint, loc=loc)
            except PayloadError as exc:
                errors.extend({**e, "loc": tuple(e.get("loc") or loc)} for e in exc.errors)
                return value
        if isinstance(value, Mapping) and _has_path(value):
            return {k: replace(v, (*loc, k)) for k, v in value.items()}
        if isinstance(value, (list, tuple)) and _has_path(value):
            return [replace(v, (*loc, i)) for i, v in enumerate(value)]
        return value

    encoded = {k: replace(v, (k,)) for k, v in payload.items()}
    if errors:
        raise PayloadError(errors, endpoint=endpoint)
    return encoded


def validate(endpoint: str, payload: Mapping[str, Any]) -> Any:
    """``gw.validate``: :func:`encode_paths`, then the catalog's validation of the result."""
    return catalog_validate(endpoint, encode_paths(endpoint, payload))
