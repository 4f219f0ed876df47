"""What each endpoint produces, fitted to its request (run in a worker thread).

Dimensions (width x height), where the spec leaves them open, are our choice:

- ``vidA-*``: the spec's table, exactly. ``ratio: adaptive`` takes the ratio
  closest to the first image when one is given as a data URL, else 16:9;
  ``duration: -1`` (automatic) gives 5 s.
- Other videos: the tier names the short side (360p/540p/720p/1080p, 2K = 1440,
  4K = 2160; 4K 16:9 is 3840x2160, not scaled down) and the long side follows the
  ratio, rounded to an even number (H.264). ``vidK-v1-6-multi-i2v`` and
  ``vidK-v3-motion-control``: mode ``std`` = 720p, ``pro`` = 1080p.
  ``vidP_v6_transition``: 16:9, 720p and 5 s by default. ``vidK-lip-sync``:
  1280x720, as long as the chosen audio (5 s for a ``sound_file``).
  ``genW2.6-r2v``: ``size`` (default 1920*1080); audio when one of ``audio``,
  ``generate_audio``, ``with_audio``, ``enable_audio`` is true (name not shown).
- Audio tracks: ``vidA`` ``generate_audio`` (default true), ``vidVq*`` ``bgm``
  (not for 9-10 s on q2), ``vidK-v3-turbo-t2v`` ``sound: on``,
  ``vidK-v3-motion-control`` ``keep_original_sound`` (default yes),
  ``vidP`` ``generate_audio_switch``, lip-sync always. AAC, mono, 24 kHz.
- Images: ``imgM`` tasks yield 4 PNGs, long side 1024, ratio from ``--ar``
  (the prompt read by :class:`genwidgets.imgm.Prompt`; a permutation prompt is
  drawn from its first expansion); edits keep the upstream size
  (``imgM_pan`` grows it by ``scale``).
  ``imgG-1.5-edit`` ``size`` (``auto`` = 1024x1024), ``n``, ``output_format``,
  ``output_compression``; ``imgQ-edit-plus`` ``size`` (multiples of 16; by
  default about 1024*1024 at the last input image's ratio), ``n``;
  ``genW2.5-t2i-preview`` ``size`` (default 1280*1280), ``n`` (default 4).
- Speech: ``audio_setting`` format (mp3 default, wav, flac, pcm = big-endian
  ``audio/L16``), sample rate (default 32000), channels, mp3 bitrate; with
  ``output_format: hex`` the output entry has no ``url``: it carries
  ``"encoding": "hex"`` and the audio as ``"content"`` (hex digits), with the
  audio's ``content_type``.

- Endpoints registered at run time (``genwidgets.catalog.register``) get their
  kind's default (:data:`DEFAULT_MAKERS`): images from ``prompt``, ``n``
  (default 1, at most 10) and ``size`` (``W*H`` or ``WxH``, default
  1024x1024); a 720p 16:9 video of ``duration`` seconds (default 5, 1-60),
  with sound when one of the ``AUDIO_FLAGS`` is true; for speech and audio a
  voice clip reading ``text`` (or ``prompt``), 2-60 s, MP3, or music of
  ``duration`` (default 3 s) when there is no text. Asset, subject and face
  endpoints make no media (:data:`NO_MEDIA`).

Edits show what they do (a lesson puts before and after side by side; the
pictures come from :mod:`.synth`, the inputs are read by :mod:`.inputs`):

- ``imgM-v8.1-i2i`` varies the named upstream image (subtly for ``type`` 0,
  strongly for 1); ``imgM_pan`` keeps it unchanged on a larger canvas and fills
  the new side; ``imgM-inpaint`` repaints only the white of ``mask.url`` or the
  polygons of ``area``/``mask.areas`` (each polygon in its own
  ``width`` x ``height`` frame, scaled onto the image; with no readable mask, a
  centred ellipse), keeping every other pixel.
- ``imgG-1.5-edit`` and ``imgQ-edit-plus`` start from their input images: one
  fills the frame (imgG's first; imgQ's last, whose ratio sets imgQ's default
  size), the others are insets.
- ``vidP_v6_transition`` goes from ``first_frame_image`` to
  ``last_frame_image``; ``vidA`` starts on its ``first_frame`` (or role-less)
  image and ends on its ``last_frame`` one; ``vidK-lip-sync`` keeps the frames
  of the video given to ``vidK-face-identify`` and lays the chosen audio on it
  (``sound_file``, or the ``audio_id`` preview's voice), cut from
  ``sound_start_time`` to ``sound_end_time`` and placed at ``sound_insert_time``.
- An input that cannot be read (any URL other than loopback or the
  simulator's own files) leaves the output as before: shapes from the seed.

Values are read tolerantly (a string "5" is 5; out-of-range values are clamped)
so producing media never fails on input that validation let through.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from PIL import Image, ImageDraw

from ..errors import PayloadError
from ..imgm import MAX_PROMPTS, Prompt, format_value
from . import synth
from .files import FileStore
from .inputs import Inputs
from .synth import MediaFile

VIDA_DIMENSIONS = {
    "480p": {
        "16:9": (864, 496),
        "4:3": (752, 560),
        "1:1": (640, 640),
        "3:4": (560, 752),
        "9:16": (496, 864),
        "21:9": (992, 432),
    },
    "720p": {
        "16:9": (1280, 720),
        "4:3": (1112, 834),
        "1:1": (960, 960),
        "3:4": (834, 1112),
        "9:16": (720, 1280),
        "21:9": (1470, 630),
    },
    "1080p": {
        "16:9": (1920, 1080),
        "4:3": (1664, 1248),
        "1:1": (1440, 1440),
        "3:4": (1248, 1664),
        "9:16": (1080, 1920),
        "21:9": (2206, 946),
    },
}
TIER_SHORT_SIDE = {"360p": 360, "540p": 540, "720p": 720, "1080p": 1080, "2k": 1440, "4k": 2160}
AUDIO_FLAGS = ("audio", "generate_audio", "with_audio", "enable_audio")
IMGM_IDS = ("imgM-v8.1-t2i", "imgM_diffusion", "imgM-v8.1-i2i", "imgM-inpaint", "imgM_pan")


@dataclass
class Produced:
    files: list[MediaFile] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)  # e.g. duration_ms, image sizes


# --------------------------------------------------------------------------- tolerant reads


def _int(payload: Mapping[str, Any], name: str, default: int, lo: int, hi: int) -> int:
    value = payload.get(name, default)
    try:
        number = int(float(value)) if not isinstance(value, bool) else default
    except (TypeError, ValueError):
        number = default
    return max(lo, min(hi, number))


def _num(payload: Mapping[str, Any], name: str, default: float, lo: float, hi: float) -> float:
    value = payload.get(name, default)
    try:
        number = float(value) if not isinstance(value, bool) else default
    except (TypeError, ValueError):
        number = default
    return max(lo, min(hi, number))


def _choice(payload: Mapping[str, Any], name: str, options: tuple[str, ...], default: str) -> str:
    value = str(payload.get(name, default)).strip().lower()
    return value if value in options else default


def _list(payload: Mapping[str, Any], name: str) -> list[Any]:
    value = payload.get(name)
    return value if isinstance(value, list) else []


def _flag(value: Any, default: bool = False) -> bool:
    if value is None:
        return default
    if isinstance(value, str):
        return value.strip().lower() in {"true", "on", "yes", "1", "enabled"}
    return bool(value)


def _ratio(text: str, default: tuple[int, int] = (16, 9)) -> tuple[int, int]:
    match = re.fullmatch(r"\s*(\d{1,5})\s*:\s*(\d{1,5})\s*", text or "")
    if not match or int(match.group(1)) == 0 or int(match.group(2)) == 0:
        return default
    return int(match.group(1)), int(match.group(2))


def tier_dimensions(tier: str, ratio: tuple[int, int]) -> tuple[int, int]:
    short = TIER_SHORT_SIDE.get(tier.lower(), 720)
    a, b = ratio
    return (synth.even(short * a / b), short) if a >= b else (short, synth.even(short * b / a))


def _size(text: Any, default: tuple[int, int], lo: int, hi: int) -> tuple[int, int]:
    match = re.fullmatch(r"\s*(\d{1,5})\s*[*xX]\s*(\d{1,5})\s*", str(text or ""))
    if not match:
        return default
    return (max(lo, min(hi, int(match.group(1)))), max(lo, min(hi, int(match.group(2)))))


def _inputs(ctx: Mapping[str, Any]) -> Inputs:
    """The input reader :func:`produce` put in the context (data URLs only without one)."""
    inputs = ctx.get("inputs")
    return inputs if isinstance(inputs, Inputs) else Inputs()


def _probe(ctx: Mapping[str, Any], ref: Any) -> tuple[int, int] | None:
    """Size of an input image we can read, or None."""
    image = _inputs(ctx).image(ref)
    return image.size if image is not None else None


def _closest(size: tuple[int, int] | None, options: list[str], default: str) -> str:
    if not size or not size[1]:
        return default
    aspect = size[0] / size[1]
    return min(options, key=lambda r: abs(_ratio(r)[0] / _ratio(r)[1] - aspect))


def _prompt_lines(prompt: Any, **params: Any) -> list[str]:
    shown = ", ".join(f"{k}={v}" for k, v in params.items() if v not in (None, ""))
    return [str(prompt or "(no prompt)")[:400], shown]


# --------------------------------------------------------------------------- imgM


def imgm_prompt(prompt: str) -> Prompt | None:
    """The prompt one task draws: its first expansion when it permutes (None if unreadable)."""
    try:
        parsed = Prompt.parse(prompt or "")
        if 1 < parsed.count() <= MAX_PROMPTS:  # above the cap nothing is expanded
            return Prompt.parse(parsed.expand()[0])
        return parsed
    except PayloadError:
        return None



def imgm_version(prompt: str) -> str:
    """The ``--v`` of an imgM prompt, ``8.1`` (the service's) when absent."""
    return _version(imgm_prompt(prompt))


def imgm_size(prompt: str) -> tuple[int, int]:
    """Width and height of an imgM picture: long side 1024, ratio from ``--ar``."""
    return _picture_size(imgm_prompt(prompt))


def _version(prompt: Prompt | None) -> str:
    version = prompt.params.get("v") if prompt is not None else None
    return str(version) if isinstance(version, str) and version else "8.1"


def _picture_size(prompt: Prompt | None) -> tuple[int, int]:
    ratio = prompt.params.get("ar") if prompt is not None else None
    a, b = _ratio(ratio if isinstance(ratio, str) else "", (1, 1))
    a, b = min(a, 4 * b), min(b, 4 * a)  # extreme ratios stay drawable
    return (
        (1024, max(64, round(1024 * b / a / 8) * 8))
        if a >= b
        else (max(64, round(1024 * a / b / 8) * 8), 1024)
    )


def _upstream_image(ctx: Mapping[str, Any]) -> Image.Image | None:
    """The named image of the upstream imgM task, when its file is still there."""
    path = ctx.get("upstream_image")
    if not isinstance(path, str):
        return None
    try:
        with Image.open(path) as img:
            return img.convert("RGB")
    except (OSError, ValueError):
        return None


def _inpaint_mask(
    payload: Mapping[str, Any], size: tuple[int, int], ctx: Mapping[str, Any]
) -> Image.Image:
    """White where the image is repainted: the mask image, or the polygons given."""
    given = payload.get("mask")
    mask: Mapping[str, Any] = given if isinstance(given, dict) else {}
    areas = [payload.get("area"), *(_list(mask, "areas"))]
    polygons = [
        (_num(a, "width", size[0], 1, 8192), _num(a, "height", size[1], 1, 8192), points)
        for a in areas
        if isinstance(a, dict)
        for points in [[float(v) for v in _list(a, "points") if isinstance(v, (int, float))]]
    ]
    drawn = synth.polygon_mask(size, polygons)
    image = _inputs(ctx).image(mask.get("url"))
    if image is not None:
        drawn.paste(255, (0, 0), synth.binary_mask(image, size))
    if drawn.getbbox() is None:  # nothing readable: a centred ellipse shows the idea
        w, h = size
        ImageDraw.Draw(drawn).ellipse((w * 0.3, h * 0.3, w * 0.7, h * 0.7), fill=255)
    return drawn


def _imgm(endpoint: str, payload: Mapping[str, Any], seed: int, ctx: Mapping[str, Any]) -> Produced:
    if endpoint in ("imgM-v8.1-t2i", "imgM_diffusion"):
        return _imgm_generate(endpoint, payload, seed)
    return _imgm_edit(endpoint, payload, seed, ctx)


def _imgm_generate(endpoint: str, payload: Mapping[str, Any], seed: int) -> Produced:
    """Four pictures at the prompt's ``--ar``, from its ``--seed`` when it has one."""
    text = str(payload.get("prompt", ""))
    prompt = imgm_prompt(text)
    width, height = _picture_size(prompt)
    params = prompt.params if prompt is not None else {}
    chosen = params.get("seed")
    if isinstance(chosen, int) and not isinstance(chosen, bool) and chosen >= 0:
        seed = chosen
    shown = " ".join(f"--{k} {format_value(k, v)}".strip() for k, v in params.items() if k != "v")
    lines = [
        (prompt.text if prompt is not None else text)[:400],
        f"version {_version(prompt)} {shown}".strip(),
    ]
    files = [
        synth.image_file(f"image_{i}", width, height, seed + i, f"{endpoint} · {i + 1}/4", lines)
        for i in range(4)
    ]
    return Produced(files, {"image_size": (width, height), "seed": seed})


def _imgm_edit(
    endpoint: str, payload: Mapping[str, Any], seed: int, ctx: Mapping[str, Any]
) -> Produced:
    """Four edits of the upstream task's named image (a seed picture if its file is gone)."""
    image_no = _int(payload, "imageNo" if endpoint != "imgM-v8.1-i2i" else "image_no", 0, 0, 3)
    seed = int(ctx.get("upstream_seed", seed)) * 31 + image_no * 7 + len(endpoint)
    width, height = ctx.get("upstream_size", (1024, 1024))
    source = _upstream_image(ctx) or synth.picture(width, height, seed, "", [])
    pictures = []
    if endpoint == "imgM_pan":
        direction = _int(payload, "direction", 0, 0, 3)
        scale = _num(payload, "scale", 1.5, 1.1, 3.0)
        pictures = [synth.extend(source, direction, scale, seed + i) for i in range(4)]
    elif endpoint == "imgM-v8.1-i2i":
        strong = bool(_int(payload, "type", 0, 0, 1))
        pictures = [synth.vary(source, seed + i, strong) for i in range(4)]
    else:
        mask = _inpaint_mask(payload, source.size, ctx)
        remix = str(payload.get("remixPrompt") or "(same prompt)")[:400]
        lines = [remix, f"inpaint of {payload.get('jobId')} image {image_no}"]
        pictures = [
            synth.repaint(source, mask, seed + i, f"{endpoint} · {i + 1}/4", lines)
            for i in range(4)
        ]
    files = [
        MediaFile(f"image_{i}.png", "image/png", synth.encode_image(made))
        for i, made in enumerate(pictures)
    ]
    return Produced(files, {"image_size": pictures[0].size, "seed": seed})


# --------------------------------------------------------------------------- other images


def _edited(
    endpoint: str,
    sources: list[Image.Image],
    size: tuple[int, int],
    seed: int,
    n: int,
    lines: list[str],
    fmt: str = "png",
    quality: int | None = None,
) -> list[MediaFile]:
    """``n`` edits of the input images (captioned), or seed pictures when none was read."""
    files = []
    for i in range(n):
        title = f"{endpoint} · {i + 1}/{n}"
        if not sources:
            files.append(
                synth.image_file(f"image_{i}", *size, seed + i, title, lines, fmt, quality)
            )
            continue
        made = synth.edit(sources, *size, seed + i)
        synth.caption(made, title, lines)
        name = f"image_{i}.{'jpg' if fmt == 'jpeg' else fmt}"
        files.append(
            MediaFile(name, synth.IMAGE_FORMATS[fmt][1], synth.encode_image(made, fmt, quality))
        )
    return files


def _read_images(payload: Mapping[str, Any], ctx: Mapping[str, Any]) -> list[Image.Image | None]:
    """Each of ``images``, decoded, or None where it cannot be read."""
    inputs = _inputs(ctx)
    return [inputs.image(ref) for ref in _list(payload, "images")]


def _img_g(
    endpoint: str, payload: Mapping[str, Any], seed: int, ctx: Mapping[str, Any]
) -> Produced:
    size = {"1024x1536": (1024, 1536), "1536x1024": (1536, 1024)}.get(
        str(payload.get("size", "auto")), (1024, 1024)
    )
    fmt = _choice(payload, "output_format", ("png", "jpeg", "webp"), "png")
    quality = _int(payload, "output_compression", 100, 0, 100)
    n = _int(payload, "n", 1, 1, 10)
    lines = _prompt_lines(
        payload.get("prompt"),
        quality=payload.get("quality", "auto"),
        background=payload.get("background", "auto"),
    )
    sources = [image for image in _read_images(payload, ctx) if image is not None]
    return Produced(_edited(endpoint, sources, size, seed, n, lines, fmt, quality))


def _img_q(
    endpoint: str, payload: Mapping[str, Any], seed: int, ctx: Mapping[str, Any]
) -> Produced:
    read = _read_images(payload, ctx)
    sources = [image for image in read if image is not None]
    if payload.get("size"):
        w, h = _size(payload.get("size"), (1024, 1024), 512, 2048)
        w, h = round(w / 16) * 16, round(h / 16) * 16
    else:
        last = read[-1].size if read and read[-1] is not None else None
        aspect = (last[0] / last[1]) if last and last[1] else 1.0
        w = round((1024 * 1024 * aspect) ** 0.5 / 16) * 16
        h = round((1024 * 1024 / aspect) ** 0.5 / 16) * 16
        w, h = max(512, min(2048, w)), max(512, min(2048, h))
    if isinstance(payload.get("seed"), int) and not isinstance(payload.get("seed"), bool):
        seed = int(payload["seed"])
    n = _int(payload, "n", 1, 1, 6)
    lines = _prompt_lines(payload.get("prompt"), negative=payload.get("negative_prompt"))
    # the last image sets the ratio, so it fills the frame; the others are insets
    return Produced(_edited(endpoint, sources[-1:] + sources[:-1], (w, h), seed, n, lines))


def _pictures(
    endpoint: str,
    payload: Mapping[str, Any],
    seed: int,
    *,
    size: tuple[int, int],
    n: int,
    most: int,
) -> Produced:
    """``n`` drawn pictures at ``size`` (both read from the payload), captioned with
    the prompt; the payload's ``seed`` when it gives one."""
    w, h = _size(payload.get("size"), size, 256, 4096)
    if isinstance(payload.get("seed"), int) and not isinstance(payload.get("seed"), bool):
        seed = int(payload["seed"])
    count = _int(payload, "n", n, 1, most)
    lines = _prompt_lines(payload.get("prompt"), negative=payload.get("negative_prompt"))
    return Produced(
        [
            synth.image_file(f"image_{i}", w, h, seed + i, f"{endpoint} · {i + 1}/{count}", lines)
            for i in range(count)
        ],
        {"image_size": (w, h)},
    )


def _gen_w_image(
    endpoint: str, payload: Mapping[str, Any], seed: int, ctx: Mapping[str, Any]
) -> Produced:
    return _pictures(endpoint, payload, seed, size=(1280, 1280), n=4, most=4)


def _default_images(
    endpoint: str, payload: Mapping[str, Any], seed: int, ctx: Mapping[str, Any]
) -> Produced:
    """An image endpoint registered at run time (see the module docstring)."""
    return _pictures(endpoint, payload, seed, size=(1024, 1024), n=1, most=10)


# --------------------------------------------------------------------------- videos


def _payload_seed(payload: Mapping[str, Any], seed: int) -> int:
    value = payload.get("seed")
    if isinstance(value, int) and not isinstance(value, bool) and value != 0:
        return value
    return seed


def video_plan(endpoint: str, payload: Mapping[str, Any], ctx: Mapping[str, Any]) -> dict[str, Any]:
    """Width, height, seconds and audio of a video task (see the module docstring)."""
    p = payload
    if endpoint.startswith("vidA-"):
        tiers = ("480p", "720p", "1080p") if endpoint == "vidA-2-0" else ("480p", "720p")
        tier = _choice(p, "resolution", tiers, "720p")
        ratio = str(p.get("ratio", "adaptive"))
        if ratio not in VIDA_DIMENSIONS[tier]:
            first = next(iter(_vida_images(p).values()), None)
            ratio = _closest(_probe(ctx, first), list(VIDA_DIMENSIONS[tier]), "16:9")
        w, h = VIDA_DIMENSIONS[tier][ratio]
        seconds = _int(p, "duration", 5, -1, 15)
        seconds = 5 if seconds < 4 else seconds
        return {"size": (w, h), "seconds": seconds, "audio": _flag(p.get("generate_audio"), True)}
    if endpoint == "vidVq2-text2video":
        seconds = _int(p, "duration", 5, 1, 10)
        size = tier_dimensions(
            _choice(p, "resolution", ("540p", "720p", "1080p"), "720p"),
            _ratio(str(p.get("aspect_ratio", "16:9"))),
        )
        return {"size": size, "seconds": seconds, "audio": _flag(p.get("bgm")) and seconds < 9}
    if endpoint == "vidVq1-text2video":
        size = tier_dimensions("1080p", _ratio(str(p.get("aspect_ratio", "16:9"))))
        return {"size": size, "seconds": 5, "audio": _flag(p.get("bgm"))}
    if endpoint == "vidH_1.0_r2v":
        size = tier_dimensions(
            _choice(p, "resolution", ("720p", "1080p"), "1080p"),
            _ratio(str(p.get("ratio", "16:9"))),
        )
        return {"size": size, "seconds": _int(p, "duration", 5, 3, 15), "audio": False}
    if endpoint == "vidK-v3-turbo-t2v":
        size = tier_dimensions(
            _choice(p, "resolution", ("720p", "1080p", "2k", "4k"), "720p"),
            _ratio(str(p.get("aspect_ratio", "16:9"))),
        )
        return {
            "size": size,
            "seconds": _int(p, "duration", 5, 3, 15),
            "audio": _flag(p.get("sound")),
        }
    if endpoint == "vidK-v1-6-multi-i2v":
        tier = "1080p" if _choice(p, "mode", ("std", "pro"), "std") == "pro" else "720p"
        size = tier_dimensions(tier, _ratio(str(p.get("aspect_ratio", "16:9"))))
        return {
            "size": size,
            "seconds": 10 if str(p.get("duration", "5")) == "10" else 5,
            "audio": False,
        }
    if endpoint == "vidK-lip-sync":
        return {"size": (1280, 720), "seconds": float(ctx.get("audio_seconds", 5.0)), "audio": True}
    if endpoint == "vidK-v3-motion-control":
        tier = "1080p" if _choice(p, "mode", ("std", "pro"), "std") == "pro" else "720p"
        ratio = _closest(_probe(ctx, p.get("image_url")), ["16:9", "1:1", "9:16"], "16:9")
        return {
            "size": tier_dimensions(tier, _ratio(ratio)),
            "seconds": 5,
            "audio": str(p.get("keep_original_sound", "yes")).lower() != "no",
        }
    if endpoint == "vidP_v6_transition":
        tier = _choice(p, "quality", ("360p", "540p", "720p", "1080p"), "720p")
        return {
            "size": tier_dimensions(tier, (16, 9)),
            "seconds": _num(p, "duration", 5, 1, 15),
            "audio": _flag(p.get("generate_audio_switch")),
        }
    if endpoint == "genW2.6-r2v":
        w, h = _size(p.get("size"), (1920, 1080), 256, 2160)
        return {
            "size": (synth.even(w), synth.even(h)),
            "seconds": _int(p, "duration", 5, 2, 10),
            "audio": any(_flag(p.get(name)) for name in AUDIO_FLAGS),
        }
    # an endpoint registered at run time: 720p 16:9 (see the module docstring)
    return {
        "size": tier_dimensions("720p", (16, 9)),
        "seconds": _num(p, "duration", 5, 1, 60),
        "audio": any(_flag(p.get(name)) for name in AUDIO_FLAGS),
    }


def _vida_images(payload: Mapping[str, Any]) -> dict[str, Any]:
    """The vidA frame images by role: ``first_frame`` (also a role-less one), ``last_frame``."""
    frames: dict[str, Any] = {}
    for item in _list(payload, "content"):
        if not isinstance(item, dict) or not isinstance(item.get("image_url"), dict):
            continue
        role = item.get("role") or "first_frame"
        if role in ("first_frame", "last_frame"):
            frames.setdefault(role, item["image_url"].get("url"))
    return frames


def _frame_images(
    endpoint: str, payload: Mapping[str, Any], ctx: Mapping[str, Any]
) -> tuple[Image.Image | None, Image.Image | None]:
    """The images a video starts and ends on (None where there is none or it is unreadable)."""
    if endpoint.startswith("vidA-"):
        refs = _vida_images(payload)
        first_ref, last_ref = refs.get("first_frame"), refs.get("last_frame")
    elif endpoint == "vidP_v6_transition":
        first_ref, last_ref = payload.get("first_frame_image"), payload.get("last_frame_image")
    else:
        return None, None
    inputs = _inputs(ctx)
    first = inputs.image(first_ref)
    return first, inputs.image(last_ref) if first is not None else None


def _lip_sync_sound(payload: Mapping[str, Any], ctx: Mapping[str, Any]) -> bytes:
    """The chosen audio (mono s16 at ``synth.AUDIO_RATE``), cut and placed as asked."""
    rate = synth.AUDIO_RATE
    choice = next((c for c in _list(payload, "face_choose") if isinstance(c, dict)), {})
    pcm = (
        synth.decode_audio(data) if (data := _inputs(ctx).read(choice.get("sound_file"))) else None
    )
    if pcm is None:
        texts = ctx.get("audio_texts")
        text = texts.get(choice.get("audio_id")) if isinstance(texts, dict) else None
        pcm = _preview_pcm(str(text)) if text else synth.melody(5.0, rate, 7)
    start = _int(choice, "sound_start_time", 0, 0, 600_000) * rate // 1000 * 2
    end_ms = choice.get("sound_end_time")
    end = _int(choice, "sound_end_time", 0, 0, 600_000) * rate // 1000 * 2 if end_ms else len(pcm)
    insert = _int(choice, "sound_insert_time", 0, 0, 600_000) * rate // 1000 * 2
    return bytes(insert) + pcm[start : max(start, end)]


def _video_prompt(endpoint: str, payload: Mapping[str, Any]) -> str:
    if endpoint.startswith("vidA-"):
        texts = [
            str(item.get("text", ""))
            for item in _list(payload, "content")
            if isinstance(item, dict) and item.get("type") == "text"
        ]
        return " ".join(texts) or "(no text)"
    if endpoint == "vidK-lip-sync":
        return f"lip-sync of session {payload.get('session_id')}"
    if endpoint == "vidP_v6_transition" and not payload.get("prompt"):
        return "first frame → last frame"
    return str(payload.get("prompt") or "(no prompt)")


def _video(
    endpoint: str, payload: Mapping[str, Any], seed: int, ctx: Mapping[str, Any]
) -> Produced:
    plan = video_plan(endpoint, payload, ctx)
    seed = _payload_seed(payload, seed)
    w, h = plan["size"]
    lines = _prompt_lines(
        _video_prompt(endpoint, payload),
        size=f"{w}x{h}",
        seconds=plan["seconds"],
        audio="on" if plan["audio"] else "off",
    )
    if endpoint == "vidK-lip-sync":
        sound = _lip_sync_sound(payload, ctx)
        source = _inputs(ctx).read(ctx.get("source_video"))
        redubbed = synth.redub(source, sound) if source else None
        data = redubbed or synth.encode_video(
            w, h, plan["seconds"], seed, endpoint, lines, audio=True, sound=sound
        )
    else:
        first, last = _frame_images(endpoint, payload, ctx)
        data = synth.encode_video(
            w,
            h,
            plan["seconds"],
            seed,
            endpoint,
            lines,
            audio=plan["audio"],
            first=first,
            last=last,
        )
    return Produced([MediaFile("video.mp4", "video/mp4", data)], {"video": plan})


# --------------------------------------------------------------------------- speech


def _section(payload: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = payload.get(name)
    return value if isinstance(value, dict) else {}


SAMPLE_RATES = (8000, 16000, 22050, 24000, 32000, 44100)


def _speech(
    endpoint: str, payload: Mapping[str, Any], seed: int, ctx: Mapping[str, Any]
) -> Produced:
    audio = _section(payload, "audio_setting")
    voice = _section(payload, "voice_setting")
    rate = audio.get("sample_rate", 32000)
    rate = rate if rate in SAMPLE_RATES else 32000
    channels = 2 if audio.get("channel") == 2 else 1
    fmt = _choice(audio, "format", ("mp3", "wav", "flac", "pcm"), "mp3")
    bitrate = (
        audio.get("bitrate") if audio.get("bitrate") in (32000, 64000, 128000, 256000) else 128000
    )
    pcm = synth.speech_pcm(
        str(payload.get("text", "")),
        rate,
        channels,
        speed=_num(voice, "speed", 1.0, 0.5, 2.0),
        pitch=_int(voice, "pitch", 0, -12, 12),
        volume=_num(voice, "vol", 1.0, 0.0, 10.0),
    )
    data, content_type = synth.encode_audio(pcm, rate, channels, fmt, bitrate)
    seconds = synth.pcm_seconds(pcm, rate, channels)
    hex_only = str(payload.get("output_format", "url")).lower() == "hex"
    ext = "pcm" if fmt == "pcm" else fmt
    return Produced(
        [MediaFile(f"speech.{ext}", content_type, data, hex_only=hex_only)],
        {"duration_ms": round(seconds * 1000), "sample_rate": rate, "channels": channels},
    )


def _preview_pcm(text: str) -> bytes:
    """The voice of ``vidK-audio-preview`` (2-60 s, mono, ``synth.AUDIO_RATE``); lip-sync
    lays the same voice when given its ``audio_id``."""
    rate = synth.AUDIO_RATE
    pcm = synth.speech_pcm(text, rate, 1)
    seconds = max(2.0, min(60.0, synth.pcm_seconds(pcm, rate, 1)))
    return (pcm + bytes(int(seconds * rate) * 2))[: int(seconds * rate) * 2]


def _mp3(name: str, pcm: bytes) -> Produced:
    """Mono s16 PCM at ``synth.AUDIO_RATE`` as one MP3 file, with its length."""
    data, content_type = synth.encode_audio(pcm, synth.AUDIO_RATE, 1, "mp3", 64000)
    seconds = synth.pcm_seconds(pcm, synth.AUDIO_RATE, 1)
    return Produced([MediaFile(name, content_type, data)], {"duration_ms": round(seconds * 1000)})


def _audio_preview(
    endpoint: str, payload: Mapping[str, Any], seed: int, ctx: Mapping[str, Any]
) -> Produced:
    return _mp3("preview.mp3", _preview_pcm(str(payload.get("text", ""))))


def _default_audio(
    endpoint: str, payload: Mapping[str, Any], seed: int, ctx: Mapping[str, Any]
) -> Produced:
    """A speech or audio endpoint registered at run time: the preview voice reading
    ``text`` (or ``prompt``), or music of ``duration`` seconds when there is neither."""
    text = str(payload.get("text") or payload.get("prompt") or "").strip()
    seconds = _num(payload, "duration", 3, 1, 60)
    pcm = _preview_pcm(text) if text else synth.melody(seconds, synth.AUDIO_RATE, seed)
    return _mp3("audio.mp3", pcm)


def _nothing(
    endpoint: str, payload: Mapping[str, Any], seed: int, ctx: Mapping[str, Any]
) -> Produced:
    return Produced()  # JSON-only operations: the world writes their records


Producer = Callable[[str, Mapping[str, Any], int, Mapping[str, Any]], Produced]

#: The media of each kind's endpoints that have no maker of their own (the
#: service's videos are among them: :func:`video_plan` knows each).
DEFAULT_MAKERS: dict[str, Producer] = {
    "image": _default_images,
    "video": _video,
    "speech": _default_audio,
    "audio": _default_audio,
}
#: Kinds whose tasks answer with JSON only (the world writes their records).
NO_MEDIA = ("asset", "subject", "face")


def producer(endpoint: str, kind: str) -> Producer:
    if endpoint in IMGM_IDS:
        return _imgm
    special: dict[str, Producer] = {
        "imgG-1.5-edit": _img_g,
        "imgQ-edit-plus": _img_q,
        "genW2.5-t2i-preview": _gen_w_image,
        "speechM-02-turbo": _speech,
        "vidK-audio-preview": _audio_preview,
    }
    if endpoint in special:
        return special[endpoint]
    return DEFAULT_MAKERS.get(kind, _nothing)


def produce(
    endpoint: str,
    kind: str,
    payload: Mapping[str, Any],
    seed: int,
    ctx: Mapping[str, Any],
    files: FileStore | None = None,
) -> Produced:
    """The media of one finished task (called in a worker thread).

    ``files`` lets inputs that name the simulator's own outputs be read.
    """
    return producer(endpoint, kind)(endpoint, payload, seed, {**ctx, "inputs": Inputs(files)})
