"""The media input: URL or upload, encoded at once for the field's MediaSpec."""

from __future__ import annotations

import base64

from widgets.field_samples import CTX, form_png, upload

from genwidgets.catalog import MediaSpec
from genwidgets.catalog.vida import VIDA_IMAGE  # lowercase data URLs, 300-6000 px sides
from genwidgets.widgets.field_spec import UNSET, FieldSpec
from genwidgets.widgets.media_input import MediaElement

VIDK_IMAGE = MediaSpec(media="image", encoding="raw_base64", formats=("jpeg", "png"), min_side=300)
URL_ONLY = MediaSpec(media="image", encoding="url_only", formats=("jpeg", "png"))


def media_element(spec: MediaSpec) -> MediaElement:
    field_spec = FieldSpec(name="u", wire="u", path="u", annotation=str, required=True)
    return MediaElement(field_spec, CTX, spec)


def test_upload_is_encoded_as_a_lowercase_data_url_and_the_upload_cleared() -> None:
    el = media_element(VIDA_IMAGE)
    data = form_png(640, 480)
    upload(el, data)
    value = el.get()
    assert value == "data:image/png;base64," + base64.b64encode(data).decode()
    assert el.upload is not None and el.upload.value == ()  # bytes not kept in a trait
    assert el.url.value == ""  # the encoding lives in Python only
    assert "passes the checks" in el.status.value
    assert el.preview.value and len(el.preview.value) < len(data) + 1000
    assert el.preview.layout.display is None


def test_upload_for_a_raw_base64_field_has_no_prefix() -> None:
    el = media_element(VIDK_IMAGE)
    data = form_png(400, 400)
    upload(el, data)
    assert el.get() == base64.b64encode(data).decode()


def test_too_small_image_shows_the_check_failure_before_submit() -> None:
    el = media_element(VIDA_IMAGE)
    upload(el, form_png(100, 100), "tiny.png")
    assert el.get() is UNSET
    assert "✗" in el.status.value
    assert "300" in el.status.value


def test_url_only_field_has_no_upload_and_takes_a_url() -> None:
    el = media_element(URL_ONLY)
    assert el.upload is None
    el.set("https://x.test/a.png")
    assert el.get() == "https://x.test/a.png"


def test_typing_a_url_replaces_an_uploaded_file() -> None:
    el = media_element(VIDA_IMAGE)
    upload(el, form_png(640, 480))
    el.url.value = "asset://abc"
    assert el.get() == "asset://abc" and el.encoded is None


def test_inline_data_set_by_code_stays_out_of_widget_state() -> None:
    el = media_element(VIDA_IMAGE)
    data_url = "data:image/png;base64," + base64.b64encode(form_png(640, 480)).decode()
    el.set(data_url)
    assert el.get() == data_url
    assert el.url.value == ""
    assert "inline data" in el.status.value
