"""Media checked against a field's :class:`~genwidgets.catalog.MediaSpec` before anything
is sent (money is spent when a task is created): kind, format, size, duration and
sides, each refusal saying what is allowed (docs/decisions.md#media-inputs)."""

from __future__ import annotations

import warnings
from urllib.parse import urlsplit

from .._formats import human_bytes
from ..catalog import MediaSpec
from ..catalog.checks import MediaCheck
from ..catalog.introspect import number_text
from ..errors import MediaWarning, PayloadError
from .files import (
    LocalMedia,
    MediaInfo,
    RemoteMedia,
    Source,
    canonical_format,
    local_info,
    resolve_source,
)

__all__ = ["check", "info_problems", "problems_of", "remote_problems", "url_only_problem"]


# --- checks ---------------------------------------------------------------------------------


def _range_phrase(lo: float | None, hi: float | None, exclusive: bool, unit: str) -> str:
    if lo is not None and hi is not None:
        if exclusive:
            return f"strictly between {number_text(lo)} and {number_text(hi)}{unit}"
        return f"from {number_text(lo)} to {number_text(hi)}{unit}"
    if lo is not None:
        return f"{'more than' if exclusive else 'at least'} {number_text(lo)}{unit}"
    assert hi is not None
    return f"{'less than' if exclusive else 'at most'} {number_text(hi)}{unit}"


def _outside(value: float, lo: float | None, hi: float | None, exclusive: bool) -> bool:
    if exclusive:
        return (lo is not None and value <= lo) or (hi is not None and value >= hi)
    return (lo is not None and value < lo) or (hi is not None and value > hi)


def info_problems(info: MediaInfo, spec: MediaSpec, who: str) -> list[str]:
    """Every limit of ``spec`` that ``info`` breaks, each naming the limit and the value."""
    if info.kind != spec.media:
        return [f"this is {info.format} {info.kind}; {who} takes {spec.media} here"]
    if info.frameless:  # nothing else about it matters: there is no picture to send
        return [
            f"this {info.format} video has a video stream but no frame in it; "
            f"{who} takes a video with at least one frame"
        ]
    problems: list[str] = []
    allowed = [canonical_format(f) for f in spec.formats]
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
                    f"{info.kind} aspect ratio (width/height) is {ratio:.6g} ({w}x{h} px); "
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


def remote_problems(remote: RemoteMedia, spec: MediaSpec, who: str) -> list[str]:
    rest = remote.url[len(remote.scheme) + 3 :]
    if remote.scheme == "asset":
        if not spec.allow_asset:
            return [
                f"{who} does not accept asset:// ids here; it takes {MediaCheck(spec).expected()}"
            ]
        if not rest.strip() or "/" in rest or rest != rest.strip():
            return [f"{remote.url!r} is not an asset id; write asset://<ASSET_ID>"]
        return []
    if not urlsplit(remote.url).hostname:
        return [f"{remote.url!r} has no host; write {remote.scheme}://host/path"]
    return []


def url_only_problem(what: str, spec: MediaSpec, who: str) -> str:
    return (
        f"{who} takes only public http(s) URLs here, not {what}: the service downloads the "
        "file itself (and uploads it upstream), so local files and Base64 data cannot be "
        f"sent. Upload the {spec.media} somewhere public and pass its https:// URL"
        + (" or an asset://<id>" if spec.allow_asset else "")
    )


def problems_of(
    resolved: LocalMedia | RemoteMedia, spec: MediaSpec, who: str
) -> tuple[list[str], MediaInfo | None]:
    """Every rule of ``spec`` that resolved media breaks, and what the local media is
    (None for a URL, or where the field takes URLs only)."""
    if isinstance(resolved, RemoteMedia):
        return remote_problems(resolved, spec, who), None
    if spec.encoding == "url_only":
        return [url_only_problem(resolved.what, spec, who)], None
    try:
        info = local_info(resolved)
    except PayloadError as exc:  # media we cannot read (a text, an SVG): say what is taken
        kinds = spec.media if spec.media == "audio" else f"{spec.media}s"
        taken = f"{', '.join(dict.fromkeys(map(canonical_format, spec.formats)))} {kinds}"
        raise PayloadError(
            [{**e, "msg": f"{e['msg']}; {who} takes {taken.strip()}"} for e in exc.errors]
        ) from None
    return info_problems(info, spec, who), info


def check(
    source_or_info: Source | MediaInfo, spec: MediaSpec, *, endpoint: str | None = None
) -> list[str]:
    """Every rule of ``spec`` the media breaks, as readable messages (empty when fine).

    URLs are checked for their scheme only (never fetched); ``endpoint`` names the
    endpoint in the messages.
    """
    who = endpoint or "this field"
    if isinstance(source_or_info, MediaInfo):
        return info_problems(source_or_info, spec, who)
    return problems_of(resolve_source(source_or_info, pil_formats=spec.formats), spec, who)[0]
