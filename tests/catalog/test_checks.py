"""Media strings: the form each encoding accepts, size limits, short messages."""

from __future__ import annotations

from typing import Any

import pytest

from genwidgets.catalog import MediaSpec
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
