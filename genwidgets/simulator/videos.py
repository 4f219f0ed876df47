"""What a video task makes: its size, length and sound, chosen per family from a table
and read from the endpoint's model (:mod:`.asked`), so a new video endpoint is one class
in the catalog. The dimensions where the spec leaves them open:
docs/decisions.md#sim-videos.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from . import synth
from .asked import Asked, asked, ratio_of, size_of
from .inputs import Inputs

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
#: Fields that turn a video's sound on (a true value, "on" or "yes").
SOUND_FIELDS = (*AUDIO_FLAGS, "bgm", "sound", "generate_audio_switch", "keep_original_sound")
MODE_TIERS = {"std": "720p", "pro": "1080p"}
BGM_UNTIL_SECONDS = 8  # vidV: "No effect when duration is 9 or 10"


def inputs_of(ctx: Mapping[str, Any]) -> Inputs:
    """The input reader :func:`produce` put in the context (data URLs only without one)."""
    inputs = ctx.get("inputs")
    return inputs if isinstance(inputs, Inputs) else Inputs()


def probe(ctx: Mapping[str, Any], ref: Any) -> tuple[int, int] | None:
    """Size of an input image we can read, or None."""
    image = inputs_of(ctx).image(ref)
    return image.size if image is not None else None


def closest(size: tuple[int, int] | None, options: list[str], default: str) -> str:
    if not size or not size[1]:
        return default
    aspect = size[0] / size[1]
    return min(options, key=lambda r: abs(ratio_of(r)[0] / ratio_of(r)[1] - aspect))


def tier_dimensions(tier: str, ratio: tuple[int, int]) -> tuple[int, int]:
    short = TIER_SHORT_SIDE.get(tier.lower(), 720)
    a, b = ratio
    return (synth.even(short * a / b), short) if a >= b else (short, synth.even(short * b / a))


def vida_images(payload: Mapping[str, Any]) -> dict[str, Any]:
    """The vidA frame images by role: ``first_frame`` (also a role-less one), ``last_frame``."""
    frames: dict[str, Any] = {}
    content = payload.get("content")
    for item in content if isinstance(content, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("image_url"), dict):
            continue
        role = item.get("role") or "first_frame"
        if role in ("first_frame", "last_frame"):
            frames.setdefault(role, item["image_url"].get("url"))
    return frames


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
        first = next(iter(vida_images(a.payload).values()), None)
        ratio = closest(probe(ctx, first), list(VIDA_DIMENSIONS[tier]), "16:9")
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
    ratio = closest(probe(ctx, a.get("image_url")), ["16:9", "1:1", "9:16"], "16:9")
    return {
        "size": tier_dimensions(tier, ratio_of(ratio)),
        "seconds": 5,
        "audio": a.flag("keep_original_sound", True),
    }


Plan = Callable[[Asked, Mapping[str, Any]], dict[str, Any]]

#: Plans of the videos whose size or length comes from their inputs, by family or
#: by endpoint; every other video is planned from its model (:func:`model_plan`).
PLANS_BY_FAMILY: dict[str, Plan] = {"vidA": vida_plan}
PLANS_BY_ENDPOINT: dict[str, Plan] = {
    "vidK-lip-sync": lip_sync_plan,
    "vidK-v3-motion-control": motion_plan,
}


def video_plan(endpoint: str, payload: Mapping[str, Any], ctx: Mapping[str, Any]) -> dict[str, Any]:
    """Width, height, seconds and audio of a video task (see the module docstring)."""
    from ..catalog import endpoint as catalog_endpoint
    from ..errors import EndpointNotFound

    try:
        family = catalog_endpoint(endpoint).family
    except EndpointNotFound:
        family = ""
    plan = PLANS_BY_ENDPOINT.get(endpoint) or PLANS_BY_FAMILY.get(family) or model_plan
    return plan(asked(endpoint, payload), ctx)
