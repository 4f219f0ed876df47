"""Students' keys: made, shown once, stored hashed, revoked, rotated, expired."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from genwidgets.errors import ServeError
from genwidgets.serve.db import Database
from genwidgets.serve.keys import (
    add_group,
    add_key,
    find_key,
    hash_token,
    list_keys,
    revoke_key,
    rotate_key,
)


@pytest.fixture
def db(tmp_path: Path) -> Database:
    found = Database(tmp_path / "class.db")
    found.migrate()
    return found


def test_a_key_is_stored_only_as_its_hash(db: Database, tmp_path: Path) -> None:
    add_group(db, "class1", {})
    token = add_key(db, "alice", {"money": 5.0, "images": 200}, group="class1")
    assert token.startswith("gwc_") and len(token) >= 40
    db.close()
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("class"))
    assert token.encode() not in stored
    assert hash_token(token).encode() in stored
    key = find_key(db, token)
    assert key is not None and key.name == "alice" and key.group == "class1"
    assert key.caps["money"] == 5_000_000 and key.caps["images"] == 200_000_000
    assert key.caps["video_seconds"] is None
    assert "gwc_" not in repr(list_keys(db)) and "gwc_" not in str(key.describe())


def test_two_keys_never_share_a_token_and_a_name_is_taken_once(db: Database) -> None:
    tokens = {add_key(db, f"s{i}", {}) for i in range(50)}
    assert len(tokens) == 50
    with pytest.raises(ServeError, match="exists"):
        add_key(db, "s1", {})


def test_revoke_and_rotate(db: Database) -> None:
    token = add_key(db, "bob", {"images": 3})
    new = rotate_key(db, "bob")
    assert find_key(db, token) is None
    found = find_key(db, new)
    assert found is not None and found.refusal() is None and found.caps["images"] == 3_000_000
    revoke_key(db, "bob")
    found = find_key(db, new)
    assert found is not None and "revoked" in (found.refusal() or "")
    with pytest.raises(ServeError):
        revoke_key(db, "bob")
    with pytest.raises(ServeError):
        rotate_key(db, "nobody")
    leaked_and_replaced = rotate_key(db, "bob")  # a revoked key's new token works
    found = find_key(db, leaked_and_replaced)
    assert found is not None and found.refusal() is None and find_key(db, new) is None


def test_an_expired_key_says_so(db: Database) -> None:
    token = add_key(db, "carol", {}, expires_at=time.time() - 1)
    found = find_key(db, token)
    assert found is not None and "expired" in (found.refusal() or "")


def test_bad_caps_are_refused_with_the_allowed_kinds(db: Database) -> None:
    with pytest.raises(ServeError, match="0 or more"):
        add_key(db, "dave", {"money": -1})
    with pytest.raises(ServeError, match="allowed: money, tasks"):
        add_group(db, "g", {"pixels": 3})
    assert find_key(db, "not-a-key") is None


def test_a_keys_caps_change_and_what_it_holds_stays(db: Database) -> None:
    from genwidgets.serve.budgets import charge_of, reserve
    from genwidgets.serve.keys import set_caps

    token = add_key(db, "ana", {"images": 2, "tasks": 10})
    amounts = charge_of("genW2.5-t2i-preview", {"prompt": "x", "n": 2}, {})
    reserve(db, "ana", "genW2.5-t2i-preview", amounts)
    with pytest.raises(ServeError, match="0 of 2 left"):
        reserve(db, "ana", "genW2.5-t2i-preview", amounts)
    set_caps(db, "ana", {"images": 4})
    reserve(db, "ana", "genW2.5-t2i-preview", amounts)  # the raised budget lets it pass
    found = find_key(db, token)
    assert found is not None and found.caps["images"] == 4_000_000
    assert found.caps["tasks"] == 10_000_000 and found.held["images"] == 4_000_000
    with pytest.raises(ServeError, match="no key named"):
        set_caps(db, "nobody", {"images": 1})
    with pytest.raises(ServeError, match="say what to set"):
        set_caps(db, "ana", {})


def test_caps_too_large_to_store_are_refused_naming_the_largest(db: Database) -> None:
    for caps in ({"images": float("inf")}, {"money": 1e13}, {"tasks": 1e300}):
        with pytest.raises(ServeError, match="at most 1,000,000,000,000"):
            add_key(db, "dave", caps)
        with pytest.raises(ServeError, match="at most 1,000,000,000,000"):
            add_group(db, "g", caps)
    add_key(db, "erin", {"money": 1e12})  # the largest is taken
    assert [k.name for k in list_keys(db)] == ["erin"]
