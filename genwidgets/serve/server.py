"""Running a class gateway: uvicorn in a daemon thread (tests, notebooks) or in the
foreground (``genwidgets serve``), by the queue servers' one lifecycle
(:class:`~genwidgets.protocol.serving.ThreadedServer`): a port in use fails at once.
"""

from __future__ import annotations

from typing import Any

from ..errors import ServeError
from ..protocol.serving import ThreadedServer
from .app import create_app
from .config import ServeConfig, ServeState
from .usage import admin_routes

__all__ = ["ClassServer"]


class ClassServer(ThreadedServer):
    """One class gateway on ``host:port`` (port 0 picks a free one); a context manager."""

    thread_name = "genwidgets-serve"
    #: its lifespan starts the sweep and stops it
    lifespan = "on"

    def __init__(self, config: ServeConfig, *, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(host=host, port=port)
        self.config = config
        self.state: ServeState | None = None

    def __repr__(self) -> str:
        return f"<ClassServer {self.base_url} upstream={self.config.upstream.base_url}>"

    @property
    def base_url(self) -> str:
        """Where students point ``GENWIDGETS_BASE_URL`` (the prefix included)."""
        return f"{self.origin}{self.config.mount}"

    def _app(self) -> Any:
        self.config.database.migrate()
        app, self.state = create_app(self.config, admin_routes())
        return app

    def _start_error(self, why: str) -> Exception:
        return ServeError(f"the class gateway {why}", code="START_FAILED")

    async def _drain(self) -> None:
        await self.config.upstream.close()

    def _release(self) -> None:
        self.config.database.close()
