"""Downloads against a tiny real HTTP server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import hashlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from genwidgets.errors import DownloadError
from genwidgets.jobs.downloads import (
    DOWNLOAD_TRIES,
    MAX_OUTPUTS,
    download_outputs,
    download_outputs_async,
    extension_for,
    gateway_folder,
    output_dir,
)
from genwidgets.protocol.records import Result

PNG = b"\x89PNG\r\n\x1a\n" + os.urandom(5000)
BIG = os.urandom(300_000)


@dataclass
class Files:
    """What the server serves, and what it saw."""

    base: str = ""
    hits: dict[str, int] = field(default_factory=dict)
    headers: dict[str, dict[str, str]] = field(default_factory=dict)
    release: threading.Event = field(default_factory=threading.Event)


def make_handler(files: Files) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def send(self, body: bytes, content_type: str, length: int | None = None) -> None:
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body) if length is None else length))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            path = self.path.split("?")[0]
            files.hits[path] = files.hits.get(path, 0) + 1
            files.headers[path] = {k.lower(): v for k, v in self.headers.items()}
            if path == "/files/photo.jpg":  # the URL says .jpg, the content is PNG
                self.send(PNG, "image/png")
            elif path == "/files/untyped":  # a PNG served with no Content-Type at all
                self.send_response(200)
                self.send_header("Content-Length", str(len(PNG)))
                self.end_headers()
                self.wfile.write(PNG)
            elif path.startswith("/files/once-"):  # fails on its first request only
                status, _, extra = path.removeprefix("/files/once-").partition("-")
                if files.hits[path] == 1 and status == "reset":
                    self.close_connection = True  # the connection drops, no answer
                elif files.hits[path] == 1:
                    body = b'{"detail": "busy"}'
                    self.send_response(int(status))
                    if extra:
                        self.send_header("Retry-After", extra)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                else:
                    self.send(PNG, "image/png")
            elif path == "/files/truncated.bin":
                self.send(BIG[:1000], "application/octet-stream", length=len(BIG))
                self.close_connection = True
            elif path == "/files/big.bin":
                self.send(BIG, "application/octet-stream")
            elif path == "/files/slow.bin":
                self.send_response(200)
                self.send_header("Content-Type", "video/mp4")
                self.send_header("Content-Length", str(len(BIG)))
                self.end_headers()
                self.wfile.write(BIG[:100_000])
                self.wfile.flush()
                files.release.wait(10)
                self.wfile.write(BIG[100_000:])
            elif path == "/files/drip.bin":  # a byte at a time, until the test ends
                self.send_response(200)
                self.send_header("Content-Type", "image/png")
                self.send_header("Content-Length", "1000")
                self.end_headers()
                while not files.release.wait(0.05):
                    try:
                        self.wfile.write(b"x")
                        self.wfile.flush()
                    except OSError:
                        break
                self.close_connection = True
            else:
                body = b'{"detail": "Not Found"}'
                self.send_response(404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

    return Handler


@pytest.fixture
def server() -> Iterator[Files]:
    files = Files()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(files))
    httpd.daemon_threads = True
    files.base = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield files
    finally:
        files.release.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


def result_of(outputs: list[Any], request_id: str = "req-1") -> Result:
    return Result.from_body({"request_id": request_id, "status": "COMPLETED", "outputs": outputs})


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir()) if directory.exists() else []


@pytest.mark.parametrize(
    ("content_type", "ext"),
    [
        ("image/png", ".png"),
        ("image/jpeg", ".jpg"),
        ("IMAGE/WEBP; q=1", ".webp"),
        ("video/mp4", ".mp4"),
        ("audio/mpeg", ".mp3"),
        ("audio/wav", ".wav"),
        ("audio/flac", ".flac"),
        ("application/json; charset=utf-8", ".json"),
        ("text/plain", ".txt"),
        ("application/x-made-up", ".bin"),
        ("", ".bin"),
    ],
)
def test_extension_comes_from_the_content_type(content_type: str, ext: str) -> None:
    assert extension_for(content_type) == ext


def test_outputs_are_kept_by_gateway_and_request_id(tmp_path: Path) -> None:
    """docs/decisions.md#outputs-by-gateway: one id at two gateways, two folders."""
    one = output_dir("req-1", tmp_path, gateway="https://gw.example")
    other = output_dir("req-1", tmp_path, gateway="https://gw.example:8443")
    assert one != other and one.name == other.name == "req-1"
    assert one.parent.name == gateway_folder("https://gw.example")
    assert one.parent.name.startswith("gw.example-")
    assert other.parent.name.startswith("gw.example_8443-")
    assert output_dir("r", tmp_path, gateway="simulator") == tmp_path / "simulator" / "r"
    assert output_dir("r", tmp_path) == tmp_path / "r"  # by hand, no gateway: as before


def test_a_long_request_id_gets_a_short_folder_of_its_own(tmp_path: Path) -> None:
    first, second = "a" * 299 + "1", "a" * 299 + "2"
    one, two = output_dir(first, tmp_path), output_dir(second, tmp_path)
    assert one != two and len(one.name) <= 96 and len(two.name) <= 96
    escaped = output_dir("é" * 300, tmp_path)  # escapes triple a name's length
    assert len(escaped.name) <= 96
    result = result_of([{"content_type": "text/plain", "content": "kept"}], request_id=first)
    (path,) = download_outputs(result, root=tmp_path)
    assert path.read_text() == "kept" and path.parent == one


def test_two_request_ids_never_share_a_folder(tmp_path: Path) -> None:
    """Each escaped character is its UTF-8 bytes, percent-encoded: one-to-one (U+1F60
    then "0", and U+1F600, were both %1F600); ASCII keeps the escape it had."""
    assert output_dir("\u1f60" + "0", tmp_path) != output_dir("\U0001f600", tmp_path)
    assert output_dir("\U0001f600", tmp_path).name == "%F0%9F%98%80"
    assert output_dir("a b/%~", tmp_path).name == "a%20b%2F%25%7E"


def test_request_ids_cannot_escape_the_root(tmp_path: Path) -> None:
    assert output_dir("abc-123_x.y", tmp_path) == tmp_path / "abc-123_x.y"
    for hostile in ("../../etc", "..", "a/b", "/abs"):
        target = output_dir(hostile, tmp_path)
        assert target.parent == tmp_path and target.name not in ("..", ".")


@pytest.mark.timeout(30)
def test_extension_from_content_type_even_when_the_url_says_jpg(
    server: Files, tmp_path: Path
) -> None:
    result = result_of(
        [{"url": f"{server.base}/files/photo.jpg", "content_type": "image/png", "file_size": 5008}]
    )
    saved: list[tuple[int, Path]] = []
    paths = download_outputs(result, root=tmp_path, on_saved=lambda i, p: saved.append((i, p)))
    target = tmp_path / "req-1" / "0.png"
    assert paths == [target] and saved == [(0, target)]
    assert target.read_bytes() == PNG
    assert result.outputs[0].path == target
    assert leftovers(tmp_path / "req-1") == ["0.png"]


@pytest.mark.timeout(30)
def test_default_root_is_home_outputs(
    server: Files, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path / "home"))
    result = result_of([{"url": f"{server.base}/files/photo.jpg", "content_type": "image/png"}])
    (path,) = download_outputs(result)
    assert path == tmp_path / "home" / "outputs" / "req-1" / "0.png"


@pytest.mark.timeout(30)
def test_truncated_body_is_an_error_and_leaves_no_file(server: Files, tmp_path: Path) -> None:
    result = result_of(
        [
            {"url": f"{server.base}/files/truncated.bin", "content_type": "video/mp4"},
            {"url": f"{server.base}/files/photo.jpg", "content_type": "image/png"},
        ],
        request_id="cut-1",
    )
    with pytest.raises(DownloadError) as caught:
        download_outputs(result, root=tmp_path)
    message = str(caught.value)
    assert "output 0 (video/mp4)" in message and "request_id cut-1" in message
    assert "/files/truncated.bin" in message and "1 of 2 outputs" in message
    assert caught.value.failures[0][0] == 0 and caught.value.request_id == "cut-1"
    # the good output was still saved; the cut one left nothing, not even a .part file
    assert leftovers(tmp_path / "cut-1") == ["1.png"]
    assert result.outputs[0].path is None and result.outputs[1].path == tmp_path / "cut-1/1.png"


@pytest.mark.timeout(30)
def test_a_record_size_that_differs_keeps_the_file_and_says_so(
    server: Files, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """docs/decisions.md#downloads: Content-Length checked the transfer; a record's
    ``file_size`` that differs (a CDN that re-encodes, other units) is said, not a
    reason to throw the paid output away, unless the record's own sha256 differs too."""
    url = f"{server.base}/files/photo.jpg"
    result = result_of([{"url": url, "content_type": "image/png", "file_size": 99}])
    with caplog.at_level("WARNING", logger="genwidgets"):
        (path,) = download_outputs(result, root=tmp_path)
    assert path.read_bytes() == PNG and result.outputs[0].path == path
    assert "the record says 99 bytes, the server sent 5008; kept" in caplog.text
    wrong = {"url": url, "content_type": "image/png", "file_size": 99, "sha256": "0" * 64}
    with pytest.raises(DownloadError, match="the record says 99 bytes, the server sent 5008"):
        download_outputs(result_of([wrong], request_id="r2"), root=tmp_path)
    assert leftovers(tmp_path / "r2") == []
    right = {**wrong, "sha256": hashlib.sha256(PNG).hexdigest()}
    assert download_outputs(result_of([right], request_id="r3"), root=tmp_path)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("variant", ["blocking", "async"])
def test_an_untyped_output_is_recorded_where_its_file_was_written(
    server: Files, tmp_path: Path, variant: str
) -> None:
    """No content_type in the record, none served: the bytes tell the type, and the
    path given, recorded and set on the output is the file written (it named 0.png
    while the file was 0.bin)."""
    result = result_of([{"url": f"{server.base}/files/untyped"}], request_id=variant)
    saved: list[Path] = []

    async def run() -> list[Path]:
        async with httpx.AsyncClient() as http:
            return await download_outputs_async(
                result, client=http, root=tmp_path, on_saved=lambda i, p: saved.append(p)
            )

    if variant == "blocking":
        paths = download_outputs(result, root=tmp_path, on_saved=lambda i, p: saved.append(p))
    else:
        paths = asyncio.run(run())
    output = result.outputs[0]
    assert output.content_type == "image/png" and output.path is not None
    assert paths == saved == [output.path] == [tmp_path / variant / "0.png"]
    assert output.path.read_bytes() == PNG
    assert leftovers(tmp_path / variant) == ["0.png"]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("variant", ["blocking", "async"])
def test_a_file_hosts_403_404_and_410_are_expired_urls(
    server: Files, tmp_path: Path, variant: str
) -> None:
    """docs/decisions.md#copies-pending: those answers say the URL has expired, named in
    ``DownloadError.expired`` (the ledger gives their copy up); a 503 is not one."""
    names = ["once-403", "missing", "once-410", "once-503"]
    result = result_of(
        [{"url": f"{server.base}/files/{name}", "content_type": "image/png"} for name in names],
        request_id=variant,
    )

    async def run() -> list[Path]:
        async with httpx.AsyncClient() as http:
            return await download_outputs_async(result, client=http, root=tmp_path)

    with pytest.raises(DownloadError) as caught:
        download_outputs(result, root=tmp_path) if variant == "blocking" else asyncio.run(run())
    assert caught.value.expired == (0, 1, 2)
    assert all("an expired link" in reason for _, reason in caught.value.failures)
    assert result.outputs[3].path is not None


@pytest.mark.timeout(60)
@pytest.mark.parametrize("variant", ["blocking", "async"])
def test_a_transient_failure_is_tried_again(server: Files, tmp_path: Path, variant: str) -> None:
    """A 503, a 429 (with a short Retry-After), a 408 or a dropped connection on the
    first request is tried again (a paid output was lost to one 503); a 403 is not,
    nor a 429 that asks for longer than MAX_RETRY_AFTER_S."""
    names = ["once-503", "once-429-0", "once-408", "once-reset", "once-403", "once-429-3600"]
    result = result_of(
        [{"url": f"{server.base}/files/{name}", "content_type": "image/png"} for name in names],
        request_id=variant,
    )

    async def run() -> list[Path]:
        async with httpx.AsyncClient() as http:
            return await download_outputs_async(result, client=http, root=tmp_path)

    with pytest.raises(DownloadError) as caught:
        download_outputs(result, root=tmp_path) if variant == "blocking" else asyncio.run(run())
    assert [index for index, _ in caught.value.failures] == [4, 5]
    assert "HTTP 403" in caught.value.failures[0][1]
    assert [server.hits[f"/files/{name}"] for name in names] == [2, 2, 2, 2, 1, 1]
    assert [o.path.read_bytes() if o.path else None for o in result.outputs[:4]] == [PNG] * 4


@pytest.mark.timeout(30)
def test_the_tries_end_and_say_so(server: Files, tmp_path: Path) -> None:
    """A download failing every time stops after DOWNLOAD_TRIES tries and says it."""
    result = result_of([{"url": f"{server.base}/files/truncated.bin", "content_type": "video/mp4"}])
    with pytest.raises(DownloadError, match=f"{DOWNLOAD_TRIES} tries"):
        download_outputs(result, root=tmp_path)
    assert server.hits["/files/truncated.bin"] == DOWNLOAD_TRIES


def test_the_outputs_of_one_result_are_capped_in_number_and_bytes(tmp_path: Path) -> None:
    """A result listing more outputs than any endpoint makes (a buggy or hostile
    gateway) saves MAX_OUTPUTS of them; the others are failures that say why, never
    dropped in silence. The bytes of one result are capped as well."""
    many = [{"content_type": "text/plain", "content": f"{i}"} for i in range(MAX_OUTPUTS + 3)]
    result = result_of(many)
    with pytest.raises(DownloadError) as caught:
        download_outputs(result, root=tmp_path)
    assert [index for index, _ in caught.value.failures] == [MAX_OUTPUTS + i for i in range(3)]
    assert f"at most max_outputs={MAX_OUTPUTS}" in caught.value.failures[0][1]
    said = f"3 outputs, {MAX_OUTPUTS} to {MAX_OUTPUTS + 2}: not downloaded: the result lists"
    assert said in str(caught.value)  # one line for them all
    assert len(leftovers(tmp_path / "req-1")) == MAX_OUTPUTS
    assert result.outputs[MAX_OUTPUTS].path is None

    blob = {"content_type": "application/octet-stream", "encoding": "hex", "content": "ab" * 4000}
    heavy = result_of([blob] * 4, request_id="heavy")
    with pytest.raises(DownloadError) as caught:
        download_outputs(heavy, root=tmp_path, max_total_bytes=10_000)
    reasons = dict(caught.value.failures)
    assert sorted(reasons) == [2, 3]
    assert "larger than the 2000 bytes left of max_total_bytes=10000" in reasons[2]
    assert len(leftovers(tmp_path / "heavy")) == 2
    with pytest.raises(ValueError, match="max_outputs must be a positive int"):
        download_outputs(heavy, root=tmp_path, max_outputs=0)


@pytest.mark.timeout(30)
def test_max_bytes_is_enforced_before_and_while_reading(server: Files, tmp_path: Path) -> None:
    result = result_of([{"url": f"{server.base}/files/big.bin", "content_type": "video/mp4"}])
    with pytest.raises(DownloadError, match="larger than max_bytes=1000"):
        download_outputs(result, root=tmp_path, max_bytes=1000)
    with pytest.raises(DownloadError, match="larger than max_bytes=10"):
        download_outputs(result, root=tmp_path, fetch=lambda url: b"x" * 11, max_bytes=10)
    assert leftovers(tmp_path / "req-1") == []
    with pytest.raises(ValueError, match="max_bytes must be a positive int"):
        download_outputs(result, root=tmp_path, max_bytes=0)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("bad", ["http://127.0.0.1:99999/x.png", "http://[::1/x.png"])
def test_a_malformed_output_url_fails_that_output_alone(
    server: Files, tmp_path: Path, bad: str
) -> None:
    """A URL a gateway gave that cannot even be asked for (a port of 99999, an odd host)
    is that output's failure, typed and named; the next output is fetched all the same
    (it stopped every output after it, with a bare ValueError)."""
    good = {"url": f"{server.base}/files/photo.jpg", "content_type": "image/png"}
    result = result_of([{"url": bad, "content_type": "image/png"}, good], request_id="r-bad")
    with pytest.raises(DownloadError) as caught:
        download_outputs(result, root=tmp_path)
    assert [index for index, _ in caught.value.failures] == [0]
    assert server.hits.get("/files/photo.jpg") == 1

    async def on_the_loop() -> list[Path]:  # as the client's recorder fetches a result
        async with httpx.AsyncClient() as client:
            return await download_outputs_async(result, client=client, root=tmp_path / "a")

    with pytest.raises(DownloadError) as caught:
        asyncio.run(on_the_loop())
    assert [index for index, _ in caught.value.failures] == [0]
    assert server.hits.get("/files/photo.jpg") == 2
    with pytest.raises(DownloadError, match="could not read output 0"):
        result.outputs[0].read()


def test_http_errors_name_the_output_and_hide_the_key(
    server: Files, tmp_path: Path, known_key: Callable[[str], str]
) -> None:
    key = known_key("sk-live-" + os.urandom(8).hex())
    url = f"{server.base}/files/{key}/gone.png?sig={key}"
    result = result_of([{"url": url, "content_type": "image/png"}], request_id="r-404")
    with pytest.raises(DownloadError) as caught:
        download_outputs(result, root=tmp_path)
    message = str(caught.value)
    assert "HTTP 404" in message and "output 0 (image/png)" in message and "r-404" in message
    assert key not in message and key not in repr(caught.value.failures)
    assert "sig=" not in message


@pytest.mark.timeout(30)
def test_write_is_atomic_while_downloading(server: Files, tmp_path: Path) -> None:
    result = result_of([{"url": f"{server.base}/files/slow.bin", "content_type": "video/mp4"}])
    directory = tmp_path / "req-1"
    outcome: list[Any] = []
    worker = threading.Thread(
        target=lambda: outcome.append(download_outputs(result, root=tmp_path)), daemon=True
    )
    worker.start()
    deadline = time.monotonic() + 10
    while not any(n.endswith(".part") for n in leftovers(directory)):
        assert time.monotonic() < deadline, "no temporary file appeared"
        time.sleep(0.01)
    # half the body has arrived: the final name does not exist yet
    assert not (directory / "0.mp4").exists()
    server.release.set()
    worker.join(10)
    assert outcome == [[directory / "0.mp4"]]
    assert (directory / "0.mp4").read_bytes() == BIG
    assert leftovers(directory) == ["0.mp4"]


@pytest.mark.timeout(30)
def test_a_failed_redownload_keeps_the_earlier_complete_copy(server: Files, tmp_path: Path) -> None:
    directory = tmp_path / "req-1"
    directory.mkdir()
    (directory / "0.bin").write_bytes(b"earlier copy")
    # the record says a size the existing file does not have, so it is fetched again
    result = result_of(
        [
            {
                "url": f"{server.base}/files/truncated.bin",
                "content_type": "application/octet-stream",
                "file_size": len(BIG),
            }
        ]
    )
    with pytest.raises(DownloadError):
        download_outputs(result, root=tmp_path)
    assert (directory / "0.bin").read_bytes() == b"earlier copy"
    assert leftovers(directory) == ["0.bin"]


@pytest.mark.timeout(30)
def test_a_file_in_place_is_used_only_when_this_output_wrote_it(
    server: Files, tmp_path: Path
) -> None:
    """docs/decisions.md#outputs-by-gateway: a file someone else left (another task of
    the same id, another gateway, a planted file of the right size) is fetched over."""
    entry = {"url": f"{server.base}/files/photo.jpg", "content_type": "image/png"}
    sized = {**entry, "file_size": len(PNG)}
    first = result_of([sized])
    download_outputs(first, root=tmp_path)
    assert server.hits["/files/photo.jpg"] == 1
    assert first.outputs[0].sha256 == hashlib.sha256(PNG).hexdigest()
    assert download_outputs(first, root=tmp_path) == [tmp_path / "req-1" / "0.png"]
    assert server.hits["/files/photo.jpg"] == 1  # the same output wrote it: used
    (tmp_path / "req-1" / "0.png").write_bytes(b"x" * len(PNG))  # planted, right size
    again = result_of([sized])
    assert download_outputs(again, root=tmp_path) == [tmp_path / "req-1" / "0.png"]
    assert server.hits["/files/photo.jpg"] == 2  # another output: never trusted
    assert (tmp_path / "req-1" / "0.png").read_bytes() == PNG
    (tmp_path / "req-1" / "0.png").write_bytes(b"changed since")
    download_outputs(first, root=tmp_path)  # its own file, changed: fetched again
    assert server.hits["/files/photo.jpg"] == 3
    assert (tmp_path / "req-1" / "0.png").read_bytes() == PNG


def test_inline_hex_content_is_written_without_any_request(tmp_path: Path) -> None:
    audio = b"ID3" + os.urandom(2000)
    json_record = '{"GroupId": "g-7"}'
    result = result_of(
        [
            {"content_type": "audio/mpeg", "encoding": "hex", "content": audio.hex()},
            {
                "url": "http://127.0.0.1:9/never",
                "content_type": "application/json",
                "content": json_record,
            },
            {"url": "data:text/plain;base64,aGVsbG8=", "content_type": "text/plain"},
        ]
    )

    def no_network(url: str) -> bytes:
        raise AssertionError(f"fetched {url}")

    paths = download_outputs(result, root=tmp_path, fetch=no_network)
    directory = tmp_path / "req-1"
    assert paths == [directory / "0.mp3", directory / "1.json", directory / "2.txt"]
    assert paths[0].read_bytes() == audio
    assert paths[1].read_text() == json_record
    assert paths[2].read_bytes() == b"hello"


def test_fetch_callable_and_its_errors(tmp_path: Path) -> None:
    seen: list[str] = []

    def fetch(url: str) -> bytes:
        seen.append(url)
        if url.endswith("/bad"):
            raise ConnectionError("connection refused")
        return b"video-bytes"

    result = result_of(
        [
            {"url": "https://cdn.example/a.webm", "content_type": "video/mp4"},
            {"url": "https://cdn.example/bad", "content_type": "image/webp"},
            {"url": "file:///etc/passwd", "content_type": "text/plain"},
            {"content_type": "image/png"},
        ]
    )
    with pytest.raises(DownloadError) as caught:
        download_outputs(result, root=tmp_path, fetch=fetch)
    message = str(caught.value)
    assert "3 of 4 outputs" in message
    assert "output 1 (image/webp) from https://cdn.example/bad: fetch failed: " in message
    assert "ConnectionError: connection refused" in message
    assert "unsupported URL scheme 'file'" in message
    assert "neither a URL nor inline content" in message
    assert seen == ["https://cdn.example/a.webm", "https://cdn.example/bad"]
    assert (tmp_path / "req-1" / "0.mp4").read_bytes() == b"video-bytes"
    assert [i for i, _ in caught.value.failures] == [1, 2, 3]


def test_a_result_without_request_id_is_refused(tmp_path: Path) -> None:
    result = Result.from_body({"status": "COMPLETED", "outputs": []})
    with pytest.raises(ValueError, match="no request_id"):
        download_outputs(result, root=tmp_path)


@pytest.mark.timeout(30)
def test_async_variant_streams_with_the_client_but_never_sends_its_credentials(
    server: Files, tmp_path: Path
) -> None:
    result = result_of(
        [
            {"url": f"{server.base}/files/big.bin", "content_type": "video/mp4"},
            {"content_type": "audio/wav", "encoding": "hex", "content": "52494646"},
            {"url": f"{server.base}/files/truncated.bin", "content_type": "video/mp4"},
        ],
        request_id="async-1",
    )

    async def run() -> list[Path]:
        headers = {"Authorization": "Bearer sim-demo-key", "X-Api-Key": "k", "X-Other": "1"}
        async with httpx.AsyncClient(headers=headers, auth=("user", "pw")) as client:
            return await download_outputs_async(result, client=client, root=tmp_path)

    with pytest.raises(DownloadError, match=r"output 2 \(video/mp4\).*truncated\.bin"):
        asyncio.run(run())
    directory = tmp_path / "async-1"
    assert leftovers(directory) == ["0.mp4", "1.wav"]
    assert (
        hashlib.sha256((directory / "0.mp4").read_bytes()).digest() == hashlib.sha256(BIG).digest()
    )
    assert (directory / "1.wav").read_bytes() == b"RIFF"
    sent = server.headers["/files/big.bin"]
    assert "authorization" not in sent and "x-api-key" not in sent
    assert sent.get("x-other") == "1"  # the client's other settings still apply


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_a_dripping_download_ends_in_a_download_error_at_its_deadline(
    server: Files, tmp_path: Path
) -> None:
    """Issue 29 point 3: each read arrives in time; the whole never would."""
    result = result_of([{"url": f"{server.base}/files/drip.bin", "content_type": "image/png"}])
    with pytest.raises(DownloadError, match="within the deadline"):
        download_outputs(result, root=tmp_path, timeout=0.5)
    with pytest.raises(DownloadError, match="within the deadline"):

        async def streamed() -> list[Path]:
            async with httpx.AsyncClient() as http:
                return await download_outputs_async(result, client=http, root=tmp_path, timeout=0.5)

        asyncio.run(streamed())
    assert leftovers(tmp_path / "req-1") == []


def _two_hosts(
    down: type[httpx.TransportError], clock: list[float] | None = None, step: float = 0.0
) -> tuple[httpx.MockTransport, dict[str, int]]:
    """``down.test`` that never answers in time (``down`` raised at once) and ``up.test``
    that serves every file; each request moves ``clock`` on by ``step``."""
    hits = {"down.test": 0, "up.test": 0}

    def handle(request: httpx.Request) -> httpx.Response:
        hits[request.url.host] += 1
        if clock is not None:
            clock[0] += step
        if request.url.host == "down.test":
            raise down("no answer", request=request)
        return httpx.Response(200, content=PNG, headers={"Content-Type": "image/png"})

    return httpx.MockTransport(handle), hits


@pytest.mark.parametrize("down", [httpx.ReadTimeout, httpx.ConnectTimeout, httpx.ConnectError])
def test_a_file_host_that_proved_down_is_not_waited_on_once_per_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, down: type[httpx.TransportError]
) -> None:
    """A finished task's ``job.result()`` waits for its outputs' copies, which went one
    after another, each for its whole deadline: a file host down behind its load
    balancer held the result 160 x 30 s. Once an output's tries met no answer, the others
    at that host are given up at once (copies pending), in one line; another host's are
    fetched."""
    from genwidgets.jobs import downloads

    monkeypatch.setattr(downloads, "backoff_delay", lambda attempt, rng=None: 0.0)
    transport, hits = _two_hosts(down)
    outputs = [
        {"url": f"https://down.test/{i}.png", "content_type": "image/png"} for i in range(12)
    ]
    outputs.append({"url": "https://up.test/a.png", "content_type": "image/png"})

    async def run() -> list[Path]:
        async with httpx.AsyncClient(transport=transport) as http:
            return await download_outputs_async(
                result_of(outputs), client=http, root=tmp_path, timeout=30
            )

    with pytest.raises(DownloadError) as raised:
        asyncio.run(run())
    assert hits["down.test"] == DOWNLOAD_TRIES  # the first output's tries, no more
    assert hits["up.test"] == 1
    assert sorted(i for i, _ in raised.value.failures) == list(range(12))
    assert not raised.value.expired and not raised.value.capped  # pending, tried again later
    assert "11 outputs, 1 to 11: not tried" in str(raised.value)
    assert leftovers(tmp_path / "req-1") == ["12.png"]


def test_a_results_downloads_share_one_deadline(tmp_path: Path) -> None:
    """Each output had a deadline of its own, none the result: 160 answers each just in
    time held ``job.result()`` 160 x ``timeout``. A result's downloads end together within
    two timeouts (plus the time their bytes take): the rest are copies pending."""
    clock = [0.0]
    transport, hits = _two_hosts(httpx.ReadTimeout, clock, step=7.0)  # 0.7 of the timeout
    outputs = [{"url": f"https://up.test/{i}.png", "content_type": "image/png"} for i in range(8)]

    async def run() -> list[Path]:
        async with httpx.AsyncClient(transport=transport) as http:
            return await download_outputs_async(
                result_of(outputs), client=http, root=tmp_path, timeout=10, clock=lambda: clock[0]
            )

    with pytest.raises(DownloadError, match="not tried: the downloads of this result") as raised:
        asyncio.run(run())
    assert hits["up.test"] == 3  # 0 s, 7 s, 14 s: each began within 2 x 10 s
    assert sorted(i for i, _ in raised.value.failures) == list(range(3, 8))
    assert leftovers(tmp_path / "req-1") == ["0.png", "1.png", "2.png"]


def test_alike_failures_say_the_same_words_with_no_private_class_and_are_grouped(
    tmp_path: Path,
) -> None:
    """Each output's failure named a private class (``_TooSlow``) and the deadline left
    to the microsecond (``0.199996 s``), which differed per output: 160 alike failures
    made 160 clauses, never grouped. They say the download's deadline as set, in words."""

    async def handle(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(60)  # never in time: the deadline cancels it
        return httpx.Response(200)

    outputs = [
        {"url": f"https://{host}.test/0.png", "content_type": "image/png"} for host in "abc"
    ]

    async def run() -> list[Path]:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handle)) as http:
            return await download_outputs_async(
                result_of(outputs), client=http, root=tmp_path, timeout=0.2, clock=lambda: 0.0
            )

    with pytest.raises(DownloadError) as raised:
        asyncio.run(run())
    said = str(raised.value)
    reasons = {reason for _, reason in raised.value.failures}
    assert len(raised.value.failures) == 3 and len(reasons) == 1, reasons
    assert "3 outputs, 0 to 2: no whole answer within the deadline (0.2 s," in said
    assert "_TooSlow" not in said and "Slow" not in said
