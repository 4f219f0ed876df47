"""vidH video from reference images: ``vidH_1.0_r2v``."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from .checks import MediaSpec
from .findings import warn
from .markers import BILLED, MB, Seed, ServiceDefault
from .model import Endpoint, Part
from .registry import register

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


class VidHMedia(Part):
    """One reference image of vidH."""

    type: Literal["reference_image"] = Field(description="Fixed: reference_image.")
    url: Annotated[str, VIDH_IMAGE] = Field(
        description="Public http(s) URL or data:<MIME_type>;base64,<data> with image/jpeg, "
        "image/png or image/webp. Short side at least 400 px; at most 20 MB."
    )


@register("vidH_1.0_r2v", kind="video", title="Reference images to video (vidH)")
class VidH10R2V(Endpoint):
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
    duration: Annotated[int | None, BILLED, ServiceDefault(5)] = Field(
        None, ge=3, le=15, description="Length in seconds. Billed on generated seconds."
    )
    resolution: Annotated[Literal["720P", "1080P"] | None, BILLED, ServiceDefault("1080P")] = Field(
        None, description="720P or 1080P. Price tiers differ."
    )
    ratio: Annotated[
        Literal["16:9", "9:16", "1:1", "4:3", "3:4", "4:5", "5:4", "9:21", "21:9"] | None,
        ServiceDefault("16:9"),
    ] = Field(None, description="16:9, 9:16, 1:1, 4:3, 3:4, 4:5, 5:4, 9:21, 21:9.")
    seed: Seed = Field(None, description="Random if omitted.")
    watermark: Annotated[bool | None, ServiceDefault(True)] = Field(
        None, description="Fixed text in the lower-right corner."
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
