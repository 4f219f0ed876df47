"""The ``genwidgets`` command: the simulator, batches, the ledger's tasks, the notebooks.

``genwidgets simulate`` lives with the simulator (``genwidgets.simulator.cli``) and
``genwidgets batch`` with the batches (``genwidgets.lab.batch_cli``); this module names
the subcommands and holds the small ones over one task (``status``, ``result``,
``cancel``), the ledger (``history``, ``resume``) and the teaching notebooks
(``notebooks``). Each task command takes ``--json`` for scripts: then every outcome,
an error too, is one JSON object on stdout (:func:`~.lab.batch_cli.say_error`). The help
text is plain text: it is what ``--help`` prints. Everything a command writes is inert
on the terminal (:class:`InertStream`). docs/decisions.md#batch-cli.
"""

from __future__ import annotations

import _thread
import argparse
import atexit
import contextlib
import functools
import io
import json
import os
import shutil
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, TextIO

import httpx

from . import __version__
from ._client import Client, lost_contact
from ._config import DEMO_KEY, ENV_API_KEY, ENV_BASE_URL
from ._formats import terminal_text
from .errors import (
    GatewayError,
    GenwidgetsError,
    GenwidgetsWarning,
    LedgerError,
    NoAnswer,
    RateLimited,
    RequestNotFound,
    ResultMissing,
    RuntimeFailed,
    ServerError,
    TaskTimeout,
    Unauthorized,
    Unreachable,
)
from .jobs.downloads import extension_for, safe_name
from .jobs.job import (
    CANCEL_KEPT,
    Job,
    copies_pending_words,
    kept_cancel,
    no_stop_hint,
    poll_failed_since,
)
from .jobs.ledger import MAX_LIMIT, LedgerRow
from .jobs.ledger.file import UNKNOWN_TIME
from .jobs.ledger.lease import HOST, pid_alive
from .jobs.ledger.rows import copy_gone
from .jobs.ledger.store import may_still_run
from .jobs.recorder import GONE
from .lab.batch_cli import (
    EXIT_INTERRUPTED,
    EXIT_REFUSED,
    add_batch_arguments,
    error_words,
    run_batch,
    say_error,
)
from .protocol.records import Result, says_cancelled
from .serve import cli as serve_cli
from .serve.cli import JSON_FLAG, say
from .simulator import cli as simulator_cli

if TYPE_CHECKING:
    from .protocol.records import Status

DESCRIPTION = "Tools for genwidgets, widgets for an asynchronous generation gateway."
EPILOG = f"""\
examples:
  genwidgets simulate                  a local gateway on http://127.0.0.1:8765
  genwidgets simulate --speed 10       ten times faster
  genwidgets simulate --help           every flag of the simulator, with its default
  genwidgets batch rows.csv --endpoint genW2.5-t2i-preview --set prompt='{{text}}' --out shots
  genwidgets batch --help              every flag of a batch
  genwidgets history --limit 20        the latest tasks in the ledger
  genwidgets notebooks ./lessons       copy the teaching notebooks

Then, in Python: export {ENV_BASE_URL}=http://127.0.0.1:8765 and
{ENV_API_KEY}={DEMO_KEY}, and use genwidgets as with the real gateway. Without them,
every command uses the embedded simulator."""
#: a task command's exit status when the task is not (yet) done well
EXIT_NOT_DONE = 1
#: ``resume``'s exit status when nothing failed but a task still runs or a copy is still
#: pending: run it again (sysexits' EX_TEMPFAIL), told apart from 1, a failure, by cron
EXIT_NOT_YET = 75
#: ``resume``'s exit status when nothing failed but a task said done (and paid) has no
#: result at its gateway (``ResultMissing``: purged, a replica that lost it): sysexits'
#: EX_NOINPUT, the thing to read is not there. Not 1 (no task failed), not 75 (waiting
#: brings nothing), not 2 (not the user's setup): docs/decisions.md#batch-cli
EXIT_RESULT_GONE = 66
#: ``resume``'s wait with no ``--wait`` (seconds) for tasks to finish: it fetches what has
#: finished and lists what still runs; a task its gateway keeps running held it for ever
#: (a cron job piled up). A copy in progress is not cut by it: docs/decisions.md#batch-cli
RESUME_WAIT = 60.0
#: seconds between two lines of a command still waiting, on stderr (docs/decisions.md#batch-cli)
STILL_WAITING_EVERY = 30.0


def _limit(text: str) -> int:
    """``history --limit``: a whole number from 0 to ``MAX_LIMIT`` (the ledger's most, far
    more than a terminal shows; a count past SQLite's integers blamed the ledger:
    docs/decisions.md#batch-cli)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= MAX_LIMIT:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number from 0 to {MAX_LIMIT}")
    return value


def _seconds(text: str) -> float:
    """``--wait``: a number of seconds, 0 or more (``inf``: no deadline). ``nan`` passed
    ``float`` and ended ``result`` in a bare ``TypeError`` (no JSON with ``--json``), and
    ``resume`` took it as no wait; a negative wait was taken as none."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:  # NaN compares false
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds, 0 or more")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="genwidgets",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"genwidgets {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    simulate = commands.add_parser(
        "simulate",
        help="run the local gateway simulator",
        description="Run the local gateway simulator (the whole queue protocol, real media).",
        formatter_class=simulator_cli.HelpFormatter,
    )
    simulator_cli.add_simulate_arguments(simulate)
    batch = commands.add_parser(
        "batch",
        help="send a task per row of a CSV or JSONL file, files out",
        description="Plan, confirm and send a task per row; files and manifest.csv go to "
        "--out; the same command again resumes. Exit status: 0 all done, 1 some not "
        "done, 2 refused, 130 interrupted (143 SIGTERM, 141 its reader left).",
    )
    add_batch_arguments(batch)
    serve = commands.add_parser("serve", help="a class gateway: students' keys with budgets")
    serve_cli.add_serve_arguments(serve)
    history = commands.add_parser(
        "history", help="the tasks in the ledger, newest first", parents=[JSON_FLAG]
    )
    history.add_argument("--endpoint", help="only this endpoint's tasks")
    history.add_argument("--status", help="a state (unfinished, ok, failed, ...) or status")
    history.add_argument(
        "--limit", type=_limit, default=50, help=f"at most this many (default 50, most {MAX_LIMIT})"
    )
    for name, text in (
        ("status", "ask the gateway for a task's status"),
        ("result", "a task's result and local files (waits with --wait)"),
        ("cancel", "ask the gateway to cancel a task"),
    ):
        task = commands.add_parser(name, help=text, parents=[JSON_FLAG])
        task.add_argument("request_id", help="the task's request id")
        task.add_argument("--endpoint", help="the task's endpoint (default: from the ledger)")
    result = commands.choices["result"]
    result.add_argument("--wait", type=_seconds, default=0.0, help="seconds to wait for it")
    result.add_argument("--out", help="also copy its outputs into this folder")
    resume = commands.add_parser(
        "resume", help="re-attach unfinished tasks and wait for their results", parents=[JSON_FLAG]
    )
    resume.add_argument(
        "--wait",
        type=_seconds,
        default=None,
        help=f"seconds to wait at most (default {RESUME_WAIT:g} for tasks to finish, and a "
        "copy of outputs begun runs to its end: the tasks still running then are listed, "
        f"exit {EXIT_NOT_YET}, and the next resume waits again)",
    )
    resume.add_argument("--force", action="store_true", help="take tasks another kernel polls")
    resume.add_argument(
        "--recopy",
        action="store_true",
        help="also copy again the local files removed since (looks for every recorded file)",
    )
    notebooks = commands.add_parser("notebooks", help="copy the teaching notebooks into DIR")
    notebooks.add_argument("dir", help="the folder to copy them into (made if missing)")
    notebooks.add_argument("--force", action="store_true", help="overwrite files there")
    return parser


# ----------------------------------------------------------------------------- tasks


def _row_record(row: LedgerRow, fingerprint: str | None = None) -> dict[str, Any]:
    """A history row in JSON; ``fingerprint``: the key of the client asking, whose
    ``resume`` does not copy what another key made."""
    return {
        "request_id": row.request_id,
        "endpoint": row.endpoint,
        "state": row.state,
        "status": row.status,
        "ok": row.ok,
        "error": row.error,
        "submitted_at": _time_text(row.submitted_at),
        # the local copies on disk; those recorded and removed since, apart: left removed
        # (space freed on purpose) unless asked for, by `result ID` or `resume --recopy`
        "files": [o["path"] for o in row.outputs if o.get("path") and not copy_gone(o)],
        "files_missing": [o["path"] for o in row.outputs if copy_gone(o)],
        "copies_removed": row.copies_gone,  # of those, the ones whose source lives
        # outputs with no local copy yet, which resume copies; and those given up, why
        "copies_pending": row.copies_pending,
        "copies_given_up": {str(i): why for i, why in row.copies_given_up.items()},
        "made_with_another_key": row.made_with_another_key(fingerprint),
    }


def _time_text(at: float, *, local: bool = False) -> str | None:
    """``at`` as JSON has it (2026-11-29T02:15:00Z, as the batch manifest writes it) or,
    ``local``, as a history line shows it; None for a time no clock shows (a note's
    unreadable time, kept as ``UNKNOWN_TIME``: jobs/ledger/file.py)."""
    shape, clock = ("%Y-%m-%d %H:%M:%S", time.localtime) if local else (_JSON_TIME, time.gmtime)
    try:
        return time.strftime(shape, clock(at)) if at > UNKNOWN_TIME else None
    except (OverflowError, OSError, ValueError):
        return None


_JSON_TIME = "%Y-%m-%dT%H:%M:%SZ"
#: a history line's time when it has none, as wide as a time
_TIME_UNKNOWN = f"{'(time unknown)':<19}"


def _local_time(at: float) -> str:
    return _time_text(at, local=True) or _TIME_UNKNOWN


def _process_words(pid: int | None, host: str | None) -> str:
    """``process 4242 on lab-3``, what of it a note says (an older note's handle names
    neither: "an earlier process"), inert for a terminal."""
    if pid is None and host is None:
        return "an earlier process"
    said = "process" + (f" {pid}" if pid is not None else "")
    return terminal_text(said + (f" on {host}" if host is not None else ""))


def _left_record(
    state: str,
    endpoint: str | None,
    request_id: str | None,
    at: float,
    pid: int | None,
    host: str | None,
) -> dict[str, Any]:
    """A task the ledger's file does not hold, in JSON as a row is (``--json``), with the
    process that left it: held in the pending notes (``pending_notes``: recorded at the
    next write or open) or kept aside (``kept_aside``: placed on no row, never recorded;
    no request id or endpoint: a create of unknown outcome, maybe paid)."""
    row = LedgerRow(
        id=0,
        gateway="",
        endpoint=endpoint or "",
        request_id=request_id,
        state=state,
        status=None,
        queue_position=None,
        payload={},
        submitted_at=at,
        updated_at=at,
        finished_at=None,
        ok=None,
        error=None,
        error_type=None,
        outputs=[],
    )
    return _row_record(row) | {"endpoint": endpoint, "pid": pid, "host": host}


def _copies_in_words(record: dict[str, Any]) -> str:
    """``, 2 local file(s) missing (genwidgets result ID copies them again), 2 copies
    pending (genwidgets resume copies them)``: a history line's outputs with no local
    copy, in words (docs/decisions.md#copies-pending)."""
    missing = len(record["files_missing"])
    said = f", {missing} local file(s) missing" if missing else ""
    if record["copies_removed"]:  # left removed by resume: the user may have freed space
        again = f"genwidgets result {terminal_text(record['request_id'])} copies them again"
        if record["made_with_another_key"]:
            again = "a client of the key that made it copies them again"
        said += f" ({again})"
    pending, given_up = len(record["copies_pending"]), record["copies_given_up"]
    if pending:
        who = "a client of the key that made it copies them"
        if not record["made_with_another_key"]:  # a kernel still open may hold its lease
            who = "genwidgets resume copies them once no open kernel holds the task"
        said += f", {copies_pending_words(pending)} ({who})"
    if given_up:
        said += f", {len(given_up)} not copied ({terminal_text(next(iter(given_up.values())))})"
    return said


def _history(client: Client, args: argparse.Namespace) -> int:
    if client.ledger is None:
        return say_error("history", "the ledger is off", EXIT_NOT_DONE, as_json=args.json)
    try:
        rows = client.ledger.rows(
            client.gateway_name, endpoint=args.endpoint, status=args.status, limit=args.limit
        )
    except LedgerError as exc:  # locked past its wait: the pending notes, and a word
        if not client.ledger.locked_out or args.json:
            raise
        rows, busy = [], str(exc)
    else:
        busy = ""
    records = [_row_record(r, client.key_fingerprint) for r in rows]
    # the tasks the file does not hold (yet, or ever), listed with the rows: scripts
    # reading --json see the paid tasks a terminal sees (review-31)
    # (neither has a status word yet: a --status filter leaves them out, unread)
    listed = {(row.endpoint, row.request_id) for row in rows}
    held = [
        note
        for note in (client.ledger.left_pending(client.gateway_name) if not args.status else [])
        if (note[0], note[1]) not in listed and args.endpoint in (None, note[0])
    ]
    kept = [
        note
        for note in (client.ledger.kept_aside(client.gateway_name) if not args.status else [])
        if args.endpoint in (None, note[0])
    ]
    if args.json:
        records += [_left_record("pending_notes", *note) for note in held]
        records += [_left_record("kept_aside", *note) for note in kept]
        print(json.dumps(records))
        return 0
    for row, r in zip(rows, records, strict=True):
        # one line per task, whatever a ledger row written before the rule holds
        word, endpoint = terminal_text(r["status"] or r["state"]), terminal_text(r["endpoint"])
        files = f" {len(r['files'])} file(s)" if r["files"] else ""
        rid = terminal_text(r["request_id"] or "(no request id)")
        when = _local_time(row.submitted_at)
        print(f"{when}  {endpoint:<24} {word:<16} {rid}{files}{_copies_in_words(r)}")
    for endpoint, rid, at, pid, host in held:
        shown = f"{terminal_text(endpoint):<24} {'pending notes':<16} {terminal_text(rid)}"
        state = (
            "it may still be running; recorded at its next write or the next open"
            if may_still_run(pid, host)
            else "it has ended; recorded at the next open"
        )
        print(f"{_local_time(at)}  {shown} (held by {_process_words(pid, host)}: {state})")
    for where, named, at, pid, host in kept:  # never recorded: as kept
        rid = named or "(no request id: a create of unknown outcome, maybe paid)"
        shown = f"{terminal_text(where or '?'):<24} {'kept aside':<16} {terminal_text(rid)}"
        by = _process_words(pid, host)
        print(f"{_local_time(at)}  {shown} (not placed: no row of its create here; left by {by})")
    if busy:
        said = f"only the pending notes are shown: {busy}"
        return say_error("history", said, EXIT_NOT_DONE, as_json=False)
    return 0


def _one_task(client: Client, args: argparse.Namespace) -> int:
    row = client.ledger.get(client.gateway_name, args.request_id) if client.ledger else None
    endpoint = args.endpoint or (row.endpoint if row is not None else None)
    if endpoint is None:
        return say_error(
            args.command,
            f"{args.request_id} is not in the ledger; give --endpoint",
            EXIT_REFUSED,
            as_json=args.json,
            request_id=args.request_id,
        )
    recorded = row.result() if row is not None else None
    if recorded is not None and args.command in ("status", "cancel"):
        return _ended(args, endpoint, recorded.status)
    job = client.job(endpoint, args.request_id)
    try:
        return _asked(client, args, job, endpoint, row, recorded)
    finally:
        if row is None and client.ledger is not None and not _answered_for(job):
            # a typo's 404, no answer: no task is recorded that may never have existed
            client.ledger.writes.forget_attach(client.gateway_name, job.request_id)


def _answered_for(job: Job) -> bool:
    """Whether the gateway has said anything of ``job``'s task: a status, a result, a
    cancel it took (a "not found" is none)."""
    took_cancel = job.cancel_requested and job.cancel_error is None
    return job.last_status is not None or job.last_result is not None or took_cancel


def _asked(
    client: Client,
    args: argparse.Namespace,
    job: Job,
    endpoint: str,
    row: LedgerRow | None,
    recorded: Result | None,
) -> int:
    """``status``, ``result`` or ``cancel`` of ``job``, re-attached. A poll the gateway
    refused (it answered: a 409, a 401), whichever ask met it, is said as ``resume`` says
    it (:func:`_refused`)."""
    rid = job.request_id
    if args.command == "cancel":
        return _cancel(args, job, endpoint)
    if recorded is not None and row is not None and (row.copies_pending or row.copies_gone):
        # recorded, its outputs not all copied: the job copies them, waited for within
        # --wait (none given: one client timeout in all, not one per output), asking the
        # gateway nothing else
        recorded = job.result(timeout=args.wait or client.timeout)
        if job.copies_pending and not args.json:  # the JSON says copies_pending
            n = copies_pending_words(job.copies_pending)
            n += " (local files removed since)" if row.copies_gone else ""
            why = "not copied within the wait; ask again later"
            if job.copying is None and row.made_with_another_key(client.key_fingerprint):
                why = "a client of the key that made this task copies them"
            elif job.copying is None:  # the lease of a kernel still open: its own to copy
                why = (
                    "another open kernel holds this task and copies them (client.resume() "
                    "there); this command copies them once that kernel is closed"
                )
            elif job.copying.done() and client.ledger is not None:
                # tried: a copy given up (an expired URL, other bytes at it) says why
                ended = client.ledger.get(client.gateway_name, rid)
                given_up = ended.copies_given_up if ended is not None else {}
                if given_up:
                    n = f"{len(given_up)} not copied"
                    why = terminal_text(next(iter(given_up.values())))
            print(f"{rid}: {n}: {why}", file=sys.stderr)
    try:
        if args.command == "status":  # (recorded is None: _one_task said an ended task's)
            return _status(args, job, endpoint)
        try:  # finished: what the ledger recorded (its local files); else the gateway's
            result = recorded or job.result(timeout=args.wait)
        except ResultMissing as exc:  # said done, its result address answers 404
            return _result_gone(args, job, exc)
        except TaskTimeout as timeout:
            if isinstance(job.poll_error, ResultMissing):  # the wait ran out on it
                return _result_gone(args, job, job.poll_error)
            # no poll answered within the wait (none is made with no --wait): ask once, so the
            # status said is the gateway's now; a task ended meanwhile gives its result. One
            # try, no retries: the command ends within its wait plus one request timeout
            try:
                asked = time.time()
                if job.last_status is None and job.status(retries=0).done:
                    result = _fetched_once(job, asked, client.timeout)
                elif job.last_status is not None and job.last_status.done:  # its result late
                    if job.poll_error is not None:  # asked, and not given: said as resume does
                        return _result_unread(args, job, job.poll_error)
                    return _not_known_yet(args, rid, timeout, job.last_status)
                else:
                    out = {"request_id": rid, "status": job.status_text, "done": False}
                    word = terminal_text(job.status_text)
                    said = f"{rid}: not finished ({word}); wait with --wait SECONDS"
                    return say(args, out, said, EXIT_NOT_DONE)
            except ResultMissing as exc:
                return _result_gone(args, job, exc)
            except (NoAnswer, ServerError, RateLimited, TaskTimeout) as exc:
                if isinstance(job.poll_error, ResultMissing):
                    return _result_gone(args, job, job.poll_error)
                if job.poll_error is not None and job.last_status and job.last_status.done:
                    return _result_unread(args, job, job.poll_error)
                return _not_known_yet(args, rid, exc, job.last_status)
    except GatewayError as exc:
        if not _poll_refused(exc):
            raise
        return _refused(args, rid, exc, job.last_status if args.command == "result" else None)
    files = []
    for output in result.outputs:
        path = output.path
        if args.out:
            name = f"{safe_name(rid)}-{output.index}{extension_for(output.content_type)}"
            path = output.save(Path(args.out) / name)  # a "." in an id is no extension
        files.append(str(path) if path else output.url)
    out = {"request_id": rid, "endpoint": endpoint, "status": result.status} | {
        "copies_pending": job.copies_pending  # outputs whose copy was not done in time
    }
    out |= {"ok": result.ok, "error": result.error, "files": files}
    # the gateway's texts in one line each: a newline in its error forged lines ("done")
    said = f"{rid}: {terminal_text(result.status)}"
    said += f" ({terminal_text(result.error)})" if result.error else ""
    said += "".join(f"\n  {terminal_text(str(name))}" for name in files)
    return say(args, out, said, 0 if result.ok else EXIT_NOT_DONE)


def _status(args: argparse.Namespace, job: Job, endpoint: str) -> int:
    """``status``: the gateway asked once (``retries=0``, as result's last ask: an address
    that never answers costs one timeout). An answer naming no status word (``{}``,
    ``{"status": null}``) says nothing of the task: not known yet, as an answer that
    cannot be read, exit 1 (it printed UNKNOWN, exit 0)."""
    rid = job.request_id
    try:
        status = job.status(retries=0)
    except (NoAnswer, ServerError, RateLimited) as exc:
        return _not_known_yet(args, rid, exc)
    named = status.raw.get("status")
    if not isinstance(named, str) or not named.strip():
        body = json.dumps(status.raw, default=str)  # ASCII: every control escaped
        body = body if len(body) <= 200 else f"{body[:200]}… (cut)"
        return _not_known_yet(args, rid, f"the gateway's answer named no status ({body})")
    place = status.queue_position
    out = {"request_id": rid, "endpoint": endpoint, "status": status.status}
    where = f" (queue position {place})" if place is not None else ""
    said = f"{rid}: {terminal_text(status.status)}{where}"
    return say(args, out | {"queue_position": place}, said)


def _cancel(args: argparse.Namespace, job: Job, endpoint: str) -> int:
    """``cancel``: the gateway's status asked once (``retries=0``, as ``status``), and the
    cancel sent unless it says the task has ended. A status that fails or never answers
    does not hold the cancel back: the task bills on meanwhile (the cancel was never
    sent). A cancel the gateway did not take (:func:`~.jobs.job.kept_cancel`) is said,
    exit 1: this process ends, so the same command sends it again. One it refused ("too
    late" to a task running) is said refused, exit 1. docs/decisions.md#batch-cli."""
    rid = job.request_id
    try:
        now = job.status(retries=0)
        if _says_it_ended(now):
            return _ended(args, endpoint, now.status)
    except GenwidgetsError:  # a 404, a 403, an error shape: the task's state not known
        pass  # a cancel is idempotent, and one the gateway refuses costs nothing: send it
    try:
        job.cancel()
    except CANCEL_KEPT:
        sent, why = kept_cancel(job) or ("not taken", "")
        out = {"request_id": rid, "cancel": sent, "error": why}
        again = f"the task may still run: genwidgets cancel {rid} sends it again"
        return say(args, out, f"{rid}: cancel {sent}: {why}; {again}", EXIT_NOT_DONE)
    except GatewayError as exc:  # refused ("too late" to a task running, 403, 404...)
        out = {"request_id": rid, "cancel": "refused", "error": str(exc)}
        why = terminal_text(exc.detail or exc.message)
        said = f"{rid}: cancel refused by the gateway: {why}; the task may still run (and bill)"
        return say(args, out, said, EXIT_NOT_DONE)
    last = job.last_status  # a 400/409 asked it: the task ended meanwhile, not cancelled
    if last is not None and _says_it_ended(last) and not says_cancelled(last.status, None):
        return _ended(args, endpoint, last.status, sent=True)
    return say(args, {"request_id": rid, "cancel": "asked"}, f"{rid}: cancel asked")


def _says_it_ended(now: Status) -> bool:
    """Whether a status answer is a task's own saying it ended: a terminal word in a body
    with no error shape. The spec's ``{"error": {...}}`` or JSend's ``{"status": "error",
    "message": ...}`` under a 200 is the status address failing, not a task's state: its
    "error" read as the terminal word ERROR held a cancel back while the task billed on."""
    body = now.raw
    if isinstance(body.get("error"), Mapping):
        return False
    jsend = body.get("status") in ("error", "fail") and ("message" in body or "data" in body)
    return now.done and not jsend


def _not_known_yet(
    args: argparse.Namespace, rid: str, exc: Exception | str, status: Status | None = None
) -> int:
    """``status``, or ``result --wait`` ran out, and the gateway did not answer the one
    ask (its address hangs, fails, or holds us back; ``exc`` in words: an answer that
    says no status): how the task stands is not known yet, which is not a failed task;
    the same command asks again. A ``status`` that said the task is done tells so: its
    result only could not be fetched (not yet, exit :data:`EXIT_NOT_YET`, as ``resume``
    says it; never 1, a failed task)."""
    words = exc if isinstance(exc, str) else error_words(exc)
    out = {"request_id": rid, "status": None, "done": False, "known": False, "error": words}
    wait = " --wait SECONDS" if args.command == "result" else ""
    again = f"ask again with: genwidgets {args.command} {rid}{wait}"
    answered = exc if isinstance(exc, str) else _what_it_answered(exc)
    said = f"{rid}: outcome not known yet: {answered}. The task may still run or be done; {again}"
    if status is not None and status.done:
        out |= {"status": status.status, "done": True}
        word = terminal_text(status.status)
        said = f"{rid}: {word}; its result could not be fetched in time ({words}); {again}"
        return say(args, out, said, EXIT_NOT_YET)
    return say(args, out, said, EXIT_NOT_DONE)


def _what_it_answered(exc: BaseException) -> str:
    """What the gateway did instead of saying a task's status: no answer in time is one
    case only (a timeout, as the transport raised it); an answer that broke off is none
    either; a 500, a 429 or an unreadable answer came at once and is said as such."""
    if isinstance(exc, Unreachable):
        return f"the gateway could not be reached ({error_words(exc)})"
    if isinstance(exc.__cause__, httpx.TimeoutException):
        return f"the gateway did not answer in time ({error_words(exc)})"
    if isinstance(exc.__cause__, httpx.TransportError):
        return f"the gateway's answer broke off ({error_words(exc)})"
    if isinstance(exc, RateLimited):
        return f"the gateway's rate limit refused the ask ({error_words(exc)})"
    if isinstance(exc, ServerError):  # a 5xx, or an answer that could not be read
        return f"the gateway answered with a failure ({error_words(exc)})"
    return f"the gateway did not answer in time ({error_words(exc)})"


def _ended(args: argparse.Namespace, endpoint: str, status: str, *, sent: bool = False) -> int:
    """``status`` or ``cancel`` of a task that has ended: its last status, as the ledger
    recorded it (the gateway that made it may be gone: an embedded simulator ends with
    its process) or the gateway said. A cancel sends nothing and exits 1; ``sent``: one
    sent came too late (the task ended between the status ask and the cancel)."""
    rid = args.request_id
    out: dict[str, Any] = {"request_id": rid, "endpoint": endpoint, "status": status}
    if args.command == "status":
        out |= {"queue_position": None, "ended": True}
        return say(args, out, f"{rid}: {terminal_text(status)} (ended)")
    out["cancel"] = ("too late" if sent else "not sent") + ": the task had already ended"
    said = f"{rid}: not cancelled: it had already ended ({terminal_text(status)})"
    return say(args, out, said, EXIT_NOT_DONE)


#: why ``resume`` does not wait for a task the embedded simulator of another process made
ENDED_SIMULATOR = (
    "made by an embedded simulator that has ended (each ends with the process that started "
    "it): this task can never finish"
)


def _lost_contact_words(exc: BaseException, status: Status | None = None) -> str:
    """Contact lost with a task, said as what the gateway did; a task whose status said
    it ended has ended, only its result was not read (never "it may still run")."""
    if status is not None and status.done:
        return (
            f"its result could not be fetched: {_what_it_answered(exc)}, though it said "
            f"{terminal_text(status.status)}: the task has ended and its outputs were not "
            "read: genwidgets resume asks for them again, with no new create"
        )
    return (
        f"contact lost: {_what_it_answered(exc)}; the task may still run or be done: "
        "genwidgets resume follows it again, with no new create"
    )


def _result_missing_words(exc: ResultMissing, again: str = "genwidgets resume asks again") -> str:
    """The gateway answered twice (ended; no result): what happened, never "did not
    answer" nor "failed", and what to do (the outputs are the gateway's to give back)."""
    return (
        f"done and paid, but its result is gone at the gateway: {exc.message} (HTTP 404; "
        "results purged?): its outputs cannot be read here; ask the gateway's operator "
        f"for them (a new create makes them again, billed); {again}"
    )


def _result_gone(args: argparse.Namespace, job: Job, exc: ResultMissing) -> int:
    """``result ID`` of a task said done whose result address answers 404: said as
    ``resume`` says it, exit :data:`EXIT_RESULT_GONE` (never "on its way")."""
    rid = job.request_id
    words = _result_missing_words(exc, f"genwidgets result {rid} --wait SECONDS asks again")
    out = {"request_id": rid, "status": job.status_text, "done": True, "ok": False}
    out |= {"result_missing": True, "error": words, "files": []}
    said = f"{rid}: {terminal_text(job.status_text)} ({words})"
    return say(args, out, said, EXIT_RESULT_GONE)


def _fetched_once(job: Job, since: float, within: float) -> Result:
    """The result of ``job``, whose status (asked at ``since``) said it ended: its own
    poll fetches it, waited for at most ``within`` seconds and until that fetch fails
    (``poll_failed_since``: a 500, no answer, a result gone), then raised as
    :class:`TaskTimeout`: one fetch, not the job's polls to their failure limit."""
    end = time.monotonic() + within
    while True:
        try:
            return job.result(timeout=min(0.1, max(0.0, end - time.monotonic())))
        except TaskTimeout:
            if poll_failed_since(job, since) is not None or time.monotonic() >= end:
                raise


def _result_unread(args: argparse.Namespace, job: Job, exc: BaseException) -> int:
    """``result ID`` of a task whose status said it ended, its result asked and not given
    (a 500, no answer): said as ``resume`` says it (:func:`_lost_contact_words`), exit
    :data:`EXIT_NOT_YET`, as ``resume``'s: the task has ended, asking again may read it."""
    rid, status = job.request_id, job.last_status
    again = f"genwidgets result {rid} --wait SECONDS asks again"
    words = _lost_contact_words(exc, status).replace("genwidgets resume asks for them again", again)
    out = {"request_id": rid, "status": job.status_text, "done": True, "known": False}
    out |= {"ok": False, "error": words, "files": []}
    return say(args, out, f"{rid}: {terminal_text(job.status_text)}; {words}", EXIT_NOT_YET)


def _answer(exc: GatewayError) -> str:
    """What the gateway answered, as it said it (its code and detail, inert: the error
    keeps them so); the command's line already names the task."""
    return f"HTTP {exc.status_code}: {exc.message}" if exc.status_code else exc.message


def _refused_words(exc: GatewayError, again: str, status: Status | None = None) -> str:
    """A poll the gateway refused (it answered: a 409, a 401, a proxy's 403), in the
    command's words: what it refused, its detail, and what to do (``again``). A key
    refused says so; a result refused after a status that said the task ended says that,
    never "it may still run"."""
    if exc.status_code is not None and 300 <= exc.status_code < 400:  # we did not follow
        return f"{exc.message} (HTTP {exc.status_code}): the task may still run; {again}"
    if isinstance(exc, Unauthorized) or exc.status_code in (401, 403):
        return (
            f"the gateway refused this key ({_answer(exc)}): the task may still run; "
            f"fix the key, then {again}"
        )
    if status is not None and status.done:
        return (
            f"the gateway refused its result ({_answer(exc)}), though it said "
            f"{terminal_text(status.status)}: the task has ended; its outputs were not read; "
            f"{again}"
        )
    return (
        f"the gateway refused to say how the task stands ({_answer(exc)}): the task may "
        f"still run; {again}"
    )


def _refused(
    args: argparse.Namespace, rid: str, exc: GatewayError, status: Status | None = None
) -> int:
    """``status`` or ``result`` of a task whose poll the gateway refused: said as
    ``resume`` says it (:func:`_refused_words`), exit 1 as every refused poll; JSON
    ``"refused": true``, ``"known": false`` (how the task stands was not said)."""
    wait = " --wait SECONDS" if args.command == "result" else ""
    again = f"ask again with: genwidgets {args.command} {rid}{wait}"
    done = status is not None and status.done
    out = {
        "request_id": rid,
        "status": status.status if status is not None else None,
        "done": done,
        "known": False,
        "refused": True,
        "error": _answer(exc),
    }
    return say(args, out, f"{rid}: {_refused_words(exc, again, status)}", EXIT_NOT_DONE)


def _poll_refused(exc: GenwidgetsError) -> bool:
    """Whether ``exc`` is the gateway's refusal of a poll (it answered, with neither the
    task's own word, 404 "Request not found", nor a fault of contact: a 5xx, a 429)."""
    return (
        isinstance(exc, GatewayError)
        and exc.status_code is not None
        and not isinstance(exc, (RequestNotFound, RuntimeFailed, ServerError, RateLimited))
    )


@contextlib.contextmanager
def _still_waiting(command: str, what: Callable[[], str]) -> Iterator[None]:
    """While the block runs, a line on stderr every :data:`STILL_WAITING_EVERY` seconds:
    what the command waits for (``what()``, asked at each line) and how long so far, so a
    log shows a command held by a task its gateway keeps running, not a silence."""
    started, stop = time.monotonic(), threading.Event()

    def tell() -> None:
        while not stop.wait(STILL_WAITING_EVERY):
            so_far = time.monotonic() - started
            print(
                f"genwidgets {command}: {so_far:.0f} s so far, waiting for {what()}",
                file=sys.stderr,
            )

    thread = threading.Thread(target=tell, name="genwidgets-still-waiting", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def _resume(client: Client, args: argparse.Namespace) -> int:
    jobs = client.resume(force=args.force, recopy=args.recopy)
    deadline = time.monotonic() + (RESUME_WAIT if args.wait is None else args.wait)
    records: list[dict[str, Any]] = []
    silence: list[Exception | None] = []  # the one ask after a wait with no word: its error

    def waited_on() -> str:
        if len(records) >= len(jobs):  # all said: the command is ending
            return "its last lines"
        job = jobs[len(records)]
        left = max(0.0, deadline - time.monotonic())
        where = f"task {len(records) + 1} of {len(jobs)}, the wait ends in {left:.0f} s"
        if not left and job.copying is not None:  # the default wait: a copy begun runs on
            where = f"task {len(records) + 1} of {len(jobs)}, copying its outputs"
        elif not left and job.last_status is not None and job.last_status.done:
            where = f"task {len(records) + 1} of {len(jobs)}, fetching its result"
        return f"{job.request_id} ({job.endpoint}, {job.status_text}; {where})"

    with _still_waiting("resume", waited_on):
        for job in jobs:
            wait = max(0.0, deadline - time.monotonic())
            record = _resumed(client, job, wait, silence, copies_to_end=args.wait is None)
            records.append(record)
            if not args.json:
                if record["copies_pending"]:
                    n = copies_pending_words(record["copies_pending"])
                    print(f"{job.request_id}: {n}: not copied within the wait", file=sys.stderr)
                said = terminal_text(record["status"])
                said += f" ({terminal_text(record['error'])})" if record.get("error") else ""
                print(
                    f"{record['request_id']}  {record['endpoint']:<24} {said}"
                    + "".join(f"\n  {f}" for f in record["files"])
                )
    if args.json:
        print(json.dumps(records))
    elif not records:
        # tasks left to a live process or another key were said above: not "none"
        left = client.ledger.rows(client.gateway_name, status="unfinished") if client.ledger else []
        said = f"the ledger's {len(left)} unfinished task(s) were left to others (said above)"
        print(
            f"nothing resumed: {said}"
            if left
            else "nothing to resume: no unfinished task in the ledger"
        )
    return _resume_exit(records)


def _resume_exit(records: list[dict[str, Any]]) -> int:
    """0 all done and copied; 1 a task failed or can never finish; else
    ``EXIT_RESULT_GONE`` a task done whose result its gateway no longer has; else
    ``EXIT_NOT_YET`` tasks still running or out of contact, or copies still pending,
    which the next ``resume`` takes on (docs/decisions.md#batch-cli)."""
    ended = [r for r in records if not r["ok"] and not r.get("waits_again")]
    if any(not r.get("result_missing") for r in ended):
        return EXIT_NOT_DONE
    if ended:
        return EXIT_RESULT_GONE
    return EXIT_NOT_YET if any(not r["ok"] or r["copies_pending"] for r in records) else 0


def _resumed(
    client: Client,
    job: Job,
    left: float,
    silence: list[Exception | None],
    *,
    copies_to_end: bool = False,
) -> dict[str, Any]:
    """One task of ``resume``, waited for at most ``left`` seconds, as its JSON record.
    ``copies_to_end``: a copy of its outputs begun is waited for to its own download
    deadline (cut, the next run began it from byte 0 and never had the file).
    Not done, it says why: never to finish (made by an ended embedded simulator: said at
    once), contact lost (polling gave up, or no word within the wait and the gateway
    silent to the command's one ask, ``silence``: one request timeout, not one a task),
    or not finished yet; these two, ``waits_again``: the next run follows them."""
    record: dict[str, Any] = {"request_id": job.request_id, "endpoint": job.endpoint}
    if client.embedded and not job.done():  # this command's simulator is a new one
        error = _other_simulator(client, job)
    else:
        try:
            result = _waited(job, left, silence, copies_to_end=copies_to_end)
            files = [str(o.path) for o in result.outputs if o.path]
            # copies_pending: outputs not copied within --wait
            return (
                record
                | {"status": result.status, "ok": result.ok, "files": files}
                | {"copies_pending": job.copies_pending}
            )
        except TaskTimeout as exc:
            error = (
                f"not finished within {round(exc.timeout, 1):g} s; genwidgets resume waits again"
            )
            record["waits_again"] = True
            if job.last_status is None and silence and silence[0] is not None:
                error, record["known"] = _lost_contact_words(silence[0]), False
            elif isinstance(job.poll_error, ResultMissing):  # the wait ran out on it
                error, record["result_missing"] = _result_missing_words(job.poll_error), True
                del record["waits_again"]
            elif job.last_status is not None and job.last_status.done and job.poll_error:
                error = _lost_contact_words(job.poll_error, job.last_status)  # its result
        except GenwidgetsError as exc:
            error = error_words(exc)
            if isinstance(exc, ResultMissing):  # it answered: said, not "not yet"
                error, record["result_missing"] = _result_missing_words(exc), True
            elif lost_contact(job) and isinstance(exc, _NO_CONTACT):
                error, record["known"] = _lost_contact_words(exc, job.last_status), False
                record["waits_again"] = True  # not yet, not failed: the next run follows it
            elif lost_contact(job) and isinstance(exc, GatewayError):  # it answered: refused
                again = "genwidgets resume asks again"
                if not (job.last_status is not None and job.last_status.done):
                    again = "genwidgets resume follows it again"
                error, record["known"] = _refused_words(exc, again, job.last_status), False
    not_done = {"status": job.status_text, "ok": False, "error": error, "files": []}
    return record | not_done | {"copies_pending": 0}


#: A job's end for want of contact (no answer, a fault, the rate limit): not yet, not
#: failed; ``resume`` follows it again. A refusal (401, 403) is the gateway's answer.
_NO_CONTACT = (NoAnswer, ServerError, Unreachable, RateLimited)


def _waited(
    job: Job, left: float, silence: list[Exception | None], *, copies_to_end: bool
) -> Result:
    """``job``'s result within ``left`` seconds, else :class:`TaskTimeout`, after the
    command's one ask if no poll had word (``silence``). ``copies_to_end``: a task that
    has ended (its result being fetched, its outputs copied) or whose copy has begun is
    waited for to the end, each download by its own deadline: cut, the next run began
    the copy from byte 0 and no run ever had the file."""
    try:
        result = job.result(timeout=left)
    except TaskTimeout:
        if job.last_status is None and not silence:  # no word from the gateway
            try:
                job.status(retries=0)
                silence.append(None)
            except (NoAnswer, ServerError, RateLimited) as silent:
                silence.append(silent)
        if not (copies_to_end and job.last_status is not None and job.last_status.done):
            raise
        while True:  # past the wait only for a copy, or a result being read, to end
            try:
                return job.result(timeout=1.0)
            except TaskTimeout:
                if job.copying is None and isinstance(job.poll_error, ResultMissing):
                    raise  # its result address answers 404: no copy will begin
    if copies_to_end and job.copying is not None and not job.copying.done():
        result = job.result()
    return result


def _other_simulator(client: Client, job: Job) -> str:
    """Why a task another process's embedded simulator made is not waited for. Recorded
    ended only if that process is gone (its simulator ended with it); a live one (or one
    of another host, or a row naming none, whose life is not known here) may still finish
    it, so nothing is recorded: docs/decisions.md#batch-cli."""
    row = client.ledger.get(client.gateway_name, job.request_id) if client.ledger else None
    pid, host = (row.pid, row.host) if row else (None, None)
    if pid is None or host is None:
        return (
            "made by an embedded simulator of a process the ledger does not name: whether "
            "it still runs is not known, so it is not recorded ended; resume it in that process"
        )
    if host != HOST:
        return (
            f"made by the embedded simulator of process {pid} on host {host}: whether it "
            "still runs is not known here; resume it there"
        )
    if pid_alive(pid):
        return f"made by the embedded simulator of live process {pid}: resume it there"
    _record_gone(client, job)
    return ENDED_SIMULATOR


def _record_gone(client: Client, job: Job) -> None:
    """The ledger records the task ended, as a gateway's "not found" would, so no later
    ``resume`` waits for it (a result the ledger holds is never overwritten)."""
    if client.ledger is None:
        return
    last = job.last_status.status if job.last_status else job.status_text
    gone = Result(last, ENDED_SIMULATOR, GONE, endpoint=job.endpoint, request_id=job.request_id)
    client.ledger.writes.record_result(
        client.gateway_name, job.request_id, gone, gone=True, fingerprint=client.key_fingerprint
    )


# ----------------------------------------------------------------------------- notebooks


def notebooks_folder() -> Path:
    """Where the teaching notebooks are: inside the installed package (the wheel ships
    them as ``genwidgets/notebooks``), else beside it in a source checkout."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "notebooks", here.parent / "notebooks"):
        if any(candidate.glob("*.ipynb")):
            return candidate
    raise FileNotFoundError("the teaching notebooks are not installed with this package")


def _notebooks(args: argparse.Namespace) -> int:
    source = notebooks_folder()
    target = Path(args.dir).expanduser()
    files = sorted(p for p in source.iterdir() if p.suffix in (".ipynb", ".py"))
    there = [p.name for p in files if (target / p.name).exists()]
    if there and not args.force:
        print(
            f"genwidgets notebooks: {target} already has {', '.join(there)}; nothing copied "
            "(--force overwrites)",
            file=sys.stderr,
        )
        return 2
    try:
        target.mkdir(parents=True, exist_ok=True)
        for path in files:
            shutil.copyfile(path, target / path.name)
            print(target / path.name)
    except OSError as exc:  # a file there, a file above it, a folder not writable
        why = "it is a file" if target.is_file() else exc.strerror or str(exc)
        said = f"cannot copy into {target}: {why}; give a folder you can write"
        return say_error("notebooks", said, EXIT_NOT_DONE, as_json=False)
    return 0


class Stopping:
    """How a command is stopped: Ctrl-C (SIGINT), SIGTERM (``timeout``, systemd, ``docker
    stop``) and a reader of its output that left (``| head``: a closed pipe) all end it
    as Ctrl-C does, a ``KeyboardInterrupt`` in the main thread, so a batch lets its
    creates in flight answer and records its rows, and a task command says how to go on.
    Its exit status is a shell's for that signal: 130, 143, 141 (the reader gone: said
    nothing more). Raised once: a second SIGTERM must not cut that grace short.
    docs/decisions.md#batch-cli."""

    #: the words of each stop, the ``KeyboardInterrupt``'s message (Ctrl-C's is empty)
    WHY = {signal.SIGTERM: "stopped by SIGTERM", signal.SIGPIPE: "its output's reader left"}

    def __init__(self) -> None:
        #: the signal that stopped the command (Ctrl-C's is not noted: 130 is said anyway)
        self.signum: int | None = None
        self._raised = False

    @contextlib.contextmanager
    def on_sigterm(self) -> Iterator[None]:
        """SIGTERM stops the command as Ctrl-C does, while in this block (the main
        thread only: nowhere else can a handler be set)."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        before = signal.signal(signal.SIGTERM, self._stop)
        try:
            yield
        finally:
            signal.signal(signal.SIGTERM, before)

    def _stop(self, signum: int, _frame: FrameType | None = None) -> None:
        self.signum = self.signum or signum
        if not self._raised:
            self._raised = True
            raise KeyboardInterrupt(self.WHY[signal.Signals(self.signum)])

    def reader_left(self) -> None:
        """A write found its reader gone: stop the command, from the main thread."""
        self.signum = self.signum or signal.SIGPIPE
        if threading.current_thread() is threading.main_thread():
            self._stop(signal.SIGPIPE)
        else:  # runs the SIGTERM handler in the main thread, if this command set it
            _thread.interrupt_main(signal.SIGTERM)

    def exit_status(self, code: int) -> int:
        """The command's exit status, or the signal's that stopped it (128 + its number)."""
        return code if self.signum is None else 128 + self.signum


class InertStream(io.TextIOBase):
    """A command's stdout or stderr: every text written is inert on a terminal
    (:func:`~._formats.terminal_text`), keeping newlines, tabs and the carriage returns
    a progress bar redraws its line with. Gateway texts are inert from the record
    boundary already; this holds for every other text (an old ledger row, a file name,
    a row's value). A character its stream cannot encode (a lone surrogate, a path's
    byte that is not UTF-8) is written as its escape, ``\\udcff``: never a traceback.
    docs/decisions.md#inert-text.

    A write whose reader has left (``BrokenPipeError``) points the stream at the null
    device, Python's own recipe, so nothing more is written there, not even at the
    interpreter's exit, and calls ``reader_left``."""

    def __init__(self, stream: TextIO, reader_left: Callable[[], None] | None = None) -> None:
        self.stream = stream
        self.reader_left = reader_left

    def write(self, text: str) -> int:
        inert = "\r".join(terminal_text(p, lines=True) for p in text.split("\r"))
        try:
            try:
                self.stream.write(inert)
            except UnicodeEncodeError:  # a path not UTF-8 (a lone surrogate): its escape
                encoding = self.encoding
                self.stream.write(inert.encode(encoding, "backslashreplace").decode(encoding))
        except BrokenPipeError:
            self._to_null()
        return len(text)

    def flush(self) -> None:
        try:
            self.stream.flush()
        except BrokenPipeError:
            self._to_null()

    def _to_null(self) -> None:
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, self.stream.fileno())  # what it holds is flushed there, silently
        except (OSError, ValueError):  # no file of its own (a test's capture)
            self.stream = open(os.devnull, "w")  # noqa: SIM115 - the process's, to its end
        finally:
            os.close(null)
        if self.reader_left is not None:
            self.reader_left()

    def isatty(self) -> bool:
        return self.stream.isatty()

    def fileno(self) -> int:
        return self.stream.fileno()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.stream, "encoding", None) or "utf-8"


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace | int:
    """The arguments, or the exit status of a command line argparse refused: with
    ``--json`` among them, its complaint is one JSON object on stdout too."""
    if "--json" not in argv:
        return parser.parse_args(argv)
    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said):
            return parser.parse_args(argv)
    except SystemExit as exc:
        if not exc.code:  # --help, --version: their text, on stdout, is what was asked
            raise
        text = said.getvalue().strip() or "the command line is not understood"
        *usage, last = text.splitlines()
        command = next((a for a in argv if not a.startswith("-")), "")
        message = last.partition(": error: ")[2] or last  # argparse: "PROG: error: MESSAGE"
        return say_error(command, message, EXIT_REFUSED, as_json=True, usage="\n".join(usage))


def main(argv: Sequence[str] | None = None) -> int:
    stopping = Stopping()
    with (
        contextlib.redirect_stdout(InertStream(sys.stdout, stopping.reader_left)),
        contextlib.redirect_stderr(InertStream(sys.stderr, stopping.reader_left)),
    ):
        try:
            code = _command(argv, stopping)
            sys.stdout.flush()  # a reader gone is found here, not at the interpreter's exit
        except KeyboardInterrupt:  # stopped past what the command says (its last write)
            code = EXIT_INTERRUPTED
        return stopping.exit_status(code)


def _say_warning(command: str, message: Warning | str, *_: object, **__: object) -> None:
    """A warning (``warnings.showwarning``) as the command's one line on stderr, as its
    errors are said: not Python's source path, line number and source line."""
    said = str(message).removeprefix("genwidgets: ")  # the command names itself
    # one line, whatever gateway text it names (a URL of a result, with a newline)
    print(f"genwidgets {command}: warning: {terminal_text(said)}", file=sys.stderr)


def _say_warnings_at_exit(command: str) -> None:
    """At the interpreter's exit, genwidgets' warnings stay the command's one line: the
    ledger's exit flush (``jobs.ledger.writer``, registered at import, so run after this)
    warns of the writes a full or read-only home kept, once the command's
    ``catch_warnings`` has put Python's format back (a source path, a line number, a bare
    source line). Another library's warning keeps its own format: ``main()`` called in a
    process that goes on (a test, a notebook) must not credit it to a command long over."""
    before = warnings.showwarning

    def show(message: Warning | str, category: type[Warning], *where: Any, **how: Any) -> None:
        if issubclass(category, GenwidgetsWarning):
            _say_warning(command, message)
        else:
            before(message, category, *where, **how)

    warnings.showwarning = show


#: commands that serve until stopped: their server (uvicorn) handles SIGTERM itself
SERVERS = ("simulate", "serve")


def _command(argv: Sequence[str] | None, stopping: Stopping) -> int:
    parser = build_parser()
    args = _parse(parser, list(sys.argv[1:] if argv is None else argv))
    if isinstance(args, int):
        return args
    on_sigterm = contextlib.nullcontext() if args.command in SERVERS else stopping.on_sigterm()
    atexit.unregister(_say_warnings_at_exit)  # the last command's: main may run again
    atexit.register(_say_warnings_at_exit, args.command)
    with warnings.catch_warnings(), on_sigterm, no_stop_hint():
        warnings.showwarning = functools.partial(_say_warning, args.command)
        try:
            return _run(args, parser)
        except KeyboardInterrupt as stop:
            return _interrupted(args, stop, stopping)


def _interrupted(args: argparse.Namespace, stop: KeyboardInterrupt, stopping: Stopping) -> int:
    """A command stopped (Ctrl-C, SIGTERM) says so, and what goes on, as ``batch``
    does: one line on stderr, or its JSON object; exit 130 (143 for SIGTERM). One whose
    reader left says nothing more (``| head``: as a command SIGPIPE ends)."""
    if stopping.signum == signal.SIGPIPE:
        return EXIT_INTERRUPTED
    said = str(stop) or "interrupted"
    rid = getattr(args, "request_id", None)
    if args.command == "result":
        said += f"; the task goes on: genwidgets result {rid} --wait SECONDS waits again"
    elif args.command == "resume":
        said += "; the tasks go on: genwidgets resume waits for them again"
    about = {"request_id": rid} if rid is not None else {}
    return say_error(
        args.command, said, EXIT_INTERRUPTED, as_json=getattr(args, "json", False), **about
    )


def _run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    if args.command == "simulate":
        return simulator_cli.simulate(args, parser)
    if args.command == "batch":
        if sys.stdout.isatty():  # its bar shows the wait
            return run_batch(args)
        # a log's lines are written when a count changes: a task kept running was silence
        with _still_waiting("batch", lambda: f"the rows of {args.file} (into {args.out})"):
            return run_batch(args)
    if args.command == "serve":
        return serve_cli.serve(args)
    if args.command == "notebooks":
        return _notebooks(args)
    about = {"request_id": args.request_id} if "request_id" in args else {}
    try:
        client = Client()
    except ValueError as exc:  # a gateway's address or key that cannot be used (a key with
        # no address, a port of 99999): refused, as batch says it, not a task not done
        return say_error(args.command, str(exc), EXIT_REFUSED, as_json=args.json, exc=exc, **about)
    try:
        with client:
            if args.command == "history":
                return _history(client, args)
            if args.command == "resume":
                return _resume(client, args)
            return _one_task(client, args)
    # OSError: result --out a folder not writable
    except (GenwidgetsError, OSError, ValueError) as exc:
        return say_error(args.command, str(exc), EXIT_NOT_DONE, as_json=args.json, exc=exc, **about)


if __name__ == "__main__":
    sys.exit(main())
