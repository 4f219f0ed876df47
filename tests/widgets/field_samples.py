"""Sample models and helpers shared by the field tests (a model with one field of every
kind the dispatch knows, and an upload as the browser sends it)."""

from __future__ import annotations

import datetime
import io
from typing import Annotated, Any, Literal

from PIL import Image
from pydantic import BaseModel, Field

from genwidgets.catalog import BILLED, PROMPT_STRING, ServiceDefault
from genwidgets.widgets.dispatch import build_element
from genwidgets.widgets.elements import BuildContext
from genwidgets.widgets.field_spec import field_specs
from genwidgets.widgets.media_input import MediaElement


class Voice(BaseModel):
    voice_id: str | None = Field(None, description="Voice ID.")
    speed: Annotated[float | None, ServiceDefault(1.0)] = Field(None, ge=0.5, le=2)
    pitch: Annotated[int | None, ServiceDefault(0)] = Field(None, ge=-12, le=12)


class Weight(BaseModel):
    voice_id: str = Field(description="Voice.")
    weight: int = Field(ge=1, le=100, description="1-100.")


class TextPart(BaseModel):
    type: Literal["text"]
    text: str


class UrlPart(BaseModel):
    type: Literal["url"]
    url: str


class Sample(BaseModel):
    """A model with one field of every kind the dispatch knows."""

    prompt: str = Field(max_length=2000, description="Max 2000 characters.")
    name: str | None = Field(None, max_length=40, description="Short <b>name</b>.")
    count: Annotated[int | None, ServiceDefault(4)] = Field(None, ge=1, le=10, description="1-10")
    ratio: float | None = Field(None, ge=0.1, le=3.0)
    seed: int | None = Field(None, description="Any integer.")
    flag: Annotated[bool | None, ServiceDefault(False)] = None
    size: Annotated[Literal["s", "m", "l"] | None, ServiceDefault("m")] = None
    language: Literal["English", "French", "German", "Spanish", "Italian"] | None = None
    fixed: Literal["reference_image"]
    tags: list[str] | None = Field(None, min_length=1, max_length=3)
    weights: list[Weight] | None = Field(None, max_length=4)
    voice: Voice | None = None
    required_voice: Voice
    duration: int | str | None = Field(None, description="3-15 seconds or a string.")
    parts: list[TextPart | UrlPart] | None = None
    extra: Any = None
    cost: Annotated[int | None, BILLED, ServiceDefault(1)] = Field(None, ge=1, le=4)
    imgm_prompt: Annotated[str | None, PROMPT_STRING] = None


SPECS = {s.wire: s for s in field_specs(Sample)}
CTX = BuildContext(endpoint="sample", model=Sample)


def element(name: str) -> Any:
    return build_element(SPECS[name], CTX)


def form_png(width: int, height: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (200, 40, 40)).save(buffer, format="PNG")
    return buffer.getvalue()


def upload(el: MediaElement, data: bytes, name: str = "pic.png") -> None:
    assert el.upload is not None
    el.upload.value = (
        {
            "name": name,
            "type": "image/png",
            "size": len(data),
            "content": memoryview(data),
            "last_modified": datetime.datetime.now(datetime.timezone.utc),
        },
    )
