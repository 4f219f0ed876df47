"""What a video task makes: its size, length and sound read from the endpoint's model
(:mod:`.asked`), and, for the videos shaped by their inputs, one row of a table
(:class:`Video`), so a new video endpoint is one class in the catalog. The dimensions
where the spec leaves them open: docs/decisions.md#sim-videos.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from . import synth
from .asked import Asked, asked, ratio_of, size_of
from .inputs import Inputs
from .registry import rule_for

#: vidA's sizes by tier and ratio (w x h at 16:9, a x b at 4:3, s square, x at 21:9):
#: each portrait size is a landscape one turned
VIDA_DIMENSIONS = {
    tier: {"16:9": (w, h), "4:3": (a, b), "1:1": (s, s), "3:4": (b, a), "9:16": (h, w), "21:9": x}
    for tier, ((w, h), (a, b), s, x) in {
        "480p": ((864, 496), (752, 560), 640, (992, 432)),
        "720p": ((1280, 720), (1112, 834), 960, (1470, 630)),
        "1080p": ((1920, 1080), (1664, 1248), 1440, (2206, 946)),
    }.items()
}
TIER_SHORT_SIDE = {"360p": 360, "540p": 540, "720p": 720, "1080p": 1080, "2k": 1440, "4k": 2160}
AUDIO_FLAGS = ("audio", "generate_audio", "with_audio", "enable_audio")
#: Fields that turn a video's sound on (a true value, "on" or "yes").
SOUND_FIELDS = (*AUDIO_FLAGS, "bgm", "sound", "generate_audio_switch", "keep_original_sound")
MODE_TIERS = {"std": "720p", "pro": "1080p"}
BGM_UNTIL_SECONDS = 8  # vidV: "No effect when duration is 9 or 10"


def inputs_of(ctx: Mapping[str, Any]) -> Inputs:
    """The input reader :func:`produce` put in the context (data URLs only without one)."""
    inputs = ctx.get("inputs")
    return inputs if isinstance(inputs, Inputs) else Inputs()


def closest(ctx: Mapping[str, Any], ref: Any, options: list[str], default: str) -> str:
    """The ratio among ``options`` nearest the input image's (``default`` when unread)."""
    image = inputs_of(ctx).image(ref)
    if image is None or not image.height:
        return default
    aspect = image.width / image.height
    return min(options, key=lambda r: abs(ratio_of(r)[0] / ratio_of(r)[1] - aspect))


def tier_dimensions(tier: str, ratio: tuple[int, int]) -> tuple[int, int]:
    short = TIER_SHORT_SIDE.get(tier.lower(), 720)
    a, b = ratio
    return (synth.even(short * a / b), short) if a >= b else (short, synth.even(short * b / a))


def vida_frames(payload: Mapping[str, Any]) -> tuple[Any, Any]:
    """vidA's frame image references: ``first_frame`` (also a role-less one), ``last_frame``."""
    frames: dict[str, Any] = {}
    content = payload.get("content")
    for item in content if isinstance(content, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("image_url"), dict):
            continue
        frames.setdefault(item.get("role") or "first_frame", item["image_url"].get("url"))
    return frames.get("first_frame"), frames.get("last_frame")


def _sound(a: Asked, seconds: float) -> bool:
    on = [name for name in SOUND_FIELDS if a.has(name) and a.flag(name)]
    if on == ["bgm"] and seconds > BGM_UNTIL_SECONDS:
        return False
    return bool(on)


def model_plan(a: Asked, ctx: Mapping[str, Any]) -> dict[str, Any]:
    """Any video endpoint, from its model's fields (see the module docstring)."""
    seconds = a.num("duration", 5, 1, 60)
    seconds = int(seconds) if float(seconds).is_integer() else seconds
    if a.has("size"):
        w, h = size_of(a.get("size"), (1280, 720), 256, 2160)
        size = (synth.even(w), synth.even(h))
    else:
        tier = next(
            (a.choice(n, "720p") for n in ("resolution", "quality") if a.has(n)),
            MODE_TIERS.get(a.choice("mode", "std"), "720p") if a.has("mode") else "720p",
        )
        ratio = next((str(a.get(n)) for n in ("aspect_ratio", "ratio") if a.get(n)), "16:9")
        size = tier_dimensions(tier, ratio_of(ratio))
    return {"size": size, "seconds": seconds, "audio": _sound(a, seconds)}


def vida_plan(a: Asked, ctx: Mapping[str, Any]) -> dict[str, Any]:
    tier = a.choice("resolution", "720p")
    ratio = str(a.get("ratio", "adaptive"))
    if ratio not in VIDA_DIMENSIONS[tier]:
        first, last = vida_frames(a.payload)
        ratio = closest(ctx, first or last, list(VIDA_DIMENSIONS[tier]), "16:9")
    seconds = a.int("duration", 5, -1, 15)
    seconds = 5 if seconds < 4 else seconds
    return {
        "size": VIDA_DIMENSIONS[tier][ratio],
        "seconds": seconds,
        "audio": a.flag("generate_audio", True),
    }


def lip_sync_plan(a: Asked, ctx: Mapping[str, Any]) -> dict[str, Any]:
    return {"size": (1280, 720), "seconds": float(ctx.get("audio_seconds", 5.0)), "audio": True}


def motion_plan(a: Asked, ctx: Mapping[str, Any]) -> dict[str, Any]:
    tier = MODE_TIERS.get(a.choice("mode", "std"), "720p")
    ratio = closest(ctx, a.get("image_url"), ["16:9", "1:1", "9:16"], "16:9")
    return {
        "size": tier_dimensions(tier, ratio_of(ratio)),
        "seconds": 5,
        "audio": a.flag("keep_original_sound", True),
    }


Plan = Callable[[Asked, Mapping[str, Any]], dict[str, Any]]
Frames = Callable[[Mapping[str, Any]], tuple[Any, Any]]
Sound = Callable[[Mapping[str, Any], Mapping[str, Any]], bytes]


def plain_prompt(payload: Mapping[str, Any]) -> str:
    return str(payload.get("prompt") or "(no prompt)")


def vida_prompt(payload: Mapping[str, Any]) -> str:
    """vidA's text items of ``content``, joined."""
    content = payload.get("content")
    texts = [
        str(item.get("text", ""))
        for item in (content if isinstance(content, list) else [])
        if isinstance(item, dict) and item.get("type") == "text"
    ]
    return " ".join(texts) or "(no text)"


def transition_prompt(payload: Mapping[str, Any]) -> str:
    return str(payload.get("prompt") or "first frame → last frame")


def lip_sync_prompt(payload: Mapping[str, Any]) -> str:
    return f"lip-sync of session {payload.get('session_id')}"


def no_frames(payload: Mapping[str, Any]) -> tuple[Any, Any]:
    return None, None


def frame_fields(first: str, last: str) -> Frames:
    """Frames named by two fields of the payload (the first and the last image)."""
    return lambda payload: (payload.get(first), payload.get(last))


def lip_sync_sound(payload: Mapping[str, Any], ctx: Mapping[str, Any]) -> bytes:
    """The chosen audio (mono s16 at ``synth.AUDIO_RATE``), cut and placed as asked:
    a ``sound_file``, else the voice of the ``audio_id``'s preview, else music."""
    rate = synth.AUDIO_RATE
    choices = payload.get("face_choose")
    listed = choices if isinstance(choices, list) else []
    choice = next((c for c in listed if isinstance(c, dict)), {})
    data = inputs_of(ctx).read(choice.get("sound_file"))
    pcm = synth.decode_audio(data) if data else None
    if pcm is None:
        texts = ctx.get("audio_texts")
        text = texts.get(choice.get("audio_id")) if isinstance(texts, dict) else None
        pcm = synth.preview_voice(str(text)) if text else synth.melody(5.0, rate, 7)
    times = Asked(choice, None)
    start = times.int("sound_start_time", 0, 0, 600_000) * rate // 1000 * 2
    end_ms = choice.get("sound_end_time")
    end = times.int("sound_end_time", 0, 0, 600_000) * rate // 1000 * 2 if end_ms else len(pcm)
    insert = times.int("sound_insert_time", 0, 0, 600_000) * rate // 1000 * 2
    return bytes(insert) + pcm[start : max(start, end)]


@dataclass(frozen=True)
class Video:
    """How a video endpoint reads its request: its plan (size, length, sound), the text
    its frames show, the images it starts and ends on (references), and, for an
    endpoint that re-dubs the source video the world found, the sound it lays over it."""

    plan: Plan = model_plan
    prompt: Callable[[Mapping[str, Any]], str] = plain_prompt
    frames: Frames = no_frames
    redub: Sound | None = None


#: Videos whose plan, text or frames come from their inputs, by family or by
#: endpoint (looked up by :func:`video_of`); every other video is planned from its
#: model and shows its ``prompt``.
VIDEOS_BY_FAMILY: dict[str, Video] = {
    "vidA": Video(plan=vida_plan, prompt=vida_prompt, frames=vida_frames),
}
VIDEOS_BY_ENDPOINT: dict[str, Video] = {
    "vidK-lip-sync": Video(plan=lip_sync_plan, prompt=lip_sync_prompt, redub=lip_sync_sound),
    "vidK-v3-motion-control": Video(plan=motion_plan),
    "vidP_v6_transition": Video(
        prompt=transition_prompt, frames=frame_fields("first_frame_image", "last_frame_image")
    ),
}


def video_of(endpoint: str) -> Video:
    """The endpoint's row, else its family's, else a video planned from its model."""
    return rule_for(endpoint, VIDEOS_BY_ENDPOINT, VIDEOS_BY_FAMILY, Video())


def video_plan(endpoint: str, payload: Mapping[str, Any], ctx: Mapping[str, Any]) -> dict[str, Any]:
    """Width, height, seconds and audio of a video task (see the module docstring)."""
    return video_of(endpoint).plan(asked(endpoint, payload), ctx)
