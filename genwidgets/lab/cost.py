"""Counts: the generations a task bills (what ``confirm_above`` compares), the unit each
endpoint bills in and the words for it, and the billed units a budget caps (a plan's
summary, :meth:`~.batch_plan.TaskPlan.billed_line`, says them): docs/decisions.md#grid-plan,
#imgm-bills-prompts and #batch-units.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..catalog import NO_DEFAULT
from ..catalog import endpoint as catalog_endpoint
from ..catalog.imgm import IMAGES_PER_PROMPT
from ..errors import EndpointNotFound, PayloadError
from ..imgm.prompt import Prompt
from .axes import Axis, canonical
from .mapping import prompt_of

if TYPE_CHECKING:
    from ..catalog import EndpointSpec

__all__ = [
    "CONFIRM_ABOVE",
    "UNITS",
    "BilledUnit",
    "axis_count",
    "billed_count",
    "billed_unit",
    "billed_units",
    "billing_values",
    "needs_confirmation",
    "not_sent_line",
    "plural",
    "refuse_above",
]


def billed_count(spec: EndpointSpec, payload: Mapping[str, Any]) -> int:
    """Generations one task bills: the outputs it makes (its ``n``, sent or the
    service's default: ``genW2.5-t2i-preview`` makes 4 unless told) times, for imgM,
    each prompt's permutations and ``--repeat``. What ``confirm_above`` compares."""
    count = spec.generations(payload)
    for name in spec.prompt_fields:
        text = payload.get(name)
        if isinstance(text, str):
            count *= max(1, Prompt.parse(text).jobs())  # permutations × --repeat
    return count


_KIND_NOUNS = {"image": "image", "video": "video", "speech": "audio clip", "audio": "audio clip"}


@dataclass(frozen=True)
class BilledUnit:
    """What one billed generation of an endpoint is (``noun``) and the outputs
    (``outputs`` of ``output_noun``) each makes: imgM bills a prompt of 4 images."""

    noun: str
    outputs: int = 1
    output_noun: str = ""

    def amount(self, count: int, word: str = "") -> str:
        """``1 billed prompt (4 images)``, ``4 billed images`` (``word="billed "``)."""
        text = f"{count} {word}{plural(self.noun, count)}"
        if self.outputs > 1:
            made = count * self.outputs
            text += f" ({made} {plural(self.output_noun, made)})"
        return text


def plural(noun: str, count: int) -> str:
    return noun if count == 1 else noun + "s"


def billed_unit(endpoint: EndpointSpec | str) -> BilledUnit:
    """The unit an endpoint (its spec or id) bills in: for imgM each generated prompt
    (spec: "each generated prompt is billed separately"), which answers four images;
    else one output of the endpoint's kind (an image, a video, an audio clip); a
    ``generation`` for an id no longer in the catalog (a stored grid re-opened after
    its endpoint went)."""
    try:
        spec = catalog_endpoint(endpoint) if isinstance(endpoint, str) else endpoint
    except EndpointNotFound:
        return BilledUnit("generation")
    kind = _KIND_NOUNS.get(str(spec.kind), "generation")
    if spec.prompt_fields:
        return BilledUnit("prompt", IMAGES_PER_PROMPT, kind)
    return BilledUnit(kind)


#: the billed kinds a plan counts (what ``budget=`` caps), each with its key in a
#: price table (``prices={endpoint: {"per_second": 0.08}}``); docs/decisions.md#batch-units
UNITS: dict[str, str] = {
    "tasks": "per_task",
    "images": "per_image",
    "prompts": "per_prompt",
    "video_seconds": "per_second",
    "speech_characters": "per_character",
}


def billed_units(spec: EndpointSpec, payload: Mapping[str, Any]) -> dict[str, float | None]:
    """What one task bills, per kind of :data:`UNITS`, with the service's defaults for
    what the payload leaves out (None: it cannot say): docs/decisions.md#batch-units."""
    units: dict[str, float | None] = {"tasks": 1}
    if spec.kind == "image":
        units[billed_unit(spec).noun + "s"] = billed_count(spec, payload)
    elif spec.kind == "video":
        units["video_seconds"] = _video_seconds(spec, payload)
    elif spec.kind == "speech":
        text = prompt_of(spec, payload)
        units["speech_characters"] = len(text) if isinstance(text, str) else None
    return units


def _video_seconds(spec: EndpointSpec, payload: Mapping[str, Any]) -> float | None:
    """Seconds of video one task bills (duration sent or defaulted, times its outputs);
    None when the payload cannot say it."""
    if spec.field("duration") is None:
        return None
    value = spec.value_of(payload, "duration")
    try:
        seconds = float(value)
    except (TypeError, ValueError, OverflowError):  # 10**400: the payload check says why
        return None
    if isinstance(value, bool) or not math.isfinite(seconds) or seconds <= 0:
        return None  # NO_DEFAULT, or -1: the model chooses
    return seconds * spec.generations(payload)


def billing_values(
    spec: EndpointSpec, payloads: Sequence[Mapping[str, Any]]
) -> dict[str, list[Any]]:
    """Each billed field of the endpoint with the distinct values the payloads send."""
    billing: dict[str, list[Any]] = {}
    for name in spec.billing_fields:
        seen: dict[str, Any] = {}
        for payload in payloads:
            value = payload.get(name)
            if value is None:  # what the service uses when the field is not sent
                default = spec.value_of(payload, name)
                shown = str(default).lower() if isinstance(default, bool) else default  # true
                value = "default" if default is NO_DEFAULT else f"{shown} (default)"
            seen.setdefault(canonical(value), value)
        billing[name] = list(seen.values())
    return billing


#: A grid or sweep billing more generations than this waits for ``.submit()``; the
#: widgets' default (docs/decisions.md#one-home).
CONFIRM_ABOVE = 10


def needs_confirmation(billed_total: int, confirm_above: int) -> bool:
    """Whether a batch (a grid, a sweep) waits for ``.submit()``: it bills more
    generations than ``confirm_above``. A ``confirm_above`` that is not a whole
    number 0 or more is a ValueError."""
    if isinstance(confirm_above, bool) or not isinstance(confirm_above, int) or confirm_above < 0:
        raise ValueError(f"confirm_above must be a whole number 0 or more, not {confirm_above!r}")
    return billed_total > confirm_above


def not_sent_line(summary: str, confirm_above: int, how: str) -> str:
    """What a batch waiting for confirmation prints outside Jupyter: its summary, that
    nothing was sent, and ``how`` to send it."""
    return f"{summary} - above confirm_above={confirm_above}: nothing sent; {how}"


def refuse_above(
    endpoint: str,
    axes: Sequence[tuple[str, Axis]],
    limit: int,
    what: str,
    advice: str,
    *,
    limit_name: str = "",
) -> int:
    """The product of the axes' lengths, or a PayloadError (nothing sent) when it
    is over ``limit``, naming both numbers and the factors."""
    total = math.prod(len(a) for _, a in axes)
    if total > limit:
        factors = " × ".join(str(len(a)) for _, a in axes)
        raise PayloadError(
            f"{what.format(n=total)} ({factors}); the limit is {limit_name}{limit}: {advice}",
            endpoint=endpoint,
        )
    return total


_AXIS_NOUNS = {
    "endpoint": "endpoint",
    "prompt_sr": "prompt",
    "group": "prompt variant",
    "combination": "combination",
}


def axis_count(axis: Axis) -> str:
    """``3 endpoints``, ``2 seeds``: an axis as a count for summaries."""
    noun = _AXIS_NOUNS.get(axis.kind, axis.field)
    return f"{len(axis)} {plural(noun, len(axis))}"
