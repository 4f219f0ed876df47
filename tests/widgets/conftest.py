"""Fixtures the widgets' tests share: a fast ticker, and two endpoints of our own."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

import pytest
from pydantic import Field

from genwidgets.catalog import BILLED, PROMPT_STRING, Endpoint, register, unregister
from genwidgets.widgets.ticker import TICKER


@pytest.fixture
def fast_ticker(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(TICKER, "period", 0.05)
    yield
    for view in TICKER.live:
        TICKER.remove(view)


@pytest.fixture
def catalog() -> Iterator[None]:
    """Two endpoints of our own, registered through the public extension point, so
    these tests do not depend on the families (the simulator tests use those)."""

    class TestVideo(Endpoint):
        prompt: str = Field(..., min_length=1, max_length=100)
        duration: Annotated[int | None, BILLED] = Field(None, ge=1, le=10)
        seed: int | None = Field(None, ge=0)

    class TestImagine(Endpoint):
        prompt: Annotated[str, PROMPT_STRING] = Field(..., min_length=1)

    register("test-video", kind="video", family="vidT", title="t", documented=False)(TestVideo)
    register("imgM-test-t2i", kind="image", family="imgM", title="t", documented=False)(TestImagine)
    yield
    unregister("test-video")
    unregister("imgM-test-t2i")
