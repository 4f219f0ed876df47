"""The request body: one JSON encoding, measured against the spec's 64 MB cap."""

from __future__ import annotations

import json

import pytest

from genwidgets.errors import PayloadError
from genwidgets.protocol.prepared import BODY_LIMIT_BYTES, check_body_size, encode_body


def test_the_body_is_compact_utf8_json_and_nan_is_refused() -> None:
    assert encode_body({"prompt": "un cerf-volant é", "n": 1}) == (
        '{"prompt":"un cerf-volant é","n":1}'.encode()
    )
    with pytest.raises(PayloadError, match="cannot be sent as JSON") as caught:
        encode_body({"seed": float("inf")}, endpoint="vidA-2-0")
    assert caught.value.endpoint == "vidA-2-0"


@pytest.mark.slow
def test_check_body_size() -> None:
    payload = {"content": [{"image_url": {"url": "x" * 100}}]}
    size = len(json.dumps(payload, separators=(",", ":")).encode())
    assert check_body_size(payload, limit=size) == size
    with pytest.raises(PayloadError) as caught:
        check_body_size(payload, limit=size - 1, endpoint="vidA-2-0")
    msg = caught.value.errors[0]["msg"]
    assert f"{size:,} bytes" in msg or f"{size} bytes" in msg
    assert f"at most {size - 1:,} bytes" in msg or f"at most {size - 1} bytes" in msg
    assert caught.value.endpoint == "vidA-2-0"
    assert BODY_LIMIT_BYTES == 64 * 2**20
    with pytest.raises(PayloadError, match="cannot be sent as JSON"):
        check_body_size({"a": float("nan")})
    big = {"a": "x" * (64 * 2**20)}
    with pytest.raises(PayloadError, match="at most 64 MB"):
        check_body_size(big)
