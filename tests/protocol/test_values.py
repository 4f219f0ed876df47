"""Hostile values at the record boundary (issue 29 point 7): clamped, cut or refused."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from genwidgets.protocol.records import Handle, Result, Status, queue_url
from genwidgets.protocol.values import (
    MAX_ERROR_TEXT,
    MAX_QUEUE_POSITION,
    MAX_REQUEST_ID,
    MAX_WORD,
    position_of,
    request_id_of,
    resolve_output_url,
)

BASE = "http://127.0.0.1:8000"


@pytest.mark.parametrize(
    ("value", "kept"),
    [
        (3, 3),
        ("7", 7),
        (2.0, 2),
        (0, 0),
        (MAX_QUEUE_POSITION, MAX_QUEUE_POSITION),
        (MAX_QUEUE_POSITION + 1, None),
        (2**63, None),
        (10**400, None),
        (-1, None),
        (True, None),
        (1.5, None),
        ("many", None),
        ([1], None),
        (float("inf"), None),
    ],
)
def test_a_queue_position_is_a_small_integer_or_unknown(value: Any, kept: int | None) -> None:
    assert position_of(value) == kept
    assert Status.from_body({"status": "IN_QUEUE", "queue_position": value}).queue_position == kept
    assert (
        Handle.from_body("ep", {"request_id": "r", "queue_position": value}, BASE).queue_position
        == kept
    )


def test_records_made_by_hand_hold_to_the_same_bound() -> None:
    assert Status("IN_QUEUE", queue_position=10**400).queue_position is None
    assert Handle.documented(BASE, "ep", "r", queue_position=2**63).queue_position is None


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (None, "has no request_id"),
        ("", "has no request_id"),
        ("abc\x00def", "control character (U+0000 at position 3)"),
        ("line\nbreak", "U+000A"),
        ({"id": 1}, "is a JSON dict"),
        (True, "is a JSON bool"),
        ("x" * (MAX_REQUEST_ID + 1), "at most 1024"),
    ],
)
def test_a_request_id_no_url_can_carry_is_refused(value: Any, says: str) -> None:
    with pytest.raises(ValueError, match=r"request_id") as caught:
        request_id_of(value)
    assert says in str(caught.value)
    with pytest.raises(ValueError):
        Handle.from_body("ep", {"request_id": value}, BASE)


def test_a_long_or_numeric_request_id_is_taken_and_escaped_in_urls() -> None:
    assert request_id_of(42) == "42"
    long_id = "r" * 300
    assert Handle.from_body("ep", {"request_id": long_id}, BASE).request_id == long_id
    assert queue_url(BASE, "ep", "../../admin?x=1") == (
        f"{BASE}/v1/queue/ep/requests/..%2F..%2Fadmin%3Fx%3D1"
    )
    assert queue_url(BASE, "ep", "..").endswith("/requests/%2E%2E")  # never a dot segment
    handle = Handle.from_body("ep", {"request_id": "a/b"}, BASE)
    assert handle.status_url.endswith("/requests/a%2Fb/status")


@pytest.mark.parametrize(
    ("given", "used"),
    [
        ("javascript:alert(1)", f"{BASE}/v1/queue/ep/requests/r/status"),
        ("http://[::1", f"{BASE}/v1/queue/ep/requests/r/status"),
        ("http://h/\x00x", f"{BASE}/v1/queue/ep/requests/r/status"),
        ("/elsewhere/status", f"{BASE}/elsewhere/status"),
        (7, f"{BASE}/v1/queue/ep/requests/r/status"),
        ("https://other.example/s", "https://other.example/s"),
    ],
)
def test_a_follow_up_url_that_is_no_http_url_takes_the_documented_one(
    given: Any, used: str
) -> None:
    assert Handle.from_body("ep", {"request_id": "r", "status_url": given}, BASE).status_url == used


def test_long_words_and_errors_are_cut() -> None:
    status = Status.from_body({"status": "W" * 10_000})
    assert len(status.status) < MAX_WORD + 40 and status.status.startswith("W" * MAX_WORD)
    result = Result.from_body(
        {"status": "COMPLETED", "error": "e" * 10**6, "error_type": "t" * 5000}
    )
    assert result.error is not None and len(result.error) < MAX_ERROR_TEXT + 60
    assert result.error_type is not None and len(result.error_type) < MAX_WORD + 40
    assert not result.ok


@pytest.mark.parametrize(
    ("url", "kept"),
    [
        ("/logout", "http://127.0.0.1:8000/logout"),
        ("files/a.png", "http://127.0.0.1:8000/api/files/a.png"),
        ("https://cdn.example/a.png", "https://cdn.example/a.png"),
        ("data:image/png;base64,AA==", "data:image/png;base64,AA=="),
    ],
)
def test_a_relative_output_url_resolves_against_the_gateway(url: str, kept: str) -> None:
    assert resolve_output_url(url, "http://127.0.0.1:8000/api") == kept
    result = Result.from_body(
        {"status": "COMPLETED", "outputs": [{"url": url, "content_type": "image/png"}]},
        base_url="http://127.0.0.1:8000/api",
    )
    assert result.outputs[0].url == kept
    assert resolve_output_url(url, None) == url  # no gateway known: left as it is


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"request_id": "\x1b]52;c;" + "x" * 500}, "control character (U+001B at position 0)"),
        ({"request_id": ["r"] * 1000}, "is a JSON list, not a string"),
        ([{"request_id": "r"}], "the task handle is not a JSON object"),
    ],
)
def test_a_refused_answer_names_the_field_and_shows_what_came_inert_and_cut(
    body: Any, says: str
) -> None:
    """The one place a pydantic refusal becomes ours: a plain ValueError (never
    pydantic's), naming the field and what is allowed, with what came shown inert and cut."""
    with pytest.raises(ValueError) as caught:
        Handle.from_body("ep", body, BASE)
    assert not isinstance(caught.value, ValidationError)
    message = str(caught.value)
    assert says in message and "; got " in message
    assert "\x1b" not in message and len(message) < 300
    assert "pydantic" not in message and "_HandleReading" not in message


def test_a_status_or_result_that_is_no_object_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match=r"^the status answer is not a JSON object; got \[1\]$"):
        Status.from_body([1])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^the result is not a JSON object; got \"done\"$"):
        Result.from_body("done")  # type: ignore[arg-type]
