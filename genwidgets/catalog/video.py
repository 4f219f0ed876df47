"""Video endpoints: vidV (``vidVq2-text2video``, ``vidVq1-text2video``,
``vidV-create-subjects``), ``vidH_1.0_r2v``, vidK (``vidK-v3-turbo-t2v``,
``vidK-v1-6-multi-i2v``, ``vidK-lip-sync``, ``vidK-v3-motion-control`` and the
referenced face identification, audio preview and custom element operations),
``vidP_v6_transition`` and ``genW2.6-r2v``.

Where the spec says "not shown" the choice is written in the class docstring.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, field_validator, model_validator

from ._base import BILLED, MediaSpec, register
from .image import normalise_size
from .vida import (
    MB,
    SEED_MAX,
    DeprecatedFieldWarning,
    IneffectiveFieldWarning,
    MediaCheck,
    Number,
    _Endpoint,
    _Part,
    warn,
)

__all__ = ["DeprecatedFieldWarning", "IneffectiveFieldWarning"]

_CALLBACK_NOTE = (
    "Callback URL. The service delivers no webhooks and rejects webhook information "
    "('webhook not supported'); what it does with callback_url is not shown. Poll instead."
)


def _warn_callback(value: str | None) -> None:
    if value:
        warn(
            "callback_url: the service delivers no webhooks and may reject callback "
            "information with 'webhook not supported'; genwidgets polls instead",
            IneffectiveFieldWarning,
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
            'meta_data must be a JSON object string, e.g. \'{"Label": "..."}\'; it does not '
            "parse as JSON"
        ) from None
    if not isinstance(parsed, dict):
        raise ValueError('meta_data must be a JSON object string, e.g. \'{"Label": "..."}\'')
    return value


# ---------------------------------------------------------------------------
# vidV

_META_DATA_NOTE = (
    "JSON-format pass-through string; conventional keys Label, ContentProducer, "
    "ContentPropagator, ProduceID, PropagateID, ReservedCode1, ReservedCode2; when empty the "
    "upstream default is used. A dict is serialised to JSON."
)
_OFF_PEAK_NOTE = (
    "Default false. Currently unavailable. Off-peak tasks consume fewer points, are generated "
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
        alias="payload",
        max_length=1_048_576,
        description="Pass-through data, max 1048576 characters.",
    ),
]
_OffPeak = Annotated[bool | None, BILLED, Field(description=_OFF_PEAK_NOTE)]
_WatermarkPosition = Annotated[
    Literal[1, 2, 3, 4] | None,
    Field(description="1 top-left, 2 top-right, 3 bottom-right, 4 bottom-left. Default 3."),
]
_MetaData = Annotated[str | None, Field(description=_META_DATA_NOTE)]
_CallbackUrl = Annotated[str | None, Field(description=_CALLBACK_NOTE)]


class _VidVCommon(_Endpoint):
    """Checks shared by the vidV text-to-video endpoints."""

    @field_validator("meta_data", mode="before", check_fields=False)
    @classmethod
    def _meta_from_dict(cls, value: Any) -> Any:
        return _json_text(value)

    @field_validator("meta_data", check_fields=False)
    @classmethod
    def _meta_is_json(cls, value: str | None) -> str | None:
        return _check_meta_data(value)

    @model_validator(mode="after")
    def _advisories(self) -> _VidVCommon:
        if getattr(self, "off_peak", None):
            warn("off_peak is currently unavailable (spec); the task may run at normal priority")
        _warn_callback(getattr(self, "callback_url", None))
        return self


@register("vidVq2-text2video", kind="video", family="vidV", title="Text to video (vidV q2)")
class VidVq2Text2Video(_VidVCommon):
    """Text to video, vidV q2. ``movement_amplitude`` values are not shown for this
    endpoint: any string passes. The field ``payload`` is ``payload_`` in Python
    (``payload()`` is the model's method), ``payload`` on the wire."""

    prompt: _VidVPrompt
    duration: Annotated[int | None, BILLED] = Field(
        None, ge=1, le=10, description="Seconds, 1-10. Default 5. Affects billing."
    )
    seed: int | None = Field(
        None, description="Absent or 0 means random; otherwise the given seed."
    )
    aspect_ratio: Literal["16:9", "9:16", "3:4", "4:3", "1:1"] | None = Field(
        None, description="16:9, 9:16, 3:4, 4:3 or 1:1. Default 16:9."
    )
    resolution: Annotated[Literal["540p", "720p", "1080p"] | None, BILLED] = Field(
        None, description="540p, 720p or 1080p. Default 720p. Affects billing."
    )
    movement_amplitude: str | None = Field(
        None,
        description="Accepted in requests; allowed values for this endpoint are not shown "
        "(vidVq1 takes auto, small, medium, large).",
    )
    bgm: bool | None = Field(
        None,
        description="Default false. true adds music from a preset library, fitted to the "
        "duration. No effect when duration is 9 or 10.",
    )
    payload_: _PassThrough = None
    off_peak: _OffPeak = None
    watermark: bool | None = Field(
        None, description="Default false; content fixed (AI-generated mark)."
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


@register("vidVq1-text2video", kind="video", family="vidV", title="Text to video (vidV q1)")
class VidVq1Text2Video(_VidVCommon):
    """Text to video, vidV q1. Which fields are required is not shown; ``prompt``
    is required (the sample request carries it, and text to video needs it)."""

    style: Literal["general", "anime"] | None = Field(
        None, description="general (controlled by prompt) or anime. Default general."
    )
    prompt: _VidVPrompt
    duration: Annotated[Literal[5] | None, BILLED] = Field(
        None, description="Only 5 (seconds). Default 5. Affects billing."
    )
    seed: int | None = Field(None, description="Absent or 0 means random.")
    aspect_ratio: Literal["16:9", "9:16", "1:1"] | None = Field(
        None, description="16:9, 9:16 or 1:1. Default 16:9."
    )
    resolution: Annotated[Literal["1080p"] | None, BILLED] = Field(
        None, description="Only 1080p. Default 1080p."
    )
    movement_amplitude: Literal["auto", "small", "medium", "large"] | None = Field(
        None, description="auto, small, medium or large. Default auto."
    )
    bgm: bool | None = Field(
        None, description="Default false. true adds music from a preset library."
    )
    payload_: _PassThrough = None
    off_peak: _OffPeak = None
    watermark: bool | None = Field(None, description="Default false.")
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
    note="5 seconds; at least 128*128; decoded base64 under 20 MB",
)
_VIDV_BASE64_MAX = 20 * MB


@register(
    "vidV-create-subjects", kind="subject", family="vidV", title="Create a reusable subject (vidV)"
)
class VidVCreateSubjects(_Endpoint):
    """Create a reusable subject from images (or one video). ``images`` is
    "conditional" in the spec; our reading: at least one of ``images`` and
    ``videos`` is needed."""

    name: str = Field(min_length=1, description="Subject name; unique recommended.")
    images: Annotated[
        list[Annotated[str, AfterValidator(MediaCheck(VIDV_IMAGE, max_decoded=_VIDV_BASE64_MAX))]]
        | None,
        VIDV_IMAGE,
    ] = Field(
        None,
        min_length=1,
        max_length=3,
        description="1-3 images: accessible URL or data:image/<format>;base64,<data>. png, "
        "jpeg, jpg, webp; aspect ratio within 1:4..4:1; at most 50 MB; decoded base64 under "
        "20 MB.",
    )
    videos: Annotated[
        list[Annotated[str, AfterValidator(MediaCheck(VIDV_VIDEO, max_decoded=_VIDV_BASE64_MAX))]]
        | None,
        VIDV_VIDEO,
    ] = Field(
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


# ---------------------------------------------------------------------------
# vidH

VIDH_IMAGE = MediaSpec(
    media="image",
    encoding="data_url_mime",
    formats=("jpeg", "png", "webp"),
    max_bytes=20 * MB,
    min_short_side=400,
    note="short side at least 400 px (720P or higher recommended)",
)
VIDH_PROMPT_WEIGHT = 5000  # 2500 Chinese or 5000 other characters: Chinese counts double


def _is_cjk(char: str) -> bool:
    code = ord(char)
    return 0x4E00 <= code <= 0x9FFF or 0x3400 <= code <= 0x4DBF or 0xF900 <= code <= 0xFAFF


class VidHMedia(_Part):
    """One reference image of vidH."""

    type: Literal["reference_image"] = Field(description="Fixed: reference_image.")
    url: Annotated[str, VIDH_IMAGE, AfterValidator(MediaCheck(VIDH_IMAGE))] = Field(
        description="Public http(s) URL or data:<MIME_type>;base64,<data> with image/jpeg, "
        "image/png or image/webp. Short side at least 400 px; at most 20 MB."
    )


@register("vidH_1.0_r2v", kind="video", family="vidH", title="Reference images to video (vidH)")
class VidH10R2V(_Endpoint):
    """Video from 1-9 reference images. The prompt limit (2500 Chinese or 5000 other
    characters, excess truncated) is read as a weight where a Chinese character counts
    double; over it is a warning, since the service truncates rather than rejects."""

    prompt: str = Field(
        min_length=1,
        description="Chinese or English. [Image 1], [Image 2] refer to media order. Max 2500 "
        "Chinese or 5000 non-Chinese characters; excess is truncated.",
    )
    media: list[VidHMedia] = Field(
        min_length=1,
        max_length=9,
        description="1-9 reference images, each {type: reference_image, url}.",
    )
    duration: Annotated[int | None, BILLED] = Field(
        None, ge=3, le=15, description="3-15 seconds. Default 5. Billed on generated seconds."
    )
    resolution: Annotated[Literal["720P", "1080P"] | None, BILLED] = Field(
        None, description="720P or 1080P. Default 1080P. Price tiers differ."
    )
    ratio: Literal["16:9", "9:16", "1:1", "4:3", "3:4", "4:5", "5:4", "9:21", "21:9"] | None = (
        Field(None, description="16:9, 9:16, 1:1, 4:3, 3:4, 4:5, 5:4, 9:21, 21:9. Default 16:9.")
    )
    seed: int | None = Field(
        None, ge=0, le=SEED_MAX, description="0-2147483647; random if omitted."
    )
    watermark: bool | None = Field(
        None, description="Default true; fixed text in the lower-right corner."
    )

    @model_validator(mode="after")
    def _prompt_length(self) -> VidH10R2V:
        weight = sum(2 if _is_cjk(c) else 1 for c in self.prompt)
        if weight > VIDH_PROMPT_WEIGHT:
            warn(
                "prompt is longer than 2500 Chinese / 5000 other characters; the service "
                "truncates the excess"
            )
        return self


# ---------------------------------------------------------------------------
# vidK

VIDK_MULTI_IMAGE = MediaSpec(
    media="image",
    encoding="raw_base64",
    formats=("jpeg", "png"),
    max_bytes=10 * MB,
    min_side=300,
    min_aspect=0.4,
    max_aspect=2.5,
    note="no cropping is applied",
)
VIDK_MOTION_IMAGE = replace(
    VIDK_MULTI_IMAGE,
    max_side=65536,
    note="character upper or full body visible; proportions match the video",
)
VIDK_MOTION_VIDEO = MediaSpec(
    media="video",
    encoding="url_only",
    formats=("mp4", "mov"),
    max_bytes=100 * MB,
    min_side=340,
    max_side=3850,
    min_seconds=3.0,
    max_seconds=30.0,
    note="at most 10 s with character_orientation image, 30 s with video; one continuous shot",
)
VIDK_SOUND = MediaSpec(
    media="audio",
    encoding="raw_base64",
    formats=("mp3", "wav", "m4a"),
    max_bytes=5 * MB,
    min_seconds=2.0,
    max_seconds=60.0,
)
MIN_CLIP_MS = 2000
MAX_AUDIO_MS = 60_000
ENHANCE_WORDS = ("true", "false", "on", "off", "enabled", "disabled")


class ElementRef(_Part):
    """A subject from the library, by the ID the custom element operation returned."""

    element_id: int = Field(description="Element ID from the custom subject element operation.")


@register("vidK-v3-turbo-t2v", kind="video", family="vidK", title="Text to video (vidK v3 turbo)")
class VidKV3TurboT2V(_Endpoint):
    """Text to video, vidK v3 turbo. ``duration`` is sent as given (an integer or a
    numeric string, as the spec allows); ``enhance_prompt`` takes a boolean or one
    of the listed words, nothing else."""

    prompt: str = Field(min_length=1, description="May hold positive and negative descriptions.")
    resolution: Annotated[Literal["720P", "1080P", "2K", "4K"] | None, BILLED] = Field(
        None, description="720P, 1080P, 2K or 4K. Default 720P. Affects billing."
    )
    duration: Annotated[int | str | None, BILLED] = Field(
        None, description="3-15 seconds, integer or numeric string. Default 5. Affects billing."
    )
    aspect_ratio: Literal["16:9", "9:16", "1:1"] | None = Field(
        None, description="16:9, 9:16 or 1:1. Default 16:9."
    )
    sound: Literal["on", "off"] | None = Field(None, description="on or off. Default off.")
    enhance_prompt: bool | Literal["true", "false", "on", "off", "enabled", "disabled"] | None = (
        Field(
            None,
            description="true, false, or one of the strings true, false, on, off, enabled, "
            "disabled. Default not shown.",
        )
    )
    element_list: list[ElementRef] | None = Field(
        None,
        description="Items {element_id: integer} from the subject library (custom subject "
        "element operation).",
    )

    @field_validator("enhance_prompt", mode="before")
    @classmethod
    def _enhance_word(cls, value: Any) -> Any:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ENHANCE_WORDS:
            return value.strip().lower()
        raise ValueError(
            "enhance_prompt takes true or false, or one of the strings "
            f"{', '.join(ENHANCE_WORDS)}; got {value!r}"
        )

    @field_validator("duration")
    @classmethod
    def _duration(cls, value: int | str | None) -> int | str | None:
        if value is None:
            return value
        if isinstance(value, str) and not value.strip().isdigit():
            raise ValueError(f"duration must be whole seconds 3-15 (e.g. 5 or '5'); got {value!r}")
        if not 3 <= int(value) <= 15:
            raise ValueError(f"duration must be 3-15 seconds; got {value}")
        return value.strip() if isinstance(value, str) else value


class ImageListItem(_Part):
    """One reference image of vidK multi-image to video."""

    image: Annotated[str, VIDK_MULTI_IMAGE, AfterValidator(MediaCheck(VIDK_MULTI_IMAGE))] = Field(
        description="Public URL or raw base64 with no data: prefix. jpg, jpeg, png; at most "
        "10 MB; width and height at least 300 px; aspect ratio 1:2.5 to 2.5:1; no cropping."
    )


@register(
    "vidK-v1-6-multi-i2v",
    kind="video",
    family="vidK",
    title="Multiple images to video (vidK v1.6)",
)
class VidKV16MultiI2V(_Endpoint):
    """Video from up to 4 reference images. Required flags are not shown;
    ``image_list`` is required (image to video needs images), the rest optional.
    ``duration`` 5 or 10 given as a number is sent as the string the spec lists.
    The watermark, callback and custom task ID fields exist with names not shown:
    pass them as extra fields."""

    image_list: list[ImageListItem] = Field(
        min_length=1,
        max_length=4,
        description="1-4 items {image}: public URL or raw base64 with no data: prefix; jpg, "
        "jpeg, png; at most 10 MB; sides at least 300 px; aspect 1:2.5 to 2.5:1.",
    )
    prompt: str | None = Field(
        None, max_length=2500, description="Positive prompt, at most 2500 characters."
    )
    negative_prompt: str | None = Field(
        None, max_length=2500, description="At most 2500 characters."
    )
    mode: Annotated[Literal["std", "pro"] | None, BILLED] = Field(
        None,
        description="std (cost-efficient) or pro (higher quality). Default std. Affects billing.",
    )
    duration: Annotated[Literal["5", "10"] | None, BILLED] = Field(
        None, description="'5' or '10' seconds. Default 5. Affects billing."
    )
    aspect_ratio: Literal["16:9", "9:16", "1:1"] | None = Field(
        None, description="16:9, 9:16 or 1:1. Default 16:9."
    )


class FaceChoose(_Part):
    """One face to lip-sync and its audio: exactly one of ``audio_id`` and ``sound_file``."""

    face_id: str = Field(min_length=1, description="Face ID from face identification.")
    audio_id: str | None = Field(
        None,
        min_length=1,
        description="Audio ID from the audio preview operation; audio generated within 30 "
        "days, 2-60 seconds.",
    )
    sound_file: Annotated[str | None, VIDK_SOUND, AfterValidator(MediaCheck(VIDK_SOUND))] = Field(
        None,
        description="Raw base64 audio (no data: prefix) or accessible URL; mp3, wav, m4a; at "
        "most 5 MB; 2-60 seconds.",
    )
    sound_start_time: int | None = Field(
        None,
        ge=0,
        le=MAX_AUDIO_MS,
        description="Clip start, ms from the original audio's start; the clip is at least 2 s.",
    )
    sound_end_time: int | None = Field(
        None,
        ge=0,
        le=MAX_AUDIO_MS,
        description="Clip end, ms; at least 2 s after the start; not beyond the audio (at most "
        "60 s).",
    )
    sound_insert_time: int | None = Field(
        None,
        ge=0,
        description="Insert time, ms from video start; the inserted range must overlap the "
        "face's lip-sync interval by at least 2 s and lie within the video.",
    )
    sound_volume: Number | None = Field(
        None, ge=0, le=2, description="Audio volume 0-2. Default 1."
    )
    original_audio_volume: Number | None = Field(
        None, ge=0, le=2, description="Original audio volume 0-2; no effect without audio."
    )

    @model_validator(mode="after")
    def _audio_and_clip(self) -> FaceChoose:
        if (self.audio_id is None) == (self.sound_file is None):
            raise ValueError("give exactly one of audio_id and sound_file")
        start = self.sound_start_time or 0
        if self.sound_end_time is not None and self.sound_end_time - start < MIN_CLIP_MS:
            raise ValueError(
                "the audio clip must be at least 2 s: sound_end_time - sound_start_time "
                f">= {MIN_CLIP_MS} ms; got {self.sound_end_time - start} ms"
            )
        return self


@register("vidK-lip-sync", kind="video", family="vidK", title="Lip-sync a video (vidK)")
class VidKLipSync(_Endpoint):
    """Lip-sync faces found by the face identification operation (call it first).
    Required flags are not shown: ``session_id``, ``face_choose`` and each
    ``face_id`` are required, as the prose makes them prerequisites. Custom task ID
    and callback exist with names not shown: pass them as extra fields."""

    session_id: str = Field(min_length=1, description="Session ID from face identification.")
    face_choose: list[FaceChoose] = Field(
        description="Faces to lip-sync; currently exactly one person."
    )

    @field_validator("face_choose")
    @classmethod
    def _one_face(cls, value: list[FaceChoose]) -> list[FaceChoose]:
        if len(value) != 1:
            raise ValueError(f"face_choose takes exactly one face for now; got {len(value)}")
        return value


class MotionElement(_Part):
    """A subject from the library for motion control."""

    element_id: int = Field(description="Element ID from the subject library.")


@register(
    "vidK-v3-motion-control",
    kind="video",
    family="vidK",
    title="Motion-control video (vidK v3)",
)
class VidKV3MotionControl(_Endpoint):
    """Animate a reference image with the motion of a reference video. Required flags
    are not shown: the sample request's ``image_url``, ``video_url``,
    ``character_orientation`` and ``mode`` are required. The watermark, callback
    and custom task ID fields have names not shown: pass them as extra fields."""

    prompt: str | None = Field(
        None,
        max_length=2500,
        description="At most 2500 characters; positive and negative descriptions allowed.",
    )
    image_url: Annotated[str, VIDK_MOTION_IMAGE, AfterValidator(MediaCheck(VIDK_MOTION_IMAGE))] = (
        Field(
            description="Reference image (characters and background): public URL or raw base64 "
            "without prefix; jpg, jpeg, png; at most 10 MB; 300-65536 px; aspect 1:2.5 to 2.5:1."
        )
    )
    video_url: Annotated[str, VIDK_MOTION_VIDEO, AfterValidator(MediaCheck(VIDK_MOTION_VIDEO))] = (
        Field(
            description="Reference action video URL; mp4 or mov; at most 100 MB; width and height "
            "340-3850 px; at least 3 seconds; one continuous shot."
        )
    )
    element_list: list[MotionElement] | None = Field(
        None,
        max_length=1,
        description="Up to 1 item {element_id} from the subject library; the video then "
        "follows only the reference video's orientation.",
    )
    keep_original_sound: Literal["yes", "no"] | None = Field(
        None, description="yes or no. Default yes."
    )
    character_orientation: Literal["image", "video"] = Field(
        description="image (reference video at most 10 s) or video (at most 30 s)."
    )
    mode: Annotated[Literal["std", "pro"], BILLED] = Field(
        description="std or pro. Affects billing."
    )

    @model_validator(mode="after")
    def _orientation(self) -> VidKV3MotionControl:
        if self.element_list and self.character_orientation == "image":
            warn(
                "with element_list the video follows only the reference video's orientation; "
                "character_orientation 'image' has no effect"
            )
        return self


@register(
    "vidK-face-identify",
    kind="face",
    family="vidK",
    title="Identify faces (vidK)",
    documented=False,
)
class VidKFaceIdentify(_Endpoint):
    """Find faces in a video for lip-sync (referenced; payload is our choice):
    returns a session_id and face_data with face IDs and time ranges."""

    video_url: str = Field(min_length=1, description="URL of the video to search for faces.")


@register(
    "vidK-audio-preview",
    kind="audio",
    family="vidK",
    title="Audio preview (vidK)",
    documented=False,
)
class VidKAudioPreview(_Endpoint):
    """Speech audio for lip-sync (referenced; payload is our choice): returns an
    audio_id and its duration."""

    text: str = Field(min_length=1, description="Text to speak.")
    voice_id: str | None = Field(None, description="Voice ID; the service's default if omitted.")


@register(
    "vidK-custom-element",
    kind="subject",
    family="vidK",
    title="Create a subject element (vidK)",
    documented=False,
)
class VidKCustomElement(_Endpoint):
    """A custom subject element for element_list (referenced; payload is our
    choice): returns an element_id."""

    name: str = Field(min_length=1, description="Element name.")
    image_urls: list[str] = Field(
        min_length=1, max_length=4, description="1-4 image URLs of the subject."
    )


# ---------------------------------------------------------------------------
# vidP

VIDP_FRAME = MediaSpec(
    media="image",
    encoding="url_only",
    formats=("jpeg", "png", "webp"),
    max_bytes=20 * MB,
    max_side=10000,
    note="the service uploads the URL upstream",
)


@register(
    "vidP_v6_transition",
    kind="video",
    family="vidP",
    title="First-to-last frame transition (vidP v6)",
)
class VidPV6Transition(_Endpoint):
    """A transition video from a first to a last frame. Both frames are public URLs:
    the service uploads them upstream, so local files cannot be sent. Defaults of
    ``duration`` and ``quality`` are not shown."""

    first_frame_image: Annotated[str, VIDP_FRAME, AfterValidator(MediaCheck(VIDP_FRAME))] = Field(
        description="Public HTTP/HTTPS URL; JPG, PNG, WebP; at most 20 MB; width or height up "
        "to 10000 px."
    )
    last_frame_image: Annotated[str, VIDP_FRAME, AfterValidator(MediaCheck(VIDP_FRAME))] = Field(
        description="Public HTTP/HTTPS URL; same rules as first_frame_image."
    )
    prompt: str | None = Field(None, max_length=5000, description="At most 5000 characters.")
    duration: Annotated[Number | None, BILLED] = Field(
        None, ge=1, le=15, description="1-15 seconds (default not shown). Affects billing."
    )
    quality: Annotated[Literal["360p", "540p", "720p", "1080p"] | None, BILLED] = Field(
        None,
        description="360p, 540p, 720p or 1080p (default not shown); credit cost per output "
        "second differs per tier.",
    )
    seed: int | None = Field(None, ge=0, le=SEED_MAX, description="0-2147483647.")
    generate_audio_switch: Annotated[bool | None, BILLED] = Field(
        None, description="Generate audio. Default false; audio raises the credit cost."
    )


# ---------------------------------------------------------------------------
# genW2.6

GENW26_REFERENCE = MediaSpec(
    media="image",
    encoding="url_only",
    formats=("jpeg", "png", "bmp", "webp", "mp4", "mov"),
    note="image or video URL: images JPEG, JPG, PNG, BMP, WEBP; videos MP4, MOV",
)
GENW26_REFERENCE_VIDEO = MediaSpec(
    media="video",
    encoding="url_only",
    formats=("mp4", "mov"),
    max_bytes=100 * MB,
    min_seconds=3.0,
    max_seconds=30.0,
)
# The 720P and 1080P classes of the ratios 16:9, 9:16, 1:1, 4:3, 3:4 (the spec lists the
# classes and ratios; the pixel sizes are the model family's documented ones).
GENW26_SIZES = Literal[
    "1280*720",
    "720*1280",
    "960*960",
    "1088*832",
    "832*1088",
    "1920*1080",
    "1080*1920",
    "1440*1440",
    "1632*1248",
    "1248*1632",
]


@register("genW2.6-r2v", kind="video", family="genW", title="Reference to video (genW 2.6)")
class GenW26R2V(_Endpoint):
    """Video from reference images or videos. Required flags are not shown: exactly
    one of ``reference_urls`` (preferred) and ``reference_video_urls`` is required,
    everything else is optional. ``reference_video_urls`` raises a
    :class:`DeprecatedFieldWarning`. ``size`` is one of the ten 720P/1080P sizes;
    ``1920x1080`` is normalised to ``1920*1080``. The audio flag's name is not shown:
    pass it as an extra field."""

    prompt: str | None = Field(
        None,
        max_length=1500,
        description="At most 1500 characters; character1, character2 refer to reference order.",
    )
    negative_prompt: str | None = Field(None, description="Chinese or English; excess truncated.")
    reference_urls: Annotated[
        list[Annotated[str, AfterValidator(MediaCheck(GENW26_REFERENCE))]] | None,
        GENW26_REFERENCE,
    ] = Field(
        None,
        min_length=1,
        max_length=5,
        description="1-5 image or video URLs, in placeholder order; images JPEG, JPG, PNG, BMP, "
        "WEBP; videos MP4, MOV. Preferred; do not send with reference_video_urls.",
    )
    reference_video_urls: Annotated[
        list[Annotated[str, AfterValidator(MediaCheck(GENW26_REFERENCE_VIDEO))]] | None,
        GENW26_REFERENCE_VIDEO,
    ] = Field(
        None,
        min_length=1,
        description="Soon to be deprecated (use reference_urls); do not send with "
        "reference_urls. MP4, MOV; 3-30 seconds; at most 100 MB.",
    )
    duration: Annotated[int | None, BILLED] = Field(
        None, ge=2, le=10, description="Seconds, 2-10. Default 5. Affects cost."
    )
    size: Annotated[GENW26_SIZES | None, BILLED] = Field(
        None,
        description="width*height: 720P class 1280*720, 720*1280, 960*960, 1088*832, 832*1088; "
        "1080P class 1920*1080, 1080*1920, 1440*1440, 1632*1248, 1248*1632 (16:9, 9:16, 1:1, "
        "4:3, 3:4). Default 1920*1080. The tier affects cost.",
    )
    shot_type: Literal["single", "multi"] | None = Field(
        None,
        description="single or multi. Default single; only effective when prompt rewriting is.",
    )
    seed: int | None = Field(None, ge=0, le=SEED_MAX, description="0-2147483647.")
    watermark: bool | None = Field(None, description="Default false; lower-right corner.")

    @field_validator("size", mode="before")
    @classmethod
    def _size_spelling(cls, value: Any) -> Any:
        return normalise_size(value)

    @model_validator(mode="after")
    def _one_reference_kind(self) -> GenW26R2V:
        has_urls = self.reference_urls is not None
        has_videos = self.reference_video_urls is not None
        if has_urls and has_videos:
            raise ValueError(
                "send reference_urls or reference_video_urls, not both (reference_urls is "
                "preferred)"
            )
        if not has_urls and not has_videos:
            raise ValueError("reference_urls (1-5 image or video URLs) is required")
        if has_videos:
            warn(
                "reference_video_urls is soon to be deprecated; use reference_urls (it takes "
                "videos too)",
                DeprecatedFieldWarning,
            )
        return self
