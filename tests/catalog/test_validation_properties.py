"""Property tests: whatever a payload holds, validation either returns a model or
raises PayloadError (never another exception), and what it returns is stable:
the body it would send validates again to the same body."""

from __future__ import annotations

import json
import warnings
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

import genwidgets.catalog as catalog
from genwidgets.catalog.introspect import leaves, models_in
from genwidgets.errors import PayloadError

ENDPOINT_IDS = sorted(s.id for s in catalog.endpoints(documented_only=False))


def _names(model: type[BaseModel], seen: set[type[BaseModel]] | None = None) -> set[str]:
    """Every wire name in the model and its nested models."""
    seen = seen if seen is not None else set()
    if model in seen:
        return set()
    seen.add(model)
    names = {info.alias or name for name, info in model.model_fields.items()}
    for info in model.model_fields.values():
        for leaf in leaves(info.annotation):
            for inner in models_in(leaf):
                names |= _names(inner, seen)
    return names


ALL_NAMES = sorted(set().union(*(_names(catalog.endpoint(i).model) for i in ENDPOINT_IDS)))

INTERESTING_STRINGS = st.sampled_from([
    "", " ", "https://example.com/a.png", "http://x/v.mp4", "asset://a1", "asset://",
    "data:image/png;base64,iVBORw0KGgo=", "data:image/PNG;base64,AA", "data:video/mp4;base64,AA",
    "data:,", "data:image/png;base64,", "iVBORw0KGgo=", "/tmp/cat.png", "1080p", "720P", "5",
    "10", "-1", "1280*1280", "1920x1080", "1024x1024", "text", "image_url", "video_url",
    "audio_url", "first_frame", "last_frame", "reference_image", "reference_video", "std",
    "pro", "on", "true", "word_streaming", "hello <#0.5#> world", "<#1#><#2#>", "<#100#>",
    "{\"Label\": 1}", "[1]", "{", "omg/oh my god", "mp3", "pcm", "128000", "字" * 3,
])  # fmt: skip
ATOMS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**40), max_value=2**40),
    st.sampled_from([-1, 0, 1, 2, 3, 4, 5, 9, 10, 15, 16, 500, 2000, 4096, 60000, 2**31]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
    st.text(st.characters(exclude_categories=()), max_size=8),  # lone surrogates too
    INTERESTING_STRINGS,
)
JSON = st.recursive(
    ATOMS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.dictionaries(st.sampled_from(ALL_NAMES) | st.text(max_size=8), inner, max_size=6),
    ),
    max_leaves=25,
)


def _for_annotation(annotation: Any, depth: int = 0) -> st.SearchStrategy[Any]:
    """Values shaped like the annotation (often valid, sometimes not), with junk mixed in."""
    from typing import Literal, get_args, get_origin

    options: list[st.SearchStrategy[Any]] = []
    for leaf in leaves(annotation):
        origin = get_origin(leaf)
        if origin is Literal:
            options.append(st.sampled_from(get_args(leaf)))
        elif origin is list:
            (item,) = get_args(leaf)
            options.append(st.lists(_for_annotation(item, depth + 1), min_size=1, max_size=4))
        elif isinstance(leaf, type) and issubclass(leaf, BaseModel):
            options.append(_for_model(leaf, depth + 1))
        elif leaf is bool:
            options.append(st.booleans())
        elif leaf is int:
            options.append(
                st.integers(min_value=-3, max_value=20)
                | st.sampled_from([0, 500, 2000, 4096, 60000, 2147483647])
            )
        elif leaf is float:
            options.append(st.floats(min_value=-1, max_value=20, allow_nan=False))
        elif leaf is str:
            options.append(INTERESTING_STRINGS | st.text(min_size=1, max_size=12))
    shaped = st.one_of(options) if options else JSON
    return st.one_of(shaped, shaped, shaped, JSON) if depth == 0 else shaped


def _for_model(model: type[BaseModel], depth: int = 0) -> st.SearchStrategy[dict[str, Any]]:
    required: dict[str, st.SearchStrategy[Any]] = {}
    optional: dict[str, st.SearchStrategy[Any]] = {}
    for name, info in model.model_fields.items():
        target = required if info.is_required() else optional
        target[info.alias or name] = _for_annotation(info.annotation, depth)
    return st.fixed_dictionaries(required, optional=optional)


SHAPED = st.sampled_from(ENDPOINT_IDS).flatmap(
    lambda endpoint_id: st.tuples(
        st.just(endpoint_id), _for_model(catalog.endpoint(endpoint_id).model)
    )
)


def _outcome(endpoint_id: str, payload: Any) -> dict[str, Any] | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            model = catalog.validate(endpoint_id, payload)
        except PayloadError as exc:
            assert exc.errors and all(isinstance(e["msg"], str) and e["msg"] for e in exc.errors)
            assert str(exc)
            return None
        return model.to_wire()


@pytest.mark.slow
@pytest.mark.timeout(120)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    endpoint_id=st.sampled_from(ENDPOINT_IDS),
    payload=st.dictionaries(st.sampled_from(ALL_NAMES), JSON, max_size=8),
)
def test_random_payloads_raise_nothing_but_payload_error(
    endpoint_id: str, payload: dict[str, Any]
) -> None:
    body = _outcome(endpoint_id, payload)
    if body is not None:
        json.dumps(body)  # the body is plain JSON
        assert _outcome(endpoint_id, body) == body  # and stable under re-validation


@pytest.mark.slow
@pytest.mark.timeout(120)
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=SHAPED)
def test_payloads_shaped_like_the_model(case: tuple[str, dict[str, Any]]) -> None:
    endpoint_id, payload = case
    body = _outcome(endpoint_id, payload)
    if body is not None:
        json.dumps(body)
        assert _outcome(endpoint_id, body) == body
        sent_keys = set(body)
        assert sent_keys <= set(payload)  # nothing invented: unset fields stay unsent


@pytest.mark.slow
@pytest.mark.timeout(120)
@settings(max_examples=200, deadline=None)
@given(endpoint_id=st.sampled_from(ENDPOINT_IDS), payload=JSON)
def test_any_json_value_as_a_payload(endpoint_id: str, payload: Any) -> None:
    body = _outcome(endpoint_id, payload)
    if body is not None:
        assert _outcome(endpoint_id, body) == body


@pytest.mark.timeout(120)
@settings(max_examples=200, deadline=None)
@given(
    endpoint_id=st.sampled_from(ENDPOINT_IDS),
    junk=st.from_type(type).flatmap(lambda t: st.from_type(t)) | st.binary() | st.complex_numbers(),
)
def test_arbitrary_python_objects(endpoint_id: str, junk: Any) -> None:
    _outcome(endpoint_id, junk)
    _outcome(endpoint_id, {"prompt": junk, "content": junk, "text": junk, "images": [junk]})


@pytest.mark.slow
@pytest.mark.timeout(120)
@settings(max_examples=300, deadline=None)
@given(
    content=st.lists(
        st.fixed_dictionaries(
            {"type": st.sampled_from(["text", "image_url", "video_url", "audio_url"])},
            optional={
                "text": st.text(max_size=5),
                "image_url": st.fixed_dictionaries({"url": INTERESTING_STRINGS}),
                "video_url": st.fixed_dictionaries({"url": INTERESTING_STRINGS}),
                "audio_url": st.fixed_dictionaries({"url": INTERESTING_STRINGS}),
                "role": st.sampled_from(
                    ["first_frame", "last_frame", "reference_image", "reference_video",
                     "reference_audio", "bogus"]
                ),
            },
        ),
        max_size=11,
    ),
    variant=st.sampled_from(["vidA-2-0", "vidA-2-0-fast"]),
)  # fmt: skip
def test_vida_content_combinations(content: list[dict[str, Any]], variant: str) -> None:
    """Accepted content always satisfies the prose rules, checked here independently."""
    body = _outcome(variant, {"content": content})
    if body is None:
        return
    kinds = [item["type"] for item in content]
    assert kinds, "empty content accepted"
    if "audio_url" in kinds:
        assert "image_url" in kinds or "video_url" in kinds
    roles = [item.get("role") for item in content if item["type"] == "image_url"]
    if "reference_image" in roles:
        assert set(roles) == {"reference_image"} and len(roles) <= 9
    elif len(roles) == 2:
        assert sorted(roles) == ["first_frame", "last_frame"]  # type: ignore[type-var]
    else:
        assert len(roles) <= 1 and roles in ([], [None], ["first_frame"])
