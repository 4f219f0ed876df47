"""The media input: URL or upload, encoded at once for the field's MediaSpec."""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from widgets.field_samples import CTX, form_png, upload

import genwidgets as gw
from genwidgets.catalog import MediaSpec
from genwidgets.catalog.vida import VIDA_IMAGE  # lowercase data URLs, 300-6000 px sides
from genwidgets.widgets.field_spec import UNSET, FieldSpec
from genwidgets.widgets.media_input import MediaElement, local_path

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


def test_too_small_image_is_held_for_the_check_to_refuse() -> None:
    el = media_element(VIDA_IMAGE)
    upload(el, form_png(100, 100), "tiny.png")
    held = el.get()  # not UNSET: a list would leave the row out, a form send without it
    with pytest.raises(gw.PayloadError, match="100x100 px; sample needs width and height"):
        gw.media.encode_with(held, VIDA_IMAGE, endpoint="sample")
    assert "tiny.png: png image, 100x100 px" in el.status.value and "✓" not in el.status.value
    assert el.upload is not None and el.upload.value == ()  # bytes not kept in a trait


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


# --- local paths typed in the box, and inline data set by code (issue 20, points 6, 8) -----


def test_local_path_tells_a_typed_path_from_urls_and_base64(tmp_path: Path) -> None:
    existing = tmp_path / "meadow"  # no extension: named because it exists
    existing.write_bytes(form_png(64, 64))
    assert local_path(str(existing)) == existing
    assert local_path(f"file://{existing}") == existing
    assert local_path("/nowhere/meadow.png") == Path("/nowhere/meadow.png")
    assert local_path("~/meadow.jpg") == Path("~/meadow.jpg").expanduser()
    assert local_path("./a") == Path("a")
    for not_a_path in ("https://x.test/a.png", "asset://abc", "data:image/png;base64,AAAA", ""):
        assert local_path(not_a_path) is None
    jpeg_base64 = base64.b64encode(b"\xff\xd8\xff\xe0" + bytes(64)).decode()
    assert jpeg_base64.startswith("/9j/") and local_path(jpeg_base64) is None


def test_a_typed_path_is_the_value_with_a_thumbnail(tmp_path: Path) -> None:
    picture = tmp_path / "meadow.png"
    picture.write_bytes(form_png(640, 480))
    el = media_element(VIDA_IMAGE)
    el.url.value = str(picture)
    assert el.get() == picture  # a Path: validation and submit encode it by the field's rule
    assert el.preview.value and el.preview.layout.display is None
    assert "640x480" in el.status.value and "✓" in el.status.value
    el.url.value = "https://x.test/a.png"  # typing a URL forgets the file
    assert el.get() == "https://x.test/a.png" and el.preview.layout.display == "none"


def test_set_with_a_path_fills_the_box_as_if_typed(tmp_path: Path) -> None:
    picture = tmp_path / "meadow.png"
    picture.write_bytes(form_png(640, 480))
    el = media_element(VIDA_IMAGE)
    el.set(picture)
    assert el.url.value == str(picture) and el.get() == picture and el.preview.value


def test_a_typed_missing_file_shows_no_thumbnail_and_stays_a_path() -> None:
    el = media_element(VIDA_IMAGE)
    el.url.value = "/nowhere/meadow.png"
    assert el.get() == Path("/nowhere/meadow.png")  # the form's check says "no such file"
    assert el.preview.layout.display == "none" and "✓" not in el.status.value


def test_inline_data_shows_a_thumbnail_and_its_type_and_size_not_an_empty_box() -> None:
    el = media_element(VIDA_IMAGE)
    el.set("data:image/png;base64," + base64.b64encode(form_png(640, 480)).decode())
    assert el.preview.value and el.preview.layout.display is None
    assert "png" in el.status.value and "640x480" in el.status.value
    assert "inline data (png" in el.url.placeholder
    assert "passes the checks" not in el.status.value  # only the form's validation checks it
    video = media_element(MediaSpec(media="video", encoding="raw_base64", formats=("mp4",)))
    video.set(base64.b64encode(bytes(300)).decode())  # not decodable media: its size
    assert "inline data: 300 bytes" in video.status.value and not video.preview.value
    video.set(UNSET)
    assert "inline data" not in video.url.placeholder


# --- an upload the field refuses refuses the form (one mechanism with a typed path) --------


class NeverSends:
    """Stands in for gw.Client: ``prepare`` validates as the client does; ``send`` records."""

    embedded = False

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def prepare(self, endpoint: str, payload: dict[str, Any]) -> dict[str, Any]:
        gw.validate(endpoint, payload)
        return payload

    def send(self, prepared: dict[str, Any]) -> None:
        self.sent.append(prepared)


def picture(fmt: str) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (256, 256), (200, 40, 40)).save(buffer, format=fmt)
    return buffer.getvalue()


def image_boxes(form: gw.EndpointForm, rows: int) -> list[MediaElement]:
    images = form.fields["images"]
    while len(images.rows) < rows:
        images.add_row()
    return [e for e in images.walk() if isinstance(e, MediaElement)]


GIF_REFUSED = "image format is gif; imgG-1.5-edit takes png, jpeg, webp"


def test_a_refused_upload_in_a_row_refuses_the_form_at_that_row(tmp_path: Path) -> None:
    """It was left out: Submit was enabled and sent (and billed) one image of two."""
    client = NeverSends()
    form = gw.form("imgG-1.5-edit", client=client, prompt="the cat on the sofa")
    sofa, cat = image_boxes(form, 2)
    upload(sofa, picture("PNG"), "sofa.png")
    upload(cat, picture("GIF"), "cat.gif")
    assert form.check() == [{"loc": ("images", 1), "msg": GIF_REFUSED}]
    assert form.submit_button.disabled and GIF_REFUSED in form.reason.value
    assert GIF_REFUSED in cat.note.value and GIF_REFUSED not in sofa.note.value
    assert "cat.gif: gif image, 256x256 px" in cat.status.value  # what it is, by the box
    with pytest.raises(gw.PayloadError, match=r"images\.1: image format is gif"):
        form.submit()
    assert client.sent == []
    # the same file typed as a path is refused by the same check, in the same words
    typed = tmp_path / "cat.gif"
    typed.write_bytes(picture("GIF"))
    cat.url.value = str(typed)
    assert form.check() == [{"loc": ("images", 1), "msg": GIF_REFUSED}]
    upload(cat, picture("JPEG"), "cat.jpg")  # a file the field takes replaces it
    assert form.check() == [] and not form.submit_button.disabled


def test_a_refused_upload_in_a_single_row_says_the_refusal_not_field_required() -> None:
    form = gw.form("imgG-1.5-edit", client=NeverSends(), prompt="make it blue")
    [box] = image_boxes(form, 1)
    upload(box, picture("GIF"), "cat.gif")
    assert form.check() == [{"loc": ("images", 0), "msg": GIF_REFUSED}]


def test_an_svg_from_the_file_picker_is_said_beside_its_box() -> None:
    """The picker's observer raised a bare AttributeError and the form said "Field
    required"."""
    svg = b"<svg xmlns='http://www.w3.org/2000/svg' width='64' height='64'/>"
    form = gw.form("imgG-1.5-edit", client=NeverSends(), prompt="make it blue")
    [box] = image_boxes(form, 1)
    upload(box, svg, "logo.svg")
    [error] = form.check()
    assert error["loc"] == ("images", 0)
    assert error["msg"].startswith("image format is svg, which is not taken")
    assert error["msg"].endswith("imgG-1.5-edit takes png, jpeg, webp images")
    assert "image format is svg" in box.note.value


def test_a_refused_upload_is_kept_when_a_set_is_undone() -> None:
    """``form.set`` puts back what the form held when a value cannot be held: a refused
    upload among it is held again, not an error of its own."""
    form = gw.form("imgG-1.5-edit", client=NeverSends(), prompt="make it blue")
    [box] = image_boxes(form, 1)
    upload(box, picture("GIF"), "cat.gif")
    with pytest.raises(gw.PayloadError):
        form.set(images=[{"not": "an image"}])
    assert form.check() == [{"loc": ("images", 0), "msg": GIF_REFUSED}]
    assert "<upload 'cat.gif'" in form.json_view.value.replace("&lt;", "<").replace("&#x27;", "'")
