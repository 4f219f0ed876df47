"""vidA multimodal video (``vidA-2-0-fast``, ``vidA-2-0``), and the building blocks
every family module of the catalog shares.

Shared here, imported by ``imgm``, ``video``, ``image``, ``speech`` and ``asset``:

- :class:`_Part`, the base of nested objects (content items, settings, regions):
  unknown nested fields pass (the spec hides some names);
- :class:`_Endpoint`, the base of every endpoint model;
- the normalisations both bases apply, so that an unambiguous slip is fixed rather
  than sent as is: ``None`` means "not set" (never sent as ``null``), enumerated
  strings match case-insensitively (``"720P"`` becomes ``"720p"`` where the spec
  spells it so), a number written as a string matches a numeric choice
  (``"128000"`` becomes ``128000``) and a number matches a string choice (``5`` becomes
  ``"5"``); a boolean given for a number is an error, not ``1``;
- :class:`MediaCheck`, which checks the *form* of a media string from the field's
  :class:`~genwidgets.catalog._base.MediaSpec` (URL, data URL, raw base64,
  ``asset://``) without any I/O; :mod:`genwidgets.media` checks the file itself;
- the warnings: :class:`IneffectiveFieldWarning`, :class:`DeprecatedFieldWarning`.

Sizes in MB are MiB (``1024 * 1024`` bytes): the spec does not say which.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, get_args, get_origin

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ..errors import DeprecatedFieldWarning as DeprecatedFieldWarning  # re-export
from ..errors import IneffectiveFieldWarning
from ._base import BILLED, EndpointModel, MediaSpec, _leaves, register, soft_warning

MB = 1024 * 1024
SEED_MAX = 2_147_483_647
REQUEST_BODY_MAX = 64 * MB  # the largest request body the spec states (vidA)


def warn(message: str, category: type[Warning] = IneffectiveFieldWarning) -> None:
    soft_warning(message, category)


# ---------------------------------------------------------------------------
# normalisation shared by _Part and _Endpoint


@dataclass(frozen=True)
class _Shape:
    """What the normalisers need to know about one field's annotation."""

    numeric: bool  # int/float (and no bool): a boolean here is an error
    str_choices: frozenset[str]
    lower_choices: dict[str, str]  # lowercase -> spelling of the spec, when unambiguous
    int_choices: frozenset[int]


def _shape(annotation: Any) -> _Shape:
    leaves = list(_leaves(annotation))
    literals = [v for leaf in leaves if get_origin(leaf) is Literal for v in get_args(leaf)]
    plain = {leaf for leaf in leaves if isinstance(leaf, type)}
    has_bool = bool in plain or any(isinstance(v, bool) for v in literals)
    ints = frozenset(v for v in literals if isinstance(v, int) and not isinstance(v, bool))
    strs = [v for v in literals if isinstance(v, str)]
    by_lower: dict[str, list[str]] = {}
    for s in strs:
        by_lower.setdefault(s.lower(), []).append(s)
    return _Shape(
        numeric=not has_bool and bool(plain & {int, float} or ints),
        str_choices=frozenset(strs),
        lower_choices={k: v[0] for k, v in by_lower.items() if len(v) == 1},
        int_choices=ints,
    )


@functools.cache
def _shapes(cls: type[BaseModel]) -> dict[str, _Shape]:
    return {name: _shape(info.annotation) for name, info in cls.model_fields.items()}


@functools.cache
def _wire_names(cls: type[BaseModel]) -> frozenset[str]:
    names = set(cls.model_fields)
    names |= {info.alias for info in cls.model_fields.values() if info.alias}
    return frozenset(names)


def _drop_none(cls: type[BaseModel], data: Any) -> Any:
    """A known field given as ``None`` is treated as not set, so it is never sent."""
    if isinstance(data, dict):
        names = _wire_names(cls)
        return {k: v for k, v in data.items() if not (v is None and k in names)}
    return data


def _normalise_value(cls: type[BaseModel], value: Any, info: ValidationInfo) -> Any:
    shape = _shapes(cls).get(info.field_name or "")
    if shape is None:
        return value
    if isinstance(value, bool):
        if shape.numeric:
            raise ValueError(f"expected a number, not the boolean {str(value).lower()}")
        return value
    if isinstance(value, str) and value not in shape.str_choices:
        text = value.strip()
        if text.lower() in shape.lower_choices:
            return shape.lower_choices[text.lower()]
        if shape.int_choices and re.fullmatch(r"-?\d+", text) and int(text) in shape.int_choices:
            return int(text)
    if (
        isinstance(value, int)
        and value not in shape.int_choices
        and str(value) in shape.str_choices
    ):
        return str(value)
    return value


def reject_bool(value: Any) -> Any:
    """BeforeValidator for numbers inside lists, where the field-level check can't see."""
    if isinstance(value, bool):
        raise ValueError(f"expected a number, not the boolean {str(value).lower()}")
    return value


Number = Annotated[int | float, BeforeValidator(reject_bool)]


class _Normalised(BaseModel):
    """The normalisations of the module docstring, shared by :class:`_Part` and
    :class:`_Endpoint`."""

    @model_validator(mode="before")
    @classmethod
    def _unset_nones(cls, data: Any) -> Any:
        return _drop_none(cls, data)

    @field_validator("*", mode="before")
    @classmethod
    def _normalise(cls, value: Any, info: ValidationInfo) -> Any:
        return _normalise_value(cls, value, info)


class _Part(_Normalised):
    """Base of a nested object in a payload. Unknown nested fields pass (the spec
    hides some names); the normalisations of the module docstring apply."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)


class _Endpoint(EndpointModel, _Normalised):
    """Base of the catalog's endpoint models: EndpointModel plus the normalisations."""


def is_set(model: BaseModel, name: str) -> bool:
    return name in model.model_fields_set


# ---------------------------------------------------------------------------
# media strings: their form only (the file behind them is gw.media's job)

_MIME_TYPES: dict[str, tuple[str, ...]] = {
    "jpeg": ("image/jpeg", "image/jpg", "image/pjpeg"),
    "png": ("image/png",),
    "webp": ("image/webp",),
    "bmp": ("image/bmp", "image/x-ms-bmp"),
    "tiff": ("image/tiff",),
    "gif": ("image/gif",),
    "mp4": ("video/mp4",),
    "mov": ("video/quicktime", "video/mov"),
    "avi": ("video/x-msvideo", "video/avi", "video/msvideo"),
    "mp3": ("audio/mpeg", "audio/mp3"),
    "wav": ("audio/wav", "audio/x-wav", "audio/wave"),
    "m4a": ("audio/mp4", "audio/x-m4a", "audio/m4a"),
}
_LOWER_FORMAT_WORDS: dict[str, tuple[str, ...]] = {"jpeg": ("jpeg", "jpg")}
_HTTP_URL = re.compile(r"https?://\S+", re.IGNORECASE)
_DATA_HEADER = re.compile(r"data:([^;,]*)((?:;[^;,]*)*),", re.IGNORECASE)
_BASE64 = re.compile(r"[A-Za-z0-9+/]+={0,2}")


def preview(value: str, limit: int = 40) -> str:
    """A short, safe rendering of a possibly huge string for an error message."""
    if len(value) <= limit:
        return repr(value)
    return f"{value[:limit]!r}… ({len(value)} characters)"


def _mb(n: float) -> str:
    return f"{n / MB:.1f} MB"


@dataclass(frozen=True)
class MediaCheck:
    """AfterValidator: the string has the form its :class:`MediaSpec` allows.

    ``raw_base64_ok`` lets a ``url_or_data`` field take bare base64 too (the imgM
    mask: "URL or Base64 data"); ``max_decoded`` caps the decoded size of inline
    data where the spec states a tighter limit for base64 than for files (vidV).
    """

    spec: MediaSpec
    raw_base64_ok: bool = False
    max_decoded: int | None = None

    def __call__(self, value: str | None) -> str | None:
        if value is None:
            return value
        if not value:
            raise ValueError(f"empty; expected {self.expected()}")
        if _HTTP_URL.fullmatch(value):
            return value
        head = value[:8].lower()
        if head.startswith("asset://"):
            return self._asset(value)
        if head.startswith("data:"):
            return self._data_url(value)
        takes_base64 = self.spec.encoding == "raw_base64" or self.raw_base64_ok
        if takes_base64 and _BASE64.fullmatch(value):
            self._check_size(len(value))
            return value
        raise ValueError(f"expected {self.expected()}; got {preview(value)}{self.hint()}")

    def expected(self) -> str:
        spec = self.spec
        formats = ", ".join(spec.formats)
        if spec.encoding == "data_url_lower":
            words = [w for f in spec.formats for w in _LOWER_FORMAT_WORDS.get(f, (f,))]
            text = (
                "a public http(s) URL, or data:image/<lowercase format>;base64,<data> "
                f"(format one of {', '.join(words)})"
            )
        elif spec.encoding == "data_url_mime":
            mimes = ", ".join(m for f in spec.formats for m in _MIME_TYPES.get(f, ())[:1])
            text = "a public http(s) URL, or data:<MIME type>;base64,<data>" + (
                f" with MIME type {mimes}" if mimes else ""
            )
        elif spec.encoding == "raw_base64":
            text = "a public http(s) URL, or raw base64 with no data: prefix" + (
                f" ({formats})" if formats else ""
            )
        elif spec.encoding == "url_only":
            text = "a public http(s) URL" + (f" ({formats})" if formats else "")
        else:
            text = "a public http(s) URL, or data:<MIME type>;base64,<data>"
            if self.raw_base64_ok:
                text += ", or raw base64"
        if spec.allow_asset:
            text += ", or asset://<ASSET_ID>"
        return text

    def hint(self) -> str:
        if self.spec.encoding == "url_only":
            return " (the service fetches the file itself: upload a local file and pass its URL)"
        return " (gw.media encodes a local file the way this field wants)"

    def _asset(self, value: str) -> str:
        if not self.spec.allow_asset:
            raise ValueError(f"asset:// IDs are not accepted here; expected {self.expected()}")
        if not value.startswith("asset://"):
            raise ValueError(
                f"write the asset scheme in lowercase: asset://<ASSET_ID>, not {preview(value)}"
            )
        if len(value) == len("asset://"):
            raise ValueError("asset:// needs an asset ID after it: asset://<ASSET_ID>")
        return value

    def _data_url(self, value: str) -> str:
        spec = self.spec
        if spec.encoding == "raw_base64":
            raise ValueError(
                "this field needs raw base64 without a 'data:...;base64,' prefix (or a URL); "
                "strip the prefix, or let gw.media encode the file"
            )
        if spec.encoding == "url_only":
            raise ValueError(
                f"inline data is not accepted here; expected {self.expected()}{self.hint()}"
            )
        match = _DATA_HEADER.match(value)
        if not match or ";base64" not in match.group(2).lower():
            raise ValueError(
                f"a data URL must read data:<type>;base64,<data>; got {preview(value)}"
            )
        mime = match.group(1)
        body = value[match.end() :]
        if not body:
            raise ValueError("the data URL carries no data after 'base64,'")
        if spec.encoding == "data_url_lower":
            self._lowercase_format(value, mime)
        else:
            self._mime(mime)
        self._check_size(len(body))
        return value

    def _lowercase_format(self, value: str, mime: str) -> None:
        header = value[: value.index(",") + 1]
        if header != header.lower():
            raise ValueError(
                "the data URL must be lowercase, data:image/<lowercase format>;base64,"
                f" (e.g. {header.lower()}); got {header}"
            )
        if not mime.startswith("image/"):
            raise ValueError(
                f"expected an image data URL data:image/<format>;base64,; got {header}"
            )
        word = mime[len("image/") :]
        allowed = [w for f in self.spec.formats for w in _LOWER_FORMAT_WORDS.get(f, (f,))]
        if allowed and word not in allowed:
            raise ValueError(
                f"image format {word!r} is not accepted; allowed: {', '.join(allowed)}"
            )

    def _mime(self, mime: str) -> None:
        mime = mime.lower()
        kind = self.spec.media
        if not mime.startswith(f"{kind}/"):
            raise ValueError(
                f"expected a {kind} data URL (data:{kind}/...;base64,); got data:{mime}"
            )
        allowed = [m for f in self.spec.formats for m in _MIME_TYPES.get(f, ())]
        if allowed and mime not in allowed:
            raise ValueError(f"MIME type {mime} is not accepted; allowed: {', '.join(allowed)}")

    def _check_size(self, encoded_length: int) -> None:
        limits = [n for n in (self.spec.max_bytes, self.max_decoded) if n is not None]
        if not limits:
            return
        decoded = encoded_length * 3 // 4
        if decoded > min(limits):
            raise ValueError(
                f"the inline data decodes to about {_mb(decoded)}; the limit is {_mb(min(limits))}"
            )


# ---------------------------------------------------------------------------
# vidA

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


class ImageUrl(_Part):
    """The ``image_url`` object of an image content item."""

    url: Annotated[str, VIDA_IMAGE, AfterValidator(MediaCheck(VIDA_IMAGE))] = Field(
        description="Public URL, or data:image/<lowercase format>;base64,<data>, or "
        "asset://<ASSET_ID>. Formats jpeg, png, webp, bmp, tiff, gif; width/height strictly "
        "between 0.4 and 2.5; sides strictly between 300 and 6000 px; under 30 MB."
    )


class VideoUrl(_Part):
    """The ``video_url`` object of a video content item."""

    url: Annotated[str, VIDA_VIDEO, AfterValidator(MediaCheck(VIDA_VIDEO))] = Field(
        description="Video URL or asset ID (asset://<ASSET_ID>)."
    )


class AudioUrl(_Part):
    """The ``audio_url`` object. Its fields are not shown in the spec; ``url`` is our
    assumption by analogy with ``image_url`` and ``video_url``, and other names pass."""

    url: str | None = Field(
        None,
        min_length=1,
        description="Audio URL (field name assumed; the spec does not show the fields "
        "inside audio_url).",
    )


ContentType = Literal["text", "image_url", "video_url", "audio_url"]
_ROLES_BY_TYPE: dict[str, tuple[str, ...]] = {
    "text": (),
    "image_url": ("first_frame", "last_frame", "reference_image"),
    "video_url": ("reference_video",),
    "audio_url": ("reference_audio",),
}


class ContentItem(_Part):
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
        others = [k for k in _ROLES_BY_TYPE if k != self.type and getattr(self, k) is not None]
        if others:
            raise ValueError(
                f"a content item of type {self.type} carries no {', '.join(others)} "
                "(one item per text, image, video or audio)"
            )
        allowed = _ROLES_BY_TYPE[self.type]
        if self.role is not None and self.role not in allowed:
            options = ", ".join(allowed) if allowed else "no role"
            raise ValueError(
                f"role {self.role} does not fit a {self.type} item (allowed: {options})"
            )
        return self


def _image_scenario_problem(roles: Sequence[str | None]) -> str | None:
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


class _VidABody(_Endpoint):
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
    generate_audio: bool | None = Field(
        None,
        description="Default true. true: synchronized voice, effects and music generated "
        "from prompt and visuals. false: silent. Generated audio is mono.",
    )
    resolution: Annotated[Literal["480p", "720p", "1080p"] | None, BILLED] = Field(
        None, description="480p, 720p or 1080p. Default 720p. Affects billing."
    )
    ratio: Literal["16:9", "4:3", "1:1", "3:4", "9:16", "21:9", "adaptive"] | None = Field(
        None,
        description="16:9, 4:3, 1:1, 3:4, 9:16, 21:9 or adaptive. Default adaptive (text to "
        "video picks by prompt; first-frame modes follow the first image's ratio).",
    )
    duration: Annotated[int | None, BILLED] = Field(
        None,
        description="Seconds, 4-15, or -1 for the model's choice (the actual duration comes "
        "back in the status). Default 5. Affects billing.",
    )

    @field_validator("duration")
    @classmethod
    def _duration(cls, value: int | None) -> int | None:
        if value is not None and value != -1 and not 4 <= value <= 15:
            raise ValueError(
                f"duration must be 4-15 seconds, or -1 to let the model choose; got {value}"
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
        problem = _image_scenario_problem(roles)
        if problem:
            raise ValueError(f"content: {problem}")
        return self

    @model_validator(mode="after")
    def _body_cap(self) -> _VidABody:
        size = len(self.model_dump_json(by_alias=True, exclude_unset=True))
        if size > REQUEST_BODY_MAX:
            raise ValueError(
                f"the request body would be about {_mb(size)}; the service caps it at "
                f"{_mb(REQUEST_BODY_MAX)}: pass large files as URLs or asset:// IDs, not base64"
            )
        return self


@register("vidA-2-0", kind="video", family="vidA", title="Multimodal video (vidA 2.0)")
class VidA20(_VidABody):
    """Multimodal video from text, images, video and audio: ``vidA-2-0``.

    All fields but ``content`` are optional; unset ones take the service's defaults.
    """


@register(
    "vidA-2-0-fast", kind="video", family="vidA", title="Multimodal video, fast (vidA 2.0 fast)"
)
class VidA20Fast(_VidABody):
    """Multimodal video, faster variant: ``vidA-2-0-fast``. As ``vidA-2-0`` but
    ``resolution`` is 480p or 720p only."""

    resolution: Annotated[Literal["480p", "720p"] | None, BILLED] = Field(
        None, description="480p or 720p (1080p is vidA-2-0 only). Default 720p. Affects billing."
    )

    @field_validator("resolution", mode="before")
    @classmethod
    def _no_1080p(cls, value: Any) -> Any:
        if isinstance(value, str) and value.strip().lower() == "1080p":
            raise ValueError(
                "1080p is only available on vidA-2-0; vidA-2-0-fast offers 480p and 720p"
            )
        return value
