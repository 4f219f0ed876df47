"""What a person waits for: from the gateway's ``COMPLETED`` to the picture drawn.

JupyterLab in chromium, a kernel whose client talks to a child simulator (speed 1,
the gateway), two notebooks run one after the other in one server:

- ``singles``: one cell submits ``singles`` image tasks (``genW2.5-t2i-preview``,
  ``X-Sim-Duration`` 2.0 s, 2.1 s, ...: the simulator's image time and the image sets'
  3 s median, completing one by one as a person's tasks do) and shows each
  (``display(job)``, the live task view); the kernel also writes when it had each
  result (``Job.finished_at``), which splits the wait into the kernel's part and the
  page's;
- ``grid``: a 3 x 3 ``gw.grid`` of the same endpoint (its tasks 2 s each).

The page records, with a MutationObserver and each ``<img>``'s ``load`` event, when
each task view's image and each grid cell's thumbnail finished loading, in epoch
milliseconds (``performance.timeOrigin + performance.now()``); the simulator says
when each task completed (``completed_at`` of ``/_sim/tasks/{id}``, ``time.time()``
in its process). Both clocks are this machine's. Per single task: drawn - completed;
for the grid: its last cell drawn - the last of its tasks completed.

``python benchmarks/run.py`` runs it (the goals, p95 <= 0.6 s and <= 1 s, are in
``goals.py``); alone: ``python -m benchmarks.drawn`` (about a minute; it prints
JSON). Without chromium, Playwright or JupyterLab it measures nothing and says why.
"""

from __future__ import annotations

import json
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from . import _common as common
from . import grid_weight
from ._common import fmt
from .polling_report import table

ENDPOINT = "genW2.5-t2i-preview"
GRID_SIDE = 3
#: where the singles' kernel writes when it had each result (``Job.finished_at``: the
#: result fetched and its output copied), beside the notebook
FINISHED = "drawn_finished.json"
SINGLES_NB, GRID_NB = "drawn_singles.ipynb", "drawn_grid.ipynb"
#: the single tasks' run times: FIRST_S, FIRST_S + STEP_S, ... (one by one, not a burst)
FIRST_S, STEP_S = 2.0, 0.1
SINGLES = """\
import genwidgets as gw
client = gw.Client(base_url={base_url!r}, api_key={key!r})
jobs = [
    client.submit({endpoint!r}, {{"prompt": f"a lighthouse at dusk, take {{i}}", "n": 1}},
                  headers={{"X-Sim-Duration": f"{{{first} + {step} * i:.1f}}"}})
    for i in range({count})
]
for job in jobs:
    display(job)

import json, os  # the benchmark's own record: when the kernel had each result
finished = {{}}
def _record(job):
    finished[job.request_id] = job.finished_at
    if len(finished) == len(jobs):
        with open({finished!r} + ".part", "w") as out:
            json.dump(finished, out)
        os.replace({finished!r} + ".part", {finished!r})
for job in jobs:
    job.add_done_callback(_record)"""
GRID = """\
import genwidgets as gw
client = gw.Client(base_url={base_url!r}, api_key={key!r})
grid = gw.grid(
    {endpoint!r},
    {{"prompt": "a fox in the snow", "n": 1}},
    x=("seed", "1-{side}"),
    y=("prompt_sr", ["fox", "owl", "seal"][:{side}]),
    client=client,
)
grid"""

#: Installed before the page's own scripts: every <img> added to the document is
#: watched; when it has loaded (or is already loaded when added) the time is kept
#: with what it shows: a task view's request id, or a grid cell's place.
RECORDER_JS = """
(() => {
  window.__gwDrawn = [];
  const now = () => performance.timeOrigin + performance.now();
  const keep = (img) => {
    const task = img.closest('.gw-task');
    const cell = img.closest('.gw-grid-cell');
    if (task && img.classList.contains('gw-media')) {
      const id = task.querySelector('.gw-request-id');
      window.__gwDrawn.push({kind: 'task', key: id ? id.textContent.trim() : '', at: now()});
    } else if (cell && img.closest('.gw-grid-thumb')) {
      const row = cell.parentElement;
      const place = [row.rowIndex, cell.cellIndex].join(',');
      window.__gwDrawn.push({kind: 'cell', key: place, at: now()});
    }
  };
  const watch = (img) => {
    if (img.complete && img.naturalWidth > 0) keep(img);
    else img.addEventListener('load', () => keep(img), {once: true});
  };
  new MutationObserver((mutations) => {
    for (const m of mutations) {
      for (const node of m.addedNodes) {
        if (node.nodeType !== 1) continue;
        if (node.tagName === 'IMG') watch(node);
        node.querySelectorAll('img').forEach(watch);
      }
    }
  }).observe(document, {childList: true, subtree: true});
})();
"""


def notebook(source: str) -> str:
    """A notebook of one code cell for JupyterLab's default kernel."""
    common.tests_on_path()
    from browser import frontend  # tests/browser/frontend.py: one way to run a front-end

    return frontend.notebook_text(source)


def singles_notebook(base_url: str, count: int) -> str:
    return notebook(
        SINGLES.format(
            base_url=base_url,
            key=common.DEMO_KEY,
            endpoint=ENDPOINT,
            count=count,
            first=FIRST_S,
            step=STEP_S,
            finished=FINISHED,
        )
    )


def grid_notebook(base_url: str) -> str:
    return notebook(
        GRID.format(base_url=base_url, key=common.DEMO_KEY, endpoint=ENDPOINT, side=GRID_SIDE)
    )


def first_drawn(records: list[dict[str, Any]], kind: str) -> dict[str, float]:
    """Each task's (or cell's) first picture loaded, epoch seconds (a view drawn again
    later, on a state write, is not what the person waited for)."""
    drawn: dict[str, float] = {}
    for record in records:
        if record["kind"] == kind and record["key"]:
            drawn.setdefault(record["key"], record["at"] / 1000.0)
    return drawn


def waits(drawn: dict[str, float], completed: dict[str, float]) -> list[float]:
    """Drawn - completed, per task both know, seconds."""
    return [round(drawn[k] - completed[k], 4) for k in sorted(drawn) if k in completed]


def summary(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "p95": None, "max": None}
    return {
        "p50": round(common.median(values), 3),
        "p95": round(common.percentile(values, 95), 3),
        "max": round(max(values), 3),
    }


def completed_at(base_url: str) -> dict[str, float]:
    """Every completed task of the simulator: request id -> its ``completed_at``."""
    with httpx.Client(base_url=base_url, timeout=30.0) as http:
        listed = http.get("/_sim/tasks").raise_for_status().json()
        found: dict[str, float] = {}
        for task in listed:
            one = http.get(f"/_sim/tasks/{task['request_id']}").raise_for_status().json()
            if one.get("completed_at") is not None:
                found[one["request_id"]] = float(one["completed_at"])
    return found


def _run_page(
    browser: Any, lab: Any, name: str, done_js: str, expected: int, pids: dict[str, int]
) -> tuple[list[Any], dict[str, float]]:
    """Open ``name``, Run All, wait until ``expected`` pictures are recorded; the records
    and the CPU share of the kernel and of ``pids`` from Run All until then."""
    from browser import frontend  # tests/browser/frontend.py (on the path: measure_pages)

    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.add_init_script(RECORDER_JS)
    try:
        page.goto(lab.page_url(name), wait_until="domcontentloaded", timeout=120_000)
        frontend.wait_for_kernel_idle(page, "lab")
        meter = common.CpuMeter({**pids, **processes(lab.root.parent, kernel=True)})
        frontend.run_all(page)
        page.wait_for_function(done_js, arg=expected, timeout=300_000)
        shares = meter.shares()
        records: list[Any] = page.evaluate("() => window.__gwDrawn")
    finally:
        page.close()
        lab.delete_sessions()  # its kernel polls no more
    return records, shares


def processes(root: Path, *, kernel: bool) -> dict[str, int]:
    """The JupyterLab server serving under ``root`` (its command line names the folder)
    and, with ``kernel``, its kernel (named by its connection file there): name -> pid."""
    found: dict[str, int] = {}
    mark = str(root).encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if mark not in command:
            continue
        if b"jupyterlab" in command:
            found["jupyterlab"] = int(entry.name)
        elif kernel and b"ipykernel" in command:
            found["kernel"] = int(entry.name)
    return found


class TimerLag:
    """How late a 50 ms timer wakes in a thread of this process while the block runs:
    the machine's wait for a core, which every timer of the kernel and page shares."""

    PERIOD_S = 0.05

    def __init__(self) -> None:
        self.lags: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._probe, daemon=True)

    def _probe(self) -> None:
        while not self._stop.is_set():
            began = time.monotonic()
            time.sleep(self.PERIOD_S)
            self.lags.append(time.monotonic() - began - self.PERIOD_S)

    def __enter__(self) -> TimerLag:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def figures(self) -> dict[str, float]:
        """p95 and max lag in ms ({} when the block was too short to sample)."""
        if not self.lags:
            return {}
        ms = [lag * 1000 for lag in self.lags]
        return {"p95": round(common.percentile(ms, 95), 1), "max": round(max(ms), 1)}


def read_finished(path: Path, limit_s: float = 60.0) -> dict[str, float]:
    """The kernel's record of :data:`FINISHED` (written once every job is done; the
    page drew them all, so it is there or nearly): request id -> ``finished_at``."""
    deadline = time.monotonic() + limit_s
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    if not path.exists():
        return {}
    return {k: float(v) for k, v in json.loads(path.read_text()).items() if v is not None}


def _distinct(kind: str) -> str:
    return (
        f"(n) => new Set((window.__gwDrawn || []).filter(r => r.kind === '{kind}')"
        ".map(r => r.key)).size >= n"
    )


def measure_pages(singles: int, root: Path) -> dict[str, Any]:
    """Both notebooks in one JupyterLab, against one child simulator."""
    common.tests_on_path()
    from browser import frontend

    sim = common.start_simulator()
    try:
        extra = {
            SINGLES_NB: singles_notebook(sim.base_url, singles),
            GRID_NB: grid_notebook(sim.base_url),
        }
        cells = GRID_SIDE * GRID_SIDE
        started = time.monotonic()
        with frontend.serve("lab", root, extra=extra) as lab, frontend.launch_chromium() as b:
            pids = {"simulator": sim.pid}
            with TimerLag() as lag:
                single_records, cpu = _run_page(
                    b, lab, SINGLES_NB, _distinct("task"), singles, pids
                )
            single_ids = set(completed_at(sim.base_url))
            finished = read_finished(lab.root / FINISHED)
            grid_records, _ = _run_page(b, lab, GRID_NB, _distinct("cell"), cells, pids)
        completed = completed_at(sim.base_url)
    finally:
        common.stop_process(sim.process)
    single_drawn = first_drawn(single_records, "task")
    single_waits = waits(single_drawn, completed)
    in_kernel = waits(finished, completed)
    in_page = waits(single_drawn, finished)
    grid_completed = [at for key, at in completed.items() if key not in single_ids]
    grid_cells = first_drawn(grid_records, "cell")
    grid_wait = (
        round(max(grid_cells.values()) - max(grid_completed), 4)
        if grid_cells and grid_completed
        else None
    )
    return {
        "singles": singles,
        "single_waits_s": single_waits,
        "single": summary(single_waits),
        "single_kernel": summary(in_kernel),
        "single_page": summary(in_page),
        "timer_lag_ms": lag.figures(),
        "cpu_share": cpu,
        "grid_tasks": len(grid_completed),
        "grid_cells_drawn": len(grid_cells),
        "grid_wait_s": grid_wait,
        "seconds": round(time.monotonic() - started, 1),
    }


def section(d: dict[str, Any]) -> list[str]:
    """The report's section: the waits, single tasks and the grid."""
    lines = [
        "## 9. What a person waits for",
        "",
        f"JupyterLab in chromium, the kernel's client on a child simulator (speed 1). One cell "
        f"submits {d.get('singles', 'n')} single-image tasks (`{d['endpoint']}`, run times "
        f"{FIRST_S:g} s, {FIRST_S + STEP_S:g} s, ... one by one) and shows each task view; then "
        f"a {d['grid_side']} x {d['grid_side']} `gw.grid` runs in another notebook. The page "
        "records when each task view's image and each grid cell's thumbnail finished loading "
        "(a MutationObserver and each `<img>`'s `load`, `performance.timeOrigin + "
        "performance.now()`); the simulator, when each task completed (`/_sim/tasks/{id}` "
        "`completed_at`). Both clocks are this machine's (`benchmarks/drawn.py`).",
        "",
    ]
    if d["not_measured"]:
        return [*lines, f"Not measured: {d['not_measured']}.", ""]
    single, grid = d["single"], d["grid_wait_s"]
    parts = {
        f"single image ({len(d['single_waits_s'])} of {d['singles']})": single,
        "of which in the kernel: COMPLETED -> result and its copy": d["single_kernel"],
        "of which in the page: result -> drawn": d["single_page"],
    }
    rows = [
        [name, *(fmt(part[q], " s") for q in ("p50", "p95", "max"))] for name, part in parts.items()
    ] + [
        [
            f"3 x 3 grid: last task completed -> last cell drawn ({d['grid_cells_drawn']} "
            f"cells, {d['grid_tasks']} tasks)",
            "",
            "",
            fmt(grid, " s"),
        ],
    ]
    lag = d.get("timer_lag_ms") or {}
    cpu = d.get("cpu_share") or {}
    note = (
        f"While the single images ran, a 50 ms timer in the benchmark's process woke "
        f"{lag['p95']:.0f} ms late at p95 ({lag['max']:.0f} ms at most): how long any "
        "process here (the kernel's poll timers, JupyterLab, chromium) waited for a core."
        if lag
        else ""
    )
    if cpu:
        note += (
            " CPU share (1.0 = a core) from Run All to the last image: "
            + ", ".join(f"{name} {share:.2f}" for name, share in sorted(cpu.items()))
            + "."
        )
    table_lines = table(["COMPLETED -> drawn", "p50", "p95", "max"], rows)
    return [*lines, *table_lines, "", *([note, ""] if note else [])]


def run_drawn(singles: int = 20) -> dict[str, Any]:
    """The waits; ``drawn_p95_s`` and ``grid_drawn_s`` are None (with ``not_measured``
    saying why) on a machine that cannot drive a page."""
    reason = grid_weight.missing()
    found: dict[str, Any] = {}
    if not reason:
        with tempfile.TemporaryDirectory(prefix="gw-bench-drawn-") as tmp:
            found = measure_pages(singles, Path(tmp))
    return {
        "endpoint": ENDPOINT,
        "grid_side": GRID_SIDE,
        **found,
        "drawn_p95_s": found.get("single", {}).get("p95"),
        "grid_drawn_s": found.get("grid_wait_s"),
        "not_measured": reason,
    }


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    print(json.dumps(run_drawn(count), indent=2))
