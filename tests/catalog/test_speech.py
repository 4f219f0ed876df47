"""speechM-02-turbo rules on both sides of every boundary."""

from __future__ import annotations

from typing import Any

import pytest
from catalog_rules import Warned, table_tests

from genwidgets.catalog import IneffectiveFieldWarning, payload_of
from genwidgets.catalog.speech import pause_markers


def tts(text: str = "Hello there.", **fields: Any) -> dict[str, Any]:
    return {"text": text, **fields}


def voices(n: int, weight: int = 50) -> list[dict[str, Any]]:
    return [{"voice_id": f"v{i}", "weight": weight} for i in range(n)]


CASES: list[tuple[str, dict[str, Any], str | None]] = [
    ("speechM-02-turbo", tts(), None),
    ("speechM-02-turbo", {}, "Field required"),
    ("speechM-02-turbo", tts(""), "must have 1-9999 characters"),
    ("speechM-02-turbo", tts("a" * 9999), None),
    ("speechM-02-turbo", tts("a" * 10000), "must have 1-9999 characters"),
    # pause markers
    ("speechM-02-turbo", tts("one <#0.01#> two"), None),
    ("speechM-02-turbo", tts("one <#99.99#> two"), None),
    ("speechM-02-turbo", tts("one <#1#> two <#2.5#> three"), None),
    ("speechM-02-turbo", tts("one <#0#> two"), "between 0.01 and 99.99"),
    ("speechM-02-turbo", tts("one <#0.00#> two"), "between 0.01 and 99.99"),
    ("speechM-02-turbo", tts("one <#100#> two"), "at most two decimals"),
    ("speechM-02-turbo", tts("one <#0.001#> two"), "at most two decimals"),
    ("speechM-02-turbo", tts("one <#abc#> two"), "at most two decimals"),
    ("speechM-02-turbo", tts("one <#-1#> two"), "at most two decimals"),
    ("speechM-02-turbo", tts("one <##> two"), "at most two decimals"),
    ("speechM-02-turbo", tts("one <#1#><#2#> two"), "must not be consecutive"),
    ("speechM-02-turbo", tts("one <#1#> \n <#2#> two"), "must not be consecutive"),
    ("speechM-02-turbo", tts("one <#1#> a <#2#> two"), None),
    # output and subtitles
    ("speechM-02-turbo", tts(output_format="hex"), None),
    ("speechM-02-turbo", tts(output_format="base64"), "expected one of"),
    ("speechM-02-turbo", tts(subtitle_enable=True, subtitle_type="word"), None),
    ("speechM-02-turbo", tts(subtitle_type="sentence"), None),
    ("speechM-02-turbo", tts(subtitle_type="word_streaming"), "does not offer"),
    ("speechM-02-turbo", tts(aigc_watermark=True), None),
    ("speechM-02-turbo", tts(language_boost="Chinese,Yue"), None),
    ("speechM-02-turbo", tts(language_boost="auto"), None),
    ("speechM-02-turbo", tts(language_boost="Klingon"), "expected one of"),
    # voice_setting
    ("speechM-02-turbo", tts(voice_setting={"voice_id": "v", "speed": 0.5, "vol": 0,
                                            "pitch": -12, "emotion": "calm"}), None),
    ("speechM-02-turbo", tts(voice_setting={"speed": 2, "vol": 10, "pitch": 12}), None),
    ("speechM-02-turbo", tts(voice_setting={"speed": 0.49}), "must be 0.5-2"),
    ("speechM-02-turbo", tts(voice_setting={"speed": 2.01}), "must be 0.5-2"),
    ("speechM-02-turbo", tts(voice_setting={"vol": -0.1}), "must be 0-10"),
    ("speechM-02-turbo", tts(voice_setting={"vol": 10.1}), "must be 0-10"),
    ("speechM-02-turbo", tts(voice_setting={"pitch": -13}), "must be from -12 to 12"),
    ("speechM-02-turbo", tts(voice_setting={"pitch": 13}), "must be from -12 to 12"),
    ("speechM-02-turbo", tts(voice_setting={"pitch": 1.5}), "expected a whole number"),
    ("speechM-02-turbo", tts(voice_setting={"emotion": "bored"}), "expected one of"),
    ("speechM-02-turbo", tts(voice_setting={"text_normalization": True, "latex_read": True}),
     None),
    ("speechM-02-turbo", tts(voice_setting="v1"), "expected an object (dict) with the fields"),
    # audio_setting
    ("speechM-02-turbo", tts(audio_setting={"sample_rate": 8000, "bitrate": 32000,
                                            "format": "mp3", "channel": 1}), None),
    ("speechM-02-turbo", tts(audio_setting={"sample_rate": 44100, "bitrate": 256000,
                                            "channel": 2}), None),
    ("speechM-02-turbo", tts(audio_setting={"sample_rate": 48000}), "expected one of"),
    ("speechM-02-turbo", tts(audio_setting={"bitrate": 96000}), "expected one of"),
    ("speechM-02-turbo", tts(audio_setting={"channel": 3}), "expected one of 1, 2; got 3"),
    ("speechM-02-turbo", tts(audio_setting={"format": "ogg"}), "expected one of"),
    ("speechM-02-turbo", tts(audio_setting={"format": "wav"}), None),
    # voice_modify
    ("speechM-02-turbo", tts(voice_modify={"pitch": -100, "intensity": 100, "timbre": 0,
                                           "sound_effects": "robotic"}), None),
    ("speechM-02-turbo", tts(voice_modify={"pitch": -101}), "must be from -100 to 100"),
    ("speechM-02-turbo", tts(voice_modify={"intensity": 101}), "must be from -100 to 100"),
    ("speechM-02-turbo", tts(voice_modify={"timbre": 101}), "must be from -100 to 100"),
    ("speechM-02-turbo", tts(voice_modify={"sound_effects": "reverb"}), "expected one of"),
    ("speechM-02-turbo", tts(voice_modify={"sound_effects": ["robotic", "spacious_echo"]}),
     "expected one of"),
    ("speechM-02-turbo", tts(voice_modify={"pitch": 5}, audio_setting={"format": "flac"}), None),
    ("speechM-02-turbo", tts(voice_modify={"pitch": 5}, audio_setting={"format": "pcm"}),
     "not pcm"),
    # pronunciation_dict
    ("speechM-02-turbo", tts(pronunciation_dict={"tone": ["omg/oh my god", "处理/(chu3)(li3)"]}),
     None),
    ("speechM-02-turbo", tts(pronunciation_dict={"tone": ["no slash"]}), "<text>/<replacement>"),
    ("speechM-02-turbo", tts(pronunciation_dict={"tone": ["/x"]}), "<text>/<replacement>"),
    ("speechM-02-turbo", tts(pronunciation_dict={"tone": ["x/"]}), "<text>/<replacement>"),
    # timbre_weights
    ("speechM-02-turbo", tts(timbre_weights=voices(1)), None),
    ("speechM-02-turbo", tts(timbre_weights=voices(4)), None),
    ("speechM-02-turbo", tts(timbre_weights=voices(5)), "at most 4"),
    ("speechM-02-turbo", tts(timbre_weights=voices(2, weight=1)), None),
    ("speechM-02-turbo", tts(timbre_weights=voices(2, weight=100)), None),
    ("speechM-02-turbo", tts(timbre_weights=voices(2, weight=0)), "must be 1-100"),
    ("speechM-02-turbo", tts(timbre_weights=voices(2, weight=101)), "must be 1-100"),
    ("speechM-02-turbo", tts(timbre_weights=[{"voice_id": "v"}]), "Field required"),
    ("speechM-02-turbo", tts(timbre_weights=[{"weight": 3}]), "Field required"),
    ("speechM-02-turbo", tts(timbre_weights=voices(2), voice_setting={"voice_id": "v9"}),
     "voice_setting.voice_id must be empty"),
    ("speechM-02-turbo", tts(timbre_weights=voices(2), voice_setting={"voice_id": ""}), None),
    ("speechM-02-turbo", tts(timbre_weights=voices(2), voice_setting={"speed": 1.5}), None),
    ("speechM-02-turbo", tts(timbre_weights=[], voice_setting={"voice_id": "v9"}), None),
]  # fmt: skip

WARNED: list[Warned] = [
    ("speechM-02-turbo", tts(audio_setting={"force_cbr": True}), IneffectiveFieldWarning,
     "force_cbr"),
    ("speechM-02-turbo", tts(audio_setting={"bitrate": 64000, "format": "wav"}),
     IneffectiveFieldWarning, "bitrate only applies to mp3"),
    ("speechM-02-turbo", tts(voice_setting={"latex_read": True}, language_boost="English"),
     IneffectiveFieldWarning, "latex_read"),
]  # fmt: skip

test_speech_rules, test_speech_warnings, *_ = table_tests(CASES, WARNED)


def test_numeric_strings_become_json_numbers() -> None:
    body = payload_of("speechM-02-turbo", tts(audio_setting={"bitrate": "128000"}))
    assert body["audio_setting"] == {"bitrate": 128000}


def test_pause_marker_check() -> None:
    assert pause_markers("no markers at all") == "no markers at all"
    assert pause_markers("<#0.5#> leading") == "<#0.5#> leading"
    with pytest.raises(ValueError, match="<#2#>"):
        pause_markers("a <#1#>   <#2#> b")
