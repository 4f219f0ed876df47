"""``gw.form``: one form per documented endpoint, built from the catalog."""

from __future__ import annotations

import ast
import base64
import dataclasses
import datetime
import enum
import html
import io
import json
import math
import re
import shlex
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ipywidgets as W
import numpy as np
import pytest
from loopback import LoopbackServer, QuietHandler
from PIL import Image
from widgets.taskfakes import DisplayRecorder

import genwidgets as gw
from genwidgets.media.files import LocalMedia
from genwidgets.widgets.elements import Element
from genwidgets.widgets.field_spec import field_specs
from genwidgets.widgets.form import EndpointForm, python_code
from genwidgets.widgets.markup import SIMULATED_BADGE

#: One valid minimal payload per documented endpoint (required fields, plus what the
#: spec's samples carry where it does not say which fields are required).
VALID: dict[str, dict[str, Any]] = {
    "vidA-2-0-fast": {"content": [{"type": "text", "text": "a red kite over the sea"}]},
    "vidA-2-0": {
        "content": [
            {"type": "text", "text": "the kite lands"},
            {"type": "image_url", "image_url": {"url": "https://x.test/a.png"}},
        ],
        "duration": 5,
    },
    "imgM-inpaint": {"jobId": "job-123", "imageNo": 0, "mask": {"url": "https://x.test/m.png"}},
    "imgM_pan": {"jobId": "job-123", "imageNo": 1, "direction": 1, "scale": 1.5},
    "imgM-v8.1-i2i": {"jobId": "job-123", "image_no": 0, "type": 1, "remix_prompt": "snow"},
    "vidVq2-text2video": {"prompt": "a red kite", "duration": 5},
    "vidVq1-text2video": {"prompt": "a red kite"},
    "vidV-create-subjects": {"name": "kite", "images": ["https://x.test/kite.png"]},
    "speechM-02-turbo": {"text": "Hello there."},
    "vidH_1.0_r2v": {
        "prompt": "[Image 1] waves",
        "media": [{"type": "reference_image", "url": "https://x.test/a.png"}],
    },
    "imgG-1.5-edit": {"prompt": "make it blue", "images": ["https://x.test/a.png"]},
    "vidK-v3-turbo-t2v": {"prompt": "a kite in the wind"},
    "vidK-v1-6-multi-i2v": {"image_list": [{"image": "https://x.test/a.png"}], "prompt": "fly"},
    "vidK-lip-sync": {"session_id": "s-1", "face_choose": [{"face_id": "f-1", "audio_id": "a-1"}]},
    "vidK-v3-motion-control": {
        "image_url": "https://x.test/a.png",
        "video_url": "https://x.test/m.mp4",
        "character_orientation": "image",
        "mode": "std",
    },
    "vidP_v6_transition": {
        "first_frame_image": "https://x.test/a.png",
        "last_frame_image": "https://x.test/b.png",
    },
    "imgQ-edit-plus": {"prompt": "blue sky", "images": ["https://x.test/a.png"]},
    "genW2.5-t2i-preview": {"prompt": "a kite"},
    "genW2.6-r2v": {"prompt": "character1 flies", "reference_urls": ["https://x.test/a.png"]},
    "asset-get": {"Id": "asset-123"},
}

#: One invalid payload per endpoint (out of range or a required field missing), and the
#: field whose element must show the error.
INVALID: dict[str, tuple[dict[str, Any], str]] = {
    "vidA-2-0-fast": (VALID["vidA-2-0-fast"] | {"duration": 99}, "duration"),
    "vidA-2-0": (VALID["vidA-2-0"] | {"duration": 3}, "duration"),
    "imgM-inpaint": (VALID["imgM-inpaint"] | {"imageNo": 7}, "imageNo"),
    "imgM_pan": (VALID["imgM_pan"] | {"scale": 5.0}, "scale"),
    "imgM-v8.1-i2i": (VALID["imgM-v8.1-i2i"] | {"image_no": 9}, "image_no"),
    "vidVq2-text2video": (VALID["vidVq2-text2video"] | {"duration": 11}, "duration"),
    "vidVq1-text2video": ({"prompt": "x" * 2001}, "prompt"),
    "vidV-create-subjects": ({"images": ["https://x.test/kite.png"]}, "name"),
    "speechM-02-turbo": ({"output_format": "url"}, "text"),
    "vidH_1.0_r2v": (VALID["vidH_1.0_r2v"] | {"duration": 20}, "duration"),
    "imgG-1.5-edit": (VALID["imgG-1.5-edit"] | {"n": 11}, "n"),
    "vidK-v3-turbo-t2v": (VALID["vidK-v3-turbo-t2v"] | {"duration": 20}, "duration"),
    "vidK-v1-6-multi-i2v": (VALID["vidK-v1-6-multi-i2v"] | {"prompt": "x" * 2501}, "prompt"),
    "vidK-lip-sync": (
        {
            "session_id": "s-1",
            "face_choose": [{"face_id": "f", "audio_id": "a", "sound_volume": 3}],
        },
        "face_choose",
    ),
    "vidK-v3-motion-control": (VALID["vidK-v3-motion-control"] | {"mode": "ultra"}, "mode"),
    "vidP_v6_transition": (VALID["vidP_v6_transition"] | {"duration": 20}, "duration"),
    "imgQ-edit-plus": (VALID["imgQ-edit-plus"] | {"n": 7}, "n"),
    "genW2.5-t2i-preview": (VALID["genW2.5-t2i-preview"] | {"n": 5}, "n"),
    "genW2.6-r2v": (VALID["genW2.6-r2v"] | {"duration": 11}, "duration"),
    "asset-get": ({"ProjectName": "default"}, "Id"),
}

FAKE_KEY = "sk-FORMTEST-d3adb33f-0123456789"


class FakeJob:
    def __init__(self, endpoint: str, payload: dict[str, Any]) -> None:
        self.endpoint, self.payload, self.request_id = endpoint, payload, "req-form-1"

    def __repr__(self) -> str:
        return f"<FakeJob {self.endpoint} {self.request_id}>"


@dataclasses.dataclass(frozen=True)
class FakePrepared:
    endpoint: str
    payload: dict[str, Any]


class RecordingClient:
    """Stands in for gw.Client: validates in ``prepare`` as the client does (once, through
    the catalog), records what ``send`` is given, sends nothing."""

    embedded = False

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def prepare(self, endpoint: str, payload: dict[str, Any]) -> FakePrepared:
        gw.validate(endpoint, payload)
        return FakePrepared(endpoint, dict(payload))

    def send(self, prepared: FakePrepared) -> FakeJob:
        self.calls.append((prepared.endpoint, prepared.payload))
        return FakeJob(prepared.endpoint, prepared.payload)


def test_the_tables_cover_every_documented_endpoint() -> None:
    assert sorted(s.id for s in gw.endpoints()) == sorted(VALID) == sorted(INVALID)


@pytest.mark.parametrize("endpoint", list(VALID))
def test_valid_payloads_are_valid(endpoint: str) -> None:
    gw.validate(endpoint, VALID[endpoint])  # the table itself is right


def said_by(error: gw.PayloadError) -> list[tuple[str, str]]:
    """Each problem as its place (``media.0``) and its message."""
    return [(".".join(map(str, e["loc"])), e["msg"]) for e in error.errors]


def notes_under(element: Element) -> str:
    return "\n".join(e.note.value for e in element.walk())


@pytest.mark.parametrize("endpoint", list(VALID))
def test_build_set_value_round_trip(endpoint: str) -> None:
    client = RecordingClient()
    form = gw.form(endpoint, client=client)
    assert isinstance(form, EndpointForm) and isinstance(form, W.VBox)
    assert endpoint in form.title.value
    # nothing set: no optional field is sent (fixed values of required parts may be)
    assert all(form.fields[name].spec.required for name in form.value)
    form.set(**VALID[endpoint])
    assert form.value == VALID[endpoint]
    assert form.errors == [], form.errors
    assert not form.submit_button.disabled
    job = form.submit()
    assert client.calls == [(endpoint, VALID[endpoint])]
    assert job.request_id == "req-form-1"


@pytest.mark.parametrize("endpoint", list(INVALID))
def test_invalid_input_shows_inline_and_sends_nothing(endpoint: str) -> None:
    payload, field = INVALID[endpoint]
    expected = None
    try:
        gw.validate(endpoint, payload)
    except gw.PayloadError as exc:
        expected = [e for e in exc.errors if e["loc"][:1] == (field,)]
    assert expected, f"{endpoint}: the invalid table entry must fail at {field}"
    client = RecordingClient()
    form = gw.form(endpoint, client=client, **payload)
    shown = notes_under(form.fields[field])
    for error in expected:
        assert html.escape(error["msg"]) in shown
    assert form.submit_button.disabled
    assert "Cannot submit" in form.reason.value and field in form.reason.value
    with pytest.raises(gw.PayloadError):
        form.submit()
    assert client.calls == []
    form.submit_button.click()  # the button shows the error instead of raising
    assert client.calls == []
    assert form.submit_button.disabled
    assert "Cannot submit" in form.reason.value and field in form.reason.value  # its end reached


@pytest.mark.parametrize(
    "prompt", ["a kite --chaos 500", "a cat::-1 a dog::0.5", "a kite {--chaos 50, --chaos 500}"]
)
def test_an_imgm_prompt_the_gateway_would_refuse_disables_submit(prompt: str) -> None:
    client = RecordingClient()
    form = gw.form("imgM-v8.1-i2i", client=client, **VALID["imgM-v8.1-i2i"])
    assert not form.submit_button.disabled
    form.fields["remix_prompt"].control.value = prompt
    shown = notes_under(form.fields["remix_prompt"])
    assert "0-100" in shown or "add up to" in shown
    assert form.submit_button.disabled and "remix_prompt" in form.reason.value
    form.submit_button.click()
    assert client.calls == [] and "remix_prompt" in form.reason.value  # shown, not raised


@pytest.mark.parametrize("endpoint", list(VALID))
def test_code_view_holds_endpoint_and_payload_never_the_key(endpoint: str) -> None:
    client = gw.Client(base_url="http://127.0.0.1:9", api_key=FAKE_KEY)
    try:
        form = gw.form(endpoint, client=client, **VALID[endpoint])
        code = form.code_view.value
        assert f"client.submit({endpoint!r}" in code.replace("&#x27;", "'")
        assert json.loads(_unpre(form.json_view.value)) == VALID[endpoint]
        namespace: dict[str, Any] = {}
        exec(_payload_literal(python_code(endpoint, form.value)), namespace)
        assert namespace["payload"] == VALID[endpoint]
        for widget in widget_tree(form):
            assert FAKE_KEY not in json.dumps(widget.get_state(), default=str)
        assert FAKE_KEY not in repr(form)
    finally:
        close = getattr(client, "close", None)
        if close:
            close()


def _unpre(value: str) -> str:
    import re

    return html.unescape(re.sub(r"<[^>]+>", "", value))


def _payload_literal(code: str) -> str:
    """The dict literal of the generated ``client.submit(...)`` call, as ``payload = ...``."""
    start = code.index("client.submit(")
    body = code[start + len("client.submit(") :]
    literal = body[body.index(",") + 1 : body.rindex(")")]
    return "payload = " + literal.strip()


def widget_tree(widget: W.Widget) -> Iterator[W.Widget]:
    seen: set[str] = set()
    stack = [widget]
    while stack:
        current = stack.pop()
        if current.model_id in seen:
            continue
        seen.add(current.model_id)
        yield current
        for name in current.keys:
            value = getattr(current, name, None)
            items = value if isinstance(value, (list, tuple)) else [value]
            stack.extend(v for v in items if isinstance(v, W.Widget))


@pytest.mark.slow
@pytest.mark.parametrize("endpoint", list(VALID))
def test_billing_summary_names_the_billing_fields(endpoint: str) -> None:
    spec = gw.endpoint(endpoint)
    form = gw.form(endpoint, client=RecordingClient(), **VALID[endpoint])
    summary = form.billing_summary()
    assert summary in _unpre(form.billing.value)
    for wire in spec.billing_fields:  # their wire names
        assert wire in summary
        if wire in VALID[endpoint]:
            assert f"{wire} {VALID[endpoint][wire]}" in summary
        assert "$</span>" in form.fields[wire].widget.children[0].children[0].value
    if spec.prompt_fields:  # imgM: each prompt its text makes bills
        assert summary == "Billed per prompt: 1 billed prompt (4 images)"
    elif not spec.billing_fields:
        assert "Billed per task" in summary


def test_billing_summary_uses_the_documented_default_when_unset() -> None:
    form = gw.form("vidA-2-0", client=RecordingClient(), **VALID["vidA-2-0-fast"])
    summary = form.billing_summary()
    assert "duration 5 s (default)" in summary and "resolution 720p (default)" in summary
    form.set(duration=8, resolution="1080p")
    assert "duration 8 s, " in form.billing_summary() or "duration 8 s" in form.billing_summary()
    assert "resolution 1080p" in form.billing_summary()
    assert "(default)" not in form.billing_summary()


def test_required_first_optional_folded_with_their_count() -> None:
    form = gw.form("vidVq2-text2video", client=RecordingClient())
    optional = [e for e in form.fields.values() if not e.spec.required]
    assert form.optional.get_title(0) == f"Optional settings ({len(optional)})"
    assert form.optional.selected_index is None
    assert form.children[1] is form.fields["prompt"].widget
    assert form.fields["prompt"].spec.required
    assert not form.optional_box.children  # optional rows go on screen on first open
    form.optional.selected_index = 0
    assert len(form.optional_box.children) == len(optional)


RICH: dict[str, dict[str, Any]] = {
    "speechM-02-turbo": {
        "text": "Hi <#0.5#> there",
        "output_format": "hex",
        "voice_setting": {"voice_id": "alto", "speed": 1.5, "vol": 2, "pitch": -3},
        "audio_setting": {"sample_rate": 44100, "format": "mp3", "channel": 2},
        "pronunciation_dict": {"tone": ["a/b"]},
        "voice_modify": {"pitch": 10, "sound_effects": "robotic"},
        "subtitle_enable": True,
    },
    "imgM-inpaint": VALID["imgM-inpaint"]
    | {
        "remixPrompt": "a cat --ar 16:9",
        "area": {"width": 600, "height": 700, "points": [0, 0, 9, 0, 9, 9]},
    },
    "vidK-v3-turbo-t2v": {
        "prompt": "p",
        "duration": "7",
        "enhance_prompt": "on",
        "element_list": [{"element_id": 3}],
    },
}


@pytest.mark.parametrize("endpoint", list(RICH))
def test_nested_dicts_and_lists_round_trip(endpoint: str) -> None:
    gw.validate(endpoint, RICH[endpoint])
    form = gw.form(endpoint, client=RecordingClient(), **RICH[endpoint])
    assert form.value == RICH[endpoint]
    assert form.errors == []


def test_unset_optional_fields_are_not_sent_and_none_clears() -> None:
    form = gw.form("vidVq2-text2video", client=RecordingClient(), prompt="x", duration=5)
    assert form.value == {"prompt": "x", "duration": 5}
    form.set(duration=None)
    assert form.value == {"prompt": "x"}


def test_unknown_field_is_sent_as_is_with_an_amber_note() -> None:
    form = gw.form("vidVq2-text2video", client=RecordingClient(), prompt="x", durration=5)
    assert form.value == {"prompt": "x", "durration": 5}
    assert "durration" in form.notes.value and "duration" in form.notes.value
    assert not form.submit_button.disabled  # a warning, not an error


@pytest.mark.parametrize(
    ("endpoint", "given", "said"),
    [
        ("genW2.5-t2i-preview", {"prompt": b"a kite"}, "prompt: a bytes is not JSON data"),
        ("imgM-v8.1-t2i", {"prompt": b"a kite"}, "prompt: a bytes is not JSON data"),
        (
            "genW2.5-t2i-preview",
            {"n": 10**400},
            r"n: expected a whole number 1-4; got 100000000000… \(401 digits\)",
        ),
    ],
)
def test_a_value_no_box_can_hold_is_the_typed_error_when_built_or_set(
    endpoint: str, given: dict[str, Any], said: str
) -> None:
    """Not a raw TypeError (the JSON view) or OverflowError (the number box); the imgM
    prompt sent the text "b'a kite'"."""
    with pytest.raises(gw.PayloadError, match=said):
        gw.form(endpoint, client=RecordingClient(), **({"prompt": "a kite"} | given))
    form = gw.form(endpoint, client=RecordingClient(), prompt="a kite")
    with pytest.raises(gw.PayloadError, match=said):
        form.set(**given)
    assert form.value == {"prompt": "a kite"}


@pytest.mark.parametrize(
    ("endpoint", "given", "field", "said"),
    [
        ("imgM_pan", {"jobId": "j", "imageNo": 0, "direction": 0, "scale": "four"}, "scale",
         "scale: expected a number 1.1-3; got 'four'"),
        ("vidK-v3-turbo-t2v", {"prompt": "x", "element_list": [{"element_id": "seven"}]},
         "element_list", "element_list.0.element_id: expected a whole number; got 'seven'"),
        ("imgM-inpaint", {"jobId": "j", "imageNo": 0, "mask": {"url": "https://x.test/m.png"},
         "area": {"width": 500, "height": 500, "points": [0, 0, "x", 1, 2, 3]}}, "area",
         "area.points.2: expected a number; got 'x'"),
        ("speechM-02-turbo", {"text": "hi", "audio_setting": {"sample_rate": "fast"}},
         "audio_setting", "audio_setting.sample_rate: expected one of 8000, 16000, 22050, "
         "24000, 32000, 44100; got 'fast'"),
        ("vidA-2-0", {"content": [{"type": "text", "text": "x"}], "generate_audio": "maybe"},
         "generate_audio", "generate_audio: expected true or false; got 'maybe'"),
    ],
)  # fmt: skip
def test_a_value_of_the_wrong_type_is_said_beside_its_field_in_the_users_terms(
    endpoint: str, given: dict[str, Any], field: str, said: str
) -> None:
    """The catalog's one message per place (a union's members joined, ``scale`` not
    ``scale.int`` and ``scale.float``): beside the field, and why Submit is off."""
    form = gw.form(endpoint, client=RecordingClient(), **given)
    where, message = said.split(": ", 1)
    assert [(".".join(map(str, e["loc"])), e["msg"]) for e in form.errors] == [(where, message)]
    assert html.escape(message) in notes_under(form.fields[field])
    assert html.escape(said) in form.reason.value and form.submit_button.disabled


@pytest.mark.parametrize(
    ("endpoint", "given", "said"),
    [
        ("speechM-02-turbo", {"voice_setting": "calm"},
         "voice_setting: expected an object (dict) with the fields voice_id, speed, vol, "
         "pitch, emotion, text_normalization, latex_read; got 'calm'"),
        ("vidH_1.0_r2v", {"media": ["https://x.test/a.png"]},
         "media.0: expected an object (dict) with the fields type (required), url "
         "(required); got 'https://x.test/a.png'"),
        ("vidK-v3-turbo-t2v", {"element_list": [{"element_id": 1}, "seven"]},
         "element_list.1: expected an object (dict) with the fields element_id "
         "(required); got 'seven'"),
        ("vidA-2-0", {"content": [{"type": "text", "text": "x"}, 5]},
         "content.1: expected an object (dict) with the fields type (required), text, "
         "image_url, video_url, audio_url, role; got 5"),
        ("vidA-2-0", {"content": [{"type": "text", "text": "x"}, {"type": "image_url",
         "image_url": "https://x.test/a.png"}]},
         "content.1.image_url: expected an object (dict) with the fields url (required); "
         "got 'https://x.test/a.png'"),
        ("vidA-2-0", {"content": [{"type": "text", "text": "x"}, {"type": "hologram"}]},
         "content.1.type: expected one of 'text', 'image_url', 'video_url', 'audio_url'; "
         "got 'hologram'"),
        ("vidK-lip-sync", {"face_choose": [{"face_id": "f", "audio_id": "a"}, "f-2"]},
         "face_choose.1: expected an object (dict) with the fields face_id (required), "
         "audio_id, sound_file, sound_start_time, sound_end_time, sound_insert_time, "
         "sound_volume, original_audio_volume; got 'f-2'"),
        ("imgM-inpaint", {"mask": "m" * 500},
         f"mask: expected an object (dict) with the fields areas, url; got {'m' * 40!r}… "
         "(500 characters)"),
        ("genW2.5-t2i-preview", {"n": 2.5}, "n: expected a whole number 1-4; got 2.5"),
        ("imgG-1.5-edit", {"images": [{"url": "https://x.test/a.png"}]},
         "images.0: expected a public http(s) URL, or data:<MIME type>;base64,<data> with "
         "MIME type image/png, image/jpeg, image/webp; got {'url': 'https://x.test/a.png'}"),
        ("vidK-v3-motion-control", {"image_url": 7}, "image_url: expected a public http(s) "
         "URL, or raw base64 with no data: prefix (jpeg, png); got 7"),
    ],
)  # fmt: skip
def test_a_value_no_box_can_hold_is_said_as_the_catalog_says_it_at_its_place(
    endpoint: str, given: dict[str, Any], said: str
) -> None:
    """A text for a sub-form, a list item or a content item's type, a fraction for a
    whole number: the catalog's words (what the place allows, what came, short), at the
    item's place (``media.0``), not the form's own "expected a dict of settings", and
    the form keeps what it held."""
    where, message = said.split(": ", 1)
    payload = VALID[endpoint] | given
    with pytest.raises(gw.PayloadError) as caught:
        gw.validate(endpoint, payload)
    assert (where, message) in said_by(caught.value)
    with pytest.raises(gw.PayloadError) as caught:
        gw.form(endpoint, client=RecordingClient(), **payload)
    assert said_by(caught.value) == [(where, message)]
    form = gw.form(endpoint, client=RecordingClient(), **VALID[endpoint])
    with pytest.raises(gw.PayloadError, match=re.escape(said)):
        form.set(**given)
    assert form.value == VALID[endpoint] and form.errors == []


def test_an_unknown_fields_bytes_are_shown_with_the_catalogs_error() -> None:
    form = gw.form("genW2.5-t2i-preview", client=RecordingClient(), prompt="a", extra=b"x")
    assert "b&#x27;x&#x27;" in form.json_view.value or "b'x'" in form.json_view.value
    assert "extra: a bytes is not JSON data" in html.unescape(form.reason.value)
    assert form.submit_button.disabled


def test_validation_runs_on_every_change_without_submitting() -> None:
    client = RecordingClient()
    form = gw.form("vidVq2-text2video", client=client)
    assert form.submit_button.disabled
    form.fields["prompt"].control.value = "a kite"  # a keystroke
    assert not form.submit_button.disabled and "ready" in form.reason.value
    form.fields["prompt"].control.value = "x" * 2001
    assert form.submit_button.disabled
    assert client.calls == []  # never on a keystroke


def test_reset_returns_to_the_initial_values() -> None:
    form = gw.form("vidVq2-text2video", client=RecordingClient(), prompt="start")
    form.set(prompt="changed", duration=3)
    form.reset_button.click()
    assert form.value == {"prompt": "start"}


def test_click_submits_once_and_displays_the_job() -> None:
    client = RecordingClient()
    form = gw.form("vidVq2-text2video", client=client, prompt="a kite")
    form.submit_button.click()
    form.submit_button.click()  # a double click queued behind the first
    assert len(client.calls) == 1
    assert form.last_job is not None and "req-form-1" in form.reason.value
    form.submit()  # code may submit again on purpose
    assert len(client.calls) == 2


class NoAnswerClient(RecordingClient):
    """A client whose creates go out and get no answer (a task may exist), as
    ``gw.Client`` raises then."""

    def send(self, prepared: FakePrepared) -> FakeJob:
        self.calls.append((prepared.endpoint, prepared.payload))
        raise gw.errors.OutcomeUnknown("the create request was sent but no answer arrived")


def actions(form: EndpointForm) -> list[str]:
    """The buttons beside the reason, by their words."""
    return [b.description for b in form.actions.children if isinstance(b, W.Button)]


def test_a_click_after_a_create_with_no_answer_asks_before_sending_it_again() -> None:
    client = NoAnswerClient()
    form = gw.form("vidVq2-text2video", client=client, prompt="a kite")
    form.submit_button.click()
    said = form.reason.value
    form.submit_button.click()  # a double click's second message: it asks, sends nothing
    assert len(client.calls) == 1 and actions(form) == ["Submit", "Send again", "Reset"]
    assert "no answer arrived" in said and "asks before sending it again" in said
    assert "may exist" in form.reason.value and "client.history()" in form.reason.value
    form.confirm_button.click()  # the deliberate second action
    assert len(client.calls) == 2 and actions(form) == ["Submit", "Reset"]
    form.confirm_button.click()  # queued behind it: taken away, sends nothing
    assert len(client.calls) == 2
    form.set(prompt="a kite at dawn")  # another payload is sent on one click
    form.submit_button.click()
    assert len(client.calls) == 3


def test_a_changed_payload_takes_the_question_away() -> None:
    client = NoAnswerClient()
    form = gw.form("vidVq2-text2video", client=client, prompt="a kite")
    form.submit_button.click()
    form.submit_button.click()
    assert "Send again" in actions(form)
    form.set(prompt="a boat")
    assert "Send again" not in actions(form) and "ready to submit" in form.reason.value
    form.confirm_button.click()  # a click already queued on it sends nothing
    assert len(client.calls) == 1
    form.set(prompt="a kite")  # back to the payload of no answer: a click asks again
    form.submit_button.click()
    assert len(client.calls) == 1 and "Send again" in actions(form)


class ClosesWithoutAnswer(QuietHandler):
    """A gateway that reads a create and closes without answering."""

    creates: list[str] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.creates.append(self.path)
        self.close_connection = True


def test_a_double_click_sends_one_create_when_the_gateway_never_answers() -> None:
    ClosesWithoutAnswer.creates.clear()
    server = LoopbackServer(ClosesWithoutAnswer)
    client = gw.Client(server.base, "sk-test-key")
    try:
        form = gw.form("genW2.5-t2i-preview", client=client, prompt="a red kite", n=1)
        form.submit_button.click()
        form.submit_button.click()  # the double click's second message
        assert ClosesWithoutAnswer.creates == ["/v1/queue/genW2.5-t2i-preview"]
        assert actions(form) == ["Submit", "Send again", "Reset"]
    finally:
        client.close()
        server.close()


#: 10 colours × 4 things: 40 prompts, each billed (4 images each)
FORTY = "a {red,orange,yellow,green,blue,indigo,violet,black,white,grey} {kite,boat,car,tree}"


def test_an_imgm_prompt_billing_many_prompts_is_counted_and_asks_first() -> None:
    client = RecordingClient()
    form = gw.form("imgM-v8.1-t2i", client=client, prompt=FORTY + " --r 1")
    billing = html.unescape(form.billing.value)
    assert "Billed per prompt: 40 billed prompts (160 images)" in billing
    assert "above confirm_above=10: Submit asks first" in billing
    form.submit_button.click()
    form.submit_button.click()  # a double click only asks again
    assert client.calls == [] and actions(form) == ["Submit", "Send 40 prompts", "Reset"]
    assert "40 billed prompts (160 images), above confirm_above=10" in form.reason.value
    form.confirm_button.click()
    form.confirm_button.click()  # queued behind the first: nothing more
    assert len(client.calls) == 1 and form.last_job is not None
    assert "req-form-1" in form.reason.value


@pytest.mark.parametrize(
    ("prompt", "confirm_above", "asks"),
    [
        ("a {red,blue} kite --repeat 5", 10, False),  # 10 prompts: not above 10
        ("a {red,blue} kite --repeat 6", 10, True),  # 12
        ("a kite", 0, True),  # 1 prompt, confirm_above=0: every click asks
    ],
)
def test_a_form_asks_by_the_rule_of_grids(prompt: str, confirm_above: int, asks: bool) -> None:
    client = RecordingClient()
    form = gw.form("imgM-v8.1-t2i", client=client, confirm_above=confirm_above, prompt=prompt)
    form.submit_button.click()
    assert (client.calls == []) is asks and ("Send" in " ".join(actions(form))) is asks
    assert form.billed() == gw.lab.cost.billed_count(gw.endpoint("imgM-v8.1-t2i"), form.value)


def test_a_bad_confirm_above_is_refused_as_a_grids_is() -> None:
    with pytest.raises(ValueError, match="confirm_above must be a whole number 0 or more"):
        gw.form("imgM-v8.1-t2i", client=RecordingClient(), confirm_above=-1)


def count_validations(monkeypatch: pytest.MonkeyPatch, endpoint: str) -> list[int]:
    """Spy on the endpoint model's ``model_validate``, through which every catalog
    validation of a payload passes; counts the calls made on this thread only (an
    in-process simulator validates what it receives on its own thread)."""
    model = gw.endpoint(endpoint).model
    original = model.model_validate
    here = threading.get_ident()
    calls: list[int] = []

    def spy(cls: type, obj: Any, *args: Any, **kwargs: Any) -> Any:
        if threading.get_ident() == here:
            calls.append(1)
        return original(obj, *args, **kwargs)

    monkeypatch.setattr(model, "model_validate", classmethod(spy))
    return calls


def test_one_submit_validates_the_payload_once(monkeypatch: pytest.MonkeyPatch) -> None:
    client = RecordingClient()
    form = gw.form("vidVq2-text2video", client=client, prompt="a kite")
    calls = count_validations(monkeypatch, "vidVq2-text2video")
    form.submit_button.click()
    assert len(client.calls) == 1 and len(calls) == 1
    form.submit()
    assert len(client.calls) == 2 and len(calls) == 2


def test_an_invalid_submit_validates_once_and_sends_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client = RecordingClient()
    form = gw.form("vidVq2-text2video", client=client, prompt="a kite", duration=11)
    calls = count_validations(monkeypatch, "vidVq2-text2video")
    with pytest.raises(gw.PayloadError):
        form.submit()
    assert len(calls) == 1 and client.calls == []
    assert "duration" in form.reason.value and form.submit_button.disabled


def test_content_rule_violation_shows_beside_the_content_builder() -> None:
    bad = [
        {"type": "text", "text": "x"},
        {"type": "image_url", "image_url": {"url": "https://x.test/a.png"}, "role": "last_frame"},
    ]
    form = gw.form("vidA-2-0", client=RecordingClient(), content=bad)
    content = form.fields["content"]
    assert "last_frame" in content.note.value
    assert "first frame" not in content.scenario.value.split("Scenario")[0]
    assert form.submit_button.disabled


def form_png(width: int, height: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (10, 120, 200)).save(buffer, format="PNG")
    return buffer.getvalue()


def form_upload(element: Any, data: bytes, name: str = "pic.png") -> None:
    element.upload.value = (
        {
            "name": name,
            "type": "image/png",
            "size": len(data),
            "content": memoryview(data),
            "last_modified": datetime.datetime.now(datetime.timezone.utc),
        },
    )


def test_vida_upload_becomes_a_lowercase_data_url_and_code_stays_short() -> None:
    form = gw.form("vidA-2-0", client=RecordingClient())
    content = form.fields["content"]
    content.rows[0].input.set("a kite")
    row = content.add("image_url")
    data = form_png(640, 480)
    form_upload(row.input, data)
    url = form.value["content"][1]["image_url"]["url"]
    assert url == "data:image/png;base64," + base64.b64encode(data).decode()
    assert form.errors == []
    assert "first frame" in content.scenario.value
    assert len(form.code_view.value) < 2000 and "shortened" in form.code_view.value
    assert base64.b64encode(data).decode()[:300] not in form.json_view.value


def test_vidk_upload_becomes_raw_base64() -> None:
    form = gw.form("vidK-v1-6-multi-i2v", client=RecordingClient(), prompt="fly")
    images = form.fields["image_list"]
    row = images.add_row()
    media = row.locate(("image",))[0]
    data = form_png(400, 400)
    form_upload(media, data)
    assert form.value["image_list"] == [{"image": base64.b64encode(data).decode()}]


def test_too_small_upload_shows_the_check_failure() -> None:
    form = gw.form("vidA-2-0", client=RecordingClient())
    form.fields["content"].rows[0].input.set("a kite")
    row = form.fields["content"].add("image_url")
    form_upload(row.input, form_png(120, 120), "tiny.png")
    refused = "image is 120x120 px; vidA-2-0 needs width and height strictly between 300"
    assert [e["loc"] for e in form.errors] == [("content", 1, "image_url", "url")]
    assert refused in form.errors[0]["msg"] and refused in row.input.note.value
    assert form.submit_button.disabled  # the row is not left out, nor sent empty


def test_the_code_view_parses_and_names_a_refused_upload() -> None:
    """A refused upload is held as its row's value (the check is said beside it): the
    Python code view writes ``None`` there with a comment naming it, not its repr
    ``<upload 'tiny.png', ...>``, which is a SyntaxError in copy-ready code."""
    form = gw.form("vidA-2-0", client=RecordingClient())
    form.fields["content"].rows[0].input.set("a kite")
    row = form.fields["content"].add("image_url")
    form_upload(row.input, form_png(120, 120), "tiny.png")
    code = _unpre(form.code_view.value).split("# the same request with cURL:")[0]
    ast.parse(code)
    assert "'url': None,  # <upload 'tiny.png', " in code
    assert ">: this field refuses it (see the form)" in code


def test_the_curl_half_writes_a_refused_upload_as_null_and_says_why() -> None:
    """The cURL half sent the upload's repr as the URL (``"<upload 'tiny.png', ...>"``,
    a string the gateway would take as the value): it is ``null``, with a comment line."""
    form = gw.form("vidA-2-0", client=RecordingClient())
    form.fields["content"].rows[0].input.set("a kite")
    row = form.fields["content"].add("image_url")
    form_upload(row.input, form_png(120, 120), "tiny.png")
    curl = _unpre(form.code_view.value).split("# the same request with cURL:\n")[1]
    words = shlex.split(curl, comments=True)
    body = json.loads(words[words.index("-d") + 1])
    assert body["content"][1] == {"type": "image_url", "image_url": {"url": None}}
    [note] = [line for line in curl.splitlines() if line.startswith("#")]
    assert note.startswith("# content.1.image_url.url is null here: <upload 'tiny.png', ")
    assert note.endswith("> is refused by its field (see the form)")


class Choice(enum.IntEnum):
    FOUR = 4


class Word(str, enum.Enum):
    KITE = "a kite"


@pytest.mark.parametrize("bad", [float("inf"), float("nan")])
def test_a_form_given_inf_or_nan_is_built_and_says_the_fields_range(bad: float) -> None:
    """inf and nan are left to validation, which says the field's range beside it: the form
    raised 'must be a finite number' with no range while it was built (review-7 fault 5)."""
    client = RecordingClient()
    form = gw.form("imgM_pan", client=client, jobId="j", imageNo=0, direction=1, scale=bad)
    assert form.check() == [{"loc": ("scale",), "msg": f"must be 1.1-3; got {bad}"}]
    assert html.escape(f"must be 1.1-3; got {bad}") in notes_under(form.fields["scale"])
    assert form.submit_button.disabled
    form.submit_button.click()
    assert client.calls == []


@pytest.mark.parametrize(
    "value",
    [
        "a kite",
        "",
        "data:image/png;base64," + "A" * 400,
        3,
        2.5,
        float("nan"),
        float("-inf"),
        True,
        # subclasses of the literal types, whose repr is no literal (review-3 fault 4)
        np.float64(1.1),
        np.float64("inf"),
        Choice.FOUR,
        Word.KITE,
        None,
        b"bytes",
        [],
        {},
        ("a", "b"),
        {"nested": [1, {"x": "y"}]},
        Path("/tmp/a b.png"),
        LocalMedia("upload 'cat\n.gif'", data=b"GIF89a"),
        LocalMedia("file 'cat.gif'", path=Path("/tmp/cat.gif")),
        object(),
    ],
    ids=lambda value: type(value).__name__,
)
def test_the_python_code_parses_whatever_a_field_holds(value: Any) -> None:
    """Every kind of value a form's field can hold, at the top, in a list and in an object
    of a list, is written as Python that parses and runs (``Path`` imported when used);
    what has no literal is ``None`` with a comment. A subclass of a literal type (a grid
    axis of ``np.linspace``'s floats, an ``IntEnum``) is written as its built-in value:
    its repr ``np.float64(1.1)`` raised NameError, ``<Choice.FOUR: 4>`` did not parse."""
    payload = {"prompt": value, "rows": [value, {"image": value}]}
    code = python_code("genW2.5-t2i-preview", payload)
    ast.parse(code)
    namespace: dict[str, Any] = {}
    exec(code.split("import genwidgets")[0] + _payload_literal(code), namespace)
    read = namespace["payload"]["prompt"]
    if isinstance(value, LocalMedia):
        assert read == value.path and f"  # <{value.what.splitlines()[0]}" in code
    elif isinstance(value, float) and math.isnan(value):
        assert math.isnan(read)
    elif type(value) is object:
        assert read is None and "# <object object at " in code
    elif not (isinstance(value, str) and value.startswith("data:")):
        assert read == (list(value) if isinstance(value, tuple) else value)
    if isinstance(value, (int, float, str, bytes)):
        assert type(read) in (bool, int, float, str, bytes)  # the built-in value
    assert len(namespace["payload"]["rows"]) == 2


def test_simulated_badge_follows_the_client() -> None:
    class Embedded(RecordingClient):
        embedded = True

    assert "simulated" in gw.form("asset-get", client=Embedded()).title.value
    assert "simulated" not in gw.form("asset-get", client=RecordingClient()).title.value
    assert SIMULATED_BADGE in gw.form("asset-get", client=Embedded()).title.value  # the one badge


def test_no_client_is_made_while_building(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[int] = []
    import genwidgets._client as client_module

    monkeypatch.setattr(client_module, "Client", lambda *a, **k: made.append(1))
    gw.form("asset-get", Id="a")
    assert made == []


@pytest.mark.slow
@pytest.mark.parametrize("endpoint", list(VALID))
def test_building_a_form_again_reuses_what_the_first_read(endpoint: str) -> None:
    """What keeps a second form cheap: the model is read once (its timing goal belongs in
    benchmarks/, never in a test)."""
    field_specs.cache_clear()
    gw.form(endpoint, client=RecordingClient())
    read = field_specs.cache_info()
    gw.form(endpoint, client=RecordingClient())
    again = field_specs.cache_info()
    assert again.misses == read.misses and again.hits > read.hits


@pytest.mark.slow
def test_import_genwidgets_does_not_import_ipywidgets() -> None:
    code = (
        "import sys, genwidgets as gw; gw.endpoints(); gw.validate('asset-get', {'Id': 'a'}); "
        "assert 'ipywidgets' not in sys.modules, 'ipywidgets imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# --- against the simulator ----------------------------------------------------------------


def _simulator_payload(endpoint: str, client: Any) -> dict[str, Any]:
    """The valid payload, with the references the simulator checks made real."""
    payload = dict(VALID[endpoint])
    if endpoint.startswith("imgM"):  # an edit needs a completed upstream image task
        upstream = client.submit("imgM-v8.1-t2i", {"prompt": "a lighthouse at dusk"})
        upstream.result(timeout=30)
        payload["jobId"] = upstream.request_id
    if endpoint == "asset-get":
        payload["Id"] = "asset-demo"  # the simulator's demo asset
    if endpoint == "vidK-lip-sync":  # faces and audio from the operations it depends on
        faces = client.run("vidK-face-identify", {"video_url": "https://x.test/talk.mp4"}, 30)
        found = faces.outputs[0].json()
        audio = client.run("vidK-audio-preview", {"text": "hello there"}, 30)
        audio_id = next(o for o in audio.outputs if o.kind == "json").json()["audio_id"]
        payload["session_id"] = found["session_id"]
        payload["face_choose"] = [
            {"face_id": found["face_data"][0]["face_id"], "audio_id": audio_id}
        ]
    return payload


@pytest.mark.slow
@pytest.mark.timeout(60)
@pytest.mark.parametrize("endpoint", sorted(VALID))
def test_submit_against_the_simulator(endpoint: str, simulator: Any) -> None:
    client = gw.Client(base_url=simulator.base_url, api_key="sim-demo-key")
    try:
        form = gw.form(endpoint, client=client, **_simulator_payload(endpoint, client))
        assert form.errors == []
        job = form.submit()
        assert job.request_id
        assert job.endpoint == endpoint
        assert client.jobs[0] is job
        assert job.result(timeout=30).ok, job.result().error
    finally:
        close = getattr(client, "close", None)
        if close:
            close()


@pytest.mark.timeout(60)
def test_one_click_validates_once_on_the_real_client(
    simulator: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole trip: the form's click, ``client.prepare`` and ``client.send``."""
    client = gw.Client(base_url=simulator.base_url, api_key="sim-demo-key")
    try:
        form = gw.form("vidVq2-text2video", client=client, **VALID["vidVq2-text2video"])
        calls = count_validations(monkeypatch, "vidVq2-text2video")
        form.submit_button.click()
        assert form.last_job is not None and form.last_job.request_id in form.reason.value
        assert len(calls) == 1
    finally:
        client.close()


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_button_click_submits_to_the_simulator_and_shows_the_job(
    simulator: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import IPython.display

    from genwidgets.widgets import faces

    display = DisplayRecorder()
    monkeypatch.setattr(IPython.display, "display", display)
    monkeypatch.setattr(faces, "in_kernel", lambda: True)
    client = gw.Client(base_url=simulator.base_url, api_key="sim-demo-key")
    try:
        form = gw.form("vidVq2-text2video", client=client, **VALID["vidVq2-text2video"])
        form._ipython_display_()  # the form's two faces, then its tasks' two faces
        assert len(display.calls) == 4 and len(display.handles) == 2
        form_face, tasks_face = display.handles
        assert "a form needs its kernel" in display.calls[1][0]["text/html"]
        form.set(prompt="a kite at noon")
        form.submit_button.click()
        assert form.last_job is not None and form.last_job.request_id in form.reason.value
        assert form.last_job.result(timeout=30).ok
        # its own output under the form, not inside the form's widget tree
        assert form.output.outputs == ()
        assert [type(v).__name__ for v in form.submitted.box.children] == ["TaskView"]
        assert faces.settle(30)
        final = tasks_face.last_html()
        assert "<video" in final and "controls" in final and "autoplay" not in final
        assert form.last_job.request_id in final and "saved at" in final
        assert faces.settle(30) and "a kite at noon" in form_face.last_html()  # when it sent
    finally:
        close = getattr(client, "close", None)
        if close:
            close()


def test_a_form_never_displayed_on_its_own_shows_its_task_inside(simulator: Any) -> None:
    client = gw.Client(base_url=simulator.base_url, api_key="sim-demo-key")
    try:
        form = gw.form("genW2.5-t2i-preview", client=client, prompt="a kite", n=1)
        form.submit_button.click()  # a form nested in a container: its output area
        [entry] = form.output.outputs
        view = entry["data"]["application/vnd.jupyter.widget-view+json"]
        assert view["model_id"] and form.submitted.jobs == [form.last_job]
    finally:
        client.close()


# --- a local file typed into an image field (issue 20, point 6) -----------------------------


def _meadow(folder: Path) -> Path:
    path = folder / "meadow.png"
    Image.new("RGB", (640, 480), "skyblue").save(path)
    return path


def test_a_typed_local_file_passes_with_a_thumbnail_and_python_code(tmp_path: Path) -> None:
    meadow = _meadow(tmp_path)
    form = gw.form("imgQ-edit-plus", prompt="a kite over the meadow", n=1)
    row = form.fields["images"].rows[0]
    row.url.value = str(meadow)  # what a person types
    assert form.errors == [] and not form.submit_button.disabled
    assert form.value["images"] == [meadow]
    assert row.preview.value and "640x480" in row.status.value
    code = html.unescape(form.code_view.value)
    assert "from pathlib import Path" in code and f"Path({str(meadow)!r})" in code
    assert "sent encoded" in html.unescape(form.json_view.value)


def lasting_face(form: EndpointForm, monkeypatch: pytest.MonkeyPatch) -> str:
    """The HTML of the form's lasting face, as displayed in a kernel."""
    import IPython.display

    from genwidgets.widgets import faces

    display = DisplayRecorder()
    monkeypatch.setattr(IPython.display, "display", display)
    monkeypatch.setattr(faces, "in_kernel", lambda: True)
    form._ipython_display_()
    html = display.calls[1][0]["text/html"]
    assert "a form needs its kernel" in html
    return str(html)


def test_the_lasting_face_shows_a_local_file_by_the_path_rule_and_no_loopback_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 39 point 7 (``02_images``): a form set to a file in a temporary folder and
    to an output of the local simulator saves neither the absolute path nor the URL."""
    meadow = _meadow(tmp_path)
    kite = "http://127.0.0.1:8765/files/req-1/kite.png"
    form = gw.form("imgQ-edit-plus", prompt="a kite over the meadow", n=1, images=[kite, meadow])
    faces = [lasting_face(form, monkeypatch), form.json_view.value]
    for face in faces:
        assert str(tmp_path) not in face and "127.0.0.1" not in face and "8765" not in face
        assert "&lt;the file meadow.png, sent encoded" in face
        assert "a file of a gateway on this machine: kite.png" in face
    public = gw.form("imgQ-edit-plus", prompt="a", images=["https://cdn.example/k.png"])
    assert lasting_face(public, monkeypatch).count("https://cdn.example/k.png") == 1


def test_a_typed_missing_file_says_no_such_file_and_disables_submit() -> None:
    form = gw.form("imgQ-edit-plus", prompt="a kite", n=1)
    form.fields["images"].rows[0].url.value = "/nowhere/meadow.png"
    assert [e["msg"] for e in form.errors] == ["no such file: '/nowhere/meadow.png'"]
    assert form.submit_button.disabled and "no such file" in form.reason.value
    assert "no such file" in form.fields["images"].rows[0].note.value
    assert "expected a public" not in form.reason.value


@pytest.mark.timeout(60)
def test_a_typed_local_file_is_sent_encoded_to_the_simulator(
    simulator: Any, tmp_path: Path
) -> None:
    meadow = _meadow(tmp_path)
    with gw.Client(base_url=simulator.base_url, api_key="sim-demo-key") as client:
        form = gw.form("imgQ-edit-plus", client=client, prompt="a kite", n=1)
        form.set(images=[str(meadow)])  # as typed: the box names the file
        job = form.submit()
        sent = job.payload["images"][0]
        assert sent.startswith("data:image/png;base64,")
        assert base64.b64decode(sent.split(",", 1)[1]) == meadow.read_bytes()
        assert job.result(timeout=30).ok


# --- layout (issue 20, point 8; measured in chromium by tests/browser/test_form_board_browser.py)


def test_buttons_keep_their_width_and_a_long_reason_wraps_below_them() -> None:
    form = gw.form(
        "imgQ-edit-plus", prompt="a kite", n=1, images=["/nowhere/" + "x" * 300 + ".png"]
    )
    assert form.actions.children[:2] == (form.submit_button, form.reset_button)
    assert form.actions.layout.flex_flow == "row wrap"  # the reason may go to a line of its own
    for button in (form.submit_button, form.reset_button):
        assert button.layout.flex == "0 0 auto"  # never squeezed to "Su…"
    assert (form.reason.layout.flex, form.reason.layout.min_width) == ("1 1 auto", "0")
    assert "no such file" in form.reason.value and form.submit_button.disabled


def test_each_list_rows_delete_button_keeps_its_room() -> None:
    form = gw.form("imgQ-edit-plus", prompt="a kite", n=1, images=["https://x.test/a.png"] * 2)
    images = form.fields["images"]
    assert images.rows_box.layout.width == "auto"  # 100% plus its indent clipped the edge
    for box in images.rows_box.children:
        holder, remove = box.children
        assert (holder.layout.flex, holder.layout.min_width) == ("1 1 auto", "0")
        assert remove.layout.flex == "0 0 auto" and remove.layout.min_width == remove.layout.width
        assert "gw-remove" in remove._dom_classes and "gw-list-row" in box._dom_classes
    row = images.rows[0]
    assert row.note.layout.margin == "0"  # an item's errors use the row's width


def test_the_forms_error_lines_keep_their_lines_and_wrap() -> None:
    """A gateway's refusal of a create may have several lines; the form's reason and
    the notes beside a field ran them together (no pre-wrap, unlike every other error)."""
    form = gw.form("vidA-2-0", client=RecordingClient(), content=[{"type": "text", "text": "x"}],
                   generate_audio="maybe")  # fmt: skip
    assert form.submit_button.disabled
    assert "white-space:pre-wrap" in form.reason.value
    assert "white-space:pre-wrap" in notes_under(form.fields["generate_audio"])
