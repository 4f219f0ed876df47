"""The mixed set's plot: notice latency against run time, ours and the fixed pollers,
drawn with Pillow (a dependency already; matplotlib is not one)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw, ImageFont

from . import polling, sets

WIDTH, HEIGHT = 1200, 760
LEFT, RIGHT, TOP, BOTTOM = 110, 40, 70, 90
#: arm -> (label, colour, marker)
SERIES = {
    polling.OURS_MIXED: ("genwidgets, warm", (31, 119, 180), "circle"),
    "fixed 0.1 s" + polling.MIXED: ("fixed 0.1 s (fal_client's)", (255, 127, 14), "square"),
    "fixed 0.5 s" + polling.MIXED: ("fixed 0.5 s (replicate's)", (44, 160, 44), "triangle"),
}
TARGET_COLOUR = (200, 30, 30)
PROPORTION_COLOUR = (150, 150, 150)
GRID = (225, 225, 225)
INK = (30, 30, 30)
X_TICKS = (0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500)


def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    try:
        return ImageFont.load_default(size=size)
    except (TypeError, OSError):  # a Pillow without FreeType: the bitmap font
        return ImageFont.load_default()


class _Axes:
    """Run time (log) across, notice latency (linear) up."""

    def __init__(self, x_low: float, x_high: float, y_high: float) -> None:
        self.lx, self.hx = math.log(x_low), math.log(x_high)
        self.y_high = y_high

    def x(self, seconds: float) -> float:
        share = (math.log(max(seconds, 1e-3)) - self.lx) / (self.hx - self.lx)
        return LEFT + share * (WIDTH - LEFT - RIGHT)

    def y(self, notice: float) -> float:
        share = min(max(notice, 0.0), self.y_high) / self.y_high
        return HEIGHT - BOTTOM - share * (HEIGHT - TOP - BOTTOM)


def _marker(draw: ImageDraw.ImageDraw, x: float, y: float, kind: str, colour: Any) -> None:
    r = 4
    if kind == "circle":
        draw.ellipse((x - r, y - r, x + r, y + r), fill=colour)
    elif kind == "square":
        draw.rectangle((x - r, y - r, x + r, y + r), outline=colour, width=2)
    else:
        draw.polygon([(x, y - r - 1), (x - r - 1, y + r), (x + r + 1, y + r)], outline=colour)


def _frame(draw: ImageDraw.ImageDraw, axes: _Axes, x_low: float, x_high: float) -> None:
    small, label = _font(15), _font(17)
    step = next(s for s in (0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0) if axes.y_high / s <= 10)
    value = 0.0
    while value <= axes.y_high + 1e-9:
        y = axes.y(value)
        draw.line((LEFT, y, WIDTH - RIGHT, y), fill=GRID)
        draw.text((LEFT - 10, y), f"{value:.2f} s", fill=INK, font=small, anchor="rm")
        value += step
    for tick in X_TICKS:
        if x_low <= tick <= x_high:
            x = axes.x(tick)
            draw.line((x, TOP, x, HEIGHT - BOTTOM), fill=GRID)
            draw.text((x, HEIGHT - BOTTOM + 10), f"{tick:g} s", fill=INK, font=small, anchor="mt")
    draw.rectangle((LEFT, TOP, WIDTH - RIGHT, HEIGHT - BOTTOM), outline=INK)
    draw.text(
        ((LEFT + WIDTH - RIGHT) / 2, HEIGHT - 30),
        "run time (log scale)",
        fill=INK,
        font=label,
        anchor="mm",
    )
    draw.text((20, TOP - 30), "notice latency", fill=INK, font=label, anchor="lm")


def _targets(
    draw: ImageDraw.ImageDraw,
    axes: _Axes,
    x_low: float,
    x_high: float,
    kinds: dict[str, tuple[float, float, float]],
) -> None:
    """A tenth of the run time (grey, dotted), and each kind's target over its run times
    (red): a tenth of its median, what the schedule aims at and the goal counts."""
    points, t = [], x_low
    while t <= x_high:
        points.append((axes.x(t), axes.y(sets.notice_target(t))))
        t *= 1.01
    for i, ((x0, y0), (x1, y1)) in enumerate(itertools.pairwise(points)):
        if i % 3 == 0:
            draw.line((x0, y0, x1, y1), fill=PROPORTION_COLOUR, width=2)
    for low, high, target in kinds.values():
        y = axes.y(target)
        draw.line((axes.x(low), y, axes.x(high), y), fill=TARGET_COLOUR, width=2)


def draw_notice_plot(p: dict[str, Any], path: Path) -> Path | None:
    """Draw the mixed set's notice latencies to ``path`` (PNG); None when the mixed set
    did not run."""
    series = {n: p["schedules"][n]["detail"] for n in SERIES if n in p["schedules"]}
    if polling.OURS_MIXED not in series:
        return None
    points = [d for detail in series.values() for d in detail]
    x_low = min(0.5, min(s for _e, s, _n in points) / 1.2)
    x_high = max(200.0, max(s for _e, s, _n in points) * 1.2)
    y_high = max(1.75, math.ceil(max(n for _e, _s, n in points) * 4) / 4)
    axes = _Axes(x_low, x_high, y_high)
    image = Image.new("RGB", (WIDTH, HEIGHT), "white")
    draw = ImageDraw.Draw(image)
    _frame(draw, axes, x_low, x_high)
    kinds = {
        endpoint: (
            min(s for e, s, _n in points if e == endpoint),
            max(s for e, s, _n in points if e == endpoint),
            sets.notice_target(median),
        )
        for endpoint, median in p["mixed_medians"].items()
        if any(e == endpoint for e, _s, _n in points)
    }
    _targets(draw, axes, x_low, x_high, kinds)
    for name, detail in series.items():
        _label, colour, kind = SERIES[name]
        for _endpoint, seconds, notice in detail:
            _marker(draw, axes.x(seconds), axes.y(notice), kind, colour)
    _legend(draw, series)
    draw.text(
        (LEFT, 25),
        "Mixed set: notice latency against run time (60 % images of median 3 s, "
        "40 % videos of median 60 s, one client)",
        fill=INK,
        font=_font(19),
        anchor="lm",
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path, optimize=True)
    return path


def _legend(draw: ImageDraw.ImageDraw, series: dict[str, Sequence[Sequence[Any]]]) -> None:
    font = _font(15)
    x, y = LEFT + 16, TOP + 16
    for name, detail in series.items():
        label, colour, kind = SERIES[name]
        _marker(draw, x, y, kind, colour)
        draw.text((x + 14, y), f"{label} ({len(detail)} tasks)", fill=INK, font=font, anchor="lm")
        y += 24
    for colour, text in (
        (TARGET_COLOUR, "each kind's target: a tenth of its median run time"),
        (PROPORTION_COLOUR, "a tenth of the run time, within [0.25 s, 1.5 s]"),
    ):
        draw.line((x - 8, y, x + 8, y), fill=colour, width=2)
        draw.text((x + 14, y), text, fill=INK, font=font, anchor="lm")
        y += 24
