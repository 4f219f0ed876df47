"""The :class:`Prompt` value: an imgM prompt parsed, built, counted, expanded and
checked. The choices where the spec is silent:
docs/decisions.md#the-imgm-prompt-language-genwidgetsimgm.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import PayloadError
from .checker import Checker, cost_warning, per_expansion
from .lexer import has_permutation, split_outside
from .params import (
    MANY_JOBS,
    MAX_PROMPTS,
    PARAM_NAME,
    PARAMETERS,
    TABLE_ORDER,
    URL_START,
    collapse_spaces,
    format_scalar,
    to_number,
)
from .parser import Entry, assemble, key_of, parse_parts, segments_of, varies
from .permutations import Mode, alternatives, count_prompts, expansions, say_count
from .values import PromptWarning, Reference, Segment, Variation

__all__ = ["Prompt"]


class Prompt:
    """An imgM prompt: image URLs, text with ``::`` weights, and ``--`` parameters.

    ``Prompt.parse(s)`` reads a string; ``Prompt(text=..., params=..., images=...)``
    builds one (aliases allowed as keys; None or False leaves a parameter out).
    Both normalize through the same parser, so ``str()`` always parses back equal.
    """

    __slots__ = ("_counted", "_entries", "_images", "_made", "_text")
    _counted: int | None
    _made: list[tuple[str, Prompt | PayloadError]] | None
    _images: tuple[str, ...]
    _text: str
    _entries: tuple[Entry, ...]

    def __init__(
        self,
        text: str = "",
        params: Mapping[str, Any] | None = None,
        images: Sequence[str] | None = None,
    ) -> None:
        if not isinstance(text, str):
            raise PayloadError([{"loc": ("text",), "msg": "text must be a str"}])
        if isinstance(images, str) or not isinstance(images, (Sequence, type(None))):
            raise PayloadError([{"loc": ("images",), "msg": "images must be a list of URLs"}])
        entries = _merged([], _keyed(params or {}))
        built = Prompt._rebuild([str(i) for i in images or ()], collapse_spaces(text), entries)
        self._set(built._images, built._text, built._entries)  # noqa: SLF001 - a Prompt reads another Prompt's parts: its own class

    def _set(self, images: Sequence[str], text: str, entries: Sequence[Entry]) -> Prompt:
        self._images, self._text, self._entries = tuple(images), text, tuple(entries)
        self._counted = self._made = None
        return self

    @classmethod
    def _rebuild(cls, images: Sequence[str], text: str, entries: Sequence[Entry]) -> Prompt:
        """Write the parts as a string and parse it back, refusing anything lost."""
        errors: list[dict[str, Any]] = [
            {
                "loc": ("images", n),
                "msg": f"image {image!r} is not one http(s):// URL without spaces",
            }
            for n, image in enumerate(images)
            if not URL_START.match(image) or any(c.isspace() for c in image)
        ]
        if errors:
            raise PayloadError(errors)
        for spelling, key, value in entries:
            if not isinstance(value, Variation) and not PARAM_NAME.fullmatch(spelling):
                errors.append({"loc": ("params", key), "msg": f"{key!r} is not a parameter name"})
        if errors:
            raise PayloadError(errors)
        parsed = cls.parse(assemble(images, text, entries))
        if list(parsed._images) != list(images) or parsed._text != text:  # noqa: SLF001 - a Prompt reads another Prompt's parts: its own class
            errors.append(
                {
                    "loc": ("text",),
                    "msg": "text must not start with an image URL or hold a --parameter: "
                    "pass those as images / params",
                }
            )
        wanted = [key for _, key, _ in entries]
        got = [key for _, key, _ in parsed._entries]  # noqa: SLF001 - a Prompt reads another Prompt's parts: its own class
        if got != wanted:
            culprits = [key for key in wanted if key not in got]
            previous: tuple[str, ...] = ("text",)
            for key in got:
                if key in wanted:
                    previous = ("params", key)
                elif previous[-1] not in culprits:
                    culprits.append(previous[-1])
            errors.extend(
                {
                    "loc": ("text",) if key == "text" else ("params", key),
                    "msg": f"the value of --{key} would not survive in the prompt string "
                    "(it holds a --parameter)"
                    if key != "text"
                    else "text must not hold a --parameter: pass it in params",
                }
                for key in culprits
            )
        else:
            read = {key: value for _, key, value in parsed._entries}  # noqa: SLF001 - a Prompt reads another Prompt's parts: its own class
            for _, key, value in entries:
                errors.extend(_items_changed(key, value, read[key]))
        if errors:
            raise PayloadError(errors)
        return parsed

    # ---------------------------------------------------------------- reading

    @classmethod
    def parse(cls, s: str) -> Prompt:
        """Parse a prompt string; raises PayloadError for structural problems only."""
        parsed: Prompt = object.__new__(cls)
        return parsed._set(*parse_parts(s))

    @property
    def text(self) -> str:
        """The text between the images and the parameters (``::`` weights included)."""
        return self._text

    @property
    def images(self) -> list[str]:
        """The leading image URLs (a copy)."""
        return list(self._images)

    @property
    def params(self) -> dict[str, Any]:
        """Canonical name -> typed value, in output order (a copy)."""
        return {key: list(v) if isinstance(v, list) else v for _, key, v in self._entries}

    @property
    def segments(self) -> list[Segment]:
        """The text split on ``::`` (outside URLs and permutations) with weights."""
        return segments_of(self._text)

    def __str__(self) -> str:
        return assemble(self._images, self._text, self._entries)

    def __repr__(self) -> str:
        return f"Prompt.parse({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Prompt):
            return NotImplemented
        return (self._images, self._text, self.params) == (other._images, other._text, other.params)

    __hash__ = None  # type: ignore[assignment]  # values may be lists

    # ---------------------------------------------------------------- building

    def with_params(self, **changes: Any) -> Prompt:
        """A new Prompt with parameters set (aliases allowed); None or False removes one."""
        merged = _merged(list(self._entries), _keyed(changes))
        return Prompt._rebuild(self._images, self._text, merged)

    # ---------------------------------------------------------------- permutations

    def count(self) -> int:
        """How many prompts the permutations make: a product of group sizes, nothing
        expanded, however large (a prompt of 8,192 characters may count 2**4096)."""
        if self._counted is None:
            self._counted = count_prompts(str(self))
        return self._counted

    def expand(self, mode: Mode = "sent") -> list[str]:
        """Every prompt the permutations make, in order (each is billed).

        ``mode="sent"`` (the default) gives each as the gateway gets it: a prompt of
        its own, so ``Prompt.parse(e).count() == 1``: escaped braces stay escaped
        (the gateway would expand them again), ``\\,`` becomes a plain comma.
        ``"plain"`` resolves every escape (labels people read), ``"source"`` keeps
        them as typed. More than :data:`MAX_PROMPTS` is a :class:`PayloadError`
        naming the count: nothing beyond the cap is ever made.
        """
        count = self.count()
        if count > MAX_PROMPTS:
            raise PayloadError([_over_the_cap(count)])
        return list(expansions(str(self), mode))

    @property
    def varies_parameters(self) -> bool:
        """Whether a permutation varies parameters, so each expansion is checked apart."""
        return any(
            isinstance(v, Variation) or (isinstance(v, str) and varies(v))
            for _, _, v in self._entries
        )

    def _variants(self) -> list[tuple[str, Prompt | PayloadError]]:
        """The expansions (at most :data:`MAX_PROMPTS`), each with its prompt or the
        error parsing raised; escapes stay as written, so each reads back as sent."""
        if self._made is None:  # made once: errors, warnings and repeats all read them
            found: list[tuple[str, Prompt | PayloadError]] = []
            for source in itertools.islice(expansions(str(self)), MAX_PROMPTS):
                try:
                    found.append((source, Prompt.parse(source)))
                except PayloadError as error:
                    found.append((source, error))
            self._made = found
        return self._made

    def jobs(self) -> int:
        """Billed jobs: each expansion, times its ``--repeat`` (above the cap, where
        nothing is sent, the count of prompts alone)."""
        total = self.count()
        if total > MAX_PROMPTS:
            return total
        repeats = self.repeats()
        return total // len(repeats) * sum(repeats)

    def repeats(self) -> list[int]:
        """The ``--repeat`` of each alternative (``[1]`` without one; bad values count 1).

        When a permutation varies parameters, one entry per expansion, so a
        ``--repeat`` inside one option multiplies that option only. Above the cap
        (nothing is sent) ``[1]``.
        """
        if self.count() > MAX_PROMPTS:
            return [1]
        if self.varies_parameters:
            return [v.repeats()[0] if isinstance(v, Prompt) else 1 for _, v in self._variants()]
        raw = next((v for _, k, v in self._entries if k == "repeat"), None)
        if raw is None:
            return [1]
        values = alternatives(raw) if isinstance(raw, str) else [str(raw)]
        numbers = [to_number(value, integer=True) for value in values]
        return [int(n) if n is not None and n >= 1 else 1 for n in numbers]

    # ---------------------------------------------------------------- checking

    def _checker(self) -> Checker:
        return Checker(self._images, self._text, self._entries, self.jobs())

    def errors(self) -> list[dict[str, Any]]:
        """Every hard problem as ``{"loc", "msg"}`` (what validate() would raise).

        Above the cap only the count is reported: checking expansions that are
        never sent would mean making them."""
        count = self.count()
        if count > MAX_PROMPTS:
            return [_over_the_cap(count)]
        if not self.varies_parameters:
            return self._checker().errors()
        problems = [
            (n, source, e["loc"], e["msg"])
            for n, (source, variant) in enumerate(self._variants(), 1)
            for e in (variant.errors if isinstance(variant, PayloadError) else variant.errors())
        ]
        return [{"loc": loc, "msg": msg} for loc, msg in per_expansion(problems, count)]

    def warnings(self) -> list[PromptWarning]:
        """Soft problems: experimental ratios, other versions, orphan weights, cost."""
        count = self.count()
        if count > MAX_PROMPTS:
            return []  # the prompt is refused (errors() says why): nothing more to say
        if not self.varies_parameters:
            return self._checker().warnings()
        problems = [
            (n, source, w.loc, str(w))
            for n, (source, variant) in enumerate(self._variants(), 1)
            if isinstance(variant, Prompt)
            for w in variant.warnings()
        ]
        found = [PromptWarning(msg, loc) for loc, msg in per_expansion(problems, count)]
        jobs = self.jobs()
        if jobs > MANY_JOBS:
            found.append(cost_warning(jobs))
        return found

    def validate(self) -> Prompt:
        """Raise PayloadError listing every problem; return self when there is none."""
        problems = self.errors()
        if problems:
            raise PayloadError(problems)
        return self


def _over_the_cap(count: int) -> dict[str, Any]:
    return {
        "loc": ("text",),
        "msg": f"this prompt makes {say_count(count)} prompts; one permutation prompt makes "
        f"at most {MAX_PROMPTS}: remove options or split it",
    }


def _items_changed(key: str, given: Any, read: Any) -> list[dict[str, Any]]:
    """Why the items given for a list or reference parameter (``no=["red, blue"]``)
    would not read back as those items: a comma splits a ``--no`` item, a space a
    reference, braces make a permutation (billed per prompt). Spaces collapse and blank
    items go, as in the text; a value given as one string is prompt text as typed."""
    param = PARAMETERS.get(key)
    items = [given] if isinstance(given, Reference) else given
    if param is None or param.kind not in ("list", "refs") or not isinstance(items, list | tuple):
        return []
    wanted = _written_items(items)
    if isinstance(read, list) and _written_items(read) == wanted:
        return []
    what = "item" if param.kind == "list" else "reference"
    found = []
    for item in wanted:
        if has_permutation(item):
            why = (
                "holds braces, which would make a permutation (each option a prompt, each "
                "billed): escape them as \\{ and \\} and its commas as \\, (to vary the "
                "value, give it as one string)"
            )
        elif param.kind == "list" and len(split_outside(item, ",")) > 1:
            why = "holds a comma, which separates items: give two items, or escape it as \\,"
        elif param.kind == "refs" and " " in item:
            why = "holds a space, which separates references: write a space in a URL as %20"
        else:
            continue
        found.append({"loc": ("params", key), "msg": f"--{key} {what} {item!r} {why}"})
    shown = _written_items(read) if isinstance(read, list) else read
    return found or [
        {
            "loc": ("params", key),
            "msg": f"--{key} {wanted!r} would be read back from the prompt as {shown!r}",
        }
    ]


def _written_items(items: Sequence[Any]) -> list[str]:
    """Each item as the prompt writes it, spaces collapsed, blank ones left out."""
    return [text for text in (collapse_spaces(format_scalar(item)) for item in items) if text]


def _keyed(params: Mapping[str, Any]) -> dict[str, Any]:
    """Parameters given by name (aliases allowed) by their canonical key; a key given
    twice is a PayloadError."""
    changes: dict[str, Any] = {}
    for name, value in params.items():
        key = key_of(name, value)
        if key in changes:
            raise PayloadError(
                [{"loc": ("params", key), "msg": f"--{key} is given twice; keep one"}]
            )
        changes[key] = value
    return changes


def _merged(entries: list[Entry], changes: Mapping[str, Any]) -> list[Entry]:
    """Apply changes: replace in place, drop None/False, append new in table order."""
    result: list[Entry] = []
    for spelling, key, value in entries:
        if key not in changes:
            result.append((spelling, key, value))
        elif changes[key] is not None and changes[key] is not False:
            result.append((spelling, key, changes[key]))
    present = {key for _, key, _ in entries}
    new = [
        (key, key, value)
        for key, value in changes.items()
        if key not in present and value is not None and value is not False
    ]
    # Variations go first: after a list parameter they would be read as its value.
    new.sort(
        key=lambda e: -1 if isinstance(e[2], Variation) else TABLE_ORDER.get(e[1], len(TABLE_ORDER))
    )
    return result + new
