"""One trip for a payload: validated once, serialised once, sent unchanged.

In the manner of httpx's ``build_request`` → ``send``: :func:`prepare` turns an
endpoint and a payload into a frozen :class:`PreparedRequest` whose ``body`` is
the exact bytes the create request carries. Everything after it (the ledger's
intent row, the HTTP request) reads that one object; nothing validates or
serialises the payload again. The only size check is the spec's 64 MB cap,
measured in UTF-8 bytes of that body (:func:`check_body_size`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .._formats import human_bytes
from ..catalog import EndpointModel, unsendable, webhook_problems
from ..catalog import validate as validate_payload
from ..errors import PayloadError
from ..media import encode_paths

__all__ = ["BODY_LIMIT_BYTES", "PreparedRequest", "check_body_size", "encode_body", "prepare"]

#: the spec's cap on a request body: 64 MB (MiB, docs/decisions.md#mib)
BODY_LIMIT_BYTES = 64 * 2**20
#: ``json.dumps`` with these options, built once (it builds an encoder every call)
_BODY_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def encode_body(payload: Mapping[str, Any], *, endpoint: str | None = None) -> bytes:
    """The JSON body a create request carries: compact, UTF-8, no NaN (as httpx sends JSON).

    Raises :class:`PayloadError` when the payload cannot be written as JSON.
    """
    try:
        text = _BODY_ENCODER.encode(payload)
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
            f"request body is {human_bytes(size)} as JSON; the service takes at most "
            f"{human_bytes(limit)}. Send large files as public URLs (or asset:// ids where "
            "allowed) instead of Base64",
            endpoint=endpoint,
        )
    return size


@dataclass(frozen=True, eq=False)
class PreparedRequest:
    """A create request ready to leave: ``body`` is sent as is, byte for byte.

    ``model`` is the validated pydantic model (None when validation was turned
    off), ``payload`` the JSON object ``body`` encodes (treat it as read-only).
    """

    endpoint: str
    model: EndpointModel | None = field(repr=False)
    payload: dict[str, Any] = field(repr=False)
    body: bytes = field(repr=False)

    def __repr__(self) -> str:
        return f"<PreparedRequest {self.endpoint} {len(self.body):,} bytes>"


def prepare(endpoint: str, payload: Mapping[str, Any], *, validate: bool = True) -> PreparedRequest:
    """Validate (unless ``validate=False``) and serialise ``payload`` once.

    Webhook fields are refused either way (the service rejects them), and so is
    a body over the spec's 64 MB; both raise :class:`PayloadError` before
    anything is sent.
    """
    if not isinstance(endpoint, str) or not endpoint:
        raise PayloadError(f"an endpoint is a non-empty string, not {endpoint!r}")
    if not isinstance(payload, Mapping):
        raise PayloadError(
            f"a payload is a dict of fields, not {type(payload).__name__}", endpoint=endpoint
        )
    payload = encode_paths(endpoint, payload)  # a pathlib.Path is a local file to encode
    model: EndpointModel | None = None
    if validate:  # the user's warning filters apply (-W ignore silences UnknownFieldWarning)
        model = validate_payload(endpoint, payload)
        sent = model.to_wire()
    else:
        # what the service refuses, or the body cannot carry, is refused all the same
        problems = webhook_problems(payload) or unsendable(payload)
        if problems:
            raise PayloadError(problems, endpoint=endpoint)
        sent = dict(payload)
    body = encode_body(sent, endpoint=endpoint)
    check_body_size(body, endpoint=endpoint)
    return PreparedRequest(endpoint=endpoint, model=model, payload=sent, body=body)
