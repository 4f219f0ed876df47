"""Text to speech: ``speechM-02-turbo``.

This service exposes no streaming, so the spec's streaming-only options are
either rejected (``subtitle_type="word_streaming"``) or warned about as having no
effect (``audio_setting.force_cbr``).
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, field_validator, model_validator

from .checks import shown
from .coerce import refusing
from .findings import warn
from .markers import Number, ServiceDefault
from .model import Endpoint, Part
from .registry import register

TEXT_MAX = 9999  # "fewer than 10000 characters"
MAX_TIMBRE_VOICES = 4
PAUSE_MIN, PAUSE_MAX = 0.01, 99.99
_PAUSE = re.compile(r"<#(.*?)#>", re.DOTALL)
_PAUSE_SECONDS = re.compile(r"\d{1,2}(?:\.\d{1,2})?")

LanguageBoost = Literal[
    "Chinese",
    "Chinese,Yue",
    "English",
    "Arabic",
    "Russian",
    "Spanish",
    "French",
    "Portuguese",
    "German",
    "Turkish",
    "Dutch",
    "Ukrainian",
    "Vietnamese",
    "Indonesian",
    "Japanese",
    "Italian",
    "Korean",
    "Thai",
    "Polish",
    "Romanian",
    "Greek",
    "Czech",
    "Finnish",
    "Hindi",
    "Bulgarian",
    "Danish",
    "Hebrew",
    "Malay",
    "Persian",
    "Slovak",
    "Swedish",
    "Croatian",
    "Filipino",
    "Hungarian",
    "Norwegian",
    "Slovenian",
    "Catalan",
    "Nynorsk",
    "Tamil",
    "Afrikaans",
    "auto",
]


def pause_markers(text: str) -> str:
    """AfterValidator: the ``<#x#>`` pause markers of ``text`` keep the spec's rules."""
    previous_end: int | None = None
    for match in _PAUSE.finditer(text):
        seconds = match.group(1)
        if not _PAUSE_SECONDS.fullmatch(seconds):
            raise ValueError(
                f"pause marker {shown(match.group(0))}: x must be seconds 0.01-99.99 with at most "
                "two decimals, e.g. <#0.5#>"
            )
        if not PAUSE_MIN <= float(seconds) <= PAUSE_MAX:
            raise ValueError(
                f"pause marker {shown(match.group(0))}: x must be between 0.01 and 99.99 seconds"
            )
        if previous_end is not None and not text[previous_end : match.start()].strip():
            raise ValueError(
                f"pause markers must not be consecutive: {match.group(0)!r} follows another "
                "marker with nothing to pronounce between them (merge them into one)"
            )
        previous_end = match.end()
    return text


class VoiceSetting(Part):
    """Voice, speed, volume, pitch and emotion."""

    voice_id: str | None = Field(
        None,
        description="System, cloned or text-generated voice ID. Leave empty when mixing "
        "voices with timbre_weights.",
    )
    speed: Annotated[Number | None, ServiceDefault(1.0)] = Field(
        None, ge=0.5, le=2, description="Speaking speed."
    )
    vol: Annotated[Number | None, ServiceDefault(1.0)] = Field(
        None, ge=0, le=10, description="Volume."
    )
    pitch: Annotated[int | None, ServiceDefault(0)] = Field(
        None, ge=-12, le=12, description="Voice pitch."
    )
    emotion: (
        Literal["happy", "sad", "angry", "fearful", "disgusted", "surprised", "calm"] | None
    ) = Field(
        None,
        description="happy, sad, angry, fearful, disgusted, surprised or calm; normally "
        "chosen by the model.",
    )
    text_normalization: Annotated[bool | None, ServiceDefault(False)] = Field(
        None,
        description="Chinese and English normalization. May slightly increase latency.",
    )
    latex_read: Annotated[bool | None, ServiceDefault(False)] = Field(
        None,
        description="Read LaTeX formulas. Chinese only; sets language_boost to "
        "Chinese; formulas wrapped in $$, backslashes inside doubled.",
    )


class AudioSetting(Part):
    """Sample rate, bitrate, container format and channels."""

    sample_rate: Annotated[
        Literal[8000, 16000, 22050, 24000, 32000, 44100] | None, ServiceDefault(32000)
    ] = Field(None, description="8000, 16000, 22050, 24000, 32000 or 44100.")
    bitrate: Annotated[Literal[32000, 64000, 128000, 256000] | None, ServiceDefault(128000)] = (
        Field(
            None,
            description="32000, 64000, 128000 or 256000. A JSON number, not a "
            "string (a numeric string is converted); only effective for mp3.",
        )
    )
    format: Literal["mp3", "pcm", "flac", "wav"] | None = Field(
        None, description="mp3, pcm, flac or wav. Default not shown."
    )
    channel: Annotated[Literal[1, 2] | None, ServiceDefault(1)] = Field(None, description="1 or 2.")
    force_cbr: Annotated[bool | None, ServiceDefault(False)] = Field(
        None,
        description="Constant bitrate. Only for streaming mp3 (this service "
        "does not stream, so it has no effect).",
    )

    @model_validator(mode="after")
    def _ineffective(self) -> AudioSetting:
        if self.force_cbr:
            warn(
                "audio_setting.force_cbr only applies to streaming mp3; "
                "this service does not stream"
            )
        if self.bitrate is not None and self.format not in (None, "mp3"):
            warn(f"audio_setting.bitrate only applies to mp3; format is {self.format}")
        return self


class PronunciationDict(Part):
    """Replacement rules for pronunciation."""

    tone: list[str] | None = Field(
        None,
        description="Replacement rules '<text>/<replacement>'; in Chinese text tones are "
        "digits 1-5 (5 neutral), e.g. 处理/(chu3)(li3).",
    )

    @field_validator("tone")
    @classmethod
    def _rules(cls, value: list[str] | None) -> list[str] | None:
        for rule in value or []:
            text, slash, replacement = rule.partition("/")
            if not slash or not text or not replacement:
                raise ValueError(
                    f"pronunciation rule {shown(rule)} must read '<text>/<replacement>', e.g. "
                    "'omg/oh my god'"
                )
        return value


class TimbreWeight(Part):
    """One voice of a mix: ``voice_id`` and ``weight``, both required."""

    voice_id: str = Field(min_length=1, description="Voice ID to mix.")
    weight: int = Field(ge=1, le=100, description="Mixing weight.")


class VoiceModify(Part):
    """Voice effects (mp3, wav, flac)."""

    pitch: int | None = Field(
        None, ge=-100, le=100, description="Lower toward the minimum, brighter toward the maximum."
    )
    intensity: int | None = Field(
        None, ge=-100, le=100, description="Stronger toward the minimum, softer toward the maximum."
    )
    timbre: int | None = Field(
        None, ge=-100, le=100, description="Richer toward the minimum, clearer toward the maximum."
    )
    sound_effects: (
        Literal["spacious_echo", "auditorium_echo", "lofi_telephone", "robotic"] | None
    ) = Field(
        None,
        description="One of spacious_echo, auditorium_echo, lofi_telephone, robotic; only one "
        "per request.",
    )


@register("speechM-02-turbo", kind="speech", title="Text to speech (speechM)")
class SpeechM02Turbo(Endpoint):
    """Text to speech. Choices where the spec is silent: an empty ``timbre_weights``
    list counts as not mixing; a pause marker at the very start or end of the text
    is allowed (only consecutive markers are rejected)."""

    text: Annotated[str, AfterValidator(pause_markers)] = Field(
        min_length=1,
        max_length=TEXT_MAX,
        description="Fewer than 10000 characters; paragraphs separated by newline. Pause "
        "marker <#x#> with x seconds 0.01-99.99 (at most two decimals), between pronounceable "
        "segments, not consecutive.",
    )
    output_format: Annotated[Literal["url", "hex"] | None, ServiceDefault("url")] = Field(
        None, description="url or hex."
    )
    voice_setting: VoiceSetting | None = Field(
        None, description="Voice ID, speed, volume, pitch, emotion, normalization, LaTeX."
    )
    audio_setting: AudioSetting | None = Field(
        None, description="Sample rate, bitrate, format, channels."
    )
    pronunciation_dict: PronunciationDict | None = Field(
        None, description="tone: replacement rules '<text>/<replacement>'."
    )
    timbre_weights: list[TimbreWeight] | None = Field(
        None,
        max_length=MAX_TIMBRE_VOICES,
        description="Mixed voices: at most 4 items, each voice_id and weight (1-100) filled "
        "together. When mixing, leave voice_setting.voice_id empty.",
    )
    language_boost: LanguageBoost | None = Field(
        None,
        description="Language hint, e.g. Chinese, Chinese,Yue, English, Japanese ... or auto "
        "(model chooses). Default null.",
    )
    voice_modify: VoiceModify | None = Field(
        None,
        description="Pitch, intensity, timbre, sound effect. Supported formats: mp3, wav, flac.",
    )
    subtitle_enable: Annotated[bool | None, ServiceDefault(False)] = Field(
        None, description="Only for non-streaming output."
    )
    subtitle_type: Annotated[
        Literal["sentence", "word"] | None,
        ServiceDefault("sentence"),
        refusing(
            "word_streaming",
            "subtitle_type word_streaming needs upstream streaming, which this service "
            "does not offer; use sentence or word",
        ),
    ] = Field(
        None,
        description="sentence or word. (word_streaming needs upstream "
        "streaming, which this service does not offer.)",
    )
    aigc_watermark: Annotated[bool | None, ServiceDefault(False)] = Field(
        None,
        description="Appends an audio rhythm marker at the end; non-streaming only.",
    )

    @model_validator(mode="after")
    def _mixing(self) -> SpeechM02Turbo:
        if self.timbre_weights and self.voice_setting and self.voice_setting.voice_id:
            raise ValueError(
                "voice_setting.voice_id must be empty when timbre_weights mixes voices (put "
                "every voice in timbre_weights)"
            )
        return self

    @model_validator(mode="after")
    def _voice_modify_format(self) -> SpeechM02Turbo:
        fmt = self.audio_setting.format if self.audio_setting else None
        if self.voice_modify is not None and fmt == "pcm":
            raise ValueError("voice_modify supports mp3, wav and flac output, not pcm")
        return self

    @model_validator(mode="after")
    def _latex_language(self) -> SpeechM02Turbo:
        latex = self.voice_setting is not None and self.voice_setting.latex_read
        if latex and self.language_boost not in (None, "Chinese"):
            warn(
                f"voice_setting.latex_read sets language_boost to Chinese; {self.language_boost!r} "
                "is overridden"
            )
        return self
