"""Field markers: what a field's ``Annotated`` metadata says about it, and the units
the spec's limits are written in.

Markers ride in ``Annotated`` metadata (pydantic keeps unknown metadata in
``FieldInfo.metadata``), so they never disturb the JSON schema; billing, the forms, the
media checks and the simulator read them. Sizes in MB are MiB (docs/decisions.md#mib); why
a default is a marker: docs/decisions.md#service-defaults-billing-and-messages-genwidgetscatalog.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BeforeValidator, Field
from pydantic.fields import FieldInfo

MB = 1024 * 1024
SEED_MAX = 2_147_483_647  # the largest seed the spec allows (a signed 32-bit integer)
#: the largest seed where the spec states no range (vidV): an unsigned 32-bit integer, as
#: the spec's imgM ``--seed`` (docs/decisions.md, "Every seed is bounded")
UNSIGNED_SEED_MAX = 4_294_967_295


@dataclass(frozen=True)
class _Flag:
    """A marker that only says the field is of a kind (its name is its repr)."""

    name: str

    def __repr__(self) -> str:
        return self.name


#: Marker: this field affects what a task costs.
BILLED = _Flag("BILLED")
#: Marker: this field is how many outputs one task makes, each billed (``n``).
GENERATIONS = _Flag("GENERATIONS")


@dataclass(frozen=True)
class ServiceDefault:
    """Marker: what the service uses when the field is not sent (``ServiceDefault(4)``).

    Fields stay ``None`` by default (unset fields are never sent, so the service
    decides); this says what it decides, as a value rather than prose.
    """

    value: Any


NO_DEFAULT: Any = object()
"""What :func:`service_default` returns for a field without :class:`ServiceDefault`."""


@dataclass(frozen=True)
class PromptString:
    """Marker: an imgM prompt field whose ``--`` parameters live in the string."""


PROMPT_STRING = PromptString()


def is_billed(info: FieldInfo) -> bool:
    return any(m is BILLED for m in info.metadata)


def service_default(info: FieldInfo) -> Any:
    """The field's :class:`ServiceDefault` value, or :data:`NO_DEFAULT`."""
    return next((m.value for m in info.metadata if isinstance(m, ServiceDefault)), NO_DEFAULT)


def is_generations(info: FieldInfo) -> bool:
    return any(m is GENERATIONS for m in info.metadata)


def is_prompt_string(info: FieldInfo) -> bool:
    return any(isinstance(m, PromptString) for m in info.metadata)


def reject_bool(value: Any) -> Any:
    """A boolean is not a number (``True`` is not ``1``): a BeforeValidator for numbers in
    lists, where the field-level check can't see, and that check's own words."""
    if isinstance(value, bool):
        raise ValueError(f"expected a number, not the boolean {str(value).lower()}")
    return value


Number = Annotated[int | float, BeforeValidator(reject_bool)]

Seed = Annotated[int | None, Field(ge=0, le=SEED_MAX)]
"""An optional seed within the spec's range (each endpoint says what it does)."""

UnsignedSeed = Annotated[int | None, Field(ge=0, le=UNSIGNED_SEED_MAX)]
"""An optional seed of an endpoint whose range the spec leaves open: 0 to
:data:`UNSIGNED_SEED_MAX` (no sign, as "0 means random" implies), never unbounded."""
