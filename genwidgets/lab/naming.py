"""File names of a batch's outputs, from a name template (``{row:05d}-{slug}-{seed}.{ext}``
by default), each one Linux, macOS and Windows take (:func:`portable`) and unique as a
case-insensitive disk compares them (:func:`name_key`): docs/decisions.md#batch-files.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import PayloadError
from .problems import problem

__all__ = [
    "DEFAULT_NAMES",
    "NameTemplate",
    "file_name",
    "format_parts",
    "name_key",
    "portable",
    "safe_part",
    "slug",
]

DEFAULT_NAMES = "{row:05d}-{slug}-{seed}.{ext}"
#: the default for rows named by text (a DataFrame indexed by strings)
DEFAULT_NAMES_TEXT = "{row}-{slug}-{seed}.{ext}"
#: what ``{ext}`` and ``{output}`` stand for until the output is known
EXT_MARK = "\ue000"
OUTPUT_MARK = "\ue001"
#: the longest slug of a prompt (characters, cut at a word)
SLUG_CHARS = 40
#: the longest substituted value
PART_CHARS = 60
#: the longest file name written (bytes of UTF-8; most file systems take 255)
MAX_NAME_BYTES = 200
_BUILT_IN = ("row", "slug", "seed", "endpoint", "kind", "ext", "output")
_UNSAFE = re.compile(r"[^\w.-]+", re.UNICODE)
_DASHES = re.compile(r"-{2,}")
_DASHES_BEFORE_EXT = re.compile(r"-+(?=\.)")
_FORMATTER = string.Formatter()
#: what no file system of the three takes in a name: Windows' reserved characters and
#: control characters (a name template's own text is refused for them)
_RESERVED = re.compile(r'[<>:"/\\|?*\x00-\x1f\x7f]')
#: Windows' device names: ``CON.png`` opens the console, whatever the extension
_DEVICES = frozenset(
    ["CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"]
    + [f"{port}{n}" for port in ("COM", "LPT") for n in "0123456789¹²³"]
)


def slug(text: str | None, limit: int = SLUG_CHARS) -> str:
    """A short safe form of a prompt: lower case, ASCII where it folds, words joined
    by ``-``, imgM ``--`` parameters left out, at most ``limit`` characters."""
    if not text:
        return ""
    head = text.split(" --", 1)[0]
    folded = (
        head  # ASCII folds to itself: most prompts skip the Unicode tables
        if head.isascii()
        else unicodedata.normalize("NFKD", head).encode("ascii", "ignore").decode("ascii")
    )
    words = re.findall(r"[a-z0-9]+", (folded or head).lower()) or re.findall(r"\w+", head.lower())
    out = ""
    for word in words:
        candidate = f"{out}-{word}" if out else word
        if len(candidate) > limit:
            return out or word[:limit]
        out = candidate
    return out


def safe_part(value: Any, limit: int = PART_CHARS) -> str:
    """A value as part of a file name: no separators, no leading dot, at most ``limit``;
    composed (NFC), so an accent typed decomposed stays a letter's."""
    if value is None:
        return ""
    text = str(value)
    if not text.isascii():
        text = unicodedata.normalize("NFC", text)
    text = _UNSAFE.sub("-", text).strip("-.")
    return text[:limit].strip("-.")


def portable(name: str) -> str:
    """``name`` as Linux, macOS and Windows all take it: composed (NFC), no trailing dot
    or space (Windows drops them), and a Windows device name before the first dot
    given a ``_`` (``CON.png`` → ``CON_.png``). docs/decisions.md#batch-files."""
    if not name.isascii():
        name = unicodedata.normalize("NFC", name)
    name = name.rstrip(". ")
    base, dot, rest = name.partition(".")
    if base.rstrip(" ").upper() in _DEVICES:
        name = f"{base.rstrip(' ')}_{dot}{rest}"
    return name


def name_key(name: str) -> str:
    """What a case-insensitive, normalising disk (macOS, Windows) tells a name by:
    canonical caseless matching, so ``A.png``/``a.png``, ``한국.png`` composed and
    decomposed, ``STRASSE``/``straße`` are one name."""
    return unicodedata.normalize("NFD", unicodedata.normalize("NFD", name).casefold())


def format_parts(text: str, bad: Callable[[str], PayloadError]) -> list[tuple[str, str | None]]:
    """(literal text, the column it names or None) of each part of a format string over
    a row's columns (a payload's template, a file name's); ``bad(message)`` is raised for
    one that does not parse, and for a field that names no column as it is (``{}``,
    ``{0}``, ``{x.attr}``, ``{x[0]}``: ``str.format`` would reach into objects)."""
    try:
        parts = [(literal, name) for literal, name, _, _ in _FORMATTER.parse(text)]
    except ValueError as exc:
        raise bad(f"{text!r} is not a format string ({exc}); write {{{{ for a brace") from None
    for _, name in parts:
        if name is not None and (not name or name.isdigit()):
            raise bad(f"{text!r}: a {{}} names a column, e.g. {{text}}")
        if name is not None and any(c in name for c in ".[]"):
            raise bad(f"{text!r}: {{{name}}} names a column as it is, no attribute or index")
    return parts


def _tidy(name: str) -> str:
    """Separators left by empty values collapsed: ``00003--.png`` → ``00003.png``; a dash
    the template puts before a bare ``{ext}`` stays (``{text}-{ext}``: ``x-png``)."""
    if "--" in name:  # the regular expressions only where they have work (every row asks)
        name = _DASHES.sub("-", name)
    if "-." in name:
        name = _DASHES_BEFORE_EXT.sub("", name)
    return name.strip("-") or "row"


@dataclass(frozen=True)
class NameTemplate:
    """A checked name template; :meth:`stem` renders a row's name up to its outputs."""

    text: str
    #: the columns it shows (besides the built-in names)
    columns: tuple[str, ...] = ()
    #: every name it shows, built-in or column: a row's name makes safe only those
    names: frozenset[str] = frozenset()

    @classmethod
    def parse(cls, text: str | None, columns: Sequence[str]) -> NameTemplate:
        """Check a template against the built-in names and the rows' columns."""
        text = DEFAULT_NAMES if text is None else text
        if not isinstance(text, str) or not text.strip():
            raise _bad(f"a name template is a non-empty string such as {DEFAULT_NAMES!r}")
        if any(sep in text for sep in ("/", "\\", "\x00")) or text.strip() in (".", ".."):
            raise _bad(f"{text!r} is a file name, not a path: no / or \\ (out= is the folder)")
        allowed = set(_BUILT_IN) | set(columns)
        used = []
        for literal, name in format_parts(text, _bad):
            reserved = _RESERVED.search(literal)  # the template's own text; values are safe
            if reserved is not None:
                raise _bad(
                    f"{text!r} holds {reserved.group()!r}, which no file system takes in a "
                    'name on all of Linux, macOS and Windows (none of <>:"/\\|?* or a control '
                    "character)"
                )
            if name is None:
                continue
            if name not in allowed:
                raise _bad(
                    f"{text!r} names {{{name}}}, which is neither a column nor one of "
                    f"{', '.join('{' + b + '}' for b in _BUILT_IN)}"
                )
            used.append(name)
        if "ext" not in used:
            raise _bad(f"{text!r} has no {{ext}}: a file's extension follows its content type")
        return cls(text, tuple(n for n in used if n not in _BUILT_IN), frozenset(used))

    def stem(
        self,
        index: int | str,
        row: Mapping[str, Any],
        fields: Mapping[str, Any],
        where: str | None = None,
    ) -> str:
        """The row's file name with :data:`EXT_MARK` and :data:`OUTPUT_MARK` standing
        for what the output decides; ``index`` is the row's name (a DataFrame's label),
        ``where`` how messages name it. A value that does not format is a PayloadError."""
        values: dict[str, Any] = {name: safe_part(row.get(name)) for name in self.columns}
        values.update({k: safe_part(v) for k, v in fields.items() if k in self.names})
        row_name = index if isinstance(index, int) else safe_part(index)
        values.update(row=row_name, ext=EXT_MARK, output=OUTPUT_MARK)
        try:
            rendered = self.text.format_map(values)
        except (ValueError, TypeError, KeyError, IndexError) as exc:
            raise problem((where or f"row {index}", "filenames"), f"{self.text!r}: {exc}") from None
        name = _tidy(rendered)
        if name.startswith("."):  # nothing before the extension (an emoji-only prompt)
            row_part = f"{index:05d}" if isinstance(index, int) else values["row"]
            name = row_part + name  # named by its row, not hidden
        name = portable(name)
        if len(name.encode("utf-8")) > MAX_NAME_BYTES:
            head, _, tail = name.rpartition(".")
            name = (
                head.encode("utf-8")[: MAX_NAME_BYTES - 20].decode("utf-8", "ignore") + "." + tail
            )
        return name


def file_name(stem: str, ext: str, output: int, outputs: int) -> str:
    """The name of output ``output`` (0-based) of ``outputs``, with extension ``ext``
    (with or without its dot): the marks replaced, ``-2``, ``-3``... added for a row's
    later outputs when the template has no ``{output}``."""
    ext = ext.lstrip(".") or "bin"
    name = stem
    if OUTPUT_MARK in name:
        name = name.replace(OUTPUT_MARK, str(output + 1))
    elif outputs > 1 and output > 0:
        if EXT_MARK in name:
            head, mark, tail = name.rpartition(EXT_MARK)
            sep = head[-1:] if head[-1:] in (".", "-") else ""  # x.png, x-png: x-2.png, x-2-png
            name = f"{head[: len(head) - len(sep)]}-{output + 1}{sep}{mark}{tail}"
        else:
            name = f"{name}-{output + 1}"
    return portable(name.replace(EXT_MARK, ext))


def _bad(msg: str) -> PayloadError:
    return problem("filenames", msg)
