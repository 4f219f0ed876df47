"""Tolerant reading of the protocol's records (spec 2.1-2.3)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from genwidgets.errors import TaskFailed
from genwidgets.jobs.output_files import OutputFiles
from genwidgets.protocol.records import UNTYPED, Handle, Output, Result, Status


def test_status_keeps_unknown_names_verbatim_and_reads_loose_types() -> None:
    st = Status.from_body({"status": "Warming_Up", "queue_position": "3"})
    assert st.status == "Warming_Up"
    assert st.queue_position == 3
    assert not st.done
    assert Status.from_body({"status": 7}).status == "7"
    assert Status.from_body({}).status == "UNKNOWN"
    assert Status.from_body({"status": "IN_QUEUE", "queue_position": True}).queue_position is None


def test_handle_fills_documented_urls_when_missing() -> None:
    h = Handle.from_body("ep", {"request_id": "abc"}, "http://gw")
    assert h.status_url == "http://gw/v1/queue/ep/requests/abc/status"
    assert h.response_url.endswith("/abc/response")
    assert h.cancel_url.endswith("/abc/cancel")
    with pytest.raises(ValueError, match="request_id"):
        Handle.from_body("ep", {"queue_position": 1}, "http://gw")


def test_completed_with_error_is_a_failure() -> None:
    res = Result.from_body(
        {"status": "COMPLETED", "error": "boom", "error_type": "runtime_error"},
        endpoint="ep",
        request_id="r1",
    )
    assert res.done and not res.ok
    with pytest.raises(TaskFailed, match=r"runtime_error.*boom.*endpoint ep, request_id r1"):
        res.raise_for_error()
    ok = Result.from_body({"status": "COMPLETED", "error": None, "outputs": []})
    assert ok.ok and ok.raise_for_error() is ok
    # a failure status with no error text is still a failure
    assert not Result.from_body({"status": "FAILED"}).ok
    assert Result.from_body({"status": "CANCELLED"}).error == "cancelled"


@pytest.mark.parametrize(
    "none",
    [{}, [], False, 0, float("nan"), "", " null ", "None", {"code": None, "message": None},
     {"error": {"message": ""}}, [None, {}]],
)  # fmt: skip
def test_an_error_that_says_there_is_none_is_no_error(none: object) -> None:
    """A completed task with its outputs is done well, whatever way its gateway writes
    "no error": else its batch row fails and retry_failed() pays for it again."""
    res = Result.from_body(
        {"status": "COMPLETED", "error": none, "error_type": none, "outputs": ["http://x/a.png"]}
    )
    assert res.ok and res.error is None and res.error_type is None
    said = Result.from_body({"status": "COMPLETED", "error": {"code": "E1", "message": None}})
    assert not said.ok and said.error == '{"code": "E1", "message": null}'


def test_outputs_are_interpreted_by_content_type_never_by_extension() -> None:
    res = Result.from_body(
        {
            "status": "COMPLETED",
            "outputs": [
                {"url": "http://x/a.png", "content_type": "video/mp4"},
                {"file_url": "http://x/b", "mime_type": "audio/mpeg"},
                "http://x/c.jpg",
                {"url": "http://x/d.json", "content_type": "application/json; charset=utf-8"},
            ],
        }
    )
    kinds = [o.kind for o in res.outputs]
    assert kinds == ["video", "audio", "binary", "json"]
    assert res.outputs[2].content_type == "application/octet-stream"
    assert [o.index for o in res.outputs] == [0, 1, 2, 3]


def test_inline_hex_and_base64_content() -> None:
    hex_out = Output.from_entry(
        {"content_type": "audio/mpeg", "encoding": "hex", "content": "4944"}
    )
    assert hex_out.read() == b"ID"
    b64 = Output.from_entry({"content_type": "text/plain", "encoding": "base64", "content": "aGk="})
    assert b64.read() == b"hi"
    data = Output.from_entry({"content_type": "image/png", "url": "data:image/png;base64,aGk="})
    assert data.read() == b"hi"
    with pytest.raises(ValueError, match="neither a URL nor inline content"):
        Output.from_entry({"content_type": "image/png"}).read()


def test_asset_record_from_json_string_in_several_places() -> None:
    record = {"Id": "asset-1", "Status": "Active", "URL": "http://x"}
    as_output = Result.from_body(
        {
            "status": "COMPLETED",
            "outputs": [{"content_type": "application/json", "content": json.dumps(record)}],
        }
    )
    assert as_output.asset == record
    as_content = Result.from_body({"status": "COMPLETED", "content": json.dumps(record)})
    assert as_content.asset == record
    double = Result.from_body({"status": "COMPLETED", "result": json.dumps(json.dumps(record))})
    assert double.asset == record
    assert Result.from_body({"status": "COMPLETED", "content": "not json"}).asset is None


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_output_save_uses_the_users_umask(tmp_path: Path, umask: int) -> None:
    out = Output.from_entry({"content": "hi", "content_type": "text/plain"})
    previous = os.umask(umask)
    try:
        target = out.save(tmp_path / f"note-{umask:o}")
    finally:
        os.umask(previous)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask
    assert not list(tmp_path.glob("*.part"))


def test_reprs_are_short_and_name_no_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A result reads as its status, outputs by kind and size, and their folder under
    the genwidgets home; an output as its type, size and place. Never a dataclass dump."""
    home = tmp_path / "home"
    monkeypatch.setenv("GENWIDGETS_HOME", str(home))
    folder = home / "outputs" / "req-1"
    folder.mkdir(parents=True)
    outputs = []
    for i in range(4):
        (folder / f"{i}.png").write_bytes(b"\x89PNG" + bytes(1020))
        url = f"https://cdn.example/{i}.png?sig=x"
        outputs.append(Output("image/png", url=url, index=i, _source=OutputFiles()))
        outputs[-1].path = folder / f"{i}.png"  # as the jobs layer sets it
    outputs.append(Output.from_entry({"content_type": "application/json", "content": {"a": 1}}))
    result = Result(
        "COMPLETED", outputs=outputs, endpoint="genW2.5-t2i-preview", request_id="req-1"
    )
    shown = repr(result)
    assert shown == (
        "<Result COMPLETED genW2.5-t2i-preview req-1: 4 images, 1 json, 4,096 bytes, "
        "saved in $GENWIDGETS_HOME/outputs/req-1>"
    )
    assert str(tmp_path) not in shown and "PosixPath" not in shown and "typed" not in shown
    assert (
        repr(outputs[0])
        == "<Output image/png 1,024 bytes, saved at $GENWIDGETS_HOME/outputs/req-1/0.png>"
    )
    assert repr(Output("video/mp4", url="https://cdn.example/v.mp4?token=secret")) == (
        "<Output video/mp4, at https://cdn.example/v.mp4>"  # not downloaded: no size, no query
    )
    assert repr(outputs[4]) == "<Output application/json, inline>"
    failed = Result("FAILED", error="no credits left", error_type="billing", request_id="req-2")
    assert repr(failed) == "<Result FAILED req-2: failed: no credits left (billing)>"
    assert repr(Result("COMPLETED")) == "<Result COMPLETED: no outputs>"


def test_an_output_field_sent_as_null_gives_way_to_its_dialects_name() -> None:
    """A gateway that writes every field sends ``"url": null`` beside its ``file_url``:
    the alias that holds a value is read, not the first one present."""
    entry = {"url": None, "file_url": "http://x/b", "content_type": "", "mime_type": "audio/mpeg"}
    output = Result.from_body({"status": "COMPLETED", "outputs": [entry]}).outputs[0]
    assert (output.url, output.content_type, output.typed) == ("http://x/b", "audio/mpeg", True)
    blank = Output.from_entry({"uri": "http://x/c", "content_type": "  ", "mime_type": None})
    assert (blank.url, blank.content_type, blank.typed) == ("http://x/c", UNTYPED, False)


def test_an_asset_record_nested_too_deep_is_none_not_a_crash() -> None:
    """Inline JSON content (a hostile gateway's) is depth-counted before it is parsed."""
    deep = '[{"a":' * 25_000 + "1" + "}]" * 25_000
    result = Result.from_body(
        {"status": "COMPLETED", "content": deep, "outputs": []}, endpoint="asset-get"
    )
    assert result.asset is None


@pytest.mark.parametrize(
    "endpoint",
    [
        "genW2.5-t2i-preview\t",
        "genW2.5-t2i-preview/../../../admin",
        "a b",
        "a?x=1",
        "",
        "a//b",
        "./a",
    ],
)
def test_an_endpoint_id_that_would_leave_the_queue_or_break_the_address_is_refused(
    endpoint: str,
) -> None:
    """A tab pasted from a table was a bare httpx.InvalidURL traceback; ``/../`` quietly
    asked another path of the gateway's origin (with the key)."""
    from genwidgets.protocol.records import queue_url

    with pytest.raises(ValueError, match="cannot be sent: an id is names of letters"):
        queue_url("http://gw", endpoint, "r1")
    assert queue_url("http://gw", "owner/model-1.5_x", "r1") == (
        "http://gw/v1/queue/owner/model-1.5_x/requests/r1"
    )
