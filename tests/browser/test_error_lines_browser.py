"""A multi-line error in chromium: every face that shows one (the live task view, grid
and batch through their style sheets; the lasting task face, card, failure line, grid
sheet and exported page through their inline styles) shows each of its lines, and a
long line wraps inside its box instead of widening it. No front-end: the pieces are
put in a page alone."""

from __future__ import annotations

from typing import Any

import pytest

from genwidgets.protocol.records import Result
from genwidgets.widgets import markup
from genwidgets.widgets._style import look_of
from genwidgets.widgets.faces import static_module
from genwidgets.widgets.lasting import error_banner

pytestmark = pytest.mark.browser

LINES = ["upstream refused the task", "reason: content policy", "retry: no"]
#: four lines, the last longer than its 300 px box
ERROR = "\n".join([*LINES, "detail:" + "x" * 300])

#: For each face's box: its error element's height in one-line heights (the same
#: element holding "x"), and whether its text overflows the box sideways.
MEASURE_JS = """
(first) => [...document.querySelectorAll('[data-face]')].map((box) => {
  const holds = (e) => e.textContent.includes(first);
  const el = [...box.querySelectorAll('*')].find(
    (e) => holds(e) && ![...e.children].some(holds));
  const probe = el.cloneNode(false);
  probe.textContent = 'x';
  el.after(probe);
  const one = probe.getBoundingClientRect().height;
  probe.remove();
  return {face: box.dataset.face, lines: el.getBoundingClientRect().height / one,
          overflow: box.scrollWidth > box.clientWidth + 1};
})
"""


def _box(face: str, inner: str, cls: str = "") -> str:
    return f'<div data-face="{face}" class="{cls}" style="width:300px">{inner}</div>'


@pytest.mark.timeout(120)
def test_a_multi_line_error_shows_its_lines_on_every_face(browser: Any) -> None:
    failed = Result(status="FAILED", error=ERROR)
    sheets = "".join(static_module(name) for name in ("task_view.css", "grid.css", "batch.css"))
    live = [
        _box("live task view", f'<div class="gw-error">{ERROR}</div>', "gw-task"),
        _box("live grid cell", f'<div class="gw-grid-error">{ERROR}</div>', "gw-grid"),
        _box("live batch", f'<div class="gw-batch-error">{ERROR}</div>', "gw-batch"),
    ]
    lasting = [
        _box("card and lasting task face", markup.error_html(look_of(None, failed))),
        _box("failure line", error_banner(failed)),
        _box("grid sheet cell", markup.sheet_cell(
            markup.Html(), count=0, index=0, status="failed", colour="red", rating=0,
            error=ERROR, note=None, request_id=None, element="div",
        )),
    ]  # fmt: skip
    cell = markup.page_cell(
        markup.Html(), index=0, status="failed", rating=0, trouble=ERROR, note=None,
        request_id=None,
    )  # fmt: skip
    table = markup.sheet_table("", ["x"], [("y", [cell], None)], None, False, markup.PAGE_LOOK)
    exported = markup.grid_page(
        "grid", [], [markup.Html(_box("exported page", table))], "{}", "<script>"
    )
    page = browser.new_page()
    try:
        page.set_content(f"<style>{sheets}</style>{''.join(live + lasting)}")
        measured = page.evaluate(MEASURE_JS, LINES[0])
        page.set_content(exported)
        measured += page.evaluate(MEASURE_JS, LINES[0])
    finally:
        page.close()
    assert len(measured) == 7
    for face in measured:
        assert face["lines"] >= 5, face  # three short lines and a long one, wrapped
        assert not face["overflow"], face
