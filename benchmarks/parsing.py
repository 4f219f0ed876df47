"""Reading gateway answers: what a status and a result cost, beside a whole poll.

The engine reads a status answer on every poll, so its reading must stay a small
part of a poll. A fresh interpreter times ``Status.from_body`` and ``Result.from_body``
(four outputs) and one ``Gateway.status`` exchange over an in-process transport (the
request, the capped read, the JSON, the redaction and the record: everything of a
poll but the network), the best of many short repeats (a busy machine only adds).
``--against REV`` runs the same probe on the package of another revision, taken out
with ``git archive``, alternating the two, and gives each figure's ratio (ours over
theirs)::

    python -m benchmarks.parsing --against b3e2a5d
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from . import _common as common

PROBE = """\
import asyncio, json, sys, timeit
import httpx
from genwidgets.protocol.http import Gateway
from genwidgets.protocol.records import Handle, Result, Status

STATUS = {"status": "IN_PROGRESS", "queue_position": 3, "request_id": "r1",
          "logs": [{"message": "step 3/20", "level": "INFO"}]}
RESULT = {"status": "COMPLETED", "request_id": "r1", "outputs": [
    {"url": f"https://cdn.example/{i}.png", "content_type": "image/png"} for i in range(4)]}
rounds = int(sys.argv[1])

def best(read, number):
    return min(timeit.repeat(read, number=number, repeat=rounds)) / number * 1e6

async def polls(number):
    transport = httpx.MockTransport(lambda request: httpx.Response(200, json=STATUS))
    gateway = Gateway("http://127.0.0.1:1", "sk-bench", transport=transport)
    handle = Handle.from_body("ep", {"request_id": "r1"}, "http://127.0.0.1:1")
    times = []
    for _ in range(rounds):
        loop = asyncio.get_running_loop()
        start = loop.time()
        for _ in range(number):
            await gateway.status(handle)
        times.append((loop.time() - start) / number * 1e6)
    await gateway.aclose()
    return min(times)

print(json.dumps({
    "package": __import__("genwidgets").__file__,
    "status_us": best(lambda: Status.from_body(STATUS, endpoint="ep", request_id="r1"), 1000),
    "result_us": best(lambda: Result.from_body(RESULT, endpoint="ep", base_url="http://gw"), 100),
    "poll_us": asyncio.run(polls(20)),
}))
"""
FIGURES = ("status_us", "result_us", "poll_us")


def _probe(package_root: Path, rounds: int) -> dict[str, float]:
    env = common.child_env({"PYTHONPATH": str(package_root)})
    done = subprocess.run(
        [common.PYTHON, "-c", PROBE, str(rounds)],
        cwd=package_root,  # ``-c`` puts the working folder first on the path
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    figures = json.loads(done.stdout.splitlines()[-1])
    if not Path(figures.pop("package")).is_relative_to(package_root):
        raise RuntimeError(f"the probe did not import the package under {package_root}")
    return figures


def _best(runs: list[dict[str, float]]) -> dict[str, float]:
    return {key: round(min(run[key] for run in runs), 2) for key in FIGURES}


def run_parsing(runs: int = 3, rounds: int = 100, against: str | None = None) -> dict[str, Any]:
    """The figures of this tree (best of ``runs`` interpreters), the status reading's
    share of a poll, and with ``against`` the same of that revision and the ratios."""
    ours: list[dict[str, float]] = []
    theirs: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as folder:
        if against is not None:
            archive = Path(folder) / "their.tar"
            git = ["git", "-C", str(common.REPO), "archive", "-o", str(archive), against]
            subprocess.run([*git, "genwidgets"], check=True, timeout=120)
            with tarfile.open(archive) as tar:
                tar.extractall(folder, filter="data")
        for _ in range(runs):  # alternating, so a busy spell of the machine hits both
            ours.append(_probe(common.REPO, rounds))
            if against is not None:
                theirs.append(_probe(Path(folder), rounds))
    result: dict[str, Any] = _best(ours)
    result["status_share_of_poll"] = round(result["status_us"] / result["poll_us"], 4)
    if against is not None:
        result["against"] = {"revision": against, **_best(theirs)}
        result["ratios"] = {key: round(result[key] / result["against"][key], 2) for key in FIGURES}
    return result


def section(r: dict[str, Any]) -> list[str]:
    """The RESULTS.md rows: the reading of one status and one result, and a poll."""
    return [
        "## Reading answers",
        "",
        f"`Status.from_body` {r['status_us']:.1f} µs, `Result.from_body` (4 outputs) "
        f"{r['result_us']:.1f} µs, one `Gateway.status` exchange without network "
        f"{r['poll_us']:.0f} µs: the status reading is {r['status_share_of_poll']:.1%} of a "
        "poll (`benchmarks/parsing.py`; `--against REV` compares with another revision).",
        "",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.parsing", description=__doc__)
    parser.add_argument("--against", help="a git revision to compare with")
    parser.add_argument("--runs", type=int, default=3, help="interpreters per side")
    args = parser.parse_args(argv)
    print(json.dumps(run_parsing(args.runs, against=args.against), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
