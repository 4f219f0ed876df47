"""A key, or a header, no request can carry is refused before anything is sent, and a
create whose request never left is "not created" (review 28, fault 1)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from loopback import LoopbackServer, OneTaskGateway

import genwidgets as gw


class CountedGateway(OneTaskGateway):
    """A gateway of one task counting every request that reached it."""

    lock = threading.Lock()
    received = 0

    def _count(self) -> None:
        with self.lock:
            type(self).received += 1

    def do_POST(self) -> None:
        self._count()
        super().do_POST()

    def do_GET(self) -> None:
        self._count()
        self.send_json({"request_id": "r1", "status": "IN_PROGRESS"})


@pytest.fixture
def gateway(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path))
    CountedGateway.received = 0
    server = LoopbackServer(CountedGateway)
    try:
        yield server
    finally:
        server.close()


@pytest.mark.parametrize(
    ("key", "place"),
    [("sk-abc ", "character 7 (its end)"), (" sk-abc", "character 1 (its start)")],
)
def test_a_key_with_a_space_at_either_end_is_refused_naming_its_place_never_the_key(
    gateway: LoopbackServer, key: str, place: str
) -> None:
    """A key pasted with a space before or after it is printable ASCII, so the check let
    it through; h11 then refused the header before a byte left, and every create was
    "outcome unknown" (a batch's rows never sent again). It is refused as the client is
    made, naming the space's place, never the key."""
    with pytest.raises(ValueError, match="API key") as raised:
        gw.Client(gateway.base, key)
    words = str(raised.value)
    assert place in words and "space" in words
    assert "sk-abc" not in words and "abc" not in words
    assert CountedGateway.received == 0


def test_a_create_whose_header_is_refused_before_it_left_is_not_created(
    gateway: LoopbackServer,
) -> None:
    """A header h11 refuses (a trailing space) is refused while the request's head is
    built, before a byte is written: the create made nothing, so it is "not created"
    (sending it again pays once), never "outcome unknown ... a task may exist"."""
    with gw.Client(gateway.base, "sk-abc") as client:
        with pytest.raises(gw.GenwidgetsError) as raised:
            client.submit(
                "genW2.5-t2i-preview", {"prompt": "a heron"}, headers={"X-Trace": "run 7 "}
            )
        assert not isinstance(raised.value, gw.OutcomeUnknown)
        assert "may exist" not in str(raised.value)
        rows = client.ledger.rows(client.gateway_name) if client.ledger else []
        assert [row.state for row in rows] == ["not_created"]
    assert CountedGateway.received == 0
