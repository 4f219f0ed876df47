"""genW: text to image (``genW2.5-t2i-preview``) and reference to video
(``genW2.6-r2v``).

Where the spec says excess text is truncated, a longer text is a warning
(:class:`~genwidgets.catalog.findings.IneffectiveFieldWarning`), not an error: the
service accepts it.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field, model_validator

from .checks import MediaSpec
from .coerce import SIZE_WITH_STAR, Size, SizeRule
from .findings import DeprecatedFieldWarning, warn, warn_truncated
from .markers import BILLED, GENERATIONS, MB, Seed, ServiceDefault
from .model import Endpoint
from .registry import register

GENW25_MIN_PIXELS, GENW25_MAX_PIXELS = 1280 * 1280, 1440 * 1440
GENW25_MIN_ASPECT, GENW25_MAX_ASPECT = 1 / 4, 4.0
GENW25_SIZE = SizeRule(
    min_pixels=GENW25_MIN_PIXELS,
    max_pixels=GENW25_MAX_PIXELS,
    min_aspect=GENW25_MIN_ASPECT,
    max_aspect=GENW25_MAX_ASPECT,
    pixels_text=f"1280*1280 ({GENW25_MIN_PIXELS}) and 1440*1440 ({GENW25_MAX_PIXELS})",
    aspect_text="1:4 and 4:1",
)


@register("genW2.5-t2i-preview", kind="image", title="Text to image (genW 2.5 preview)")
class GenW25T2IPreview(Endpoint):
    """Text to image, served through the international node. A ``size`` written
    ``1280x1280`` is normalised to ``1280*1280``."""

    prompt: str = Field(
        min_length=1,
        description="Chinese or English; at most 2000 characters; excess truncated.",
    )
    negative_prompt: str | None = Field(
        None, description="At most 500 characters; excess truncated."
    )
    size: Annotated[Size | None, ServiceDefault("1280*1280"), AfterValidator(GENW25_SIZE)] = Field(
        None,
        description="width*height; total pixels between 1280*1280 and 1440*1440; aspect ratio "
        "1:4 to 4:1.",
    )
    n: Annotated[int | None, BILLED, GENERATIONS, ServiceDefault(4)] = Field(
        None, ge=1, le=4, description="Number of images. Affects cost."
    )
    seed: Seed = Field(None, description="Random if omitted.")
    prompt_extend: Annotated[bool | None, ServiceDefault(True)] = Field(
        None, description="Improves short prompts, adds latency."
    )
    watermark: Annotated[bool | None, ServiceDefault(False)] = Field(
        None,
        description="Fixed AI-generated mark in the lower-right corner.",
    )

    @model_validator(mode="after")
    def _truncation(self) -> GenW25T2IPreview:
        warn_truncated("prompt", self.prompt, 2000)
        warn_truncated("negative_prompt", self.negative_prompt, 500)
        return self


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


@register("genW2.6-r2v", kind="video", title="Reference to video (genW 2.6)")
class GenW26R2V(Endpoint):
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
    reference_urls: list[Annotated[str, GENW26_REFERENCE]] | None = Field(
        None,
        min_length=1,
        max_length=5,
        description="1-5 image or video URLs, in placeholder order; images JPEG, JPG, PNG, BMP, "
        "WEBP; videos MP4, MOV. Preferred; do not send with reference_video_urls.",
    )
    reference_video_urls: list[Annotated[str, GENW26_REFERENCE_VIDEO]] | None = Field(
        None,
        min_length=1,
        description="Soon to be deprecated (use reference_urls); do not send with "
        "reference_urls. MP4, MOV; 3-30 seconds; at most 100 MB.",
    )
    duration: Annotated[int | None, BILLED, ServiceDefault(5)] = Field(
        None, ge=2, le=10, description="Length in seconds. Affects cost."
    )
    size: Annotated[GENW26_SIZES | None, SIZE_WITH_STAR, BILLED, ServiceDefault("1920*1080")] = (
        Field(
            None,
            description="width*height: 720P class 1280*720, 720*1280, 960*960, 1088*832, 832*1088; "
            "1080P class 1920*1080, 1080*1920, 1440*1440, 1632*1248, 1248*1632 (16:9, 9:16, 1:1, "
            "4:3, 3:4). The tier affects cost.",
        )
    )
    shot_type: Annotated[Literal["single", "multi"] | None, ServiceDefault("single")] = Field(
        None,
        description="single or multi. Only effective when prompt rewriting is.",
    )
    seed: Seed = Field(None, description="Random seed.")
    watermark: Annotated[bool | None, ServiceDefault(False)] = Field(
        None, description="Lower-right corner."
    )

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
