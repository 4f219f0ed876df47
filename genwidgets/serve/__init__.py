"""``genwidgets serve``: a class gateway in front of the real one.

It speaks the gateway's queue protocol to students, each on their own key with a budget,
and forwards to the upstream gateway on the teacher's key, which never leaves it.
README "A class on one key"; docs/decisions.md#serve-storage.
"""

from __future__ import annotations

from .config import ServeConfig
from .db import Database
from .keys import add_group, add_key, revoke_key, rotate_key
from .server import ClassServer
from .upstream import Upstream
from .usage import usage

__all__ = [
    "ClassServer",
    "Database",
    "ServeConfig",
    "Upstream",
    "add_group",
    "add_key",
    "revoke_key",
    "rotate_key",
    "usage",
]
