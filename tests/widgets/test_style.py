"""The one look of a status (``widgets/_style.py``): cancelled is grey and says only "cancelled"."""

from __future__ import annotations

import pytest

from genwidgets import _html, _palette
from genwidgets._palette import COLOURS, PALETTE
from genwidgets.protocol.records import Result, Status
from genwidgets.widgets import _style, markup
from genwidgets.widgets._style import look_of
from genwidgets.widgets.markup import error_html, status_badge

CANCELLED_RESULTS = [
    # our simulator's wire shape
    Result(status="COMPLETED", error="cancelled by user", error_type="cancelled"),
    Result(status="CANCELLED"),
    Result(status="canceled", error="stopped"),
]


@pytest.mark.parametrize("result", CANCELLED_RESULTS)
def test_a_cancelled_task_is_grey_and_says_cancelled_only(result: Result) -> None:
    look = look_of(Status(status=result.status), result)
    assert (look.word, look.category, look.terminal) == ("cancelled", "cancelled", True)
    assert look.colour == PALETTE["muted"] != COLOURS["failed"]
    assert error_html(look) == ""  # no "cancelled by user (cancelled)" line
    badge = status_badge(look)
    assert f"color:{PALETTE['muted']}" in badge and ">cancelled<" in badge


def test_cancelled_by_status_alone_before_the_result_is_grey_too() -> None:
    look = look_of(Status(status="CANCELLED"), None)
    assert (look.word, look.category) == ("cancelled", "cancelled")


def test_a_failure_stays_red_with_its_error_line() -> None:
    look = look_of(
        Status(status="COMPLETED"),
        Result(status="COMPLETED", error="out of memory", error_type="internal"),
    )
    assert (look.word, look.category) == ("failed", "failed")  # not cancelled
    assert look.colour == PALETTE["error"]
    assert "out of memory" in error_html(look) and "(internal)" in error_html(look)


def test_the_look_uses_the_base_layers_safety_and_palette_not_copies() -> None:
    """Widgets write HTML in ``markup`` and take the safety rules and colours from the
    base layer, as the lab does: both must get the same objects, or a colour or an
    escape could drift between them."""
    for name in ("esc", "join", "tag", "Html"):
        assert getattr(markup, name) is getattr(_html, name), name
    assert markup.COLOURS is _palette.COLOURS and markup.PALETTE is _palette.PALETTE
    assert f"color:{PALETTE['muted']}" == _style.MUTED_STYLE
    assert _style.HELP_STYLE.startswith(_style.MUTED_STYLE + ";")
