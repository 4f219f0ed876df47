"""Synthetic media: images (Pillow), H.264 MP4 videos (PyAV), speech audio (PyAV).

Everything here is a pure function of its arguments, run in a worker thread
(never on the event loop). The same arguments give the same bytes: an image's
look depends on its ``seed`` and text only, so prompt tuning feels real (same
seed, same picture; another seed, another picture).

Videos are kept small and quick to encode: a low frame rate (8 fps up to
1280x720, 4 fps above), a keyframe every second, x264 ``ultrafast`` at a high
CRF. The dimensions are the requested ones, exactly.
"""

from __future__ import annotations

import io
import math
import random
import re
import textwrap
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import av
from PIL import Image, ImageDraw, ImageFont

IMAGE_FORMATS = {
    "png": ("PNG", "image/png"),
    "jpeg": ("JPEG", "image/jpeg"),
    "jpg": ("JPEG", "image/jpeg"),
    "webp": ("WEBP", "image/webp"),
}


@dataclass(frozen=True)
class MediaFile:
    """One produced output: its bytes, or (``inline``) text carried in the result body."""

    name: str
    content_type: str
    data: bytes
    inline: str | None = None  # JSON outputs: the JSON string, also in the body
    hex_only: bool = False  # speech output_format "hex": no file, hex in the body


# --------------------------------------------------------------------------- images


@lru_cache(maxsize=32)
def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(size=max(8, size))


def _palette(seed: int) -> random.Random:
    return random.Random(f"look-{seed}")


def _background(width: int, height: int, seed: int) -> Image.Image:
    """A seed-dependent picture: a two-colour gradient with translucent shapes."""
    rng = _palette(seed)
    top = tuple(rng.randrange(0, 256) for _ in range(3))
    bottom = tuple(rng.randrange(0, 256) for _ in range(3))
    column = Image.new("RGB", (1, 256))
    column.putdata(
        [
            tuple(int(t + (b - t) * y / 255) for t, b in zip(top, bottom, strict=True))
            for y in range(256)
        ]
    )
    image = column.resize((width, height), Image.Resampling.BILINEAR)
    layer = Image.new("RGBA", (width, height), (0, 0, 0, 0))
    draw = ImageDraw.Draw(layer)
    for _ in range(rng.randrange(5, 10)):
        cx, cy = rng.uniform(0, width), rng.uniform(0, height)
        r = rng.uniform(0.08, 0.35) * min(width, height)
        fill = (*(rng.randrange(0, 256) for _ in range(3)), rng.randrange(70, 170))
        if rng.random() < 0.5:
            draw.ellipse((cx - r, cy - r, cx + r, cy + r), fill=fill)
        else:
            draw.rectangle((cx - r, cy - r * 0.6, cx + r, cy + r * 0.6), fill=fill)
    image = image.convert("RGBA")
    image.alpha_composite(layer)
    return image.convert("RGB")


def _caption(image: Image.Image, title: str, lines: Sequence[str]) -> None:
    """Draw the endpoint, the prompt and the key parameters on a dark panel."""
    width, height = image.size
    size = max(10, min(width, height) // 28)
    font, small = _font(int(size * 1.3)), _font(size)
    chars = max(16, int(width / (size * 0.55)) - 4)
    body: list[str] = []
    for line in lines:
        body.extend(textwrap.wrap(line, chars, max_lines=4, placeholder=" …") or [""])
    body = body[: max(1, (height // 2) // (size + 4))]
    panel_h = int(size * 1.9) + len(body) * (size + 4) + size
    overlay = Image.new("RGBA", image.size, (0, 0, 0, 0))
    ImageDraw.Draw(overlay).rectangle((0, height - panel_h, width, height), fill=(0, 0, 0, 150))
    base = image.convert("RGBA")
    base.alpha_composite(overlay)
    draw = ImageDraw.Draw(base)
    y = height - panel_h + size // 2
    draw.text((size, y), title, font=font, fill=(255, 255, 255))
    y += int(size * 1.6)
    for line in body:
        draw.text((size, y), line, font=small, fill=(230, 230, 230))
        y += size + 4
    image.paste(base.convert("RGB"))


def picture(width: int, height: int, seed: int, title: str, lines: Sequence[str]) -> Image.Image:
    image = _background(width, height, seed)
    _caption(image, title, lines)
    return image


def encode_image(image: Image.Image, fmt: str = "png", quality: int | None = None) -> bytes:
    pil_format, _ = IMAGE_FORMATS[fmt]
    buf = io.BytesIO()
    if pil_format == "PNG":
        image.save(buf, "PNG", compress_level=1)
    else:
        image.save(buf, pil_format, quality=max(1, min(100, quality if quality else 90)))
    return buf.getvalue()


def image_file(
    name: str,
    width: int,
    height: int,
    seed: int,
    title: str,
    lines: Sequence[str],
    fmt: str = "png",
    quality: int | None = None,
) -> MediaFile:
    data = encode_image(picture(width, height, seed, title, lines), fmt, quality)
    return MediaFile(f"{name}.{'jpg' if fmt == 'jpeg' else fmt}", IMAGE_FORMATS[fmt][1], data)


# --------------------------------------------------------------------------- audio


def _tone(sample_rate: int, seconds: float, freq: float, volume: float = 0.3) -> array:
    """A short note with a soft attack and release (no clicks between notes)."""
    n = max(1, int(sample_rate * seconds))
    fade = max(1, n // 6)
    amp = 32767 * max(0.0, min(1.0, volume))
    step = 2 * math.pi * freq / sample_rate
    out = array("h", bytes(2 * n))
    for i in range(n):
        env = min(1.0, i / fade, (n - 1 - i) / fade)
        out[i] = int(amp * env * (math.sin(step * i) + 0.3 * math.sin(3 * step * i)) / 1.3)
    return out


def _interleave(mono: array, channels: int) -> array:
    if channels == 1:
        return mono
    out = array("h", bytes(2 * len(mono) * channels))
    for c in range(channels):
        out[c::channels] = mono
    return out


def encode_audio(
    pcm: bytes, sample_rate: int, channels: int, fmt: str, bitrate: int | None = None
) -> tuple[bytes, str]:
    """Encode interleaved s16 PCM as mp3, wav, flac, aac (m4a) or raw pcm (L16)."""
    if fmt == "pcm":
        samples = array("h", pcm)
        samples.byteswap()  # audio/L16 is big-endian (RFC 2586)
        return samples.tobytes(), f"audio/L16;rate={sample_rate};channels={channels}"
    container, codec, content_type = {
        "mp3": ("mp3", "libmp3lame", "audio/mpeg"),
        "wav": ("wav", "pcm_s16le", "audio/wav"),
        "flac": ("flac", "flac", "audio/flac"),
    }[fmt]
    buf = io.BytesIO()
    with av.open(buf, "w", format=container) as out:
        stream = out.add_stream(codec, rate=sample_rate)
        stream.layout = "stereo" if channels == 2 else "mono"
        if fmt == "mp3" and bitrate:
            stream.bit_rate = bitrate
        _mux_audio(out, stream, pcm, sample_rate, channels)
    return buf.getvalue(), content_type


def _mux_audio(
    out: av.container.OutputContainer, stream: av.AudioStream, pcm: bytes, rate: int, channels: int
) -> None:
    layout = "stereo" if channels == 2 else "mono"
    frame_bytes = 1152 * 2 * channels
    pts = 0
    for start in range(0, len(pcm), frame_bytes):
        chunk = pcm[start : start + frame_bytes]
        samples = len(chunk) // (2 * channels)
        if samples == 0:
            break
        frame = av.AudioFrame(format="s16", layout=layout, samples=samples)
        frame.sample_rate = rate
        frame.planes[0].update(chunk[: samples * 2 * channels])
        frame.pts = pts
        pts += samples
        for packet in stream.encode(frame):
            out.mux(packet)
    for packet in stream.encode(None):
        out.mux(packet)


def melody(seconds: float, sample_rate: int, seed: int) -> bytes:
    """Background music for a video: a seeded sequence of quiet notes (mono s16)."""
    rng = random.Random(f"tune-{seed}")
    scale = [261.6, 293.7, 329.6, 392.0, 440.0, 523.3]
    notes = [_tone(sample_rate, 0.25, rng.choice(scale), 0.2) for _ in range(8)]
    pcm = bytearray()
    total = int(seconds * sample_rate) * 2
    while len(pcm) < total:
        pcm += notes[rng.randrange(len(notes))].tobytes()
    return bytes(pcm[:total])


PAUSE = re.compile(r"<#(\d{1,2}(?:\.\d{1,2})?)#>")
CHAR_SECONDS = 0.06


def speech_plan(text: str, speed: float = 1.0) -> list[tuple[str, float]]:
    """The text as ("voice" | "silence", seconds) pieces; ``<#x#>`` is x s of silence.

    Length grows with the text: each character speaks for 60 ms divided by the
    voice speed; a newline adds 0.4 s, sentence punctuation 0.2 s.
    """
    speed = speed if speed > 0 else 1.0
    pieces: list[tuple[str, float]] = []
    pos = 0
    for match in [*PAUSE.finditer(text), None]:
        segment = text[pos : match.start() if match else len(text)]
        for ch in segment:
            if ch == "\n":
                pieces.append(("silence", 0.4))
            elif ch in ".!?;。！？":
                pieces.append(("silence", 0.2))
            elif not ch.isspace():
                pieces.append(("voice", CHAR_SECONDS / speed))
            else:
                pieces.append(("silence", 0.03 / speed))
        if match:
            pieces.append(("silence", float(match.group(1))))
            pos = match.end()
    return pieces


def speech_pcm(
    text: str,
    sample_rate: int,
    channels: int,
    *,
    speed: float = 1.0,
    pitch: int = 0,
    volume: float = 1.0,
) -> bytes:
    """Interleaved s16 PCM of a humming "voice" that follows the text."""
    plan = speech_plan(text, speed)
    base = 180.0 * 2 ** (max(-12, min(12, pitch)) / 12)
    vol = 0.35 * max(0.0, min(10.0, volume)) / 1.0
    voices = [
        _interleave(
            _tone(sample_rate, CHAR_SECONDS / (speed or 1), base * (1 + k / 10), vol), channels
        ).tobytes()
        for k in range(6)
    ]
    frame = 2 * channels
    out = bytearray()
    for i, (kind, seconds) in enumerate(plan):
        if kind == "voice":
            out += voices[(i * 7 + len(out)) % len(voices)]
        else:
            out += bytes(int(seconds * sample_rate) * frame)
    if not out:
        out += bytes(int(0.2 * sample_rate) * frame)
    return bytes(out)


def pcm_seconds(pcm: bytes, sample_rate: int, channels: int) -> float:
    return len(pcm) / (2 * channels * sample_rate)


# --------------------------------------------------------------------------- video


AUDIO_RATE = 24000


def video_fps(width: int, height: int) -> int:
    return 8 if width * height <= 1280 * 720 else 4


def encode_video(
    width: int,
    height: int,
    seconds: float,
    seed: int,
    title: str,
    lines: Sequence[str],
    *,
    audio: bool = False,
) -> bytes:
    """An H.264 MP4 of ``seconds`` at ``width`` x ``height``; a moving marker and a
    progress bar over the captioned seed picture; AAC mono music when ``audio``."""
    fps = video_fps(width, height)
    frames = max(1, round(seconds * fps))
    base = picture(width, height, seed, title, lines)
    buf = io.BytesIO()
    with av.open(buf, "w", format="mp4") as out:
        video = out.add_stream("libx264", rate=fps)
        video.width, video.height, video.pix_fmt = width, height, "yuv420p"
        video.options = {"preset": "ultrafast", "crf": "32", "g": str(fps)}
        sound = out.add_stream("aac", rate=AUDIO_RATE) if audio else None
        if sound is not None:
            sound.layout = "mono"
        for index, image in enumerate(_frames(base, frames, fps)):
            frame = av.VideoFrame.from_image(image)
            frame.pts = index
            for packet in video.encode(frame):
                out.mux(packet)
        for packet in video.encode(None):
            out.mux(packet)
        if sound is not None:
            _mux_audio(out, sound, melody(frames / fps, AUDIO_RATE, seed), AUDIO_RATE, 1)
    return buf.getvalue()


def _frames(base: Image.Image, frames: int, fps: int) -> Iterable[Image.Image]:
    width, height = base.size
    radius = max(6, min(width, height) // 14)
    font = _font(max(10, min(width, height) // 24))
    for index in range(frames):
        image = base.copy()
        draw = ImageDraw.Draw(image)
        share = index / max(1, frames - 1)
        cx = radius + share * (width - 2 * radius)
        cy = height * 0.25 + math.sin(share * 2 * math.pi) * height * 0.1
        draw.ellipse((cx - radius, cy - radius, cx + radius, cy + radius), fill=(255, 220, 60))
        draw.rectangle(
            (0, 0, int(width * (index + 1) / frames), max(4, height // 90)), fill=(255, 255, 255)
        )
        draw.text(
            (radius, radius // 2 + 6), f"{index / fps:5.2f} s", font=font, fill=(255, 255, 255)
        )
        yield image
