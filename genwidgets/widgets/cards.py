"""Cards: one job (live or from the ledger) or one stored grid as a small HTML box.

The board lays them out in a grid of columns; :mod:`.sweep` shows one per cell. A card
never widens its column: its box has ``contain: inline-size`` (its width comes from the
column, never from its content) and may shrink below its content (``CARD_LAYOUT``), and
every one-line value (endpoint, parameters, request id) is cut with "…" and carries the
full text as a tooltip (:func:`~.markup.cut_html`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import ipywidgets

from .._formats import short
from ..catalog import EndpointSpec
from ..catalog import endpoint as catalog_endpoint
from ..lab.axes import Axis
from ..lab.batch_store import GridRecord
from ..lab.plan import differing_params
from ..protocol.records import Output
from . import markup
from ._style import StatusLook, format_elapsed
from .lasting import FACE_OUTPUTS, left_out_html, thumbnail_src
from .render import source_of, to_html
from .task import job_look
from .ticker import TICKER, Throttle, guarded, stop_following

if TYPE_CHECKING:
    from .._protocols import JobLike

__all__ = [
    "CARD_LAYOUT",
    "CardData",
    "GridEntry",
    "JobCard",
    "card_html",
    "grid_entry_html",
    "params_by_endpoint",
    "thumbnail",
]

#: A card's box: it may shrink below its content's width (long values are cut, not spilled).
CARD_LAYOUT = {"width": "auto", "min_width": "0", "overflow": "hidden"}
#: Characters of a value kept in a card's tooltip.
TOOLTIP_CHARS = 500


# --- cards -----------------------------------------------------------------------


def thumbnail(
    outputs: Sequence[Output], hint: str | None = None, *, row: bool = False
) -> markup.Html:
    """A card's picture: the kernel-made thumbnail of its first image (or a video's
    poster) where the bytes are at hand, else the image's own URL (a gateway's, never
    a full file as bytes: a board's state holds a card per job,
    docs/decisions.md#board-weight), else the icon of its kind (``hint`` when it has
    no output). ``row``: a smaller one for a row of the board's lasting face, which
    a thumbnail or an icon only."""
    href = thumbnail_src(outputs)
    for output in outputs if href is None and not row else ():
        if output.kind != "image":
            continue
        source = source_of(output)
        if source.data is None and source.href is not None:
            href = source.href
            break
    if href is None:
        return markup.kind_icon(outputs[0].kind if outputs else hint, 32 if row else 40)
    if row:
        return markup.picture(href, "max-width:96px;max-height:72px", "gw-thumb")
    return markup.picture(href, "max-width:100%;max-height:120px")


@functools.lru_cache(maxsize=256)
def _endpoint(endpoint: str) -> EndpointSpec | None:
    """The catalog's endpoint; None for an unknown one (no icon hint, and only its own
    payload's keys are listed)."""
    try:
        return catalog_endpoint(endpoint)
    except Exception:  # unknown endpoint
        return None


def params_by_endpoint(
    entries: Sequence[tuple[str, Mapping[str, Any] | None]],
) -> dict[str, list[str]]:
    """For each endpoint, the payload keys that differ among its own entries."""
    grouped: dict[str, list[Mapping[str, Any] | None]] = {}
    for endpoint, payload in entries:
        grouped.setdefault(endpoint, []).append(payload)
    return {endpoint: differing_params(payloads) for endpoint, payloads in grouped.items()}


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
    def of_job(cls, job: JobLike) -> CardData:
        result = job.last_result
        return cls(
            endpoint=str(job.endpoint),
            request_id=str(job.request_id),
            look=job_look(job),
            elapsed=job.elapsed,
            payload=job.payload,
            outputs=tuple(result.outputs) if result is not None else (),
            simulated=job.simulated,
        )


def card_html(
    data: CardData,
    params: Sequence[str] = (),
    *,
    label: str = "",
    outputs: bool = False,
) -> markup.Html:
    """A card: thumbnail (or all outputs), endpoint, status, elapsed, the listed
    parameters, the error, the request_id."""
    spec = _endpoint(data.endpoint)
    if outputs and data.outputs:
        shown = data.outputs[:FACE_OUTPUTS]  # as every face: the others counted
        media = markup.columns((to_html(o) for o in shown), 110, 4)
        if (more := left_out_html(len(data.outputs))) is not None:
            media = markup.join([media, more])
    else:
        media = markup.card_thumb(thumbnail(data.outputs, spec.kind if spec else None))
    payload = data.payload or {}
    fields = spec.known_names if spec is not None else None
    params = [k for k in params if k in payload or (fields is not None and k in fields)]
    rows = [
        markup.card_param(
            key,
            short(payload[key], 60) if key in payload else None,
            f"{key} = {short(payload[key], TOOLTIP_CHARS) if key in payload else 'unset'}",
        )
        for key in params
    ]
    return markup.job_card(
        data.look,
        label=label,
        media=media,
        endpoint=data.endpoint,
        simulated=data.simulated,
        elapsed=format_elapsed(data.elapsed),
        params=rows,
        request_id=data.request_id,
    )


class JobCard(ipywidgets.HTML):
    """One job as a live card (an HTML widget written by one throttled writer)."""

    def __init__(
        self,
        job: JobLike,
        *,
        params: Sequence[str] = (),
        label: str = "",
        outputs: bool = False,
        on_change: Callable[[JobCard], None] | None = None,
    ) -> None:
        super().__init__(layout=ipywidgets.Layout(**CARD_LAYOUT))
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
        if job.done():  # not a status that ended: its result may still be on its way
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

    def _on_update(self, job: JobLike) -> None:
        guarded(lambda: self._throttle.request(force=job_look(job).terminal))
        self._report_change()

    def _on_done(self, job: JobLike) -> None:
        guarded(lambda: self._throttle.request(force=True))
        self._report_change()
        self._stop()

    def _report_change(self) -> None:
        """Tell the board the category changed, *outside* this card's lock: the
        board holds its own lock while it writes cards, so calling it from
        inside ``_write`` would take the two locks in opposite orders."""
        with self._throttle.lock:
            changed, self._changed = self._changed, False
        if changed and self._on_change is not None:
            guarded(lambda: self._on_change(self) if self._on_change else None)

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


# --- the board ---------------------------------------------------------------------


@dataclass(frozen=True)
class GridEntry:
    """A stored grid as one board entry."""

    record: GridRecord

    @property
    def endpoint(self) -> str:
        return self.record.endpoint

    def category(self, jobs: Mapping[str, JobLike]) -> str:
        """running while any sent cell's job is not terminal (as far as the board knows)."""
        for cell in self.record.cells:
            job = jobs.get(cell.request_id or "")
            if job is not None and not job_look(job).terminal:
                return "running"
        return "done"

    def best_outputs(self, jobs: Mapping[str, JobLike]) -> Sequence[Output]:
        """The outputs of its best-rated cell that has any (else of its first): what
        its card and the board's row show it by."""
        for cell in sorted(self.record.cells, key=lambda c: -(c.stars or 0)):
            job = jobs.get(cell.request_id or "")
            result = job.last_result if job is not None else None
            if result is not None and result.outputs:
                return result.outputs
        return ()


def grid_entry_html(entry: GridEntry, jobs: Mapping[str, JobLike]) -> markup.Html:
    """One grid as a card: its icon or best-rated image, endpoint, axes, counts, stars."""
    record = entry.record
    axes = record.description.get("axes") or {}
    dims = [
        f"{Axis.from_description(a).label} ({len(a.get('values') or [])})"
        for d in ("x", "y", "z")
        if (a := axes.get(d))
    ]
    thumb = thumbnail(entry.best_outputs(jobs), "grid")
    best_stars = max((c.stars or 0 for c in record.cells), default=0)
    best = f" · best {best_stars}/5" if best_stars else ""
    noun = "sweep" if (axes.get("x") or {}).get("kind") == "combination" else "grid"
    return markup.grid_card(
        thumb,
        endpoint=record.endpoint,
        noun=noun,
        shape=" × ".join(dims),
        counts=f"{record.sent} of {len(record.cells)} sent · {record.rated} rated{best}",
        load=f"gw.load_grid({record.id!r})",
    )
