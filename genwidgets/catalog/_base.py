"""What every endpoint model shares: the registry, field markers, validation.

An endpoint is one declarative class::

    @register("vidVq2-text2video", kind="video", family="vidV", title="Text to video (q2)")
    class VidVq2Text2Video(EndpointModel):
        prompt: str = Field(..., max_length=2000, description="...")
        duration: Annotated[int | None, BILLED] = Field(None, ge=1, le=10, description="...")

Markers ride in ``Annotated`` metadata (pydantic keeps unknown metadata in
``FieldInfo.metadata``), so they never disturb the JSON schema:

- :data:`BILLED` flags a field that affects billing;
- :class:`MediaSpec` says what a media field accepts (encoding and checks),
  read by :mod:`genwidgets.media` and the form's media widget;
- :class:`PromptString` marks an imgM prompt field that carries ``--`` parameters.

:func:`field_info_at` and :func:`media_spec_at` walk a model along a payload path
(``("content", 0, "image_url", "url")``, list indexes optional); :mod:`genwidgets.media`
and the forms use them rather than walking models themselves.

The catalog does no I/O.
"""

from __future__ import annotations

import difflib
import types
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.fields import FieldInfo

from ..errors import PayloadError, UnknownFieldWarning

Kind = Literal["video", "image", "speech", "asset", "subject", "face", "audio"]


class _Billed:
    """Marker: this field affects what a task costs."""

    def __repr__(self) -> str:
        return "BILLED"


BILLED = _Billed()


Encoding = Literal[
    "data_url_lower",  # data:image/<lowercase format>;base64,... (vidA), or URL, or asset://
    "data_url_mime",  # data:<MIME type>;base64,... (vidH, vidV, imgQ, imgG), or URL
    "raw_base64",  # base64 with no prefix (vidK), or URL
    "url_only",  # public http(s) URL only (vidP)
    "url_or_data",  # URL or any data URL (masks, speech), or raw base64 where stated
]


@dataclass(frozen=True)
class MediaSpec:
    """What a media field accepts, from the spec's table. Limits are inclusive
    unless ``*_exclusive`` is set; ``None`` means the spec states none."""

    media: Literal["image", "video", "audio"]
    encoding: Encoding
    formats: tuple[str, ...] = ()  # lowercase: "jpeg", "png", "webp", "mp4", ...
    max_bytes: int | None = None
    min_side: int | None = None  # each of width and height at least this
    max_side: int | None = None
    min_short_side: int | None = None
    sides_exclusive: bool = False  # vidA: strictly between 300 and 6000
    min_aspect: float | None = None  # width / height
    max_aspect: float | None = None
    aspect_exclusive: bool = False
    min_seconds: float | None = None
    max_seconds: float | None = None
    allow_asset: bool = False  # asset://<id> accepted
    note: str = ""


@dataclass(frozen=True)
class PromptString:
    """Marker: an imgM prompt field whose ``--`` parameters live in the string."""


PROMPT_STRING = PromptString()


class EndpointModel(BaseModel):
    """Base of every endpoint payload model.

    Unknown fields are allowed (the spec hides some names) and reported as a
    warning by :func:`validate`; unset optional fields are never sent.
    """

    model_config = ConfigDict(
        extra="allow",
        populate_by_name=True,
        validate_default=False,
        str_strip_whitespace=False,
    )

    endpoint_id: ClassVar[str] = ""

    def payload(self) -> dict[str, Any]:
        """The JSON body to send: set fields only, by their wire names."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


@dataclass(frozen=True)
class EndpointSpec:
    """A catalog entry: one endpoint and its payload model."""

    id: str
    kind: str
    family: str
    title: str
    model: type[EndpointModel]
    documented: bool = True  # False for operations referenced but not described
    description: str = ""
    billing_fields: tuple[str, ...] = field(default=())

    def __repr__(self) -> str:
        return f"EndpointSpec({self.id!r}, kind={self.kind!r}, family={self.family!r})"


_REGISTRY: dict[str, EndpointSpec] = {}


def register(
    endpoint_id: str,
    *,
    kind: str,
    family: str,
    title: str,
    documented: bool = True,
    description: str = "",
) -> Any:
    """Class decorator: put an endpoint model in the catalog."""

    def deco(cls: type[EndpointModel]) -> type[EndpointModel]:
        cls.endpoint_id = endpoint_id
        billing = tuple(name for name, info in cls.model_fields.items() if is_billed(info))
        _REGISTRY[endpoint_id] = EndpointSpec(
            id=endpoint_id,
            kind=kind,
            family=family,
            title=title,
            model=cls,
            documented=documented,
            description=description or _summary(cls.__doc__),
            billing_fields=billing,
        )
        return cls

    return deco


def _summary(doc: str | None) -> str:
    """A docstring's first sentence as plain text (forms show it as help; the rest of
    the docstring records our choices for developers)."""
    paragraph = (doc or "").strip().split("\n\n")[0]
    text = " ".join(line.strip() for line in paragraph.splitlines()).replace("``", "")
    head, dot, _rest = text.partition(". ")
    return head + "." if dot else text


def is_billed(info: FieldInfo) -> bool:
    return any(m is BILLED for m in info.metadata)


def media_spec(info: FieldInfo) -> MediaSpec | None:
    return next((m for m in info.metadata if isinstance(m, MediaSpec)), None)


def is_prompt_string(info: FieldInfo) -> bool:
    return any(isinstance(m, PromptString) for m in info.metadata)


# ---------------------------------------------------------------------------
# walking a model along a field path (the catalog, gw.media and the forms share it)

_UNION_ORIGINS: tuple[Any, ...] = (Union, types.UnionType)
_CONTAINER_ORIGINS: tuple[Any, ...] = (list, tuple, set, frozenset, Sequence)


def _leaves(annotation: Any) -> Iterator[Any]:
    """The members of an annotation under ``Annotated`` and unions (containers kept)."""
    origin = get_origin(annotation)
    if origin is Annotated:
        yield from _leaves(get_args(annotation)[0])
    elif origin in _UNION_ORIGINS:
        for arg in get_args(annotation):
            yield from _leaves(arg)
    else:
        yield annotation


def _item_types(annotation: Any) -> Iterator[tuple[Any, tuple[Any, ...]]]:
    """The types under ``Annotated``, unions and containers, each with the ``Annotated``
    metadata met on the way: a list item's MediaSpec rides inside the list."""
    origin = get_origin(annotation)
    if origin is Annotated:
        inner, *meta = get_args(annotation)
        for leaf, more in _item_types(inner):
            yield leaf, (*meta, *more)
    elif origin in _UNION_ORIGINS or origin in _CONTAINER_ORIGINS:
        for arg in get_args(annotation):
            if arg is not Ellipsis and arg is not type(None):
                yield from _item_types(arg)
    else:
        yield annotation, ()


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The nested models a value of ``annotation`` may hold (list items included)."""
    return [
        leaf
        for leaf, _ in _item_types(annotation)
        if isinstance(leaf, type) and issubclass(leaf, BaseModel)
    ]


def media_specs(info: FieldInfo) -> list[MediaSpec]:
    """Every MediaSpec of a field, its own first, then its items' (no repeats)."""
    own = media_spec(info)
    items = [m for _, meta in _item_types(info.annotation) for m in meta]
    found = [own, *(m for m in items if isinstance(m, MediaSpec))]
    return list(dict.fromkeys(s for s in found if s is not None))


def _named_field(model: type[BaseModel], name: str) -> FieldInfo | None:
    fields = model.model_fields
    if name in fields:
        return fields[name]
    return next((f for f in fields.values() if name in (f.alias, f.validation_alias)), None)


def fields_along(model: type[BaseModel], path: Sequence[str | int]) -> list[list[FieldInfo]]:
    """The fields each name of ``path`` reaches, one list per name (list indexes are
    skipped); every member of a union of nested models is searched, in order. Stops
    at the first name that no model on the way has, so a short answer says where."""
    reached: list[list[FieldInfo]] = []
    candidates = [model]
    for name in (p for p in path if isinstance(p, str)):
        infos = [i for i in (_named_field(m, name) for m in candidates) if i is not None]
        if not infos:
            break
        reached.append(infos)
        candidates = [m for i in infos for m in _models_in(i.annotation)]
    return reached


def field_info_at(model: type[BaseModel], path: Sequence[str | int]) -> FieldInfo | None:
    """The field a payload path ends in, e.g. ``("content", 0, "image_url", "url")``
    (list indexes optional; wire names or aliases); ``None`` when it leads nowhere.
    In a union of nested models the first member that has the whole path wins."""
    names = [p for p in path if isinstance(p, str)]
    reached = fields_along(model, names)
    if not names or len(reached) < len(names):
        return None
    return reached[-1][0]


def media_spec_at(model: type[BaseModel], path: Sequence[str | int]) -> MediaSpec | None:
    """The :class:`MediaSpec` of the field at ``path`` (list items share their list's)."""
    names = [p for p in path if isinstance(p, str)]
    reached = fields_along(model, names)
    if not names or len(reached) < len(names):
        return None
    return next((s for info in reached[-1] for s in media_specs(info)), None)


def media_fields_of(model: type[BaseModel]) -> dict[str, MediaSpec]:
    """Every media field of ``model``: dotted wire path (list indexes left out) → spec."""

    def walk(
        current: type[BaseModel], prefix: tuple[str, ...], seen: frozenset[type]
    ) -> Iterator[tuple[str, MediaSpec]]:
        for name, info in current.model_fields.items():
            path = (*prefix, info.alias or name)
            for spec in media_specs(info):
                yield ".".join(path), spec
            for sub in _models_in(info.annotation):
                if sub not in seen:
                    yield from walk(sub, path, seen | {sub})

    return dict(walk(model, (), frozenset({model})))


def _load() -> None:
    # Importing the family modules fills the registry (one module per family).
    from . import asset, image, imgm, speech, vida, video  # noqa: F401


def endpoints(*, documented_only: bool = True) -> list[EndpointSpec]:
    """Every endpoint in the catalog (the 20 documented ones by default)."""
    _load()
    return [s for s in _REGISTRY.values() if s.documented or not documented_only]


def endpoint(endpoint_id: str) -> EndpointSpec:
    """The catalog entry for ``endpoint_id``; an unknown id is a :class:`PayloadError`."""
    _load()
    try:
        return _REGISTRY[endpoint_id]
    except KeyError:
        close = difflib.get_close_matches(endpoint_id, list(_REGISTRY), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise PayloadError(
            [{"loc": (), "msg": f"unknown endpoint {endpoint_id!r}{hint}"}],
            endpoint=endpoint_id,
        ) from None


WEBHOOK_HINTS = ("webhook",)


def webhook_fields(payload: Mapping[str, Any]) -> list[str]:
    """Top-level names that carry webhook information (the service rejects them)."""
    return [k for k in payload if any(h in k.lower() for h in WEBHOOK_HINTS)]


_collector: ContextVar[list[tuple[str, type[Warning]]] | None] = ContextVar(
    "genwidgets_catalog_warnings", default=None
)


def soft_warning(message: str, category: type[Warning] = UserWarning) -> None:
    """A validator's soft finding: a warning, unless :func:`collect_warnings` is active."""
    sink = _collector.get()
    if sink is not None:
        sink.append((message, category))
    else:
        warnings.warn(message, category, stacklevel=4)


@contextmanager
def collect_warnings() -> Iterator[list[tuple[str, type[Warning]]]]:
    """Gather soft findings instead of warning (per thread and task, unlike catch_warnings).

    The simulator validates with it, so its thread never prints into a user's notebook.
    """
    found: list[tuple[str, type[Warning]]] = []
    token = _collector.set(found)
    try:
        yield found
    finally:
        _collector.reset(token)


def _pydantic_errors(exc: ValidationError) -> list[dict[str, Any]]:
    out = []
    for e in exc.errors(include_url=False):
        msg = e["msg"]
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
        out.append({"loc": tuple(e["loc"]), "msg": msg})
    return out


_JSON_SCALARS = (str, int, float, bool, type(None))
MAX_DEPTH = 64


def _non_json(payload: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Where the payload holds something JSON cannot carry (it is sent as JSON)."""
    problems: list[dict[str, Any]] = []
    stack: list[tuple[tuple[Any, ...], Any]] = [((), payload)]
    while stack and len(problems) < 20:
        loc, value = stack.pop()
        if isinstance(value, _JSON_SCALARS):
            continue
        if len(loc) > MAX_DEPTH:
            problems.append({"loc": loc, "msg": f"nested deeper than {MAX_DEPTH} levels"})
        elif isinstance(value, Mapping):
            for key, item in value.items():
                if not isinstance(key, str):
                    problems.append(
                        {"loc": loc, "msg": f"keys must be strings, not {type(key).__name__}"}
                    )
                else:
                    stack.append(((*loc, key), item))
        elif isinstance(value, list | tuple):
            stack.extend(((*loc, i), item) for i, item in enumerate(value))
        else:
            hint = (
                "; turn files, bytes and images into what the field wants with "
                "gw.media.encode(source, endpoint, field)"
                if isinstance(value, bytes | bytearray | memoryview) or hasattr(value, "save")
                else ""
            )
            problems.append(
                {
                    "loc": loc,
                    "msg": f"a {type(value).__name__} is not JSON data (allowed: strings, "
                    f"numbers, booleans, null, lists and objects){hint}",
                }
            )
    return problems


def validate(endpoint_id: str, payload: Mapping[str, Any]) -> EndpointModel:
    """Check ``payload`` against the endpoint's model; raise :class:`PayloadError`
    listing every problem. Unknown fields pass with an :class:`UnknownFieldWarning`
    naming the closest known field."""
    spec = endpoint(endpoint_id)
    if not isinstance(payload, Mapping):
        raise PayloadError(
            [{"loc": (), "msg": f"a payload is a dict of fields, not {type(payload).__name__}"}],
            endpoint=endpoint_id,
        )
    not_json = _non_json(payload)
    if not_json:  # before the model: pydantic would iterate a huge range, a generator...
        raise PayloadError(not_json, endpoint=endpoint_id)
    hooks = webhook_fields(payload)
    errors = [
        {"loc": (k,), "msg": "webhook not supported: the service delivers no webhooks; poll"}
        for k in hooks
    ]
    try:
        instance = spec.model.model_validate(dict(payload))
    except ValidationError as exc:
        errors.extend(_pydantic_errors(exc))
        instance = None
    if errors:
        raise PayloadError(errors, endpoint=endpoint_id)
    assert instance is not None
    known = set(spec.model.model_fields) | {
        f.alias for f in spec.model.model_fields.values() if f.alias
    }
    for name in payload:
        if name not in known and name not in hooks:
            close = difflib.get_close_matches(name, sorted(known), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            soft_warning(
                f"{endpoint_id}: unknown field {name!r} is sent as is{hint}", UnknownFieldWarning
            )
    return instance


def payload_of(endpoint_id: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    """Validate and return the JSON body that would be sent."""
    return validate(endpoint_id, payload).payload()
