"""Checking a payload against its endpoint's model: :func:`validate` lists every
problem in one :class:`~genwidgets.errors.PayloadError`, and warns about unknown
fields (sent as is) with the closest known name.
"""

from __future__ import annotations

import difflib
from collections.abc import Container, Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from ..errors import PayloadError
from .fields import known_names
from .findings import UnknownFieldWarning, warn
from .introspect import limits_of, number_text
from .model import EndpointModel
from .paths import field_info_at
from .registry import endpoint


def webhook_fields(payload: Mapping[str, Any]) -> list[str]:
    """Top-level names that carry webhook information, any name with "webhook" in it
    (the service rejects them)."""
    return [k for k in payload if "webhook" in k.lower()]


def webhook_problems(payload: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One problem per top-level field that asks for a webhook, validated or not."""
    return [
        {"loc": (k,), "msg": "webhook not supported: the service delivers no webhooks; poll"}
        for k in webhook_fields(payload)
    ]


def names_a_webhook(value: Any) -> bool:
    """Whether a key naming a webhook stands at any depth of ``value`` (a gateway's
    check): a loop with its own stack, so a body nested however deep is walked, never a
    RecursionError (a 500)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if webhook_fields({str(name): None for name in item}):
                return True
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


_RANGE_ERRORS = {"greater_than_equal", "less_than_equal", "greater_than", "less_than"}
_LENGTH_ERRORS = {"string_too_short", "string_too_long", "too_short", "too_long"}


def _whole_range(model: type[EndpointModel], error: Mapping[str, Any]) -> str | None:
    """``must be 1-10; got 99`` for a bound pydantic names alone (it says only the
    bound that failed); None when the field states one bound only."""
    info = field_info_at(model, [p for p in error["loc"] if isinstance(p, str | int)])
    if info is None:
        return None
    limits = limits_of(info.metadata)
    got = error.get("input")
    if error["type"] in _RANGE_ERRORS:
        low, high = limits.low, limits.high
        if low is None or high is None:
            return None
        if limits.gt is None and limits.lt is None:
            span = f"{number_text(low)}-{number_text(high)}"
        else:
            span = f"between {number_text(low)} and {number_text(high)}"
            span += " (both excluded)" if limits.gt is not None and limits.lt is not None else ""
        return f"must be {span}; got {got!r}"
    if limits.min_len is None or limits.max_len is None:
        return None
    size = len(got) if isinstance(got, str | list | tuple) else None
    unit = "characters" if isinstance(got, str) else "items"
    return f"must have {limits.min_len}-{limits.max_len} {unit}" + (
        f"; got {size}" if size is not None else ""
    )


def misspelled(name: str, given: Iterable[Any], known: Container[str]) -> str | None:
    """The name among ``given`` that is no field (not in ``known``) and is closest to
    the required ``name``: a misspelling of it (``promt`` for ``prompt``), or None."""
    unknown = [g for g in given if isinstance(g, str) and g not in known]
    close = difflib.get_close_matches(name, unknown, n=1)
    return close[0] if close else None


def _pydantic_errors(
    exc: ValidationError, model: type[EndpointModel], payload: Mapping[str, Any]
) -> list[dict[str, Any]]:
    out = []
    for e in exc.errors(include_url=False):
        msg = e["msg"]
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
        if e["type"] in _RANGE_ERRORS | _LENGTH_ERRORS:
            msg = _whole_range(model, e) or msg
        if e["type"] == "string_too_short" and e.get("input") == "":
            msg = f"is empty; {msg[:1].lower()}{msg[1:]}"
        if e["type"] == "missing" and len(e["loc"]) == 1 and isinstance(e["loc"][0], str):
            typo = misspelled(e["loc"][0], payload, known_names(model))
            if typo is not None:
                msg += f"; the unknown field {typo!r} is probably {e['loc'][0]!r}, misspelled"
        out.append({"loc": tuple(e["loc"]), "msg": msg})
    return out


_JSON_SCALARS = (str, int, float, bool, type(None))
MAX_DEPTH = 64


def _surrogate(text: str) -> str | None:
    """A message when ``text`` holds a lone surrogate, which UTF-8 (the body) cannot carry."""
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        code = ord(text[exc.start])
        return (
            f"holds the lone surrogate U+{code:04X} at character {exc.start + 1}, which "
            "UTF-8 cannot carry (a broken emoji or a bad copy-paste?): remove it"
        )
    return None


def unsendable(payload: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Where the payload holds something the JSON body cannot carry: a non-JSON
    value, a non-string key, a text with a lone surrogate, or nesting too deep. Asked
    of every payload validated (a batch's thousands of rows): plain dicts, ASCII keys
    and texts take the short way."""
    problems: list[dict[str, Any]] = []
    stack: list[tuple[tuple[Any, ...], Any]] = [((), payload)]
    while stack and len(problems) < 20:
        loc, value = stack.pop()
        if isinstance(value, str):
            problem = None if value.isascii() else _surrogate(value)
            if problem:
                problems.append({"loc": loc, "msg": f"this text {problem}"})
            continue
        if isinstance(value, _JSON_SCALARS):
            continue
        if len(loc) > MAX_DEPTH:
            problems.append({"loc": loc, "msg": f"nested deeper than {MAX_DEPTH} levels"})
        elif type(value) is dict or isinstance(value, Mapping):
            for key, item in value.items():
                if type(key) is str and key.isascii():
                    stack.append(((*loc, key), item))
                elif not isinstance(key, str):
                    problems.append(
                        {"loc": loc, "msg": f"keys must be strings, not {type(key).__name__}"}
                    )
                elif _surrogate(key):
                    problems.append({"loc": loc, "msg": f"the field name {_surrogate(key)}"})
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
    not_json = unsendable(payload)
    if not_json:  # before the model: pydantic would iterate a huge range, a generator...
        raise PayloadError(not_json, endpoint=endpoint_id)
    errors = webhook_problems(payload)
    hooks = {e["loc"][0] for e in errors}
    try:
        instance = spec.model.model_validate(dict(payload))
    except ValidationError as exc:
        errors.extend(_pydantic_errors(exc, spec.model, payload))
        instance = None
    if errors:
        raise PayloadError(errors, endpoint=endpoint_id)
    assert instance is not None
    known = spec.known_names
    for name in payload:
        if name not in known and name not in hooks:
            close = difflib.get_close_matches(name, sorted(known), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            warn(f"{endpoint_id}: unknown field {name!r} is sent as is{hint}", UnknownFieldWarning)
    return instance


def payload_of(endpoint_id: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    """Validate and return the JSON body that would be sent."""
    return validate(endpoint_id, payload).to_wire()
