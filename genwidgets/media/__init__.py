"""Media inputs: a local file, bytes, a PIL image or a URL → what an endpoint field wants.

Each media field carries a :class:`~genwidgets.catalog.MediaSpec` (encoding and limits);
this module finds it in the endpoint's model, checks the media against it *before*
anything is sent (money is spent when a task is created) and encodes it::

    gw.media.encode("cat.png", "vidA-2-0", "content.image_url.url")   # a data URL

URLs are never fetched here. Encodings and the choices where the spec is silent:
docs/decisions.md#media-inputs.
"""

from __future__ import annotations

import base64
import os
import re
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeAlias
from urllib.parse import urlsplit

from .._formats import human_bytes
from ..catalog import MediaSpec, fields_along, media_fields_of, media_specs
from ..catalog import endpoint as catalog_endpoint
from ..catalog import validate as catalog_validate
from ..errors import MediaWarning, PayloadError
from .files import MediaInfo, Source, _canonical, _local_info, _Remote, _resolve, inspect

__all__ = [
    "BASE64_WARN_BYTES",
    "MediaInfo",
    "check",
    "encode",
    "encode_file",
    "encode_paths",
    "encode_with",
    "inspect",
    "media_fields",
    "spec_for",
]

"""The largest request body the spec states (vidA): 64 MB."""

BASE64_WARN_BYTES = 4 * 2**20
"""A data URL or Base64 string longer than this draws a :class:`MediaWarning`:
the spec says large files must not be sent as Base64."""

FieldPath: TypeAlias = "str | Sequence[str | int]"


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
