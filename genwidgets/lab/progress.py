"""A batch's progress outside a notebook: a tqdm bar in a terminal, quiet lines
otherwise, nothing in a kernel; a :class:`Snapshot` is what every face reads.
docs/decisions.md#batch-progress.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TextIO

from .._formats import terminal_text
from .batch_row import ENDED_STATUSES
from .budget import MONEY, MONEY_WORDS, plain_amount

__all__ = [
    "LINE_EVERY",
    "Progress",
    "Snapshot",
    "progress_mode",
]

#: seconds between two quiet lines
LINE_EVERY = 10.0
Mode = Literal["auto", "bar", "lines", "none"]


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


@dataclass(frozen=True)
class Snapshot:
    """A batch's progress at one moment."""

    id: str
    total: int
    #: rows per status (``row.status`` words)
    counts: dict[str, int] = field(default_factory=dict)
    #: billed units (and money) reserved so far, per kind: taken from the budget as each
    #: row is sent, before its task has made anything
    spent: dict[str, float] = field(default_factory=dict)
    #: of those, what the rows done bill (spent: their tasks made what they bill)
    billed: dict[str, float] = field(default_factory=dict)
    #: rows ended per second, over the last minute (None before two have ended)
    rate: float | None = None
    #: seconds until every row has ended at that rate (None when unknown)
    eta: float | None = None
    #: why sending stopped early (the budget's cap, a cancel), if it did
    stopped: str | None = None
    finished: bool = False
    started: bool = True
    #: the last trouble of a background thread or a manifest write (the run goes on)
    problem: str | None = None
    #: sending paused until asked to go on (``stopped`` says why)
    paused: bool = False

    def count(self, *statuses: str) -> int:
        return sum(self.counts.get(s, 0) for s in statuses)

    @property
    def failed(self) -> int:
        return self.count("failed")

    @property
    def queued(self) -> int:
        """Created and queued, being sent, or waiting to be sent."""
        return self.count("queued", "sending", "waiting")

    @property
    def ended(self) -> int:
        return self.count(*ENDED_STATUSES)

    @property
    def held(self) -> int:
        """Rows waiting that nothing sends now (paused or stopped: a cap, a cancel, an
        interrupt, a run re-opened), said "waiting (not sent)" by the line, not queued."""
        return self.count("waiting") if self.paused or self.stopped else 0

    def spent_text(self) -> str:
        """``spent 8 video_seconds (24 reserved)``: per kind, what the rows done bill
        (spent) and what the rows sent hold from the budget (reserved), money in
        price units. Empty when nothing is reserved."""
        parts = []
        for kind, reserved in self.spent.items():
            if kind == "tasks" or not reserved:
                continue
            name = MONEY_WORDS if kind == MONEY else kind
            done = min(self.billed.get(kind, 0.0), reserved)
            amount = plain_amount(round(reserved, 2))
            if not done:
                parts.append(f"reserved {amount} {name}")
            elif done >= reserved - 1e-9:
                parts.append(f"spent {amount} {name}")
            else:
                parts.append(f"spent {plain_amount(round(done, 2))} {name} ({amount} reserved)")
        return ", ".join(parts)

    def line(self) -> str:
        """``batch X: 40 of 100 done, 2 failed, 3 running, 55 queued; 1.2 rows/s, about
        50 s left; spent 40 images (48 reserved)``."""
        parts = [f"{self.count('done')} of {self.total} done"]
        for word, n in (
            *((status, self.count(status)) for status in ENDED_STATUSES[1:]),
            ("contact lost (following again)", self.count("contact lost")),
            ("running", self.count("running")),
            ("queued", self.queued - self.held),
            ("waiting (not sent)", self.held),
        ):
            if n:
                parts.append(f"{n} {word}")
        text = f"batch {self.id}: " + ", ".join(parts)
        if not self.finished and self.rate:
            text += f"; {self.rate:.2g} rows/s"
            if self.eta is not None:
                text += f", about {_duration(self.eta)} left"
        spent = self.spent_text()
        if spent:
            text += f"; {spent}"
        if self.stopped:
            text += f"; {self.stopped}"
        if self.problem:
            text += f"; trouble: {self.problem}"
        return text


def progress_mode(stream: Any) -> Literal["bar", "lines", "none"]:
    """What ``mode="auto"`` draws on ``stream``: nothing in a Jupyter kernel, a bar on a
    terminal, lines otherwise."""
    if type(stream).__module__.split(".")[0] == "ipykernel":
        return "none"
    isatty = getattr(stream, "isatty", None)
    return "bar" if callable(isatty) and isatty() else "lines"


class Progress:
    """One wait's progress face (see the module docstring)."""

    def __init__(
        self,
        total: int,
        *,
        mode: Mode = "auto",
        stream: TextIO | None = None,
        words: Callable[[str], str] | None = None,
    ) -> None:
        self.stream = stream if stream is not None else sys.stdout
        #: how its lines' advice is said (the command's flags: ``batch_cli.command_words``)
        self.words = words
        self.mode = progress_mode(self.stream) if mode == "auto" else mode
        self._bar: Any = None
        self._last_line = 0.0
        self._last_text = ""
        if self.mode == "bar":
            from tqdm.auto import tqdm  # noqa: PLC0415 - only a terminal's bar needs it

            self._bar = tqdm(total=total, unit="row", file=self.stream, dynamic_ncols=True)

    def show(self, snap: Snapshot) -> None:
        if self.mode == "bar":
            self._bar.desc = terminal_text(f"batch {snap.id}")
            self._bar.n = snap.ended
            postfix = {
                "failed": snap.failed,
                "running": snap.count("running"),
                "queued": snap.queued - snap.held,
            }
            spent = snap.spent_text()
            if spent:
                postfix["budget"] = spent  # type: ignore[assignment]
            self._bar.set_postfix(postfix, refresh=False)
            self._bar.refresh()
        elif self.mode == "lines":
            now = time.monotonic()
            if now - self._last_line >= LINE_EVERY:
                self._print(snap.line())
                self._last_line = now

    def close(self, snap: Snapshot) -> None:
        """The last state: the bar completed (or left where it stopped), one final line."""
        if self._bar is not None:
            self.show(snap)
            self._bar.close()
            self._bar = None
        if self.mode != "none":
            self._print(snap.line())

    def _print(self, text: str) -> None:
        if self.words is not None:
            text = self.words(text)
        if text != self._last_text:  # a batch's id may come from a file's name
            print(terminal_text(text), file=self.stream, flush=True)
            self._last_text = text
