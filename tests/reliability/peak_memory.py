"""Peak memory of a client meeting a 300 MB status body and a gzip bomb (issue 29 point 4).

Run from a checkout's root::

    .venv/bin/python tests/reliability/peak_memory.py            # this checkout
    .venv/bin/python tests/reliability/peak_memory.py --root DIR # another checkout's genwidgets

Each scenario runs its client in a child process of its own (the gateway stays in
this one, so its buffers are not counted) and prints the child's peak resident
memory above what it held just before the call: ``ru_maxrss`` after the call less
the resident size before it. A figure, not a test: the tests bound the same paths
with ``tracemalloc`` (``test_hostile.py``, ``tests/protocol/test_body.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import zlib
from http.server import ThreadingHTTPServer
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # tests/: loopback.py

from loopback import QuietHandler  # noqa: E402

STATUS_BYTES = 300 * 2**20
BOMB_BYTES = 1280 * 2**20  # what the bomb inflated to
KEY = "peak-memory-key"


def _bomb() -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [packer.compress(bytes(2**20)) for _ in range(BOMB_BYTES // 2**20)]
    return b"".join([*parts, packer.flush()])


class Gateway(QuietHandler):
    """A gateway whose status body weighs 300 MB and whose one output is a gzip bomb."""

    bomb = b""

    def _json(self, value: object) -> None:
        body = json.dumps(value).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._json({"request_id": "peak-1"})

    def do_GET(self) -> None:
        try:
            scenario = self.headers.get("X-Scenario", "")
            if self.path.endswith("/status") and scenario.startswith("huge"):
                self._huge_status(sized=scenario == "huge-status")
            elif self.path.endswith("/status"):
                self._json({"status": "COMPLETED"})
            elif self.path.endswith("/response"):
                base = f"http://127.0.0.1:{self.server.server_address[1]}"
                out = {"url": f"{base}/files/bomb.png", "content_type": "image/png"}
                self._json({"status": "COMPLETED", "outputs": [out]})
            else:
                self.send_response(200)
                self.send_header("Content-Type", "image/png")
                self.send_header("Content-Encoding", "gzip")
                self.send_header("Content-Length", str(len(self.bomb)))
                self.end_headers()
                self.wfile.write(self.bomb)
        except OSError:  # the client stopped reading: what a capped reader does
            self.close_connection = True

    def _huge_status(self, *, sized: bool) -> None:
        """300 MB, with its Content-Length, or without (read until the connection ends)."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if sized:
            self.send_header("Content-Length", str(STATUS_BYTES))
        else:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        block = b" " * 2**20
        self.wfile.write(b'{"status": "IN_PROGRESS", "pad": "')
        for _ in range(STATUS_BYTES // len(block) - 1):
            self.wfile.write(block)
        self.wfile.write(b" " * (2**20 - 37) + b'"}')


def _rss_kib() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def child(scenario: str, base: str) -> None:
    """The client side of one scenario; prints ``{"scenario", "peak_mib", "outcome"}``."""
    import warnings

    import genwidgets as gw

    warnings.simplefilter("ignore")
    headers = {"X-Scenario": scenario}
    client = gw.Client(base, KEY, headers=headers, timeout=30, max_retries=0, download=False)
    job = client.submit("asset-get", {"Id": "asset-demo"})
    if scenario == "render":
        result = job.result(timeout=60)
    before = _rss_kib()
    try:
        if scenario.startswith("huge"):
            job.status()
            outcome = "read"
        else:  # the widget, and the static copy its display writes (which reads bytes)
            from genwidgets.widgets.render import to_mimebundle

            gw.render(result)
            outcome = (
                f"rendered, static copy of {len(str(to_mimebundle(result, fetch=True)))} characters"
            )
    except Exception as exc:  # the figure is the point; say how it ended
        outcome = f"{type(exc).__name__}: {str(exc)[:120]}"
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    print(json.dumps({"scenario": scenario, "peak_mib": round((peak - before) / 1024, 1),
                      "outcome": outcome, "module": gw.__file__}))  # fmt: skip
    client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", help="a checkout whose genwidgets to measure")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--base", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.base)
        return
    Gateway.bomb = _bomb()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Gateway)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    env = {**os.environ, "GENWIDGETS_HOME": tempfile.mkdtemp(prefix="peak-home-")}
    if args.root:
        env["PYTHONPATH"] = str(Path(args.root).resolve())
    for scenario in ("huge-status", "huge-status-unsized", "render"):
        done = subprocess.run(
            [sys.executable, __file__, "--child", scenario, "--base", base],
            env=env,
            cwd=args.root or None,
            capture_output=True,
            text=True,
            timeout=600,
        )
        print(done.stdout.strip() or done.stderr.strip()[-2000:])
    server.shutdown()


if __name__ == "__main__":
    main()
