"""vidP first-to-last frame transitions: ``vidP_v6_transition``."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from .checks import MediaSpec
from .markers import BILLED, MB, Number, Seed, ServiceDefault
from .model import Endpoint
from .registry import register

VIDP_FRAME = MediaSpec(
    media="image",
    encoding="url_only",
    formats=("jpeg", "png", "webp"),
    max_bytes=20 * MB,
    max_side=10000,
    note="the service uploads the URL upstream",
)


@register("vidP_v6_transition", kind="video", title="First-to-last frame transition (vidP v6)")
class VidPV6Transition(Endpoint):
    """A transition video from a first to a last frame. Both frames are public URLs:
    the service uploads them upstream, so local files cannot be sent. Defaults of
    ``duration`` and ``quality`` are not shown."""

    first_frame_image: Annotated[str, VIDP_FRAME] = Field(
        description="Public HTTP/HTTPS URL; JPG, PNG, WebP; at most 20 MB; width or height up "
        "to 10000 px."
    )
    last_frame_image: Annotated[str, VIDP_FRAME] = Field(
        description="Public HTTP/HTTPS URL; same rules as first_frame_image."
    )
    prompt: str | None = Field(None, max_length=5000, description="At most 5000 characters.")
    duration: Annotated[Number | None, BILLED] = Field(
        None, ge=1, le=15, description="Length in seconds (default not shown). Affects billing."
    )
    quality: Annotated[Literal["360p", "540p", "720p", "1080p"] | None, BILLED] = Field(
        None,
        description="360p, 540p, 720p or 1080p (default not shown); credit cost per output "
        "second differs per tier.",
    )
    seed: Seed = Field(None, description="Random seed.")
    generate_audio_switch: Annotated[bool | None, BILLED, ServiceDefault(False)] = Field(
        None, description="Generate audio. Audio raises the credit cost."
    )
