"""What a saved notebook keeps of an output: its lasting face, which needs no kernel.

Plain HTML that plays with the kernel, its port and the gateway gone: an image as its
thumbnail, a video by ``GENWIDGETS_SAVED_MEDIA``, audio embedded, JSON and text laid
out. Bytes come from the local copy or the record, never from the network, and no
loopback URL is used: docs/decisions.md#saved-media.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TypeVar

from .._config import SAVED_MEDIA, home, is_loopback, saved_media, served_url, shown_path
from .._formats import decode_data_url, human_bytes, json_nested_deeper, terminal_text
from .._html import SAFE_DATA_MIME, safe_mime, url_kind
from ..jobs.downloads import MAX_OUTPUTS
from ..jobs.previews import preview
from ..media.thumbnails import data_url, thumbnail, thumbnail_bytes
from ..protocol.body import MAX_DEPTH
from ..protocol.output import ReadBudget
from ..protocol.records import Output, Result
from . import markup
from ._style import MUTED_STYLE, look_of
from .markup import Html, table_html

__all__ = [
    "AUDIO_LIMIT",
    "EMBED_LIMIT",
    "FACE_OUTPUTS",
    "FACE_READS",
    "FACE_READ_SECONDS",
    "MEDIA_KINDS",
    "POSTER_SIDE",
    "TEXT_BUDGET",
    "VIDEO_BUDGET",
    "caption_text",
    "content_html",
    "error_banner",
    "file_name",
    "hold_media",
    "in_hand",
    "left_out_html",
    "left_out_words",
    "local_file",
    "local_size",
    "media_choice",
    "needs_holding",
    "output_html",
    "outputs_html",
    "picture_src",
    "plain_text",
    "result_html",
    "safe_data_url",
    "thumbnail_src",
    "unavailable_html",
    "within_text_budget",
]

#: Bytes above which a file is never pushed through the kernel unless asked (live
#: widgets) or embedded whole (``full``): a 2 GB video must not become a page.
EMBED_LIMIT = 10 * 1024 * 1024
#: Audio is embedded up to this (speech is small: a minute is about 1 MB).
AUDIO_LIMIT = 4 * 1024 * 1024
#: Bytes of one video a lasting face keeps by default (``previews``): the video itself
#: when it is this small, else its preview made to fit. A data URL is base64 (4/3 of the
#: bytes), so with its poster and markup a video weighs under 300 KB in the saved
#: notebook (benchmarks/notebook_weight.py measures it).
VIDEO_BUDGET = 200_000
#: The outputs of one result a face lays out (the lasting face, the console's, the task
#: view's, ``gw.render``'s, a grid page's cell): as many as the client downloads of one
#: result; the others are counted, never laid out (10,000 made a 4.8 MB notebook).
FACE_OUTPUTS = MAX_OUTPUTS
#: An image no thumbnail can be made of (a format Pillow does not read) is embedded
#: as it is up to this.
SMALL_IMAGE = 256 * 1024
POSTER_SIDE = 240
#: An image's thumbnail in a lasting face (a big grid's sheet takes smaller ones).
THUMB_SIDE = 256
#: Characters of text/JSON shown before cutting (a huge log should not freeze a tab).
TEXT_LIMIT = 200_000
#: Characters of text and JSON one result's face lays out in all (a saved notebook keeps
#: it twice: the lasting face and the live view's state), the README's 1.5 MB notebook
#: in mind; the outputs past it are listed with how to read them (:func:`within_text_budget`).
TEXT_BUDGET = 400_000
MEDIA_KINDS = frozenset({"image", "video", "audio"})
#: The JSON and text outputs one face with ``fetch`` reads from a gateway, each begun
#: before one deadline: a result listing thousands is not read one file after another
#: (the others are linked; docs/decisions.md#grid-page-reads).
FACE_READS = 20
FACE_READ_SECONDS = 30.0
T = TypeVar("T")


def media_choice(media: str | None = None) -> str:
    """``media`` if given (checked), else the environment's (``_config.saved_media``)."""
    if media is None:
        return saved_media()
    if media not in SAVED_MEDIA:
        raise ValueError(f"media={media!r} is not a choice: use one of {', '.join(SAVED_MEDIA)}")
    return media


# --- describing an output ------------------------------------------------------------


def file_name(output: Output) -> str:
    """The gateway's ``file_name`` of an output, inert (an escape sequence in it is shown,
    never run by a console), or ``output N``."""
    name = output.raw.get("file_name")
    if isinstance(name, str) and name.strip():
        return terminal_text(name.strip())
    return f"output {output.index}"


def caption_text(output: Output) -> str:
    """``name · content type · size``: the line under an output (plain text)."""
    size = output.raw.get("file_size")
    size_text = f" · {human_bytes(size)}" if isinstance(size, int) and size > 0 else ""
    return f"{file_name(output)} · {output.content_type}{size_text}"


def local_file(output: Output) -> Path | None:
    """The output's local copy (the ledger's download), when it is there."""
    path = output.path
    try:
        return path if path is not None and path.is_file() else None
    except OSError:
        return None


def local_size(output: Output) -> int | None:
    """The size of the output's local copy; None when it has none it can read."""
    local = local_file(output)
    try:
        return local.stat().st_size if local is not None else None
    except OSError:
        return None


def caption_html(output: Output, *, extra: str = "") -> Html:
    """The caption: name, type, size, where the ledger kept it (``shown_path``) and,
    where a Jupyter server serves it, a link to the full file."""
    local = local_file(output)
    saved = shown_path(local) if local is not None else None
    link = served_url(local) if local is not None else None
    return markup.caption(caption_text(output), saved=saved, extra=extra, link=link)


def unavailable_html(output: Output, note: str) -> Html:
    return markup.unavailable(output.kind, file_name(output), output.content_type, note)


def in_hand(output: Output, limit: int) -> bytes | None:
    """The output's bytes without the network: the local copy, bytes read earlier,
    inline content or a ``data:`` URL; ``None`` when none is there or it is over ``limit``."""
    local = local_file(output)
    if local is not None:
        size = local_size(output)
        return local.read_bytes() if size is not None and size <= limit else None
    data = output.in_hand()
    if data is None and (output.url or "").startswith("data:") and url_kind(output.url) == "data":
        try:
            data = decode_data_url(output.url or "").data
        except ValueError:
            data = None
    return data if data is not None and len(data) <= limit else None


def safe_data_url(mime: str | None, data: bytes | None) -> str | None:
    """The bytes as a ``data:`` URL when their type is safe for a browser; None when it
    is not, or there are no bytes (none in hand)."""
    if mime not in SAFE_DATA_MIME or data is None:
        return None
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def picture_src(output: Output, side: int = THUMB_SIDE, data: bytes | None = None) -> str | None:
    """An output's thumbnail as a ``data:`` URL: from its local copy (an image, or a
    video's first frame; cached beside it), else from an image's bytes (``data``, or
    those in hand); ``None`` when no picture can be made of them."""
    local = local_file(output)
    made = thumbnail(local, side) if local is not None else None
    if made is not None:
        return data_url(made)
    if output.kind != "image":
        return None
    data = data if data is not None else in_hand(output, EMBED_LIMIT)
    found = thumbnail_bytes(data, side) if data is not None else None
    return safe_data_url(found[1], found[0]) if found is not None else None


def _remote(output: Output) -> str | None:
    """An http(s) URL that may still answer later (a gateway's, never loopback)."""
    url = output.url
    if url and url_kind(url) == "http" and not is_loopback(url):
        return url
    return None


# --- one output -----------------------------------------------------------------------


def _image_html(output: Output, mime: str, media: str, side: int) -> Html | None:
    local = local_file(output)
    src = safe_data_url(mime, in_hand(output, EMBED_LIMIT)) if media == "full" else None
    src = src or picture_src(output, side)
    if src is None:  # no thumbnail: embedded as it is when it is small, else its URL
        src = safe_data_url(mime, in_hand(output, SMALL_IMAGE)) or _remote(output)
    if src is None:
        return None
    link = served_url(local) if local is not None else None
    return markup.image(src, file_name(output), cls="gw-thumb", link=link)


def _video_html(output: Output, mime: str, media: str) -> tuple[Html, str] | None:
    """The video's element and a word for the caption (``preview``, ``poster only``)."""
    local = local_file(output)
    poster = picture_src(output, POSTER_SIDE)
    src: str | None = None
    note = ""
    if media in ("full", "previews"):
        # a video already within the budget is kept whole (with its sound)
        limit = EMBED_LIMIT if media == "full" else VIDEO_BUDGET
        src = safe_data_url(mime, in_hand(output, limit))
        made = preview(local, VIDEO_BUDGET) if src is None and local is not None else None
        if made is not None:
            src = safe_data_url("video/mp4", made.read_bytes())
            note = " · preview"
    if src is None and (media != "posters" or poster is None):
        src = _remote(output)
    if src is not None:
        return markup.media("video", src, file_name(output), poster), note
    if poster is None:
        return None
    said = " · poster only" if media == "posters" else " · poster only (no preview could be made)"
    return markup.image(poster, file_name(output), cls="gw-poster", style=markup.VIDEO_STYLE), said


def _audio_html(output: Output, mime: str) -> Html | None:
    src = safe_data_url(mime, in_hand(output, AUDIO_LIMIT)) or _remote(output)
    return markup.media("audio", src, file_name(output)) if src is not None else None


def content_html(output: Output, data: bytes) -> Html:
    """JSON as a table, text as ``<pre>`` (escaped, cut at :data:`TEXT_LIMIT`)."""
    if output.kind == "json" and not json_nested_deeper(data, MAX_DEPTH):  # else: as text
        try:
            value = json.loads(data.decode("utf-8"))
            # asset-get: a JSON string holding the record
            if isinstance(value, str) and not json_nested_deeper(value, MAX_DEPTH):
                with contextlib.suppress(ValueError):
                    value = json.loads(value)
            return table_html(value)
        except (ValueError, UnicodeDecodeError):
            pass  # not JSON after all: show it as text
    text = data.decode("utf-8", errors="replace")
    cut = f"\n… ({len(text) - TEXT_LIMIT} more characters)" if len(text) > TEXT_LIMIT else ""
    return markup.text_block(text[:TEXT_LIMIT] + cut)


def _content(output: Output, reads: ReadBudget | None) -> Html | None:
    data = in_hand(output, EMBED_LIMIT)
    if data is None and reads is not None and _remote(output) is not None:
        if reads.refused() is not None:  # past the face's budget: linked below
            return None
        try:
            data = reads.read(output, EMBED_LIMIT)  # never more than is embedded
        except Exception:  # a dead URL, a body over the limit: shown as a link below
            data = None
    return content_html(output, data) if data is not None else None


def face_reads(fetch: bool) -> ReadBudget | None:
    """One face's budget of reads (:data:`FACE_READS`), None without ``fetch``."""
    return ReadBudget(FACE_READS, FACE_READ_SECONDS) if fetch else None


def _held_limit(output: Output) -> int | None:
    """The bytes a lasting face keeps of a media output it could show nothing of (no
    local copy, none in hand, a URL of this machine, which no saved page may use):
    what it embeds of its kind; None when it needs none."""
    limits = {"image": EMBED_LIMIT, "audio": AUDIO_LIMIT, "video": VIDEO_BUDGET}
    url = output.url or ""
    if output.kind not in limits or local_file(output) is not None:
        return None
    if output.in_hand() is not None or url_kind(url) != "http" or not is_loopback(url):
        return None
    return limits[output.kind]


def hold_media(outputs: Sequence[Output]) -> bool:
    """Read once, while their server answers, the media no lasting face could show (no
    local copy: a home that cannot be written, a client keeping none), within one face's
    :class:`ReadBudget`, each up to what a face embeds of it; kept in memory (``in_hand``)
    for every later face. It reads the network: never on a write path (a background
    worker's). True when any was read."""
    reads = ReadBudget(FACE_READS, FACE_READ_SECONDS)
    held = False
    for output in outputs:
        limit = _held_limit(output)
        if limit is None or reads.refused() is not None:
            continue
        with contextlib.suppress(Exception):  # gone or too big: the face says it is not kept
            reads.read(output, limit)
            held = True
    return held


def needs_holding(outputs: Sequence[Output]) -> bool:
    """Whether :func:`hold_media` has any output to read."""
    return any(_held_limit(o) is not None for o in outputs)


def _writable(folder: Path) -> bool:
    """Whether files can be made in ``folder``, or in its nearest folder that exists."""
    while not folder.exists() and folder.parent != folder:
        folder = folder.parent
    return os.access(folder, os.W_OK)


def _missing(output: Output) -> str:
    if output.url or output.path is not None:
        said = "it was not kept locally"
        if not _writable(home()):  # the commonest reason: say it
            said += " (GENWIDGETS_HOME cannot be written)"
        if output.url and url_kind(output.url) == "http" and is_loopback(output.url):
            said += "; its URL is on the machine that made it, which a saved page never uses"
        return said
    return "it has neither a URL nor content"


def output_html(
    output: Output,
    *,
    media: str | None = None,
    fetch: bool = False,
    caption: bool = True,
    side: int = THUMB_SIDE,
    reads: ReadBudget | None = None,
) -> Html:
    """One output's lasting face (see the module docstring); ``fetch`` allows reading
    JSON or text from a gateway's URL (never on a view's write path), within ``reads``
    (the face's budget; its own when not given); ``side``: an image's thumbnail's
    longest side."""
    media = media_choice(media)
    mime = safe_mime(output.content_type)
    if mime is None:
        return unavailable_html(output, "the content type is not a valid media type")
    kind = output.kind
    extra = ""
    body: Html | None
    if kind == "image":
        body = _image_html(output, mime, media, side)
    elif kind == "video":
        found = _video_html(output, mime, media)
        body, extra = found if found is not None else (None, "")
    elif kind == "audio":
        body = _audio_html(output, mime)
    elif kind in ("json", "text"):
        budget = reads if reads is not None or not fetch else face_reads(fetch)
        body = _content(output, budget) or _download_html(output)
    else:
        body = _download_html(output)
    if body is None:
        body = unavailable_html(output, _missing(output))
    return markup.box("gw-output", body, caption_html(output, extra=extra) if caption else None)


def _download_html(output: Output) -> Html | None:
    """A file of another type: a link to its full copy where it is served."""
    local = local_file(output)
    link = served_url(local) if local is not None else _remote(output)
    if link is None:
        return None
    return markup.download(link, file_name(output))


def thumbnail_src(outputs: Sequence[Output], side: int = THUMB_SIDE) -> str | None:
    """A small picture of a task's outputs (a table row's, a batch's), as a ``data:``
    URL: the first image's thumbnail or video's first frame (:func:`picture_src`);
    ``None`` when neither is kept (audio, text, or nothing local)."""
    found = (picture_src(o, side) for o in outputs if o.kind in ("image", "video"))
    return next((src for src in found if src is not None), None)


# --- many outputs, a result -----------------------------------------------------------


def error_banner(result: Result) -> Html:
    """The failure line of a result; none for a success or a cancellation (grey, no
    error line: the one look of :func:`~._style.look_of` decides)."""
    look = look_of(None, result)
    if look.category != "failed":
        return Html()
    kind = f" ({look.error_type})" if look.error_type else ""
    return markup.failure(f"failed: {look.error or ''}{kind}")


def within_text_budget(
    drawn: Iterable[tuple[Output, T]], html: Callable[[T], str]
) -> tuple[list[T], Html | None]:
    """Of outputs as a face draws them (each with what shows it, ``html`` its markup),
    those one face keeps within :data:`TEXT_BUDGET`, and the block that lists the rest
    (None when none is left out). Text and JSON outputs are laid out until it is spent
    (the first always is), and every one after that is listed, by name, type and size,
    with how to read it (a thousand small logs made a 15 MB notebook). Media are always
    kept: they have their own budgets per output (:data:`VIDEO_BUDGET`)."""
    left = TEXT_BUDGET
    kept: list[T] = []
    listed: list[Output] = []
    for output, shown in drawn:
        if output.kind in ("json", "text"):
            size = len(html(shown))
            if listed or (size > left and left != TEXT_BUDGET):  # they are listed in order
                listed.append(output)
                continue
            left -= size
        kept.append(shown)
    return kept, (_listing(listed) if listed else None)


def _listing(outputs: Sequence[Output]) -> Html:
    """The outputs not laid out: how to read them, then one line each (the first
    :data:`LISTED_LINES`)."""
    lines = []
    for output in outputs[:LISTED_LINES]:
        local = local_file(output)
        saved = f" · saved at {shown_path(local)}" if local is not None else ""
        lines.append(f"[{output.index}] {caption_text(output)}{saved}")
    if len(outputs) > LISTED_LINES:
        lines.append(f"… and {len(outputs) - LISTED_LINES} more")
    note = (
        f"{len(outputs)} more text outputs are not shown: a view lays out at most "
        f"{TEXT_BUDGET:,} characters of text. Read one in the kernel with "
        "result.outputs[i].text() or save it with result.outputs[i].save(path) (i in "
        "brackets below)"
    )
    return markup.box(
        "gw-listed", markup.div(note, MUTED_STYLE), markup.text_block("\n".join(lines))
    )


#: Lines of the listing of :func:`within_text_budget` (a result of thousands of outputs).
LISTED_LINES = 200


def left_out_words(total: int, where: str = "result.outputs", of: str = "a result") -> str | None:
    """What a face says of the outputs past :data:`FACE_OUTPUTS` of ``total`` (None when
    there are none), and where they all are (``where``): every face's words."""
    more = total - FACE_OUTPUTS
    if more <= 0:
        return None
    return (
        f"{more:,} more output{'s' if more != 1 else ''} not shown: at most {FACE_OUTPUTS} "
        f"of {of} are (as many as the client downloads of one result); {where} lists "
        f"all {total:,}"
    )


def left_out_html(total: int) -> Html | None:
    """:func:`left_out_words` as a face's muted line."""
    words = left_out_words(total)
    return None if words is None else markup.div(words, MUTED_STYLE)


def outputs_html(
    outputs: Sequence[Output],
    *,
    media: str | None = None,
    fetch: bool = False,
    labels: Sequence[str] | None = None,
) -> Html:
    """Outputs side by side (260 px columns), each above its caption; ``labels``
    (one per output) go above them in bold, for before/after comparisons. Text and
    JSON up to :data:`TEXT_BUDGET` in all, the rest listed (:func:`within_text_budget`);
    with ``fetch``, at most :data:`FACE_READS` of them read from a gateway; the first
    :data:`FACE_OUTPUTS`, the others counted."""
    more = left_out_html(len(outputs))
    outputs = outputs[:FACE_OUTPUTS]
    media = media_choice(media)
    heads: list[Html | None] = [markup.bold(label) for label in labels or ()]
    heads += [None] * (len(outputs) - len(heads))
    reads = face_reads(fetch)  # one budget for all of them
    drawn = [
        (output, (head, output_html(output, media=media, fetch=fetch, reads=reads)))
        for output, head in zip(outputs, heads, strict=False)
    ]
    cells, listing = within_text_budget(drawn, lambda cell: cell[1])
    shown = markup.columns((markup.box(None, head, html) for head, html in cells), 260, 8)
    return markup.join([shown, listing, more]) if listing or more else shown


def result_html(result: Result, *, media: str | None = None, fetch: bool = False) -> Html:
    """A result's lasting face: its error, if any, then its outputs (or the asset
    record of a result that has none, as a table)."""
    banner = error_banner(result)
    if not result.outputs:
        if result.ok and result.asset is not None:
            return markup.box("gw-result", banner, table_html(result.asset))
        return markup.box(
            "gw-result", banner, None if banner else markup.div("no outputs", MUTED_STYLE)
        )
    return markup.box("gw-result", banner, outputs_html(result.outputs, media=media, fetch=fetch))


def plain_text(outputs: Sequence[Output], result: Result | None = None) -> str:
    """The text of the same face, for front-ends without HTML (a console)."""
    lines = []
    if result is not None and not result.ok:
        look = look_of(None, result)  # "cancelled" is not "failed"; an error may be absent
        said = f"{look.word}: {look.error}" if look.error else look.word
        lines.append(said + (f" ({look.error_type})" if look.error_type else ""))
    for output in outputs[:FACE_OUTPUTS]:
        local = local_file(output)
        where = shown_path(local) if local is not None else (_remote(output) or "")
        lines.append(terminal_text(f"{output.content_type} {file_name(output)} {where}".rstrip()))
    more = left_out_words(len(outputs))
    lines += [more] if more else []
    return "\n".join(lines) or "no outputs"
