"""RESULTS.md: the goals' verdicts, then one section of figures per measurement."""

from __future__ import annotations

import datetime
import json
from typing import Any

from . import (
    batch,
    drawn,
    ledger_lock,
    parsing,
    polling_report,
    prompt,
    scale,
    serve,
    teaching_weight,
)
from ._common import fmt
from .figures import headline
from .goals import KB, MET, MISSED, NOT_EVIDENCE, Verdict, judge_all

#: how a verdict that is not "met" opens its paragraph
_HEADING = {MISSED: "Missed", NOT_EVIDENCE: "Not evidence"}


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return polling_report.table(header, rows)


def _kernel_section(k: dict[str, Any]) -> list[str]:
    return [
        "## 2. Kernel responsiveness",
        "",
        f"A real IPython kernel (jupyter_client, this interpreter). {k['samples']} round trips "
        f'of `execute_request("1")` -> `execute_reply`, idle; then {k["jobs"]} jobs '
        f"(`X-Sim-Duration: 3600`, child simulator) submitted in the kernel, all polled "
        f"({k['jobs_polled']}), still live at the end ({k['jobs_live_after']}), and "
        f"{k['samples']} round trips again over {k['busy_seconds']:.0f} s while the engine "
        f"thread made {k['polls_per_second_busy']:.0f} status polls/s.",
        "",
        *_table(
            ["kernel", "p50", "p95", "max"],
            [
                ["idle"] + [fmt(k["idle_ms"][q], " ms", 1) for q in ("p50", "p95", "max")],
                [f"{k['jobs']} live jobs"]
                + [fmt(k["busy_ms"][q], " ms", 1) for q in ("p50", "p95", "max")],
            ],
        ),
        "",
        f"Added at p95: **{k['exec_p95_added_ms']:.1f} ms**. CPU while busy: kernel "
        f"{k['cpu_share_kernel_busy']:.2f}, simulator {k['cpu_share_simulator_busy']:.2f}.",
        "",
    ]


def _scale_section(big: dict[str, Any]) -> list[str]:
    return [
        "## 6. Ten thousand live jobs",
        "",
        f"One child client process (`gw.Client`, default `max_status_rate={big['budget']:g}`, "
        f"no ledger, no downloads) submitted {big['jobs']} tasks (`{scale.ENDPOINT}`, run times "
        f"{scale.SHORTEST_S:g}-{scale.LONGEST_S:g} s, seeded) to a child simulator running "
        f"{scale.SIM_WORKERS} at once (the rest queue) in {big['submit_s']:.0f} s, and waited "
        f"for all of them ({big['total_s']:.0f} s in all).",
        "",
        *_table(
            ["figure", "value", "meaning"],
            [
                [
                    "completed",
                    f"**{big['completed']}** of {big['jobs']}",
                    "results received",
                ],
                [
                    "memory per live job",
                    f"**{big['kb_per_job']:.1f} KB**",
                    f"resident memory growth over the submits ({big['rss_before_mb']:.0f} -> "
                    f"{big['rss_live_mb']:.0f} MB) / jobs; {big['live_at_end_of_submit']} "
                    "were still live then",
                ],
                [
                    "sustained status rate",
                    f"**{fmt(big['status_rate'], '/s', 1)}**",
                    f"polls/s (slots the status budget granted: status requests, and the "
                    f"result-address polls of running tasks) from the last submit until a "
                    f"tenth of the jobs were left ({big['window_s']:.0f} s), budget "
                    f"{big['budget']:g}/s; status + result requests sent in that window: "
                    f"{fmt(big.get('request_rate'), '/s', 1)}",
                ],
                [
                    "engine CPU per poll",
                    f"{fmt(big['engine_cpu_ms_per_status'], ' ms', 2)}",
                    "CPU time of the engine thread in that window / its polls "
                    f"(results included; the thread's CPU share {big['engine_cpu_share']})",
                ],
                [
                    "status / result requests per job",
                    f"{big['status_requests_per_job']:.2f} / "
                    f"{big.get('result_requests_per_job', float('nan')):.2f}",
                    "the budget stretches every interval: most jobs are polled a few times",
                ],
            ],
        ),
        "",
    ]


def _startup_section(s: dict[str, Any]) -> list[str]:
    forms = sorted(s["form_build_ms"].items(), key=lambda kv: -kv[1])
    return [
        "## 3. Start-up",
        "",
        f"`import genwidgets` in a fresh interpreter, median of {s['import_runs']} runs after a "
        f"warm-up: **{s['import_ms']:.1f} ms** (all: {', '.join(map(str, s['import_ms_all']))}). "
        f"Imported ipywidgets: **{s['imports_ipywidgets']}**; the simulator: "
        f"{s['imports_simulator']}; httpx: {s['imports_httpx']}. Slowest under the import "
        "(`-X importtime`, cumulative): "
        + ", ".join(f"{m['module']} {m['cumulative_ms']:.1f} ms" for m in s["slowest_imports"])
        + ".",
        "",
        f"Forms: first build of each of the {s['forms']} documented endpoints in a fresh "
        f"process after one warm-up form ({s['form_warm_up_ms']:.0f} ms, it imports "
        f"ipywidgets), median over {s['form_runs']} processes. Slowest "
        f"**{s['form_build_ms_max']:.1f} ms** ({s['form_slowest']}).",
        "",
        *_table(["endpoint", "build"], [[e, f"{ms:.1f} ms"] for e, ms in forms]),
        "",
    ]


def _weight_section(nb: dict[str, Any]) -> list[str]:
    rows = [
        [
            name,
            f"{v['bytes_per_video'] / KB:.1f} KB",
            f"{v['default_save_bytes_per_video'] / KB:.1f} KB",
            f"{v['playable_videos']} of {nb['videos']}",
            f"{v['widget_state_bytes_per_video'] / KB:.1f} KB",
            f"{v['widget_models_per_video']:.0f}",
            f"{v['output_bytes_per_video'] / KB:.1f} KB",
            f"{v['bytes_without']} / {v['bytes_with_videos']}",
        ]
        for name, v in nb["variants"].items()
    ]
    return [
        "## 4. Notebook weight",
        "",
        f"{nb['videos']} `{nb['endpoint']}` videos (720p, 5 s) from the embedded simulator, "
        "executed with nbclient (`store_widget_state=True`), saved; per video = (saved size - "
        "size of the same notebook with zero videos) / videos, also without the widget state "
        "(as JupyterLab and Notebook 7 save by default). `ours`: `display(job)` (both faces "
        "of the task view), default client (ledger on), `GENWIDGETS_SAVED_MEDIA=previews` "
        "(the default); `ours_posters` and `ours_full`: `posters` and `full`. "
        "`ours_no_ledger`: `gw.Client(ledger=False)`. `embedded`: "
        "`ipywidgets.Video(value=<mp4 bytes>)` per result. Playable: videos whose source is "
        "in the saved outputs (a `data:` URL), which play with the kernel gone.",
        "",
        *_table(
            [
                "variant",
                "bytes/video",
                "default save/video",
                "playable",
                "widget state/video",
                "widget models/video",
                "outputs/video",
                "file bytes (0 / N videos)",
            ],
            rows,
        ),
        "",
    ]


def _simulator_section(sim: dict[str, Any]) -> list[str]:
    return [
        "## 5. Simulator throughput",
        "",
        f"{sim['requests']} status GETs ({sim['ok']} answered 200) over {sim['connections']} "
        f"keep-alive connections to a child simulator: **{sim['sim_status_rps']:.0f} "
        f"requests/s** ({sim['seconds']:.2f} s). Client (raw asyncio) and server share the "
        "machine's cores.",
        "",
    ]


def prompt_section(pr: dict[str, Any]) -> list[str]:
    """The prompt builder's section of RESULTS.md: a row per prompt, a column per step."""
    rows = [
        [name, *(f"{steps[step]:.1f} ms" for step in prompt.STEPS)]
        for name, steps in pr["prompts"].items()
    ]
    return [
        "## 7. Long imgM prompts",
        "",
        f"Prompts of up to {prompt.LIMIT} characters (the longest allowed), each step timed in "
        f"one process after a warm-up run, median of {pr['runs']}: "
        + "; ".join(f"`{code}`" for code in prompt.STEPS.values())
        + ". Slowest: "
        f"**{pr['slowest_ms']:.1f} ms** ({pr['slowest_step']}, {pr['slowest_prompt']}).",
        "",
        *_table(["prompt", *prompt.STEPS], rows),
        "",
    ]


def grid_section(g: dict[str, Any]) -> list[str]:
    """The grid weight's section of RESULTS.md: a row per arm, or why none was measured."""
    lines = [
        "## 8. Grid weight",
        "",
        f"A {g['cells']}-cell grid (`{g['endpoint']}`, size {g['size']}, 10 seeds x 10 "
        "prompts, a simulator in the kernel) run in JupyterLab in chromium; the DevTools "
        "network log counts the bytes that reach the page before any lightbox opens "
        "(websocket frames and image responses). `thumbnails`: the grid as it is; `full`: "
        "every cell's full image by URL. Then nbclient executes the same notebook with its "
        "widget state stored and the `.ipynb` is weighed.",
        "",
    ]
    if g["not_measured"]:
        return [*lines, f"Not measured: {g['not_measured']}.", ""]
    rows = [
        [
            arm,
            f"**{a['grid_mb']:.2f} MB**",
            f"{a['websocket'] / 1e6:.2f} MB",
            f"{a['images'] / 1e6:.2f} MB ({a['image_responses']})",
            f"{a['other_http'] / 1e6:.2f} MB",
            f"{a['saved_notebook_bytes'] / 1e6:.2f} MB",
            f"{a['seconds']:.0f} s",
        ]
        for arm, a in g["arms"].items()
    ]
    header = [
        "arm",
        "grid bytes to the page",
        "websocket",
        "images (responses)",
        "other HTTP",
        "saved notebook",
        "page time",
    ]
    return [*lines, *_table(header, rows), ""]


def goals_section(verdicts: list[Verdict]) -> list[str]:
    """The goals table, then a paragraph for each goal not met: why, and what would fix it."""
    rows = [[v.goal.name, v.goal.target_text(), v.measured, v.status] for v in verdicts]
    lines = ["## Goals", "", *_table(["goal", "target", "measured", ""], rows), ""]
    for v in verdicts:
        if v.status != MET:
            lines += [f"**{_HEADING[v.status]}: {v.goal.name}.** {v.reason}", ""]
    return lines


def report(results: dict[str, Any], command: str, quick: bool, machine: dict[str, Any]) -> str:
    """RESULTS.md: goals (met or missed, why, what would fix it), figures, machine, command."""
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# genwidgets benchmarks" + (" (quick run)" if quick else ""),
        "",
        f"Written by `{command}` on {when}. Machine: {machine['nproc']} CPUs "
        f"({machine['cpu_model']}), Python {machine['python']}, load average at start "
        f"{machine['load_average_at_start']} (the machine is shared, figures are noisy). "
        f"Wall time per part: "
        + ", ".join(f"{k} {v:.0f} s" for k, v in results["seconds"].items())
        + ".",
        "",
    ]
    if quick:
        lines += [
            "A quick run: fewer and shorter tasks (the 20 s set's measured median "
            f"{results['polling']['sets']['twenty']['measured_median_s']:g} s), fewer "
            "samples. Its figures "
            "check that everything runs; the full run (`python benchmarks/run.py`) gives the "
            "figures to quote.",
            "",
        ]
    lines += goals_section(judge_all(results))
    lines += polling_report.section(results["polling"])
    lines += _kernel_section(results["kernel"])
    lines += _kernel_section(results["kernel_many"])[2:]
    lines += _startup_section(results["startup"])
    lines += _weight_section(results["notebook_weight"])
    lines += _simulator_section(results["simulator"])
    if "parsing" in results:
        lines += parsing.section(results["parsing"])
    if "ledger_lock" in results:
        lines += ledger_lock.section(results["ledger_lock"])
    lines += _scale_section(results["scale"])
    if "batch" in results:
        lines += batch.section(results["batch"])
    lines += prompt_section(results["prompt"])
    if "grid_weight" in results:
        lines += grid_section(results["grid_weight"])
    if "drawn" in results:
        lines += drawn.section(results["drawn"])
    if "teaching_weight" in results:
        lines += teaching_weight.section(results["teaching_weight"])
    if "serve" in results:
        lines += serve.section(results["serve"])
    lines += [
        "## Headline JSON",
        "",
        "```json",
        json.dumps(headline(results)),
        "```",
        "",
    ]
    return "\n".join(lines)
