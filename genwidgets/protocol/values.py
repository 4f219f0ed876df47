"""What a record keeps of a gateway's values: each one clamped, cut or refused.

A gateway may send any JSON where the spec shows a field: a queue position of
10**400, a status word of a megabyte, a request id with a NUL, a URL no client can
parse. The records read every answer through a :class:`Reading` model whose fields
are the kept forms below, so a polling schedule, a ledger row, a view or a URL only
ever sees what it can hold: docs/decisions.md#hostile-values.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, TypeVar

import httpx
from pydantic import BaseModel, ConfigDict, PlainValidator, ValidationError

from .._formats import TERMINAL_CONTROLS, int_or_none, terminal_text

__all__ = [
    "MAX_CONTENT_TYPE",
    "MAX_ERROR_TEXT",
    "MAX_FOLLOW_UP_URL",
    "MAX_QUEUE_POSITION",
    "MAX_REQUEST_ID",
    "MAX_WORD",
    "Position",
    "Reading",
    "RequestId",
    "Text",
    "Word",
    "cut",
    "error_text_of",
    "follow_up_url",
    "position_of",
    "request_id_of",
    "resolve_output_url",
    "str_or_none",
    "word_of",
]

#: Bounds of what a record keeps (docs/decisions.md#hostile-values): a longer request
#: id is refused; a queue position past the last one reads as unknown; longer status
#: words, error texts, content types and follow-up URLs are cut or dropped.
MAX_REQUEST_ID = 1024
MAX_QUEUE_POSITION = 10**6
MAX_WORD = 100
MAX_ERROR_TEXT = 16 * 1024
MAX_CONTENT_TYPE = 255
MAX_FOLLOW_UP_URL = 8 * 1024


def str_or_none(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)


def cut(text: str | None, limit: int) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return f"{text[:limit]}… (cut, {len(text):,} characters)"


def word_of(value: Any) -> str | None:
    """A status word (or ``error_type``) as kept: a non-string turned into one, cut at
    :data:`MAX_WORD` characters, inert on a terminal (a control character shown as its
    escape: docs/decisions.md#inert-text)."""
    word = cut(str_or_none(value), MAX_WORD)
    return None if word is None else terminal_text(word)


def error_text_of(text: str | None) -> str | None:
    """A task's ``error`` as kept: cut at :data:`MAX_ERROR_TEXT` characters, inert on a
    terminal (its lines and tabs kept: docs/decisions.md#inert-text)."""
    text = cut(text, MAX_ERROR_TEXT)
    return None if text is None else terminal_text(text, lines=True)


def position_of(value: Any) -> int | None:
    """A queue position, or None (unknown) for anything but an integer from 0 to
    :data:`MAX_QUEUE_POSITION` (a polling schedule and a ledger row can hold it)."""
    number = int_or_none(value, minimum=0)
    return number if number is not None and number <= MAX_QUEUE_POSITION else None


def request_id_of(value: Any) -> str:
    """A task's request id as the client uses it, or a ``ValueError`` saying why
    ``value`` cannot be one (none, not text, too long, a control character: one a
    terminal acts on, C1 and bidi controls too, docs/decisions.md#inert-text)."""
    if value is None or value == "":
        raise ValueError("the task handle has no request_id")
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ValueError(
            f"the task handle's request_id is a JSON {type(value).__name__}, not a string"
        )
    text = str(value)
    if len(text) > MAX_REQUEST_ID:
        raise ValueError(
            f"the task handle's request_id is {len(text):,} characters long "
            f"(at most {MAX_REQUEST_ID} are taken)"
        )
    bad = TERMINAL_CONTROLS.search(text)
    if bad is not None:  # a NUL cannot travel in a URL; an ESC, a C1 or a bidi override
        raise ValueError(  # would act on every terminal and log the id is shown in
            f"the task handle's request_id holds a control character "
            f"(U+{ord(bad.group()):04X} at position {bad.start()}), which no URL may carry "
            "and no terminal may show"
        )
    return text


def follow_up_url(value: Any, base_url: str) -> str | None:
    """A URL of the handle, resolved against the gateway; None (the documented one is
    used) when it is missing, not http(s), too long or not a URL at all."""
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_FOLLOW_UP_URL:
        return None
    try:
        url = httpx.URL(base_url.rstrip("/") + "/").join(value.strip())
    except (httpx.InvalidURL, ValueError, TypeError):
        return None
    return str(url) if url.scheme in ("http", "https") and url.host else None


def resolve_output_url(url: str | None, base_url: str | None) -> str | None:
    """An output's URL as kept: a relative one (``/files/x``) resolved against the
    gateway's ``base_url``, never left for a page to resolve against its own origin."""
    if not url or base_url is None or not base_url.startswith(("http://", "https://")):
        return url
    if re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", url):  # has a scheme (http, data, ...)
        return url
    try:
        return str(httpx.URL(base_url.rstrip("/") + "/").join(url))
    except (httpx.InvalidURL, ValueError, TypeError):
        return None


#: The kept forms as a :class:`Reading`'s fields declare them: each function above is
#: the field's whole reading (a plain validator): docs/decisions.md#records-by-pydantic.
Position = Annotated[int | None, PlainValidator(position_of)]
RequestId = Annotated[str, PlainValidator(request_id_of)]
Text = Annotated[str | None, PlainValidator(str_or_none)]
Word = Annotated[str | None, PlainValidator(word_of)]

ReadingT = TypeVar("ReadingT", bound="Reading")


class Reading(BaseModel):
    """The fields a record takes from a gateway's JSON object, under their names or a
    dialect's (``AliasChoices``); the rest is ignored here and kept in the record's ``raw``."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    #: what the answer is, as a refusal names it ("the task handle")
    what: ClassVar[str] = "the answer"

    @classmethod
    def read(cls: type[ReadingT], body: Any, **context: Any) -> ReadingT:
        """``body`` read; the one place a refusal becomes ours: a ``ValueError`` naming
        each field refused, what is allowed and what came (inert, cut), never pydantic's."""
        try:
            return cls.__pydantic_validator__.validate_python(body, context=context)
        except ValidationError as exc:
            raise ValueError("; ".join(_refusal(cls.what, e) for e in exc.errors())) from None


def _refusal(what: str, error: Mapping[str, Any]) -> str:
    """A kept form's own ``ValueError`` says what is allowed; pydantic's words are ours."""
    found, where = error.get("ctx", {}).get("error"), ".".join(map(str, error["loc"]))
    if isinstance(found, ValueError):
        said = str(found)
    else:
        said = f"{what}'s {where}: {error['msg']}" if where else f"{what} is not a JSON object"
    try:
        got = json.dumps(error.get("input"), ensure_ascii=False, default=str)
    except ValueError:  # a circular body made by hand
        got = "…"
    return said if got == "null" else f"{said}; got {terminal_text(cut(got, 80) or '')}"
