"""Planning a batch: rows to payloads, the endpoint column through the grid's mapping
table, units counted with the service's defaults, names, and every problem at once."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest

from genwidgets.errors import EndpointNotFound, PayloadError
from genwidgets.lab import batch_plan
from genwidgets.lab.batch_plan import plan_batch
from genwidgets.lab.naming import file_name
from genwidgets.protocol.prepared import prepare

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
    assert ("row 1 (line 3)", "seed") in found  # not a number; its line in the file
    assert ("row 2 (line 4)", "prompt") in found  # required, the cell is empty
    assert ("row 3 (line 5)", "endpoint") in found  # unknown endpoint, with the closest
    assert any(loc[0] == "row 4 (line 6)" for loc in found)  # lip sync needs what rows lack
    assert not any(loc[0].startswith("row 0") for loc in found)
    text = str(info.value)
    assert "'x' is not a number" in text and "unknown endpoint 'vidZ-none'" in text


def test_many_problems_are_listed_then_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batch_plan, "MAX_LISTED", 5)
    with pytest.raises(PayloadError) as info:
        plan_batch(T2I, [{"prompt": "a", "seed": "x"}] * 12)
    assert len(info.value.errors) == 6
    assert info.value.errors[-1]["msg"].startswith("and 7 more problems in 7 more row(s)")


def test_two_rows_with_one_file_name_are_refused() -> None:
    with pytest.raises(PayloadError, match="row 0 has its file name too") as info:
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


def test_a_derived_id_keeps_its_digest_across_versions() -> None:
    """The digest names a batch that a later run resumes: these rows had this digest
    before planning was made faster, and must keep it (or the same command would not
    find its batch again)."""
    rows = [{"text": "a fox", "seed": "1"}, {"text": "café 🦊", "seed": 2, "note": None}]
    plan = plan_batch(T2I, rows, {"prompt": "{text}", "seed": "{seed}", "n": 1})
    assert plan.digest == "5fbdbf7544309c0b4b0142b93986146bad3482d3fbc3e6940546be005ef17f86"


def test_plans_of_other_templates_and_endpoints_in_one_process_keep_their_own() -> None:
    """What planning works out once (routes, the names a file template shows, the
    catalog's answers) serves each plan its own payloads, bodies, units and names."""
    rows = [{"text": "a fox", "seed": "1"}, {"text": "a kite", "seed": "2"}]
    first = plan_batch(T2I, rows, {"prompt": "{text}", "seed": "{seed}", "n": 1}, prepare=prepare)
    inked = plan_batch(
        T2I, rows, {"prompt": "{text}, ink", "n": 2}, filenames="{endpoint}-{row}.{ext}",
        prepare=prepare,
    )  # fmt: skip
    speech = plan_batch(
        "speechM-02-turbo", rows, {"text": "{text}", "audio_setting.format": "wav"},
        filenames="{kind}-{slug}.{ext}", prepare=prepare,
    )  # fmt: skip
    assert [r.payload for r in first.rows] == [
        {"prompt": "a fox", "seed": 1, "n": 1},
        {"prompt": "a kite", "seed": 2, "n": 1},
    ]
    assert [r.payload for r in inked.rows] == [  # the seed column fills what it leaves out
        {"prompt": "a fox, ink", "n": 2, "seed": 1},
        {"prompt": "a kite, ink", "n": 2, "seed": 2},
    ]
    assert [r.payload for r in speech.rows] == [
        {"text": "a fox", "audio_setting": {"format": "wav"}},
        {"text": "a kite", "audio_setting": {"format": "wav"}},
    ]
    for plan in (first, inked, speech):  # each body is its own row's payload
        for row in plan.rows:
            assert (row.prepared.endpoint, json.loads(row.prepared.body)) == (
                row.endpoint,
                row.payload,
            )
    assert [file_name(r.stem, "png", 0, 1) for r in first.rows] == [
        "00000-a-fox-1.png",
        "00001-a-kite-2.png",
    ]
    assert [file_name(r.stem, "png", 0, 1) for r in inked.rows] == [
        f"{T2I}-0.png",
        f"{T2I}-1.png",
    ]
    assert [file_name(r.stem, "wav", 0, 1) for r in speech.rows] == [
        "speech-a-fox.wav",
        "speech-a-kite.wav",
    ]
    assert (first.units_total(), inked.units_total(), speech.units_total()) == (
        {"tasks": 2, "images": 2},
        {"tasks": 2, "images": 4},
        {"tasks": 2, "speech_characters": 11},
    )


#: what Windows reserves in a file name, besides control characters
WINDOWS_RESERVED = set('<>:"/\\|?*')
WINDOWS_DEVICES = {"CON", "PRN", "AUX", "NUL"} | {
    f"{d}{i}" for d in ("COM", "LPT") for i in "123456789¹²³"
}


def one_file_system_key(name: str) -> str:
    """A name as a case-insensitive, normalising file system (macOS's APFS and HFS+,
    Windows' NTFS) tells names apart: canonical caseless matching."""
    return unicodedata.normalize("NFD", unicodedata.normalize("NFD", name).casefold())


def assert_portable(name: str) -> None:
    """A name Linux, macOS and Windows all take as it is, as a visible file."""
    base = name.split(".", 1)[0]
    assert name and not name.startswith("."), name  # not hidden, not empty
    assert base.rstrip(" ").upper() not in WINDOWS_DEVICES, name
    assert not WINDOWS_RESERVED & set(name) and all(ord(c) >= 32 for c in name), name
    assert not name.endswith((".", " ")), name
    assert name == unicodedata.normalize("NFC", name), name
    assert len(name.encode("utf-8")) <= 255, name


def test_file_names_are_portable_and_distinct_on_a_case_insensitive_normalising_disk() -> None:
    prompts = ["CON", "nul", "COM1", "lpt9", "aux.tar", "Prn ", "com¹", "🦊🦐", "—", "한국",
               "cafe\u0301", "a fox."]  # fmt: skip
    plan = plan_batch(
        T2I, [{"prompt": p} for p in prompts], {"prompt": "{prompt}", "n": 1},
        filenames="{prompt}.{ext}",
    )  # fmt: skip
    names = [file_name(row.stem, "png", 0, 1) for row in plan.rows]
    for name in names:
        assert_portable(name)
    assert len({one_file_system_key(n) for n in names}) == len(prompts), names
    assert names[0] == "CON_.png" and names[3] == "lpt9_.png" and names[9] == "한국.png"
    assert names[7] == "00007.png" and names[10] == "café.png"  # no name: the row's number


@pytest.mark.parametrize(
    "pair",
    [
        ("한국", unicodedata.normalize("NFD", "한국")),  # one file on macOS
        ("Café", unicodedata.normalize("NFD", "café")),
        ("STRASSE", "straße"),  # casefold: ß is ss
        ("CON", "con_"),  # a device name's safe form is a name too
    ],
    ids=["hangul-nfc-nfd", "cafe-case-nfd", "sharp-s", "device"],
)
def test_two_rows_whose_names_are_equal_after_normalisation_are_refused(
    pair: tuple[str, str],
) -> None:
    with pytest.raises(PayloadError, match="row 0 has its file name too") as info:
        plan_batch(T2I, [{"prompt": p} for p in pair], {"prompt": "{prompt}", "n": 1},
                   filenames="{prompt}.{ext}")  # fmt: skip
    assert info.value.errors[0]["loc"] == ("row 1", "filenames")


def test_a_duration_past_a_float_is_a_payload_error_not_an_overflow_error() -> None:
    with pytest.raises(PayloadError, match=r"row 0\.duration"):
        plan_batch("vidA-2-0", [{"prompt": "a heron", "duration": 10**400}])


def test_an_empty_cell_under_a_required_field_says_the_column_is_empty() -> None:
    """Issue 40.10: an empty prompt reads "empty", naming its column, not "Field required"."""
    rows = [{"item": "a kite"}, {"item": None}]
    with pytest.raises(PayloadError) as caught:
        plan_batch(T2I, rows, {"prompt": "{item}", "n": 1})
    assert [(p["loc"], p["msg"]) for p in caught.value.errors] == [
        (("row 1", "prompt"), "empty: the column 'item' has no value in this row, and prompt "
         "is required"),
    ]  # fmt: skip


def test_a_misspelled_column_is_named_with_the_field_it_means() -> None:
    """Issue 40.6: a ``promt`` column beside a template is said to be ``prompt``."""
    with pytest.raises(PayloadError) as caught:
        plan_batch(T2I, [{"promt": "a fox"}], {"n": 1})
    assert caught.value.errors[0]["msg"] == (
        "Field required; the column 'promt' is not sent: probably 'prompt', misspelled"
    )
    with pytest.raises(PayloadError, match="'promt' is probably 'prompt', misspelled"):
        plan_batch(T2I, [{"promt": "a fox"}])  # no template: no column named like a field


def test_a_soft_finding_is_said_once_naming_its_rows_and_many_end_in_one_line() -> None:
    """A template field past its length in every row warned once a row: a 10,000-row
    file printed 10,000 lines above the plan's question."""
    import warnings

    rows = [{"text": f"a heron {i}"} for i in range(200)]
    template = {"prompt": "{text}", "negative_prompt": "x" * 600}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plan_batch(T2I, rows, template)
    said = [str(w.message) for w in caught]
    assert said == [
        "row 0, row 1, row 2 and 197 more: negative_prompt has 600 characters; the service "
        "truncates it to 500"
    ]
    varied = [{"text": "a heron", "neg": "x" * (600 + i)} for i in range(20)]  # each its own
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plan_batch(T2I, varied, {"prompt": "{text}", "negative_prompt": "{neg}"})
    said = [str(w.message) for w in caught]
    assert len(said) == batch_plan.SAID_FINDINGS + 1
    assert said[0] == "row 0: negative_prompt has 600 characters; the service truncates it to 500"
    assert said[-1] == "and 15 more finding(s) like these in other rows"
