"""The benchmarks run end to end in a tiny mode and report the agreed shape.

No speed is asserted here: figures are not tests (issue 9). What is checked is
that every measurement runs against real simulators, kernels and notebooks,
that the counts agree where two sources count the same thing, and that
``benchmarks/run.py`` writes its report and ends with the JSON line whose keys
are the contract.
"""

from __future__ import annotations

import ast
import json
import math
import sys
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import on_paper, polling, run  # noqa: E402
from benchmarks.goals import MISSED, NOT_EVIDENCE, judge_all  # noqa: E402
from benchmarks.plans import FULL_ARMS  # noqa: E402
from benchmarks.polling import ArmPlan, PollingPlan  # noqa: E402
from benchmarks.sets import Arrivals, BimodalTaskSet, MixedTaskSet, TaskSet  # noqa: E402

#: the full plan's arms (benchmarks/plans.py), each polling a tiny set
TINY_ARMS = {
    name: ArmPlan(max_live=2 if name.startswith("fixed 0.1 s") else 0) for name in FULL_ARMS
} | {polling.OURS_SHORT: ArmPlan(arrivals=Arrivals(3, 0.5))}
TINY = run.Plan(
    polling=PollingPlan(
        twenty=TaskSet(count=5, median_s=1.0, sigma=0.2, cap_s=2.0, seed=3),
        bimodal=BimodalTaskSet(count=5, short_median_s=0.3, long_median_s=1.5, seed=4),
        short=TaskSet(count=6, median_s=0.6, sigma=0.3, floor_s=0.05, seed=5),
        mixed=MixedTaskSet(count=5, image_median_s=0.5, video_median_s=2.0),
        arms=TINY_ARMS,
        warm_arrivals=Arrivals(25, 0.5),
    ),
    kernel_jobs=20,
    kernel_samples=5,
    scale_jobs=40,
    scale_longest_s=4.0,
    kernel_jobs_many=30,
    import_runs=1,
    form_runs=1,
    videos=1,
    nb_variants=("ours", "embedded"),
    sim_requests=200,
    prompt_runs=1,
    batch_rows=40,
)

HEADLINE_TYPES: dict[str, type | tuple[type, ...]] = {
    "requests_ratio_vs_0_1s": float,
    "requests_ratio_vs_0_5s": float,
    "requests_ratio_vs_1s": float,
    "p95_notice_s": float,
    "p95_notice_s_0_5s": float,
    "requests_ratio_vs_0_5s_warm": float,
    "requests_ratio_vs_0_1s_warm": float,
    "p95_notice_s_warm": float,
    "requests_ratio_vs_0_5s_warm_bimodal": float,
    "requests_ratio_vs_0_1s_warm_bimodal": float,
    "p95_notice_s_warm_bimodal": float,
    "p95_notice_s_shift": float,
    "p95_notice_s_short_warm": float,
    "requests_ratio_vs_0_1s_short_warm": float,
    "p95_notice_s_short": float,
    "requests_ratio_vs_0_1s_short": float,
    "requests_ratio_vs_0_1s_mixed_warm": float,
    "mixed_share_within_target": float,
    "live_jobs_10k_completed": int,
    "live_jobs_10k_kb_per_job": float,
    "status_rate_10k": float,
    "exec_p95_added_ms_1000": float,
    "exec_p95_added_ms": float,
    "import_ms": float,
    "imports_ipywidgets": bool,
    "form_build_ms_max": float,
    "nb_bytes_per_video": int,
    "nb_playable_videos": int,
    "nb_bytes_per_video_embedded": int,
    "sim_status_rps": float,
    "prompt_slowest_ms": float,
    "grid_page_bytes": type(None),  # TINY drives no browser (test_goals: when it does)
    "drawn_p95_s": type(None),  # nor this (test_drawn: when it does)
    "grid_drawn_s": type(None),
    "teaching_nb_max_bytes": type(None),  # TINY weighs no lesson (test_teaching_weight does)
    "wall_s": float,
}


@pytest.fixture(scope="module")
def results() -> dict[str, Any]:
    logged: list[str] = []
    out = run.measure(TINY, logged.append)
    assert any("polling done" in line for line in logged)
    return out


@pytest.mark.slow
@pytest.mark.timeout(900)  # the first test: it waits for the tiny run (~100 s, more under load)
def test_polling_counts_agree_and_every_task_is_noticed(results: dict[str, Any]) -> None:
    p = results["polling"]
    arms = polling.arms_for(TINY.polling)
    assert set(p["schedules"]) == set(TINY.polling.arms)
    for name, s in p["schedules"].items():
        arm = arms[name]
        assert s["tasks"] == len(arm.tasks) == s["notices_measured"], name
        assert s["warm_up_tasks"] == len(arm.warm)
        assert s["max_live_tasks"] == (arm.max_live or len(arm.tasks))
        # The simulator and the client count the same requests.
        assert s["status_requests_per_task"] == s["client_status_requests_per_task"], name
        assert s["poll_requests_per_task"] == s["client_poll_requests_per_task"], name
        assert s["status_requests_per_task"] >= 1
        assert s["result_requests_per_task"] >= 1
        # polls: every status and result request but the one result per task
        assert s["poll_requests_per_task"] == pytest.approx(
            s["status_requests_per_task"] + s["result_requests_per_task"] - 1, abs=2e-3
        )
        if name.startswith("fixed"):  # a fixed poller polls the status address only
            assert s["result_requests_per_task"] == 1
            assert s["model_poll_requests_per_task"] == pytest.approx(
                on_paper.fixed_per_task(arm.tasks, float(arm.worker)), abs=2e-3
            )
        assert 0 <= s["notice_s"]["p50"] <= s["notice_s"]["p95"] <= s["notice_s"]["max"]
        assert sorted(d[1] for d in s["detail"]) == sorted(t.seconds for t in arm.tasks)
    # a cold arm's batches went through clients of their own; a warm arm through one
    assert p["schedules"][polling.OURS_SHORT]["clients"] == 2
    assert p["schedules"][polling.OURS_SHORT_WARM]["clients"] == 1
    fast = p["schedules"]["fixed 0.1 s"]
    assert fast["poll_requests_per_task"] > p["schedules"]["fixed 1 s"]["poll_requests_per_task"]
    # a ratio: the fixed poller on paper over the very tasks ours measured, over ours
    for key, fixed, ours in (
        ("requests_ratio_vs_0_1s", "fixed 0.1 s", polling.OURS),
        ("requests_ratio_vs_0_5s_warm", "fixed 0.5 s", polling.OURS_WARM),
        ("requests_ratio_vs_0_1s_mixed_warm", "fixed 0.1 s mixed", polling.OURS_MIXED),
    ):
        mine = p["schedules"][ours]["poll_requests_per_task"]
        interval = polling.interval_of(fixed)
        assert interval is not None
        theirs = on_paper.fixed_per_task(arms[ours].tasks, interval)
        assert p[key] == pytest.approx(theirs / mine, rel=1e-2)
    share = p["mixed_share_within_target"]
    assert 0 <= share <= 1


@pytest.mark.slow
@pytest.mark.timeout(600)  # whichever test runs first also waits for the tiny run
def test_every_one_of_many_live_jobs_completes_within_the_budget(
    results: dict[str, Any],
) -> None:
    big = results["scale"]
    assert big["completed"] == big["jobs"] == TINY.scale_jobs
    assert big["sim_status_requests"] >= big["jobs"]  # each job polled at least once
    assert big["kb_per_job"] > 0
    assert results["kernel_many"]["jobs_polled"] == TINY.kernel_jobs_many


@pytest.mark.slow
@pytest.mark.timeout(600)  # whichever test runs first also waits for the tiny run
def test_kernel_jobs_stay_live_for_the_measurement(results: dict[str, Any]) -> None:
    k = results["kernel"]
    assert k["jobs_polled"] == TINY.kernel_jobs
    assert k["jobs_live_after"] == TINY.kernel_jobs
    assert k["idle_ms"]["p50"] > 0 and k["busy_ms"]["p50"] > 0
    assert k["exec_p95_added_ms"] == pytest.approx(
        k["busy_ms"]["p95"] - k["idle_ms"]["p95"], abs=0.02
    )


@pytest.mark.slow
@pytest.mark.timeout(600)  # whichever test runs first also waits for the tiny run
def test_startup_times_every_documented_form(results: dict[str, Any]) -> None:
    s = results["startup"]
    assert s["forms"] == 20 and len(s["form_build_ms"]) == 20
    assert s["form_build_ms_max"] == max(s["form_build_ms"].values())
    assert s["form_slowest"] in s["form_build_ms"]
    assert s["import_ms"] > 0
    assert any(m["module"] == "genwidgets" for m in s["slowest_imports"])


@pytest.mark.slow
@pytest.mark.timeout(600)  # whichever test runs first also waits for the tiny run
def test_notebook_weight_compares_with_and_without_videos(results: dict[str, Any]) -> None:
    nb = results["notebook_weight"]
    for name, v in nb["variants"].items():
        assert v["bytes_with_videos"] > v["bytes_without"], name
        assert v["bytes_per_video"] == round(
            (v["bytes_with_videos"] - v["bytes_without"]) / TINY.videos
        )
    # The peers' way puts the video in widget state; ours puts a task view there.
    assert nb["variants"]["embedded"]["widget_state_bytes_per_video"] > 10_000
    assert nb["variants"]["ours"]["widget_models_per_video"] >= 1


@pytest.mark.slow
@pytest.mark.timeout(600)  # whichever test runs first also waits for the tiny run
def test_simulator_throughput_answers_every_request(results: dict[str, Any]) -> None:
    sim = results["simulator"]
    assert sim["requests"] == sim["ok"] == TINY.sim_requests
    assert sim["sim_status_rps"] > 0


@pytest.mark.slow
@pytest.mark.timeout(600)  # whichever test runs first also waits for the tiny run
def test_headline_has_exactly_the_agreed_keys_and_types(results: dict[str, Any]) -> None:
    line = run.headline(results)
    assert tuple(line) == run.JSON_KEYS
    assert set(line) == set(HEADLINE_TYPES)
    for key, kind in HEADLINE_TYPES.items():
        value = line[key]
        assert isinstance(value, kind) and not (kind is int and isinstance(value, bool)), key
        if isinstance(value, float):
            assert math.isfinite(value), key


@pytest.mark.slow
@pytest.mark.timeout(600)  # whichever test runs first also waits for the tiny run
def test_main_writes_the_report_and_ends_with_the_json_line(
    results: dict[str, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(run, "measure", lambda plan, log: json.loads(json.dumps(results)))
    output = tmp_path / "RESULTS.md"
    assert run.main(["--quick", "--output", str(output)]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert tuple(json.loads(last)) == run.JSON_KEYS
    text = output.read_text()
    assert "python benchmarks/run.py --quick" in text
    assert "nproc" not in text and "CPUs" in text and "Python " in text
    for verdict in judge_all(results):
        assert f"| {verdict.goal.name} | {verdict.goal.target_text()} |" in text
        if verdict.status == MISSED:
            assert f"**Missed: {verdict.goal.name}.**" in text
        if verdict.status == NOT_EVIDENCE:
            assert f"**Not evidence: {verdict.goal.name}.**" in text
    assert last in text
    # the mixed set's plot, beside the report, linked from it
    picture = tmp_path / "RESULTS-notice-mixed.png"
    assert picture.read_bytes().startswith(b"\x89PNG")
    assert "](RESULTS-notice-mixed.png)" in text


def _imported(path: Path) -> set[str]:
    """The benchmark modules ``path`` imports (``from . import x``, ``from .x import y``,
    ``from benchmarks import x``, ``from benchmarks.x import y``)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.ImportFrom):
            continue
        module = node.module or ""
        if (node.level == 1 and module) or module.startswith("benchmarks."):
            names.add(module.removeprefix("benchmarks.").split(".")[0])
        elif node.level == 1 or module == "benchmarks":
            names.update(alias.name for alias in node.names)
    return names


def test_every_benchmark_module_is_reached_by_run_py() -> None:
    """``python benchmarks/run.py`` (full and --quick) measures with every module: none
    is left to be run by hand and forgotten."""
    folder = REPO / "benchmarks"
    modules = {p.stem for p in folder.glob("*.py")} - {"__init__"}
    reached, todo = set(), ["run"]
    while todo:
        name = todo.pop()
        if name in reached or name not in modules:
            continue
        reached.add(name)
        todo += sorted(_imported(folder / f"{name}.py"))
    assert reached == modules, modules - reached
    # and every measurement (a module's top-level run_* function) is one of its steps
    measure = ast.get_source_segment(
        source := (folder / "run.py").read_text(),
        next(n for n in ast.parse(source).body if getattr(n, "name", "") == "measure"),
    )
    assert measure is not None
    for name in modules:
        for node in ast.parse((folder / f"{name}.py").read_text()).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("run_"):
                assert f"{name}.{node.name}(" in measure, (name, node.name)


@pytest.mark.slow
@pytest.mark.timeout(600)  # whichever test runs first also waits for the tiny run
def test_the_prompt_figures_reach_the_headline(results: dict[str, Any]) -> None:
    pr = results["prompt"]
    assert pr["runs"] == TINY.prompt_runs
    assert pr["slowest_ms"] == max(ms for steps in pr["prompts"].values() for ms in steps.values())
    assert run.headline(results)["prompt_slowest_ms"] == pr["slowest_ms"]
    assert "grid_weight" not in results and "grid_weight" not in results["seconds"]
    assert "drawn" not in results and "teaching_weight" not in results


@pytest.mark.slow
@pytest.mark.timeout(600)  # whichever test runs first also waits for the tiny run
def test_the_batch_is_killed_half_way_and_resumed_with_no_row_made_twice(
    results: dict[str, Any],
) -> None:
    b = results["batch"]
    kept = f"its folder: {b.get('kept')}"  # kept when a goal is missed
    assert b["rows"] == TINY.batch_rows and b["manifest_rows"] == b["rows"], kept
    assert b["duplicate_creates"] == 0 and b["tasks_made"] <= b["rows"], kept
    assert b["rows_done"] + b["rows_unknown"] == b["rows"] and b["rows_other"] == 0, kept
    assert b["files_once"] and b["files"] == b["rows_done"] and b["suffixed_files"] == 0, kept
    assert b["ledger_tasks"] >= b["rows_done"], kept
    assert b["plan_s"] > 0 and b["kb_per_row"] > 0
    assert set(b["goals"]) >= {"create_rate_share", "kb_per_row", "duplicate_creates", "plan_s"}


def test_the_steps_run_alongside_their_partner_and_the_others_one_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each step of run.ALONGSIDE waits (bounded) for its partner to have started: run
    one after the other, they would not meet and the test fails; the others run alone."""
    assert run.ALONGSIDE
    started = {name: threading.Event() for name in (*run.ALONGSIDE, *run.ALONGSIDE.values())}
    running: set[str] = set()
    overlaps: list[tuple[str, set[str]]] = []
    lock = threading.Lock()

    def fake(name: str) -> Any:
        def step(*_args: Any, **_kwargs: Any) -> dict[str, Any]:
            with lock:
                overlaps.append((name, set(running)))
                running.add(name)
            if name in started:
                started[name].set()
                partner = run.ALONGSIDE.get(name) or next(
                    o for o, p in run.ALONGSIDE.items() if p == name
                )
                assert started[partner].wait(60), f"{name} ran without {partner}"
            with lock:
                running.discard(name)
            return {"step": name}

        return step

    # every step of every benchmark module run.py imports: none runs for real (the
    # full plan's class-gateway step alone took 85 s here when it was left out)
    steps = [
        (module, function)
        for module in vars(run).values()
        if isinstance(module, ModuleType) and module.__name__.startswith("benchmarks.")
        for function in vars(module)
        if function.startswith("run_") and callable(getattr(module, function))
    ]
    assert {module.__name__.split(".")[-1] for module, _ in steps} >= {"serve", "polling", "batch"}
    for module, function in steps:
        monkeypatch.setattr(module, function, fake(module.__name__.split(".")[-1]))
    out = run.measure(run.FULL, lambda _line: None)
    assert {"notebook_weight", "teaching_weight", "grid_weight", "drawn", "polling"} <= set(out)
    assert {"scale", "batch"} <= set(out)
    alone = [(name, seen) for name, seen in overlaps if name not in started]
    assert alone and all(not seen for _name, seen in alone)
