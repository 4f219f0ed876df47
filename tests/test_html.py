"""HTML safety (``genwidgets/_html.py``): what an HTML parser reads back from escaped
text is the text itself, JSON in a script cannot end it, and URLs or content types
that could carry script are refused."""

from __future__ import annotations

import json
from html.parser import HTMLParser

import pytest

from genwidgets._html import (
    SAFE_DATA_MIME,
    Html,
    esc,
    join,
    json_script,
    safe_mime,
    tag,
    url_kind,
)

HOSTILE = "</td><script>alert(\"x\" & 'y')</script><!-- <img src=x onerror=alert(1)>"


class Reader(HTMLParser):
    """The start tags, their attributes, the text and the script bodies of a page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        (self.scripts if self._in_script else self.text).append(data)


def read(page: str) -> Reader:
    reader = Reader()
    reader.feed(page)
    reader.close()
    return reader


def test_escaped_text_reads_back_as_itself_in_text_and_in_attributes() -> None:
    page = f"<div title=\"{esc(HOSTILE)}\" data-x='{esc(HOSTILE)}'>{esc(HOSTILE)}</div>"
    reader = read(page)
    assert reader.tags == [("div", {"title": HOSTILE, "data-x": HOSTILE})]
    assert "".join(reader.text) == HOSTILE
    assert reader.scripts == []


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (42, "42"),
        (None, "None"),
        ({"a": "<b>"}, "{&#x27;a&#x27;: &#x27;&lt;b&gt;&#x27;}"),
        ("a & b", "a &amp; b"),
        ('"quoted"', "&quot;quoted&quot;"),
    ],
)
def test_esc_takes_anything_and_escapes_quotes_too(value: object, expected: str) -> None:
    assert esc(value) == expected


def test_tag_escapes_every_text_and_attribute_value_by_the_one_rule() -> None:
    page = tag("div", {"title": HOSTILE, "data-x": HOSTILE}, HOSTILE, tag("b", None, HOSTILE))
    reader = read(page)
    assert reader.tags == [("div", {"title": HOSTILE, "data-x": HOSTILE}), ("b", {})]
    assert "".join(reader.text) == HOSTILE + HOSTILE
    assert reader.scripts == []
    assert isinstance(page, Html)


def test_markup_is_never_escaped_twice_and_text_always_once() -> None:
    inner = tag("b", None, "a & b")
    assert inner == "<b>a &amp; b</b>"
    assert esc(inner) is inner and esc(esc("a & b")) == "a &amp; b"
    assert tag("p", None, inner, " & ", "<i>") == "<p><b>a &amp; b</b> &amp; &lt;i&gt;</p>"
    # text built from markup by hand is text again: f-strings and + make a plain str
    assert tag("p", None, f"{inner}") == "<p>&lt;b&gt;a &amp;amp; b&lt;/b&gt;</p>"
    assert join([inner, None, False, "", 0, "x<"], " · ") == "<b>a &amp; b</b> · 0 · x&lt;"


def test_tag_writes_attributes_in_order_leaves_out_none_and_closes_void_elements() -> None:
    attrs = {"controls": True, "src": "a.mp4", "poster": None, "muted": False, "width": 3}
    assert tag("video", attrs) == '<video controls src="a.mp4" width="3"></video>'
    assert tag("img", {"src": "x", "alt": ""}) == '<img src="x" alt="">'
    assert tag("svg", {"viewBox": "0 0 24 24"}) == '<svg viewBox="0 0 24 24"></svg>'
    with pytest.raises(ValueError, match="no content"):
        tag("img", None, "text")


def test_tag_writes_a_url_only_of_an_allowed_kind() -> None:
    for url in ("javascript:alert(1)", "data:text/html,<script>x</script>", "java\tscript:x"):
        assert tag("a", {"href": url}, "x") == "<a>x</a>"
        assert tag("img", {"src": url, "alt": ""}) == '<img alt="">'
        assert tag("video", {"poster": url}) == "<video></video>"
    fine = "https://cdn.example/a.png?x=1&y=2"
    assert tag("a", {"href": fine}) == '<a href="https://cdn.example/a.png?x=1&amp;y=2"></a>'
    assert (
        tag("img", {"src": "data:image/png;base64,AAAA"})
        == '<img src="data:image/png;base64,AAAA">'
    )


@pytest.mark.parametrize(
    ("name", "attrs"),
    [
        ("div onclick=x", None),
        ("<div", None),
        ("div", {"on click": "x"}),
        ("div", {'a"': "x"}),
        ("img", {"onerror": "alert(1)"}),
        ("div", {"ONMOUSEOVER": "x"}),
        ("script", None),
        ("iframe", {"src": "https://x.example"}),
    ],
)
def test_tag_and_attribute_names_are_words(name: str, attrs: dict[str, str] | None) -> None:
    with pytest.raises(ValueError, match="name"):
        tag(name, attrs)


def test_json_in_a_script_reads_back_the_same_and_cannot_end_the_script() -> None:
    data = {"note": HOSTILE, "request_id": "</SCRIPT >", "n": [1, 2.5, None]}
    text = json_script(json.dumps(data, ensure_ascii=False))
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == data
    reader = read(f'<script type="application/json" id="d">{text}</script><p>after</p>')
    assert [tag for tag, _ in reader.tags] == ["script", "p"]
    assert json.loads("".join(reader.scripts)) == data
    assert reader.text == ["after"]


@pytest.mark.parametrize(
    ("content_type", "expected"),
    [
        ("image/PNG; charset=binary", "image/png"),
        ("application/vnd.api+json", "application/vnd.api+json"),
        ('text/html"><script>', None),
        ("image/png x", None),
        ("no-slash", None),
        ("", None),
        (None, None),
    ],
)
def test_safe_mime_keeps_a_well_formed_type_only(
    content_type: str | None, expected: str | None
) -> None:
    assert safe_mime(content_type) == expected


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("HTTPS://cdn.example/a.png?x=1&y=2", "http"),
        ("data:image/webp;charset=x;base64,AAAA", "data"),
        ("DATA:IMAGE/PNG;base64,AAAA", "data"),
        ("./a.png", "relative"),
        ("java\tscript:alert(1)", None),
        ("vbscript:msgbox(1)", None),
        ("file:///etc/passwd", None),
        ("data:text/html,<script>alert(1)</script>", None),
        ('https://a.example/"onmouseover="alert(1)', None),
        ("https://a.example/<x>", None),
        ("https://", None),
    ],
)
def test_url_kind_refuses_what_could_carry_script(url: str, kind: str | None) -> None:
    assert url_kind(url) == kind


def test_no_data_mime_is_a_document_type() -> None:
    """SVG, HTML and XML open as documents that can run script: never a data URL."""
    for mime in SAFE_DATA_MIME:
        assert safe_mime(mime) == mime
        assert "html" not in mime and "svg" not in mime and "xml" not in mime
        assert url_kind(f"data:{mime};base64,AAAA") == "data"
