"""The one annotation walker shared by the catalog and the forms."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, Literal, Optional, Union

import pytest
from pydantic import BaseModel, Field

from genwidgets.catalog import BILLED, MediaSpec
from genwidgets.catalog.introspect import (
    Limits,
    is_container,
    is_model,
    is_union,
    item_annotation,
    item_types,
    leaves,
    limits_of,
    literal_choices,
    models_in,
    single_literal,
    strip_optional,
    unannotate,
)

IMAGE = MediaSpec(media="image", encoding="url_or_data")


class Part(BaseModel):
    type: Literal["text"]
    text: str


class Other(BaseModel):
    type: Literal["url"] | None = None
    url: str


class Size(Enum):
    SMALL = "s"
    LARGE = "l"


@pytest.mark.parametrize(
    ("annotation", "bare", "nullable"),
    [
        (int, int, False),
        (int | None, int, True),
        (Optional[str], str, True),  # noqa: UP045 - the old spelling must unwrap too
        (Annotated[int | None, BILLED], int, True),
        (Annotated[Annotated[str, IMAGE], "x"], str, False),
        (int | str | None, Union[int, str], True),  # noqa: UP007 - rebuilt from parts
        (int | str, int | str, False),
    ],
)
def test_strip_optional_unwraps_annotated_and_none(
    annotation: Any, bare: Any, nullable: bool
) -> None:
    assert strip_optional(annotation) == (bare, nullable)


def test_unannotate_and_is_union() -> None:
    assert unannotate(Annotated[int, BILLED]) is int
    assert is_union(int | None) and is_union(Union[int, str])  # noqa: UP007
    assert not is_union(list[int])


def test_leaves_keep_containers_and_item_types_enter_them() -> None:
    annotation = Annotated[list[Annotated[str, IMAGE]] | None, BILLED]
    assert list(leaves(annotation)) == [list[Annotated[str, IMAGE]], type(None)]
    # the item's metadata rides with it, after the list's own
    assert list(item_types(annotation)) == [(str, (BILLED, IMAGE))]


def test_models_in_finds_nested_models_in_lists_and_unions() -> None:
    assert models_in(list[Part | Other] | None) == [Part, Other]
    assert models_in(Annotated[Part, BILLED]) == [Part]
    assert models_in(dict[str, Any]) == []
    assert is_model(Part) and not is_model(Part | None) and not is_model(int)


def test_containers_and_their_items() -> None:
    assert is_container(list[int]) and is_container(tuple[str, ...]) and is_container(list)
    assert not is_container(str) and not is_container(dict[str, int])
    assert item_annotation(list[Part]) is Part
    assert item_annotation(list) is Any


def test_literal_choices_of_literals_enums_and_unions_of_literals() -> None:
    assert literal_choices(Literal["a", "b"]) == ["a", "b"]
    assert literal_choices(Size) == ["s", "l"]
    assert literal_choices(Literal["480p"] | Literal[5]) == ["480p", 5]
    assert literal_choices(str) is None
    assert literal_choices(Literal["a"] | int) is None


def test_single_literal_is_a_union_members_tag() -> None:
    assert single_literal(Part.model_fields["type"].annotation) == (True, "text")
    assert single_literal(Other.model_fields["type"].annotation) == (True, "url")
    assert single_literal(Literal["a", "b"]) == (False, None)
    assert single_literal(str) == (False, None)


def test_limits_are_read_from_field_metadata() -> None:
    class M(BaseModel):
        n: int = Field(ge=1, le=10)
        x: float = Field(gt=0, lt=1)
        tags: list[str] = Field(min_length=1, max_length=3)
        free: str = ""

    fields = M.model_fields
    assert limits_of(fields["n"].metadata) == Limits(ge=1, le=10)
    assert limits_of(fields["x"].metadata) == Limits(gt=0, lt=1)
    assert limits_of(fields["tags"].metadata) == Limits(min_len=1, max_len=3)
    assert limits_of(fields["free"].metadata) == Limits()


def test_limits_say_the_range_allowed_in_words() -> None:
    assert Limits(ge=1, le=10).number_range() == "1-10"
    assert Limits(ge=-12, le=12).number_range() == "from -12 to 12"  # not "-12-12"
    assert Limits(ge=0).number_range() == "0 or more"
    assert Limits(gt=0).number_range() == "more than 0"
    assert Limits(le=2.5).number_range() == "at most 2.5"
    assert Limits(gt=0, le=1).number_range() == "between 0 and 1 (the first excluded)"
    assert Limits().number_range() is None
    assert Limits(min_len=1, max_len=4).length_range("items") == "1-4 items"
    assert Limits(min_len=1).length_range("characters") == "at least 1 character"
    assert Limits(max_len=1).length_range("items") == "at most 1 item"
