"""The refusals of every server that speaks the queue protocol (the simulator, the class
gateway): the service's error shape (spec 2.4) and its ``detail`` answer, a refusal raised
anywhere in a handler and answered by one exception handler, the bearer token, and the
capped read of a request's body.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from typing import Any

from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response

__all__ = [
    "GONE",
    "HANDLERS",
    "bearer",
    "detail",
    "gateway_error",
    "read_capped",
    "refuse",
    "refuse_with",
]


log = logging.getLogger("genwidgets.protocol")

#: the status a request answers whose client went away before its body was read (nginx's
#: "client closed request"): nobody reads it, a log line says it
GONE = 499


def detail(status: int, text: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"detail": text}, status_code=status, headers=headers)


def gateway_error(
    status: int,
    code: str,
    message: str,
    retry_after: float | None = None,
    headers: Mapping[str, str] | None = None,
    *,
    with_id: bool = True,
) -> JSONResponse:
    """The service's error body; ``retry_after`` seconds said in whole ones (at least 1),
    or ``headers`` as given (a simulator dialect words its own). ``with_id`` False: no
    ``request_id`` beside it (the class gateway's own failures, where a task may exist:
    an id there could be taken for the task's)."""
    if retry_after:
        headers = {"Retry-After": str(max(1, round(retry_after)))}
    body: dict[str, Any] = {"error": {"code": code, "message": message}}
    if with_id:
        body["request_id"] = str(uuid.uuid4())
    return JSONResponse(body, status_code=status, headers=headers)


class _Refused(Exception):
    """A request refused, answered with ``response``. Private: it never leaves a server
    (users meet the errors of genwidgets.errors), so callers raise :func:`refuse_with`."""

    def __init__(self, response: Response) -> None:
        self.response = response


def refuse_with(response: Response) -> Exception:
    """The refusal to raise anywhere in a handler: the app answers it with ``response``
    (register :data:`HANDLERS` in its exception handlers)."""
    return _Refused(response)


def refuse(status: int, text: str) -> Exception:
    """The refusal answered ``{"detail": text}`` with ``status``."""
    return refuse_with(detail(status, text))


async def _answer(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, _Refused)
    return exc.response


#: the exception handlers of an app that raises refusals
HANDLERS = {_Refused: _answer}


async def read_capped(
    request: Request, cap: int, *, drain_to: int | None = None, note: str = ""
) -> bytes:
    """The request's body, at most ``cap`` bytes; a larger one is refused with 413 at
    once, or, with ``drain_to``, once read up to that many bytes, so the answer can say
    its size and a client still sending sees it rather than a reset. ``note`` ends the
    message. A client gone before its body was read (a kernel killed mid-create) is one
    log line, nothing made: never a traceback per cut request."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > (drain_to or cap):
        raise refuse(413, f"Request body too large: at most {cap} bytes{note}")
    chunks, size = [], 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size <= cap:
                chunks.append(chunk)
            elif drain_to is None:
                raise refuse(413, f"Request body too large: at most {cap} bytes{note}")
            elif size > drain_to:
                break
    except ClientDisconnect:
        log.warning(
            "%s %s: the client went away after %d bytes of its body; nothing was made",
            request.method,
            request.url.path,
            size,
        )
        raise refuse(GONE, "the client went away before its request was read") from None
    if size > cap:
        raise refuse(413, f"Request body too large: {size} bytes; at most {cap}{note}")
    return b"".join(chunks)


def bearer(request: Request) -> str:
    """The request's bearer token (``""`` when it sends none)."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""
