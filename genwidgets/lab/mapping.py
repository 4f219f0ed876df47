"""One payload, several endpoints: where the prompt and the seed go in each.

Only the prompt and the seed move; every other field keeps its name and is dropped
(listed in the cell's ``plan_note``) where the target has no such field. Roles are read
from field names; :data:`ROUTES` holds the endpoints whose names do not say it (a new
endpoint needs at most one entry). The table: docs/decisions.md, "Prompt lab: comparing
models".
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..catalog import endpoints
from ..imgm.prompt import Prompt

if TYPE_CHECKING:
    from ..catalog import EndpointSpec

__all__ = [
    "CONTENT_TEXT",
    "ENDPOINT_AXIS",
    "PROMPT_NAMES",
    "PROMPT_SEED",
    "ROUTES",
    "Mapped",
    "Route",
    "map_payload",
    "mapping_table",
    "prompt_of",
    "read_roles",
    "route_for",
]

#: the axis name that sends each cell to its own endpoint
ENDPOINT_AXIS = "endpoint"
#: field names that hold the prompt, first found wins
PROMPT_NAMES = ("prompt", "remix_prompt", "remixPrompt", "text")
SEED_NAME = "seed"
#: the prompt travels as the text item of a ``content`` list (vidA)
CONTENT_TEXT = "content[type=text].text"
#: the seed travels as ``--seed N`` inside the prompt string (imgM)
PROMPT_SEED = "--seed"
_AUTO = "auto"


@dataclass(frozen=True)
class Route:
    """Where one endpoint takes the prompt and the seed (``None``: it has none)."""

    prompt: str | None = _AUTO
    seed: str | None = _AUTO


#: endpoint id or family -> its route, only where field names do not say it
ROUTES: dict[str, Route] = {
    "vidA": Route(prompt=CONTENT_TEXT, seed=None),
    "imgM": Route(seed=PROMPT_SEED),
}


_FROM_NAMES = Route()


def route_for(spec: EndpointSpec) -> Route:
    """The resolved route of an endpoint: its table entry, the rest from names.
    Resolved once per (entry, field names): a batch asks it of every row, and a
    changed :data:`ROUTES` entry or a re-registered model is a new key."""
    entry = ROUTES.get(spec.id) or ROUTES.get(spec.family) or _FROM_NAMES
    return _resolved(entry, spec.wire_names)


@functools.lru_cache(maxsize=256)
def _resolved(entry: Route, names: frozenset[str]) -> Route:
    if entry.prompt == _AUTO:
        entry = replace(entry, prompt=next((n for n in PROMPT_NAMES if n in names), None))
    if entry.seed == _AUTO:
        entry = replace(entry, seed=SEED_NAME if SEED_NAME in names else None)
    return entry


def prompt_of(spec: EndpointSpec, payload: Mapping[str, Any]) -> str | None:
    """The prompt text of a payload of this endpoint (``--seed`` left in)."""
    return _prompt_at(route_for(spec).prompt, payload)


def _prompt_at(where: str | None, payload: Mapping[str, Any]) -> str | None:
    """The text at ``where``: a field, or the first text item of ``content``."""
    value = None
    if where == CONTENT_TEXT:
        items = payload.get("content") or ()
        texts = (i for i in items if isinstance(i, Mapping) and i.get("type") == "text")
        value = next(texts, {}).get("text")
    elif where is not None:
        value = payload.get(where)
    return value if isinstance(value, str) else None


def read_roles(spec: EndpointSpec, payload: dict[str, Any]) -> tuple[str | None, Any, set[str]]:
    """(prompt, seed, keys consumed) of a payload in ``spec``'s terms; an imgM
    ``--seed`` is taken out of the prompt (a ``seed`` key wins over it)."""
    route = route_for(spec)
    prompt = _prompt_at(route.prompt, payload)
    holder = "content" if route.prompt == CONTENT_TEXT else route.prompt
    used = {name for name in (holder, SEED_NAME) if name in payload}
    seed = payload.get(SEED_NAME)
    if route.seed == PROMPT_SEED and prompt is not None:
        parsed = Prompt.parse(prompt)
        if "seed" in parsed.params:
            seed = parsed.params["seed"] if seed is None else seed
            prompt = str(parsed.with_params(seed=None))
    return prompt, seed, used


@dataclass(frozen=True)
class Mapped:
    """A payload mapped to a target endpoint: what to send, what was left out,
    and the required fields still missing (the caller refuses the cell)."""

    payload: dict[str, Any]
    dropped: tuple[str, ...]
    missing: tuple[str, ...]


def map_payload(
    source: Any,
    target: Any,
    payload: Mapping[str, Any],
    extra: Mapping[str, Any] | None = None,
    *,
    seed_locked: bool = False,
) -> Mapped:
    """``payload`` (in ``source``'s terms) written for ``target`` (both catalog
    specs); ``extra`` (the user's ``per_endpoint[target.id]``) is laid over it.
    ``seed_locked``: the payload's seed is the grid's locked one, not the user's, so a
    target that reads a seed the user wrote in its own terms (``--seed 5`` in a genW
    prompt, for imgM) keeps that one."""
    data = copy.deepcopy(dict(payload))
    prompt, seed, used = read_roles(source, data)
    names = target.fields
    route = route_for(target)
    out = {key: value for key, value in data.items() if key in names and key not in used}
    dropped = [key for key in data if key not in names and key not in used]
    if prompt is not None:
        if route.prompt == CONTENT_TEXT:
            others = [
                i
                for i in (data.get("content") or [])
                if isinstance(i, Mapping) and i.get("type") != "text"
            ]
            out["content"] = [{"type": "text", "text": prompt}, *others]
        elif route.prompt is not None:
            out[route.prompt] = prompt
        else:
            dropped.append("prompt")
    if seed_locked and read_roles(target, out)[1] is not None:
        seed = None  # the user's, in the target's terms
    if seed is not None:
        if route.seed == PROMPT_SEED and route.prompt is not None:
            text = out.get(route.prompt)
            base = Prompt.parse(text if isinstance(text, str) else "")
            out[route.prompt] = str(base.with_params(seed=seed)).strip()
        elif route.seed is not None and route.seed != PROMPT_SEED:
            out[route.seed] = seed
        else:
            dropped.append(SEED_NAME)
    out.update(copy.deepcopy(dict(extra or {})))
    missing = tuple(n for n in target.required_fields if n not in out)
    return Mapped(out, tuple(dict.fromkeys(dropped)), missing)


def mapping_table() -> list[dict[str, Any]]:
    """Every catalog endpoint that takes a prompt, with where its prompt and seed
    go (the documented table, computed: tests and docs read it)."""
    routes = ((spec, route_for(spec)) for spec in endpoints())
    return [
        {"endpoint": spec.id, "kind": spec.kind, "prompt": route.prompt, "seed": route.seed}
        for spec, route in routes
        if route.prompt is not None
    ]
