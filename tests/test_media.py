"""gw.media: reading headers, checking every MediaSpec rule on both sides of its
boundaries, encoding per field, and finding a field's MediaSpec in a model.

Media fixtures are generated here (Pillow, PyAV) in memory or in tmp_path."""

from __future__ import annotations

import base64
import io
import sys
import warnings
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Annotated, Any, Literal

import av
import pytest
from PIL import Image, ImageFile
from pydantic import BaseModel, Field

import genwidgets as gw
from genwidgets import media
from genwidgets.catalog import EndpointModel, EndpointSpec, MediaSpec
from genwidgets.errors import MediaWarning, PayloadError
from genwidgets.media import MediaInfo, encoding
from genwidgets.simulator import DEMO_KEY

# --- fixture makers ------------------------------------------------------------------------


def image_bytes(width: int, height: int, fmt: str = "PNG", mode: str = "L") -> bytes:
    buf = io.BytesIO()
    Image.new(mode, (width, height), 128).save(buf, format=fmt)
    return buf.getvalue()


def video_bytes(fmt: str, seconds: float, width: int = 128, height: int = 96) -> bytes:
    """A tiny real video: constant frames at 4 fps, mpeg4 codec."""
    rate = 4
    buf = io.BytesIO()
    with av.open(buf, "w", format=fmt) as container:
        stream = container.add_stream("mpeg4", rate=rate)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        frame_image = Image.new("RGB", (width, height), "red")
        for _ in range(round(seconds * rate)):
            for packet in stream.encode(av.VideoFrame.from_image(frame_image)):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return buf.getvalue()


def audio_bytes(fmt: str, codec: str, seconds: float, rate: int = 8000) -> bytes:
    """Tiny real silent mono audio."""
    buf = io.BytesIO()
    with av.open(buf, "w", format=fmt) as container:
        stream = container.add_stream(codec, rate=rate, layout="mono")
        sample_format = stream.codec_context.format.name
        total, done = round(seconds * rate), 0
        while done < total:
            count = min(1024, total - done)
            frame = av.AudioFrame(format=sample_format, layout="mono", samples=count)
            for plane in frame.planes:
                plane.update(bytes(plane.buffer_size))
            frame.sample_rate, frame.pts = rate, done
            done += count
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return buf.getvalue()


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def image_spec(**kw: Any) -> MediaSpec:
    base: dict[str, Any] = {"media": "image", "encoding": "data_url_mime"}
    return MediaSpec(**{**base, **kw})


VIDA_IMAGE = MediaSpec(
    "image",
    "data_url_lower",
    formats=("jpeg", "png", "webp", "bmp", "tiff", "gif"),
    max_bytes=30 * 2**20 - 1,
    min_side=300,
    max_side=6000,
    sides_exclusive=True,
    min_aspect=0.4,
    max_aspect=2.5,
    aspect_exclusive=True,
    allow_asset=True,
)
VIDK_IMAGE = MediaSpec(
    "image",
    "raw_base64",
    formats=("jpeg", "png"),
    max_bytes=10 * 2**20,
    min_side=300,
    min_aspect=0.4,
    max_aspect=2.5,
)
VIDP_IMAGE = MediaSpec(
    "image", "url_only", formats=("jpeg", "png", "webp"), max_bytes=20 * 2**20, max_side=10000
)
LIPSYNC_AUDIO = MediaSpec(
    "audio",
    "raw_base64",
    formats=("mp3", "wav", "m4a"),
    max_bytes=5 * 2**20,
    min_seconds=2,
    max_seconds=60,
)
VIDEO_SPEC = MediaSpec(
    "video", "url_or_data", formats=("mp4", "mov"), min_side=128, min_seconds=3, max_seconds=30
)


def info(**kw: Any) -> MediaInfo:
    base: dict[str, Any] = {
        "kind": "image",
        "format": "png",
        "mime": "image/png",
        "width": 1000,
        "height": 1000,
        "seconds": None,
        "size_bytes": 1000,
    }
    return MediaInfo(**{**base, **kw})


# --- inspect -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pil_format", "fmt", "mime"),
    [
        ("PNG", "png", "image/png"),
        ("JPEG", "jpeg", "image/jpeg"),
        ("WEBP", "webp", "image/webp"),
        ("BMP", "bmp", "image/bmp"),
        ("TIFF", "tiff", "image/tiff"),
        ("GIF", "gif", "image/gif"),
    ],
)
def test_inspect_reads_image_headers(pil_format: str, fmt: str, mime: str) -> None:
    data = image_bytes(321, 123, pil_format)
    got = media.inspect(data)
    assert got == MediaInfo("image", fmt, mime, 321, 123, None, len(data))


def test_inspect_path_str_and_pil(tmp_path: Path) -> None:
    path = write(tmp_path, "a.jpg", image_bytes(640, 480, "JPEG"))
    from_path = media.inspect(path)
    assert from_path == media.inspect(str(path))
    assert (from_path.format, from_path.width, from_path.height) == ("jpeg", 640, 480)
    assert from_path.size_bytes == path.stat().st_size
    from_pil = media.inspect(Image.new("RGBA", (50, 70)))
    assert (from_pil.kind, from_pil.format, from_pil.width, from_pil.height) == (
        "image",
        "png",
        50,
        70,
    )


def test_inspect_reads_only_the_header(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "big.png", image_bytes(2000, 1500))

    def no_decode(self: Any) -> Any:
        raise AssertionError("pixels were decoded")

    monkeypatch.setattr(ImageFile.ImageFile, "load", no_decode)
    got = media.inspect(path)
    assert (got.width, got.height) == (2000, 1500)


@pytest.mark.parametrize(("fmt", "expected"), [("mp4", "mp4"), ("mov", "mov"), ("avi", "avi")])
def test_inspect_video_container(fmt: str, expected: str) -> None:
    data = video_bytes(fmt, 2.0, 160, 96)
    got = media.inspect(data)
    assert (got.kind, got.format, got.width, got.height) == ("video", expected, 160, 96)
    assert got.seconds == pytest.approx(2.0, abs=0.05)
    assert got.mime.startswith("video/")
    assert got.size_bytes == len(data)


@pytest.mark.parametrize(
    ("fmt", "codec", "expected", "mime"),
    [
        ("wav", "pcm_s16le", "wav", "audio/wav"),
        ("mp3", "libmp3lame", "mp3", "audio/mpeg"),
        ("ipod", "aac", "m4a", "audio/mp4"),
    ],
)
def test_inspect_audio(tmp_path: Path, fmt: str, codec: str, expected: str, mime: str) -> None:
    path = write(tmp_path, f"a.{expected}", audio_bytes(fmt, codec, 2.5))
    got = media.inspect(path)
    assert (got.kind, got.format, got.mime, got.width, got.height) == (
        "audio",
        expected,
        mime,
        None,
        None,
    )
    assert got.seconds == pytest.approx(2.5, abs=0.1)


def test_inspect_refuses_urls_and_unknown_bytes() -> None:
    with pytest.raises(PayloadError, match="never fetched"):
        media.inspect("https://example.test/a.png")
    with pytest.raises(PayloadError, match="cannot tell what bytes is"):
        media.inspect(b"hello, this is not media at all")


SVG = (
    b"<svg xmlns='http://www.w3.org/2000/svg' width='64' height='64'>"
    b"<rect width='64' height='64' fill='red'/></svg>"
)


def test_an_svg_is_refused_saying_svg_is_not_taken_and_what_is(tmp_path: Path) -> None:
    """PyAV opens an SVG as a stream it has no decoder for: a bare AttributeError was
    raised by inspect, validation, forms and the file picker alike."""
    with pytest.raises(PayloadError, match="image format is svg, which is not taken"):
        media.inspect(SVG)
    path = write(tmp_path, "logo.svg", SVG)
    with pytest.raises(PayloadError) as refused:
        gw.validate("imgG-1.5-edit", {"prompt": "blue", "images": [path]})
    [error] = refused.value.errors
    assert error["loc"] == ("images", 0)
    assert error["msg"].startswith("image format is svg, which is not taken")
    assert error["msg"].endswith("imgG-1.5-edit takes png, jpeg, webp images")


@pytest.mark.parametrize(
    ("name", "data", "said"),
    [
        ("notes.txt", b"a text file, not a picture\n" * 4, "cannot tell what file 'notes.txt' is"),
        ("doc.pdf", b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n", "cannot tell what"),
        ("logo.svg", SVG, "image format is svg"),
        ("empty.mp4", video_bytes("mp4", 0), "file 'empty.mp4'"),
    ],
)
def test_odd_files_pyav_opens_are_refused_naming_what_the_field_takes(
    tmp_path: Path, name: str, data: bytes, said: str
) -> None:
    path = write(tmp_path, name, data)
    for endpoint, field, taken in [
        ("imgG-1.5-edit", "images", "imgG-1.5-edit takes png, jpeg, webp images"),
        ("vidV-create-subjects", "videos", "takes mp4, avi, mov videos"),
    ]:
        spec = media.spec_for(endpoint, field)
        with pytest.raises(PayloadError) as refused:
            media.encode_with(path, spec, endpoint=endpoint, loc=(field,))
        [error] = refused.value.errors
        assert error["loc"] == (field,)
        assert said in error["msg"] and error["msg"].endswith(taken), error["msg"]


def test_a_video_with_a_stream_but_no_frame_is_refused_even_with_no_duration_limit(
    tmp_path: Path,
) -> None:
    """An mp4 written with no frame keeps its video track (empty_moov): PyAV opens it,
    so only its empty stream tells; vidA's video field states no duration to catch it."""
    buf = io.BytesIO()
    with av.open(buf, "w", format="mp4", options={"movflags": "empty_moov"}) as container:
        stream = container.add_stream("mpeg4", rate=4)
        stream.width, stream.height = 128, 96
        container.start_encoding()
    path = write(tmp_path, "empty.mp4", buf.getvalue())
    with pytest.raises(PayloadError) as refused:
        gw.validate("vidA-2-0", {"content": [{"type": "video_url", "video_url": {"url": path}}]})
    [error] = refused.value.errors
    assert error["loc"] == ("content", 0, "video_url", "url")
    assert error["msg"] == (
        "this mp4 video has a video stream but no frame in it; "
        "vidA-2-0 takes a video with at least one frame"
    )
    assert media.inspect(path).frameless
    assert not media.inspect(video_bytes("mp4", 1.0)).frameless


def _mjpeg_frames(count: int) -> list[av.VideoFrame]:
    return [
        av.VideoFrame.from_image(Image.new("RGB", (160, 120), (i * 20, 0, 0))) for i in range(count)
    ]


def _mp4_whose_first_sample_is_empty() -> bytes:
    """Ten MJPEG frames in an mp4, the first sample made zero bytes (an mp4 may hold a
    zero-size sample: a dropped frame); nine whole frames remain."""
    buf = io.BytesIO()
    with av.open(buf, "w", format="mp4") as container:
        stream = container.add_stream("mjpeg", rate=10)
        stream.width, stream.height, stream.pix_fmt = 160, 120, "yuvj420p"
        for frame in _mjpeg_frames(10):
            container.mux(stream.encode(frame))
        container.mux(stream.encode())
    data = bytearray(buf.getvalue())
    sizes, offsets = data.find(b"stsz"), data.find(b"stco")
    first_size = int.from_bytes(data[sizes + 16 : sizes + 20], "big")
    first_offset = int.from_bytes(data[offsets + 12 : offsets + 16], "big")
    data[sizes + 16 : sizes + 20] = bytes(4)
    data[offsets + 12 : offsets + 16] = (first_offset + first_size).to_bytes(4, "big")
    return bytes(data)


def _mkv_whose_first_video_track_is_empty() -> bytes:
    buf = io.BytesIO()
    with av.open(buf, "w", format="matroska") as container:
        empty, full = (container.add_stream("mjpeg", rate=10) for _ in range(2))
        for stream in (empty, full):
            stream.width, stream.height, stream.pix_fmt = 160, 120, "yuvj420p"
        container.start_encoding()
        for frame in _mjpeg_frames(10):
            container.mux(full.encode(frame))
        container.mux(full.encode())
    return buf.getvalue()


@pytest.mark.parametrize(
    "name, make",
    [
        ("first_sample_empty.mp4", _mp4_whose_first_sample_is_empty),
        ("second_track.mkv", _mkv_whose_first_video_track_is_empty),
    ],
)
def test_a_video_with_frames_is_not_frameless_when_its_first_packet_or_track_is_empty(
    tmp_path: Path, name: str, make: Any
) -> None:
    """Empty packets are skipped, and every video stream that is not cover art is looked at:
    both were refused by every video field as 'a video stream but no frame in it'."""
    path = write(tmp_path, name, make())
    assert not media.inspect(path).frameless
    payload = {"content": [{"type": "video_url", "video_url": {"url": path}}]}
    assert gw.validate("vidA-2-0", payload) is not None


def test_a_video_stream_not_found_within_the_search_cap_is_not_called_empty() -> None:
    """The search for a first video packet is capped (a probe never demuxes a file whole):
    a video stream with no packet behind thousands of small audio packets is not judged."""
    buf = io.BytesIO()
    with av.open(buf, "w", format="matroska") as container:
        video = container.add_stream("mpeg4", rate=10)
        video.width, video.height, video.pix_fmt = 64, 48, "yuv420p"
        audio = container.add_stream("pcm_s16le", rate=8000, layout="mono")
        container.start_encoding()
        for i in range(5000):
            packet = av.Packet(bytes(2))
            packet.stream, packet.pts, packet.dts, packet.time_base = audio, i, i, audio.time_base
            container.mux(packet)
    assert not media.inspect(buf.getvalue()).frameless


def test_an_image_cut_short_is_said_damaged_not_a_format_that_is_not_taken() -> None:
    png = image_bytes(64, 64)
    with pytest.raises(PayloadError, match="this png image is damaged or cut short"):
        media.inspect(png[:20])


def test_audio_given_as_an_image_says_what_it_is(tmp_path: Path) -> None:
    path = write(tmp_path, "tone.wav", audio_bytes("wav", "pcm_s16le", 1.0))
    assert media.check(path, media.spec_for("imgG-1.5-edit", "images"), endpoint="imgG") == [
        "this is wav audio; imgG takes image here"
    ]


def test_without_pyav_formats_are_sniffed_and_duration_is_not_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, "a.wav", audio_bytes("wav", "pcm_s16le", 1.0))
    monkeypatch.setitem(sys.modules, "av", None)  # import av now fails
    got = media.inspect(path)
    assert (got.kind, got.format, got.seconds) == ("audio", "wav", None)
    with pytest.warns(MediaWarning, match="duration"):
        assert media.check(path, LIPSYNC_AUDIO) == []


# --- checks on both sides of each boundary --------------------------------------------------

EXCLUSIVE_SIDES = image_spec(min_side=300, max_side=6000, sides_exclusive=True)
INCLUSIVE_SIDES = image_spec(min_side=300, max_side=6000)


@pytest.mark.parametrize(
    ("width", "height", "exclusive_ok", "inclusive_ok"),
    [
        (299, 500, False, False),
        (300, 500, False, True),
        (301, 500, True, True),
        (500, 299, False, False),
        (500, 300, False, True),
        (500, 301, True, True),
        (5999, 500, True, True),
        (6000, 500, False, True),
        (6001, 500, False, False),
        (500, 6000, False, True),
    ],
)
def test_side_bounds_with_real_images(
    width: int, height: int, exclusive_ok: bool, inclusive_ok: bool
) -> None:
    data = image_bytes(width, height)
    assert (media.check(data, EXCLUSIVE_SIDES) == []) is exclusive_ok
    assert (media.check(data, INCLUSIVE_SIDES) == []) is inclusive_ok


def test_side_message_names_limit_and_value() -> None:
    problems = media.check(image_bytes(250, 250), VIDA_IMAGE, endpoint="vidA-2-0")
    assert problems == [
        "image is 250x250 px; vidA-2-0 needs width and height strictly between 300 and 6000 px"
    ]
    inclusive = media.check(info(width=299), image_spec(min_side=300))
    assert inclusive == ["image is 299x1000 px; this field needs width and height at least 300 px"]
    upper = media.check(info(width=10001), image_spec(max_side=10000))
    assert upper == ["image is 10001x1000 px; this field needs width and height at most 10000 px"]


@pytest.mark.parametrize(("short", "ok"), [(399, False), (400, True), (401, True)])
def test_min_short_side(short: int, ok: bool) -> None:
    spec = image_spec(min_short_side=400)
    assert (media.check(image_bytes(900, short), spec) == []) is ok
    assert (media.check(image_bytes(short, 900), spec) == []) is ok
    if not ok:
        assert "short side 399 px" in media.check(info(width=399), spec)[0]
        assert "at least 400 px" in media.check(info(width=399), spec)[0]


EXCLUSIVE_ASPECT = image_spec(min_aspect=0.4, max_aspect=2.5, aspect_exclusive=True)
INCLUSIVE_ASPECT = image_spec(min_aspect=0.4, max_aspect=2.5)


@pytest.mark.parametrize(
    ("width", "height", "exclusive_ok", "inclusive_ok"),
    [
        (299, 750, False, False),  # 0.3987
        (300, 750, False, True),  # exactly 0.4
        (301, 750, True, True),  # 0.4013
        (749, 300, True, True),  # 2.4967
        (750, 300, False, True),  # exactly 2.5
        (751, 300, False, False),  # 2.5033
    ],
)
def test_aspect_bounds(width: int, height: int, exclusive_ok: bool, inclusive_ok: bool) -> None:
    data = image_bytes(width, height)
    assert (media.check(data, EXCLUSIVE_ASPECT) == []) is exclusive_ok
    assert (media.check(data, INCLUSIVE_ASPECT) == []) is inclusive_ok


def test_aspect_message() -> None:
    (msg,) = media.check(info(width=300, height=750), EXCLUSIVE_ASPECT, endpoint="vidA-2-0")
    assert msg == (
        "image aspect ratio (width/height) is 0.4 (300x750 px); "
        "vidA-2-0 needs it strictly between 0.4 and 2.5"
    )


def test_file_size_limit_is_inclusive() -> None:
    data = image_bytes(400, 400)
    assert media.check(data, image_spec(max_bytes=len(data))) == []
    (msg,) = media.check(data, image_spec(max_bytes=len(data) - 1))
    assert f"{len(data):,} bytes" in msg
    assert f"at most {len(data) - 1:,} bytes" in msg
    (mb,) = media.check(info(size_bytes=10 * 2**20 + 1), VIDK_IMAGE)
    assert mb == "image file is 10.0 MB (10,485,761 bytes); this field takes at most 10 MB"


def test_formats_and_aliases() -> None:
    (msg,) = media.check(image_bytes(400, 400, "GIF"), VIDK_IMAGE, endpoint="vidK-v3")
    assert msg == "image format is gif; vidK-v3 takes jpeg, png"
    jpg_spec = image_spec(formats=("png", "jpg"))
    assert media.check(image_bytes(400, 400, "JPEG"), jpg_spec) == []
    assert media.check(image_bytes(400, 400, "WEBP"), jpg_spec) == [
        "image format is webp; this field takes png, jpeg"
    ]


def test_kind_mismatch() -> None:
    (msg,) = media.check(video_bytes("mp4", 1.0), image_spec())
    assert msg == "this is mp4 video; this field takes image here"


@pytest.mark.parametrize(("seconds", "ok"), [(1.875, False), (2.0, True), (2.125, True)])
def test_audio_duration_lower_bound(seconds: float, ok: bool) -> None:
    data = audio_bytes("wav", "pcm_s16le", seconds)
    problems = media.check(data, LIPSYNC_AUDIO)
    assert (problems == []) is ok
    if not ok:
        assert problems == ["audio is 1.88 s long; this field needs from 2 to 60 s"]


@pytest.mark.parametrize(("seconds", "ok"), [(59.99, True), (60.0, True), (60.01, False)])
def test_duration_upper_bound(seconds: float, ok: bool) -> None:
    got = info(kind="audio", format="wav", mime="audio/wav", width=None, height=None)
    assert (media.check(replace(got, seconds=seconds), LIPSYNC_AUDIO) == []) is ok


@pytest.mark.parametrize(("seconds", "ok"), [(2.75, False), (3.0, True), (3.25, True)])
def test_video_duration_from_container(seconds: float, ok: bool) -> None:
    assert (media.check(video_bytes("mp4", seconds, 128, 128), VIDEO_SPEC) == []) is ok


@pytest.mark.parametrize(("side", "ok"), [(126, False), (128, True), (130, True)])
def test_video_sides_from_container(side: int, ok: bool) -> None:
    assert (media.check(video_bytes("mov", 3.0, side, 200), VIDEO_SPEC) == []) is ok


def test_all_problems_are_reported_at_the_field() -> None:
    data = image_bytes(260, 100, "GIF")
    with pytest.raises(PayloadError) as caught:
        media.encode_with(data, replace(VIDK_IMAGE, max_bytes=10), endpoint="vidK", loc=("a", 0))
    err = caught.value
    assert err.endpoint == "vidK"
    assert {e["loc"] for e in err.errors} == {("a", 0)}
    messages = " | ".join(e["msg"] for e in err.errors)
    for part in ("format is gif", "260x100 px", "aspect ratio", "at most 10 bytes"):
        assert part in messages
    assert len(err.errors) == 4


# --- encoding -------------------------------------------------------------------------------


def decoded_data_url(url: str, prefix: str) -> bytes:
    assert url.startswith(prefix), url[:60]
    return base64.b64decode(url[len(prefix) :], validate=True)


def test_data_url_lower_for_path_str_and_path(tmp_path: Path) -> None:
    data = image_bytes(400, 400)
    path = write(tmp_path, "x.png", data)
    for source in (path, str(path)):
        url = media.encode_with(source, VIDA_IMAGE)
        assert decoded_data_url(url, "data:image/png;base64,") == data


def test_data_url_lower_names_the_true_format() -> None:
    data = image_bytes(400, 400, "TIFF")
    url = media.encode_with(data, VIDA_IMAGE)
    assert decoded_data_url(url, "data:image/tiff;base64,") == data
    jpeg = image_bytes(400, 400, "JPEG")
    assert media.encode_with(jpeg, VIDA_IMAGE).startswith("data:image/jpeg;base64,")


def test_data_url_mime_and_raw_base64() -> None:
    data = image_bytes(400, 400, "JPEG")
    url = media.encode_with(bytearray(data), image_spec(formats=("jpeg",)))
    assert decoded_data_url(url, "data:image/jpeg;base64,") == data
    raw = media.encode_with(memoryview(data), VIDK_IMAGE)
    assert not raw.startswith("data:")
    assert base64.b64decode(raw, validate=True) == data


def test_video_and_audio_data_urls() -> None:
    video = video_bytes("mov", 3.0, 128, 128)
    url = media.encode_with(video, VIDEO_SPEC)
    assert decoded_data_url(url, "data:video/quicktime;base64,") == video
    audio = audio_bytes("mp3", "libmp3lame", 2.5)
    assert base64.b64decode(media.encode_with(audio, LIPSYNC_AUDIO)) == audio


def test_pil_image_is_saved_in_an_accepted_format() -> None:
    rgba = Image.new("RGBA", (400, 400), (255, 0, 0, 128))
    png_url = media.encode_with(rgba, VIDA_IMAGE)
    png = decoded_data_url(png_url, "data:image/png;base64,")
    assert Image.open(io.BytesIO(png)).size == (400, 400)
    jpeg_url = media.encode_with(rgba, image_spec(formats=("jpeg", "webp")))
    jpeg = decoded_data_url(jpeg_url, "data:image/jpeg;base64,")
    assert Image.open(io.BytesIO(jpeg)).format == "JPEG"
    with pytest.raises(PayloadError, match="250x250"):
        media.encode_with(Image.new("RGB", (250, 250)), VIDA_IMAGE)


def test_url_only_refuses_local_media_and_says_why(tmp_path: Path) -> None:
    path = write(tmp_path, "first.png", image_bytes(400, 400))
    data_url = "data:image/png;base64," + base64.b64encode(image_bytes(400, 400)).decode()
    for source in (path, str(path), path.read_bytes(), Image.new("RGB", (400, 400)), data_url):
        with pytest.raises(PayloadError) as caught:
            media.encode_with(source, VIDP_IMAGE, endpoint="vidP_v6_transition", loc=("f",))
        (msg,) = [e["msg"] for e in caught.value.errors]
        assert "vidP_v6_transition takes only public http(s) URLs" in msg
        assert "downloads the file itself" in msg
    with pytest.raises(PayloadError, match=r"file 'first\.png'"):
        media.encode_with(path, VIDP_IMAGE)


@pytest.mark.parametrize("spec", [VIDA_IMAGE, VIDK_IMAGE, VIDP_IMAGE, VIDEO_SPEC, LIPSYNC_AUDIO])
def test_http_urls_pass_through_without_io(spec: MediaSpec) -> None:
    for url in ("https://cdn.example.test/a.png?sig=1", "http://example.test/v.mp4"):
        assert media.encode_with(url, spec) == url
        assert media.check(url, spec) == []
    assert media.encode_with("HTTPS://example.test/A.png", spec) == "https://example.test/A.png"


def test_bad_urls_are_refused() -> None:
    with pytest.raises(PayloadError, match="has no host"):
        media.encode_with("https://", VIDP_IMAGE)
    with pytest.raises(PayloadError, match="scheme 'ftp' is not accepted"):
        media.encode_with("ftp://example.test/a.png", VIDP_IMAGE)


def test_asset_ids_only_where_allowed() -> None:
    assert media.encode_with("asset://asset-123", VIDA_IMAGE) == "asset://asset-123"
    with pytest.raises(PayloadError) as caught:
        media.encode_with("asset://asset-123", VIDK_IMAGE, endpoint="vidK-x", loc=("image",))
    assert caught.value.errors == [
        {
            "loc": ("image",),
            "msg": "vidK-x does not accept asset:// ids here; it takes a public http(s) URL, "
            "or raw base64 with no data: prefix (jpeg, png)",
        }
    ]
    with pytest.raises(PayloadError, match="not an asset id"):
        media.encode_with("asset://", VIDA_IMAGE)


def test_data_url_input_is_normalised_never_sent_as_is() -> None:
    data = image_bytes(400, 400)
    text = base64.b64encode(data).decode()
    upper = f"data:image/PNG;base64,{text}"
    assert media.encode_with(upper, VIDA_IMAGE) == f"data:image/png;base64,{text}"
    assert media.encode_with(upper, VIDK_IMAGE) == text
    mislabelled = f"data:image/jpeg;base64,{text}"
    assert media.encode_with(mislabelled, image_spec()) == f"data:image/png;base64,{text}"
    lines = [text[i : i + 76] for i in range(0, len(text), 76)]  # MIME-style line breaks
    wrapped = "data:image/png;base64," + "\n".join(lines)
    assert media.encode_with(wrapped, VIDA_IMAGE) == f"data:image/png;base64,{text}"


def test_data_url_input_is_checked_like_a_file() -> None:
    small = "data:image/png;base64," + base64.b64encode(image_bytes(250, 250)).decode()
    with pytest.raises(PayloadError, match="250x250"):
        media.encode_with(small, VIDA_IMAGE)
    with pytest.raises(PayloadError, match="not valid Base64"):
        media.encode_with("data:image/png;base64,@@@@", VIDA_IMAGE)
    with pytest.raises(PayloadError, match="is not Base64"):
        media.encode_with("data:text/plain,hello", VIDA_IMAGE)


def test_raw_base64_text_input() -> None:
    data = image_bytes(400, 400, "JPEG")
    text = base64.b64encode(data).decode()
    assert media.encode_with(text, image_spec()) == f"data:image/jpeg;base64,{text}"
    assert media.encode_with(text, VIDK_IMAGE) == text
    long_data = image_bytes(400, 400) + bytes(20_000)  # text far longer than any path
    long_text = base64.b64encode(long_data).decode()
    assert media.encode_with(long_text, VIDK_IMAGE) == long_text
    not_media = base64.b64encode(b"just some text, not an image at all").decode()
    with pytest.raises(PayloadError, match="no such file"):
        media.encode_with(not_media, VIDK_IMAGE)


def test_file_url_is_a_local_file(tmp_path: Path) -> None:
    path = write(tmp_path, "a.png", image_bytes(400, 400))
    assert media.encode_with(path.as_uri(), VIDA_IMAGE).startswith("data:image/png;base64,")


def test_missing_file_and_wrong_types(tmp_path: Path) -> None:
    with pytest.raises(PayloadError, match="no such file"):
        media.encode_with(str(tmp_path / "nope.png"), VIDA_IMAGE)
    with pytest.raises(PayloadError, match="no such file"):
        media.encode_with(tmp_path / "nope.png", VIDA_IMAGE)
    with pytest.raises(PayloadError, match="is not a file"):
        media.encode_with(tmp_path, VIDA_IMAGE)
    with pytest.raises(PayloadError, match="cannot use a int as media"):
        media.encode_with(42, VIDA_IMAGE)  # type: ignore[arg-type]


def test_large_base64_warns_and_suggests_url_or_asset() -> None:
    padded = image_bytes(400, 400) + bytes(4 * 2**20)  # Pillow ignores data after IEND
    with pytest.warns(MediaWarning, match=r"must not be sent as Base64.*asset://") as record:
        url = media.encode_with(padded, VIDA_IMAGE)
    assert len(url) > media.BASE64_WARN_BYTES
    assert "https URL" in str(record[0].message)
    with pytest.warns(MediaWarning) as record:
        media.encode_with(padded, VIDK_IMAGE)
    assert "asset://" not in str(record[0].message)


def test_small_base64_does_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        media.encode_with(image_bytes(400, 400), VIDA_IMAGE)


def test_check_accepts_media_info_and_reports_nothing_when_fine() -> None:
    assert media.check(info(width=400, height=400), VIDA_IMAGE) == []
    assert media.check(image_bytes(400, 400), VIDA_IMAGE) == []


# --- finding a field's MediaSpec in a model --------------------------------------------------

IMG = MediaSpec("image", "data_url_lower", formats=("png",), allow_asset=True)
VID = MediaSpec("video", "url_or_data", allow_asset=True)
RAW = MediaSpec("image", "raw_base64", formats=("jpeg", "png"))
SND = MediaSpec("audio", "raw_base64", formats=("mp3",), min_seconds=2)
URL = MediaSpec("image", "url_only")


class _Url(BaseModel):
    url: str


class _ImageUrl(BaseModel):
    url: Annotated[str, IMG]


class _VideoUrl(BaseModel):
    url: Annotated[str, VID]


class _Text(BaseModel):
    type: Literal["text"]
    text: str


class _ImageItem(BaseModel):
    type: Literal["image_url"]
    image_url: _ImageUrl


class _VideoItem(BaseModel):
    type: Literal["video_url"]
    video_url: _VideoUrl


class _ListItem(BaseModel):
    image: Annotated[str, RAW]


class _Face(BaseModel):
    face_id: str
    sound_file: Annotated[str, SND] | None = None


class _Fake(EndpointModel):
    content: list[_Text | _ImageItem | _VideoItem] = Field(...)
    image_list: list[_ListItem] | None = None
    face_choose: Annotated[list[_Face], Field(max_length=1)] | None = None
    first_frame_image: Annotated[str, URL] = Field(..., alias="firstFrame")
    images: list[Annotated[str, IMG]] | None = None
    prompt: str = ""
    plain: _Url | None = None


@pytest.fixture
def fake_endpoint(monkeypatch: pytest.MonkeyPatch) -> str:
    spec = EndpointSpec(id="fake-media", kind="video", family="fake", title="Fake", model=_Fake)
    monkeypatch.setattr(encoding, "catalog_endpoint", lambda endpoint_id: spec)
    return "fake-media"


@pytest.mark.parametrize(
    ("field", "expected"),
    [
        ("content.image_url.url", IMG),
        ("content.0.image_url.url", IMG),
        ("content[2].video_url.url", VID),
        (("content", 1, "video_url", "url"), VID),
        ("image_list.image", RAW),
        (("image_list", "image"), RAW),
        ("face_choose.sound_file", SND),
        ("face_choose.0.sound_file", SND),
        ("first_frame_image", URL),
        ("firstFrame", URL),
        ("images", IMG),
        ("images.3", IMG),
    ],
)
def test_spec_for_walks_the_model(fake_endpoint: str, field: Any, expected: MediaSpec) -> None:
    assert media.spec_for(fake_endpoint, field) is expected


@pytest.mark.parametrize(
    ("field", "why"),
    [
        ("prompt", "'prompt' is not a media field"),
        ("plain.url", "'plain.url' is not a media field"),
        ("image_list", "'image_list' is not a media field"),
        ("content.image_url.nope", "'content.image_url.nope' is not a field of fake-media"),
        ("nope", "'nope' is not a field of fake-media"),
        ("", "no field given"),
    ],
)
def test_spec_for_names_the_media_fields(fake_endpoint: str, field: str, why: str) -> None:
    with pytest.raises(PayloadError) as caught:
        media.spec_for(fake_endpoint, field)
    msg = caught.value.errors[0]["msg"]
    assert msg.startswith(why)
    assert msg.endswith(
        "the media fields of fake-media are: content.image_url.url, content.video_url.url, "
        "image_list.image, face_choose.sound_file, firstFrame, images"
    )


def test_media_fields(fake_endpoint: str) -> None:
    assert media.media_fields(fake_endpoint) == {
        "content.image_url.url": IMG,
        "content.video_url.url": VID,
        "image_list.image": RAW,
        "face_choose.sound_file": SND,
        "firstFrame": URL,
        "images": IMG,
    }


def test_encode_by_field_path(fake_endpoint: str, tmp_path: Path) -> None:
    data = image_bytes(400, 400)
    assert media.encode(data, fake_endpoint, "content.0.image_url.url").startswith(
        "data:image/png;base64,"
    )
    assert base64.b64decode(media.encode(data, fake_endpoint, "image_list.image")) == data
    with pytest.raises(PayloadError) as caught:
        media.encode(write(tmp_path, "a.png", data), fake_endpoint, ("first_frame_image",))
    assert caught.value.errors[0]["loc"] == ("first_frame_image",)
    assert caught.value.endpoint == fake_endpoint
    with pytest.raises(PayloadError) as caught:
        media.encode(image_bytes(10, 10, "JPEG"), fake_endpoint, "content.0.image_url.url")
    assert caught.value.errors[0]["loc"] == ("content", 0, "image_url", "url")
    assert "format is jpeg" in caught.value.errors[0]["msg"]


def test_gw_media_resolves() -> None:
    assert gw.media is media
    assert issubclass(MediaWarning, UserWarning)


# --- the real catalog (needs the catalog engineer's endpoint models) ------------------------

CATALOG_MEDIA_FIELDS = [
    ("vidA-2-0", "content.image_url.url", "image", "data_url_lower"),
    ("vidA-2-0-fast", "content.image_url.url", "image", "data_url_lower"),
    ("vidA-2-0", "content.video_url.url", "video", "url_or_data"),
    ("vidH_1.0_r2v", ("media", "url"), "image", "data_url_mime"),
    ("vidV-create-subjects", "images", "image", "data_url_mime"),
    ("vidV-create-subjects", "videos", "video", "data_url_mime"),
    ("vidK-v1-6-multi-i2v", "image_list.image", "image", "raw_base64"),
    ("vidK-v3-motion-control", "image_url", "image", "raw_base64"),
    ("vidK-v3-motion-control", "video_url", "video", "url_only"),
    ("vidK-lip-sync", "face_choose.sound_file", "audio", "raw_base64"),
    ("vidP_v6_transition", "first_frame_image", "image", "url_only"),
    ("vidP_v6_transition", "last_frame_image", "image", "url_only"),
    ("imgQ-edit-plus", "images", "image", "data_url_mime"),
    ("imgG-1.5-edit", "images", "image", "data_url_mime"),
    ("imgM-inpaint", "mask.url", "image", "url_or_data"),
    ("genW2.6-r2v", "reference_video_urls", "video", "url_only"),
]


@pytest.mark.parametrize(("endpoint", "field", "kind", "encoding"), CATALOG_MEDIA_FIELDS)
def test_catalog_media_fields(endpoint: str, field: Any, kind: str, encoding: str) -> None:
    spec = media.spec_for(endpoint, field)
    assert (spec.media, spec.encoding) == (kind, encoding)


def test_catalog_vida_image_rules() -> None:
    ok = image_bytes(400, 400)
    for endpoint in ("vidA-2-0", "vidA-2-0-fast"):
        url = media.encode(ok, endpoint, "content.0.image_url.url")
        assert decoded_data_url(url, "data:image/png;base64,") == ok
        assert media.encode("asset://a1", endpoint, "content.image_url.url") == "asset://a1"
        with pytest.raises(PayloadError) as caught:
            media.encode(image_bytes(300, 500), endpoint, "content.0.image_url.url")
        assert caught.value.errors[0]["msg"] == (
            f"image is 300x500 px; {endpoint} needs width and height strictly between "
            "300 and 6000 px"
        )


def test_catalog_vidp_refuses_local_files(tmp_path: Path) -> None:
    path = write(tmp_path, "a.png", image_bytes(400, 400))
    with pytest.raises(PayloadError, match="only public http"):
        media.encode(path, "vidP_v6_transition", "first_frame_image")
    url = "https://example.test/a.png"
    assert media.encode(url, "vidP_v6_transition", "last_frame_image") == url


def test_catalog_vidk_raw_base64_and_non_media_field() -> None:
    data = image_bytes(400, 400, "JPEG")
    raw = media.encode(data, "vidK-v1-6-multi-i2v", "image_list.0.image")
    assert base64.b64decode(raw) == data
    with pytest.raises(PayloadError, match=r"media fields of vidK-v1-6-multi-i2v are: .*image"):
        media.spec_for("vidK-v1-6-multi-i2v", "prompt")


def test_catalog_accepts_what_media_encodes() -> None:
    """The encoded strings pass the catalog's own form checks (gw.validate)."""
    png = image_bytes(500, 500)
    jpeg = image_bytes(500, 500, "JPEG")
    payloads: dict[str, dict[str, Any]] = {
        "vidA-2-0": {
            "content": [
                {"type": "text", "text": "a kite"},
                {
                    "type": "image_url",
                    "image_url": {"url": media.encode(png, "vidA-2-0", "content.image_url.url")},
                },
            ]
        },
        "vidH_1.0_r2v": {
            "prompt": "a kite",
            "media": [
                {"type": "reference_image", "url": media.encode(png, "vidH_1.0_r2v", "media.url")}
            ],
        },
        "vidK-v1-6-multi-i2v": {
            "prompt": "a kite",
            "image_list": [
                {"image": media.encode(jpeg, "vidK-v1-6-multi-i2v", "image_list.image")}
            ],
        },
        "imgQ-edit-plus": {
            "prompt": "a kite",
            "images": [media.encode(Image.new("RGB", (500, 500)), "imgQ-edit-plus", "images")],
        },
        "vidV-create-subjects": {
            "name": "kite",
            "images": [media.encode(jpeg, "vidV-create-subjects", "images")],
        },
    }
    for endpoint, payload in payloads.items():
        gw.validate(endpoint, payload)


def test_catalog_vidh_short_side_and_lipsync_duration() -> None:
    with pytest.raises(PayloadError, match=r"short side 399 px.*at least 400 px"):
        media.encode(image_bytes(399, 800), "vidH_1.0_r2v", ("media", 0, "url"))
    assert media.encode(image_bytes(400, 800), "vidH_1.0_r2v", "media.url").startswith(
        "data:image/png;base64,"
    )
    short = audio_bytes("wav", "pcm_s16le", 1.5)
    with pytest.raises(PayloadError, match=r"audio is 1\.50 s long; vidK-lip-sync needs"):
        media.encode(short, "vidK-lip-sync", "face_choose.0.sound_file")
    ok = audio_bytes("wav", "pcm_s16le", 2.0)
    assert base64.b64decode(media.encode(ok, "vidK-lip-sync", "face_choose.sound_file")) == ok


# --- pathlib.Path values in payloads (issue 20, point 6) ------------------------------------


def _png_file(folder: Path, name: str = "meadow.png", size: tuple[int, int] = (640, 480)) -> Path:
    path = folder / name
    path.write_bytes(image_bytes(*size, mode="RGB"))
    return path


def test_encode_paths_encodes_each_path_by_its_fields_rule(tmp_path: Path) -> None:
    meadow = _png_file(tmp_path)
    payload = {"prompt": "x", "images": ["https://x.test/a.png", meadow]}
    encoded = media.encode_paths("imgQ-edit-plus", payload)
    assert encoded["images"][0] == "https://x.test/a.png"
    assert encoded["images"][1] == media.encode(meadow, "imgQ-edit-plus", "images")
    assert encoded["images"][1].startswith("data:image/png;base64,")
    assert payload["images"][1] == meadow  # the caller's payload is not changed
    # vidK takes raw base64 in a nested list item: the same Path, another encoding
    raw = media.encode_paths(
        "vidK-v1-6-multi-i2v", {"image_list": [{"image": _png_file(tmp_path, "k.png", (512, 512))}]}
    )
    assert not raw["image_list"][0]["image"].startswith("data:")
    assert base64.b64decode(raw["image_list"][0]["image"])[:8] == b"\x89PNG\r\n\x1a\n"
    plain = {"prompt": "no files"}
    assert media.encode_paths("imgQ-edit-plus", plain) is plain


def test_a_path_is_found_in_any_mapping_list_or_tuple(tmp_path: Path) -> None:
    """Plain dicts, lists and texts are told by their exact type (the short way every
    payload takes); any other mapping or a tuple is still looked into."""
    meadow = _png_file(tmp_path, "k.png", (512, 512))
    for payload in (
        MappingProxyType({"image_list": ({"image": meadow},)}),
        {"image_list": [MappingProxyType({"image": meadow})]},
    ):
        encoded = media.encode_paths("vidK-v1-6-multi-i2v", payload)
        assert base64.b64decode(encoded["image_list"][0]["image"])[:4] == b"\x89PNG"
    plain = {"image_list": ({"image": "https://x.test/a.png", "n": 1, "on": True},)}
    assert media.encode_paths("vidK-v1-6-multi-i2v", plain) is plain


@pytest.mark.parametrize(
    ("payload", "loc", "words"),
    [
        ({"prompt": "x", "images": [Path("no/such/meadow.png")]}, ("images", 0), "no such file"),
        ({"prompt": Path("meadow.png"), "images": ["https://x.test/a.png"]}, ("prompt",),
         "not a media field"),
    ],
)  # fmt: skip
def test_a_bad_path_is_a_payload_error_at_its_location(
    payload: dict[str, Any], loc: tuple[Any, ...], words: str
) -> None:
    with pytest.raises(PayloadError) as caught:
        gw.validate("imgQ-edit-plus", payload)
    assert [e["loc"] for e in caught.value.errors] == [loc]
    assert words in caught.value.errors[0]["msg"]


def test_a_path_that_breaks_the_fields_rules_says_which(tmp_path: Path) -> None:
    tiny = _png_file(tmp_path, "tiny.png", (200, 120))
    with pytest.raises(PayloadError) as caught:
        gw.validate("vidA-2-0", {"content": [{"type": "image_url", "image_url": {"url": tiny}}]})
    assert caught.value.errors[0]["loc"][:2] == ("content", 0)
    assert "300" in caught.value.errors[0]["msg"]  # sides strictly between 300 and 6000


def test_gw_validate_accepts_a_path_and_names_a_string_that_is_a_file(tmp_path: Path) -> None:
    meadow = _png_file(tmp_path)
    model = gw.validate("imgQ-edit-plus", {"prompt": "x", "images": [meadow]})
    assert model.to_wire()["images"][0].startswith("data:image/png;base64,")
    with pytest.raises(PayloadError) as caught:
        gw.validate("imgQ-edit-plus", {"prompt": "x", "images": [str(meadow)]})
    message = caught.value.errors[0]["msg"]
    assert "pathlib.Path(" in message and "gw.media.encode" in message
    assert "expected a public" not in message
    # a string that names no file keeps the usual message
    with pytest.raises(PayloadError, match="expected a public http"):
        gw.validate("imgQ-edit-plus", {"prompt": "x", "images": [str(tmp_path / "none.png")]})


def test_client_submit_sends_a_path_encoded(simulator: Any, tmp_path: Path) -> None:
    meadow = _png_file(tmp_path)
    with gw.Client(simulator.base_url, DEMO_KEY) as client:
        prepared = client.prepare("imgQ-edit-plus", {"prompt": "x", "images": [meadow], "n": 1})
        sent = prepared.payload["images"][0]
        assert base64.b64decode(sent.split(",", 1)[1]) == meadow.read_bytes()
        assert str(meadow) not in prepared.body.decode()
        job = client.submit("imgQ-edit-plus", {"prompt": "x", "images": [meadow], "n": 1})
        result = job.result(timeout=60)
    assert result.ok
    with Image.open(io.BytesIO(result.outputs[0].read())) as picture:
        width, height = picture.size
    assert abs(width / height - 640 / 480) < 0.05  # the last image (our file) set the aspect
