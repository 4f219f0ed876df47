"""Show outputs by ``content_type``, never by the URL's extension (an extension may lie or
be absent; the gateway states the type).

:func:`render` gives a live widget; :func:`to_html` / :func:`to_mimebundle` give plain
display data, the durable record a saved notebook keeps. One rule says where the browser
gets the bytes (URL, local copy or embedded, by size), every string is escaped and only
safe URLs and media types are used, and media never autoplay:
docs/decisions.md#render-bytes.
"""

from __future__ import annotations

import base64
import functools
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .._formats import human_bytes
from ..jobs.thumbnails import data_url, thumbnail, thumbnail_bytes
from ..protocol.records import Output, Result
from ._style import (
    COLOURS,
    HELP_STYLE,
    KIND_ICONS,
    MUTED_STYLE,
    SAFE_DATA_MIME,
    esc,
    look_of,
    safe_mime,
    table_html,
    url_kind,
)
from .durable import make_durable

if TYPE_CHECKING:
    import ipywidgets

__all__ = [
    "EMBED_LIMIT",
    "Source",
    "live_entry",
    "render",
    "result_html",
    "source_of",
    "to_html",
    "to_mimebundle",
]

#: Bytes above which an output is not pushed through the kernel unless asked.
EMBED_LIMIT = 10 * 1024 * 1024
#: Rule 3: time-based media with an http(s) URL embedded in durable outputs only below these.
DURABLE_EMBED_LIMITS = {"video": 16 * 1024, "audio": 256 * 1024}
#: The live view's local-data fallback of a medium with a URL carries at most this.
FALLBACK_LIMIT = 256 * 1024
POSTER_SIDE = 240
#: A video is this wide in every front-end, as in the live view's CSS (its poster
#: or the page would size it otherwise).
MEDIA_WIDTH = {"video": "width:320px;"}
#: Characters of text/JSON shown before cutting (a huge log should not freeze a tab).
TEXT_LIMIT = 200_000

Renderable = Output | Result | Sequence[Output]


@dataclass(frozen=True)
class Source:
    """Where the browser gets an output: by ``url``, by ``data`` or not at all."""

    how: Literal["url", "bytes", "none"]
    mime: str | None
    url: str | None = None
    data: bytes | None = None
    note: str = ""

    def data_url(self) -> str | None:
        """The bytes as a ``data:`` URL when their type is safe for a browser."""
        if self.data is None or self.mime not in SAFE_DATA_MIME:
            return None
        return f"data:{self.mime};base64,{base64.b64encode(self.data).decode('ascii')}"

    @property
    def href(self) -> str | None:
        return self.url if self.how == "url" else self.data_url()


def _local_size(path: Path | None) -> int | None:
    try:
        return path.stat().st_size if path is not None and path.is_file() else None
    except OSError:
        return None


def _inline_size(output: Output) -> int | None:
    content = output.raw.get("content")
    if content is None:
        return None
    if isinstance(content, str):
        encoding = str(output.raw.get("encoding") or "").lower()
        factor = {"hex": 0.5, "base64": 0.75}.get(encoding, 1.0)
        return int(len(content) * factor)
    return len(json.dumps(content, default=str))


def _too_large(size: int, embed: bool | None) -> str:
    return (
        f"{human_bytes(size)}, above the {human_bytes(EMBED_LIMIT)} embedding limit: "
        "not sent through the kernel (pass embed=True to show it anyway)"
    )


MEDIA_KINDS = frozenset({"image", "video", "audio"})


def source_of(
    output: Output, *, embed: bool | None = None, fetch: bool = False, prefer_url: bool = False
) -> Source:
    """Apply the module's rule: by URL, by bytes, or not at all (with a reason).

    ``fetch`` allows :meth:`Output.read` to download an http(s) URL for kinds
    that need their content in the kernel (JSON, text). ``prefer_url`` is rule
    2 (live widgets): a media output with an http(s) URL goes by URL.
    """
    mime = safe_mime(output.content_type)
    if mime is None:
        return Source("none", None, note="the content type is not a valid media type")
    url = output.url
    kind = url_kind(url) if url else None

    def read(note: str = "") -> Source:
        try:
            return Source("bytes", mime, data=output.read())
        except Exception as exc:  # a dead URL, a broken local file, bad inline data
            if kind in {"http", "relative"}:
                return Source("url", mime, url=url, note=note)
            return Source("none", mime, note=f"could not read it ({type(exc).__name__})")

    if embed:
        return read()
    local = _local_size(output.path)
    # From the ledger (a past session): its URL has likely stopped answering
    # (gateway URLs expire; the embedded simulator's died with its kernel).
    stale = output.restored and local is not None
    if prefer_url and kind == "http" and output.kind in MEDIA_KINDS and not stale:
        return Source("url", mime, url=url)
    inline = _inline_size(output)
    budget = DURABLE_EMBED_LIMITS.get(output.kind)
    if kind == "http" and budget is not None and not stale:
        size = local if local is not None else inline
        if size is None or size > budget:
            return Source("url", mime, url=url)
    if local is not None or inline is not None:
        size = local if local is not None else inline
        assert size is not None
        if size <= EMBED_LIMIT:
            return read()
        if kind in {"http", "relative"}:
            return Source("url", mime, url=url)
        where = f" (saved at {output.path})" if local is not None else ""
        return Source("none", mime, note=_too_large(size, embed) + where)
    if kind == "data":
        assert url is not None
        size = len(url) * 3 // 4
        if size > EMBED_LIMIT:
            return Source("none", mime, note=_too_large(size, embed))
        return read()
    if kind in {"http", "relative"}:
        needs_content = output.kind in {"json", "text"}
        if needs_content and fetch:
            declared = output.raw.get("file_size")
            if not isinstance(declared, int) or declared <= EMBED_LIMIT:
                return read()
        return Source("url", mime, url=url)
    if url:
        return Source("none", mime, note="its URL uses a scheme or characters that are not allowed")
    return Source("none", mime, note="it has neither a URL nor content")


def _file_name(output: Output) -> str:
    name = output.raw.get("file_name")
    if isinstance(name, str) and name.strip():
        return name.strip()
    return f"output {output.index}"


def caption_text(output: Output) -> str:
    """``name · content type · size``: the line under an output (plain text)."""
    size = output.raw.get("file_size")
    size_text = f" · {human_bytes(size)}" if isinstance(size, int) and size > 0 else ""
    return f"{_file_name(output)} · {output.content_type}{size_text}"


def _caption(output: Output) -> str:
    saved = f" · saved at {esc(output.path)}" if _local_size(output.path) is not None else ""
    return f'<div class="gw-caption" style="{HELP_STYLE}">{esc(caption_text(output))}{saved}</div>'


@functools.lru_cache(maxsize=256)
def _poster(path: str, mtime: float) -> str | None:
    try:
        import av
        from PIL import Image

        with av.open(path) as container:
            frame = next(container.decode(video=0))
            image: Image.Image = frame.to_image()
    except Exception:  # no decoder, not a video, a broken file: no poster
        return None
    image.thumbnail((POSTER_SIDE, POSTER_SIDE))
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, format="JPEG", quality=60)
    return "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def poster_data_url(path: Path | None) -> str | None:
    """A small JPEG of a local video's first frame, as a data URL (None if unavailable)."""
    if path is None or _local_size(path) is None:
        return None
    return _poster(str(path), path.stat().st_mtime)


def _thumbnail_url(output: Output, source: Source, fetch: bool) -> str | None:
    """A small picture of an image output as a ``data:`` URL: from the thumbnail
    cached beside its local copy, else made from the bytes in hand (inline
    content, or read from the URL when ``fetch`` allows); ``None`` when there
    are no bytes or they are not a picture."""
    if _local_size(output.path) is not None:
        assert output.path is not None
        made = thumbnail(output.path)
        return data_url(made) if made is not None else None
    data = source.data
    if data is None and fetch and source.how == "url":
        try:
            data = output.read()
        except Exception:  # a dead URL: the static copy keeps the <img> by URL
            data = None
    if data is not None:
        small = thumbnail_bytes(data)
        if small is not None:
            return f"data:{small[1]};base64,{base64.b64encode(small[0]).decode('ascii')}"
    return None


def _thumbnail_html(output: Output, source: Source, name: str, fetch: bool) -> str | None:
    """The durable copy of an image (rule 3c): its thumbnail embedded, linked to the
    full output (its http(s) URL while that answers), so a saved notebook stays
    light and still shows it after the kernel and the gateway are gone."""
    small = _thumbnail_url(output, source, fetch)
    if small is None:
        return None
    image = (
        f'<img class="gw-thumb" src="{esc(small)}" alt="{name}" style="max-width:100%;height:auto">'
    )
    full = output.url if output.url and url_kind(output.url) == "http" else None
    if full is None:
        return image
    return f'<a href="{esc(full)}" target="_blank" rel="noopener noreferrer">{image}</a>'


def _unavailable_html(output: Output, note: str) -> str:
    icon = KIND_ICONS.get(output.kind, KIND_ICONS["binary"])
    return (
        f'<div class="gw-unavailable">{icon} {esc(_file_name(output))} '
        f"<code>{esc(output.content_type)}</code>: not shown, {esc(note)}</div>"
    )


def _decode_json(data: bytes) -> Any:
    value = json.loads(data.decode("utf-8"))
    if isinstance(value, str):  # asset-get: a JSON string holding the record
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _content_html(output: Output, source: Source) -> str:
    """JSON → a table, text → ``<pre>``; falls back to a link when no content."""
    if source.data is None:
        return _link_html(output, source)
    if output.kind == "json":
        try:
            return table_html(_decode_json(source.data))
        except (ValueError, UnicodeDecodeError):
            pass  # not JSON after all: show it as text
    text = source.data.decode("utf-8", errors="replace")
    cut = f"\n… ({len(text) - TEXT_LIMIT} more characters)" if len(text) > TEXT_LIMIT else ""
    return f'<pre style="white-space:pre-wrap;margin:0">{esc(text[:TEXT_LIMIT] + cut)}</pre>'


def _link_html(output: Output, source: Source) -> str:
    href = source.href
    if href is None:
        return _unavailable_html(output, source.note or "no safe address")
    name = _file_name(output)
    return (
        f'<a class="gw-download" href="{esc(href)}" download="{esc(name)}" target="_blank" '
        f'rel="noopener noreferrer">⬇ {esc(name)}</a>'
    )


def to_html(
    output: Output,
    *,
    embed: bool | None = None,
    fetch: bool = False,
    caption: bool = True,
    prefer_url: bool = False,
) -> str:
    """One output as an escaped HTML fragment: ``<img>``, ``<video controls>``,
    ``<audio controls>``, a table, a ``<pre>`` or a download link."""
    source = source_of(output, embed=embed, fetch=fetch, prefer_url=prefer_url)
    if source.how == "none":
        return _unavailable_html(output, source.note)
    kind = output.kind
    href = source.href
    name = esc(_file_name(output))
    if kind in MEDIA_KINDS and href is not None:
        src = esc(href)
        durable = (
            None
            if prefer_url or embed or kind != "image"
            else _thumbnail_html(output, source, name, fetch)
        )
        if durable is not None:
            body = durable
        elif kind == "image":
            body = f'<img src="{src}" alt="{name}" style="max-width:100%;height:auto">'
        else:  # no autoplay, no loop: docs/decisions.md#render-bytes
            poster = (
                poster_data_url(output.path) if kind == "video" and source.how == "url" else None
            )
            poster_attr = f' poster="{esc(poster)}"' if poster else ""
            body = (
                f'<{kind} controls preload="metadata" src="{src}"{poster_attr} '
                f'style="{MEDIA_WIDTH.get(kind, "")}max-width:100%"></{kind}>'
            )
    elif kind in {"json", "text"}:
        body = _content_html(output, source)
    else:
        body = _link_html(output, source)
    return f'<div class="gw-output">{body}{_caption(output) if caption else ""}</div>'


def _outputs_of(obj: Renderable) -> list[Output]:
    if isinstance(obj, Output):
        return [obj]
    if isinstance(obj, Result):
        return list(obj.outputs)
    if isinstance(obj, Sequence) and not isinstance(obj, (str, bytes)):
        items = list(obj)
        if all(isinstance(o, Output) for o in items):
            return items
    raise TypeError(
        f"render() takes an Output, a Result or a list of Outputs, not {type(obj).__name__}"
    )


def _error_banner(result: Result) -> str:
    """The failure line of a result; none for a success or a cancellation (grey, no
    error line: the one look of :func:`look_of` decides)."""
    look = look_of(None, result)
    if look.category != "failed":
        return ""
    kind = f" ({look.error_type})" if look.error_type else ""
    return (
        f'<div class="gw-error" style="color:{COLOURS["failed"]}">failed: '
        f"{esc(look.error or '')}{esc(kind)}</div>"
    )


GRID_CSS = "display:grid;grid-template-columns:repeat(auto-fill,minmax(260px,1fr));gap:8px"


def result_html(obj: Renderable, *, embed: bool | None = None, fetch: bool = False) -> str:
    """A Result (or outputs) as HTML: its error, if any, then the outputs in a grid."""
    outputs = _outputs_of(obj)
    banner = _error_banner(obj) if isinstance(obj, Result) else ""
    if not outputs:
        asset = obj.asset if isinstance(obj, Result) and obj.ok else None
        if asset is not None:
            empty = table_html(asset)
        else:
            empty = "" if banner else f'<div style="{MUTED_STYLE}">no outputs</div>'
        return f'<div class="gw-result">{banner}{empty}</div>'
    cells = "".join(to_html(o, embed=embed, fetch=fetch) for o in outputs)
    return f'<div class="gw-result">{banner}<div style="{GRID_CSS}">{cells}</div></div>'


def _plain(obj: Renderable) -> str:
    outputs = _outputs_of(obj)
    lines = []
    if isinstance(obj, Result) and not obj.ok:
        lines.append(f"failed: {obj.error}" + (f" ({obj.error_type})" if obj.error_type else ""))
    for o in outputs:
        where = o.url if o.url and url_kind(o.url) == "http" else (str(o.path) if o.path else "")
        lines.append(f"{o.content_type} {_file_name(o)} {where}".rstrip())
    return "\n".join(lines) or "no outputs"


def to_mimebundle(
    obj: Renderable, *, embed: bool | None = None, fetch: bool = False
) -> dict[str, str]:
    """Plain display data (``text/html`` + ``text/plain``) that survives saving,
    VS Code, GitHub and nbconvert, unlike widget state."""
    return {"text/html": result_html(obj, embed=embed, fetch=fetch), "text/plain": _plain(obj)}


def live_entry(output: Output, *, poster: bool = True) -> dict[str, Any]:
    """One output as the live task view's ES module draws it (rule 2: media by
    their http(s) URL, else by a ``data:`` URL of their bytes).

    Media: ``kind``, ``url``, ``content_type``, ``poster`` (a video's first frame
    when a local copy exists and ``poster``) and a plain-text ``caption``; the browser loads
    them itself. ``fallback``: where the URL may stop answering (gateway URLs
    expire, the embedded simulator's die with the kernel) and the durable rule
    (3/3b) has the bytes, a ``data:`` URL of at most :data:`FALLBACK_LIMIT`
    bytes that the browser loads only if the URL fails, so a saved notebook's
    widget state still plays. Anything else (JSON, text, a download link, "not shown") comes
    as ``html``, escaped here like every fragment of this module.
    """
    source = source_of(output, prefer_url=True)
    entry: dict[str, Any] = {
        "kind": output.kind,
        "content_type": output.content_type,
        "name": _file_name(output),
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
                entry["poster"] = poster_data_url(output.path)
            durable = source_of(output)
            if durable.data is not None and len(durable.data) <= FALLBACK_LIMIT:
                entry["fallback"] = durable.data_url()
    else:
        entry["kind"] = output.kind if source.how != "none" else "unavailable"
        entry["html"] = to_html(output, caption=False, prefer_url=True)
    return entry


# --- widgets ----------------------------------------------------------------


def _html_widget(value: str) -> ipywidgets.HTML:
    import ipywidgets

    return ipywidgets.HTML(value=value, layout=ipywidgets.Layout(max_width="100%"))


def _media_widget(output: Output, source: Source) -> ipywidgets.Widget:
    import ipywidgets

    kind = output.kind
    cls: type[ipywidgets.Widget] = {
        "image": ipywidgets.Image,
        "video": ipywidgets.Video,
        "audio": ipywidgets.Audio,
    }[kind]
    options: dict[str, Any] = (
        {}
        if kind == "image"
        else {
            "controls": True,
            "autoplay": False,
            "loop": False,
        }
    )
    layout = ipywidgets.Layout(max_width="100%")
    if source.how == "url":
        assert source.url is not None
        return cls(value=source.url.encode("utf-8"), format="url", layout=layout, **options)
    assert source.data is not None and source.mime is not None
    if source.mime not in SAFE_DATA_MIME:
        return _html_widget(_unavailable_html(output, "its media type is not shown by browsers"))
    return cls(value=source.data, format=source.mime.split("/", 1)[1], layout=layout, **options)


def _render_one(output: Output, *, embed: bool | None, fetch: bool) -> ipywidgets.Widget:
    source = source_of(output, embed=embed, fetch=fetch, prefer_url=True)
    if source.how == "none":
        return _html_widget(_unavailable_html(output, source.note))
    if output.kind in {"image", "video", "audio"}:
        return _media_widget(output, source)
    if output.kind in {"json", "text"}:
        return _html_widget(_content_html(output, source))
    return _html_widget(_link_html(output, source))


def render(obj: Renderable, *, embed: bool | None = None, fetch: bool = True) -> ipywidgets.Widget:
    """A widget for an output (Image, Video, Audio or HTML), or a ``GridBox`` of
    them for a Result or a list of outputs (a failed Result starts with its
    error in red). See the module docstring for the by-URL/by-bytes rule.

    Displayed as a cell's result, it is the widget with its static copy
    (:func:`to_mimebundle`), and the static copy alone from the end of the
    cell: nothing in it changes, and a notebook saved without widget state
    then still shows it (:mod:`genwidgets.widgets.durable`)."""
    widget = _render_widget(obj, embed=embed, fetch=fetch)
    return make_durable(widget, lambda: to_mimebundle(obj, embed=embed, fetch=fetch))


def _render_widget(obj: Renderable, *, embed: bool | None, fetch: bool) -> ipywidgets.Widget:
    import ipywidgets

    if isinstance(obj, Output):
        return _render_one(obj, embed=embed, fetch=fetch)
    outputs = _outputs_of(obj)
    children: list[ipywidgets.Widget] = []
    if isinstance(obj, Result) and not obj.ok:
        children.append(_html_widget(_error_banner(obj)))
    if isinstance(obj, Result) and obj.ok and not outputs and obj.asset is not None:
        children.append(_html_widget(table_html(obj.asset)))
    children += [_render_one(o, embed=embed, fetch=fetch) for o in outputs]
    return ipywidgets.GridBox(
        children=children,
        layout=ipywidgets.Layout(
            grid_template_columns="repeat(auto-fill, minmax(260px, 1fr))", grid_gap="8px"
        ),
    )
