"""imgQ multi-image editing: ``imgQ-edit-plus``.

Where the spec says excess text is truncated, a longer text is a warning, not an
error: the service accepts it.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field, model_validator

from .checks import MediaSpec
from .coerce import OneOrMany, Size, SizeRule
from .findings import warn_truncated
from .markers import BILLED, GENERATIONS, MB, Seed, ServiceDefault
from .model import Endpoint
from .registry import register

IMGQ_IMAGE = MediaSpec(
    media="image",
    encoding="data_url_mime",
    formats=("jpeg", "png", "bmp", "tiff", "webp", "gif"),
    max_bytes=10 * MB,
    note="width and height 384-3072 recommended; animated GIF: first frame only",
)
IMGQ_SIDE_MIN, IMGQ_SIDE_MAX = 512, 2048
IMGQ_SIZE = SizeRule(min_side=IMGQ_SIDE_MIN, max_side=IMGQ_SIDE_MAX)
#: The service adjusts each side to the nearest multiple of this. The simulator reads
#: these sizes from here (docs/decisions.md#one-home).
IMGQ_SIDE_MULTIPLE = 16
#: Without ``size``, about this side squared in pixels, in the last image's aspect ratio.
IMGQ_AUTO_SIDE = 1024


@register("imgQ-edit-plus", kind="image", title="Multi-image editing (imgQ)")
class ImgQEditPlus(Endpoint):
    """Edit with 1-3 images; the output's aspect ratio follows the last image.
    A ``size`` written ``1024x1024`` is normalised to ``1024*1024``."""

    prompt: str = Field(
        min_length=1,
        description="Chinese or English; at most 800 tokens; excess truncated.",
    )
    images: OneOrMany[Annotated[str, IMGQ_IMAGE]] = Field(
        min_length=1,
        max_length=3,
        description="1-3 URLs or data:<MIME>;base64,<data>; order defines image order; the "
        "output aspect ratio follows the last image. JPG, JPEG, PNG, BMP, TIFF, WEBP, GIF "
        "(animated: first frame); 384-3072 px recommended; at most 10 MB.",
    )
    negative_prompt: str | None = Field(
        None, description="At most 500 characters; excess truncated."
    )
    size: Annotated[Size | None, AfterValidator(IMGQ_SIZE)] = Field(
        None,
        description=f"width*height, each {IMGQ_SIDE_MIN}-{IMGQ_SIDE_MAX}, adjusted to the nearest "
        f"multiple of {IMGQ_SIDE_MULTIPLE}. If omitted, the aspect ratio follows the last input "
        f"image at about {IMGQ_AUTO_SIDE}*{IMGQ_AUTO_SIDE} pixels.",
    )
    n: Annotated[int | None, BILLED, GENERATIONS, ServiceDefault(1)] = Field(
        None, ge=1, le=6, description="Number of images. Affects billing."
    )
    prompt_extend: Annotated[bool | None, ServiceDefault(True)] = Field(
        None, description="Prompt rewriting."
    )
    watermark: Annotated[bool | None, ServiceDefault(False)] = Field(
        None, description="Model watermark in the lower-right corner."
    )
    seed: Seed = Field(None, description="The same seed does not guarantee identical output.")

    @model_validator(mode="after")
    def _truncation(self) -> ImgQEditPlus:
        warn_truncated("negative_prompt", self.negative_prompt, 500)
        return self
