"""Section 1 of RESULTS.md: the polling arms, the short set side by side with the peers'
schedules, the mixed set by kind, and which figures are measured and which on paper."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import polling, sets
from ._common import fmt, percentile
from .pollers import STATUS_RATE


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def achieved(name: str, schedule: dict[str, Any]) -> str:
    """A fixed poller's achieved interval, how far off its own, and whether that is kept."""
    text = fmt(schedule["mean_achieved_interval_s"], " s", 3)
    drift = polling.interval_drift(name, schedule)
    if drift is None:
        return text
    kept = "kept" if polling.interval_kept(name, schedule) else "**missed**"
    return f"{text} ({drift:+.1%}, {kept})"


def evidence(p: dict[str, Any]) -> str:
    """Which baselines kept their interval (their ratios are evidence) and which did not."""
    schedules = p["schedules"]
    fixed = [n for n in schedules if polling.interval_drift(n, schedules[n]) is not None]
    missed = [n for n in fixed if not polling.interval_kept(n, schedules[n])]
    rule = (
        "A ratio is evidence only when its fixed poller kept its interval within "
        f"{polling.INTERVAL_TOLERANCE:.0%} (the achieved interval column) and its measured "
        f"count of its sample stayed within {polling.COUNT_TOLERANCE:.0%} of the sample's "
        "on-paper count"
    )
    if not missed:
        return rule + ": every fixed poller did." if fixed else rule + "."
    return (
        rule
        + ". **Not evidence in this run:** ratios against "
        + ", ".join(missed)
        + ", whose pollers missed their interval or count (a slower poller makes fewer "
        "requests; the goals above say so next to each ratio)."
    )


def _set_line(name: str, figures: dict[str, Any]) -> str:
    return (
        f"*{name}*: {figures['count']} tasks, {figures['shape']} (seed {figures['seed']}), "
        f"measured median {figures['measured_median_s']:.1f} s, mean {figures['mean_s']:.1f} s, "
        f"max {figures['max_s']:.1f} s"
    )


def _arm_rows(p: dict[str, Any]) -> list[list[str]]:
    rows = []
    for name, s in p["schedules"].items():
        paper = fmt(s["model_poll_requests_per_task"], digits=1)
        if s["model_notice_p95_s"] is not None:
            paper += f" (p95 {s['model_notice_p95_s']:.2f} s)"
        clients = f", {s['clients']} clients" if s.get("clients", 1) > 1 else ""
        arrivals = s.get("arrivals", [0, 0.0])
        if arrivals[0]:
            arrive = f"{arrivals[0]} every {arrivals[1]:g} s{clients}"
        else:
            arrive = f"all at once{clients}"
        if s["max_live_tasks"] < s["tasks"]:
            arrive = f"window of {s['max_live_tasks']}"
        rows.append(
            [
                name,
                f"{s['tasks']} of {s['set_tasks']}",
                f"{s['start_s']:g} s",
                arrive,
                f"**{fmt(s['poll_requests_per_task'], digits=1)}**",
                fmt(s["client_poll_requests_per_task"], digits=1),
                paper,
                f"{fmt(s['status_requests_per_task'], digits=1)} / "
                f"{fmt(s['result_requests_per_task'], digits=1)}",
                fmt(s["notice_s"]["p50"], " s"),
                fmt(s["notice_s"]["p95"], " s"),
                fmt(s["notice_s"]["max"], " s"),
                achieved(name, s),
                fmt(s["sim_probe_ms"]["p95"], " ms", 1),
                f"{s['cpu_share_sim']:.2f} / {s['cpu_share_client']:.2f}",
            ]
        )
    return rows


def _by_kind(detail: Sequence[Sequence[Any]], endpoint: str) -> list[float]:
    return [notice for e, _s, notice in detail if e == endpoint]


def _short_side_by_side(p: dict[str, Any]) -> list[str]:
    """The short set: ours (no history, warm) beside fal_client's and replicate's schedules."""
    schedules = p["schedules"]
    arms = [polling.OURS_SHORT, polling.OURS_SHORT_WARM] + [
        fixed + polling.SHORT for fixed in polling.PEERS
    ]
    if not all(a in schedules for a in arms):
        return []
    warm = schedules[polling.OURS_SHORT_WARM]
    rows = []
    for name in arms:
        s = schedules[name]
        peer = polling.PEERS.get(name.removesuffix(polling.SHORT), "genwidgets")
        rows.append(
            [
                name,
                peer,
                fmt(s["poll_requests_per_task"], digits=1)
                + ("" if name.startswith("genwidgets") else f" ({s['tasks']} tasks)"),
                fmt(s["notice_s"]["p50"], " s"),
                fmt(s["notice_s"]["p95"], " s"),
                fmt(s["poll_requests_per_task"] / warm["poll_requests_per_task"], "x", 1),
            ]
        )
    return [
        "**The short set side by side.** fal_client polls every 0.1 s and replicate's "
        "client every 0.5 s (their schedules, as fixed pollers on the same simulator); the "
        "last column is their requests per task over ours warm.",
        "",
        *table(
            ["arm", "schedule of", "poll req/task", "notice p50", "notice p95", "vs ours warm"],
            rows,
        ),
        "",
        f"Ratios over the tasks ours measured: no history vs fal's "
        f"**{fmt(p['requests_ratio_vs_0_1s_short'], 'x')}** (p95 notice "
        f"{fmt(p['p95_notice_s_short'], ' s')}); warm vs fal's "
        f"**{fmt(p['requests_ratio_vs_0_1s_short_warm'], 'x')}**, vs replicate's "
        f"**{fmt(p.get('requests_ratio_vs_0_5s_short_warm'), 'x')}** (p95 notice "
        f"{fmt(p['p95_notice_s_short_warm'], ' s')}).",
        "",
    ]


def _mixed_by_kind(p: dict[str, Any]) -> list[str]:
    schedules = p["schedules"]
    ours = schedules.get(polling.OURS_MIXED)
    if ours is None:
        return []
    medians = p["mixed_medians"]
    rows = []
    kinds = {sets.ENDPOINT: "images", sets.VIDEO_ENDPOINT: "videos"}
    for endpoint, kind in kinds.items():
        target = sets.notice_target(medians[endpoint])
        mine = _by_kind(ours["detail"], endpoint)
        row = [
            f"{kind} (`{endpoint}`, median {medians[endpoint]:g} s)",
            f"{target:.2f} s",
            str(len(mine)),
            fmt(percentile(mine, 50), " s"),
            fmt(percentile(mine, 95), " s"),
            f"{sum(n <= target for n in mine) / len(mine):.1%}" if mine else "n/a",
        ]
        for fixed in ("fixed 0.1 s", "fixed 0.5 s"):
            theirs = schedules.get(fixed + polling.MIXED)
            notices = _by_kind(theirs["detail"], endpoint) if theirs else []
            row.append(fmt(percentile(notices, 95), " s"))
        rows.append(row)
    return [
        "**The mixed set by kind.** Each kind's target is a tenth of its median run time "
        "within [0.25, 1.5] s; `mixed_share_within_target` is the share of all mixed tasks "
        f"noticed within their kind's target: **{fmt(p['mixed_share_within_target'], '', 3)}**"
        f". Ratios over the tasks ours measured: vs 0.1 s "
        f"**{fmt(p['requests_ratio_vs_0_1s_mixed_warm'], 'x')}**, vs 0.5 s "
        f"**{fmt(p.get('requests_ratio_vs_0_5s_mixed_warm'), 'x')}**.",
        "",
        *table(
            [
                "kind",
                "target",
                "tasks",
                "notice p50",
                "notice p95",
                "within target",
                "fixed 0.1 s p95",
                "fixed 0.5 s p95",
            ],
            rows,
        ),
        "",
        *(
            [f"![Notice latency against run time on the mixed set]({p['plot']})", ""]
            if p.get("plot")
            else []
        ),
        "Notice latency against run time on the mixed set (log scale), ours warm and the "
        "fixed pollers' samples; the line is the target in proportion, clamp(0.1 x run "
        "time, 0.25 s, 1.5 s) (`benchmarks/plot.py`).",
        "",
    ]


def section(p: dict[str, Any]) -> list[str]:
    """The polling section of RESULTS.md."""
    st = p["sets"]
    lines = [
        "## 1. Polling efficiency",
        "",
        "Sets: "
        + "; ".join(
            _set_line(label, st[key])
            for key, label in (
                ("twenty", "20 s set"),
                ("bimodal", "bimodal set"),
                ("short", "short set"),
                ("mixed", "mixed set"),
            )
        )
        + ". Tasks run on JSON-only simulator endpoints (no media to encode), their run "
        "time set by `X-Sim-Duration`; the mixed set's images and videos on two endpoints, "
        "because the schedule learns per endpoint and billed payload.",
        "",
        "Every arm has its own child simulator (speed 1, nothing queues) and its own child "
        "client process (`benchmarks/pollers.py`); arms run at the same time, each from its "
        "start. *No history* (cold) arms submit each batch through a fresh client, so nothing "
        "is learnt; *warm* arms first run a warm-up (another seed of the same set, "
        f"{p['warm_arrivals'][0]} tasks every {p['warm_arrivals'][1]:g} s) through a client "
        "with a ledger, then a fresh client on that ledger polls the measured tasks and "
        f"goes on learning. *shift*: the 20 s set's tasks under {p['shift_under_s']:g} s, "
        f"run {p['shift_factor']:g}x as long as the warm-up's (a gateway that became slower)."
        f" Our clients run with `max_status_rate={STATUS_RATE:g}` (the budget is measured in "
        "section 6). Fixed pollers poll a sample spread evenly over their set's run times, "
        "in a rolling window (longest first) that keeps each within its CPU share.",
        "",
        "**Measured and on paper.** Every figure of an arm's row is measured: poll requests "
        "per task (status + result requests - 1 result per task) counted by its simulator "
        "(`/_sim/stats`) and cross-checked with its client's own count, notice latency from "
        "the client's `time.time()` at `COMPLETED` and the simulator's `completed_at`. The "
        "*on paper* column is the same arm without latency or a busy machine: our own "
        "`Schedule` on a virtual clock (`benchmarks/on_paper.py`), ceil(d / interval) + 1 "
        "for a fixed poller. Each ratio is on paper for the fixed poller and measured for "
        "ours: the fixed poller's on-paper requests over the very tasks our arm measured "
        "(exact for a poller that keeps its interval, which its measured sample shows) over "
        "our measured requests. " + evidence(p),
        "",
        *table(
            [
                "arm",
                "tasks",
                "start",
                "arrivals",
                "poll req/task",
                "client count",
                "on paper",
                "status / result req/task",
                "notice p50",
                "notice p95",
                "notice max",
                "achieved interval",
                "sim probe p95",
                "CPU sim / client",
            ],
            _arm_rows(p),
        ),
        "",
        f"Ratios (their requests / ours): 20 s set, no history: vs 0.1 s "
        f"**{fmt(p['requests_ratio_vs_0_1s'], 'x')}**, vs 0.5 s "
        f"**{fmt(p['requests_ratio_vs_0_5s'], 'x')}**, vs 1 s "
        f"**{fmt(p['requests_ratio_vs_1s'], 'x')}**; warm: vs 0.5 s "
        f"**{fmt(p['requests_ratio_vs_0_5s_warm'], 'x')}**, vs 0.1 s "
        f"**{fmt(p['requests_ratio_vs_0_1s_warm'], 'x')}** (p95 notice "
        f"{fmt(p['p95_notice_s_warm'], ' s')}); bimodal, warm: vs 0.5 s "
        f"**{fmt(p['requests_ratio_vs_0_5s_warm_bimodal'], 'x')}**, vs 0.1 s "
        f"**{fmt(p['requests_ratio_vs_0_1s_warm_bimodal'], 'x')}** (p95 notice "
        f"{fmt(p['p95_notice_s_warm_bimodal'], ' s')}); 2x slower gateway: p95 notice "
        f"**{fmt(p['p95_notice_s_shift'], ' s')}**.",
        "",
        *_short_side_by_side(p),
        *_mixed_by_kind(p),
        "**The trade-off with no history.** The notice target is in proportion to the task "
        "(a tenth of its run time, 0.25 s to 1.5 s). With no history the schedule cannot "
        "know a task's run time, only its age, so it polls every tenth of the age: every "
        "task is noticed within its own target, and a young task costs polls whether it "
        "will end at 3 s or at 60 s. On paper, one fixed target of 1.5 s (the last round's "
        f"schedule) makes {fmt(p['cold_alternatives']['twenty_requests_fixed_1_5'], digits=1)}"
        f" requests per task on the 20 s set but notices the short set at p95 "
        f"{fmt(p['cold_alternatives']['short_p95_fixed_1_5'], ' s')} (in proportion: "
        f"{fmt(p['cold_alternatives']['short_p95_in_proportion'], ' s')}). Once about 20 "
        "tasks of an endpoint and billed payload are known, the plan "
        "(`genwidgets.jobs.runtime.plan_polls`) polls sparsely where the task almost surely "
        "still runs and every target where it is likely to end, the target being a tenth "
        "of the learnt median run time.",
        "",
    ]
    return lines
