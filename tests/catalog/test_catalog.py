"""Catalog-wide checks of what the family modules register: every documented endpoint
and field is modelled, with help text, billing flags and media specs as the spec
(spec/endpoints.md) says."""

from __future__ import annotations

import ast
import functools
import re
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import genwidgets.catalog as catalog
from genwidgets.catalog import MediaSpec, field_info_at, media_spec_at
from genwidgets.catalog.fields import fields_of
from genwidgets.catalog.introspect import (
    is_container,
    leaves,
    models_in,
    single_literal,
    strip_optional,
)
from genwidgets.errors import PayloadError

# Field names per documented endpoint, copied from the spec's tables (wire names).
SPEC_FIELDS: dict[str, set[str]] = {
    "vidA-2-0-fast": {"content", "generate_audio", "resolution", "ratio", "duration"},
    "vidA-2-0": {"content", "generate_audio", "resolution", "ratio", "duration"},
    "imgM-inpaint": {"jobId", "imageNo", "remixPrompt", "area", "mask"},
    "imgM_pan": {"jobId", "imageNo", "direction", "scale", "remixPrompt"},
    "imgM-v8.1-i2i": {"jobId", "image_no", "type", "remix_prompt"},
    "vidVq2-text2video": {
        "prompt", "duration", "seed", "aspect_ratio", "resolution", "movement_amplitude", "bgm",
        "payload", "off_peak", "watermark", "wm_position", "wm_url", "meta_data", "callback_url",
    },
    "vidVq1-text2video": {
        "style", "prompt", "duration", "seed", "aspect_ratio", "resolution",
        "movement_amplitude", "bgm", "payload", "off_peak", "watermark", "wm_position",
        "wm_url", "meta_data", "callback_url",
    },
    "vidV-create-subjects": {"name", "images", "videos", "voice_id"},
    "speechM-02-turbo": {
        "text", "output_format", "voice_setting", "audio_setting", "pronunciation_dict",
        "timbre_weights", "language_boost", "voice_modify", "subtitle_enable", "subtitle_type",
        "aigc_watermark",
    },
    "vidH_1.0_r2v": {"prompt", "media", "duration", "resolution", "ratio", "seed", "watermark"},
    "imgG-1.5-edit": {
        "prompt", "images", "mask", "background", "input_fidelity", "n", "output_compression",
        "output_format", "quality", "size", "moderation", "user",
    },
    "vidK-v3-turbo-t2v": {
        "prompt", "resolution", "duration", "aspect_ratio", "sound", "enhance_prompt",
        "element_list",
    },
    "vidK-v1-6-multi-i2v": {
        "image_list", "prompt", "negative_prompt", "mode", "duration", "aspect_ratio",
    },
    "vidK-lip-sync": {"session_id", "face_choose"},
    "vidK-v3-motion-control": {
        "prompt", "image_url", "video_url", "element_list", "keep_original_sound",
        "character_orientation", "mode",
    },
    "vidP_v6_transition": {
        "first_frame_image", "last_frame_image", "prompt", "duration", "quality", "seed",
        "generate_audio_switch",
    },
    "imgQ-edit-plus": {
        "prompt", "images", "negative_prompt", "size", "n", "prompt_extend", "watermark", "seed",
    },
    "genW2.5-t2i-preview": {
        "prompt", "negative_prompt", "size", "n", "seed", "prompt_extend", "watermark",
    },
    "genW2.6-r2v": {
        "prompt", "negative_prompt", "reference_urls", "reference_video_urls", "duration",
        "size", "shot_type", "seed", "watermark",
    },
    "asset-get": {"Id", "ProjectName"},
}  # fmt: skip


# Nested objects the spec tables describe: (endpoint, path to the object, its fields).
SPEC_NESTED: list[tuple[str, tuple[str | int, ...], set[str]]] = [
    ("vidA-2-0", ("content", 0), {"type", "text", "image_url", "video_url", "audio_url", "role"}),
    ("vidA-2-0", ("content", 0, "image_url"), {"url"}),
    ("vidA-2-0", ("content", 0, "video_url"), {"url"}),
    ("imgM-inpaint", ("area",), {"width", "height", "points"}),
    ("imgM-inpaint", ("mask",), {"areas", "url"}),
    ("speechM-02-turbo", ("voice_setting",), {
        "voice_id", "speed", "vol", "pitch", "emotion", "text_normalization", "latex_read",
    }),
    ("speechM-02-turbo", ("audio_setting",), {
        "sample_rate", "bitrate", "format", "channel", "force_cbr",
    }),
    ("speechM-02-turbo", ("voice_modify",), {"pitch", "intensity", "timbre", "sound_effects"}),
    ("speechM-02-turbo", ("pronunciation_dict",), {"tone"}),
    ("speechM-02-turbo", ("timbre_weights", 0), {"voice_id", "weight"}),
    ("vidH_1.0_r2v", ("media", 0), {"type", "url"}),
    ("imgG-1.5-edit", ("mask",), {"file_id", "image_url"}),
    ("vidK-v3-turbo-t2v", ("element_list", 0), {"element_id"}),
    ("vidK-v1-6-multi-i2v", ("image_list", 0), {"image"}),
    ("vidK-lip-sync", ("face_choose", 0), {
        "face_id", "audio_id", "sound_file", "sound_start_time", "sound_end_time",
        "sound_insert_time", "sound_volume", "original_audio_volume",
    }),
    ("vidK-v3-motion-control", ("element_list", 0), {"element_id"}),
]  # fmt: skip


BILLING: dict[str, tuple[str, ...]] = {
    "vidA-2-0-fast": ("resolution", "duration"),
    "vidA-2-0": ("resolution", "duration"),
    "imgM-inpaint": (),
    "imgM_pan": (),
    "imgM-v8.1-i2i": (),
    "vidVq2-text2video": ("duration", "resolution", "off_peak"),
    "vidVq1-text2video": ("duration", "resolution", "off_peak"),
    "vidV-create-subjects": (),
    "speechM-02-turbo": (),
    "vidH_1.0_r2v": ("duration", "resolution"),
    "imgG-1.5-edit": ("n", "quality", "size"),
    "vidK-v3-turbo-t2v": ("resolution", "duration"),
    "vidK-v1-6-multi-i2v": ("mode", "duration"),
    "vidK-lip-sync": (),
    "vidK-v3-motion-control": ("mode",),
    "vidP_v6_transition": ("duration", "quality", "generate_audio_switch"),
    "imgQ-edit-plus": ("n",),
    "genW2.5-t2i-preview": ("n",),
    "genW2.6-r2v": ("duration", "size"),
    "asset-get": (),
}


KINDS = {
    "vidA-2-0-fast": ("video", "vidA"),
    "vidA-2-0": ("video", "vidA"),
    "imgM-inpaint": ("image", "imgM"),
    "imgM_pan": ("image", "imgM"),
    "imgM-v8.1-i2i": ("image", "imgM"),
    "imgM-v8.1-t2i": ("image", "imgM"),
    "imgM_diffusion": ("image", "imgM"),
    "vidVq2-text2video": ("video", "vidV"),
    "vidVq1-text2video": ("video", "vidV"),
    "vidV-create-subjects": ("subject", "vidV"),
    "speechM-02-turbo": ("speech", "speechM"),
    "vidH_1.0_r2v": ("video", "vidH"),
    "imgG-1.5-edit": ("image", "imgG"),
    "vidK-v3-turbo-t2v": ("video", "vidK"),
    "vidK-v1-6-multi-i2v": ("video", "vidK"),
    "vidK-lip-sync": ("video", "vidK"),
    "vidK-v3-motion-control": ("video", "vidK"),
    "vidK-face-identify": ("face", "vidK"),
    "vidK-audio-preview": ("audio", "vidK"),
    "vidK-custom-element": ("subject", "vidK"),
    "vidP_v6_transition": ("video", "vidP"),
    "imgQ-edit-plus": ("image", "imgQ"),
    "genW2.5-t2i-preview": ("image", "genW"),
    "genW2.6-r2v": ("video", "genW"),
    "asset-get": ("asset", "asset"),
    "asset-group-create": ("asset", "asset"),
    "asset-create": ("asset", "asset"),
}


MB = 1024 * 1024


# The media table of the spec (spec/endpoints.md, as MediaSpec): (endpoint, path, media,
# encoding, formats, max MB).
MEDIA_TABLE: list[tuple[str, tuple[str | int, ...], str, str, tuple[str, ...], float | None]] = [
    ("vidA-2-0", ("content", 0, "image_url", "url"), "image", "data_url_lower",
     ("jpeg", "png", "webp", "bmp", "tiff", "gif"), 30),
    ("vidA-2-0-fast", ("content", 0, "image_url", "url"), "image", "data_url_lower",
     ("jpeg", "png", "webp", "bmp", "tiff", "gif"), 30),
    ("vidA-2-0", ("content", 0, "video_url", "url"), "video", "url_or_data", (), None),
    ("vidH_1.0_r2v", ("media", 0, "url"), "image", "data_url_mime", ("jpeg", "png", "webp"), 20),
    ("vidV-create-subjects", ("images", 0), "image", "data_url_mime", ("png", "jpeg", "webp"), 50),
    ("vidV-create-subjects", ("videos", 0), "video", "data_url_mime", ("mp4", "avi", "mov"), 100),
    ("vidK-v1-6-multi-i2v", ("image_list", 0, "image"), "image", "raw_base64", ("jpeg", "png"), 10),
    ("vidK-v3-motion-control", ("image_url",), "image", "raw_base64", ("jpeg", "png"), 10),
    ("vidK-v3-motion-control", ("video_url",), "video", "url_only", ("mp4", "mov"), 100),
    ("vidK-lip-sync", ("face_choose", 0, "sound_file"), "audio", "raw_base64",
     ("mp3", "wav", "m4a"), 5),
    ("vidP_v6_transition", ("first_frame_image",), "image", "url_only", ("jpeg", "png", "webp"),
     20),
    ("vidP_v6_transition", ("last_frame_image",), "image", "url_only", ("jpeg", "png", "webp"),
     20),
    ("imgQ-edit-plus", ("images", 0), "image", "data_url_mime",
     ("jpeg", "png", "bmp", "tiff", "webp", "gif"), 10),
    ("imgG-1.5-edit", ("images", 0), "image", "data_url_mime", ("png", "jpeg", "webp"), None),
    ("imgM-inpaint", ("mask", "url"), "image", "url_or_data", (), None),
    ("genW2.6-r2v", ("reference_video_urls", 0), "video", "url_only", ("mp4", "mov"), 100),
]  # fmt: skip


def _nested_models(model: type[BaseModel]) -> list[type[BaseModel]]:
    """Every model reachable from ``model`` (itself included)."""
    seen: list[type[BaseModel]] = []
    todo = [model]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.append(current)
        for info in current.model_fields.values():
            for leaf in leaves(info.annotation):
                todo.extend(models_in(leaf))
    return seen


def _wire_names(model: type[BaseModel]) -> set[str]:
    return {info.alias or name for name, info in model.model_fields.items()}


def test_twenty_documented_endpoints_and_the_referenced_ones() -> None:
    documented = {spec.id for spec in catalog.endpoints()}
    assert documented == set(SPEC_FIELDS)
    everything = {spec.id for spec in catalog.endpoints(documented_only=False)}
    assert everything == set(KINDS)
    assert all(not catalog.endpoint(i).documented for i in everything - documented)


@pytest.mark.parametrize("endpoint_id", sorted(KINDS))
def test_kind_family_and_title(endpoint_id: str) -> None:
    spec = catalog.endpoint(endpoint_id)
    assert (spec.kind, spec.family) == KINDS[endpoint_id]
    assert spec.title and spec.title != endpoint_id
    assert spec.model.endpoint_id == endpoint_id
    assert spec.description  # from the class docstring


@pytest.mark.parametrize("endpoint_id", sorted(SPEC_FIELDS))
def test_every_documented_field_is_modelled(endpoint_id: str) -> None:
    assert _wire_names(catalog.endpoint(endpoint_id).model) == SPEC_FIELDS[endpoint_id]


@pytest.mark.parametrize(("endpoint_id", "path", "fields"), SPEC_NESTED)
def test_nested_objects_have_their_fields(
    endpoint_id: str, path: tuple[str | int, ...], fields: set[str]
) -> None:
    info = field_info_at(catalog.endpoint(endpoint_id).model, path)
    assert info is not None
    models = [m for m in _nested_models(catalog.endpoint(endpoint_id).model)]
    owners = [m for m in models if _wire_names(m) == fields]
    assert owners, f"no nested model with fields {sorted(fields)}"
    for owner in owners:
        assert owner.model_config.get("extra") == "allow"


@pytest.mark.parametrize("endpoint_id", sorted(KINDS))
def test_every_field_has_a_description(endpoint_id: str) -> None:
    for model in _nested_models(catalog.endpoint(endpoint_id).model):
        for name, info in model.model_fields.items():
            assert info.description and len(info.description) > 5, (model.__name__, name)


@pytest.mark.parametrize("endpoint_id", sorted(BILLING))
def test_billing_fields(endpoint_id: str) -> None:
    assert set(catalog.endpoint(endpoint_id).billing_fields) == set(BILLING[endpoint_id])


@pytest.mark.parametrize("endpoint_id", sorted(KINDS))
def test_optional_fields_default_to_none_and_nothing_is_sent_unset(endpoint_id: str) -> None:
    model = catalog.endpoint(endpoint_id).model
    for name, info in model.model_fields.items():
        if not info.is_required():
            assert info.default is None, name


@pytest.mark.parametrize(
    ("endpoint_id", "path", "media", "encoding", "formats", "max_mb"), MEDIA_TABLE
)
def test_media_specs_match_the_spec_table(
    endpoint_id: str,
    path: tuple[str | int, ...],
    media: str,
    encoding: str,
    formats: tuple[str, ...],
    max_mb: float | None,
) -> None:
    spec = media_spec_at(catalog.endpoint(endpoint_id).model, path)
    assert isinstance(spec, MediaSpec)
    assert (spec.media, spec.encoding) == (media, encoding)
    assert set(spec.formats) == set(formats)
    if max_mb is None:
        assert spec.max_bytes is None
    else:
        assert spec.max_bytes is not None and abs(spec.max_bytes - max_mb * MB) <= 1


def test_media_spec_details_of_the_table() -> None:
    vida = media_spec_at(catalog.endpoint("vidA-2-0").model, ("content", 0, "image_url", "url"))
    assert vida is not None
    assert (vida.min_side, vida.max_side, vida.sides_exclusive) == (300, 6000, True)
    assert (vida.min_aspect, vida.max_aspect, vida.aspect_exclusive) == (0.4, 2.5, True)
    assert vida.allow_asset
    vidh = media_spec_at(catalog.endpoint("vidH_1.0_r2v").model, ("media", 3, "url"))
    assert vidh is not None and vidh.min_short_side == 400
    motion = media_spec_at(catalog.endpoint("vidK-v3-motion-control").model, ("video_url",))
    assert motion is not None
    assert (motion.min_side, motion.max_side, motion.min_seconds) == (340, 3850, 3.0)
    sound = media_spec_at(catalog.endpoint("vidK-lip-sync").model, ("face_choose", 0, "sound_file"))
    assert sound is not None and (sound.min_seconds, sound.max_seconds) == (2.0, 60.0)
    refs = media_spec_at(catalog.endpoint("genW2.6-r2v").model, ("reference_urls", 0))
    assert refs is not None and refs.encoding == "url_only"


def test_prompt_strings_are_marked() -> None:
    """The marker alone says which field is an imgM prompt (no name list, no family)."""
    marked = {
        (spec.id, name)
        for spec in catalog.endpoints(documented_only=False)
        for name in spec.prompt_fields
    }
    assert marked == {
        ("imgM-inpaint", "remixPrompt"),
        ("imgM_pan", "remixPrompt"),
        ("imgM-v8.1-i2i", "remix_prompt"),
        ("imgM-v8.1-t2i", "prompt"),
        ("imgM_diffusion", "prompt"),
    }


#: the smallest valid payload of every endpoint
MINIMAL: dict[str, dict[str, Any]] = {
    "vidA-2-0-fast": {"content": [{"type": "text", "text": "a kite"}]},
    "vidA-2-0": {"content": [{"type": "text", "text": "a kite"}]},
    "imgM-inpaint": {"jobId": "j1", "imageNo": 0, "mask": {"url": "https://x/m.png"}},
    "imgM_pan": {"jobId": "j1", "imageNo": 3, "direction": 0, "scale": 1.1},
    "imgM-v8.1-i2i": {"jobId": "j1", "image_no": 0},
    "imgM-v8.1-t2i": {"prompt": "a cat --ar 16:9"},
    "imgM_diffusion": {"prompt": "a cat --v 7"},
    "vidVq2-text2video": {"prompt": "a kite"},
    "vidVq1-text2video": {"prompt": "a kite"},
    "vidV-create-subjects": {"name": "kit", "images": ["https://x/a.png"]},
    "speechM-02-turbo": {"text": "hello"},
    "vidH_1.0_r2v": {"prompt": "x", "media": [{"type": "reference_image", "url": "https://x"}]},
    "imgG-1.5-edit": {"prompt": "x", "images": ["https://x/a.png"]},
    "vidK-v3-turbo-t2v": {"prompt": "x"},
    "vidK-v1-6-multi-i2v": {"image_list": [{"image": "https://x/a.png"}]},
    "vidK-lip-sync": {"session_id": "s", "face_choose": [{"face_id": "f", "audio_id": "a"}]},
    "vidK-v3-motion-control": {"image_url": "https://x/a.png", "video_url": "https://x/v.mp4",
                               "character_orientation": "video", "mode": "std"},
    "vidK-face-identify": {"video_url": "https://x/v.mp4"},
    "vidK-audio-preview": {"text": "hello"},
    "vidK-custom-element": {"name": "e", "image_urls": ["https://x/a.png"]},
    "vidP_v6_transition": {"first_frame_image": "https://x/a.png",
                           "last_frame_image": "https://x/b.png"},
    "imgQ-edit-plus": {"prompt": "x", "images": ["https://x/a.png"]},
    "genW2.5-t2i-preview": {"prompt": "x"},
    "genW2.6-r2v": {"reference_urls": ["https://x/a.png"]},
    "asset-get": {"Id": "asset-1"},
    "asset-group-create": {"Name": "g"},
    "asset-create": {"GroupId": "g", "URL": "https://x/a.png"},
}  # fmt: skip


def test_every_model_validates_its_minimal_payload_without_warnings() -> None:
    assert set(MINIMAL) == set(KINDS)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for endpoint_id, payload in MINIMAL.items():
            assert catalog.payload_of(endpoint_id, payload) == payload, endpoint_id
            required = {
                info.alias or name
                for name, info in catalog.endpoint(endpoint_id).model.model_fields.items()
                if info.is_required()
            }
            assert required <= set(payload), endpoint_id
            for name in required:
                short = {k: v for k, v in payload.items() if k != name}
                with pytest.raises(PayloadError):
                    catalog.validate(endpoint_id, short)


#: values no field takes, each reaching a different check (a bound, a parse, a rule)
HOSTILE = (-5, 0, 3, 16, 99999, 1.5, True, "", "x", "abc*def", "99999*1", "4000*1024",
           [], [{}], ["x"], {}, {"x": 1})  # fmt: skip


def _places(
    model: type[BaseModel], seen: frozenset[type[BaseModel]] = frozenset()
) -> Iterator[tuple[str, Callable[[Any], dict[str, Any]]]]:
    """(dotted place, what puts a value there) for every field of ``model`` and of the
    objects nested in it (list items, objects): the value sits in its object, which
    carries its tag (vidA's ``type``), in a one-item list where the field is a list."""
    for field in fields_of(model):
        yield field.wire, functools.partial(_at, field.wire, None, {})
        many = is_container(strip_optional(field.info.annotation)[0])
        for inner in models_in(field.info.annotation):
            if inner in seen:
                continue
            tags = {f.wire: single_literal(f.info.annotation)[1] for f in fields_of(inner)}
            tags = {k: v for k, v in tags.items() if v is not None}
            for place, put in _places(inner, seen | {inner}):
                outer = functools.partial(_at, field.wire, put, tags, many=many)
                yield f"{field.wire}.{place}", outer


def _at(
    name: str,
    put: Callable[[Any], dict[str, Any]] | None,
    tags: dict[str, Any],
    value: Any,
    many: bool = False,
) -> dict[str, Any]:
    if put is None:
        return {name: value}
    inner = {**tags, **put(value)}
    return {name: [inner] if many else inner}


def _merged(base: Any, changes: Any) -> Any:
    """``changes`` laid over ``base``: objects merged, a one-item list's item laid over
    the base's first, so a nested field is tried among its object's valid fields (a
    model's own checks run only then)."""
    if isinstance(base, dict) and isinstance(changes, dict):
        return {**base, **{k: _merged(base.get(k), v) for k, v in changes.items()}}
    if isinstance(base, list) and base and isinstance(changes, list) and len(changes) == 1:
        return [_merged(base[0], changes[0])]
    return changes


def test_no_message_names_its_field_again() -> None:
    """A message shown at a field (``duration: must be 4-15 seconds; got 99``) does not
    start with that field's name again (``duration: duration must be ...``): every
    field of every endpoint, and of the objects nested in it (list items, objects),
    given values it refuses, our checks' words and pydantic's."""
    doubled = set()
    nested = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for endpoint_id, payload in MINIMAL.items():
            for place, put in _places(catalog.endpoint(endpoint_id).model):
                nested += "." in place
                for value in HOSTILE:
                    try:
                        catalog.validate(endpoint_id, _merged(payload, put(value)))
                    except PayloadError as exc:
                        for error in exc.errors:
                            named = [p for p in error["loc"] if isinstance(p, str)]
                            said_again = named and re.match(
                                rf"{re.escape(named[-1])}\b", error["msg"], re.IGNORECASE
                            )
                            if said_again:
                                doubled.add((endpoint_id, error["loc"], error["msg"][:80]))
    assert nested > 20  # the nested fields were reached
    assert not doubled, sorted(doubled, key=str)


def test_endpoint_descriptions_are_one_plain_sentence() -> None:
    # forms show them as help: no RST markup, no developer notes cut mid-sentence
    for spec in catalog.endpoints(documented_only=False):
        text = spec.description
        assert text and "``" not in text and "\n" not in text, spec.id
        assert text.endswith(".") and ". " not in text, (spec.id, text)


FOUNDATION = (
    "introspect", "markers", "checks", "fields", "paths", "findings", "model", "coerce", "registry",
    "validation", "openapi_schema",
)  # fmt: skip
FAMILIES = (
    "vida", "vidv", "vidh", "vidk", "vidp", "genw", "imgg", "imgq", "imgm", "speech", "asset",
)  # fmt: skip
MODULE_OF_FAMILY = {"speechM": "speech"}  # otherwise the family's name in lowercase


def _catalog_imports(module: str) -> set[str]:
    """The catalog modules ``module`` imports (relative imports of its package)."""
    tree = ast.parse(Path(catalog.__file__).with_name(f"{module}.py").read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            found |= {node.module} if node.module else {a.name for a in node.names}
    return found


def test_one_module_per_family_and_families_import_only_the_foundation() -> None:
    files = {p.stem for p in Path(catalog.__file__).parent.glob("*.py")} - {"__init__"}
    assert files == set(FOUNDATION) | set(FAMILIES)
    for spec in catalog.endpoints(documented_only=False):
        module = MODULE_OF_FAMILY.get(spec.family, spec.family.lower())
        assert spec.model.__module__ == f"genwidgets.catalog.{module}", spec.id
    for family in FAMILIES:
        assert _catalog_imports(family) <= set(FOUNDATION), family
    for rank, module in enumerate(FOUNDATION):  # each imports only those before it
        assert _catalog_imports(module) <= set(FOUNDATION[:rank]), module
