"""The hostile-gateway fuzz pass (issue 29): hypothesis writes the gateway's answers to
create, status and result (odd types, huge and negative numbers, deep nesting, unknown
words, wrong content types and encodings, echoed keys) and a real client meets them.

Asserted for every case: only errors of the tree (``GenwidgetsError``) come out, no
call outlives a generous deadline, the poller never logs an unexpected traceback,
every created task is in the ledger, and the key is in no error, record or row.
``derandomize`` makes the cases the same on every run; ``CASES`` of them run.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fake_gateway import FAST_POLICY
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import genwidgets as gw
from genwidgets.errors import GenwidgetsError
from genwidgets.jobs.ledger import Ledger
from genwidgets.protocol import http
from reliability.harness import genwidgets_home, operation_of
from reliability.test_hostile import ends

pytestmark = [pytest.mark.reliability, pytest.mark.timeout(300)]

KEY = "fuzz-secret-key-0123456789"
BASE = "http://gateway.fuzz"
CASES = 150
#: A call that has not ended by then hangs (every deadline here is a second or two).
OUTER = 30.0

Answer = tuple[int, dict[str, str], bytes]

# ---------------------------------------------------------------- values

echoes = st.sampled_from([KEY, f"Bearer {KEY}", f"Authorization: Bearer {KEY}", f"key={KEY}!"])
odd_text = st.text(max_size=12) | echoes | st.sampled_from(["abc\x00def", "../../x", "r" * 300])
numbers = (
    st.integers(-(2**70), 2**70)
    | st.sampled_from([2**63, 10**400, -(10**400), -1, 0])
    | st.floats(allow_nan=True, allow_infinity=True)
)
scalars = st.none() | st.booleans() | numbers | odd_text
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(odd_text, inner, max_size=3),
    max_leaves=8,
)
words = st.sampled_from(
    ["COMPLETED", "IN_QUEUE", "IN_PROGRESS", "FAILED", "cancelled", "PONDERING", "", "W" * 500]
)
urls = st.sampled_from(
    [
        f"{BASE}/files/a.png",
        "/logout",
        "files/b.png",
        "https://cdn.fuzz/c.png",
        "javascript:alert(1)",
        "data:image/png;base64,iVBORw0KGgo=",
        "http://[::1",
        f"{BASE}/files/{KEY}.png",
    ]
)
output_entries = st.fixed_dictionaries(
    {},
    optional={
        "url": urls | json_values,
        "content_type": st.sampled_from(["image/png", "text/plain", "x" * 300, ""]) | json_values,
        "content": json_values,
        "encoding": st.sampled_from(["hex", "base64", "utf-8"]),
        "file_size": numbers,
    },
)
request_ids = (
    st.from_regex(r"[a-z0-9-]{1,24}", fullmatch=True)
    | st.integers(0, 10**30)
    | st.sampled_from(["abc\x00def", "../../x", "r" * 300, "é/?#", "x" * 2000, ""])
    | json_values
)
handle_bodies = st.fixed_dictionaries(
    {"request_id": request_ids},
    optional={
        "status_url": urls | json_values,
        "response_url": urls,
        "queue_position": numbers | json_values,
        "status": words,
    },
)
status_bodies = st.fixed_dictionaries(
    {},
    optional={
        "status": words | json_values,
        "queue_position": numbers | json_values,
        "logs": json_values | st.lists(echoes, max_size=2),
        "error": json_values,
    },
)
result_bodies = st.fixed_dictionaries(
    {},
    optional={
        "status": st.sampled_from(["COMPLETED"] * 4 + ["FAILED", "IN_PROGRESS", "done?"]),
        "error": json_values | echoes,
        "error_type": json_values,
        "outputs": st.lists(output_entries | urls | json_values, max_size=3) | json_values,
        "images": st.lists(urls, max_size=2),
    },
)


def deep(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


@st.composite
def answers(draw: st.DrawFn, bodies: st.SearchStrategy[Any], codes: list[int]) -> Answer:
    """One answer. Mostly a JSON object of ``bodies`` (every field a hostile value) as
    a 200, so the client goes on to the next step; otherwise any of ``codes`` with a
    content type and maybe an encoding, and a body of ``bodies``, any JSON, deep
    nesting or plain bytes."""
    if draw(st.integers(0, 9)) < 6:
        return 200, {"content-type": "application/json"}, json.dumps(draw(bodies)).encode()
    body = draw(
        bodies.map(lambda b: json.dumps(b).encode())
        | json_values.map(lambda v: json.dumps(v).encode())
        | st.sampled_from([deep(65), deep(2000), deep(50_000)])
        | st.binary(max_size=40)
    )
    headers = {
        "content-type": draw(
            st.sampled_from(["application/json", "text/html", "application/octet-stream", ""])
        )
    }
    encoding = draw(st.sampled_from(["", "", "gzip", "gzip-broken", "br", "deflate"]))
    if encoding == "gzip":
        body = gzip.compress(body)
    if encoding:
        headers["content-encoding"] = encoding.removesuffix("-broken")
    if draw(st.integers(0, 3)) == 0:
        headers["retry-after"] = draw(st.sampled_from(["0", "99999", "soon"]))
    return draw(st.sampled_from(codes)), headers, body


class Scripted:
    """The gateway of one case: its create answer, its status answers (the last one
    repeats), its result answer; output files answer a few bytes."""

    def __init__(self, handle: Answer, statuses: list[Answer], result: Answer) -> None:
        self.handle, self.statuses, self.result = handle, statuses, result
        self.polls = 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        op = operation_of(request.method, request.url.path)
        if op == "create":
            code, headers, body = self.handle
        elif op == "status":
            code, headers, body = self.statuses[min(self.polls, len(self.statuses) - 1)]
            self.polls += 1
        elif op == "result":
            code, headers, body = self.result
        elif op == "cancel":
            code, headers, body = 202, {}, b"{}"
        else:
            code, headers, body = 200, {"content-type": "image/png"}, b"\x89PNG\r\n\x1a\nfuzz"
        return httpx.Response(code, headers=headers, stream=httpx.ByteStream(body))


class Tracebacks(logging.Handler):
    """Every record the poller logs with a traceback (an error it did not expect)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info or record.levelno >= logging.ERROR:
            self.seen.append(record.getMessage())


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Ledger, Tracebacks, Path]]:
    home = tmp_path_factory.mktemp("fuzz-home")
    tracebacks = Tracebacks()
    logger = logging.getLogger("genwidgets")
    logger.addHandler(tracebacks)
    with genwidgets_home(home), pytest.MonkeyPatch.context() as patch:
        patch.setattr(http, "backoff_delay", lambda attempt, rng=None: 0.01)
        ledger = Ledger(home / "ledger.sqlite3")
        yield ledger, tracebacks, home
    logger.removeHandler(tracebacks)


def _clean(text: str) -> None:
    assert KEY not in text, text[:400]


@pytest.mark.slow
@settings(
    max_examples=CASES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    handle=answers(handle_bodies, [200, 200, 201, 202, 400, 401, 429, 500]),
    statuses=st.lists(
        answers(status_bodies, [200, 200, 200, 404, 429, 500]), min_size=1, max_size=3
    ),
    result=answers(result_bodies, [200, 200, 202, 500]),
    settles=st.booleans(),
)
@pytest.mark.filterwarnings("ignore::genwidgets.errors.GenwidgetsWarning")
def test_any_gateway_answer_meets_a_typed_error_or_a_record(
    world: tuple[Ledger, Tracebacks, Path],
    handle: Answer,
    statuses: list[Answer],
    result: Answer,
    settles: bool,
) -> None:
    """``settles``: the status ends in a plain COMPLETED (so the result is fetched)."""
    ledger, tracebacks, _home = world
    if settles:
        statuses = [*statuses, (200, {}, b'{"status": "COMPLETED"}')]
    before = len(ledger.rows(limit=None))
    client = gw.Client(
        BASE,
        KEY,
        timeout=1.0,
        transport=httpx.MockTransport(Scripted(handle, statuses, result)),
        ledger=ledger,
        poll_policy=dataclasses.replace(FAST_POLICY, not_found_grace=0.05),
        allow_insecure=True,
    )
    job = None
    try:
        try:
            job = ends(lambda: client.submit("asset-get", {"Id": "asset-demo"}), OUTER)
        except GenwidgetsError as exc:
            event(f"submit: {type(exc).__name__}")
            _clean(f"{exc} {exc!r} {vars(exc)}")
        if job is not None:
            try:
                _clean(repr(ends(job.status, OUTER)))
            except GenwidgetsError as exc:
                _clean(f"{exc} {vars(exc)}")
            try:
                final = ends(lambda: job.result(timeout=0.15), OUTER)
            except GenwidgetsError as exc:
                event(f"result: {type(exc).__name__}")
                _clean(f"{exc} {exc!r}")
            else:
                event(f"result: ok={final.ok}")
                _clean(f"{final!r} {json.dumps(final.raw, default=str)} {final.error}")
                assert isinstance(final.ok, bool)
                for output in final.outputs:
                    assert output.kind in {"image", "video", "audio", "json", "text", "binary"}
            if job.last_status is not None:
                _clean(json.dumps(job.last_status.raw, default=str))
                assert job.queue_position is None or 0 <= job.queue_position <= 10**6
    finally:
        client.close()
    assert tracebacks.seen == []
    assert ledger.flush()
    rows = ledger.rows(limit=None)
    assert len(rows) == before + 1  # every create is in the ledger, whatever came back
    if job is not None:
        assert rows[0].request_id == job.request_id
    _clean(json.dumps([dataclasses.asdict(row) for row in rows[:1]], default=str))
