"""imgM image family: secondary editing (``imgM-inpaint``, ``imgM_pan``,
``imgM-v8.1-i2i``) and the referenced direct generation (``imgM-v8.1-t2i``,
``imgM_diffusion``).

Prompt parameters (``--ar``, ``--v`` ...) live inside the prompt string, never as
JSON fields; prompt fields carry :data:`PROMPT_STRING` so the prompt builder and
:mod:`genwidgets.imgm` can find them. Their check is :meth:`Prompt.errors` whole
(parameters, weights, every expansion, the cap), so every path that validates a
payload refuses ``--chaos 500`` before anything is sent.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, model_validator

from ..errors import PayloadError
from ..imgm import Prompt
from ..imgm.checker import dash_slips
from .checks import MediaSpec
from .findings import warn
from .markers import PROMPT_STRING, Number
from .model import Endpoint, Part
from .registry import register

PROMPT_MAX = 8192
#: An imgM task answers four images for each prompt it bills (``image_no`` 0-3).
IMAGES_PER_PROMPT = 4
REGION_MIN, REGION_MAX = 500, 4096
MIN_POLYGON_VALUES = 6  # three points

MASK_IMAGE = MediaSpec(
    media="image",
    encoding="url_or_data",
    raw_base64_ok=True,  # "URL or Base64 data"
    note="black-and-white binary mask; white areas are repainted",
)

# The upstream task an inpaint or a pan works on, and which of its four images.
_JobId = Annotated[
    str,
    Field(
        min_length=1,
        description="Upstream task ID (a previous imgM task's result). IDs of tasks generated "
        "by imgM_diffusion with a V8-series version do not support inpaint, pan or outpaint; "
        "--v 7 tasks do.",
    ),
]
_ImageNo = Annotated[int, Field(ge=0, le=3, description="Which image of the upstream task.")]


def _polygon(points: list[int | float]) -> list[int | float]:
    if len(points) < MIN_POLYGON_VALUES:
        raise ValueError(
            f"a polygon needs at least {MIN_POLYGON_VALUES} values (3 points, XYXY order); "
            f"got {len(points)}"
        )
    if len(points) % 2:
        raise ValueError(
            f"polygon coordinates come in x,y pairs: an even count is needed; got {len(points)}"
        )
    return points


Polygon = Annotated[list[Number], AfterValidator(_polygon)]


class Area(Part):
    """A single polygon region to repaint."""

    width: int = Field(ge=REGION_MIN, le=REGION_MAX, description="Region pixel width.")
    height: int = Field(ge=REGION_MIN, le=REGION_MAX, description="Region pixel height.")
    points: Polygon = Field(
        description="Polygon coordinates, origin top-left, clockwise, XYXY order; at least 6 "
        "values (3 points), an even count."
    )


class MaskArea(Part):
    """A region of ``mask.areas``. Its field names are not shown in the spec; we
    assume those of ``area`` (width, height, points), all optional, and other names
    pass through."""

    width: int | None = Field(None, ge=REGION_MIN, le=REGION_MAX, description="Region pixel width.")
    height: int | None = Field(
        None, ge=REGION_MIN, le=REGION_MAX, description="Region pixel height."
    )
    points: Polygon | None = Field(
        None,
        description="Polygon coordinates as for area.points: at least 6 values (3 points), "
        "an even count.",
    )


class Mask(Part):
    """The repaint mask: regions (``areas``) or a mask image (``url``)."""

    areas: list[MaskArea] | None = Field(
        None,
        description="Region objects for multi-region repainting: pixel width and height "
        f"{REGION_MIN}-{REGION_MAX}, polygon coordinates as for area.points.",
    )
    url: Annotated[str | None, MASK_IMAGE] = Field(
        None,
        description="URL or Base64 data of a black-and-white binary mask; white areas are "
        "repainted.",
    )

    @model_validator(mode="after")
    def _areas_or_url(self) -> Mask:
        if not self.areas and not self.url:
            raise ValueError("must contain a non-empty areas list or a url")
        return self


def _valid_prompt(value: str | None) -> str | None:
    """The whole imgM check of a prompt string, once for every path (``gw.validate``,
    ``prepare``/``submit``, the form, the grid): its structure, every parameter of
    every expansion (named in the message), the ``::`` weight sums, and the cap of
    ``MAX_PROMPTS`` prompts (all billed), before anything is sent. A prompt with an
    em-dash is sent as read (``--``); other dashes before a parameter's name warn."""
    if value is None:
        return value
    try:
        parsed = Prompt.parse(value)
        problems = parsed.errors()
    except PayloadError as error:
        problems = error.errors
    if problems:
        raise ValueError("; ".join(p["msg"] for p in problems))
    for slip in dash_slips(value):
        warn(f"prompt: {slip}")
    # an em-dash is read as "--" here and counted so: sent so too (the spec writes "--")
    return str(parsed) if "\u2014" in value else value


#: An imgM prompt string: found by the prompt builder, checked whole by :class:`Prompt`.
ImgMPrompt = Annotated[str, PROMPT_STRING, AfterValidator(_valid_prompt)]
OptionalImgMPrompt = Annotated[str | None, PROMPT_STRING, AfterValidator(_valid_prompt)]


def _prompt_field(description: str, *, required: bool = False) -> Any:
    """A prompt string of 1-8192 characters (annotate it with :data:`ImgMPrompt`)."""
    default = ... if required else None
    return Field(default, min_length=1, max_length=PROMPT_MAX, description=description)


@register("imgM-inpaint", kind="image", title="Repaint an image region (imgM inpaint)")
class ImgMInpaint(Endpoint):
    """Repaint a region of an image from an earlier imgM task (secondary editing)."""

    jobId: _JobId
    imageNo: _ImageNo
    remixPrompt: OptionalImgMPrompt = _prompt_field(
        "Prompt for the repaint region, 1-8192 characters; prompt parameters "
        "(--ar, --v ...) may be appended."
    )
    area: Area | None = Field(
        None,
        description=f"Single polygon region: width and height {REGION_MIN}-{REGION_MAX}, points "
        "(at least 3 points, clockwise, XYXY).",
    )
    mask: Mask = Field(description="Must contain areas or url.")


@register("imgM_pan", kind="image", title="Extend an image (imgM pan)")
class ImgMPan(Endpoint):
    """Extend an image from an earlier imgM task in one direction (secondary editing)."""

    jobId: _JobId
    imageNo: _ImageNo
    direction: Literal[0, 1, 2, 3] = Field(description="0 down, 1 right, 2 up, 3 left.")
    scale: Number = Field(
        ge=1.1,
        le=3.0,
        description="The new image area in the pan direction relative to the original area.",
    )
    remixPrompt: OptionalImgMPrompt = _prompt_field(
        "Prompt for the extended region, 1-8192 characters; prompt parameters may be appended."
    )


@register("imgM-v8.1-i2i", kind="image", title="Image variation (imgM v8.1)")
class ImgMV81I2I(Endpoint):
    """Variation of one image of an earlier ``imgM-v8.1-t2i`` task.

    Which fields are required is not shown; ``jobId`` and ``image_no`` are required
    because secondary editing "needs an upstream task ID jobId and an image number".
    """

    jobId: str = Field(
        min_length=1,
        description="Upstream task identifier from a previous imgM-v8.1-t2i task result.",
    )
    image_no: int = Field(ge=0, le=3, description="Selects one image of that task.")
    type: Literal[0, 1] | None = Field(None, description="Variation type: 0 subtle, 1 strong.")
    remix_prompt: OptionalImgMPrompt = _prompt_field(
        "Desired changes, 1-8192 characters; prompt parameters appended to the same string."
    )


@register("imgM-v8.1-t2i", kind="image", title="Text to image (imgM v8.1)", documented=False)
class ImgMV81T2I(Endpoint):
    """Text to image, imgM v8.1 (referenced, payload not shown: our choice is one
    ``prompt`` carrying the ``--`` parameters; four images come back)."""

    prompt: ImgMPrompt = _prompt_field(
        "Prompt, 1-8192 characters, with imgM parameters (--ar, --seed ...) appended.",
        required=True,
    )


@register("imgM_diffusion", kind="image", title="Image diffusion (imgM)", documented=False)
class ImgMDiffusion(Endpoint):
    """imgM direct generation (referenced, payload not shown: one ``prompt``; the
    version comes from ``--v`` in the prompt, default 8.1 = V8-series, whose tasks
    cannot be inpainted or panned)."""

    prompt: ImgMPrompt = _prompt_field(
        "Prompt, 1-8192 characters, with imgM parameters appended; --v picks "
        "the version (V8-series tasks do not support inpaint or pan; --v 7 tasks do).",
        required=True,
    )
