"""Faults from outside the process under test: a gateway that goes away and comes back,
a gateway whose creates hang (:class:`HeldCreates`), and a person's Ctrl-C.

:class:`Outage` is a loopback TCP forwarder in front of a gateway. ``down()`` closes its
listening socket and every open connection (new ones are refused, as from a gateway
gone); ``up()`` listens again on the same port. The client under test only ever knows
the forwarder's address, so to it the gateway itself went away.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import threading
import time
from typing import Any

import httpx
from loopback import LoopbackServer, QuietHandler

#: bytes moved per read
CHUNK = 65536


def ctrl_c_after(monkeypatch: Any, client: Any, answers: int) -> None:
    """Ctrl-C (a real SIGINT to the main thread, which waits in a submit) once
    ``answers`` creates through ``client.send_many`` have answered; the creates go on
    only once the run heard it (its ``hold`` says so), as a person's Ctrl-C stops a
    run mid-chunk."""
    real = client.send_many
    seen: list[int] = []

    def send_many(prepared: Any, *, on_sent: Any, hold: Any, **kwargs: Any) -> Any:
        def answered(i: int, outcome: Any) -> None:
            on_sent(i, outcome)
            seen.append(i)
            if len(seen) == answers:
                # pressed again when unheard for 10 s, as a person does: a KeyboardInterrupt
                # that lands in a finaliser the garbage collector runs on the main thread
                # (a widget's __del__) is printed and dropped by Python, never raised
                deadline = time.monotonic() + 60
                while not hold() and time.monotonic() < deadline:
                    signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)
                    again = min(deadline, time.monotonic() + 10)
                    while not hold() and time.monotonic() < again:
                        time.sleep(0.01)
                assert hold(), "the Ctrl-C was never heard"

        return real(prepared, on_sent=answered, hold=hold, **kwargs)

    monkeypatch.setattr(client, "send_many", send_many)


class Outage:
    """A TCP forwarder on 127.0.0.1 to ``target_port``; ``base_url`` is its origin."""

    def __init__(self, target_port: int) -> None:
        self.target = ("127.0.0.1", target_port)
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._listener: socket.socket | None = None
        self.port = 0
        self.up()
        self.base_url = f"http://127.0.0.1:{self.port}"

    def up(self) -> None:
        """Listen (again, on the same port)."""
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self.port = listener.getsockname()[1]
        with self._lock:
            self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def down(self) -> None:
        """Refuse new connections and cut every open one."""
        with self._lock:
            listener, self._listener = self._listener, None
            cut, self._open = self._open, set()
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        for sock in cut:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    close = down

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # down
            try:
                server = socket.create_connection(self.target, timeout=10)
            except OSError:
                client.close()
                continue
            server.settimeout(None)
            with self._lock:
                if self._listener is not listener:  # went down meanwhile
                    client.close()
                    server.close()
                    return
                self._open |= {client, server}
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while True:
                data = source.recv(CHUNK)
                if not data:
                    break
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
            with self._lock:
                self._open -= {source, sink}


class HeldCreates:
    """A loopback gateway in front of ``target`` (a simulator's origin), as a gateway whose
    creates hang: ``creates`` counts the creates that reached it; while ``holding`` is set
    a create is held, forwarded once it is cleared, or cut unanswered and never forwarded
    once :meth:`drop` (or :meth:`close`) is called. Any other request is forwarded, the
    target's address in the answers made this one's (the client follows its tasks here).
    ``most``: only that many creates are ever held (the first ones while holding)."""

    def __init__(self, target: str, most: int | None = None) -> None:
        self.target = target
        self.most = most
        self.creates = 0
        self.held = 0
        self.holding = threading.Event()
        self.dropping = threading.Event()
        self._lock = threading.Lock()
        gate = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                with gate._lock:
                    gate.creates += 1
                    hold = gate.holding.is_set() and (gate.most is None or gate.held < gate.most)
                    gate.held += hold
                deadline = time.monotonic() + 300
                while hold and gate.holding.is_set() and time.monotonic() < deadline:
                    if gate.dropping.wait(0.02):
                        break
                if hold and gate.dropping.is_set():  # cut: its answer never comes (read
                    self.close_connection = True  # after the loop: a drop just before
                    return  # holding is cleared must not forward it)
                self.forward()

            def forward(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {
                    k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")
                }
                answer = httpx.request(
                    self.command, gate.target + self.path, content=body, headers=headers, timeout=60
                )
                data = answer.content.replace(gate.target.encode(), gate.base_url.encode())
                self.send_response(answer.status_code)
                for name, value in answer.headers.items():
                    if name.lower() not in ("content-length", "transfer-encoding", "connection",
                                            "content-encoding", "date", "server"):  # fmt: skip
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_PUT = do_DELETE = forward

        self._server = LoopbackServer(Handler)
        self.base_url = self._server.base

    def drop(self) -> None:
        """Cut every create held, now or later, without forwarding it."""
        self.dropping.set()

    def close(self) -> None:
        self.drop()
        self._server.close()
