"""Media strings: the form each encoding accepts, size limits, short messages."""

from __future__ import annotations

from typing import Any

import pytest

from genwidgets.catalog import MediaSpec, sent_from_elsewhere
from genwidgets.catalog.checks import MediaCheck


@pytest.mark.parametrize(
    ("encoding", "value", "ok"),
    [
        ("url_only", "https://x/y.png", True),
        ("url_only", "HTTP://x/y.png", True),
        ("url_only", "ftp://x/y.png", False),
        ("url_only", "data:image/png;base64,AAAA", False),
        ("raw_base64", "QUJD", True),
        ("raw_base64", "QUJD\n", False),
        ("raw_base64", "data:image/png;base64,QUJD", False),
        ("raw_base64", "https://x/y.png", True),
        ("data_url_mime", "data:image/png;base64,QUJD", True),
        ("data_url_mime", "data:IMAGE/PNG;base64,QUJD", True),
        ("data_url_mime", "QUJD", False),
        ("url_or_data", "data:image/png;base64,QUJD", True),
        ("url_or_data", "QUJD", False),
        ("url_or_data", "asset://x", False),
    ],
)
def test_media_check_forms(encoding: Any, value: str, ok: bool) -> None:
    checker = MediaCheck(MediaSpec(media="image", encoding=encoding, formats=("png",)))
    if ok:
        assert checker(value) == value
    else:
        with pytest.raises(ValueError):
            checker(value)


def test_media_check_size_limits_and_messages_stay_short() -> None:
    checker = MediaCheck(MediaSpec(media="image", encoding="raw_base64", max_bytes=3))
    assert checker("QUJD") == "QUJD"  # 3 bytes decoded
    with pytest.raises(ValueError, match="the limit is"):
        checker("QUJDRA==")  # 6 bytes decoded (padding counted generously)
    junk = "x." * 10_000
    with pytest.raises(ValueError) as info:
        checker(junk)
    assert len(str(info.value)) < 400 and "20000 characters" in str(info.value)
    decoded_cap = MediaCheck(MediaSpec(media="image", encoding="raw_base64", max_decoded=3))
    with pytest.raises(ValueError, match="the limit is"):
        decoded_cap("QUJDQUJD")
    assert MediaCheck(MediaSpec(media="image", encoding="url_only"))(None) is None


def test_a_string_naming_a_local_file_says_how_to_send_it_but_not_to_a_server(
    tmp_path: Any,
) -> None:
    """In a notebook the error says the string is a file of this machine, and how to send
    it; on a server (the class gateway, the simulator) it never does: a student could
    learn which files the teacher's machine holds."""
    picture = tmp_path / "frame.png"
    picture.write_bytes(b"\x89PNG")
    check = MediaCheck(MediaSpec(media="image", encoding="url_only"))
    with pytest.raises(ValueError, match="is a local file"):
        check(str(picture))
    said = []
    with sent_from_elsewhere():
        # a name as long: a long value is shown cut, with its length
        for value in (str(picture), str(tmp_path / "frome.png")):
            with pytest.raises(ValueError) as refused:
                check(value)
            said.append(str(refused.value).replace(value, "<value>"))
    assert said[0] == said[1] and "is a local file" not in said[0]
