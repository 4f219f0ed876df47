"""Checking a payload against its endpoint's model: :func:`validate` lists every
problem in one :class:`~genwidgets.errors.PayloadError`, and warns about unknown
fields (sent as is) with the closest known name.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Container, Iterable, Iterator, Mapping
from typing import Annotated, Any, get_args, get_origin

from pydantic import BaseModel, ValidationError

from ..errors import PayloadError
from ..imgm.checker import pasted_parameters
from .checks import MediaCheck, MediaSpec, shown
from .fields import field_named, fields_of, known_names
from .findings import UnknownFieldWarning, warn
from .introspect import (
    Limits,
    is_container,
    is_model,
    is_union,
    item_annotation,
    limits_of,
    literal_choices,
    models_in,
    number_text,
    strip_optional,
    unannotate,
)
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
#: errors our own validators raise: their words are the message (pydantic's prefix cut)
_OURS = {"value_error", "assertion_error"}
#: what a value must be, by pydantic's error type, for a field whose annotation says
#: nothing we can describe (an endpoint registered at run time with an unusual type)
_KIND_OF_ERROR = {"int": "a whole number", "float": "a number", "bool": "true or false",
                  "string": "a text", "list": "a list", "model": "an object (dict)",
                  "dict": "an object (dict)", "date": "a date such as 2026-01-31",
                  "datetime": "a date and time such as 2026-01-31T09:30:00Z",
                  "time": "a time such as 09:30:00", "url": "a URL", "uuid": "a UUID",
                  "decimal": "a number"}  # fmt: skip
#: what :func:`allowed` says of a type it does not know
_UNKNOWN_KIND = "a value of another kind"
_MAX_NAMED_FIELDS = 8


def _choices_text(choices: list[Any]) -> str:
    """``one of 'std', 'pro'``, or ``only '1080p'`` for a single choice."""
    written = ", ".join(
        repr(c) if isinstance(c, str) else str(c).lower() if isinstance(c, bool) else
        number_text(c) if isinstance(c, int | float) else shown(c)
        for c in choices
    )  # fmt: skip
    return f"only {written}" if len(choices) == 1 else f"one of {written}"


def _object_text(model: type[BaseModel]) -> str:
    """``an object (dict) with the fields url (required), type``: its wire names."""
    names = [f"{f.wire} (required)" if f.info.is_required() else f.wire for f in fields_of(model)]
    more = len(names) - _MAX_NAMED_FIELDS
    listed = ", ".join(names[:_MAX_NAMED_FIELDS]) + (f" and {more} more" if more > 0 else "")
    return f"an object (dict) with the fields {listed}" if names else "an object (dict)"


def allowed(annotation: Any, metadata: Iterable[Any] = ()) -> str:
    """What a value of ``annotation`` may be, in the user's words (never a class name):
    ``a whole number 1-4``, ``a text of at most 2500 characters``, ``one of 'std',
    'pro'``, ``a list of 1-4 items, each ...``, ``an object (dict) with the fields ...``.
    ``metadata`` is the field's own (its bounds); the annotation's ``Annotated`` parts
    are read too."""
    meta = list(metadata)
    while get_origin(annotation) is Annotated:
        annotation, *more = get_args(annotation)
        meta.extend(more)
    limits = limits_of(meta)
    choices = literal_choices(annotation)
    if choices is not None:
        return _choices_text(choices)
    if is_union(annotation):
        members = [m for m in get_args(annotation) if m is not type(None)]
        if {unannotate(m) for m in members} == {int, float}:
            return allowed(float, meta)  # Number: int | float
        return " or ".join(dict.fromkeys(allowed(m, meta) for m in members))
    if is_container(annotation):
        count = limits.length_range("items")
        item = allowed(item_annotation(annotation))
        return f"a list{f' of {count}' if count else ''}, each {item}"
    if is_model(annotation):
        return _object_text(annotation)
    media = next((m for m in meta if isinstance(m, MediaSpec)), None)
    if media is not None:
        return MediaCheck(media).expected()
    span = limits.number_range()
    words: dict[Any, str] = {
        bool: "true or false",
        int: "a whole number" + (f" {span}" if span else ""),
        float: "a number" + (f" {span}" if span else ""),
        str: "a text"
        + (f" of {limits.length_range('characters')}" if limits.min_len or limits.max_len else ""),
        dict: "an object (dict)",
        Any: "any JSON value",
    }
    return words.get(get_origin(annotation) or annotation, _UNKNOWN_KIND)


def _field_loc(model: type[BaseModel], loc: Iterable[Any]) -> tuple[Any, ...]:
    """``loc`` as the payload names it: the fields and list positions, without the union
    members pydantic adds (``scale.float``, ``points.0.int``, ``duration.str``)."""
    kept: list[Any] = []
    candidates: list[type[BaseModel]] = [model]
    for part in loc:
        if isinstance(part, int):
            kept.append(part)
            continue
        named = [f for f in (field_named(m, str(part)) for m in candidates) if f is not None]
        if named or not kept:  # an unknown top-level name is the user's, kept
            kept.append(part)
            candidates = [m for f in named for m in models_in(f.info.annotation)]
    return tuple(kept)


def _annotation_at(model: type[BaseModel], loc: tuple[Any, ...]) -> tuple[Any, list[Any]]:
    """The annotation of what ``loc`` points at (a field, or an item of a list field when
    it ends in a position) and its metadata (bounds, a media spec: a list's own are not
    its items'); ``(None, [])`` when it leads nowhere."""
    info = field_info_at(model, loc)
    if info is None:
        return None, []
    annotation, meta = info.annotation, list(info.metadata)
    positions = 0  # the list positions loc ends in: an item of an item...
    while positions < len(loc) and isinstance(loc[-1 - positions], int):
        positions += 1
    for _ in range(positions):
        annotation, meta = item_annotation(strip_optional(annotation)[0]), []
    while get_origin(annotation) is Annotated:
        annotation, *more = get_args(annotation)
        meta.extend(more)
    return annotation, meta


def _bound_problem(error: Mapping[str, Any], limits: Limits) -> str:
    """``must be 1-10; got 99``, ``must have 1-2000 characters; got 2001``: the whole
    range the field allows, with what was given (its size for a text or a list)."""
    got = error.get("input")
    if error["type"] in _RANGE_ERRORS:
        context = {
            k: v for k, v in (error.get("ctx") or {}).items() if k in ("ge", "le", "gt", "lt")
        }
        span = limits.number_range() or Limits(**context).number_range()
        return f"must be {span}; got {shown(got)}"
    unit = "characters" if isinstance(got, str) else "items"
    context = error.get("ctx") or {}
    stated = Limits(min_len=context.get("min_length"), max_len=context.get("max_length"))
    span = limits.length_range(unit) or stated.length_range(unit)
    size = f"; got {len(got)}" if isinstance(got, str | list | tuple) else ""
    return f"must have {span}{size}"


def _problem(
    model: type[BaseModel], loc: tuple[Any, ...], errors: list[Mapping[str, Any]]
) -> list[str]:
    """The messages for one place of the payload, from every error pydantic gave there
    (one per member of a union): our validators' words, "Field required", a bound, or
    what the field allows and what was given."""
    ours = [str(e["msg"]).removeprefix("Value error, ").removeprefix("Assertion failed, ")
            for e in errors if e["type"] in _OURS]  # fmt: skip
    if ours:
        return list(dict.fromkeys(ours))
    if any(e["type"] == "missing" for e in errors):
        return ["Field required"]
    bounds = [e for e in errors if e["type"] in _RANGE_ERRORS | _LENGTH_ERRORS]
    if bounds:
        said = _bound_problem(bounds[0], limits_of(_annotation_at(model, loc)[1]))
        return [f"is empty; {said}" if bounds[0].get("input") == "" else said]
    first = errors[0]
    return [expected_at(model, loc, first.get("input"), str(first["type"]))]


def expected_at(
    model: type[BaseModel], loc: tuple[Any, ...], given: Any, error_type: str = ""
) -> str:
    """``expected <what the place loc allows>; got <given, short and inert>``: a value of
    the wrong kind said one way, by validation and by a form given a value no box of
    the field can hold. ``error_type``, pydantic's, names the kind an unusual type wants."""
    annotation, meta = _annotation_at(model, loc)
    wanted = _UNKNOWN_KIND if annotation is None else allowed(annotation, meta)
    if wanted == _UNKNOWN_KIND:  # an unusual type: pydantic's error type says its kind
        wanted = _KIND_OF_ERROR.get(error_type.split("_")[0], wanted)
    return f"expected {wanted}; got {shown(given)}"


def misspelled(name: str, given: Iterable[Any], known: Container[str]) -> str | None:
    """The name among ``given`` that is no field (not in ``known``) and is closest to
    the required ``name``: a misspelling of it (``promt`` for ``prompt``), or None."""
    unknown = [g for g in given if isinstance(g, str) and g not in known]
    return _closest(name, unknown)


def _closest(name: str, candidates: list[str]) -> str | None:
    """The candidate ``name`` most likely means: one spelled the same in another case
    (``id`` for ``Id``: too short for difflib to call close), else difflib's closest."""
    same = [c for c in candidates if c.casefold() == name.casefold()]
    close = same or difflib.get_close_matches(name, candidates, n=1)
    return close[0] if close else None


def _pydantic_errors(
    exc: ValidationError, model: type[EndpointModel], payload: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """pydantic's errors in the user's terms, the one place they are turned into
    messages: per place of the payload (union members' errors joined), what is wrong,
    what was given (short, inert) and what is allowed; never a class name or pydantic's
    own words."""
    by_place: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
    for e in exc.errors(include_url=False):
        by_place.setdefault(_field_loc(model, e["loc"]), []).append(e)
    out = []
    for loc, errors in by_place.items():
        for msg in _problem(model, loc, errors):
            if msg == "Field required" and len(loc) == 1 and isinstance(loc[0], str):
                typo = misspelled(loc[0], payload, known_names(model))
                if typo is not None:
                    msg += f"; the unknown field {typo!r} is probably {loc[0]!r}, misspelled"
            out.append({"loc": loc, "msg": msg})
    return out


_JSON_SCALARS = (str, int, float, bool, type(None))
#: JSON nested deeper than this is neither sent nor read (real payloads and answers nest
#: a few levels); the protocol's reading (:mod:`genwidgets.protocol.body`) uses it too.
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


def unsendable(payload: Mapping[str, Any], *, inf_and_nan: bool = True) -> list[dict[str, Any]]:
    """Where the payload holds something the JSON body cannot carry: a non-JSON
    value, inf or nan, a non-string key, a text with a lone surrogate, or nesting too
    deep. ``inf_and_nan=False`` leaves those to validation, which says a field's range
    (a form shows it beside the field)."""
    problems, not_finite = _unsendable(payload)
    return problems + not_finite if inf_and_nan else problems


def _unsendable(payload: Mapping[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """:func:`unsendable`'s problems, inf and nan apart: a field's own check says those
    better (its range), and they harm no validation. Asked of every payload validated (a
    batch's thousands of rows): plain dicts, ASCII keys and texts take the short way.
    Only ``problems`` stop the scan at 20: however many inf or nan come first (a wide
    row of empty cells), a generator after them is still refused before the model."""
    problems: list[dict[str, Any]] = []
    not_finite: list[dict[str, Any]] = []
    stack: list[tuple[tuple[Any, ...], Any]] = [((), payload)]
    while stack and len(problems) < 20:
        loc, value = stack.pop()
        if isinstance(value, str):
            problem = None if value.isascii() else _surrogate(value)
            if problem:
                problems.append({"loc": loc, "msg": f"this text {problem}"})
            continue
        if isinstance(value, float) and not math.isfinite(value):
            if len(not_finite) < 20:
                not_finite.append({"loc": loc, "msg": _not_finite(value)})
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
    return problems, not_finite


def _not_finite(value: float, given: Any = None) -> str:
    text = f"{given!r}, read as {shown(value)}" if isinstance(given, str) else shown(value)
    return f"must be a finite number; got {text} (JSON has no inf or nan)"


def _read_as_not_finite(
    instance: EndpointModel, payload: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """inf or nan the model read from a text (``"inf"``, ``"nan"``, ``"1e999"`` for an item
    of a list of numbers): refused here, naming the place and the text, not by the
    encoder at send with no place."""
    wire = instance.to_wire()
    errors = []
    for error in _unsendable(wire)[1]:
        given = _at(payload, error["loc"])
        if isinstance(given, str):
            error = {**error, "msg": _not_finite(_at(wire, error["loc"]), given)}
        errors.append(error)
    return errors


def _at(tree: Any, loc: tuple[Any, ...]) -> Any:
    """The value at ``loc`` in nested dicts and lists; None where there is none."""
    for step in loc:
        if isinstance(tree, str):  # a text's characters are not places in the payload
            return None
        try:
            tree = tree[step]
        except (KeyError, IndexError, TypeError):
            return None
    return tree


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
    not_json, not_finite = _unsendable(payload)
    if not_json:  # before the model: pydantic would iterate a huge range, a generator...
        raise PayloadError(not_json, endpoint=endpoint_id)
    errors = webhook_problems(payload)
    hooks = {e["loc"][0] for e in errors}
    try:
        instance = spec.model.model_validate(dict(payload))
    except ValidationError as exc:
        errors.extend(_pydantic_errors(exc, spec.model, payload))
        instance = None
    # inf or nan the model took (a list of numbers states no range; an unknown field's
    # pydantic writes as null): said where no check of the field said it with its range
    said = {e["loc"] for e in errors}
    errors.extend(e for e in not_finite if e["loc"] not in said)
    if instance is not None and not errors:
        errors = _read_as_not_finite(instance, payload)
    if errors:
        raise PayloadError(errors, endpoint=endpoint_id)
    assert instance is not None
    known = spec.known_names
    for name in payload:
        if name not in known and name not in hooks:
            close = _closest(name, sorted(known))
            hint = f"; did you mean {close!r}?" if close else ""
            warn(f"{endpoint_id}: unknown field {name!r} is sent as is{hint}", UnknownFieldWarning)
    for where, field, text in _prompt_texts(payload, spec.prompt_fields):
        pasted = pasted_parameters(text)
        if pasted:
            warn(f"{where}: {_not_read(spec.id, pasted, spec.wire_names - {field})}")
    return instance


#: an imgM parameter -> the fields that do its work in other endpoints (the first found)
_FIELDS_FOR = {
    "ar": ("aspect_ratio", "ratio", "size"),
    "seed": ("seed",),
    "no": ("negative_prompt",),
    "repeat": ("n",),
}


def _prompt_texts(
    payload: Mapping[str, Any], imgm_prompts: Container[str]
) -> Iterator[tuple[str, str, str]]:
    """(where, field, text) of each prompt of a payload but imgM's own: a field named
    ``*prompt*``, or the ``text`` of an object in a list (vidA's content). Not a field
    named ``text`` (speechM's, vidK's audio preview): words to be spoken, not a prompt."""
    for name, value in payload.items():
        if isinstance(value, str) and "prompt" in name.lower() and name not in imgm_prompts:
            yield name, name, value
        for n, item in enumerate(value if isinstance(value, list) else ()):
            if isinstance(item, Mapping) and isinstance(item.get("text"), str):
                yield f"{name}.{n}.text", name, item["text"]


def _not_read(endpoint_id: str, pasted: Mapping[str, str], fields: Container[str]) -> str:
    """Why imgM's ``--`` parameters in another endpoint's prompt do nothing but cost, and
    which of its own fields do their work (a warning: a prompt may say "--" itself)."""
    words = list(pasted)
    one = len(words) == 1
    said = words[0] if one else ", ".join(words[:-1]) + " and " + words[-1]
    own = []
    for word, key in pasted.items():
        field = next((f for f in _FIELDS_FOR.get(key, ()) if f in fields), None)
        if field is not None:
            own.append(f"{field} (for {word})")
    advice = f"; set its field{'s' * (len(own) > 1)} {', '.join(own)} instead" if own else ""
    them = "it" if one else "them"
    kind = "is an imgM parameter" if one else "are imgM parameters"
    return f"{said} {kind}: {endpoint_id} has no such settings and reads {them} as words{advice}"


def payload_of(endpoint_id: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    """Validate and return the JSON body that would be sent."""
    return validate(endpoint_id, payload).to_wire()
