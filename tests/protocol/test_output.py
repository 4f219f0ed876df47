"""An output's bytes (issue 29 points 2, 4, 6): kept in memory within one budget, a
failed read is a typed error; the local copy, the download and a save are its source's
(issue 32 point 7), the output does none of them itself."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from loopback import LoopbackServer, OneTaskGateway

import genwidgets as gw
from genwidgets.errors import DownloadError
from genwidgets.protocol.output import CACHE_BUDGET, CACHE_ONE, Output, cache_budget


class Source:
    """An output source in memory: a local copy or none, a URL that answers ``served``
    (or raises what ``refuse`` makes), saves kept in ``written``; every call counted."""

    def __init__(
        self,
        served: bytes = b"",
        *,
        copy: bytes | None = None,
        refuse: Exception | None = None,
    ) -> None:
        self.served, self.copy, self.refuse = served, copy, refuse
        self.fetched: list[str] = []
        self.written: dict[Path, bytes] = {}

    def local_copy(self, output: Output) -> bytes | None:
        return self.copy

    def local_size(self, output: Output) -> int | None:
        return None if self.copy is None else len(self.copy)

    def fetch(self, url: str, max_bytes: int) -> bytes:
        self.fetched.append(url)
        if self.refuse is not None:
            raise self.refuse
        return self.served

    def write(self, target: Path, data: bytes) -> None:
        self.written[target] = data


def fetched(data: bytes) -> Output:
    return Output("application/octet-stream", url="https://cdn.example/x", _source=Source(data))


def test_what_reads_keep_in_memory_stays_within_one_budget() -> None:
    size = CACHE_ONE // 2
    outputs = [fetched(bytes([i]) * size) for i in range(2 * CACHE_BUDGET // size)]
    for i, output in enumerate(outputs):
        assert output.read()[:1] == bytes([i])
    assert cache_budget.held <= CACHE_BUDGET
    kept = [o.in_hand() for o in outputs if o.in_hand() is not None]
    assert 0 < sum(len(data or b"") for data in kept) <= CACHE_BUDGET
    assert outputs[0].in_hand() is None and outputs[-1].in_hand() is not None  # oldest let go
    assert outputs[0].read() == bytes([0]) * size  # read again when asked


def test_one_output_over_its_share_is_never_kept() -> None:
    big = fetched(b"x" * (CACHE_ONE + 1))
    assert len(big.read()) == CACHE_ONE + 1 and big.in_hand() is None


def test_a_collected_output_gives_its_share_back() -> None:
    before = cache_budget.held
    output = fetched(b"y" * 1000)
    output.read()
    assert cache_budget.held >= 1000 or before + 1000 > CACHE_BUDGET
    held = cache_budget.held
    del output
    gc.collect()
    assert cache_budget.held == held - 1000


def test_the_local_copy_its_source_vouches_for_comes_before_the_record() -> None:
    source = Source(b"from the url", copy=b"kept")
    output = Output(
        "text/plain", url="https://cdn.example/a.txt", raw={"content": "inline"}, _source=source
    )
    assert output.read() == b"kept" and output.size() == 4 and source.fetched == []
    source.copy = None
    recorded = Output(
        "text/plain", url="https://cdn.example/a.txt", raw={"content": "inline"}, _source=source
    )
    assert recorded.read() == b"inline" and source.fetched == []  # the record's own bytes
    bare = Output("text/plain", url="https://cdn.example/a.txt", _source=source)
    assert bare.read() == b"from the url" and source.fetched == ["https://cdn.example/a.txt"]


def test_a_save_gets_the_types_extension_and_is_written_by_the_source(tmp_path: Path) -> None:
    source = Source(b"\x89PNG bytes")
    output = Output("image/png", url="https://cdn.example/0", _source=source)
    assert output.save(tmp_path / "out-0") == tmp_path / "out-0.png"
    assert output.save(tmp_path / "named.bin") == tmp_path / "named.bin"  # its own suffix kept
    assert source.written == {
        tmp_path / "out-0.png": b"\x89PNG bytes",
        tmp_path / "named.bin": b"\x89PNG bytes",
    }
    assert list(tmp_path.iterdir()) == []  # the output itself wrote nothing
    assert source.fetched == ["https://cdn.example/0"]  # read once, then from memory
    typed = Output("image/png; charset=binary", raw={"content": "x"}, _source=source)
    assert typed.save(str(tmp_path / "still")) == tmp_path / "still.png"  # its type's parameters


def test_a_save_into_a_folder_names_the_file_and_a_failure_names_the_path(
    tmp_path: Path,
) -> None:
    """``save("shots/")`` wrote ``shots.png`` beside the folder; a refused write named
    the hidden temporary file; an empty path was ``PosixPath('.') has an empty name``."""
    source = Source(b"\x89PNG bytes")
    output = Output("image/png", url="https://cdn.example/0", index=2, _source=source)
    (tmp_path / "shots").mkdir()
    assert output.save(tmp_path / "shots") == tmp_path / "shots" / "output-2.png"
    assert output.save(f"{tmp_path / 'later'}/") == tmp_path / "later" / "output-2.png"
    with pytest.raises(ValueError, match="a file name or a folder"):
        output.save("")

    class Refused(Source):
        def write(self, target: Path, data: bytes) -> None:
            raise PermissionError(13, "Permission denied", str(target.parent / ".x.part"))

    refused = Output("image/png", raw={"content": "x"}, _source=Refused(b""))
    with pytest.raises(PermissionError) as caught:
        refused.save(tmp_path / "kite.png")
    said = str(caught.value)
    assert f"cannot save output 0 as {tmp_path / 'kite.png'}" in said and ".part" not in said


def test_a_failed_read_is_a_download_error_without_the_key(
    known_key: Callable[[str], str],
) -> None:
    key = known_key("sk-read-fail-0123456789")
    url = f"https://cdn.example/{key}/x.png?sig={key}"
    request = httpx.Request("GET", url)
    refuse = httpx.HTTPStatusError(f"404 for {url}", request=request, response=httpx.Response(404))
    output = Output("image/png", url=url, _source=Source(refuse=refuse))
    with pytest.raises(DownloadError, match="could not read output 0") as caught:
        output.read()
    assert key not in str(caught.value) and key not in repr(caught.value.failures)
    assert "sig=" not in str(caught.value)


class BigOutput(OneTaskGateway):
    """A gateway whose one task is done with one output of :attr:`body` at ``/big``."""

    body = bytes(range(256)) * (5 * 2**20 // 256)  # 5 MiB

    def do_GET(self) -> None:
        if self.path == "/big":
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(self.body)))
            self.end_headers()
            self.wfile.write(self.body)
            return
        big = {"url": f"http://{self.headers['Host']}/big", "content_type": "application/zip"}
        self.send_json({"request_id": "r1", "status": "COMPLETED", "outputs": [big]})


@pytest.mark.parametrize("through", ["a client", "no client"])
def test_a_read_holds_its_bytes_once(through: str, tmp_path: Path) -> None:
    """A read gathers the body in one buffer: its peak is about the body, not the
    chunks received and their join besides (twice the body: a read near its 2 GiB cap
    held over 4 GiB)."""
    gateway = LoopbackServer(BigOutput)
    size = len(BigOutput.body)
    try:
        with gw.Client(gateway.base, "key", ledger=False, download=False) as client:
            if through == "a client":  # its gateway's download, on the client's engine
                output = client.submit("genW2.5-t2i-preview", {"prompt": "x"}).result(60)
                [output] = output.outputs
            else:  # a record's own: a plain download
                output = Output("application/zip", url=f"{gateway.base}/big")
            tracemalloc.start()
            try:
                data = output.read(max_bytes=2 * size)
                peak = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
    finally:
        gateway.close()
    assert data == BigOutput.body
    assert peak < 1.3 * size
