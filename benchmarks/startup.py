"""Start-up: ``import genwidgets`` in a fresh interpreter, and building each form.

Import time: ``time.perf_counter()`` around ``import genwidgets`` in a new
``python`` process (bytecode already cached, as on a second run), the median
of several runs after one discarded warm-up run; the same process reports
whether ``ipywidgets`` (or the simulator, or httpx) got imported. One extra run
under ``-X importtime`` names the slowest modules.

Forms: in a fresh process, one warm-up form is built (it pays for importing
ipywidgets and the widget modules), then ``gw.form(endpoint)`` is timed for
each of the 20 documented endpoints, each built for the first time in that
process (what a user pays); the warm-up endpoint (``vidVq2-text2video``) is
timed on its second build. Several processes; per endpoint the median.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

from . import _common as common

IMPORT_PROBE = """\
import json, sys, time
start = time.perf_counter()
import genwidgets
elapsed = time.perf_counter() - start
print(json.dumps({
    "ms": elapsed * 1000,
    "ipywidgets": "ipywidgets" in sys.modules,
    "simulator": "genwidgets.simulator" in sys.modules,
    "httpx": "httpx" in sys.modules,
}))
"""

FORMS_PROBE = """\
import json, time, warnings
import genwidgets as gw
warnings.simplefilter("ignore")
ids = [spec.id for spec in gw.endpoints()]
start = time.perf_counter()
gw.form("vidVq2-text2video")
warm_up = time.perf_counter() - start
times = {}
for endpoint in ids:
    if endpoint == "vidVq2-text2video":
        continue
    start = time.perf_counter()
    gw.form(endpoint)
    times[endpoint] = (time.perf_counter() - start) * 1000
start = time.perf_counter()
gw.form("vidVq2-text2video")
times["vidVq2-text2video"] = (time.perf_counter() - start) * 1000
print(json.dumps({"warm_up_ms": warm_up * 1000, "ms": times}))
"""


def _python(code: str, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [common.PYTHON, *flags, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env=common.child_env(),
        cwd=common.REPO,
        timeout=120,
    )


def _last_json(text: str) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(text.strip().splitlines()[-1])
    return result


def slowest_imports(top: int = 8) -> list[dict[str, Any]]:
    """The slowest modules under ``import genwidgets`` (``-X importtime``, cumulative)."""
    stderr = _python("import genwidgets", "-X", "importtime").stderr
    rows: list[tuple[int, str, float]] = []  # (depth, module, cumulative ms), post-order
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _self, cumulative, name = line[len("import time:") :].split("|", 2)
        depth = (len(name) - len(name.lstrip(" ")) - 1) // 2
        rows.append((depth, name.strip(), int(cumulative) / 1000))
    top_index = next((i for i, (d, n, _) in enumerate(rows) if d == 0 and n == "genwidgets"), None)
    if top_index is None:
        return []
    subtree = [rows[top_index]]
    for depth, name, ms in reversed(rows[:top_index]):
        if depth == 0:  # the previous top-level import: the subtree is complete
            break
        subtree.append((depth, name, ms))
    subtree.sort(key=lambda r: -r[2])
    return [{"module": name, "cumulative_ms": ms} for _, name, ms in subtree[:top]]


def run_startup(import_runs: int = 7, form_runs: int = 3) -> dict[str, Any]:
    """Median import time, what the import pulled in, and per-form build times."""
    _python(IMPORT_PROBE)  # warm-up: bytecode caches, page cache
    probes = [_last_json(_python(IMPORT_PROBE).stdout) for _ in range(import_runs)]
    import_times = [p["ms"] for p in probes]
    form_probes = [_last_json(_python(FORMS_PROBE).stdout) for _ in range(form_runs)]
    per_endpoint = {
        endpoint: round(common.median([p["ms"][endpoint] for p in form_probes]), 2)
        for endpoint in form_probes[0]["ms"]
    }
    slowest = max(per_endpoint, key=per_endpoint.__getitem__)
    return {
        "import_runs": import_runs,
        "import_ms": round(common.median(import_times), 1),
        "import_ms_all": [round(t, 1) for t in import_times],
        "imports_ipywidgets": any(p["ipywidgets"] for p in probes),
        "imports_simulator": any(p["simulator"] for p in probes),
        "imports_httpx": any(p["httpx"] for p in probes),
        "slowest_imports": slowest_imports(),
        "form_runs": form_runs,
        "forms": len(per_endpoint),
        "form_warm_up_ms": round(common.median([p["warm_up_ms"] for p in form_probes]), 1),
        "form_build_ms": per_endpoint,
        "form_build_ms_max": per_endpoint[slowest],
        "form_slowest": slowest,
    }
