"""Grid planning: layout, imgM groups as axes, the locked seed, counting and
billing, the 400-cell cap, and cell validation errors that name the cell."""

from __future__ import annotations

import pytest

from genwidgets.errors import PayloadError
from genwidgets.imgm.prompt import Prompt
from genwidgets.lab.plan import MAX_CELLS, plan_grid
from genwidgets.lab.sweep import plan_sweep

T2I = "genW2.5-t2i-preview"
IMGM = "imgM-v8.1-t2i"
VIDEO = "vidVq2-text2video"


def test_x_is_a_row_x_and_y_a_table_z_adds_tabs() -> None:
    row = plan_grid(T2I, {"prompt": "a fox"}, x=("seed", [1, 2, 3]))
    assert row.shape == (1, 1, 3)
    table = plan_grid(T2I, {"prompt": "a fox"}, x=("seed", [1, 2, 3]), y=("prompt", ["a", "b"]))
    assert table.shape == (1, 2, 3)
    # row by row: y outer, x inner
    assert [(c.values["y"], c.values["x"]) for c in table.cells][:4] == [
        ("a", 1),
        ("a", 2),
        ("a", 3),
        ("b", 1),
    ]
    tabs = plan_grid(
        T2I, {"prompt": "a fox"}, x=("seed", [1, 2]), y=("prompt", ["a", "b"]), z=("n", [1, 2])
    )
    assert tabs.shape == (2, 2, 2) and tabs.tasks == 8
    assert tabs.cells[5].position == (1, 0, 1)


def test_a_swap_moves_axes_not_cells() -> None:
    plan = plan_grid(T2I, {"prompt": "a fox"}, x=("seed", [1, 2, 3]), y=("prompt", ["a", "b"]))
    swapped = plan.swapped("x", "y")
    assert swapped.shape == (1, 3, 2)
    assert swapped.cells == plan.cells
    cell = plan.cells[1]  # y="a", x=2
    assert plan.place(cell) == (0, 0, 1) and swapped.place(cell) == (0, 1, 0)
    with pytest.raises(ValueError, match="swap two of"):
        plan.swapped("x", "w")


def test_imgm_permutation_groups_lay_themselves_out() -> None:
    plan = plan_grid(IMGM, {"prompt": "a {red, blue} kite --ar {1:1, 16:9}"})
    assert plan.shape == (1, 2, 2) and plan.tasks == 4
    assert plan.shown("y") is not None and plan.shown("y").values == ("red", "blue")  # type: ignore[union-attr]
    assert plan.shown("x").values == ("1:1", "16:9")  # type: ignore[union-attr]
    prompts = [Prompt.parse(c.payload["prompt"]) for c in plan.cells]
    assert all(p.count() == 1 for p in prompts)  # one task per cell, no permutation left
    assert [p.text for p in prompts] == ["a red kite"] * 2 + ["a blue kite"] * 2
    assert [p.params["ar"] for p in prompts] == ["1:1", "16:9", "1:1", "16:9"]
    assert plan.billed_total == 4


def test_three_groups_make_tabs_and_four_are_refused() -> None:
    plan = plan_grid(IMGM, {"prompt": "a {red, blue} {kite, boat} {at dawn, at dusk, at noon}"})
    assert plan.shape == (2, 2, 3)
    with pytest.raises(PayloadError, match="at most 3"):
        plan_grid(IMGM, {"prompt": "{a, b} {c, d} {e, f} {g, h}"})
    with pytest.raises(PayloadError, match="give at least x"):
        plan_grid(T2I, {"prompt": "a fox"})
    with pytest.raises(PayloadError, match="give x first"):
        plan_grid(T2I, {"prompt": "a fox"}, y=("seed", [1, 2]))


def test_one_seed_is_drawn_and_sent_with_every_cell() -> None:
    plan = plan_grid(T2I, {"prompt": "a fox"}, x=("prompt", ["a fox", "a cat", "a dog"]))
    assert plan.seed is not None and plan.seed_field == "seed"
    assert {c.payload["seed"] for c in plan.cells} == {plan.seed}
    assert f"seed locked at {plan.seed}" in plan.summary()
    # the payload's own seed, or an axis over seeds, is left alone
    assert plan_grid(T2I, {"prompt": "a", "seed": 7}, x=("n", [1, 2])).seed is None
    assert plan_grid(T2I, {"prompt": "a"}, x=("seed", [1, 2])).seed is None
    # imgM: as --seed in the prompt, unless the prompt has one
    imgm = plan_grid(IMGM, {"prompt": "a {red, blue} kite"})
    assert imgm.seed is not None
    assert all(Prompt.parse(c.payload["prompt"]).params["seed"] == imgm.seed for c in imgm.cells)
    assert plan_grid(IMGM, {"prompt": "a {red, blue} kite --seed 3"}).seed is None


def test_counting_and_billing_before_sending() -> None:
    plan = plan_grid(VIDEO, {"prompt": "a kite"}, x=("duration", [4, 8]), y=("seed", [1, 2]))
    assert plan.tasks == 4
    assert plan.billing["duration"] == [4, 8]
    assert "4 tasks" in plan.summary() and "duration = 4, 8" in plan.summary()
    repeat = plan_grid(IMGM, {"prompt": "a {red, blue} kite --repeat 3"})
    assert repeat.tasks == 2 and repeat.billed_total == 6
    assert "6 billed prompts (24 images)" in repeat.summary()


def test_more_than_400_cells_is_refused_with_both_numbers() -> None:
    with pytest.raises(PayloadError) as caught:
        plan_grid(
            T2I, {"prompt": "a"}, x=("seed", "1-21"), y=("prompt", [str(i) for i in range(20)])
        )
    assert "420 cells" in str(caught.value) and str(MAX_CELLS) in str(caught.value)


def test_every_cell_is_validated_and_a_bad_one_names_its_axis_values_and_field() -> None:
    with pytest.raises(PayloadError) as caught:
        plan_grid(VIDEO, {"prompt": "a kite"}, x=("duration", [4, 999]), y=("seed", [1, 2]))
    errors = caught.value.errors
    assert len(errors) == 2  # both cells with 999, nothing else
    assert all(e["loc"] == ("duration",) for e in errors)
    assert all(e["msg"].startswith("in the cell seed=") for e in errors)
    assert all("duration=999" in e["msg"] and "must be 1-10" in e["msg"] for e in errors)
    assert "  - duration: in the cell seed=1 · duration=999: must be 1-10" in str(caught.value)


def test_sweep_planning_is_the_same_product() -> None:
    plan = plan_sweep(T2I, {"prompt": "a"}, vary={"seed": [1, 2], "n": [1, 2]})
    assert plan.labels == [
        {"seed": 1, "n": 1},
        {"seed": 1, "n": 2},
        {"seed": 2, "n": 1},
        {"seed": 2, "n": 2},
    ]
    assert plan.payloads[1] == {"prompt": "a", "seed": 1, "n": 2}


def test_a_sweep_tries_every_value_a_generator_gives() -> None:
    plan = plan_sweep(T2I, {"prompt": "a"}, vary={"seed": (s for s in (1, 2, 3))})
    assert plan.labels == [{"seed": 1}, {"seed": 2}, {"seed": 3}]
    with pytest.raises(PayloadError, match="give a non-empty list of values to try"):
        plan_sweep(T2I, {"prompt": "a"}, vary={"seed": (s for s in ())})


def test_an_escaped_comma_in_a_group_stays_escaped_in_the_cells_prompt() -> None:
    plan = plan_grid(IMGM, {"prompt": "a {pastel \\, yellow, red} kite --no {smoke\\, fog, rain}"})
    assert plan.shown("y").values == ("pastel\\, yellow", "red")  # type: ignore[union-attr]
    assert plan.shown("x").values == ("smoke\\, fog", "rain")  # type: ignore[union-attr]
    first = Prompt.parse(plan.cells[0].payload["prompt"])
    assert first.count() == 1 and first.text == "a pastel\\, yellow kite"
    assert first.params["no"] == ["smoke\\, fog"]  # one item, not two
    assert first.expand()[0].startswith("a pastel, yellow kite --no smoke, fog")


@pytest.mark.parametrize(
    "prompt",
    [
        "a {pastel \\, yellow, red} kite --seed 1",
        "a {red, blue} kite --no {smoke\\, fog, rain} --seed 1",
        "a {\\{curly\\} sign, plain sign} --seed 1",
        "a {back\\\\slash, none} --seed 1",
        "{https://example.com/a.png, https://example.com/b\\x.png} a kite --seed 1",
        "a {red {bird, kite}, blue} --ar {1:1, 16:9} --seed 1",
    ],
)
def test_each_cell_sends_what_its_expansion_of_the_whole_prompt_sends(prompt: str) -> None:
    plan = plan_grid(IMGM, {"prompt": prompt})
    assert [Prompt.parse(c.payload["prompt"]).expand() for c in plan.cells] == [
        [sent] for sent in Prompt.parse(prompt).expand()
    ]


def test_the_summary_counts_each_axis_by_name() -> None:
    row = plan_grid("genW2.5-t2i-preview", {"prompt": "a fox", "n": 1}, x=("seed", [1, 2]))
    assert row.summary().startswith("genW2.5-t2i-preview, 2 seeds: 2 tasks")
    assert "2 grid" not in row.summary()
    table = plan_grid(
        "genW2.5-t2i-preview",
        {"prompt": "a fox", "n": 1},
        x=("seed", [1, 2, 3]),
        y=("prompt_sr", ["fox", "cat"]),
    )
    assert table.summary().startswith("genW2.5-t2i-preview, 3 seeds × 2 prompts: 6 tasks")
    assert table.axes["y"] is not None and table.axes["y"].label == "prompt_sr"


@pytest.mark.parametrize(
    ("vary", "says"),
    [
        ({"seed": [7, 7]}, "vary.seed: the value 7 is given twice"),
        ({"seed": [7, 7.0]}, "vary.seed: the value 7.0 is given twice"),
        ({"seed": [7, "7"]}, "vary.seed: the value '7' is given twice"),  # one body
        ({"sede": [1, 2, 3]}, "vary.sede: unknown field 'sede'; did you mean 'seed'?"),
    ],
)
def test_a_sweep_refuses_what_a_grid_refuses_before_anything_is_paid(
    vary: dict[str, list[object]], says: str
) -> None:
    """A value given twice, or a misspelt field, made tasks that differ in nothing the
    endpoint reads, each paid; a grid's axis refused them, a sweep sent them."""
    with pytest.raises(PayloadError) as refused:
        plan_sweep(T2I, {"prompt": "a", "seed": 5}, vary=vary)
    assert says in str(refused.value)
