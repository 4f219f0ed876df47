"""Running a class gateway: uvicorn in a daemon thread (tests, notebooks) or in the
foreground (``genwidgets serve``), on a socket bound first so a port in use fails at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Callable
from types import TracebackType

import uvicorn

from ..errors import ServeError
from .admin import admin_routes
from .app import create_app
from .config import ServeConfig, ServeState

__all__ = ["ClassServer"]

START_TIMEOUT = 15.0


class ClassServer:
    """One class gateway on ``host:port`` (port 0 picks a free one); a context manager."""

    def __init__(self, config: ServeConfig, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.config = config
        self.host, self.port = host, port
        self._thread: threading.Thread | None = None
        self._server: uvicorn.Server | None = None
        self.state: ServeState | None = None
        self._failure: BaseException | None = None

    def __repr__(self) -> str:
        return f"<ClassServer {self.base_url} upstream={self.config.upstream.base_url}>"

    @property
    def base_url(self) -> str:
        """Where students point ``GENWIDGETS_BASE_URL`` (the prefix included)."""
        prefix = "/" + self.config.prefix.strip("/") if self.config.prefix.strip("/") else ""
        return f"http://{self.host}:{self.port}{prefix}"

    def _bind(self) -> socket.socket:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, self.port))
            sock.listen(1024)
        except OSError as exc:
            sock.close()
            raise ServeError(
                f"cannot serve on {self.host}:{self.port}: {exc.strerror or exc}",
                code="START_FAILED",
            ) from exc
        self.port = sock.getsockname()[1]
        return sock

    def _uvicorn(self) -> uvicorn.Server:
        self.config.database.migrate()
        app, self.state = create_app(self.config, admin_routes())
        return uvicorn.Server(
            uvicorn.Config(
                app,
                log_level="warning",
                access_log=False,
                lifespan="on",
                timeout_keep_alive=30,
                timeout_graceful_shutdown=2,
            )
        )

    def start(self) -> ClassServer:
        """Serve in a daemon thread; return once connections are accepted."""
        sock = self._bind()
        server = self._server = self._uvicorn()
        self._thread = threading.Thread(
            target=self._serve, args=(server, sock), name="genwidgets-serve", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                server.should_exit = True
                raise ServeError(
                    f"the class gateway did not start: {self._failure}", code="START_FAILED"
                )
            time.sleep(0.005)
        return self

    def _serve(self, server: uvicorn.Server, sock: socket.socket) -> None:
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(server.serve(sockets=[sock]))
        except BaseException as exc:  # reported by start()
            self._failure = exc
        finally:
            with contextlib.suppress(Exception):
                pending = asyncio.all_tasks(loop)  # the fair queue's dispatcher, a sweep
                for task in pending:
                    task.cancel()
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
                loop.run_until_complete(self.config.upstream.close())
            loop.close()
            sock.close()

    def stop(self, timeout: float = 10.0) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
        self._thread, self._server = None, None
        self.config.database.close()

    def serve_forever(self, on_ready: Callable[[], None] | None = None) -> None:
        """Serve in this thread until interrupted; ``on_ready`` runs once it listens."""
        sock = self._bind()
        server = self._server = self._uvicorn()
        if on_ready is not None:
            on_ready()
        try:
            server.run(sockets=[sock])
        finally:
            sock.close()
            self.config.database.close()

    def __enter__(self) -> ClassServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
