"""A plain HTTP server on 127.0.0.1 for tests that need a real socket (a second
origin, redirects, cookies): started in a daemon thread, stopped by ``close``."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class QuietHandler(BaseHTTPRequestHandler):
    """HTTP/1.1 keep-alive and no request log on stderr."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass


class JsonHandler(QuietHandler):
    """A handler that answers JSON."""

    def send_json(self, body: Any, code: int = 200) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class OneTaskGateway(JsonHandler):
    """A gateway of one task, ``r1``: a create answers its handle; a subclass answers
    its status, result, cancel and files (a gateway that is not our simulator)."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        prefix = f"http://{self.headers['Host']}{self.path}/requests/r1"
        urls = {f"{tail}_url": f"{prefix}/{tail}" for tail in ("status", "response", "cancel")}
        self.send_json({"request_id": "r1", **urls})


class CancelRefused(OneTaskGateway):
    """A gateway whose task runs on and whose cancel answers ``answer`` (500 unless set:
    the gateway's fault) with "cancel backend down"; ``cancels`` counts them."""

    cancels = 0
    answer = 500

    def do_GET(self) -> None:
        self.send_json({"request_id": "r1", "status": "IN_PROGRESS"})

    def do_PUT(self) -> None:
        type(self).cancels += 1
        self.send_json({"detail": "cancel backend down"}, code=self.answer)


class LoopbackServer:
    """``handler`` served on a free loopback port (of ``host``, 127.0.0.1 unless told;
    ``port``, if given); ``base`` is its origin."""

    def __init__(
        self, handler: type[BaseHTTPRequestHandler], host: str = "127.0.0.1", port: int = 0
    ) -> None:
        self.httpd = ThreadingHTTPServer((host, port), handler)
        self.httpd.daemon_threads = True
        self.base = f"http://{host}:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


class FileHost:
    """What a :func:`files_gateway` saw and how its file host answers: ``answer`` is the
    HTTP status every download gets (200: the file); ``creates`` counts creates,
    ``served`` the files sent whole, by path; ``asked`` every download asked;
    ``answers`` one output index's own status, over ``answer``. ``files_open`` and
    ``results_open`` cleared: file requests, or result addresses, hang until set (30 s
    at most). ``outputs``: how many a result lists, each of ``content_type``;
    ``html_errors``: a failed file is a proxy's HTML page, not the gateway's JSON."""

    def __init__(self) -> None:
        self.answer = 200
        self.answers: dict[int, int] = {}
        self.outputs = 2
        self.content_type = "image/png"
        self.html_errors = False
        self.content = "bytes of"  # a file's bytes: this, then its path (changed: other bytes)
        self.files_open, self.results_open = threading.Event(), threading.Event()
        self.file_asked = threading.Event()  # set by a file request as it arrives
        self.files_open.set()
        self.results_open.set()
        self.creates = 0
        self.asked = 0
        self.served: dict[str, int] = {}
        self.lock = threading.Lock()


def files_gateway(host: FileHost) -> LoopbackServer:
    """A gateway on loopback whose tasks (``r1``, ``r2``...) are COMPLETED at once, each
    with two outputs on its own file host (``/files/<id>/<n>.png``), which answers as
    ``host.answer`` says: a file host that fails, expires or works, from outside."""

    class Handler(JsonHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with host.lock:
                host.creates += 1
                rid = f"r{host.creates}"
            prefix = f"http://{self.headers['Host']}{self.path}/requests/{rid}"
            urls = {f"{tail}_url": f"{prefix}/{tail}" for tail in ("status", "response", "cancel")}
            self.send_json({"request_id": rid, **urls})

        def do_GET(self) -> None:
            if self.path.startswith("/files/"):
                self.send_file()
            elif self.path.endswith("/status"):
                self.send_json({"status": "COMPLETED"})
            else:
                host.results_open.wait(30)
                rid = self.path.split("/")[-2]
                files = f"http://{self.headers['Host']}/files/{rid}"
                outputs = [
                    {"url": f"{files}/{n}.png", "content_type": host.content_type}
                    for n in range(host.outputs)
                ]
                self.send_json({"status": "COMPLETED", "error": None, "outputs": outputs})

        def send_file(self) -> None:
            host.file_asked.set()
            host.files_open.wait(30)
            with host.lock:
                host.asked += 1
                answer = host.answers.get(
                    int(self.path.rsplit("/", 1)[1].split(".")[0]), host.answer
                )
                if answer == 200:
                    host.served[self.path] = host.served.get(self.path, 0) + 1
            if answer != 200 and host.html_errors:
                page = b"<html><body><h1>Not Found</h1><hr>nginx</body></html>"
                self.send_response(answer)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)
                return
            if answer != 200:
                self.send_json({"detail": "file host says no"}, answer)
                return
            data = f"{host.content} {self.path}".encode()
            self.send_response(200)
            self.send_header("Content-Type", host.content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return LoopbackServer(Handler)


class HeldCreates:
    """What a :func:`held_creates_gateway` saw, and when it answers: each create is held
    until ``release()`` holds (60 s at most), then answered with a new task (``r1``,
    ``r2``...), made at the gateway whether or not its answer is read; ``creates``
    counts the creates that arrived, ``held`` those waiting now."""

    def __init__(self) -> None:
        self.release: Callable[[], bool] = lambda: True
        self.creates = 0
        self.held = 0
        self.lock = threading.Lock()


def held_creates_gateway(host: HeldCreates) -> LoopbackServer:
    """A gateway on loopback whose creates wait for ``host.release()`` (a gateway slow to
    answer creates, from outside) and whose tasks are COMPLETED with no outputs."""

    class Handler(JsonHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with host.lock:
                host.creates += 1
                host.held += 1
                rid = f"r{host.creates}"
            deadline = time.monotonic() + 60
            while not host.release() and time.monotonic() < deadline:
                time.sleep(0.005)
            with host.lock:
                host.held -= 1
            prefix = f"http://{self.headers['Host']}{self.path}/requests/{rid}"
            urls = {f"{tail}_url": f"{prefix}/{tail}" for tail in ("status", "response", "cancel")}
            with contextlib.suppress(OSError):  # the client hung up: the task exists still
                self.send_json({"request_id": rid, **urls})

        def do_GET(self) -> None:
            rid = self.path.split("/")[-2]
            if self.path.endswith("/status"):
                self.send_json({"request_id": rid, "status": "COMPLETED"})
            else:
                self.send_json({"request_id": rid, "status": "COMPLETED", "outputs": []})

    return LoopbackServer(Handler)
