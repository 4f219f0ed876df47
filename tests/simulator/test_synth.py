"""Media fitted to the request, checked by decoding it (Pillow, PyAV)."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

import av
import httpx
import pytest
from PIL import Image, ImageChops, ImageStat

from genwidgets.simulator import looks, synth
from genwidgets.simulator.videos import VIDA_DIMENSIONS, tier_dimensions, video_plan

pytestmark = pytest.mark.timeout(60)
Run = Callable[..., dict[str, Any]]


def _fetch(output: dict[str, Any]) -> bytes:
    reply = httpx.get(output["url"])
    assert reply.status_code == 200
    assert reply.headers["content-type"] == output["content_type"]
    return reply.content


def _video(data: bytes) -> tuple[int, int, float, list[str]]:
    with av.open(io.BytesIO(data)) as container:
        stream = container.streams.video[0]
        frames = sum(1 for _ in container.decode(video=0))
        rate = float(stream.average_rate or 1)
        kinds = [s.type for s in container.streams]
        return stream.width, stream.height, frames / rate, kinds


def _audio(data: bytes, fmt: str | None = None) -> tuple[int, int, float]:
    with av.open(io.BytesIO(data), format=fmt) as container:
        stream = container.streams.audio[0]
        samples = sum(frame.samples for frame in container.decode(audio=0))
        return stream.rate, stream.channels, samples / stream.rate


def test_vida_video_has_table_dimensions_duration_and_audio(run: Run) -> None:
    result = run(
        "vidA-2-0-fast",
        {
            "content": [{"type": "text", "text": "a kite"}],
            "resolution": "480p",
            "ratio": "16:9",
            "duration": 4,
        },
    )
    [out] = result["outputs"]
    assert out["content_type"] == "video/mp4"
    width, height, seconds, kinds = _video(_fetch(out))
    assert (width, height) == (864, 496)
    assert abs(seconds - 4) <= 0.13
    assert "audio" in kinds  # generate_audio defaults to true


def test_silent_video_when_audio_is_off(run: Run) -> None:
    result = run(
        "vidVq2-text2video",
        {"prompt": "waves", "duration": 2, "resolution": "540p", "aspect_ratio": "9:16"},
    )
    width, height, seconds, kinds = _video(_fetch(result["outputs"][0]))
    assert (width, height) == (540, 960) and abs(seconds - 2) <= 0.13
    assert kinds == ["video"]


def test_vida_table_is_exact() -> None:
    content = {"content": [{"type": "text", "text": "x"}]}
    for tier, ratios in VIDA_DIMENSIONS.items():
        for ratio, size in ratios.items():
            plan = video_plan("vidA-2-0", {**content, "resolution": tier, "ratio": ratio}, {})
            assert plan["size"] == size
    assert VIDA_DIMENSIONS["480p"]["16:9"] == (864, 496)
    assert VIDA_DIMENSIONS["1080p"]["21:9"] == (2206, 946)
    auto = video_plan("vidA-2-0", {**content, "duration": -1}, {})
    assert auto["size"] == (1280, 720) and auto["seconds"] == 5 and auto["audio"] is True


def test_tier_dimensions_follow_the_ratio() -> None:
    assert tier_dimensions("720p", (16, 9)) == (1280, 720)
    assert tier_dimensions("4K", (16, 9)) == (3840, 2160)
    assert tier_dimensions("1080p", (9, 16)) == (1080, 1920)
    assert tier_dimensions("2K", (1, 1)) == (1440, 1440)
    plan = video_plan(
        "vidK-v3-turbo-t2v",
        {"prompt": "x", "resolution": "1080P", "aspect_ratio": "1:1", "sound": "on"},
        {},
    )
    assert plan == {"size": (1080, 1080), "seconds": 5, "audio": True}


def test_images_honour_size_n_and_format(run: Run) -> None:
    result = run(
        "imgG-1.5-edit",
        {
            "prompt": "make it blue",
            "images": ["https://x/a.png"],
            "size": "1536x1024",
            "n": 2,
            "output_format": "jpeg",
        },
    )
    assert len(result["outputs"]) == 2
    for out in result["outputs"]:
        assert out["content_type"] == "image/jpeg"
        with Image.open(io.BytesIO(_fetch(out))) as img:
            assert img.format == "JPEG" and img.size == (1536, 1024)


def test_imgm_tasks_yield_four_images_at_the_prompt_ratio(run: Run) -> None:
    result = run("imgM-v8.1-t2i", {"prompt": "a lighthouse --ar 16:9"})
    assert len(result["outputs"]) == 4
    for out in result["outputs"]:
        with Image.open(io.BytesIO(_fetch(out))) as img:
            assert img.format == "PNG" and img.size == (1024, 576)


@pytest.mark.slow
def test_same_seed_same_bytes_other_seed_visibly_different(run: Run) -> None:
    payload = {"prompt": "a fox in snow", "n": 1, "size": "1280*1280"}
    a = _fetch(run("genW2.5-t2i-preview", {**payload, "seed": 11})["outputs"][0])
    b = _fetch(run("genW2.5-t2i-preview", {**payload, "seed": 11})["outputs"][0])
    c = _fetch(run("genW2.5-t2i-preview", {**payload, "seed": 12})["outputs"][0])
    assert a == b
    with Image.open(io.BytesIO(a)) as ia, Image.open(io.BytesIO(c)) as ic:
        diff = ImageStat.Stat(ImageChops.difference(ia.convert("RGB"), ic.convert("RGB")))
        assert sum(diff.mean) / 3 > 10  # mean channel difference, out of 255


@pytest.mark.parametrize(
    ("setting", "content_type", "rate", "channels"),
    [
        ({}, "audio/mpeg", 32000, 1),
        ({"format": "wav", "sample_rate": 16000, "channel": 2}, "audio/wav", 16000, 2),
        ({"format": "flac", "sample_rate": 44100}, "audio/flac", 44100, 1),
        ({"format": "mp3", "sample_rate": 22050, "channel": 2}, "audio/mpeg", 22050, 2),
    ],
)
def test_speech_format_rate_and_channels(
    run: Run, setting: dict[str, Any], content_type: str, rate: int, channels: int
) -> None:
    result = run("speechM-02-turbo", {"text": "Hello there.", "audio_setting": setting})
    [out] = result["outputs"]
    assert out["content_type"] == content_type
    got_rate, got_channels, seconds = _audio(_fetch(out))
    assert (got_rate, got_channels) == (rate, channels)
    assert seconds > 0.5


def test_speech_grows_with_text_and_pauses_are_silence() -> None:
    short = synth.speech_pcm("Hello.", 16000, 1)
    longer = synth.speech_pcm("Hello. " * 10, 16000, 1)
    paused = synth.speech_pcm("Hello.<#1.5#>Hello.", 16000, 1)
    seconds = [synth.pcm_seconds(p, 16000, 1) for p in (short, longer, paused)]
    assert seconds[1] > 5 * seconds[0]
    assert seconds[2] >= 2 * seconds[0] + 1.5
    middle = paused[int(len(short) + 0.2 * 32000) : int(len(short) + 1.3 * 32000)]
    assert middle.strip(b"\x00") == b""  # the pause is digital silence


def test_speech_pcm_and_hex_outputs(run: Run) -> None:
    text = "One two three."
    pcm = run(
        "speechM-02-turbo", {"text": text, "audio_setting": {"format": "pcm", "sample_rate": 8000}}
    )
    [raw] = pcm["outputs"]
    assert raw["content_type"] == "audio/L16;rate=8000;channels=1"
    expected = synth.pcm_seconds(synth.speech_pcm(text, 8000, 1), 8000, 1)
    assert len(_fetch(raw)) == round(expected * 8000) * 2
    hexed = run("speechM-02-turbo", {"text": text, "output_format": "hex"})
    [entry] = hexed["outputs"]
    assert entry["encoding"] == "hex" and "url" not in entry
    assert entry["content_type"] == "audio/mpeg"
    rate, channels, seconds = _audio(bytes.fromhex(entry["content"]), "mp3")
    assert (rate, channels) == (32000, 1) and abs(seconds - expected) < 0.2


def test_speech_with_subtitles_adds_timed_cues_that_follow_the_voice(run: Run) -> None:
    """``subtitle_enable`` adds a JSON output: each sentence (or word) with its times
    in ms, which fall where the voice speaks (silence between them), within the audio."""
    text = "Subtitles follow the voice. One sentence at a time."
    plain = run("speechM-02-turbo", {"text": text})
    assert [o["content_type"] for o in plain["outputs"]] == ["audio/mpeg"]
    result = run("speechM-02-turbo", {"text": text, "subtitle_enable": True})
    audio, cues_out = result["outputs"]
    assert (audio["content_type"], cues_out["content_type"]) == ("audio/mpeg", "application/json")
    cues = json.loads(_fetch(cues_out))
    assert [c["text"] for c in cues] == ["Subtitles follow the voice.", "One sentence at a time."]
    _, _, seconds = _audio(_fetch(audio))
    assert 0 == cues[0]["time_begin"] < cues[0]["time_end"] < cues[1]["time_begin"]
    assert cues[1]["time_end"] <= seconds * 1000 + 50
    pcm = synth.speech_pcm(text, 16000, 1)
    gap = pcm[cues[0]["time_end"] * 32 + 64 : cues[1]["time_begin"] * 32 - 64]
    assert gap and gap.strip(b"\x00") == b""  # between two cues the voice is silent
    words = run(
        "speechM-02-turbo",
        {"text": "Ready.<#1.5#>Set, go!", "subtitle_enable": True, "subtitle_type": "word"},
    )
    cues = json.loads(_fetch(words["outputs"][1]))
    assert [c["text"] for c in cues] == ["Ready.", "Set,", "go!"]
    assert cues[1]["time_begin"] - cues[0]["time_end"] >= 1500  # the pause


def test_asset_get_returns_the_demo_record(run: Run) -> None:
    result = run("asset-get", {"Id": "asset-demo"})
    [out] = result["outputs"]
    assert out["content_type"] == "application/json"
    record = json.loads(out["content"])
    assert json.loads(_fetch(out)) == record
    assert set(record) == {
        "Id",
        "Name",
        "URL",
        "AssetType",
        "GroupId",
        "Status",
        "CreateTime",
        "UpdateTime",
        "ProjectName",
    }
    assert record["Id"] == "asset-demo" and record["Status"] == "Active"
    assert record["AssetType"] == "Image"
    with Image.open(io.BytesIO(httpx.get(record["URL"]).content)) as img:
        assert img.size == (640, 640)


# ------------------------------------------------------------------ looks (issue 24.5)


def _image(output: dict[str, Any]) -> Image.Image:
    return Image.open(io.BytesIO(_fetch(output))).convert("RGB")


def _palette_distance(a: Image.Image, b: Image.Image) -> float:
    """Half the L1 distance of coarse colour histograms (0 same palette, 1 disjoint):
    blind to where colours sit, so a layout change alone moves it little."""

    def histogram(image: Image.Image) -> dict[tuple[int, int, int], float]:
        counts: dict[tuple[int, int, int], float] = {}
        small = image.reduce(8)
        for n, (r, g, bl) in small.getcolors(small.width * small.height) or []:
            key = (r // 64, g // 64, bl // 64)
            counts[key] = counts.get(key, 0) + n
        total = sum(counts.values())
        return {k: v / total for k, v in counts.items()}

    ha, hb = histogram(a), histogram(b)
    return sum(abs(ha.get(k, 0) - hb.get(k, 0)) for k in set(ha) | set(hb)) / 2


def _mean_difference(a: Image.Image, b: Image.Image) -> float:
    return sum(ImageStat.Stat(ImageChops.difference(a, b)).mean) / 3


@pytest.mark.slow
def test_prompts_differ_far_more_than_seeds_of_one_prompt(run: Run) -> None:
    def shot(prompt: str, seed: int) -> Image.Image:
        payload = {"prompt": prompt, "n": 1, "size": "1280*1280", "seed": seed}
        return _image(run("genW2.5-t2i-preview", payload)["outputs"][0])

    fox, cat = shot("a red fox in the snow", 3), shot("a cat on a sofa", 3)
    fox_again, cat_again = shot("a red fox in the snow", 4), shot("a cat on a sofa", 4)
    prompts = _palette_distance(fox, cat)
    seeds = max(_palette_distance(fox, fox_again), _palette_distance(cat, cat_again))
    assert prompts > 3 * seeds, (prompts, seeds)
    assert _mean_difference(fox, fox_again) > 5  # the layout did change with the seed


def test_the_same_word_makes_the_same_motif_in_any_model() -> None:
    assert looks.word_colour("fox") == looks.word_colour("fox")
    a = synth.Look.read("genW2.5-t2i-preview · 1/1", ["a fox"]).draw(256, 256, 1)
    b = synth.Look.read("imgM-v8.1-t2i · 1/4", ["a fox"]).draw(256, 256, 1)
    assert a.tobytes() == b.tobytes()  # the endpoint only signs, in the caption step


@pytest.mark.parametrize("endpoint", ["genW2.5-t2i-preview", "imgM-v8.1-t2i", "vidVq2-text2video"])
def test_each_endpoint_signs_its_pictures(endpoint: str) -> None:
    colour = looks.endpoint_colour(endpoint)
    for prompt, seed in (("a fox", 1), ("a dark forest", 9)):
        image = synth.picture(400, 300, seed, f"{endpoint} · 1/1", [prompt])
        # the frame's middle of the left side is the endpoint's colour, whatever the prompt
        assert image.getpixel((2, 150)) == colour
    others = {
        looks.endpoint_colour(e)
        for e in ("genW2.5-t2i-preview", "imgM-v8.1-t2i", "vidVq2-text2video", "imgQ-edit-plus")
    }
    assert len(others) == 4


@pytest.mark.slow
def test_imgm_parameters_change_what_they_name(run: Run) -> None:
    def shot(prompt: str) -> Image.Image:
        return _image(run("imgM-v8.1-t2i", {"prompt": prompt + " --seed 21"})["outputs"][0])

    plain = shot("a fox")
    chaotic, weird, styled = (
        shot("a fox --chaos 100"),
        shot("a fox --weird 3000"),
        shot("a fox --stylize 1000"),
    )
    for changed in (chaotic, weird, styled):
        assert _mean_difference(plain, changed) > 3
    # --stylize widens the endpoint's frame: a pixel inside the plain frame is framed now
    side = min(plain.size)
    probe = (int(side * 0.07), plain.size[1] // 2)
    colour = looks.endpoint_colour("imgM-v8.1-t2i")
    assert plain.getpixel(probe) != colour and styled.getpixel(probe) == colour
    # a heavier part takes more of the picture in its word's motif colour
    heavy, light = shot("fox::3 snow"), shot("fox::0.3 snow")
    assert _mean_difference(heavy, light) > 3


def test_same_inputs_same_bytes() -> None:
    def made() -> bytes:
        drawn = synth.picture(300, 200, 5, "imgM-v8.1-t2i · 1/4", ["a fox::2 cat", "--chaos 40"])
        return synth.image_output("x", drawn).data

    assert made() == made()
