"""What a payload asks for, read through its endpoint's model: a field left out
gives the model's :class:`~genwidgets.catalog.ServiceDefault`, a number is clamped
to the model's range, a choice is one of the model's values. So the simulator
restates no default and no range: the catalog is the one place they live.

Reads are tolerant (a string ``"5"`` is 5, an unreadable value falls back):
producing media never fails on input that validation let through.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from ..catalog import NO_DEFAULT, field_named, service_default
from ..catalog.coerce import parse_size
from ..catalog.introspect import Limits, is_model, leaves, limits_of, literal_values
from .registry import ENDPOINTS


class Asked:
    """A payload and the model of its endpoint (``None`` for a model we do not know)."""

    def __init__(self, payload: Mapping[str, Any], model: type[BaseModel] | None) -> None:
        self.payload = payload
        self.model = model

    def _info(self, name: str) -> FieldInfo | None:
        if self.model is None:
            return None
        found = field_named(self.model, name)
        return found.info if found is not None else None

    def has(self, name: str) -> bool:
        """Whether the model has the field (or, without a model, the payload sends it)."""
        return self._info(name) is not None or name in self.payload

    def get(self, name: str, fallback: Any = None) -> Any:
        """The value sent, else the service's default, else ``fallback``."""
        value = self.payload.get(name)
        if value is not None:
            return value
        info = self._info(name)
        default = service_default(info) if info is not None else NO_DEFAULT
        return fallback if default is NO_DEFAULT else default

    def num(self, name: str, fallback: float, lo: float, hi: float) -> float:
        """A number, clamped to the model's range (``lo``-``hi`` where it states none)."""
        info = self._info(name)
        limits = limits_of(info.metadata) if info is not None else Limits()
        value = self.get(name, fallback)
        try:
            number = float(value) if not isinstance(value, bool) else fallback
        except (TypeError, ValueError):
            number = fallback
        low = lo if limits.low is None else limits.low
        high = hi if limits.high is None else limits.high
        return max(low, min(high, number))

    def int(self, name: str, fallback: int, lo: int, hi: int) -> int:
        return int(self.num(name, fallback, lo, hi))

    def choice(self, name: str, fallback: str) -> str:
        """One of the model's values (lowercase; any value where it lists none), or
        ``fallback``."""
        value = str(self.get(name, fallback)).strip().lower()
        info = self._info(name)
        options = [str(v).lower() for v in literal_values(info.annotation)] if info else []
        return value if not options or value in options else fallback

    def flag(self, name: str, fallback: bool = False) -> bool:
        """A switch: true, ``"on"``, ``"yes"``... sent or by the service's default."""
        value = self.get(name)
        if isinstance(value, str):
            return value.strip().lower() in {"true", "on", "yes", "1", "enabled"}
        return fallback if value is None else bool(value)

    def section(self, name: str) -> Asked:
        """A nested object, read through its own model."""
        value = self.payload.get(name)
        info = self._info(name)
        found = leaves(info.annotation) if info is not None else []
        models = [leaf for leaf in found if is_model(leaf)]
        return Asked(value if isinstance(value, Mapping) else {}, models[0] if models else None)


def asked(endpoint: str, payload: Mapping[str, Any]) -> Asked:
    """``payload`` read through ``endpoint``'s model (a model-less reader when unknown)."""
    spec = ENDPOINTS.get(endpoint)
    return Asked(payload, spec.model if spec is not None else None)


def ratio_of(text: str, default: tuple[int, int] = (16, 9)) -> tuple[int, int]:
    """``"16:9"`` as ``(16, 9)``; ``default`` for anything else."""
    match = re.fullmatch(r"\s*(\d{1,5})\s*:\s*(\d{1,5})\s*", text or "")
    if not match or int(match.group(1)) == 0 or int(match.group(2)) == 0:
        return default
    return int(match.group(1)), int(match.group(2))


def size_of(text: Any, default: tuple[int, int], lo: int, hi: int) -> tuple[int, int]:
    """A size the catalog reads (``"1280*720"``, ``"1280x720"``) as a clamped
    ``(width, height)``; else ``default``."""
    try:
        width, height = parse_size(str(text or ""))
    except ValueError:
        return default
    return (max(lo, min(hi, width)), max(lo, min(hi, height)))
