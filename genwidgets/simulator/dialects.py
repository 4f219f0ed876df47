"""The simulator's dialects: how it fills what the spec leaves open.

A client tested against one choice breaks on the first gateway that chose otherwise, so
the simulator speaks ``spec`` (default), ``fal`` and ``replicate``: chosen with
``genwidgets simulate --dialect NAME``, ``SimConfig(dialect=NAME)`` or
``GENWIDGETS_SIM_DIALECT``. :data:`DIALECTS` holds every switch, one row per dialect;
docs/decisions.md#sim-dialects shows them side by side.
"""

from __future__ import annotations

import email.utils
import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import partial
from typing import Any

from .tasks import IN_PROGRESS, IN_QUEUE, Task

ENV_VAR = "GENWIDGETS_SIM_DIALECT"
DEFAULT = "spec"

Answer = tuple[int, Any]  # status code, JSON body (None: empty)


def state_of(task: Task) -> str:
    """``queued``, ``running``, ``done``, ``failed`` or ``cancelled``."""
    if task.status in _LIVE:
        return _LIVE[task.status]
    if task.error_type == "cancelled":
        return "cancelled"
    return "failed" if task.error else "done"


_LIVE = {IN_QUEUE: "queued", IN_PROGRESS: "running"}

# ----------------------------------------------------------------- log lines


def log_lines(task: Task, now: float | None = None) -> list[tuple[float, str]]:
    """What a running model would have printed by ``now``: (time, message)."""
    if task.started_at is None:
        return []
    now = time.time() if now is None else now
    end = task.completed_at if task.completed_at is not None else now
    lines = [(task.started_at, f"loading {task.endpoint}")]
    run = task.run_seconds or 0.0
    for step in range(1, 5):
        at = task.started_at + run * step / 4
        if at <= end:
            lines.append((at, f"step {step}/4"))
    if task.completed_at is not None:
        lines.append((task.completed_at, task.error or "done"))
    return lines


def _iso(stamp: float) -> str:
    return datetime.fromtimestamp(stamp, timezone.utc).isoformat().replace("+00:00", "Z")


def _fal_logs(task: Task) -> dict[str, Any]:
    return {
        "logs": [
            {"message": text, "level": "INFO", "source": "user", "timestamp": _iso(at)}
            for at, text in log_lines(task)
        ]
    }


def _replicate_logs(task: Task) -> dict[str, Any]:
    return {"logs": "".join(f"{text}\n" for _, text in log_lines(task))}


def _no_fields(task: Task) -> dict[str, Any]:
    return {}


def _run_time(name: str, task: Task) -> dict[str, Any]:
    """``metrics`` with the run's seconds under ``name``, once the task ended."""
    if task.started_at is None or task.completed_at is None:
        return {}
    return {"metrics": {name: round(task.completed_at - task.started_at, 3)}}


# ----------------------------------------------------------------- errors


def _string_errors(task: Task) -> dict[str, Any]:
    return {"error": task.error, "error_type": task.error_type}


def _object_errors(task: Task) -> dict[str, Any]:
    if not task.error:
        return {"error": None, "error_type": None}
    code = (task.error_type or "error").upper()
    return {
        "error": {"code": code, "message": task.error},
        "error_type": {"type": task.error_type, "retryable": task.error_type != "cancelled"},
    }


def _error_only(task: Task) -> dict[str, Any]:
    return {"error": task.error}


# ----------------------------------------------------------------- outputs

_FAL_KEYS = {"image": "images", "video": "video", "audio": "audio"}
_FAL_SINGLE = {"video": "video", "audio": "audio"}


def _spec_outputs(entries: list[dict[str, Any]], task: Task) -> dict[str, Any]:
    return {"outputs": entries}


def _fal_outputs(entries: list[dict[str, Any]], task: Task) -> dict[str, Any]:
    """fal's model shape: ``images`` (list), ``video``/``audio`` (one object, a list
    under the plural when several), ``files`` for the rest; plus the ``seed``."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for entry in entries:
        major = str(entry.get("content_type", "")).split("/")[0]
        key = _FAL_KEYS.get(major, "files") if "url" in entry else "files"
        groups.setdefault(key, []).append(entry)
    body: dict[str, Any] = {"seed": task.seed}
    for key, group in groups.items():
        if key in _FAL_SINGLE and len(group) == 1:
            body[key] = group[0]
        else:
            body[{"video": "videos", "audio": "audio"}.get(key, key)] = group
    return body


def _replicate_outputs(entries: list[dict[str, Any]], task: Task) -> dict[str, Any]:
    """Replicate's ``output``: bare URLs (their type is the file's ``Content-Type``)."""
    return {"output": [entry.get("url") or entry for entry in entries]}


# ----------------------------------------------------------------- the table


#: The spec's words (fal's are the same): every end is ``COMPLETED``, ``error`` tells.
QUEUE_WORDS: Mapping[str, str] = {
    "queued": "IN_QUEUE",
    "running": "IN_PROGRESS",
    "done": "COMPLETED",
    "failed": "COMPLETED",
    "cancelled": "COMPLETED",
}


@dataclass(frozen=True)
class Dialect:
    """How one gateway words the queue. Each field is one switch of the module table;
    a switch a row leaves out is the spec's choice."""

    name: str
    #: the answer of a cancel when the task had already ended: code and body
    cancel_finished: tuple[int, Mapping[str, Any]]
    #: state (:func:`state_of`) -> the status word sent
    words: Mapping[str, str] = field(default_factory=lambda: QUEUE_WORDS)
    #: added to the 0-based place in the queue; None: no ``queue_position``
    position_base: int | None = 1
    #: the handle: "full" (request_id + three URLs + position) or "urls" (Replicate)
    handle: str = "full"
    logs: Callable[[Task], dict[str, Any]] = _no_fields
    metrics: Callable[[Task], dict[str, Any]] = _no_fields
    errors: Callable[[Task], dict[str, Any]] = _string_errors
    outputs: Callable[[list[dict[str, Any]], Task], dict[str, Any]] = _spec_outputs
    #: the result address while the task runs: code, and whether the status body comes
    not_ready: tuple[int, str | None] = (202, "status")
    cancel_live_code: int = 200
    #: status code of a rate-limit answer, and whether Retry-After is an HTTP date
    rate_limit: tuple[int, bool] = (429, False)


DIALECTS: Mapping[str, Dialect] = {
    "spec": Dialect(name="spec", cancel_finished=(400, {"detail": "Task already completed"})),
    "fal": Dialect(
        name="fal",
        position_base=0,
        logs=_fal_logs,
        metrics=partial(_run_time, "inference_time"),
        errors=_object_errors,
        outputs=_fal_outputs,
        not_ready=(400, "Request is still in progress"),
        cancel_live_code=202,
        cancel_finished=(400, {"detail": "Task already completed", "code": "ALREADY_COMPLETED"}),
    ),
    "replicate": Dialect(
        name="replicate",
        words={
            "queued": "starting",
            "running": "processing",
            "done": "succeeded",
            "failed": "failed",
            "cancelled": "canceled",
        },
        position_base=None,
        handle="urls",
        logs=_replicate_logs,
        metrics=partial(_run_time, "predict_time"),
        errors=_error_only,
        outputs=_replicate_outputs,
        not_ready=(202, None),
        cancel_live_code=200,
        cancel_finished=(409, {"detail": "Prediction has already finished"}),
        rate_limit=(503, True),
    ),
}


def check_dialect(value: Any) -> str:
    if not isinstance(value, str) or value.strip().lower() not in DIALECTS:
        raise ValueError(f"dialect must be one of {', '.join(DIALECTS)}, got {value!r}")
    return value.strip().lower()


def dialect_from_env() -> str:
    """The dialect named by ``GENWIDGETS_SIM_DIALECT`` (``spec`` when unset)."""
    return os.environ.get(ENV_VAR, "").strip() or DEFAULT


# ----------------------------------------------------------------- the bodies


def status_body(d: Dialect, task: Task, place: int | None) -> dict[str, Any]:
    """The status answer; ``place`` is the 0-based place in the queue (None: not queued)."""
    state = state_of(task)
    body: dict[str, Any] = {"request_id": task.request_id, "status": d.words[state]}
    if state == "queued" and d.position_base is not None and place is not None:
        body["queue_position"] = place + d.position_base
    body |= d.errors(task) | d.logs(task)
    if task.completed_at is not None:
        body |= d.metrics(task)
    return body


def result_body(d: Dialect, task: Task, entries: list[dict[str, Any]]) -> dict[str, Any]:
    body: dict[str, Any] = {"request_id": task.request_id, "status": d.words[state_of(task)]}
    body |= d.errors(task) | d.metrics(task) | d.outputs(entries, task)
    if d.handle == "urls":
        body |= d.logs(task)
    return body


def handle_body(d: Dialect, task: Task, prefix: str, place: int | None) -> dict[str, Any]:
    if d.handle == "urls":
        return {
            "request_id": task.request_id,
            "status": d.words[state_of(task)],
            "urls": {"get": f"{prefix}/response", "cancel": f"{prefix}/cancel"},
        }
    urls = {f"{tail}_url": f"{prefix}/{tail}" for tail in ("response", "status", "cancel")}
    body: dict[str, Any] = {"request_id": task.request_id, **urls}
    if d.position_base is not None:  # a task that started at once has position 0
        body["queue_position"] = 0 if place is None else place + d.position_base
    return body


def not_ready(d: Dialect, task: Task, place: int | None) -> Answer:
    code, says = d.not_ready
    if says == "status":
        return code, status_body(d, task, place)
    return code, None if says is None else {"detail": says}


def cancelled(d: Dialect, task: Task) -> Answer:
    if d.handle == "urls":
        return d.cancel_live_code, status_body(d, task, None)
    return d.cancel_live_code, {"request_id": task.request_id, "status": "CANCELLATION_REQUESTED"}


def retry_after_header(
    d: Dialect, wait: float, now: float | None = None, *, exact: bool = False
) -> dict[str, str]:
    """``Retry-After`` in whole seconds (at least 1), or as an HTTP date no earlier than
    that from now; ``exact`` adds ``retry-after-ms``, the wait to the millisecond (the
    create limit says it: docs/decisions.md#sim-http)."""
    seconds = max(1, math.ceil(wait))
    if not d.rate_limit[1]:
        headers = {"Retry-After": str(seconds)}
        if exact:
            headers["retry-after-ms"] = str(max(1, math.ceil(wait * 1000)))
        return headers
    when = math.ceil(time.time() if now is None else now) + seconds
    return {"Retry-After": email.utils.formatdate(when, usegmt=True)}
