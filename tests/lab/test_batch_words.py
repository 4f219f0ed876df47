"""What a batch says of its rows, the same on every surface: a row's ``next_step`` (the
Python API and the view), the manifest's ``next`` column, and the command's report."""

from __future__ import annotations

import csv
from pathlib import Path

import httpx
import pytest

import genwidgets as gw
from genwidgets.lab.batch_cli import command_words
from genwidgets.lab.batch_row import NEXT

T2I = "genW2.5-t2i-preview"
pytestmark = pytest.mark.timeout(180)


class FailingPrompts(httpx.AsyncHTTPTransport):
    """A client's way to the simulator that makes a task whose prompt says FAIL fail."""

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "POST" and b"FAIL" in request.content:
            request.headers["X-Sim-Fault"] = "fail"
        return await super().handle_async_request(request)


def test_a_failed_row_of_the_embedded_simulator_is_made_again_free_on_every_surface(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No gateway configured: the embedded simulator answers and bills nothing. A failed
    row's next step says it is made again free, in the row, the manifest's ``next``
    column and the command's words alike, never "a new create, billed" (the CLI said
    "free" while the manifest and the row said "billed")."""
    for name in ("GENWIDGETS_BASE_URL", "GENWIDGETS_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path / "home"))
    rows = [{"text": "FAIL a heron"}, {"text": "a crane"}]
    with gw.Client(transport=FailingPrompts()) as client:
        assert client.embedded
        batch = gw.batch(T2I, rows, {"prompt": "{text}", "n": 1}, out=tmp_path / "o",
                         client=client)  # fmt: skip
        batch.wait(timeout=120, progress="none")
        failed, done = batch.rows
        assert (failed.status, done.status) == ("failed", "done")
    said = failed.next_step
    assert "free" in said and "billed" not in said and "retry_failed()" in said
    with open(tmp_path / "o" / "manifest.csv", newline="", encoding="utf-8") as fh:
        table = {int(r["row"]): r for r in csv.DictReader(fh)}
    assert table[0]["next"] == said and table[1]["next"] == ""
    cli = command_words(said)  # the command's words for the same step
    assert cli.startswith("genwidgets batch --retry-failed") and "billed" not in cli
    assert "free" in cli


def test_a_failed_row_of_a_configured_gateway_is_sent_again_billed() -> None:
    """The words for a gateway that bills are unchanged: a new create, billed."""
    assert "a new create, billed" in NEXT["failed"]
