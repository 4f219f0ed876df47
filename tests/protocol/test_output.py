"""An output's bytes (issue 29 points 2, 4, 6): read from the copy genwidgets wrote only,
kept in memory within one budget, and a failed read is a typed error."""

from __future__ import annotations

import gc
import hashlib
from pathlib import Path

import httpx
import pytest

from genwidgets import _config
from genwidgets.errors import DownloadError, GenwidgetsWarning
from genwidgets.protocol.output import CACHE_BUDGET, CACHE_ONE, Output, cache_budget


def fetched(data: bytes) -> Output:
    return Output("application/octet-stream", url="https://cdn.example/x", _fetch=lambda u: data)


def test_what_reads_keep_in_memory_stays_within_one_budget() -> None:
    size = CACHE_ONE // 2
    outputs = [fetched(bytes([i]) * size) for i in range(2 * CACHE_BUDGET // size)]
    for output in outputs:
        assert output.read()[:1] == output._fetch("")[:1]  # type: ignore[misc]
    assert cache_budget.held <= CACHE_BUDGET
    kept = [o for o in outputs if o._cache is not None]
    assert 0 < sum(len(o._cache or b"") for o in kept) <= CACHE_BUDGET
    assert outputs[0]._cache is None and outputs[-1]._cache is not None  # oldest let go
    assert outputs[0].read() == bytes([0]) * size  # read again when asked


def test_one_output_over_its_share_is_never_kept() -> None:
    big = fetched(b"x" * (CACHE_ONE + 1))
    assert len(big.read()) == CACHE_ONE + 1 and big._cache is None


def test_a_collected_output_gives_its_share_back() -> None:
    before = cache_budget.held
    output = fetched(b"y" * 1000)
    output.read()
    assert cache_budget.held >= 1000 or before + 1000 > CACHE_BUDGET
    held = cache_budget.held
    del output
    gc.collect()
    assert cache_budget.held == held - 1000


def test_a_local_copy_changed_since_it_was_written_is_not_used(tmp_path: Path) -> None:
    copy = tmp_path / "0.png"
    copy.write_bytes(b"ours")
    output = Output(
        "image/png",
        url="https://cdn.example/0.png",
        path=copy,
        sha256=hashlib.sha256(b"ours").hexdigest(),
        _fetch=lambda url: b"from the url",
    )
    assert output.read() == b"ours"
    copy.write_bytes(b"planted")
    output._cache = None
    with pytest.warns(GenwidgetsWarning, match="not the copy of output 0"):
        assert output.read() == b"from the url"


def test_a_failed_read_is_a_download_error_without_the_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_config, "_known_secrets", set())
    key = "sk-read-fail-0123456789"
    _config.remember_secret(key)

    def refuse(url: str) -> bytes:
        request = httpx.Request("GET", url)
        raise httpx.HTTPStatusError(f"404 for {url}", request=request, response=httpx.Response(404))

    output = Output("image/png", url=f"https://cdn.example/{key}/x.png?sig={key}", _fetch=refuse)
    with pytest.raises(DownloadError, match="could not read output 0") as caught:
        output.read()
    assert key not in str(caught.value) and key not in repr(caught.value.failures)
    assert "sig=" not in str(caught.value)
