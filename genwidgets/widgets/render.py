"""Show outputs by ``content_type``, never by the URL's extension (an extension may lie or
be absent; the gateway states the type).

:func:`render` gives a widget; displayed, it is a view's two faces (:mod:`.faces`): the
live widget and its lasting face, which :func:`to_mimebundle` writes (by
:mod:`.lasting`'s rule, the one every saved view follows). One rule says where a live
view's browser gets the bytes (URL, local copy or embedded, by size), every string is
escaped and only safe URLs and media types are used, and media never autoplay:
docs/decisions.md#render-bytes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import ipywidgets

from .._config import shown_path
from .._formats import human_bytes
from .._html import SAFE_DATA_MIME, safe_mime, url_kind
from ..errors import DownloadError
from ..jobs.output_files import OutputFiles
from ..media import inspect
from ..protocol.fetch import MAX_READ_BYTES
from ..protocol.output import ReadBudget
from ..protocol.records import Output, Result
from . import markup
from ._style import HELP_STYLE
from .faces import make_two_faced
from .lasting import (
    EMBED_LIMIT,
    FACE_OUTPUTS,
    MEDIA_KINDS,
    POSTER_SIDE,
    caption_text,
    content_html,
    error_banner,
    face_reads,
    file_name,
    in_hand,
    left_out_html,
    local_size,
    outputs_html,
    picture_src,
    plain_text,
    result_html,
    safe_data_url,
    unavailable_html,
)
from .markup import Html

__all__ = [
    "EMBED_LIMIT",
    "Source",
    "live_entry",
    "render",
    "source_of",
    "to_html",
    "to_mimebundle",
]

#: Rule 3: a live view's fallback for when its URL stops answering keeps time-based
#: media with an http(s) URL only below these.
DURABLE_EMBED_LIMITS = {"video": 16 * 1024, "audio": 256 * 1024}
#: The live view's local-data fallback of a medium with a URL carries at most this.
FALLBACK_LIMIT = 256 * 1024

#: What :func:`render` takes: an output, a result, a list of outputs, or labelled outputs
#: (``{"before": output_or_path, "after": output}``) shown side by side.
Renderable = Output | Result | Sequence[Output] | Mapping[str, "Output | Path"]


@dataclass(frozen=True)
class Source:
    """Where the browser gets an output: by ``url``, by ``data`` or not at all."""

    how: Literal["url", "bytes", "none"]
    mime: str | None
    url: str | None = None
    data: bytes | None = None
    note: str = ""

    @property
    def href(self) -> str | None:
        """The URL, else the bytes as a ``data:`` URL when their type is safe for a browser."""
        return self.url if self.how == "url" else safe_data_url(self.mime, self.data)


def source_of(
    output: Output, *, embed: bool | None = None, reads: ReadBudget | None = None
) -> Source:
    """Apply the module's rule for a live view: by URL, by bytes, or not at all (with
    a reason); a media output with an http(s) URL goes by URL (rule 2).

    ``reads`` (the view's budget of reads from a gateway) allows downloading an
    http(s) URL for kinds that need their content in the kernel (JSON, text), and
    bounds those ``embed`` asks for; one past it is linked, saying why it was not read.
    """
    mime = safe_mime(output.content_type)
    if mime is None:
        return Source("none", None, note="the content type is not a valid media type")
    url = output.url
    kind = url_kind(url) if url else None
    remote = kind in {"http", "relative"} and ReadBudget.asks_gateway(output)

    def read(cap: int = MAX_READ_BYTES) -> Source:
        if remote and reads is not None and (why := reads.refused()) is not None:
            return Source("url", mime, url=url, note=f"not read: {why}")
        try:
            data = reads.read(output, cap) if remote and reads is not None else output.read(cap)
            return Source("bytes", mime, data=data)
        except Exception as exc:  # a dead URL, a broken local file, bad inline data, over cap
            if kind in {"http", "relative"}:
                failed = exc.failures if isinstance(exc, DownloadError) else None
                said = failed[0][1] if failed else type(exc).__name__  # "HTTP 404 Not Found"
                return Source("url", mime, url=url, note=f"not read: {said}")
            return Source("none", mime, note=f"could not read it ({type(exc).__name__})")

    if embed:
        return read()
    local = local_size(output)
    # From the ledger (a past session): its URL has likely stopped answering
    # (gateway URLs expire; the embedded simulator's died with its kernel).
    stale = output.restored and local is not None
    if kind == "http" and output.kind in MEDIA_KINDS and not stale:
        return Source("url", mime, url=url)
    inline = output.inline() if local is None else None
    size = local if inline is None else len(inline)
    if size is None and kind == "data":
        size = len(url or "") * 3 // 4
    if size is not None:
        if size <= EMBED_LIMIT:
            return read()
        if kind in {"http", "relative"}:
            return Source("url", mime, url=url)
        where = f" (saved at {shown_path(output.path)})" if output.path is not None else ""
        return Source(
            "none",
            mime,
            note=f"{human_bytes(size)}, above the {human_bytes(EMBED_LIMIT)} embedding limit: "
            f"not sent through the kernel (pass embed=True to show it anyway){where}",
        )
    if kind in {"http", "relative"}:
        if reads is not None and output.kind in {
            "json",
            "text",
        }:  # they need their content in the kernel
            declared = output.raw.get("file_size")
            if not isinstance(declared, int) or declared <= EMBED_LIMIT:
                # what a record declares is no bound: read at most the limit, else link it
                return read(cap=EMBED_LIMIT)
        return Source("url", mime, url=url)
    if url:
        return Source("none", mime, note="its URL uses a scheme or characters that are not allowed")
    return Source("none", mime, note="it has neither a URL nor content")


def to_html(output: Output) -> Html:
    """One output as a live view shows it (a card's outputs, a task view's JSON or
    text), an escaped HTML fragment by :func:`source_of`'s rule (media by their URL
    while it answers): ``<img>``, ``<video controls>``, ``<audio controls>``, a table,
    a ``<pre>`` or a download link. Its lasting face is :func:`~.lasting.output_html`'s."""
    source = source_of(output)
    body = _live_html(output, source)
    return body if source.how == "none" else markup.box("gw-output", body)


def _live_html(output: Output, source: Source) -> Html:
    """The live face's body: media by their address, JSON → a table and text →
    ``<pre>`` when their bytes are in hand, else a download link."""
    href = source.href
    if source.how == "none":
        return unavailable_html(output, source.note)
    if output.kind in MEDIA_KINDS and href is not None:
        return markup.media(output.kind, href, file_name(output))
    if output.kind in {"json", "text"} and source.data is not None:
        return content_html(output, source.data)
    if href is None:
        return unavailable_html(output, source.note or "no safe address")
    link = markup.download(href, file_name(output), rel="noopener noreferrer")
    return markup.join([link, markup.div(source.note, HELP_STYLE)]) if source.note else link


def local_output(path: Path, index: int = 0) -> Output:
    """A local file as an Output (its type from its bytes, as a download's is), read
    as the jobs layer reads a copy it kept."""
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {shown_path(path)}")
    return Output(
        content_type=inspect(path).mime,
        raw={"file_name": path.name, "file_size": path.stat().st_size},
        path=path,
        index=index,
        _source=OutputFiles(),
    )


def _outputs_of(obj: Renderable) -> tuple[list[str] | None, list[Output]]:
    """The outputs of what :func:`render` takes, and their labels when it is labelled
    outputs (each value an Output or a local file, a ``pathlib.Path``)."""
    if isinstance(obj, Output):
        return None, [obj]
    if isinstance(obj, Result):
        return None, list(obj.outputs)
    if isinstance(obj, Mapping):
        labels, outputs = [], []
        for i, (label, value) in enumerate(obj.items()):
            if isinstance(value, Path):
                value = local_output(value, i)
            if not isinstance(value, Output):
                raise TypeError(
                    f"render() takes labelled Outputs or pathlib.Path values, not "
                    f"{type(value).__name__} for {label!r}"
                )
            labels.append(str(label))
            outputs.append(value)
        return labels, outputs
    if isinstance(obj, Sequence) and not isinstance(obj, (str, bytes)):
        items = list(obj)
        if all(isinstance(o, Output) for o in items):
            return None, items
    raise TypeError(
        "render() takes an Output, a Result, a list of Outputs or labelled Outputs "
        f"({{label: Output or pathlib.Path}}), not {type(obj).__name__}"
    )


def to_mimebundle(
    obj: Renderable, *, embed: bool | None = None, fetch: bool = False, media: str | None = None
) -> dict[str, str]:
    """Plain display data (``text/html`` + ``text/plain``): the lasting face, which
    survives saving, VS Code, GitHub and nbconvert, unlike widget state. A Result, outputs
    or labelled outputs: the error, if any, then the outputs side by side
    (``embed=True``: whole files embedded)."""
    media = "full" if embed else media
    labels, outputs = _outputs_of(obj)
    result = obj if isinstance(obj, Result) else None
    if result is not None:
        html = result_html(result, media=media, fetch=fetch)
    else:
        html = markup.box(
            "gw-result", outputs_html(outputs, media=media, fetch=fetch, labels=labels)
        )
    return {"text/html": html, "text/plain": plain_text(outputs, result)}


def live_entry(output: Output, *, poster: bool = True) -> dict[str, Any]:
    """One output as the live task view's ES module draws it (rule 2: media by
    their http(s) URL, else by a ``data:`` URL of their bytes), with a small
    ``fallback`` of the bytes for when the URL stops answering and a video's
    ``poster``; anything else as escaped ``html`` (docs/decisions.md#render-bytes).
    """
    source = source_of(output)
    entry: dict[str, Any] = {
        "kind": output.kind,
        "content_type": output.content_type,
        "name": file_name(output),
        "caption": caption_text(output),
        "url": None,
        "poster": None,
        "fallback": None,
        "html": "",
    }
    href = source.href
    if output.kind in MEDIA_KINDS and source.how != "none" and href is not None:
        entry["url"] = href
        if source.how == "url":
            if output.kind == "video" and poster:
                entry["poster"] = picture_src(output, POSTER_SIDE)
            budget = DURABLE_EMBED_LIMITS.get(output.kind) if url_kind(href) == "http" else None
            limit = min(FALLBACK_LIMIT, budget or FALLBACK_LIMIT)
            entry["fallback"] = safe_data_url(source.mime, in_hand(output, limit))
    else:
        entry["kind"] = output.kind if source.how != "none" else "unavailable"
        entry["html"] = to_html(output)
    return entry


# --- widgets ----------------------------------------------------------------


def _html_widget(value: str) -> ipywidgets.HTML:
    return ipywidgets.HTML(value=value, layout=ipywidgets.Layout(max_width="100%"))


def _media_widget(output: Output, source: Source) -> ipywidgets.Widget:
    kind = output.kind
    cls: type[ipywidgets.Widget] = getattr(ipywidgets, kind.capitalize())  # Image, Video, Audio
    options = {} if kind == "image" else {"controls": True, "autoplay": False, "loop": False}
    layout = ipywidgets.Layout(max_width="100%")
    if source.how == "url":
        assert source.url is not None
        return cls(value=source.url.encode("utf-8"), format="url", layout=layout, **options)
    assert source.data is not None and source.mime is not None
    if source.mime not in SAFE_DATA_MIME:
        return _html_widget(unavailable_html(output, "its media type is not shown by browsers"))
    return cls(value=source.data, format=source.mime.split("/", 1)[1], layout=layout, **options)


def _render_one(
    output: Output, *, embed: bool | None, reads: ReadBudget | None
) -> ipywidgets.Widget:
    source = source_of(output, embed=embed, reads=reads)
    if source.how != "none" and output.kind in MEDIA_KINDS:
        return _media_widget(output, source)
    return _html_widget(_live_html(output, source))


def render(obj: Renderable, *, embed: bool | None = None, fetch: bool = True) -> ipywidgets.Widget:
    """A widget for an output (Image, Video, Audio or HTML), or a ``GridBox`` of
    them for a Result, a list of outputs or labelled outputs (``{"before": Path(...),
    "after": output}``, each under its label: a before/after comparison); a failed
    Result starts with its error in red. See the module docstring for the
    by-URL/by-bytes rule. ``fetch`` reads JSON and text from a gateway's URL (and
    ``embed`` whole files), at most :data:`~.lasting.FACE_READS` within one deadline,
    none after a failure; the others are linked, saying why.

    Displayed as a cell's result (or with ``display()``), it is two outputs: the
    widget, and its lasting face (:func:`to_mimebundle`), which a notebook saved
    without widget state, nbconvert and GitHub show (:mod:`.faces`)."""
    # one budget for all the widget's reads from a gateway (its lasting face has its own)
    widget = _render_widget(obj, embed=embed, reads=face_reads(fetch or bool(embed)))
    return make_two_faced(
        widget, lambda media: to_mimebundle(obj, embed=embed, fetch=fetch, media=media)
    )


def _render_widget(
    obj: Renderable, *, embed: bool | None, reads: ReadBudget | None
) -> ipywidgets.Widget:
    if isinstance(obj, Output):
        return _render_one(obj, embed=embed, reads=reads)
    labels, outputs = _outputs_of(obj)
    children: list[ipywidgets.Widget] = []
    if isinstance(obj, Result) and not (obj.ok and outputs):  # its error, asset or "no outputs"
        children.append(_html_widget(error_banner(obj) if outputs else result_html(obj)))
    for i, output in enumerate(outputs[:FACE_OUTPUTS]):
        widget = _render_one(output, embed=embed, reads=reads)
        if labels is not None:
            widget = ipywidgets.VBox([_html_widget(markup.bold(labels[i])), widget])
        children.append(widget)
    if (more := left_out_html(len(outputs))) is not None:
        children.append(_html_widget(more))
    return ipywidgets.GridBox(
        children=children,
        layout=ipywidgets.Layout(
            grid_template_columns="repeat(auto-fill, minmax(260px, 1fr))", grid_gap="8px"
        ),
    )
