"""Simulated edits look like what they do, checked pixel by pixel.

PNG outputs are compared exactly where a rule says "kept"; decoded video
frames (lossy) are compared with a tolerance on the mean channel difference.
"""

from __future__ import annotations

import base64
import io
import json
import threading
from array import array
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import av
import httpx
import pytest
from PIL import Image, ImageChops, ImageDraw, ImageStat

from genwidgets.simulator import inputs as inputs_module
from genwidgets.simulator import synth
from genwidgets.simulator.inputs import Inputs
from genwidgets.simulator.outputs import imgm_size, imgm_version

pytestmark = pytest.mark.timeout(120)
Run = Callable[..., dict[str, Any]]


def fetch_image(url: str) -> Image.Image:
    reply = httpx.get(url)
    assert reply.status_code == 200
    with Image.open(io.BytesIO(reply.content)) as img:
        return img.convert("RGB")


def distance(a: Image.Image, b: Image.Image) -> float:
    """Mean channel difference, 0-255 (b scaled to a's size first)."""
    if a.size != b.size:
        b = b.resize(a.size)
    return sum(ImageStat.Stat(ImageChops.difference(a, b)).mean) / 3


def data_url(image: Image.Image, fmt: str = "PNG") -> str:
    buf = io.BytesIO()
    image.save(buf, fmt)
    mime = "image/png" if fmt == "PNG" else "image/jpeg"
    return f"data:{mime};base64," + base64.b64encode(buf.getvalue()).decode()


def solid(color: tuple[int, int, int], size: tuple[int, int] = (320, 180)) -> Image.Image:
    return Image.new("RGB", size, color)


def video_frames(data: bytes) -> tuple[list[Image.Image], list[str], float]:
    with av.open(io.BytesIO(data)) as container:
        kinds = [s.type for s in container.streams]
        stream = container.streams.video[0]
        rate = float(stream.average_rate or 1)
        frames = [f.to_image().convert("RGB") for f in container.decode(video=0)]
    return frames, kinds, len(frames) / rate


@pytest.fixture
def upstream(run: Run) -> dict[str, Any]:
    """A completed imgM task (3:4) and its four images."""
    result = run("imgM-v8.1-t2i", {"prompt": "a lighthouse --ar 3:4 --seed 5"})
    result["images"] = [fetch_image(o["url"]) for o in result["outputs"]]
    return result


# ------------------------------------------------------------------ imgM edits


@pytest.mark.slow
def test_variation_is_closer_to_its_source_than_to_another_image(
    run: Run, upstream: dict[str, Any]
) -> None:
    source, other = upstream["images"][2], upstream["images"][0]
    found = {}
    for kind in (0, 1):
        result = run(
            "imgM-v8.1-i2i", {"jobId": upstream["request_id"], "image_no": 2, "type": kind}
        )
        variations = [fetch_image(o["url"]) for o in result["outputs"]]
        assert len(variations) == 4 and all(v.size == source.size for v in variations)
        for variation in variations:
            assert distance(variation, source) < distance(variation, other) / 2
        assert distance(variations[0], variations[1]) > 0  # four different variations
        found[kind] = distance(variations[0], source)
    assert 0 < found[0] < found[1]  # type 0 slight, type 1 strong


@pytest.mark.slow
@pytest.mark.parametrize(
    ("direction", "grows", "at"),
    [(0, "height", "start"), (1, "width", "start"), (2, "height", "end"), (3, "width", "end")],
)
def test_pan_keeps_the_original_at_its_place_and_grows(
    run: Run, upstream: dict[str, Any], direction: int, grows: str, at: str
) -> None:
    source = upstream["images"][1]
    result = run(
        "imgM_pan",
        {"jobId": upstream["request_id"], "imageNo": 1, "direction": direction, "scale": 1.5},
    )
    panned = fetch_image(result["outputs"][0]["url"])
    w, h = source.size
    expected = (w, synth.even(h * 1.5)) if grows == "height" else (synth.even(w * 1.5), h)
    assert panned.size == expected
    dx, dy = (expected[0] - w, expected[1] - h) if at == "end" else (0, 0)
    kept = panned.crop((dx, dy, dx + w, dy + h))
    assert ImageChops.difference(kept, source).getbbox() is None  # pixel for pixel
    new_area = (
        panned.crop((0, h, w, expected[1]))
        if direction == 0
        else panned.crop((w, 0, expected[0], h))
        if direction == 1
        else panned.crop((0, 0, w, dy))
        if direction == 2
        else panned.crop((0, 0, dx, h))
    )
    assert ImageStat.Stat(new_area).stddev[0] > 1  # filled, not a flat colour


@pytest.mark.slow
def test_pan_of_a_pan_starts_from_the_panned_image(run: Run, upstream: dict[str, Any]) -> None:
    first = run(
        "imgM_pan", {"jobId": upstream["request_id"], "imageNo": 0, "direction": 1, "scale": 2}
    )
    again = run(
        "imgM_pan", {"jobId": first["request_id"], "imageNo": 0, "direction": 0, "scale": 2}
    )
    one, two = (fetch_image(r["outputs"][0]["url"]) for r in (first, again))
    assert two.size == (one.width, one.height * 2)
    assert ImageChops.difference(two.crop((0, 0, *one.size)), one).getbbox() is None


@pytest.mark.slow
def test_inpaint_area_repaints_only_the_polygon(run: Run, upstream: dict[str, Any]) -> None:
    source = upstream["images"][0]
    w, h = source.size  # 768 x 1024
    # the polygon's frame is the image: a rectangle from (100, 200) to (400, 600)
    area = {"width": w, "height": h, "points": [100, 200, 400, 200, 400, 600, 100, 600]}
    result = run(
        "imgM-inpaint",
        {
            "jobId": upstream["request_id"],
            "imageNo": 0,
            "area": area,
            "mask": {"areas": [area]},
            "remixPrompt": "a red door",
        },
    )
    painted = fetch_image(result["outputs"][0]["url"])
    assert painted.size == source.size
    changed = ImageChops.difference(painted, source).getbbox()
    assert changed is not None
    left, top, right, bottom = changed
    assert left >= 100 and top >= 200 and right <= 401 and bottom <= 601
    outside = Image.new("L", source.size, 255)
    ImageDraw.Draw(outside).rectangle((100, 200, 400, 600), fill=0)
    kept = Image.composite(painted, source, outside)
    assert ImageChops.difference(kept, source).getbbox() is None


@pytest.mark.slow
def test_inpaint_mask_image_white_is_repainted(run: Run, upstream: dict[str, Any]) -> None:
    source = upstream["images"][3]
    mask = Image.new("L", (source.width // 2, source.height // 2), 0)  # scaled to the image
    ImageDraw.Draw(mask).rectangle((0, 0, mask.width // 2 - 1, mask.height - 1), fill=255)
    result = run(
        "imgM-inpaint",
        {"jobId": upstream["request_id"], "imageNo": 3, "mask": {"url": data_url(mask)}},
    )
    painted = fetch_image(result["outputs"][0]["url"])
    half = source.width // 2
    right_kept = ImageChops.difference(
        painted.crop((half, 0, *source.size)), source.crop((half, 0, *source.size))
    )
    assert right_kept.getbbox() is None
    assert (
        distance(
            painted.crop((0, 0, half, source.height)), source.crop((0, 0, half, source.height))
        )
        > 5
    )


# ------------------------------------------------------------------ image edits


@pytest.fixture
def wide_file(run: Run) -> str:
    """A 1920x1080 image on the simulator's own /files/ URL."""
    result = run("genW2.5-t2i-preview", {"prompt": "a wide bay", "n": 1, "size": "1920*1080"})
    return str(result["outputs"][0]["url"])


@pytest.mark.slow
def test_imgq_default_size_follows_an_own_file_url(run: Run, wide_file: str) -> None:
    result = run("imgQ-edit-plus", {"prompt": "make it dusk", "images": [wide_file]})
    out = fetch_image(result["outputs"][0]["url"])
    assert abs(out.width / out.height - 16 / 9) < 0.02
    assert abs(out.width * out.height - 1024 * 1024) < 0.05 * 1024 * 1024
    assert distance(out, fetch_image(wide_file)) < 60  # starts from the input


@pytest.mark.slow
def test_imgq_size_from_the_last_image_and_unreadable_urls_stay_square(
    run: Run, wide_file: str
) -> None:
    tall = data_url(solid((20, 120, 200), (300, 600)))
    result = run("imgQ-edit-plus", {"prompt": "x", "images": [wide_file, tall]})
    out = fetch_image(result["outputs"][0]["url"])
    assert abs(out.width / out.height - 0.5) < 0.02
    # the last image fills the frame, the first is an inset
    assert distance(out, solid((20, 120, 200), out.size)) < distance(out, fetch_image(wide_file))
    external = run("imgQ-edit-plus", {"prompt": "x", "images": ["https://example.com/a.png"]})
    assert fetch_image(external["outputs"][0]["url"]).size == (1024, 1024)


@pytest.mark.slow
def test_imgg_edit_starts_from_the_input(run: Run, wide_file: str) -> None:
    source = fetch_image(wide_file)
    result = run(
        "imgG-1.5-edit", {"prompt": "make it blue", "images": [wide_file], "size": "1536x1024"}
    )
    out = fetch_image(result["outputs"][0]["url"])
    assert out.size == (1536, 1024)
    other = fetch_image(
        run("genW2.5-t2i-preview", {"prompt": "x", "n": 1, "seed": 99})["outputs"][0]["url"]
    )
    assert distance(out, source) < distance(out, other)


# ------------------------------------------------------------------ videos


@pytest.mark.slow
def test_vidp_transition_moves_from_the_first_image_to_the_last(
    run: Run, local_server: str
) -> None:
    red, blue = solid((220, 30, 30)), solid((30, 30, 220))
    result = run(
        "vidP_v6_transition",
        {
            "first_frame_image": f"{local_server}/red.png",
            "last_frame_image": f"{local_server}/blue.jpg",
            "duration": 2,
            "quality": "360p",
        },
    )
    frames, _, _ = video_frames(httpx.get(result["outputs"][0]["url"]).content)
    assert distance(frames[0], red.resize(frames[0].size)) < 12
    assert distance(frames[-1], blue.resize(frames[-1].size)) < 12
    middle = frames[len(frames) // 2]
    assert distance(middle, red) > 30 and distance(middle, blue) > 30


@pytest.mark.slow
def test_vida_starts_on_the_first_frame_and_ends_on_the_last(run: Run) -> None:
    green, white = solid((30, 200, 60)), solid((240, 240, 240))
    content = [
        {"type": "text", "text": "a field"},
        {"type": "image_url", "image_url": {"url": data_url(green)}, "role": "first_frame"},
        {"type": "image_url", "image_url": {"url": data_url(white)}, "role": "last_frame"},
    ]
    result = run("vidA-2-0-fast", {"content": content, "resolution": "480p", "duration": 4})
    frames, _, _ = video_frames(httpx.get(result["outputs"][0]["url"]).content)
    assert distance(frames[0], green.resize(frames[0].size)) < 12
    assert distance(frames[-1], white.resize(frames[-1].size)) < 12
    only_first = run("vidA-2-0-fast", {"content": content[:2], "resolution": "480p", "duration": 4})
    frames, _, _ = video_frames(httpx.get(only_first["outputs"][0]["url"]).content)
    assert distance(frames[0], green.resize(frames[0].size)) < 12
    assert distance(frames[-1], green.resize(frames[-1].size)) > 20  # it moves on


def _inline(result: dict[str, Any]) -> dict[str, Any]:
    entry = next(o for o in result["outputs"] if o["content_type"] == "application/json")
    body: dict[str, Any] = json.loads(entry["content"])
    return body


@pytest.mark.slow
def test_lip_sync_keeps_the_source_video_and_lays_the_trimmed_audio(run: Run) -> None:
    source = run(
        "vidVq2-text2video", {"prompt": "a face", "duration": 3, "resolution": "540p", "seed": 3}
    )
    source_url = source["outputs"][0]["url"]
    source_frames, source_kinds, source_seconds = video_frames(httpx.get(source_url).content)
    faces = _inline(run("vidK-face-identify", {"video_url": source_url}))
    tone = synth.melody(6.0, 16000, 1)
    wav, _ = synth.encode_audio(tone, 16000, 1, "wav")
    sound = base64.b64encode(wav).decode()  # raw base64, as the field wants
    face = faces["face_data"][0]["face_id"]
    result = run(
        "vidK-lip-sync",
        {
            "session_id": faces["session_id"],
            "face_choose": [
                {
                    "face_id": face,
                    "sound_file": sound,
                    "sound_start_time": 1000,
                    "sound_end_time": 3000,
                }
            ],
        },
    )
    data = httpx.get(result["outputs"][0]["url"]).content
    frames, kinds, seconds = video_frames(data)
    assert "audio" in kinds and source_kinds == ["video"]
    assert frames[0].size == source_frames[0].size
    assert abs(seconds - source_seconds) < 0.3
    assert distance(frames[len(frames) // 2], source_frames[len(source_frames) // 2]) < 12
    pcm = synth.decode_audio(data)
    assert pcm is not None
    values = array("h", pcm)
    rate = synth.AUDIO_RATE
    # 2 s of tone (the clip from 1 s to 3 s), then silence up to the video's end
    loud = [abs(v) for v in values[int(0.5 * rate) : int(1.5 * rate)]]
    quiet = [abs(v) for v in values[int(2.3 * rate) : int(2.8 * rate)]]
    assert max(loud) > 1000 and max(quiet) < 300


def test_same_seed_same_imgm_bytes_and_the_ratio_of_ar(run: Run) -> None:
    a = run("imgM-v8.1-t2i", {"prompt": "a fox --seed 12 --aspect 2:1"})["outputs"][1]["url"]
    b = run("imgM-v8.1-t2i", {"prompt": "a fox --seed 12 --aspect 2:1"})["outputs"][1]["url"]
    assert httpx.get(a).content == httpx.get(b).content
    assert fetch_image(a).size == (1024, 512)


@pytest.mark.slow
def test_same_seed_same_video_bytes(run: Run) -> None:
    payload = {"prompt": "waves", "duration": 1, "resolution": "540p", "seed": 8}
    a = httpx.get(run("vidVq2-text2video", payload)["outputs"][0]["url"]).content
    b = httpx.get(run("vidVq2-text2video", payload)["outputs"][0]["url"]).content
    assert a == b


# ------------------------------------------------------------------ reading inputs


class _Server(ThreadingHTTPServer):
    daemon_threads = True


@pytest.fixture
def local_server() -> Iterator[str]:
    """A loopback file server: /image.png, /red.png, /blue.jpg, /big, /redirect, and
    /silent, which sends headers and then nothing until the test ends."""
    released = threading.Event()

    def encoded(image: Image.Image, fmt: str) -> bytes:
        buf = io.BytesIO()
        image.save(buf, fmt)
        return buf.getvalue()

    files = {
        "/image.png": encoded(solid((1, 2, 3), (64, 32)), "PNG"),
        "/red.png": encoded(solid((220, 30, 30)), "PNG"),
        "/blue.jpg": encoded(solid((30, 30, 220)), "JPEG"),
    }

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/redirect":
                self.send_response(302)
                self.send_header("Location", "/image.png")
                self.end_headers()
                return
            if self.path == "/silent":
                self.send_response(200)
                self.send_header("Content-Length", "100")
                self.end_headers()
                self.wfile.flush()
                released.wait(30)
                return
            body = files.get(self.path, b"x" * 4096)
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = _Server(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        released.set()
        server.shutdown()
        server.server_close()


@pytest.mark.slow
def test_loopback_urls_are_read_with_a_cap_and_no_redirect(
    local_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    reader = Inputs()
    image = reader.image(f"{local_server}/image.png")
    assert image is not None and image.size == (64, 32)
    assert reader.read(f"{local_server}/redirect") is None
    monkeypatch.setattr(inputs_module, "FETCH_TIMEOUT", 0.3)
    assert reader.read(f"{local_server}/silent") is None  # gives up, does not hang
    monkeypatch.setattr(inputs_module, "MAX_INPUT_BYTES", 1000)
    assert reader.read(f"{local_server}/big") is None


def test_other_hosts_are_never_fetched(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("no request may leave the machine")

    monkeypatch.setattr(inputs_module.httpx, "Client", refuse)
    reader = Inputs()
    for url in (
        "https://example.com/a.png",
        "http://10.0.0.1/a.png",
        "http://localhost.example.com/a.png",
        "asset://asset-1",
    ):
        assert reader.read(url) is None


# ------------------------------------------------------------------ prompts in the simulator


def test_the_simulator_reads_prompts_with_the_prompt_model() -> None:
    assert imgm_version("a cat --version 7") == "7"
    assert imgm_version("a cat") == "8.1"
    assert imgm_size("a cat --aspect 16:9") == (1024, 576)
    assert imgm_size("a cat --{ar 16:9, ar 1:1}") == (1024, 576)  # the first expansion
    assert imgm_size("a cat {--ar 16:9") == (1024, 1024)  # unreadable: square


def plain_clip(width: int, height: int, fps: int, seconds: float) -> bytes:
    """An H.264 MP4 of blank frames, quick to make at any rate and length."""
    buf = io.BytesIO()
    with av.open(buf, "w", format="mp4") as out:
        stream = out.add_stream("libx264", rate=fps)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.options = {"preset": "ultrafast", "crf": "40"}
        frame = av.VideoFrame(width, height, "yuv420p")
        for plane in frame.planes:
            plane.update(bytes(plane.buffer_size))
        for index in range(round(fps * seconds)):
            frame.pts = index
            out.mux(stream.encode(frame))
        out.mux(stream.encode(None))
    return buf.getvalue()


def test_a_long_or_large_lip_sync_source_is_read_in_part_not_ignored(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past the frame or pixel budget the source is read up to it, never thrown away:
    a 60 fps clip of 35 s (2100 frames) is an ordinary phone video, and a 720p clip
    over 16 s passes the pixel budget; the lip-sync still dubs the user's video."""
    sixty = plain_clip(32, 16, 60, 35.0)
    frames, rate = synth.video_frames(sixty)
    assert rate == 60.0 and len(frames) == 2100
    redubbed = synth.redub(sixty, synth.melody(1.0, synth.AUDIO_RATE, 1))
    assert redubbed is not None and video_frames(redubbed)[0][0].size == (32, 16)
    short = plain_clip(32, 16, 8, 2.0)
    monkeypatch.setattr(synth, "MAX_VIDEO_PIXELS", 3 * 32 * 16)  # the frames have more
    assert [f.size for f in synth.video_frames(short)[0]] == [(32, 16)] * 3
    assert synth.redub(short, synth.melody(1.0, synth.AUDIO_RATE, 1)) is not None
    monkeypatch.undo()
    monkeypatch.setattr(synth, "MAX_VIDEO_FRAMES", 5)  # there are more frames
    assert len(synth.video_frames(short)[0]) == 5


def test_a_lip_sync_source_of_too_large_a_frame_is_never_decoded_and_the_task_answers(
    run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A source video of huge frames was decoded whole in a worker thread: past the
    frame cap it reads as none (an input picture past the pixel cap fails its task), and the
    lip-sync makes its video for the sound (docs/decisions.md#pixel-bombs)."""
    source = synth.encode_video(96, 64, 1.0, 3, "source", [])  # 8 frames of 96 x 64
    tone, _ = synth.encode_audio(synth.melody(3.0, 16000, 1), 16000, 1, "wav")
    within, rate = synth.video_frames(source)
    assert len(within) == 8 and rate == 8.0 and within[0].size == (96, 64)
    redubbed = synth.redub(source, synth.melody(1.0, synth.AUDIO_RATE, 1))
    assert redubbed is not None and video_frames(redubbed)[0][0].size == (96, 64)
    monkeypatch.setattr(synth, "MAX_FRAME_PIXELS", 96 * 64 - 1)
    assert synth.video_frames(source) == ([], 0.0)
    assert synth.redub(source, synth.melody(1.0, synth.AUDIO_RATE, 1)) is None
    source_url = "data:video/mp4;base64," + base64.b64encode(source).decode()
    faces = _inline(run("vidK-face-identify", {"video_url": source_url}))
    choice = {
        "face_id": faces["face_data"][0]["face_id"],
        "sound_file": base64.b64encode(tone).decode(),
        "sound_end_time": 2000,
    }
    result = run("vidK-lip-sync", {"session_id": faces["session_id"], "face_choose": [choice]})
    frames, kinds, _ = video_frames(httpx.get(result["outputs"][0]["url"]).content)
    assert frames[0].size == (1280, 720) and "audio" in kinds  # made for the sound


@pytest.fixture(scope="module")
def huge_png() -> str:
    """8000 x 6000 pixels (48 million, past the decoder's 40 million; under the 67
    million of the cap it had before) in a PNG of 47 KB."""
    return data_url(Image.new("L", (8000, 6000)))


@pytest.mark.parametrize(
    ("endpoint", "payload", "said"),
    [
        (  # imgQ states no side limit: the simulator's own cap is named
            "imgQ-edit-plus",
            lambda url: {"prompt": "a kite", "images": ["https://example.com/a.png", url]},
            "images.1: the picture is 8000 × 6000 pixels; the simulator decodes input "
            "pictures of at most 40,000,000 pixels",
        ),
        (  # vidA's own limit is broken: named as the service's check names it
            "vidA-2-0",
            lambda url: {
                "content": [
                    {"type": "text", "text": "a kite"},
                    {"type": "image_url", "image_url": {"url": url}, "role": "first_frame"},
                ]
            },
            "content.1.image_url.url: image is 8000x6000 px; vidA-2-0 needs width and height "
            "strictly between 300 and 6000 px",
        ),
    ],
)
def test_an_input_picture_past_the_decoders_cap_fails_its_task_naming_field_and_limit(
    run: Run, huge_png: str, endpoint: str, payload: Callable[[str], dict[str, Any]], said: str
) -> None:
    """It was read as no picture, so the edit started from its seed: the user never
    learned that the picture sent was not used (docs/decisions.md#pixel-bombs)."""
    result = run(endpoint, payload(huge_png))
    assert result["error_type"] == "runtime_error" and not result["outputs"]
    assert result["error"].startswith(f"Runtime execution failed: {said}"), result["error"]


def _encoded_url(image: Image.Image, fmt: str, **options: Any) -> str:
    buf = io.BytesIO()
    image.save(buf, fmt, **options)
    mime = "image/png" if fmt == "PNG" else "image/jpeg"
    return f"data:{mime};base64," + base64.b64encode(buf.getvalue()).decode()


@pytest.mark.parametrize(
    ("endpoint", "picture", "payload", "said"),
    [
        (  # a camera's JPEG, which Pillow reads as MPO: a jpeg, as the client calls it
            "imgQ-edit-plus",
            lambda: _encoded_url(
                Image.new("L", (8000, 6000)),
                "MPO",
                save_all=True,
                append_images=[Image.new("L", (80, 60))],
            ),
            lambda url: {"prompt": "a kite", "images": [url]},
            "images.0: the picture is 8000 × 6000 pixels; the simulator decodes input "
            "pictures of at most 40,000,000 pixels",
        ),
        (  # past Pillow's own cap (2 x 178,956,970 pixels): its sides read from its header
            "vidA-2-0",
            lambda: _encoded_url(Image.new("1", (20000, 20000)), "PNG"),
            lambda url: {
                "content": [
                    {"type": "text", "text": "a kite"},
                    {"type": "image_url", "image_url": {"url": url}, "role": "first_frame"},
                ]
            },
            "content.1.image_url.url: image is 20000x20000 px; vidA-2-0 needs width and "
            "height strictly between 300 and 6000 px",
        ),
    ],
    ids=["mpo", "past-pillows-cap"],
)
def test_an_input_picture_past_the_cap_is_judged_by_its_real_format_and_header_sides(
    run: Run,
    endpoint: str,
    picture: Callable[[], str],
    payload: Callable[[str], dict[str, Any]],
    said: str,
) -> None:
    """An MPO was failed as 'image format is mpo', a format no field names; a picture past
    Pillow's own cap had no sides, so the endpoint's limit went unnamed and the task said
    the service may take it (review-7 faults 6 and 7)."""
    result = run(endpoint, payload(picture()))
    assert result["error_type"] == "runtime_error" and not result["outputs"]
    assert result["error"].startswith(f"Runtime execution failed: {said}"), result["error"]
