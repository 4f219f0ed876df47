"""What a simulated picture looks like, read from its inputs (:class:`Look`).

A grid that compares prompts or models on the simulator must show differences
where the inputs differ: the prompt's words make the palette and the motifs
(same word, same motif in any model), the endpoint its signature, the seed the
layout, imgM's ``--chaos``, ``--stylize``, ``--weird`` and ``::`` weights what
they name: docs/decisions.md#sim-pictures.
"""

from __future__ import annotations

import colorsys
import hashlib
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

from PIL import Image, ImageDraw, ImageOps

__all__ = ["Look", "background", "endpoint_colour", "weighted_words", "word_colour"]


def background(width: int, height: int, seed: int) -> Image.Image:
    """A seed-dependent picture: a two-colour gradient with translucent shapes."""
    rng = random.Random(f"look-{seed}")
    top = tuple(rng.randrange(0, 256) for _ in range(3))
    bottom = tuple(rng.randrange(0, 256) for _ in range(3))
    image = _gradient(width, height, top, bottom)
    layer = Image.new("RGBA", (width, height), (0, 0, 0, 0))
    draw = ImageDraw.Draw(layer)
    for _ in range(rng.randrange(5, 10)):
        cx, cy = rng.uniform(0, width), rng.uniform(0, height)
        r = rng.uniform(0.08, 0.35) * min(width, height)
        fill = (*(rng.randrange(0, 256) for _ in range(3)), rng.randrange(70, 170))
        if rng.random() < 0.5:
            draw.ellipse((cx - r, cy - r, cx + r, cy + r), fill=fill)
        else:
            draw.rectangle((cx - r, cy - r * 0.6, cx + r, cy + r * 0.6), fill=fill)
    return Image.alpha_composite(image.convert("RGBA"), layer).convert("RGB")


_STOP_WORDS = frozenset(
    {"the", "and", "with", "for", "from", "into", "onto", "over", "under", "are", "its"}
)
_WORD = re.compile(r"[^\W\d_]{3,}", re.UNICODE)
_WEIGHT = re.compile(r"^\s*(-?\d*\.?\d+)")
_PARAM = {
    "chaos": re.compile(r"--(?:chaos|c)\s+(\d+(?:\.\d+)?)"),
    "stylize": re.compile(r"--(?:stylize|s)\s+(\d+(?:\.\d+)?)"),
    "weird": re.compile(r"--(?:weird|w)\s+(\d+(?:\.\d+)?)"),
}
#: the documented top of each parameter's range: the look scales with value / top
_PARAM_TOP = {"chaos": 100.0, "stylize": 1000.0, "weird": 3000.0}
_NO = re.compile(r"--no\s+((?:(?!--).)+)")
_SHAPES = ("ellipse", "rectangle", "triangle", "ring")


def _digest(text: str) -> int:
    """A stable number of a text (Python's ``hash`` of a str changes per process)."""

    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "big")


def word_colour(word: str, *, saturation: float = 0.6, value: float = 0.9) -> tuple[int, int, int]:
    """The colour of a prompt word: the same word, the same colour, in every model."""

    return _rgb((_digest("word-" + word) % 360) / 360, saturation, value)


def endpoint_colour(endpoint: str) -> tuple[int, int, int]:
    """An endpoint's signature colour (its frame and corner mark)."""

    return _rgb((_digest("endpoint-" + endpoint) % 360) / 360, 0.85, 0.75)


def _rgb(hue: float, saturation: float, value: float) -> tuple[int, int, int]:
    r, g, b = colorsys.hsv_to_rgb(hue, saturation, value)
    return (int(r * 255), int(g * 255), int(b * 255))


def weighted_words(text: str) -> list[tuple[str, float]]:
    """The content words of a prompt with their ``::`` part weights (default 1),
    first appearance first; a word in several parts keeps its largest weight."""
    parts = text.split("::")
    words: dict[str, float] = {}
    for i, part in enumerate(parts):
        if i > 0:
            part = _WEIGHT.sub("", part, count=1)
        follow = _WEIGHT.match(parts[i + 1]) if i + 1 < len(parts) else None
        weight = float(follow.group(1)) if follow else 1.0
        for word in _WORD.findall(part.lower()):
            if word not in _STOP_WORDS:
                words[word] = max(words.get(word, weight), weight)
    return list(words.items())


@dataclass(frozen=True)
class Look:
    """What a simulated picture shows, read from its caption's inputs (the first two
    words make the background; the rest as the module says)."""

    endpoint: str = ""
    words: tuple[tuple[str, float], ...] = ()
    chaos: float = 0.0
    stylize: float = 0.0
    weird: float = 0.0

    @classmethod
    def read(cls, title: str, lines: Sequence[str]) -> Look:
        """From a caption: ``title`` starts with the endpoint (``"imgM-v8.1-i2i · 1/4"``),
        ``lines[0]`` is the prompt, any line may carry imgM parameters."""
        endpoint = title.split(" · ", 1)[0].strip()
        prompt = lines[0] if lines else ""
        every = " ".join(lines)
        found = {
            name: min(1.0, float(m.group(1)) / _PARAM_TOP[name])
            for name, pattern in _PARAM.items()
            if (m := pattern.search(every))
        }
        words = dict(weighted_words(_NO.sub("", prompt)))
        for match in _NO.finditer(every):
            for word in _WORD.findall(match.group(1).lower()):
                words[word] = -0.5
        return cls(endpoint, tuple(words.items()), **found)

    def draw(self, width: int, height: int, seed: int) -> Image.Image:
        shown = [(w, k) for w, k in self.words if k > 0]
        if not shown:
            image = background(width, height, seed)
        else:
            top = word_colour(shown[0][0])
            bottom = word_colour(shown[1][0] if len(shown) > 1 else shown[0][0], value=0.45)
            image = _gradient(width, height, top, bottom)
        layer = Image.new("RGBA", (width, height), (0, 0, 0, 0))
        draw = ImageDraw.Draw(layer)
        side = min(width, height)
        for word, weight in shown:
            colour = _turned(word_colour(word, saturation=0.9, value=0.5), 0.5)
            if self.weird:
                colour = _turned(colour, self.weird * 0.5)
            shape = _SHAPES[_digest("shape-" + word) % len(_SHAPES)]
            place = random.Random(f"layout-{seed}-{word}")
            for _ in range(max(1, min(16, round(6 * weight)))):
                r = side * place.uniform(0.09, 0.18) * min(2.0, 0.6 + 0.4 * weight)
                cx, cy = place.uniform(r, width - r), place.uniform(r, height - r)
                _shape(draw, shape, cx, cy, r, (*colour, 210))
        scatter = random.Random(f"chaos-{seed}")
        for _ in range(round(self.chaos * 80)):
            r = side * scatter.uniform(0.015, 0.05)
            cx, cy = scatter.uniform(0, width), scatter.uniform(0, height)
            fill = (*(scatter.randrange(256) for _ in range(3)), 230)
            _shape(draw, _SHAPES[scatter.randrange(len(_SHAPES))], cx, cy, r, fill)
        return Image.alpha_composite(image.convert("RGBA"), layer).convert("RGB")

    def sign(self, image: Image.Image) -> None:
        """Draw the endpoint's signature on ``image`` (in place; nothing without one)."""
        if self.endpoint:
            _signature(image, self.endpoint, 0.04 + 0.06 * self.stylize)


def _gradient(
    width: int, height: int, top: tuple[int, ...], bottom: tuple[int, ...]
) -> Image.Image:
    ramp = ImageOps.colorize(Image.linear_gradient("L"), top, bottom)
    return ramp.resize((width, height), Image.Resampling.BILINEAR)


def _turned(colour: tuple[int, int, int], turn: float) -> tuple[int, int, int]:
    h, s, v = colorsys.rgb_to_hsv(*(c / 255 for c in colour))
    return _rgb((h + turn) % 1.0, s, v)


def _shape(
    draw: ImageDraw.ImageDraw, shape: str, cx: float, cy: float, r: float, fill: tuple[int, ...]
) -> None:
    box = (cx - r, cy - r, cx + r, cy + r)
    if shape == "ellipse":
        draw.ellipse(box, fill=fill)
    elif shape == "rectangle":
        draw.rectangle((cx - r, cy - r * 0.7, cx + r, cy + r * 0.7), fill=fill)
    elif shape == "triangle":
        draw.polygon([(cx, cy - r), (cx + r, cy + r), (cx - r, cy + r)], fill=fill)
    else:
        draw.ellipse(box, outline=fill, width=max(2, int(r * 0.3)))


def _signature(image: Image.Image, endpoint: str, share: float) -> None:
    """The endpoint's frame (``share`` of the short side wide) and striped corner mark."""
    width, height = image.size
    colour = endpoint_colour(endpoint)
    band = max(2, int(min(width, height) * share))
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 0, width, height), outline=colour, width=band + 1)
    mark = band * 3
    draw.rectangle((0, 0, mark, mark), fill=colour)
    step = max(2, mark // 6)
    light = tuple(min(255, c + 90) for c in colour)
    for i in range(-mark, mark, step * 2):
        draw.line((i, 0, i + mark, mark), fill=light, width=max(1, step // 2))
