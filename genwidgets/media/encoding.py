"""Media encoded as a field wants it (a data URL, Base64, a URL passed through), and the
local files of a payload found and encoded before it is sent
(docs/decisions.md#media-inputs)."""

from __future__ import annotations

import base64
import functools
import os
import re
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeAlias

from .._formats import human_bytes
from ..catalog import MediaSpec, fields_along, media_fields_of, media_specs
from ..catalog import endpoint as catalog_endpoint
from ..catalog import validate as catalog_validate
from ..errors import MediaWarning, PayloadError
from .checks import problems_of
from .files import LocalMedia, RemoteMedia, Source, resolve_source

__all__ = [
    "BASE64_WARN_BYTES",
    "FieldPath",
    "encode",
    "encode_file",
    "encode_paths",
    "encode_with",
    "media_fields",
    "spec_for",
    "validate",
]

BASE64_WARN_BYTES = 4 * 2**20
"""A data URL or Base64 string longer than this draws a :class:`MediaWarning`:
the spec says large files must not be sent as Base64."""

FieldPath: TypeAlias = "str | Sequence[str | int]"


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
        resolved = resolve_source(source, pil_formats=spec.formats)
        problems, info = problems_of(resolved, spec, who)
    except PayloadError as exc:
        raise fail([e["msg"] for e in exc.errors]) from None
    if problems:
        raise fail(problems)
    if isinstance(resolved, RemoteMedia):
        return resolved.url
    assert info is not None
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
        # "image_list[0]" → image_list, 0; digits (with spaces around) are list indices
        names = [p] if isinstance(p, int) else re.findall(r"[^\[\]]+", str(p))
        parts.extend(int(n) if isinstance(n, int) or n.strip().isdigit() else n for n in names)
    return parts


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
        real = str(path.resolve())
    except (OSError, RuntimeError):  # encode_with says what is wrong ("no such file")
        return encode_with(path, spec, endpoint=endpoint, loc=loc)
    return _encoded(path, real, stat.st_mtime_ns, stat.st_size, spec, endpoint, tuple(loc))


@functools.lru_cache(maxsize=8)  # a form re-validates its file on every keystroke
def _encoded(
    path: Path, real: str, mtime: int, size: int, spec: MediaSpec, endpoint: str | None, loc: Any
) -> str:
    return encode_with(path, spec, endpoint=endpoint, loc=loc)


#: what :func:`encode_paths` checks and encodes: a local file, or media a form holds
_LOCAL = (os.PathLike, LocalMedia)
#: values that hold no Path, told by their exact type (an ABC check costs more)
_PLAIN_TYPES = frozenset({str, int, float, bool, type(None)})


def _has_path(value: Any) -> bool:
    """Whether a ``pathlib.Path`` (any ``os.PathLike``) sits anywhere in ``value``. Asked
    of every payload sent (a batch's thousands of rows): plain values and plain dicts and
    lists, told by their exact type, skip the slower ``isinstance`` checks."""
    kind = type(value)
    if kind in _PLAIN_TYPES:
        return False
    if kind is dict:
        items: Any = value.values()
    elif kind is list or kind is tuple:
        items = value
    elif isinstance(value, _LOCAL):
        return True
    elif isinstance(value, Mapping):
        items = value.values()
    elif isinstance(value, (list, tuple)):
        items = value
    else:
        return False
    for item in items:  # noqa: SIM110 - a loop: any() would make a generator every call
        if type(item) not in _PLAIN_TYPES and _has_path(item):
            return True
    return False


def encode_paths(endpoint: str, payload: Mapping[str, Any]) -> Mapping[str, Any]:
    """``payload`` with every ``pathlib.Path`` encoded for the media field it sits in.

    The one way a local file enters a payload (``gw.validate``, ``prepare``/``submit``,
    forms): checked and encoded like :func:`encode`. A missing file, a file that breaks
    the field's rules, or a Path in a field that takes no media is a
    :class:`PayloadError` at its location. Without a Path, ``payload`` is returned as is.
    A :class:`~.files.LocalMedia` (an upload a form's field refused) is checked the same way.
    """
    if not isinstance(payload, Mapping) or not _has_path(payload):
        return payload
    errors: list[dict[str, Any]] = []

    def replace(value: Any, loc: tuple[str | int, ...]) -> Any:
        if isinstance(value, _LOCAL):
            try:
                spec = spec_for(endpoint, loc)
                if isinstance(value, LocalMedia):
                    return encode_with(value, spec, endpoint=endpoint, loc=loc)
                return encode_file(value, spec, endpoint=endpoint, loc=loc)
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
