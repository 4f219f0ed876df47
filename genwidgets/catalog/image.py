"""Image editing and generation: ``imgG-1.5-edit``, ``imgQ-edit-plus``,
``genW2.5-t2i-preview``; plus the ``width*height`` size helpers (genW2.6 uses them).

Where the spec says excess text is truncated, a longer text is a warning
(:class:`IneffectiveFieldWarning`), not an error: the service accepts it.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, field_validator, model_validator

from ._base import BILLED, MediaSpec, register
from .vida import (
    MB,
    SEED_MAX,
    IneffectiveFieldWarning,
    MediaCheck,
    _Endpoint,
    _Part,
    warn,
)

_SIZE = re.compile(r"\s*(\d+)\s*[*xX×]\s*(\d+)\s*")


def normalise_size(value: Any) -> Any:
    """``"1024x1024"`` or ``" 1024 * 1024 "`` → ``"1024*1024"``; anything else unchanged."""
    if isinstance(value, str):
        match = _SIZE.fullmatch(value)
        if match:
            return f"{int(match.group(1))}*{int(match.group(2))}"
    return value


def parse_size(value: str) -> tuple[int, int]:
    """``"1280*720"`` → ``(1280, 720)``; a clear error for anything else."""
    match = _SIZE.fullmatch(value)
    if not match:
        raise ValueError(f"size must be width*height in pixels, e.g. 1280*1280; got {value!r}")
    return int(match.group(1)), int(match.group(2))


def warn_truncated(name: str, value: str | None, limit: int) -> None:
    if value is not None and len(value) > limit:
        warn(
            f"{name} has {len(value)} characters; the service truncates it to {limit}",
            IneffectiveFieldWarning,
        )


def _one_to_list(value: Any) -> Any:
    """A single image string where a list is wanted is an unambiguous slip: wrap it."""
    return [value] if isinstance(value, str) else value


# ---------------------------------------------------------------------------
# imgG

IMGG_IMAGE = MediaSpec(media="image", encoding="data_url_mime", formats=("png", "jpeg", "webp"))
IMGG_MAX_IMAGES = 16


class ImgGMask(_Part):
    """The edit mask: exactly one of ``file_id`` and ``image_url``."""

    file_id: str | None = Field(None, min_length=1, description="ID of an uploaded mask file.")
    image_url: str | None = Field(
        None,
        min_length=1,
        max_length=20_971_520,
        description="Mask image URL or data URL, max length 20971520. Transparent areas are "
        "editable; must match the edited image's format and size and have an alpha channel.",
    )

    @model_validator(mode="after")
    def _one_source(self) -> ImgGMask:
        if (self.file_id is None) == (self.image_url is None):
            raise ValueError("mask takes exactly one of file_id and image_url")
        return self


@register("imgG-1.5-edit", kind="image", family="imgG", title="Image editing (imgG 1.5)")
class ImgG15Edit(_Endpoint):
    """Edit images from a prompt.

    The spec types ``images`` as "any" (item shape not shown); our choice is a list
    of 1-16 strings, each a URL or a ``data:<MIME>;base64,`` URL; a single string is
    wrapped in a list. ``size`` and ``quality`` are flagged as billing fields: they
    set the output's render cost tier.
    """

    prompt: str = Field(min_length=1, max_length=32000, description="Max 32000 characters.")
    images: Annotated[list[Annotated[str, AfterValidator(MediaCheck(IMGG_IMAGE))]], IMGG_IMAGE] = (
        Field(
            min_length=1,
            max_length=IMGG_MAX_IMAGES,
            description="Up to 16 input images, each a URL or data:<MIME>;base64,<data> "
            "(png, jpeg, webp).",
        )
    )
    mask: ImgGMask | None = Field(
        None,
        description="Transparent areas are editable; give either file_id or image_url; must "
        "match the edited image's format and size and have an alpha channel.",
    )
    background: Literal["transparent", "opaque", "auto"] | None = Field(
        None, description="transparent, opaque or auto. Default auto."
    )
    input_fidelity: Literal["high", "low"] | None = Field(
        None, description="high or low. Default low."
    )
    n: Annotated[int | None, BILLED] = Field(
        None, ge=1, le=10, description="Number of images, 1-10. Default 1. Affects billing."
    )
    output_compression: int | None = Field(
        None,
        ge=0,
        le=100,
        description="0-100. Default 100. Only for jpeg or webp output.",
    )
    output_format: Literal["png", "jpeg", "webp"] | None = Field(
        None, description="png, jpeg or webp. Default png."
    )
    quality: Annotated[Literal["low", "medium", "high", "auto"] | None, BILLED] = Field(
        None, description="low, medium, high or auto. Default auto. Affects billing."
    )
    size: Annotated[Literal["1024x1024", "1024x1536", "1536x1024", "auto"] | None, BILLED] = Field(
        None, description="1024x1024, 1024x1536, 1536x1024 or auto. Default auto."
    )
    moderation: Literal["auto", "low"] | None = Field(
        None, description="auto or low. Default auto."
    )
    user: str | None = Field(None, description="End-user identifier.")

    @field_validator("images", mode="before")
    @classmethod
    def _wrap(cls, value: Any) -> Any:
        return _one_to_list(value)

    @field_validator("size", mode="before")
    @classmethod
    def _size_spelling(cls, value: Any) -> Any:
        # the spec spells imgG sizes with an "x", not "*"
        if isinstance(value, str) and _SIZE.fullmatch(value):
            return str(normalise_size(value)).replace("*", "x")
        return value

    @model_validator(mode="after")
    def _compression_needs_lossy(self) -> ImgG15Edit:
        if self.output_compression is not None and self.output_format not in ("jpeg", "webp"):
            warn(
                "output_compression only applies to jpeg or webp output; output_format is "
                f"{self.output_format or 'png (the default)'}",
                IneffectiveFieldWarning,
            )
        return self


# ---------------------------------------------------------------------------
# imgQ

IMGQ_IMAGE = MediaSpec(
    media="image",
    encoding="data_url_mime",
    formats=("jpeg", "png", "bmp", "tiff", "webp", "gif"),
    max_bytes=10 * MB,
    note="width and height 384-3072 recommended; animated GIF: first frame only",
)
IMGQ_SIDE_MIN, IMGQ_SIDE_MAX = 512, 2048


@register("imgQ-edit-plus", kind="image", family="imgQ", title="Multi-image editing (imgQ)")
class ImgQEditPlus(_Endpoint):
    """Edit with 1-3 images; the output's aspect ratio follows the last image.
    A ``size`` written ``1024x1024`` is normalised to ``1024*1024``."""

    prompt: str = Field(
        min_length=1,
        description="Chinese or English; at most 800 tokens; excess truncated.",
    )
    images: Annotated[list[Annotated[str, AfterValidator(MediaCheck(IMGQ_IMAGE))]], IMGQ_IMAGE] = (
        Field(
            min_length=1,
            max_length=3,
            description="1-3 URLs or data:<MIME>;base64,<data>; order defines image order; the "
            "output aspect ratio follows the last image. JPG, JPEG, PNG, BMP, TIFF, WEBP, GIF "
            "(animated: first frame); 384-3072 px recommended; at most 10 MB.",
        )
    )
    negative_prompt: str | None = Field(
        None, description="At most 500 characters; excess truncated."
    )
    size: str | None = Field(
        None,
        description="width*height, each 512-2048, adjusted to the nearest multiple of 16. If "
        "omitted, the aspect ratio follows the last input image at about 1024*1024 pixels.",
    )
    n: Annotated[int | None, BILLED] = Field(
        None, ge=1, le=6, description="Number of images, 1-6. Default 1. Affects billing."
    )
    prompt_extend: bool | None = Field(None, description="Prompt rewriting. Default true.")
    watermark: bool | None = Field(
        None, description="Default false; model watermark in the lower-right corner."
    )
    seed: int | None = Field(
        None,
        ge=0,
        le=SEED_MAX,
        description="0-2147483647; the same seed does not guarantee identical output.",
    )

    @field_validator("images", mode="before")
    @classmethod
    def _wrap(cls, value: Any) -> Any:
        return _one_to_list(value)

    @field_validator("size", mode="before")
    @classmethod
    def _size_spelling(cls, value: Any) -> Any:
        return normalise_size(value)

    @field_validator("size")
    @classmethod
    def _size(cls, value: str | None) -> str | None:
        if value is None:
            return value
        width, height = parse_size(value)
        for name, side in (("width", width), ("height", height)):
            if not IMGQ_SIDE_MIN <= side <= IMGQ_SIDE_MAX:
                raise ValueError(
                    f"size {name} must be {IMGQ_SIDE_MIN}-{IMGQ_SIDE_MAX} px; got {side}"
                )
        return value

    @model_validator(mode="after")
    def _truncation(self) -> ImgQEditPlus:
        warn_truncated("negative_prompt", self.negative_prompt, 500)
        return self


# ---------------------------------------------------------------------------
# genW2.5

GENW25_MIN_PIXELS, GENW25_MAX_PIXELS = 1280 * 1280, 1440 * 1440
GENW25_MIN_ASPECT, GENW25_MAX_ASPECT = 1 / 4, 4.0


@register(
    "genW2.5-t2i-preview", kind="image", family="genW", title="Text to image (genW 2.5 preview)"
)
class GenW25T2IPreview(_Endpoint):
    """Text to image, served through the international node. A ``size`` written
    ``1280x1280`` is normalised to ``1280*1280``."""

    prompt: str = Field(
        min_length=1,
        description="Chinese or English; at most 2000 characters; excess truncated.",
    )
    negative_prompt: str | None = Field(
        None, description="At most 500 characters; excess truncated."
    )
    size: str | None = Field(
        None,
        description="width*height; total pixels between 1280*1280 and 1440*1440; aspect ratio "
        "1:4 to 4:1. Default 1280*1280.",
    )
    n: Annotated[int | None, BILLED] = Field(
        None, ge=1, le=4, description="Number of images, 1-4. Default 4. Affects cost."
    )
    seed: int | None = Field(
        None, ge=0, le=SEED_MAX, description="0-2147483647; random if omitted."
    )
    prompt_extend: bool | None = Field(
        None, description="Default true; improves short prompts, adds latency."
    )
    watermark: bool | None = Field(
        None,
        description="Default false; fixed AI-generated mark in the lower-right corner.",
    )

    @field_validator("size", mode="before")
    @classmethod
    def _size_spelling(cls, value: Any) -> Any:
        return normalise_size(value)

    @field_validator("size")
    @classmethod
    def _size(cls, value: str | None) -> str | None:
        if value is None:
            return value
        width, height = parse_size(value)
        pixels = width * height
        if not GENW25_MIN_PIXELS <= pixels <= GENW25_MAX_PIXELS:
            raise ValueError(
                f"size {value} has {pixels} pixels; total pixels must be between 1280*1280 "
                f"({GENW25_MIN_PIXELS}) and 1440*1440 ({GENW25_MAX_PIXELS})"
            )
        if height == 0 or not GENW25_MIN_ASPECT <= width / height <= GENW25_MAX_ASPECT:
            raise ValueError(f"size {value}: the aspect ratio must be between 1:4 and 4:1")
        return value

    @model_validator(mode="after")
    def _truncation(self) -> GenW25T2IPreview:
        warn_truncated("prompt", self.prompt, 2000)
        warn_truncated("negative_prompt", self.negative_prompt, 500)
        return self
