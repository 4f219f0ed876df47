"""Planning a batch: rows to payloads, the endpoint column through the grid's mapping
table, units counted with the service's defaults, names, and every problem at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from genwidgets.errors import EndpointNotFound, PayloadError
from genwidgets.lab import batch_plan
from genwidgets.lab.batch_plan import plan_batch

T2I = "genW2.5-t2i-preview"


def test_an_endpoint_column_maps_prompt_and_seed_where_each_endpoint_takes_them() -> None:
    rows = [
        {"text": "a fox", "seed": "1"},
        {"text": "a kite", "seed": "2", "endpoint": "imgM-v8.1-t2i"},
        {"text": "a cat", "seed": "3", "endpoint": "vidVq2-text2video"},
        {"text": "hello", "seed": "4", "endpoint": "speechM-02-turbo"},
    ]
    plan = plan_batch(T2I, rows, {"prompt": "{text}", "seed": "{seed}", "n": 1})
    sent = [(r.endpoint, r.payload) for r in plan.rows]
    assert sent == [
        (T2I, {"prompt": "a fox", "seed": 1, "n": 1}),
        ("imgM-v8.1-t2i", {"prompt": "a kite --seed 2"}),
        ("vidVq2-text2video", {"prompt": "a cat", "seed": 3}),
        ("speechM-02-turbo", {"text": "hello"}),
    ]
    assert plan.rows[1].plan_note == "not sent to imgM-v8.1-t2i (no such field): n"
    assert plan.units_total() == {
        "tasks": 4,
        "images": 1,
        "prompts": 1,
        "video_seconds": 5,
        "speech_characters": 5,
    }
    assert "billed units: 4 tasks, 1 images, 1 prompts, 5 video_seconds" in plan.summary()


def test_the_services_defaults_are_counted_and_named() -> None:
    plan = plan_batch(T2I, [{"prompt": "a"}, {"prompt": "b"}])
    assert plan.billed_total == 8 and plan.units_total()["images"] == 8
    assert "8 billed images" in plan.summary()
    assert "n = 4 (default)" in plan.summary()


def test_every_problem_of_every_row_at_once(tmp_path: Path) -> None:
    path = tmp_path / "p.csv"
    path.write_text("text,seed,endpoint\na fox,1,\nb,x,\n,3,\nc,4,vidZ-none\nd,5,vidK-lip-sync\n")
    with pytest.raises(PayloadError) as info:
        plan_batch(T2I, path, {"prompt": "{text}", "seed": "{seed}"})
    found = {(e["loc"][0], e["loc"][1] if len(e["loc"]) > 1 else None) for e in info.value.errors}
    assert ("row 1", "seed") in found  # not a number
    assert ("row 2", "prompt") in found  # required, the cell is empty
    assert ("row 3", "endpoint") in found  # unknown endpoint, with the closest
    assert any(loc[0] == "row 4" for loc in found)  # lip sync needs what the rows lack
    assert not any(loc[0] == "row 0" for loc in found)
    text = str(info.value)
    assert "'x' is not a number" in text and "unknown endpoint 'vidZ-none'" in text


def test_many_problems_are_listed_then_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batch_plan, "MAX_LISTED", 5)
    with pytest.raises(PayloadError) as info:
        plan_batch(T2I, [{"prompt": "a", "seed": "x"}] * 12)
    assert len(info.value.errors) == 6
    assert info.value.errors[-1]["msg"].startswith("and 7 more problems in 7 more row(s)")


def test_two_rows_with_one_file_name_are_refused() -> None:
    with pytest.raises(PayloadError, match="its file name is row 0's too") as info:
        plan_batch(T2I, [{"prompt": "A Fox"}, {"prompt": "a fox"}], filenames="{slug}.{ext}")
    assert info.value.errors[0]["loc"] == ("row 1", "filenames")


def test_the_digest_follows_rows_template_and_names_only() -> None:
    rows = [{"prompt": "a fox"}, {"prompt": "b"}]
    first = plan_batch(T2I, rows)
    assert plan_batch(T2I, [dict(r) for r in rows]).digest == first.digest
    assert plan_batch(T2I, rows, budget={"images": 100}).digest == first.digest
    assert plan_batch(T2I, rows[:1]).digest != first.digest
    assert plan_batch(T2I, rows, filenames="{row}.{ext}").digest != first.digest
    assert plan_batch(T2I, rows, {"prompt": "{prompt}", "n": 1}).digest != first.digest


def test_an_unknown_endpoint_is_endpoint_not_found() -> None:
    with pytest.raises(EndpointNotFound, match="did you mean"):
        plan_batch("genW2.5-t2i-preveiw", [{"prompt": "a"}])


def test_prepare_keeps_what_it_returns_and_the_payload_as_sent() -> None:
    seen = []

    def prepare(endpoint: str, payload: dict[str, object]) -> str:
        seen.append(endpoint)
        return f"prepared {payload['prompt']}"

    plan = plan_batch(T2I, [{"prompt": "a"}], prepare=prepare)
    assert seen == [T2I] and plan.rows[0].prepared == "prepared a"
