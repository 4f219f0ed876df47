"""Rendering by content_type: widget classes, by-URL/by-bytes rule, and hostile outputs."""

from __future__ import annotations

import base64
import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import ipywidgets
import pytest
from loopback import FileHost, files_gateway
from widgets.taskfakes import wait_for

import genwidgets as gw
from genwidgets._html import url_kind
from genwidgets.jobs.downloads import download_outputs
from genwidgets.jobs.output_files import OutputFiles
from genwidgets.protocol.records import Output, Result
from genwidgets.widgets import lasting
from genwidgets.widgets import render as render_module
from genwidgets.widgets.lasting import FACE_READS, output_html
from genwidgets.widgets.render import (
    EMBED_LIMIT,
    live_entry,
    render,
    source_of,
    to_mimebundle,
)
from genwidgets.widgets.task import TaskView, result_entries

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000185d114090000000049454e44ae426082"
)


def out(content_type: str | None, url: str | None = None, **raw: Any) -> Output:
    """An output as the jobs layer makes it (its source reads a local copy set later)."""
    entry: dict[str, Any] = {**raw}
    if content_type is not None:
        entry["content_type"] = content_type
    if url is not None:
        entry["url"] = url
    return Output.from_entry(entry, source=OutputFiles())


class Collector(HTMLParser):
    """Every tag and attribute of an HTML string, to check it the way a browser reads it."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


ALLOWED_TAGS = {
    "div", "span", "img", "video", "audio", "a", "table", "tr", "th", "td", "pre", "code",
    "b", "i", "style",
    "svg", "path",  # a kind's icon: the package's constant path, no script
}  # fmt: skip


def assert_harmless(text: str) -> None:
    """No script, no event handlers, no iframes, every href/src an allowed URL."""
    for tag, attrs in Collector(text).tags:
        assert tag in ALLOWED_TAGS, tag
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, name)
            if name in {"href", "src"}:
                assert value is not None and url_kind(value) is not None, (tag, value)


# --- widget per content type ----------------------------------------------------

MEDIA = [
    ("image/png", ipywidgets.Image),
    ("image/jpeg", ipywidgets.Image),
    ("video/mp4", ipywidgets.Video),
    ("audio/mpeg", ipywidgets.Audio),
    ("audio/wav", ipywidgets.Audio),
]


@pytest.mark.parametrize(("content_type", "cls"), MEDIA)
def test_media_by_url_is_the_right_widget_and_never_autoplays(
    content_type: str, cls: type[ipywidgets.Widget]
) -> None:
    url = "https://cdn.example/files/t/out"  # no extension: the content type decides
    widget = render(out(content_type, url))
    assert type(widget) is cls
    assert widget.format == "url" and bytes(widget.value) == url.encode()
    if cls is not ipywidgets.Image:
        assert widget.controls is True
        assert widget.autoplay is False and widget.loop is False


def test_audio_from_inline_hex_goes_by_bytes() -> None:
    data = b"ID3\x03\x00fake-mp3"
    widget = render(out("audio/mpeg", encoding="hex", content=data.hex()))
    assert isinstance(widget, ipywidgets.Audio)
    assert bytes(widget.value) == data and widget.format == "mpeg"
    assert widget.autoplay is False and widget.loop is False and widget.controls is True


def test_image_data_url_goes_by_bytes() -> None:
    url = "data:image/png;base64," + base64.b64encode(PNG).decode()
    widget = render(out("image/png", url))
    assert isinstance(widget, ipywidgets.Image)
    assert bytes(widget.value) == PNG and widget.format == "png"


def test_json_is_a_readable_escaped_table() -> None:
    content = json.dumps({"session_id": "s1", "face_data": [{"face_id": "f<1>", "end_time": 5}]})
    widget = render(out("application/json", "https://cdn.example/x.json", content=content))
    assert isinstance(widget, ipywidgets.HTML)
    html = widget.value
    assert "<table" in html and ">session_id</th>" in html and ">face_id</th>" in html
    assert "f&lt;1&gt;" in html and "f<1>" not in html
    assert_harmless(html)


def test_asset_record_json_string_holding_json_is_a_table() -> None:
    record = {"Id": "asset-1", "Status": "Active", "URL": "https://cdn.example/a.png"}
    result = Result.from_body(
        {
            "status": "COMPLETED",
            "outputs": [
                {"content_type": "application/json", "content": json.dumps(json.dumps(record))}
            ],
        }
    )
    grid = render(result)
    assert isinstance(grid, ipywidgets.GridBox) and len(grid.children) == 1
    html = grid.children[0].value
    assert ">Id</th>" in html and "asset-1" in html and ">Status</th>" in html
    assert "<a " not in html and "<img" not in html  # URLs in records are text, not links


def test_asset_record_in_the_body_with_no_outputs_is_a_table() -> None:
    result = Result.from_body(
        {"status": "COMPLETED", "content": json.dumps({"Id": "a-2", "Status": "Processing"})}
    )
    grid = render(result)
    assert ">Id</th>" in grid.children[0].value
    assert "a-2" in to_mimebundle(result)["text/html"]


def test_text_is_preformatted_and_escaped() -> None:
    widget = render(out("text/plain", content="line 1\n<b>line 2</b>"))
    assert widget.value.startswith("<pre")
    assert "&lt;b&gt;line 2&lt;/b&gt;" in widget.value


@pytest.mark.parametrize("content_type", ["application/octet-stream", None, "model/gltf-binary"])
def test_anything_else_is_a_download_link_even_with_a_media_extension(
    content_type: str | None,
) -> None:
    url = "https://cdn.example/files/t/picture.png"
    widget = render(out(content_type, url, file_name="picture.png"))
    assert isinstance(widget, ipywidgets.HTML)  # not an Image: never by extension
    assert f'href="{url}"' in widget.value and 'download="picture.png"' in widget.value
    assert 'rel="noopener noreferrer"' in widget.value


def test_result_is_a_grid_and_a_failed_result_starts_with_its_error() -> None:
    ok = Result.from_body(
        {
            "status": "COMPLETED",
            "outputs": [
                {"url": f"https://cdn.example/{i}", "content_type": "image/png"} for i in range(4)
            ],
        }
    )
    grid = render(ok)
    assert isinstance(grid, ipywidgets.GridBox)
    assert [type(c) for c in grid.children] == [ipywidgets.Image] * 4
    failed = Result.from_body(
        {"status": "COMPLETED", "error": "Runtime execution failed", "error_type": "runtime_error"}
    )
    grid = render(failed)
    assert "Runtime execution failed" in grid.children[0].value
    assert "runtime_error" in grid.children[0].value
    outputs_grid = render([out("video/mp4", "https://cdn.example/v")])
    assert isinstance(outputs_grid.children[0], ipywidgets.Video)


def test_render_refuses_other_objects_with_a_clear_error() -> None:
    with pytest.raises(TypeError, match="an Output, a Result, a list of Outputs or labelled"):
        render("https://cdn.example/x.png")  # type: ignore[arg-type]


# --- by URL or by bytes -------------------------------------------------------------


def test_local_copy_wins_in_display_outputs_and_the_url_in_live_widgets(
    tmp_path: Path,
) -> None:
    path = tmp_path / "x.png"
    path.write_bytes(PNG)
    output = out("image/png", "https://cdn.example/expiring")
    output.path = path
    # The lasting face holds the bytes: it outlives the URL.
    assert "data:image/png;base64," in output_html(output)
    assert "https://cdn.example/expiring" not in output_html(output)
    # A live widget lets the browser fetch the URL: nothing through the kernel.
    widget = render(output)
    assert widget.format == "url" and bytes(widget.value) == b"https://cdn.example/expiring"
    # With no usable URL, the local copy goes by bytes.
    local_only = out("image/png")
    local_only.path = path
    widget = render(local_only)
    assert bytes(widget.value) == PNG and widget.format == "png"


def test_large_files_are_not_pushed_through_the_kernel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(render_module, "EMBED_LIMIT", 10)
    path = tmp_path / "big.mp4"
    path.write_bytes(b"x" * 100)
    with_url = out("video/mp4", "https://cdn.example/big")
    with_url.path = path
    assert source_of(with_url).how == "url"
    local_only = out("video/mp4")
    local_only.path = path
    widget = render(local_only)
    assert isinstance(widget, ipywidgets.HTML) and "embed=True" in widget.value
    embedded = render(local_only, embed=True)
    assert isinstance(embedded, ipywidgets.Video) and bytes(embedded.value) == b"x" * 100
    assert embedded.autoplay is False


def test_json_by_url_is_read_by_render_but_not_by_its_lasting_face() -> None:
    fetched: list[str] = []

    def fetch(url: str, max_bytes: int) -> bytes:
        fetched.append(url)
        return b'{"element_id": 7}'

    output = Output.from_entry(
        {"url": "https://cdn.example/r.json", "content_type": "application/json"},
        source=OutputFiles(fetch),
    )
    assert "<a " in output_html(output) and fetched == []  # the engine thread never downloads
    assert ">element_id</th>" in render(output).value
    assert fetched == ["https://cdn.example/r.json"]


@pytest.mark.timeout(60)
def test_render_reads_at_most_its_budget_of_outputs_from_a_gateway_and_links_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A result listing many text outputs on a loopback gateway, none downloaded: the
    live widget reads FACE_READS of them and links the others, each saying why it was
    not read; once a read fails (a URL expired, a gateway away) it reads no other, and
    past its deadline none. (It read every one, in series, each within its own timeout.)"""
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path))
    host = FileHost()
    host.outputs, host.content_type = FACE_READS + 30, "text/plain"
    server = files_gateway(host)
    client = gw.Client(server.base, "k-demo", download=False)

    def finished() -> Result:
        return client.submit("ep", {"prompt": "x"}, validate=False).result(timeout=30)

    try:
        shown = [child.value for child in render(finished()).children]
        assert host.asked == FACE_READS
        assert sum("bytes of /files/r1/" in value for value in shown) == FACE_READS
        said = f"not read: at most {FACE_READS} outputs are read from the gateway"
        linked = [value for value in shown if said in value]
        assert len(linked) == 30 and all('class="gw-download"' in v for v in linked)

        host.answer = 404  # expired: the first read fails and says how, no other is tried
        shown = [child.value for child in render(finished()).children]
        assert host.asked == FACE_READS + 1
        assert "not read: HTTP 404 Not Found" in shown[0]
        assert all("a read from the gateway failed before it" in v for v in shown[1:])

        host.answer = 200
        monkeypatch.setattr(lasting, "FACE_READ_SECONDS", 0.0)  # its deadline already past
        shown = [child.value for child in render(finished()).children]
        assert host.asked == FACE_READS + 1
        assert all("read from the gateway for at most 0 s" in v for v in shown)
    finally:
        client.close()
        server.close()


@pytest.mark.parametrize("kind", ["text/plain", "application/json"])
def test_text_by_url_is_read_up_to_the_embed_limit_and_linked_beyond(kind: str) -> None:
    """Issue 39 point 4: a record that declares no size bounds nothing; the read asks
    for at most the embedding limit, and a body over it is a link (the live view and
    the lasting face alike)."""
    caps: list[int] = []

    def fetch(url: str, max_bytes: int) -> bytes:
        caps.append(max_bytes)
        raise OSError(f"the answer is larger than {max_bytes:,} bytes")

    output = Output.from_entry(
        {"url": "https://cdn.example/big", "content_type": kind}, source=OutputFiles(fetch)
    )
    assert '<a class="gw-download" href="https://cdn.example/big"' in render(output).value
    saved = to_mimebundle(output, fetch=True)["text/html"]
    assert 'href="https://cdn.example/big"' in saved
    assert caps == [EMBED_LIMIT, EMBED_LIMIT]


def test_mimebundle_is_plain_display_data() -> None:
    bundle = to_mimebundle(
        Result.from_body(
            {
                "status": "COMPLETED",
                "outputs": [{"url": "https://cdn.example/a", "content_type": "audio/wav"}],
            }
        )
    )
    assert set(bundle) == {"text/html", "text/plain"}
    assert '<audio controls preload="metadata" src="https://cdn.example/a"' in bundle["text/html"]
    assert "audio/wav" in bundle["text/plain"] and "https://cdn.example/a" in bundle["text/plain"]


# --- hostile outputs ------------------------------------------------------------------

HOSTILE = [
    out("image/png", "javascript:alert(1)"),
    out("image/png", "JaVaScRiPt:alert(1)"),
    out("image/png", "java\tscript:alert(1)"),
    out("video/mp4", "vbscript:msgbox(1)"),
    out("application/octet-stream", "javascript:alert(document.cookie)", file_name="x.bin"),
    out("image/png", 'https://cdn.example/a.png"><script>alert(1)</script>'),
    out("image/png", "https://cdn.example/a.png' onerror='alert(1)"),
    out('image/png"><script>alert(1)</script>', "https://cdn.example/a.png"),
    out("text/html", "https://cdn.example/page", content="<script>alert(1)</script>"),
    out("image/svg+xml", "data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+"),
    out("application/octet-stream", "data:text/html,<script>alert(1)</script>"),
    out("application/json", content='{"<img src=x onerror=alert(1)>": "<script>x</script>"}'),
    out("image/png", "https://cdn.example/a.png", file_name='"><script>alert(1)</script>'),
    out("audio/mpeg", "file:///etc/passwd"),
    out("image/png", "https:alert(1)"),
]


@pytest.mark.parametrize("output", HOSTILE, ids=lambda o: repr(o.url or o.content_type)[:40])
def test_hostile_outputs_produce_no_live_markup(output: Output) -> None:
    html = output_html(output)
    assert_harmless(html)
    assert "<script" not in html.lower()
    assert "javascript:" not in html.lower() and "vbscript:" not in html.lower()
    widget = render(output)
    if isinstance(widget, ipywidgets.HTML):
        assert_harmless(widget.value)
    else:  # a media widget got a URL: it must be an allowed one
        assert widget.format != "url" or url_kind(bytes(widget.value).decode()) == "http"
    assert_harmless(to_mimebundle(output)["text/html"])


def test_untrusted_content_type_drops_the_url_and_shows_escaped_text() -> None:
    output = out('image/png"><script>alert(1)</script>', "https://cdn.example/a.png")
    widget = render(output)
    assert isinstance(widget, ipywidgets.HTML)
    assert "https://cdn.example/a.png" not in widget.value
    assert "&lt;script&gt;" in widget.value


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("https://cdn.example/a", "http"),
        ("http://127.0.0.1:8000/files/t/a.png", "http"),
        ("files/a.png", "relative"),
        ("data:image/png;base64,AAAA", "data"),
        ("data:audio/mpeg;base64,AAAA", "data"),
        ("data:text/html;base64,AAAA", None),
        ("data:image/svg+xml;base64,AAAA", None),
        ("javascript:alert(1)", None),
        (" javascript:alert(1)", None),
        ("https://a.example/x y", None),
        ("http:/nohost", None),
        ("ftp://a.example/x", None),
        ("", None),
    ],
)
def test_url_rule(url: str, kind: str | None) -> None:
    assert url_kind(url) == kind


# --- real outputs from the simulator --------------------------------------------------


@pytest.mark.slow
@pytest.mark.timeout(60)
@pytest.mark.parametrize("download", [False, True], ids=["by-url", "local-copy"])
def test_real_outputs_render_by_content_type(
    simulator: Any, download: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import genwidgets as gw

    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path))
    client = gw.Client(base_url=simulator.base_url, api_key="sim-demo-key", download=download)
    try:
        cases = [
            ("imgM-v8.1-t2i", {"prompt": "a red kite"}, ipywidgets.Image, b"\x89PNG"),
            ("vidVq2-text2video", {"prompt": "a red kite"}, ipywidgets.Video, None),
            ("speechM-02-turbo", {"text": "hello there"}, ipywidgets.Audio, None),
        ]
        jobs = [(client.submit(ep, payload), cls, magic) for ep, payload, cls, magic in cases]
        for job, cls, magic in jobs:
            result = job.result(timeout=30)
            grid = render(result)
            assert grid.children and all(type(c) is cls for c in grid.children)
            first = grid.children[0]
            if cls is not ipywidgets.Image:
                assert first.autoplay is False and first.loop is False and first.controls
            # A live widget: the browser fetches the URL itself.
            assert first.format == "url"
            assert bytes(first.value).decode() == result.outputs[0].url
            assert result.outputs[0].url.startswith(simulator.base_url)
            html = output_html(result.outputs[0])
            path = result.outputs[0].path
            # the lasting face never points at the simulator: it dies with its kernel
            assert simulator.base_url not in html
            if download and cls is ipywidgets.Video:
                # a video's lasting face: a poster frame of its first frame, the video
                # (within the preview's budget, whole) and where the ledger kept it
                assert path is not None
                assert 'src="data:video/mp4;base64,' in html
                assert 'poster="data:image/jpeg;base64,' in html
                assert "saved at $GENWIDGETS_HOME/outputs/" in html
                # the live view repeats the poster only where no lasting face has it
                assert live_entry(result.outputs[0])["poster"].startswith("data:image/jpeg")
                assert live_entry(result.outputs[0], poster=False)["poster"] is None
                cell_view = TaskView(job, posters=False)
                assert wait_for(lambda v=cell_view: bool(v.outputs), timeout=30)
                assert [o["poster"] for o in cell_view.outputs] == [None]
                assert cell_view.outputs[0]["url"] == result.outputs[0].url
                cell_view.close()
            elif download and cls is ipywidgets.Image:
                # an image holds the thumbnail of the ledger's copy
                assert path is not None
                from genwidgets.media.thumbnails import data_url, thumbnail

                small = thumbnail(path)
                assert small is not None and f'src="{data_url(small)}"' in html
            elif download:  # audio holds the ledger's local copy
                assert path is not None
                data = base64.b64encode(path.read_bytes()).decode()
                assert f"base64,{data}" in html
            else:  # nothing kept: said so, nothing dead pointed at
                assert "not shown, it was not kept locally; its URL is on the machine" in html
            embedded = render(result.outputs[0], embed=True)
            assert embedded.format != "url" and len(bytes(embedded.value)) > 100
            if magic:
                assert bytes(embedded.value).startswith(magic)
    finally:
        client.close()


def test_outputs_from_the_ledger_use_their_local_copy(tmp_path: Path) -> None:
    # after a restart the URL has likely stopped answering (the embedded
    # simulator died with its kernel): the renderers use the saved file instead
    saved = tmp_path / "0.mp4"
    saved.write_bytes(b"\x00\x00\x00\x18ftypmp42" + b"x" * 64)
    fresh = out("video/mp4", "http://127.0.0.1:9/files/t/0.mp4")
    fresh.path = saved
    restored = out("video/mp4", "http://127.0.0.1:9/files/t/0.mp4", from_ledger=True)
    restored.path = saved
    assert render(fresh).format == "url"  # this session: the browser fetches the URL
    widget = render(restored)
    assert widget.format != "url" and bytes(widget.value) == saved.read_bytes()
    assert "base64," in output_html(restored) and 'src="http' not in output_html(restored)
    gone = out("video/mp4", "http://127.0.0.1:9/files/t/0.mp4", from_ledger=True)
    assert render(gone).format == "url"  # no local copy: the URL is all there is


def test_a_rendered_widget_is_shown_with_its_lasting_face(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``gw.render`` as a cell's result: the widget (with the mark that makes it a
    live face), then its lasting face with the image's thumbnail, so a notebook
    saved without widget state shows it; nothing replaces the widget later."""
    import IPython.display
    from IPython.core.interactiveshell import InteractiveShell
    from PIL import Image

    from genwidgets.widgets import faces

    picture = tmp_path / "kite.png"
    Image.new("RGB", (800, 600), "red").save(picture)
    output = out("image/png", "https://cdn.example/kite.png")
    output.path = picture  # the ledger's local copy
    shown: list[tuple[dict[str, Any], dict[str, Any]]] = []
    updates: list[dict[str, Any]] = []

    class Handle:
        def update(self, data: dict[str, Any], **kwargs: Any) -> None:
            updates.append(data)

    def display(data: dict[str, Any], **kwargs: Any) -> Handle:
        shown.append((data, kwargs))
        return Handle()

    shell = InteractiveShell.instance()
    faces.REPUBLISH.flush()  # nothing of other tests pending
    monkeypatch.setattr(IPython.display, "display", display)
    monkeypatch.setattr(faces, "in_kernel", lambda: True)
    widget = render(output)
    assert isinstance(widget, ipywidgets.Image)  # still itself inside containers
    assert shell.display_formatter.ipython_display_formatter(widget) is True
    [(live, _), (lasting, kwargs)] = shown
    assert faces.WIDGET_VIEW_MIME in live and kwargs["display_id"] is True
    assert set(lasting) == {"text/html", "text/plain"}
    assert 'class="gw-thumb" src="data:image/jpeg;base64,' in lasting["text/html"]
    assert "cdn.example" not in lasting["text/html"]  # a gateway's URL expires
    shell.run_cell("1 + 1")
    assert updates == []  # the live widget stays


def test_labelled_outputs_render_side_by_side_with_a_local_file(tmp_path: Path) -> None:
    from PIL import Image

    before = tmp_path / "meadow.png"
    Image.new("RGB", (640, 480), "green").save(before)
    after = Output.from_entry({"content_type": "image/png", "url": "https://cdn.example/a.png"})
    widget = render({"before: meadow.png": before, "after: edited": after})
    labels = [box.children[0].value for box in widget.children]
    assert labels == ["<b>before: meadow.png</b>", "<b>after: edited</b>"]
    assert bytes(widget.children[0].children[1].value) == before.read_bytes()
    html = to_mimebundle({"before: meadow.png": before, "after: edited": after})["text/html"]
    assert html.index("before: meadow.png") < html.index("after: edited")
    assert 'src="data:image/jpeg;base64,' in html  # the local file's thumbnail
    with pytest.raises(FileNotFoundError, match=r"no such file: .*missing\.png"):
        render({"before": tmp_path / "missing.png"})
    with pytest.raises(TypeError, match="not bytes for 'raw'"):
        render({"raw": b"\x89PNG"})  # type: ignore[dict-item]


@pytest.mark.parametrize(
    ("body", "banner"),
    [
        ({"status": "COMPLETED", "error": "cancelled by user", "error_type": "cancelled"}, None),
        ({"status": "CANCELED"}, None),
        (
            {"status": "COMPLETED", "error": {"message": "out of memory"}, "error_type": "oom"},
            "failed: out of memory (oom)",
        ),
    ],
)
def test_a_cancelled_result_has_no_error_line_and_a_failure_reads_as_text(
    body: dict[str, Any], banner: str | None
) -> None:
    result = Result.from_body({**body, "outputs": []}, endpoint="e", request_id="r")
    html = to_mimebundle(result)["text/html"]
    if banner is None:
        assert "gw-error" not in html
    else:
        assert "gw-error" in html and banner in html and "{" not in html.split("gw-error")[1]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("log line \ud800 end", b"log line \\ud800 end"),  # a gateway's escaped lone surrogate
        (b"\x89PNG\r\n", b"\x89PNG\r\n"),  # bytes handed in by hand
        ({"at": Path("/x")}, b'{"at": "/x"}'),  # a value JSON cannot write: its str
        (memoryview(b"\x89PNG"), b"\x89PNG"),  # bytes-like, by hand
        ({(1, 2): "a"}, b"{(1, 2): 'a'}"),  # keys JSON cannot write: the repr
    ],
)
def test_inline_content_json_or_python_cannot_encode_is_still_shown_and_saved(
    content: Any, expected: bytes, tmp_path: Path
) -> None:
    output = Output("text/plain", raw={"content": content})
    result = Result("COMPLETED", request_id="req-1", outputs=[output])
    assert output.inline() == expected
    entries = result_entries(result)  # the live task view's outputs
    assert len(entries) == 1
    assert "could not read" not in json.dumps(entries)
    render(result)  # the live widget
    assert "gw-output" in output_html(output)  # the lasting face
    paths = download_outputs(result, root=tmp_path)  # kept on disk, no request made
    assert [path.read_bytes() for path in paths] == [expected]


def test_a_result_of_thousands_of_outputs_is_laid_out_to_the_grid_pages_cap() -> None:
    """A result listing 10,000 outputs was laid out whole by a job's faces: 2.4 MB of
    saved HTML making 10,000 image requests, 1.9 MB of widget state, 10,000 widgets. Every
    face lays out the first ``FACE_OUTPUTS`` (the grid page's cap, as many as the client
    downloads) and says how many more there are and where they all are."""
    cap = lasting.FACE_OUTPUTS
    total = cap + 40
    result = Result.from_body(
        {
            "request_id": "req-many",
            "status": "COMPLETED",
            "outputs": [
                {"url": f"https://cdn.example/{i}.png", "content_type": "image/png"}
                for i in range(total)
            ],
        },
        source=OutputFiles(),
    )
    said = "40 more outputs not shown"
    face = to_mimebundle(result)
    assert face["text/html"].count("<img") == cap and said in face["text/html"]
    lines = face["text/plain"].splitlines()
    assert len(lines) == cap + 1 and said in lines[-1]
    entries = result_entries(result)
    assert len(entries) == cap + 1 and said in entries[-1]["html"]
    widget = render(result, fetch=False)
    assert len(widget.children) == cap + 1 and said in widget.children[-1].value
    assert "result.outputs" in lines[-1]
