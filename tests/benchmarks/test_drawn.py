"""The wait from COMPLETED to drawn: its notebooks, the page hooks, the arithmetic on
what the page and the simulator record, its report and verdicts, and a machine with
no browser. No browser runs here (the benchmark itself does: ``python -m
benchmarks.drawn``); no figure is a wall-clock goal of these tests."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import _common as common  # noqa: E402
from benchmarks import drawn, figures  # noqa: E402
from benchmarks.goals import GOALS, MET, MISSED, judge  # noqa: E402

STATIC = REPO / "genwidgets" / "widgets" / "static"


def _source(text: str) -> str:
    cells = nbformat.reads(text, as_version=4).cells
    assert len(cells) == 1 and cells[0].cell_type == "code"
    ast.parse(cells[0].source)
    return str(cells[0].source)


def test_the_singles_notebook_submits_each_task_one_by_one_and_shows_it() -> None:
    source = _source(drawn.singles_notebook("http://127.0.0.1:9", 5))
    assert "base_url='http://127.0.0.1:9'" in source and "display(job)" in source
    assert f"client.submit({drawn.ENDPOINT!r}" in source and "range(5)" in source
    # the run times the cell asks for, as the kernel computes them: one by one
    durations = [f"{drawn.FIRST_S + drawn.STEP_S * i:.1f}" for i in range(5)]
    assert durations == ["2.0", "2.1", "2.2", "2.3", "2.4"]
    assert 'f"{2.0 + 0.1 * i:.1f}"' in source
    # and the kernel records when it had each result, for the benchmark to read
    assert f'os.replace({drawn.FINISHED!r} + ".part", {drawn.FINISHED!r})' in source
    assert "job.add_done_callback(_record)" in source


def test_the_timer_lag_is_sampled_while_the_block_runs_and_stops_after() -> None:
    before = set(threading.enumerate())
    with drawn.TimerLag() as lag:
        deadline = time.monotonic() + 30
        while len(lag.lags) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        probes = set(threading.enumerate()) - before  # its sampling thread
    taken = len(lag.lags)
    assert taken >= 3 and probes and not any(t.is_alive() for t in probes)
    figures = lag.figures()
    assert set(figures) == {"p95", "max"} and figures["max"] >= figures["p95"] >= 0
    assert len(lag.lags) == taken  # stopped with the block
    assert drawn.TimerLag().figures() == {}


def test_the_server_and_its_kernel_are_found_by_the_folder_they_serve(tmp_path: Path) -> None:
    sleep = [sys.executable, "-c", "import time; time.sleep(120)"]
    root = tmp_path / "served"
    started = {
        "jupyterlab": subprocess.Popen([*sleep, "jupyterlab", f"--root_dir={root}/work"]),
        "kernel": subprocess.Popen([*sleep, "ipykernel", f"{root}/env/kernel-1.json"]),
        "elsewhere": subprocess.Popen([*sleep, "ipykernel", f"{tmp_path}/other/kernel.json"]),
    }
    try:
        # A child is listed under its own command line only once it has exec'd: wait for that.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not all(
            Path(f"/proc/{process.pid}/cmdline")
            .read_bytes()
            .endswith(str(process.args[-1]).encode() + b"\0")
            for process in started.values()
        ):
            time.sleep(0.02)
        expected = {"jupyterlab": started["jupyterlab"].pid, "kernel": started["kernel"].pid}
        assert drawn.processes(root, kernel=True) == expected
        assert drawn.processes(root, kernel=False) == {"jupyterlab": expected["jupyterlab"]}
    finally:
        for process in started.values():
            process.kill()
            process.wait(10)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_the_simulator_says_when_each_completed_task_completed_and_no_other() -> None:
    import genwidgets as gw

    sim = common.start_simulator()
    try:
        client = gw.Client(base_url=sim.base_url, api_key=common.DEMO_KEY, ledger=False)
        payload = {"prompt": "a fox", "n": 1}
        done, running = (
            client.submit(drawn.ENDPOINT, payload, headers={"X-Sim-Duration": d})
            for d in ("0.2", "3600")
        )
        result = done.result(timeout=60)
        completed = drawn.completed_at(sim.base_url)
        assert list(completed) == [done.request_id]
        assert done.submitted_at <= completed[done.request_id] <= done.finished_at
        assert result.ok and not running.done()
        client.close()
    finally:
        common.stop_process(sim.process)


def test_the_kernel_record_is_read_when_it_is_there_and_waited_for_in_bounds(
    tmp_path: Path,
) -> None:
    path = tmp_path / drawn.FINISHED
    assert drawn.read_finished(path, limit_s=0.0) == {}
    path.write_text('{"a": 10.5, "b": null}')
    assert drawn.read_finished(path, limit_s=0.0) == {"a": 10.5}


def test_the_grid_notebook_is_a_three_by_three_grid() -> None:
    source = _source(drawn.grid_notebook("http://127.0.0.1:9"))
    assert 'x=("seed", "1-3")' in source and '["fox", "owl", "seal"][:3]' in source
    assert source.rstrip().endswith("grid")


def test_every_class_the_recorder_reads_is_one_the_views_make() -> None:
    classes = set(re.findall(r"\.(gw-[a-z-]+)", drawn.RECORDER_JS))
    classes |= set(re.findall(r"classList\.contains\('(gw-[a-z-]+)'\)", drawn.RECORDER_JS))
    assert classes == {"gw-task", "gw-media", "gw-request-id", "gw-grid-cell", "gw-grid-thumb"}
    script = (STATIC / "task_view.js").read_text() + (STATIC / "grid.js").read_text()
    for name in classes:
        assert f'"{name}"' in script, name


def test_each_task_counts_its_first_picture_and_waits_pair_what_both_sides_know() -> None:
    records = [
        {"kind": "task", "key": "a", "at": 10_500.0},
        {"kind": "task", "key": "a", "at": 12_000.0},  # drawn again on a later write
        {"kind": "task", "key": "b", "at": 11_250.0},
        {"kind": "task", "key": "", "at": 9_000.0},  # no request id yet: not a task's
        {"kind": "cell", "key": "1,1", "at": 13_000.0},
    ]
    first = drawn.first_drawn(records, "task")
    assert first == {"a": 10.5, "b": 11.25}
    assert drawn.first_drawn(records, "cell") == {"1,1": 13.0}
    assert drawn.waits(first, {"a": 10.0, "b": 11.0, "c": 5.0}) == [0.5, 0.25]
    assert drawn.summary([0.5, 0.3]) == {"p50": 0.4, "p95": 0.49, "max": 0.5}
    assert drawn.summary([]) == {"p50": None, "p95": None, "max": None}


def test_the_report_section_has_the_single_and_the_grid_rows(passing: dict[str, Any]) -> None:
    lines = drawn.section(passing["drawn"])
    assert "| single image (4 of 4) | 0.20 s | 0.34 s | 0.36 s |" in lines
    kernel = "| of which in the kernel: COMPLETED -> result and its copy | 0.12 s | 0.25 s |"
    assert kernel + " 0.26 s |" in lines
    assert "| of which in the page: result -> drawn | 0.07 s | 0.09 s | 0.10 s |" in lines
    assert any("timer in the benchmark's process woke 12 ms late at p95 (40 ms" in x for x in lines)
    shares = "to the last image: jupyterlab 0.02, kernel 0.31, simulator 0.30."
    assert any(shares in line for line in lines)
    assert any(
        line.startswith("| 3 x 3 grid: last task completed -> last cell drawn (9 cells, 9 tasks)")
        and line.endswith("| 0.56 s |")
        for line in lines
    )
    passing["drawn"] = {
        "endpoint": drawn.ENDPOINT,
        "grid_side": 3,
        "drawn_p95_s": None,
        "grid_drawn_s": None,
        "not_measured": "/usr/bin/chromium is missing",
    }
    lines = drawn.section(passing["drawn"])
    assert "Not measured: /usr/bin/chromium is missing." in lines
    assert not any(line.startswith("| COMPLETED") for line in lines)


@pytest.mark.parametrize(("key", "text"), [("drawn_p95_s", "<= 0.6 s"), ("grid_drawn_s", "<= 1 s")])
def test_the_waits_are_judged_against_their_targets(
    passing: dict[str, Any], key: str, text: str
) -> None:
    goal = next(g for g in GOALS if g.key == key)
    assert goal.target_text() == text
    assert judge(goal, passing).status == MET
    passing["drawn"][key] = 1.2
    verdict = judge(goal, passing)
    assert (verdict.status, verdict.measured) == (MISSED, "1.20 s")
    assert "p95 0.34 s, max 0.36 s; of which in the kernel" in verdict.reason
    assert "p95 0.25 s, in the page (-> the image loaded) p95 0.09 s" in verdict.reason
    assert "last cell: 0.56 s after its last task completed" in verdict.reason
    del passing["drawn"]
    assert figures.headline(passing)[key] is None
    verdict = judge(goal, passing)
    assert verdict.status == MISSED and "Plan.drawn_singles is 0" in verdict.reason


def test_without_chromium_nothing_runs_and_the_reason_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    common.tests_on_path()
    from browser import frontend

    absent = tmp_path / "chromium"
    monkeypatch.setattr(frontend, "CHROMIUM", absent)

    def no_page(singles: int, root: Path) -> dict[str, Any]:
        raise AssertionError("a page was opened without a browser")

    monkeypatch.setattr(drawn, "measure_pages", no_page)
    found = drawn.run_drawn(3)
    assert found["drawn_p95_s"] is None and found["grid_drawn_s"] is None
    assert found["not_measured"] == f"{absent} is missing (apt-get install chromium)"
    assert "Not measured:" in drawn.section(found)[-2]
