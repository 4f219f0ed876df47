"""Hypothesis against the parsers of gateway answers: any JSON in, a record or a clear error out."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genwidgets.errors import GatewayError, RateLimited
from genwidgets.protocol.http import error_from_response
from genwidgets.protocol.records import Handle, Output, Result, Status

pytestmark = [pytest.mark.reliability, pytest.mark.timeout(120)]

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
RECORD_KEYS = (
    "request_id", "status", "queue_position", "error", "error_type", "outputs", "content",
    "result", "output", "asset", "status_url", "response_url", "cancel_url", "detail",
)  # fmt: skip
OUTPUT_KEYS = (
    "url", "file_url", "uri", "content_type", "mime_type", "content", "encoding",
    "file_name", "file_size",
)  # fmt: skip
hex_or_base64 = st.sampled_from(["hex", "base64", "HEX", "utf-8", ""])
output_entries = json_values | st.dictionaries(
    st.sampled_from(OUTPUT_KEYS), json_values | hex_or_base64, max_size=6
)
bodies = st.dictionaries(
    st.sampled_from(RECORD_KEYS) | st.text(max_size=6),
    json_values
    | st.lists(output_entries, max_size=3)
    | st.sampled_from(
        ["COMPLETED", "completed", "FAILED", "Cancelled", "IN_QUEUE", "PONDERING", ""]
    ),
    max_size=8,
)


def acted_on(char: str) -> bool:
    """A character a terminal acts on (docs/decisions.md#inert-text): C0, DEL, C1, and
    the bidi and line-separator controls; none may stand in a request id."""
    code = ord(char)
    return (
        code < 0x20
        or 0x7F <= code <= 0x9F
        or code in (0x061C, 0x200E, 0x200F, 0x2028, 0x2029)
        or 0x202A <= code <= 0x202E
        or 0x2066 <= code <= 0x2069
    )


@pytest.mark.slow
@FUZZ
@given(body=bodies)
def test_handle_from_any_json_object_is_a_handle_or_a_value_error(body: dict[str, Any]) -> None:
    try:
        handle = Handle.from_body("asset-get", body, "http://127.0.0.1:1")
    except ValueError as exc:
        assert "request_id" in str(exc)
        found = body.get("request_id")
        usable = (
            isinstance(found, str | int)
            and not isinstance(found, bool)
            and found != ""
            and not any(acted_on(c) for c in str(found))
        )
        assert not usable  # refused only when there is none a URL can carry
        return
    assert isinstance(handle.request_id, str) and handle.request_id
    assert all(
        isinstance(u, str) for u in (handle.status_url, handle.response_url, handle.cancel_url)
    )
    assert handle.queue_position is None or isinstance(handle.queue_position, int)


@pytest.mark.slow
@FUZZ
@given(body=bodies)
def test_status_from_any_json_object_is_a_status(body: dict[str, Any]) -> None:
    status = Status.from_body(body, endpoint="asset-get", request_id="r1")
    assert isinstance(status.status, str) and status.status
    assert isinstance(status.done, bool)
    assert status.queue_position is None or isinstance(status.queue_position, int)
    assert status.request_id == "r1"


def _read_without_network(output: Output) -> bytes | None:
    """``read()`` of an output that needs no download; None when it would fetch."""
    if output.in_hand() is None:
        return None
    return output.read()


@pytest.mark.slow
@FUZZ
@given(body=bodies)
def test_result_from_any_json_object_is_a_result_whose_outputs_can_be_read(
    body: dict[str, Any],
) -> None:
    result = Result.from_body(body, endpoint="asset-get", request_id="r1")
    assert isinstance(result.ok, bool) and isinstance(result.done, bool)
    assert result.asset is None or isinstance(result.asset, dict)
    for output in result.outputs:
        assert output.kind in {"image", "video", "audio", "json", "text", "binary"}
        data = _read_without_network(output)
        assert data is None or isinstance(data, bytes)
    if result.ok:
        assert result.raise_for_error() is result


status_codes = st.integers(min_value=400, max_value=599)
header_text = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=40)
error_bodies = (
    st.binary(max_size=300)
    | bodies.map(lambda b: json.dumps(b).encode())
    | json_values.map(lambda v: json.dumps(v).encode())
    | st.builds(
        lambda code, message: json.dumps({"error": {"code": code, "message": message}}).encode(),
        st.sampled_from(["UNAUTHORIZED", "RATE_LIMIT_EXCEEDED", "BAD_GATEWAY", ""]) | st.text(),
        json_values,
    )
)


@pytest.mark.slow
@FUZZ
@given(
    status=status_codes,
    content=error_bodies,
    retry_after=st.none() | header_text | st.integers(-5, 10**6).map(str),
    path=st.sampled_from(
        ["/v1/queue/asset-get", "/v1/queue/asset-get/sync", "/x/requests/r/status"]
    ),
    request_id=st.none() | st.just("r-fuzz"),
)
def test_any_error_answer_maps_to_a_gateway_error(
    status: int, content: bytes, retry_after: str | None, path: str, request_id: str | None
) -> None:
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    request = httpx.Request("GET", f"http://127.0.0.1:1{path}")
    response = httpx.Response(status, content=content, headers=headers, request=request)
    error = error_from_response(response, endpoint="asset-get", request_id=request_id)
    assert isinstance(error, GatewayError)
    assert error.status_code == status
    text = str(error)
    assert "asset-get" in text
    if request_id is not None:
        assert error.request_id == request_id and request_id in text
    if isinstance(error, RateLimited):
        assert error.retry_after is None or error.retry_after >= 0


@pytest.mark.parametrize("char", ["\x85", "\x9b", "\u202e", "\u2066", "\x00", "\x7f"])
def test_a_request_id_holding_a_character_a_terminal_acts_on_is_refused(char: str) -> None:
    """The cases the fuzzer found by chance (a C1 control), pinned."""
    with pytest.raises(ValueError, match="control character"):
        Handle.from_body("asset-get", {"request_id": f"abc{char}def"}, "http://127.0.0.1:1")
    assert acted_on(char)
