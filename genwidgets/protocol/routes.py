"""The queue protocol's addresses (spec 2.1) as one route table, for every server that
speaks it (the simulator, the class gateway): the paths and their methods are written
once here, and a server says only which handler answers each operation, and how it lets
a caller in to the two it refuses.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .refusals import detail

__all__ = ["QUEUE_PATHS", "queue_routes"]

Handler = Callable[[Request], Awaitable[Response]]

_TASK = "/v1/queue/{endpoint}/requests/{request_id}"
#: operation -> (path, methods): submit, the refused sync path, and a task's four
QUEUE_PATHS: dict[str, tuple[str, tuple[str, ...]]] = {
    "create": ("/v1/queue/{endpoint}", ("POST",)),
    "sync": ("/v1/queue/{endpoint}/sync", ("GET", "POST", "PUT")),
    "status": (f"{_TASK}/status", ("GET",)),
    "status_stream": (f"{_TASK}/status/stream", ("GET",)),
    "result": (f"{_TASK}/response", ("GET",)),
    "cancel": (f"{_TASK}/cancel", ("PUT",)),
}


def queue_routes(
    create: Handler,
    status: Handler,
    result: Handler,
    cancel: Handler,
    *,
    admit: Callable[[Request], Awaitable[object]],
) -> list[Route]:
    """The protocol's routes, each operation answered by its handler; the sync path and
    the status stream, which neither server serves, refuse (404, 400) a caller ``admit``
    lets in (it raises a :func:`~.refusals.refuse_with` for any other)."""

    def refused_once_admitted(code: int, text: str) -> Handler:
        async def handler(request: Request) -> Response:
            await admit(request)
            return detail(code, text)

        return handler

    handlers = {
        "create": create,
        "sync": refused_once_admitted(404, "Not Found"),
        "status": status,
        "status_stream": refused_once_admitted(400, "SSE streaming not supported"),
        "result": result,
        "cancel": cancel,
    }
    return [
        Route(path, handlers[name], methods=list(methods))
        for name, (path, methods) in QUEUE_PATHS.items()
    ]
