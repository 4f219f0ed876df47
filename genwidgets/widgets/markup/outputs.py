"""Outputs in HTML: an image, a poster, a video, audio, text, a link, under their caption.

:mod:`..lasting` chooses the bytes or URL a lasting face keeps, :mod:`..render` the
URL a live card uses; both write them here. Every URL arrives checked (``url_kind``).
"""

from __future__ import annotations

from collections.abc import Iterable

from ..._html import Html, tag
from .._style import HELP_STYLE, MUTED_STYLE
from .pieces import bold, code, div

__all__ = [
    "GRID_CSS",
    "VIDEO_STYLE",
    "audio",
    "caption",
    "download",
    "image",
    "live_caption",
    "live_media",
    "no_outputs",
    "output_box",
    "outputs_grid",
    "poster",
    "result_box",
    "text_block",
    "unavailable",
    "video",
]

# --- outputs: lasting (lasting.py) and live (render.py) --------------------------------

#: One width for every video, live or lasting (a poster or the page would size it).
VIDEO_STYLE = "width:320px;max-width:100%;height:auto"
_NEW_TAB = {"target": "_blank", "rel": "noopener"}


def caption(
    text: str, *, saved: str | None = None, extra: str = "", link: str | None = None
) -> Html:
    """The caption under an output: its text, where the ledger kept it (``saved``),
    ``extra`` words and a link to the full file (``link``, a checked URL)."""
    full = tag("a", {"class": "gw-full", "href": link, **_NEW_TAB}, "full file") if link else None
    return tag(
        "div",
        {"class": "gw-caption", "style": HELP_STYLE},
        text,
        f" · saved at {saved}" if saved is not None else None,
        extra,
        " · " if full else None,
        full,
    )


def live_caption(text: str) -> Html:
    return tag("div", {"class": "gw-caption"}, text)


def unavailable(icon: str, name: str, content_type: str, note: str) -> Html:
    return tag(
        "div",
        {"class": "gw-unavailable"},
        f"{icon} {name} ",
        code(content_type),
        f": not shown, {note}",
    )


def image(src: str, alt: str, *, cls: str | None = None, link: str | None = None) -> Html:
    """An image (a thumbnail, a data URL or a gateway's URL), linked to ``link``."""
    element = tag(
        "img", {"class": cls, "src": src, "alt": alt, "style": "max-width:100%;height:auto"}
    )
    return tag("a", {"href": link, **_NEW_TAB}, element) if link is not None else element


def poster(src: str, alt: str) -> Html:
    """A video's poster frame in place of the video."""
    return tag("img", {"class": "gw-poster", "src": src, "alt": alt, "style": VIDEO_STYLE})


def video(src: str, poster_src: str | None, preload: str) -> Html:
    return tag(
        "video",
        {"controls": True, "preload": preload, "src": src, "poster": poster_src or None,
         "style": VIDEO_STYLE},
    )  # fmt: skip


def audio(src: str, preload: str) -> Html:
    return tag(
        "audio",
        {"controls": True, "preload": preload, "src": src, "style": "width:100%;min-width:240px"},
    )


def live_media(kind: str, src: str, name: str) -> Html:
    """A live card's image, video or audio by its URL (no autoplay, no loop:
    docs/decisions.md#render-bytes)."""
    if kind == "image":
        return tag("img", {"src": src, "alt": name, "style": "max-width:100%;height:auto"})
    width = "width:320px;" if kind == "video" else ""
    return tag(kind, {"controls": True, "preload": "metadata", "src": src,
                      "style": f"{width}max-width:100%"})  # fmt: skip


def text_block(text: str) -> Html:
    """Text content, kept as it is (wrapped)."""
    return tag("pre", {"style": "white-space:pre-wrap;margin:0"}, text)


def download(href: str, name: str, *, rel: str = "noopener") -> Html:
    """A link to a file of another type."""
    return tag(
        "a",
        {"class": "gw-download", "href": href, "download": name, "target": "_blank", "rel": rel},
        f"⬇ {name}",
    )


def output_box(body: Html, below: Html | None = None) -> Html:
    return tag("div", {"class": "gw-output"}, body, below)


#: Outputs side by side, in 260 px columns.
GRID_CSS = "display:grid;grid-template-columns:repeat(auto-fill,minmax(260px,1fr));gap:8px"


def outputs_grid(cells: Iterable[tuple[str | None, Html]]) -> Html:
    """Outputs side by side, each under its label (bold) when it has one."""
    return tag(
        "div",
        {"style": GRID_CSS},
        *(tag("div", None, bold(label) if label is not None else None, body)
          for label, body in cells),
    )  # fmt: skip


def result_box(*parts: Html | None) -> Html:
    return tag("div", {"class": "gw-result"}, *parts)


def no_outputs() -> Html:
    return div("no outputs", MUTED_STYLE)
