"""The request as cURL: it runs in a shell against a real server on loopback
with the key from ``$GENWIDGETS_API_KEY``, and no view ever holds the key."""

from __future__ import annotations

import html
import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

import genwidgets as gw
from genwidgets.lab.code import curl_code
from genwidgets.simulator import SimulatorServer

KEY = "sim-demo-key"
FAKE_KEY = "sk-test-9f8e7d6c5b4a"

pytestmark = pytest.mark.timeout(120)


def test_the_curl_command_creates_the_task_with_the_key_from_the_environment(
    simulator: SimulatorServer,
) -> None:
    if shutil.which("curl") is None or shutil.which("bash") is None:
        pytest.fail("this test needs curl and bash on PATH")
    payload = {"prompt": 'it\'s a fox "in" the snow', "n": 1, "seed": 4}
    command = curl_code("genW2.5-t2i-preview", payload)
    assert KEY not in command and "$GENWIDGETS_API_KEY" in command
    env = {**os.environ, "GENWIDGETS_BASE_URL": simulator.base_url, "GENWIDGETS_API_KEY": KEY}
    done = subprocess.run(
        ["bash", "-c", command.rstrip() + " -s --noproxy '*'"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    handle = json.loads(done.stdout)
    assert handle["request_id"]
    # the task the gateway made is the payload as sent
    with gw.Client(base_url=simulator.base_url, api_key=KEY) as client:
        job = client.job("genW2.5-t2i-preview", handle["request_id"])
        assert job.result(timeout=60).ok
    # and without the variable the gateway refuses it (the key really came from it)
    env.pop("GENWIDGETS_API_KEY")
    refused = subprocess.run(
        ["bash", "-c", command.rstrip() + " -s --noproxy '*' -o /dev/null -w '%{http_code}'"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.stdout.strip() == "401"


def test_inline_files_are_shortened_and_said_so() -> None:
    big = "data:image/png;base64," + "A" * 5000
    command = curl_code("imgQ-edit-plus", {"prompt": "x", "images": [big]})
    assert "A" * 200 not in command and "1 inline file(s) shortened" in command


def test_the_forms_code_view_shows_curl_with_the_variable_never_the_key(tmp_path: Path) -> None:
    client = gw.Client(base_url="http://127.0.0.1:9", api_key=FAKE_KEY)
    try:
        form = gw.form("genW2.5-t2i-preview", client=client, prompt="a fox", n=1)
        text = html.unescape(re.sub(r"<[^>]+>", "", form.code_view.value))
        assert "client.submit('genW2.5-t2i-preview'" in text
        assert 'curl -X POST "$GENWIDGETS_BASE_URL/v1/queue/genW2.5-t2i-preview"' in text
        assert "Bearer $GENWIDGETS_API_KEY" in text
        assert FAKE_KEY not in text and "http://127.0.0.1:9" not in text
    finally:
        client.close()


def test_what_the_body_cannot_carry_as_the_value_is_null_with_a_line_saying_why() -> None:
    """A local file, bytes or inf are no JSON value: the body writes ``null`` there (not
    ``str()`` of it, which would be sent as the value) and a comment line names each."""
    payload = {
        "prompt": "x",
        "images": [Path.home() / "cat.png"],
        "extra": {"raw": b"\x89PNG", "scale": float("inf")},
    }
    command = curl_code("imgQ-edit-plus", payload)
    words = shlex.split(command, comments=True)
    body = json.loads(words[words.index("-d") + 1])
    assert body == {"prompt": "x", "images": [None], "extra": {"raw": None, "scale": None}}
    notes = [line for line in command.splitlines() if line.startswith("#")]
    assert notes == [
        "# images.0 is null here: the file ~/cat.png is sent encoded for its field; put "
        "what gw.media.encode(path, endpoint, field) gives in its place",
        "# extra.raw is null here: b'\\x89PNG' is no JSON value",
        "# extra.scale is null here: inf is no JSON value",
    ]
