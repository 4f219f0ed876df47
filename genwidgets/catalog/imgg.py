"""imgG image editing: ``imgG-1.5-edit``."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from .checks import MediaSpec
from .coerce import SIZE_WITH_X, OneOrMany
from .findings import warn
from .markers import BILLED, GENERATIONS, ServiceDefault
from .model import Endpoint, Part
from .registry import register

IMGG_IMAGE = MediaSpec(media="image", encoding="data_url_mime", formats=("png", "jpeg", "webp"))
IMGG_MAX_IMAGES = 16


class ImgGMask(Part):
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
            raise ValueError("takes exactly one of file_id and image_url")
        return self


@register("imgG-1.5-edit", kind="image", title="Image editing (imgG 1.5)")
class ImgG15Edit(Endpoint):
    """Edit images from a prompt.

    The spec types ``images`` as "any" (item shape not shown); our choice is a list
    of 1-16 strings, each a URL or a ``data:<MIME>;base64,`` URL; a single string is
    wrapped in a list. ``size`` and ``quality`` are flagged as billing fields: they
    set the output's render cost tier.
    """

    prompt: str = Field(min_length=1, max_length=32000, description="Max 32000 characters.")
    images: OneOrMany[Annotated[str, IMGG_IMAGE]] = Field(
        min_length=1,
        max_length=IMGG_MAX_IMAGES,
        description="Up to 16 input images, each a URL or data:<MIME>;base64,<data> "
        "(png, jpeg, webp).",
    )
    mask: ImgGMask | None = Field(
        None,
        description="Transparent areas are editable; give either file_id or image_url; must "
        "match the edited image's format and size and have an alpha channel.",
    )
    background: Annotated[
        Literal["transparent", "opaque", "auto"] | None, ServiceDefault("auto")
    ] = Field(None, description="transparent, opaque or auto.")
    input_fidelity: Annotated[Literal["high", "low"] | None, ServiceDefault("low")] = Field(
        None, description="high or low."
    )
    n: Annotated[int | None, BILLED, GENERATIONS, ServiceDefault(1)] = Field(
        None, ge=1, le=10, description="Number of images. Affects billing."
    )
    output_compression: Annotated[int | None, ServiceDefault(100)] = Field(
        None,
        ge=0,
        le=100,
        description="Compression level; only for jpeg or webp output.",
    )
    output_format: Annotated[Literal["png", "jpeg", "webp"] | None, ServiceDefault("png")] = Field(
        None, description="png, jpeg or webp."
    )
    quality: Annotated[
        Literal["low", "medium", "high", "auto"] | None, BILLED, ServiceDefault("auto")
    ] = Field(None, description="low, medium, high or auto. Affects billing.")
    size: Annotated[
        Literal["1024x1024", "1024x1536", "1536x1024", "auto"] | None,
        SIZE_WITH_X,
        BILLED,
        ServiceDefault("auto"),
    ] = Field(None, description="1024x1024, 1024x1536, 1536x1024 or auto.")
    moderation: Annotated[Literal["auto", "low"] | None, ServiceDefault("auto")] = Field(
        None, description="auto or low."
    )
    user: str | None = Field(None, description="End-user identifier.")

    @model_validator(mode="after")
    def _compression_needs_lossy(self) -> ImgG15Edit:
        if self.output_compression is not None and self.output_format not in ("jpeg", "webp"):
            warn(
                "output_compression only applies to jpeg or webp output; output_format is "
                f"{self.output_format or 'png (the default)'}"
            )
        return self
