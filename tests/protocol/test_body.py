"""Reading gateway bytes (issue 29 points 3, 4, 6, 7): capped while read, inflated within
bounds, on a total deadline, parsed shallowly and redacted."""

from __future__ import annotations

import asyncio
import gzip
import json
import tracemalloc
import zlib
from collections.abc import AsyncIterator, Callable
from functools import cache

import httpx
import pytest

from genwidgets.protocol.body import (
    MAX_DEPTH,
    RATIO_FLOOR,
    Answer,
    Deadline,
    Stopwatch,
    read_answer,
    read_capped,
    within,
)

pytestmark = pytest.mark.timeout(60)


class Chunks(httpx.AsyncByteStream):
    """A response body served chunk by chunk (never read ahead), counting what was
    pulled; ``pause`` seconds between chunks."""

    def __init__(self, chunks: Callable[[], AsyncIterator[bytes]] | list[bytes]) -> None:
        self._chunks = chunks
        self.pulled = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        source = self._chunks() if callable(self._chunks) else _listed(self._chunks)
        async for chunk in source:
            self.pulled += len(chunk)
            yield chunk


async def _listed(chunks: list[bytes]) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


def streamed(body: Chunks, **headers: str) -> httpx.Response:
    request = httpx.Request("GET", "http://127.0.0.1:1/v1/queue/ep/requests/r/status")
    return httpx.Response(200, headers=headers, stream=body, request=request)


@cache
def bomb(size: int = 256 * 2**20) -> bytes:
    """``size`` zero bytes, gzipped (about 1/1000 of it)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = bytes(2**20)
    parts = [packer.compress(block) for _ in range(size // len(block))]
    return b"".join([*parts, packer.flush()])


def pieces(data: bytes, size: int = 16 * 1024) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


@pytest.mark.slow
def test_a_gzip_bomb_is_refused_early_within_a_small_memory_bound() -> None:
    body = Chunks(pieces(bomb()))
    tracemalloc.start()
    try:
        with pytest.raises(httpx.TransportError, match="compression bomb"):
            asyncio.run(read_capped(streamed(body, **{"content-encoding": "gzip"}), 2**30))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * RATIO_FLOOR, peak  # 256 MiB inflated would be 256 MiB
    assert body.pulled < len(bomb()) // 4  # refused long before the end


def test_a_body_over_its_cap_is_refused_while_read_not_after() -> None:
    async def endless() -> AsyncIterator[bytes]:
        while True:
            yield b"x" * 65536

    body = Chunks(endless)  # a 300 MB status body would never end sooner
    with pytest.raises(httpx.TransportError, match="larger than 1,048,576 bytes"):
        asyncio.run(read_capped(streamed(body), 2**20))
    assert body.pulled <= 2**20 + 65536


def test_a_declared_length_over_the_cap_is_refused_before_any_byte() -> None:
    body = Chunks([b"{}"])
    with pytest.raises(httpx.TransportError, match="Content-Length"):
        asyncio.run(read_capped(streamed(body, **{"content-length": str(10**9)}), 2**20))
    assert body.pulled == 0


def test_an_answer_over_its_cap_keeps_its_status_and_says_why() -> None:
    answer = asyncio.run(read_answer(streamed(Chunks([b"x" * 5000])), 1000))
    assert answer.status_code == 200 and answer.content == b"" and answer.json() is None
    assert "larger than 1,000 bytes" in answer.describe()


@pytest.mark.parametrize(
    ("encoding", "packed"),
    [
        ("gzip", gzip.compress(b'{"a": 1}', mtime=0)),
        ("deflate", zlib.compress(b'{"a": 1}')),
        ("deflate", zlib.compress(b'{"a": 1}')[2:-4]),  # raw deflate, no zlib header
        ("gzip, gzip", gzip.compress(gzip.compress(b'{"a": 1}', mtime=0), mtime=0)),
        ("identity", b'{"a": 1}'),
    ],
)
def test_gzip_and_deflate_are_inflated(encoding: str, packed: bytes) -> None:
    response = streamed(Chunks(pieces(packed, 3)), **{"content-encoding": encoding})
    assert asyncio.run(read_answer(response)).json() == {"a": 1}


@pytest.mark.parametrize(
    ("encoding", "says"),
    [("br", "which the client does not read"), ("gzip, gzip, gzip", "3 times over")],
)
def test_other_encodings_are_refused(encoding: str, says: str) -> None:
    answer = asyncio.run(read_answer(streamed(Chunks([b"xx"]), **{"content-encoding": encoding})))
    assert answer.json() is None and says in answer.describe()


def test_a_dripping_answer_ends_at_its_deadline() -> None:
    async def drip() -> AsyncIterator[bytes]:
        while True:  # a byte every 50 ms, for ever: each read is quick, the whole never
            await asyncio.sleep(0.05)
            yield b" "

    async def read() -> bytes:
        async with within(Deadline(0.3)) as watch:
            return await read_capped(streamed(Chunks(drip)), 2**20, watch)

    with pytest.raises(httpx.TransportError, match="within the deadline"):
        asyncio.run(read())


def test_the_deadline_grows_with_the_bytes_received() -> None:
    async def steady() -> AsyncIterator[bytes]:
        for _ in range(40):  # 40 chunks of 64 KiB, each earning 2 s at 32 KiB/s
            await asyncio.sleep(0.01)
            yield b"x" * 65536

    async def read() -> int:
        async with within(Deadline(0.3)) as watch:
            return len(await read_capped(streamed(Chunks(steady)), 2**30, watch))

    assert asyncio.run(read()) == 40 * 65536


def test_a_blocking_reads_deadline_grows_with_the_bytes_and_ends_past_it() -> None:
    """The blocking reads' :class:`Stopwatch`, on an injected clock: 1 s of grace, plus
    1 s per 32 KiB received; checked as each chunk arrives."""
    now = [0.0]
    watch = Stopwatch(Deadline(1.0), clock=lambda: now[0])
    now[0] = 2.5
    watch.progress(64 * 1024)  # 2 s earned by 64 KiB: 3 s allowed
    with pytest.raises(httpx.TransportError, match=r"within the deadline \(1 s, plus 1 s per 32"):
        watch.progress(32 * 1024)  # 2 s allowed for this few


def test_the_deadline_cancels_only_its_own_body() -> None:
    async def scenario() -> str:
        async with within(Deadline(0.05)):
            pass  # finished in time: nothing is cancelled afterwards
        await asyncio.sleep(0.2)
        return "went on"

    assert asyncio.run(scenario()) == "went on"


def test_json_nested_too_deep_is_not_read() -> None:
    for depth in (MAX_DEPTH + 1, 50_000):
        answer = Answer(200, httpx.Headers(), content=b"[" * depth + b"]" * depth)
        assert answer.json() is None
        assert "nested" in answer.describe() or "not JSON" in answer.describe()
    fine = Answer(200, httpx.Headers(), content=b"[" * MAX_DEPTH + b"]" * MAX_DEPTH)
    assert fine.json() is not None


def test_json_too_deep_never_reaches_the_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    """The depth is counted before parsing: the parser recursing to the interpreter's
    limit made a finaliser that ran meanwhile fail (pytest saw an unraisable
    RecursionError); brackets inside strings are text, not depth."""
    parsed: list[int] = []
    real_loads = json.loads
    monkeypatch.setattr(
        json, "loads", lambda data, **kw: parsed.append(len(data)) or real_loads(data, **kw)
    )
    deep = b'[{"a":' * 25_000 + b"1" + b"}]" * 25_000
    answer = Answer(200, httpx.Headers(), content=deep)
    assert answer.json() is None and parsed == []
    assert answer.describe() == f"JSON nested deeper than {MAX_DEPTH} levels"
    text = json.dumps({"note": "[" * 200, "logs": ["{{{", '\\"[[']}).encode()
    assert Answer(200, httpx.Headers(), content=text).json()["note"] == "[" * 200


def test_every_string_of_the_json_is_redacted(known_key: Callable[[str], str]) -> None:
    key = known_key("sk-echoed-0123456789")
    body = {
        "error": f"bad header Authorization: Bearer {key}",
        "logs": [{"message": f"key={key}"}],
        key: "as a key too",
        "n": 3,
    }
    answer = Answer(200, httpx.Headers(), content=json.dumps(body).encode())
    assert key not in json.dumps(answer.json())
    assert answer.json()["n"] == 3 and "***" in answer.json()["error"]


def test_a_cancel_from_outside_is_never_taken_for_the_deadline() -> None:
    async def scenario() -> str:
        async def wait() -> None:
            async with within(Deadline(30.0)):
                await asyncio.sleep(60)

        waiting = asyncio.ensure_future(wait())
        await asyncio.sleep(0.05)
        waiting.cancel()
        try:
            await waiting
        except asyncio.CancelledError:
            return "cancelled"
        return "went on"

    assert asyncio.run(scenario()) == "cancelled"
