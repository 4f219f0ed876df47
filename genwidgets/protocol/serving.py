"""Running an ASGI app that speaks the queue protocol: uvicorn in a daemon thread (tests,
notebooks, the embedded simulator) or in the foreground (a command), the one lifecycle
of the simulator and of the class gateway.

The listening socket is bound by the caller's thread before uvicorn starts, so a port in
use fails at once with the server's own error, and :meth:`ThreadedServer.start` returns
only once connections are accepted.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import threading
import time
from collections.abc import Callable
from typing import Any, Literal, TypeVar

import uvicorn

from .._workers import RUNS

__all__ = ["PARENT_ENV", "ThreadedServer", "child_of_this_process"]

S = TypeVar("S", bound="ThreadedServer")
START_TIMEOUT = 15.0
#: set by a parent that starts a server as a child process (benchmarks, tests, the load
#: tool): the child ends when that parent ends (see :func:`child_of_this_process`)
PARENT_ENV = "GENWIDGETS_SIM_PARENT"
#: how often a child server looks whether its parent still runs
PARENT_CHECK = 0.2


def child_of_this_process(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment (``env``, default ``os.environ``) for a server started as a
    child of this process: it stops by itself when this process ends, however it ends."""
    return {**(os.environ if env is None else env), PARENT_ENV: str(os.getpid())}


def _watch_parent(server: uvicorn.Server, parent: int) -> None:
    """Stop ``server`` once the parent process is gone (we were re-parented)."""
    while not server.should_exit:
        if os.getppid() != parent:
            server.should_exit = True
            return
        time.sleep(PARENT_CHECK)


class ThreadedServer:
    """One ASGI app on ``host:port`` (port 0 picks a free one); a context manager whose
    :meth:`start` and :meth:`stop` are idempotent and thread-safe.

    A server says what it serves (:meth:`_app`), how it fails to start
    (:meth:`_start_error`) and what it lets go when it stops (:meth:`_release`, and
    :meth:`_drain` on its loop as it ends)."""

    #: the name of the serving thread
    thread_name = "genwidgets-server"
    #: ASGI lifespan events: "on" when the app starts background work in them
    lifespan: Literal["on", "off"] = "off"
    #: seconds open connections get once a foreground server is told to stop (SIGTERM)
    stop_grace = 2.0

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host, self.port = host, port
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._server: uvicorn.Server | None = None
        self._failure: BaseException | None = None

    # ------------------------------------------------------------------ what a server says
    def _app(self) -> Any:
        """The ASGI app to serve (built afresh at each start)."""
        raise NotImplementedError

    def _start_error(self, why: str) -> Exception:
        """The error raised when the server cannot start, saying ``why``."""
        return RuntimeError(why)

    async def _drain(self) -> None:
        """On the server's loop after its tasks are cancelled: close what it holds."""

    def _release(self) -> None:
        """After serving ended (stopped, or failed to start): let go of its resources."""

    # ------------------------------------------------------------------ the lifecycle
    @property
    def origin(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _bind(self) -> socket.socket:
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        # proto=IPPROTO_TCP lets asyncio set TCP_NODELAY on accepted connections
        # (with proto 0 it skips them, and every answer waits ~40 ms for an ACK).
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, self.port))
            sock.listen(1024)
        except OSError as exc:
            sock.close()
            raise self._start_error(
                f"cannot serve on {self.host}:{self.port}: {exc.strerror or exc}"
            ) from exc
        self.port = sock.getsockname()[1]
        return sock

    def _uvicorn(self) -> uvicorn.Server:
        config = uvicorn.Config(
            self._app(),
            log_level="warning",
            access_log=False,
            lifespan=self.lifespan,
            timeout_keep_alive=30,
            timeout_graceful_shutdown=2,
        )
        return uvicorn.Server(config)

    def start(self: S) -> S:
        """Serve in a daemon thread; return once connections are accepted."""
        with self._lock:
            if self.running:
                return self
            sock = self._bind()
            server = self._server = self._uvicorn()
            self._failure = None
            self._thread = threading.Thread(
                target=self._serve, args=(server, sock), name=self.thread_name, daemon=True
            )
            self._thread.start()
            deadline = time.monotonic() + START_TIMEOUT
            while not server.started:
                if not self._thread.is_alive() or time.monotonic() > deadline:
                    server.should_exit = True
                    reason = self._failure or "timed out"
                    self._release()
                    raise self._start_error(f"did not start on {self.origin}: {reason}")
                time.sleep(0.005)
        return self

    def _serve(self, server: uvicorn.Server, sock: socket.socket) -> None:
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(server.serve(sockets=[sock]))
        except BaseException as exc:  # reported by start(); the thread ends
            self._failure = exc
        finally:
            with contextlib.suppress(Exception):
                pending = asyncio.all_tasks(loop)  # background work: a queue, a sweep
                for task in pending:
                    task.cancel()
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
                loop.run_until_complete(self._drain())
            loop.close()
            sock.close()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop serving and let go of what the server holds; safe to call twice."""
        with self._lock:
            if self._server is not None:
                self._server.should_exit = True
            if self._thread is not None:
                self._thread.join(timeout)
            self._thread, self._server = None, None
            self._release()

    def serve_forever(self, on_ready: Callable[[], None] | None = None) -> None:
        """Serve in this thread until interrupted (Ctrl+C, SIGTERM); for a command.

        ``on_ready`` runs once the socket listens (the port is known)."""
        sock = self._bind()
        server = self._server = self._uvicorn()
        # SIGTERM stops it promptly (uvicorn waits with asyncio: a float works)
        server.config.timeout_graceful_shutdown = self.stop_grace  # type: ignore[assignment]
        parent = os.environ.get(PARENT_ENV, "")
        if parent.isdigit():
            RUNS.submit(_watch_parent, server, int(parent))
        if on_ready is not None:
            on_ready()
        try:
            server.run(sockets=[sock])
        finally:
            sock.close()
            self._release()

    def __enter__(self: S) -> S:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
