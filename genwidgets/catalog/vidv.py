"""vidV video: text to video (``vidVq2-text2video``, ``vidVq1-text2video``) and
reusable subjects (``vidV-create-subjects``).

Where the spec says "not shown" the choice is written in the class docstring.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field, model_validator

from .checks import MediaSpec, shown
from .findings import warn
from .markers import BILLED, MB, ServiceDefault, UnsignedSeed
from .model import Endpoint
from .registry import register

_CALLBACK_NOTE = (
    "Callback URL. The service delivers no webhooks and rejects webhook information "
    "('webhook not supported'); what it does with callback_url is not shown. Poll instead."
)


def _json_text(value: Any) -> Any:
    """meta_data is a JSON string: a dict given instead is serialised, not sent as an object."""
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    return value


def _check_meta_data(value: str | None) -> str | None:
    if not value:
        return value
    try:
        parsed = json.loads(value)
    except ValueError:
        raise ValueError(
            'must be a JSON object string, e.g. \'{"Label": "..."}\'; it does not '
            f"parse as JSON; got {shown(value)}"
        ) from None
    if not isinstance(parsed, dict):
        raise ValueError(
            f'must be a JSON object string, e.g. \'{{"Label": "..."}}\'; got {shown(value)}'
        )
    return value


_META_DATA_NOTE = (
    "JSON-format pass-through string; conventional keys Label, ContentProducer, "
    "ContentPropagator, ProduceID, PropagateID, ReservedCode1, ReservedCode2; when empty the "
    "upstream default is used. A dict is serialised to JSON."
)
_OFF_PEAK_NOTE = (
    "Currently unavailable. Off-peak tasks consume fewer points, are generated "
    "within 48 hours, and unfinished ones are canceled with refund. Affects billing."
)

# The fields both vidV text-to-video endpoints define alike (each class keeps its own
# field order, which the form shows; an inherited field would move to the front).
_VidVPrompt = Annotated[
    str, Field(min_length=1, max_length=2000, description="Max 2000 characters.")
]
_PassThrough = Annotated[
    str | None,
    Field(
        max_length=1_048_576,
        description="Pass-through data, max 1048576 characters.",
    ),
]
_OffPeak = Annotated[bool | None, BILLED, ServiceDefault(False), Field(description=_OFF_PEAK_NOTE)]
_WatermarkPosition = Annotated[
    Literal[1, 2, 3, 4] | None,
    ServiceDefault(3),
    Field(description="1 top-left, 2 top-right, 3 bottom-right, 4 bottom-left."),
]
_MetaData = Annotated[
    str | None,
    BeforeValidator(_json_text),
    AfterValidator(_check_meta_data),
    Field(description=_META_DATA_NOTE),
]
_CallbackUrl = Annotated[str | None, Field(description=_CALLBACK_NOTE)]


class _VidVCommon(Endpoint):
    """Checks shared by the vidV text-to-video endpoints."""

    @model_validator(mode="after")
    def _advisories(self) -> _VidVCommon:
        if getattr(self, "off_peak", None):
            warn("off_peak is currently unavailable (spec); the task may run at normal priority")
        if getattr(self, "callback_url", None):
            warn(
                "callback_url: the service delivers no webhooks and may reject callback "
                "information with 'webhook not supported'; genwidgets polls instead"
            )
        return self


@register("vidVq2-text2video", kind="video", title="Text to video (vidV q2)")
class VidVq2Text2Video(_VidVCommon):
    """Text to video, vidV q2. ``movement_amplitude`` values are not shown for this
    endpoint: any string passes."""

    prompt: _VidVPrompt
    duration: Annotated[int | None, BILLED, ServiceDefault(5)] = Field(
        None, ge=1, le=10, description="Length in seconds. Affects billing."
    )
    seed: UnsignedSeed = Field(
        None, description="Absent or 0 means random; otherwise the given seed."
    )
    aspect_ratio: Annotated[
        Literal["16:9", "9:16", "3:4", "4:3", "1:1"] | None, ServiceDefault("16:9")
    ] = Field(None, description="16:9, 9:16, 3:4, 4:3 or 1:1.")
    resolution: Annotated[
        Literal["540p", "720p", "1080p"] | None, BILLED, ServiceDefault("720p")
    ] = Field(None, description="540p, 720p or 1080p. Affects billing.")
    movement_amplitude: str | None = Field(
        None,
        description="Accepted in requests; allowed values for this endpoint are not shown "
        "(vidVq1 takes auto, small, medium, large).",
    )
    bgm: Annotated[bool | None, ServiceDefault(False)] = Field(
        None,
        description="true adds music from a preset library, fitted to the "
        "duration. No effect when duration is 9 or 10.",
    )
    payload: _PassThrough = None
    off_peak: _OffPeak = None
    watermark: Annotated[bool | None, ServiceDefault(False)] = Field(
        None, description="Content fixed (AI-generated mark)."
    )
    wm_position: _WatermarkPosition = None
    wm_url: str | None = Field(
        None, description="Watermark image URL; the default mark when omitted."
    )
    meta_data: _MetaData = None
    callback_url: _CallbackUrl = None

    @model_validator(mode="after")
    def _bgm_long(self) -> VidVq2Text2Video:
        if self.bgm and self.duration in (9, 10):
            warn(f"bgm has no effect when duration is 9 or 10 (duration is {self.duration})")
        return self


@register("vidVq1-text2video", kind="video", title="Text to video (vidV q1)")
class VidVq1Text2Video(_VidVCommon):
    """Text to video, vidV q1. Which fields are required is not shown; ``prompt``
    is required (the sample request carries it, and text to video needs it)."""

    style: Annotated[Literal["general", "anime"] | None, ServiceDefault("general")] = Field(
        None, description="general (controlled by prompt) or anime."
    )
    prompt: _VidVPrompt
    duration: Annotated[Literal[5] | None, BILLED, ServiceDefault(5)] = Field(
        None, description="Only 5 (seconds). Affects billing."
    )
    seed: UnsignedSeed = Field(None, description="Absent or 0 means random.")
    aspect_ratio: Annotated[Literal["16:9", "9:16", "1:1"] | None, ServiceDefault("16:9")] = Field(
        None, description="16:9, 9:16 or 1:1."
    )
    resolution: Annotated[Literal["1080p"] | None, BILLED, ServiceDefault("1080p")] = Field(
        None, description="Only 1080p."
    )
    movement_amplitude: Annotated[
        Literal["auto", "small", "medium", "large"] | None, ServiceDefault("auto")
    ] = Field(None, description="auto, small, medium or large.")
    bgm: Annotated[bool | None, ServiceDefault(False)] = Field(
        None, description="true adds music from a preset library."
    )
    payload: _PassThrough = None
    off_peak: _OffPeak = None
    watermark: Annotated[bool | None, ServiceDefault(False)] = Field(
        None, description="Fixed AI-generated mark."
    )
    wm_position: _WatermarkPosition = None
    wm_url: str | None = Field(None, description="Watermark image URL.")
    meta_data: _MetaData = None
    callback_url: _CallbackUrl = None


VIDV_IMAGE = MediaSpec(
    media="image",
    encoding="data_url_mime",
    formats=("png", "jpeg", "webp"),
    max_bytes=50 * MB,
    min_aspect=1 / 4,
    max_aspect=4.0,
    max_decoded=20 * MB,
    note="aspect ratio within 1:4..4:1; decoded base64 under 20 MB",
)
VIDV_VIDEO = MediaSpec(
    media="video",
    encoding="data_url_mime",
    formats=("mp4", "avi", "mov"),
    max_bytes=100 * MB,
    min_side=128,
    min_aspect=1 / 4,
    max_aspect=4.0,
    max_seconds=5.0,
    max_decoded=20 * MB,
    note="5 seconds; at least 128*128; decoded base64 under 20 MB",
)


@register("vidV-create-subjects", kind="subject", title="Create a reusable subject (vidV)")
class VidVCreateSubjects(Endpoint):
    """Create a reusable subject from images (or one video). ``images`` is
    "conditional" in the spec; our reading: at least one of ``images`` and
    ``videos`` is needed."""

    name: str = Field(min_length=1, description="Subject name; unique recommended.")
    images: list[Annotated[str, VIDV_IMAGE]] | None = Field(
        None,
        min_length=1,
        max_length=3,
        description="1-3 images: accessible URL or data:image/<format>;base64,<data>. png, "
        "jpeg, jpg, webp; aspect ratio within 1:4..4:1; at most 50 MB; decoded base64 under "
        "20 MB.",
    )
    videos: list[Annotated[str, VIDV_VIDEO]] | None = Field(
        None,
        max_length=1,
        description="At most 1 video, 5 seconds; only the vidVq2-pro reference model supports "
        "video subjects. mp4, avi, mov; at least 128*128; aspect within 1:4..4:1; at most "
        "100 MB; base64 as data:video/mp4;base64,<data>, decoded under 20 MB.",
    )
    voice_id: str | None = Field(
        None,
        description="Only for audio-video direct output tasks (the system recommends a voice "
        "if omitted there); vidVq2-pro does not support a voice ID.",
    )

    @model_validator(mode="after")
    def _something_to_learn_from(self) -> VidVCreateSubjects:
        if not self.images and not self.videos:
            raise ValueError("a subject needs images (1-3) or a video")
        return self
