"""Synthetic media: images (Pillow), H.264 MP4 videos (PyAV), speech audio (PyAV).

Pure functions of their arguments (the same arguments, the same bytes), run in a worker
thread, never on the event loop. A picture follows its inputs (:class:`.looks.Look`);
edits start from their source, so a lesson shows before and after; videos are small and
quick to encode (8 fps up to 1280x720, 4 above, x264 ``ultrafast``) at exactly the size
asked: docs/decisions.md#sim-pictures.
"""

from __future__ import annotations

import io
import itertools
import math
import random
import re
import textwrap
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

import av
from PIL import Image, ImageDraw, ImageFont, ImageOps

from ..media.thumbnails import MAX_PIXELS
from .looks import Look, background

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


def caption(image: Image.Image, title: str, lines: Sequence[str]) -> None:
    """Draw the endpoint's signature (every captioned output: pictures, edits,
    video frames) and the endpoint, the prompt and the key parameters on a dark panel."""
    Look.read(title, lines).sign(image)
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
    base = Image.alpha_composite(image.convert("RGBA"), overlay)
    draw = ImageDraw.Draw(base)
    y = height - panel_h + size // 2
    draw.text((size, y), title, font=font, fill=(255, 255, 255))
    y += int(size * 1.6)
    for line in body:
        draw.text((size, y), line, font=small, fill=(230, 230, 230))
        y += size + 4
    image.paste(base.convert("RGB"))


def picture(width: int, height: int, seed: int, title: str, lines: Sequence[str]) -> Image.Image:
    """A captioned picture whose look follows its inputs (see :class:`Look`)."""
    image = Look.read(title, lines).draw(width, height, seed)
    caption(image, title, lines)
    return image


# --------------------------------------------------------------------------- looks


def fit(image: Image.Image, width: int, height: int) -> Image.Image:
    """``image`` cropped to the ratio of ``width`` x ``height`` and scaled to it."""
    if image.size == (width, height):
        return image.convert("RGB")
    return ImageOps.fit(image.convert("RGB"), (width, height), Image.Resampling.BILINEAR)


def vary(source: Image.Image, seed: int, strong: bool) -> Image.Image:
    """A variation: the source, recognisably, with a seed picture blended in.

    Subtle: 8 % of the seed picture. Strong: 20 %, and the view zoomed in by 4 %
    (a picture's layout is its seed's, so more would stop looking like the source).
    """
    width, height = source.size
    base = source.convert("RGB")
    if strong:
        dx, dy = width // 100, height // 100
        base = base.crop((dx, dy, width - dx, height - dy)).resize(
            (width, height), Image.Resampling.BILINEAR
        )
    return Image.blend(base, background(width, height, seed), 0.14 if strong else 0.06)


def extend(source: Image.Image, direction: int, scale: float, seed: int) -> Image.Image:
    """The source unchanged on a canvas ``scale`` times as long towards ``direction``
    (imgM_pan's 0-3: down, right, up, left).

    The new area continues the source: its edge mirrored, half blended with a
    seed picture. Sides stay even (video-friendly) and at most 4096 pixels.
    """
    width, height = source.size
    vertical = direction in (0, 2)
    new_w = width if vertical else min(4096, max(width + 2, even(width * scale)))
    new_h = min(4096, max(height + 2, even(height * scale))) if vertical else height
    grow_w, grow_h = new_w - width, new_h - height
    base = source.convert("RGB")
    if grow_w <= 0 and grow_h <= 0:  # already at the largest side
        return base
    turned = ImageOps.flip if vertical else ImageOps.mirror
    size = (width, grow_h) if vertical else (grow_w, height)
    if grow_w > width or grow_h > height:  # longer than the source itself
        strip = turned(base).resize(size)
    else:  # the source's edge on that side
        edges = {0: (0, height - grow_h, width, height), 1: (width - grow_w, 0, width, height)}
        strip = turned(base.crop(edges.get(direction, (0, 0, *size))))
    fill = Image.blend(strip, background(*strip.size, seed), 0.5)
    canvas = Image.new("RGB", (new_w, new_h))
    at_source = {0: (0, 0), 1: (0, 0), 2: (0, grow_h), 3: (grow_w, 0)}[direction]
    at_fill = {0: (0, height), 1: (width, 0), 2: (0, 0), 3: (0, 0)}[direction]
    canvas.paste(fill, at_fill)
    canvas.paste(base, at_source)
    return canvas


def even(x: float) -> int:
    """``x`` rounded to an even number of pixels, at least 2 (H.264 needs even sides)."""
    return max(2, round(x / 2) * 2)


def polygon_mask(
    size: tuple[int, int], polygons: Sequence[tuple[float, float, Sequence[float]]]
) -> Image.Image:
    """A mask (``L``, white = repaint) of polygons given in their own width x height frame."""
    mask = Image.new("L", size, 0)
    draw = ImageDraw.Draw(mask)
    for frame_w, frame_h, points in polygons:
        sx, sy = size[0] / max(1.0, frame_w), size[1] / max(1.0, frame_h)
        xy = [(points[i] * sx, points[i + 1] * sy) for i in range(0, len(points) - 1, 2)]
        if len(xy) >= 3:
            draw.polygon(xy, fill=255)
    return mask


def binary_mask(image: Image.Image, size: tuple[int, int]) -> Image.Image:
    """A mask image scaled to ``size``, thresholded: white (>= 128) repaints."""
    gray = image.convert("L").resize(size, Image.Resampling.NEAREST)
    return gray.point(lambda v: 255 if v >= 128 else 0)


def repaint(
    source: Image.Image, mask: Image.Image, seed: int, title: str, lines: Sequence[str]
) -> Image.Image:
    """The source with only the white part of ``mask`` repainted; the rest kept exactly."""
    width, height = source.size
    new = picture(width, height, seed, title, lines)
    return Image.composite(new, source.convert("RGB"), mask)


def edit(inputs: Sequence[Image.Image], width: int, height: int, seed: int) -> Image.Image:
    """An edit of input images: the first fills the frame (fitted), lightly changed;
    any others sit as insets along the top right, so every input shows."""
    base = Image.blend(fit(inputs[0], width, height), background(width, height, seed), 0.2)
    others = inputs[1:]
    if others:
        side = max(16, min(width, height) // 4)
        for n, image in enumerate(others):
            inset = fit(image, side, side)
            x = width - (n + 1) * (side + side // 8)
            base.paste(inset, (max(0, x), side // 8))
    return base


def image_output(
    name: str, image: Image.Image, fmt: str = "png", quality: int | None = None
) -> MediaFile:
    """``image`` encoded as the output ``name`` and its format's extension."""
    pil_format, content_type = IMAGE_FORMATS[fmt]
    buf = io.BytesIO()
    if pil_format == "PNG":
        image.save(buf, "PNG", compress_level=1)
    else:
        image.save(buf, pil_format, quality=max(1, min(100, quality if quality else 90)))
    return MediaFile(f"{name}.{'jpg' if fmt == 'jpeg' else fmt}", content_type, buf.getvalue())


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
        _mux_audio(out, stream, pcm)
    return buf.getvalue(), content_type


def _mux_audio(out: av.container.OutputContainer, stream: av.AudioStream, pcm: bytes) -> None:
    """Interleaved s16 ``pcm`` encoded into ``out`` in the stream's layout and rate."""
    layout, rate, channels = stream.layout.name, stream.rate, stream.layout.nb_channels
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


SENTENCE_END = ".!?;。！？"


def speech_pieces(text: str, speed: float = 1.0) -> list[tuple[str, float, str]]:
    """The text as ("voice" | "silence", seconds, the character said) pieces; ``<#x#>``
    is x s of silence (its character ""). Each character speaks for 60 ms divided by
    the voice speed; a newline adds 0.4 s, sentence punctuation 0.2 s."""
    speed = speed if speed > 0 else 1.0
    pieces: list[tuple[str, float, str]] = []
    pos = 0
    for match in [*PAUSE.finditer(text), None]:
        segment = text[pos : match.start() if match else len(text)]
        for ch in segment:
            if ch == "\n":
                pieces.append(("silence", 0.4, ch))
            elif ch in SENTENCE_END:
                pieces.append(("silence", 0.2, ch))
            elif not ch.isspace():
                pieces.append(("voice", CHAR_SECONDS / speed, ch))
            else:
                pieces.append(("silence", 0.03 / speed, ch))
        if match:
            pieces.append(("silence", float(match.group(1)), ""))
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
    base = 180.0 * 2 ** (max(-12, min(12, pitch)) / 12)
    vol = 0.35 * max(0.0, min(10.0, volume)) / 1.0
    tones = [
        _tone(sample_rate, CHAR_SECONDS / (speed or 1), base * (1 + k / 10), vol) for k in range(6)
    ]
    mono = array("h")
    for i, (kind, seconds, _said) in enumerate(speech_pieces(text, speed)):
        if kind == "voice":  # the tone by the piece's place and the bytes made so far
            mono += tones[(i * 7 + 2 * channels * len(mono)) % len(tones)]
        else:
            mono += array("h", bytes(2 * int(seconds * sample_rate)))
    if not mono:
        mono = array("h", bytes(2 * int(0.2 * sample_rate)))
    out = array("h", bytes(2 * len(mono) * channels))
    for channel in range(channels):
        out[channel::channels] = mono
    return out.tobytes()


def pcm_seconds(pcm: bytes, sample_rate: int, channels: int) -> float:
    return len(pcm) / (2 * channels * sample_rate)


AUDIO_RATE = 24000
"""Sample rate of the sound the simulator makes for videos and previews."""


def preview_voice(text: str) -> bytes:
    """The voice of ``vidK-audio-preview`` (2-60 s, mono, :data:`AUDIO_RATE`); lip-sync
    lays the same voice when given its ``audio_id``."""
    pcm = speech_pcm(text, AUDIO_RATE, 1)
    seconds = max(2.0, min(60.0, pcm_seconds(pcm, AUDIO_RATE, 1)))
    return (pcm + bytes(int(seconds * AUDIO_RATE) * 2))[: int(seconds * AUDIO_RATE) * 2]


# --------------------------------------------------------------------------- video


def encode_video(
    width: int,
    height: int,
    seconds: float,
    seed: int,
    title: str,
    lines: Sequence[str],
    *,
    audio: bool = False,
    first: Image.Image | None = None,
    last: Image.Image | None = None,
    sound: bytes | None = None,
) -> bytes:
    """An H.264 MP4 of ``seconds`` at ``width`` x ``height``; a moving marker and a
    progress bar over the captioned seed picture; AAC mono music when ``audio``.

    With ``first`` the video starts on that image and moves towards the seed
    picture, or towards ``last`` when given, on which it ends: the first and last
    frames are those images (fitted), without marker. ``sound`` is mono s16 PCM
    at ``AUDIO_RATE`` to use instead of the music.
    """
    fps = 8 if width * height <= 1280 * 720 else 4
    frames = max(1, round(seconds * fps))
    base = picture(width, height, seed, title, lines)
    start = fit(first, width, height) if first is not None else None
    end = fit(last, width, height) if last is not None else None
    music = sound if sound is not None else melody(frames / fps, AUDIO_RATE, seed)
    return _mux(
        _frames(base, frames, fps, start, end), width, height, fps, music if audio else None
    )


def _mux(
    images: Iterable[Image.Image], width: int, height: int, fps: int, pcm: bytes | None
) -> bytes:
    """Encode frames (H.264, fast settings) and mono AAC from s16 PCM into an MP4 (the
    sound cut or padded with silence to the video's length)."""
    buf = io.BytesIO()
    with av.open(buf, "w", format="mp4") as out:
        video = out.add_stream("libx264", rate=fps)
        video.width, video.height, video.pix_fmt = width, height, "yuv420p"
        video.options = {"preset": "ultrafast", "crf": "32", "g": str(fps)}
        sound = out.add_stream("aac", rate=AUDIO_RATE) if pcm is not None else None
        if sound is not None:
            sound.layout = "mono"
        count = 0
        for count, image in enumerate(images, 1):
            frame = av.VideoFrame.from_image(image)
            frame.pts = count - 1
            for packet in video.encode(frame):
                out.mux(packet)
        for packet in video.encode(None):
            out.mux(packet)
        length = 2 * round(count / fps * AUDIO_RATE)  # bytes of s16 mono for the whole video
        if sound is not None and pcm is not None:
            _mux_audio(out, sound, (pcm + bytes(length))[:length])
    return buf.getvalue()


def _frames(
    base: Image.Image,
    frames: int,
    fps: int,
    first: Image.Image | None = None,
    last: Image.Image | None = None,
) -> Iterable[Image.Image]:
    width, height = base.size
    radius = max(6, min(width, height) // 14)
    font = _font(max(10, min(width, height) // 24))
    for index in range(frames):
        share = index / max(1, frames - 1)
        given = first if index == 0 else last if index == frames - 1 else None
        if given is not None:
            yield given
            continue
        if first is None:
            image = base.copy()
        elif last is None:
            image = Image.blend(first, base, share * 0.7)
        else:
            image = Image.blend(first, last, share)
        draw = ImageDraw.Draw(image)
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


#: A source video (a lip-sync's) is decoded within caps, as input pictures are
#: (docs/decisions.md#pixel-bombs): no frame of more pixels than a thumbnail decodes
#: (past it the video reads as none), and no more frames and pixels in all than these:
#: reading stops there, its first part kept (only the first minute is ever read).
MAX_FRAME_PIXELS = MAX_PIXELS
MAX_VIDEO_FRAMES = 14_400  # a minute at 240 frames a second
MAX_VIDEO_PIXELS = 1_000_000_000  # 16 s of 1080p at 30 fps; the simulator's are < 0.1 of it


class _PastTheCaps(Exception):
    """A source video of a frame past :data:`MAX_FRAME_PIXELS`: it reads as none."""


_UNREADABLE = (av.error.FFmpegError, IndexError, ValueError, _PastTheCaps)


def _rate(container: av.container.InputContainer) -> float:
    """The frame rate of the container's first video stream (8 when unstated)."""
    return float(container.streams.video[0].average_rate or 0) or 8.0


def _decoded(container: av.container.InputContainer, limit_seconds: float) -> Iterator[Image.Image]:
    """The frames of the first video stream up to ``limit_seconds``, one at a time: a
    frame past :data:`MAX_FRAME_PIXELS` (checked in the header before any is decoded, and
    again on each frame before its pixels are copied) raises :class:`_PastTheCaps`; the
    frames end early at :data:`MAX_VIDEO_FRAMES` or :data:`MAX_VIDEO_PIXELS` in all, a
    long or large source read in part, never refused whole."""
    stream = container.streams.video[0]
    if stream.width * stream.height > MAX_FRAME_PIXELS:
        raise _PastTheCaps(f"{stream.width} x {stream.height} pixels a frame")
    limit, pixels = min(limit_seconds * _rate(container), MAX_VIDEO_FRAMES), 0
    for count, frame in enumerate(container.decode(video=0), 1):
        if frame.width * frame.height > MAX_FRAME_PIXELS:
            raise _PastTheCaps(f"{frame.width} x {frame.height} pixels at frame {count}")
        pixels += frame.width * frame.height
        if pixels > MAX_VIDEO_PIXELS:
            return
        yield frame.to_image()
        if count >= limit:
            return


def video_frames(data: bytes, limit_seconds: float = 60.0) -> tuple[list[Image.Image], float]:
    """The frames of a video (up to ``limit_seconds``, and within :data:`MAX_VIDEO_FRAMES`
    and :data:`MAX_VIDEO_PIXELS`) and its frame rate; ([], 0) if unreadable or of a frame
    past :data:`MAX_FRAME_PIXELS`."""
    try:
        with av.open(io.BytesIO(data)) as container:
            return list(_decoded(container, limit_seconds)), _rate(container)
    except _UNREADABLE:
        return [], 0.0


def decode_audio(data: bytes, limit_seconds: float = 60.0) -> bytes | None:
    """Any audio PyAV reads, as mono s16 PCM at ``AUDIO_RATE`` (None if unreadable)."""
    limit = int(limit_seconds * AUDIO_RATE) * 2
    out = bytearray()
    try:
        with av.open(io.BytesIO(data)) as container:
            resampler = av.AudioResampler(format="s16", layout="mono", rate=AUDIO_RATE)
            for frame in container.decode(audio=0):
                for chunk in resampler.resample(frame):
                    out += bytes(chunk.planes[0])[: chunk.samples * 2]
                if len(out) >= limit:
                    break
    except (av.error.FFmpegError, IndexError, ValueError):
        return None
    return bytes(out[:limit]) or None


def redub(source: bytes, pcm: bytes) -> bytes | None:
    """The source video's frames with ``pcm`` (mono s16, ``AUDIO_RATE``) as its sound
    (:func:`_mux` fits it to the video's length), at most 30 frames a second, the
    source's first part within the caps (:func:`_decoded`). None when the source cannot
    be decoded or has a frame past :data:`MAX_FRAME_PIXELS`: the simulator then makes a
    video for the sound. Frames go from the decoder to the
    encoder one at a time, never all held."""
    try:
        with av.open(io.BytesIO(source)) as container:
            rate = _rate(container)
            fps = max(1, min(30, round(rate)))
            kept = itertools.islice(_decoded(container, 60.0), 0, None, max(1, round(rate / fps)))
            first = next(kept, None)
            if first is None:
                return None
            width, height = (even(first.width), even(first.height))
            images = (fit(image, width, height) for image in itertools.chain([first], kept))
            return _mux(images, width, height, fps, pcm)
    except _UNREADABLE:
        return None
