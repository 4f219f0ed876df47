"""A model's fields by wire name: the one place an alias is resolved."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from genwidgets.catalog import (
    BILLED,
    PROMPT_STRING,
    Endpoint,
    ServiceDefault,
    field_named,
    fields_of,
    known_names,
)


class Aliased(Endpoint):
    """Python names that differ from the wire's, as a gateway's camelCase would."""

    aspect: Annotated[str | None, BILLED, ServiceDefault("16:9")] = Field(None, alias="aspectRatio")
    text: Annotated[str, PROMPT_STRING] = Field(alias="remixPrompt")
    seed: int | None = Field(None, validation_alias="noiseSeed")


def test_fields_are_listed_in_declaration_order_with_python_and_wire_names() -> None:
    assert [(f.name, f.wire) for f in fields_of(Aliased)] == [
        ("aspect", "aspectRatio"),
        ("text", "remixPrompt"),
        ("seed", "seed"),
    ]


def test_a_field_is_found_by_python_name_wire_name_or_validation_alias() -> None:
    for name in ("aspect", "aspectRatio"):
        found = field_named(Aliased, name)
        assert found is not None and found.wire == "aspectRatio"
    found = field_named(Aliased, "noiseSeed")
    assert found is not None and found.name == "seed"
    assert field_named(Aliased, "aspect_ratio") is None


def test_a_python_name_wins_over_another_fields_alias() -> None:
    class Crossed(Endpoint):
        a: int | None = Field(None, alias="b")
        b: int | None = None

    found = field_named(Crossed, "b")
    assert found is not None and found.name == "b"


def test_known_names_hold_both_spellings_and_nothing_else() -> None:
    assert known_names(Aliased) == {
        "aspect", "aspectRatio", "text", "remixPrompt", "seed", "noiseSeed",
    }  # fmt: skip
