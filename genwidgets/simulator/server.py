"""Running the simulator: uvicorn in a daemon thread (or in the foreground for the CLI),
by the queue servers' one lifecycle (:class:`~genwidgets.protocol.serving.ThreadedServer`):
a port in use is a clear :class:`SimulatorStartError` at once, and
:meth:`SimulatorServer.start` returns only once the server accepts connections.
"""

from __future__ import annotations

import threading
from typing import Any

from ..errors import SimulatorStartError
from ..protocol.serving import ThreadedServer
from .app import SimState, create_app
from .config import SimConfig, speed_from_env

__all__ = ["SimulatorServer", "embedded"]


class SimulatorServer(ThreadedServer):
    """One simulator on ``host:port`` (port 0 picks a free one).

    A context manager; :meth:`start` and :meth:`stop` are idempotent and
    thread-safe. ``base_url`` is known once started.
    """

    thread_name = "genwidgets-simulator"
    #: a foreground simulator stops within a quarter second of SIGTERM
    stop_grace = 0.25

    def __init__(
        self, config: SimConfig | None = None, *, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        super().__init__(host=host, port=port)
        self.config = config or SimConfig()
        self._state: SimState | None = None

    def __repr__(self) -> str:
        where = self.base_url if self.running else "stopped"
        return f"<SimulatorServer {where} speed={self.config.speed:g}>"

    @property
    def base_url(self) -> str:
        return self.origin

    @property
    def state(self) -> SimState:
        """The live state (tasks, config); for tests and the CLI."""
        if self._state is None:
            raise RuntimeError("the simulator is not running")
        return self._state

    def _app(self) -> Any:
        app, self._state = create_app(self.config)
        return app

    def _start_error(self, why: str) -> Exception:
        return SimulatorStartError(f"the simulator {why}")

    def _release(self) -> None:
        """Remove the output files."""
        if self._state is not None:
            self._state.close()
            self._state = None


_embedded: SimulatorServer | None = None
_embedded_lock = threading.Lock()


def embedded() -> SimulatorServer:
    """The process-wide simulator at demo speed (``GENWIDGETS_SIM_SPEED`` times it) on a
    free loopback port, started on first use (thread-safe) and shared by every client
    of the process."""
    global _embedded
    with _embedded_lock:
        if _embedded is None or not _embedded.running:
            try:
                config = SimConfig(speed=speed_from_env())
            except ValueError as exc:
                raise SimulatorStartError(f"the embedded simulator did not start: {exc}") from None
            _embedded = SimulatorServer(config, host="127.0.0.1", port=0).start()
        return _embedded
