"""The headline figures: the JSON line's keys (a contract the README quotes) and their values.

A figure a plan did not measure (the grid weight or the waits without a browser) is null.
"""

from __future__ import annotations

from typing import Any

JSON_KEYS = (
    "requests_ratio_vs_0_1s",
    "requests_ratio_vs_0_5s",
    "requests_ratio_vs_1s",
    "p95_notice_s",
    "p95_notice_s_0_5s",
    "requests_ratio_vs_0_5s_warm",
    "requests_ratio_vs_0_1s_warm",
    "p95_notice_s_warm",
    "requests_ratio_vs_0_5s_warm_bimodal",
    "requests_ratio_vs_0_1s_warm_bimodal",
    "p95_notice_s_warm_bimodal",
    "p95_notice_s_shift",
    "p95_notice_s_short_warm",
    "requests_ratio_vs_0_1s_short_warm",
    "p95_notice_s_short",
    "requests_ratio_vs_0_1s_short",
    "requests_ratio_vs_0_1s_mixed_warm",
    "mixed_share_within_target",
    "live_jobs_10k_completed",
    "live_jobs_10k_kb_per_job",
    "status_rate_10k",
    "exec_p95_added_ms_1000",
    "exec_p95_added_ms",
    "import_ms",
    "imports_ipywidgets",
    "form_build_ms_max",
    "nb_bytes_per_video",
    "nb_playable_videos",
    "nb_bytes_per_video_embedded",
    "sim_status_rps",
    "prompt_slowest_ms",
    "grid_page_bytes",
    "drawn_p95_s",
    "grid_drawn_s",
    "teaching_nb_max_bytes",
    "wall_s",
)
#: the polling figures of the JSON line, as ``run_polling`` returns them
POLLING_KEYS = JSON_KEYS[: JSON_KEYS.index("live_jobs_10k_completed")]


def headline(results: dict[str, Any]) -> dict[str, Any]:
    """The JSON line: exactly :data:`JSON_KEYS`."""
    p, k, s = results["polling"], results["kernel"], results["startup"]
    nb, sim = results["notebook_weight"], results["simulator"]
    big = results["scale"]
    return {
        **{key: p.get(key) for key in POLLING_KEYS},
        "live_jobs_10k_completed": big["completed"],
        "live_jobs_10k_kb_per_job": big["kb_per_job"],
        "status_rate_10k": big["status_rate"],
        "exec_p95_added_ms_1000": results["kernel_many"]["exec_p95_added_ms"],
        "exec_p95_added_ms": k["exec_p95_added_ms"],
        "import_ms": s["import_ms"],
        "imports_ipywidgets": s["imports_ipywidgets"],
        "form_build_ms_max": s["form_build_ms_max"],
        "nb_bytes_per_video": nb["nb_bytes_per_video"],
        "nb_playable_videos": nb["nb_playable_videos"],
        "nb_bytes_per_video_embedded": nb["nb_bytes_per_video_embedded"],
        "sim_status_rps": sim["sim_status_rps"],
        "prompt_slowest_ms": results["prompt"]["slowest_ms"],
        "grid_page_bytes": results.get("grid_weight", {}).get("grid_bytes"),
        "drawn_p95_s": results.get("drawn", {}).get("drawn_p95_s"),
        "grid_drawn_s": results.get("drawn", {}).get("grid_drawn_s"),
        "teaching_nb_max_bytes": results.get("teaching_weight", {}).get("teaching_nb_max_bytes"),
        "wall_s": results["seconds"].get("total"),
    }
