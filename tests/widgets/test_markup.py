"""The widgets' HTML has one home (``genwidgets/widgets/markup.py``): no other widget module
writes a tag, builds markup or escapes, and the pieces there escape what they are given
(docs/decisions.md#lasting-html)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from test_html import HOSTILE, read

from genwidgets.protocol.records import Result, Status
from genwidgets.widgets import markup
from genwidgets.widgets._style import MUTED_STYLE, look_of

WIDGETS = Path(markup.__file__).parent
HOME = Path(markup.__file__)
#: a start or end tag of an element a page could show or run
TAG = re.compile(
    r"</?(a|audio|b|br|code|div|figcaption|figure|i|iframe|img|pre|script|source|span|style"
    r"|svg|path|table|td|th|tr|video)[\s>/]",
    re.IGNORECASE,
)
#: what only the home may call: the builder, the safe type, the escape
HOME_ONLY = {"tag", "Html", "esc"}


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def html_written_outside_home(paths: list[Path]) -> list[str]:
    """``path:line what`` for each line with a tag literal, an import of the builder,
    safe type or escape, or a call of them through ``markup``, in the modules given."""
    found: dict[tuple[str, int], str] = {}
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            hit = ""
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                match = TAG.search(node.value)
                if match and id(node) not in docs:
                    hit = f"a tag literal {match.group(0)!r}"
            elif isinstance(node, ast.ImportFrom) and (node.module or "").endswith("_html"):
                names = sorted(a.name for a in node.names if a.name in HOME_ONLY)
                hit = f"imports {', '.join(names)} from _html" if names else ""
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in HOME_ONLY
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id in ("markup", "_html")
            ):
                hit = f"calls {node.func.value.id}.{node.func.attr}()"
            if hit:
                found.setdefault((path.name, node.lineno), hit)
    return [f"{name}:{line} {hit}" for (name, line), hit in sorted(found.items())]


def test_no_widget_module_but_the_home_writes_html() -> None:
    outside = sorted(p for p in WIDGETS.rglob("*.py") if p != HOME)
    assert len(outside) > 15  # the check reads the widgets, not an empty folder
    assert html_written_outside_home(outside) == []


def test_the_home_check_sees_each_way_of_writing_html(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        '"""A docstring may name ``<div>``."""\n'
        "from .._html import esc, safe_url\n"
        "def f(x):\n"
        "    return f'<span>{x}</span>'\n"
        "def g(x):\n"
        "    return markup.tag('b', None, x)\n"
        "def h(x):\n"
        "    return repr(x) + '<Grid 3x3>' + '</td>'\n"
        "x = traitlets.Dict().tag(sync=True)\n"
    )
    assert html_written_outside_home([probe]) == [
        "probe.py:2 imports esc from _html",
        "probe.py:4 a tag literal '<span>'",
        "probe.py:6 calls markup.tag()",
        "probe.py:8 a tag literal '</td>'",
    ]


def test_every_piece_escapes_text_and_attributes() -> None:
    """Hostile text given to the pieces reads back as itself: no tag, no script."""
    failed = look_of(None, Result(status="FAILED", error=HOSTILE, error_type=HOSTILE))
    pages = [
        markup.status_badge(look_of(Status(status=HOSTILE))),
        markup.error_html(failed),
        markup.cut_html(HOSTILE, HOSTILE),
        markup.table_html({HOSTILE: [HOSTILE, {HOSTILE: HOSTILE}]}),
        markup.caption(HOSTILE, saved=HOSTILE, extra=HOSTILE),
        markup.download("https://example.com/f", HOSTILE),
        markup.card_param(HOSTILE, HOSTILE, HOSTILE),
        markup.task_face(failed, endpoint=HOSTILE, request_id=HOSTILE, elapsed="", simulated=True),
        markup.field_label(HOSTILE, required=True, billed=True),
    ]
    for page in pages:
        reader = read(page)
        assert reader.scripts == [] and all(t != "script" for t, _ in reader.tags), page
        assert HOSTILE in "".join(reader.text) or any(
            HOSTILE in (v or "") for _, attrs in reader.tags for v in attrs.values()
        ), page


def test_markup_given_to_a_piece_is_kept_and_text_is_escaped_once() -> None:
    line = markup.span(markup.bold("a & b"), "color:red")
    assert line == '<span style="color:red"><b>a &amp; b</b></span>'
    assert markup.span("<b>", None) == "<span>&lt;b&gt;</span>"
    assert markup.box("gw-result", markup.div("no outputs", MUTED_STYLE)).count("<div") == 2


#: a gateway's error as it comes: several lines, one of them long
GATEWAY_ERROR = (
    "upstream refused the task\nreason: content policy\nretry: no\n" + "detail:" + "x" * 300
)


def _attributes_around(page: str, text: str) -> dict[str, str]:
    """The attributes of the element whose own text starts with ``text``."""
    found = re.search(r"<\w+((?:\s+[\w-]+=\"[^\"]*\")*)\s*>" + re.escape(text), page)
    assert found, page[:300]
    return dict(re.findall(r'([\w-]+)="([^"]*)"', found.group(1)))


def test_every_lasting_error_keeps_its_lines_and_wraps_a_long_one() -> None:
    """A multi-line gateway error shows as its lines, not one run of text: every face
    that shows an error (a task's card and lasting face, its failure line, a grid's
    sheet cell and exported page, a batch's caption) styles it ``pre-wrap``."""
    from genwidgets.widgets.lasting import error_banner

    failed = Result(status="FAILED", error=GATEWAY_ERROR)
    first = GATEWAY_ERROR.split("\n")[0]
    styled = {
        "card and task face": markup.error_html(look_of(None, failed)),
        "failure line": error_banner(failed),
        "sheet cell": markup.sheet_cell(
            markup.Html(), count=0, index=0, status="failed", colour="red", rating=0,
            error=GATEWAY_ERROR, note=None, request_id=None,
        ),
        "batch caption": markup.batch_face(
            batch_id="b", endpoint="e", simulated=False, counts={}, total=1, line="",
            out="", pictures=[("", GATEWAY_ERROR)], side=128,
        ),
    }  # fmt: skip
    for face, page in styled.items():
        style = _attributes_around(page, "failed: " + first if face == "failure line" else first)
        assert "white-space:pre-wrap" in style.get("style", ""), (face, page[:200])
        assert "overflow-wrap:anywhere" in style["style"], face
    cell = markup.page_cell(
        markup.Html(), index=0, status="failed", rating=0, trouble=GATEWAY_ERROR, note=None,
        request_id=None,
    )  # fmt: skip
    page = markup.grid_page("grid", [], [cell], "{}", "<script>")
    trouble = _attributes_around(page, first)["class"]
    rule = re.search(rf"\.{trouble}\{{([^}}]*)\}}", page)
    assert rule and "white-space:pre-wrap" in rule.group(1), page[:400]


def test_every_live_error_class_keeps_its_lines_in_its_style_sheet() -> None:
    """Each error class the live views' scripts draw (``gw-error``, ``gw-grid-error``,
    ``gw-batch-error``) has a rule in the style sheets saying ``white-space: pre-wrap``;
    so does a batch thumbnail's caption, which a failed row's error fills."""
    static = WIDGETS / "static"
    scripts = "".join(p.read_text() for p in static.glob("*.js"))
    drawn = set(re.findall(r"\"(gw-[\w-]*error)\b", scripts))
    assert {"gw-error", "gw-grid-error", "gw-batch-error"} <= drawn
    rules = re.findall(
        r"([^{}]+)\{([^{}]*)\}", "".join(p.read_text() for p in static.glob("*.css"))
    )
    keeping = {
        selector.strip() for selector, body in rules if re.search(r"white-space:\s*pre-wrap", body)
    }
    for name in sorted(drawn):
        assert any(re.search(rf"\.{name}\b", s) for s in keeping), name
    assert any(re.search(r"\.gw-batch-thumb figcaption", s) for s in keeping)
