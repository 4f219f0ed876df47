"""Which endpoints the simulator serves, how long each kind runs, and payload checks.

Payloads are validated with the catalog models (:mod:`genwidgets.catalog`). For
an identifier the catalog does not know (yet), a small table of required fields
stands in, so the simulator never accepts an empty body for a known endpoint.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: Run time of one task at speed 1 ("demo speed"), per kind, in seconds.
BASE_SECONDS = {
    "image": 2.0,
    "video": 6.0,
    "speech": 2.0,
    "asset": 1.0,
    "subject": 1.0,
    "face": 1.0,
    "audio": 1.0,
}


@dataclass(frozen=True)
class SimEndpoint:
    id: str
    kind: str
    required: tuple[str, ...]
    documented: bool = True


def _table() -> dict[str, SimEndpoint]:
    rows: list[tuple[str, str, tuple[str, ...], bool]] = [
        ("vidA-2-0-fast", "video", ("content",), True),
        ("vidA-2-0", "video", ("content",), True),
        ("imgM-inpaint", "image", ("jobId", "imageNo", "mask"), True),
        ("imgM_pan", "image", ("jobId", "imageNo", "direction", "scale"), True),
        ("imgM-v8.1-i2i", "image", ("jobId",), True),
        ("vidVq2-text2video", "video", ("prompt",), True),
        ("vidVq1-text2video", "video", ("prompt",), True),
        ("vidV-create-subjects", "subject", ("name",), True),
        ("speechM-02-turbo", "speech", ("text",), True),
        ("vidH_1.0_r2v", "video", ("prompt", "media"), True),
        ("imgG-1.5-edit", "image", ("prompt", "images"), True),
        ("vidK-v3-turbo-t2v", "video", ("prompt",), True),
        ("vidK-v1-6-multi-i2v", "video", ("image_list",), True),
        ("vidK-lip-sync", "video", ("session_id", "face_choose"), True),
        ("vidK-v3-motion-control", "video", ("image_url", "video_url"), True),
        ("vidP_v6_transition", "video", ("first_frame_image", "last_frame_image"), True),
        ("imgQ-edit-plus", "image", ("prompt", "images"), True),
        ("genW2.5-t2i-preview", "image", ("prompt",), True),
        ("genW2.6-r2v", "video", ("prompt",), True),
        ("asset-get", "asset", ("Id",), True),
        # Referenced operations (payloads are our documented choice, CONVENTIONS.md).
        ("imgM-v8.1-t2i", "image", ("prompt",), False),
        ("imgM_diffusion", "image", ("prompt",), False),
        ("asset-group-create", "asset", ("Name",), False),
        ("asset-create", "asset", ("GroupId", "URL"), False),
        ("vidK-face-identify", "face", ("video_url",), False),
        ("vidK-audio-preview", "audio", ("text",), False),
        ("vidK-custom-element", "subject", ("name",), False),
    ]
    return {rid: SimEndpoint(rid, kind, req, doc) for rid, kind, req, doc in rows}


ENDPOINTS: dict[str, SimEndpoint] = _table()


def base_seconds(endpoint_id: str) -> float:
    return BASE_SECONDS[ENDPOINTS[endpoint_id].kind]


_catalog_complete = False
_catalog_retry_at = 0.0
CATALOG_RETRY_SECONDS = 5.0


def _catalog_model(endpoint_id: str) -> Any:
    """The catalog's payload model for ``endpoint_id``, or None if it has none.

    While some catalog family modules are missing (or fail to import), the
    models already registered are used, and loading is retried every few seconds.
    """
    global _catalog_complete, _catalog_retry_at
    try:
        from ..catalog import _base
    except Exception:
        return None
    if not _catalog_complete and time.monotonic() >= _catalog_retry_at:
        try:
            _base.endpoints(documented_only=False)
            _catalog_complete = True
        except Exception:  # a family module is missing or broken: use what registered
            _catalog_retry_at = time.monotonic() + CATALOG_RETRY_SECONDS
    spec = _base._REGISTRY.get(endpoint_id)
    return spec.model if spec is not None else None


def _fallback_errors(endpoint_id: str, payload: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [
        {"loc": (name,), "msg": "field required"}
        for name in ENDPOINTS[endpoint_id].required
        if payload.get(name) in (None, "", [], {})
    ]


def payload_errors(endpoint_id: str, payload: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every problem of ``payload`` as ``{"loc", "msg"}`` items (empty when valid).

    The catalog model is used directly rather than through ``catalog.validate``,
    and its soft findings are collected, so the server thread never emits
    warnings (the spec hides some field names; they pass, as on the real service).
    """
    model = _catalog_model(endpoint_id)
    if model is None:
        return _fallback_errors(endpoint_id, payload)
    from pydantic import ValidationError

    from ..catalog import collect_warnings

    try:
        with collect_warnings():  # soft findings stay out of the user's notebook
            model.model_validate(dict(payload))
    except ValidationError as exc:
        out = []
        for err in exc.errors(include_url=False):
            msg = str(err["msg"]).removeprefix("Value error, ")
            out.append({"loc": tuple(err["loc"]), "msg": msg})
        return out
    except (TypeError, ValueError) as exc:  # a validator that raised plainly
        return [{"loc": (), "msg": str(exc)}]
    except Exception:  # a broken model must not turn bad input into a 500
        return _fallback_errors(endpoint_id, payload)
    return []


def describe_errors(errors: list[dict[str, Any]]) -> str:
    """The 422 ``detail`` text: ``Invalid payload: loc: msg; loc: msg``."""
    parts = []
    for err in errors:
        loc = ".".join(str(p) for p in err["loc"]) or "(body)"
        parts.append(f"{loc}: {err['msg']}")
    return "Invalid payload: " + "; ".join(parts)
