"""The queue protocol's addresses (spec 2.1) as one route table, for every server that
speaks it (the simulator, the class gateway): the paths and their methods are written
once here, and a server says only which handler answers each operation.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

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
    sync: Handler,
    status: Handler,
    status_stream: Handler,
    result: Handler,
    cancel: Handler,
) -> list[Route]:
    """The protocol's routes, each operation answered by its handler (given in the
    order of :data:`QUEUE_PATHS`)."""
    handlers = {
        "create": create,
        "sync": sync,
        "status": status,
        "status_stream": status_stream,
        "result": result,
        "cancel": cancel,
    }
    return [
        Route(path, handlers[name], methods=list(methods))
        for name, (path, methods) in QUEUE_PATHS.items()
    ]
