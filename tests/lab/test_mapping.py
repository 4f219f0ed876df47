"""The endpoint axis against the simulator: one payload mapped per endpoint by
the table in lab/mapping.py (one test per row), dropped fields listed, missing
required fields refused before anything is sent, mixed kinds in one grid, and
counts per endpoint before sending."""

from __future__ import annotations

import base64
import io
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from PIL import Image
from widgets.taskfakes import ask

import genwidgets as gw
from genwidgets.catalog import Endpoint, register, unregister
from genwidgets.catalog import endpoint as catalog_endpoint
from genwidgets.errors import PayloadError
from genwidgets.imgm.prompt import Prompt
from genwidgets.lab.mapping import (
    CONTENT_TEXT,
    PROMPT_SEED,
    ROUTES,
    Route,
    map_payload,
    mapping_table,
    prompt_of,
    route_for,
)
from genwidgets.lab.plan import plan_grid
from genwidgets.simulator import SimulatorServer

T2I = "genW2.5-t2i-preview"
IMGM = "imgM-v8.1-t2i"
VIDEO = "vidVq2-text2video"
KEY = "sim-demo-key"
BASE = {"prompt": "a red fox in the snow", "seed": 7, "negative_prompt": "blur"}

pytestmark = pytest.mark.timeout(180)

#: the documented table (lab/mapping.py's docstring): where prompt and seed go
DOCUMENTED = {
    "genW2.5-t2i-preview": ("prompt", "seed"),
    "genW2.6-r2v": ("prompt", "seed"),
    "imgG-1.5-edit": ("prompt", None),
    "imgM-inpaint": ("remixPrompt", PROMPT_SEED),
    "imgM_pan": ("remixPrompt", PROMPT_SEED),
    "imgM-v8.1-i2i": ("remix_prompt", PROMPT_SEED),
    "imgQ-edit-plus": ("prompt", "seed"),
    "speechM-02-turbo": ("text", None),
    "vidA-2-0": (CONTENT_TEXT, None),
    "vidA-2-0-fast": (CONTENT_TEXT, None),
    "vidH_1.0_r2v": ("prompt", "seed"),
    "vidK-v3-turbo-t2v": ("prompt", None),
    "vidK-v1-6-multi-i2v": ("prompt", None),
    "vidK-v3-motion-control": ("prompt", None),
    "vidP_v6_transition": ("prompt", "seed"),
    "vidVq2-text2video": ("prompt", "seed"),
    "vidVq1-text2video": ("prompt", "seed"),
}


def _png() -> str:
    buffer = io.BytesIO()
    Image.new("RGB", (512, 512), (200, 60, 40)).save(buffer, "PNG")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


RAW = _png()
DATA_URL = "data:image/png;base64," + RAW


def upstream_imgm(base_url: str) -> str:
    """The request id of a finished imgM text-to-image task (the source imgM edits
    need), made on the simulator directly: the catalog has no such endpoint."""
    headers = {"Authorization": f"Bearer {KEY}"}
    with httpx.Client(base_url=base_url, headers=headers, timeout=30.0) as api:
        handle = api.post("/v1/queue/imgM-v8.1-t2i", json={"prompt": "a lighthouse"}).json()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if api.get(handle["status_url"]).json()["status"] == "COMPLETED":
                return str(handle["request_id"])
            time.sleep(0.05)
    raise AssertionError("the upstream imgM task did not complete in 60 s")


def extra_fields(base_url: str, job: str = "j-1") -> dict[str, dict[str, Any]]:
    """What each endpoint requires beyond prompt and seed (loopback URLs only)."""
    url = f"{base_url}/_sim/missing.png"
    return {
        "genW2.6-r2v": {"reference_urls": [url]},
        "imgG-1.5-edit": {"images": [DATA_URL]},
        "imgQ-edit-plus": {"images": [DATA_URL]},
        "imgM-inpaint": {"jobId": job, "imageNo": 0, "mask": {"url": url}},
        "imgM_pan": {"jobId": job, "imageNo": 0, "direction": 1, "scale": 1.5},
        "imgM-v8.1-i2i": {"jobId": job, "image_no": 0},
        "vidH_1.0_r2v": {"media": [{"type": "reference_image", "url": url}]},
        "vidK-v1-6-multi-i2v": {"image_list": [{"image": RAW}]},
        "vidK-v3-motion-control": {
            "image_url": url,
            "video_url": f"{base_url}/_sim/missing.mp4",
            "character_orientation": "image",
            "mode": "std",
        },
        "vidP_v6_transition": {"first_frame_image": url, "last_frame_image": url},
    }


@pytest.fixture
def client(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, simulator: SimulatorServer
) -> Iterator[gw.Client]:
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path))
    made = gw.Client(base_url=simulator.base_url, api_key=KEY)
    yield made
    made.close()


def test_routes_are_resolved_per_endpoint_and_follow_the_table_and_the_catalog(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A route is resolved once per table entry and field names: another endpoint, a
    changed ROUTES entry or an endpoint registered again with other fields is not
    answered from an earlier resolution."""
    t2i, speech = catalog_endpoint("genW2.5-t2i-preview"), catalog_endpoint("speechM-02-turbo")
    assert route_for(t2i) == Route(prompt="prompt", seed="seed")
    assert route_for(speech) == Route(prompt="text", seed=None)
    assert route_for(catalog_endpoint("vidA-2-0")) == Route(prompt=CONTENT_TEXT, seed=None)
    with monkeypatch.context() as patched:
        patched.setitem(ROUTES, "speechM-02-turbo", Route(prompt=None, seed=None))
        assert route_for(speech) == Route(prompt=None, seed=None)
        assert prompt_of(speech, {"text": "hello"}) is None
    assert prompt_of(speech, {"text": "hello"}) == "hello"
    mine = register("test-route-mine", kind="image", family="mine", title="t")

    @mine
    class Mine(Endpoint):
        prompt: str | None = None

    try:
        assert route_for(catalog_endpoint("test-route-mine")).prompt == "prompt"

        @mine  # the same id again, another field: a notebook cell run twice
        class MineAgain(Endpoint):
            remixPrompt: str | None = None  # a gateway's camelCase

        assert route_for(catalog_endpoint("test-route-mine")).prompt == "remixPrompt"
    finally:
        unregister("test-route-mine")


def test_the_computed_table_is_the_documented_one() -> None:
    found = {r["endpoint"]: (r["prompt"], r["seed"]) for r in mapping_table()}
    assert found == DOCUMENTED


@pytest.mark.slow
@pytest.mark.parametrize("row", mapping_table(), ids=lambda r: r["endpoint"])
def test_each_mapping_row_puts_prompt_and_seed_where_its_endpoint_takes_them(
    row: dict[str, Any], client: gw.Client
) -> None:
    target = row["endpoint"]
    job = upstream_imgm(client.base_url) if target.lower().startswith("imgm") else "j-1"
    extra = extra_fields(client.base_url, job).get(target)
    grid = gw.grid(
        T2I,
        BASE,
        x=("endpoint", [target]),
        client=client,
        per_endpoint={target: extra} if extra else None,
        confirm_above=100,
    )
    cell = grid.cells[0]
    spec = gw.endpoint(target)
    sent = cell.payload
    # the prompt, read back where the endpoint keeps it
    text = prompt_of(spec, sent)
    assert text is not None
    if row["seed"] == PROMPT_SEED:
        parsed = Prompt.parse(text)
        assert parsed.params["seed"] == 7 and parsed.text.strip() == BASE["prompt"]
    else:
        assert text == BASE["prompt"]
    if row["seed"] == "seed":
        assert sent["seed"] == 7 and "seed" not in cell.dropped
    elif row["seed"] is None:
        assert "seed" not in sent and "seed" in cell.dropped
    kept = "negative_prompt" in {(f.alias or n) for n, f in spec.model.model_fields.items()}
    assert ("negative_prompt" in sent) is kept
    assert ("negative_prompt" in (cell.plan_note or "")) is not kept
    assert cell.endpoint == target and cell.kind == spec.kind and cell.billed >= 1
    # the gateway took it: a task exists for that endpoint (nothing failed to create)
    assert cell.error is None and cell.request_id
    assert cell.job is not None and cell.job.endpoint == target
    grid.cancel_all()


def test_a_dropped_field_is_listed_in_the_cells_note(client: gw.Client) -> None:
    plan = plan_grid(
        T2I,
        BASE,
        x=("endpoint", [T2I, "vidK-v3-turbo-t2v"]),
        prepare=client.prepare,
    )
    genw, vidk = plan.cells
    assert genw.dropped == () and genw.plan_note is None
    assert vidk.dropped == ("negative_prompt", "seed")
    assert vidk.plan_note == (
        "not sent to vidK-v3-turbo-t2v (no such field): negative_prompt, seed"
    )


def test_a_field_the_user_never_set_carries_no_note() -> None:
    """The seed the grid draws and locks is the grid's, not the user's: an endpoint
    without a seed field leaves it out in silence; a seed the user gave is noted."""
    endpoints = [T2I, "speechM-02-turbo", "vidK-v3-turbo-t2v"]
    drawn = plan_grid(T2I, {"prompt": "a red fox"}, x=("endpoint", endpoints))
    assert drawn.seed is not None  # locked for the endpoints that take one
    assert drawn.cells[0].payload["seed"] == drawn.seed
    assert [c.plan_note for c in drawn.cells] == [None, None, None]
    in_payload = plan_grid(T2I, {"prompt": "a red fox", "seed": 5}, x=("endpoint", endpoints))
    as_lock = plan_grid(T2I, {"prompt": "a red fox"}, x=("endpoint", endpoints), seed=5)
    for chosen in (in_payload, as_lock):
        assert [c.dropped for c in chosen.cells] == [(), ("seed",), ("seed",)]


def test_a_seed_the_user_wrote_in_a_cells_own_terms_is_not_replaced() -> None:
    """``--seed 5`` in a genW prompt is words to genW but imgM's seed: beside an endpoint
    axis the imgM cell keeps it (it was sent the drawn seed), the genW cell gets the locked
    seed (and a warning that it reads --ar and --seed as words). A seed the user set in a
    field or on an axis still goes to every cell; nothing is sent."""
    both = ("endpoint", [T2I, IMGM])
    typed = "a red fox --ar 16:9 --seed 5"
    with pytest.warns(gw.IneffectiveFieldWarning, match="--ar and --seed are imgM parameters"):
        genw_base = plan_grid(T2I, {"prompt": typed, "n": 1}, x=both)
        replayed = plan_grid(T2I, {"prompt": typed, "n": 1}, x=both, seed=9)
    for plan, locked in ((genw_base, genw_base.seed), (replayed, 9)):
        genw, imgm = plan.cells
        assert genw.payload == {"prompt": typed, "n": 1, "seed": locked}
        assert imgm.payload == {"prompt": typed}
    with pytest.warns(gw.IneffectiveFieldWarning, match="--ar is an imgM parameter"):
        imgm_base = plan_grid(IMGM, {"prompt": typed}, x=both)
    assert imgm_base.seed is None
    assert [c.payload for c in imgm_base.cells] == [
        {"prompt": "a red fox --ar 16:9", "seed": 5},
        {"prompt": typed},
    ]
    with pytest.warns(gw.IneffectiveFieldWarning):
        given = plan_grid(T2I, {"prompt": typed, "n": 1, "seed": 7}, x=both)
        on_axis = plan_grid(T2I, {"prompt": typed, "n": 1}, x=both, y=("seed", [1, 2]))
    assert Prompt.parse(given.cells[1].payload["prompt"]).params["seed"] == 7
    sent = [Prompt.parse(c.payload["prompt"]).params["seed"] for c in on_axis.cells[1::2]]
    assert sent == [1, 2]
    mapped = map_payload(
        catalog_endpoint(T2I), catalog_endpoint(IMGM), {"prompt": typed, "seed": 9},
        seed_locked=True,
    )  # fmt: skip
    assert mapped.payload == {"prompt": typed}


def test_a_missing_required_field_is_refused_before_anything_is_sent(client: gw.Client) -> None:
    with pytest.raises(PayloadError) as caught:
        gw.grid(
            T2I, BASE, x=("endpoint", [T2I, "imgQ-edit-plus"]), y=("seed", [1, 2]), client=client
        )
    text = str(caught.value)
    assert "endpoint=imgQ-edit-plus" in text and "'images'" in text and "per_endpoint" in text
    assert client.request_counts["create"] == 0
    # given per endpoint, the same grid plans
    plan = plan_grid(
        T2I,
        BASE,
        x=("endpoint", [T2I, "imgQ-edit-plus"]),
        per_endpoint={"imgQ-edit-plus": {"images": [DATA_URL]}},
        prepare=client.prepare,
    )
    assert plan.cells[1].payload["images"] == [DATA_URL]
    with pytest.raises(PayloadError, match="not an endpoint of this grid"):
        plan_grid(T2I, BASE, x=("endpoint", [T2I]), per_endpoint={"imgQ-edit-plus": {}})


def test_an_unknown_endpoint_on_the_axis_names_the_closest(client: gw.Client) -> None:
    with pytest.raises(PayloadError, match="did you mean 'imgQ-edit-plus'"):
        gw.grid(T2I, BASE, x=("endpoint", [T2I, "imgQ-edit-pluss"]), client=client)
    assert client.request_counts["create"] == 0


@pytest.mark.slow
def test_counts_per_endpoint_first_and_nothing_sent_above_confirm_above(
    client: gw.Client,
) -> None:
    grid = gw.grid(
        T2I,
        {"prompt": "a red fox"},
        x=("endpoint", [T2I, "vidVq2-text2video", "speechM-02-turbo"]),
        y=("seed", [1, 2]),
        client=client,
        confirm_above=3,
    )
    summary = grid.plan.summary()
    assert summary.startswith("3 endpoints × 2 seeds: 6 tasks, ")
    billed = sum(c.billed for c in grid.cells if c.kind == "image")
    assert f"{billed} billed image" in summary and "2 billed videos" in summary
    assert "2 billed audio clips" in summary
    # genW's n and vidV's billing fields are left to the service: the summary says so
    assert f"{T2I}" in summary and "by default → set n" in summary
    assert "vidVq2-text2video by default → set duration, resolution, off_peak" in summary
    assert client.request_counts["create"] == 0 and not grid.run.started
    grid.submit()
    assert client.request_counts["create"] == 6
    grid.cancel_all()


@pytest.mark.slow
def test_image_video_and_audio_cells_side_by_side(client: gw.Client) -> None:
    grid = gw.grid(
        T2I,
        {"prompt": "a red fox", "n": 1},
        x=("endpoint", [T2I, "vidVq2-text2video", "speechM-02-turbo"]),
        client=client,
    )
    grid.wait(timeout=150)
    states = {s["endpoint"]: s for s in grid.cell_states}
    assert {k: s["kind"] for k, s in states.items()} == {
        T2I: "image",
        "vidVq2-text2video": "video",
        "speechM-02-turbo": "speech",
    }
    assert all(s["category"] == "done" for s in states.values()), states
    image, video = states[T2I]["outputs"][0], states["vidVq2-text2video"]["outputs"][0]
    assert image["kind"] == "image" and image["src"] == ""
    thumbs = {grid.cells[i].endpoint: grid.thumbs[str(i)][0] for i in range(3)}
    assert thumbs[T2I].startswith("data:image/") and thumbs[VIDEO].startswith("data:image/")
    assert thumbs["speechM-02-turbo"] == ""  # audio has no picture
    assert video["kind"] == "video" and video["src"] == ""  # the cell holds no video
    assert states["speechM-02-turbo"]["outputs"][0]["kind"] == "audio"
    # the lightbox asks for the full output and gets it as the answer
    sent: list[Any] = []
    grid.send = lambda content, buffers=None: sent.append(content)  # type: ignore[method-assign]
    full = ask(grid, "_ask_full", {"index": grid.cells[1].index})  # the lightbox
    assert full["outputs"][0]["src"].startswith(("http://127.0.0.1", "data:video/"))
    assert "$GENWIDGETS_API_KEY" in full["code"]["curl"] and KEY not in str(full)
    # a new view asks for the thumbnails made so far and gets them all, as its answer
    assert ask(grid, "_ask_thumbs")["thumbs"] == grid.thumbs and len(grid.thumbs) == 3
    assert sent == []  # both answers went to the page that asked, as replies
