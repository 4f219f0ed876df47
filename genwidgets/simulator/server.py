"""Running the simulator: uvicorn in a daemon thread (or in the foreground for the CLI).

The listening socket is bound by the caller's thread before uvicorn starts, so
a port in use is reported at once as a clear :class:`SimulatorStartError`, and
:meth:`SimulatorServer.start` returns only once the server accepts connections.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import threading
import time
from collections.abc import Callable
from types import TracebackType

import uvicorn

from ..errors import SimulatorStartError
from .app import SimState, create_app
from .config import SimConfig

START_TIMEOUT = 15.0
#: set by a parent that starts the simulator as a child process (benchmarks, tests,
#: the load tool): the child ends when that parent ends (see :func:`child_of_this_process`)
PARENT_ENV = "GENWIDGETS_SIM_PARENT"
#: seconds a foreground simulator gives open connections once told to stop (SIGTERM)
STOP_GRACE = 0.25
#: how often a child simulator looks whether its parent still runs
PARENT_CHECK = 0.2


def child_of_this_process(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment (``env``, default ``os.environ``) for a simulator started as a
    child of this process: it stops by itself when this process ends, however it ends."""
    return {**(os.environ if env is None else env), PARENT_ENV: str(os.getpid())}


def _watch_parent(server: uvicorn.Server, parent: int) -> None:
    """Stop ``server`` once the parent process is gone (we were re-parented)."""
    while not server.should_exit:
        if os.getppid() != parent:
            server.should_exit = True
            return
        time.sleep(PARENT_CHECK)


class SimulatorServer:
    """One simulator on ``host:port`` (port 0 picks a free one).

    A context manager; :meth:`start` and :meth:`stop` are idempotent and
    thread-safe. ``base_url`` is known once started.
    """

    def __init__(
        self, config: SimConfig | None = None, *, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        self.config = config or SimConfig()
        self.host, self.port = host, port
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._server: uvicorn.Server | None = None
        self._state: SimState | None = None
        self._failure: BaseException | None = None

    def __repr__(self) -> str:
        where = self.base_url if self.running else "stopped"
        return f"<SimulatorServer {where} speed={self.config.speed:g}>"

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def state(self) -> SimState:
        """The live state (tasks, config); for tests and the CLI."""
        if self._state is None:
            raise RuntimeError("the simulator is not running")
        return self._state

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
            raise SimulatorStartError(
                f"cannot start the simulator on {self.host}:{self.port}: {exc.strerror or exc}"
            ) from exc
        self.port = sock.getsockname()[1]
        return sock

    def _uvicorn(self) -> uvicorn.Server:
        app, self._state = create_app(self.config)
        config = uvicorn.Config(
            app,
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_keep_alive=30,
            timeout_graceful_shutdown=2,
        )
        return uvicorn.Server(config)

    def start(self) -> SimulatorServer:
        """Serve in a daemon thread; return once connections are accepted."""
        with self._lock:
            if self.running:
                return self
            sock = self._bind()
            server = self._server = self._uvicorn()
            self._failure = None
            self._thread = threading.Thread(
                target=self._serve, args=(server, sock), name="genwidgets-simulator", daemon=True
            )
            self._thread.start()
            deadline = time.monotonic() + START_TIMEOUT
            while not server.started:
                if not self._thread.is_alive() or time.monotonic() > deadline:
                    server.should_exit = True
                    reason = self._failure or "timed out"
                    self._close_state()
                    raise SimulatorStartError(
                        f"the simulator did not start on {self.base_url}: {reason}"
                    )
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
                if self._state is not None:
                    self._state.scheduler.shutdown()
                pending = asyncio.all_tasks(loop)
                for task in pending:
                    task.cancel()
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.close()
            sock.close()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop serving and remove the output files; safe to call twice."""
        with self._lock:
            if self._server is not None:
                self._server.should_exit = True
            if self._thread is not None:
                self._thread.join(timeout)
            self._thread, self._server = None, None
            self._close_state()

    def _close_state(self) -> None:
        if self._state is not None:
            self._state.close()
            self._state = None

    def serve_forever(self, on_ready: Callable[[], None] | None = None) -> None:
        """Serve in this thread until interrupted (Ctrl+C); used by the CLI.

        ``on_ready`` runs once the socket listens (the port is known)."""
        sock = self._bind()
        server = self._server = self._uvicorn()
        # SIGTERM stops it promptly (uvicorn waits with asyncio: a float works)
        server.config.timeout_graceful_shutdown = STOP_GRACE  # type: ignore[assignment]
        parent = os.environ.get(PARENT_ENV, "")
        if parent.isdigit():
            threading.Thread(
                target=_watch_parent, args=(server, int(parent)), name="parent-watch", daemon=True
            ).start()
        if on_ready is not None:
            on_ready()
        try:
            server.run(sockets=[sock])
        finally:
            sock.close()
            self._close_state()

    def __enter__(self) -> SimulatorServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


_embedded: SimulatorServer | None = None
_embedded_lock = threading.Lock()


def embedded() -> SimulatorServer:
    """The process-wide simulator at demo speed on a free loopback port, started
    on first use (thread-safe) and shared by every client of the process."""
    global _embedded
    with _embedded_lock:
        if _embedded is None or not _embedded.running:
            _embedded = SimulatorServer(SimConfig(), host="127.0.0.1", port=0).start()
        return _embedded
