"""Rows keep their names (issue 40 point 5): a DataFrame's index names its rows in their
file names, messages, the manifest and ``dataframe()``; a file's rows are named by their
line too."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import genwidgets as gw
from genwidgets.errors import PayloadError
from genwidgets.lab.batch_plan import plan_batch
from genwidgets.lab.manifest import read_manifest
from genwidgets.simulator import SimulatorServer

pd = pytest.importorskip("pandas")

T2I = "genW2.5-t2i-preview"
KEY = "sim-demo-key"
pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def client(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    make_simulator: Callable[..., SimulatorServer],
) -> Iterator[gw.Client]:
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path / "home"))
    made = gw.Client(make_simulator().base_url, KEY)
    yield made
    made.close()


def gapped_frame() -> object:
    """Twelve prompts, two empty ones dropped and one filtered out: index 0-4, 6, 7, 9-11."""
    prompts = [f"a cat asleep number {i}" for i in range(12)]
    prompts[5] = prompts[8] = None  # type: ignore[call-overload]
    frame = pd.DataFrame({"prompt": prompts, "seed": range(1, 13), "n": 1}).dropna()
    return frame[frame["seed"] != 4]  # row 3 filtered out too


@pytest.mark.slow
def test_a_gapped_index_names_files_manifest_and_dataframe(
    client: gw.Client, tmp_path: Path
) -> None:
    frame = gapped_frame()
    labels = list(frame.index)  # type: ignore[attr-defined]
    assert labels == [0, 1, 2, 4, 6, 7, 9, 10, 11]
    out = tmp_path / "shots"
    batch = gw.batch(T2I, frame, out=out, client=client, concurrency=3)
    batch.wait(timeout=150, progress="none")
    assert [r.status for r in batch.rows] == ["done"] * len(labels)
    for row, label in zip(batch.rows, labels, strict=True):
        assert row.name == label
        [path] = row.files
        assert path.name.startswith(f"{label:05d}-a-cat-asleep-number-{label}-")
    said = read_manifest(out)
    assert [said[r.index]["name"] for r in batch.rows] == labels
    table = batch.dataframe()
    assert list(table.index) == labels
    joined = frame.join(table[["status", "files"]])  # type: ignore[attr-defined]
    assert list(joined["status"]) == ["done"] * len(labels)
    six = joined.loc[6]
    assert six["prompt"] == "a cat asleep number 6" and "00006-" in six["files"][0]


def test_messages_name_a_dataframe_row_by_its_label_and_a_file_row_by_its_line(
    tmp_path: Path,
) -> None:
    frame = gapped_frame().copy()  # type: ignore[attr-defined]
    frame.loc[6, "seed"] = -5  # a seed the endpoint refuses, on the row labelled 6
    with pytest.raises(PayloadError) as info:
        plan_batch(T2I, frame)
    assert [e["loc"][0] for e in info.value.errors] == ["row 6"]
    rows = tmp_path / "clips.csv"
    rows.write_text("prompt,seed\na fox,1\n\na hen,-5\n")  # a blank line: the hen is line 4
    with pytest.raises(PayloadError) as info:
        plan_batch(T2I, rows)
    assert [e["loc"][0] for e in info.value.errors] == ["row 1 (line 4)"]


def test_text_labels_name_files_and_an_index_that_cannot_name_rows_is_positions() -> None:
    frame = pd.DataFrame(
        {"prompt": ["a red fox", "a blue hen"], "seed": [1, 2]}, index=["fox/1", "hen"]
    )
    plan = plan_batch(T2I, frame)
    assert [r.name for r in plan.rows] == ["fox/1", "hen"]
    assert plan.rows[0].stem.startswith("fox-1-a-red-fox-1.")  # made safe for a file name
    twice = pd.DataFrame({"prompt": ["a red fox", "a blue hen"], "seed": [1, 2]}, index=[7, 7])
    assert [r.name for r in plan_batch(T2I, twice).rows] == [0, 1]
    plain = pd.DataFrame({"prompt": ["a red fox", "a blue hen"], "seed": [1, 2]})
    listed = [{"prompt": "a red fox", "seed": 1}, {"prompt": "a blue hen", "seed": 2}]
    assert plan_batch(T2I, plain).digest == plan_batch(T2I, listed).digest  # ids unchanged
    renamed = plain.set_axis([5, 9])
    assert plan_batch(T2I, renamed).digest != plan_batch(T2I, plain).digest
