"""The one way the lab refuses an input: one problem at one place, as a PayloadError
(``{"loc", "msg"}``, so a form or a command can say it beside what is wrong)."""

from __future__ import annotations

from ..errors import PayloadError

__all__ = ["problem"]


def problem(loc: str | tuple[str, ...], msg: str, *, endpoint: str | None = None) -> PayloadError:
    """A PayloadError of one problem at ``loc`` (a name, or a path of names)."""
    return PayloadError(
        [{"loc": (loc,) if isinstance(loc, str) else loc, "msg": msg}], endpoint=endpoint
    )
