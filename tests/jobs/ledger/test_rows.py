"""A ledger row's local copies in a shared home (issue 39 point 3): a recorded path is
read only inside the outputs folder and with its recorded size and SHA-256; any other
is left out, so the output reads its URL or shows as unavailable."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import io
import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

import genwidgets as gw
from genwidgets.jobs.ledger.rows import FINISHED, SUBMITTED, LedgerRow, restored_result
from genwidgets.jobs.output_files import OutputFiles
from genwidgets.widgets.lasting import output_html, thumbnail_src
from genwidgets.widgets.render import to_mimebundle

PRIVATE = b"-----BEGIN OPENSSH PRIVATE KEY----- the user's own"
KEPT = b"kept bytes of the output"


def _restore(record: dict[str, Any], fetch: Callable[[str, int], bytes]) -> Any:
    result = restored_result(
        endpoint="e",
        request_id="r-1",
        status="COMPLETED",
        error=None,
        error_type=None,
        outputs=[{"content_type": "text/plain", "url": "https://cdn.example/0.txt", **record}],
        source=OutputFiles(fetch),
    )
    return result.outputs[0]


def _recorded(path: Path, data: bytes) -> dict[str, Any]:
    return {"path": str(path), "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


@pytest.fixture
def outputs() -> Path:
    home = Path(os.environ["GENWIDGETS_HOME"])  # the tests' (conftest.py)
    folder = home / "outputs" / "simulator" / "r-1"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _private(tmp_path: Path) -> Path:
    secret = tmp_path / "id_ed25519"
    secret.write_bytes(PRIVATE)
    return secret


@pytest.mark.parametrize(
    "record",
    [
        lambda p: {"path": str(p)},  # sha256 and size removed
        lambda p: {"path": str(p), "size": len(PRIVATE)},
        lambda p: _recorded(p, PRIVATE),  # even a matching digest: outside the outputs
    ],
    ids=["bare path", "size only", "size and digest"],
)
def test_a_recorded_path_outside_the_outputs_folder_is_never_read(
    tmp_path: Path, record: Callable[[Path], dict[str, Any]]
) -> None:
    asked: list[str] = []
    output = _restore(record(_private(tmp_path)), lambda url, cap: asked.append(url) or b"from url")
    assert output.path is None
    assert output.read() == b"from url" and asked == ["https://cdn.example/0.txt"]
    html = output_html(output, fetch=False)
    assert "PRIVATE KEY" not in html and "id_ed25519" not in html


def test_a_link_in_the_outputs_folder_to_a_private_file_is_not_followed(
    tmp_path: Path, outputs: Path
) -> None:
    link = outputs / "0.txt"
    link.symlink_to(_private(tmp_path))
    output = _restore(_recorded(link, PRIVATE), lambda url, cap: b"from url")
    assert output.path is None and output.read() == b"from url"
    link.unlink()


def test_a_copy_without_its_digest_is_not_trusted_even_in_the_outputs_folder(
    outputs: Path,
) -> None:
    copy = outputs / "1.txt"
    copy.write_bytes(KEPT)
    bare = _restore({"path": str(copy), "size": len(KEPT)}, lambda url, cap: b"from url")
    assert bare.path is None and bare.read() == b"from url"
    other_size = _restore({**_recorded(copy, KEPT), "size": 3}, lambda url, cap: b"from url")
    assert other_size.path is None


def test_the_copy_genwidgets_wrote_is_read_from_the_outputs_folder(outputs: Path) -> None:
    copy = outputs / "2.txt"
    copy.write_bytes(KEPT)

    def no_fetch(url: str, max_bytes: int) -> bytes:
        raise AssertionError("the kept copy is read, not the URL")

    output = _restore(_recorded(copy, KEPT), no_fetch)
    assert output.path == copy.resolve() and output.read() == KEPT


def _picture(colour: str) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), colour).save(buffer, format="BMP")  # one size for any colour
    return buffer.getvalue()


def test_a_copy_swapped_for_another_of_its_size_is_neither_read_nor_embedded(
    outputs: Path,
) -> None:
    """The file a row names, in the outputs folder and of the recorded size, holds
    other bytes: the output reads its URL again, and no lasting face or thumbnail
    embeds the file in the notebook."""
    kept, swapped = _picture("red"), _picture("green")
    assert len(kept) == len(swapped) and kept != swapped
    copy = outputs / "3.bmp"
    copy.write_bytes(swapped)
    asked: list[str] = []

    def gateway(url: str, cap: int) -> bytes:
        asked.append(url)
        return kept

    output = _restore(
        {**_recorded(copy, kept), "content_type": "image/bmp", "url": "https://cdn.example/3.bmp"},
        gateway,
    )
    assert output.path is None
    html = output_html(output, fetch=False)
    assert "data:image" not in html and "3.bmp" not in html.replace("cdn.example/3.bmp", "")
    assert thumbnail_src([output]) is None
    assert output.read() == kept and asked == ["https://cdn.example/3.bmp"]
    assert not list(outputs.glob("3.bmp.thumb*"))  # no thumbnail made of it either


@pytest.mark.timeout(120)
def test_a_row_edited_to_point_at_a_private_picture_shows_the_gateways_output(
    simulator: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """End to end: a task's ledger row is edited by someone else to name a private
    picture (its digest and size removed); read back by a new client, the output
    reads the gateway's bytes and the lasting face embeds nothing of the picture."""
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path / "home"))
    private = tmp_path / "holiday.png"
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), "red").save(buffer, format="PNG")
    private.write_bytes(buffer.getvalue())
    with gw.Client(simulator.base_url, "sim-demo-key") as client:
        made = client.run("genW2.5-t2i-preview", {"prompt": "a kite", "n": 1}, timeout=60)
        served = made.outputs[0].read()
        assert client.ledger is not None
        ledger_path = client.ledger.path
    with sqlite3.connect(ledger_path) as db:
        (outputs,) = db.execute(
            "SELECT outputs FROM tasks WHERE request_id = ?", (made.request_id,)
        ).fetchone()
        records = json.loads(outputs)
        records[0] = {k: v for k, v in records[0].items() if k not in ("sha256", "size")}
        records[0]["path"] = str(private)
        db.execute(
            "UPDATE tasks SET outputs = ? WHERE request_id = ?",
            (json.dumps(records), made.request_id),
        )
    with gw.Client(simulator.base_url, "sim-demo-key") as again:
        (job,) = [j for j in again.history() if j.request_id == made.request_id]
        output = job.result(timeout=30).outputs[0]
        assert output.path is None and output.read() == served
        html = to_mimebundle(output)["text/html"]
    assert base64.b64encode(private.read_bytes()).decode()[:40] not in html
    assert "holiday.png" not in html


def test_copies_pending_are_the_outputs_of_a_finished_task_with_a_source_and_no_copy(
    tmp_path: Path,
) -> None:
    """docs/decisions.md#copies-pending: an output never copied, a source kept whole and no
    reason to give up is a copy pending; one whose file was removed since is a copy gone
    (copied again only when asked); a copy given up says why. A file on disk, even
    edited, is neither."""
    digest = "0" * 64
    kept = tmp_path / "1.png"
    kept.write_bytes(b"edited since")
    row = LedgerRow(
        id=1,
        gateway="g",
        endpoint="e",
        request_id="r",
        state=FINISHED,
        status="COMPLETED",
        queue_position=None,
        payload={},
        submitted_at=0.0,
        updated_at=1.0,
        finished_at=1.0,
        ok=True,
        error=None,
        error_type=None,
        outputs=[
            {"index": 0, "url": "https://cdn.example/0.png", "path": None},
            {"index": 1, "url": "https://cdn.example/1.png", "path": str(kept)},
            {"index": 2, "url": "https://cdn.example/2.png", "path": None, "copy_given_up": "410"},
            {"index": 3, "content": f"<base64 sha256={digest} bytes=9>", "path": None},
            {"index": 4, "content": '{"Id": "x"}', "path": None, "content_whole": True},
            {"index": 5, "url": f"<data:image/png;base64 sha256={digest} bytes=9>", "path": None},
            {"index": 6, "content": f'{{"b": "<base64 sha256={digest} bytes=9>"}}', "path": None},
            {"index": 7, "url": "https://cdn.example/7.png", "path": str(tmp_path / "7.png")},
        ],
    )
    assert row.copies_pending == [0, 4] and row.copies_gone == [7]
    assert row.copies_given_up == {2: "410"}
    assert dataclasses.replace(row, state=SUBMITTED).copies_pending == []
