"""imgM rules on both sides of every boundary."""

from __future__ import annotations

from typing import Any

import pytest
from catalog_rules import table_tests

import genwidgets as gw
from genwidgets.errors import PayloadError
from genwidgets.imgm import MAX_PROMPTS, Prompt
from genwidgets.protocol.prepared import prepare
from genwidgets.simulator.server import embedded

MASK_URL = {"url": "https://example.com/mask.png"}
AREA = {"width": 500, "height": 4096, "points": [0, 0, 100, 0, 100, 100]}


def inpaint(**fields: Any) -> dict[str, Any]:
    return {"jobId": "job-1", "imageNo": 0, "mask": MASK_URL, **fields}


def pan(**fields: Any) -> dict[str, Any]:
    return {"jobId": "job-1", "imageNo": 0, "direction": 0, "scale": 2.0, **fields}


def i2i(**fields: Any) -> dict[str, Any]:
    return {"jobId": "job-1", "image_no": 0, **fields}


CASES: list[tuple[str, dict[str, Any], str | None]] = [
    # imgM-inpaint
    ("imgM-inpaint", inpaint(), None),
    ("imgM-inpaint", inpaint(imageNo=3), None),
    ("imgM-inpaint", inpaint(imageNo=4), "must be 0-3"),
    ("imgM-inpaint", inpaint(imageNo=-1), "must be 0-3"),
    ("imgM-inpaint", inpaint(jobId=""), "at least 1 character"),
    ("imgM-inpaint", {"jobId": "j", "imageNo": 0}, "Field required"),
    ("imgM-inpaint", inpaint(mask={}), "areas list or a url"),
    ("imgM-inpaint", inpaint(mask={"areas": []}), "areas list or a url"),
    ("imgM-inpaint", inpaint(mask={"areas": [AREA]}), None),
    ("imgM-inpaint", inpaint(mask={"url": "iVBORw0KGgo="}), None),
    ("imgM-inpaint", inpaint(mask={"url": "data:image/png;base64,iVBORw0KGgo="}), None),
    ("imgM-inpaint", inpaint(mask={"url": "mask.png"}), "gw.media"),
    ("imgM-inpaint", inpaint(mask={"areas": [{**AREA, "width": 499}]}), "must be 500-4096"),
    ("imgM-inpaint", inpaint(mask={"areas": [{**AREA, "height": 4097}]}), "must be 500-4096"),
    ("imgM-inpaint", inpaint(mask={"areas": [{**AREA, "points": [1, 2, 3, 4, 5]}]}), "at least 6"),
    ("imgM-inpaint", inpaint(mask={"areas": [{**AREA, "points": [1] * 7}]}), "even count"),
    ("imgM-inpaint", inpaint(mask={"areas": [{**AREA, "points": [1] * 8}]}), None),
    ("imgM-inpaint", inpaint(area=AREA), None),
    ("imgM-inpaint", inpaint(area={**AREA, "width": 4096, "height": 500}), None),
    ("imgM-inpaint", inpaint(area={**AREA, "width": 4097}), "must be 500-4096"),
    ("imgM-inpaint", inpaint(area={**AREA, "height": 499}), "must be 500-4096"),
    ("imgM-inpaint", inpaint(area={**AREA, "points": [0, 0, 1, 1]}), "3 points"),
    ("imgM-inpaint", inpaint(area={**AREA, "points": [0.5] * 9}), "even count"),
    ("imgM-inpaint", inpaint(area={"width": 500, "height": 500}), "Field required"),
    ("imgM-inpaint", inpaint(remixPrompt="x"), None),
    ("imgM-inpaint", inpaint(remixPrompt="x" * 8192), None),
    ("imgM-inpaint", inpaint(remixPrompt="x" * 8193), "must have 1-8192 characters"),
    ("imgM-inpaint", inpaint(remixPrompt=""), "must have 1-8192 characters"),
    # imgM_pan
    ("imgM_pan", pan(), None),
    ("imgM_pan", pan(direction=3), None),
    ("imgM_pan", pan(direction=4), "expected one of 0, 1, 2, 3; got 4"),
    ("imgM_pan", pan(direction="1"), None),
    ("imgM_pan", pan(scale=1.1), None),
    ("imgM_pan", pan(scale=3.0), None),
    ("imgM_pan", pan(scale=3), None),
    ("imgM_pan", pan(scale=1.09), "must be 1.1-3"),
    ("imgM_pan", pan(scale=3.01), "must be 1.1-3"),
    ("imgM_pan", pan(imageNo=4), "must be 0-3"),
    ("imgM_pan", {"jobId": "j", "imageNo": 0, "direction": 0}, "Field required"),
    ("imgM_pan", pan(remixPrompt="y" * 8193), "must have 1-8192 characters"),
    # imgM-v8.1-i2i
    ("imgM-v8.1-i2i", i2i(), None),
    ("imgM-v8.1-i2i", i2i(type=1, remix_prompt="bluer --ar 2:1"), None),
    ("imgM-v8.1-i2i", i2i(type=2), "expected one of 0, 1; got 2"),
    ("imgM-v8.1-i2i", i2i(image_no=4), "must be 0-3"),
    ("imgM-v8.1-i2i", i2i(remix_prompt=""), "must have 1-8192 characters"),
    ("imgM-v8.1-i2i", i2i(remix_prompt="z" * 8193), "must have 1-8192 characters"),
    ("imgM-v8.1-i2i", {"image_no": 0}, "Field required"),
    # referenced
    ("imgM-v8.1-t2i", {"prompt": "p" * 8192}, None),
    ("imgM-v8.1-t2i", {"prompt": "p" * 8193}, "must have 1-8192 characters"),
    ("imgM-v8.1-t2i", {"prompt": ""}, "must have 1-8192 characters"),
    ("imgM_diffusion", {"prompt": "a cat --v 7"}, None),
    ("imgM_diffusion", {}, "Field required"),
]

test_imgm_rules, *_ = table_tests(CASES)


def test_pan_direction_given_as_text_is_sent_as_a_number() -> None:
    from genwidgets.catalog import payload_of

    assert payload_of("imgM_pan", pan(direction="2"))["direction"] == 2


def _options(count: int) -> str:
    return "{" + ", ".join(f"colour {i}" for i in range(count)) + "}"


I2I = ("imgM-v8.1-i2i", "remix_prompt", i2i())
PROMPT_FIELDS = [
    ("imgM-v8.1-t2i", "prompt", {}),
    ("imgM_diffusion", "prompt", {}),
    ("imgM-inpaint", "remixPrompt", inpaint()),
    ("imgM_pan", "remixPrompt", pan()),
]


@pytest.mark.parametrize(("endpoint_id", "field", "base"), [*PROMPT_FIELDS, I2I])
def test_a_permutation_prompt_over_the_cap_is_refused_before_sending(
    endpoint_id: str, field: str, base: dict[str, Any]
) -> None:
    """41 prompts (41 options, or 7 x 6 = 42 from two groups) are refused, naming the count."""
    assert MAX_PROMPTS == 40
    for prompt, count in [
        (f"a {_options(41)} kite --ar 16:9", 41),
        (f"a {_options(7)} kite {_options(6)}", 42),
    ]:
        with pytest.raises(PayloadError) as info:
            gw.validate(endpoint_id, {**base, field: prompt})
        assert [e["loc"] for e in info.value.errors] == [(field,)]
        assert f"makes {count} prompts" in str(info.value)
        assert "at most 40" in str(info.value)
    at_the_cap = f"a {_options(5)} kite {_options(8)} --ar 16:9"
    assert gw.validate(endpoint_id, {**base, field: at_the_cap}).to_wire()[field] == at_the_cap


def test_escaped_braces_are_not_counted_and_unreadable_prompts_are_refused() -> None:
    escaped = "a \\{" + ", ".join(str(i) for i in range(60)) + "\\} kite"
    assert gw.validate("imgM-v8.1-t2i", {"prompt": escaped}).to_wire()["prompt"] == escaped
    with pytest.raises(PayloadError, match="brace") as info:
        gw.validate("imgM-v8.1-t2i", {"prompt": "a {red, blue kite"})
    assert [e["loc"] for e in info.value.errors] == [("prompt",)]


@pytest.mark.parametrize(
    ("prompt", "says"),
    [
        ("a kite --chaos 500", "--chaos takes a whole number 0-100; got 500"),
        ("a cat::-1 a dog::0.5", "add up to -0.5"),
        (
            "a kite {--chaos 50, --chaos 500}",
            "in prompt 2 of 2 ('a kite --chaos 500'): --chaos takes a whole number 0-100",
        ),
        ("a kite --chaos {50, 500}", "got 500"),
        ("a kite --ar 16:9 --aspect 1:1", "given twice"),
    ],
)
@pytest.mark.parametrize(("endpoint_id", "field", "base"), [*PROMPT_FIELDS, I2I])
def test_every_imgm_prompt_field_is_checked_whole_with_the_expansion_named(
    endpoint_id: str, field: str, base: dict[str, Any], prompt: str, says: str
) -> None:
    """One check in the catalog, so gw.validate, prepare/submit, forms and grids all
    refuse a prompt the gateway would bill and fail."""
    with pytest.raises(PayloadError) as info:
        gw.validate(endpoint_id, {**base, field: prompt})
    assert [e["loc"] for e in info.value.errors] == [(field,)]
    assert says in str(info.value)
    with pytest.raises(PayloadError, match=r"0-100|add up|twice"):
        prepare(endpoint_id, {**base, field: prompt})


@pytest.mark.parametrize(("endpoint_id", "field", "base"), [*PROMPT_FIELDS, I2I])
def test_a_prompt_is_sent_as_it_is_read_and_other_dashes_are_named(
    endpoint_id: str, field: str, base: dict[str, Any]
) -> None:
    """An em-dash is read as ``--`` and billed so (``—r 3``: 3 jobs): what is sent says
    ``--``, which every gateway of the spec reads. An en dash or a minus sign before a
    parameter's name is prompt text as typed, with a warning that says so."""
    body = prepare(endpoint_id, {**base, field: "a kite —ar 16:9 —r 3 —no birds"}).body
    assert b'"a kite --ar 16:9 --r 3 --no birds"' in body
    plain = "a kite  --ar 16:9"
    assert f'"{plain}"'.encode() in prepare(endpoint_id, {**base, field: plain}).body
    with pytest.warns(gw.IneffectiveFieldWarning) as found:
        body = prepare(endpoint_id, {**base, field: "a cat \u2013ar 16:9 \u2212\u2212no dogs"}).body
    said = [str(w.message) for w in found]
    assert any("\u2013ar is prompt text, not the parameter --ar" in s for s in said), said
    assert any("write --no" in s for s in said), said
    assert "a cat \u2013ar 16:9 \u2212\u2212no dogs".encode() in body


@pytest.mark.timeout(120)
def test_an_em_dash_in_a_permutation_is_sent_as_it_is_counted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``{—r 3, —r 2}`` bills 5 jobs, its expansions read as ``--r``: the prompt sent
    says ``--r`` too, as an em-dash outside a permutation is sent, so no gateway reads
    ``—r 3`` as text and makes one image where three were counted."""
    monkeypatch.delenv("GENWIDGETS_BASE_URL", raising=False)
    monkeypatch.delenv("GENWIDGETS_API_KEY", raising=False)
    typed = "a cat {—r 3, —r 2} —ar 16:9"
    built = Prompt.parse(typed)
    assert built.jobs() == 5 and str(built) == "a cat {--r 3, --r 2} --ar 16:9"
    assert Prompt.parse("a cat —{r 3, r 2}").expand() == ["a cat --r 3", "a cat --r 2"]
    client = gw.Client()
    try:
        job = client.submit("imgM-v8.1-t2i", {"prompt": typed})
        asked = embedded().state.scheduler.tasks[job.request_id].payload
    finally:
        client.close()
    assert asked == {"prompt": "a cat {--r 3, --r 2} --ar 16:9"}
    escaped = r"a cat {\—r 3, x} https://e.com/a—b"  # escaped and in a URL: text, as typed
    assert str(Prompt.parse(escaped)) == escaped


def test_other_dashes_in_a_permutation_are_named_once() -> None:
    """An en dash right after a permutation's brace is prompt text, like one after a
    space: the warning names it (once, however many options repeat it)."""
    with pytest.warns(gw.IneffectiveFieldWarning) as found:
        prepare("imgM-v8.1-t2i", {"prompt": "a cat {\u2013r 3, \u2013r 2}"})
    said = [str(w.message) for w in found]
    assert said == [
        "prompt: \u2013r is prompt text, not the parameter --r: its dashes are not two "
        "hyphens; write --r"
    ]
    assert Prompt.parse("a cat {\u2013tile, x}").warnings() != []
