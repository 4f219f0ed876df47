"""Billing words: imgM bills prompts of four images (spec: "each generated prompt is
billed separately"), other endpoints their outputs; summaries, cells and re-opened
grids say so in the endpoint's unit."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from genwidgets.catalog import endpoint
from genwidgets.lab.cost import (
    CONFIRM_ABOVE,
    UNITS,
    BilledUnit,
    billed_unit,
    billed_units,
    needs_confirmation,
)
from genwidgets.lab.plan import GridPlan, plan_grid
from genwidgets.simulator import DEMO_KEY, SimulatorServer

T2I = "genW2.5-t2i-preview"
IMGM = "imgM-v8.1-t2i"
SPEECH = "speechM-02-turbo"
#: what an imgM count must never read as beside its four pictures
IMGM_AS_IMAGES = re.compile(r"billed \d+ image|\b1 billed image")


def test_each_endpoint_bills_in_its_own_unit() -> None:
    assert billed_unit(endpoint(IMGM)) == BilledUnit("prompt", 4, "image")
    assert billed_unit(endpoint("imgM-v8.1-i2i")).noun == "prompt"  # the edits too
    assert billed_unit(endpoint(T2I)) == BilledUnit("image")
    assert billed_unit(endpoint(SPEECH)) == BilledUnit("audio clip")
    assert billed_unit(IMGM).amount(1) == "1 prompt (4 images)"
    assert billed_unit(IMGM).amount(6) == "6 prompts (24 images)"
    assert billed_unit(T2I).amount(4) == "4 images"
    assert billed_unit("an-endpoint-long-gone").amount(3) == "3 generations"


def test_an_imgm_plan_reads_as_billed_prompts_of_four_images() -> None:
    one = plan_grid(IMGM, {"prompt": "a {red, blue} kite"})
    assert "2 tasks, 2 billed prompts (8 images)" in one.summary()
    repeated = plan_grid(IMGM, {"prompt": "a {red, blue} kite --repeat 3"})
    assert "6 billed prompts (24 images)" in repeated.summary()
    for plan in (one, repeated):
        assert not IMGM_AS_IMAGES.search(plan.summary()), plan.summary()
    # an image endpoint bills its images, and says why there are more than tasks
    genw = plan_grid(T2I, {"prompt": "a kite"}, x=("seed", [1, 2])).summary()
    assert "2 tasks, 8 billed images: outputs per task, n sent or the service's default" in genw
    assert "billed" not in plan_grid(T2I, {"prompt": "a", "n": 1}, x=("seed", [1, 2])).summary()


def test_a_comparison_counts_each_unit_apart() -> None:
    plan = plan_grid(T2I, {"prompt": "a red fox"}, x=("endpoint", [T2I, IMGM, SPEECH]))
    summary = plan.summary()
    assert "3 tasks, 4 billed images, 1 billed prompt (4 images), 1 billed audio clip" in summary
    assert not IMGM_AS_IMAGES.search(summary)


def test_a_reopened_grid_bills_what_it_billed_when_sent() -> None:
    """The store keeps payloads, not counts: they are counted again (they were 1 each)."""
    sent = plan_grid(T2I, {"prompt": "a red fox"}, x=("endpoint", [T2I, IMGM]))
    axis = sent.axes["x"]
    assert axis is not None
    description = {"endpoint": T2I, "axes": {"x": axis.describe()}}
    again = GridPlan.restore(description, [c.payload for c in sent.cells])
    assert [c.billed for c in again.cells] == [c.billed for c in sent.cells] == [4, 1]


def test_a_grid_cell_says_what_it_bills_beside_its_pictures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, simulator: SimulatorServer
) -> None:
    """The lightbox reads "billed <cell state's billed>": an imgM cell's four pictures
    come with "1 prompt (4 images)", never "billed 1"."""
    import genwidgets as gw

    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path))
    with gw.Client(base_url=simulator.base_url, api_key=DEMO_KEY) as client:
        grid = gw.grid(
            T2I,
            {"prompt": "a red fox"},
            x=("endpoint", [T2I, IMGM]),
            client=client,
            confirm_above=0,
        )
        assert not grid.run.started  # nothing sent: the words come from the plan
        billed = {state["endpoint"]: state["billed"] for state in grid.cell_states}
        assert billed == {T2I: "4 images", IMGM: "1 prompt (4 images)"}
        grid.close()


# --- billed units per kind (what a batch's budget caps) ---------------------------------


def test_images_prompts_seconds_characters_and_tasks() -> None:
    assert billed_units(endpoint("genW2.5-t2i-preview"), {"prompt": "a"}) == {
        "tasks": 1,
        "images": 4,  # n left out: the service makes 4
    }
    assert billed_units(endpoint("genW2.5-t2i-preview"), {"prompt": "a", "n": 2})["images"] == 2
    imgm = endpoint("imgM-v8.1-t2i")
    assert billed_units(imgm, {"prompt": "a {red, blue} fox --repeat 2"}) == {
        "tasks": 1,
        "prompts": 4,
    }
    video = endpoint("vidVq2-text2video")
    assert billed_units(video, {"prompt": "a"}) == {"tasks": 1, "video_seconds": 5.0}
    assert billed_units(video, {"prompt": "a", "duration": 8})["video_seconds"] == 8.0
    speech = endpoint("speechM-02-turbo")
    assert billed_units(speech, {"text": "hello there"}) == {"tasks": 1, "speech_characters": 11}
    assert billed_units(endpoint("asset-get"), {"asset_id": "x"}) == {"tasks": 1}
    assert set(UNITS) >= {"tasks", "images", "prompts", "video_seconds", "speech_characters"}


def test_a_grid_whose_n_is_text_bills_and_asks_as_its_number_does() -> None:
    """``n="4"`` (a CSV cell, a form box) is sent as 4: three seeds make 12 images, so
    the grid bills 12 and asks above ``confirm_above=10``, as ``n=4`` does."""
    for n in (4, "4", "4.0", " 4 "):
        plan = plan_grid(T2I, {"prompt": "a fox", "n": n}, x=("seed", "1,2,3"))
        assert plan.billed_total == 12, n
        assert needs_confirmation(plan.billed_total, CONFIRM_ABOVE), n
        assert billed_units(endpoint(T2I), {"prompt": "a", "n": n})["images"] == 4


def test_seconds_the_payload_cannot_say_are_unknown() -> None:
    vida = endpoint("vidA-2-0")
    content = [{"type": "text", "text": "a kite"}]
    assert billed_units(vida, {"content": content, "duration": -1})["video_seconds"] is None
    assert billed_units(vida, {"content": content})["video_seconds"] == 5.0
    lips = endpoint("vidK-lip-sync")
    assert billed_units(lips, {})["video_seconds"] is None  # no duration field


def test_billing_values_read_an_aliased_field_by_its_wire_name() -> None:
    """Payloads are keyed by wire names; the billed field's Python name differs."""
    from typing import Annotated

    from pydantic import Field

    from genwidgets.catalog import BILLED, Endpoint, ServiceDefault, register, unregister
    from genwidgets.lab.cost import billing_values

    @register("test-cost-aliased", kind="image", family="mine", title="t", documented=False)
    class Aliased(Endpoint):
        aspect: Annotated[str | None, BILLED, ServiceDefault("16:9")] = Field(
            None, alias="aspectRatio"
        )

    try:
        spec = endpoint("test-cost-aliased")
        values = billing_values(spec, [{"aspectRatio": "1:1"}, {}])
        assert values == {"aspectRatio": ["1:1", "16:9 (default)"]}
    finally:
        unregister("test-cost-aliased")
