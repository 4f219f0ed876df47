"""The board of a session's jobs, and prompt-tuning sweeps.

``gw.board(client)`` shows every job of the session as a card: a thumbnail (the
first image output, else an icon of the kind), the endpoint, the coloured
status, the elapsed time and *only the parameters that differ* between the
jobs shown, with filters by endpoint and status. Cards update live through
``job.add_update_callback`` with the task view's throttle (one writer per
card, at most ~10 writes a second); the board looks for new jobs of the client
on the shared one-second tick until it is closed (``board.close()``). When the
client offers ``history()`` (the ledger's past jobs, re-attached as Jobs), the
newest :data:`HISTORY_LIMIT` appear too; the ledger is read when the board is
made and on Refresh, not on every tick. Plain records (mappings or objects with
endpoint, request_id, status, ...) are shown as static cards. With no client
given, the board uses ``genwidgets._client.latest_client()`` when the client
module offers it, else a new ``Client()``.

``gw.sweep(endpoint, base_payload, vary=...)`` submits the cartesian product of
the varied values. Before anything is sent it validates every payload (all
problems reported together), and shows how many tasks it makes and what they
bill. Choices where the issue is silent:

- **Billed jobs.** For imgM endpoints, a prompt with permutations ``{a, b}``
  and ``--repeat`` is one task that bills several generations (spec: "each
  generated prompt is billed separately"); the sweep sends the prompt as it is
  and counts ``Prompt.jobs()`` generations for it. ``max_jobs`` and
  ``confirm_above`` compare against the *billed* count, the one that costs money.
- **Confirmation.** Above ``confirm_above`` nothing is sent until the "Submit N
  tasks" button is clicked, ``sweep.submit()`` is called, or ``confirm=True``
  was passed. Outside Jupyter the same rule holds (a line says how to confirm).
- **Return value.** A :class:`Sweep`: a ``list`` of the created Jobs in
  combination order (filled once every create has answered), with
  ``.widget`` (the displayed :class:`SweepView`), ``.labels``, ``.payloads``,
  ``.errors`` (index → exception of a create that failed; that cell shows it)
  and ``.wait_submitted()``. ``sweep()`` displays its widget itself (in a
  kernel), so ``jobs = gw.sweep(...)`` still shows the confirmation button.
- **Concurrency.** At most ``concurrency`` creates are in flight, from a small
  thread pool; polling is the engine's business afterwards.
"""

from __future__ import annotations

import functools
import itertools
import json
import logging
import math
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import ipywidgets

from ..errors import PayloadError
from ..protocol.records import Output, Result, Status, is_terminal
from ._style import (
    COLOURS,
    KIND_ICONS,
    SIMULATED_BADGE,
    StatusLook,
    error_html,
    esc,
    format_elapsed,
    look_of,
    short,
    status_badge,
)
from .render import source_of, to_html
from .task import TICKER, Throttle, _guarded, in_kernel, job_look, stop_following

if TYPE_CHECKING:
    from ..jobs.job import Job

log = logging.getLogger(__name__)

__all__ = [
    "Board",
    "JobCard",
    "Sweep",
    "SweepView",
    "board",
    "differing_params",
    "prompt_jobs",
    "sweep",
]

ALL = "(all)"
STATUS_FILTERS = ("queued", "running", "done", "failed")
#: A thumbnail pushed as bytes must stay small: a board may hold hundreds.
THUMBNAIL_BYTES = 2 * 1024 * 1024
PROMPT_FIELD_NAMES = ("remixPrompt", "remix_prompt", "prompt")
#: Ledger entries a board loads (newest first).
HISTORY_LIMIT = 200

_MISSING = object()


# --- parameters that differ ------------------------------------------------------


def _canonical(value: Any) -> str:
    if value is _MISSING:
        return "\x00missing"
    try:
        return json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return repr(value)


def differing_params(payloads: Iterable[Mapping[str, Any] | None]) -> list[str]:
    """Top-level payload keys whose values are not the same in every payload
    (a key missing from some payloads differs), in first-seen order."""
    items = [p or {} for p in payloads]
    keys: dict[str, None] = {}
    for p in items:
        keys.update(dict.fromkeys(p))
    return [key for key in keys if len({_canonical(p.get(key, _MISSING)) for p in items}) > 1]


# --- cards -----------------------------------------------------------------------


def _thumbnail(outputs: Sequence[Output], kind_hint: str | None) -> str:
    for output in outputs:
        if output.kind != "image":
            continue
        source = source_of(output, prefer_url=True)
        href = source.href
        if href is None or (source.data is not None and len(source.data) > THUMBNAIL_BYTES):
            continue
        return (
            f'<img src="{esc(href)}" alt="" loading="lazy" '
            'style="max-width:100%;max-height:120px;object-fit:contain">'
        )
    kind = outputs[0].kind if outputs else (kind_hint or "binary")
    return f'<span style="font-size:40px">{KIND_ICONS.get(kind, KIND_ICONS["binary"])}</span>'


@functools.lru_cache(maxsize=256)
def _endpoint_kind(endpoint: str) -> str | None:
    try:
        from ..catalog import endpoint as catalog_endpoint

        return catalog_endpoint(endpoint).kind
    except Exception:  # unknown endpoint: no icon hint
        return None


@dataclass(frozen=True)
class CardData:
    """What a card shows, from a live Job or a history record."""

    endpoint: str
    request_id: str
    look: StatusLook
    elapsed: float | None
    payload: Mapping[str, Any] | None
    outputs: Sequence[Output] = ()
    simulated: bool = False

    @classmethod
    def of_job(cls, job: Job) -> CardData:
        result = job.last_result
        return cls(
            endpoint=str(job.endpoint),
            request_id=str(job.request_id),
            look=job_look(job),
            elapsed=job.elapsed,
            payload=job.payload,
            outputs=tuple(result.outputs) if result is not None else (),
            simulated=bool(getattr(job.client, "embedded", False)),
        )


def card_html(
    data: CardData,
    params: Sequence[str] = (),
    *,
    label: str = "",
    outputs: bool = False,
) -> str:
    """A card as escaped HTML: thumbnail (or all outputs), endpoint, status,
    elapsed, the listed parameters, the error, the request_id."""
    look = data.look
    if outputs and data.outputs:
        cells = "".join(to_html(o, caption=False, prefer_url=True) for o in data.outputs)
        media = (
            '<div style="display:grid;grid-template-columns:repeat(auto-fill,minmax(110px,1fr));'
            f'gap:4px">{cells}</div>'
        )
    else:
        media = (
            '<div class="gw-thumb" style="height:120px;display:flex;align-items:center;'
            f'justify-content:center;background:#f9fafb">'
            f"{_thumbnail(data.outputs, _endpoint_kind(data.endpoint))}</div>"
        )
    payload = data.payload or {}
    rows = "".join(
        f'<div class="gw-param"><span style="color:#6b7280">{esc(key)}</span> = '
        f"{esc(short(payload[key], 60)) if key in payload else '<i>unset</i>'}</div>"
        for key in params
    )
    head = f'<div class="gw-label" style="font-weight:600">{esc(label)}</div>' if label else ""
    elapsed = format_elapsed(data.elapsed)
    return (
        f'<div class="gw-card" style="border:1px solid #e5e7eb;border-left:4px solid '
        f'{look.colour};border-radius:6px;padding:6px;font-size:0.9em">'
        f"{head}{media}"
        f'<div class="gw-endpoint"><b>{esc(data.endpoint)}</b>'
        f"{' ' + SIMULATED_BADGE if data.simulated else ''}</div>"
        f"<div>{status_badge(look)} · {esc(elapsed)}</div>"
        f"{rows}{error_html(look)}"
        f'<code style="user-select:all;font-size:0.8em;color:#6b7280">'
        f"{esc(data.request_id)}</code></div>"
    )


class JobCard(ipywidgets.HTML):
    """One job as a live card (an HTML widget written by one throttled writer)."""

    def __init__(
        self,
        job: Job,
        *,
        params: Sequence[str] = (),
        label: str = "",
        outputs: bool = False,
        on_change: Callable[[JobCard], None] | None = None,
    ) -> None:
        super().__init__(layout=ipywidgets.Layout(width="100%"))
        self.job = job
        self._params = tuple(params)
        self._label = label
        self._outputs = outputs
        self._on_change = on_change
        self._throttle = Throttle(self._write)
        self._removers: list[Callable[[], Any]] = []
        self.category = job_look(job).category
        self._changed = False
        self._throttle.request(force=True)
        if job_look(job).terminal:
            return
        self._removers.append(job.add_update_callback(self._on_update))
        job.add_done_callback(self._on_done)
        TICKER.add(self)

    @property
    def writes(self) -> int:
        return self._throttle.writes

    def set_params(self, params: Sequence[str]) -> None:
        with self._throttle.lock:
            self._params = tuple(params)
        self._throttle.request(force=True)

    def tick(self) -> None:
        self._throttle.request()
        self._report_change()

    def _on_update(self, job: Job) -> None:
        _guarded(lambda: self._throttle.request(force=job_look(job).terminal))
        self._report_change()

    def _on_done(self, job: Job) -> None:
        _guarded(lambda: self._throttle.request(force=True))
        self._report_change()
        self._stop()

    def _report_change(self) -> None:
        """Tell the board the category changed, *outside* this card's lock: the
        board holds its own lock while it writes cards, so calling it from
        inside ``_write`` would take the two locks in opposite orders."""
        with self._throttle.lock:
            changed, self._changed = self._changed, False
        if changed and self._on_change is not None:
            _guarded(lambda: self._on_change(self) if self._on_change else None)

    def _stop(self) -> None:
        stop_following(self, self._removers)

    def close(self) -> None:
        self._stop()
        super().close()

    def _write(self) -> None:
        data = CardData.of_job(self.job)
        previous, self.category = self.category, data.look.category
        self._changed = self._changed or previous != self.category
        self.value = card_html(data, self._params, label=self._label, outputs=self._outputs)


# --- history (the ledger's, when the client offers it) --------------------------------


def _field(record: Any, name: str, default: Any = None) -> Any:
    if isinstance(record, Mapping):
        return record.get(name, default)
    return getattr(record, name, default)


def history_card(record: Any) -> CardData | None:
    """A card from a ledger record (a mapping or an object with endpoint,
    request_id, status, error, error_type, payload, outputs, submitted_at,
    finished_at); ``None`` if it lacks an endpoint or request_id."""
    endpoint, request_id = _field(record, "endpoint"), _field(record, "request_id")
    if not endpoint or not request_id:
        return None
    status = str(_field(record, "status") or "UNKNOWN")
    raw_outputs = _field(record, "outputs") or []
    outputs = [
        o if isinstance(o, Output) else Output.from_entry(o, i)
        for i, o in enumerate(raw_outputs if isinstance(raw_outputs, list) else [])
    ]
    result = None
    if is_terminal(status):
        result = Result(
            status=status,
            error=_field(record, "error"),
            error_type=_field(record, "error_type"),
            outputs=outputs,
        )
    start, end = _field(record, "submitted_at"), _field(record, "finished_at")
    elapsed = (
        end - start if isinstance(start, (int, float)) and isinstance(end, (int, float)) else None
    )
    payload = _field(record, "payload")
    return CardData(
        endpoint=str(endpoint),
        request_id=str(request_id),
        look=look_of(Status(status=status), result),
        elapsed=elapsed,
        payload=payload if isinstance(payload, Mapping) else None,
        outputs=outputs,
    )


# --- the board ---------------------------------------------------------------------


def _default_client() -> Any:
    """The most recent Client of the process (if the client module tracks one), else a new one."""
    from .. import _client

    latest = getattr(_client, "latest_client", None)
    if callable(latest):
        found = latest()
        if found is not None:
            return found
    return _client.Client()


GRID_LAYOUT = {"grid_template_columns": "repeat(auto-fill, minmax(220px, 1fr))", "grid_gap": "8px"}


class Board(ipywidgets.VBox):
    """Every job of a client's session as cards, filterable by endpoint and status."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self._lock = threading.RLock()
        self.cards: dict[str, JobCard] = {}
        self.history_cards: dict[str, tuple[CardData, ipywidgets.HTML]] = {}
        self.endpoint_filter = ipywidgets.Dropdown(
            options=[ALL], value=ALL, description="endpoint", layout={"width": "auto"}
        )
        self.status_filter = ipywidgets.Dropdown(
            options=[ALL, *STATUS_FILTERS],
            value=ALL,
            description="status",
            layout={"width": "auto"},
        )
        self.count_html = ipywidgets.HTML()
        self.refresh_button = ipywidgets.Button(
            description="Refresh", icon="refresh", layout={"width": "auto"}
        )
        self.grid = ipywidgets.GridBox(layout=ipywidgets.Layout(**GRID_LAYOUT))
        self._throttle = Throttle(self._write)
        controls = ipywidgets.HBox(
            [self.endpoint_filter, self.status_filter, self.refresh_button, self.count_html],
            layout={"align_items": "center", "grid_gap": "8px"},
        )
        badge = ipywidgets.HTML(SIMULATED_BADGE if getattr(client, "embedded", False) else "")
        super().__init__([ipywidgets.HBox([controls, badge]), self.grid])
        self.add_class("gw-board")
        self.endpoint_filter.observe(lambda _c: self._throttle.request(force=True), "value")
        self.status_filter.observe(lambda _c: self._throttle.request(force=True), "value")
        self.refresh_button.on_click(lambda _b: self.refresh())
        self.refresh()
        TICKER.add(self)

    def _jobs(self) -> list[Job]:
        return list(getattr(self.client, "jobs", []) or [])

    def refresh(self, *, history: bool = True) -> None:
        """Pick up new jobs (and, with ``history``, the ledger's), then redraw."""
        with self._lock:
            for job in self._jobs():
                self._add_job(job)
            if history:
                self._load_history()
        self._throttle.request(force=True)

    def _add_job(self, job: Job) -> None:
        key = str(job.request_id)
        if key in self.cards:
            return
        self.history_cards.pop(key, None)
        self.cards[key] = JobCard(job, on_change=self._on_card_change)

    def _load_history(self) -> None:
        """``client.history()`` when the client has one: re-attached Jobs become
        job cards, plain records (mappings/objects) static cards."""
        history = getattr(self.client, "history", None)
        if not callable(history):
            return
        try:
            try:
                records = list(history(limit=HISTORY_LIMIT))
            except TypeError:
                records = list(history())
        except Exception:  # the ledger is optional: a broken one hides nothing else
            log.warning("genwidgets: the board could not read the history", exc_info=True)
            return
        for record in records:
            if callable(getattr(record, "add_update_callback", None)):
                self._add_job(record)
                continue
            data = history_card(record)
            if data is None or data.request_id in self.cards:
                continue
            if data.request_id not in self.history_cards:
                self.history_cards[data.request_id] = (
                    data,
                    ipywidgets.HTML(layout=ipywidgets.Layout(width="100%")),
                )

    def tick(self) -> None:
        """The shared ticker's call: look for jobs submitted since the last look."""
        known = set(self.cards)
        if any(str(j.request_id) not in known for j in self._jobs()):
            self.refresh(history=False)

    def _on_card_change(self, _card: JobCard) -> None:
        # A card changed category: the status filter may now hide or show it.
        if self.status_filter.value != ALL:
            self._throttle.request()

    def shown(self) -> list[CardData]:
        """The cards that pass the filters, newest first."""
        with self._lock:
            entries = [CardData.of_job(card.job) for card in self.cards.values()]
            entries += [data for data, _ in self.history_cards.values()]
        return [d for d in entries if self._passes(d)]

    def _passes(self, data: CardData) -> bool:
        endpoint, status = self.endpoint_filter.value, self.status_filter.value
        return (endpoint == ALL or data.endpoint == endpoint) and (
            status == ALL or data.look.category == status
        )

    def close(self) -> None:
        TICKER.remove(self)
        for card in self.cards.values():
            card.close()
        super().close()

    def _write(self) -> None:
        with self._lock:
            endpoints = sorted(
                {str(c.job.endpoint) for c in self.cards.values()}
                | {d.endpoint for d, _ in self.history_cards.values()}
            )
            options = [ALL, *endpoints]
            if list(self.endpoint_filter.options) != options:
                current = self.endpoint_filter.value
                self.endpoint_filter.options = options
                self.endpoint_filter.value = current if current in options else ALL
            live = [c for c in self.cards.values() if self._passes(CardData.of_job(c.job))]
            past = [(d, w) for d, w in self.history_cards.values() if self._passes(d)]
            params = differing_params([c.job.payload for c in live] + [d.payload for d, _ in past])
            live.sort(key=lambda c: c.job.submitted_at, reverse=True)
            for card in live:
                card.set_params(params)
            for data, widget in past:
                widget.value = card_html(data, params)
            self.grid.children = [*live, *(w for _, w in past)]
            total = len(self.cards) + len(self.history_cards)
            self.count_html.value = (
                f'<span style="color:#6b7280">{len(live) + len(past)} of {total} jobs</span>'
            )


def board(client: Any = None) -> Board:
    """A board of every job of ``client``'s session (default: the most recent
    client of the process, or a new one)."""
    return Board(client if client is not None else _default_client())


# --- sweeps ------------------------------------------------------------------------


def prompt_jobs(text: str) -> int:
    """How many generations an imgM prompt bills: its permutations, each times
    its ``--repeat`` (:meth:`genwidgets.imgm.prompt.Prompt.jobs`). A prompt that
    cannot be parsed raises :class:`PayloadError`."""
    from ..imgm.prompt import Prompt

    return Prompt.parse(text).jobs()


def _prompt_fields(spec: Any) -> list[str]:
    if not str(spec.family).lower().startswith("imgm") and not spec.id.lower().startswith("imgm"):
        return []
    from ..catalog import is_prompt_string

    fields = spec.model.model_fields
    marked = [(info.alias or name) for name, info in fields.items() if is_prompt_string(info)]
    named = [
        n for n in PROMPT_FIELD_NAMES if n in fields or any(f.alias == n for f in fields.values())
    ]
    return list(dict.fromkeys(marked + named))


def _label(values: Mapping[str, Any]) -> str:
    return " · ".join(f"{k}={short(v, 40)}" for k, v in values.items())


@dataclass(frozen=True)
class SweepPlan:
    """What a sweep will send, worked out before anything is sent."""

    endpoint: str
    payloads: list[dict[str, Any]]
    labels: list[dict[str, Any]]
    billed: list[int]
    billing: dict[str, list[Any]]

    @property
    def tasks(self) -> int:
        return len(self.payloads)

    @property
    def billed_total(self) -> int:
        return sum(self.billed)

    def summary(self) -> str:
        """One plain-text line: tasks, billed generations, billing-field values."""
        text = f"{self.endpoint}: {self.tasks} task{'s' if self.tasks != 1 else ''}"
        if self.billed_total != self.tasks:
            text += f", billed as {self.billed_total} generations (prompt permutations/--repeat)"
        if self.billing:
            parts = [
                f"{name} = {', '.join(short(v, 30) for v in values)}"
                for name, values in self.billing.items()
            ]
            text += "; billing fields: " + "; ".join(parts)
        return text


def plan_sweep(
    endpoint: str,
    base_payload: Mapping[str, Any],
    vary: Mapping[str, Sequence[Any]],
    *,
    max_jobs: int = 50,
) -> SweepPlan:
    """Expand, count and validate a sweep; raise :class:`PayloadError` (nothing
    sent) listing every problem."""
    from ..catalog import endpoint as catalog_endpoint
    from ..catalog import validate

    spec = catalog_endpoint(endpoint)
    if not isinstance(base_payload, Mapping):
        raise PayloadError("base_payload must be a dict of fields", endpoint=endpoint)
    if not isinstance(vary, Mapping) or not vary:
        raise PayloadError(
            "vary must be a non-empty dict: field name -> list of values", endpoint=endpoint
        )
    problems = [
        {"loc": ("vary", key), "msg": "give a non-empty list of values to try"}
        for key, values in vary.items()
        if isinstance(values, (str, bytes, Mapping))
        or not isinstance(values, Iterable)
        or not list(values)
    ]
    if problems:
        raise PayloadError(problems, endpoint=endpoint)
    keys = list(vary)
    choices = [list(vary[k]) for k in keys]
    tasks = math.prod(len(c) for c in choices)
    if tasks > max_jobs:
        raise PayloadError(
            f"this sweep makes {tasks} tasks ({' × '.join(str(len(c)) for c in choices)}); "
            f"the limit is max_jobs={max_jobs}: vary fewer values or raise max_jobs",
            endpoint=endpoint,
        )
    prompt_fields = _prompt_fields(spec)
    payloads, labels, billed, errors = [], [], [], []
    for combo in itertools.product(*choices):
        values = dict(zip(keys, combo, strict=True))
        payload = {**base_payload, **values}
        where = _label(values)
        count = 1
        for name in prompt_fields:
            text = payload.get(name)
            if isinstance(text, str):
                try:
                    count *= max(1, prompt_jobs(text))
                except PayloadError as exc:
                    errors += [{"loc": (where, *e["loc"]), "msg": e["msg"]} for e in exc.errors]
        try:
            validate(endpoint, payload)
        except PayloadError as exc:
            errors += [{"loc": (where, *e["loc"]), "msg": e["msg"]} for e in exc.errors]
        payloads.append(payload)
        labels.append(values)
        billed.append(count)
    if errors:
        raise PayloadError(errors, endpoint=endpoint)
    if sum(billed) > max_jobs:
        raise PayloadError(
            f"this sweep makes {tasks} tasks billed as {sum(billed)} generations (prompt "
            f"permutations/--repeat); the limit is max_jobs={max_jobs}: vary fewer values "
            "or raise max_jobs",
            endpoint=endpoint,
        )
    billing: dict[str, list[Any]] = {}
    for name in spec.billing_fields:
        seen: dict[str, Any] = {}
        for payload in payloads:
            value = payload.get(name, "default")
            seen.setdefault(_canonical(value), value)
        billing[name] = list(seen.values())
    return SweepPlan(endpoint, payloads, labels, billed, billing)


class SweepCell(ipywidgets.VBox):
    """One combination of a sweep: its label, then its job's card (or its error)."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.body = ipywidgets.HTML(
            f'<div class="gw-label" style="font-weight:600">{esc(label)}</div>'
            '<div style="color:#6b7280">not sent</div>'
        )
        self.card: JobCard | None = None
        super().__init__([self.body], layout=ipywidgets.Layout(border="1px solid #e5e7eb"))

    def attach(self, job: Job) -> None:
        self.card = JobCard(job, label=self.label, outputs=True)
        self.children = [self.card]

    def fail(self, exc: BaseException) -> None:
        self.body.value = (
            f'<div class="gw-label" style="font-weight:600">{esc(self.label)}</div>'
            f'<div class="gw-error" style="color:{COLOURS["failed"]}">not created: '
            f"{esc(type(exc).__name__)}: {esc(exc)}</div>"
        )


class SweepView(ipywidgets.VBox):
    """The sweep's widget: what it sends and bills, the Submit button when a
    confirmation is needed, then a grid of cells labelled by the varied values."""

    def __init__(self, plan: SweepPlan, *, needs_confirmation: bool, simulated: bool) -> None:
        self.summary_html = ipywidgets.HTML(
            f'<div class="gw-sweep-summary">{esc(plan.summary())}'
            f"{' ' + SIMULATED_BADGE if simulated else ''}</div>"
        )
        self.submit_button = ipywidgets.Button(
            description=f"Submit {plan.tasks} task{'s' if plan.tasks != 1 else ''}",
            button_style="warning",
            tooltip="nothing is sent until you click",
            layout={"width": "auto", "display": "" if needs_confirmation else "none"},
            disabled=not needs_confirmation,
        )
        self.progress_html = ipywidgets.HTML(
            '<span style="color:#6b7280">waiting for confirmation: nothing sent yet</span>'
            if needs_confirmation
            else ""
        )
        self.cells = [SweepCell(_label(values)) for values in plan.labels]
        self.grid = ipywidgets.GridBox(self.cells, layout=ipywidgets.Layout(**GRID_LAYOUT))
        super().__init__(
            [
                self.summary_html,
                ipywidgets.HBox([self.submit_button, self.progress_html]),
                self.grid,
            ]
        )
        self.add_class("gw-sweep")


class Sweep(list["Job"]):
    """The Jobs of a sweep, in combination order (see the module docstring)."""

    def __init__(
        self,
        plan: SweepPlan,
        client: Any,
        *,
        concurrency: int,
        needs_confirmation: bool,
    ) -> None:
        super().__init__()
        self.plan = plan
        self.endpoint = plan.endpoint
        self.payloads = plan.payloads
        self.labels = plan.labels
        self.client = client
        self.concurrency = concurrency
        self.errors: dict[int, BaseException] = {}
        self.jobs_by_index: dict[int, Job] = {}
        self._lock = threading.Lock()
        self._started = False
        self._submitted = threading.Event()
        self.widget = SweepView(
            plan,
            needs_confirmation=needs_confirmation,
            simulated=bool(getattr(client, "embedded", False)),
        )
        self.widget.submit_button.on_click(lambda _b: self.submit(wait=False))

    @property
    def submitted(self) -> bool:
        """True once every create has answered (or failed)."""
        return self._submitted.is_set()

    def wait_submitted(self, timeout: float | None = None) -> bool:
        return self._submitted.wait(timeout)

    def submit(self, *, wait: bool = True) -> Sweep:
        """Send the tasks (the button's action); a second call does nothing."""
        with self._lock:
            if self._started:
                return self
            self._started = True
        button = self.widget.submit_button
        button.disabled = True
        button.description = "submitting"
        if wait:
            self._run()
        else:
            threading.Thread(target=self._run, name="genwidgets-sweep", daemon=True).start()
        return self

    def _create(self, index: int) -> None:
        cell = self.widget.cells[index]
        try:
            job = self.client.submit(self.endpoint, self.payloads[index], validate=False)
        except Exception as exc:  # one failed create must not hide the others
            with self._lock:
                self.errors[index] = exc
            cell.fail(exc)
        else:
            with self._lock:
                self.jobs_by_index[index] = job
            cell.attach(job)
        self._progress()

    def _progress(self) -> None:
        with self._lock:
            done, failed = len(self.jobs_by_index), len(self.errors)
        total = self.plan.tasks
        text = f"created {done} of {total}"
        if failed:
            text += f", {failed} failed"
        self.widget.progress_html.value = f"<span>{esc(text)}</span>"

    def _run(self) -> None:
        try:
            self._progress()
            with ThreadPoolExecutor(
                max_workers=self.concurrency, thread_name_prefix="genwidgets-sweep"
            ) as pool:
                list(pool.map(self._create, range(self.plan.tasks)))
            with self._lock:
                self.extend(self.jobs_by_index[i] for i in sorted(self.jobs_by_index))
            self.widget.submit_button.description = "submitted"
        finally:
            self._submitted.set()

    def __repr__(self) -> str:
        state = f"{len(self)} submitted" if self.submitted else "not sent"
        if self.errors:
            state += f", {len(self.errors)} failed"
        return f"<Sweep {self.endpoint}: {self.plan.tasks} tasks, {state}>"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


def sweep(
    endpoint: str,
    base_payload: Mapping[str, Any],
    vary: Mapping[str, Sequence[Any]],
    *,
    client: Any = None,
    max_jobs: int = 50,
    concurrency: int = 4,
    confirm_above: int = 10,
    confirm: bool = False,
) -> Sweep:
    """Submit every combination of ``vary`` over ``base_payload``; see the module
    docstring for counting, confirmation and the return value."""
    if not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be a positive integer, not {concurrency!r}")
    if not isinstance(max_jobs, int) or max_jobs < 1:
        raise ValueError(f"max_jobs must be a positive integer, not {max_jobs!r}")
    plan = plan_sweep(endpoint, base_payload, vary, max_jobs=max_jobs)
    needs_confirmation = plan.billed_total > confirm_above and not confirm
    result = Sweep(
        plan,
        client if client is not None else _default_client(),
        concurrency=concurrency,
        needs_confirmation=needs_confirmation,
    )
    if in_kernel():
        from IPython import display as ipd

        ipd.display(result.widget)
    else:
        line = plan.summary()
        if needs_confirmation:
            line += (
                f" - above confirm_above={confirm_above}: nothing sent; "
                "call .submit() on the returned sweep or pass confirm=True"
            )
        print(line)
    if not needs_confirmation:
        result.submit(wait=True)
    return result
