"""What each endpoint produces, fitted to its request (run in a worker thread).

Makers are chosen per family and kind from :data:`MAKERS`; they read the request
tolerantly through the catalog's model (:mod:`.asked`). What the pictures, sounds and
edits are where the spec leaves them open: docs/decisions.md#sim-outputs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from PIL import Image, ImageDraw

from ..catalog.imgq import IMGQ_AUTO_SIDE, IMGQ_SIDE_MAX, IMGQ_SIDE_MIN, IMGQ_SIDE_MULTIPLE
from ..errors import PayloadError
from ..imgm import MAX_PROMPTS, Prompt, format_value
from . import synth
from .asked import Asked, asked, ratio_of, size_of
from .files import FileStore
from .inputs import Inputs
from .registry import family_of
from .synth import MediaFile
from .videos import inputs_of, video_of

Fields = Mapping[str, Any]  # a payload, or the facts the world found for the media step


@dataclass
class Produced:
    files: list[MediaFile] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)  # e.g. duration_ms, image sizes


# --------------------------------------------------------------------------- tolerant reads


def _list(payload: Fields, name: str) -> list[Any]:
    value = payload.get(name)
    return value if isinstance(value, list) else []


def _prompt_lines(prompt: Any, **params: Any) -> list[str]:
    shown = ", ".join(f"{k}={v}" for k, v in params.items() if v not in (None, ""))
    return [str(prompt or "(no prompt)")[:400], shown]


def _payload_seed(payload: Fields, seed: int, *, zero_is_random: bool = True) -> int:
    """The ``seed`` the payload fixes (an integer, never a boolean), else the task's."""
    value = payload.get("seed")
    if isinstance(value, int) and not isinstance(value, bool) and (value or not zero_is_random):
        return value
    return seed


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


def _text_param(prompt: str | Prompt | None, name: str) -> str:
    """A text parameter of an imgM prompt (its text, or parsed), ``""`` when absent."""
    parsed = imgm_prompt(prompt) if isinstance(prompt, str) else prompt
    value = parsed.params.get(name) if parsed is not None else None
    return value if isinstance(value, str) else ""


def imgm_version(prompt: str | Prompt | None) -> str:
    """The ``--v`` of an imgM prompt, ``8.1`` (the service's) when absent."""
    return _text_param(prompt, "v") or "8.1"


def imgm_size(prompt: str | Prompt | None) -> tuple[int, int]:
    """Width and height of an imgM picture: long side 1024, ratio from ``--ar``."""
    a, b = ratio_of(_text_param(prompt, "ar"), (1, 1))
    a, b = min(a, 4 * b), min(b, 4 * a)  # extreme ratios stay drawable
    return (
        (1024, max(64, round(1024 * b / a / 8) * 8))
        if a >= b
        else (max(64, round(1024 * a / b / 8) * 8), 1024)
    )


def _inpaint_mask(payload: Fields, size: tuple[int, int], ctx: Fields) -> Image.Image:
    """White where the image is repainted: the mask image, or the polygons given."""
    given = payload.get("mask")
    mask: Fields = given if isinstance(given, dict) else {}
    areas = [payload.get("area"), *(_list(mask, "areas"))]
    polygons = []
    for area in (Asked(a, None) for a in areas if isinstance(a, dict)):
        points = [float(v) for v in _list(area.payload, "points") if isinstance(v, (int, float))]
        frame = area.num("width", size[0], 1, 8192), area.num("height", size[1], 1, 8192)
        polygons.append((*frame, points))
    drawn = synth.polygon_mask(size, polygons)
    image = inputs_of(ctx).image(mask.get("url"))
    if image is not None:
        drawn.paste(255, (0, 0), synth.binary_mask(image, size))
    if drawn.getbbox() is None:  # nothing readable: a centred ellipse shows the idea
        w, h = size
        ImageDraw.Draw(drawn).ellipse((w * 0.3, h * 0.3, w * 0.7, h * 0.7), fill=255)
    return drawn


def _imgm(endpoint: str, payload: Fields, seed: int, ctx: Fields) -> Produced:
    """Four pictures at the prompt's ``--ar``, from its ``--seed`` when it has one; an
    edit when the model takes an upstream ``jobId``."""
    if asked(endpoint, payload).has("jobId"):
        return _imgm_edit(endpoint, payload, seed, ctx)
    text = str(payload.get("prompt", ""))
    prompt = imgm_prompt(text)
    width, height = imgm_size(prompt)
    params = prompt.params if prompt is not None else {}
    seed = _payload_seed(params, seed, zero_is_random=False)
    shown = " ".join(f"--{k} {format_value(k, v)}".strip() for k, v in params.items() if k != "v")
    lines = [
        (prompt.text if prompt is not None else text)[:400],
        f"version {imgm_version(prompt)} {shown}".strip(),
    ]
    files = _edited(endpoint, [], (width, height), seed, 4, lines)
    return Produced(files, {"image_size": (width, height), "seed": seed})


def image_number_field(endpoint: str) -> str:
    """The field of an imgM edit's model that numbers the upstream image (the model's
    own, never a look at the payload: a payload may send both spellings)."""
    return "imageNo" if asked(endpoint, {}).has("imageNo") else "image_no"


def _imgm_edit(endpoint: str, payload: Fields, seed: int, ctx: Fields) -> Produced:
    """Four edits of the upstream task's named image (a seed picture if its file is gone)."""
    a = asked(endpoint, payload)
    image_no = a.int(image_number_field(endpoint), 0, 0, 3)
    seed = int(ctx.get("upstream_seed", seed)) * 31 + image_no * 7 + len(endpoint)
    width, height = ctx.get("upstream_size", (1024, 1024))
    source = inputs_of(ctx).image(ctx.get("upstream_image"))  # None once its file is gone
    source = source or synth.picture(width, height, seed, "", [])
    if a.has("direction"):  # imgM_pan
        direction = a.int("direction", 0, 0, 3)
        scale = a.num("scale", 1.5, 1.1, 3.0)
        pictures = [synth.extend(source, direction, scale, seed + i) for i in range(4)]
    elif a.has("type"):  # imgM-v8.1-i2i
        strong = bool(a.int("type", 0, 0, 1))
        pictures = [synth.vary(source, seed + i, strong) for i in range(4)]
    else:
        mask = _inpaint_mask(payload, source.size, ctx)
        remix = str(payload.get("remixPrompt") or "(same prompt)")[:400]
        lines = [remix, f"inpaint of {payload.get('jobId')} image {image_no}"]
        pictures = [
            synth.repaint(source, mask, seed + i, f"{endpoint} · {i + 1}/4", lines)
            for i in range(4)
        ]
    files = [synth.image_output(f"image_{i}", made) for i, made in enumerate(pictures)]
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
        if sources:
            made = synth.edit(sources, *size, seed + i)
            synth.caption(made, title, lines)
        else:
            made = synth.picture(*size, seed + i, title, lines)
        files.append(synth.image_output(f"image_{i}", made, fmt, quality))
    return files


def _imgq_size(payload: Fields, read: list[Image.Image | None]) -> tuple[int, int]:
    """imgQ's size: the one sent, else the last image's ratio at the catalog's area."""
    low, high, step = IMGQ_SIDE_MIN, IMGQ_SIDE_MAX, IMGQ_SIDE_MULTIPLE  # the catalog's
    if payload.get("size"):
        w, h = size_of(payload.get("size"), (IMGQ_AUTO_SIDE, IMGQ_AUTO_SIDE), low, high)
        return round(w / step) * step, round(h / step) * step
    last = read[-1].size if read and read[-1] is not None else None
    aspect = (last[0] / last[1]) if last and last[1] else 1.0
    w = round(IMGQ_AUTO_SIDE * aspect**0.5 / step) * step
    h = round(IMGQ_AUTO_SIDE / aspect**0.5 / step) * step
    return max(low, min(high, w)), max(low, min(high, h))


def _images(endpoint: str, payload: Fields, seed: int, ctx: Fields) -> Produced:
    """Edits of the ``images`` read (imgG, imgQ), else drawn pictures (genW's text to
    image, and any image endpoint registered at run time): as many as ``n`` and as
    large as ``size`` ask (sent, else the service's default; 1 and 1024x1024 when the
    model states none), in the ``output_format`` asked, captioned with the prompt."""
    a = asked(endpoint, payload)
    inputs = inputs_of(ctx)
    read = [inputs.image(ref) for ref in _list(payload, "images")]  # None: unreadable
    sources = [image for image in read if image is not None]
    if family_of(endpoint) == "imgQ":
        size = _imgq_size(payload, read)
        # the last image sets the ratio, so it fills the frame; the others are insets
        sources = sources[-1:] + sources[:-1]
    else:
        size = size_of(a.get("size"), (1024, 1024), 256, 4096)  # "auto": 1024x1024
    fmt = a.choice("output_format", "png")  # the model's choices, where it has them
    fmt = fmt if fmt in synth.IMAGE_FORMATS else "png"
    quality = a.int("output_compression", 100, 0, 100)
    lines = _prompt_lines(
        payload.get("prompt"),
        quality=a.get("quality"),
        background=a.get("background"),
        negative=payload.get("negative_prompt"),
    )
    seed = _payload_seed(payload, seed, zero_is_random=False)
    files = _edited(endpoint, sources, size, seed, a.int("n", 1, 1, 10), lines, fmt, quality)
    return Produced(files, {"image_size": size})


# --------------------------------------------------------------------------- videos


def _video(endpoint: str, payload: Fields, seed: int, ctx: Fields) -> Produced:
    """A video as its row of :data:`.videos.VIDEOS_BY_ENDPOINT` (or family) reads it."""
    video = video_of(endpoint)
    plan = video.plan(asked(endpoint, payload), ctx)
    seed = _payload_seed(payload, seed)
    w, h = plan["size"]
    lines = _prompt_lines(
        video.prompt(payload),
        size=f"{w}x{h}",
        seconds=plan["seconds"],
        audio="on" if plan["audio"] else "off",
    )
    inputs = inputs_of(ctx)
    # a re-dub lays its sound over the source video, else over a made one (its plan has sound)
    sound = video.redub(payload, ctx) if video.redub is not None else None
    source = inputs.read(ctx.get("source_video")) if sound is not None else None
    first_ref, last_ref = video.frames(payload)
    first = inputs.image(first_ref)
    last = inputs.image(last_ref) if first is not None else None
    redubbed = synth.redub(source, sound) if source and sound is not None else None
    seconds, audio = plan["seconds"], plan["audio"]
    data = redubbed or synth.encode_video(
        w, h, seconds, seed, endpoint, lines, audio=audio, sound=sound, first=first, last=last
    )
    return Produced([MediaFile("video.mp4", "video/mp4", data)], {"video": plan})


# --------------------------------------------------------------------------- speech


def _speech(endpoint: str, payload: Fields, seed: int, ctx: Fields) -> Produced:
    a = asked(endpoint, payload)
    audio, voice = a.section("audio_setting"), a.section("voice_setting")
    rate = int(audio.choice("sample_rate", "32000"))
    channels = int(audio.choice("channel", "1"))
    fmt = audio.choice("format", "mp3")
    bitrate = int(audio.choice("bitrate", "128000"))
    text, speed = str(payload.get("text", "")), voice.num("speed", 1.0, 0.5, 2.0)
    pitch, volume = voice.int("pitch", 0, -12, 12), voice.num("vol", 1.0, 0.0, 10.0)
    pcm = synth.speech_pcm(text, rate, channels, speed=speed, pitch=pitch, volume=volume)
    data, content_type = synth.encode_audio(pcm, rate, channels, fmt, bitrate)
    seconds = synth.pcm_seconds(pcm, rate, channels)
    hex_only = a.choice("output_format", "url") == "hex"
    files = [MediaFile(f"speech.{fmt}", content_type, data, hex_only=hex_only)]
    if a.flag("subtitle_enable"):
        by = "word" if a.choice("subtitle_type", "sentence").startswith("word") else "sentence"
        cues = json.dumps(subtitles(text, speed, by)).encode()
        files.append(MediaFile("subtitles.json", "application/json", cues))
    facts = {"duration_ms": round(seconds * 1000), "sample_rate": rate, "channels": channels}
    return Produced(files, facts)


def subtitles(text: str, speed: float, by: str) -> list[dict[str, Any]]:
    """Timed cues of the voice :func:`synth.speech_pcm` makes of ``text``: each
    sentence (``by="sentence"``) or word with ``time_begin`` and ``time_end`` in ms,
    from its first spoken character to its last (docs/decisions.md#sim-outputs)."""
    cues: list[dict[str, Any]] = []
    words, begin, end, at = "", 0.0, 0.0, 0.0
    for kind, seconds, char in [*synth.speech_pieces(text, speed), ("silence", 0.0, "")]:
        if kind == "voice":
            begin = at if not words.strip() else begin
            end = at + seconds
        words += char if char != "\n" else " "
        at += seconds
        # "" (a pause, and the end of the text added above) is in every string: a cut too
        if char in synth.SENTENCE_END + "\n" or (by == "word" and char.isspace()):
            if words.strip():
                ms = round(begin * 1000), round(end * 1000)
                cues.append({"text": words.strip(), "time_begin": ms[0], "time_end": ms[1]})
            words = ""
    return cues


def _audio(endpoint: str, payload: Fields, seed: int, ctx: Fields) -> Produced:
    """One mono MP3 with its length: vidK's audio preview, and any speech or audio
    endpoint registered at run time: the preview voice reading ``text`` (or ``prompt``),
    or music of ``duration`` seconds when there is neither."""
    text = str(payload.get("text") or payload.get("prompt") or "")
    seconds = asked(endpoint, payload).num("duration", 3, 1, 60)
    rate = synth.AUDIO_RATE
    pcm = synth.preview_voice(text) if text.strip() else synth.melody(seconds, rate, seed)
    data, content_type = synth.encode_audio(pcm, rate, 1, "mp3", 64000)
    duration_ms = round(synth.pcm_seconds(pcm, rate, 1) * 1000)
    return Produced([MediaFile("audio.mp3", content_type, data)], {"duration_ms": duration_ms})


def _nothing(endpoint: str, payload: Fields, seed: int, ctx: Fields) -> Produced:
    return Produced()  # JSON-only operations: the world writes their records


Producer = Callable[[str, Fields, int, Fields], Produced]

#: The media of each kind's endpoints that have no maker of their own (the
#: service's videos are among them: :func:`video_plan` knows each). The other kinds
#: (asset, subject, face) answer with JSON only: the world writes their records.
DEFAULT_MAKERS: dict[str, Producer] = {
    "image": _images,
    "video": _video,
    "speech": _audio,
    "audio": _audio,
}


#: Each family's maker for a kind of output; anything else gets its kind's default.
MAKERS: dict[tuple[str, str], Producer] = {
    ("imgM", "image"): _imgm,
    ("speechM", "speech"): _speech,
}


def producer(endpoint: str, kind: str) -> Producer:
    """The maker of an endpoint's outputs: its family's (:data:`MAKERS`), else its kind's."""
    return MAKERS.get((family_of(endpoint), kind)) or DEFAULT_MAKERS.get(kind, _nothing)


def produce(
    endpoint: str,
    kind: str,
    payload: Fields,
    seed: int,
    ctx: Fields,
    files: FileStore | None = None,
) -> Produced:
    """The media of one finished task (called in a worker thread).

    ``files`` lets inputs that name the simulator's own outputs be read.
    """
    return producer(endpoint, kind)(endpoint, payload, seed, {**ctx, "inputs": Inputs(files)})
