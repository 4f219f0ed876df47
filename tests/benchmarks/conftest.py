"""Figures for the benchmark tests that need no benchmark run."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import polling  # noqa: E402


def _fixed(interval: float) -> dict[str, Any]:
    return {"mean_achieved_interval_s": interval}


def _arm(websocket: int, images: int, responses: int) -> dict[str, Any]:
    """One arm of the grid weight as ``grid_weight.run_grid_weight`` reports it."""
    return {
        "websocket": websocket,
        "images": images,
        "other_http": 3_000_000,
        "image_responses": responses,
        "grid_bytes": websocket + images,
        "grid_mb": round((websocket + images) / 1e6, 2),
        "open_lightboxes": 0,
        "seconds": 60.0,
        "saved_notebook_bytes": 2_500_000,
    }


def _lesson(file: int) -> dict[str, int]:
    """One teaching notebook as ``teaching_weight.run_teaching_weight`` weighs it."""
    return {
        "file": file,
        "file_default_save": file // 2,
        "widget_state": file // 2,
        "widget_models": 12,
        "outputs": file // 3,
        "playable": 0,
    }


@pytest.fixture
def passing() -> dict[str, Any]:
    """Figures that meet every goal, every baseline on its interval."""
    schedules = {
        name + suffix: _fixed(i)
        for name, i in polling.FIXED_INTERVALS.items()
        for suffix in ("", polling.BIMODAL, polling.SHORT, polling.MIXED)
    }
    return {
        "seconds": {"polling": 300.0, "scale": 214.0, "total": 780.0},
        "polling": {
            "schedules": schedules,
            "requests_ratio_vs_0_1s": 6.9,
            "requests_ratio_vs_0_5s": 1.41,
            "requests_ratio_vs_1s": 1.5,
            "p95_notice_s": 1.3,
            "p95_notice_s_0_5s": 0.46,
            "requests_ratio_vs_0_5s_warm": 3.6,
            "requests_ratio_vs_0_1s_warm": 16.0,
            "p95_notice_s_warm": 1.4,
            "requests_ratio_vs_0_5s_warm_bimodal": 3.6,
            "requests_ratio_vs_0_1s_warm_bimodal": 17.0,
            "p95_notice_s_warm_bimodal": 1.4,
            "p95_notice_s_shift": 1.4,
            "p95_notice_s_short_warm": 0.28,
            "requests_ratio_vs_0_1s_short_warm": 4.3,
            "p95_notice_s_short": 0.45,
            "requests_ratio_vs_0_1s_short": 2.9,
            "requests_ratio_vs_0_1s_mixed_warm": 19.0,
            "mixed_share_within_target": 0.975,
        },
        "scale": {
            "completed": 10_000,
            "jobs": 10_000,
            "kb_per_job": 7.7,
            "status_rate": 49.8,
            "budget": 50.0,
        },
        "kernel": {"exec_p95_added_ms": 1.8},
        "kernel_many": {"exec_p95_added_ms": 2.5},
        "startup": {"import_ms": 17.7, "imports_ipywidgets": False, "form_build_ms_max": 22.3},
        "notebook_weight": {
            "videos": 10,
            "nb_bytes_per_video": 199_000,
            "nb_playable_videos": 10,
            "nb_bytes_per_video_embedded": 90_000,
        },
        "simulator": {"sim_status_rps": 4415.0},
        "prompt": {
            "runs": 5,
            "prompts": {"40 prompts": {"parse_count_ms": 5.2, "builder_ms": 54.5}},
            "slowest_ms": 54.5,
            "slowest_prompt": "40 prompts",
            "slowest_step": "builder_ms",
        },
        "grid_weight": {
            "cells": 100,
            "endpoint": "genW2.5-t2i-preview",
            "size": "1440*1440",
            "arms": {
                "thumbnails": _arm(websocket=1_400_000, images=590_000, responses=2),
                "full": _arm(websocket=420_000, images=8_950_000, responses=100),
            },
            "grid_bytes": 1_990_000,
            "not_measured": "",
        },
        "drawn": {
            "endpoint": "genW2.5-t2i-preview",
            "grid_side": 3,
            "singles": 4,
            "single_waits_s": [0.14, 0.18, 0.21, 0.36],
            "single": {"p50": 0.195, "p95": 0.337, "max": 0.36},
            "single_kernel": {"p50": 0.12, "p95": 0.25, "max": 0.26},
            "single_page": {"p50": 0.07, "p95": 0.09, "max": 0.1},
            "timer_lag_ms": {"p95": 12.0, "max": 40.0},
            "cpu_share": {"kernel": 0.31, "simulator": 0.3, "jupyterlab": 0.02},
            "grid_tasks": 9,
            "grid_cells_drawn": 9,
            "grid_wait_s": 0.56,
            "seconds": 33.4,
            "drawn_p95_s": 0.337,
            "grid_drawn_s": 0.56,
            "not_measured": "",
        },
        "teaching_weight": {
            "notebooks": {
                "00_quickstart": _lesson(400_000),
                "07_prompt_tuning": _lesson(1_400_000),
            },
            "heaviest": "07_prompt_tuning",
            "teaching_nb_max_bytes": 1_400_000,
        },
    }
