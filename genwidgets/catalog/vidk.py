"""vidK video: ``vidK-v3-turbo-t2v``, ``vidK-v1-6-multi-i2v``, ``vidK-lip-sync``,
``vidK-v3-motion-control``, and the operations they reference (face
identification, audio preview, custom subject elements; payloads not shown in the
spec: ours).

Where the spec says "not shown" the choice is written in the class docstring.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from .checks import MediaSpec, shown
from .findings import warn
from .markers import BILLED, MB, Number, ServiceDefault
from .model import Endpoint, Part, whole_text
from .registry import register

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
#: A time in the original audio, ms (the clip's start and end).
_AudioMs = Annotated[int | None, Field(ge=0, le=MAX_AUDIO_MS)]
ENHANCE_WORDS = ("true", "false", "on", "off", "enabled", "disabled")


class ElementRef(Part):
    """A subject from the library, by the ID the custom element operation returned."""

    element_id: int = Field(description="Element ID from the custom subject element operation.")


@register("vidK-v3-turbo-t2v", kind="video", title="Text to video (vidK v3 turbo)")
class VidKV3TurboT2V(Endpoint):
    """Text to video, vidK v3 turbo. ``duration`` is sent as given (an integer or a
    numeric string, as the spec allows; ``"5.0"`` as ``"5"``); ``enhance_prompt``
    takes a boolean or one of the listed words, nothing else."""

    prompt: str = Field(min_length=1, description="May hold positive and negative descriptions.")
    resolution: Annotated[
        Literal["720P", "1080P", "2K", "4K"] | None, BILLED, ServiceDefault("720P")
    ] = Field(None, description="720P, 1080P, 2K or 4K. Affects billing.")
    duration: Annotated[int | str | None, BILLED, ServiceDefault(5)] = Field(
        None, description="3-15 seconds, integer or numeric string. Affects billing."
    )
    aspect_ratio: Annotated[Literal["16:9", "9:16", "1:1"] | None, ServiceDefault("16:9")] = Field(
        None, description="16:9, 9:16 or 1:1."
    )
    sound: Annotated[Literal["on", "off"] | None, ServiceDefault("off")] = Field(
        None, description="on or off."
    )
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
            "takes true or false, or one of the strings "
            f"{', '.join(ENHANCE_WORDS)}; got {shown(value)}"
        )

    @field_validator("duration", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> Any:
        """Whole seconds 3-15: a number, sent as given, or its text, sent as its digits
        (``" 5.0 "`` is sent ``"5"``; a float with no fraction, as pandas and CSV rows
        give, as its whole number); before the type's check, so a list or 5.5 is told
        the same as ``"five"``."""
        if value is None or isinstance(value, bool):
            return value  # a boolean: the base's check says it is no number
        if isinstance(value, str):
            seconds: Any = whole_text(value)
        elif isinstance(value, float) and value.is_integer():  # never inf nor NaN
            seconds = int(value)
        else:
            seconds = value if type(value) is int else None
        if seconds is None:
            raise ValueError(
                f"expected whole seconds 3-15 (e.g. 5, '5' or 5.0); got {shown(value)}"
            )
        if not 3 <= int(seconds) <= 15:
            raise ValueError(f"must be 3-15 seconds; got {shown(value)}")
        return seconds


class ImageListItem(Part):
    """One reference image of vidK multi-image to video."""

    image: Annotated[str, VIDK_MULTI_IMAGE] = Field(
        description="Public URL or raw base64 with no data: prefix. jpg, jpeg, png; at most "
        "10 MB; width and height at least 300 px; aspect ratio 1:2.5 to 2.5:1; no cropping."
    )


@register("vidK-v1-6-multi-i2v", kind="video", title="Multiple images to video (vidK v1.6)")
class VidKV16MultiI2V(Endpoint):
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
    mode: Annotated[Literal["std", "pro"] | None, BILLED, ServiceDefault("std")] = Field(
        None,
        description="std (cost-efficient) or pro (higher quality). Affects billing.",
    )
    duration: Annotated[Literal["5", "10"] | None, BILLED, ServiceDefault("5")] = Field(
        None, description="'5' or '10' seconds. Affects billing."
    )
    aspect_ratio: Annotated[Literal["16:9", "9:16", "1:1"] | None, ServiceDefault("16:9")] = Field(
        None, description="16:9, 9:16 or 1:1."
    )


class FaceChoose(Part):
    """One face to lip-sync and its audio: exactly one of ``audio_id`` and ``sound_file``."""

    face_id: str = Field(min_length=1, description="Face ID from face identification.")
    audio_id: str | None = Field(
        None,
        min_length=1,
        description="Audio ID from the audio preview operation; audio generated within 30 "
        "days, 2-60 seconds.",
    )
    sound_file: Annotated[str | None, VIDK_SOUND] = Field(
        None,
        description="Raw base64 audio (no data: prefix) or accessible URL; mp3, wav, m4a; at "
        "most 5 MB; 2-60 seconds.",
    )
    sound_start_time: _AudioMs = Field(
        None,
        description="Clip start, ms from the original audio's start; the clip is at least 2 s.",
    )
    sound_end_time: _AudioMs = Field(
        None,
        description="Clip end, ms; at least 2 s after the start; not beyond the audio (at most "
        "60 s).",
    )
    sound_insert_time: int | None = Field(
        None,
        ge=0,
        description="Insert time, ms from video start; the inserted range must overlap the "
        "face's lip-sync interval by at least 2 s and lie within the video.",
    )
    sound_volume: Annotated[Number | None, ServiceDefault(1)] = Field(
        None, ge=0, le=2, description="Audio volume."
    )
    original_audio_volume: Number | None = Field(
        None, ge=0, le=2, description="Original audio volume; no effect without audio."
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


@register("vidK-lip-sync", kind="video", title="Lip-sync a video (vidK)")
class VidKLipSync(Endpoint):
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
            raise ValueError(f"takes exactly one face for now; got {len(value)}")
        return value


class MotionElement(Part):
    """A subject from the library for motion control."""

    element_id: int = Field(description="Element ID from the subject library.")


@register("vidK-v3-motion-control", kind="video", title="Motion-control video (vidK v3)")
class VidKV3MotionControl(Endpoint):
    """Animate a reference image with the motion of a reference video. Required flags
    are not shown: the sample request's ``image_url``, ``video_url``,
    ``character_orientation`` and ``mode`` are required. The watermark, callback
    and custom task ID fields have names not shown: pass them as extra fields."""

    prompt: str | None = Field(
        None,
        max_length=2500,
        description="At most 2500 characters; positive and negative descriptions allowed.",
    )
    image_url: Annotated[str, VIDK_MOTION_IMAGE] = Field(
        description="Reference image (characters and background): public URL or raw base64 "
        "without prefix; jpg, jpeg, png; at most 10 MB; 300-65536 px; aspect 1:2.5 to 2.5:1."
    )
    video_url: Annotated[str, VIDK_MOTION_VIDEO] = Field(
        description="Reference action video URL; mp4 or mov; at most 100 MB; width and height "
        "340-3850 px; at least 3 seconds; one continuous shot."
    )
    element_list: list[MotionElement] | None = Field(
        None,
        max_length=1,
        description="Up to 1 item {element_id} from the subject library; the video then "
        "follows only the reference video's orientation.",
    )
    keep_original_sound: Annotated[Literal["yes", "no"] | None, ServiceDefault("yes")] = Field(
        None, description="yes or no."
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


@register("vidK-face-identify", kind="face", title="Identify faces (vidK)", documented=False)
class VidKFaceIdentify(Endpoint):
    """Find faces in a video for lip-sync (referenced; payload is our choice):
    returns a session_id and face_data with face IDs and time ranges."""

    video_url: str = Field(min_length=1, description="URL of the video to search for faces.")


@register("vidK-audio-preview", kind="audio", title="Audio preview (vidK)", documented=False)
class VidKAudioPreview(Endpoint):
    """Speech audio for lip-sync (referenced; payload is our choice): returns an
    audio_id and its duration."""

    text: str = Field(min_length=1, description="Text to speak.")
    voice_id: str | None = Field(None, description="Voice ID; the service's default if omitted.")


@register(
    "vidK-custom-element", kind="subject", title="Create a subject element (vidK)", documented=False
)
class VidKCustomElement(Endpoint):
    """A custom subject element for element_list (referenced; payload is our
    choice): returns an element_id."""

    name: str = Field(min_length=1, description="Element name.")
    image_urls: list[str] = Field(
        min_length=1, max_length=4, description="1-4 image URLs of the subject."
    )
