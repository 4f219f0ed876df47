"""vidA multimodal video: ``vidA-2-0`` and ``vidA-2-0-fast``.

One body for both variants (they differ in the ``resolution`` options): content
items of text, images, video and audio, with the spec's roles and its three
mutually exclusive image scenarios. :data:`VIDA_AUDIO` is what the form's audio
rows accept (the spec shows no fields inside ``audio_url``).

The spec caps a vidA request body at 64 MB; the client checks that once, in bytes
of the exact body it sends, for every endpoint (not here).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from .checks import MediaSpec, shown
from .coerce import refusing
from .markers import BILLED, MB, ServiceDefault
from .model import Endpoint, Part
from .registry import register

VIDA_IMAGE = MediaSpec(
    media="image",
    encoding="data_url_lower",
    formats=("jpeg", "png", "webp", "bmp", "tiff", "gif"),
    max_bytes=30 * MB - 1,
    min_side=300,
    max_side=6000,
    sides_exclusive=True,
    min_aspect=0.4,
    max_aspect=2.5,
    aspect_exclusive=True,
    allow_asset=True,
    note="under 30 MB; width and height strictly between 300 and 6000 px; "
    "aspect ratio strictly between 0.4 and 2.5",
)
VIDA_VIDEO = MediaSpec(
    media="video",
    encoding="url_or_data",
    allow_asset=True,
    note="video URL or asset ID (asset://<ASSET_ID>)",
)
VIDA_AUDIO = MediaSpec(
    media="audio",
    encoding="url_or_data",
    allow_asset=True,
    note="audio URL; not attached to AudioUrl (the spec shows no fields inside audio_url), "
    "it is what the form's audio rows accept",
)

MAX_REFERENCE_IMAGES = 9


class ImageUrl(Part):
    """The ``image_url`` object of an image content item."""

    url: Annotated[str, VIDA_IMAGE] = Field(
        description="Public URL, or data:image/<lowercase format>;base64,<data>, or "
        "asset://<ASSET_ID>. Formats jpeg, png, webp, bmp, tiff, gif; width/height strictly "
        "between 0.4 and 2.5; sides strictly between 300 and 6000 px; under 30 MB."
    )


class VideoUrl(Part):
    """The ``video_url`` object of a video content item."""

    url: Annotated[str, VIDA_VIDEO] = Field(
        description="Video URL or asset ID (asset://<ASSET_ID>)."
    )


class AudioUrl(Part):
    """The ``audio_url`` object. Its fields are not shown in the spec; ``url`` is our
    assumption by analogy with ``image_url`` and ``video_url``, and other names pass."""

    url: str | None = Field(
        None,
        min_length=1,
        description="Audio URL (field name assumed; the spec does not show the fields "
        "inside audio_url).",
    )


ContentType = Literal["text", "image_url", "video_url", "audio_url"]
#: The roles each content item type may carry (the content builder offers these).
ROLES_BY_TYPE: dict[str, tuple[str, ...]] = {
    "text": (),
    "image_url": ("first_frame", "last_frame", "reference_image"),
    "video_url": ("reference_video",),
    "audio_url": ("reference_audio",),
}


class ContentItem(Part):
    """One content item. A single model (not a union per kind) so that error paths
    and form paths read ``("content", 0, "image_url", "url")``; the item's ``type``
    says which of ``text``, ``image_url``, ``video_url``, ``audio_url`` it carries."""

    type: ContentType = Field(description="Item kind: text, image_url, video_url or audio_url.")
    text: str | None = Field(
        None,
        min_length=1,
        description="For type text (required there): prompt describing the video; under 1000 "
        "words recommended. Dialogue in double quotes works best for generated audio.",
    )
    image_url: ImageUrl | None = Field(
        None, description="For type image_url (required there): object with the image's url."
    )
    video_url: VideoUrl | None = Field(
        None, description="For type video_url (required there): object with the video's url."
    )
    audio_url: AudioUrl | None = Field(
        None,
        description="For type audio_url (required there): object describing the audio "
        "(fields not shown). Audio needs a reference image or video in the same request.",
    )
    role: (
        Literal[
            "first_frame", "last_frame", "reference_image", "reference_video", "reference_audio"
        ]
        | None
    ) = Field(
        None,
        description="Images: first_frame (or omitted) for one first-frame image; first_frame "
        "and last_frame (both required) for first-and-last-frame; reference_image (required) on "
        "each of 1-9 reference images; the three cannot be combined. Video: reference_video; "
        "audio: reference_audio (conditionally required, conditions not shown).",
    )

    @model_validator(mode="after")
    def _fits_its_type(self) -> ContentItem:
        if getattr(self, self.type) is None:
            raise ValueError(f"a content item of type {self.type} needs its {self.type} field")
        others = [k for k in ROLES_BY_TYPE if k != self.type and getattr(self, k) is not None]
        if others:
            raise ValueError(
                f"a content item of type {self.type} carries no {', '.join(others)} "
                "(one item per text, image, video or audio)"
            )
        allowed = ROLES_BY_TYPE[self.type]
        if self.role is not None and self.role not in allowed:
            options = ", ".join(allowed) if allowed else "no role"
            raise ValueError(
                f"role {self.role} does not fit a {self.type} item (allowed: {options})"
            )
        return self


def image_scenario_problem(roles: Sequence[str | None]) -> str | None:
    """Why these image roles break the three mutually exclusive scenarios, or None."""
    if not roles:
        return None
    references = roles.count("reference_image")
    if references:
        if references != len(roles):
            return (
                "reference images (role reference_image) cannot be combined with first_frame, "
                "last_frame or role-less images: the three image scenarios are mutually "
                "exclusive"
            )
        if references > MAX_REFERENCE_IMAGES:
            return f"{references} reference images; 1-{MAX_REFERENCE_IMAGES} are allowed"
        return None
    if len(roles) == 1:
        if roles[0] == "last_frame":
            return "a last_frame image needs a first_frame image as well (first-and-last-frame)"
        return None
    if len(roles) == 2:
        if sorted(r or "" for r in roles) != ["first_frame", "last_frame"]:
            return (
                "two images form the first-and-last-frame scenario: give one role first_frame "
                "and the other role last_frame (both required); for reference images set role "
                "reference_image on each"
            )
        return None
    return (
        f"{len(roles)} images: only the reference-image scenario takes more than two, "
        f"1-{MAX_REFERENCE_IMAGES} images each with role reference_image"
    )


class _VidABody(Endpoint):
    """The body both vidA variants take. Differences: the ``resolution`` options.

    Choices where the spec is silent: several text items are allowed; video and audio
    roles may be omitted (their condition is not shown); a video URL is an http(s)
    URL, a data URL or ``asset://<id>`` (a bare ID is rejected: write ``asset://``).
    """

    content: list[ContentItem] = Field(
        min_length=1,
        description="Content items, each {type, text | image_url | video_url | audio_url, "
        "role}. Supported "
        "combinations: text only; text (optional) plus image; plus video; plus image and "
        "audio; plus image and video; plus video and audio; plus image, video and audio.",
    )
    generate_audio: Annotated[bool | None, ServiceDefault(True)] = Field(
        None,
        description="true: synchronized voice, effects and music generated "
        "from prompt and visuals. false: silent. Generated audio is mono.",
    )
    resolution: Annotated[
        Literal["480p", "720p", "1080p"] | None, BILLED, ServiceDefault("720p")
    ] = Field(None, description="480p, 720p or 1080p. Affects billing.")
    ratio: Annotated[
        Literal["16:9", "4:3", "1:1", "3:4", "9:16", "21:9", "adaptive"] | None,
        ServiceDefault("adaptive"),
    ] = Field(
        None,
        description="16:9, 4:3, 1:1, 3:4, 9:16, 21:9 or adaptive (text to "
        "video picks by prompt; first-frame modes follow the first image's ratio).",
    )
    duration: Annotated[int | None, BILLED, ServiceDefault(5)] = Field(
        None,
        description="Seconds, 4-15, or -1 for the model's choice (the actual duration comes "
        "back in the status). Affects billing.",
    )

    @field_validator("duration")
    @classmethod
    def _duration(cls, value: int | None) -> int | None:
        if value is not None and value != -1 and not 4 <= value <= 15:
            raise ValueError(
                f"must be 4-15 seconds, or -1 to let the model choose; got {shown(value)}"
            )
        return value

    @model_validator(mode="after")
    def _content_rules(self) -> _VidABody:
        kinds = [item.type for item in self.content]
        has_visual = "image_url" in kinds or "video_url" in kinds
        if "audio_url" in kinds and not has_visual:
            raise ValueError(
                "content: audio needs at least one reference image or video in the same "
                "request (supported: text only; text plus image, video, image+audio, "
                "image+video, video+audio, or image+video+audio)"
            )
        roles = [item.role for item in self.content if item.type == "image_url"]
        problem = image_scenario_problem(roles)
        if problem:
            raise ValueError(f"content: {problem}")
        return self


@register("vidA-2-0", kind="video", title="Multimodal video (vidA 2.0)")
class VidA20(_VidABody):
    """Multimodal video from text, images, video and audio: ``vidA-2-0``.

    All fields but ``content`` are optional; unset ones take the service's defaults.
    """


@register("vidA-2-0-fast", kind="video", title="Multimodal video, fast (vidA 2.0 fast)")
class VidA20Fast(_VidABody):
    """Multimodal video, faster variant: ``vidA-2-0-fast``. As ``vidA-2-0`` but
    ``resolution`` is 480p or 720p only."""

    resolution: Annotated[
        Literal["480p", "720p"] | None,
        BILLED,
        ServiceDefault("720p"),
        refusing(
            "1080p", "1080p is only available on vidA-2-0; vidA-2-0-fast offers 480p and 720p"
        ),
    ] = Field(None, description="480p or 720p (1080p is vidA-2-0 only). Affects billing.")
