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
- Images: ``imgM`` tasks yield 4 PNGs, long side 1024, ratio from ``--ar``;
  edits keep the upstream size (``imgM_pan`` grows it by ``scale``).
  ``imgG-1.5-edit`` ``size`` (``auto`` = 1024x1024), ``n``, ``output_format``,
  ``output_compression``; ``imgQ-edit-plus`` ``size`` (multiples of 16; by
  default about 1024*1024 at the last input image's ratio), ``n``;
  ``genW2.5-t2i-preview`` ``size`` (default 1280*1280), ``n`` (default 4).
- Speech: ``audio_setting`` format (mp3 default, wav, flac, pcm = big-endian
  ``audio/L16``), sample rate (default 32000), channels, mp3 bitrate; with
  ``output_format: hex`` the output entry has no ``url``: it carries
  ``"encoding": "hex"`` and the audio as ``"content"`` (hex digits), with the
  audio's ``content_type``.

Values are read tolerantly (a string "5" is 5; out-of-range values are clamped)
so producing media never fails on input that validation let through.
"""

from __future__ import annotations

import base64
import binascii
import importlib
import io
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from PIL import Image

from . import media
from .media import MediaFile

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


def _even(x: float) -> int:
    return max(2, round(x / 2) * 2)


def tier_dimensions(tier: str, ratio: tuple[int, int]) -> tuple[int, int]:
    short = TIER_SHORT_SIDE.get(tier.lower(), 720)
    a, b = ratio
    return (_even(short * a / b), short) if a >= b else (short, _even(short * b / a))


def _size(text: Any, default: tuple[int, int], lo: int, hi: int) -> tuple[int, int]:
    match = re.fullmatch(r"\s*(\d{1,5})\s*[*xX]\s*(\d{1,5})\s*", str(text or ""))
    if not match:
        return default
    return (max(lo, min(hi, int(match.group(1)))), max(lo, min(hi, int(match.group(2)))))


def _probe(ref: Any) -> tuple[int, int] | None:
    """Size of an image given as a data URL or raw base64 (None for URLs)."""
    if not isinstance(ref, str) or ref.startswith(("http://", "https://", "asset://")):
        return None
    raw = ref.split(",", 1)[1] if ref.startswith("data:") else ref
    try:
        with Image.open(io.BytesIO(base64.b64decode(raw[:40_000_000], validate=False))) as img:
            return img.size
    except (binascii.Error, OSError, ValueError, Image.DecompressionBombError):
        return None


def _closest(size: tuple[int, int] | None, options: list[str], default: str) -> str:
    if not size or not size[1]:
        return default
    aspect = size[0] / size[1]
    return min(options, key=lambda r: abs(_ratio(r)[0] / _ratio(r)[1] - aspect))


def _prompt_lines(prompt: Any, **params: Any) -> list[str]:
    shown = ", ".join(f"{k}={v}" for k, v in params.items() if v not in (None, ""))
    return [str(prompt or "(no prompt)")[:400], shown]


# --------------------------------------------------------------------------- imgM

IMGM_FLAG = re.compile(r"(?:^|\s)(?:--|—)([a-z]+)(?:\s+([^\s-][^\s]*))?", re.IGNORECASE)


def imgm_params(prompt: str) -> dict[str, str]:
    """``--name value`` pairs of an imgM prompt (aliases folded; last one wins)."""
    alias = {
        "aspect": "ar",
        "version": "v",
        "quality": "q",
        "stylize": "s",
        "chaos": "c",
        "weird": "w",
        "repeat": "r",
    }
    return {
        alias.get(m.group(1).lower(), m.group(1).lower()): (m.group(2) or "")
        for m in IMGM_FLAG.finditer(prompt or "")
    }


def imgm_version(prompt: str) -> str:
    try:  # the imgM engineer's parser, when it is there
        parser = importlib.import_module("genwidgets.imgm.prompt").Prompt
        params = parser.parse(prompt).params
        for name in ("v", "version"):
            value = params.get(name) if isinstance(params, Mapping) else None
            if value not in (None, "", True):
                return str(value)
    except Exception:  # absent or a different shape: the regex below decides
        pass
    return imgm_params(prompt).get("v") or "8.1"


def imgm_size(prompt: str) -> tuple[int, int]:
    a, b = _ratio(imgm_params(prompt).get("ar", ""), (1, 1))
    a, b = min(a, 4 * b), min(b, 4 * a)  # extreme ratios stay drawable
    return (
        (1024, max(64, round(1024 * b / a / 8) * 8))
        if a >= b
        else (max(64, round(1024 * a / b / 8) * 8), 1024)
    )


def _imgm(endpoint: str, payload: Mapping[str, Any], seed: int, ctx: Mapping[str, Any]) -> Produced:
    if endpoint in ("imgM-v8.1-t2i", "imgM_diffusion"):
        prompt = str(payload.get("prompt", ""))
        width, height = imgm_size(prompt)
        params = imgm_params(prompt)
        if params.get("seed", "").isdigit():
            seed = int(params["seed"])
        shown = " ".join(f"--{k} {v}".strip() for k, v in params.items() if k != "v")
        lines = [prompt.split(" --")[0][:400], f"version {imgm_version(prompt)} {shown}".strip()]
    else:
        width, height = ctx.get("upstream_size", (1024, 1024))
        image_no = _int(payload, "imageNo" if endpoint != "imgM-v8.1-i2i" else "image_no", 0, 0, 3)
        seed = int(ctx.get("upstream_seed", seed)) * 31 + image_no * 7 + len(endpoint)
        prompt = str(payload.get("remixPrompt", payload.get("remix_prompt", "")) or "")
        source = f"from {payload.get('jobId')} image {image_no}"
        if endpoint == "imgM_pan":
            direction = _int(payload, "direction", 0, 0, 3)
            scale = _num(payload, "scale", 1.5, 1.1, 3.0)
            if direction in (0, 2):
                height = min(4096, _even(height * scale))
            else:
                width = min(4096, _even(width * scale))
            source += f", pan {['down', 'right', 'up', 'left'][direction]} x{scale:g}"
        elif endpoint == "imgM-v8.1-i2i":
            source += f", {'strong' if _int(payload, 'type', 0, 0, 1) else 'subtle'} variation"
        else:
            source += ", inpaint"
        lines = [prompt[:400] or "(same prompt)", source]
    files = [
        media.image_file(f"image_{i}", width, height, seed + i, f"{endpoint} · {i + 1}/4", lines)
        for i in range(4)
    ]
    return Produced(files, {"image_size": (width, height), "seed": seed})


# --------------------------------------------------------------------------- other images


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
    files = [
        media.image_file(
            f"image_{i}", *size, seed + i, f"{endpoint} · {i + 1}/{n}", lines, fmt, quality
        )
        for i in range(n)
    ]
    return Produced(files)


def _img_q(
    endpoint: str, payload: Mapping[str, Any], seed: int, ctx: Mapping[str, Any]
) -> Produced:
    if payload.get("size"):
        w, h = _size(payload.get("size"), (1024, 1024), 512, 2048)
        w, h = round(w / 16) * 16, round(h / 16) * 16
    else:
        images = _list(payload, "images")
        last = _probe(images[-1]) if images else None
        aspect = (last[0] / last[1]) if last and last[1] else 1.0
        w = round((1024 * 1024 * aspect) ** 0.5 / 16) * 16
        h = round((1024 * 1024 / aspect) ** 0.5 / 16) * 16
        w, h = max(512, min(2048, w)), max(512, min(2048, h))
    if isinstance(payload.get("seed"), int) and not isinstance(payload.get("seed"), bool):
        seed = int(payload["seed"])
    n = _int(payload, "n", 1, 1, 6)
    lines = _prompt_lines(payload.get("prompt"), negative=payload.get("negative_prompt"))
    return Produced(
        [
            media.image_file(f"image_{i}", w, h, seed + i, f"{endpoint} · {i + 1}/{n}", lines)
            for i in range(n)
        ]
    )


def _gen_w_image(
    endpoint: str, payload: Mapping[str, Any], seed: int, ctx: Mapping[str, Any]
) -> Produced:
    w, h = _size(payload.get("size"), (1280, 1280), 256, 4096)
    if isinstance(payload.get("seed"), int) and not isinstance(payload.get("seed"), bool):
        seed = int(payload["seed"])
    n = _int(payload, "n", 4, 1, 4)
    lines = _prompt_lines(payload.get("prompt"), negative=payload.get("negative_prompt"))
    return Produced(
        [
            media.image_file(f"image_{i}", w, h, seed + i, f"{endpoint} · {i + 1}/{n}", lines)
            for i in range(n)
        ]
    )


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
            first = next(
                (
                    item.get("image_url", {}).get("url")
                    for item in _list(p, "content")
                    if isinstance(item, dict) and isinstance(item.get("image_url"), dict)
                ),
                None,
            )
            ratio = _closest(_probe(first), list(VIDA_DIMENSIONS[tier]), "16:9")
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
        ratio = _closest(_probe(p.get("image_url")), ["16:9", "1:1", "9:16"], "16:9")
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
            "size": (_even(w), _even(h)),
            "seconds": _int(p, "duration", 5, 2, 10),
            "audio": any(_flag(p.get(name)) for name in AUDIO_FLAGS),
        }
    raise KeyError(endpoint)


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
    data = media.encode_video(w, h, plan["seconds"], seed, endpoint, lines, audio=plan["audio"])
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
    pcm = media.speech_pcm(
        str(payload.get("text", "")),
        rate,
        channels,
        speed=_num(voice, "speed", 1.0, 0.5, 2.0),
        pitch=_int(voice, "pitch", 0, -12, 12),
        volume=_num(voice, "vol", 1.0, 0.0, 10.0),
    )
    data, content_type = media.encode_audio(pcm, rate, channels, fmt, bitrate)
    seconds = media.pcm_seconds(pcm, rate, channels)
    hex_only = str(payload.get("output_format", "url")).lower() == "hex"
    ext = "pcm" if fmt == "pcm" else fmt
    return Produced(
        [MediaFile(f"speech.{ext}", content_type, data, hex_only=hex_only)],
        {"duration_ms": round(seconds * 1000), "sample_rate": rate, "channels": channels},
    )


def _audio_preview(
    endpoint: str, payload: Mapping[str, Any], seed: int, ctx: Mapping[str, Any]
) -> Produced:
    pcm = media.speech_pcm(str(payload.get("text", "")), 24000, 1)
    seconds = max(2.0, min(60.0, media.pcm_seconds(pcm, 24000, 1)))
    pcm = (pcm + bytes(int(seconds * 24000) * 2))[: int(seconds * 24000) * 2]
    data, content_type = media.encode_audio(pcm, 24000, 1, "mp3", 64000)
    return Produced(
        [MediaFile("preview.mp3", content_type, data)], {"duration_ms": round(seconds * 1000)}
    )


def _nothing(
    endpoint: str, payload: Mapping[str, Any], seed: int, ctx: Mapping[str, Any]
) -> Produced:
    return Produced()  # JSON-only operations: the world writes their records


Producer = Callable[[str, Mapping[str, Any], int, Mapping[str, Any]], Produced]


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
    return _video if kind == "video" else _nothing


def produce(
    endpoint: str, kind: str, payload: Mapping[str, Any], seed: int, ctx: Mapping[str, Any]
) -> Produced:
    """The media of one finished task (called in a worker thread)."""
    return producer(endpoint, kind)(endpoint, payload, seed, ctx)
