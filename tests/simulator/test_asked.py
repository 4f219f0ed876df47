"""Reading a payload through its endpoint's model: defaults and ranges come from
the catalog, values are read tolerantly."""

from __future__ import annotations

from genwidgets.simulator.asked import Asked, asked, ratio_of, size_of


def test_a_field_left_out_reads_as_the_service_default() -> None:
    a = asked("genW2.5-t2i-preview", {"prompt": "x"})
    assert a.get("n") == 4 and a.int("n", 1, 1, 10) == 4
    assert a.get("size") == "1280*1280"
    assert a.flag("prompt_extend") is True and a.flag("watermark") is False
    assert a.get("seed", "none") == "none"  # no default stated: the caller's fallback


def test_numbers_are_clamped_to_the_models_range_and_read_tolerantly() -> None:
    a = asked("vidVq2-text2video", {"duration": "99"})
    assert a.int("duration", 5, 1, 60) == 10  # the model says 1-10
    assert asked("vidVq2-text2video", {"duration": "abc"}).int("duration", 5, 1, 60) == 5
    assert asked("vidVq2-text2video", {"duration": True}).int("duration", 5, 1, 60) == 5


def test_choices_are_the_models_values_matched_in_any_case() -> None:
    a = asked("vidK-v3-turbo-t2v", {"resolution": "4k"})
    assert a.choice("resolution", "720p") == "4k"
    assert asked("vidK-v3-turbo-t2v", {"resolution": "8k"}).choice("resolution", "720p") == "720p"
    assert asked("vidK-v3-turbo-t2v", {}).choice("resolution", "x") == "720p"  # the default


def test_a_section_reads_through_its_own_model() -> None:
    a = asked("speechM-02-turbo", {"audio_setting": {"channel": 2}})
    audio = a.section("audio_setting")
    assert audio.choice("channel", "1") == "2"
    assert audio.choice("sample_rate", "0") == "32000"  # the nested model's default
    assert a.section("voice_setting").num("speed", 0, 0, 9) == 1.0


def test_an_unknown_endpoint_reads_the_payload_alone() -> None:
    a = asked("not-in-the-catalog", {"n": 3})
    assert a.model is None and a.int("n", 1, 1, 10) == 3 and Asked({}, None).get("n", 1) == 1


def test_ratio_and_size_text() -> None:
    assert ratio_of("16:9") == (16, 9) and ratio_of("0:1") == (16, 9)
    assert size_of("640x480", (1, 1), 256, 4096) == (640, 480)
    assert size_of("10*99999", (1, 1), 256, 4096) == (256, 4096)
    assert size_of("auto", (1024, 1024), 256, 4096) == (1024, 1024)
