"""The palette (``genwidgets/_palette.py``): CSS and Pillow read every colour, and each
status category has one colour taken from the palette's roles."""

from __future__ import annotations

import re
from typing import get_args

from PIL import ImageColor

from genwidgets._palette import COLOURS, PALETTE, Category


def test_every_colour_is_a_hex_colour_css_and_pillow_read() -> None:
    for role, colour in PALETTE.items():
        assert re.fullmatch(r"#[0-9a-f]{6}", colour), role
        assert ImageColor.getrgb(colour) == tuple(int(colour[i : i + 2], 16) for i in (1, 3, 5))


def test_each_status_category_has_a_palette_colour() -> None:
    assert set(COLOURS) == set(get_args(Category))
    assert set(COLOURS.values()) <= set(PALETTE.values())
    assert COLOURS["failed"] == PALETTE["error"] and COLOURS["done"] == PALETTE["ok"]
    # ended and waiting look alike only where the docs say so: cancelled is grey as queued
    assert len({COLOURS["running"], COLOURS["done"], COLOURS["failed"], COLOURS["queued"]}) == 4
    assert COLOURS["cancelled"] == COLOURS["queued"]
