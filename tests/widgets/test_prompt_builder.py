"""PromptBuilder driven in-process: controls <-> text, messages, cost."""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets
import pytest

from genwidgets._palette import PALETTE
from genwidgets.imgm import Prompt
from genwidgets.widgets.prompt_builder import PromptBuilder


def build(value: str = "") -> PromptBuilder:
    return PromptBuilder(value=value)


def value_changes(builder: PromptBuilder) -> list[str]:
    seen: list[str] = []
    builder.observe(lambda change: seen.append(change["new"]), "value")
    return seen


def test_is_a_widget_reachable_from_the_facade() -> None:
    builder = build("a cat")
    assert isinstance(builder, widgets.VBox)
    assert builder.value == "a cat"
    assert builder.text.value == "a cat"
    assert builder.prompt == Prompt.parse("a cat")


def test_groups_and_ranges_follow_the_spec() -> None:
    builder = build()
    assert list(builder.groups.titles) == [
        "composition",
        "style",
        "references",
        "quality and speed",
        "seed, stop, repeat, no",
    ]
    expected_ranges = {
        "stylize": (0, 1000),
        "chaos": (0, 100),
        "weird": (0, 3000),
        "exp": (0, 100),
        "sw": (0, 1000),
        "cw": (0, 100),
        "ow": (1, 1000),
        "stop": (10, 100),
        "repeat": (1, 40),
        "seed": (0, 4294967295),
    }
    for key, (low, high) in expected_ranges.items():
        control: Any = builder.controls[key]
        assert (control.input.min, control.input.max) == (low, high), key
    quality: Any = builder.controls["quality"]
    assert [v for _, v in quality.dropdown.options] == [None, 0.25, 0.5, 1, 2]
    style: Any = builder.controls["style"]
    assert [v for _, v in style.dropdown.options] == [
        None,
        "raw",
        "cute",
        "expressive",
        "original",
        "scenic",
    ]
    for key in ("ar", "tile", "sref", "sv", "cref", "oref", "iw", "speed", "seed", "no"):
        assert key in builder.controls


def test_every_control_starts_unset_and_writes_nothing() -> None:
    builder = build("a cat")
    for control in builder.controls.values():
        assert all(v is None for v in control.changes().values()), control.key
    assert builder.value == "a cat"


def test_text_moves_the_controls() -> None:
    builder = build()
    builder.text.value = "cat --ar 16:9 --s 250 --tile --q 0.5 --turbo --no a, b --sref x::2"
    controls: Any = builder.controls
    assert controls["ar"].text.value == "16:9"
    assert (controls["stylize"].toggle.value, controls["stylize"].input.value) == (True, 250)
    assert controls["stylize"].input.disabled is False
    assert controls["chaos"].toggle.value is False
    assert controls["chaos"].input.disabled is True
    assert controls["tile"].check.value is True
    assert controls["quality"].dropdown.value == 0.5
    assert controls["speed"].dropdown.value == "turbo"
    assert controls["no"].text.value == "a, b"
    assert controls["sref"].text.value == "x::2"
    builder.text.value = "cat"
    assert controls["stylize"].toggle.value is False
    assert controls["ar"].text.value == ""
    assert controls["speed"].dropdown.value is None


def test_controls_rewrite_the_text_and_keep_the_rest() -> None:
    builder = build("https://a.com/x.png a {red, blue} kite::2 --s 100 --ar 1:1")
    controls: Any = builder.controls
    controls["stylize"].input.value = 400
    assert builder.value == "https://a.com/x.png a {red, blue} kite::2 --s 400 --ar 1:1"
    controls["chaos"].toggle.value = True
    controls["chaos"].input.value = 30
    assert builder.value.endswith("--s 400 --ar 1:1 --chaos 30")
    controls["ar"].text.value = ""
    assert "--ar" not in builder.value
    controls["stylize"].toggle.value = False
    assert builder.value == "https://a.com/x.png a {red, blue} kite::2 --chaos 30"
    controls["speed"].dropdown.value = "fast"
    controls["speed"].dropdown.value = "relax"
    assert builder.value.endswith("--chaos 30 --relax")
    controls["tile"].check.value = True
    controls["quality"].dropdown.value = 2
    controls["no"].text.value = "cars, trees"
    assert Prompt.parse(builder.value).params == {
        "chaos": 30,
        "relax": True,
        "tile": True,
        "quality": 2,
        "no": ["cars", "trees"],
    }
    assert builder.text.value == builder.value


def test_one_notification_per_edit_and_no_echo() -> None:
    builder = build("cat")
    seen = value_changes(builder)
    controls: Any = builder.controls
    controls["seed"].toggle.value = True
    assert seen == ["cat --seed 0"]
    builder.text.value = "cat --seed 5"
    assert seen == ["cat --seed 0", "cat --seed 5"]
    assert controls["seed"].input.value == 5
    builder.value = "dog --tile"
    assert builder.text.value == "dog --tile"
    assert controls["tile"].check.value is True
    assert seen[-1] == "dog --tile" and len(seen) == 3


def test_typing_never_rewrites_the_text() -> None:
    builder = build()
    typed = "cat  --S 2000   —ar 3:1 --foo"
    builder.text.value = typed
    assert builder.text.value == typed
    assert builder.value == typed


def test_errors_red_and_warnings_amber_inline_and_escaped() -> None:
    builder = build("cat --seed <b>x</b> --ar 3:1")
    messages = builder.messages.value
    assert "&lt;b&gt;x&lt;/b&gt;" in messages and "<b>x</b>" not in messages
    red, amber = PALETTE["error"], PALETTE["warn"]
    assert red in messages and amber in messages
    seed_note = builder.controls["seed"].note.value
    assert "0-4294967295" in seed_note and red in seed_note and amber not in seed_note
    ar_note = builder.controls["ar"].note.value
    assert "experimental" in ar_note and amber in ar_note and red not in ar_note
    builder.text.value = "cat --seed 7"
    assert builder.messages.value == ""
    assert builder.controls["seed"].note.value == ""


def test_speed_conflict_is_shown_on_the_speed_control() -> None:
    builder = build("cat --fast --turbo")
    note = builder.controls["speed"].note.value
    assert "one speed at most" in note
    assert "--fast --turbo" in note
    builder.controls["speed"].dropdown.value = "relax"  # type: ignore[attr-defined]
    assert builder.value == "cat --relax"


def test_billed_jobs_always_visible() -> None:
    builder = build("cat {a, b, c} --r 2")
    assert "3 prompts × repeat 2 = 6 billed jobs" in builder.billing.value
    builder.controls["repeat"].input.value = 5  # type: ignore[attr-defined]
    assert "3 prompts × repeat 5 = 15 billed jobs" in builder.billing.value
    builder.text.value = "cat"
    assert "1 prompt × repeat 1 = 1 billed job" in builder.billing.value
    builder.text.value = "cat --ar {16:9, 1:1} --chaos {0, 50}"
    assert "4 prompts × repeat 1 = 4 billed jobs" in builder.billing.value
    builder.text.value = "cat {a, b} --r {1, 3}"
    assert "= 8 billed jobs" in builder.billing.value


def test_more_than_five_prompts_shows_the_count_prominently() -> None:
    builder = build("cat {a, b, c, d, e}")
    assert "gw-prompt-count" not in builder.billing.value
    builder.text.value = "cat {a, b, c, d, e, f}"
    assert "gw-prompt-count" in builder.billing.value
    assert "6 prompts" in builder.billing.value
    builder.text.value = "cat {a, b, c, d, e, f, g} {1, 2, 3, 4, 5, 6}"
    assert "42 prompts" in builder.billing.value
    assert "at most 40" in builder.messages.value


def test_unparseable_text_disables_controls_and_says_why() -> None:
    builder = build("cat --s 10")
    builder.text.value = "cat {a --s 10"
    assert builder.prompt is None
    assert builder.value == "cat {a --s 10"
    assert "never closed" in builder.messages.value
    assert "?" in builder.billing.value
    assert all(c.inputs[0].disabled for c in builder.controls.values())
    builder.text.value = "cat {a} --s 10"
    assert builder.prompt is not None
    assert not builder.controls["stylize"].inputs[0].disabled


def test_values_a_control_cannot_show_stay_in_the_text() -> None:
    builder = build("cat --chaos {0, 50} --stylize 5000 --q 3")
    controls: Any = builder.controls
    assert "{0, 50}" in controls["chaos"].note.value
    assert "5000" in controls["stylize"].note.value
    assert "3" in controls["quality"].note.value
    controls["exp"].toggle.value = True  # another control: the odd values survive
    assert builder.value == "cat --chaos {0, 50} --stylize 5000 --q 3 --exp 0"
    controls["stylize"].input.value = 300  # a deliberate change replaces the value
    assert "--stylize 300" in builder.value


def test_a_control_value_that_would_break_the_prompt_is_refused() -> None:
    builder = build("cat --s 10")
    builder.controls["ar"].text.value = "16:9 dog"  # type: ignore[attr-defined]
    assert builder.value == "cat --s 10"
    assert "text after the parameters" in builder.messages.value


@pytest.mark.parametrize(
    "start",
    ["", "a cat", "https://x.com/a::2.png cat --no cars, trees --ar 16:9"],
)
def test_text_stays_a_valid_round_trip_after_control_edits(start: str) -> None:
    builder = build(start)
    controls: Any = builder.controls
    controls["weird"].toggle.value = True
    controls["weird"].input.value = 2500
    controls["sref"].text.value = "https://s.com/a.png::2 random"
    controls["sw"].toggle.value = True
    parsed = Prompt.parse(builder.value)
    assert parsed.params["weird"] == 2500
    assert parsed.params["sw"] == 100
    assert Prompt.parse(str(parsed)) == parsed
    if start:
        assert builder.value.startswith(str(Prompt.parse(start)).split(" --")[0])


def test_moving_controls_from_the_text_does_not_echo_back() -> None:
    builder = build("cat")
    seen = value_changes(builder)
    typed = "cat   --seed   5  --s 700 --fast"
    builder.text.value = typed
    assert seen == [typed]
    assert builder.text.value == typed
    assert builder.controls["seed"].input.value == 5  # type: ignore[attr-defined]


def test_errors_of_one_expansion_show_beside_their_control() -> None:
    builder = build("a bird --{v 8.1, seed abc}")
    assert "in prompt 2 of 2" in builder.messages.value
    assert "0-4294967295" in builder.controls["seed"].note.value


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("{a,b}" * 1638, "more than 10^"),  # 8,190 characters, 2**1638 prompts
        ("cat --repeat " + "{1,2}" * 25, "33554432 prompts"),
        ("a kite " * 1170, "1 prompt × repeat 1"),  # 8,190 characters of text
        # 40 expansions that vary a parameter, each 7,900 characters, each checked
        ("w " * 3000 + "{" + ", ".join(f"--chaos {i * 3}" for i in range(40)) + "}", "40 prompts"),
    ],
)
def test_any_prompt_up_to_the_length_limit_is_shown_with_its_count(text: str, shown: str) -> None:
    """Counted, validated and shown without making its expansions (speed goal:
    benchmarks/prompt.py); the count is written even when it has thousands of digits."""
    builder = build(text)
    assert len(text) <= 8192
    assert shown in builder.billing.value
    if "more than" in shown or "33554432" in shown:
        assert "at most 40" in builder.messages.value
