"""What a saved notebook keeps of an output, by GENWIDGETS_SAVED_MEDIA: thumbnails linked
to the served full file, posters and previews that play, audio embedded; never the
network, never a loopback URL, never an absolute local path."""

from __future__ import annotations

import base64
import io
import re
from pathlib import Path

import av
import pytest
from jobs.video_samples import busy_mp4
from PIL import Image

from genwidgets.jobs.output_files import OutputFiles
from genwidgets.protocol.records import Output, Result
from genwidgets.widgets import lasting
from genwidgets.widgets.lasting import (
    AUDIO_LIMIT,
    FACE_READS,
    VIDEO_BUDGET,
    content_html,
    output_html,
    outputs_html,
    plain_text,
    result_html,
    thumbnail_src,
)


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("GENWIDGETS_OUTPUTS_URL", raising=False)
    monkeypatch.delenv("GENWIDGETS_SAVED_MEDIA", raising=False)
    return tmp_path / "home"


def kept(home: Path, name: str, data: bytes, content_type: str, url: str | None = None) -> Output:
    """An output the ledger kept under ``outputs/`` (its URL, if any, long dead)."""
    path = home / "outputs" / "req-1" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    entry = {"content_type": content_type, "file_name": name, "file_size": len(data)}
    if url:
        entry["url"] = url
    output = Output.from_entry(entry, source=OutputFiles())
    output.path = path
    return output


def png(width: int = 1024, height: int = 768) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), "teal").save(buffer, "PNG")
    return buffer.getvalue()


def mp4(seconds: int = 8, width: int = 640, height: int = 360) -> bytes:
    return busy_mp4(seconds, width, height)


def data_urls(html: str, kind: str) -> list[bytes]:
    return [
        base64.b64decode(m)
        for m in re.findall(rf'src="data:{kind}/[a-z0-9.+-]+;base64,([A-Za-z0-9+/=]+)"', html)
    ]


def test_an_image_is_its_thumbnail_linked_to_the_file_the_server_serves(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    image = kept(home, "0.png", png(), "image/png", "http://127.0.0.1:9/files/t/0.png")
    html = output_html(image)
    [thumb] = data_urls(html, "image")
    assert max(Image.open(io.BytesIO(thumb)).size) <= 256
    assert "<a " not in html  # no server serves the outputs: no link that would not resolve
    assert "127.0.0.1:9" not in html  # the simulator's URL died with its kernel
    assert "saved at $GENWIDGETS_HOME/outputs/req-1/0.png" in html
    assert str(home) not in html  # never the machine's absolute path
    monkeypatch.setenv("GENWIDGETS_OUTPUTS_URL", "/genwidgets/outputs/")
    html = output_html(image)
    assert '<a href="/genwidgets/outputs/req-1/0.png" target="_blank"' in html
    assert 'class="gw-full" href="/genwidgets/outputs/req-1/0.png"' in html
    [whole] = data_urls(output_html(image, media="full"), "image")
    assert whole == image.path.read_bytes()  # type: ignore[union-attr]


@pytest.mark.slow
def test_a_video_keeps_a_poster_and_a_preview_that_plays_by_default(home: Path) -> None:
    video = kept(home, "0.mp4", mp4(), "video/mp4", "http://127.0.0.1:9/files/t/0.mp4")
    html = output_html(video)
    [preview] = data_urls(html, "video")
    assert 0 < len(preview) <= VIDEO_BUDGET < len(video.path.read_bytes())  # type: ignore[union-attr]
    with av.open(io.BytesIO(preview)) as container:  # it decodes: it plays
        assert sum(1 for _ in container.decode(video=0)) >= 2
    assert '<video controls preload="auto"' in html and 'poster="data:image/jpeg;base64,' in html
    assert "autoplay" not in html and "loop" not in html and "127.0.0.1" not in html
    assert "· preview" in html


@pytest.mark.slow
def test_posters_only_and_full_media_are_chosen_by_the_setting(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = mp4()
    video = kept(home, "0.mp4", data, "video/mp4")
    monkeypatch.setenv("GENWIDGETS_SAVED_MEDIA", "posters")
    posters = output_html(video)
    assert "<video" not in posters and 'class="gw-poster" src="data:image/jpeg;base64,' in posters
    assert "poster only" in posters
    monkeypatch.setenv("GENWIDGETS_SAVED_MEDIA", "full")
    [whole] = data_urls(output_html(video), "video")
    assert whole == data
    sizes = {m: len(output_html(video, media=m)) for m in ("posters", "previews", "full")}
    assert sizes["posters"] < sizes["previews"] < sizes["full"]


def test_a_video_within_the_budget_is_kept_whole_with_its_sound(home: Path) -> None:
    data = mp4(seconds=1, width=64, height=64)
    assert len(data) < VIDEO_BUDGET
    video = kept(home, "0.mp4", data, "video/mp4")
    [whole] = data_urls(output_html(video), "video")
    assert whole == data and "· preview" not in output_html(video)


def test_audio_is_embedded_up_to_its_limit(home: Path) -> None:
    voice = kept(home, "0.mp3", b"ID3" + b"\x00" * 4000, "audio/mpeg", "http://127.0.0.1:9/0.mp3")
    [embedded] = data_urls(output_html(voice, media="posters"), "audio")
    assert embedded == voice.path.read_bytes()  # type: ignore[union-attr]
    long = kept(home, "1.mp3", b"\x00" * (AUDIO_LIMIT + 1), "audio/mpeg", "http://127.0.0.1:9/1")
    html = output_html(long)
    assert "<audio" not in html and "not shown" in html and "127.0.0.1" not in html


def test_nothing_is_fetched_and_a_dead_loopback_url_is_named_not_used() -> None:
    fetched: list[str] = []

    def fetch(url: str, max_bytes: int) -> bytes:
        fetched.append(url)
        return png()

    gone = Output.from_entry(
        {"url": "http://127.0.0.1:9/files/t/0.png", "content_type": "image/png"},
        source=OutputFiles(fetch),
    )
    html = output_html(gone)
    assert fetched == [] and "127.0.0.1" not in html
    assert "not kept locally; its URL is on the machine that made it" in html
    assert "has stopped" not in html  # it was never asked: no word of its server
    remote = Output.from_entry(
        {"url": "https://cdn.example/0.png", "content_type": "image/png"},
        source=OutputFiles(fetch),
    )
    assert '<img class="gw-thumb" src="https://cdn.example/0.png"' in output_html(remote)
    assert fetched == []  # a gateway's URL is shown while it answers, never downloaded


def test_a_face_that_fetches_reads_at_most_its_budget_of_outputs_and_links_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A result listing many JSON outputs on a gateway's URLs: its face (``fetch``, as
    ``gw.render`` asks) reads FACE_READS of them and links the others; one read that
    fails ends the reads, and a deadline past reads none."""
    fetched: list[str] = []
    answer: list[Exception] = []

    def fetch(url: str, max_bytes: int) -> bytes:
        fetched.append(url)
        if answer:
            raise answer[0]
        return b'{"face_id": "f-1"}'

    def listed(count: int) -> list[Output]:
        return [
            Output.from_entry(
                {"url": f"https://cdn.example/{i}.json", "content_type": "application/json"},
                index=i,
                source=OutputFiles(fetch),
            )
            for i in range(count)
        ]

    html = outputs_html(listed(FACE_READS + 30), fetch=True)
    assert len(fetched) == FACE_READS and html.count(">face_id</th>") == FACE_READS
    assert 'href="https://cdn.example/49.json"' in html  # the others are linked
    fetched.clear()
    answer.append(OSError("gone"))
    outputs_html(listed(5), fetch=True)
    assert len(fetched) == 1
    answer.clear()
    monkeypatch.setattr(lasting, "FACE_READ_SECONDS", 0.0)
    fetched.clear()
    assert "cdn.example/0.json" in outputs_html(listed(5), fetch=True) and fetched == []


def test_json_text_and_inline_content_are_laid_out() -> None:
    record = Output.from_entry({"content_type": "application/json", "content": {"face_id": "f-1"}})
    assert ">face_id</th>" in output_html(record)
    note = Output.from_entry({"content_type": "text/plain", "content": "<b>hello</b>"})
    assert "&lt;b&gt;hello&lt;/b&gt;" in output_html(note)
    inline = Output.from_entry(
        {
            "content_type": "image/png",
            "encoding": "base64",
            "content": base64.b64encode(png()).decode(),
        }
    )
    assert data_urls(output_html(inline), "image")


def test_labelled_outputs_and_a_failed_result(home: Path) -> None:
    before = kept(home, "a.png", png(), "image/png")
    after = kept(home, "b.png", png(300, 200), "image/png")
    html = outputs_html([before, after], labels=["before", "after"])
    assert html.index("<b>before</b>") < html.index("<b>after</b>")
    assert len(data_urls(html, "image")) == 2
    failed = Result.from_body(
        {"status": "COMPLETED", "error": "Runtime execution failed", "error_type": "runtime_error"}
    )
    assert "failed: Runtime execution failed (runtime_error)" in result_html(failed)


def test_a_table_row_gets_a_picture_of_the_outputs(home: Path) -> None:
    image = kept(home, "0.png", png(), "image/png")
    video = kept(home, "0.mp4", mp4(seconds=1), "video/mp4")
    voice = kept(home, "0.mp3", b"ID3", "audio/mpeg")
    assert (thumbnail_src([voice, image]) or "").startswith("data:image/jpeg;base64,")
    assert (thumbnail_src([video]) or "").startswith("data:image/jpeg;base64,")
    assert thumbnail_src([voice]) is None


def test_the_plain_face_says_how_a_task_ended_not_failed_for_every_end() -> None:
    cancelled = Result(status="CANCELLED", error=None, error_type="cancelled")
    assert plain_text([], cancelled).splitlines()[0] == "cancelled"
    failed = Result(status="FAILED", error="out of memory", error_type="runtime_error")
    assert plain_text([], failed).splitlines()[0] == "failed: out of memory (runtime_error)"
    assert "None" not in plain_text([], Result(status="FAILED", error=None))


def test_json_content_nested_too_deep_is_shown_as_text() -> None:
    deep = b'[{"a":' * 25_000 + b"1" + b"}]" * 25_000
    entry = {"content_type": "application/json", "content": deep.decode()}
    html = content_html(Output.from_entry(entry, source=OutputFiles()), deep)
    assert "<pre" in html and "[{&quot;a&quot;:" in html


def test_an_outputs_gateway_text_is_inert_in_its_repr_and_the_console_face() -> None:
    """A gateway's content type, file name and URL reached ``repr(output)`` and the
    text/plain face (what ``jupyter console`` prints) raw: an escape sequence in them set
    the terminal's title, cleared its screen or hid text. Shown as escapes, never run."""
    result = Result.from_body(
        {
            "request_id": "req-1",
            "status": "COMPLETED",
            "outputs": [
                {
                    "content": "hi",
                    "content_type": "text/plain\x1b]0;TITLE\x07",
                    "file_name": "a\x1b[2J\x1b[31mred.txt",
                },
                {"url": "https://cdn.example/x\x1b[8mhidden.png", "content_type": "image/png"},
                {"url": "https://cdn.example/y.png", "content_type": "image/png\u202e"},
            ],
        },
        source=OutputFiles(),
    )
    shown = [plain_text(result.outputs, result), *map(repr, result.outputs), repr(result)]
    for text in shown:
        assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202e]", text), repr(text)
    face = plain_text(result.outputs, result)
    assert "\\x1b[2J" in face and "\\x1b[8m" in repr(result.outputs[1])
