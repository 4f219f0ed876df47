"""The registry: which endpoints exist, and the one way to add one.

An endpoint is one declarative class decorated with :func:`register`, at import or
later in a running notebook; everything looks it up here each time, so nothing else
needs telling. Registering an id again replaces its entry (a cell run twice). The
families' modules register the service's endpoints; this module imports none of them.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, get_args

from pydantic.fields import FieldInfo

from ..errors import EndpointNotFound
from .fields import field_named, fields_of, known_names
from .markers import NO_DEFAULT, is_billed, is_generations, is_prompt_string, service_default
from .model import EndpointModel, whole_text

#: What a task of the endpoint makes; the simulator's run time and media follow it.
Kind = Literal["video", "image", "speech", "asset", "subject", "face", "audio"]
KINDS: tuple[str, ...] = get_args(Kind)

# An id is one URL path segment: /v1/queue/{endpoint}.
_ENDPOINT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
# An id's family, unless it says another: its lowercase head and the capital that ends it
# ("vidK" of "vidK-lip-sync", "vidV" of "vidVq2-text2video", "asset" of "asset-get").
_FAMILY = re.compile(r"^[a-z]*[A-Z]?")

E = TypeVar("E", bound=EndpointModel)


# Per model class, once: a batch asks these of every one of its thousands of rows.
@functools.cache
def _by_wire(model: type[EndpointModel]) -> dict[str, FieldInfo]:
    return {f.wire: f.info for f in fields_of(model)}


@functools.cache
def _wire_names(model: type[EndpointModel]) -> frozenset[str]:
    return frozenset(_by_wire(model))


@functools.cache
def _wires(model: type[EndpointModel], test: Callable[[FieldInfo], bool]) -> tuple[str, ...]:
    return tuple(f.wire for f in fields_of(model) if test(f.info))


@dataclass(frozen=True)
class EndpointSpec:
    """A catalog entry: one endpoint and its payload model.

    It answers every question about the endpoint's fields, each by wire name (the key
    a payload uses): :attr:`fields`, :attr:`billing_fields`, :attr:`required_fields`,
    :attr:`prompt_fields`, :attr:`defaults`; docs/decisions.md#wire-names.
    """

    id: str
    kind: str
    family: str
    title: str
    model: type[EndpointModel]
    documented: bool = True  # False for operations referenced but not described
    description: str = ""
    billing_fields: tuple[str, ...] = field(default=())  # wire names of BILLED fields

    def __repr__(self) -> str:
        return f"EndpointSpec({self.id!r}, kind={self.kind!r}, family={self.family!r})"

    @property
    def fields(self) -> dict[str, FieldInfo]:
        """The top-level fields by wire name, in declaration order."""
        return dict(_by_wire(self.model))

    @property
    def wire_names(self) -> frozenset[str]:
        """The top-level fields' wire names (what :attr:`fields` is keyed by)."""
        return _wire_names(self.model)

    def field(self, name: str) -> FieldInfo | None:
        """The top-level field ``name`` (wire or Python name); ``None`` if unknown."""
        found = field_named(self.model, name)
        return found.info if found is not None else None

    @property
    def known_names(self) -> frozenset[str]:
        """Every top-level key read as a field (wire and Python names)."""
        return known_names(self.model)

    @property
    def required_fields(self) -> tuple[str, ...]:
        """Wire names of the fields a payload must send."""
        return _wires(self.model, FieldInfo.is_required)

    @property
    def prompt_fields(self) -> tuple[str, ...]:
        """Wire names of the imgM prompt strings (marked :data:`PROMPT_STRING`):
        strings that carry ``--`` parameters and bill each permutation."""
        return _wires(self.model, is_prompt_string)

    @property
    def defaults(self) -> dict[str, Any]:
        """The service's default of each field that has one, by wire name."""
        found = ((f.wire, service_default(f.info)) for f in fields_of(self.model))
        return {wire: value for wire, value in found if value is not NO_DEFAULT}

    def value_of(self, payload: Mapping[str, Any], name: str) -> Any:
        """What the task uses for the top-level field ``name`` (python or wire name):
        the payload's value, else the field's :class:`ServiceDefault`, else
        :data:`NO_DEFAULT`."""
        found = field_named(self.model, name)
        if found is None:
            return payload.get(name, NO_DEFAULT)
        for key in (found.wire, found.name):
            if payload.get(key) is not None:
                return payload[key]
        return service_default(found.info)

    def generations(self, payload: Mapping[str, Any]) -> int:
        """Outputs one task makes, each billed: its :data:`GENERATIONS` field's value
        (sent or the service's default), 1 for endpoints without one. Read as the
        field's check reads it, so what is billed is what is sent: 4.0 from a pandas
        row and ``"4"``, ``" 4.0 "`` from a CSV cell or a form box each make 4."""
        count = 1
        for wire in _wires(self.model, is_generations):
            value = self.value_of(payload, wire)
            if isinstance(value, str) and (whole := whole_text(value)) is not None:
                value = int(whole)
            if isinstance(value, float) and value.is_integer() and 0 < value < 2**63:
                value = int(value)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                count *= value
        return count


_REGISTRY: dict[str, EndpointSpec] = {}


def register(
    endpoint_id: str,
    *,
    kind: str,
    title: str,
    family: str | None = None,
    documented: bool = True,
    description: str = "",
) -> Callable[[type[E]], type[E]]:
    """Class decorator: put an endpoint model in the catalog under ``endpoint_id``.

    ``kind`` is one of :data:`KINDS`; ``family`` defaults to the id's head (its
    lowercase letters and the capital after them: ``vidK`` of ``vidK-lip-sync``);
    ``description`` defaults to the first sentence
    of the class docstring; ``documented=False`` marks an operation the spec only
    references (listed by ``endpoints(documented_only=False)``).
    """
    if not isinstance(endpoint_id, str) or not _ENDPOINT_ID.fullmatch(endpoint_id):
        raise ValueError(
            f"endpoint id {endpoint_id!r} must be one URL path segment: letters, digits, "
            "'.', '_' and '-', starting with a letter or digit"
        )
    if kind not in KINDS:
        raise ValueError(f"kind {kind!r} is not one of {', '.join(KINDS)}")

    def deco(cls: type[E]) -> type[E]:
        if not (isinstance(cls, type) and issubclass(cls, EndpointModel)):
            raise TypeError(
                f"@register({endpoint_id!r}) decorates a subclass of "
                f"genwidgets.catalog.Endpoint, not {cls!r}"
            )
        cls.endpoint_id = endpoint_id
        billing = tuple(f.wire for f in fields_of(cls) if is_billed(f.info))
        _REGISTRY[endpoint_id] = EndpointSpec(
            id=endpoint_id,
            kind=kind,
            family=family or _FAMILY.findall(endpoint_id)[0] or endpoint_id,
            title=title,
            model=cls,
            documented=documented,
            description=description or _summary(cls.__doc__),
            billing_fields=billing,
        )
        return cls

    return deco


def unregister(endpoint_id: str) -> None:
    """Take an endpoint out of the catalog (an unknown id is ``EndpointNotFound``)."""
    endpoint(endpoint_id)
    del _REGISTRY[endpoint_id]


def _summary(doc: str | None) -> str:
    """A docstring's first sentence as plain text (forms show it as help; the rest of
    the docstring records our choices for developers)."""
    paragraph = (doc or "").strip().split("\n\n")[0]
    text = " ".join(line.strip() for line in paragraph.splitlines()).replace("``", "")
    head, dot, _rest = text.partition(". ")
    return head + "." if dot else text


def endpoints(*, documented_only: bool = True) -> list[EndpointSpec]:
    """Every endpoint in the catalog (the 20 documented ones by default, plus any
    registered at run time as documented)."""
    return [s for s in _REGISTRY.values() if s.documented or not documented_only]


def endpoint(endpoint_id: str) -> EndpointSpec:
    """The catalog entry for ``endpoint_id``; an unknown id is
    :class:`~genwidgets.errors.EndpointNotFound` (what the gateway answers too),
    with the closest known id."""
    try:
        return _REGISTRY[endpoint_id]
    except (KeyError, TypeError):
        known = list(_REGISTRY)
        close = (
            difflib.get_close_matches(endpoint_id, known, n=1)
            if isinstance(endpoint_id, str)
            else []
        )
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise EndpointNotFound(
            f"unknown endpoint {endpoint_id!r}{hint} (gw.endpoints() lists them)",
            endpoint=str(endpoint_id),
        ) from None
